/* test_ring.c - unit tests for the SPSC ring (include/fg/ring.h) and the
 * buffer pool built on it (include/fg/boundary.h, core/boundary.c).
 *
 * Single-thread semantics (init refusals, empty, full, FIFO order, 32-bit
 * index wrap, reservations written in place), then one producer and one consumer thread exchanging 1e6
 * messages through a small ring, checking order and every byte. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fg/boundary.h"
#include "fg/ring.h"

static struct fg_ring *ring_new(uint32_t count, uint32_t elt)
{
	struct fg_ring *r = aligned_alloc(FG_CACHE_LINE, (fg_ring_mem_size(count, elt) + 63) & ~(size_t)63);
	assert_non_null(r);
	assert_int_equal(fg_ring_init(r, count, elt), 0);
	return r;
}

static void test_ring_init_refusals(void **state)
{
	(void)state;
	struct fg_ring *r = aligned_alloc(FG_CACHE_LINE, fg_ring_mem_size(64, 8) + 64);
	assert_non_null(r);
	assert_int_equal(fg_ring_init(r, 0, 8), -22);
	assert_int_equal(fg_ring_init(r, 1, 8), -22);
	assert_int_equal(fg_ring_init(r, 3, 8), -22);
	assert_int_equal(fg_ring_init(r, 48, 8), -22);
	assert_int_equal(fg_ring_init(r, 64, 0), -22);
	assert_int_equal(fg_ring_init(r, 2, 8), 0);
	assert_int_equal(fg_ring_init(r, 64, 8), 0);
	free(r);
}

static void test_ring_full_empty_order(void **state)
{
	(void)state;
	enum { COUNT = 8 };
	struct fg_ring *r = ring_new(COUNT, sizeof(uint64_t));
	uint64_t v;
	assert_false(fg_ring_pop(r, &v));
	assert_int_equal(fg_ring_count(r), 0);
	/* a ring of COUNT holds exactly COUNT elements */
	for (uint64_t i = 0; i < COUNT; i++) {
		assert_true(fg_ring_push(r, &(uint64_t){ 1000 + i }));
		assert_int_equal(fg_ring_count(r), i + 1);
	}
	assert_false(fg_ring_push(r, &(uint64_t){ 9999 }));
	assert_int_equal(fg_ring_count(r), COUNT);
	for (uint64_t i = 0; i < COUNT; i++) {
		assert_true(fg_ring_pop(r, &v));
		assert_int_equal(v, 1000 + i);
	}
	assert_false(fg_ring_pop(r, &v));
	/* interleaved: the slots wrap round the array many times */
	uint64_t next_in = 0, next_out = 0;
	for (int round = 0; round < 1000; round++) {
		int k = round % (COUNT + 1);
		for (int i = 0; i < k; i++)
			assert_true(fg_ring_push(r, &(uint64_t){ next_in++ }));
		if (k == COUNT)
			assert_false(fg_ring_push(r, &next_in));
		for (int i = 0; i < k; i++) {
			assert_true(fg_ring_pop(r, &v));
			assert_int_equal(v, next_out++);
		}
		assert_false(fg_ring_pop(r, &v));
	}
	free(r);
}

/* head and tail are free-running u32 counters: start them just below 2^32
 * and run across the wrap. */
static void test_ring_index_wrap(void **state)
{
	(void)state;
	enum { COUNT = 4 };
	struct fg_ring *r = ring_new(COUNT, sizeof(uint32_t));
	atomic_store(&r->head, UINT32_MAX - 5);
	atomic_store(&r->tail, UINT32_MAX - 5);
	uint32_t in = 0, out = 0, v;
	for (int i = 0; i < 40; i++) {
		while (fg_ring_push(r, &in))
			in++;
		assert_int_equal(fg_ring_count(r), COUNT);
		assert_true(fg_ring_pop(r, &v));
		assert_int_equal(v, out++);
		assert_int_equal(fg_ring_count(r), COUNT - 1);
	}
	while (fg_ring_pop(r, &v))
		assert_int_equal(v, out++);
	assert_int_equal(in, out);
	assert_true(atomic_load(&r->head) < 100); /* it did wrap */
	free(r);
}

/* A reservation is a push written in place: invisible until its commit,
 * refused when full, FIFO with plain pushes, across the index wrap. */
static void test_ring_reserve_commit(void **state)
{
	(void)state;
	enum { COUNT = 4 };
	struct fg_ring *r = ring_new(COUNT, sizeof(uint64_t));
	atomic_store(&r->head, UINT32_MAX - 2);
	atomic_store(&r->tail, UINT32_MAX - 2);
	uint64_t v, *p = fg_ring_reserve(r);
	assert_non_null(p);
	*p = 7;
	assert_int_equal(fg_ring_count(r), 0); /* not published yet */
	assert_false(fg_ring_pop(r, &v));
	assert_ptr_equal(fg_ring_reserve(r), p); /* the same element until committed */
	fg_ring_commit(r);
	assert_int_equal(fg_ring_count(r), 1);
	assert_true(fg_ring_push(r, &(uint64_t){8}));
	p = fg_ring_reserve(r);
	assert_non_null(p);
	*p = 9;
	fg_ring_commit(r);
	assert_true(fg_ring_push(r, &(uint64_t){10}));
	assert_null(fg_ring_reserve(r)); /* full: COUNT queued */
	assert_int_equal(fg_ring_count(r), COUNT);
	for (uint64_t want = 7; want <= 10; want++) {
		assert_true(fg_ring_pop(r, &v));
		assert_int_equal(v, want);
	}
	assert_false(fg_ring_pop(r, &v));
	/* every slot of the array, many times round */
	for (uint64_t i = 0; i < 3 * COUNT; i++) {
		p = fg_ring_reserve(r);
		assert_non_null(p);
		*p = 100 + i;
		fg_ring_commit(r);
		assert_true(fg_ring_pop(r, &v));
		assert_int_equal(v, 100 + i);
	}
	assert_true(atomic_load(&r->head) < 100); /* it did wrap */
	free(r);
}

/* ---- two threads ------------------------------------------------------- */

#define MSGS 1000000u

struct msg {
	uint64_t seq;
	uint32_t words[5]; /* derived from seq: checks every byte arrived */
};

static void msg_fill(struct msg *m, uint64_t seq)
{
	memset(m, 0, sizeof(*m)); /* the padding too: the consumer compares every byte */
	m->seq = seq;
	for (unsigned i = 0; i < 5; i++)
		m->words[i] = (uint32_t)(seq * 2654435761u) ^ (i * 0x9E3779B9u);
}

static void *producer(void *arg)
{
	struct fg_ring *r = arg;
	struct msg m;
	for (uint64_t s = 0; s < MSGS; s++) {
		msg_fill(&m, s);
		while (!fg_ring_push(r, &m))
			sched_yield(); /* the machine may have fewer free cores than threads */
	}
	return NULL;
}

/* The same messages written in place (reserve, fill, commit). */
static void *producer_reserve(void *arg)
{
	struct fg_ring *r = arg;
	for (uint64_t s = 0; s < MSGS; s++) {
		struct msg *m;
		while (!(m = fg_ring_reserve(r)))
			sched_yield();
		msg_fill(m, s);
		fg_ring_commit(r);
	}
	return NULL;
}

struct consumer_result {
	uint64_t received, bad_order, bad_content;
};

static void *consumer(void *arg)
{
	struct fg_ring *r = ((void **)arg)[0];
	struct consumer_result *res = ((void **)arg)[1];
	struct msg m, want;
	uint64_t expect = 0;
	while (expect < MSGS) {
		if (!fg_ring_pop(r, &m)) {
			sched_yield();
			continue;
		}
		if (m.seq != expect)
			res->bad_order++;
		msg_fill(&want, m.seq);
		if (memcmp(&m, &want, sizeof(m)))
			res->bad_content++;
		expect = m.seq + 1;
		res->received++;
	}
	return NULL;
}

static void two_threads(void *(*produce)(void *))
{
	struct fg_ring *r = ring_new(64, sizeof(struct msg));
	struct consumer_result res = { 0 };
	void *carg[2] = { r, &res };
	pthread_t p, c;
	assert_int_equal(pthread_create(&c, NULL, consumer, carg), 0);
	assert_int_equal(pthread_create(&p, NULL, produce, r), 0);
	assert_int_equal(pthread_join(p, NULL), 0);
	assert_int_equal(pthread_join(c, NULL), 0);
	assert_int_equal(res.received, MSGS);
	assert_int_equal(res.bad_order, 0);
	assert_int_equal(res.bad_content, 0);
	assert_int_equal(fg_ring_count(r), 0);
	free(r);
}

static void test_ring_two_threads(void **state)
{
	(void)state;
	two_threads(producer);
}

static void test_ring_two_threads_reserve(void **state)
{
	(void)state;
	two_threads(producer_reserve);
}

/* ---- pool ---------------------------------------------------------------- */

static void test_pool_get_put(void **state)
{
	(void)state;
	enum { N = 5, SIZE = 100 };
	struct fg_pool p;
	size_t need = fg_pool_mem_size(N, SIZE);
	assert_true(need >= (size_t)N * SIZE);
	uint8_t *mem = aligned_alloc(FG_CACHE_LINE, (need + 63) & ~(size_t)63);
	assert_non_null(mem);
	assert_int_equal(fg_pool_init(&p, mem, N, SIZE), 0);
	assert_int_equal(p.n, N);
	assert_int_equal(p.size, SIZE);
	assert_int_equal((uintptr_t)p.bufs % FG_CACHE_LINE, 0);
	uint32_t got[N];
	bool seen[N] = { false };
	for (int i = 0; i < N; i++) {
		got[i] = fg_pool_get(&p);
		assert_true(got[i] < N);
		assert_false(seen[got[i]]);
		seen[got[i]] = true;
		uint8_t *b = fg_pool_buf(&p, got[i]);
		/* every buffer lies inside the pool memory, after the ring */
		assert_true(b >= mem && b + SIZE <= mem + need);
		assert_true(b >= (uint8_t *)p.free + fg_ring_mem_size(8, sizeof(uint32_t)));
		memset(b, i, SIZE); /* ASan: in bounds */
	}
	assert_int_equal(fg_pool_get(&p), FG_BUF_NONE);
	/* buffers do not overlap */
	for (int i = 0; i < N; i++)
		for (int k = 0; k < SIZE; k++)
			assert_int_equal(fg_pool_buf(&p, got[i])[k], i);
	fg_pool_put(&p, got[2]);
	assert_int_equal(fg_pool_get(&p), got[2]);
	assert_int_equal(fg_pool_get(&p), FG_BUF_NONE);
	for (int i = 0; i < N; i++)
		fg_pool_put(&p, got[i]);
	for (int i = 0; i < N; i++)
		assert_int_equal(fg_pool_get(&p), got[i]); /* FIFO free list */
	free(mem);

	/* refusals */
	uint8_t *m2 = aligned_alloc(FG_CACHE_LINE, 4096);
	assert_int_equal(fg_pool_init(&p, m2, 0, 10), -EINVAL);
	assert_int_equal(fg_pool_init(&p, m2, 4, 0), -EINVAL);
	assert_int_equal(fg_pool_init(&p, m2 + 1, 4, 10), -EINVAL);
	assert_int_equal(fg_pool_init(&p, NULL, 4, 10), -EINVAL);
	assert_int_equal(fg_pool_mem_size(0, 10), 0);
	assert_int_equal(fg_pool_mem_size(4, 0), 0);
	/* one buffer, and a power-of-two count */
	assert_true(fg_pool_mem_size(1, 10) <= 4096);
	assert_int_equal(fg_pool_init(&p, m2, 1, 10), 0);
	uint32_t one = fg_pool_get(&p);
	assert_int_equal(one, 0);
	assert_int_equal(fg_pool_get(&p), FG_BUF_NONE);
	free(m2);
}

/* The pool across two threads, as a lane uses it: the producer takes a
 * buffer, fills it and sends its index; the consumer checks and returns it. */
struct pool_lane {
	struct fg_pool pool;
	struct fg_ring *to_cons;
	uint64_t bad;
};

#define POOL_MSGS 200000u

static void *pool_producer(void *arg)
{
	struct pool_lane *l = arg;
	for (uint32_t s = 0; s < POOL_MSGS; s++) {
		uint32_t b;
		while ((b = fg_pool_get(&l->pool)) == FG_BUF_NONE)
			sched_yield();
		memset(fg_pool_buf(&l->pool, b), (int)(s & 0xFF), l->pool.size);
		uint32_t m[2] = { b, s };
		while (!fg_ring_push(l->to_cons, m))
			sched_yield();
	}
	return NULL;
}

static void *pool_consumer(void *arg)
{
	struct pool_lane *l = arg;
	for (uint32_t s = 0; s < POOL_MSGS;) {
		uint32_t m[2];
		if (!fg_ring_pop(l->to_cons, m)) {
			sched_yield();
			continue;
		}
		const uint8_t *p = fg_pool_buf(&l->pool, m[0]);
		if (m[1] != s)
			l->bad++;
		for (uint32_t i = 0; i < l->pool.size; i++)
			if (p[i] != (uint8_t)(s & 0xFF)) {
				l->bad++;
				break;
			}
		fg_pool_put(&l->pool, m[0]);
		s++;
	}
	return NULL;
}

static void test_pool_two_threads(void **state)
{
	(void)state;
	struct pool_lane l = { .bad = 0 };
	uint8_t *mem = aligned_alloc(FG_CACHE_LINE, (fg_pool_mem_size(16, 256) + 63) & ~(size_t)63);
	assert_int_equal(fg_pool_init(&l.pool, mem, 16, 256), 0);
	l.to_cons = ring_new(32, 2 * sizeof(uint32_t));
	pthread_t p, c;
	assert_int_equal(pthread_create(&c, NULL, pool_consumer, &l), 0);
	assert_int_equal(pthread_create(&p, NULL, pool_producer, &l), 0);
	assert_int_equal(pthread_join(p, NULL), 0);
	assert_int_equal(pthread_join(c, NULL), 0);
	assert_int_equal(l.bad, 0);
	/* every buffer came back */
	assert_int_equal(fg_ring_count(l.pool.free), 16);
	free(l.to_cons);
	free(mem);
}

static void test_counter_names(void **state)
{
	(void)state;
	for (int i = 0; i < FG_C__COUNT; i++) {
		const char *n = fg_dp_counter_name((enum fg_dp_counter)i);
		assert_string_not_equal(n, "unknown");
		for (const char *c = n; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
		for (int j = 0; j < i; j++)
			assert_string_not_equal(fg_dp_counter_name((enum fg_dp_counter)j), n);
	}
	assert_string_equal(fg_dp_counter_name(FG_C_RX_PKTS), "rx_pkts");
	assert_string_equal(fg_dp_counter_name(FG_C_DROP_MALFORMED), "drop_malformed");
	assert_string_equal(fg_dp_counter_name(FG_C__COUNT), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_init_refusals),
		cmocka_unit_test(test_ring_full_empty_order),
		cmocka_unit_test(test_ring_index_wrap),
		cmocka_unit_test(test_ring_reserve_commit),
		cmocka_unit_test(test_ring_two_threads),
		cmocka_unit_test(test_ring_two_threads_reserve),
		cmocka_unit_test(test_pool_get_put),
		cmocka_unit_test(test_pool_two_threads),
		cmocka_unit_test(test_counter_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

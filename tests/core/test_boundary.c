/* test_boundary.c - include/fg/boundary.h and core/boundary.c: buffer pools
 * and the arrival wake-up of the dp -> cp rings (struct fg_wake).
 *
 *   - pools: every index once, get/put round trip, refused layouts;
 *   - wake edge logic, single thread: no signal while the consumer is awake,
 *     exactly one per announced sleep however many bursts follow, none
 *     after the consumer cancelled its sleep;
 *   - wake protocol under real threads: several producers (as lcores) push
 *     bursts into their own SPSC ring and write a real eventfd when
 *     fg_wake_after_push says so; the consumer drains, announces its sleep,
 *     re-checks, and blocks in poll() on the eventfd. A lost wake-up leaves
 *     the consumer asleep with messages queued: the poll times out (10 s)
 *     and the test fails instead of hanging. Also checks every message
 *     arrives once, in order per ring, and that eventfd writes never exceed
 *     announced sleeps (bounded wake-ups).
 *
 * Meant to run under TSan too (the flag and the rings are the only shared
 * state). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "fg/boundary.h"
#include "fg/lat_hist.h"

static void test_pool(void **state)
{
	(void)state;
	struct fg_pool p;
	assert_int_equal(fg_pool_mem_size(0, 8), 0);
	assert_int_equal(fg_pool_mem_size(8, 0), 0);
	size_t sz = fg_pool_mem_size(5, 100);
	assert_true(sz >= 500);
	void *mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_non_null(mem);
	assert_int_equal(fg_pool_init(&p, (uint8_t *)mem + 1, 5, 100), -EINVAL); /* misaligned */
	assert_int_equal(fg_pool_init(&p, NULL, 5, 100), -EINVAL);
	assert_int_equal(fg_pool_init(&p, mem, 5, 100), 0);
	bool seen[5] = {false};
	for (int i = 0; i < 5; i++) {
		uint32_t b = fg_pool_get(&p);
		assert_true(b < 5);
		assert_false(seen[b]);
		seen[b] = true;
		memset(fg_pool_buf(&p, b), 0xA5, 100); /* inside the pool's memory */
	}
	assert_int_equal(fg_pool_get(&p), FG_BUF_NONE);
	fg_pool_put(&p, 3);
	assert_int_equal(fg_pool_get(&p), 3);
	free(mem);
}

static void test_wake_edge(void **state)
{
	(void)state;
	struct fg_wake w;
	fg_wake_init(&w, -1);
	assert_false(w.has_fd);
	fg_wake_init(&w, 7);
	assert_true(w.has_fd);
	/* consumer awake: producers never signal */
	for (int i = 0; i < 10; i++)
		assert_false(fg_wake_after_push(&w));
	/* one announced sleep: exactly one signal, whatever follows */
	fg_wake_prepare(&w);
	assert_true(fg_wake_after_push(&w));
	for (int i = 0; i < 10; i++)
		assert_false(fg_wake_after_push(&w));
	/* announced, then cancelled (the consumer found work): no signal */
	fg_wake_prepare(&w);
	fg_wake_cancel(&w);
	assert_false(fg_wake_after_push(&w));
	/* two sleeps, two signals */
	fg_wake_prepare(&w);
	assert_true(fg_wake_after_push(&w));
	fg_wake_prepare(&w);
	assert_true(fg_wake_after_push(&w));
	assert_false(fg_wake_after_push(&w));
}

enum { PRODUCERS = 3, PER_PRODUCER = 100000, RING = 16 };

struct shared {
	struct fg_wake wake;
	struct fg_ring *ring[PRODUCERS];
	_Atomic uint64_t writes;
};

struct producer {
	struct shared *sh;
	unsigned idx;
	uint32_t seed;
};

static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct fg_ring *r = p->sh->ring[p->idx];
	uint32_t next = 0;
	while (next < PER_PRODUCER) {
		/* a burst of 1..8 pushes (fewer when the ring is full), then the
		 * once-per-burst wake check, like dp_lane_wake */
		unsigned burst = 1 + rnd(&p->seed) % 8, pushed = 0;
		for (unsigned k = 0; k < burst && next < PER_PRODUCER; k++) {
			if (!fg_ring_push(r, &next))
				break;
			next++;
			pushed++;
		}
		if (pushed && fg_wake_after_push(&p->sh->wake)) {
			uint64_t one = 1;
			if (write(p->sh->wake.fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
				abort();
			atomic_fetch_add(&p->sh->writes, 1);
		}
		/* sometimes idle a little, so the consumer goes to sleep often */
		if (rnd(&p->seed) % 16 == 0)
			usleep(rnd(&p->seed) % 50);
	}
	return NULL;
}

static void test_wake_threads(void **state)
{
	(void)state;
	static struct shared sh;
	int efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	fg_wake_init(&sh.wake, efd);
	atomic_init(&sh.writes, 0);
	void *mem[PRODUCERS];
	struct producer pr[PRODUCERS];
	pthread_t th[PRODUCERS];
	for (unsigned i = 0; i < PRODUCERS; i++) {
		size_t sz = (fg_ring_mem_size(RING, sizeof(uint32_t)) + 63) & ~(size_t)63;
		mem[i] = aligned_alloc(64, sz);
		assert_non_null(mem[i]);
		sh.ring[i] = mem[i];
		assert_int_equal(fg_ring_init(sh.ring[i], RING, sizeof(uint32_t)), 0);
		pr[i] = (struct producer){.sh = &sh, .idx = i, .seed = 1234u + i};
	}
	for (unsigned i = 0; i < PRODUCERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, producer_main, &pr[i]), 0);

	uint32_t expect[PRODUCERS] = {0};
	uint64_t total = 0, sleeps = 0, prepares = 0;
	bool lost = false;
	uint32_t cseed = 99;
	while (total < (uint64_t)PRODUCERS * PER_PRODUCER) {
		/* drain */
		for (unsigned i = 0; i < PRODUCERS; i++) {
			uint32_t v;
			while (fg_ring_pop(sh.ring[i], &v)) {
				assert_int_equal(v, expect[i]);
				expect[i]++;
				total++;
			}
		}
		if (total == (uint64_t)PRODUCERS * PER_PRODUCER)
			break;
		/* widen the race window the protocol must close: time between the
		 * last pop and the announcement, in which producers fill the rings
		 * and then have nothing left to push (a lost wake-up then hangs) */
		if (rnd(&cseed) % 4 == 0)
			usleep(rnd(&cseed) % 40);
		/* announce the sleep, re-check, sleep */
		fg_wake_prepare(&sh.wake);
		prepares++;
		bool empty = true;
		for (unsigned i = 0; i < PRODUCERS; i++)
			empty &= fg_ring_count(sh.ring[i]) == 0;
		if (!empty) {
			fg_wake_cancel(&sh.wake);
			continue;
		}
		sleeps++;
		struct pollfd pfd = {.fd = efd, .events = POLLIN};
		int pr_ = poll(&pfd, 1, 10000);
		if (pr_ == 0) {
			lost = true; /* asleep with producers still to push: a lost wake-up */
			break;
		}
		assert_int_equal(pr_, 1);
		uint64_t cnt;
		assert_int_equal(read(efd, &cnt, sizeof(cnt)), (ssize_t)sizeof(cnt));
	}
	if (lost) {
		/* let the producers finish so the threads can be joined, then fail */
		fg_wake_cancel(&sh.wake);
		for (;;) {
			bool done = true;
			for (unsigned i = 0; i < PRODUCERS; i++) {
				uint32_t v;
				while (fg_ring_pop(sh.ring[i], &v))
					expect[i]++;
				done &= expect[i] == PER_PRODUCER;
			}
			if (done)
				break;
		}
	}
	for (unsigned i = 0; i < PRODUCERS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_false(lost);
	for (unsigned i = 0; i < PRODUCERS; i++)
		assert_int_equal(expect[i], PER_PRODUCER);
	/* bounded: at most one write per announced sleep */
	uint64_t w = atomic_load(&sh.writes);
	assert_true(w <= prepares);
	assert_true(sleeps > 0); /* the test did exercise the sleep path */
	close(efd);
	for (unsigned i = 0; i < PRODUCERS; i++)
		free(mem[i]);
}

/* The lane latency histogram (fg/lat_hist.h): an interval lands in the
 * first bucket whose bound it does not exceed; bounds are inclusive; past
 * the last bound is +Inf; a clock read that ran backwards counts 0. */
static void test_lat_hist(void **state)
{
	(void)state;
	struct fg_lat_hist h;
	memset(&h, 0, sizeof(h));
	fg_lat_hist_add(&h, 1000, 1000);          /* 0 ns -> le 1 us */
	fg_lat_hist_add(&h, 0, 1000);             /* exactly 1 us -> le 1 us */
	fg_lat_hist_add(&h, 0, 1001);             /* just over -> le 2 us */
	fg_lat_hist_add(&h, 0, 49999);            /* -> le 50 us */
	fg_lat_hist_add(&h, 0, 10000000);         /* exactly 10 ms -> the last bound */
	fg_lat_hist_add(&h, 0, 10000001);         /* -> +Inf */
	fg_lat_hist_add(&h, 5000, 4000);          /* backwards -> 0 */
	assert_int_equal(h.bucket[0], 3);
	assert_int_equal(h.bucket[1], 1);
	assert_int_equal(h.bucket[5], 1);         /* le 50 */
	assert_int_equal(h.bucket[FG_LAT_BUCKETS - 2], 1);
	assert_int_equal(h.bucket[FG_LAT_BUCKETS - 1], 1);
	assert_int_equal(h.count, 7);
	assert_int_equal(h.sum_ns, 1000 + 1001 + 49999 + 10000000 + 10000001);
	uint64_t total = 0;
	for (unsigned i = 0; i < FG_LAT_BUCKETS; i++)
		total += h.bucket[i];
	assert_int_equal(total, h.count);
	assert_int_equal(fg_lat_hist_le_us[5], 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lat_hist),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_wake_edge),
		cmocka_unit_test(test_wake_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

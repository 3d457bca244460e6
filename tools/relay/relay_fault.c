/* relay_fault.c - the fault engine of one relay direction: loss,
 * duplication, reordering, fixed and jittered delay over a bounded queue
 * (relay.h has the pipeline diagram and the counter invariants).
 *
 * Who may call: relay_main.c and the unit tests; one thread per rl_dir.
 * Pure: no sockets, no clock (now is passed in), no logging. One malloc per
 * queued datagram: the relay is a test tool, not a hot path, and a queued
 * datagram's lifetime is the fault's delay. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

struct rl_item {
	uint64_t due;  /* emit at (delayed) or at the latest at (held) */
	uint64_t seq;  /* admission order */
	uint32_t sess;
	uint32_t len;
	uint32_t gap;  /* held: later emissions still to wait for */
	uint8_t data[];
};

const char *rl_dir_name(unsigned d)
{
	return d == RL_UP ? "up" : d == RL_DOWN ? "down" : "?";
}

/* splitmix64: the decision stream. */
static uint64_t rnd_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rnd01(uint64_t *s)
{
	return (double)(rnd_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static bool roll(uint64_t *s, double p)
{
	return p > 0 && rnd01(s) < p;
}

static bool prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0; /* false for NaN too */
}

int rl_dir_init(struct rl_dir *d, const struct rl_fault *f, uint64_t seed, uint32_t cap, rl_emit_fn emit,
		void *ctx)
{
	if (!prob_ok(f->loss) || !prob_ok(f->dup) || !prob_ok(f->reorder) || !(f->burst >= 0) ||
	    (f->reorder > 0 && f->reorder_gap == 0) ||
	    cap == 0 || !emit)
		return -EINVAL;
	memset(d, 0, sizeof *d);
	d->heap = calloc(cap, sizeof *d->heap);
	d->held = calloc(cap, sizeof *d->held);
	if (!d->heap || !d->held) {
		free(d->heap);
		free(d->held);
		d->heap = d->held = NULL;
		return -ENOMEM;
	}
	d->f = *f;
	d->rng = seed;
	d->cap = cap;
	d->emit = emit;
	d->ctx = ctx;
	return 0;
}

void rl_dir_fini(struct rl_dir *d)
{
	for (uint32_t i = 0; i < d->n_heap; i++)
		free(d->heap[i]);
	for (uint32_t i = 0; i < d->n_held; i++)
		free(d->held[i]);
	d->st.dropped_at_exit += (uint64_t)d->n_heap + d->n_held;
	d->n_heap = d->n_held = 0;
	free(d->heap);
	free(d->held);
	d->heap = d->held = NULL;
}

uint32_t rl_dir_queued(const struct rl_dir *d)
{
	return d->n_heap + d->n_held;
}

/* ---- the delay heap: min by (due, seq) ---------------------------------- */

static bool before(const struct rl_item *a, const struct rl_item *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(struct rl_dir *d, struct rl_item *it)
{
	uint32_t i = d->n_heap++;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!before(it, d->heap[p]))
			break;
		d->heap[i] = d->heap[p];
		i = p;
	}
	d->heap[i] = it;
}

static struct rl_item *heap_pop(struct rl_dir *d)
{
	struct rl_item *top = d->heap[0], *last = d->heap[--d->n_heap];
	uint32_t i = 0, n = d->n_heap;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(d->heap[c + 1], d->heap[c]))
			c++;
		if (!before(d->heap[c], last))
			break;
		d->heap[i] = d->heap[c];
		i = c;
	}
	if (n > 0)
		d->heap[i] = last;
	return top;
}

/* ---- emission ----------------------------------------------------------- */

static void emit_raw(struct rl_dir *d, uint32_t sess, const uint8_t *buf, uint32_t len)
{
	if (d->emit(d->ctx, sess, buf, len) < 0) {
		d->st.send_failed++;
	} else {
		d->st.out++;
		d->st.out_bytes += len;
	}
}

static struct rl_item *held_remove(struct rl_dir *d, uint32_t i)
{
	struct rl_item *it = d->held[i];
	memmove(&d->held[i], &d->held[i + 1], (size_t)(d->n_held - i - 1) * sizeof *d->held);
	d->n_held--;
	return it;
}

/* Emit one datagram, then age the held ones: each emission brings every
 * held datagram one step closer to its release, and a released one is an
 * emission too (so a burst of releases keeps its admission order). */
static void emit_and_age(struct rl_dir *d, uint32_t sess, const uint8_t *buf, uint32_t len)
{
	emit_raw(d, sess, buf, len);
	uint32_t pending = 1;
	while (pending > 0 && d->n_held > 0) {
		pending--;
		for (uint32_t i = 0; i < d->n_held; i++)
			if (d->held[i]->gap > 0)
				d->held[i]->gap--;
		for (uint32_t i = 0; i < d->n_held;) {
			if (d->held[i]->gap == 0) {
				struct rl_item *it = held_remove(d, i);
				emit_raw(d, it->sess, it->data, it->len);
				d->st.released_by_gap++;
				free(it);
				pending++;
			} else {
				i++;
			}
		}
	}
}

static struct rl_item *item_new(struct rl_dir *d, uint32_t sess, const uint8_t *buf, uint32_t len, uint64_t due)
{
	if (d->n_heap + d->n_held >= d->cap) {
		d->st.queue_full++;
		return NULL;
	}
	struct rl_item *it = malloc(sizeof *it + len);
	if (!it) {
		d->st.queue_full++;
		return NULL;
	}
	memcpy(it->data, buf, len);
	it->due = due;
	it->seq = d->seq++;
	it->sess = sess;
	it->len = len;
	it->gap = 0;
	return it;
}

static void note_queue(struct rl_dir *d)
{
	uint32_t q = d->n_heap + d->n_held;
	if (q > d->st.queue_max)
		d->st.queue_max = q;
}

int rl_dir_input(struct rl_dir *d, uint32_t sess, const uint8_t *buf, uint32_t len, uint64_t now)
{
	int rc = 0;
	d->st.in++;
	d->st.in_bytes += len;
	bool lost = d->in_burst ? roll(&d->rng, 1.0 - 1.0 / d->f.burst) : roll(&d->rng, d->f.loss);
	d->in_burst = lost && d->f.burst > 1.0;
	if (lost) {
		d->st.lost++;
		return 0;
	}
	unsigned copies = 1;
	if (roll(&d->rng, d->f.dup)) {
		copies = 2;
		d->st.dup++;
	}
	for (unsigned c = 0; c < copies; c++) {
		bool hold = roll(&d->rng, d->f.reorder);
		uint64_t delay = d->f.delay_ns;
		if (d->f.jitter_ns > 0)
			delay += rnd_u64(&d->rng) % (d->f.jitter_ns + 1);
		if (hold) {
			struct rl_item *it = item_new(d, sess, buf, len, now + delay + d->f.reorder_ns);
			if (!it) {
				rc = -ENOMEM;
				continue;
			}
			it->gap = d->f.reorder_gap;
			d->held[d->n_held++] = it;
			d->st.reordered++;
			note_queue(d);
		} else if (delay == 0) {
			emit_and_age(d, sess, buf, len);
		} else {
			struct rl_item *it = item_new(d, sess, buf, len, now + delay);
			if (!it) {
				rc = -ENOMEM;
				continue;
			}
			heap_push(d, it);
			d->st.delayed++;
			note_queue(d);
		}
	}
	return rc;
}

uint64_t rl_dir_tick(struct rl_dir *d, uint64_t now)
{
	/* Held datagrams whose timer ran out leave first, oldest first (the
	 * held array is in admission order); each emission ages the others
	 * and may release some by gap, so the scan restarts. */
	for (uint32_t i = 0; i < d->n_held;) {
		if (d->held[i]->due <= now) {
			struct rl_item *it = held_remove(d, i);
			d->st.released_by_time++;
			emit_and_age(d, it->sess, it->data, it->len);
			free(it);
			i = 0; /* emit_and_age may have released others */
		} else {
			i++;
		}
	}
	while (d->n_heap > 0 && d->heap[0]->due <= now) {
		struct rl_item *it = heap_pop(d);
		emit_and_age(d, it->sess, it->data, it->len);
		free(it);
	}
	uint64_t next = UINT64_MAX;
	if (d->n_heap > 0)
		next = d->heap[0]->due - now;
	for (uint32_t i = 0; i < d->n_held; i++)
		if (d->held[i]->due - now < next)
			next = d->held[i]->due - now;
	return next;
}

/* fleet_sched.c - fanofleet's timed events: a min-heap of (due time, event)
 * the run engine fires from its poll loop. It carries the sends that wait
 * for a stage's compute time or a hop's one-way delay (a copy of the
 * encoded frame) and the critical path's "the next layer's input is here"
 * events (fleet_run.c).
 *
 * Who may call: the run engine's thread only (fleet.h). Events due at the
 * same time come out in the order they were pushed (a sequence number
 * breaks ties), so a delayed send never overtakes one pushed before it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

static bool before(const struct fl_event *a, const struct fl_event *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->order < b->order);
}

static void swap(struct fl_event *a, struct fl_event *b)
{
	struct fl_event t = *a;
	*a = *b;
	*b = t;
}

int fl_sched_push(struct fl_sched *s, const struct fl_event *ev, const uint8_t *frame, uint32_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct fl_event *h = realloc(s->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		s->heap = h;
		s->cap = cap;
	}
	struct fl_event e = *ev;
	e.order = s->next_order++;
	e.buf = NULL;
	e.len = 0;
	if (frame && len) {
		if (!(e.buf = malloc(len)))
			return -ENOMEM;
		memcpy(e.buf, frame, len);
		e.len = len;
	}
	size_t i = s->n++;
	s->heap[i] = e;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(&s->heap[i], &s->heap[p]))
			break;
		swap(&s->heap[i], &s->heap[p]);
		i = p;
	}
	return 0;
}

uint64_t fl_sched_next(const struct fl_sched *s)
{
	return s->n ? s->heap[0].due_ns : UINT64_MAX;
}

bool fl_sched_pop(struct fl_sched *s, uint64_t now, struct fl_event *out)
{
	if (!s->n || s->heap[0].due_ns > now)
		return false;
	*out = s->heap[0];
	s->heap[0] = s->heap[--s->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->n && before(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->n && before(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&s->heap[i], &s->heap[m]);
		i = m;
	}
	return true;
}

void fl_sched_free(struct fl_sched *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->heap[i].buf);
	free(s->heap);
	memset(s, 0, sizeof(*s));
}

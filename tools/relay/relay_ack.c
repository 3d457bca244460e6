/* relay_ack.c - the relay's ACK checker: every (stream, sequence) an ACK
 * frame covers must belong to a frame whose fragments all went through the
 * relay for that session (relay.h explains the model).
 *
 * Who may call: relay_main.c and the unit tests; one thread.
 * Pure: no sockets, no clock (now is passed in), no logging.
 *
 * Tables (both fixed at rl_ack_new, nothing grows):
 *  - frames: bookkeeping of partly sent frames keyed by (session,
 *    frame_id), 8-slot linear probe; a full probe window evicts its oldest
 *    record (counted: a frame evicted before completion is never "through",
 *    so its ACK would be unproven; the tests keep in-flight frames far
 *    below the table size and assert frames_evicted too);
 *  - seen: (session, stream, sequence) of frames that went through, open
 *    addressing at load <= 1/2; once full, later inserts are refused and
 *    ACKs not found count as unchecked instead of unproven. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fg/wire.h"
#include "relay.h"

#define PROBE 8u
#define FRAME_STALE_NS (5ull * 1000000000ull) /* a frame_id reused after this is a new frame */

struct frec {
	bool used, have_hdr;
	uint8_t total, got;
	uint16_t frame_id, stream;
	uint32_t sess, seq;
	uint64_t t;
	uint8_t have[32]; /* bitmap of fragment indices sent */
};

struct rl_ack {
	struct frec *fr;
	uint32_t n_fr;
	uint64_t *seen; /* 0 = empty */
	uint32_t seen_mask, n_seen, seen_cap;
	struct rl_ack_stats st;
};

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

struct rl_ack *rl_ack_new(uint32_t frame_cap, uint32_t seen_cap)
{
	if (frame_cap < PROBE || seen_cap == 0 || seen_cap > (1u << 30)) {
		errno = EINVAL;
		return NULL;
	}
	struct rl_ack *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	uint32_t slots = 2;
	while (slots < 2 * seen_cap)
		slots <<= 1;
	a->fr = calloc(frame_cap, sizeof *a->fr);
	a->seen = calloc(slots, sizeof *a->seen);
	if (!a->fr || !a->seen) {
		rl_ack_free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->n_fr = frame_cap;
	a->seen_mask = slots - 1;
	a->seen_cap = seen_cap;
	return a;
}

void rl_ack_free(struct rl_ack *a)
{
	if (!a)
		return;
	free(a->fr);
	free(a->seen);
	free(a);
}

const struct rl_ack_stats *rl_ack_stats(const struct rl_ack *a)
{
	return &a->st;
}

static uint64_t seen_key(uint32_t sess, uint16_t stream, uint32_t seq)
{
	/* sess + 1 keeps every key non-zero (0 marks an empty slot). */
	return ((uint64_t)(sess + 1u) << 48) | ((uint64_t)stream << 32) | seq;
}

static bool seen_has(const struct rl_ack *a, uint64_t k)
{
	for (uint32_t i = (uint32_t)mix(k) & a->seen_mask;; i = (i + 1) & a->seen_mask) {
		if (a->seen[i] == k)
			return true;
		if (a->seen[i] == 0)
			return false;
	}
}

static void seen_add(struct rl_ack *a, uint64_t k)
{
	uint32_t i = (uint32_t)mix(k) & a->seen_mask;
	while (a->seen[i] != 0) {
		if (a->seen[i] == k)
			return;
		i = (i + 1) & a->seen_mask;
	}
	if (a->n_seen >= a->seen_cap) {
		a->st.seen_overflow = true;
		return;
	}
	a->seen[i] = k;
	a->n_seen++;
}

static struct frec *frame_get(struct rl_ack *a, uint32_t sess, uint16_t frame_id, uint64_t now)
{
	uint32_t h = (uint32_t)(mix(((uint64_t)sess << 16) | frame_id) % a->n_fr);
	struct frec *free_slot = NULL, *oldest = NULL;
	for (uint32_t k = 0; k < PROBE; k++) {
		struct frec *r = &a->fr[(h + k) % a->n_fr];
		if (r->used && r->sess == sess && r->frame_id == frame_id) {
			if (now - r->t <= FRAME_STALE_NS)
				return r;
			memset(r, 0, sizeof *r); /* the sender reused the id: a new frame */
			r->sess = sess;
			r->frame_id = frame_id;
			r->used = true;
			r->t = now;
			return r;
		}
		if (!r->used) {
			if (!free_slot)
				free_slot = r;
		} else if (!oldest || r->t < oldest->t) {
			oldest = r;
		}
	}
	struct frec *r = free_slot;
	if (!r) {
		r = oldest;
		a->st.frames_evicted++;
	}
	memset(r, 0, sizeof *r);
	r->used = true;
	r->sess = sess;
	r->frame_id = frame_id;
	r->t = now;
	return r;
}

void rl_ack_up(struct rl_ack *a, uint32_t sess, const uint8_t *dg, size_t len, uint64_t now)
{
	struct fg_frag f;
	a->st.up_datagrams++;
	if (fg_frag_decode(dg, len, &f) < 0) {
		a->st.up_bad++;
		return;
	}
	struct frec *r = frame_get(a, sess, f.frame_id, now);
	if (r->total != 0 && r->total != f.total) {
		/* total changed inside a group: the receiver drops the group
		 * (frag_total_changed); so do we. */
		r->used = false;
		a->st.up_bad++;
		return;
	}
	r->total = f.total;
	if (f.index == 0) {
		struct fg_hdr h;
		if (fg_hdr_decode(f.chunk, f.chunk_len, FG_TRANSPORT_MESSAGE, &h) < 0) {
			r->used = false;
			a->st.up_bad++;
			return;
		}
		r->have_hdr = true;
		r->stream = h.stream_id;
		r->seq = h.sequence;
	}
	uint8_t bit = (uint8_t)(1u << (f.index % 8));
	if (r->have[f.index / 8] & bit)
		return; /* a duplicate fragment */
	r->have[f.index / 8] |= bit;
	if (++r->got == r->total && r->have_hdr) {
		seen_add(a, seen_key(sess, r->stream, r->seq));
		a->st.frames_through++;
		r->used = false;
	}
}

void rl_ack_down(struct rl_ack *a, uint32_t sess, const uint8_t *dg, size_t len)
{
	struct fg_frag f;
	struct fg_frame fr;
	a->st.down_datagrams++;
	if (fg_frag_decode(dg, len, &f) < 0) {
		a->st.down_bad++;
		return;
	}
	if (f.total != 1) {
		a->st.down_other++; /* ACKs and status frames are never fragmented */
		return;
	}
	if (fg_frame_decode(f.chunk, f.chunk_len, FG_TRANSPORT_MESSAGE, &fr) < 0) {
		a->st.down_bad++;
		return;
	}
	if (!(fr.hdr.flags & FG_FLAG_ACK)) {
		if (fr.hdr.stream_id == FG_STREAM_STATUS)
			a->st.down_status++;
		else
			a->st.down_other++;
		return;
	}
	struct fg_ack_entry e[128];
	int n = fg_ack_frame_decode(&fr, e, FG_ARRAY_LEN(e));
	if (n < 0) {
		a->st.down_bad++;
		return;
	}
	a->st.acks++;
	for (int i = 0; i < n && i < (int)FG_ARRAY_LEN(e); i++) {
		a->st.ack_entries++;
		for (uint32_t k = 0; k < 64; k++) {
			uint32_t seq = e[i].base_seq + k;
			if (!fg_ack_entry_covers(&e[i], seq))
				continue;
			a->st.acked_seqs++;
			if (seen_has(a, seen_key(sess, e[i].stream_id, seq)))
				a->st.ack_proven++;
			else if (a->st.seen_overflow)
				a->st.ack_unchecked++;
			else {
				if (a->st.ack_unproven < RL_UNPROVEN_KEEP) {
					a->st.unproven[a->st.ack_unproven].sess = sess;
					a->st.unproven[a->st.ack_unproven].stream = e[i].stream_id;
					a->st.unproven[a->st.ack_unproven].seq = seq;
				}
				a->st.ack_unproven++;
			}
		}
	}
}

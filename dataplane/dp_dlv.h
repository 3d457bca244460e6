/* dp_dlv.h - reliable delivery of resolved seeds to UDP consumers: the
 * table of deliveries one lcore sent and the consumer has not ACKed yet,
 * pure C (no DPDK, no I/O).
 *
 * Owns: per lcore, a bounded set of pending deliveries keyed by
 * (stream_id, sequence) = (resolved band + layer, token_seq), the same pair
 * the consumer's ACK entries name (wire.md 2.1 and 3.3), each with the slot
 * that still holds the resolved body (no copy: a resend re-encodes the seed
 * from its slot), the number of resends and when the next one is due.
 * Resend policy mirrors the fleet's sender: a frame unACKed after retry_ns
 * is sent again (under a new frame_id, by the caller), at most `retries`
 * times, then given up.
 *
 * Ledger (the "no silent loss" rule, checked by the tests): every tracked
 * delivery leaves the table exactly once, by an ACK (dp_dlv_ack), by
 * dp_dlv_drop (resends exhausted, or its slot no longer holds the seed), by
 * eviction when the table is full (the oldest entry, reported to the
 * caller), or by being superseded by a new delivery of the same key. So
 *   tracked == acked + dropped + evicted + superseded + n (pending).
 * A consumer that never ACKs therefore holds at most `capacity` entries for
 * at most (retries + 1) * retry_ns each: a pending delivery pins no slot
 * (the slot table reclaims slots as usual; a resend finds out and gives
 * up; only the packets of a send by reference pin theirs while the device
 * holds them, dp_tx.h) and no memory grows after init.
 *
 * The consumer's window (wire.md 2.1): the fleet's receiving transport ACKs
 * at most base..base+63 per stream, base = the lowest sequence it still
 * holds, and trims only once 128 are held. dp_dlv_window records the latest
 * base an ACK entry of a stream named; dp_dlv_window_place then says where
 * a pending sequence lies: beyond base + 63 no ACK can come until the
 * window moves (the caller waits with dp_dlv_wait instead of burning a
 * resend); below the base the consumer does not hold it (lost before it
 * took a later one, or trimmed after its ACK) and it is resent as usual:
 * before its first trim the fleet's consumer takes a late sequence and
 * ACKs it, so the base alone never retires a delivery.
 * Windows live in a direct-mapped table of DP_DLV_WINDOWS streams (by the
 * stream's low byte; a colliding stream takes the entry over, which only
 * costs the old stream its window knowledge until its next ACK).
 *
 * Structure: entries[capacity] on a doubly linked list in due order (every
 * (re)arm puts the entry at the tail with due = now + retry_ns, so the list
 * stays sorted without a heap), free entries on a singly linked free list,
 * and an open-addressing index (linear probing, backward-shift deletion,
 * 2 * capacity rounded up to a power of two buckets) from key to entry.
 *
 * Who may call: the owning lcore only (single writer, nothing atomic).
 * No allocation after init. */
#ifndef DP_DLV_H
#define DP_DLV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

#define DP_DLV_NONE 0xFFFFFFFFu
#define DP_DLV_MAX (1u << 20)
/* Seqs of one consumer ACK frame that may match nothing pending before the
 * rest of the frame is ignored: bounds the lookups one datagram costs (a
 * 104-entry frame names 6,656 seqs). A consumer ACKs what it received, so
 * misses are duplicates: 128 is generous. */
#define DP_DLV_ACK_MISS_MAX 128u
/* Entries one consumer ACK frame may hold: an ACK datagram within the MTU
 * holds at most 104 (wire.md 2.1); a reassembled frame claiming more is
 * refused as ack_length. */
#define DP_DLV_ACK_ENTRIES_MAX 128u
#define DP_DLV_WINDOWS 256u
#define DP_DLV_WINDOW_SPAN 64u /* sequences a consumer's ACK entry covers: base..base+63 */

struct dp_dlv_cfg {
	uint32_t capacity; /* pending deliveries, 1..DP_DLV_MAX */
	uint64_t retry_ns; /* resend an unACKed delivery after this long, > 0 */
	uint32_t retries;  /* resends before giving up, 0..255 */
};

struct dp_dlv_entry {
	uint32_t token_seq;
	uint16_t stream;
	uint16_t layer;
	uint32_t slot;        /* slot index in the owner's table at resolution */
	uint64_t fingerprint; /* of the resolved seed: a resend checks the slot still holds it */
	uint64_t due_ns;      /* next resend (or give-up) time */
	uint8_t tries;        /* resends so far */
	bool used;
	uint32_t prev, next;  /* due list, or free list (next only) */
};

struct dp_dlv_win {
	uint16_t stream;
	bool known;
	uint32_t base; /* the consumer's lowest held sequence, as its last ACK entry said */
};

struct dp_dlv {
	struct dp_dlv_cfg cfg;
	struct dp_dlv_win win[DP_DLV_WINDOWS];
	struct dp_dlv_entry *e; /* [cfg.capacity] */
	uint32_t *idx;          /* [mask + 1] entry index or DP_DLV_NONE */
	uint32_t mask;
	uint32_t head, tail;    /* due list: oldest due first */
	uint32_t free_head;
	uint32_t n;             /* pending */
};

/* What dp_dlv_track did besides tracking the new delivery. */
enum dp_dlv_track_result {
	DP_DLV_NEW = 0,        /* tracked; nothing else happened */
	DP_DLV_SUPERSEDED,     /* the same key was pending: its entry now tracks the new delivery */
	DP_DLV_EVICTED,        /* the table was full: the oldest entry (*evicted) was dropped to make room */
};

/* Bytes of memory for a table of capacity entries (64-byte aligned pieces). */
size_t dp_dlv_mem_size(uint32_t capacity);
/* Lay a table out in mem[0..len). 0, -EINVAL (bad cfg, mem not 64-byte
 * aligned) or -ENOSPC (len too small). */
FG_MUST_CHECK int dp_dlv_init(struct dp_dlv *d, void *mem, size_t len, const struct dp_dlv_cfg *cfg);

/* Track a delivery just sent (tries 0, due now + retry_ns). When the table
 * is full, the entry due first is evicted and copied to *evicted (which may
 * be NULL). Returns a dp_dlv_track_result. */
enum dp_dlv_track_result dp_dlv_track(struct dp_dlv *d, uint16_t stream, uint32_t token_seq, uint16_t layer,
				      uint32_t slot, uint64_t fingerprint, uint64_t now_ns,
				      struct dp_dlv_entry *evicted);

/* The consumer ACKed (stream, token_seq): forget it. True when it was
 * pending; false for an ACK of nothing pending (a duplicate ACK, an ACK of
 * a duplicate delivery, a late ACK after a give-up): idempotent. */
bool dp_dlv_ack(struct dp_dlv *d, uint16_t stream, uint32_t token_seq);

/* An ACK entry's sequences of stream: bit k of bits names base + k
 * (modulo 2^32). Each is ACKed as dp_dlv_ack does, lowest first, until
 * *misses (sequences that matched nothing pending, counted on) reaches
 * max_misses; the rest are not looked up. Returns how many were pending
 * (now ACKed). */
unsigned dp_dlv_ack_bits(struct dp_dlv *d, uint16_t stream, uint32_t base, uint64_t bits, unsigned *misses,
			 unsigned max_misses);

/* The entry due first when its time has come (due_ns <= now_ns), else
 * DP_DLV_NONE. The caller then calls dp_dlv_rearm (it resent it) or
 * dp_dlv_drop (it gave up). */
uint32_t dp_dlv_due(const struct dp_dlv *d, uint64_t now_ns);
/* Entry i was resent: tries + 1, due now + retry_ns, moved to the tail. */
void dp_dlv_rearm(struct dp_dlv *d, uint32_t i, uint64_t now_ns);
/* Entry i leaves the table without an ACK (given up). */
void dp_dlv_drop(struct dp_dlv *d, uint32_t i);
/* Where a pending sequence lies against its consumer's window. */
enum dp_dlv_place {
	DP_DLV_IN_WINDOW = 0, /* base..base+63, or no ACK of the stream seen yet: resend as usual */
	DP_DLV_BELOW_BASE,    /* below the base: not held by the consumer; resend as usual */
	DP_DLV_BEYOND,        /* beyond base+63: no ACK can come before the window moves */
};
/* An ACK entry of stream said base: remember it (the latest one wins, so a
 * consumer that restarts with a lower base is followed). True when that
 * changed what the table knew (a new stream or another base). */
bool dp_dlv_window(struct dp_dlv *d, uint16_t stream, uint32_t base);
/* Forget stream's window: its deliveries resend as usual until the next
 * base (dp_cwin.h, a new run of the stream). */
void dp_dlv_window_forget(struct dp_dlv *d, uint16_t stream);
/* Where seq of stream lies (sequence arithmetic modulo 2^32). */
enum dp_dlv_place dp_dlv_window_place(const struct dp_dlv *d, uint16_t stream, uint32_t seq);
/* Entry i waits for the window: due again after retry_ns, its resend count
 * unchanged, moved to the tail. */
void dp_dlv_wait(struct dp_dlv *d, uint32_t i, uint64_t now_ns);

/* The timer's decision for the entry due first (DP_DLV_NONE in *i when
 * none is due):
 *   WAITED     beyond base + 63: re-armed with its resends unchanged
 *   EXHAUSTED  resends used up: the caller gives it up (dp_dlv_drop)
 *   RESEND     the caller resends it (dp_dlv_rearm) or, when its slot no
 *              longer holds the seed, gives it up (dp_dlv_drop)
 * *i is the entry. */
enum dp_dlv_step { DP_DLV_STEP_NONE = 0, DP_DLV_STEP_WAITED, DP_DLV_STEP_EXHAUSTED, DP_DLV_STEP_RESEND };
enum dp_dlv_step dp_dlv_step(struct dp_dlv *d, uint64_t now_ns, uint32_t *i);

/* True when entry i has used up its resends (the caller gives up). */
static inline bool dp_dlv_exhausted(const struct dp_dlv *d, uint32_t i) { return d->e[i].tries >= d->cfg.retries; }

#endif

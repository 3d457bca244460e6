/* dp_shard.h - the shard work of one lcore (dp_shard.c), behind the I/O
 * interface of dp_io.h: the DPDK lcore and the kernel receiver
 * (bench/dp/kudp_rx.c) both drive it. Every function runs on the thread
 * that owns `lc` only. */
#ifndef DP_SHARD_H
#define DP_SHARD_H

#include <stddef.h>
#include <string.h>

#include "dp_io.h"

/* One UDP datagram for us, as the driver received it (after its own L2-L4
 * parse, port demux and source allowlist): its flow by reference (the
 * datagrams of one flow share it), its payload borrowed for the call. */
struct dp_dgram {
	const struct dp_flow *fl;
	const uint8_t *payload;
	uint32_t len;
};

/* A flow's facts for a source and route (unbound: no [udp] layer_ports). */
static inline struct dp_flow dp_flow_of(const struct dp_peer *src, const struct dp_route *route, bool fragmented)
{
	return (struct dp_flow){.src = *src, .route = *route, .hash = dp_peer_hash(src, 0), .fragmented = fragmented};
}

/* Receive: one datagram into the shard (fragment decode, reassembly or
 * direct placement, ingest or hand-off, status, ACK bookkeeping). */
void dp_shard_dgram(struct dp_lcore *lc, const struct dp_dgram *dg, uint64_t now);
/* Receive: a burst of datagrams, as dp_shard_dgram would take them one by
 * one, in two passes. The driver adds each datagram as it decodes it
 * (dp_shard_add: its fragment header decoded, its frame's reassembly
 * record found by the hash its flow keeps, the slot line it lands in
 * prefetched, so the misses of the whole burst overlap; a run from its
 * frame's fragment 0 is looked up once, when that fragment is pushed,
 * as it has no record yet in the common order); dp_shard_run
 * then places them in arrival order. The burst is a list of items, each
 * a run of fragments of one frame (one flow, one frame id) that arrived
 * one after another, or one datagram the run does not place itself (raw
 * profile, one fragment, a fragment header the codec refuses). A run of
 * the frame of the run before it (only such datagrams between them)
 * continues it: no lookup of its own. The flows and payloads stay the
 * driver's until the run.
 *
 * Invariants:
 *  1. it[k].at < it[k + 1].at; it[n].at == the elements of f[] in use;
 *     item k holds f[it[k].at, it[k + 1].at) (one element for a datagram).
 *  2. A run's f[] are fragments of multi-fragment frames as
 *     fg_frag_decode gives them but frame_id, which holds the wire's two
 *     bytes (the run's fid is its frame id); a datagram's f[] element is
 *     its decoded single fragment, or (raw profile) chunk and chunk_len
 *     are its payload; a refused fragment header leaves it unset (rc < 0).
 *  3. nfrag == the fragments of the runs. */
struct dp_shard_item {
	const struct dp_flow *fl;
	struct dp_ra_hint hint; /* a run's lookup (dp_reasm_find), unless it continues the run before;
				 * none for a run from fragment 0 (push looks it up) */
	uint8_t at;             /* its first element of f[] */
	int8_t rc;              /* a datagram: 0, or the codec's reason; a run: 1 */
	bool cont;              /* a run that continues the run before it (same frame) */
	uint16_t fid;           /* a run's frame id */
};
struct dp_shard_burst {
	struct fg_frag f[DP_BURST];
	struct dp_shard_item it[DP_BURST + 1]; /* it[n].at: the elements of f[] in use */
	unsigned n, nfrag;
};

/* The state of a burst being added to, kept by the driver's loop in its
 * locals (dp_shard_add is inline and the adder never leaves the loop's
 * function, so its fields live in registers across dp_reasm_find), and
 * the burst written once by dp_shard_add_end. */
struct dp_shard_adder {
	struct dp_shard_burst *b;
	const struct dp_flow *prev; /* the flow of the last run, or NULL */
	uint8_t *body;              /* the last run's lookup, for the prefetch (dp_reasm_prefetch) */
	uint32_t body_len, chunk;
	uint32_t key;               /* the last run's frame id as the wire has it, | DP_ADD_AFTER once a
				     * datagram followed it, | DP_ADD_FETCH while its lookup has a
				     * record to prefetch (a->body_len != 0) */
	struct fg_frag *f;          /* the next element of b->f */
	unsigned n, ndgram;
};

#define DP_ADD_AFTER 0x10000u
#define DP_ADD_FETCH 0x20000u

/* Start an empty burst b (the caller's), added to through a (the caller's
 * local, passed to nothing but dp_shard_add and dp_shard_add_end). */
static inline void dp_shard_add_begin(struct dp_shard_adder *a, const struct dp_lcore *lc, struct dp_shard_burst *b)
{
	*a = (struct dp_shard_adder){.b = b, .f = b->f, .chunk = lc->reasm.cfg.chunk, .key = DP_ADD_AFTER};
}

/* A new item, item n, starting at element a->f. */
static inline struct dp_shard_item *dp_shard_item_new(struct dp_shard_adder *a, const struct dp_flow *fl, int8_t rc)
{
	struct dp_shard_item *it = &a->b->it[a->n++];
	it->fl = fl;
	it->at = (uint8_t)(a->f - a->b->f);
	it->rc = rc;
	it->cont = false;
	return it;
}

/* A fragment (header word w, as the wire has it; at a->f) that does not simply
 * continue the open run (dp_shard_add): it starts a run (its lookup, a
 * new item), continues the run open before the datagrams since, or
 * continues a run whose frame has a record; then the slot line it lands
 * in prefetched (dp_reasm_prefetch; nothing to fetch while the run's frame
 * has no record that lands: its fragment 0 in this burst). */
static inline void dp_shard_add_run(struct dp_lcore *lc, struct dp_shard_adder *a, const struct dp_flow *fl,
				    uint32_t w, const uint8_t *payload)
{
	uint16_t wfid = (uint16_t)w;
	if (fl != a->prev || wfid != (uint16_t)a->key || (a->key & DP_ADD_AFTER)) {
		struct dp_shard_item *it = dp_shard_item_new(a, fl, 1);
		it->fid = fg_be16(payload);
		if (fl == a->prev && wfid == (uint16_t)a->key) {
			it->cont = true; /* a datagram between: the same frame's hint goes on */
			a->key &= ~DP_ADD_AFTER;
		} else {
			/* a run from fragment 0 (the common order) is looked up
			 * once, when that fragment is pushed */
			if (w & 0xFF0000u) {
				dp_reasm_find(&lc->reasm, &fl->src, fl->hash, it->fid, &it->hint);
				a->body = it->hint.body;
				a->body_len = it->hint.body_len;
			} else {
				it->hint = (struct dp_ra_hint){.ctx = DP_RA_HINT_NONE};
				a->body = NULL;
				a->body_len = 0;
			}
			a->prev = fl;
			a->key = wfid | (a->body_len ? DP_ADD_FETCH : 0);
		}
	}
	if (a->key & DP_ADD_FETCH) {
		uint32_t off = (w >> 16 & 0xFF) * a->chunk - DP_RA_SEED_HDR;
		if (off < a->body_len) {
			__builtin_prefetch(a->body + off, 1, 3);
			__builtin_prefetch(a->body + off + 64, 1, 3);
		}
	}
}

/* One datagram (payload[0..len), of flow fl) into the burst (at most
 * DP_BURST). A fragment of a multi-fragment frame keeps its decoded header
 * only: a fragment of the frame of the run open before it joins that run
 * (no lookup, nothing stored but the fragment), any other starts a run.
 * The common case, a fragment of the open run with nothing to prefetch,
 * is one test of the flow and one of a->key. */
static inline void dp_shard_add(struct dp_lcore *lc, struct dp_shard_adder *a, const struct dp_flow *fl,
				const uint8_t *payload, uint32_t len)
{
	struct fg_frag *f = a->f;
	int8_t rc = 0;
	if (fl->fragmented) {
		/* fg_frag_decode_fast's common case, for 2 <= total: the
		 * fragment header's word stored as it is (frame id, index,
		 * total: fg_frag's first word but the frame id's byte order) */
		if (__builtin_expect(len > FG_FRAG_HDR_LEN && payload[2] < payload[3] && payload[3] != 1, 1)) {
			uint32_t w;
			memcpy(&w, payload, 4);
			_Static_assert(offsetof(struct fg_frag, frame_id) == 0 && offsetof(struct fg_frag, index) == 2 &&
					       offsetof(struct fg_frag, total) == 3 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
				       "fg_frag's header word");
			memcpy(f, &w, 4);
			f->chunk = payload + FG_FRAG_HDR_LEN;
			f->chunk_len = len - FG_FRAG_HDR_LEN;
			if (__builtin_expect(fl != a->prev || (w & 0xFFFFu) != a->key, 0))
				dp_shard_add_run(lc, a, fl, w, payload);
			a->f++;
			return;
		}
		ssize_t k = fg_frag_decode_fast(payload, len, f);
		if (k < 0)
			rc = (int8_t)(k < -127 ? -127 : k);
		/* k >= 0 here: one fragment (total 1), a datagram of its own */
	} else {
		f->chunk = payload;
		f->chunk_len = len;
	}
	dp_shard_item_new(a, fl, rc);
	a->key |= DP_ADD_AFTER;
	a->f++;
	a->ndgram++;
}

/* The burst's counts written once its datagrams are all added; b is then
 * ready for dp_shard_run. */
static inline void dp_shard_add_end(struct dp_shard_adder *a)
{
	unsigned nf = (unsigned)(a->f - a->b->f);
	a->b->it[a->n].at = (uint8_t)nf;
	a->b->n = a->n;
	a->b->nfrag = nf - a->ndgram;
}

void dp_shard_run(struct dp_lcore *lc, struct dp_shard_burst *b, uint64_t now);
/* Receive: a frame another shard handed to this one (io->handoff); x is
 * ours now and goes back through io->xfer_put. */
void dp_shard_handed(struct dp_lcore *lc, struct dp_xfer *x, uint64_t now);
/* The reassembler's sink (struct dp_reasm_cfg, arg the lcore): lc's
 * io->sink, or NULL without one. */
void *dp_shard_sink(void *arg, uint32_t slot, uint32_t body_len);
/* Time: once per loop iteration. About once a millisecond the
 * housekeeping (delivery resends, reassembly and slot expiry, expiries
 * reported); ACKs flushed on resolution or every ack_interval. */
void dp_shard_tick(struct dp_lcore *lc, uint64_t now);
/* A whole frame from the control plane, which this lcore owns: decode its
 * header and classify its stream once (dp_frame_decode), ingest, count,
 * answer. from is the UDP sender, or NULL for a frame from the control
 * plane (answered through the lane). Returns the ingest return code (0 or
 * -FG_R_*); *r is filled either way. frame is borrowed. (Frames from the
 * wire take dp_shard_dgram, which decodes once and carries the decode
 * through a hand-off.) */
int dp_shard_frame(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_xfer *from,
		   struct fg_ingest_result *r, uint64_t now);

#endif

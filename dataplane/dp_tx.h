/* dp_tx.h - an lcore's transmit side (dp_tx.c). Every function runs on the
 * lcore that owns `lc` only. */
#ifndef DP_TX_H
#define DP_TX_H

#include "dp_internal.h"

/* Send the queued mbufs. The ones the device refuses after 4 tries stay in
 * the TX buffer, in order, for the next flush (back-pressure: the poll
 * loop receives nothing while any wait, for at most [port] tx_hold_ms, see
 * dp_lcore.c). Returns how many wait. */
unsigned dp_tx_flush(struct dp_lcore *lc);
/* TX back-pressure, once per loop iteration. dp_tx_held: whether packets
 * the TX queue refused still wait within [port] tx_hold_ms (the loop then
 * receives nothing); when the hold ran out they are dropped (drop_tx_full,
 * tx_hold_expired) and false is returned. dp_tx_send: send the buffer;
 * what the queue refuses starts a hold (tx_held), or is dropped at once
 * with tx_hold_ms = 0 or within DP_TX_NOHOLD_TIMES holds after one ran out.
 * held: dp_tx_held's answer in this iteration (a hold already running is
 * not restarted). */
bool dp_tx_held(struct dp_lcore *lc, uint64_t now);
void dp_tx_send(struct dp_lcore *lc, bool held, uint64_t now);
/* Return the mbufs taken ahead for the next datagrams (lcore exit). */
void dp_tx_stash_release(struct dp_lcore *lc);
/* Free every mbuf waiting in the TX buffer, counted as drop_tx_full. */
void dp_tx_drop(struct dp_lcore *lc);
/* Queue m (ownership moves to the TX buffer); flushes when full. When the
 * buffer stays full (the device took nothing), m is freed and counted as
 * drop_tx_full. */
void dp_tx_queue(struct dp_lcore *lc, struct rte_mbuf *m);
/* Queue one UDP datagram from our data port (source address rt->local)
 * to `to` over route rt, whose payload is head[0..head_len) then
 * data[0..len), both copied straight into the mbuf behind a header
 * written from the lcore's template for (rt, to). The io->dgram of
 * dp_io_dpdk (dp_io.h). Returns false (counted tx_nombuf) when no mbuf was
 * free. Pointers are borrowed. */
bool dp_tx_dgram(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, const uint8_t *head,
		 uint32_t head_len, const uint8_t *data, uint32_t len);
/* Queue the frame head[0..head_len) + body[0..body_len) to `to` over rt
 * in the fragmented profile: total (fg_frag_count(head_len + body_len,
 * chunk), counted by the caller) datagrams under frame id fid, each its
 * fragment header, then its part of the frame gathered from head and
 * body: the datagrams dp_tx_dgram would queue for each fragment in turn,
 * with the header template looked up once. The io->frags of dp_io_dpdk
 * (dp_io.h). false when total is 0 or a datagram found no mbuf (counted
 * tx_nombuf; the others are queued). Pointers are borrowed. */
bool dp_tx_frags(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, uint16_t fid,
		 uint32_t total, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len,
		 uint32_t chunk);
/* Queue the status frame of a placed contribution (fg_status_frame_of
 * (&lc->ictx, seed, res)) to `to` over rt as a single-fragment datagram
 * of frame id fid, encoded straight into the mbuf behind the header from
 * the template: the datagram dp_tx_dgram would queue for the frame
 * encoded into a buffer. The io->status_of of dp_io_dpdk (dp_io.h):
 * 1 queued (counted status_sent), 0 no mbuf (counted tx_nombuf). */
int dp_tx_status_of(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to,
		    const struct fg_seed *seed, const struct fg_slot_result *res, uint16_t fid) __attribute__((nonnull));
/* Queue pp's pending pairs, which fit one ACK datagram at mtu, as that
 * datagram (dp_ack_encode, frame id fid) to pp->peer over pp->route,
 * encoded straight into the mbuf behind the header from the template:
 * the datagram dp_tx_dgram would queue for it encoded into a buffer. The
 * pairs are taken even when no mbuf was free (0, counted tx_nombuf); 1:
 * queued. The io->ack_one of dp_io_dpdk (dp_io.h). */
int dp_tx_ack_one(struct dp_lcore *lc, struct dp_ack_peer *pp, uint32_t mtu, uint16_t fid);
/* dp_neigh_route for consumer `to` at now, then dp_tx_frags over that
 * route: the route and its header template held in the route memo
 * (dp_io.h struct dp_route_memo) while both stand, so a delivery to the
 * same consumer looks neither up again. With lc->tx_ref (the port takes
 * multi-segment TX) and slot not DP_DLV_NONE, over IPv4, the body goes by
 * reference: each fragment is a header mbuf (Ethernet/IP/UDP, fragment
 * header, fragment 0's part of head) chained to an mbuf attached to its
 * part of the body where it lies, in slot `slot` of lc->slots, which stays
 * pinned (fg_slot_pin) until the last such mbuf is freed; the datagrams
 * are byte for byte those of the copy. -1: no route (dp_neigh_route's
 * false; nothing queued); else dp_tx_frags's answer. The
 * io->consumer_frags of dp_io_dpdk (dp_io.h). */
int dp_tx_consumer_frags(struct dp_lcore *lc, const struct dp_peer *to, uint64_t now, uint16_t fid, uint32_t total,
			 const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len,
			 uint32_t chunk, uint32_t slot);
/* Bytes for the slot references of a table of capacity slots. */
size_t dp_tx_ref_mem_size(uint32_t capacity);
/* Lay lc's slot references out in mem (dp_tx_ref_mem_size(lc->slots
 * capacity) bytes, 64-byte aligned, owned by the caller, freed only after
 * every mbuf the lcore sent is: after the port's close) and turn sending
 * by reference on: lc->tx_ref = mem. iova_delta: IOVA of lc->slots_mem
 * minus its address, which must be IOVA-contiguous. Before the lcore runs. */
void dp_tx_ref_init(struct dp_lcore *lc, void *mem, uint64_t iova_delta);
#endif

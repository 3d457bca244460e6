/* dp_reply.h - status frames and aggregated ACKs to UDP senders
 * (dp_reply.c). Every function runs on the lcore that owns `lc` only. */
#ifndef DP_REPLY_H
#define DP_REPLY_H

#include "dp_io.h"

/* Send status st to peer over route (a single-fragment frame). */
void dp_reply_status(struct dp_lcore *lc, const struct dp_peer *peer, const struct dp_route *route,
		     const struct fg_status *st);
/* The same for the status of a placed contribution (fg_status_from_result
 * (ictx, seed, res, 0)), written straight into the datagram
 * (fg_status_frame_of: seed decoded, res the slot engine's): into the
 * packet itself through io->status_of, else into a buffer io->dgram
 * sends. */
void dp_reply_status_of(struct dp_lcore *lc, const struct dp_peer *peer, const struct dp_route *route,
			const struct fg_seed *seed, const struct fg_slot_result *res);
/* Send every pending ACK of every peer touched since the last flush. */
void dp_reply_ack_flush(struct dp_lcore *lc);
/* Note that (stream, seq) from `from`'s peer was received whole; sends at
 * once when that peer's entry is full. from->hash is its peer's
 * dp_peer_hash (set by the lcore that received it). */
void dp_reply_ack_note(struct dp_lcore *lc, const struct dp_xfer *from, uint16_t stream, uint32_t seq, uint64_t now);
/* The same for a peer whose hash (dp_peer_hash(peer, 0)) the caller has
 * already: a known flow's (dp_flow.hash). */
void dp_reply_ack_note_peer(struct dp_lcore *lc, const struct dp_peer *peer, uint32_t hash,
			    const struct dp_route *route, uint16_t stream, uint32_t seq, uint64_t now);

#endif

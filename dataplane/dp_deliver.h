/* dp_deliver.h - reliable delivery of resolved seeds (dp_deliver.c). Every
 * function runs on the lcore that owns `lc` only. */
#ifndef DP_DELIVER_H
#define DP_DELIVER_H

#include "dp_io.h"

/* Slot `slot` of lc's shard just resolved: send the seed to its consumer,
 * track the delivery, pass it to the control plane, ACK soon. */
void dp_deliver_seed(struct dp_lcore *lc, uint32_t slot, uint64_t now);
/* Resend due deliveries, give up exhausted or reclaimed ones (at most 256). */
void dp_deliver_timer(struct dp_lcore *lc, uint64_t now);
/* A consumer's ACK frame (whole, frame[0..len), its header decoded in d;
 * both borrowed) from src: retire
 * this lcore's seqs of the entries whose layer's configured consumer is
 * src (address and port; other entries are counted ack_foreign and
 * ignored); copy the frame to every other lcore owning a covered seq. src
 * NULL: a copy from the lcore that received (and checked) it, not
 * forwarded again. Work is bounded: at most DP_DLV_ACK_MISS_MAX seqs that
 * match nothing pending per frame (then ack_budget). now: the caller's loop
 * clock (the consumer's neighbour entry is confirmed at it). */
void dp_deliver_on_ack(struct dp_lcore *lc, const struct dp_frame *d, const uint8_t *frame, uint32_t len,
		       const struct dp_peer *src, uint64_t now);

#endif

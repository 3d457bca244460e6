/* dp_rx.h - an lcore's receive side (dp_rx.c). Runs on the lcore that owns
 * `lc` only. */
#ifndef DP_RX_H
#define DP_RX_H

#include "dp_internal.h"

/* Receive and handle up to DP_BURST packets from lc's RX queue (none when
 * the lcore has no queue). Returns how many were received. */
unsigned dp_rx_burst(struct dp_lcore *lc, uint64_t now);

#endif

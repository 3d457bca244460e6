/* dp_idle.h - how an idle poll lcore waits for work instead of spinning
 * ([poll] idle_wake = on, docs/dataplane.md "Idle").
 *
 * After idle_wake_after_us (1000) without work the lcore blocks in ppoll()
 * on two files: its RX queue's socket (the AF_XDP or AF_PACKET socket the
 * PMD receives on: readable while its ring holds a packet) and its lane's
 * eventfd (struct
 * fg_lane.wake: the control plane pushed to to_dp, or another lcore handed
 * a frame to its inbox, while it slept), for at most the time until its
 * next timer (the shard's 1 ms tick, the ACK interval), or 100 ms when
 * nothing is pending that a timer would act on. Nothing is lost:
 * the socket is level-triggered (a packet that came after the last empty
 * burst makes ppoll return at once), and the lane's wake-up is the
 * boundary's protocol (boundary.h, struct fg_wake): announce, re-check the
 * rings, sleep.
 *
 * The socket is found at port setup (dp_idle_fd.h).
 * Who may call: the lcore that owns lc. */
#ifndef DP_IDLE_H
#define DP_IDLE_H

#include <stdint.h>

#include "dp_internal.h"

/* One idle wait of lc (its lane's wake must have its fd; wait_fd is its RX
 * socket, or -1 for an lcore without an RX queue, which waits on the lane):
 * returns at once when a message or frame is already queued or a timer is
 * due, else after ppoll(). Counts idle_waits and why it woke. */
void dp_idle_wait(struct dp_lcore *lc, uint64_t now);

#endif

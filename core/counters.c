/* counters.c - the dataplane's counter registry (see fg/counters.h).
 * Constant tables; any thread. */
#include "fg/counters.h"

#include <stdio.h>

#define DROPS_HELP "packets or frames the dataplane dropped, by reason and lcore"

const struct fg_counter_def fg_dp_counter_defs[FG_C__COUNT] = {
	[FG_C_RX_PKTS] = {"rx_pkts", "dp_rx_pkts_total", NULL, "counter", "packets received by the poll lcore", 0},
	[FG_C_RX_BYTES] = {"rx_bytes", "dp_rx_bytes_total", NULL, "counter", "bytes received by the poll lcore", 0},
	[FG_C_TX_PKTS] = {"tx_pkts", "dp_tx_pkts_total", NULL, "counter", "packets sent by the poll lcore", 0},
	[FG_C_TX_BYTES] = {"tx_bytes", "dp_tx_bytes_total", NULL, "counter", "bytes sent by the poll lcore", 0},
	[FG_C_DROP_MALFORMED] = {"drop_malformed", "dp_drops_total", "reason=\"malformed\"", "counter", "packets or frames malformed at L2..L4 or in the aeon codec", 0},
	[FG_C_DROP_NOT_ALLOWED] = {"drop_not_allowed", "dp_drops_total", "reason=\"not_allowed\"", "counter", "datagrams from a source outside [udp] allow", 0},
	[FG_C_DROP_UNKNOWN_STREAM] = {"drop_unknown_stream", "dp_drops_total", "reason=\"unknown_stream\"", "counter", "frames of a stream the ingest does not know", 0},
	[FG_C_DROP_LATE] = {"drop_late", "dp_drops_total", "reason=\"late\"", "counter", "contributions for a slot already ended", 0},
	[FG_C_DROP_DUPLICATE] = {"drop_duplicate", "dp_drops_total", "reason=\"duplicate\"", "counter", "duplicate contributions (same bytes)", 0},
	[FG_C_DROP_CONFLICT] = {"drop_conflict", "dp_drops_total", "reason=\"conflict\"", "counter", "conflicting duplicate contributions (the slot is poisoned)", 0},
	[FG_C_DROP_NO_SLOT] = {"drop_no_slot", "dp_drops_total", "reason=\"no_slot\"", "counter", "contributions that found no free slot", 0},
	[FG_C_DROP_REASM_OVERFLOW] = {"drop_reasm_overflow", "dp_drops_total", "reason=\"reasm_overflow\"", "counter", "fragments refused: the reassembly table was full", 0},
	[FG_C_DROP_TX_FULL] = {"drop_tx_full", "dp_drops_total", "reason=\"tx_full\"", "counter", "packets not sent: the TX queue stayed full (a back-pressure pause of [port] tx_hold_ms ran out, or did so within ten times that, or the hold is off, the TX buffer was full, or shutdown)", 0},
	[FG_C_DROP_NOT_UDP] = {"drop_not_udp", "dp_drops_total", "reason=\"not_udp\"", "counter", "packets that are not UDP (nor ARP/NDP)", 0},
	[FG_C_DROP_BAD_PORT] = {"drop_bad_port", "dp_drops_total", "reason=\"bad_port\"", "counter", "UDP datagrams to a port the dataplane does not serve", 0},
	[FG_C_DROP_EXPIRED] = {"drop_expired", "dp_drops_total", "reason=\"expired\"", "counter", "contributions for a slot that expired", 0},
	[FG_C_DROP_STALE] = {"drop_stale", "dp_drops_total", "reason=\"stale\"", "counter", "contributions of an older model epoch", 0},
	[FG_C_DROP_LANE_FULL] = {"drop_lane_full", "dp_drops_total", "reason=\"lane_full\"", "counter", "messages not sent to the control plane: the lane was full", 0},
	[FG_C_FRAGS] = {"frags", "dp_frags_total", NULL, "counter", "fragments received (fragmented UDP profile)", 0},
	[FG_C_FRAMES] = {"frames", "dp_frames_total", NULL, "counter", "whole aeon frames decoded", 0},
	[FG_C_CONTRIB_ACCEPTED] = {"contrib_accepted", "dp_contrib_accepted_total", NULL, "counter", "contributions accepted into a slot", 0},
	[FG_C_SEEDS_RESOLVED] = {"seeds_resolved", "dp_seeds_resolved_total", NULL, "counter", "slots resolved", 0},
	[FG_C_SLOTS_EXPIRED] = {"slots_expired", "dp_slots_expired_total", NULL, "counter", "slots expired", 0},
	[FG_C_ACKS_SENT] = {"acks_sent", "dp_acks_sent_total", NULL, "counter", "ACKs sent", 0},
	[FG_C_STATUS_SENT] = {"status_sent", "dp_status_sent_total", NULL, "counter", "status frames sent", 0},
	[FG_C_SEEDS_SENT] = {"seeds_sent", "dp_seeds_sent_total", NULL, "counter", "resolved seeds sent to UDP consumers", 0},
	[FG_C_CANONICAL] = {"canonical", "dp_canonical_total", NULL, "counter", "canonical reports received", 0},
	[FG_C_REASM_TIMEOUT] = {"reasm_timeout", "dp_reasm_timeout_total", NULL, "counter", "incomplete fragment groups dropped after reasm_timeout_ms", 0},
	[FG_C_SLOTS_FLUSHED] = {"slots_flushed", "dp_slots_flushed_total", NULL, "counter", "open slots freed by a model epoch change (FG_BM_FLUSH)", 0},
	[FG_C_DELIVERY_ACKED] = {"delivery_acked", "dp_delivery_acked_total", NULL, "counter", "resolved-seed deliveries the consumer ACKed", 0},
	[FG_C_DELIVERY_RESENT] = {"delivery_resent", "dp_delivery_resent_total", NULL, "counter", "resends of unACKed deliveries", 0},
	[FG_C_DELIVERY_GIVEN_UP] = {"delivery_given_up", "dp_delivery_given_up_total", NULL, "counter", "deliveries that ended unACKed (resends exhausted, slot reclaimed, table full, superseded)", 0},
	[FG_C_DELIVERY_ACK_UNMATCHED] = {"delivery_ack_unmatched", "dp_delivery_ack_unmatched_total", NULL, "counter", "ACKed delivery seqs with nothing pending (duplicate or late ACKs): no effect", 0},
	[FG_C_LANE_NO_BODY] = {"lane_no_body", "dp_lane_no_body_total", NULL, "counter", "resolved seeds and canonical reports sent to the control plane without their body: the lane's buffer pool was empty", 0},
};

const struct fg_counter_def fg_dp_xcounter_defs[DP_X__COUNT] = {
	[DP_X_ARP] = {"arp", "dp_arp_total", NULL, "counter", "ARP packets (requests answered or ignored)", 0},
	[DP_X_IP_FRAG] = {"drop_ip_fragment", "dp_drops_total", "reason=\"ip_fragment\"", "counter", "IPv4 fragments (refused)", 0},
	[DP_X_BAD_SOURCE] = {"drop_bad_source", "dp_drops_total", "reason=\"bad_source\"", "counter", "UDP datagrams from an unspecified, loopback, multicast, broadcast or reserved source, or from the dataplane's own address (refused)", 0},
	[DP_X_NOT_OURS] = {"drop_not_ours", "dp_drops_total", "reason=\"not_ours\"", "counter", "UDP datagrams to a foreign, broadcast or multicast address (refused)", 0},
	[DP_X_MULTISEG] = {"drop_multiseg", "dp_drops_total", "reason=\"multiseg\"", "counter", "multi-segment mbufs (refused)", 0},
	[DP_X_PKT_MALFORMED] = {"pkt_malformed", "dp_pkt_malformed_total", NULL, "counter", "L2..L4 or fragment headers malformed (also in reason=\"malformed\")", 0},
	[DP_X_RAW_DGRAMS] = {"raw_datagrams", "dp_raw_datagrams_total", NULL, "counter", "datagrams on the raw profile port", 0},
	[DP_X_FRAG_SINGLE] = {"frag_single", "dp_frag_single_total", NULL, "counter", "fragmented-profile datagrams with frag_total 1", 0},
	[DP_X_FRAG_TAKEN] = {"frag_taken", "dp_frag_taken_total", NULL, "counter", "fragments stored or placed", 0},
	[DP_X_FRAG_DUP] = {"frag_duplicate", "dp_frag_duplicate_total", NULL, "counter", "duplicate fragments", 0},
	[DP_X_FRAG_DISCARDED] = {"frag_discarded", "dp_frag_discarded_total", NULL, "counter", "fragments of a group already judged", 0},
	[DP_X_FRAG_NOBUF] = {"frag_nobuf", "dp_frag_nobuf_total", NULL, "counter", "fragments refused: no frame buffer free", 0},
	[DP_X_FRAG_MALFORMED] = {"frag_malformed", "dp_frag_malformed_total", NULL, "counter", "fragments refused (total changed, chunk size, too large)", 0},
	[DP_X_HANDOFF_OUT] = {"handoff_out", "dp_handoff_out_total", NULL, "counter", "whole frames handed to the lcore owning their shard", 0},
	[DP_X_HANDOFF_IN] = {"handoff_in", "dp_handoff_in_total", NULL, "counter", "whole frames received from other lcores", 0},
	[DP_X_ACK_RX] = {"ack_rx", "dp_ack_rx_total", NULL, "counter", "ACK frames received (the fleet ACKing our sends)", 0},
	[DP_X_LANE_FRAMES] = {"lane_frames", "dp_lane_frames_total", NULL, "counter", "FG_BM_FRAME messages from the control plane processed", 0},
	[DP_X_LANE_FLUSH] = {"lane_flush", "dp_lane_flush_total", NULL, "counter", "FG_BM_FLUSH messages from the control plane processed", 0},
	[DP_X_NEIGH_MISS] = {"neigh_miss", "dp_neigh_miss_total", NULL, "counter", "TX to an address whose MAC was unknown (gateway or broadcast used)", 0},
	[DP_X_NO_CONSUMER] = {"no_consumer", "dp_no_consumer_total", NULL, "counter", "resolved seeds with no consumer configured for the layer", 0},
	[DP_X_NO_SRC_ADDR] = {"no_src_addr", "dp_no_src_addr_total", NULL, "counter", "resolved seeds not sent: no local address of the consumer family", 0},
	[DP_X_TX_NOMBUF] = {"tx_nombuf", "dp_tx_nombuf_total", NULL, "counter", "TX mbuf allocation failures", 0},
	[DP_X_PEERS_NEW] = {"peer_msgs", "dp_peer_msgs_total", NULL, "counter", "FG_BM_PEER messages sent to the control plane", 0},
	[DP_X_ACK_FULL] = {"ack_table_full", "dp_ack_table_full_total", NULL, "counter", "ACK table full: flushed early", 0},
	[DP_X_BUSY_CYCLES] = {"busy_cycles", "dp_busy_cycles_total", NULL, "counter", "TSC cycles of poll iterations that found work (CPU cost per seed)", 0},
	[DP_X_NDP] = {"ndp_solicitations", "dp_ndp_solicitations_total", NULL, "counter", "IPv6 neighbour solicitations (answered when for [net] ip6)", 0},
	[DP_X_DLV_GIVEUP_RESENDS] = {"delivery_giveup_resends", "dp_delivery_giveup_resends_total", NULL, "counter", "deliveries given up: resends exhausted without an ACK", 0},
	[DP_X_DLV_GIVEUP_RECLAIMED] = {"delivery_giveup_reclaimed", "dp_delivery_giveup_reclaimed_total", NULL, "counter", "deliveries given up: the slot no longer held the seed when a resend was due", 0},
	[DP_X_DLV_GIVEUP_FULL] = {"delivery_giveup_full", "dp_delivery_giveup_full_total", NULL, "counter", "deliveries given up: pending table full ([consumers] pending_max), the oldest", 0},
	[DP_X_DLV_SUPERSEDED] = {"delivery_superseded", "dp_delivery_superseded_total", NULL, "counter", "deliveries superseded: the same (layer, token_seq) was delivered again before its ACK", 0},
	[DP_X_DLV_ACK_FWD] = {"delivery_ack_forwarded", "dp_delivery_ack_forwarded_total", NULL, "counter", "consumer ACK frames copied to the lcore owning some of their seqs", 0},
	[DP_X_DLV_ACK_FWD_FAIL] = {"delivery_ack_forward_failed", "dp_delivery_ack_forward_failed_total", NULL, "counter", "consumer ACK copies that found no buffer or ring room (the consumer ACKs the resend)", 0},
	[DP_X_POINT_SEEN] = {"point_seen_stores", "dp_point_seen_stores_total", NULL, "counter", "point last-seen stores ([points] liveness)", 0},
	[DP_X_LANE_WAKES] = {"lane_wakes", "dp_lane_wakes_total", NULL, "counter", "eventfd writes waking the control plane (at most one per its sleep)", 0},
	[DP_X_LANE_WAKE_FAIL] = {"lane_wake_fail", "dp_lane_wake_fail_total", NULL, "counter", "eventfd writes to wake the control plane that failed (cannot happen short of a closed fd)", 0},
	[DP_X_SLOTS_ABANDONED] = {"slots_abandoned", "dp_slots_abandoned_total", NULL, "counter", "open slots freed because their only attempt was aborted (a fragment group that never completed, no line whole): not expired, the key's next contribution opens it again", 0},
	[DP_X_LANE_DEFERRED] = {"lane_deferred", "dp_lane_deferred_total", NULL, "counter", "bursts to the control plane with nothing urgent in them (resolved seeds already sent over UDP to an unwatched layer, peers, canonical reports): no wake-up, drained by its 1 ms tick", 0},
	[DP_X_IDLE_SLEEPS] = {"idle_sleeps", "dp_idle_sleeps_total", NULL, "counter", "idle sleeps of the poll lcore ([poll] idle_sleep_us)", 0},
	[DP_X_THREAD_CPU_NS] = {"thread_cpu_ns", "dp_thread_cpu_seconds_total", NULL, "counter", "CPU time of the lcore thread (its CPU clock, idle polling included), added at stop; ns in stats and telemetry", 1},
	[DP_X_ACK_FOREIGN] = {"ack_foreign", "dp_ack_foreign_total", NULL, "counter", "consumer ACK entries for a layer whose configured consumer is not the sender (ignored)", 0},
	[DP_X_ACK_BUDGET] = {"ack_budget", "dp_ack_budget_total", NULL, "counter", "consumer ACK frames cut short: DP_DLV_ACK_MISS_MAX seqs matched nothing pending", 0},
	[DP_X_DLV_ACK_FOREIGN] = {"delivery_ack_foreign_stream", "dp_delivery_ack_foreign_stream_total", NULL, "counter", "consumer ACK entries of streams outside the resolved band (status frames ACKed by the fleet): skipped at one compare", 0},
	[DP_X_DLV_BELOW_BASE] = {"delivery_acked_below_base", "dp_delivery_acked_below_base_total", NULL, "counter", "deliveries below the consumer's ACK base ([consumers] ack_window = fleet): delivered, also in delivery_acked", 0},
	[DP_X_DLV_WINDOW_WAIT] = {"delivery_window_wait", "dp_delivery_window_wait_total", NULL, "counter", "due resends held because the sequence lies beyond the consumer's base + 63 ([consumers] ack_window = fleet)", 0},
	[DP_X_NEIGH_NOT_ALLOWED] = {"neigh_not_allowed", "dp_neigh_not_allowed_total", NULL, "counter", "ARP/NDP offers refused: the address is neither in [udp] allow nor a configured consumer", 0},
	[DP_X_NEIGH_UNSOLICITED] = {"neigh_unsolicited", "dp_neigh_unsolicited_total", NULL, "counter", "ARP/NDP offers refused: they would change a known neighbour and answer no request of ours", 0},
	[DP_X_NEIGH_SLOT_BUSY] = {"neigh_slot_busy", "dp_neigh_slot_busy_total", NULL, "counter", "ARP/NDP offers refused: the 4 neighbour table slots their address may use hold other addresses (the first ones keep them)", 0},
	[DP_X_GUARD_WAITS] = {"burst_guard_waits", "dp_burst_guard_waits_total", NULL, "counter", "unmaps of a disconnecting memif peer's memory that waited for this lcore to leave its RX/TX burst (the PMD would unmap under it)", 0},
	[DP_X_GUARD_TIMEOUTS] = {"burst_guard_timeouts", "dp_burst_guard_timeouts_total", NULL, "counter", "burst-guard waits that gave up after 1 s (the lcore stayed inside one burst; the unmap went ahead)", 0},
	[DP_X_IDLE_WAITS] = {"idle_waits", "dp_idle_waits_total", NULL, "counter", "waits of the idle poll lcore in ppoll() on its RX socket and lane eventfd ([poll] idle_wake)", 0},
	[DP_X_IDLE_WAKE_RX] = {"idle_wake_rx", "dp_idle_wake_rx_total", NULL, "counter", "idle waits ended by a packet on the lcore's RX queue", 0},
	[DP_X_IDLE_WAKE_LANE] = {"idle_wake_lane", "dp_idle_wake_lane_total", NULL, "counter", "idle waits ended by the lane's eventfd (a control-plane message, or a frame another lcore handed over)", 0},
	[DP_X_IDLE_WAKE_TIMER] = {"idle_wake_timer", "dp_idle_wake_timer_total", NULL, "counter", "idle waits ended by the lcore's next timer (its 1 ms tick, the ACK interval, or 100 ms with nothing pending)", 0},
	[DP_X_INBOX_WAKES] = {"inbox_wakes", "dp_inbox_wakes_total", NULL, "counter", "eventfd writes waking another lcore asleep ([poll] idle_wake) after handing it a frame", 0},
	[DP_X_TX_HELD] = {"tx_held", "dp_tx_held_total", NULL, "counter", "TX back-pressure: flushes the TX queue did not take whole; the rest waited in the lcore's TX buffer and RX paused until it went", 0},
	[DP_X_TX_HOLD_EXPIRED] = {"tx_hold_expired", "dp_tx_hold_expired_total", NULL, "counter", "TX back-pressure pauses that lasted [port] tx_hold_ms (50 ms): the waiting packets were dropped (drops_total{reason=\"tx_full\"}), RX resumed, and for ten times as long (500 ms) refused packets are dropped without a pause", 0},
};

const char *fg_counter_family_help(const struct fg_counter_def *d)
{
	return d->label ? DROPS_HELP : d->help;
}

void fg_dp_outcome_key(unsigned outcome, char *out, size_t cap)
{
	snprintf(out, cap, "outcome_%s", fg_outcome_name((enum fg_outcome)outcome));
}

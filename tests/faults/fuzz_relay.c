/* fuzz_relay.c - libFuzzer target for fanorelay's pure parts: the ACK
 * checker parses hostile datagrams in both directions (fragments going up,
 * ACK/status frames coming down) and the fault engine runs hostile
 * parameters and schedules. Checks the invariants of relay.h after every
 * input: every covered ACK sequence is counted exactly once as proven,
 * unproven or unchecked, and the fault engine's datagram accounting holds.
 *
 * Input: byte 0..7 fault parameters, then records
 *   [op][sess][len][len bytes]   op & 3: 0 up, 1 down, 2 fault input, 3 tick
 * Built by fuzz/meson.build with -Dfuzz=true (one line there names this
 * file, tools/relay/relay_ack.c, tools/relay/relay_fault.c, core/wire.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/relay/relay.h"

static uint64_t g_emitted;

static int emit(void *ctx, uint32_t sess, const uint8_t *buf, uint32_t len)
{
	(void)ctx;
	(void)sess;
	(void)buf;
	g_emitted += len > 0;
	return (len & 7u) == 3 ? -11 : 0; /* some sends fail */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	struct rl_fault f = {
		.loss = data[0] / 255.0,
		.dup = data[1] / 255.0,
		.reorder = data[2] / 255.0,
		.reorder_gap = (uint32_t)(data[3] % 8),
		.reorder_ns = data[4] * 10ull,
		.delay_ns = (data[5] & 0xF) * 10ull,
		.jitter_ns = (data[5] >> 4) * 10ull,
	};
	uint32_t cap = (uint32_t)(data[6] % 32);
	struct rl_dir d;
	bool have_dir = rl_dir_init(&d, &f, data[7], cap, emit, NULL) == 0;
	if (!have_dir && cap > 0 && (f.reorder == 0 || f.reorder_gap > 0))
		abort(); /* valid parameters must be accepted */
	struct rl_ack *a = rl_ack_new(8 + data[6] % 16, 1 + data[7] % 64);
	if (!a)
		abort();
	uint64_t now = 0;
	size_t i = 8;
	while (i + 3 <= size) {
		uint8_t op = data[i], sess = data[i + 1], len = data[i + 2];
		i += 3;
		if (len > size - i)
			len = (uint8_t)(size - i);
		const uint8_t *p = data + i;
		i += len;
		now += (uint64_t)(op >> 2) * 7u;
		switch (op & 3u) {
		case 0: rl_ack_up(a, sess % 4, p, len, now * 1000000ull); break;
		case 1: rl_ack_down(a, sess % 4, p, len); break;
		case 2:
			if (have_dir && len > 0)
				(void)rl_dir_input(&d, sess, p, len, now);
			break;
		default:
			if (have_dir)
				(void)rl_dir_tick(&d, now);
			break;
		}
	}
	const struct rl_ack_stats *s = rl_ack_stats(a);
	if (s->ack_proven + s->ack_unproven + s->ack_unchecked != s->acked_seqs)
		abort();
	if (s->ack_unchecked && !s->seen_overflow)
		abort();
	rl_ack_free(a);
	if (have_dir) {
		(void)rl_dir_tick(&d, UINT64_MAX / 2);
		if (rl_dir_queued(&d) != 0)
			abort(); /* everything is due by then */
		rl_dir_fini(&d);
		const struct rl_dir_stats *t = &d.st;
		if (t->in + t->dup != t->lost + t->out + t->send_failed + t->queue_full + t->dropped_at_exit)
			abort();
		if (t->released_by_gap + t->released_by_time > t->reordered)
			abort();
	}
	return 0;
}

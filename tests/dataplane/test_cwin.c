/* test_cwin.c - how an lcore reads its consumers' ACK bases
 * (dataplane/dp_cwin.c): the reading per mode, the fleet's signature,
 * stale and far-ahead bases, a stream that restarts, an lcore that sent
 * nothing on a stream. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fg/config.h"
#include "dp_cwin.h"

static struct dp_cwin w;
static struct dp_cwin_note note;
#define S 0xAFA3

static enum dp_cwin_verdict ack(uint8_t mode, uint32_t base, uint64_t bits)
{
	return dp_cwin_ack(&w, mode, S, base, bits, &note);
}

static void test_exact_never_takes_a_base(void **st)
{
	(void)st;
	memset(&w, 0, sizeof(w));
	for (uint32_t s = 100; s < 110; s++)
		assert_false(dp_cwin_sent(&w, FG_ACKWIN_EXACT, S, s));
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(ack(FG_ACKWIN_EXACT, 100, (2ull << i) - 1), DP_CWIN_NONE);
	assert_false(dp_cwin_is_fleet(&w, FG_ACKWIN_EXACT, S));
}

static void test_fleet_reads_at_once(void **st)
{
	(void)st;
	memset(&w, 0, sizeof(w));
	(void)dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, 100);
	(void)dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, 101);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 100, 1), DP_CWIN_MOVED);
	assert_true(note.new_base);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 100, 3), DP_CWIN_SAME);
	assert_false(note.new_base);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 101, 1), DP_CWIN_MOVED);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 100, 3), DP_CWIN_STALE);  /* reordered */
	assert_int_equal(ack(FG_ACKWIN_FLEET, 102, 1), DP_CWIN_AHEAD);  /* never sent */
	assert_int_equal(ack(FG_ACKWIN_FLEET, 101, 1), DP_CWIN_SAME);   /* the window stayed */
}

static void test_auto_needs_the_signature_twice(void **st)
{
	(void)st;
	memset(&w, 0, sizeof(w));
	for (uint32_t s = 0; s < 10; s++)
		(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, s);
	/* an exact consumer: each frame its own base */
	for (uint32_t s = 0; s < 9; s++)
		assert_int_equal(ack(FG_ACKWIN_AUTO, s, 1), DP_CWIN_NONE);
	/* a packing consumer that saw a duplicate: the same base, fewer or
	 * other bits, never the earlier ones and more */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 9, 0x5), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 9, 0x3), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 9, 0x3), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 8, 0x1), DP_CWIN_NONE); /* 8 alone, then 8 again with 9 */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 8, 0x3), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 7, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 7, 0x7), DP_CWIN_NONE);
	assert_false(dp_cwin_is_fleet(&w, FG_ACKWIN_AUTO, S));
	/* the fleet: a held set growing under its lowest sequence */
	for (uint32_t s = 10; s < 20; s++)
		(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, s);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 12, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 12, 0x5), DP_CWIN_NONE); /* one earlier bit: not yet */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 12, 0xD), DP_CWIN_NONE); /* one signature */
	assert_false(note.seen_fleet);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 12, 0xF), DP_CWIN_MOVED); /* two: read the fleet's way */
	assert_true(note.seen_fleet);
	assert_true(dp_cwin_is_fleet(&w, FG_ACKWIN_AUTO, S));
	assert_int_equal(ack(FG_ACKWIN_AUTO, 12, 0x1F), DP_CWIN_SAME);
	assert_false(note.seen_fleet);
	/* forged entries between the consumer's own (a lower base, a far-ahead
	 * one) do not hide its signature */
	memset(&w, 0, sizeof(w));
	for (uint32_t s = 100; s < 110; s++)
		(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, s);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 100, 0x3), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 100 - DP_CWIN_RESTART - 1, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 100, 0x7), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 90000, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 100, 0xF), DP_CWIN_MOVED);
	assert_true(note.seen_fleet);
	/* seeds arriving out of order lower the fleet's base a little: still
	 * its signature once the base holds */
	memset(&w, 0, sizeof(w));
	for (uint32_t s = 100; s < 200; s++)
		(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, s);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 150, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 120, 0x3), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 120, 0x7), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 120, 0xF), DP_CWIN_MOVED);
	/* a far-ahead base does not count as a signature either */
	memset(&w, 0, sizeof(w));
	(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, 10);
	for (uint64_t b = 1; b < 0xFF; b = b << 1 | 1)
		assert_int_equal(ack(FG_ACKWIN_AUTO, 5000, b), DP_CWIN_NONE);
	assert_false(dp_cwin_is_fleet(&w, FG_ACKWIN_AUTO, S));
}

static void test_restart_and_nothing_sent(void **st)
{
	(void)st;
	memset(&w, 0, sizeof(w));
	/* nothing sent here: no base taken, but a changed base is news for
	 * the lcores that did send */
	assert_int_equal(ack(FG_ACKWIN_FLEET, 5000, 1), DP_CWIN_NONE);
	assert_true(note.new_base);
	for (uint32_t s = 5000; s < 5100; s++)
		assert_false(dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, s));
	assert_int_equal(ack(FG_ACKWIN_FLEET, 5090, 1), DP_CWIN_MOVED);
	/* a late one a little below the base is no restart */
	assert_false(dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, 5090 - DP_CWIN_RESTART));
	/* the stream starts again from 0: the window is forgotten, and the old
	 * run's bases are beyond anything sent since */
	assert_true(dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, 0));
	assert_int_equal(ack(FG_ACKWIN_FLEET, 5090, 1), DP_CWIN_AHEAD);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 0, 1), DP_CWIN_MOVED);
	/* far below the highest sequence sent, with no window: a restart too */
	memset(&w, 0, sizeof(w));
	(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, 3000000);
	assert_true(dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, 7));
	/* sequence arithmetic across the wrap: 0xFFFFFFF0 .. 0x10 is one run */
	memset(&w, 0, sizeof(w));
	assert_false(dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, 0xFFFFFFF0u));
	assert_false(dp_cwin_sent(&w, FG_ACKWIN_FLEET, S, 0x10u));
	assert_int_equal(ack(FG_ACKWIN_FLEET, 0xFFFFFFF8u, 1), DP_CWIN_MOVED);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 0x11u, 1), DP_CWIN_AHEAD);
	assert_int_equal(ack(FG_ACKWIN_FLEET, 0xFFFFFFF0u, 1), DP_CWIN_STALE);
}

/* The signature is looked for against the stream's 4 latest distinct
 * bases: a base named again counts as latest, and the least recent one
 * falls out when a fifth comes. */
static void test_auto_recent_bases_least_recent_out(void **st)
{
	(void)st;
	memset(&w, 0, sizeof(w));
	for (uint32_t s = 0; s < 100; s++)
		(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, s);
	/* 10 named again between 20..40 and 50: still held when 50 comes */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0x3), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 20, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 30, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 40, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0x7), DP_CWIN_NONE); /* one signature */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 50, 0x1), DP_CWIN_NONE); /* 20 out */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0xF), DP_CWIN_MOVED); /* two */
	assert_true(note.seen_fleet);
	/* 10 not named again: out when 50 comes, so 10 again is news */
	memset(&w, 0, sizeof(w));
	for (uint32_t s = 0; s < 100; s++)
		(void)dp_cwin_sent(&w, FG_ACKWIN_AUTO, S, s);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0x3), DP_CWIN_NONE);
	for (uint32_t b = 20; b <= 50; b += 10)
		assert_int_equal(ack(FG_ACKWIN_AUTO, b, 0x1), DP_CWIN_NONE);
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0x7), DP_CWIN_NONE); /* no signature: 10 was out */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0xF), DP_CWIN_NONE); /* one */
	assert_false(dp_cwin_is_fleet(&w, FG_ACKWIN_AUTO, S));
	/* 20 went out for 10: 30, 40, 50 and 10 held, every one found again */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 20, 0x3), DP_CWIN_NONE);  /* 30 out */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 30, 0x3), DP_CWIN_NONE);  /* 40 out, no signature */
	assert_int_equal(ack(FG_ACKWIN_AUTO, 10, 0x1F), DP_CWIN_MOVED); /* two */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_needs_the_signature_twice),
		cmocka_unit_test(test_auto_recent_bases_least_recent_out),
		cmocka_unit_test(test_exact_never_takes_a_base),
		cmocka_unit_test(test_fleet_reads_at_once),
		cmocka_unit_test(test_restart_and_nothing_sent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

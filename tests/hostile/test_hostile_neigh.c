/* test_hostile_neigh.c - neighbour poisoning: the rule
 * dataplane/dp_neigh_rule.c applies to every ARP/NDP offer. A known
 * neighbour (the consumer) is never changed by a gratuitous ARP, an ARP
 * request or an unsolicited reply from another MAC; an address outside
 * [udp] allow and the consumers is never learnt; a static neighbour never
 * changes; a slot held by another address keeps it. Before this rule
 * dp_neigh_learn() overwrote any entry with whatever ARP (or any allowed UDP
 * datagram's source MAC) claimed, learning ARP before the allowlist. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dp_neigh_rule.h"
#include "fg/config.h"

static const uint8_t consumer[16] = {10, 0, 0, 2};
static const uint8_t good_mac[6] = {2, 0, 0, 0, 0, 2};
static const uint8_t evil_mac[6] = {2, 0, 0, 0, 0, 0xee};

static struct dp_neigh known(void)
{
	struct dp_neigh n = {.family = 4};
	memcpy(n.addr, consumer, 16);
	memcpy(n.mac, good_mac, 6);
	return n;
}

static void empty_slot_learns_only_admitted(void **state)
{
	(void)state;
	struct dp_neigh n = {0};
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, good_mac, true, false), DP_NEIGH_LEARN);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, good_mac, false, false), DP_NEIGH_NOT_ALLOWED);
	assert_int_equal(dp_neigh_judge(&n, 6, consumer, good_mac, false, false), DP_NEIGH_NOT_ALLOWED);
}

static void known_entry_never_changed_unsolicited(void **state)
{
	(void)state;
	struct dp_neigh n = known();
	/* gratuitous ARP, ARP request or unsolicited reply from another MAC */
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, true, false), DP_NEIGH_UNSOLICITED);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, false, false), DP_NEIGH_NOT_ALLOWED);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, good_mac, true, false), DP_NEIGH_SAME);
	/* an answer to a request of ours may move it */
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, true, true), DP_NEIGH_LEARN);
}

static void static_entry_never_changed(void **state)
{
	(void)state;
	struct dp_neigh n = known();
	n.is_static = true;
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, true, true), DP_NEIGH_UNSOLICITED);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, true, false), DP_NEIGH_UNSOLICITED);
}

static void busy_slot_keeps_its_address(void **state)
{
	(void)state;
	struct dp_neigh n = known();
	const uint8_t other[16] = {10, 0, 0, 3};
	assert_int_equal(dp_neigh_judge(&n, 4, other, evil_mac, true, false), DP_NEIGH_SLOT_BUSY);
	/* the same 4 bytes as IPv6 are another address */
	assert_int_equal(dp_neigh_judge(&n, 6, consumer, evil_mac, true, false), DP_NEIGH_SLOT_BUSY);
}

/* [dataplane] neighbours = IP=MAC, ... parses; anything else is refused. */
static void static_neighbours_config(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;
	fg_config_default(&c);
	assert_int_equal(fg_config_parse(&c, "[dataplane]\nneighbours = 10.0.0.2=02:00:00:00:00:02, fd00::2=0a:bb:cc:dd:ee:ff\n",
					 "ok", &err), 0);
	assert_int_equal(c.n_static_neigh, 2);
	assert_int_equal(c.static_neigh[0].family, 4);
	assert_memory_equal(c.static_neigh[0].addr, consumer, 4);
	assert_memory_equal(c.static_neigh[0].mac, good_mac, 6);
	assert_int_equal(c.static_neigh[1].family, 6);
	assert_int_equal(c.static_neigh[1].mac[5], 0xff);
	const char *bad[] = {"10.0.0.2", "10.0.0.2=02:00:00:00:00", "10.0.0.2=02:00:00:00:00:02x", "nohost=02:00:00:00:00:02"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];
		snprintf(text, sizeof(text), "[dataplane]\nneighbours = %s\n", bad[i]);
		fg_config_default(&c);
		assert_int_equal(fg_config_parse(&c, text, "bad", &err), -EINVAL);
	}
}

/* An entry the dataplane asked for at first use (incomplete, no MAC yet)
 * learns from the first admitted claim, like an empty slot; once known,
 * only an answer to our request changes it. */
static void incomplete_entry_learns_once(void **state)
{
	(void)state;
	struct dp_neigh n = {.family = 4, .incomplete = true};
	memcpy(n.addr, consumer, 16);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, good_mac, true, false), DP_NEIGH_LEARN);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, good_mac, false, false), DP_NEIGH_NOT_ALLOWED);
	static const uint8_t other[16] = {10, 0, 0, 3};
	assert_int_equal(dp_neigh_judge(&n, 4, other, good_mac, true, false), DP_NEIGH_SLOT_BUSY);
	n.incomplete = false;
	memcpy(n.mac, good_mac, 6);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, true, false), DP_NEIGH_UNSOLICITED);
	assert_int_equal(dp_neigh_judge(&n, 4, consumer, evil_mac, true, true), DP_NEIGH_LEARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(incomplete_entry_learns_once),
		cmocka_unit_test(empty_slot_learns_only_admitted),
		cmocka_unit_test(known_entry_never_changed_unsolicited),
		cmocka_unit_test(static_entry_never_changed),
		cmocka_unit_test(busy_slot_keeps_its_address),
		cmocka_unit_test(static_neighbours_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_profile.c - unit tests for dataplane/dp_profile.c: every shipped
 * drivers-config profile parses, ${VAR} expansion, profile lookup by name,
 * and a refusal naming the line for every kind of bad value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dp_profile.h"

static const char *root(void)
{
#ifdef FG_SOURCE_ROOT
	return FG_SOURCE_ROOT;
#else
	return ".";
#endif
}

/* [eal] lcores "": poll lcores from the last CPU down, the control thread
 * on the CPUs left, over all CPUs only when none is left. */
static void test_lcores_default(void **st)
{
	(void)st;
	char b[128];
	assert_true(dp_lcores_default(b, sizeof(b), 2, 1) > 0);
	assert_string_equal(b, "0@0,1@1");
	assert_true(dp_lcores_default(b, sizeof(b), 8, 2) > 0);
	assert_string_equal(b, "0@(0-5),1@7,2@6");
	assert_true(dp_lcores_default(b, sizeof(b), 2, 2) > 0); /* no CPU left: float */
	assert_string_equal(b, "0@(0-1),1@1,2@0");
	assert_true(dp_lcores_default(b, sizeof(b), 1, 1) > 0); /* one CPU: shared */
	assert_string_equal(b, "0@0,1@0");
	assert_int_equal(dp_lcores_default(b, 8, 8, 2), -1);    /* too small: refused */
}

static bool virt_veth(const char *iface) { return !strncmp(iface, "veth", 4); }

static void test_vdev_tune(void **st)
{
	(void)st;
	char out[128];
	/* af_xdp on a virtual interface, no busy_budget: it is added */
	assert_int_equal(dp_vdev_tune("net_af_xdp0,iface=veth1,queue_count=1", virt_veth, out, sizeof(out)), 1);
	assert_string_equal(out, "net_af_xdp0,iface=veth1,queue_count=1,busy_budget=0");
	/* a physical interface keeps the PMD default */
	assert_int_equal(dp_vdev_tune("net_af_xdp0,iface=eth0,queue_count=1", virt_veth, out, sizeof(out)), 0);
	assert_string_equal(out, "net_af_xdp0,iface=eth0,queue_count=1");
	/* the operator's own busy_budget wins, wherever it stands */
	assert_int_equal(dp_vdev_tune("net_af_xdp0,busy_budget=64,iface=veth1", virt_veth, out, sizeof(out)), 0);
	assert_string_equal(out, "net_af_xdp0,busy_budget=64,iface=veth1");
	/* a key that only ends in busy_budget is not it; other drivers untouched */
	assert_int_equal(dp_vdev_tune("net_af_xdp0,iface=veth1,xbusy_budget=3", virt_veth, out, sizeof(out)), 1);
	assert_int_equal(dp_vdev_tune("net_af_packet0,iface=veth1,qpairs=1", virt_veth, out, sizeof(out)), 0);
	assert_string_equal(out, "net_af_packet0,iface=veth1,qpairs=1");
	assert_int_equal(dp_vdev_tune("net_af_xdp0,queue_count=1", virt_veth, out, sizeof(out)), 0);
	/* too small for the result */
	assert_int_equal(dp_vdev_tune("net_af_xdp0,iface=veth1", virt_veth, out, 30), -1);
}

static void test_shipped_profiles(void **st)
{
	(void)st;
	const char *names[] = {"af_packet", "af_xdp", "pcap", "ring", "memif", "mlx5.example", "i40e.example"};
	char dir[512], path[600], err[512];
	snprintf(dir, sizeof(dir), "%s/drivers-config", root());
	setenv("FG_DRIVERS_CONFIG", dir, 1);
	setenv("FG_LCORES", "2", 1);
	setenv("FG_PCAP_IN", "/tmp/in.pcap", 1);
	setenv("FG_PCAP_OUT", "/tmp/out.pcap", 1);
	unsetenv("FG_IFACE");
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct dp_profile p;
		assert_int_equal(dp_profile_find(names[i], path, sizeof(path)), 0);
		int rc = dp_profile_load(&p, path, err, sizeof(err));
		if (rc)
			fail_msg("%s: %s", names[i], err);
		assert_true(p.n_vdev + p.n_pci >= 1);
		assert_true(p.has_ip4);
	}
	struct dp_profile p;
	assert_int_equal(dp_profile_find("af_packet", path, sizeof(path)), 0);
	assert_int_equal(dp_profile_load(&p, path, err, sizeof(err)), 0);
	assert_non_null(strstr(p.vdev[0], "iface=fgveth0")); /* the ${FG_IFACE:-fgveth0} default */
	assert_non_null(strstr(p.vdev[0], "qpairs=2"));     /* ${FG_LCORES} */
	assert_int_equal(dp_profile_find("no_such_profile", path, sizeof(path)), -ENOENT);
	assert_int_equal(dp_profile_find("/nonexistent/x.ini", path, sizeof(path)), -ENOENT);
}

static void test_expand(void **st)
{
	(void)st;
	char out[64];
	setenv("FGT_A", "alpha", 1);
	unsetenv("FGT_B");
	assert_int_equal(dp_profile_expand("x=${FGT_A},y=${FGT_B:-beta}$z", out, sizeof(out)), 0);
	assert_string_equal(out, "x=alpha,y=beta$z");
	assert_int_equal(dp_profile_expand("${FGT_B}", out, sizeof(out)), -EINVAL);
	assert_int_equal(dp_profile_expand("${FGT_A", out, sizeof(out)), -EINVAL);
	assert_int_equal(dp_profile_expand("${FGT_A}${FGT_A}", out, 10), -ENAMETOOLONG);
	assert_int_equal(dp_profile_expand("${FGT_B:-}", out, sizeof(out)), 0);
	assert_string_equal(out, "");
}

static int load_text(const char *text, struct dp_profile *p, char *err, size_t errlen)
{
	char path[] = "/tmp/fgdp-prof-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	int rc = dp_profile_load(p, path, err, errlen);
	unlink(path);
	return rc;
}

static void test_refusals(void **st)
{
	(void)st;
	struct {
		const char *text;
		const char *needle; /* must appear in the message */
	} bad[] = {
		{"[port]\nvdev = net_null0\nbogus = 1\n", ":3: [port] bogus"},
		{"[port]\nvdev = net_null0\nrss = maybe\n", ":3:"},
		{"[port]\nvdev = net_null0\nrx_desc = 1000\n", "power of two"},
		{"[port]\nvdev = net_null0\nmtu = 100\n", "576"},
		{"[port]\nvdev = net_null0\ntx_hold_ms = 1001\n", "0..1000"},
		{"[port]\nvdev = net_null0\ntx_hold_ms = 5ms\n", ":3: [port] tx_hold_ms"},
		{"[port]\nvdev = net_null0\n[net]\nip4 = 10.0.0.300\n", ":4:"},
		{"[port]\nvdev = net_null0\n[net]\nip6 = fd00:::1:::\n", "IPv6"},
		{"[port]\nvdev = net_null0\n[net]\ngateway_mac = 02:00:00:00:00\n", "aa:bb"},
		{"[eal]\nhugepages = sometimes\n[port]\nvdev = net_null0\n", "auto, on or off"},
		{"[port]\nvdev = net_null0,iface=${FGT_UNSET_VAR}\n", "unset"},
		{"[poll]\nlane_ring = 1000\n[port]\nvdev = net_null0\n", "power of two"},
		{"[poll]\nidle_polls = 0\n[port]\nvdev = net_null0\n", "1..1000000"},
		{"[poll]\nidle_backoff = sometimes\n[port]\nvdev = net_null0\n", "on or off"},
		{"[poll]\nidle_sleep_us = 100001\n[port]\nvdev = net_null0\n", "0..100000"},
		{"[poll]\nidle_wake = 1ms\n[port]\nvdev = net_null0\n", "on or off"},
		{"[poll]\nidle_wake_after_us = -5\n[port]\nvdev = net_null0\n", "0..1000000"},
		{"[eal]\nhugepages = off\nmultiprocess = on\n[port]\nvdev = net_null0\n", "multiprocess"},
		{"[eal]\nargs = -n 4\n", "needs a vdev or pci"},
		{"[port\nvdev = x\n", "syntax"},
	};
	unsetenv("FGT_UNSET_VAR");
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dp_profile p;
		char err[512] = "";
		int rc = load_text(bad[i].text, &p, err, sizeof(err));
		if (rc != -EINVAL || !strstr(err, bad[i].needle))
			fail_msg("case %u: rc %d, message '%s' lacks '%s'", i, rc, err, bad[i].needle);
	}
	struct dp_profile p;
	char err[512];
	assert_int_equal(load_text("[port]\nvdev = net_null0\nvdev = net_null1\npci = 0000:01:00.0\n[eal]\nhugepages = on\n"
				   "[net]\nip4 = 10.0.0.1\nip6 = fd00::1\ngateway_mac = 02:00:00:00:00:01\n",
				   &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.n_vdev, 2);
	assert_int_equal(p.n_pci, 1);
	assert_int_equal(p.hugepages, DP_HUGE_ON);
	assert_true(p.has_ip4 && p.has_ip6 && p.has_gateway);
	assert_int_equal(p.gateway_mac[5], 1);
	assert_int_equal(p.rx_desc, 1024); /* default kept */
	assert_int_equal(p.idle_polls, 64);
	assert_false(p.idle_backoff);
	assert_false(p.idle_wake);
	assert_int_equal(p.idle_wake_after_us, 1000);
	assert_int_equal(p.tx_hold_ms, 50);
	assert_int_equal(load_text("[port]\nvdev = net_null0\ntx_hold_ms = 0\n", &p, err, sizeof(err)), 0);
	assert_int_equal(p.tx_hold_ms, 0);
	assert_int_equal(load_text("[port]\nvdev = net_null0\ntx_hold_ms = 1000\n", &p, err, sizeof(err)), 0);
	assert_int_equal(p.tx_hold_ms, 1000);
	assert_int_equal(load_text("[port]\nvdev = net_null0\n[poll]\nidle_sleep_us = 200\nidle_backoff = on\nidle_polls = 1000\n",
				   &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.idle_sleep_us, 200);
	assert_true(p.idle_backoff);
	assert_int_equal(p.idle_polls, 1000);
	assert_int_equal(load_text("[port]\nvdev = net_null0\n[poll]\nidle_wake = on\nidle_wake_after_us = 0\n", &p, err,
				   sizeof(err)),
			 0);
	assert_true(p.idle_wake);
	assert_int_equal(p.idle_wake_after_us, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_profiles),
		cmocka_unit_test(test_lcores_default),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_vdev_tune),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

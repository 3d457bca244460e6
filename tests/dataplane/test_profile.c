/* test_profile.c - unit tests for dataplane/dp_profile.c: every shipped
 * drivers-config profile parses, ${port} and ${VAR} expansion, profile
 * lookup by name (the source tree only for a program in the build tree),
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
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct dp_profile p;
		/* the pci examples name no device of their own: they need a port */
		const char *port = strstr(names[i], "example") ? "0000:05:00.0" : NULL;
		assert_int_equal(dp_profile_find(names[i], path, sizeof(path)), 0);
		int rc = dp_profile_load(&p, path, port, err, sizeof(err));
		if (rc)
			fail_msg("%s: %s", names[i], err);
		assert_true(p.n_vdev + p.n_pci >= 1);
		assert_true(p.has_ip4);
	}
	struct dp_profile p;
	assert_int_equal(dp_profile_find("af_packet", path, sizeof(path)), 0);
	assert_int_equal(dp_profile_load(&p, path, NULL, err, sizeof(err)), 0);
	assert_non_null(strstr(p.vdev[0], "iface=fgveth0,")); /* the ${port:-fgveth0} default */
	assert_non_null(strstr(p.vdev[0], "qpairs=2"));      /* ${FG_LCORES} */
	assert_true(p.port_used);
	assert_string_equal(p.port, "fgveth0");
	assert_int_equal(dp_profile_find("no_such_profile", path, sizeof(path)), -ENOENT);
	assert_int_equal(dp_profile_find("/nonexistent/x.ini", path, sizeof(path)), -ENOENT);
}

/* [dataplane] port fills ${port}: the interface of af_xdp and af_packet,
 * the PCI address of the pci examples (which have no default and refuse to
 * load without one, naming the key); a profile without ${port} says so. */
static void test_port(void **st)
{
	(void)st;
	char dir[512], path[600], err[512];
	struct dp_profile p;
	snprintf(dir, sizeof(dir), "%s/drivers-config", root());
	setenv("FG_DRIVERS_CONFIG", dir, 1);
	setenv("FG_LCORES", "1", 1);

	assert_int_equal(dp_profile_find("af_xdp", path, sizeof(path)), 0);
	assert_int_equal(dp_profile_load(&p, path, "ens5f1", err, sizeof(err)), 0);
	assert_non_null(strstr(p.vdev[0], "iface=ens5f1,"));
	assert_true(p.port_used);
	assert_string_equal(p.port, "ens5f1");
	assert_int_equal(dp_profile_load(&p, path, "", err, sizeof(err)), 0); /* "" = none: the default */
	assert_string_equal(p.port, "fgveth0");

	assert_int_equal(dp_profile_find("mlx5.example", path, sizeof(path)), 0);
	assert_int_equal(dp_profile_load(&p, path, "0000:3b:00.1", err, sizeof(err)), 0);
	assert_int_equal(p.n_pci, 1);
	assert_string_equal(p.pci[0], "0000:3b:00.1,rxq_cqe_comp_en=1,mprq_en=1");
	assert_string_equal(p.port, "0000:3b:00.1");
	assert_int_equal(dp_profile_load(&p, path, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "[dataplane] port"));
	assert_non_null(strstr(err, "[port] pci"));

	assert_int_equal(dp_profile_find("ring", path, sizeof(path)), 0);
	assert_int_equal(dp_profile_load(&p, path, "eth1", err, sizeof(err)), 0);
	assert_false(p.port_used); /* dp_init refuses a port such a profile ignores */

	assert_true(dp_port_is_pci("0000:05:00.0"));
	assert_true(dp_port_is_pci("05:00.7"));
	assert_true(dp_port_is_pci("abcd:ef:1f.3"));
	assert_false(dp_port_is_pci("05:00.8"));
	assert_false(dp_port_is_pci("eth0"));
	assert_false(dp_port_is_pci("0000:05:00"));
	assert_false(dp_port_is_pci("0000-05:00.0"));
	assert_false(dp_port_is_pci(""));
}

/* The packaged profiles come from the source tree only for a program run
 * from the build tree (this test is one): an installed one reads
 * DATADIR/fanogate/drivers-config (dp_profile.h). */
static void test_dirs(void **st)
{
	(void)st;
	const char *dirs[DP_PROFILE_DIRS];
	unsetenv("FG_DRIVERS_CONFIG");
	unsigned n = dp_profile_dirs(dirs);
	assert_int_equal(n, 2);
	assert_non_null(strstr(dirs[0], "fanogate/drivers-config"));
	char src[512];
	snprintf(src, sizeof(src), "%s/drivers-config", root());
	assert_string_equal(dirs[1], src);
	setenv("FG_DRIVERS_CONFIG", "/x", 1);
	assert_int_equal(dp_profile_dirs(dirs), 3);
	assert_string_equal(dirs[0], "/x");
	unsetenv("FG_DRIVERS_CONFIG");
}

static void test_expand(void **st)
{
	(void)st;
	char out[64];
	bool used = false;
	setenv("FGT_A", "alpha", 1);
	unsetenv("FGT_B");
	assert_int_equal(dp_profile_expand("x=${FGT_A},y=${FGT_B:-beta}$z", NULL, out, sizeof(out), &used), 0);
	assert_string_equal(out, "x=alpha,y=beta$z");
	assert_false(used);
	assert_int_equal(dp_profile_expand("${FGT_B}", NULL, out, sizeof(out), NULL), -EINVAL);
	assert_int_equal(dp_profile_expand("${FGT_A", NULL, out, sizeof(out), NULL), -EINVAL);
	assert_int_equal(dp_profile_expand("${FGT_A}${FGT_A}", NULL, out, 10, NULL), -ENAMETOOLONG);
	assert_int_equal(dp_profile_expand("${FGT_B:-}", NULL, out, sizeof(out), NULL), 0);
	assert_string_equal(out, "");
	/* ${port} comes from the caller, never the environment */
	setenv("port", "from-env", 1);
	assert_int_equal(dp_profile_expand("iface=${port}", "eth2", out, sizeof(out), &used), 0);
	assert_string_equal(out, "iface=eth2");
	assert_true(used);
	assert_int_equal(dp_profile_expand("iface=${port}", NULL, out, sizeof(out), NULL), -EINVAL);
	assert_int_equal(dp_profile_expand("iface=${port:-veth9}", "", out, sizeof(out), NULL), 0);
	assert_string_equal(out, "iface=veth9");
	unsetenv("port");
}

static int load_text(const char *text, struct dp_profile *p, char *err, size_t errlen)
{
	char path[] = "/tmp/fgdp-prof-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	int rc = dp_profile_load(p, path, NULL, err, errlen);
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
		{"[port]\nvdev = net_null0\ndelivery_by_ref = sometimes\n", ":3: [port] delivery_by_ref"},
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
	assert_int_equal(p.delivery_by_ref, DP_BY_REF_AUTO); /* the default */
	assert_int_equal(load_text("[port]\nvdev = net_null0\ndelivery_by_ref = on\n", &p, err, sizeof(err)), 0);
	assert_int_equal(p.delivery_by_ref, DP_BY_REF_ON);
	assert_int_equal(load_text("[port]\nvdev = net_null0\ndelivery_by_ref = off\n", &p, err, sizeof(err)), 0);
	assert_int_equal(p.delivery_by_ref, DP_BY_REF_OFF);
	assert_int_equal(load_text("[port]\nvdev = net_null0\ndelivery_by_ref = auto\n", &p, err, sizeof(err)), 0);
	assert_int_equal(p.delivery_by_ref, DP_BY_REF_AUTO);
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
		cmocka_unit_test(test_port),
		cmocka_unit_test(test_dirs),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_vdev_tune),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

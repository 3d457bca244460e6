/* test_cluster_config.c - core/config.c's [cluster] section: the defaults
 * (off), a full valid section (endpoints, TLS files, layer ranges, the
 * fleet key, etcd user), http:// accepted on loopback and refused elsewhere
 * unless insecure = true, and one refusal per rule with its reason and line
 * number. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fg/config.h"

#include "../lib/fg_test_config.h" /* fg_test_config_refused */

static bool serves(const struct fg_config *c, unsigned l)
{
	return (c->cluster.serves[l / 8] >> (l % 8)) & 1u;
}

static void test_defaults(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;
	assert_int_equal(fg_config_parse(&c, "", "t", &err), 0);
	assert_string_equal(c.cluster.node, "");
	assert_int_equal(c.cluster.n_endpoints, 0);
	assert_string_equal(c.cluster.prefix, "/fanogate/");
	assert_string_equal(c.cluster.layers_text, "all");
	assert_int_equal(c.cluster.lease_ttl_s, 3);
	assert_int_equal(c.cluster.timeout_ms, 1000);
	for (unsigned l = 0; l < c.layers; l++)
		assert_true(serves(&c, l));
	assert_false(serves(&c, c.layers));
}

static void test_valid(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;
	const char *text = "[cluster]\n"
			   "node = gate-a.1_x\n"
			   "endpoints = https://10.0.0.11:2379, https://[fd00::12]:2379/ ,https://127.0.0.1:1\n"
			   "ca = /etc/ca.pem\ncert = /etc/c.pem\nkey = /etc/c.key\n"
			   "layers = 0-3, 7,27\nprefix = /fleet/one/\nlease_ttl_s = 1\ntimeout_ms = 50\n"
			   "key_file = /etc/fanogate/fleet.key\nuser = fg-node\npassword_file = /etc/fanogate/etcd.pw\n"
			   "nodes_max = 2\n";
	int r = fg_config_parse(&c, text, "t", &err);
	if (r)
		fprintf(stderr, "%d: %s\n", err.line, err.reason);
	assert_int_equal(r, 0);
	assert_string_equal(c.cluster.node, "gate-a.1_x");
	assert_int_equal(c.cluster.n_endpoints, 3);
	assert_true(c.cluster.tls);
	assert_string_equal(c.cluster.endpoint[0], "https://10.0.0.11:2379");
	assert_string_equal(c.cluster.endpoint[1], "https://[fd00::12]:2379");
	assert_string_equal(c.cluster.endpoint[2], "https://127.0.0.1:1");
	for (unsigned l = 0; l < 28; l++)
		assert_int_equal(serves(&c, l), l <= 3 || l == 7 || l == 27);
	assert_string_equal(c.cluster.prefix, "/fleet/one/");
	assert_string_equal(c.cluster.key_file, "/etc/fanogate/fleet.key");
	assert_string_equal(c.cluster.user, "fg-node");
	assert_string_equal(c.cluster.password_file, "/etc/fanogate/etcd.pw");
	assert_int_equal(c.cluster.nodes_max, 2);
	assert_false(c.cluster.insecure);
}

/* http:// is for loopback; elsewhere only with insecure = true. */
static void test_insecure(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;
	assert_int_equal(fg_config_parse(&c, "[cluster]\nnode = a\nkey_file = /k\n"
					 "endpoints = http://127.0.0.2:1,http://[::1]:2,http://localhost:3\n",
					 "t", &err),
			 0);
	assert_int_equal(c.cluster.n_endpoints, 3);
	assert_int_equal(fg_config_parse(&c, "[cluster]\nnode = a\nkey_file = /k\nendpoints = http://10.0.0.1:1\n"
					 "insecure = true\n",
					 "t", &err),
			 0);
	assert_true(c.cluster.insecure);
	assert_int_equal(c.cluster.nodes_max, 64);
}

struct bad {
	const char *text;
	int line;
	const char *reason; /* substring */
};

static const struct bad bads[] = {
	{"[cluster]\nnode = a\n", 2, "needs endpoints"},
	{"[cluster]\nendpoints = http://127.0.0.1:2379\n", 2, "endpoints need node"},
	{"[cluster]\nnode = a b\nendpoints = http://127.0.0.1:1\n", 2, "only letters"},
	{"[cluster]\nnode = a/b\nendpoints = http://127.0.0.1:1\n", 2, "only letters"},
	{"[cluster]\nnode = a\nendpoints = ftp://127.0.0.1:1\n", 3, "is not http://IP:port"},
	{"[cluster]\nnode = a\nendpoints = 127.0.0.1:1\n", 3, "is not http://IP:port"},
	{"[cluster]\nnode = a\nendpoints = http://etcd.example:2379\n", 3, "bad host"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1\n", 3, "missing :port"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:0\n", 3, "port 0"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:70000\n", 3, "bad port"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1,https://127.0.0.1:2\n", 3, "mixed"},
	{"[cluster]\ninsecure = yes\nnode = a\nendpoints = http://1.1.1.1:1,http://1.1.1.1:2,http://1.1.1.1:3,http://1.1.1.1:4,"
	 "http://1.1.1.1:5,http://1.1.1.1:6,http://1.1.1.1:7,http://1.1.1.1:8,http://1.1.1.1:9\n",
	 4, "more than 8"},
	{"[cluster]\nnode = a\nendpoints = http://10.0.0.1:2379\n", 3, "not on loopback"},
	{"[cluster]\nnode = a\nendpoints = http://[fd00::1]:2379\n", 3, "not on loopback"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\n", 2, "needs key_file"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nkey_file = /k\nuser = u\n", 5, "go together"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nkey_file = /k\npassword_file = /p\n", 5, "go together"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nkey_file = /k\nuser = a b\npassword_file = /p\n", 5,
	 "printable, no spaces"},
	{"[cluster]\nnodes_max = 1\n", 2, "out of range"},
	{"[cluster]\nnodes_max = 4097\n", 2, "out of range"},
	{"[cluster]\ninsecure = maybe\n", 2, "not a boolean"},
	{"[cluster]\nnode = a\nendpoints = https://127.0.0.1:1\ncert = /c.pem\n", 4, "go together"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nca = /ca.pem\n", 4, "need https://"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nlayers = 3-40\n", 4, "layer 40 >= [model] layers"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nlayers = 5-3\n", 4, "expected all"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nlayers = x\n", 4, "expected all"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nlayers = ,\n", 4, "empty"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nprefix = fanogate/\n", 4, "must start and end"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nprefix = /fano\n", 4, "must start and end"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nprefix = /a\"b/\n", 4, "no spaces or quotes"},
	{"[cluster]\nlease_ttl_s = 0\n", 2, "out of range"},
	{"[cluster]\nlease_ttl_s = 61\n", 2, "out of range"},
	{"[cluster]\ntimeout_ms = 49\n", 2, "out of range"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nlease_ttl_s = 1\n", 4, "not shorter than lease_ttl_s"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nnode = b\n", 4, "already set"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nstale_after_s = 1\n", 4, "shorter than keepalive_ms + timeout_ms"},
	{"[cluster]\nstale_after_s = 61\n", 2, "out of range"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nbeat_ms = 20\n", 4, "0 (off), or 50 ms or more"},
	{"[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nbeat_ms = 200\nbeat_down_ms = 300\n", 5,
	 "shorter than twice beat_ms"},
	{"[cluster]\nbeat_ms = 10001\n", 2, "out of range"},
	{"[cluster]\nnodes = a\n", 2, "unknown key"},
};

static void test_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct fg_config_error err;
		fg_test_config_refused(i, bads[i].text, bads[i].line, bads[i].reason, &err);
		assert_non_null(strstr(err.reason, "[cluster]"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_insecure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_config.c - core/config.c: defaults, a full valid file, one refusal
 * per rule (reason text and line number), prefixes, addresses, the derived
 * slot and limit views, loading from disk, and the settings written back
 * (fg_config_settings) parsing to the same configuration. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fg/config.h"

#include "../lib/fg_test_config.h" /* fg_test_config_refused */

static void check_defaults(const struct fg_config *c)
{
	assert_int_equal(c->hidden, 1536);
	assert_int_equal(c->layers, 28);
	assert_int_equal(c->max_seq_len, 1);
	assert_int_equal(c->bands.seed_base, 0xAF60);
	assert_int_equal(c->bands.canonical_base, 0xAF80);
	assert_int_equal(c->bands.resolved_base, 0xAFA0);
	assert_int_equal(c->bands.layer_bits, 5);
	for (unsigned l = 0; l < FG_MAX_LAYERS; l++) {
		assert_int_equal(c->rules[l].n, 3);
		assert_int_equal(c->rules[l].order[0], 1);
		assert_int_equal(c->rules[l].order[1], 3);
		assert_int_equal(c->rules[l].order[2], 5);
		assert_int_equal(c->rules[l].mask, (1u << 1) | (1u << 3) | (1u << 5));
	}
	assert_int_equal(c->slot_capacity, 4096);
	/* the fleet's resend schedule (last resend ~2.03 s, give-up ~2.4 s) + margin */
	assert_int_equal(c->slot_deadline_ns, 3000000000ull);
	assert_true(c->slot_deadline_ns >= 3000000000ull);
	assert_int_equal(c->orientation, FG_ORIENT_BIT);
	assert_int_equal(c->udp_layer_ports, 0);
	for (unsigned i = 0; i < FG_LINES; i++)
		assert_int_equal(c->line_initial[i], FG_LINE_SHADOW);
	assert_false(c->policy.auto_promote);
	assert_int_equal(c->policy.promote_count, 64);
	assert_int_equal(c->policy.promote_ns, 10000000000ull);
	assert_true(c->shadow_sample == 0.01);
	assert_int_equal(c->udp_port, 4242);
	assert_int_equal(c->udp_raw_port, 0);
	assert_int_equal(c->mtu, 1472);
	assert_int_equal(c->ack_interval_ms, 50);
	assert_true(c->send_status);
	assert_int_equal(c->n_allow, 0);
	assert_false(c->consumer_default.set);
	assert_false(c->consumer[0].set);
	assert_int_equal(c->reasm_contexts, 1024);
	assert_int_equal(c->reasm_timeout_ms, 250);
	assert_string_equal(c->dp_profile, "af_xdp");
	assert_int_equal(c->lcores, 1);
	assert_true(c->tls_listen.set);
	assert_int_equal(c->tls_listen.family, AF_INET);
	assert_int_equal(c->tls_listen.port, 8443);
	assert_string_equal(c->tls_cert, "");
	assert_string_equal(c->tls_key, "");
	assert_false(c->tls_require_client_cert);
	assert_int_equal(c->max_connections, 1024);
	assert_int_equal(c->ws_max_message, 1u << 20);
	assert_int_equal(c->handshake_timeout_ms, 5000);
	assert_int_equal(c->idle_timeout_ms, 60000);
	assert_int_equal(c->send_queue_max, 4u << 20);
	assert_string_equal(c->audit_path, "/var/lib/fanogate/audit.log");
	assert_int_equal(c->audit_rotate_bytes, 64ull << 20);
	assert_int_equal(c->group_commit_us, 1000);
	assert_string_equal(c->alert_command, "");
	assert_int_equal(c->alert_min_interval_ms, 10000);
	assert_string_equal(c->op_socket, "/run/fanogate/fanoctl.sock");
	assert_true(c->metrics_listen.set);
	assert_int_equal(c->metrics_listen.port, 9464);
	static const uint8_t lo[4] = {127, 0, 0, 1};
	assert_memory_equal(c->metrics_listen.addr, lo, 4);
}

static void test_defaults(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;

	fg_config_default(&c);
	check_defaults(&c);
	/* the bands agree with the wire codec's defaults */
	struct fg_bands b;
	fg_bands_default(&b);
	assert_int_equal(b.seed_base, c.bands.seed_base);
	assert_int_equal(b.canonical_base, c.bands.canonical_base);
	assert_int_equal(b.resolved_base, c.bands.resolved_base);
	assert_int_equal(b.layer_bits, c.bands.layer_bits);

	/* an empty file, and one with only comments, give the defaults */
	memset(&c, 0x5A, sizeof(c));
	assert_int_equal(fg_config_parse(&c, "", "empty", &err), 0);
	check_defaults(&c);
	assert_int_equal(c.bands.n_layers, 28);
	memset(&c, 0x5A, sizeof(c));
	assert_int_equal(fg_config_parse(&c, "; nothing\n# here\n\n[model]\n", "comments", &err), 0);
	check_defaults(&c);
}

static const char full_file[] =
	"; a complete file\n"
	"[model]\n"
	"hidden = 4\n"
	"layers = 32\n"
	"max_seq_len = 8\n"
	"[bands]\n"
	"seed_base = 0x1000\n"
	"canonical_base = 0x2000\n"
	"resolved_base = 0x3000\n"
	"layer_bits = 6\n"
	"[rules]\n"
	"default = 0,1,2\n"
	"layer.3 = 0 , 1\n"
	"layer.31 = 6,5,4,3,2,1,0\n"
	"[slots]\n"
	"capacity = 64\n"
	"deadline_ms = 250\n"
	"[lines]\n"
	"line.0 = disabled\n"
	"line.4,5,1 = active\n"
	"line.(3,6,5) = disabled\n"
	"auto_promote = yes\n"
	"promote_count = 5\n"
	"promote_ms = 1500\n"
	"shadow_sample = 0.5\n"
	"[udp]\n"
	"port = 5000\n"
	"raw_port = 5001\n"
	"mtu = 9000\n"
	"ack_interval_ms = 20\n"
	"send_status = off\n"
	"allow = 10.0.0.0/8, 192.168.1.7 ,fd00::/8\n"
	"reasm_contexts = 16\n"
	"reasm_timeout_ms = 100\n"
	"[consumers]\n"
	"default = 10.1.2.3:7000\n"
	"layer.2 = [fd00::1]:7002\n"
	"[dataplane]\n"
	"profile = af_packet\n"
	"lcores = 2\n"
	"[tls]\n"
	"listen = [::]:9443\n"
	"cert = /etc/fanogate/cert.pem\n"
	"key = /etc/fanogate/key.pem\n"
	"ca = /etc/fanogate/ca.pem\n"
	"require_client_cert = true\n"
	"tokens_file = /etc/fanogate/tokens\n"
	"max_connections = 10\n"
	"ws_max_message = 64K\n"
	"handshake_timeout_ms = 1000\n"
	"idle_timeout_ms = 2000\n"
	"send_queue_max = 2MiB\n"
	"[audit]\n"
	"path = /tmp/a.log ; inline comment\n"
	"rotate_bytes = 0\n"
	"group_commit_us = 0\n"
	"alert_command = /usr/local/bin/page --team fleet\n"
	"alert_min_interval_ms = 5\n"
	"[operator]\n"
	"socket = /tmp/fanoctl.sock\n"
	"group = fanogate\n"
	"[metrics]\n"
	"listen = off\n";

static void test_full_file(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;

	int rc = fg_config_parse(&c, full_file, "full", &err);
	if (rc)
		fail_msg("%s:%d: %s", err.file, err.line, err.reason);
	assert_int_equal(c.hidden, 4);
	assert_int_equal(c.layers, 32);
	assert_int_equal(c.max_seq_len, 8);
	assert_int_equal(c.bands.seed_base, 0x1000);
	assert_int_equal(c.bands.canonical_base, 0x2000);
	assert_int_equal(c.bands.resolved_base, 0x3000);
	assert_int_equal(c.bands.layer_bits, 6);
	assert_int_equal(c.bands.n_layers, 32);
	/* layer 3 and 31 have their own rules, the rest the file's default */
	assert_int_equal(c.rules[3].n, 2);
	assert_int_equal(c.rules[3].mask, 0x03);
	assert_int_equal(c.rules[31].n, 7);
	assert_int_equal(c.rules[31].order[0], 6);
	assert_int_equal(c.rules[31].order[6], 0);
	assert_int_equal(c.rules[31].mask, 0x7F);
	for (unsigned l = 0; l < 32; l++) {
		if (l == 3 || l == 31)
			continue;
		assert_int_equal(c.rules[l].n, 3);
		assert_int_equal(c.rules[l].order[0], 0);
		assert_int_equal(c.rules[l].order[2], 2);
	}
	assert_int_equal(c.slot_capacity, 64);
	assert_int_equal(c.slot_deadline_ns, 250000000ull);
	assert_int_equal(c.line_initial[0], FG_LINE_DISABLED);
	assert_int_equal(c.line_initial[1], FG_LINE_ACTIVE);
	assert_int_equal(c.line_initial[2], FG_LINE_SHADOW);
	assert_int_equal(c.line_initial[6], FG_LINE_DISABLED);
	assert_true(c.policy.auto_promote);
	assert_int_equal(c.policy.promote_count, 5);
	assert_int_equal(c.policy.promote_ns, 1500000000ull);
	assert_true(c.shadow_sample == 0.5);
	assert_int_equal(c.udp_port, 5000);
	assert_int_equal(c.udp_raw_port, 5001);
	assert_int_equal(c.mtu, 9000);
	assert_int_equal(c.ack_interval_ms, 20);
	assert_false(c.send_status);
	assert_int_equal(c.n_allow, 3);
	assert_int_equal(c.allow[0].family, AF_INET);
	assert_int_equal(c.allow[0].len, 8);
	assert_int_equal(c.allow[1].len, 32);
	assert_int_equal(c.allow[2].family, AF_INET6);
	assert_int_equal(c.allow[2].len, 8);
	assert_int_equal(c.reasm_contexts, 16);
	assert_int_equal(c.reasm_timeout_ms, 100);
	assert_true(c.consumer_default.set);
	assert_int_equal(c.consumer_default.port, 7000);
	assert_true(c.consumer[0].set); /* from the default */
	assert_int_equal(c.consumer[0].port, 7000);
	assert_int_equal(c.consumer[2].family, AF_INET6);
	assert_int_equal(c.consumer[2].port, 7002);
	assert_string_equal(c.dp_profile, "af_packet");
	assert_int_equal(c.lcores, 2);
	assert_int_equal(c.tls_listen.family, AF_INET6);
	assert_int_equal(c.tls_listen.port, 9443);
	/* listeners may ask for port 0 (the kernel picks; the daemon reports
	 * it), nothing else may */
	struct fg_config z;
	struct fg_config_error ze;
	assert_int_equal(fg_config_parse(&z, "[tls]\nlisten = 127.0.0.1:0\n[metrics]\nlisten = [::1]:0\n", "t", &ze), 0);
	assert_true(z.tls_listen.set && z.tls_listen.port == 0 && z.metrics_listen.port == 0);
	assert_int_equal(fg_config_parse(&z, "[consumers]\ndefault = 10.0.0.1:0\n", "t", &ze), -EINVAL);
	struct fg_addr za = { .port = 9 };
	assert_int_equal(fg_addr_parse("127.0.0.1:0", &za), -EINVAL);
	assert_int_equal(za.port, 9); /* not written on failure */
	assert_string_equal(c.tls_cert, "/etc/fanogate/cert.pem");
	assert_string_equal(c.tls_key, "/etc/fanogate/key.pem");
	assert_string_equal(c.tls_ca, "/etc/fanogate/ca.pem");
	assert_true(c.tls_require_client_cert);
	assert_string_equal(c.tokens_file, "/etc/fanogate/tokens");
	assert_int_equal(c.max_connections, 10);
	assert_int_equal(c.ws_max_message, 64 * 1024);
	assert_int_equal(c.handshake_timeout_ms, 1000);
	assert_int_equal(c.idle_timeout_ms, 2000);
	assert_int_equal(c.send_queue_max, 2 * 1024 * 1024);
	assert_string_equal(c.audit_path, "/tmp/a.log");
	assert_int_equal(c.audit_rotate_bytes, 0);
	assert_int_equal(c.group_commit_us, 0);
	assert_string_equal(c.alert_command, "/usr/local/bin/page --team fleet");
	assert_int_equal(c.alert_min_interval_ms, 5);
	assert_string_equal(c.op_socket, "/tmp/fanoctl.sock");
	assert_string_equal(c.op_group, "fanogate");
	assert_false(c.metrics_listen.set);

	struct fg_slots_cfg sc;
	fg_config_slots(&c, 2, &sc);
	assert_int_equal(sc.capacity, 32);
	assert_int_equal(sc.hidden, 4);
	assert_int_equal(sc.max_seq_len, 8);
	assert_int_equal(sc.n_layers, 32);
	assert_int_equal(sc.deadline_ns, 250000000ull);
	assert_memory_equal(sc.rules, c.rules, sizeof(sc.rules));
	fg_config_slots(&c, 1000, &sc);
	assert_int_equal(sc.capacity, 1);
	fg_config_slots(&c, 0, &sc);
	assert_int_equal(sc.capacity, 64);
	struct fg_seed_limits lim;
	fg_config_limits(&c, &lim);
	assert_int_equal(lim.hidden, 4);
	assert_int_equal(lim.max_seq_len, 8);
	assert_int_equal(fg_config_max_frame(&c), 10 + 8 + 4 * 8 * 4);
}

/* Every prefix of the full file (cut anywhere, even mid-key): accepted, or
 * refused with a reason on a line that exists; never anything else. The
 * prefixes that end on a line boundary are all accepted except those that
 * cut [tls] between cert and key or before ca (cross-field rules). */
static void test_full_file_prefixes(void **state)
{
	(void)state;
	size_t n = strlen(full_file);
	char *buf = malloc(n + 1);
	unsigned accepted = 0, refused = 0;

	assert_non_null(buf);
	for (size_t cut = 0; cut <= n; cut++) {
		struct fg_config c;
		struct fg_config_error err;
		int lines = 1;

		memcpy(buf, full_file, cut);
		buf[cut] = '\0';
		for (size_t i = 0; i < cut; i++)
			lines += buf[i] == '\n';
		int rc = fg_config_parse(&c, buf, "prefix", &err);
		if (rc == 0) {
			accepted++;
			continue;
		}
		refused++;
		if (rc != -EINVAL || err.line < 1 || err.line > lines || !err.reason[0])
			fail_msg("cut %zu: rc %d line %d of %d \"%s\"", cut, rc, err.line, lines, err.reason);
		if (cut > 0 && buf[cut - 1] == '\n') {
			/* a whole-line prefix is refused only for a cross-field rule */
			bool cross = strstr(err.reason, "cert and key") || strstr(err.reason, "needs ca") ||
				     strstr(err.reason, "layer >=") || strstr(err.reason, "a band holds") ||
				     strstr(err.reason, "overlapping") || strstr(err.reason, "fewer slots") ||
				     strstr(err.reason, "same port");
			if (!cross)
				fail_msg("whole-line cut %zu refused: %d: %s", cut, err.line, err.reason);
		}
	}
	assert_true(accepted > 100);
	assert_true(refused > 100);
	free(buf);
}

/* One refusal per rule: the text, the line the error must name, and a
 * piece of the reason. */
struct refusal {
	const char *text;
	int line;
	const char *reason;
};

static const struct refusal refusals[] = {
	/* syntax and structure */
	{"[model]\nhidden\n", 2, "syntax error"},
	{"[model\nhidden = 4\n", 1, "syntax error"},
	{"hidden = 4\n", 1, "outside any section"},
	{"[model]\nhidden = 4\n[nope]\nx = 1\n", 4, "unknown section [nope]"},
	{"[model]\nhiddden = 4\n", 2, "[model] unknown key 'hiddden'"},
	{"[udp]\nhidden = 4\n", 2, "[udp] unknown key 'hidden'"},
	{"[model]\nhidden = 4\n\nhidden = 8\n", 4, "already set on line 2"},
	{"[model]\nhidden = 4\n  8\n", 3, "an indented line continues the previous key"},
	/* numbers */
	{"[model]\nhidden = four\n", 2, "hidden = four: not a number"},
	{"[model]\nhidden = -4\n", 2, "not a number"},
	{"[model]\nhidden = 4x\n", 2, "not a number"},
	{"[model]\nhidden = 010\n", 2, "not a number"},
	{"[model]\nhidden =\n", 2, "not a number"},
	{"[model]\nhidden = 99999999999999999999999\n", 2, "not a number"},
	{"[model]\nhidden = 0\n", 2, "hidden = 0: out of range (1..65536)"},
	{"[model]\nhidden = 65537\n", 2, "out of range"},
	{"[model]\nlayers = 0\n", 2, "out of range"},
	{"[model]\nlayers = 257\n", 2, "out of range"},
	{"[model]\nmax_seq_len = 0\n", 2, "out of range"},
	{"[bands]\nlayer_bits = 9\n", 2, "out of range (0..8)"},
	{"[bands]\nseed_base = 0xFFFE\n", 2, "out of range"},
	{"[slots]\ncapacity = 0\n", 2, "out of range"},
	{"[slots]\ndeadline_ms = 0\n", 2, "out of range"},
	{"[lines]\npromote_count = 0\n", 2, "out of range"},
	{"[lines]\nshadow_sample = 1.5\n", 2, "out of range (0..1)"},
	{"[lines]\nshadow_sample = -0.1\n", 2, "out of range"},
	{"[lines]\nshadow_sample = nan\n", 2, "not a number"},
	{"[lines]\nshadow_sample = 0.1x\n", 2, "not a number"},
	{"[udp]\nport = 0\n", 2, "port = 0: out of range (1..65535)"},
	{"[udp]\nport = 65536\n", 2, "out of range"},
	{"[udp]\nmtu = 63\n", 2, "out of range"},
	{"[udp]\nack_interval_ms = 0\n", 2, "out of range"},
	{"[dataplane]\nlcores = 0\n", 2, "out of range"},
	{"[tls]\nws_max_message = 1\n", 2, "out of range"},
	{"[tls]\nws_max_message = 1Q\n", 2, "not a number (a byte count"},
	{"[tls]\nsend_queue_max = 2G\n", 2, "out of range"},
	{"[tls]\nmax_connections = 0\n", 2, "out of range"},
	{"[audit]\nrotate_bytes = 2T\n", 2, "out of range"},
	/* booleans, strings, states */
	{"[lines]\nauto_promote = maybe\n", 2, "not a boolean"},
	{"[udp]\nsend_status = TRUE\n", 2, "not a boolean"},
	{"[lines]\nline.1 = promoted\n", 2, "expected disabled, shadow or active"},
	{"[lines]\nline.1 = degraded\n", 2, "expected disabled, shadow or active"},
	{"[lines]\nline.7 = active\n", 2, "'7' is not a line"},
	{"[lines]\nline.1,5,4 = active\n", 2, "'1,5,4' is not a line"},
	{"[lines]\nline.1,2,4 = active\n", 2, "is not a line"},
	{"[lines]\nline.1 = active\nline.1,4,5 = shadow\n", 3, "line (1,4,5): already set on line 2"},
	{"[dataplane]\nprofile =\n", 2, "[dataplane] profile: empty"},
	{"[operator]\nsocket = /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/s\n",
	 2, "value too long"},
	{"[operator]\nsocket =\n", 2, "[operator] socket: empty path"},
	{"[audit]\npath =\n", 2, "[audit] path: empty path"},
	/* rules */
	{"[rules]\ndefault = 1,3,1\n", 2, "line 1 listed twice"},
	{"[rules]\ndefault = 1,7\n", 2, "line 7 does not exist"},
	{"[rules]\ndefault =\n", 2, "expected a comma list"},
	{"[rules]\ndefault = 1;3\n", 2, "expected a comma list"},
	{"[rules]\ndefault = 1,,3\n", 2, "expected a comma list"},
	{"[rules]\ndefault = 1,3,\n", 2, "expected a comma list"},
	{"[rules]\nlayer.2 = 0,0\n", 2, "line 0 listed twice"},
	{"[rules]\nlayer.x = 1\n", 2, "layer must be a number"},
	{"[rules]\nlayer.256 = 1\n", 2, "layer must be a number"},
	{"[rules]\nlayer.2 = 1\nlayer.2 = 3\n", 3, "layer.2: already set on line 2"},
	{"[rules]\nlayer.28 = 1\n", 2, "layer.28: layer >= [model] layers (28)"},
	{"[rules]\nlayer.5 = 1\n[model]\nlayers = 5\n", 2, "layer.5: layer >= [model] layers (5)"},
	/* bands */
	{"[model]\nlayers = 33\n", 2, "more than the 32 layers a band holds"},
	{"[bands]\nlayer_bits = 4\n", 2, "more than the 16 layers a band holds"},
	{"[bands]\ncanonical_base = 0xAF70\n", 2, "overlapping bands: seed_base 0xAF60..0xAF7F and canonical_base 0xAF70..0xAF8F"},
	{"[bands]\nresolved_base = 0xAF90\n", 2, "overlapping bands: canonical_base 0xAF80..0xAF9F and resolved_base 0xAF90..0xAFAF"},
	{"[bands]\nseed_base = 0xAFA0\nresolved_base = 0xAF60\n", 0, NULL}, /* order is free: valid */
	{"[bands]\nresolved_base = 0xFFF0\n", 2, "reaches the status/ACK streams"},
	{"[bands]\nlayer_bits = 6\n", 2, "overlapping bands"},
	/* sizes */
	{"[model]\nhidden = 65536\nmax_seq_len = 65536\n", 3, "hidden * max_seq_len * 4 = 17179869184 bytes"},
	{"[model]\nhidden = 65536\nmax_seq_len = 64\n", 3, "a seed frame holds at most 16777207 body bytes"},
	{"[model]\nhidden = 4096\nmax_seq_len = 32\n", 3, "fragments, at most 255 allowed"},
	{"[model]\nhidden = 4096\n[udp]\nmtu = 64\n", 4, "mtu = 64: a 16402-byte seed frame needs 274 fragments"},
	{"[udp]\nmtu = 64\n", 0, NULL}, /* 6162 bytes in 103 fragments: fine */
	{"[model]\nhidden = 4096\nmax_seq_len = 128\n[udp]\nmtu = 9000\n", 3, "ws_max_message = 1048576: smaller than the largest seed frame (2097170 bytes)"},
	{"[model]\nhidden = 4096\nmax_seq_len = 128\n[udp]\nmtu = 9000\n[tls]\nws_max_message = 4M\nsend_queue_max = 1M\n", 8,
	 "send_queue_max = 1048576: smaller than the largest seed frame"},
	/* ports and addresses */
	{"[udp]\nraw_port = 4242\n", 2, "same port as the fragmented profile"},
	{"[tls]\nlisten = 0.0.0.0\n", 2, "missing :port"},
	{"[tls]\nlisten = example.com:443\n", 2, "no name lookup"},
	{"[tls]\nlisten = ::1:443\n", 2, "IPv6 addresses need brackets"},
	{"[tls]\nlisten = [::1]443\n", 2, "expected [IPv6]:port"},
	{"[tls]\nlisten = 1.2.3.4:99999\n", 2, "bad port"},
	{"[tls]\nlisten = off\n", 2, "missing :port"},
	{"[consumers]\ndefault = 10.0.0.1:0\n", 2, "port 0 is not allowed"},
	{"[consumers]\nlayer.3 = 10.0.0.1\n", 2, "missing :port"},
	{"[consumers]\nlayer.3 = 10.0.0.1:1\nlayer.3 = 10.0.0.1:2\n", 3, "already set on line 2"},
	{"[consumers]\nlayer.40 = 10.0.0.1:1\n", 2, "layer.40: layer >= [model] layers (28)"},
	{"[udp]\nallow = 10.0.0.1/8\n", 2, "'10.0.0.1/8' is not an IPv4/IPv6 prefix"},
	{"[udp]\nallow = 10.0.0.0/33\n", 2, "is not an IPv4/IPv6 prefix"},
	{"[udp]\nallow = 10.0.0.0/8,,\n", 0, NULL}, /* empty items are skipped: valid */
	{"[udp]\nallow = fd00::/129\n", 2, "is not an IPv4/IPv6 prefix"},
	{"[udp]\nallow = bogus\n", 2, "'bogus' is not"},
	{"[udp]\nallow = 1.0.0.0/8,2.0.0.0/8,3.0.0.0/8,4.0.0.0/8,5.0.0.0/8,6.0.0.0/8,7.0.0.0/8,8.0.0.0/8,9.0.0.0/8,"
	 "10.0.0.0/8,11.0.0.0/8,12.0.0.0/8,13.0.0.0/8,14.0.0.0/8,15.0.0.0/8,16.0.0.0/8,17.0.0.0/8,18.0.0.0/8,19.0.0.0/8\n",
	 2, "line longer than 197 bytes"},
	/* cross-field */
	{"[slots]\ncapacity = 1\n[dataplane]\nlcores = 2\n", 2, "fewer slots than [dataplane] lcores (2)"},
	{"[tls]\ncert = /a.pem\n", 2, "cert and key go together"},
	{"[tls]\nkey = /k.pem\n", 2, "cert and key go together"},
	{"[tls]\nrequire_client_cert = true\n", 2, "needs ca"},
	/* the first error is the one reported */
	{"[model]\nhidden = x\nlayers = y\n", 2, "hidden = x"},
	{"[model]\nbroken\nlayers = y\n", 2, "syntax error"},
	{"[model]\nlayers = y\nbroken\n", 2, "layers = y"},
};

static void test_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < FG_ARRAY_LEN(refusals); i++) {
		const struct refusal *r = &refusals[i];
		struct fg_config_error err;

		if (!r->reason) {
			struct fg_config c;
			if (fg_config_parse(&c, r->text, "t.ini", &err) != 0)
				fail_msg("case %zu: refused: %s:%d: %s", i, err.file, err.line, err.reason);
			continue;
		}
		fg_test_config_refused(i, r->text, r->line, r->reason, &err);
	}
}

static void test_crlf_and_inline_comments(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;

	assert_int_equal(fg_config_parse(&c, "[model]\r\nhidden = 8 ; eight\r\n# c\r\nlayers=3\r\n", "crlf", &err), 0);
	assert_int_equal(c.hidden, 8);
	assert_int_equal(c.layers, 3);
	/* no trailing newline */
	assert_int_equal(fg_config_parse(&c, "[model]\nhidden = 12", "nonl", &err), 0);
	assert_int_equal(c.hidden, 12);
	/* a line of exactly the maximum length is accepted */
	char text[512];
	int n = snprintf(text, sizeof(text), "[audit]\nalert_command = ");
	while (n < 8 + FG_CONFIG_LINE_MAX)
		text[n++] = 'a';
	text[n++] = '\n';
	text[n] = '\0';
	assert_int_equal(fg_config_parse(&c, text, "max", &err), 0);
	assert_int_equal(strlen(c.alert_command), FG_CONFIG_LINE_MAX - strlen("alert_command = "));
	text[n - 1] = 'a';
	text[n] = '\n';
	text[n + 1] = '\0';
	assert_int_equal(fg_config_parse(&c, text, "max+1", &err), -EINVAL);
	assert_int_equal(err.line, 2);
	assert_non_null(strstr(err.reason, "line longer than"));
	/* NULL text and name are an empty file */
	assert_int_equal(fg_config_parse(&c, NULL, NULL, &err), 0);
	check_defaults(&c);
}

static void test_bytes_and_numbers(void **state)
{
	(void)state;
	static const struct {
		const char *v;
		uint32_t want;
	} cases[] = {
		{"4096", 4096}, {"4K", 4096}, {"4k", 4096}, {"4KiB", 4096}, {"4KB", 4096}, {"1M", 1u << 20},
		{"1MiB", 1u << 20}, {"1G", 1u << 30}, {"0x1000", 4096},
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(cases); i++) {
		char text[128];
		struct fg_config c;
		struct fg_config_error err;

		snprintf(text, sizeof(text), "[model]\nhidden = 4\n[tls]\nsend_queue_max = %s\n", cases[i].v);
		if (fg_config_parse(&c, text, "b", &err) != 0)
			fail_msg("%s: %s", cases[i].v, err.reason);
		assert_int_equal(c.send_queue_max, cases[i].want);
	}
	struct fg_config c;
	struct fg_config_error err;
	assert_int_equal(fg_config_parse(&c, "[tls]\nsend_queue_max = 4KK\n", "b", &err), -EINVAL);
	assert_int_equal(fg_config_parse(&c, "[tls]\nsend_queue_max = K\n", "b", &err), -EINVAL);
	assert_int_equal(fg_config_parse(&c, "[tls]\nsend_queue_max = iB\n", "b", &err), -EINVAL);
	assert_int_equal(fg_config_parse(&c, "[udp]\nport = 0x10\n", "h", &err), 0);
	assert_int_equal(c.udp_port, 16);
	assert_int_equal(fg_config_parse(&c, "[udp]\nport = +10\n", "h", &err), -EINVAL);
}

static void test_prefix(void **state)
{
	(void)state;
	struct fg_prefix p;
	/* each prefix with its family and length, and an address in or out of it */
	static const struct {
		const char *prefix, *addr;
		int family;
		uint8_t len;
		bool in;
	} cases[] = {
		{"10.0.0.0/8", "10.200.3.4", AF_INET, 8, true},
		{"10.0.0.0/8", "11.0.0.1", AF_INET, 8, false},
		{"10.0.0.0/8", "::a00:1", AF_INET, 8, false}, /* the same bits, the other family */
		{"192.168.4.0/22", "192.168.7.255", AF_INET, 22, true},
		{"192.168.4.0/22", "192.168.8.0", AF_INET, 22, false},
		{"0.0.0.0/0", "1.2.3.4", AF_INET, 0, true},
		{"192.0.2.7", "192.0.2.7", AF_INET, 32, true}, /* a bare address: full length */
		{"192.0.2.7", "192.0.2.6", AF_INET, 32, false},
		{"fd00::/8", "fdab::1", AF_INET6, 8, true},
		{"fd00::/8", "fe80::1", AF_INET6, 8, false},
		{"2001:db8::/33", "2001:db8:7fff::1", AF_INET6, 33, true},
		{"2001:db8::/33", "2001:db8:8000::1", AF_INET6, 33, false},
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(cases); i++) {
		uint8_t a[16];
		int fam = strchr(cases[i].addr, ':') ? AF_INET6 : AF_INET;

		assert_int_equal(fg_prefix_parse(cases[i].prefix, &p), 0);
		assert_int_equal(p.family, cases[i].family);
		assert_int_equal(p.len, cases[i].len);
		assert_int_equal(inet_pton(fam, cases[i].addr, a), 1);
		if (fg_prefix_match(&p, fam, a) != cases[i].in)
			fail_msg("%s %s %s", cases[i].addr, cases[i].in ? "not in" : "in", cases[i].prefix);
	}

	memset(&p, 0x33, sizeof(p));
	static const char *const bad[] = {"", "10.0.0.0/", "10.0.0.0/x", "10.0.0.0/33", "10.0.0.0/08", "10.0.0.1/8",
					  "fd00::/129", "fd00::1/8", "1.2.3", "host", "10.0.0.0/8/8"};
	for (size_t i = 0; i < FG_ARRAY_LEN(bad); i++) {
		if (fg_prefix_parse(bad[i], &p) != -EINVAL)
			fail_msg("prefix \"%s\" accepted", bad[i]);
		assert_int_equal(p.len, 0x33); /* untouched */
	}
	assert_int_equal(fg_prefix_parse(NULL, &p), -EINVAL);

	/* fg_addr_cut: the prefix an IPv6 peer is counted by */
	static const struct {
		const char *addr, *cut;
		unsigned bits;
	} cuts[] = {
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::", 64},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 128},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2:a000::", 68},
		{"2001:db8:1:ffff:aaaa::1", "2001:db8:1:fff0::", 60},
		{"2001:db8:ffff::1", "2001:db8::", 32},
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(cuts); i++) {
		uint8_t a[16], want[16];
		assert_int_equal(inet_pton(AF_INET6, cuts[i].addr, a), 1);
		assert_int_equal(inet_pton(AF_INET6, cuts[i].cut, want), 1);
		fg_addr_cut(a, cuts[i].bits);
		if (memcmp(a, want, 16))
			fail_msg("%s cut to /%u is not %s", cuts[i].addr, cuts[i].bits, cuts[i].cut);
	}
}

static void test_addr(void **state)
{
	(void)state;
	struct fg_addr a;
	static const uint8_t v4[4] = {10, 1, 2, 3}, any[4] = {0, 0, 0, 0}, lo[4] = {127, 0, 0, 1};

	assert_int_equal(fg_addr_parse("10.1.2.3:80", &a), 0);
	assert_true(a.set);
	assert_int_equal(a.family, AF_INET);
	assert_memory_equal(a.addr, v4, 4);
	assert_int_equal(a.port, 80);
	assert_int_equal(fg_addr_parse("*:65535", &a), 0);
	assert_memory_equal(a.addr, any, 4);
	assert_int_equal(a.port, 65535);
	assert_int_equal(fg_addr_parse("localhost:1", &a), 0);
	assert_memory_equal(a.addr, lo, 4);
	assert_int_equal(fg_addr_parse("[::1]:8443", &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(a.addr[15], 1);
	assert_int_equal(a.port, 8443);

	memset(&a, 0x44, sizeof(a));
	static const char *const bad[] = {"", ":80", "10.1.2.3:", "10.1.2.3:0", "10.1.2.3:65536", "10.1.2.3:-1",
					  "[10.1.2.3]:80", "[::1]", "[::1]:", "::1:80", "256.1.1.1:80", "a.b:80",
					  "10.1.2.3:80x"};
	for (size_t i = 0; i < FG_ARRAY_LEN(bad); i++) {
		if (fg_addr_parse(bad[i], &a) != -EINVAL)
			fail_msg("address \"%s\" accepted", bad[i]);
		assert_int_equal(a.port, 0x4444); /* untouched */
	}
	assert_int_equal(fg_addr_parse(NULL, &a), -EINVAL);

	/* the bind/listen variant differs in port 0 only */
	assert_int_equal(fg_addr_parse_port0("10.1.2.3:0", &a), 0);
	assert_int_equal(a.family, AF_INET);
	assert_memory_equal(a.addr, v4, 4);
	assert_int_equal(a.port, 0);
	assert_int_equal(fg_addr_parse_port0("[::1]:8443", &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(a.port, 8443);
	memset(&a, 0x44, sizeof(a));
	for (size_t i = 0; i < FG_ARRAY_LEN(bad); i++) {
		if (strcmp(bad[i], "10.1.2.3:0") && fg_addr_parse_port0(bad[i], &a) != -EINVAL)
			fail_msg("address \"%s\" accepted with port 0 allowed", bad[i]);
		assert_int_equal(a.port, 0x4444); /* untouched */
	}
	assert_int_equal(fg_addr_parse_port0(NULL, &a), -EINVAL);
}

static void test_load(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;
	char path[] = "/tmp/fg_test_config_XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	static const char body[] = "[model]\nhidden = 4\n[udp]\nport = 0\n";
	assert_int_equal(write(fd, body, sizeof(body) - 1), (ssize_t)sizeof(body) - 1);
	close(fd);
	assert_int_equal(fg_config_load(&c, path, &err), -EINVAL);
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 4);
	assert_non_null(strstr(err.reason, "port = 0"));

	/* a good file */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	static const char good[] = "[model]\nhidden = 4\n";
	assert_int_equal(write(fd, good, sizeof(good) - 1), (ssize_t)sizeof(good) - 1);
	close(fd);
	assert_int_equal(fg_config_load(&c, path, &err), 0);
	assert_int_equal(c.hidden, 4);

	/* a NUL byte */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[model]\0x", 9), 9);
	close(fd);
	assert_int_equal(fg_config_load(&c, path, &err), -EINVAL);
	assert_non_null(strstr(err.reason, "NUL"));
	unlink(path);

	assert_int_equal(fg_config_load(&c, path, &err), -ENOENT);
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.reason, "cannot open"));
	assert_int_equal(fg_config_load(&c, "/tmp", &err), -EINVAL);
	assert_non_null(strstr(err.reason, "not a regular file"));
}

static void test_key_table(void **state)
{
	(void)state;
	size_t n = fg_config_key_count();

	assert_true(n > 40);
	assert_null(fg_config_key(n));
	/* every key's documented default parses and gives the default config */
	for (size_t i = 0; i < n; i++) {
		const struct fg_config_key_doc *k = fg_config_key(i);
		assert_non_null(k);
		assert_true(k->help[0] != '\0');
		assert_true(k->range[0] != '\0');
		if (strstr(k->key, ".N") || strcmp(k->def, "") == 0)
			continue;
		char text[256];
		struct fg_config c, d;
		struct fg_config_error err;
		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", k->section, k->key, k->def);
		if (fg_config_parse(&c, text, "doc", &err) != 0)
			fail_msg("documented default %s", text);
		assert_int_equal(fg_config_parse(&d, "", "empty", &err), 0);
		if (memcmp(&c, &d, sizeof(c)) != 0)
			fail_msg("documented default differs from the built-in one: %s", text);
	}
}

/* The settings of fg_config_settings collected as a file. */
struct settings_text {
	char text[16384];
	size_t len;
	const char *section;
	unsigned seen[128]; /* settings per key of the table */
};

static void settings_add(const struct fg_config_setting *s, void *arg)
{
	struct settings_text *t = arg;
	size_t i = 0;

	while (fg_config_key(i) && fg_config_key(i) != s->doc)
		i++;
	assert_non_null(fg_config_key(i));
	assert_true(i < FG_ARRAY_LEN(t->seen));
	t->seen[i]++;
	if (!t->section || strcmp(t->section, s->doc->section) != 0)
		t->len += (size_t)snprintf(t->text + t->len, sizeof(t->text) - t->len, "[%s]\n", s->doc->section);
	t->section = s->doc->section;
	t->len += (size_t)snprintf(t->text + t->len, sizeof(t->text) - t->len, "%s = %s\n", s->key, s->value);
	assert_true(t->len < sizeof(t->text));
}

/* fg_config_settings writes every key of the table (a family: each member
 * it has, line.N all seven), each once, and the text parses back to the
 * same configuration: the defaults, and the full file. */
static void test_settings_round_trip(void **state)
{
	(void)state;
	const char *files[] = { "", full_file };

	for (size_t f = 0; f < FG_ARRAY_LEN(files); f++) {
		struct fg_config c, back;
		struct fg_config_error err;
		struct settings_text *t = calloc(1, sizeof(*t));
		assert_non_null(t);
		assert_int_equal(fg_config_parse(&c, files[f], "in", &err), 0);
		size_t n = fg_config_settings(&c, settings_add, t);
		assert_true(n >= fg_config_key_count());
		for (size_t i = 0; i < fg_config_key_count(); i++) {
			const struct fg_config_key_doc *k = fg_config_key(i);
			if (!strcmp(k->key, "line.N"))
				assert_int_equal(t->seen[i], FG_LINES);
			else if (!strcmp(k->key, "layer.N")) /* full_file: rules layer.3 and .31, consumers layer.2 */
				assert_int_equal(t->seen[i], f == 0 ? 0 : !strcmp(k->section, "rules") ? 2 : 1);
			else if (t->seen[i] != 1)
				fail_msg("file %zu: [%s] %s written %u times", f, k->section, k->key, t->seen[i]);
		}
		if (fg_config_parse(&back, t->text, "settings", &err) != 0)
			fail_msg("file %zu: line %d: %s in\n%s", f, err.line, err.reason, t->text);
		if (memcmp(&c, &back, sizeof(c)) != 0)
			fail_msg("file %zu: the settings mean another configuration:\n%s", f, t->text);
		free(t);
	}
}

/* [tls] unauth_per_source: auto sizes from [model] layers, wherever the
 * layers key is in the file; a number is kept as given. */
static void test_unauth_auto(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;

	fg_config_default(&c);
	assert_true(c.unauth_per_source_auto);
	assert_int_equal(c.unauth_per_source, 64); /* 28 layers: 2 * (28 + 4) */
	assert_int_equal(fg_config_unauth_auto(4), 16);
	assert_int_equal(fg_config_unauth_auto(5), 18);
	assert_int_equal(fg_config_unauth_auto(1), 16);
	assert_int_equal(fg_config_unauth_auto(256), 520);
	assert_int_equal(fg_config_parse(&c, "[tls]\nunauth_per_source = auto\n[model]\nlayers = 30\n", "t", &err), 0);
	assert_true(c.unauth_per_source_auto);
	assert_int_equal(c.unauth_per_source, 68);
	assert_int_equal(fg_config_parse(&c, "[model]\nlayers = 4\n", "t", &err), 0);
	assert_int_equal(c.unauth_per_source, 16);
	assert_int_equal(fg_config_parse(&c, "[model]\nlayers = 30\n[tls]\nunauth_per_source = 10\n", "t", &err), 0);
	assert_false(c.unauth_per_source_auto);
	assert_int_equal(c.unauth_per_source, 10);
	assert_int_equal(fg_config_parse(&c, "[tls]\nunauth_per_source = 0\n", "t", &err), 0);
	assert_int_equal(c.unauth_per_source, 0);
	assert_int_equal(fg_config_parse(&c, "[tls]\nunauth_per_source = automatic\n", "t", &err), -EINVAL);
	assert_non_null(strstr(err.reason, "not a number or auto"));
	assert_int_equal(fg_config_parse(&c, "[tls]\nunauth_per_source = 1000001\n", "t", &err), -EINVAL);
	assert_non_null(strstr(err.reason, "out of range"));
}

/* fg_file_open: nothing but a regular file, never blocking, the reason
 * naming what the path is. */
static void test_file_kinds(void **state)
{
	(void)state;
	char dir[] = "/tmp/fg_test_kinds_XXXXXX", fifo[64], reg[64], link[64], why[160];
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(reg, sizeof(reg), "%s/reg", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int fd = open(reg, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[model]\nhidden = 4\n", 19), 19);
	close(fd);
	assert_int_equal(symlink(reg, link), 0);

	/* a FIFO without a writer: refused at once (a blocking open would hang here) */
	assert_int_equal(fg_file_open(fifo, 0, 0, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "is a FIFO"));
	assert_int_equal(fg_file_open(dir, 0, 0, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "is a directory"));
	assert_int_equal(fg_file_open("/dev/zero", 0, 0, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "is a character device"));
	assert_int_equal(fg_file_open(reg, 0, 4, why, sizeof(why)), -EFBIG);
	assert_int_equal(fg_file_open(link, FG_FILE_NOFOLLOW, 0, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symbolic link"));
	fd = fg_file_open(link, 0, 0, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(fg_file_read(reg, 0, 1024, &buf, &len, why, sizeof(why)), 0);
	assert_int_equal(len, 19);
	assert_string_equal(buf, "[model]\nhidden = 4\n");
	free(buf);

	struct fg_config c;
	struct fg_config_error err;
	assert_int_equal(fg_config_load(&c, fifo, &err), -EINVAL);
	assert_non_null(strstr(err.reason, "is a FIFO, not a regular file"));
	assert_int_equal(fg_config_load(&c, "/dev/zero", &err), -EINVAL);
	assert_non_null(strstr(err.reason, "is a character device"));
	assert_string_equal(fg_file_kind(S_IFSOCK), "is a socket");
	assert_string_equal(fg_file_kind(S_IFBLK), "is a block device");

	unlink(link);
	unlink(reg);
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_full_file_prefixes),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_crlf_and_inline_comments),
		cmocka_unit_test(test_bytes_and_numbers),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_unauth_auto),
		cmocka_unit_test(test_file_kinds),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_settings_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

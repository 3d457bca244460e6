/* test_cluster_value.c - the cluster's key schema and authenticated values
 * (control/cluster/cl_value.c), the secret files (cl_secret.c) and the
 * beat window (cl_beat_window, cl_detect.c).
 *
 * What it pins: canonical decimal only ("05", " 5", "+5", "" refused); keys
 * parsed strictly (lines/03, lines/7, a name with '/' are foreign); an
 * envelope made and parsed back verifies, and every prefix of it, every
 * single-byte change and another key do not; the (create_revision,
 * version) binding; a key file others may read, a directory or a missing
 * file refused with its reason; every node in the window of at least two
 * others from three nodes on, the window never wider than CL_BEAT_WINDOW. */
#include <errno.h>
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

#include "cl_value.h"
#include "cl_detect.h"
#include "cl_secret.h"

static void test_decimal(void **state)
{
	(void)state;
	uint64_t v = 99;
	assert_true(cl_dec_parse("0", 1, 10, &v) && v == 0);
	assert_true(cl_dec_parse("5", 1, 10, &v) && v == 5);
	assert_true(cl_dec_parse("18446744073709551615", 20, UINT64_MAX, &v) && v == UINT64_MAX);
	v = 7;
	static const char *const bad[] = {"", "05", " 5", "5 ", "+5", "-1", "0x5", "5a", "18446744073709551616", "11"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(cl_dec_parse(bad[i], strlen(bad[i]), 10, &v));
	assert_int_equal(v, 7); /* untouched on failure */
}

static enum cl_key_kind kind(const char *k, struct cl_key *out)
{
	return cl_key_parse(k, strlen(k), out);
}

static void test_keys(void **state)
{
	(void)state;
	struct cl_key k;
	assert_int_equal(kind("epoch", &k), CL_KEY_EPOCH);
	for (unsigned i = 0; i < 7; i++) {
		char b[16];
		snprintf(b, sizeof(b), "lines/%u", i);
		assert_int_equal(kind(b, &k), CL_KEY_LINE);
		assert_int_equal(k.line, i);
	}
	assert_int_equal(kind("nodes/gate-a.1_x", &k), CL_KEY_NODE);
	assert_string_equal(k.node, "gate-a.1_x");
	assert_int_equal(kind("points/a", &k), CL_KEY_POINTS);
	assert_int_equal(kind("beats/a", &k), CL_KEY_BEAT);
	assert_int_equal(kind("down/a", &k), CL_KEY_DOWN);
	static const char *const foreign[] = {
		"lines/03", "lines/7", "lines/", "lines/-1", "lines/1 ", "epoch/", "epochs", "Epoch", "nodes/", "nodes/a/b",
		"nodes/a b", "points/", "beats/a/", "down/", "epoch_by", "zz/blob", "",
		"nodes/012345678901234567890123456789012345678901234567"};
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
		assert_int_equal(kind(foreign[i], &k), CL_KEY_FOREIGN);
}

static const char fleet_key[] = "unit-test-fleet-key-0123456789abcdef0123";

static struct cl_mac_key *mk(const char *key)
{
	struct cl_mac_key *k;
	assert_int_equal(cl_mac_key_new(&k, (const uint8_t *)key, strlen(key)), 0);
	return k;
}

static void test_envelope(void **state)
{
	(void)state;
	struct cl_mac_key *k = mk(fleet_key), *other = mk("another-fleet-key-0123456789abcdef0123");
	const char *ekey = "/fanogate/lines/2", *payload = "{\"state\":\"active\"}";
	char v[CL_VALUE_MAX + 1];
	int n = cl_env_make(k, ekey, "a", 7587899383592506390, 41, 3, 12, payload, strlen(payload), v, sizeof(v));
	assert_true(n > 0);
	assert_memory_equal(v, "fg1 ", 4);
	struct cl_env e;
	const char *why;
	assert_int_equal(cl_env_parse(v, (size_t)n, &e, &why), 0);
	assert_string_equal(e.node, "a");
	assert_true(e.lease == 7587899383592506390 && e.crev == 41 && e.ver == 3 && e.seq == 12);
	assert_int_equal(e.payload_len, strlen(payload));
	assert_memory_equal(e.payload, payload, e.payload_len);
	assert_true(cl_env_verify(k, ekey, &e));
	assert_false(cl_env_verify(other, ekey, &e));            /* another key */
	assert_false(cl_env_verify(k, "/fanogate/lines/3", &e)); /* another etcd key */
	assert_true(cl_env_bound(&e, 41, 3));
	assert_false(cl_env_bound(&e, 41, 4)); /* written again since: a replay */
	assert_false(cl_env_bound(&e, 40, 3)); /* deleted and re-created */
	/* every strict prefix fails (parse or MAC), and so does every change
	 * of one byte */
	for (int len = 0; len < n; len++)
		assert_false(cl_env_parse(v, (size_t)len, &e, &why) == 0 && cl_env_verify(k, ekey, &e));
	for (int i = 0; i < n; i++) {
		char w[CL_VALUE_MAX + 1];
		memcpy(w, v, (size_t)n);
		w[i] ^= 0x01;
		assert_false(cl_env_parse(w, (size_t)n, &e, &why) == 0 && cl_env_verify(k, ekey, &e));
	}
	/* a creation: crev 0 with ver 1 only */
	n = cl_env_make(k, ekey, "a", 1, 0, 1, 1, "{}", 2, v, sizeof(v));
	assert_true(n > 0);
	assert_int_equal(cl_env_parse(v, (size_t)n, &e, &why), 0);
	assert_true(cl_env_bound(&e, 99, 1));
	assert_int_equal(cl_env_make(k, ekey, "a", 1, 5, 1, 1, "{}", 2, v, sizeof(v)), -EINVAL);
	assert_int_equal(cl_env_make(k, ekey, "a", 1, 0, 2, 1, "{}", 2, v, sizeof(v)), -EINVAL);
	assert_int_equal(cl_env_make(k, ekey, "a b", 1, 0, 1, 1, "{}", 2, v, sizeof(v)), -EINVAL);
	assert_int_equal(cl_env_make(k, ekey, "a", 0, 0, 1, 1, "{}", 2, v, sizeof(v)), -EINVAL);
	assert_int_equal(cl_env_make(k, ekey, "a", 1, 0, 1, 1, "{}", 2, v, 40), -ENOSPC);
	cl_mac_key_free(k);
	cl_mac_key_free(other);
}

static void test_envelope_malformed(void **state)
{
	(void)state;
	const char *mac = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char v[400];
	struct cl_env e;
	const char *why;
	static const char *const bad[] = {
		"%s a 1 0 1 1\n{}x",   /* fine (the control) */
		"fg2 %s a 1 0 1 1\n{}", "fg1  %s a 1 0 1 1\n{}", "%s a 01 0 1 1\n{}", "%s a 1 0 1 01\n{}",
		"%s a 0 0 1 1\n{}",    "%s a 1 5 1 1\n{}",       "%s a 1 0 2 1\n{}",  "%s a 1 0 0 1\n{}",
		"%s a 1 0 1 0\n{}",    "%s a/b 1 0 1 1\n{}",     "%s a 1 0 1 1{}",    "%s a 1 0 1 1 \n{}",
		"%s a  1 0 1 1\n{}",   "%s  a 1 0 1 1\n{}",      "%s a 1 0 1\n{}",    "%s a -1 0 1 1\n{}",
		"%s a 9223372036854775808 0 1 1\n{}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n;
		if (strncmp(bad[i], "fg", 2) == 0)
			n = snprintf(v, sizeof(v), bad[i], mac);
		else {
			char fmt[100];
			snprintf(fmt, sizeof(fmt), "fg1 %s", bad[i]);
			n = snprintf(v, sizeof(v), fmt, mac);
		}
		int r = cl_env_parse(v, (size_t)n, &e, &why);
		if (i == 0)
			assert_int_equal(r, 0);
		else if (r == 0)
			fail_msg("accepted: %s", v);
	}
	/* upper-case hex in the mac */
	snprintf(v, sizeof(v), "fg1 %s a 1 0 1 1\n{}", "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
	assert_int_equal(cl_env_parse(v, strlen(v), &e, &why), -EINVAL);
	static char big[CL_VALUE_MAX + 10];
	memset(big, 'x', sizeof(big));
	assert_int_equal(cl_env_parse(big, sizeof(big), &e, &why), -EINVAL);
	assert_string_equal(why, "too_long");
}

static void test_secret_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/fg-cl-secret-XXXXXX", path[96], why[300];
	uint8_t buf[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("0123456789abcdef\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(cl_secret_read(path, buf, sizeof(buf), why, sizeof(why)), 16); /* newline dropped */
	assert_memory_equal(buf, "0123456789abcdef", 16);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(cl_secret_read(path, buf, sizeof(buf), why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "group- or world-accessible (mode 0640)"));
	assert_int_equal(chmod(path, 0604), 0);
	assert_int_equal(cl_secret_read(path, buf, sizeof(buf), why, sizeof(why)), -EACCES);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(cl_secret_read(path, buf, 8, why, sizeof(why)), -EFBIG);
	assert_int_equal(cl_secret_read(dir, buf, sizeof(buf), why, sizeof(why)) < 0, 1);
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(cl_secret_read(path, buf, sizeof(buf), why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "No such file"));
	snprintf(path, sizeof(path), "%s/key", dir);
	unlink(path);
	rmdir(dir);
}

static void test_beat_window(void **state)
{
	(void)state;
	for (unsigned n = 1; n <= 40; n++) {
		unsigned watched_by[40] = {0};
		for (unsigned self = 0; self < n; self++) {
			unsigned lo, hi;
			cl_beat_window(n, self, &lo, &hi);
			assert_true(lo <= self && self <= hi && hi < n);
			assert_int_equal(hi - lo + 1, n < CL_BEAT_WINDOW ? n : CL_BEAT_WINDOW);
			for (unsigned j = lo; j <= hi; j++)
				if (j != self)
					watched_by[j]++;
		}
		for (unsigned j = 0; j < n; j++)
			assert_true(watched_by[j] >= (n >= 3 ? 2u : n - 1));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decimal),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_envelope_malformed),
		cmocka_unit_test(test_secret_files),
		cmocka_unit_test(test_beat_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

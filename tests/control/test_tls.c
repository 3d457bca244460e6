/* test_tls.c - unit tests of control/cp_tls.c that need no peer: the
 * tokens file (mode 0600 enforced, roles, cn: map, refusals) and the
 * constant-time bearer check. A TLS handshake over the connection's own BIOs
 * is driven end to end against an in-process OpenSSL client, then the
 * zero-copy input window (stop early, the rest stashed and freed once read),
 * cp_tls_conn_trim (refused while a partial record is buffered) and the
 * output sink. */
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
#include <openssl/ssl.h>

#include "cp_tls.h"
#include "../lib/fg_test_file.h" /* fg_test_tmpdir, fg_test_rmtree */

static char dir[64];

static const char *write_file(const char *name, const char *text, mode_t mode)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static int setup(void **state)
{
	(void)state;
	fg_test_tmpdir(dir, sizeof(dir), "/tmp/d1-tls-XXXXXX");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fg_test_rmtree(dir) == 0 ? 0 : -1;
}

static void test_tokens_roles(void **state)
{
	(void)state;
	struct cp_tls t;
	memset(&t, 0, sizeof(t));
	char why[256];
	const char *p = write_file("tok", "# comment\n\nfleet-token-aaaaaaaaaaaa\nreader-token-bbbbbbbbbbbb consumer\n"
					  "cn:worker-7 operator\n  spaced-token-cccccccccccc  \n", 0600);
	assert_int_equal(cp_tokens_load(&t, p, why, sizeof(why)), 3);
	assert_int_equal(t.n_cnmap, 1);
	assert_string_equal(t.cnmap[0].cn, "worker-7");
	assert_string_equal(t.cnmap[0].role, "operator");
	const char *role = NULL;
	assert_true(cp_tls_token_ok(&t, "fleet-token-aaaaaaaaaaaa", 24, &role));
	assert_string_equal(role, "fleet");
	assert_true(cp_tls_token_ok(&t, "reader-token-bbbbbbbbbbbb", 25, &role));
	assert_string_equal(role, "consumer");
	assert_true(cp_tls_token_ok(&t, "spaced-token-cccccccccccc", 25, &role));
	role = NULL;
	assert_false(cp_tls_token_ok(&t, "fleet-token-aaaaaaaaaaa", 23, &role)); /* prefix */
	assert_false(cp_tls_token_ok(&t, "fleet-token-aaaaaaaaaaaaa", 25, &role)); /* longer */
	assert_false(cp_tls_token_ok(&t, "", 0, &role));
	assert_false(cp_tls_token_ok(&t, "worker-7", 8, &role)); /* a cn entry is not a token */
	assert_null(role);
	cp_tls_fini(&t);
}

static void test_tokens_mode_refused(void **state)
{
	(void)state;
	static const mode_t bad[] = {0644, 0640, 0604, 0660, 0666, 0610};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cp_tls t;
		memset(&t, 0, sizeof(t));
		char why[256] = "";
		const char *p = write_file("tok", "fleet-token-aaaaaaaaaaaa\n", bad[i]);
		assert_int_equal(cp_tokens_load(&t, p, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "0600"));
		assert_int_equal(t.n_tokens, 0);
		cp_tls_fini(&t);
	}
	/* 0400 is fine: nobody else can read it */
	struct cp_tls t;
	memset(&t, 0, sizeof(t));
	char why[256];
	const char *p = write_file("tok", "fleet-token-aaaaaaaaaaaa\n", 0400);
	assert_int_equal(cp_tokens_load(&t, p, why, sizeof(why)), 1);
	cp_tls_fini(&t);
}

static void test_tokens_bad_content(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"short\n",                                  /* < 16 characters */
		"fleet-token-aaaaaaaaaaaa two words\n",     /* role with a space */
		"cn: operator\n",                           /* empty cn */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cp_tls t;
		memset(&t, 0, sizeof(t));
		char why[256] = "";
		const char *p = write_file("tok", bad[i], 0600);
		assert_int_equal(cp_tokens_load(&t, p, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, ":1:"));
		cp_tls_fini(&t);
	}
	struct cp_tls t;
	memset(&t, 0, sizeof(t));
	char why[256];
	char path[128];
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(cp_tokens_load(&t, path, why, sizeof(why)), -ENOENT);
	/* a symlink is not followed */
	const char *p = write_file("real", "fleet-token-aaaaaaaaaaaa\n", 0600);
	char link[128];
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(cp_tokens_load(&t, link, why, sizeof(why)), -ELOOP);
	cp_tls_fini(&t);
}

static void test_init_refusals(void **state)
{
	(void)state;
	struct fg_config *cfg = calloc(1, sizeof(*cfg));
	assert_non_null(cfg);
	fg_config_default(cfg);
	struct cp_tls t;
	char why[512];
	/* Both unset: the self-signed pair of the embedded default, generated in
	 * the directory of [audit] path (daemon_selfsigned.py tests it end to end). */
	cfg->tls_cert[0] = cfg->tls_key[0] = '\0';
	snprintf(cfg->audit_path, sizeof(cfg->audit_path), "%s/state/audit.log", dir);
	assert_int_equal(cp_tls_init(&t, cfg, why, sizeof(why)), 0);
	cp_tls_fini(&t);
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/state/tls-selfsigned.key", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* One of the two: refused. */
	snprintf(cfg->tls_cert, sizeof(cfg->tls_cert), "%s/state/tls-selfsigned.pem", dir);
	assert_int_equal(cp_tls_init(&t, cfg, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "cert and key"));
	/* Set but missing: refused, naming the file. */
	snprintf(cfg->tls_cert, sizeof(cfg->tls_cert), "%s/missing.pem", dir);
	snprintf(cfg->tls_key, sizeof(cfg->tls_key), "%s/missing.key", dir);
	assert_int_equal(cp_tls_init(&t, cfg, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "missing.pem"));
	free(cfg);
}

/* Make a self-signed EC certificate in memory-free PEM files. */
static void make_cert(const char *cert, const char *key)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %s -out %s "
		 "-days 1 -subj /CN=localhost >/dev/null 2>&1",
		 key, cert);
	if (system(cmd) != 0)
		skip();
}

/* Shuttle ciphertext between an OpenSSL client (memory BIOs too) and the
 * server side until both are quiet. */
static void pump(struct cp_tls_conn *srv, SSL *cli, BIO *cli_in, BIO *cli_out, const struct cp_tls *t)
{
	uint8_t buf[16384];
	for (int round = 0; round < 20; round++) {
		int moved = 0;
		int n;
		while ((n = BIO_read(cli_out, buf, sizeof(buf))) > 0) {
			assert_int_equal(cp_tls_feed(srv, buf, (size_t)n), 0);
			moved = 1;
		}
		uint8_t plain[256];
		ssize_t r = cp_tls_read(t, srv, plain, sizeof(plain));
		assert_true(r >= 0);
		size_t k;
		while ((k = cp_tls_out_take(srv, buf, sizeof(buf))) > 0) {
			assert_int_equal(BIO_write(cli_in, buf, (int)k), (int)k);
			moved = 1;
		}
		if (!SSL_is_init_finished(cli))
			(void)SSL_do_handshake(cli);
		if (!moved && srv->handshake_done && SSL_is_init_finished(cli))
			return;
	}
}

static size_t sink_bytes;
static int count_sink(void *arg, const uint8_t *p, size_t n)
{
	(void)arg;
	(void)p;
	sink_bytes += n;
	return 0;
}

static void test_memory_bio_handshake(void **state)
{
	(void)state;
	struct fg_config *cfg = calloc(1, sizeof(*cfg));
	assert_non_null(cfg);
	fg_config_default(cfg);
	snprintf(cfg->tls_cert, sizeof(cfg->tls_cert), "%s/c.pem", dir);
	snprintf(cfg->tls_key, sizeof(cfg->tls_key), "%s/c.key", dir);
	make_cert(cfg->tls_cert, cfg->tls_key);
	struct cp_tls t;
	char why[512];
	assert_int_equal(cp_tls_init(&t, cfg, why, sizeof(why)), 0);
	struct cp_tls_conn srv;
	assert_int_equal(cp_tls_conn_init(&srv, &t), 0);

	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	SSL *cli = SSL_new(cctx);
	BIO *cin = BIO_new(BIO_s_mem()), *cout = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(cin, -1);
	SSL_set_bio(cli, cin, cout);
	SSL_set_connect_state(cli);
	(void)SSL_do_handshake(cli);
	pump(&srv, cli, cin, cout, &t);
	assert_true(srv.handshake_done);
	assert_true(SSL_is_init_finished(cli));
	assert_false(srv.peer_verified);

	/* application data both ways */
	assert_int_equal(SSL_write(cli, "ping", 4), 4);
	uint8_t buf[16384];
	int n = BIO_read(cout, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(cp_tls_feed(&srv, buf, (size_t)n), 0);
	uint8_t plain[64];
	assert_int_equal(cp_tls_read(&t, &srv, plain, sizeof(plain)), 4);
	assert_memory_equal(plain, "ping", 4);
	assert_int_equal(cp_tls_read(&t, &srv, plain, sizeof(plain)), 0); /* wants more */
	assert_int_equal(cp_tls_write(&srv, "pong", 4), 0);
	size_t k = cp_tls_out_take(&srv, buf, sizeof(buf));
	assert_true(k > 0);
	assert_int_equal(BIO_write(cin, buf, (int)k), (int)k);
	assert_int_equal(SSL_read(cli, plain, sizeof(plain)), 4);
	assert_memory_equal(plain, "pong", 4);

	/* Zero-copy window: two records in one receive; the caller stops
	 * after the first, feed_end stashes the second, the receive buffer is
	 * reused (overwritten), and the second record still reads right. */
	assert_int_equal(SSL_write(cli, "one", 3), 3);
	assert_int_equal(SSL_write(cli, "two", 3), 3);
	n = BIO_read(cout, buf, sizeof(buf));
	assert_true(n > 0);
	cp_tls_feed_window(&srv, buf, (size_t)n);
	assert_int_equal(cp_tls_read(&t, &srv, plain, sizeof(plain)), 3);
	assert_memory_equal(plain, "one", 3);
	assert_int_equal(cp_tls_feed_end(&srv), 0);
	assert_null(srv.win);
	assert_true(cp_tls_in_pending(&srv) > 0 && cp_tls_in_pending(&srv) < (size_t)n);
	memset(buf, 0x17, sizeof(buf));
	assert_int_equal(cp_tls_read(&t, &srv, plain, sizeof(plain)), 3);
	assert_memory_equal(plain, "two", 3);
	assert_int_equal(cp_tls_in_pending(&srv), 0);
	assert_null(srv.stash); /* freed once read */
	/* Idle: the record buffers can go; a partial record keeps them. */
	assert_true(cp_tls_conn_trim(&srv));
	assert_int_equal(SSL_write(cli, "three", 5), 5);
	n = BIO_read(cout, buf, sizeof(buf));
	assert_true(n > 3);
	cp_tls_feed_window(&srv, buf, 3);
	assert_int_equal(cp_tls_read(&t, &srv, plain, sizeof(plain)), 0);
	assert_int_equal(cp_tls_feed_end(&srv), 0);
	assert_false(cp_tls_conn_trim(&srv));
	cp_tls_feed_window(&srv, buf + 3, (size_t)n - 3);
	assert_int_equal(cp_tls_read(&t, &srv, plain, sizeof(plain)), 5);
	assert_memory_equal(plain, "three", 5);
	assert_int_equal(cp_tls_feed_end(&srv), 0);
	assert_true(cp_tls_conn_trim(&srv));
	/* A sink takes the records instead of the out buffer. */
	sink_bytes = 0;
	cp_tls_set_sink(&srv, count_sink, NULL);
	assert_int_equal(cp_tls_write(&srv, "four", 4), 0);
	assert_true(sink_bytes > 4);
	assert_int_equal(cp_tls_out_pending(&srv), 0);
	assert_null(srv.out);

	/* garbage from the peer is a TLS error, not a crash */
	struct cp_tls_conn bad;
	assert_int_equal(cp_tls_conn_init(&bad, &t), 0);
	assert_int_equal(cp_tls_feed(&bad, "GET / HTTP/1.1\r\n\r\n", 18), 0);
	assert_int_equal(cp_tls_read(&t, &bad, plain, sizeof(plain)), -EPROTO);
	cp_tls_conn_fini(&bad);

	SSL_free(cli);
	SSL_CTX_free(cctx);
	cp_tls_conn_fini(&srv);
	cp_tls_fini(&t);
	free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokens_roles),
		cmocka_unit_test(test_tokens_mode_refused),
		cmocka_unit_test(test_tokens_bad_content),
		cmocka_unit_test(test_init_refusals),
		cmocka_unit_test(test_memory_bio_handshake),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_cluster_etcd.c - the cluster thread, its transport and its queues
 * (control/cluster/cp_cluster_etcd.c, cl_http.c, cl_queue.c) without etcd,
 * and the failure detector's rules (cl_detect.c).
 *
 * What it pins: the loop -> thread queue is bounded (CL_QUEUE_MAX, then
 * -ENOBUFS, counted) and keeps what it holds while etcd is unreachable; the
 * thread reports CL_IN_DOWN on the eventfd (the loop's wake-up) once every
 * endpoint refused the connection, and stops promptly; a second node with a
 * name another live lease holds gets CL_IN_DUPLICATE (and writes nothing,
 * never reports etcd lost), against a fake etcd JSON gateway served by a
 * thread of this test (the answers etcd 3.4 gives, shaped by hand); what a
 * lease probe's answers prove (cl_lease_judge: stale, a refresh proven, a
 * new leader's extension that is no refresh) and the staleness bound a
 * configuration gives (cl_lease_stale_s); when a peer's heartbeats count as
 * stopped (cl_beat_down: only once this node's own later beat came back)
 * and the bound a configuration gives (cl_beat_down_ms).
 * Runs on the test's main thread plus the cluster thread and the fake. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "cl_value.h"
#include "cl_detect.h"
#include "cp_cluster_etcd.h"
#include "fg/config.h"

/* The fleet key every node of these tests uses, in a 0600 file. */
static const char test_key[] = "test-fleet-key-0123456789abcdef0123456789";
static char key_path[64];

static void key_file_make(void)
{
	if (key_path[0])
		return;
	char dir[] = "/tmp/fg-cl-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	snprintf(key_path, sizeof(key_path), "%s/fleet.key", dir);
	FILE *f = fopen(key_path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", test_key);
	fclose(f);
	assert_int_equal(chmod(key_path, 0600), 0);
}

/* A port on 127.0.0.1 nothing listens on (bound, then closed). */
static int closed_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &l), 0);
	close(s);
	return ntohs(a.sin_port);
}

static void cfg_for(struct fg_config *c, const char *name, int port1, int port2)
{
	char text[640];
	struct fg_config_error err;
	key_file_make();
	snprintf(text, sizeof(text),
		 "[cluster]\nnode = %s\nendpoints = http://127.0.0.1:%d,http://127.0.0.1:%d\nlease_ttl_s = 1\n"
		 "timeout_ms = 300\nlost_after_ms = 100000\nkey_file = %s\n",
		 name, port1, port2, key_path);
	fg_config_default(c);
	assert_int_equal(fg_config_parse(c, text, "test", &err), 0);
}

/* Wait up to 10 s for the eventfd, then pop one fact. */
/* *c (allocated here) for node name (cfg_for) and a cl_etcd started on
 * it; its event fd in *evfd. The caller stops it, then frees *c. */
static struct cl_etcd *etcd_start(struct fg_config **c, const char *name, int port1, int port2, int *evfd)
{
	*c = calloc(1, sizeof(**c));
	assert_non_null(*c);
	cfg_for(*c, name, port1, port2);
	struct cl_etcd *t;
	char why[256];
	assert_int_equal(cl_etcd_start(&t, *c, evfd, why, sizeof(why)), 0);
	return t;
}

static int wait_in(struct cl_etcd *t, int evfd, struct cl_in *m)
{
	for (int i = 0; i < 200; i++) {
		struct pollfd p = {.fd = evfd, .events = POLLIN};
		if (poll(&p, 1, 50) < 0)
			return -errno;
		unsigned n = cl_etcd_pop_in(t, m, 1);
		if (n == 1)
			return 0;
	}
	return -ETIMEDOUT;
}

static void test_down_and_bounded_queue(void **state)
{
	(void)state;
	struct fg_config *c;
	int evfd;
	struct cl_etcd *t = etcd_start(&c, "a", closed_port(), closed_port(), &evfd);
	/* nothing listens: the lease is never granted, so nothing is sent and
	 * the queue keeps every change up to its bound */
	struct cl_out o = {.kind = CL_OUT_LINE, .line = 1};
	snprintf(o.state, sizeof(o.state), "active");
	for (unsigned i = 0; i < CL_QUEUE_MAX; i++)
		assert_int_equal(cl_etcd_push_out(t, &o), 0);
	assert_int_equal(cl_etcd_push_out(t, &o), -ENOBUFS);
	struct cl_in m;
	assert_int_equal(wait_in(t, evfd, &m), 0);
	assert_int_equal(m.kind, CL_IN_DOWN);
	assert_non_null(strstr(m.why, "no etcd endpoint answered"));
	struct cl_etcd_stats st;
	cl_etcd_stats(t, &st);
	assert_int_equal(st.out_dropped, 1);
	assert_int_equal(st.duplicate_refusals, 0);
	assert_true(st.request_failures >= 2);
	/* reported once, not once per round */
	assert_int_equal(cl_etcd_pop_in(t, &m, 1), 0);
	cl_etcd_stop(t);
	free(c);
}

/* ---- a fake etcd gateway: lease grant/keepalive, and a txn whose compare
 * fails with nodes/<name> held by lease 99 ---- */
struct fake {
	int ls;
	int port;
	volatile int stop;
	int txns, puts;
};

/* nodes/b as a live node b on lease 99 wrote it: a valid envelope. */
static const char *holder_answer(void)
{
	static char ans[4096];
	if (ans[0])
		return ans;
	struct cl_mac_key *k;
	assert_int_equal(cl_mac_key_new(&k, (const uint8_t *)test_key, strlen(test_key)), 0);
	const char *key = "/fanogate/nodes/b", *payload = "{\"layers\":\"all\",\"pid\":1,\"beat_ms\":200}";
	char val[CL_VALUE_MAX + 1], k64[64], v64[1024];
	int n = cl_env_make(k, key, "b", 99, 0, 1, 1, payload, strlen(payload), val, sizeof(val));
	assert_true(n > 0);
	cl_mac_key_free(k);
	EVP_EncodeBlock((unsigned char *)k64, (const unsigned char *)key, (int)strlen(key));
	EVP_EncodeBlock((unsigned char *)v64, (const unsigned char *)val, n);
	snprintf(ans, sizeof(ans),
		 "{\"header\":{\"revision\":\"5\"},\"succeeded\":false,\"responses\":[{\"response_range\":{\"kvs\":[{"
		 "\"key\":\"%s\",\"value\":\"%s\",\"create_revision\":\"4\",\"mod_revision\":\"4\","
		 "\"version\":\"1\",\"lease\":\"99\"}]}}]}",
		 k64, v64);
	return ans;
}

static const char *answer_for(struct fake *f, const char *path)
{
	if (strstr(path, "/v3/lease/grant"))
		return "{\"header\":{\"revision\":\"5\"},\"ID\":\"7\",\"TTL\":\"1\"}";
	if (strstr(path, "/v3/lease/keepalive"))
		return "{\"result\":{\"header\":{\"revision\":\"5\"},\"ID\":\"7\",\"TTL\":\"1\"}}";
	if (strstr(path, "/v3/kv/txn")) {
		f->txns++;
		return holder_answer();
	}
	f->puts++; /* anything else would be a write (put, range, watch): none expected */
	return NULL;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	while (!f->stop) {
		struct pollfd p = {.fd = f->ls, .events = POLLIN};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int s = accept(f->ls, NULL, NULL);
		if (s < 0)
			continue;
		char buf[8192];
		size_t got = 0;
		/* one request per connection (Connection: close) */
		for (;;) {
			ssize_t n = recv(s, buf + got, sizeof(buf) - 1 - got, 0);
			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = '\0';
			char *end = strstr(buf, "\r\n\r\n");
			if (!end)
				continue;
			const char *cl = strcasestr(buf, "Content-Length:");
			size_t want = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
			if (got >= (size_t)(end + 4 - buf) + want)
				break;
		}
		char path[256] = "";
		sscanf(buf, "%*s %255s", path);
		const char *body = answer_for(f, path);
		char out[4608];
		int n = body ? snprintf(out, sizeof(out),
					"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
					"Connection: close\r\n\r\n%s",
					strlen(body), body)
			     : snprintf(out, sizeof(out), "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
		if (send(s, out, (size_t)n, MSG_NOSIGNAL) < 0) {
			/* the client gave up: it retries */
		}
		close(s);
	}
	return NULL;
}

static void test_duplicate_name_refused(void **state)
{
	(void)state;
	struct fake f = {0};
	f.ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	int one = 1;
	setsockopt(f.ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(f.ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f.ls, 16), 0);
	assert_int_equal(getsockname(f.ls, (struct sockaddr *)&a, &l), 0);
	f.port = ntohs(a.sin_port);
	(void)holder_answer(); /* made here: the fake's thread only reads it */
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, fake_main, &f), 0);

	struct fg_config *c;
	int evfd;
	struct cl_etcd *t = etcd_start(&c, "b", f.port, f.port, &evfd);
	struct cl_out o = {.kind = CL_OUT_LINE, .line = 2};
	snprintf(o.state, sizeof(o.state), "disabled");
	assert_int_equal(cl_etcd_push_out(t, &o), 0);
	struct cl_in m;
	/* the lease fact comes first, then the refusal */
	do
		assert_int_equal(wait_in(t, evfd, &m), 0);
	while (m.kind == CL_IN_LEASE);
	assert_int_equal(m.kind, CL_IN_DUPLICATE);
	assert_non_null(strstr(m.why, "lease 99"));
	assert_non_null(strstr(m.why, "\"pid\":1"));
	assert_int_equal(strstr(m.why, "fg1 ") == NULL, 1); /* the holder's value, not its envelope */
	/* it retries (500 ms apart) and stays refused: a second txn, no DOWN,
	 * no second DUPLICATE fact, and nothing written */
	struct cl_etcd_stats st;
	for (int i = 0; i < 100; i++) {
		cl_etcd_stats(t, &st);
		if (st.duplicate_refusals >= 2)
			break;
		usleep(50 * 1000);
	}
	assert_true(st.duplicate_refusals >= 2);
	while (cl_etcd_pop_in(t, &m, 1) == 1)
		assert_int_equal(m.kind, CL_IN_LEASE);
	cl_etcd_stop(t);
	f.stop = 1;
	pthread_join(th, NULL);
	close(f.ls);
	assert_true(f.txns >= 2);
	assert_int_equal(f.puts, 0);
	free(c);
}

/* Answers as etcd 3.4 gives them for a 2 s lease probed every 100 ms
 * (remaining time truncated to whole seconds), stale after 1 s. */
static void test_lease_judge(void **state)
{
	(void)state;
	struct cl_lease_view v = {.state = CL_PEER_UNPROVEN, .bound_ms = UINT64_MAX};
	/* a live holder: read 1 s left every time; a refresh is proven only
	 * once 1 s of answers passed without the value falling */
	uint64_t t = 10000;
	for (; t < 10900; t += 100)
		assert_false(cl_lease_judge(&v, 1, 2, 5, t, t + 5, 1));
	assert_int_equal(v.state, CL_PEER_UNPROVEN);
	for (; !cl_lease_judge(&v, 1, 2, 5, t, t + 5, 1); t += 100)
		assert_true(t < 11200);
	assert_int_equal(v.state, CL_PEER_FRESH);
	/* it stops refreshing: 0 s left is more than 1 s without a refresh */
	assert_false(cl_lease_judge(&v, 1, 2, 5, t + 100, t + 105, 1));
	assert_true(cl_lease_judge(&v, 0, 2, 5, t + 200, t + 205, 1));
	assert_int_equal(v.state, CL_PEER_STALE);
	assert_false(cl_lease_judge(&v, 0, 2, 5, t + 300, t + 305, 1));
	/* it refreshes again (same term): 1 s left where less than 1 s was */
	assert_true(cl_lease_judge(&v, 1, 2, 5, t + 400, t + 405, 1));
	assert_int_equal(v.state, CL_PEER_FRESH);

	/* stale, then a new leader extends every lease (2 s of 2 s, then 1 s
	 * in the new term): no refresh, it stays stale, then falls again */
	t = 20000;
	assert_true(cl_lease_judge(&v, 0, 2, 5, t, t + 5, 1));
	assert_false(cl_lease_judge(&v, 2, 2, 6, t + 100, t + 105, 1));
	assert_int_equal(v.state, CL_PEER_STALE);
	for (uint64_t u = t + 400; u < t + 1300; u += 100)
		assert_false(cl_lease_judge(&v, 1, 2, 6, u, u + 5, 1));
	assert_false(cl_lease_judge(&v, 0, 2, 6, t + 1400, t + 1405, 1));
	assert_int_equal(v.state, CL_PEER_STALE);
	/* the same with a live holder: 1 s left for more than 1 s proves it */
	t = 30000;
	assert_false(cl_lease_judge(&v, 2, 2, 7, t, t + 5, 1));
	bool back = false;
	for (uint64_t u = t + 100; u < t + 1300 && !back; u += 100)
		back = cl_lease_judge(&v, 1, 2, 7, u, u + 5, 1);
	assert_true(back);
	assert_int_equal(v.state, CL_PEER_FRESH);
	/* an extension while fresh changes nothing; a lease etcd no longer has
	 * (TTL -1, no grantedTTL) is stale */
	assert_false(cl_lease_judge(&v, 2, 2, 8, t + 2000, t + 2005, 1));
	assert_true(cl_lease_judge(&v, -1, 0, 8, t + 2100, t + 2105, 1));
	assert_int_equal(v.state, CL_PEER_STALE);

	/* a 3 s lease stale after 2 s: 1 s left is 1 s without a refresh, fine */
	struct cl_lease_view w = {.state = CL_PEER_FRESH, .bound_ms = UINT64_MAX};
	assert_false(cl_lease_judge(&w, 1, 3, 1, 0, 5, 2));
	assert_true(cl_lease_judge(&w, 0, 3, 1, 1000, 1005, 2));
}

struct bound_case {
	const char *keys; /* [cluster] keys besides node and endpoints */
	uint32_t want;
};

/* For each case, fn (a bound derived from [cluster]) of the parsed keys is want. */
static void check_bounds(const struct bound_case *cases, size_t n, uint32_t (*fn)(const struct fg_cluster_cfg *))
{
	struct fg_config_error err;
	struct fg_config *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	for (size_t i = 0; i < n; i++) {
		char text[512];
		snprintf(text, sizeof(text), "[cluster]\nnode = a\nendpoints = http://127.0.0.1:1\nkey_file = /k\n%s", cases[i].keys);
		fg_config_default(c);
		int r = fg_config_parse(c, text, "test", &err);
		if (r)
			fprintf(stderr, "%s: %s\n", cases[i].keys, err.reason);
		assert_int_equal(r, 0);
		assert_int_equal(fn(&c->cluster), cases[i].want);
	}
	free(c);
}

static void test_stale_bound(void **state)
{
	(void)state;
	static const struct bound_case cases[] = {
		{"", 2},                                            /* 1000 + 1000 ms -> 2 s < 3 s */
		{"lease_ttl_s = 2\nkeepalive_ms = 100\ntimeout_ms = 300\n", 1}, /* the test's */
		{"lease_ttl_s = 2\ntimeout_ms = 500\n", 0},         /* 666 + 500 ms -> 2 s: not < 2 s: off */
		{"lease_ttl_s = 1\ntimeout_ms = 300\n", 0},         /* a 1 s lease: nothing to compare */
		{"lease_ttl_s = 10\nstale_after_s = 5\n", 5},      /* 3333 + 1000 ms <= 5 s */
		{"lease_ttl_s = 3\nstale_after_s = 3\n", 0},        /* not shorter than the lease: off */
	};
	check_bounds(cases, sizeof(cases) / sizeof(cases[0]), cl_lease_stale_s);
}

static void test_beat_down(void **state)
{
	(void)state;
	struct cl_beat_view v = {.state = CL_BEAT_ALIVE, .last_ms = 1000};
	const uint64_t steady = 100; /* this node's own beats steady since long before */
	/* this node's own beats came back, each sent before 1000 + 650: not down,
	 * however late the check runs (a stalled watch proves nothing) */
	assert_false(cl_beat_down(&v, 0, steady, 650));
	assert_false(cl_beat_down(&v, 1000, steady, 650));
	assert_false(cl_beat_down(&v, 1649, steady, 650));
	/* one sent 650 ms after the peer's last beat came back first: down */
	assert_true(cl_beat_down(&v, 1650, steady, 650));
	/* nothing of our own back yet (steady 0): never */
	assert_false(cl_beat_down(&v, 1650, 0, 650));
	/* our own beats stalled too (an election): the silence counts from
	 * when they came back steadily, 1400 */
	assert_false(cl_beat_down(&v, 1650, 1400, 650));
	assert_false(cl_beat_down(&v, 2049, 1400, 650));
	assert_true(cl_beat_down(&v, 2050, 1400, 650));
	/* a beat of the peer after that restarts its clock */
	v.last_ms = 1700;
	assert_false(cl_beat_down(&v, 1650, steady, 650));
	assert_false(cl_beat_down(&v, 2349, steady, 650));
	assert_true(cl_beat_down(&v, 2350, steady, 650));
	/* reported once: a node already down is not down again */
	v.state = CL_BEAT_DOWN;
	assert_false(cl_beat_down(&v, 9999, steady, 650));
	/* never seen beating: judged from when it was noted (last_ms) alike */
	v = (struct cl_beat_view){.state = CL_BEAT_UNPROVEN, .last_ms = 500};
	assert_true(cl_beat_down(&v, 1150, steady, 650));
	/* no heartbeat configured: never */
	assert_false(cl_beat_down(&v, 99999, steady, 0));

	/* own beats back: steady while every 200 ms and quick */
	uint64_t proven = 0, st = 0;
	cl_beat_steady(&proven, &st, 1000, 1005, 200);
	assert_int_equal(proven, 1000);
	assert_int_equal(st, 1000); /* the first */
	cl_beat_steady(&proven, &st, 1200, 1210, 200);
	cl_beat_steady(&proven, &st, 1450, 1460, 200); /* 250 ms apart: a late send, still steady */
	assert_int_equal(st, 1000);
	cl_beat_steady(&proven, &st, 1300, 1470, 200); /* an older one late: nothing */
	assert_int_equal(proven, 1450);
	cl_beat_steady(&proven, &st, 1900, 1910, 200); /* 450 ms since the last: a beat failed */
	assert_int_equal(st, 1900);
	cl_beat_steady(&proven, &st, 2100, 2350, 200); /* 250 ms to come back: still steady */
	assert_int_equal(st, 1900);
	cl_beat_steady(&proven, &st, 2300, 2750, 200); /* 450 ms to come back: etcd slow */
	assert_int_equal(st, 2300);
	assert_int_equal(proven, 2300);
	cl_beat_steady(&proven, &st, 2500, 2510, 200);
	assert_int_equal(st, 2300);

	static const struct bound_case cases[] = {
		{"", 650},                              /* 3 * 200 + 50 */
		{"beat_ms = 100\n", 350},
		{"beat_ms = 200\nbeat_down_ms = 400\n", 400},
		{"beat_ms = 0\nbeat_down_ms = 400\n", 0}, /* off */
	};
	check_bounds(cases, sizeof(cases) / sizeof(cases[0]), cl_beat_down_ms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_down_and_bounded_queue),
		cmocka_unit_test(test_duplicate_name_refused),
		cmocka_unit_test(test_lease_judge),
		cmocka_unit_test(test_stale_bound),
		cmocka_unit_test(test_beat_down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

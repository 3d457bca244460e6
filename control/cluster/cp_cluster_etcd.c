/* cp_cluster_etcd.c - the cluster thread: etcd v3 over its JSON gateway with
 * libcurl (see cp_cluster_etcd.h for the contract).
 *
 * Why a thread and not curl's multi socket API driven from the io_uring
 * loop: the watch is a long-lived streaming response and every other request
 * is a short request/response; with a dedicated thread each step of the
 * (re)connection sequence reads as straight-line code (grant, put, range,
 * watch) and a slow or dead etcd member can only ever stall this thread,
 * never the loop that serves TLS and the operator. The thread talks to the
 * loop only through two mutex-guarded rings of fixed-size facts and an
 * eventfd (the loop's cp_poll), the same shape as the dataplane boundary.
 * libcurl runs one multi handle here: the watch transfer and at most one
 * request at a time share it, so the watch keeps streaming while a request
 * waits.
 *
 * Connection sequence (every (re)connect, on endpoint[cur]):
 *   1. lease: keepalive the one we hold, or grant a new one (TTL lease_ttl_s)
 *   2. claim nodes/<node> on the lease: a txn that creates it only if absent
 *      (or finds it already on our lease); a key on another lease is a
 *      second live node with this name: CL_IN_DUPLICATE, nothing written,
 *      retried every 500 ms (a restarted node gets in once its old lease
 *      expired)
 *   3. the loop's queued changes (made while etcd was away) are sent, then
 *      points/<node> on the lease
 *   4. range the whole prefix -> CL_IN_UP, one CL_IN_* per key, CL_IN_SNAP_END
 *   5. watch the prefix from the snapshot's revision + 1
 * Then: queued changes as they come, a keepalive every keepalive_ms (default
 * ttl/3; a short one makes a killed node's lease expire sooner), and, with a
 * staleness bound (cl_etcd_stale_s), a lease probe of every other node as
 * often: /v3/lease/timetolive on the lease its nodes/ key is on (a read:
 * the leader answers from its lessor, nothing goes through Raft). A lease
 * whose remaining TTL says it was not refreshed for more than the bound is
 * reported stale (CL_IN_PEER_LEASE) before etcd expires it; a refresh after
 * that is reported only when the answers prove one (probe_peers: a new etcd
 * leader extends every lease, which looks like a refresh and is not one).
 * A probe that fails is counted and changes nothing:
 * the lease's expiry (the watch's delete) still reports the node. Any failure
 * (curl error, HTTP status != 200, timeout_ms, the watch ending) tears the
 * watch down and restarts at step 1 on the next endpoint; CL_IN_DOWN is
 * reported once every endpoint refused the connection in a row, or nothing
 * succeeded for lost_after_ms (slow or leaderless etcd), so one member going
 * away (the leader included: its election is shorter) changes nothing the
 * loop sees.
 *
 * Thread: the cluster thread, except the functions the header marks. */
#include "cp_cluster_etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cp_log.h"

struct buf {
	char *p;
	size_t len, cap;
};

struct cl_etcd {
	const struct fg_config *cfg;
	const struct fg_cluster_cfg *cc;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	int evfd;
	CURLM *multi;
	/* queues (lock) */
	pthread_mutex_t lock;
	pthread_cond_t in_space;
	struct cl_out out[CL_QUEUE_MAX];
	unsigned out_head, out_n;
	struct cl_in in[CL_QUEUE_MAX];
	unsigned in_head, in_n;
	struct cl_etcd_stats st;
	char endpoint_now[64];
	/* thread-only */
	unsigned cur;            /* endpoint index */
	int64_t lease_id;
	int64_t revision;        /* last revision applied */
	uint64_t last_ok;        /* mono_ms of the last request that succeeded */
	CURL *watch;
	struct curl_slist *hdrs;
	struct buf wbuf;         /* watch stream bytes not yet a whole line */
	bool watch_created, watch_broken;
	char *watch_body;
	char prefix_b64[128], end_b64[128];
	/* the other nodes' leases, from nodes/ keys (snapshot and watch) */
	struct {
		char name[FG_CLUSTER_NAME_MAX];
		int64_t lease;
		struct cl_lease_view v;
		uint32_t beat_ms;        /* its heartbeat period (its nodes/ value); 0: it does not beat */
		struct cl_beat_view bv;
	} peer[CL_PEERS_MAX];
	unsigned n_peers;
	uint32_t stale_s;        /* cl_etcd_stale_s; 0: no probes */
	bool probe_failing;      /* the last probe failed (logged once per run of failures) */
	/* this node's heartbeat: a put of beats/<node> on the lease every
	 * beat_ms, its own transfer in the multi (never queued behind a request) */
	uint32_t beat_down_ms;   /* cl_etcd_beat_down_ms; 0: no heartbeat */
	bool beating;            /* joined on the lease we hold (name claimed): beats go out, also while
				  * reconnecting (a beat needs the lease, not the watch) */
	CURL *beat_h;            /* the beat in flight, or NULL */
	struct buf beat_buf;
	uint64_t beat_seq, beat_next_ms, beat_sent_ms;
	uint64_t beat_proven_ms; /* send time of this node's latest beat seen back through the watch */
	uint64_t beat_steady_ms; /* since when (a send time) they come back steadily (cl_beat_steady) */
	bool beat_failing;       /* the last beat failed (logged once per run of failures) */
};

uint32_t cl_etcd_stale_s(const struct fg_cluster_cfg *cc)
{
	uint64_t ka = cc->keepalive_ms ? cc->keepalive_ms : cc->lease_ttl_s * 1000u / 3u;
	uint64_t s = cc->stale_after_s ? cc->stale_after_s : (ka + cc->timeout_ms + 999u) / 1000u;
	return s < cc->lease_ttl_s ? (uint32_t)s : 0;
}

uint32_t cl_etcd_beat_down_ms(const struct fg_cluster_cfg *cc)
{
	if (!cc->beat_ms)
		return 0;
	return cc->beat_down_ms ? cc->beat_down_ms : 3u * cc->beat_ms + 50u;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- queues ---------------------------------------------------------- */

int cl_etcd_push_out(struct cl_etcd *t, const struct cl_out *m)
{
	pthread_mutex_lock(&t->lock);
	if (t->out_n == CL_QUEUE_MAX) {
		t->st.out_dropped++;
		pthread_mutex_unlock(&t->lock);
		return -ENOBUFS;
	}
	t->out[(t->out_head + t->out_n++) % CL_QUEUE_MAX] = *m;
	pthread_mutex_unlock(&t->lock);
	curl_multi_wakeup(t->multi);
	return 0;
}

static bool out_peek(struct cl_etcd *t, struct cl_out *m)
{
	pthread_mutex_lock(&t->lock);
	bool have = t->out_n > 0;
	if (have)
		*m = t->out[t->out_head];
	pthread_mutex_unlock(&t->lock);
	return have;
}

static void out_drop_head(struct cl_etcd *t)
{
	pthread_mutex_lock(&t->lock);
	if (t->out_n) {
		t->out_head = (t->out_head + 1) % CL_QUEUE_MAX;
		t->out_n--;
	}
	pthread_mutex_unlock(&t->lock);
}

/* Waits for room: the loop always drains, and a full ring means the loop
 * is behind, so the thread (never the loop) waits. */
static void in_push(struct cl_etcd *t, const struct cl_in *m)
{
	pthread_mutex_lock(&t->lock);
	while (t->in_n == CL_QUEUE_MAX && !atomic_load(&t->stop))
		pthread_cond_wait(&t->in_space, &t->lock);
	if (t->in_n == CL_QUEUE_MAX) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	bool edge = t->in_n == 0;
	t->in[(t->in_head + t->in_n++) % CL_QUEUE_MAX] = *m;
	pthread_mutex_unlock(&t->lock);
	if (edge) {
		uint64_t one = 1;
		if (write(t->evfd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is already non-zero, the loop will wake */
		}
	}
}

unsigned cl_etcd_pop_in(struct cl_etcd *t, struct cl_in *out, unsigned max)
{
	uint64_t v;
	if (read(t->evfd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing signalled; drain anyway */
	}
	pthread_mutex_lock(&t->lock);
	unsigned n = 0;
	while (n < max && t->in_n) {
		out[n++] = t->in[t->in_head];
		t->in_head = (t->in_head + 1) % CL_QUEUE_MAX;
		t->in_n--;
	}
	bool more = t->in_n > 0;
	pthread_cond_signal(&t->in_space);
	pthread_mutex_unlock(&t->lock);
	if (more) {
		uint64_t one = 1;
		if (write(t->evfd, &one, sizeof(one)) < 0) {
			/* already signalled */
		}
	}
	return n;
}

void cl_etcd_stats(struct cl_etcd *t, struct cl_etcd_stats *out)
{
	pthread_mutex_lock(&t->lock);
	*out = t->st;
	pthread_mutex_unlock(&t->lock);
}

void cl_etcd_endpoint(struct cl_etcd *t, char *buf, size_t len)
{
	pthread_mutex_lock(&t->lock);
	snprintf(buf, len, "%s", t->endpoint_now);
	pthread_mutex_unlock(&t->lock);
}

static void stat_add(struct cl_etcd *t, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&t->lock);
	*field += n;
	pthread_mutex_unlock(&t->lock);
}

/* ---- base64 (etcd's JSON gateway carries keys and values as base64) ---- */

static int b64_enc(const void *in, size_t n, char *out, size_t cap)
{
	if (4 * ((n + 2) / 3) + 1 > cap)
		return -ENOSPC;
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	return 0;
}

/* Decode into out (NUL-terminated); -EINVAL when not base64 or too long. */
static int b64_dec(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in);
	if (n % 4 || (n / 4) * 3 + 1 > cap)
		return -EINVAL;
	int r = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)in, (int)n);
	if (r < 0)
		return -EINVAL;
	if (n && in[n - 1] == '=')
		r--;
	if (n > 1 && in[n - 2] == '=')
		r--;
	out[r] = '\0';
	return r;
}

static json_t *jb64(const char *s)
{
	char b[1024];
	if (b64_enc(s, strlen(s), b, sizeof(b)) < 0)
		return json_string("");
	return json_string(b);
}

/* ---- HTTP ------------------------------------------------------------ */

static size_t buf_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		if (cap > (8u << 20))
			return 0; /* an answer this big is not one of ours: fail the transfer */
		char *p = realloc(b->p, cap);
		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, ptr, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

static CURL *easy_new(struct cl_etcd *t, const char *path, const char *body, struct buf *b, long timeout_ms)
{
	char url[128];
	CURL *h = curl_easy_init();
	if (!h)
		return NULL;
	snprintf(url, sizeof(url), "%s%s", t->cc->endpoint[t->cur], path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)t->cc->timeout_ms);
	if (timeout_ms)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, t->cc->tls ? "https" : "http");
	if (t->cc->tls) {
		if (t->cc->ca[0])
			curl_easy_setopt(h, CURLOPT_CAINFO, t->cc->ca);
		if (t->cc->cert[0]) {
			curl_easy_setopt(h, CURLOPT_SSLCERT, t->cc->cert);
			curl_easy_setopt(h, CURLOPT_SSLKEY, t->cc->key);
		}
	}
	return h;
}

static void watch_feed(struct cl_etcd *t);
static void beat_tick(struct cl_etcd *t);
static void beat_done(struct cl_etcd *t, CURLcode code);

/* Reap finished transfers; the watch ending is recorded as broken. Returns
 * true when `req` finished (*code set). */
static bool reap(struct cl_etcd *t, CURL *req, CURLcode *code)
{
	bool done = false;
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(t->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		if (m->easy_handle == t->watch) {
			t->watch_broken = true;
		} else if (t->beat_h && m->easy_handle == t->beat_h) {
			beat_done(t, m->data.result);
		} else if (m->easy_handle == req) {
			*code = m->data.result;
			done = true;
		}
	}
	return done;
}

/* Run the multi for up to wait_ms (woken early by curl_multi_wakeup or
 * socket activity); feeds the watch. */
static void pump(struct cl_etcd *t, int wait_ms)
{
	int running;
	curl_multi_perform(t->multi, &running);
	watch_feed(t);
	beat_tick(t);
	curl_multi_poll(t->multi, NULL, 0, wait_ms, NULL);
	curl_multi_perform(t->multi, &running);
	watch_feed(t);
	beat_tick(t);
}

/* One request on the current endpoint, the watch streaming meanwhile.
 * 0 with *out (caller json_decref) or -EIO / -ETIMEDOUT / -EPROTO. */
static int req(struct cl_etcd *t, const char *path, json_t *body, json_t **out)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	struct buf b = {0};
	CURL *h = easy_new(t, path, text, &b, (long)t->cc->timeout_ms);
	free(text);
	if (!h)
		return -ENOMEM;
	stat_add(t, &t->st.requests, 1);
	curl_multi_add_handle(t->multi, h);
	CURLcode code = CURLE_OK;
	int running;
	curl_multi_perform(t->multi, &running);
	while (!reap(t, h, &code)) {
		if (atomic_load(&t->stop)) {
			code = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		pump(t, 50);
	}
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(t->multi, h);
	curl_easy_cleanup(h);
	int r = 0;
	if (code != CURLE_OK) {
		cp_debug("cluster: %s%s: %s", t->cc->endpoint[t->cur], path, curl_easy_strerror(code));
		r = code == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : code == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
	} else if (status != 200) {
		cp_debug("cluster: %s%s: HTTP %ld: %.200s", t->cc->endpoint[t->cur], path, status, b.p ? b.p : "");
		r = -EPROTO;
	} else {
		json_error_t je;
		*out = json_loadb(b.p ? b.p : "", b.len, 0, &je);
		if (!*out)
			r = -EPROTO;
	}
	if (r < 0)
		stat_add(t, &t->st.request_failures, 1);
	else
		t->last_ok = mono_ms();
	free(b.p);
	return r;
}

static int64_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	if (json_is_integer(v))
		return json_integer_value(v);
	return 0;
}

/* ---- keys ------------------------------------------------------------ */

static void key_of(struct cl_etcd *t, char *out, size_t cap, const char *fmt, const char *arg)
{
	char tail[96];
	snprintf(tail, sizeof(tail), fmt, arg);
	snprintf(out, cap, "%s%s", t->cc->prefix, tail);
}

/* One kv (from a range or a watch event) -> a fact for the loop. */
/* nodes/<name> of another node put on a lease (or deleted: lease 0), with
 * the heartbeat period its value declares. */
static void peer_note(struct cl_etcd *t, const char *name, int64_t lease, uint32_t beat_ms)
{
	unsigned i;
	for (i = 0; i < t->n_peers; i++)
		if (strcmp(t->peer[i].name, name) == 0)
			break;
	if (!lease) {
		if (i < t->n_peers)
			t->peer[i] = t->peer[--t->n_peers];
		return;
	}
	if (i == t->n_peers) {
		if (t->n_peers == CL_PEERS_MAX)
			return; /* beyond 64 peers: their expiry alone reports them */
		t->n_peers++;
		snprintf(t->peer[i].name, sizeof(t->peer[i].name), "%s", name);
	} else if (t->peer[i].lease == lease) {
		t->peer[i].beat_ms = beat_ms;
		return;
	}
	t->peer[i].lease = lease;
	t->peer[i].v = (struct cl_lease_view){.state = CL_PEER_UNPROVEN, .bound_ms = UINT64_MAX};
	/* its silence counts from now: a node that died while this one was
	 * away (or before it started) is reported down by the same rule */
	t->peer[i].beat_ms = beat_ms;
	t->peer[i].bv = (struct cl_beat_view){.state = CL_BEAT_UNPROVEN, .last_ms = mono_ms()};
}

static void beat_seen(struct cl_etcd *t, const char *name, json_t *j)
{
	uint64_t now = mono_ms();
	if (strcmp(name, t->cc->node) == 0) {
		/* our own beat back: every event before it has come too */
		json_t *ms = json_object_get(j, "ms");
		if (json_is_integer(ms) && json_integer_value(ms) > 0)
			cl_beat_steady(&t->beat_proven_ms, &t->beat_steady_ms, (uint64_t)json_integer_value(ms), now,
				       t->cc->beat_ms);
		return;
	}
	unsigned i;
	for (i = 0; i < t->n_peers; i++)
		if (strcmp(t->peer[i].name, name) == 0)
			break;
	if (i == t->n_peers)
		return; /* no nodes/ key (yet): its claim comes before its first beat */
	stat_add(t, &t->st.beats_seen, 1);
	struct cl_beat_view *v = &t->peer[i].bv;
	int64_t gap = (int64_t)(now - v->last_ms);
	int was = v->state;
	v->last_ms = now;
	v->state = CL_BEAT_ALIVE;
	if (was == CL_BEAT_ALIVE)
		return;
	struct cl_in m = {.kind = CL_IN_PEER_BEAT, .lease_id = t->peer[i].lease, .stale = false, .gap_ms = gap};
	snprintf(m.node, sizeof(m.node), "%s", name);
	in_push(t, &m);
}

static void kv_to_in(struct cl_etcd *t, json_t *kv, bool deleted, bool snapshot)
{
	char key[256], val[1024];
	struct cl_in m;
	memset(&m, 0, sizeof(m));
	m.snapshot = snapshot;
	m.deleted = deleted;
	const char *kb = json_string_value(json_object_get(kv, "key"));
	const char *vb = json_string_value(json_object_get(kv, "value"));
	if (!kb || b64_dec(kb, key, sizeof(key)) < 0)
		return;
	val[0] = '\0';
	if (vb && b64_dec(vb, val, sizeof(val)) < 0)
		goto bad;
	size_t pl = strlen(t->cc->prefix);
	if (strncmp(key, t->cc->prefix, pl) != 0)
		return;
	const char *k = key + pl;
	json_t *j = NULL;
	if (!deleted && strcmp(k, "epoch") != 0) {
		json_error_t je;
		j = json_loads(val, 0, &je);
		if (!json_is_object(j)) {
			json_decref(j);
			goto bad;
		}
	}
#define JSTR(dst, name) snprintf(dst, sizeof(dst), "%s", json_string_value(json_object_get(j, name)) ? json_string_value(json_object_get(j, name)) : "")
	if (strcmp(k, "epoch") == 0) {
		char *end;
		unsigned long e = strtoul(val, &end, 10);
		if (deleted || !val[0] || *end || e > UINT32_MAX)
			goto bad;
		m.kind = CL_IN_EPOCH;
		m.epoch = (uint32_t)e;
	} else if (strcmp(k, "epoch_by") == 0) {
		/* who advanced it last: carried with the epoch fact */
		m.kind = CL_IN_EPOCH;
		if (deleted)
			return;
		json_t *to = json_object_get(j, "to");
		if (!json_is_integer(to)) {
			json_decref(j);
			goto bad;
		}
		m.epoch = (uint32_t)json_integer_value(to);
		JSTR(m.node, "node");
		JSTR(m.why, "why");
	} else if (strncmp(k, "lines/", 6) == 0) {
		char *end;
		unsigned long line = strtoul(k + 6, &end, 10);
		if (*end || line >= FG_LINES || deleted) {
			json_decref(j);
			goto bad;
		}
		m.kind = CL_IN_LINE;
		m.line = (unsigned)line;
		JSTR(m.state, "state");
		JSTR(m.event, "event");
		JSTR(m.node, "node");
		JSTR(m.why, "why");
		m.uid = (uint32_t)json_integer_value(json_object_get(j, "uid"));
	} else if (strncmp(k, "nodes/", 6) == 0 || strncmp(k, "points/", 7) == 0) {
		bool node = k[0] == 'n';
		m.kind = node ? CL_IN_NODE : CL_IN_POINTS;
		snprintf(m.node, sizeof(m.node), "%s", k + (node ? 6 : 7));
		if (!deleted) {
			if (node) {
				JSTR(m.layers, "layers");
			} else {
				m.alive = (uint8_t)json_integer_value(json_object_get(j, "alive"));
				m.judged = (uint8_t)json_integer_value(json_object_get(j, "judged"));
			}
			m.lease_id = jint(kv, "lease");
		}
		if (node && strcmp(m.node, t->cc->node) != 0)
			peer_note(t, m.node, deleted ? 0 : m.lease_id,
				  deleted ? 0 : (uint32_t)json_integer_value(json_object_get(j, "beat_ms")));
	} else if (strncmp(k, "beats/", 6) == 0) {
		/* heartbeats are the thread's own business: a fact for the loop
		 * only when a node stops or starts beating (beat_judge). A beat
		 * in a snapshot is an old one, and a delete is the lease's
		 * expiry, which the nodes/ key's delete reports. */
		if (!deleted && !snapshot)
			beat_seen(t, k + 6, j);
		json_decref(j);
		return;
	} else {
		json_decref(j);
		return; /* not ours (another tool under the prefix): ignored */
	}
#undef JSTR
	json_decref(j);
	in_push(t, &m);
	return;
bad:
	stat_add(t, &t->st.bad_values, 1);
	m.kind = CL_IN_BAD;
	snprintf(m.why, sizeof(m.why), "%.150s", key);
	in_push(t, &m);
}

/* ---- the watch stream -------------------------------------------------- */

static void watch_line(struct cl_etcd *t, const char *line, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(line, n, 0, &je);
	json_t *res = json_object_get(j, "result");
	if (!json_is_object(res)) {
		/* {"error": ...}: the stream is over */
		t->watch_broken = true;
		json_decref(j);
		return;
	}
	if (json_is_true(json_object_get(res, "created")))
		t->watch_created = true;
	if (json_is_true(json_object_get(res, "canceled")) || jint(res, "compact_revision")) {
		t->watch_broken = true; /* compacted past us: resync with a range */
		json_decref(j);
		return;
	}
	json_t *evs = json_object_get(res, "events");
	size_t i;
	json_t *ev;
	json_array_foreach(evs, i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *kv = json_object_get(ev, "kv");
		kv_to_in(t, kv, type && strcmp(type, "DELETE") == 0, false);
		int64_t rev = jint(kv, "mod_revision");
		if (rev > t->revision) {
			t->revision = rev;
			pthread_mutex_lock(&t->lock);
			t->st.revision = rev;
			pthread_mutex_unlock(&t->lock);
		}
		stat_add(t, &t->st.watch_events, 1);
	}
	json_decref(j);
}

static void watch_feed(struct cl_etcd *t)
{
	char *nl;
	size_t used = 0;
	if (!t->wbuf.p)
		return;
	while ((nl = memchr(t->wbuf.p + used, '\n', t->wbuf.len - used))) {
		size_t n = (size_t)(nl - (t->wbuf.p + used));
		if (n)
			watch_line(t, t->wbuf.p + used, n);
		used += n + 1;
	}
	if (used) {
		memmove(t->wbuf.p, t->wbuf.p + used, t->wbuf.len - used);
		t->wbuf.len -= used;
	}
}

static void watch_stop(struct cl_etcd *t)
{
	if (t->watch) {
		curl_multi_remove_handle(t->multi, t->watch);
		curl_easy_cleanup(t->watch);
		t->watch = NULL;
	}
	t->wbuf.len = 0;
	t->watch_created = false;
	t->watch_broken = false;
}

static int watch_start(struct cl_etcd *t)
{
	json_t *cr = json_pack("{s:s, s:s, s:s}", "key", t->prefix_b64, "range_end", t->end_b64, "start_revision", "0");
	char rev[32];
	snprintf(rev, sizeof(rev), "%" PRId64, t->revision + 1);
	json_object_set_new(cr, "start_revision", json_string(rev));
	json_t *body = json_pack("{s:o}", "create_request", cr);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	watch_stop(t);
	t->watch = easy_new(t, "/v3/watch", text, &t->wbuf, 0);
	free(text);
	if (!t->watch)
		return -ENOMEM;
	/* a stream: no overall timeout; a dead peer shows as a failed keepalive */
	curl_multi_add_handle(t->multi, t->watch);
	uint64_t deadline = mono_ms() + t->cc->timeout_ms;
	while (!t->watch_created && !t->watch_broken && mono_ms() < deadline && !atomic_load(&t->stop)) {
		CURLcode c;
		if (reap(t, NULL, &c))
			break;
		pump(t, 20);
	}
	if (!t->watch_created) {
		watch_stop(t);
		return -EIO;
	}
	return 0;
}

/* ---- requests ---------------------------------------------------------- */

static int lease_keepalive(struct cl_etcd *t)
{
	char id[32];
	snprintf(id, sizeof(id), "%" PRId64, t->lease_id);
	json_t *out;
	int r = req(t, "/v3/lease/keepalive", json_pack("{s:s}", "ID", id), &out);
	if (r < 0)
		return r;
	json_t *res = json_object_get(out, "result");
	int64_t ttl = jint(res, "TTL");
	json_decref(out);
	if (ttl <= 0) {
		t->lease_id = 0; /* expired while we were away: a new one */
		t->beating = false; /* until the name is claimed on the new lease */
		return -ENOENT;
	}
	stat_add(t, &t->st.keepalives, 1);
	struct cl_in m = {.kind = CL_IN_LEASE, .lease_id = t->lease_id, .ttl = ttl};
	in_push(t, &m);
	return 0;
}

static int lease_grant(struct cl_etcd *t)
{
	json_t *out;
	int r = req(t, "/v3/lease/grant", json_pack("{s:i}", "TTL", (int)t->cc->lease_ttl_s), &out);
	if (r < 0)
		return r;
	t->lease_id = jint(out, "ID");
	int64_t ttl = jint(out, "TTL");
	json_decref(out);
	if (!t->lease_id)
		return -EPROTO;
	stat_add(t, &t->st.leases_granted, 1);
	struct cl_in m = {.kind = CL_IN_LEASE, .lease_id = t->lease_id, .ttl = ttl};
	in_push(t, &m);
	return 0;
}

static json_t *put_op(const char *key, const char *val, int64_t lease)
{
	json_t *p = json_pack("{s:o, s:o}", "key", jb64(key), "value", jb64(val));
	if (lease) {
		char id[32];
		snprintf(id, sizeof(id), "%" PRId64, lease);
		json_object_set_new(p, "lease", json_string(id));
	}
	return p;
}

static int put(struct cl_etcd *t, const char *key, const char *val, int64_t lease)
{
	json_t *out;
	int r = req(t, "/v3/kv/put", put_op(key, val, lease), &out);
	if (r == 0)
		json_decref(out);
	return r;
}

/* Claim nodes/<node> on our lease: txn(compare create_revision == 0;
 * success put; failure range). 0 when the key is ours (created now, or
 * already on our lease: re-put), -EEXIST when another live lease holds it
 * (*holder: its value), or a request error. etcd serialises two nodes that
 * claim the same name at once: one creates, the other finds it. */
static int claim_node(struct cl_etcd *t, char *holder, size_t holder_len)
{
	char key[160], val[512];
	key_of(t, key, sizeof(key), "nodes/%s", t->cc->node);
	json_t *v = json_pack("{s:s, s:s, s:i, s:i}", "node", t->cc->node, "layers", t->cc->layers_text, "pid",
			      (int)getpid(), "beat_ms", (int)(t->beat_down_ms ? t->cc->beat_ms : 0));
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!s)
		return -ENOMEM;
	snprintf(val, sizeof(val), "%s", s);
	free(s);
	json_t *body = json_pack("{s:[{s:o, s:s, s:s, s:s}], s:[{s:o}], s:[{s:{s:o}}]}", "compare", "key", jb64(key),
				 "target", "CREATE", "result", "EQUAL", "create_revision", "0", "success", "requestPut",
				 put_op(key, val, t->lease_id), "failure", "requestRange", "key", jb64(key));
	json_t *out;
	int r = req(t, "/v3/kv/txn", body, &out);
	if (r < 0)
		return r;
	if (json_is_true(json_object_get(out, "succeeded"))) {
		json_decref(out);
		return 0;
	}
	json_t *kv = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(out, "responses"), 0),
								    "response_range"),
						    "kvs"),
				    0);
	int64_t lease = jint(kv, "lease");
	char other[512] = "";
	const char *vb = json_string_value(json_object_get(kv, "value"));
	if (vb && b64_dec(vb, other, sizeof(other)) < 0)
		other[0] = '\0';
	json_decref(out);
	if (!kv)
		return -EAGAIN; /* deleted between compare and range: claim again */
	if (lease == t->lease_id)
		return put(t, key, val, t->lease_id); /* ours (a reconnection on the same lease) */
	snprintf(holder, holder_len, "lease %" PRId64 ", %.300s", lease, other);
	return -EEXIST;
}

/* txn: compare value(epoch) == from (or absent) -> put epoch and epoch_by;
 * else range epoch. 1 won, 0 lost (*cur = etcd's epoch, or -1 absent). */
static int epoch_cas(struct cl_etcd *t, bool has_from, uint32_t from, uint32_t to, const char *why, int64_t *cur)
{
	char ek[160], bk[160], fs[16], ts[16], b64[64];
	key_of(t, ek, sizeof(ek), "%s", "epoch");
	key_of(t, bk, sizeof(bk), "%s", "epoch_by");
	snprintf(fs, sizeof(fs), "%u", from);
	snprintf(ts, sizeof(ts), "%u", to);
	json_t *cmp;
	if (has_from) {
		if (b64_enc(fs, strlen(fs), b64, sizeof(b64)) < 0)
			return -EINVAL;
		cmp = json_pack("{s:o, s:s, s:s, s:s}", "key", jb64(ek), "target", "VALUE", "result", "EQUAL", "value", b64);
	} else {
		cmp = json_pack("{s:o, s:s, s:s, s:s}", "key", jb64(ek), "target", "CREATE", "result", "EQUAL",
				"create_revision", "0");
	}
	json_t *by = json_pack("{s:s, s:s, s:i, s:i}", "node", t->cc->node, "why", why, "from", (json_int_t)from, "to",
			       (json_int_t)to);
	char *bys = json_dumps(by, JSON_COMPACT);
	json_decref(by);
	if (!bys) {
		json_decref(cmp);
		return -ENOMEM;
	}
	/* epoch_by first: a watcher sees who and why before the epoch moves */
	json_t *body = json_pack("{s:[o], s:[{s:o},{s:o}], s:[{s:{s:o}}]}", "compare", cmp, "success", "requestPut",
				 put_op(bk, bys, 0), "requestPut", put_op(ek, ts, 0), "failure", "requestRange", "key",
				 jb64(ek));
	free(bys);
	json_t *out;
	int r = req(t, "/v3/kv/txn", body, &out);
	if (r < 0)
		return r;
	if (json_is_true(json_object_get(out, "succeeded"))) {
		json_decref(out);
		stat_add(t, &t->st.cas_won, 1);
		return 1;
	}
	stat_add(t, &t->st.cas_lost, 1);
	*cur = -1;
	json_t *kvs = json_object_get(json_object_get(json_array_get(json_object_get(out, "responses"), 0),
						      "response_range"), "kvs");
	json_t *kv = json_array_get(kvs, 0);
	char val[32];
	const char *vb = json_string_value(json_object_get(kv, "value"));
	if (vb && b64_dec(vb, val, sizeof(val)) > 0)
		*cur = strtoll(val, NULL, 10);
	json_decref(out);
	return 0;
}

static int send_out(struct cl_etcd *t, const struct cl_out *m)
{
	char key[160], val[512];
	switch (m->kind) {
	case CL_OUT_LINE: {
		char ls[8];
		snprintf(ls, sizeof(ls), "%u", m->line);
		key_of(t, key, sizeof(key), "lines/%s", ls);
		json_t *v = json_pack("{s:s, s:s, s:i, s:s, s:s}", "state", m->state, "event", m->event, "uid",
				      (json_int_t)m->uid, "node", t->cc->node, "why", m->why);
		char *s = json_dumps(v, JSON_COMPACT);
		json_decref(v);
		if (!s)
			return -ENOMEM;
		snprintf(val, sizeof(val), "%s", s);
		free(s);
		if (!m->create_only)
			return put(t, key, val, 0);
		json_t *body = json_pack("{s:[{s:o, s:s, s:s, s:s}], s:[{s:o}]}", "compare", "key", jb64(key), "target",
					 "CREATE", "result", "EQUAL", "create_revision", "0", "success", "requestPut",
					 put_op(key, val, 0));
		json_t *out;
		int r = req(t, "/v3/kv/txn", body, &out);
		if (r == 0)
			json_decref(out);
		return r;
	}
	case CL_OUT_EPOCH: {
		bool has_from = m->has_from;
		uint32_t from = m->from;
		/* a few rounds: etcd may be behind this node (it advanced while
		 * etcd was away) or ahead (another node won: adopt theirs) */
		for (int round = 0; round < 4; round++) {
			int64_t cur = -1;
			int r = epoch_cas(t, has_from, from, m->to, m->why, &cur);
			if (r < 0)
				return r;
			if (r == 1)
				return 0;
			if (cur < 0) {
				has_from = false;
				continue;
			}
			if ((int32_t)((uint32_t)cur - m->to) >= 0) {
				/* another node advanced it as far or further: the
				 * watch brings theirs; this conflict counted once */
				return 0;
			}
			has_from = true;
			from = (uint32_t)cur;
		}
		return 0;
	}
	case CL_OUT_POINTS: {
		key_of(t, key, sizeof(key), "points/%s", t->cc->node);
		snprintf(val, sizeof(val), "{\"alive\":%u,\"judged\":%u}", m->alive, m->judged);
		return t->lease_id ? put(t, key, val, t->lease_id) : 0;
	}
	}
	return -EINVAL;
}

/* Send every queued change; stop at the first failure (it stays queued). */
static int drain_out(struct cl_etcd *t, struct cl_out *last_points)
{
	struct cl_out m;
	while (out_peek(t, &m)) {
		int r = send_out(t, &m);
		if (r < 0)
			return r;
		if (m.kind == CL_OUT_POINTS)
			*last_points = m;
		out_drop_head(t);
	}
	return 0;
}

static int snapshot(struct cl_etcd *t)
{
	json_t *out;
	int r = req(t, "/v3/kv/range", json_pack("{s:s, s:s}", "key", t->prefix_b64, "range_end", t->end_b64), &out);
	if (r < 0)
		return r;
	struct cl_in up = {.kind = CL_IN_UP};
	snprintf(up.why, sizeof(up.why), "%s", t->cc->endpoint[t->cur]);
	in_push(t, &up);
	t->revision = jint(json_object_get(out, "header"), "revision");
	pthread_mutex_lock(&t->lock);
	t->st.revision = t->revision;
	pthread_mutex_unlock(&t->lock);
	size_t i;
	json_t *kv;
	t->n_peers = 0; /* the snapshot lists every live node again; each is probed afresh */
	json_array_foreach(json_object_get(out, "kvs"), i, kv)
		kv_to_in(t, kv, false, true);
	json_decref(out);
	struct cl_in end = {.kind = CL_IN_SNAP_END, .revision = t->revision};
	in_push(t, &end);
	return 0;
}

/* What one timetolive answer proves (see cp_cluster_etcd.h).
 *
 * etcd answers TTL = the remaining time truncated to whole seconds (r >= 1:
 * remaining in [r, r+1); 0: in (-1, 1); -1: no such lease) and grantedTTL
 * g. Within one raft term the remaining time only falls, 1 s a second,
 * except when the holder refreshes it (back to g, read g-1); a new leader
 * extends every lease past g (read g or more: no information either way,
 * ignored). So:
 *  - stale: g - 1 - r >= stale_s, or the lease is gone: no refresh for more
 *    than stale_s seconds (an extension only raises r: never a false stale);
 *  - refreshed since an earlier answer of the same term (r1 received at
 *    recv1): r2 >= 1 and r2 s + (sent2 - recv1) >= r1 + 1 s, since without
 *    a refresh the remaining time at the second answer is below
 *    r1 + 1 s - (sent2 - recv1). bound_ms keeps the tightest r1 + 1 s + recv1.
 * A stale node is reported back only on such a proof; so is a node after a
 * snapshot (the loop may hold it stale). */
bool cl_lease_judge(struct cl_lease_view *v, int64_t ttl, int64_t granted, uint64_t term, uint64_t sent_ms,
		    uint64_t recv_ms, uint32_t stale_s)
{
	if (ttl >= 0 && granted > 0 && ttl >= granted)
		return false; /* extended by a new leader: says nothing */
	bool known = ttl >= 0 && granted > 0;
	bool stale = !known || granted - 1 - ttl >= (int64_t)stale_s;
	bool refreshed = false;
	if (known) {
		if (term != v->term) {
			v->term = term; /* answers of an earlier term may predate an extension */
			v->bound_ms = UINT64_MAX;
		}
		refreshed = !stale && ttl >= 1 && v->bound_ms != UINT64_MAX && (uint64_t)ttl * 1000u + sent_ms >= v->bound_ms;
		uint64_t bound = (uint64_t)(ttl + 1) * 1000u + recv_ms;
		if (bound < v->bound_ms)
			v->bound_ms = bound;
	}
	int next = stale ? CL_PEER_STALE : v->state == CL_PEER_FRESH || refreshed ? CL_PEER_FRESH : v->state;
	if (next == v->state)
		return false;
	v->state = next;
	return true;
}

/* One round of lease probes over every other node (reads only). A probe
 * that fails ends the round, counted, and changes nothing. The table may
 * change while a request waits (the watch is fed meanwhile), so each answer
 * is matched to its node by name and lease again. */
static void probe_peers(struct cl_etcd *t)
{
	for (unsigned i = 0; i < t->n_peers && !atomic_load(&t->stop); i++) {
		char name[FG_CLUSTER_NAME_MAX], id[32];
		int64_t lease = t->peer[i].lease;
		snprintf(name, sizeof(name), "%s", t->peer[i].name);
		snprintf(id, sizeof(id), "%" PRId64, lease);
		json_t *out;
		stat_add(t, &t->st.lease_probes, 1);
		uint64_t sent = mono_ms();
		int r = req(t, "/v3/lease/timetolive", json_pack("{s:s}", "ID", id), &out);
		uint64_t recv = mono_ms();
		if (r < 0) {
			stat_add(t, &t->st.lease_probe_failures, 1);
			if (!t->probe_failing)
				cp_warn("cluster: etcd %s: lease probe of node %s failed (%s): a lost node is seen only "
					"when its lease expires until probes answer again",
					t->cc->endpoint[t->cur], name, strerror(-r));
			t->probe_failing = true;
			return;
		}
		if (t->probe_failing)
			cp_info("cluster: etcd %s: lease probes answer again", t->cc->endpoint[t->cur]);
		t->probe_failing = false;
		/* TTL 0 is left out of the JSON; -1 and no grantedTTL: no such lease */
		int64_t ttl = jint(out, "TTL"), granted = jint(out, "grantedTTL");
		uint64_t term = (uint64_t)jint(json_object_get(out, "header"), "raft_term");
		json_decref(out);
		unsigned j;
		for (j = 0; j < t->n_peers; j++)
			if (strcmp(t->peer[j].name, name) == 0 && t->peer[j].lease == lease)
				break;
		if (j == t->n_peers)
			continue; /* its key went (or moved to another lease) meanwhile */
		if (!cl_lease_judge(&t->peer[j].v, ttl, granted, term, sent, recv, t->stale_s))
			continue;
		bool stale = t->peer[j].v.state == CL_PEER_STALE;
		struct cl_in m = {.kind = CL_IN_PEER_LEASE, .lease_id = lease, .ttl = ttl, .granted = granted,
				  .stale = stale};
		snprintf(m.node, sizeof(m.node), "%s", name);
		in_push(t, &m);
	}
}

/* ---- heartbeats (docs/cluster.md "Heartbeats") ------------------------- */

static void beat_abort(struct cl_etcd *t)
{
	if (!t->beat_h)
		return;
	curl_multi_remove_handle(t->multi, t->beat_h);
	curl_easy_cleanup(t->beat_h);
	t->beat_h = NULL;
	t->beat_buf.len = 0;
}

/* A beat finished (reap). A failed one is counted and logged once per run
 * of failures; nothing else: the next one goes out on time. */
static void beat_done(struct cl_etcd *t, CURLcode code)
{
	long status = 0;
	curl_easy_getinfo(t->beat_h, CURLINFO_RESPONSE_CODE, &status);
	bool ok = code == CURLE_OK && status == 200;
	if (ok) {
		if (t->beat_failing)
			cp_info("cluster: etcd %s: heartbeats go through again", t->cc->endpoint[t->cur]);
		t->beat_failing = false;
	} else {
		stat_add(t, &t->st.beat_failures, 1);
		if (!t->beat_failing)
			cp_warn("cluster: etcd %s: a heartbeat failed (%s, HTTP %ld): the others may report this node "
				"down until one goes through",
				t->cc->endpoint[t->cur], code != CURLE_OK ? curl_easy_strerror(code) : "answered", status);
		t->beat_failing = true;
	}
	beat_abort(t);
}

static void beat_send(struct cl_etcd *t, uint64_t now)
{
	char key[160], val[96];
	key_of(t, key, sizeof(key), "beats/%s", t->cc->node);
	/* ms: this node's monotonic clock at sending, read back by this node
	 * only (beat_seen: how recent the watch is proven to be) */
	snprintf(val, sizeof(val), "{\"seq\":%" PRIu64 ",\"ms\":%" PRIu64 "}", ++t->beat_seq, now);
	json_t *body = put_op(key, val, t->lease_id);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return;
	t->beat_buf.len = 0;
	/* a beat that hangs (a member partitioned away, no leader) must not hold
	 * back the next one for a whole timeout_ms: two periods at most */
	uint64_t tmo = 2ull * t->cc->beat_ms < t->cc->timeout_ms ? 2ull * t->cc->beat_ms : t->cc->timeout_ms;
	t->beat_h = easy_new(t, "/v3/kv/put", text, &t->beat_buf, (long)tmo);
	free(text);
	if (!t->beat_h)
		return;
	curl_multi_add_handle(t->multi, t->beat_h);
	t->beat_sent_ms = now;
	t->beat_next_ms = now + t->cc->beat_ms;
	stat_add(t, &t->st.beats_sent, 1);
}

/* Report every beating peer whose silence is proven (cl_beat_down). */
static void beat_judge(struct cl_etcd *t, uint64_t now)
{
	for (unsigned i = 0; i < t->n_peers; i++) {
		struct cl_beat_view *v = &t->peer[i].bv;
		if (!t->peer[i].beat_ms || !cl_beat_down(v, t->beat_proven_ms, t->beat_steady_ms, t->beat_down_ms))
			continue;
		v->state = CL_BEAT_DOWN;
		struct cl_in m = {.kind = CL_IN_PEER_BEAT, .lease_id = t->peer[i].lease, .stale = true,
				  .gap_ms = (int64_t)(now - v->last_ms)};
		snprintf(m.node, sizeof(m.node), "%s", t->peer[i].name);
		in_push(t, &m);
	}
}

/* When beat_tick has something to do next (UINT64_MAX: nothing before a
 * transfer ends): the next beat, or a peer's silence reaching the bound.
 * With a beat in flight, its end wakes the thread. */
static uint64_t beat_next_due(struct cl_etcd *t, uint64_t now)
{
	if (!t->beat_down_ms || !t->beating || t->beat_h)
		return UINT64_MAX;
	uint64_t next = t->beat_next_ms;
	for (unsigned i = 0; i < t->n_peers; i++) {
		uint64_t at = cl_beat_from(&t->peer[i].bv, t->beat_steady_ms) + t->beat_down_ms;
		if (t->peer[i].beat_ms && t->peer[i].bv.state != CL_BEAT_DOWN && at > now && at < next)
			next = at;
	}
	return next;
}

/* From pump: send the beat when due, or at once when a peer's silence has
 * reached the bound and no beat sent since could prove it (so the proof
 * comes one round trip after the bound, not up to a beat period later);
 * then judge. */
static void beat_tick(struct cl_etcd *t)
{
	if (!t->beat_down_ms)
		return;
	uint64_t now = mono_ms();
	if (t->beating && !t->beat_h && t->lease_id) {
		bool due = now >= t->beat_next_ms;
		for (unsigned i = 0; !due && i < t->n_peers; i++) {
			const struct cl_beat_view *v = &t->peer[i].bv;
			uint64_t at = cl_beat_from(v, t->beat_steady_ms) + t->beat_down_ms;
			due = t->peer[i].beat_ms && v->state != CL_BEAT_DOWN && now >= at && t->beat_sent_ms < at;
		}
		if (due)
			beat_send(t, now);
	}
	beat_judge(t, now);
}

static int connect_once(struct cl_etcd *t, struct cl_out *last_points, char *holder, size_t holder_len)
{
	int r;
	if (t->lease_id && (r = lease_keepalive(t)) < 0 && r != -ENOENT)
		return r;
	if (!t->lease_id && (r = lease_grant(t)) < 0)
		return r;
	/* the name first: a duplicate writes nothing (not even its queue) */
	if ((r = claim_node(t, holder, holder_len)) < 0)
		return r;
	if ((r = drain_out(t, last_points)) < 0)
		return r;
	if ((r = send_out(t, last_points)) < 0)
		return r;
	if ((r = snapshot(t)) < 0)
		return r;
	return watch_start(t);
}

static void *thread_main(void *arg)
{
	struct cl_etcd *t = arg;
	bool up = false, down_reported = false;
	unsigned fails = 0, refused = 0;
	uint64_t next_ka = 0, next_probe = 0;
	t->last_ok = mono_ms();
	uint64_t ka_ms = t->cc->keepalive_ms ? t->cc->keepalive_ms : t->cc->lease_ttl_s * 1000u / 3u;
	bool dup_reported = false;
	char holder[400];
	struct cl_out last_points = {.kind = CL_OUT_POINTS};

	while (!atomic_load(&t->stop)) {
		if (!up) {
			pthread_mutex_lock(&t->lock);
			snprintf(t->endpoint_now, sizeof(t->endpoint_now), "%s", t->cc->endpoint[t->cur]);
			pthread_mutex_unlock(&t->lock);
			holder[0] = '\0';
			int r = connect_once(t, &last_points, holder, sizeof(holder));
			if (r == -EEXIST) {
				t->beating = false; /* a duplicate writes nothing */
				/* etcd answers: not lost, but this node may not
				 * join; the same endpoint is asked again shortly */
				if (!dup_reported) {
					struct cl_in m = {.kind = CL_IN_DUPLICATE};
					snprintf(m.why, sizeof(m.why), "%.150s", holder);
					in_push(t, &m);
					dup_reported = true;
				}
				stat_add(t, &t->st.duplicate_refusals, 1);
				fails = 0;
				refused = 0;
				pump(t, 500);
				continue;
			}
			if (r == 0) {
				dup_reported = false;
				if (fails || down_reported)
					stat_add(t, &t->st.reconnects, 1);
				up = true;
				fails = 0;
				refused = 0;
				down_reported = false;
				next_ka = mono_ms() + ka_ms;
				next_probe = 0;
				t->beating = true;
				t->beat_next_ms = 0; /* at once: the others see this node beating again */
				cp_info("cluster: etcd %s: connected, watching %s from revision %" PRId64,
					t->cc->endpoint[t->cur], t->cc->prefix, t->revision + 1);
				continue;
			}
			watch_stop(t);
			fails++;
			refused = r == -ECONNREFUSED ? refused + 1 : 0;
			t->cur = (t->cur + 1) % t->cc->n_endpoints;
			/* Lost: every endpoint refused the connection in a row
			 * (nothing listens: no reason to wait), or nothing
			 * succeeded for a lease TTL (slow or leaderless: an
			 * election after the leader's loss is shorter; and by
			 * then the others have written this node off too). */
			if (!down_reported && (refused >= t->cc->n_endpoints ||
					       mono_ms() - t->last_ok >= t->cc->lost_after_ms)) {
				struct cl_in m = {.kind = CL_IN_DOWN};
				snprintf(m.why, sizeof(m.why), "no etcd endpoint answered (%u tries, last: %s)", fails,
					 strerror(-r));
				in_push(t, &m);
				down_reported = true;
			}
			/* every endpoint failed: back off a little before the next round */
			if (fails % t->cc->n_endpoints == 0)
				pump(t, 100);
			continue;
		}
		int r = drain_out(t, &last_points);
		if (r == 0 && mono_ms() >= next_ka) {
			r = lease_keepalive(t);
			next_ka = mono_ms() + ka_ms;
		}
		if (r == 0 && t->stale_s && mono_ms() >= next_probe) {
			next_probe = mono_ms() + ka_ms;
			probe_peers(t);
		}
		if (r == 0 && t->watch_broken) {
			stat_add(t, &t->st.watch_restarts, 1);
			r = -EPIPE;
		}
		if (r < 0) {
			cp_warn("cluster: etcd %s: %s; trying the next endpoint", t->cc->endpoint[t->cur],
				r == -ENOENT ? "our lease expired" : r == -EPIPE ? "the watch ended" : strerror(-r));
			watch_stop(t);
			up = false;
			/* beats go on while reconnecting (on the next endpoint): a
			 * member going away must not silence this node for the
			 * others; a lost lease stops them (lease_keepalive) */
			t->cur = (t->cur + 1) % t->cc->n_endpoints;
			continue;
		}
		uint64_t now = mono_ms(), next = t->stale_s && next_probe < next_ka ? next_probe : next_ka;
		uint64_t nb = beat_next_due(t, now);
		if (nb < next)
			next = nb;
		pump(t, next > now ? (int)(next - now < 100 ? next - now : 100) : 0);
		CURLcode unused;
		(void)reap(t, NULL, &unused); /* the watch ending is noticed at once, not at the next request */
	}
	t->beating = false;
	beat_abort(t);
	/* clean stop: revoke the lease so the others see this node leave at once */
	if (up && t->lease_id) {
		char id[32];
		json_t *out;
		snprintf(id, sizeof(id), "%" PRId64, t->lease_id);
		atomic_store(&t->stop, false); /* req() checks it; one last request */
		if (req(t, "/v3/lease/revoke", json_pack("{s:s}", "ID", id), &out) == 0)
			json_decref(out);
		atomic_store(&t->stop, true);
	}
	watch_stop(t);
	return NULL;
}

int cl_etcd_start(struct cl_etcd **out, const struct fg_config *cfg, int *evfd, char *why, size_t why_len)
{
	static bool global_ok;
	if (!global_ok) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(why, why_len, "curl_global_init failed");
			return -EIO;
		}
		global_ok = true;
	}
	struct cl_etcd *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	t->cfg = cfg;
	t->cc = &cfg->cluster;
	t->stale_s = cl_etcd_stale_s(t->cc);
	t->beat_down_ms = cl_etcd_beat_down_ms(t->cc);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->in_space, NULL);
	t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	t->multi = curl_multi_init();
	t->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	char end[72];
	size_t pl = strlen(t->cc->prefix);
	memcpy(end, t->cc->prefix, pl + 1);
	end[pl - 1]++; /* '/' + 1: every key under the prefix */
	if (t->evfd < 0 || !t->multi || !t->hdrs || b64_enc(t->cc->prefix, pl, t->prefix_b64, sizeof(t->prefix_b64)) < 0 ||
	    b64_enc(end, pl, t->end_b64, sizeof(t->end_b64)) < 0) {
		snprintf(why, why_len, "cannot set up the etcd client (eventfd/curl)");
		cl_etcd_stop(t);
		return -ENOMEM;
	}
	/* The thread inherits the loop's mask (SIGINT/SIGTERM/SIGHUP blocked for
	 * the signalfds); cp_harden's per-thread privilege drop signal must
	 * reach it, so nothing more is blocked. */
	int r = pthread_create(&t->thread, NULL, thread_main, t);
	if (r != 0) {
		snprintf(why, why_len, "cannot start the cluster thread: %s", strerror(r));
		cl_etcd_stop(t);
		return -r;
	}
	pthread_setname_np(t->thread, "fg-cluster");
	t->started = true;
	*evfd = t->evfd;
	*out = t;
	return 0;
}

void cl_etcd_stop(struct cl_etcd *t)
{
	if (!t)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->lock);
		atomic_store(&t->stop, true);
		pthread_cond_broadcast(&t->in_space);
		pthread_mutex_unlock(&t->lock);
		curl_multi_wakeup(t->multi);
		pthread_join(t->thread, NULL);
	}
	if (t->multi)
		curl_multi_cleanup(t->multi);
	curl_slist_free_all(t->hdrs);
	free(t->wbuf.p);
	free(t->beat_buf.p);
	if (t->evfd >= 0)
		close(t->evfd);
	pthread_cond_destroy(&t->in_space);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* cp_cluster_etcd.c - the cluster thread: this node's membership in the
 * fleet's etcd (see cp_cluster_etcd.h for the contract).
 *
 * Why a thread and not curl's multi socket API driven from the io_uring
 * loop: the watches are long-lived streaming responses and every other
 * request is a short request/response; with a dedicated thread each step of
 * the (re)connection sequence reads as straight-line code (grant, put,
 * range, watch) and a slow or dead etcd member can only ever stall this
 * thread, never the loop that serves TLS and the operator. The thread talks
 * to the loop only through two mutex-guarded rings of fixed-size facts and
 * an eventfd (cl_queue.h, the loop's cp_poll), the same shape as the
 * dataplane boundary. Every byte to etcd goes through the transport
 * (cl_http.h): the two watch streams, the heartbeat and at most one request
 * at a time share its multi handle, so the watches keep streaming while a
 * request waits. The transport hands back what is this file's through the
 * hooks it is given (on_idle: the heartbeat's timers; on_done: the beat's
 * end; on_event: a watch event); it never calls into this file by name.
 *
 * Trust: etcd is storage, not an authority (docs/cluster.md "Authenticated
 * values"). Every value this thread writes is an envelope (cl_value.h)
 * carrying the fleet key's MAC over the key, the value, this node's name,
 * its lease and the key's (create_revision, version) once written; every
 * write is a compare-and-swap on that version, so the binding holds. A
 * value read is a fact for the loop only when (1) its MAC verifies, (2) it
 * sits at the version it was written for (no replay), (3) the writer is
 * bound to its lease: a key on a lease (nodes/, points/, beats/, down/)
 * is on the lease of the node it names; a line or the epoch names a node
 * whose nodes/ key is on the lease it names (in a snapshot, a writer that
 * is no longer live is accepted: line states outlive their writer), and
 * (4) the epoch is the last one plus one. Anything else is counted by
 * reason and logged at most once a second with its key; keys outside the
 * schema are ignored and counted.
 *
 * Connection sequence (every (re)connect, on endpoint[cur]):
 *   0. with [cluster] user: authenticate (a token for every request)
 *   1. lease: keepalive the one we hold, or grant a new one (TTL lease_ttl_s)
 *   2. claim nodes/<node> on the lease: a txn that creates it only if absent
 *      (or finds it already on our lease); a key on another lease carrying a
 *      valid value of that lease is a second live node with this name:
 *      CL_IN_DUPLICATE, nothing written, retried every 500 ms; a key that is
 *      no live node's (lease-less, no valid MAC) is taken over
 *   3. the loop's queued changes (made while etcd was away) are sent, then
 *      points/<node> on the lease
 *   4. the snapshot, read in pages at one revision (nodes/, points/, down/,
 *      epoch, lines/; a page too big to read is halved down to one key)
 *      -> CL_IN_UP, one CL_IN_* per valid key, CL_IN_SNAP_END
 *   5. watch the prefix's keys (but the heartbeats) from the snapshot's
 *      revision + 1, and the heartbeats of this node's beat window
 * Then: queued changes as they come, a keepalive every keepalive_ms, and,
 * with a staleness bound (cl_lease_stale_s), a lease probe of every peer in
 * the beat window as often (/v3/lease/timetolive: a read). A lease whose
 * remaining TTL says it was not refreshed for more than the bound is
 * reported stale (CL_IN_PEER_LEASE) before etcd expires it; a refresh after
 * that is reported only when the answers prove one (probe_peers: a new etcd
 * leader extends every lease, which looks like a refresh and is not one).
 * A probe that fails is counted and changes nothing. Any failure (curl
 * error, HTTP status != 200, timeout_ms, a watch ending) tears the watches
 * down and restarts at step 0 on the next endpoint; CL_IN_DOWN is reported
 * once every endpoint refused the connection in a row, or nothing succeeded
 * for lost_after_ms. An etcd refusal of the user, the password, the token
 * or a permission, and a TLS failure, is logged by the transport once per
 * change of reason with etcd's own words.
 *
 * Thread: the cluster thread, except the functions the header marks. */
#include "cp_cluster_etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_detect.h"
#include "cl_http.h"
#include "cl_secret.h"
#include "cl_value.h"
#include "cp_log.h"
#include "cp_loop.h"

#define CL_PAGE_KEYS 64         /* the snapshot's page size (keys) */
#define CL_PAGE_KV_BYTES 4096u  /* what one of our kvs takes in a range answer at most (a value of
				 * CL_VALUE_MAX in base64, its key, the JSON around): a page longer
				 * than this per key holds a value fanogate did not write */

static uint64_t now_ms(void)
{
	return cp_now_ns() / 1000000u;
}

/* A key this node writes: its (create_revision, version) as last seen, so
 * the next write can compare-and-swap on it and bind its value to it. */
struct kstate {
	int64_t crev, ver;
	int64_t rev;  /* the revision this state is from: an older answer or event never moves it back */
};

/* Take (crev, ver) as of revision rev, unless ks already knows a later state. */
static void ks_set(struct kstate *ks, int64_t crev, int64_t ver, int64_t rev)
{
	if (rev && rev < ks->rev)
		return;
	ks->crev = crev;
	ks->ver = ver;
	ks->rev = rev;
}

struct cl_peer {
	char name[FG_CLUSTER_NAME_MAX];
	int64_t lease;
	struct cl_lease_view v;
	uint32_t beat_ms;        /* its heartbeat period (its nodes/ value); 0: it does not beat */
	struct cl_beat_view bv;
	uint64_t beat_seq;       /* seq of its last accepted beat */
	uint64_t kseq[FG_LINES + 1]; /* seq of its last accepted value of lines/<i>, and of the epoch */
	int64_t beat_rev;        /* mod_revision of its last beat event (a re-delivery is no replay) */
	bool watched;            /* in this node's beat window */
	bool reported_down;      /* what the loop was last told (CL_IN_PEER_BEAT) */
	/* its down/ record: the peers whose beats it proved stopped */
	unsigned n_claims;
	struct {
		char name[FG_CLUSTER_NAME_MAX];
		int64_t lease, gap_ms;
	} claim[CL_BEAT_WINDOW];
};

struct cl_etcd {
	const struct fg_config *cfg;
	const struct fg_cluster_cfg *cc;
	pthread_t thread;
	bool started;
	atomic_bool stop;        /* the thread ends (set by cl_etcd_stop; also read by the transport) */
	struct cl_queue q;       /* the facts to and from the loop */
	struct cl_http http;     /* the transport: requests, watches, the beat's transfer */
	pthread_mutex_t lock;    /* st and endpoint_now (the loop reads them) */
	struct cl_etcd_stats st;
	char endpoint_now[64];
	/* thread-only */
	struct cl_mac_key *mk;
	uint64_t refuse_log_ms;  /* when a refused value was last logged */
	uint64_t refuse_quiet;   /* refused values not logged since */
	int64_t lease_id;
	int64_t revision;        /* last revision applied (snapshot or the keys' watch) */
	uint64_t seq;            /* this node's write counter (every envelope) */
	struct cl_watch kw;      /* the prefix's keys but the heartbeats */
	struct cl_watch bw;      /* the heartbeats of the beat window */
	bool window_dirty;       /* the window's range changed: restart bw */
	bool in_snapshot;        /* reading a snapshot: claims reported at its end */
	size_t prefix_len;
	/* the keys this node writes */
	struct kstate ks_line[FG_LINES], ks_epoch, ks_node, ks_points, ks_beat, ks_down;
	bool epoch_have;         /* epoch_val is a verified value from etcd */
	uint32_t epoch_val;
	/* the other live nodes, from their nodes/ keys (snapshot and watch) */
	struct cl_peer *peer;
	unsigned n_peers, peers_max;
	uint32_t stale_s;        /* cl_lease_stale_s; 0: no probes */
	bool probe_failing;      /* the last probe failed (logged once per run of failures) */
	bool down_dirty;         /* this node's down/ record must be rewritten */
	/* this node's heartbeat: a CAS of beats/<node> on the lease every
	 * beat_ms, its own transfer in the multi (never queued behind a request) */
	uint32_t beat_down_ms;   /* cl_beat_down_ms; 0: no heartbeat */
	bool beating;            /* joined on the lease we hold (name claimed): beats go out, also while
				  * reconnecting (a beat needs the lease, not the watch) */
	CURL *beat_h;            /* the beat in flight, or NULL */
	struct cl_buf beat_buf;
	int64_t beat_ver;        /* the version the beat in flight writes */
	uint64_t beat_next_ms, beat_sent_ms;
	uint64_t beat_proven_ms; /* send time of this node's latest beat seen back through the watch */
	uint64_t beat_steady_ms; /* since when (a send time) they come back steadily (cl_beat_steady) */
	bool beat_failing;       /* the last beat failed (logged once per run of failures) */
};

/* ---- the loop's side: queues, counters ---------------------------------- */

int cl_etcd_push_out(struct cl_etcd *t, const struct cl_out *m)
{
	int r = cl_queue_push_out(&t->q, m);
	if (r == 0)
		cl_http_wakeup(&t->http);
	return r;
}

unsigned cl_etcd_pop_in(struct cl_etcd *t, struct cl_in *out, unsigned max)
{
	return cl_queue_pop_in(&t->q, out, max);
}

void cl_etcd_stats(struct cl_etcd *t, struct cl_etcd_stats *out)
{
	pthread_mutex_lock(&t->lock);
	*out = t->st;
	pthread_mutex_unlock(&t->lock);
	cl_http_stats(&t->http, &out->requests, &out->request_failures, &out->auth_failures);
	out->out_dropped = cl_queue_out_dropped(&t->q);
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

/* ---- refusals ------------------------------------------------------------ */

enum refusal { RF_UNAUTH, RF_UNBOUND, RF_REPLAY, RF_EPOCH, RF_MALFORMED, RF_FULL };

/* Count a value that is not applied; log it with its key, at most once a
 * second (the ones in between are counted and named in the next line). */
static void refuse(struct cl_etcd *t, enum refusal r, const char *key, const char *why)
{
	uint64_t *ctr[] = {&t->st.refused_unauthenticated, &t->st.refused_unbound, &t->st.refused_replayed,
			   &t->st.refused_epoch, &t->st.refused_malformed, &t->st.refused_nodes_full};
	static const char *const name[] = {"unauthenticated", "unbound", "replayed", "epoch", "malformed", "nodes_full"};
	stat_add(t, ctr[r], 1);
	uint64_t now = now_ms();
	if (t->refuse_log_ms && now - t->refuse_log_ms < 1000) {
		t->refuse_quiet++;
		return;
	}
	t->refuse_log_ms = now;
	if (t->refuse_quiet)
		cp_warn("cluster: etcd key %.200s refused (%s: %s): not applied (and %" PRIu64
			" more refused since the last such line)",
			key, name[r], why, t->refuse_quiet);
	else
		cp_warn("cluster: etcd key %.200s refused (%s: %s): not applied", key, name[r], why);
	t->refuse_quiet = 0;
}

/* ---- keys ------------------------------------------------------------ */

static void key_of(struct cl_etcd *t, char *out, size_t cap, const char *fmt, const char *arg)
{
	char tail[96];
	snprintf(tail, sizeof(tail), fmt, arg);
	snprintf(out, cap, "%s%s", t->cc->prefix, tail);
}

static struct cl_peer *peer_find(struct cl_etcd *t, const char *name)
{
	for (unsigned i = 0; i < t->n_peers; i++)
		if (strcmp(t->peer[i].name, name) == 0)
			return &t->peer[i];
	return NULL;
}

static struct cl_peer *peer_by_lease(struct cl_etcd *t, int64_t lease)
{
	for (unsigned i = 0; i < t->n_peers; i++)
		if (t->peer[i].lease == lease)
			return &t->peer[i];
	return NULL;
}

/* ---- the beat window and down/ records --------------------------------- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Tell the loop what it should believe of p's heartbeats now. */
static void peer_emit(struct cl_etcd *t, struct cl_peer *p, bool down, int64_t gap_ms)
{
	p->reported_down = down;
	struct cl_in m = {.kind = CL_IN_PEER_BEAT, .lease_id = p->lease, .stale = down, .gap_ms = gap_ms};
	snprintf(m.node, sizeof(m.node), "%s", p->name);
	cl_queue_push_in(&t->q, &m);
}

/* Does a live node's down/ record name p on its lease? */
static bool peer_claimed_down(const struct cl_etcd *t, const struct cl_peer *p, int64_t *gap)
{
	for (unsigned i = 0; i < t->n_peers; i++)
		for (unsigned c = 0; c < t->peer[i].n_claims; c++)
			if (strcmp(t->peer[i].claim[c].name, p->name) == 0 && t->peer[i].claim[c].lease == p->lease) {
				*gap = t->peer[i].claim[c].gap_ms;
				return true;
			}
	return false;
}

/* The peers outside this node's beat window are judged by the down/
 * records of the nodes that watch them: report what changed (not while a
 * snapshot is read: its end reports once). A new peer starts as
 * "reported down" so that its first evaluation tells the loop it beats. */
static void claims_report(struct cl_etcd *t)
{
	if (t->in_snapshot)
		return;
	for (unsigned i = 0; i < t->n_peers; i++) {
		struct cl_peer *p = &t->peer[i];
		int64_t gap = 0;
		if (p->watched || !p->beat_ms)
			continue;
		bool down = peer_claimed_down(t, p, &gap);
		if (down != p->reported_down)
			peer_emit(t, p, down, gap);
	}
}

/* Recompute the beat window (names sorted, this node among them) after
 * the peers changed; a peer leaving it keeps what was last reported until
 * a down/ record says otherwise, one entering it is judged from now. The
 * beat watch is restarted by the main loop (window_dirty). */
static void window_update(struct cl_etcd *t)
{
	unsigned n = t->n_peers + 1;
	const char **names = calloc(n, sizeof(*names));
	if (!names)
		return;
	names[0] = t->cc->node;
	for (unsigned i = 0; i < t->n_peers; i++)
		names[i + 1] = t->peer[i].name;
	qsort(names, n, sizeof(*names), name_cmp);
	unsigned self = 0, lo, hi;
	while (self < n && strcmp(names[self], t->cc->node) != 0)
		self++;
	cl_beat_window(n, self, &lo, &hi);
	unsigned watched = 0;
	uint64_t now = now_ms();
	for (unsigned i = 0; i < t->n_peers; i++) {
		struct cl_peer *p = &t->peer[i];
		bool in = strcmp(p->name, names[lo]) >= 0 && strcmp(p->name, names[hi]) <= 0;
		if (in && !p->watched) {
			p->bv = (struct cl_beat_view){.state = CL_BEAT_UNPROVEN, .last_ms = now};
			p->v = (struct cl_lease_view){.state = CL_PEER_UNPROVEN, .bound_ms = UINT64_MAX};
		}
		if (!in && p->watched && p->bv.state == CL_BEAT_DOWN)
			t->down_dirty = true; /* no longer this node's to claim */
		p->watched = in;
		watched += in;
	}
	char lo_key[CL_KEY_RAW_MAX], hi_key[CL_KEY_RAW_MAX + 1];
	int ll = snprintf(lo_key, sizeof(lo_key), "%sbeats/%s", t->cc->prefix, names[lo]);
	int hl = snprintf(hi_key, sizeof(hi_key), "%sbeats/%s", t->cc->prefix, names[hi]);
	free(names);
	claims_report(t);
	pthread_mutex_lock(&t->lock);
	t->st.watched = watched;
	pthread_mutex_unlock(&t->lock);
	/* [beats/<lo>, beats/<hi> "\0"): exactly the window's keys */
	char r0[sizeof(t->bw.range[0])], r1[sizeof(t->bw.range[1])];
	if (ll < 0 || hl < 0 || (size_t)hl + 1 > sizeof(hi_key) || cl_b64_enc(lo_key, (size_t)ll, r0, sizeof(r0)) < 0 ||
	    cl_b64_enc(hi_key, (size_t)hl + 1, r1, sizeof(r1)) < 0)
		return;
	if (strcmp(r0, t->bw.range[0]) != 0 || strcmp(r1, t->bw.range[1]) != 0) {
		memcpy(t->bw.range[0], r0, sizeof(r0));
		memcpy(t->bw.range[1], r1, sizeof(r1));
		t->window_dirty = true;
	}
}

/* nodes/<name> of another node put on a lease (or deleted: lease 0), with
 * the heartbeat period its value declares. false: the table is full (the
 * node is not tracked: refused by the caller). */
static bool peer_note(struct cl_etcd *t, const char *name, int64_t lease, uint32_t beat_ms)
{
	struct cl_peer *p = peer_find(t, name);
	if (!lease) {
		if (p) {
			*p = t->peer[--t->n_peers];
			window_update(t); /* and its down/ record went with its lease: claims_report */
		}
		return true;
	}
	if (!p) {
		if (t->n_peers == t->peers_max)
			return false;
		p = &t->peer[t->n_peers++];
		memset(p, 0, sizeof(*p));
		snprintf(p->name, sizeof(p->name), "%s", name);
	} else if (p->lease == lease) {
		p->beat_ms = beat_ms;
		return true;
	}
	p->lease = lease;
	p->v = (struct cl_lease_view){.state = CL_PEER_UNPROVEN, .bound_ms = UINT64_MAX};
	/* its silence counts from now: a node that died while this one was
	 * away (or before it started) is reported down by the same rule */
	p->beat_ms = beat_ms;
	p->bv = (struct cl_beat_view){.state = CL_BEAT_UNPROVEN, .last_ms = now_ms()};
	p->beat_seq = 0;
	memset(p->kseq, 0, sizeof(p->kseq));
	p->beat_rev = 0;
	p->reported_down = true;
	p->n_claims = 0;
	p->watched = false;
	window_update(t);
	return true;
}

static void beat_seen(struct cl_etcd *t, const char *name, uint64_t ms)
{
	uint64_t now = now_ms();
	if (strcmp(name, t->cc->node) == 0) {
		/* our own beat back: every event before it has come too */
		if (ms)
			cl_beat_steady(&t->beat_proven_ms, &t->beat_steady_ms, ms, now, t->cc->beat_ms);
		return;
	}
	struct cl_peer *p = peer_find(t, name);
	if (!p || !p->watched)
		return;
	stat_add(t, &t->st.beats_seen, 1);
	struct cl_beat_view *v = &p->bv;
	int64_t gap = (int64_t)(now - v->last_ms);
	int was = v->state;
	v->last_ms = now;
	v->state = CL_BEAT_ALIVE;
	if (was != CL_BEAT_ALIVE)
		peer_emit(t, p, false, gap);
}

/* ---- reading values ------------------------------------------------------ */

static bool jstr(json_t *j, const char *k, char *dst, size_t cap)
{
	const char *s = json_string_value(json_object_get(j, k));
	if (!s || strlen(s) >= cap)
		return false;
	snprintf(dst, cap, "%s", s);
	return true;
}

static bool juint(json_t *j, const char *k, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(j, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

/* The payload of an envelope as a JSON object (NULL: not one). */
static json_t *payload_json(const struct cl_env *e)
{
	json_error_t je;
	json_t *j = json_loadb(e->payload, e->payload_len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

static void down_claims_set(struct cl_etcd *t, struct cl_peer *m, json_t *arr)
{
	m->n_claims = 0;
	size_t i;
	json_t *c;
	json_array_foreach(arr, i, c) {
		if (m->n_claims == CL_BEAT_WINDOW)
			break;
		char name[FG_CLUSTER_NAME_MAX];
		uint64_t lease, gap;
		if (!jstr(c, "node", name, sizeof(name)) || !juint(c, "lease", INT64_MAX, &lease) ||
		    !juint(c, "gap_ms", INT64_MAX, &gap))
			continue;
		snprintf(m->claim[m->n_claims].name, sizeof(m->claim[0].name), "%s", name);
		m->claim[m->n_claims].lease = (int64_t)lease;
		m->claim[m->n_claims].gap_ms = (int64_t)gap;
		m->n_claims++;
	}
	claims_report(t);
}

/* One kv being read (a range's or a watch event's), as kv_to_in takes it
 * apart: the key, what it names, etcd's metadata and, for a put, the
 * envelope. */
struct kv_read {
	const char *key;  /* the whole key (NUL-terminated) */
	struct cl_key k;
	bool self;        /* nodes/, points/, beats/ or down/ in this node's name */
	bool snapshot;    /* part of a snapshot, not a watch event */
	int64_t crev, ver, lease, rev; /* create_revision, version, lease, mod_revision */
	struct cl_env e;  /* a put's envelope, once authentic */
	bool mine;        /* written under this node's current lease */
};

static bool kind_is_leased(enum cl_key_kind k)
{
	return k == CL_KEY_NODE || k == CL_KEY_POINTS || k == CL_KEY_BEAT || k == CL_KEY_DOWN;
}

/* A delete: a lease's end (its nodes/ delete reports it), or this node's
 * claim gone, or a line or the epoch deleted by someone else. */
static void kv_deleted(struct cl_etcd *t, const struct kv_read *r, struct cl_in *m)
{
	switch (r->k.kind) {
	case CL_KEY_NODE:
		if (r->self) {
			if (t->kw.created)
				t->kw.broken = true; /* our claim went: claim again (reconnect) */
			return;
		}
		if (!peer_find(t, r->k.node))
			return;
		(void)peer_note(t, r->k.node, 0, 0);
		m->kind = CL_IN_NODE;
		snprintf(m->node, sizeof(m->node), "%s", r->k.node);
		cl_queue_push_in(&t->q, m);
		return;
	case CL_KEY_DOWN: {
		struct cl_peer *p = peer_find(t, r->k.node);
		if (p)
			down_claims_set(t, p, NULL);
		return;
	}
	case CL_KEY_LINE:
	case CL_KEY_EPOCH:
		/* fanogate never deletes these: someone with etcd access did */
		refuse(t, RF_UNBOUND, r->key, "deleted, not by fanogate (a later re-creation is refused here)");
		return;
	default:
		return; /* points/, beats/: a lease's end, which its nodes/ delete reports */
	}
}

/* A put's checks as far as the key and the envelope tell (docs/cluster.md
 * "Authenticated values" 1 to 3): the value is an envelope whose MAC
 * verifies, it sits at the version it was written for, and a key on a
 * lease is on the lease of the node it names (a lease-less key on none).
 * val (cap bytes) receives the decoded value r->e points into. false:
 * refused (counted). */
static bool kv_authentic(struct cl_etcd *t, json_t *kv, struct kv_read *r, char *val, size_t cap)
{
	const char *vb = json_string_value(json_object_get(kv, "value"));
	int vl = vb ? cl_b64_dec(vb, val, cap) : -EINVAL;
	if (vl < 0) {
		refuse(t, RF_UNAUTH, r->key, "value too long or not base64");
		return false;
	}
	const char *why;
	if (cl_env_parse(val, (size_t)vl, &r->e, &why) < 0) {
		refuse(t, RF_UNAUTH, r->key, why);
		return false;
	}
	if (!cl_env_verify(t->mk, r->key, &r->e)) {
		refuse(t, RF_UNAUTH, r->key, "bad_mac");
		return false;
	}
	if (!cl_env_bound(&r->e, r->crev, r->ver)) {
		refuse(t, RF_REPLAY, r->key, "not at the version it was written for");
		return false;
	}
	char w[160];
	if (kind_is_leased(r->k.kind)) {
		if (!r->lease) {
			refuse(t, RF_UNBOUND, r->key, "lease-less");
			return false;
		}
		if (strcmp(r->e.node, r->k.node) != 0 || r->e.lease != r->lease) {
			snprintf(w, sizeof(w), "written by node %s on lease %" PRId64 ", not its own", r->e.node,
				 r->e.lease);
			refuse(t, RF_UNBOUND, r->key, w);
			return false;
		}
	} else if (r->lease) {
		refuse(t, RF_UNBOUND, r->key, "on a lease (fanogate writes it on none)");
		return false;
	}
	r->mine = r->e.lease == t->lease_id && strcmp(r->e.node, t->cc->node) == 0;
	return true;
}

/* A line's or the epoch's writer (docs/cluster.md "Authenticated values"
 * 3 and 4): this node (its lease), a live node on the lease it names, or,
 * in a snapshot, a node no longer live; and a live writer's values for one
 * key carry rising seqs. false: refused (counted). */
static bool writer_is_bound(struct cl_etcd *t, const struct kv_read *r)
{
	const struct cl_env *e = &r->e;
	struct cl_peer *byname = peer_find(t, e->node), *bylease = peer_by_lease(t, e->lease);
	bool bound = r->mine || (byname && byname->lease == e->lease);
	/* in a snapshot a writer no longer live (no node by that name or on
	 * that lease, this node's own earlier lease included) is history */
	bool historic = r->snapshot && !byname && !bylease && e->lease != t->lease_id;
	if (!bound && !historic) {
		char w[160];
		snprintf(w, sizeof(w), "names node %s on lease %" PRId64 ", which is not that node's live lease", e->node,
			 e->lease);
		refuse(t, RF_UNBOUND, r->key, w);
		return false;
	}
	/* a live writer's values for one key carry rising seqs: one no
	 * newer than the last seen is an earlier value put back (after
	 * a delete its version binding alone cannot tell) */
	unsigned idx = r->k.kind == CL_KEY_LINE ? r->k.line : FG_LINES;
	if (!r->mine && byname && byname->lease == e->lease) {
		if (!r->snapshot && e->seq <= byname->kseq[idx]) {
			refuse(t, RF_REPLAY, r->key, "no newer than that node's last value for it");
			return false;
		}
		byname->kseq[idx] = e->seq;
	}
	return true;
}

/* The epoch: one up from the last (in a snapshot, not below it). */
static void apply_epoch(struct cl_etcd *t, const struct kv_read *r, json_t *j, struct cl_in *m)
{
	uint64_t to, from = 0; /* from: read only when has_from */
	char w[160];
	bool has_from = json_object_get(j, "from") != NULL;
	if (!juint(j, "to", UINT32_MAX, &to) || (has_from && !juint(j, "from", UINT32_MAX, &from)) ||
	    !jstr(j, "why", m->why, sizeof(m->why))) {
		refuse(t, RF_MALFORMED, r->key, "epoch payload");
		return;
	}
	if (has_from ? to != from + 1 : r->e.ver != 1) {
		refuse(t, RF_EPOCH, r->key, has_from ? "not one up from the value it names" : "no from, not a creation");
		return;
	}
	bool echo = r->mine && to <= t->epoch_val; /* this node's own write, applied when it won */
	if (!r->snapshot && t->epoch_have && !echo && (!has_from || from != t->epoch_val)) {
		snprintf(w, sizeof(w), "%" PRIu64 " after %u: the epoch only moves one up", to, t->epoch_val);
		refuse(t, RF_EPOCH, r->key, w);
		return;
	}
	if (r->snapshot && t->epoch_have && to < t->epoch_val) {
		snprintf(w, sizeof(w), "%" PRIu64 " after %u: backwards", to, t->epoch_val);
		refuse(t, RF_EPOCH, r->key, w);
		return;
	}
	if (!t->epoch_have || to > t->epoch_val)
		t->epoch_val = (uint32_t)to;
	t->epoch_have = true;
	m->kind = CL_IN_EPOCH;
	m->epoch = (uint32_t)to;
	m->mine = r->mine;
	snprintf(m->node, sizeof(m->node), "%s", r->e.node);
	cl_queue_push_in(&t->q, m);
}

static void apply_line(struct cl_etcd *t, const struct kv_read *r, json_t *j, struct cl_in *m)
{
	uint64_t a;
	if (!jstr(j, "state", m->state, sizeof(m->state)) || !jstr(j, "event", m->event, sizeof(m->event)) ||
	    !juint(j, "uid", UINT32_MAX, &a) || !jstr(j, "why", m->why, sizeof(m->why)) ||
	    (strcmp(m->state, "disabled") && strcmp(m->state, "shadow") && strcmp(m->state, "active"))) {
		refuse(t, RF_MALFORMED, r->key, "line payload");
		return;
	}
	m->kind = CL_IN_LINE;
	m->line = r->k.line;
	m->uid = (uint32_t)a;
	m->mine = r->mine;
	snprintf(m->node, sizeof(m->node), "%s", r->e.node);
	cl_queue_push_in(&t->q, m);
}

static void apply_node(struct cl_etcd *t, const struct kv_read *r, json_t *j, struct cl_in *m)
{
	uint64_t b;
	if (!jstr(j, "layers", m->layers, sizeof(m->layers)) || !juint(j, "beat_ms", 600000, &b)) {
		refuse(t, RF_MALFORMED, r->key, "node payload");
		return;
	}
	if (r->self && r->lease != t->lease_id)
		return; /* this node's name on an earlier lease of its own: going */
	if (!r->self && !peer_note(t, r->k.node, r->lease, (uint32_t)b)) {
		char w[160];
		snprintf(w, sizeof(w), "%u nodes tracked already ([cluster] nodes_max)", t->peers_max + 1);
		refuse(t, RF_FULL, r->key, w);
		return;
	}
	m->kind = CL_IN_NODE;
	m->lease_id = r->lease;
	snprintf(m->node, sizeof(m->node), "%s", r->k.node);
	cl_queue_push_in(&t->q, m);
}

static void apply_points(struct cl_etcd *t, const struct kv_read *r, json_t *j, struct cl_in *m)
{
	uint64_t a, b;
	struct cl_peer *p = r->self ? NULL : peer_find(t, r->k.node);
	if (!r->self && (!p || p->lease != r->lease)) {
		refuse(t, RF_UNBOUND, r->key, "no live node on its lease");
		return;
	}
	if (r->self && r->lease != t->lease_id)
		return; /* this node's earlier lease: its nodes/ says the rest */
	if (!juint(j, "alive", 127, &a) || !juint(j, "judged", 127, &b)) {
		refuse(t, RF_MALFORMED, r->key, "points payload");
		return;
	}
	m->kind = CL_IN_POINTS;
	m->alive = (uint8_t)a;
	m->judged = (uint8_t)b;
	m->lease_id = r->lease;
	snprintf(m->node, sizeof(m->node), "%s", r->k.node);
	cl_queue_push_in(&t->q, m);
}

static void apply_beat(struct cl_etcd *t, const struct kv_read *r, json_t *j)
{
	uint64_t a;
	if (!juint(j, "ms", UINT64_MAX >> 1, &a)) {
		refuse(t, RF_MALFORMED, r->key, "beat payload");
		return;
	}
	if (r->self) {
		if (r->lease == t->lease_id && !r->snapshot)
			beat_seen(t, r->k.node, a);
		return;
	}
	struct cl_peer *p = peer_find(t, r->k.node);
	if (!p || p->lease != r->lease) {
		refuse(t, RF_UNBOUND, r->key, "no live node on its lease");
		return;
	}
	if (r->rev <= p->beat_rev)
		return; /* delivered again (a restarted watch): no news */
	if (r->e.seq <= p->beat_seq) {
		refuse(t, RF_REPLAY, r->key, "a beat no newer than the last one");
		return;
	}
	p->beat_seq = r->e.seq;
	p->beat_rev = r->rev;
	if (!r->snapshot)
		beat_seen(t, r->k.node, a);
}

static void apply_down(struct cl_etcd *t, const struct kv_read *r, json_t *j)
{
	if (r->self)
		return;
	struct cl_peer *p = peer_find(t, r->k.node);
	json_t *arr = json_object_get(j, "down");
	if (!p || p->lease != r->lease) {
		refuse(t, RF_UNBOUND, r->key, "no live node on its lease");
		return;
	}
	if (!json_is_array(arr)) {
		refuse(t, RF_MALFORMED, r->key, "down payload");
		return;
	}
	down_claims_set(t, p, arr);
}

/* One kv (from a range or a watch event) -> a fact for the loop, when it is
 * authentic and bound (docs/cluster.md "Authenticated values", in its
 * order: 1 to 3 in kv_authentic, 3 and 4 for a line or the epoch in
 * writer_is_bound, 4 for a beat in apply_beat, 5 in apply_epoch, 6 as each
 * apply_* parses its payload). */
static void kv_to_in(struct cl_etcd *t, json_t *kv, bool deleted, bool snapshot)
{
	char key[CL_KEY_RAW_MAX + 4], val[CL_VALUE_MAX + 4];
	const char *kb = json_string_value(json_object_get(kv, "key"));
	int kl = kb ? cl_b64_dec(kb, key, sizeof(key)) : -EINVAL;
	if (kl < 0 || (size_t)kl < t->prefix_len || memcmp(key, t->cc->prefix, t->prefix_len) != 0 ||
	    memchr(key, '\0', (size_t)kl)) {
		stat_add(t, &t->st.foreign_keys, 1);
		return;
	}
	struct kv_read r = {.key = key, .snapshot = snapshot};
	if (cl_key_parse(key + t->prefix_len, (size_t)kl - t->prefix_len, &r.k) == CL_KEY_FOREIGN) {
		stat_add(t, &t->st.foreign_keys, 1);
		return; /* not ours (another tool under the prefix, or not canonical): ignored */
	}
	r.self = kind_is_leased(r.k.kind) && strcmp(r.k.node, t->cc->node) == 0;
	r.crev = cl_jint(kv, "create_revision");
	r.ver = cl_jint(kv, "version");
	r.lease = cl_jint(kv, "lease");
	r.rev = cl_jint(kv, "mod_revision");
	struct kstate *ks = r.k.kind == CL_KEY_LINE ? &t->ks_line[r.k.line] : r.k.kind == CL_KEY_EPOCH ? &t->ks_epoch : NULL;
	if (r.self)
		ks = r.k.kind == CL_KEY_NODE ? &t->ks_node : r.k.kind == CL_KEY_POINTS ? &t->ks_points
			: r.k.kind == CL_KEY_BEAT ? &t->ks_beat : &t->ks_down;
	if (ks)
		ks_set(ks, deleted ? 0 : r.crev, deleted ? 0 : r.ver, r.rev);
	struct cl_in m;
	memset(&m, 0, sizeof(m));
	m.snapshot = snapshot;
	m.deleted = deleted;
	m.revision = r.rev;
	if (deleted) {
		kv_deleted(t, &r, &m);
		return;
	}
	if (!kv_authentic(t, kv, &r, val, sizeof(val)))
		return;
	json_t *j = payload_json(&r.e);
	if (!j) {
		refuse(t, RF_MALFORMED, key, "payload is not a JSON object");
		return;
	}
	if ((r.k.kind == CL_KEY_LINE || r.k.kind == CL_KEY_EPOCH) && !writer_is_bound(t, &r)) {
		json_decref(j);
		return;
	}
	switch (r.k.kind) {
	case CL_KEY_EPOCH: apply_epoch(t, &r, j, &m); break;
	case CL_KEY_LINE: apply_line(t, &r, j, &m); break;
	case CL_KEY_NODE: apply_node(t, &r, j, &m); break;
	case CL_KEY_POINTS: apply_points(t, &r, j, &m); break;
	case CL_KEY_BEAT: apply_beat(t, &r, j); break;
	case CL_KEY_DOWN: apply_down(t, &r, j); break;
	case CL_KEY_FOREIGN: break;
	}
	json_decref(j);
}

/* ---- writes -------------------------------------------------------------- */

static int lease_keepalive(struct cl_etcd *t)
{
	char id[32];
	snprintf(id, sizeof(id), "%" PRId64, t->lease_id);
	json_t *out;
	int r = cl_http_req(&t->http, "/v3/lease/keepalive", json_pack("{s:s}", "ID", id), &out);
	if (r < 0)
		return r;
	json_t *res = json_object_get(out, "result");
	int64_t ttl = cl_jint(res, "TTL");
	json_decref(out);
	if (ttl <= 0) {
		t->lease_id = 0; /* expired while we were away: a new one */
		t->beating = false; /* until the name is claimed on the new lease */
		return -ENOENT;
	}
	stat_add(t, &t->st.keepalives, 1);
	struct cl_in m = {.kind = CL_IN_LEASE, .lease_id = t->lease_id, .ttl = ttl};
	cl_queue_push_in(&t->q, &m);
	return 0;
}

static int lease_grant(struct cl_etcd *t)
{
	json_t *out;
	int r = cl_http_req(&t->http, "/v3/lease/grant", json_pack("{s:i}", "TTL", (int)t->cc->lease_ttl_s), &out);
	if (r < 0)
		return r;
	t->lease_id = cl_jint(out, "ID");
	int64_t ttl = cl_jint(out, "TTL");
	json_decref(out);
	if (!t->lease_id)
		return -EPROTO;
	/* the keys on the old lease are gone (or go): ours start again */
	t->ks_node = t->ks_points = t->ks_beat = t->ks_down = (struct kstate){0};
	stat_add(t, &t->st.leases_granted, 1);
	struct cl_in m = {.kind = CL_IN_LEASE, .lease_id = t->lease_id, .ttl = ttl};
	cl_queue_push_in(&t->q, &m);
	return 0;
}

/* The compare of a write on ks: the key is as this node last saw it. */
static json_t *cas_compare(const char *key, const struct kstate *ks)
{
	char n[32];
	if (!ks->ver)
		return json_pack("[{s:o, s:s, s:s, s:s}]", "key", cl_jb64(key), "target", "CREATE", "result", "EQUAL",
				 "create_revision", "0");
	json_t *c = json_array();
	snprintf(n, sizeof(n), "%" PRId64, ks->crev);
	json_array_append_new(c, json_pack("{s:o, s:s, s:s, s:s}", "key", cl_jb64(key), "target", "CREATE", "result",
					   "EQUAL", "create_revision", n));
	snprintf(n, sizeof(n), "%" PRId64, ks->ver);
	json_array_append_new(c, json_pack("{s:o, s:s, s:s, s:s}", "key", cl_jb64(key), "target", "VERSION", "result",
					   "EQUAL", "version", n));
	return c;
}

static json_t *put_op(const char *key, const char *val, size_t vl, int64_t lease)
{
	json_t *p = json_pack("{s:o, s:o}", "key", cl_jb64(key), "value", cl_jb64n(val, vl));
	if (lease) {
		char id[32];
		snprintf(id, sizeof(id), "%" PRId64, lease);
		json_object_set_new(p, "lease", json_string(id));
	}
	return p;
}

/* The txn body writing payload at key (on lease, or none) as the envelope
 * for ks's next version, comparing ks; failure: range the key. NULL on
 * failure. */
static json_t *cas_body(struct cl_etcd *t, const char *key, const struct kstate *ks, const char *payload,
			int64_t lease)
{
	char val[CL_VALUE_MAX + 1];
	int vl = cl_env_make(t->mk, key, t->cc->node, t->lease_id, ks->ver ? ks->crev : 0, ks->ver + 1, ++t->seq,
			     payload, strlen(payload), val, sizeof(val));
	if (vl < 0)
		return NULL;
	return json_pack("{s:o, s:[{s:o}], s:[{s:{s:o}}]}", "compare", cas_compare(key, ks), "success", "requestPut",
			 put_op(key, val, (size_t)vl, lease), "failure", "requestRange", "key", cl_jb64(key));
}

/* After a txn that wrote version ver (its compare held ks as it was): a
 * success puts ks at that version (created at the txn's revision when
 * new); a failure takes the key's state from the range. Either is as of
 * the answer's revision: a watch event already newer is kept. */
static void cas_after(json_t *out, struct kstate *ks, int64_t ver, bool won, json_t **found)
{
	int64_t rev = cl_jint(json_object_get(out, "header"), "revision");
	if (won) {
		ks_set(ks, ver == 1 ? rev : ks->crev, ver, rev);
		return;
	}
	json_t *kv = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(out, "responses"), 0),
								    "response_range"),
						    "kvs"),
				    0);
	ks_set(ks, kv ? cl_jint(kv, "create_revision") : 0, kv ? cl_jint(kv, "version") : 0, rev);
	if (found)
		*found = kv;
}

/* Write payload at key as a compare-and-swap on ks: 1 written, 0 not
 * (create_only and the key exists), or -errno. A lost compare (another
 * node wrote the key meanwhile) is tried again on the version it found,
 * up to four rounds: the last writer wins, as with a put. */
static int cas_put(struct cl_etcd *t, const char *key, struct kstate *ks, const char *payload, int64_t lease,
		   bool create_only)
{
	for (int round = 0; round < 4; round++) {
		if (create_only && ks->ver)
			return 0;
		int64_t ver = ks->ver + 1;
		json_t *body = cas_body(t, key, ks, payload, lease), *out;
		if (!body)
			return -EINVAL;
		int r = cl_http_req(&t->http, "/v3/kv/txn", body, &out);
		if (r < 0)
			return r;
		bool won = json_is_true(json_object_get(out, "succeeded"));
		cas_after(out, ks, ver, won, NULL);
		json_decref(out);
		if (won)
			return 1;
	}
	return -EAGAIN;
}

/* The payload of this node's nodes/ key. */
static int node_payload(struct cl_etcd *t, char *out, size_t cap)
{
	json_t *v = json_pack("{s:s, s:i, s:i}", "layers", t->cc->layers_text, "pid", (int)getpid(), "beat_ms",
			      (int)(t->beat_down_ms ? t->cc->beat_ms : 0));
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!s)
		return -ENOMEM;
	snprintf(out, cap, "%s", s);
	free(s);
	return 0;
}

/* Is kv (nodes/<this name>) a live node's: a valid value on the lease it
 * carries? */
static bool claim_is_live(struct cl_etcd *t, const char *key, json_t *kv, char *why, size_t why_len)
{
	char val[CL_VALUE_MAX + 4];
	const char *vb = json_string_value(json_object_get(kv, "value"));
	int64_t lease = cl_jint(kv, "lease");
	int vl = vb ? cl_b64_dec(vb, val, sizeof(val)) : -EINVAL;
	struct cl_env e;
	const char *pw;
	if (!lease) {
		snprintf(why, why_len, "lease-less");
	} else if (vl < 0 || cl_env_parse(val, (size_t)vl, &e, &pw) < 0) {
		snprintf(why, why_len, "not a fanogate value");
	} else if (!cl_env_verify(t->mk, key, &e)) {
		snprintf(why, why_len, "no valid MAC");
	} else if (e.lease != lease || strcmp(e.node, t->cc->node) != 0 ||
		   !cl_env_bound(&e, cl_jint(kv, "create_revision"), cl_jint(kv, "version"))) {
		snprintf(why, why_len, "not bound to lease %" PRId64, lease);
	} else {
		return true;
	}
	return false;
}

/* Claim nodes/<node> on our lease: created if absent (txn, compare
 * create_revision == 0), re-written when already on our lease (a
 * reconnection), taken over when no live node's value holds it (a squatter:
 * lease-less, or no valid MAC; compare mod_revision). 0 when the key is
 * ours, -EEXIST when another live lease holds it (*holder: its lease and
 * value), or a request error. etcd serialises two nodes that claim the same
 * name at once: one creates, the other finds it. */
static int claim_node(struct cl_etcd *t, char *holder, size_t holder_len)
{
	char key[160], payload[512];
	key_of(t, key, sizeof(key), "nodes/%s", t->cc->node);
	if (node_payload(t, payload, sizeof(payload)) < 0)
		return -ENOMEM;
	for (int round = 0; round < 4; round++) {
		int64_t ver = t->ks_node.ver + 1;
		json_t *body = cas_body(t, key, &t->ks_node, payload, t->lease_id), *out, *kv = NULL;
		if (!body)
			return -EINVAL;
		int r = cl_http_req(&t->http, "/v3/kv/txn", body, &out);
		if (r < 0)
			return r;
		bool won = json_is_true(json_object_get(out, "succeeded"));
		cas_after(out, &t->ks_node, ver, won, &kv);
		if (won) {
			json_decref(out);
			return 0;
		}
		if (!kv) {
			json_decref(out);
			continue; /* deleted between compare and range: claim again */
		}
		int64_t lease = cl_jint(kv, "lease");
		char why[80];
		if (lease == t->lease_id || !claim_is_live(t, key, kv, why, sizeof(why))) {
			if (lease != t->lease_id) {
				stat_add(t, &t->st.names_reclaimed, 1);
				cp_warn("cluster: %s was held by a value that is no live node's (%s, lease %" PRId64
					"): taken over",
					key, why, lease);
			}
			json_decref(out);
			continue; /* ours, or a squatter's: write over it at the version found */
		}
		char other[CL_VALUE_MAX + 4] = "";
		const char *vb = json_string_value(json_object_get(kv, "value"));
		if (vb && cl_b64_dec(vb, other, sizeof(other)) < 0)
			other[0] = '\0';
		const char *nl = strchr(other, '\n');
		snprintf(holder, holder_len, "lease %" PRId64 ", %.300s", lease, nl ? nl + 1 : other);
		json_decref(out);
		/* the key is the live holder's, not ours: the next claim
		 * compares on "absent" again, not on the holder's version
		 * (which would let it write over the live node's name) */
		t->ks_node = (struct kstate){0};
		return -EEXIST;
	}
	return -EAGAIN;
}

/* Read the epoch key back (after a lost compare): the kstate, and the
 * value when it is valid (*cur; -1 when absent or not valid). */
static int epoch_read(struct cl_etcd *t, const char *key, int64_t *cur)
{
	json_t *out;
	int r = cl_http_req(&t->http, "/v3/kv/range", json_pack("{s:o}", "key", cl_jb64(key)), &out);
	if (r < 0)
		return r;
	json_t *kv = json_array_get(json_object_get(out, "kvs"), 0);
	*cur = -1;
	ks_set(&t->ks_epoch, kv ? cl_jint(kv, "create_revision") : 0, kv ? cl_jint(kv, "version") : 0,
	       cl_jint(json_object_get(out, "header"), "revision"));
	char val[CL_VALUE_MAX + 4];
	const char *vb = json_string_value(json_object_get(kv, "value"));
	struct cl_env e;
	const char *why;
	int vl = vb ? cl_b64_dec(vb, val, sizeof(val)) : -EINVAL;
	if (vl >= 0 && cl_env_parse(val, (size_t)vl, &e, &why) == 0 && cl_env_verify(t->mk, key, &e) &&
	    cl_env_bound(&e, t->ks_epoch.crev, t->ks_epoch.ver)) {
		json_t *j = payload_json(&e);
		uint64_t to;
		if (j && juint(j, "to", UINT32_MAX, &to))
			*cur = (int64_t)to;
		json_decref(j);
	}
	json_decref(out);
	return 0;
}

/* Move etcd's epoch up to `to`, one at a time (compare-and-swap on the
 * key's version: from the value this node knows to that plus one). Another
 * node that advanced it as far first ends it (the watch brings theirs). */
static int epoch_advance(struct cl_etcd *t, const struct cl_out *m)
{
	char key[160], payload[320];
	key_of(t, key, sizeof(key), "%s", "epoch");
	bool have = t->epoch_have;
	int64_t cur = t->epoch_val;
	for (int step = 0; step < 64; step++) {
		if (have && cur >= (int64_t)m->to)
			return 0;
		json_t *p;
		if (have)
			p = json_pack("{s:I, s:I, s:s}", "to", (json_int_t)(cur + 1), "from", (json_int_t)cur, "why", m->why);
		else if (!t->ks_epoch.ver)
			p = json_pack("{s:I, s:s}", "to", (json_int_t)m->to, "why", m->why); /* creates it */
		else if (m->to)
			/* a key there with no valid value: written over, one up from below */
			p = json_pack("{s:I, s:I, s:s}", "to", (json_int_t)m->to, "from", (json_int_t)m->to - 1, "why",
				      m->why);
		else
			return 0;
		char *s = p ? json_dumps(p, JSON_COMPACT) : NULL;
		json_decref(p);
		if (!s)
			return -ENOMEM;
		snprintf(payload, sizeof(payload), "%s", s);
		free(s);
		int64_t ver = t->ks_epoch.ver + 1;
		json_t *body = cas_body(t, key, &t->ks_epoch, payload, 0), *out;
		if (!body)
			return -EINVAL;
		int r = cl_http_req(&t->http, "/v3/kv/txn", body, &out);
		if (r < 0)
			return r;
		bool won = json_is_true(json_object_get(out, "succeeded"));
		cas_after(out, &t->ks_epoch, ver, won, NULL);
		json_decref(out);
		if (won) {
			stat_add(t, &t->st.cas_won, 1);
			cur = have ? cur + 1 : (int64_t)m->to;
			have = true;
			/* known here at once: a second advance right after this
			 * one steps from it, and the echo is no jump */
			t->epoch_have = true;
			if (cur > (int64_t)t->epoch_val)
				t->epoch_val = (uint32_t)cur;
			continue;
		}
		stat_add(t, &t->st.cas_lost, 1);
		int64_t found;
		if ((r = epoch_read(t, key, &found)) < 0)
			return r;
		if (found >= 0) {
			cur = found;
			have = true;
		} else if (t->epoch_have) {
			cur = t->epoch_val; /* not a valid value there: written over from the last valid one */
			have = true;
		} else {
			have = false;
		}
	}
	cp_warn("cluster: the epoch is more than 64 steps behind this node's (%u): etcd left where it is", m->to);
	return 0;
}

static int points_put(struct cl_etcd *t, uint8_t alive, uint8_t judged)
{
	char key[160], payload[64];
	if (!t->lease_id)
		return 0;
	key_of(t, key, sizeof(key), "points/%s", t->cc->node);
	snprintf(payload, sizeof(payload), "{\"alive\":%u,\"judged\":%u}", alive, judged);
	int r = cas_put(t, key, &t->ks_points, payload, t->lease_id, false);
	return r < 0 ? r : 0;
}

/* This node's down/ record: the peers of its window whose beats it proved
 * stopped (the others judge those peers by it). */
static int down_put(struct cl_etcd *t)
{
	char key[160];
	if (!t->lease_id)
		return 0;
	json_t *arr = json_array();
	for (unsigned i = 0; i < t->n_peers; i++) {
		const struct cl_peer *p = &t->peer[i];
		if (!p->watched || p->bv.state != CL_BEAT_DOWN)
			continue;
		json_array_append_new(arr, json_pack("{s:s, s:I, s:I}", "node", p->name, "lease", (json_int_t)p->lease,
						     "gap_ms", (json_int_t)(now_ms() - p->bv.last_ms)));
	}
	json_t *v = json_pack("{s:o}", "down", arr);
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!s)
		return -ENOMEM;
	key_of(t, key, sizeof(key), "down/%s", t->cc->node);
	int r = cas_put(t, key, &t->ks_down, s, t->lease_id, false);
	free(s);
	if (r == 1)
		stat_add(t, &t->st.down_records, 1);
	return r < 0 ? r : 0;
}

static int send_out(struct cl_etcd *t, const struct cl_out *m)
{
	char key[160];
	switch (m->kind) {
	case CL_OUT_LINE: {
		char ls[8];
		snprintf(ls, sizeof(ls), "%u", m->line);
		key_of(t, key, sizeof(key), "lines/%s", ls);
		json_t *v = json_pack("{s:s, s:s, s:I, s:s}", "state", m->state, "event", m->event, "uid",
				      (json_int_t)m->uid, "why", m->why);
		char *s = json_dumps(v, JSON_COMPACT);
		json_decref(v);
		if (!s)
			return -ENOMEM;
		int r = cas_put(t, key, &t->ks_line[m->line], s, 0, m->create_only);
		free(s);
		return r < 0 ? r : 0;
	}
	case CL_OUT_EPOCH:
		return epoch_advance(t, m);
	case CL_OUT_POINTS:
		return points_put(t, m->alive, m->judged);
	}
	return -EINVAL;
}

/* Send every queued change; stop at the first failure (it stays queued). */
static int drain_out(struct cl_etcd *t, struct cl_out *last_points)
{
	struct cl_out m;
	while (cl_queue_peek_out(&t->q, &m)) {
		int r = send_out(t, &m);
		if (r < 0)
			return r;
		if (m.kind == CL_OUT_POINTS)
			*last_points = m;
		cl_queue_drop_out(&t->q);
	}
	return 0;
}

/* ---- the snapshot ------------------------------------------------------- */

/* Range [start, end) at revision rev in pages of CL_PAGE_KEYS keys, each
 * answer read up to CL_PAGE_KV_BYTES a key: a page longer than that holds
 * a value fanogate never wrote, and is read again halved (so is a page
 * that takes longer than four requests), down to one key; a single key
 * that long is skipped (refused, counted). count_only: *count
 * set, nothing fed. Every kv goes through kv_to_in; *returned counts them. */
static int range_paged(struct cl_etcd *t, const char *start, size_t sl, const char *end, size_t el, int64_t *rev,
		       bool count_only, int64_t *count, unsigned *returned)
{
	char from[CL_KEY_RAW_MAX + 2], e64[4 * (CL_KEY_RAW_MAX / 3 + 2)];
	if (sl > CL_KEY_RAW_MAX || el > CL_KEY_RAW_MAX || cl_b64_enc(end, el, e64, sizeof(e64)) < 0)
		return -EINVAL;
	memcpy(from, start, sl);
	size_t fl = sl;
	int limit = CL_PAGE_KEYS;
	for (;;) {
		char rv[32], lim[16];
		snprintf(rv, sizeof(rv), "%" PRId64, *rev);
		snprintf(lim, sizeof(lim), "%d", limit);
		json_t *body = json_pack("{s:o, s:s}", "key", cl_jb64n(from, fl), "range_end", e64);
		if (*rev)
			json_object_set_new(body, "revision", json_string(rv));
		if (count_only)
			json_object_set_new(body, "count_only", json_true());
		else
			json_object_set_new(body, "limit", json_string(lim));
		json_t *out;
		/* etcd builds the whole answer before it sends any: a page
		 * holding megabytes nobody of ours wrote is slow, not only long;
		 * it gets more time than a request, and is halved when even
		 * that is not enough */
		int r = cl_http_req_tmo(&t->http, "/v3/kv/range", body, &out, 4 * t->cc->timeout_ms,
				count_only ? 0 : (size_t)limit * CL_PAGE_KV_BYTES + CL_PAGE_KV_BYTES);
		if ((r == -EMSGSIZE || (r == -ETIMEDOUT && !count_only)) && limit > 1) {
			limit /= 2;
			continue;
		}
		if (r == -EMSGSIZE) {
			/* one key larger than we read: learn its name alone, skip it */
			json_t *kb = json_pack("{s:o, s:s, s:s, s:b}", "key", cl_jb64n(from, fl), "range_end", e64, "limit", "1",
					       "keys_only", 1);
			if (*rev)
				json_object_set_new(kb, "revision", json_string(rv));
			if ((r = cl_http_req(&t->http, "/v3/kv/range", kb, &out)) < 0)
				return r;
			json_t *kv = json_array_get(json_object_get(out, "kvs"), 0);
			char raw[CL_KEY_RAW_MAX + 4];
			const char *k64 = json_string_value(json_object_get(kv, "key"));
			int kl = k64 ? cl_b64_dec(k64, raw, sizeof(raw)) : -EINVAL;
			json_decref(out);
			if (kl < 0 || (size_t)kl + 1 > CL_KEY_RAW_MAX)
				return -EPROTO;
			refuse(t, RF_UNAUTH, raw, "value larger than any fanogate writes");
			(*returned)++;
			memcpy(from, raw, (size_t)kl);
			from[kl] = '\0';
			fl = (size_t)kl + 1;
			limit = CL_PAGE_KEYS;
			continue;
		}
		if (r < 0)
			return r;
		if (!*rev)
			*rev = cl_jint(json_object_get(out, "header"), "revision");
		if (count_only) {
			*count = cl_jint(out, "count");
			json_decref(out);
			return 0;
		}
		json_t *kvs = json_object_get(out, "kvs"), *kv;
		size_t i;
		char last[CL_KEY_RAW_MAX + 4];
		int ll = -1;
		json_array_foreach(kvs, i, kv) {
			kv_to_in(t, kv, false, true);
			const char *k64 = json_string_value(json_object_get(kv, "key"));
			ll = k64 ? cl_b64_dec(k64, last, sizeof(last)) : -EINVAL;
			(*returned)++;
		}
		bool more = json_is_true(json_object_get(out, "more"));
		json_decref(out);
		if (!more)
			return 0;
		if (ll < 0 || (size_t)ll + 1 > CL_KEY_RAW_MAX)
			return -EPROTO;
		memcpy(from, last, (size_t)ll);
		from[ll] = '\0'; /* the next key after the last one */
		fl = (size_t)ll + 1;
		limit = CL_PAGE_KEYS;
	}
}

static int snapshot(struct cl_etcd *t)
{
	char s[CL_KEY_RAW_MAX], e[CL_KEY_RAW_MAX];
	size_t pl = t->prefix_len;
	int64_t rev = 0, total = 0, beats = 0;
	unsigned returned = 0;
	memcpy(s, t->cc->prefix, pl);
	memcpy(e, t->cc->prefix, pl);
	e[pl - 1]++;
	/* the revision every page is read at, and how many keys there are */
	int r = range_paged(t, s, pl, e, pl, &rev, true, &total, &returned);
	if (r < 0)
		return r;
	struct cl_in up = {.kind = CL_IN_UP};
	snprintf(up.why, sizeof(up.why), "%s", cl_http_endpoint(&t->http));
	cl_queue_push_in(&t->q, &up);
	t->revision = rev;
	pthread_mutex_lock(&t->lock);
	t->st.revision = rev;
	pthread_mutex_unlock(&t->lock);
	/* the snapshot lists every live node again; each is judged afresh */
	t->n_peers = 0;
	t->in_snapshot = true; /* epoch_have stays: a value refused now leaves the last valid one */
	/* nodes first: the writers of everything else are checked against them */
	static const char *const parts[] = {"nodes/", "points/", "down/", "epoch", "lines/"};
	uint64_t foreign0;
	pthread_mutex_lock(&t->lock);
	foreign0 = t->st.foreign_keys;
	pthread_mutex_unlock(&t->lock);
	e[pl - 1] = '/'; /* the parts' ends are under the prefix */
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t n = strlen(parts[i]);
		memcpy(s + pl, parts[i], n);
		memcpy(e + pl, parts[i], n);
		size_t sl = pl + n, el = pl + n;
		if (parts[i][n - 1] == '/') {
			e[el - 1]++;
		} else {
			e[el++] = '\0'; /* exactly this key */
		}
		if ((r = range_paged(t, s, sl, e, el, &rev, false, NULL, &returned)) < 0) {
			t->in_snapshot = false;
			return r;
		}
	}
	memcpy(s + pl, "beats/", 6);
	memcpy(e + pl, "beats0", 6);
	r = range_paged(t, s, pl + 6, e, pl + 6, &rev, true, &beats, &returned);
	t->in_snapshot = false;
	if (r < 0)
		return r;
	window_update(t);
	int64_t unread = total - beats - (int64_t)returned;
	if (unread > 0)
		stat_add(t, &t->st.foreign_keys, (uint64_t)unread);
	uint64_t foreign;
	pthread_mutex_lock(&t->lock);
	foreign = t->st.foreign_keys - foreign0;
	pthread_mutex_unlock(&t->lock);
	if (foreign)
		cp_warn("cluster: %" PRIu64 " keys under %s are not fanogate's (outside its schema): ignored", foreign,
			t->cc->prefix);
	struct cl_in end = {.kind = CL_IN_SNAP_END, .revision = rev};
	cl_queue_push_in(&t->q, &end);
	return 0;
}

/* One round of lease probes over the peers of the beat window (reads
 * only). A probe that fails ends the round, counted, and changes nothing.
 * The table may change while a request waits (the watches are fed
 * meanwhile), so each answer is matched to its node by name and lease
 * again. */
static void probe_peers(struct cl_etcd *t)
{
	for (unsigned i = 0; i < t->n_peers && !atomic_load(&t->stop); i++) {
		if (!t->peer[i].watched)
			continue;
		char name[FG_CLUSTER_NAME_MAX], id[32];
		int64_t lease = t->peer[i].lease;
		snprintf(name, sizeof(name), "%s", t->peer[i].name);
		snprintf(id, sizeof(id), "%" PRId64, lease);
		json_t *out;
		stat_add(t, &t->st.lease_probes, 1);
		uint64_t sent = now_ms();
		int r = cl_http_req(&t->http, "/v3/lease/timetolive", json_pack("{s:s}", "ID", id), &out);
		uint64_t recv = now_ms();
		if (r < 0) {
			stat_add(t, &t->st.lease_probe_failures, 1);
			if (!t->probe_failing)
				cp_warn("cluster: etcd %s: lease probe of node %s failed (%s): a lost node is seen only "
					"when its lease expires until probes answer again",
					cl_http_endpoint(&t->http), name, strerror(-r));
			t->probe_failing = true;
			return;
		}
		if (t->probe_failing)
			cp_info("cluster: etcd %s: lease probes answer again", cl_http_endpoint(&t->http));
		t->probe_failing = false;
		/* TTL 0 is left out of the JSON; -1 and no grantedTTL: no such lease */
		int64_t ttl = cl_jint(out, "TTL"), granted = cl_jint(out, "grantedTTL");
		uint64_t term = (uint64_t)cl_jint(json_object_get(out, "header"), "raft_term");
		json_decref(out);
		struct cl_peer *p = peer_find(t, name);
		if (!p || p->lease != lease)
			continue; /* its key went (or moved to another lease) meanwhile */
		if (!cl_lease_judge(&p->v, ttl, granted, term, sent, recv, t->stale_s))
			continue;
		bool stale = p->v.state == CL_PEER_STALE;
		struct cl_in m = {.kind = CL_IN_PEER_LEASE, .lease_id = lease, .ttl = ttl, .granted = granted,
				  .stale = stale};
		snprintf(m.node, sizeof(m.node), "%s", name);
		cl_queue_push_in(&t->q, &m);
	}
}

/* ---- heartbeats (docs/cluster.md "Heartbeats") ------------------------- */

static void beat_abort(struct cl_etcd *t)
{
	if (!t->beat_h)
		return;
	cl_http_xfer_end(&t->http, t->beat_h);
	t->beat_h = NULL;
	t->beat_buf.len = 0;
	t->beat_buf.overflow = false;
}

/* A beat finished (reap): the beat key's version moves on (or is taken
 * from etcd's answer when the compare lost). A failed one is counted and
 * logged once per run of failures; nothing else: the next one goes out on
 * time. */
static void beat_done(struct cl_etcd *t, const char *fail, long status)
{
	bool ok = !fail && status == 200;
	json_error_t je;
	json_t *out = ok && t->beat_buf.p ? json_loadb(t->beat_buf.p, t->beat_buf.len, 0, &je) : NULL;
	bool won = json_is_true(json_object_get(out, "succeeded"));
	if (out)
		cas_after(out, &t->ks_beat, t->beat_ver, won, NULL);
	json_decref(out);
	if (ok && won) {
		if (t->beat_failing)
			cp_info("cluster: etcd %s: heartbeats go through again", cl_http_endpoint(&t->http));
		t->beat_failing = false;
	} else {
		stat_add(t, &t->st.beat_failures, 1);
		if (!t->beat_failing)
			cp_warn("cluster: etcd %s: a heartbeat failed (%s, HTTP %ld%s): the others may report this node "
				"down until one goes through",
				cl_http_endpoint(&t->http), fail ? fail : "answered", status,
				ok ? ", its version moved: written again at the next" : "");
		t->beat_failing = true;
	}
	beat_abort(t);
}

static void beat_send(struct cl_etcd *t, uint64_t now)
{
	char key[160], payload[64];
	key_of(t, key, sizeof(key), "beats/%s", t->cc->node);
	/* ms: this node's monotonic clock at sending, read back by this node
	 * only (beat_seen: how recent the watch is proven to be) */
	snprintf(payload, sizeof(payload), "{\"ms\":%" PRIu64 "}", now);
	t->beat_ver = t->ks_beat.ver + 1;
	json_t *body = cas_body(t, key, &t->ks_beat, payload, t->lease_id);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return;
	t->beat_buf.len = 0;
	/* a beat that hangs (a member partitioned away, no leader) must not hold
	 * back the next one for a whole timeout_ms: two periods at most */
	uint64_t tmo = 2ull * t->cc->beat_ms < t->cc->timeout_ms ? 2ull * t->cc->beat_ms : t->cc->timeout_ms;
	t->beat_h = cl_http_xfer_start(&t->http, "/v3/kv/txn", text, &t->beat_buf, (long)tmo);
	free(text);
	if (!t->beat_h)
		return;
	t->beat_sent_ms = now;
	t->beat_next_ms = now + t->cc->beat_ms;
	stat_add(t, &t->st.beats_sent, 1);
}

/* Report every beating peer of the window whose silence is proven
 * (cl_beat_down); its down/ record tells the others. */
static void beat_judge(struct cl_etcd *t, uint64_t now)
{
	for (unsigned i = 0; i < t->n_peers; i++) {
		struct cl_peer *p = &t->peer[i];
		struct cl_beat_view *v = &p->bv;
		if (!p->watched || !p->beat_ms || !cl_beat_down(v, t->beat_proven_ms, t->beat_steady_ms, t->beat_down_ms))
			continue;
		v->state = CL_BEAT_DOWN;
		t->down_dirty = true;
		peer_emit(t, p, true, (int64_t)(now - v->last_ms));
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
		const struct cl_peer *p = &t->peer[i];
		uint64_t at = cl_beat_from(&p->bv, t->beat_steady_ms) + t->beat_down_ms;
		if (p->watched && p->beat_ms && p->bv.state != CL_BEAT_DOWN && at > now && at < next)
			next = at;
	}
	return next;
}

/* From pump: send the beat when due, or at once when a peer's silence has
 * reached the bound and no beat sent since could prove it (so the proof
 * comes one round trip after the bound, not up to a beat period later);
 * then judge. A beat's seq changes the beat key's version: the watch that
 * brings it back is the proof. */
static void beat_tick(struct cl_etcd *t)
{
	if (!t->beat_down_ms)
		return;
	uint64_t now = now_ms();
	if (t->beating && !t->beat_h && t->lease_id) {
		bool due = now >= t->beat_next_ms;
		for (unsigned i = 0; !due && i < t->n_peers; i++) {
			const struct cl_peer *p = &t->peer[i];
			uint64_t at = cl_beat_from(&p->bv, t->beat_steady_ms) + t->beat_down_ms;
			due = p->watched && p->beat_ms && p->bv.state != CL_BEAT_DOWN && now >= at && t->beat_sent_ms < at;
		}
		if (due)
			beat_send(t, now);
	}
	beat_judge(t, now);
}

/* ---- the transport's hooks ------------------------------------------------ */

/* Every turn of the transport's wait: the heartbeat's timers. */
static void on_idle(void *arg)
{
	beat_tick(arg);
}

/* A transfer of this file's ended: the beat is the only one. */
static void on_done(void *arg, CURL *x, const char *fail, long status)
{
	struct cl_etcd *t = arg;
	if (t->beat_h && x == t->beat_h)
		beat_done(t, fail, status);
}

/* One watch event: a fact for the loop when it is authentic and bound. */
static void on_event(void *arg, struct cl_watch *w, json_t *kv, bool deleted)
{
	struct cl_etcd *t = arg;
	int64_t rev = cl_jint(kv, "mod_revision");
	kv_to_in(t, kv, deleted, false);
	if (w == &t->kw && rev > t->revision) {
		t->revision = rev;
		pthread_mutex_lock(&t->lock);
		t->st.revision = rev;
		pthread_mutex_unlock(&t->lock);
	}
	stat_add(t, &t->st.watch_events, 1);
}

/* ---- the thread ---------------------------------------------------------- */

static void watches_stop(struct cl_etcd *t)
{
	cl_watch_stop(&t->http, &t->kw);
	cl_watch_stop(&t->http, &t->bw);
}

static int watches_start(struct cl_etcd *t)
{
	int r = cl_watch_start(&t->http, &t->kw, t->revision + 1);
	if (r == 0 && t->beat_down_ms) {
		int64_t from = t->bw.revision > t->revision ? t->bw.revision : t->revision;
		r = cl_watch_start(&t->http, &t->bw, from + 1);
		t->window_dirty = false;
	}
	return r;
}

static int connect_once(struct cl_etcd *t, struct cl_out *last_points, char *holder, size_t holder_len,
			const char **step)
{
	int r;
	*step = "authenticate";
	if ((r = cl_http_authenticate(&t->http)) < 0)
		return r;
	*step = "lease";
	if (t->lease_id && (r = lease_keepalive(t)) < 0 && r != -ENOENT)
		return r;
	if (!t->lease_id && (r = lease_grant(t)) < 0)
		return r;
	/* the name first: a duplicate writes nothing (not even its queue) */
	*step = "claim the name";
	if ((r = claim_node(t, holder, holder_len)) < 0)
		return r;
	*step = "send the queued changes";
	if ((r = drain_out(t, last_points)) < 0)
		return r;
	if ((r = send_out(t, last_points)) < 0)
		return r;
	*step = "read the snapshot";
	if ((r = snapshot(t)) < 0)
		return r;
	t->bw.revision = 0;
	*step = "watch";
	return watches_start(t);
}

static void *thread_main(void *arg)
{
	struct cl_etcd *t = arg;
	bool up = false, down_reported = false;
	unsigned fails = 0, refused = 0;
	uint64_t next_ka = 0, next_probe = 0;
	uint64_t ka_ms = t->cc->keepalive_ms ? t->cc->keepalive_ms : t->cc->lease_ttl_s * 1000u / 3u;
	bool dup_reported = false;
	char holder[400];
	struct cl_out last_points = {.kind = CL_OUT_POINTS};

	while (!atomic_load(&t->stop)) {
		if (!up) {
			pthread_mutex_lock(&t->lock);
			snprintf(t->endpoint_now, sizeof(t->endpoint_now), "%s", cl_http_endpoint(&t->http));
			pthread_mutex_unlock(&t->lock);
			holder[0] = '\0';
			const char *step = "";
			int r = connect_once(t, &last_points, holder, sizeof(holder), &step);
			if (r == -EEXIST) {
				t->beating = false; /* a duplicate writes nothing */
				/* etcd answers: not lost, but this node may not
				 * join; the same endpoint is asked again shortly */
				if (!dup_reported) {
					struct cl_in m = {.kind = CL_IN_DUPLICATE};
					snprintf(m.why, sizeof(m.why), "%.150s", holder);
					cl_queue_push_in(&t->q, &m);
					dup_reported = true;
				}
				stat_add(t, &t->st.duplicate_refusals, 1);
				fails = 0;
				refused = 0;
				cl_http_pump(&t->http, 500);
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
				next_ka = now_ms() + ka_ms;
				next_probe = 0;
				t->beating = true;
				t->beat_next_ms = 0; /* at once: the others see this node beating again */
				cl_http_problem_cleared(&t->http);
				cp_info("cluster: etcd %s: connected, watching %s from revision %" PRId64,
					cl_http_endpoint(&t->http), t->cc->prefix, t->revision + 1);
				continue;
			}
			watches_stop(t);
			if (r != -ECONNREFUSED && r != -EACCES && !cl_http_problem(&t->http)[0])
				cp_warn("cluster: etcd %s: cannot %s (%s); trying the next endpoint", cl_http_endpoint(&t->http),
					step, strerror(-r));
			fails++;
			refused = r == -ECONNREFUSED ? refused + 1 : 0;
			cl_http_next_endpoint(&t->http);
			/* Lost: every endpoint refused the connection in a row
			 * (nothing listens: no reason to wait), or nothing
			 * succeeded for a lease TTL (slow or leaderless: an
			 * election after the leader's loss is shorter; and by
			 * then the others have written this node off too). */
			if (!down_reported && (refused >= t->cc->n_endpoints ||
					       now_ms() - t->http.last_ok >= t->cc->lost_after_ms)) {
				struct cl_in m = {.kind = CL_IN_DOWN};
				snprintf(m.why, sizeof(m.why), "no etcd endpoint answered (%u tries, last: %s%s%.80s)", fails,
					 strerror(-r), cl_http_problem(&t->http)[0] ? "; " : "", cl_http_problem(&t->http));
				cl_queue_push_in(&t->q, &m);
				down_reported = true;
			}
			/* every endpoint failed: back off a little before the next
			 * round; longer when etcd refused this node's credentials
			 * (each try costs etcd a bcrypt: no storm of them) */
			if (r == -EACCES)
				cl_http_pump(&t->http, 2000);
			else if (fails % t->cc->n_endpoints == 0)
				cl_http_pump(&t->http, 100);
			continue;
		}
		int r = drain_out(t, &last_points);
		if (r == 0 && t->down_dirty) {
			t->down_dirty = false;
			r = down_put(t);
			if (r < 0)
				t->down_dirty = true;
		}
		if (r == 0 && t->window_dirty && t->beat_down_ms) {
			int64_t from = t->bw.revision > t->revision ? t->bw.revision : t->revision;
			r = cl_watch_start(&t->http, &t->bw, from + 1);
			t->window_dirty = false;
		}
		if (r == 0 && now_ms() >= next_ka) {
			r = lease_keepalive(t);
			next_ka = now_ms() + ka_ms;
		}
		if (r == 0 && t->stale_s && now_ms() >= next_probe) {
			next_probe = now_ms() + ka_ms;
			probe_peers(t);
		}
		if (r == 0 && (t->kw.broken || t->bw.broken)) {
			stat_add(t, &t->st.watch_restarts, 1);
			r = -EPIPE;
		}
		if (r < 0) {
			cp_warn("cluster: etcd %s: %s; trying the next endpoint", cl_http_endpoint(&t->http),
				r == -ENOENT ? "our lease expired" : r == -EPIPE ? "a watch ended" : strerror(-r));
			watches_stop(t);
			up = false;
			/* beats go on while reconnecting (on the next endpoint): a
			 * member going away must not silence this node for the
			 * others; a lost lease stops them (lease_keepalive) */
			cl_http_next_endpoint(&t->http);
			continue;
		}
		uint64_t now = now_ms(), next = t->stale_s && next_probe < next_ka ? next_probe : next_ka;
		uint64_t nb = beat_next_due(t, now);
		if (nb < next)
			next = nb;
		if (t->down_dirty || t->window_dirty)
			next = now;
		cl_http_pump(&t->http, next > now ? (int)(next - now < 100 ? next - now : 100) : 0);
	}
	t->beating = false;
	beat_abort(t);
	/* clean stop: revoke the lease so the others see this node leave at once */
	if (up && t->lease_id) {
		char id[32];
		json_t *out;
		snprintf(id, sizeof(id), "%" PRId64, t->lease_id);
		atomic_store(&t->stop, false); /* the transport checks it; one last request */
		if (cl_http_req(&t->http, "/v3/lease/revoke", json_pack("{s:s}", "ID", id), &out) == 0)
			json_decref(out);
		atomic_store(&t->stop, true);
	}
	watches_stop(t);
	return NULL;
}

int cl_etcd_start(struct cl_etcd **out, const struct fg_config *cfg, int *evfd, char *why, size_t why_len)
{
	struct cl_etcd *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	t->cfg = cfg;
	t->cc = &cfg->cluster;
	t->q.evfd = -1;
	t->stale_s = cl_lease_stale_s(t->cc);
	t->beat_down_ms = cl_beat_down_ms(t->cc);
	t->prefix_len = strlen(t->cc->prefix);
	pthread_mutex_init(&t->lock, NULL);
	/* the fleet key: a file only this user reads */
	uint8_t key[CL_FLEET_KEY_MAX];
	char w[FG_PATH_MAX + 200];
	int kl = cl_secret_read(t->cc->key_file, key, sizeof(key), w, sizeof(w));
	int r = kl;
	if (kl >= 0 && (size_t)kl < CL_FLEET_KEY_MIN) {
		snprintf(w, sizeof(w), "%s: %d bytes; at least %u (openssl rand -hex 32 > it)", t->cc->key_file, kl,
			 CL_FLEET_KEY_MIN);
		r = -EINVAL;
	}
	if (r >= 0 && (r = cl_mac_key_new(&t->mk, key, (size_t)kl)) < 0)
		snprintf(w, sizeof(w), "%s: HMAC-SHA256 not available from OpenSSL", t->cc->key_file);
	OPENSSL_cleanse(key, sizeof(key));
	if (r < 0) {
		snprintf(why, why_len, "[cluster] key_file %s", w);
		cl_etcd_stop(t);
		return r;
	}
	/* the transport, with the etcd password (also a file only this user reads) */
	const struct cl_http_hooks hooks = {.idle = on_idle, .done = on_done, .event = on_event, .arg = t};
	if ((r = cl_http_init(&t->http, t->cc, &hooks, &t->stop, why, why_len)) < 0) {
		cl_etcd_stop(t);
		return r;
	}
	t->peers_max = t->cc->nodes_max > 1 ? t->cc->nodes_max - 1 : 1;
	t->peer = calloc(t->peers_max, sizeof(*t->peer));
	r = cl_queue_init(&t->q);
	/* the keys' watch: [prefix "c", prefix end): every key of the schema
	 * but beats/ (which sorts before "c"), whose window bw watches */
	char kstart[72], end[72];
	size_t pl = t->prefix_len;
	memcpy(end, t->cc->prefix, pl + 1);
	end[pl - 1]++; /* '/' + 1: every key under the prefix */
	snprintf(kstart, sizeof(kstart), "%sc", t->cc->prefix);
	if (!t->peer || r < 0 || cl_b64_enc(kstart, strlen(kstart), t->kw.range[0], sizeof(t->kw.range[0])) < 0 ||
	    cl_b64_enc(end, pl, t->kw.range[1], sizeof(t->kw.range[1])) < 0) {
		snprintf(why, why_len, "cannot set up the etcd client (eventfd)");
		cl_etcd_stop(t);
		return -ENOMEM;
	}
	window_update(t);
	t->window_dirty = false;
	/* The thread inherits the loop's mask (SIGINT/SIGTERM/SIGHUP blocked for
	 * the signalfds); cp_harden's per-thread privilege drop signal must
	 * reach it, so nothing more is blocked. */
	r = pthread_create(&t->thread, NULL, thread_main, t);
	if (r != 0) {
		snprintf(why, why_len, "cannot start the cluster thread: %s", strerror(r));
		cl_etcd_stop(t);
		return -r;
	}
	pthread_setname_np(t->thread, "fg-cluster");
	t->started = true;
	*evfd = t->q.evfd;
	*out = t;
	return 0;
}

void cl_etcd_stop(struct cl_etcd *t)
{
	if (!t)
		return;
	if (t->started) {
		atomic_store(&t->stop, true);
		cl_queue_stop(&t->q);
		cl_http_wakeup(&t->http);
		pthread_join(t->thread, NULL);
	}
	cl_http_fini(&t->http);
	free(t->beat_buf.p);
	free(t->peer);
	cl_mac_key_free(t->mk);
	cl_queue_fini(&t->q);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

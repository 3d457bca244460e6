/* cl_http.h - the cluster thread's transport: etcd's v3 JSON gateway over
 * HTTP/1.1 or HTTPS with libcurl (docs/cluster.md "Client").
 *
 * Owns: one libcurl multi handle and every transfer on it; the endpoint in
 * use and the rotation to the next; TLS ([cluster] ca, cert, key); etcd
 * authentication ([cluster] user and password_file: the token every
 * request carries, renewed once when etcd no longer knows it); requests
 * (one JSON body out, one JSON answer back, bounded in time and size),
 * during which the watches keep streaming; watch streams (/v3/watch: the
 * gateway's framing, created, cancelled, compacted, ended) that hand each
 * event to the owner; the owner's own free-running transfers (the
 * heartbeat), reaped here and handed back; logging etcd's and TLS's
 * refusals once per change of reason; and the gateway's encodings (base64
 * keys and values, 64-bit integers as JSON strings).
 *
 * What it does not know: the key schema, the values, the state machine.
 * The owner (cp_cluster_etcd.c, struct cl_etcd) passes in hooks: one run
 * on every turn of a wait, one for a finished transfer the owner started,
 * one for each watch event. The transport calls nothing of its owner by
 * name.
 *
 * Threads: the cluster thread only, except cl_http_wakeup (any thread) and
 * cl_http_stats (any thread: relaxed atomics). */
#ifndef CL_HTTP_H
#define CL_HTTP_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/config.h"

#define CL_REPLY_MAX (8u << 20) /* an answer bigger than this is not read (-EMSGSIZE) */
#define CL_KEY_RAW_MAX 512      /* a key under the prefix longer than this is foreign */

/* An answer as it arrives (a request's, a watch's stream, a transfer's). */
struct cl_buf {
	char *p;
	size_t len, cap;
	size_t max;    /* the longest answer read (0: CL_REPLY_MAX) */
	bool overflow; /* the answer passed max: not read */
};

/* A watch stream. The owner embeds it and sets range (base64 key and
 * range_end) before cl_watch_start; the transport owns the rest. Once
 * started a watch is known to the transport until cl_http_fini (which
 * frees its buffer). */
struct cl_watch {
	CURL *h;
	struct cl_buf b;
	bool created;            /* etcd said the watch is created */
	bool broken;             /* the stream ended, was cancelled or compacted past: start again */
	int64_t revision;        /* the last revision it delivered (an event at or below it is not handed on) */
	char range[2][CL_KEY_RAW_MAX + 80]; /* key, range_end (base64) */
};

#define CL_HTTP_WATCHES 4u

struct cl_http_hooks {
	/* Every turn of a wait (a request, a watch's creation, cl_http_pump),
	 * after the watches were fed: the owner's timers (the heartbeat). */
	void (*idle)(void *arg);
	/* A transfer started with cl_http_xfer_start ended: fail is NULL on
	 * success (status: the HTTP status), else libcurl's reason. The owner
	 * ends it (cl_http_xfer_end). */
	void (*done)(void *arg, CURL *x, const char *fail, long status);
	/* One event of watch w, in revision order: kv (etcd's kv object,
	 * borrowed), deleted (a DELETE event). */
	void (*event)(void *arg, struct cl_watch *w, json_t *kv, bool deleted);
	void *arg;
};

struct cl_http {
	const struct fg_cluster_cfg *cc;
	struct cl_http_hooks hooks;
	const atomic_bool *stop; /* the owner's: set, a wait gives up (-EIO) */
	CURLM *multi;
	unsigned cur;            /* the endpoint in use: cc->endpoint[cur] */
	uint64_t last_ok;        /* mono ms of the last request that succeeded (at first: cl_http_init) */
	char password[256];      /* [cluster] password_file's first line ("" without user) */
	char token[256];         /* etcd's auth token ("" without [cluster] user) */
	char problem[200];       /* the last refusal logged ("" after a success) */
	struct cl_watch *watch[CL_HTTP_WATCHES]; /* the watches ever started */
	unsigned n_watches;
	CURL *req;               /* the request in flight (one at a time), or NULL */
	CURLcode req_code;       /* its result, once req_done */
	bool req_done;
	atomic_uint_fast64_t requests, request_failures, auth_failures;
};

/* Set up h (caller-owned storage) for cc (which must outlive it): the
 * libcurl multi handle and, with [cluster] user, the password read from
 * password_file (refused when others may read it). stop is the owner's
 * flag. Any thread, before the cluster thread starts. Returns 0 or -errno
 * with why; on failure h needs cl_http_fini all the same. */
FG_MUST_CHECK int cl_http_init(struct cl_http *h, const struct fg_cluster_cfg *cc, const struct cl_http_hooks *hooks,
			       const atomic_bool *stop, char *why, size_t why_len);
/* Stop every transfer and watch, free, wipe the password and the token.
 * The cluster thread has ended. */
void cl_http_fini(struct cl_http *h);
/* Any thread: wake the cluster thread out of a wait. */
void cl_http_wakeup(struct cl_http *h);
/* Any thread: the counters. */
void cl_http_stats(struct cl_http *h, uint64_t *requests, uint64_t *failures, uint64_t *auth_failures);

/* The endpoint in use, and a move to the next one. */
const char *cl_http_endpoint(const struct cl_http *h);
void cl_http_next_endpoint(struct cl_http *h);
/* The refusal last logged ("" when none since the last success), and the
 * end of it (logged: the endpoint answers again). */
const char *cl_http_problem(const struct cl_http *h);
void cl_http_problem_cleared(struct cl_http *h);

/* With [cluster] user: /v3/auth/authenticate, the token every later
 * request carries. 0 (also without user), or -errno with etcd's reason
 * logged (once per reason). */
FG_MUST_CHECK int cl_http_authenticate(struct cl_http *h);

/* POST body (consumed) to path on the current endpoint, the watches
 * streaming meanwhile; the answer in *out (the caller json_decrefs it).
 * 0, or -EIO / -ETIMEDOUT / -ECONNREFUSED / -EPROTO (HTTP status != 200,
 * or not JSON) / -EACCES (etcd refused the token, the user or a
 * permission) / -EMSGSIZE (the answer is longer than max; 0: CL_REPLY_MAX)
 * / -ENOMEM. timeout_ms bounds the whole request. A token etcd no longer
 * knows is renewed once and the request tried again. */
FG_MUST_CHECK int cl_http_req_tmo(struct cl_http *h, const char *path, json_t *body, json_t **out,
				  uint32_t timeout_ms, size_t max);
/* The same within [cluster] timeout_ms, any answer size. */
FG_MUST_CHECK int cl_http_req(struct cl_http *h, const char *path, json_t *body, json_t **out);

/* Run the multi handle for up to wait_ms (woken early by cl_http_wakeup or
 * socket activity): the watches are fed and the idle hook runs before and
 * after the wait. Then reap: a watch that ended is marked broken, the
 * owner's transfers that ended go to the done hook. */
void cl_http_pump(struct cl_http *h, int wait_ms);

/* Start w on its range from revision from and wait (timeout_ms) for etcd
 * to say it is created. 0, or -EIO (w is stopped) / -ENOMEM. */
FG_MUST_CHECK int cl_watch_start(struct cl_http *h, struct cl_watch *w, int64_t from);
/* End w's stream (it keeps its range and revision). */
void cl_watch_stop(struct cl_http *h, struct cl_watch *w);

/* Start a transfer of the owner's on the multi handle: POST text to path,
 * the answer into b (the caller's, kept until the end), at most timeout_ms.
 * It runs while the thread waits; its end goes to the done hook. NULL
 * when it cannot be made. */
CURL *cl_http_xfer_start(struct cl_http *h, const char *path, const char *text, struct cl_buf *b, long timeout_ms);
/* Remove and free a transfer of the owner's (ended or not). NULL ok. */
void cl_http_xfer_end(struct cl_http *h, CURL *x);

/* ---- the gateway's encodings ---------------------------------------- */

/* n bytes of in as base64 into out (NUL-terminated). 0, or -ENOSPC. */
FG_MUST_CHECK int cl_b64_enc(const void *in, size_t n, char *out, size_t cap);
/* Decode into out (NUL-terminated after the bytes); the byte count, or
 * -EINVAL when not base64 or too long for cap. */
FG_MUST_CHECK int cl_b64_dec(const char *in, char *out, size_t cap);
/* A JSON string of s (n bytes, or a C string) in base64 ("" when longer
 * than any value fanogate writes). A new reference. */
json_t *cl_jb64n(const void *s, size_t n);
json_t *cl_jb64(const char *s);
/* Member k of o as an int64 (the gateway writes them as strings; 0 when
 * absent or not a number). */
int64_t cl_jint(json_t *o, const char *k);

#endif

/* cl_http.c - etcd's v3 JSON gateway over libcurl (see cl_http.h for the
 * contract).
 *
 * One multi handle carries every transfer: the owner's watch streams, its
 * heartbeat, and at most one request at a time (the cluster thread waits
 * for it in cl_http_pump, so the watches keep streaming and the heartbeat
 * keeps going out while a request waits). Each transfer owns its header
 * list (the token may change while a watch streams): it hangs on the easy
 * handle (CURLOPT_PRIVATE) and is freed with it.
 *
 * Failures: a curl error, an HTTP status other than 200 or an answer that
 * is not JSON fail the request with an -errno the owner acts on (it moves
 * to the next endpoint); an etcd refusal of the user, the password, the
 * token or a permission, and a TLS failure, are logged here once per change
 * of reason with etcd's own words (cl_http_problem), and counted.
 *
 * Thread: the cluster thread, except the functions the header marks. */
#include "cl_http.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_secret.h"
#include "cl_value.h"
#include "cp_log.h"
#include "cp_loop.h"

static uint64_t mono_ms(void)
{
	return cp_now_ns() / 1000000u;
}

static void count(atomic_uint_fast64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- set-up ------------------------------------------------------------ */

int cl_http_init(struct cl_http *h, const struct fg_cluster_cfg *cc, const struct cl_http_hooks *hooks,
		 const atomic_bool *stop, char *why, size_t why_len)
{
	/* libcurl's global state is the process's: initialised once (loop
	 * thread, before the first transport thread exists), never undone. */
	static bool global_ok;
	memset(h, 0, sizeof(*h));
	h->cc = cc;
	h->hooks = *hooks;
	h->stop = stop;
	h->last_ok = mono_ms(); /* "nothing succeeded for ..." counts from the start */
	if (!global_ok) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(why, why_len, "curl_global_init failed");
			return -EIO;
		}
		global_ok = true;
	}
	if (cc->user[0]) {
		char w[FG_PATH_MAX + 200];
		int pl = cl_secret_read(cc->password_file, (uint8_t *)h->password, sizeof(h->password) - 1, w, sizeof(w));
		if (pl < 0) {
			snprintf(why, why_len, "[cluster] password_file %s", w);
			return pl;
		}
		h->password[pl] = '\0';
		char *nl = strchr(h->password, '\n');
		if (nl)
			*nl = '\0'; /* the first line */
	}
	h->multi = curl_multi_init();
	if (!h->multi) {
		snprintf(why, why_len, "cannot set up the etcd client (curl)");
		return -ENOMEM;
	}
	return 0;
}

void cl_http_fini(struct cl_http *h)
{
	for (unsigned i = 0; i < h->n_watches; i++) {
		cl_watch_stop(h, h->watch[i]);
		free(h->watch[i]->b.p);
		h->watch[i]->b = (struct cl_buf){0};
	}
	h->n_watches = 0;
	if (h->multi)
		curl_multi_cleanup(h->multi);
	h->multi = NULL;
	OPENSSL_cleanse(h->password, sizeof(h->password));
	OPENSSL_cleanse(h->token, sizeof(h->token));
}

void cl_http_wakeup(struct cl_http *h)
{
	curl_multi_wakeup(h->multi);
}

void cl_http_stats(struct cl_http *h, uint64_t *requests, uint64_t *failures, uint64_t *auth_failures)
{
	*requests = atomic_load_explicit(&h->requests, memory_order_relaxed);
	*failures = atomic_load_explicit(&h->request_failures, memory_order_relaxed);
	*auth_failures = atomic_load_explicit(&h->auth_failures, memory_order_relaxed);
}

const char *cl_http_endpoint(const struct cl_http *h)
{
	return h->cc->endpoint[h->cur];
}

void cl_http_next_endpoint(struct cl_http *h)
{
	h->cur = (h->cur + 1) % h->cc->n_endpoints;
}

/* ---- base64 and integers (etcd's JSON gateway) ------------------------- */

int cl_b64_enc(const void *in, size_t n, char *out, size_t cap)
{
	if (4 * ((n + 2) / 3) + 1 > cap)
		return -ENOSPC;
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	return 0;
}

int cl_b64_dec(const char *in, char *out, size_t cap)
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

json_t *cl_jb64n(const void *s, size_t n)
{
	char b[4 * (CL_VALUE_MAX / 3 + 1) + 8];
	if (cl_b64_enc(s, n, b, sizeof(b)) < 0)
		return json_string("");
	return json_string(b);
}

json_t *cl_jb64(const char *s)
{
	return cl_jb64n(s, strlen(s));
}

int64_t cl_jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (json_is_string(v)) {
		uint64_t x;
		const char *s = json_string_value(v);
		if (s[0] == '-')
			return strtoll(s, NULL, 10);
		return cl_dec_parse(s, strlen(s), INT64_MAX, &x) ? (int64_t)x : 0;
	}
	if (json_is_integer(v))
		return json_integer_value(v);
	return 0;
}

/* ---- etcd's reasons ------------------------------------------------------ */

/* A failure etcd or TLS gave a reason for: logged when the reason is new
 * (once per change of state, not per retry). */
static void problem(struct cl_http *h, const char *what)
{
	if (strncmp(h->problem, what, sizeof(h->problem) - 1) == 0)
		return;
	snprintf(h->problem, sizeof(h->problem), "%.*s", (int)sizeof(h->problem) - 1, what); /* a longer reason is cut */
	cp_err("cluster: etcd %s: %s", cl_http_endpoint(h), what);
}

const char *cl_http_problem(const struct cl_http *h)
{
	return h->problem;
}

void cl_http_problem_cleared(struct cl_http *h)
{
	if (!h->problem[0])
		return;
	cp_info("cluster: etcd %s answers again (was: %s)", cl_http_endpoint(h), h->problem);
	h->problem[0] = '\0';
}

/* etcd's reason in an error answer ({"error": ..., "message": ...}). */
static void etcd_reason(const struct cl_buf *b, long status, char *out, size_t cap)
{
	json_error_t je;
	json_t *j = b->p ? json_loadb(b->p, b->len, 0, &je) : NULL;
	const char *msg = json_string_value(json_object_get(j, "message"));
	if (!msg)
		msg = json_string_value(json_object_get(j, "error"));
	snprintf(out, cap, "HTTP %ld: %.150s", status, msg ? msg : (b->p ? b->p : ""));
	json_decref(j);
}

static bool is_tls_error(CURLcode c)
{
	return c == CURLE_SSL_CONNECT_ERROR || c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CERTPROBLEM ||
	       c == CURLE_SSL_CIPHER || c == CURLE_SSL_CACERT_BADFILE || c == CURLE_SSL_ISSUER_ERROR ||
	       c == CURLE_SSL_CRL_BADFILE || c == CURLE_SSL_ENGINE_INITFAILED || c == CURLE_SSL_PINNEDPUBKEYNOTMATCH ||
	       c == CURLE_SSL_INVALIDCERTSTATUS || c == CURLE_SSL_SHUTDOWN_FAILED || c == CURLE_SSL_CLIENTCERT;
}

/* ---- transfers ----------------------------------------------------------- */

static size_t buf_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct cl_buf *b = arg;
	size_t n = size * nmemb;
	size_t max = b->max ? b->max : CL_REPLY_MAX;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		if (b->len + n + 1 > max) {
			b->overflow = true;
			return 0; /* an answer this big is not read: fail the transfer */
		}
		if (cap > max)
			cap = max;
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

static void easy_free(CURL *x)
{
	if (!x)
		return;
	struct curl_slist *hd = NULL;
	curl_easy_getinfo(x, CURLINFO_PRIVATE, (char **)&hd);
	curl_easy_cleanup(x);
	curl_slist_free_all(hd);
}

static CURL *easy_new(struct cl_http *h, const char *path, const char *body, struct cl_buf *b, long timeout_ms,
		      bool with_token)
{
	char url[128], auth[300];
	const struct fg_cluster_cfg *cc = h->cc;
	CURL *x = curl_easy_init();
	if (!x)
		return NULL;
	struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
	if (hd && with_token && h->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: %s", h->token);
		struct curl_slist *n = curl_slist_append(hd, auth);
		if (!n) {
			curl_slist_free_all(hd);
			hd = NULL;
		} else {
			hd = n;
		}
	}
	if (!hd) {
		curl_easy_cleanup(x);
		return NULL;
	}
	curl_easy_setopt(x, CURLOPT_PRIVATE, (char *)hd);
	snprintf(url, sizeof(url), "%s%s", cl_http_endpoint(h), path);
	curl_easy_setopt(x, CURLOPT_URL, url);
	curl_easy_setopt(x, CURLOPT_COPYPOSTFIELDS, body);
	curl_easy_setopt(x, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(x, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(x, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(x, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x, CURLOPT_CONNECTTIMEOUT_MS, (long)cc->timeout_ms);
	if (timeout_ms)
		curl_easy_setopt(x, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(x, CURLOPT_PROTOCOLS_STR, cc->tls ? "https" : "http");
	if (cc->tls) {
		if (cc->ca[0])
			curl_easy_setopt(x, CURLOPT_CAINFO, cc->ca);
		if (cc->cert[0]) {
			curl_easy_setopt(x, CURLOPT_SSLCERT, cc->cert);
			curl_easy_setopt(x, CURLOPT_SSLKEY, cc->key);
		}
	}
	return x;
}

CURL *cl_http_xfer_start(struct cl_http *h, const char *path, const char *text, struct cl_buf *b, long timeout_ms)
{
	CURL *x = easy_new(h, path, text, b, timeout_ms, true);
	if (x)
		curl_multi_add_handle(h->multi, x);
	return x;
}

void cl_http_xfer_end(struct cl_http *h, CURL *x)
{
	if (!x)
		return;
	curl_multi_remove_handle(h->multi, x);
	easy_free(x);
}

static struct cl_watch *watch_of(struct cl_http *h, CURL *x)
{
	for (unsigned i = 0; i < h->n_watches; i++)
		if (h->watch[i]->h == x)
			return h->watch[i];
	return NULL;
}

/* Reap finished transfers: a watch ending is recorded as broken, the
 * request in flight as done (req_code), the owner's go to its done hook. */
static void reap(struct cl_http *h)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct cl_watch *w = watch_of(h, m->easy_handle);
		if (w) {
			w->broken = true;
		} else if (h->req && m->easy_handle == h->req) {
			h->req_code = m->data.result;
			h->req_done = true;
		} else {
			long status = 0;
			curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
			CURLcode c = m->data.result;
			h->hooks.done(h->hooks.arg, m->easy_handle, c == CURLE_OK ? NULL : curl_easy_strerror(c), status);
		}
	}
}

/* ---- watches -------------------------------------------------------------- */

/* One line of a watch stream: etcd's framing, then each event to the owner. */
static void watch_line(struct cl_http *h, struct cl_watch *w, const char *line, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(line, n, 0, &je);
	json_t *res = json_object_get(j, "result");
	if (!json_is_object(res)) {
		/* {"error": ...}: the stream is over */
		const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
		if (msg) {
			char why[200];
			snprintf(why, sizeof(why), "watch ended: %.150s", msg);
			problem(h, why);
		}
		w->broken = true;
		json_decref(j);
		return;
	}
	if (json_is_true(json_object_get(res, "created")))
		w->created = true;
	if (json_is_true(json_object_get(res, "canceled")) || cl_jint(res, "compact_revision")) {
		const char *reason = json_string_value(json_object_get(res, "cancel_reason"));
		if (reason && reason[0]) {
			char why[200];
			snprintf(why, sizeof(why), "watch refused: %.150s", reason);
			problem(h, why);
			if (strstr(reason, "user name") || strstr(reason, "permission") || strstr(reason, "token"))
				count(&h->auth_failures);
		}
		w->created = false;
		w->broken = true; /* compacted past us: resync with a range */
		json_decref(j);
		return;
	}
	json_t *evs = json_object_get(res, "events");
	size_t i;
	json_t *ev;
	json_array_foreach(evs, i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *kv = json_object_get(ev, "kv");
		int64_t rev = cl_jint(kv, "mod_revision");
		if (rev <= w->revision)
			continue; /* already delivered before a restart */
		h->hooks.event(h->hooks.arg, w, kv, type && strcmp(type, "DELETE") == 0);
		w->revision = rev;
	}
	json_decref(j);
}

static void watch_feed(struct cl_http *h, struct cl_watch *w)
{
	char *nl;
	size_t used = 0;
	if (!w->b.p)
		return;
	while ((nl = memchr(w->b.p + used, '\n', w->b.len - used))) {
		size_t n = (size_t)(nl - (w->b.p + used));
		if (n)
			watch_line(h, w, w->b.p + used, n);
		used += n + 1;
	}
	if (used) {
		memmove(w->b.p, w->b.p + used, w->b.len - used);
		w->b.len -= used;
	}
}

static void feed_all(struct cl_http *h)
{
	for (unsigned i = 0; i < h->n_watches; i++)
		watch_feed(h, h->watch[i]);
}

void cl_http_pump(struct cl_http *h, int wait_ms)
{
	int running;
	curl_multi_perform(h->multi, &running);
	feed_all(h);
	h->hooks.idle(h->hooks.arg);
	curl_multi_poll(h->multi, NULL, 0, wait_ms, NULL);
	curl_multi_perform(h->multi, &running);
	feed_all(h);
	h->hooks.idle(h->hooks.arg);
	reap(h); /* a watch ending is noticed at once, not at the next request */
}

void cl_watch_stop(struct cl_http *h, struct cl_watch *w)
{
	if (w->h) {
		curl_multi_remove_handle(h->multi, w->h);
		easy_free(w->h);
		w->h = NULL;
	}
	w->b.len = 0;
	w->b.overflow = false;
	w->created = false;
	w->broken = false;
}

int cl_watch_start(struct cl_http *h, struct cl_watch *w, int64_t from)
{
	char rev[32];
	unsigned i = 0;
	while (i < h->n_watches && h->watch[i] != w)
		i++;
	if (i == h->n_watches) {
		if (h->n_watches == CL_HTTP_WATCHES)
			return -ENOSPC;
		h->watch[h->n_watches++] = w;
	}
	snprintf(rev, sizeof(rev), "%" PRId64, from);
	json_t *cr = json_pack("{s:s, s:s, s:s}", "key", w->range[0], "range_end", w->range[1], "start_revision", rev);
	json_t *body = json_pack("{s:o}", "create_request", cr);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	cl_watch_stop(h, w);
	w->revision = from - 1;
	w->h = easy_new(h, "/v3/watch", text, &w->b, 0, true);
	free(text);
	if (!w->h)
		return -ENOMEM;
	/* a stream: no overall timeout; a dead peer shows as a failed keepalive */
	curl_multi_add_handle(h->multi, w->h);
	uint64_t deadline = mono_ms() + h->cc->timeout_ms;
	while (!w->created && !w->broken && mono_ms() < deadline && !atomic_load(h->stop))
		cl_http_pump(h, 20);
	if (!w->created) {
		cl_watch_stop(h, w);
		return -EIO;
	}
	return 0;
}

/* ---- requests -------------------------------------------------------------- */

/* One request on the current endpoint, the watches streaming meanwhile
 * (cl_http_req_tmo's answers). *token_refused: etcd refused the token (the
 * caller renews it). */
static int req_once(struct cl_http *h, const char *path, const char *text, json_t **out, bool *token_refused,
		    uint32_t timeout_ms, size_t max)
{
	struct cl_buf b = {.max = max};
	bool with_token = strcmp(path, "/v3/auth/authenticate") != 0;
	CURL *x = easy_new(h, path, text, &b, (long)timeout_ms, with_token);
	if (!x)
		return -ENOMEM;
	count(&h->requests);
	curl_multi_add_handle(h->multi, x);
	h->req = x;
	h->req_done = false;
	int running;
	curl_multi_perform(h->multi, &running);
	reap(h);
	while (!h->req_done) {
		if (atomic_load(h->stop)) {
			h->req_code = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		cl_http_pump(h, 50);
	}
	CURLcode code = h->req_code;
	h->req = NULL;
	long status = 0;
	curl_easy_getinfo(x, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(h->multi, x);
	easy_free(x);
	int r = 0;
	char why[200];
	if (code != CURLE_OK) {
		cp_debug("cluster: %s%s: %s", cl_http_endpoint(h), path, curl_easy_strerror(code));
		if (b.overflow) {
			r = -EMSGSIZE;
		} else if (is_tls_error(code)) {
			snprintf(why, sizeof(why), "TLS: %s", curl_easy_strerror(code));
			problem(h, why);
			r = -EIO;
		} else {
			r = code == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : code == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
		}
	} else if (status != 200) {
		etcd_reason(&b, status, why, sizeof(why));
		cp_debug("cluster: %s%s: %s", cl_http_endpoint(h), path, why);
		r = -EPROTO;
		if (status == 401 && with_token && h->cc->user[0]) {
			*token_refused = true; /* renewed by the caller */
			r = -EACCES;
		} else if (status == 401 || status == 403 || strstr(why, "authentication failed") ||
			   strstr(why, "user name is empty") || strstr(why, "permission denied")) {
			char w[240];
			snprintf(w, sizeof(w), "refused %s: %s", path, why);
			problem(h, w);
			count(&h->auth_failures);
			r = -EACCES;
		}
	} else {
		json_error_t je;
		*out = json_loadb(b.p ? b.p : "", b.len, 0, &je);
		if (!*out)
			r = -EPROTO;
	}
	if (r < 0)
		count(&h->request_failures);
	else
		h->last_ok = mono_ms();
	free(b.p);
	return r;
}

int cl_http_req_tmo(struct cl_http *h, const char *path, json_t *body, json_t **out, uint32_t timeout_ms, size_t max)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	bool refused = false;
	int r = req_once(h, path, text, out, &refused, timeout_ms, max);
	if (refused && cl_http_authenticate(h) == 0) {
		refused = false;
		r = req_once(h, path, text, out, &refused, timeout_ms, max);
	}
	if (refused) {
		problem(h, "the renewed auth token was refused too");
		count(&h->auth_failures);
	}
	free(text);
	return r;
}

int cl_http_req(struct cl_http *h, const char *path, json_t *body, json_t **out)
{
	return cl_http_req_tmo(h, path, body, out, h->cc->timeout_ms, 0);
}

int cl_http_authenticate(struct cl_http *h)
{
	if (!h->cc->user[0])
		return 0;
	h->token[0] = '\0';
	json_t *out;
	bool unused = false;
	json_t *body = json_pack("{s:s, s:s}", "name", h->cc->user, "password", h->password);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	/* etcd checks the password with bcrypt and through Raft: slower
	 * than any other request, and rare (a connection, a dead token) */
	uint32_t tmo = h->cc->timeout_ms < 750 ? 3000 : 4 * h->cc->timeout_ms;
	int r = req_once(h, "/v3/auth/authenticate", text, &out, &unused, tmo, 0);
	OPENSSL_cleanse(text, strlen(text));
	free(text);
	if (r < 0)
		return r;
	const char *tok = json_string_value(json_object_get(out, "token"));
	if (tok && strlen(tok) < sizeof(h->token))
		snprintf(h->token, sizeof(h->token), "%s", tok);
	json_decref(out);
	if (!h->token[0]) {
		problem(h, "authenticate: no token in etcd's answer (is auth enabled on this member?)");
		return -EPROTO;
	}
	return 0;
}

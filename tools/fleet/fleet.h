/* fleet.h - fanofleet, the synthetic inference fleet: shared types of the
 * emulator (model generator, UDP fragmented-profile sender and consumer,
 * TLS WebSocket / HTTPS clients, latency recorder, run engine).
 *
 * Who may call: the fanofleet program only. Everything runs on the one
 * thread of the event loop (fleet_run.c) except the relay server
 * (fleet_relay.c), which has its own threads and shares nothing mutable.
 *
 * The emulated fleet: a model of `layers` layers with `hidden` floats per
 * row decodes a stream of tokens. For token t and layer l (0..layers-2) the
 * stations produce x_l, attn_l and ffn_l; the Pair X rule sends them to the
 * slot (token_seq, l + 1) on Fano lines 1 (x), 3 (attn) and 5 (ffn), all with
 * orientation +, and the canonical chain is x_{l+1} = (x_l + attn_l) + ffn_l
 * in IEEE f32. x_0 and every attn/ffn are deterministic pseudo-random
 * vectors of (seed, token, layer, kind); x_{l+1} is the canonical result, so
 * the chain is exactly what a real pipeline would compute. */
#ifndef FLEET_H
#define FLEET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "fg/common.h"
#include "fg/wire.h"
#include "tool_addr.h" /* HOST:PORT on the command line (tools/) */

/* Pair X lines (fano.md): x on (1,4,5), attn on (2,4,6), ffn on (3,4,7). */
#define FL_LINE_X 1u
#define FL_LINE_ATTN 3u
#define FL_LINE_FFN 5u
#define FL_ROLES 3u /* contribution kinds per slot: x, attn, ffn */

enum fl_ingress { FL_IN_UDP = 0, FL_IN_WSS, FL_IN_HTTPS, FL_IN_COUNT };
/* Latency classes: one per ingress plus "mixed" (a slot whose stations used
 * different ingresses). */
#define FL_CLS_MIXED FL_IN_COUNT
#define FL_CLS_COUNT (FL_IN_COUNT + 1)
const char *fl_ingress_name(unsigned cls);

/* Paths a resolved seed can come back on. */
enum fl_path { FL_PATH_UDP = 0, FL_PATH_WSS, FL_PATH_HTTPS_PULL, FL_PATH_COUNT };
const char *fl_path_name(unsigned p);

uint64_t fl_now_ns(void);

/* ---- fleet_model.c: deterministic vectors and the canonical chain ---- */

enum fl_kind { FL_KIND_X0 = 0, FL_KIND_ATTN = 1, FL_KIND_FFN = 2 };

/* Fill out[0..hidden) with the pseudo-random vector of (seed, token, layer,
 * kind). Values have varied exponents so that a reordered sum would round
 * differently: non-associativity is exercised on purpose. */
void fl_model_gen(uint64_t seed, uint64_t token, unsigned layer, enum fl_kind kind, uint32_t hidden,
		  float *out);
/* The canonical chain in f32, one rounding per addition, in Pair X order:
 * out[i] = (x[i] + attn[i]) + ffn[i]. */
void fl_model_chain(const float *x, const float *attn, const float *ffn, uint32_t hidden, float *out);
/* Deterministic 64-bit mix of a key (splitmix64 finaliser). */
uint64_t fl_mix64(uint64_t v);
/* Float distance in units in the last place (0 when bit-identical). */
uint64_t fl_ulp_distance(float a, float b);

/* ---- fleet_lat.c: latency samples and percentiles ---------------------- */

struct fl_lat {
	uint64_t *ns;
	size_t n, cap;
	uint64_t sum;
};
/* Record one sample; returns 0 or -ENOMEM (the sample is dropped). */
FG_MUST_CHECK int fl_lat_add(struct fl_lat *l, uint64_t ns);
/* Percentile q in [0,100] of the samples (sorts them in place); 0 if empty. */
uint64_t fl_lat_pct(struct fl_lat *l, double q);
/* Percentile without disturbing order: copies (for progress lines). */
uint64_t fl_lat_pct_copy(const struct fl_lat *l, double q);
void fl_lat_free(struct fl_lat *l);

/* ---- fleet_udp.c: fragmented-profile sender and consumer ----------------- */

/* One encoded frame queued on a UDP sender. owner/tag are the run engine's
 * (slot reference), returned through the sent/acked callbacks. */
struct fl_udp_frame {
	uint8_t *buf; /* encoded flow frame, owned by the sender */
	uint32_t len;
	uint16_t stream;
	uint32_t seq;
	uint16_t frame_id;  /* of the current attempt */
	uint8_t attempts;   /* 1 after the first send */
	uint64_t sent_ns;   /* of the current attempt */
	uint64_t tag;       /* engine cookie */
	bool first_sent;    /* first attempt done */
	uint16_t dst_port;  /* fl_udp_send_port: this frame's UDP port (0: the sender's) */
};

struct fl_udp_stats {
	uint64_t frames, fragments, bytes, resends, gave_up, acks, ack_entries, acked_frames;
	uint64_t dropped_cwnd, injected_loss, injected_dup, status_frames, bad_datagrams, send_failed;
	uint32_t cwnd_max;
};

struct fl_udp_sender;
/* A message (frame, WebSocket message, HTTP request) was handed to the
 * transport: t_begin is read just before the write that carried its last
 * byte began (sendto of its last fragment, SSL_write of its last record),
 * t_end when that write returned. Two clocks because, on a CPU the
 * receiver shares, the receiver may run inside the write (preempting the
 * writer at its return) and then t_end comes after the receiver's work. */
typedef void (*fl_udp_sent_fn)(void *ctx, uint64_t tag, uint64_t t_begin, uint64_t t_end);
typedef void (*fl_status_fn)(void *ctx, const struct fg_status *st, enum fl_ingress via);

struct fl_udp_opts {
	uint32_t mtu;          /* 1472 */
	uint32_t cwnd_init;    /* 16 */
	uint32_t cwnd_max;     /* 256 */
	uint32_t rto_ms;       /* 200: a frame older than this is resent ... */
	uint32_t check_ms;     /* 200: ... when the sender's check timer fires (the fleet's
				* schedule: attempts ~400 ms apart, wire.md 2.1); 0 = at rto */
	uint32_t max_resends;  /* 5 */
	double loss, dup;      /* injected per-fragment probabilities */
	bool drop_over_cwnd;   /* mimic the fleet: drop sends beyond cwnd */
	uint64_t rng;          /* seed of the injection PRNG */
};

/* Open a sender bound to bind_addr (may be NULL: any) talking to dst.
 * Returns NULL with errno set on failure. */
struct fl_udp_sender *fl_udp_sender_new(const struct sockaddr_storage *dst, socklen_t dlen,
					const struct sockaddr_storage *bind_addr, socklen_t blen,
					const struct fl_udp_opts *o, fl_udp_sent_fn sent, fl_status_fn status,
					void *ctx);
void fl_udp_sender_free(struct fl_udp_sender *s);
/* fl_udp_send to another UDP port of the same host (the fleet's per-station
 * dst_port; fanogate's [udp] layer_ports + L). port 0 = the sender's. */
FG_MUST_CHECK int fl_udp_send_port(struct fl_udp_sender *s, uint16_t port, const uint8_t *frame, uint32_t len,
				   uint64_t tag, uint64_t now);
int fl_udp_sender_fd(const struct fl_udp_sender *s);
/* Queue one encoded frame (copied). Sends at once while cwnd allows.
 * Returns 0, or -ENOBUFS when dropped (drop_over_cwnd), -ENOMEM. */
FG_MUST_CHECK int fl_udp_send(struct fl_udp_sender *s, const uint8_t *frame, uint32_t len, uint64_t tag,
			      uint64_t now);
/* Read ACKs and status frames until EAGAIN. */
void fl_udp_sender_input(struct fl_udp_sender *s, uint64_t now);
/* Retransmit frames whose attempt timed out; send queued frames the window
 * allows. Returns ns until the next timer (or UINT64_MAX). */
uint64_t fl_udp_sender_tick(struct fl_udp_sender *s, uint64_t now);
/* Frames queued or in flight. */
size_t fl_udp_sender_pending(const struct fl_udp_sender *s);
const struct fl_udp_stats *fl_udp_sender_stats(const struct fl_udp_sender *s);

/* The consumer: receives fragmented frames (resolved seeds), reassembles
 * them keyed by (source, frame_id), optionally ACKs them, hands every whole
 * frame to on_frame. */
struct fl_udp_consumer;
typedef void (*fl_frame_fn)(void *ctx, const struct fg_frame *f, enum fl_path path, uint64_t now);
/* How the consumer ACKs resolved seeds:
 *   NONE   never
 *   EACH   one entry per frame received, that frame only (default)
 *   FLEET  as the fleet's receiving transport does (wire.md 2.1): per
 *          stream it holds the sequences received, ACKs base..base+63 with
 *          base = the lowest held, trims (drops the lowest 64) only once
 *          128 are held, ACKs on every frame and re-ACKs all it holds every
 *          50 ms (fl_udp_consumer_tick). */
enum fl_cack { FL_CACK_NONE = 0, FL_CACK_EACH, FL_CACK_FLEET };
struct fl_udp_consumer *fl_udp_consumer_new(const struct sockaddr_storage *bind_addr, socklen_t blen,
					    uint32_t mtu, enum fl_cack ack, fl_frame_fn on_frame, void *ctx);
/* FLEET mode: re-ACK every held window every 50 ms. Returns ns until the
 * next call is due (UINT64_MAX in other modes). */
uint64_t fl_udp_consumer_tick(struct fl_udp_consumer *c, uint64_t now);
void fl_udp_consumer_free(struct fl_udp_consumer *c);
int fl_udp_consumer_fd(const struct fl_udp_consumer *c);
void fl_udp_consumer_input(struct fl_udp_consumer *c, uint64_t now);
/* Drop incoming fragments with probability p (fake receiver tests). */
void fl_udp_consumer_set_drop(struct fl_udp_consumer *c, double p, uint64_t seed);
/* Source address of the frame being handed to on_frame (valid inside the
 * callback only). */
const struct sockaddr_storage *fl_udp_consumer_src(const struct fl_udp_consumer *c, socklen_t *len);
struct fl_consumer_stats {
	uint64_t datagrams, frames, bad, acks_sent, incomplete_dropped, injected_drop;
};
const struct fl_consumer_stats *fl_udp_consumer_stats(const struct fl_udp_consumer *c);

/* Split an encoded frame into fragment datagrams and send them to dst on fd
 * with frame_id (shared by the fake receiver). Returns fragments sent or
 * -errno. */
FG_MUST_CHECK int fl_udp_send_fragmented(int fd, const struct sockaddr *dst, socklen_t dlen, uint32_t mtu,
					 uint16_t frame_id, const uint8_t *frame, uint32_t len);

/* ---- fleet_tls.c: TLS client connections, WebSocket and HTTPS ----------- */

struct fl_tls_opts {
	const char *host;       /* connect address (numeric) */
	uint16_t port;
	const char *sni;        /* server name for SNI/verification, may be NULL */
	const char *ca_file;    /* NULL with insecure: no verification */
	bool insecure;
	const char *cert_file, *key_file; /* client certificate (mutual TLS), may be NULL */
	const char *token;      /* Bearer token, may be NULL */
	uint32_t timeout_ms;    /* connect + handshake + upgrade */
};

enum fl_conn_kind { FL_CONN_WSS, FL_CONN_HTTPS };
struct fl_conn;

struct fl_conn_stats {
	uint64_t msgs_out, frames_out, bytes_out, msgs_in, frames_in, bytes_in;
	uint64_t requests, responses, http_errors, ws_pings, protocol_errors;
};

/* Callbacks: whole flow frames received (WSS binary messages), sent marks
 * (a queued item's last byte was handed to TLS), and HTTP JSON acks. */
typedef void (*fl_json_fn)(void *ctx, uint64_t tag, int http_status, const char *body, size_t len,
			   uint64_t now);
struct fl_conn_cb {
	fl_frame_fn on_frame;
	fl_udp_sent_fn on_sent;
	fl_json_fn on_response;
	void *ctx;
};

/* Connect, handshake and (WSS) upgrade with GET path. Blocking, bounded by
 * timeout_ms; the connection is non-blocking afterwards. Returns NULL and
 * writes a one-line reason into err on failure. */
struct fl_conn *fl_conn_open(SSL_CTX *ctx, const struct fl_tls_opts *o, enum fl_conn_kind kind,
			     const char *path, const struct fl_conn_cb *cb, char *err, size_t errlen);
void fl_conn_free(struct fl_conn *c);
int fl_conn_fd(const struct fl_conn *c);
bool fl_conn_is_dead(const struct fl_conn *c);
/* Events poll should wait for (POLLIN always; POLLOUT while output waits). */
short fl_conn_events(const struct fl_conn *c);
/* Drive I/O after poll. Returns 0 or -errno when the connection died. */
int fl_conn_io(struct fl_conn *c, uint64_t now);
/* WSS: append one encoded frame to the message being built (a message holds
 * up to 16 frames / 64 KiB, as the fleet coalesces). tag comes back through
 * on_sent when the message's last byte was written (fl_udp_sent_fn). */
FG_MUST_CHECK int fl_ws_queue_frame(struct fl_conn *c, const uint8_t *frame, uint32_t len, uint64_t tag);
/* WSS: close the message being built and hand it to TLS. */
void fl_ws_flush(struct fl_conn *c, uint64_t now);
/* HTTPS: queue a POST of one body to path; one request in flight per
 * connection (keep-alive), the rest wait in order. */
FG_MUST_CHECK int fl_https_post(struct fl_conn *c, const char *path, const uint8_t *body, uint32_t len,
				uint64_t tag, uint64_t now);
/* HTTPS: queue a GET of path (same ordering rules as fl_https_post). */
FG_MUST_CHECK int fl_https_get(struct fl_conn *c, const char *path, uint64_t tag, uint64_t now);
/* Requests queued or awaiting a response (HTTPS). */
size_t fl_conn_backlog(const struct fl_conn *c);
const struct fl_conn_stats *fl_conn_stats(const struct fl_conn *c);
/* New client SSL_CTX from the options; NULL and err filled on failure. */
SSL_CTX *fl_tls_ctx_new(const struct fl_tls_opts *o, char *err, size_t errlen);
/* Drain the OpenSSL error queue into buf (one line). */
void fl_tls_err(char *buf, size_t len, const char *what);

/* ---- fleet_fake.c: a loopback stand-in for the appliance (UDP only) ---- */

struct fl_fake_opts {
	const char *listen;   /* host:port for the fragmented profile */
	const char *consumer; /* host:port resolved seeds go to */
	uint32_t hidden;
	uint16_t layers;
	uint32_t mtu;
	double drop;          /* injected loss of incoming fragments */
	uint32_t duration_s;  /* 0: until SIGTERM/SIGINT */
	bool no_ack;          /* never ACK (to test the sender's retransmits) */
};
/* Run the fake receiver until the duration ends or a signal. Prints its
 * counters on exit. Returns 0 or a process exit code. */
int fl_fake_run(const struct fl_fake_opts *o);

/* ---- fleet_sched.c: timed events of the run engine ---------------------- */

/* One event: what it is belongs to the run engine (kind, a, b); buf is a
 * copy of a frame to send, owned by the event (the popper frees it). */
struct fl_event {
	uint64_t due_ns;
	uint64_t order;  /* push order: ties keep it (set by fl_sched_push) */
	unsigned kind;
	uint64_t a, b;
	uint8_t *buf;
	uint32_t len;
};
struct fl_sched {
	struct fl_event *heap;
	size_t n, cap;
	uint64_t next_order;
};
/* Queue ev (frame[0..len) copied when given). Returns 0 or -ENOMEM. */
FG_MUST_CHECK int fl_sched_push(struct fl_sched *s, const struct fl_event *ev, const uint8_t *frame, uint32_t len);
/* The earliest due time, UINT64_MAX when empty. */
uint64_t fl_sched_next(const struct fl_sched *s);
/* Take the earliest event due at or before now into *out (the caller frees
 * out->buf); false when none is due. */
bool fl_sched_pop(struct fl_sched *s, uint64_t now, struct fl_event *out);
/* Drop every event and the heap. */
void fl_sched_free(struct fl_sched *s);

/* ---- fleet_relay.c: the canonical chain's coordinator hop (bench) ------- */
struct fl_relay_opts {
	uint32_t hidden;
	uint32_t hops;        /* measured hops */
	uint32_t warmup;
	const char *cert, *key; /* server certificate for the two HTTPS servers */
	const char *json;       /* raw samples file, may be NULL */
};
/* Measure DOWN -> coordinator -> next ATTN over HTTPS keep-alive on
 * loopback. Prints percentiles; writes samples (ns, one per line) to
 * o->json when set. Returns 0 or an exit code. */
int fl_relay_run(const struct fl_relay_opts *o);


#endif

/* fleet_udp.c - the UDP fragmented profile as the fleet speaks it: a sender
 * with a congestion window that is only opened by ACKs and a whole-frame
 * retransmit under a NEW frame_id after rto_ms (up to max_resends times),
 * and a consumer that reassembles resolved seeds and ACKs them.
 *
 * Who may call: the fanofleet event loop thread (one sender or consumer is
 * used by one thread only). Sockets are non-blocking; nothing here sleeps.
 *
 * Decisions (the fleet's UDPFlowTransport does the same unless said):
 *  - ACK entries acknowledge (stream_id, sequence). Several frames of one
 *    sender may share that key (a station sending two lines to one slot);
 *    an ACK retires all of them, as the fleet does. fanofleet gives every
 *    contribution role its own sender (socket) so keys are unique per
 *    sender.
 *  - The fleet drops sends beyond cwnd; by default we queue them instead
 *    (a dropped contribution would leave a slot unresolved and measure
 *    nothing). --udp-drop-over-cwnd restores the fleet's behaviour.
 *  - cwnd grows by one per acknowledged frame up to cwnd_max and halves
 *    (not below cwnd_init) on a retransmit timeout.
 *  - Resend timing is the fleet's (wire.md 2.1): a check timer every
 *    check_ms (200) resends frames older than rto_ms (200), so attempts are
 *    ~400 ms apart, the 5th resend leaves up to ~2 s after the first send
 *    and the frame is given up at the check after that (~2.4 s).
 *  - The consumer's FLEET ACK mode is the fleet's receiving transport: a
 *    64-sequence window per stream from the lowest held sequence, trimmed
 *    only once 128 are held, re-ACKed every 50 ms. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fleet.h"

#define DGRAM_MAX 65536u

struct fl_udp_sender {
	int fd;
	struct sockaddr_storage dst;
	socklen_t dlen;
	struct fl_udp_opts o;
	uint32_t chunk;
	fl_udp_sent_fn sent;
	fl_status_fn status;
	void *ctx;
	uint16_t next_id;
	uint64_t next_check; /* check_ms > 0: when the check timer fires next */
	uint32_t cwnd;
	uint64_t rng;
	struct fl_udp_frame **fly; /* in flight, unordered */
	size_t n_fly, cap_fly;
	struct fl_udp_frame **q;   /* waiting for the window, FIFO q[head..tail) */
	size_t q_head, q_tail, q_cap;
	struct fl_udp_stats st;
};

static double rnd01(uint64_t *s)
{
	*s = fl_mix64(*s);
	return (double)(*s >> 11) / 9007199254740992.0;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* Socket buffers large enough for a window of fragmented frames: the
 * default net.core.rmem_max (208 KiB) overflows on one burst of 8 tokens.
 * The FORCE variants need CAP_NET_ADMIN; without it the plain ones give
 * what the sysctl allows. */
static void big_buffers(int fd, int bytes)
{
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int fl_udp_send_fragmented(int fd, const struct sockaddr *dst, socklen_t dlen, uint32_t mtu,
			   uint16_t frame_id, const uint8_t *frame, uint32_t len)
{
	uint32_t c = fg_frag_chunk_size(mtu);
	uint32_t n = c ? fg_frag_count(len, c) : 0;
	uint8_t dg[DGRAM_MAX];
	if (n == 0 || mtu > DGRAM_MAX)
		return -EMSGSIZE;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = i * c;
		struct fg_frag f = {
			.frame_id = frame_id,
			.index = (uint8_t)i,
			.total = (uint8_t)n,
			.chunk = frame + off,
			.chunk_len = len - off < c ? len - off : c,
		};
		ssize_t w = fg_frag_encode(&f, dg, sizeof dg);
		if (w < 0)
			return -EINVAL;
		if (sendto(fd, dg, (size_t)w, 0, dst, dlen) < 0 && errno != EAGAIN && errno != ENOBUFS)
			return -errno;
	}
	return (int)n;
}

struct fl_udp_sender *fl_udp_sender_new(const struct sockaddr_storage *dst, socklen_t dlen,
					const struct sockaddr_storage *bind_addr, socklen_t blen,
					const struct fl_udp_opts *o, fl_udp_sent_fn sent, fl_status_fn status,
					void *ctx)
{
	struct fl_udp_sender *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->o = *o;
	s->chunk = fg_frag_chunk_size(o->mtu);
	if (s->chunk == 0 || o->mtu > DGRAM_MAX) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	s->fd = socket(dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	big_buffers(s->fd, 4 << 20);
	if ((bind_addr && bind(s->fd, (const struct sockaddr *)bind_addr, blen) < 0) ||
	    set_nonblock(s->fd) < 0) {
		int e = errno;
		close(s->fd);
		free(s);
		errno = e;
		return NULL;
	}
	s->dst = *dst;
	s->dlen = dlen;
	s->sent = sent;
	s->status = status;
	s->ctx = ctx;
	s->cwnd = o->cwnd_init;
	s->st.cwnd_max = s->cwnd;
	s->rng = o->rng ? o->rng : 1;
	s->next_id = (uint16_t)fl_mix64(s->rng);
	return s;
}

static void frame_free(struct fl_udp_frame *f)
{
	if (f) {
		free(f->buf);
		free(f);
	}
}

void fl_udp_sender_free(struct fl_udp_sender *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_fly; i++)
		frame_free(s->fly[i]);
	for (size_t i = s->q_head; i < s->q_tail; i++)
		frame_free(s->q[i]);
	free(s->fly);
	free(s->q);
	close(s->fd);
	free(s);
}

int fl_udp_sender_fd(const struct fl_udp_sender *s) { return s->fd; }
size_t fl_udp_sender_pending(const struct fl_udp_sender *s) { return s->n_fly + (s->q_tail - s->q_head); }
const struct fl_udp_stats *fl_udp_sender_stats(const struct fl_udp_sender *s) { return &s->st; }

/* One attempt: every fragment under a fresh frame_id, with injected loss
 * and duplication applied per fragment. */
static void attempt(struct fl_udp_sender *s, struct fl_udp_frame *f, uint64_t now)
{
	uint32_t n = fg_frag_count(f->len, s->chunk);
	uint8_t dg[DGRAM_MAX];
	f->frame_id = s->next_id++;
	uint64_t t_last = 0; /* before the last fragment's sendto (fl_udp_sent_fn) */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = i * s->chunk;
		struct fg_frag fr = {
			.frame_id = f->frame_id,
			.index = (uint8_t)i,
			.total = (uint8_t)n,
			.chunk = f->buf + off,
			.chunk_len = f->len - off < s->chunk ? f->len - off : s->chunk,
		};
		ssize_t w = fg_frag_encode(&fr, dg, sizeof dg);
		if (w < 0)
			continue; /* cannot happen: sizes checked at queue time */
		if (s->o.loss > 0 && rnd01(&s->rng) < s->o.loss) {
			s->st.injected_loss++;
			continue;
		}
		int copies = 1;
		if (s->o.dup > 0 && rnd01(&s->rng) < s->o.dup) {
			copies = 2;
			s->st.injected_dup++;
		}
		struct sockaddr_storage to = s->dst;
		if (f->dst_port) {
			if (to.ss_family == AF_INET6)
				((struct sockaddr_in6 *)&to)->sin6_port = htons(f->dst_port);
			else
				((struct sockaddr_in *)&to)->sin_port = htons(f->dst_port);
		}
		if (i + 1 == n)
			t_last = fl_now_ns();
		for (int k = 0; k < copies; k++) {
			/* EAGAIN on a full socket buffer is a loss like any other:
			 * the retransmit timer covers it. */
			if (sendto(s->fd, dg, (size_t)w, 0, (struct sockaddr *)&to, s->dlen) >= 0) {
				s->st.fragments++;
				s->st.bytes += (uint64_t)w;
			} else {
				s->st.send_failed++;
			}
		}
	}
	f->attempts++;
	f->sent_ns = now;
	if (!f->first_sent) {
		f->first_sent = true;
		s->st.frames++;
		if (s->sent)
			s->sent(s->ctx, f->tag, t_last ? t_last : now, fl_now_ns());
	}
}

static int fly_push(struct fl_udp_sender *s, struct fl_udp_frame *f)
{
	if (s->n_fly == s->cap_fly) {
		size_t cap = s->cap_fly ? s->cap_fly * 2 : 64;
		void *p = realloc(s->fly, cap * sizeof *s->fly);
		if (!p)
			return -ENOMEM;
		s->fly = p;
		s->cap_fly = cap;
	}
	s->fly[s->n_fly++] = f;
	return 0;
}

static int q_push(struct fl_udp_sender *s, struct fl_udp_frame *f)
{
	if (s->q_tail == s->q_cap) {
		if (s->q_head > 0) { /* compact */
			memmove(s->q, s->q + s->q_head, (s->q_tail - s->q_head) * sizeof *s->q);
			s->q_tail -= s->q_head;
			s->q_head = 0;
		}
		if (s->q_tail == s->q_cap) {
			size_t cap = s->q_cap ? s->q_cap * 2 : 256;
			void *p = realloc(s->q, cap * sizeof *s->q);
			if (!p)
				return -ENOMEM;
			s->q = p;
			s->q_cap = cap;
		}
	}
	s->q[s->q_tail++] = f;
	return 0;
}

static void fill_window(struct fl_udp_sender *s, uint64_t now)
{
	while (s->n_fly < s->cwnd && s->q_head < s->q_tail) {
		struct fl_udp_frame *f = s->q[s->q_head++];
		if (fly_push(s, f) < 0) {
			s->q_head--;
			return;
		}
		attempt(s, f, now);
	}
}

int fl_udp_send(struct fl_udp_sender *s, const uint8_t *frame, uint32_t len, uint64_t tag, uint64_t now)
{
	return fl_udp_send_port(s, 0, frame, len, tag, now);
}

int fl_udp_send_port(struct fl_udp_sender *s, uint16_t port, const uint8_t *frame, uint32_t len, uint64_t tag,
		     uint64_t now)
{
	struct fg_frame fr;
	if (fg_frag_count(len, s->chunk) == 0 || fg_frame_decode(frame, len, FG_TRANSPORT_MESSAGE, &fr) < 0)
		return -EINVAL;
	if (s->o.drop_over_cwnd && s->n_fly >= s->cwnd) {
		s->st.dropped_cwnd++;
		return -ENOBUFS;
	}
	struct fl_udp_frame *f = calloc(1, sizeof *f);
	if (!f || !(f->buf = malloc(len))) {
		free(f);
		return -ENOMEM;
	}
	memcpy(f->buf, frame, len);
	f->len = len;
	f->stream = fr.hdr.stream_id;
	f->seq = fr.hdr.sequence;
	f->tag = tag;
	f->dst_port = port;
	if (q_push(s, f) < 0) {
		frame_free(f);
		return -ENOMEM;
	}
	fill_window(s, now);
	return 0;
}

static void on_ack(struct fl_udp_sender *s, const struct fg_ack_entry *e)
{
	s->st.ack_entries++;
	for (size_t i = 0; i < s->n_fly;) {
		struct fl_udp_frame *f = s->fly[i];
		if (f->stream == e->stream_id && fg_ack_entry_covers(e, f->seq)) {
			s->fly[i] = s->fly[--s->n_fly];
			frame_free(f);
			s->st.acked_frames++;
			if (s->cwnd < s->o.cwnd_max)
				s->cwnd++;
			if (s->cwnd > s->st.cwnd_max)
				s->st.cwnd_max = s->cwnd;
		} else {
			i++;
		}
	}
}

void fl_udp_sender_input(struct fl_udp_sender *s, uint64_t now)
{
	uint8_t dg[DGRAM_MAX];
	for (;;) {
		ssize_t r = recv(s->fd, dg, sizeof dg, 0);
		if (r < 0)
			break;
		struct fg_frag fr;
		struct fg_frame f;
		if (fg_frag_decode(dg, (size_t)r, &fr) < 0 || fr.total != 1 ||
		    fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f) < 0) {
			s->st.bad_datagrams++;
			continue;
		}
		if (f.hdr.flags & FG_FLAG_ACK) {
			struct fg_ack_entry e[128];
			int n = fg_ack_frame_decode(&f, e, FG_ARRAY_LEN(e));
			if (n < 0) {
				s->st.bad_datagrams++;
				continue;
			}
			s->st.acks++;
			for (int i = 0; i < n && i < (int)FG_ARRAY_LEN(e); i++)
				on_ack(s, &e[i]);
		} else if (f.hdr.stream_id == FG_STREAM_STATUS) {
			struct fg_status st;
			if (fg_status_decode(&f, &st) < 0) {
				s->st.bad_datagrams++;
				continue;
			}
			s->st.status_frames++;
			if (s->status)
				s->status(s->ctx, &st, FL_IN_UDP);
		} else {
			s->st.bad_datagrams++;
		}
	}
	fill_window(s, now);
}

uint64_t fl_udp_sender_tick(struct fl_udp_sender *s, uint64_t now)
{
	uint64_t rto = (uint64_t)s->o.rto_ms * 1000000ull, next = UINT64_MAX;
	bool timed_out = false;
	if (s->o.check_ms) {
		/* The fleet's check timer: nothing happens between two checks. */
		uint64_t period = (uint64_t)s->o.check_ms * 1000000ull;
		if (!s->next_check)
			s->next_check = now + period;
		if (now < s->next_check) {
			fill_window(s, now);
			return s->n_fly ? s->next_check - now : UINT64_MAX;
		}
		s->next_check = now + period;
	}
	for (size_t i = 0; i < s->n_fly;) {
		struct fl_udp_frame *f = s->fly[i];
		if (now - f->sent_ns >= rto) {
			timed_out = true;
			if (f->attempts > s->o.max_resends) {
				s->fly[i] = s->fly[--s->n_fly];
				frame_free(f);
				s->st.gave_up++;
				continue;
			}
			s->st.resends++;
			attempt(s, f, now);
		}
		uint64_t due = f->sent_ns + rto - now;
		if (due < next)
			next = due;
		i++;
	}
	if (timed_out) {
		s->cwnd /= 2;
		if (s->cwnd < s->o.cwnd_init)
			s->cwnd = s->o.cwnd_init;
	}
	fill_window(s, now);
	if (s->o.check_ms)
		return s->n_fly ? s->next_check - now : UINT64_MAX;
	return next;
}

/* ---- consumer -------------------------------------------------------- */

#define REASM_CTX 64u
#define FLEET_STREAMS 64u   /* resolved-seed streams a FLEET consumer tracks */
#define FLEET_WINDOW 64u    /* sequences one ACK entry covers */
#define FLEET_TRIM_AT 128u  /* held sequences that make the fleet trim */
#define FLEET_REACK_NS (50ull * 1000000ull)
#define REASM_TIMEOUT_NS (500ull * 1000000ull)

struct reasm {
	bool used;
	struct sockaddr_storage src;
	socklen_t slen;
	uint16_t frame_id;
	uint8_t total, got;
	uint8_t have[32]; /* bitmap of fragment indices */
	uint32_t last_len; /* length of the last chunk, 0 until it arrives */
	uint8_t *buf;
	uint64_t t0;
};

struct fl_udp_consumer {
	int fd;
	uint32_t mtu, chunk;
	enum fl_cack ack;
	uint16_t ack_id;
	/* FLEET mode: held sequences per stream (FLEET_STREAMS streams, a
	 * sorted array each), the last source to ACK, the re-ACK timer */
	struct held {
		bool used;
		uint16_t stream;
		uint32_t n;
		bool trimmed;
		uint32_t floor;  /* after a trim: sequences below it are done, not held again */
		uint32_t seq[FLEET_TRIM_AT];
	} held[FLEET_STREAMS];
	struct sockaddr_storage ack_to;
	socklen_t ack_tolen;
	uint64_t next_reack;
	fl_frame_fn on_frame;
	void *ctx;
	struct reasm r[REASM_CTX];
	struct fl_consumer_stats st;
	double drop;
	uint64_t rng;
	const struct sockaddr_storage *cur_src;
	socklen_t cur_slen;
};

void fl_udp_consumer_set_drop(struct fl_udp_consumer *c, double p, uint64_t seed)
{
	c->drop = p;
	c->rng = seed ? seed : 1;
}

const struct sockaddr_storage *fl_udp_consumer_src(const struct fl_udp_consumer *c, socklen_t *len)
{
	*len = c->cur_slen;
	return c->cur_src;
}

struct fl_udp_consumer *fl_udp_consumer_new(const struct sockaddr_storage *bind_addr, socklen_t blen,
					    uint32_t mtu, enum fl_cack ack, fl_frame_fn on_frame, void *ctx)
{
	struct fl_udp_consumer *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->mtu = mtu;
	c->chunk = fg_frag_chunk_size(mtu);
	c->ack = ack;
	c->on_frame = on_frame;
	c->ctx = ctx;
	c->fd = socket(bind_addr->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	/* No SO_REUSEADDR: with it, a second socket on the same port silently
	 * steals or rejects part of the traffic (seen as port-unreachable
	 * bursts on loopback). */
	big_buffers(c->fd, 8 << 20);
	if (c->chunk == 0 || bind(c->fd, (const struct sockaddr *)bind_addr, blen) < 0 || set_nonblock(c->fd) < 0) {
		int e = c->chunk ? errno : EINVAL;
		close(c->fd);
		free(c);
		errno = e;
		return NULL;
	}
	return c;
}

void fl_udp_consumer_free(struct fl_udp_consumer *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < REASM_CTX; i++)
		free(c->r[i].buf);
	close(c->fd);
	free(c);
}

int fl_udp_consumer_fd(const struct fl_udp_consumer *c) { return c->fd; }
const struct fl_consumer_stats *fl_udp_consumer_stats(const struct fl_udp_consumer *c) { return &c->st; }

/* FLEET mode: the held set of a stream (created on first use; NULL when
 * every entry is taken by other streams). */
static struct held *held_of(struct fl_udp_consumer *c, uint16_t stream)
{
	struct held *free_h = NULL;
	for (unsigned i = 0; i < FLEET_STREAMS; i++) {
		if (c->held[i].used && c->held[i].stream == stream)
			return &c->held[i];
		if (!c->held[i].used && !free_h)
			free_h = &c->held[i];
	}
	if (free_h) {
		free_h->used = true;
		free_h->stream = stream;
		free_h->n = 0;
		free_h->trimmed = false;
	}
	return free_h;
}

/* Insert seq into the sorted held set (sequence order, no wrap handling:
 * a run's token_seqs do not wrap); trim the lowest 64 once 128 are held. */
static void held_add(struct held *h, uint32_t seq)
{
	uint32_t i = 0;
	if (h->trimmed && seq < h->floor)
		return;
	while (i < h->n && h->seq[i] < seq)
		i++;
	if (i < h->n && h->seq[i] == seq)
		return;
	memmove(&h->seq[i + 1], &h->seq[i], (h->n - i) * sizeof h->seq[0]);
	h->seq[i] = seq;
	if (++h->n >= FLEET_TRIM_AT) {
		memmove(&h->seq[0], &h->seq[FLEET_TRIM_AT - FLEET_WINDOW], FLEET_WINDOW * sizeof h->seq[0]);
		h->n = FLEET_WINDOW;
		h->trimmed = true;
		h->floor = h->seq[0];
	}
}

/* The one ACK entry the fleet sends for a stream: base = the lowest held,
 * bits for the held sequences in base..base+63 only. */
static struct fg_ack_entry held_entry(const struct held *h)
{
	struct fg_ack_entry e = { .stream_id = h->stream, .base_seq = h->n ? h->seq[0] : 0 };
	for (uint32_t i = 0; i < h->n; i++) {
		uint32_t d = h->seq[i] - e.base_seq;
		if (d >= FLEET_WINDOW)
			break;
		if (d < 32)
			e.bitmap_lo |= 1u << d;
		else
			e.bitmap_hi |= 1u << (d - 32);
	}
	return e;
}

static void ack_send(struct fl_udp_consumer *c, const struct fg_ack_entry *e, size_t n,
		     const struct sockaddr_storage *to, socklen_t tolen)
{
	uint8_t buf[4096];
	uint32_t lens[8];
	int k = fg_ack_build(e, n, c->mtu, c->ack_id, buf, sizeof buf, lens, FG_ARRAY_LEN(lens));
	if (k <= 0)
		return;
	c->ack_id = (uint16_t)(c->ack_id + k);
	size_t off = 0;
	for (int i = 0; i < k; i++) {
		if (sendto(c->fd, buf + off, lens[i], 0, (const struct sockaddr *)to, tolen) >= 0)
			c->st.acks_sent++;
		off += lens[i];
	}
}

uint64_t fl_udp_consumer_tick(struct fl_udp_consumer *c, uint64_t now)
{
	if (c->ack != FL_CACK_FLEET)
		return UINT64_MAX;
	if (now < c->next_reack)
		return c->next_reack - now;
	c->next_reack = now + FLEET_REACK_NS;
	if (!c->ack_tolen)
		return FLEET_REACK_NS;
	struct fg_ack_entry e[FLEET_STREAMS];
	size_t n = 0;
	for (unsigned i = 0; i < FLEET_STREAMS; i++)
		if (c->held[i].used && c->held[i].n)
			e[n++] = held_entry(&c->held[i]);
	if (n)
		ack_send(c, e, n, &c->ack_to, c->ack_tolen);
	return FLEET_REACK_NS;
}

static void consumer_ack(struct fl_udp_consumer *c, const struct fg_frame *f, const struct sockaddr_storage *src,
			 socklen_t slen)
{
	if (c->ack == FL_CACK_FLEET) {
		/* every frame is ACKed (status frames too); resolved seeds are held */
		struct fg_ack_entry e = { .stream_id = f->hdr.stream_id, .base_seq = f->hdr.sequence, .bitmap_lo = 1 };
		struct held *h = f->hdr.stream_id != FG_STREAM_STATUS ? held_of(c, f->hdr.stream_id) : NULL;
		if (h) {
			held_add(h, f->hdr.sequence);
			e = held_entry(h);
		}
		memcpy(&c->ack_to, src, slen);
		c->ack_tolen = slen;
		ack_send(c, &e, 1, src, slen);
		return;
	}
	struct fg_ack_entry e = { .stream_id = f->hdr.stream_id, .base_seq = f->hdr.sequence, .bitmap_lo = 1 };
	uint8_t buf[256];
	uint32_t lens[1];
	int n = fg_ack_build(&e, 1, c->mtu, c->ack_id++, buf, sizeof buf, lens, 1);
	if (n == 1 && sendto(c->fd, buf, lens[0], 0, (const struct sockaddr *)src, slen) >= 0)
		c->st.acks_sent++;
}

static void deliver(struct fl_udp_consumer *c, const uint8_t *buf, uint32_t len,
		    const struct sockaddr_storage *src, socklen_t slen, uint64_t now)
{
	struct fg_frame f;
	if (fg_frame_decode(buf, len, FG_TRANSPORT_MESSAGE, &f) < 0 || (uint32_t)FG_HDR_LEN + f.hdr.length != len) {
		c->st.bad++;
		return;
	}
	if (f.hdr.flags & FG_FLAG_ACK)
		return; /* an ACK of something we never send reliably: ignore */
	c->st.frames++;
	if (c->ack != FL_CACK_NONE)
		consumer_ack(c, &f, src, slen);
	c->cur_src = src;
	c->cur_slen = slen;
	c->on_frame(c->ctx, &f, FL_PATH_UDP, now);
	c->cur_src = NULL;
}

static bool same_src(const struct reasm *r, const struct sockaddr_storage *src, socklen_t slen)
{
	return r->slen == slen && memcmp(&r->src, src, slen) == 0;
}

void fl_udp_consumer_input(struct fl_udp_consumer *c, uint64_t now)
{
	uint8_t dg[DGRAM_MAX];
	for (;;) {
		struct sockaddr_storage src;
		socklen_t slen = sizeof src;
		ssize_t n = recvfrom(c->fd, dg, sizeof dg, 0, (struct sockaddr *)&src, &slen);
		if (n < 0)
			break;
		c->st.datagrams++;
		if (c->drop > 0 && rnd01(&c->rng) < c->drop) {
			c->st.injected_drop++;
			continue;
		}
		struct fg_frag fr;
		if (fg_frag_decode(dg, (size_t)n, &fr) < 0) {
			c->st.bad++;
			continue;
		}
		if (fr.total == 1) {
			deliver(c, fr.chunk, fr.chunk_len, &src, slen, now);
			continue;
		}
		bool last = fr.index == fr.total - 1;
		if (fr.chunk_len == 0 || fr.chunk_len > c->chunk || (!last && fr.chunk_len != c->chunk)) {
			c->st.bad++;
			continue;
		}
		struct reasm *r = NULL, *oldest = NULL, *fresh = NULL;
		for (unsigned i = 0; i < REASM_CTX; i++) {
			struct reasm *x = &c->r[i];
			if (x->used && now - x->t0 > REASM_TIMEOUT_NS) {
				x->used = false;
				c->st.incomplete_dropped++;
			}
			if (x->used && x->frame_id == fr.frame_id && same_src(x, &src, slen))
				r = x;
			else if (!x->used && !fresh)
				fresh = x;
			else if (x->used && (!oldest || x->t0 < oldest->t0))
				oldest = x;
		}
		if (r && r->total != fr.total) {
			r->used = false; /* total changed inside a group: drop it */
			c->st.bad++;
			continue;
		}
		if (!r) {
			r = fresh ? fresh : oldest;
			if (r->used)
				c->st.incomplete_dropped++;
			if (!r->buf && !(r->buf = malloc((size_t)FG_FRAG_MAX * c->chunk))) {
				c->st.bad++;
				continue;
			}
			r->used = true;
			r->src = src;
			r->slen = slen;
			r->frame_id = fr.frame_id;
			r->total = fr.total;
			r->got = 0;
			r->last_len = 0;
			r->t0 = now;
			memset(r->have, 0, sizeof r->have);
		}
		if (r->have[fr.index / 8] & (1u << (fr.index % 8)))
			continue; /* duplicate fragment */
		r->have[fr.index / 8] |= (uint8_t)(1u << (fr.index % 8));
		memcpy(r->buf + (size_t)fr.index * c->chunk, fr.chunk, fr.chunk_len);
		if (last)
			r->last_len = fr.chunk_len;
		if (++r->got == r->total) {
			r->used = false;
			deliver(c, r->buf, (uint32_t)(r->total - 1) * c->chunk + r->last_len, &src, slen, now);
		}
	}
}

/* relay_main.c - fanorelay's program: command line, sockets, the epoll
 * event loop, client sessions, counters (text or JSON) on exit and on
 * SIGUSR1.
 *
 * Who may call: the process entry point; everything runs on the main thread.
 *
 * Sessions. Every client address seen on the listen socket gets its own
 * upstream socket connected to the server (a NAT-like mapping), so the
 * server sees one source per client: fanogate ACKs per source address and
 * keys reassembly by source, and the fleet's stations are separate
 * sockets. Replies on a session's upstream socket go back to that client
 * from the listen socket. Sessions are never reused or evicted; beyond
 * --max-clients a new client's datagrams are dropped and counted.
 *
 * Exit status: 0; 1 when --check-acks saw an ACK for a frame that never
 * went through; 2 usage or set-up error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "relay.h"
#include "tool_addr.h"

#define BATCH 32u
#define DGRAM_MAX 65536u
#define BATCHES_PER_EVENT 8u /* then look at the other sockets and the timers */

struct session {
	struct sockaddr_storage client;
	socklen_t clen;
	int fd; /* connected to the server */
};

struct relay {
	struct sockaddr_storage listen_addr, server_addr, bind_addr;
	socklen_t listen_len, server_len, bind_len;
	bool have_bind;
	int lfd, ep;
	struct session *sess;
	uint32_t n_sess, max_sess;
	uint64_t clients_refused;
	struct rl_dir dir[RL_DIRS];
	struct rl_fault f[RL_DIRS];
	struct rl_ack *ack;
	uint64_t seed, count_limit, up_received;
	uint32_t queue_cap;
	double duration_s;
	bool json, quiet;
	const char *stats_path, *ready_path;
	uint64_t t0;
	int last_send_errno[RL_DIRS]; /* of the most recent failed send, for the report */
};

static volatile sig_atomic_t g_stop, g_dump;
static void on_stop(int sig) { (void)sig; g_stop = 1; }
static void on_usr1(int sig) { (void)sig; g_dump = 1; }

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	char h[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, h, sizeof h);
		port = ntohs(a->sin_port);
		snprintf(buf, n, "%s:%u", h, port);
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof h);
		port = ntohs(a->sin6_port);
		snprintf(buf, n, "[%s]:%u", h, port);
	}
}

/* Socket buffers for bursts of fragments: the FORCE variants need
 * CAP_NET_ADMIN; without it the plain ones give what the sysctl allows. */
static void big_buffers(int fd)
{
	int bytes = 8 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

/* ---- emission: where the fault engine's datagrams go --------------------- */

static int emit_up(void *ctx, uint32_t s, const uint8_t *buf, uint32_t len)
{
	struct relay *r = ctx;
	if (send(r->sess[s].fd, buf, len, 0) < 0) {
		r->last_send_errno[RL_UP] = errno;
		return -errno;
	}
	if (r->ack)
		rl_ack_up(r->ack, s, buf, len, mono_ns());
	return 0;
}

static int emit_down(void *ctx, uint32_t s, const uint8_t *buf, uint32_t len)
{
	struct relay *r = ctx;
	if (sendto(r->lfd, buf, len, 0, (const struct sockaddr *)&r->sess[s].client, r->sess[s].clen) < 0) {
		r->last_send_errno[RL_DOWN] = errno;
		return -errno;
	}
	return 0;
}

/* ---- sessions -------------------------------------------------------------- */

static int session_of(struct relay *r, const struct sockaddr_storage *src, socklen_t slen)
{
	static uint32_t last;
	if (last < r->n_sess && r->sess[last].clen == slen && memcmp(&r->sess[last].client, src, slen) == 0)
		return (int)last;
	for (uint32_t i = 0; i < r->n_sess; i++)
		if (r->sess[i].clen == slen && memcmp(&r->sess[i].client, src, slen) == 0)
			return (int)(last = i);
	if (r->n_sess == r->max_sess) {
		r->clients_refused++;
		return -ENOSPC;
	}
	int fd = socket(r->server_addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	big_buffers(fd);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = r->n_sess + 1 };
	if ((r->have_bind && bind(fd, (const struct sockaddr *)&r->bind_addr, r->bind_len) < 0) ||
	    connect(fd, (const struct sockaddr *)&r->server_addr, r->server_len) < 0 ||
	    epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;
		close(fd);
		r->clients_refused++;
		return -e;
	}
	struct session *s = &r->sess[r->n_sess];
	memcpy(&s->client, src, slen);
	s->clen = slen;
	s->fd = fd;
	if (!r->quiet) {
		char a[80];
		addr_str(src, a, sizeof a);
		fprintf(stderr, "fanorelay: client %u is %s\n", r->n_sess, a);
	}
	return (int)(last = r->n_sess++);
}

/* ---- counters -------------------------------------------------------------- */

static json_t *dir_json(const struct rl_dir *d, int last_errno)
{
	const struct rl_dir_stats *s = &d->st;
	const struct rl_fault *f = &d->f;
	json_t *j = json_object();
	json_object_set_new(j, "in", json_integer((json_int_t)s->in));
	json_object_set_new(j, "in_bytes", json_integer((json_int_t)s->in_bytes));
	json_object_set_new(j, "lost", json_integer((json_int_t)s->lost));
	json_object_set_new(j, "dup", json_integer((json_int_t)s->dup));
	json_object_set_new(j, "reordered", json_integer((json_int_t)s->reordered));
	json_object_set_new(j, "released_by_gap", json_integer((json_int_t)s->released_by_gap));
	json_object_set_new(j, "released_by_time", json_integer((json_int_t)s->released_by_time));
	json_object_set_new(j, "delayed", json_integer((json_int_t)s->delayed));
	json_object_set_new(j, "out", json_integer((json_int_t)s->out));
	json_object_set_new(j, "out_bytes", json_integer((json_int_t)s->out_bytes));
	json_object_set_new(j, "queue_full", json_integer((json_int_t)s->queue_full));
	json_object_set_new(j, "send_failed", json_integer((json_int_t)s->send_failed));
	json_object_set_new(j, "dropped_at_exit", json_integer((json_int_t)s->dropped_at_exit));
	json_object_set_new(j, "queued", json_integer(rl_dir_queued(d)));
	json_object_set_new(j, "queue_max", json_integer(s->queue_max));
	json_object_set_new(j, "last_send_error", last_errno ? json_string(strerror(last_errno)) : json_null());
	json_object_set_new(j, "fault", json_pack("{s:f,s:f,s:f,s:f,s:i,s:f,s:f,s:f}", "loss", f->loss, "burst", f->burst,
						  "dup", f->dup,
						  "reorder", f->reorder, "reorder_gap", (int)f->reorder_gap,
						  "reorder_ms", (double)f->reorder_ns / 1e6, "delay_ms",
						  (double)f->delay_ns / 1e6, "jitter_ms", (double)f->jitter_ns / 1e6));
	return j;
}

static json_t *stats_json(const struct relay *r, uint64_t now)
{
	json_t *j = json_object();
	char a[80];
	json_object_set_new(j, "tool", json_string("fanorelay"));
	json_object_set_new(j, "seconds", json_real((double)(now - r->t0) / 1e9));
	json_object_set_new(j, "seed", json_integer((json_int_t)r->seed));
	addr_str(&r->listen_addr, a, sizeof a);
	json_object_set_new(j, "listen", json_string(a));
	addr_str(&r->server_addr, a, sizeof a);
	json_object_set_new(j, "server", json_string(a));
	json_object_set_new(j, "clients", json_integer(r->n_sess));
	json_object_set_new(j, "clients_refused", json_integer((json_int_t)r->clients_refused));
	for (unsigned d = 0; d < RL_DIRS; d++)
		json_object_set_new(j, rl_dir_name(d), dir_json(&r->dir[d], r->last_send_errno[d]));
	if (r->ack) {
		const struct rl_ack_stats *s = rl_ack_stats(r->ack);
		json_t *k = json_object();
		json_object_set_new(k, "up_datagrams", json_integer((json_int_t)s->up_datagrams));
		json_object_set_new(k, "up_bad", json_integer((json_int_t)s->up_bad));
		json_object_set_new(k, "frames_through", json_integer((json_int_t)s->frames_through));
		json_object_set_new(k, "frames_evicted", json_integer((json_int_t)s->frames_evicted));
		json_object_set_new(k, "down_datagrams", json_integer((json_int_t)s->down_datagrams));
		json_object_set_new(k, "down_bad", json_integer((json_int_t)s->down_bad));
		json_object_set_new(k, "down_status", json_integer((json_int_t)s->down_status));
		json_object_set_new(k, "down_other", json_integer((json_int_t)s->down_other));
		json_object_set_new(k, "acks", json_integer((json_int_t)s->acks));
		json_object_set_new(k, "ack_entries", json_integer((json_int_t)s->ack_entries));
		json_object_set_new(k, "acked_seqs", json_integer((json_int_t)s->acked_seqs));
		json_object_set_new(k, "ack_proven", json_integer((json_int_t)s->ack_proven));
		json_object_set_new(k, "ack_unproven", json_integer((json_int_t)s->ack_unproven));
		json_object_set_new(k, "ack_unchecked", json_integer((json_int_t)s->ack_unchecked));
		json_object_set_new(k, "seen_overflow", json_boolean(s->seen_overflow));
		json_t *un = json_array();
		for (uint64_t i = 0; i < s->ack_unproven && i < RL_UNPROVEN_KEEP; i++)
			json_array_append_new(un, json_pack("{s:I,s:I,s:I}", "session", (json_int_t)s->unproven[i].sess,
							    "stream", (json_int_t)s->unproven[i].stream, "seq",
							    (json_int_t)s->unproven[i].seq));
		json_object_set_new(k, "unproven", un);
		json_object_set_new(j, "acks", k);
	}
	return j;
}

static void print_stats(const struct relay *r, uint64_t now, const char *when)
{
	if (r->json) {
		json_t *j = stats_json(r, now);
		json_object_set_new(j, "when", json_string(when));
		char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		if (s)
			printf("%s\n", s);
		free(s);
		json_decref(j);
		fflush(stdout);
		return;
	}
	printf("fanorelay (%s): %.2f s, clients %u (refused %llu)\n", when, (double)(now - r->t0) / 1e9, r->n_sess,
	       (unsigned long long)r->clients_refused);
	for (unsigned d = 0; d < RL_DIRS; d++) {
		const struct rl_dir_stats *s = &r->dir[d].st;
		printf("  %-4s in %llu lost %llu dup %llu reordered %llu (gap %llu, time %llu) delayed %llu out %llu "
		       "queue-full %llu send-failed %llu dropped-at-exit %llu queued %u queue-max %u\n",
		       rl_dir_name(d), (unsigned long long)s->in, (unsigned long long)s->lost,
		       (unsigned long long)s->dup, (unsigned long long)s->reordered,
		       (unsigned long long)s->released_by_gap, (unsigned long long)s->released_by_time,
		       (unsigned long long)s->delayed, (unsigned long long)s->out, (unsigned long long)s->queue_full,
		       (unsigned long long)s->send_failed, (unsigned long long)s->dropped_at_exit,
		       rl_dir_queued(&r->dir[d]), s->queue_max);
		if (r->last_send_errno[d])
			printf("  %-4s last send error: %s\n", rl_dir_name(d), strerror(r->last_send_errno[d]));
	}
	if (r->ack) {
		const struct rl_ack_stats *s = rl_ack_stats(r->ack);
		printf("  acks %llu entries %llu acked-seqs %llu proven %llu UNPROVEN %llu unchecked %llu; "
		       "frames through %llu evicted %llu; status %llu other %llu bad %llu/%llu\n",
		       (unsigned long long)s->acks, (unsigned long long)s->ack_entries,
		       (unsigned long long)s->acked_seqs, (unsigned long long)s->ack_proven,
		       (unsigned long long)s->ack_unproven, (unsigned long long)s->ack_unchecked,
		       (unsigned long long)s->frames_through, (unsigned long long)s->frames_evicted,
		       (unsigned long long)s->down_status, (unsigned long long)s->down_other,
		       (unsigned long long)s->up_bad, (unsigned long long)s->down_bad);
		for (uint64_t i = 0; i < s->ack_unproven && i < RL_UNPROVEN_KEEP; i++)
			printf("  unproven: session %u stream 0x%04X seq %u\n", s->unproven[i].sess,
			       s->unproven[i].stream, s->unproven[i].seq);
	}
	fflush(stdout);
}

/* ---- the loop --------------------------------------------------------------- */

static uint8_t g_bufs[BATCH][DGRAM_MAX];

/* Drain one socket (listen: up, session: down) a few batches deep. */
static void drain(struct relay *r, int fd, int s_down)
{
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_storage src[BATCH];
	for (unsigned b = 0; b < BATCHES_PER_EVENT; b++) {
		for (unsigned i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ .iov_base = g_bufs[i], .iov_len = DGRAM_MAX };
			m[i].msg_hdr = (struct msghdr){ .msg_name = &src[i], .msg_namelen = sizeof src[i],
							.msg_iov = &iov[i], .msg_iovlen = 1 };
			m[i].msg_len = 0;
		}
		int n = recvmmsg(fd, m, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		uint64_t now = mono_ns();
		for (int i = 0; i < n; i++) {
			if (m[i].msg_hdr.msg_flags & MSG_TRUNC)
				continue; /* cannot happen below 64 KiB */
			if (s_down >= 0) {
				if (r->ack)
					rl_ack_down(r->ack, (uint32_t)s_down, g_bufs[i], m[i].msg_len);
				(void)rl_dir_input(&r->dir[RL_DOWN], (uint32_t)s_down, g_bufs[i], m[i].msg_len, now);
				continue;
			}
			int s = session_of(r, &src[i], m[i].msg_hdr.msg_namelen);
			if (s < 0)
				continue;
			r->up_received++;
			(void)rl_dir_input(&r->dir[RL_UP], (uint32_t)s, g_bufs[i], m[i].msg_len, now);
			if (r->count_limit && r->up_received >= r->count_limit) {
				g_stop = 1;
				return;
			}
		}
		if ((unsigned)n < BATCH)
			return;
	}
}

static int run(struct relay *r)
{
	sigset_t block, orig;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	/* Signals are only delivered inside epoll_pwait2, so a flag set by a
	 * handler is always seen before the next wait. */
	sigprocmask(SIG_BLOCK, &block, &orig);
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	uint64_t end = r->duration_s > 0 ? r->t0 + (uint64_t)(r->duration_s * 1e9) : UINT64_MAX;
	struct epoll_event ev[64];
	while (!g_stop) {
		uint64_t now = mono_ns();
		if (now >= end)
			break;
		uint64_t wait = end - now;
		for (unsigned d = 0; d < RL_DIRS; d++) {
			uint64_t w = rl_dir_tick(&r->dir[d], now);
			if (w < wait)
				wait = w;
		}
		if (wait > 1000000000ull)
			wait = 1000000000ull;
		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull), .tv_nsec = (long)(wait % 1000000000ull) };
		int n = epoll_pwait2(r->ep, ev, 64, &ts, &orig);
		if (n < 0 && errno != EINTR) {
			perror("fanorelay: epoll_pwait2");
			return 2;
		}
		for (int i = 0; i < n; i++) {
			uint32_t id = ev[i].data.u32;
			if (id == 0)
				drain(r, r->lfd, -1);
			else
				drain(r, r->sess[id - 1].fd, (int)(id - 1));
		}
		if (g_dump) {
			g_dump = 0;
			print_stats(r, mono_ns(), "usr1");
		}
	}
	return 0;
}

/* ---- command line ---------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs(
"usage: fanorelay --listen HOST:PORT --server HOST:PORT [options]\n"
"Relays UDP datagrams between clients (on --listen) and a server, both ways,\n"
"one upstream socket per client, injecting faults independently per direction.\n"
"\n"
"  --listen HOST:PORT     client side: where clients send (required)\n"
"  --server HOST:PORT     server side: where their datagrams go (required)\n"
"  --bind HOST            source address of the upstream sockets\n"
"faults (both directions; --up-NAME / --down-NAME for one of them):\n"
"  --loss P               drop a datagram with probability P (0)\n"
"  --burst N              losses come in bursts of mean length N: after a loss\n"
"                         the next datagram is lost with probability 1 - 1/N;\n"
"                         --loss is then the chance a burst starts (1: off)\n"
"  --dup P                send it twice with probability P (0)\n"
"  --reorder P            hold it back with probability P (0) ...\n"
"  --reorder-gap N        ... until N later datagrams went out (3) ...\n"
"  --reorder-ms MS        ... or MS passed (20)\n"
"  --delay-ms MS          fixed delay (0)\n"
"  --jitter-ms MS         plus a uniform random delay in [0, MS] (0)\n"
"run:\n"
"  --seed N               seed of the fault decisions (1); same seed, same faults\n"
"  --queue N              datagrams held or delayed per direction at most (4096)\n"
"  --max-clients N        client addresses (64); more are dropped and counted\n"
"  --duration S           stop after S seconds\n"
"  --count N              stop after N datagrams from clients\n"
"  --check-acks           fanogate fragmented profile: every ACK must cover only\n"
"                         frames whose fragments all went through (exit 1 if not)\n"
"  --json                 counters as one JSON line (on exit and on SIGUSR1)\n"
"  --stats FILE           write the final counters as JSON to FILE\n"
"  --ready-file FILE      create FILE once the listen socket is bound\n"
"  --quiet                no client lines on stderr\n"
"Counters are printed on exit (SIGINT/SIGTERM, --duration, --count) and on SIGUSR1.\n"
"Exit: 0 ok, 1 unproven ACKs (--check-acks), 2 usage or set-up error.\n", f);
}

enum { F_LOSS, F_DUP, F_REORDER, F_GAP, F_REORDER_MS, F_DELAY, F_JITTER, F_BURST, F__COUNT };
static const char *const fault_names[F__COUNT] = { "loss", "dup", "reorder", "reorder-gap", "reorder-ms",
						   "delay-ms", "jitter-ms", "burst" };
enum {
	O_LISTEN = 1000, O_SERVER, O_BIND, O_SEED, O_QUEUE, O_MAXC, O_DURATION, O_COUNT, O_CHECK, O_JSON, O_STATS,
	O_READY, O_QUIET, O_HELP, O_FAULT = 2000, /* + dir * 100 + F_xx; dir 2 = both */
};

static bool num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

static int set_fault(struct rl_fault *f, unsigned which, double v)
{
	switch (which) {
	case F_LOSS: f->loss = v; break;
	case F_DUP: f->dup = v; break;
	case F_REORDER: f->reorder = v; break;
	case F_GAP:
		if (v < 1 || v > 1e6 || v != (double)(uint32_t)v)
			return -EINVAL;
		f->reorder_gap = (uint32_t)v;
		break;
	case F_REORDER_MS: f->reorder_ns = (uint64_t)(v * 1e6); break;
	case F_DELAY: f->delay_ns = (uint64_t)(v * 1e6); break;
	case F_JITTER: f->jitter_ns = (uint64_t)(v * 1e6); break;
	case F_BURST: f->burst = v; break;
	default: return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct relay R;
	struct relay *r = &R;
	r->seed = 1;
	r->queue_cap = 4096;
	r->max_sess = 64;
	r->lfd = r->ep = -1;
	for (unsigned d = 0; d < RL_DIRS; d++)
		r->f[d] = (struct rl_fault){ .reorder_gap = 3, .reorder_ns = 20000000ull };
	bool check = false;
	const char *listen_s = NULL, *server_s = NULL, *bind_s = NULL;

	/* The fault options exist three times: both directions, up, down. */
	static struct option opts[16 + 3 * F__COUNT];
	static char names[3 * F__COUNT][32];
	static const struct option base[] = {
		{ "listen", 1, 0, O_LISTEN }, { "server", 1, 0, O_SERVER }, { "bind", 1, 0, O_BIND },
		{ "seed", 1, 0, O_SEED }, { "queue", 1, 0, O_QUEUE }, { "max-clients", 1, 0, O_MAXC },
		{ "duration", 1, 0, O_DURATION }, { "count", 1, 0, O_COUNT }, { "check-acks", 0, 0, O_CHECK },
		{ "json", 0, 0, O_JSON }, { "stats", 1, 0, O_STATS }, { "ready-file", 1, 0, O_READY },
		{ "quiet", 0, 0, O_QUIET }, { "help", 0, 0, O_HELP },
	};
	unsigned no = 0;
	for (unsigned i = 0; i < FG_ARRAY_LEN(base); i++)
		opts[no++] = base[i];
	static const char *const prefix[3] = { "up-", "down-", "" };
	for (unsigned d = 0; d < 3; d++)
		for (unsigned k = 0; k < F__COUNT; k++) {
			char *nm = names[d * F__COUNT + k];
			snprintf(nm, sizeof names[0], "%s%s", prefix[d], fault_names[k]);
			opts[no++] = (struct option){ nm, 1, 0, (int)(O_FAULT + d * 100 + k) };
		}
	opts[no] = (struct option){ 0, 0, 0, 0 };

	int c, idx;
	double v;
	while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
		switch (c) {
		case O_LISTEN: listen_s = optarg; break;
		case O_SERVER: server_s = optarg; break;
		case O_BIND: bind_s = optarg; break;
		case O_SEED:
			if (!num(optarg, 0, 1.8e19, &v))
				goto bad;
			r->seed = (uint64_t)v;
			break;
		case O_QUEUE:
			if (!num(optarg, 1, 1 << 24, &v))
				goto bad;
			r->queue_cap = (uint32_t)v;
			break;
		case O_MAXC:
			if (!num(optarg, 1, 65535, &v))
				goto bad;
			r->max_sess = (uint32_t)v;
			break;
		case O_DURATION:
			if (!num(optarg, 0.001, 864000, &r->duration_s))
				goto bad;
			break;
		case O_COUNT:
			if (!num(optarg, 1, 1e15, &v))
				goto bad;
			r->count_limit = (uint64_t)v;
			break;
		case O_CHECK: check = true; break;
		case O_JSON: r->json = true; break;
		case O_STATS: r->stats_path = optarg; break;
		case O_READY: r->ready_path = optarg; break;
		case O_QUIET: r->quiet = true; break;
		case 'h':
		case O_HELP: usage(stdout); return 0;
		default:
			if (c >= O_FAULT && c < O_FAULT + 300) {
				unsigned d = (unsigned)(c - O_FAULT) / 100, k = (unsigned)(c - O_FAULT) % 100;
				bool prob = k == F_LOSS || k == F_DUP || k == F_REORDER;
				if (!num(optarg, 0, prob ? 1 : 3600000, &v))
					goto bad;
				for (unsigned x = 0; x < RL_DIRS; x++)
					if ((d == 2 || d == x) && set_fault(&r->f[x], k, v) < 0)
						goto bad;
				break;
			}
			usage(stderr);
			return 2;
		}
		continue;
bad:
		fprintf(stderr, "fanorelay: invalid value '%s' for --%s (see --help)\n", optarg, opts[idx].name);
		return 2;
	}
	if (optind < argc || !listen_s || !server_s) {
		fprintf(stderr, "fanorelay: need --listen and --server (see --help)\n");
		return 2;
	}
	if (tool_addr_parse(listen_s, false, &r->listen_addr, &r->listen_len) < 0 ||
	    tool_addr_parse(server_s, false, &r->server_addr, &r->server_len) < 0) {
		fprintf(stderr, "fanorelay: addresses are numeric HOST:PORT or [V6]:PORT\n");
		return 2;
	}
	if (bind_s) {
		if (tool_bind_parse(bind_s, &r->bind_addr, &r->bind_len) < 0 ||
		    r->bind_addr.ss_family != r->server_addr.ss_family) {
			fprintf(stderr, "fanorelay: --bind takes a numeric address of the server's family\n");
			return 2;
		}
		r->have_bind = true;
	}

	int rc = 2;
	r->sess = calloc(r->max_sess, sizeof *r->sess);
	if (!r->sess)
		goto out;
	static const rl_emit_fn emit[RL_DIRS] = { emit_up, emit_down };
	for (unsigned d = 0; d < RL_DIRS; d++) {
		/* Independent decision streams per direction. */
		int e = rl_dir_init(&r->dir[d], &r->f[d], r->seed * 2 + d + 1, r->queue_cap, emit[d], r);
		if (e < 0) {
			fprintf(stderr, "fanorelay: %s faults: %s\n", rl_dir_name(d), strerror(-e));
			goto out;
		}
	}
	if (check && !(r->ack = rl_ack_new(65536, 1u << 22))) {
		perror("fanorelay: ACK checker");
		goto out;
	}
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	r->lfd = socket(r->listen_addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->ep < 0 || r->lfd < 0) {
		perror("fanorelay: socket");
		goto out;
	}
	big_buffers(r->lfd);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	if (bind(r->lfd, (const struct sockaddr *)&r->listen_addr, r->listen_len) < 0 ||
	    epoll_ctl(r->ep, EPOLL_CTL_ADD, r->lfd, &ev) < 0) {
		fprintf(stderr, "fanorelay: bind %s: %s\n", listen_s, strerror(errno));
		goto out;
	}
	if (r->ready_path) {
		FILE *f = fopen(r->ready_path, "w");
		if (!f) {
			fprintf(stderr, "fanorelay: %s: %s\n", r->ready_path, strerror(errno));
			goto out;
		}
		fclose(f);
	}
	r->t0 = mono_ns();
	rc = run(r);
	uint64_t now = mono_ns();
	for (unsigned d = 0; d < RL_DIRS; d++)
		rl_dir_fini(&r->dir[d]); /* what is still queued counts as dropped_at_exit */
	print_stats(r, now, "exit");
	if (r->stats_path) {
		json_t *j = stats_json(r, now);
		if (json_dump_file(j, r->stats_path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
			fprintf(stderr, "fanorelay: cannot write %s\n", r->stats_path);
			rc = 2;
		}
		json_decref(j);
	}
	if (rc == 0 && r->ack && rl_ack_stats(r->ack)->ack_unproven > 0) {
		fprintf(stderr, "fanorelay: %llu ACKed sequences were never relayed whole\n",
			(unsigned long long)rl_ack_stats(r->ack)->ack_unproven);
		rc = 1;
	}
out:
	if (r->sess)
		for (uint32_t i = 0; i < r->n_sess; i++)
			close(r->sess[i].fd);
	free(r->sess);
	rl_ack_free(r->ack);
	if (r->lfd >= 0)
		close(r->lfd);
	if (r->ep >= 0)
		close(r->ep);
	return rc;
}

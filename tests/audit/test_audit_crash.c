/* test_audit_crash.c - crash safety of cp_audit_log with a real process
 * and SIGKILL: audit_writer (FG_AUDIT_WRITER) appends verdicts and prints
 * each sequence number once on_durable reported it; this test kills it at a
 * random moment, 20 rounds, restarting it each time (start-up recovery), with
 * a small rotation size so kills also land around rotations. Checks after
 * every round: the chain verifies across all files (a torn tail allowed only
 * at the end of the current file, before recovery) and every sequence number
 * printed as durable is in the log, written by the run that printed it. At
 * the end: recovery twice is idempotent and the whole log verifies.
 *
 * SIGKILL alone never tears a write (the page cache survives the process),
 * so in about half the rounds the test also plays a power loss: it cuts the
 * current file in the middle of the first record that was NOT reported
 * durable (what a crash may do to an un-synced tail) and checks that the
 * next start-up cuts exactly that torn record and records it.
 *
 * The random moments come from a seed printed at the start
 * (FG_TEST_SEED=... reproduces a run). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cp_audit_head.h"
#include "cp_audit_log.h"
#include "../lib/fg_test_file.h" /* whole-file reads and writes, rotated file names */
#include "fg/audit.h"

#define ROUNDS 20
#define ROTATE_BYTES "65536"

static char dir[256], path[300];
static const char *writer;

struct rec_info {
	uint16_t type;
	uint32_t token, epoch;
};

struct all {
	struct rec_info *r;
	uint64_t n;       /* records [0, n) known */
	unsigned files;
	bool torn;        /* the current file ended in a torn tail */
};

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Read path.1 .. path.N, path; verify the chain; fill a. */
static void load_all(struct all *a, bool allow_torn)
{
	memset(a, 0, sizeof(*a));
	uint32_t hi = fg_audit_file_highest_rotated(path);
	struct fg_audit_chain ch;
	bool have = false;
	size_t cap = 1 << 16;
	a->r = calloc(cap, sizeof(*a->r));
	for (uint32_t i = 1; i <= hi + 1; i++) {
		char name[400];
		fg_test_audit_file_name(path, i, hi, name, sizeof(name));
		uint8_t *buf = NULL;
		size_t len = 0;
		if (fg_test_read(name, &buf, &len) < 0) {
			/* the current file may be missing after a kill between rename and create */
			assert_true(i == hi + 1 && allow_torn);
			continue;
		}
		a->files++;
		struct fg_audit_scan s;
		int rc = fg_audit_verify(buf, len, have ? &ch : NULL, &s);
		if (rc < 0) {
			bool last = i == hi + 1;
			if (!(last && allow_torn && fg_audit_tail_is_torn(&s, len)))
				fail_msg("%s: bad record at offset %" PRIu64 " seq %" PRIu64 ": %s", name, s.bad_offset,
					 s.bad_seq, fg_audit_reason_name(s.reason));
			a->torn = true;
		}
		size_t off = 0;
		while (off < s.good_bytes) {
			struct fg_audit_rec r;
			ssize_t k = fg_audit_decode(buf + off, len - off, &r);
			assert_true(k > 0);
			while (r.seq >= cap) {
				a->r = realloc(a->r, 2 * cap * sizeof(*a->r));
				memset(a->r + cap, 0, cap * sizeof(*a->r));
				cap *= 2;
			}
			assert_int_equal(r.seq, a->n);
			a->r[r.seq].type = r.type;
			if (r.type == FG_AREC_VERDICT) {
				a->r[r.seq].token = r.p.verdict.token_seq;
				a->r[r.seq].epoch = r.p.verdict.epoch;
			}
			a->n = r.seq + 1;
			off += (size_t)k;
		}
		if (s.records) {
			ch = s.chain;
			have = true;
		}
		free(buf);
	}
}

struct round {
	uint64_t open_next;
	bool cut;
	uint64_t cut_bytes;
	bool any_durable;
	uint64_t max_durable;
};

/* Run the writer; kill it after kill_ms (or let it finish when kill_ms < 0). */
static void run_writer(char *const argv[], int kill_ms, struct round *rd, bool *killed)
{
	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		execv(writer, argv);
		_exit(127);
	}
	close(pfd[1]);
	memset(rd, 0, sizeof(*rd));
	char line[128];
	size_t ln = 0;
	bool opened = false, dead = false;
	uint64_t start = now_ms();
	for (;;) {
		int wait = -1;
		if (kill_ms >= 0 && !dead) {
			int64_t left = (int64_t)(start + (uint64_t)kill_ms) - (int64_t)now_ms();
			if (left <= 0) {
				kill(pid, SIGKILL);
				dead = true;
				continue;
			}
			wait = (int)left;
		}
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int pr = poll(&p, 1, wait);
		if (pr == 0)
			continue;
		char c;
		ssize_t n = read(pfd[0], &c, 1);
		if (n <= 0)
			break; /* EOF: the writer is gone; what it wrote before is all read */
		if (c != '\n') {
			if (ln < sizeof(line) - 1)
				line[ln++] = c;
			continue;
		}
		line[ln] = '\0';
		ln = 0;
		uint64_t a, b, d;
		if (sscanf(line, "O %" SCNu64 " %" SCNu64 " %" SCNu64, &a, &b, &d) == 3) {
			rd->open_next = a;
			rd->cut = b != 0;
			rd->cut_bytes = d;
			opened = true;
		} else if (sscanf(line, "D %" SCNu64, &a) == 1) {
			assert_true(opened);
			assert_true(!rd->any_durable || a > rd->max_durable);
			rd->any_durable = true;
			rd->max_durable = a;
		} else {
			fail_msg("writer said: %s", line);
		}
	}
	close(pfd[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	*killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	if (!*killed && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		fail_msg("writer failed: status 0x%x", st);
	assert_true(opened || *killed);
}

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Play a power loss: cut the current file inside the first record after
 * the last one reported durable, then start up (recover) and check the cut.
 * Returns true when a tail was torn. */
static bool tear_tail(bool any, uint64_t max_durable)
{
	/* What a power loss can take is what was not yet fdatasync'ed: the
	 * records after the head pinned in <log>.head. The writer pins the head
	 * before it reports a record durable, so a kill between the two leaves
	 * the head ahead of max_durable; those records are on disk and cutting
	 * them is damage (recovery fails closed), not a torn tail. */
	char hp[sizeof(path) + 8];
	snprintf(hp, sizeof(hp), "%s%s", path, CP_AUDIT_HEAD_SUFFIX);
	int hfd = open(hp, O_RDONLY | O_CLOEXEC);
	if (hfd >= 0) {
		struct cp_audit_head h;
		unsigned slot;
		if (cp_audit_head_read(hfd, &h, &slot) == 1 && (!any || h.seq > max_durable)) {
			max_durable = h.seq;
			any = true;
		}
		close(hfd);
	}
	uint8_t *b = NULL;
	size_t len = 0;
	if (fg_test_read(path, &b, &len) < 0)
		return false;
	size_t off = 0, at = 0, n = 0;
	bool found = false;
	while (off < len) {
		struct fg_audit_rec r;
		ssize_t k = fg_audit_decode(b + off, len - off, &r);
		if (k < 0)
			break;
		if (!any || r.seq > max_durable) {
			if (r.seq > 0) { /* never the genesis: it was written durably at open */
				found = true;
				at = off;
				n = (size_t)k;
			}
			break;
		}
		off += (size_t)k;
	}
	free(b);
	if (!found)
		return false;
	size_t cut = at + 1 + rnd() % (n - 1);
	assert_int_equal(truncate(path, (off_t)cut), 0);
	char *rec[] = { "audit_writer", "--recover", path, NULL };
	struct round rd;
	bool killed;
	run_writer(rec, -1, &rd, &killed);
	assert_true(rd.cut);
	assert_int_equal(rd.cut_bytes, cut - at);
	return true;
}

/* The chain head after the last record of the current file, which must
 * verify whole, into head. */
static void chain_head(uint8_t head[FG_AUDIT_HASH_LEN])
{
	uint8_t *b = NULL;
	size_t l = 0;
	struct fg_audit_scan s;

	assert_int_equal(fg_test_read(path, &b, &l), 0);
	assert_int_equal(fg_audit_verify(b, l, NULL, &s), 0);
	memcpy(head, s.chain.head, FG_AUDIT_HASH_LEN);
	free(b);
}

static void test_sigkill_rounds(void **state)
{
	(void)state;
	writer = getenv("FG_AUDIT_WRITER");
	if (!writer) {
		fprintf(stderr, "FG_AUDIT_WRITER not set (run through meson test)\n");
		exit(77);
	}
	const char *seed = getenv("FG_TEST_SEED");
	rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)getpid();
	if (!rng)
		rng = 1;
	printf("# FG_TEST_SEED=%" PRIu64 "\n", rng);
	fg_test_tmpdir(dir, sizeof(dir), "/tmp/fg-test-crash-XXXXXX");
	snprintf(path, sizeof(path), "%s/fanogate.audit", dir);

	static struct round rounds[ROUNDS + 1];
	unsigned killed_rounds = 0, cuts = 0, damaged = 0;
	uint64_t max_durable = 0;
	bool any = false;
	uint64_t durable_total = 0;
	for (unsigned r = 1; r <= ROUNDS; r++) {
		char run_id[16], gc[16];
		snprintf(run_id, sizeof(run_id), "%u", r);
		snprintf(gc, sizeof(gc), "%u", r % 3 == 0 ? 0u : 300u);
		char *argv[] = { "audit_writer", path, ROTATE_BYTES, gc, "10000000", run_id, NULL };
		int kill_ms = (int)(rnd() % 120) + 5;
		bool killed;
		run_writer(argv, kill_ms, &rounds[r], &killed);
		killed_rounds += killed;
		cuts += rounds[r].cut;
		/* Before recovery: the chain holds, a torn tail only at the very end,
		 * and every durable record of this round is there. */
		struct all a;
		load_all(&a, true);
		if (rounds[r].any_durable) {
			assert_true(rounds[r].max_durable < a.n);
			durable_total += rounds[r].max_durable + 1 - rounds[r].open_next;
			max_durable = rounds[r].max_durable;
			any = true;
		}
		free(a.r);
		if (rnd() % 2 == 0 && tear_tail(any, max_durable))
			damaged++;
	}
	printf("# %u rounds killed, %u power losses played, %u start-ups cut a torn tail, %" PRIu64
	       " records reported durable\n", killed_rounds, damaged, cuts, durable_total);
	assert_int_equal(killed_rounds, ROUNDS);

	/* Recovery twice: the second open finds nothing to cut and changes nothing. */
	char *rec[] = { "audit_writer", "--recover", path, NULL };
	struct round r1, r2;
	bool killed;
	run_writer(rec, -1, &r1, &killed);
	struct stat s1, s2;
	assert_int_equal(stat(path, &s1), 0);
	uint8_t h1[FG_AUDIT_HASH_LEN], h2[FG_AUDIT_HASH_LEN];
	chain_head(h1);
	run_writer(rec, -1, &r2, &killed);
	assert_int_equal(stat(path, &s2), 0);
	assert_int_equal(s1.st_size, s2.st_size);
	assert_int_equal(r1.open_next, r2.open_next);
	chain_head(h2);
	assert_memory_equal(h1, h2, sizeof(h1));

	/* The whole log, genesis to head, verifies with no torn tail; every
	 * record a run reported durable is that run's record. */
	struct all a;
	load_all(&a, false);
	assert_false(a.torn);
	assert_int_equal(a.r[0].type, FG_AREC_GENESIS);
	for (unsigned r = 1; r <= ROUNDS; r++) {
		if (!rounds[r].any_durable)
			continue;
		for (uint64_t s = rounds[r].open_next; s <= rounds[r].max_durable; s++) {
			assert_true(s < a.n);
			if (a.r[s].type != FG_AREC_VERDICT)
				continue;
			if (a.r[s].epoch != r)
				fail_msg("seq %" PRIu64 " reported durable by run %u holds run %u's record", s, r,
					 a.r[s].epoch);
			bool after_rot = s > 0 && a.r[s - 1].type == FG_AREC_ROTATION;
			assert_true(a.r[s].token == (uint32_t)s || (after_rot && a.r[s].token == (uint32_t)(s - 1)));
		}
	}
	printf("# %" PRIu64 " records in %u files\n", a.n, a.files);
	free(a.r);
	assert_int_equal(fg_test_rmtree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_rounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* audit_writer.c - test helper for the crash-safety test: appends verdict
 * records through cp_audit_log as fast as the log takes them and prints
 * "D <seq>" (one write(2) per line, unbuffered) each time on_durable
 * reports a new durable sequence number. Every verdict's token_seq is the
 * low 32 bits of its own sequence number, so a checker can tell that the
 * record at seq s is the one this writer appended as s, and epoch is RUN_ID
 * so it can tell which run wrote it (a later run reusing a sequence number
 * that an earlier run saw durable would mean recovery cut a durable record).
 *
 * usage: audit_writer PATH ROTATE_BYTES GROUP_COMMIT_US [MAX_RECORDS [RUN_ID]]
 *        audit_writer --recover PATH     open (recover) and exit
 * First line printed: "O <next_seq> <cut 0|1> <cut_bytes>". Runs until
 * MAX_RECORDS (default 10^7) are durable, or it is killed. Single thread. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cp_audit_log.h"

static void say(const char *fmt, uint64_t a, uint64_t b, uint64_t c)
{
	char line[96];
	int n = snprintf(line, sizeof(line), fmt, a, b, c);
	if (write(1, line, (size_t)n) != n)
		_exit(3);
}

static uint64_t durable_next;

static void on_durable(void *arg, uint64_t seq)
{
	(void)arg;
	durable_next = seq + 1;
	say("D %" PRIu64 "\n", seq, 0, 0);
}

static void on_failed(void *arg, int err, const char *what)
{
	(void)arg;
	fprintf(stderr, "audit_writer: %s failed: %s\n", what, strerror(err));
	_exit(4);
}

int main(int argc, char **argv)
{
	bool recover_only = argc == 3 && !strcmp(argv[1], "--recover");
	if (!recover_only && argc < 4) {
		fprintf(stderr, "usage: audit_writer PATH ROTATE_BYTES GROUP_COMMIT_US [MAX]\n"
				"       audit_writer --recover PATH\n");
		return 2;
	}
	struct cp_audit_log_cfg cfg = {
		.path = recover_only ? argv[2] : argv[1],
		.rotate_bytes = recover_only ? 0 : strtoull(argv[2], NULL, 10),
		.group_commit_us = recover_only ? 0 : (uint32_t)strtoul(argv[3], NULL, 10),
		.who = "audit_writer",
		.on_durable = on_durable,
		.on_failed = on_failed,
	};
	uint64_t max = argc > 4 ? strtoull(argv[4], NULL, 10) : 10000000u;
	uint32_t run_id = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 0;
	struct cp_audit_log *l;
	struct cp_audit_open_report rep;
	char err[512];
	int rc = cp_audit_log_open(&l, &cfg, &rep, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "audit_writer: %s\n", err);
		return 1;
	}
	say("O %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", rep.next_seq, rep.cut, rep.recovery.cut_bytes);
	durable_next = rep.next_seq;
	if (recover_only) {
		cp_audit_log_free(l);
		return 0;
	}
	uint64_t appended = 0;
	unsigned burst = 1;
	while (durable_next < rep.next_seq + max) {
		/* Bursts of 1..64 records, then let the ring work. */
		for (unsigned i = 0; i < burst && appended < max; i++) {
			union fg_audit_payload p;
			memset(&p, 0, sizeof(p));
			uint8_t h[FG_AUDIT_HASH_LEN];
			uint64_t next;
			cp_audit_log_head(l, h, &next);
			p.verdict.token_seq = (uint32_t)next;
			p.verdict.dst_layer = (uint16_t)(next % 28);
			p.verdict.lines = 0x2A;
			p.verdict.epoch = run_id;
			p.verdict.fp_jump = p.verdict.fp_canon = next * 0x9E3779B97F4A7C15ull;
			p.verdict.diff.first_index = UINT32_MAX;
			uint64_t seq;
			rc = cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq);
			if (rc == -ENOBUFS)
				break;
			if (rc < 0) {
				fprintf(stderr, "audit_writer: append: %s\n", strerror(-rc));
				return 1;
			}
			/* seq == next + 1 when the log put a ROTATION record first. */
			if (seq != next && seq != next + 1) {
				fprintf(stderr, "audit_writer: seq %" PRIu64 " != head %" PRIu64 "\n", seq, next);
				return 1;
			}
			appended++;
		}
		burst = burst % 64 + 7;
		struct pollfd pfd = { .fd = cp_audit_log_fd(l), .events = POLLIN };
		(void)poll(&pfd, 1, 1);
		if (cp_audit_log_process(l) < 0)
			return 1;
	}
	cp_audit_log_free(l);
	return 0;
}

/* fanoctl.h - what the fanoctl command files share: the command table entry,
 * the exit codes, and small helpers (tools/fanoctl_util.c).
 *
 * Who may call: the fanoctl process only (single-threaded).
 *
 * Adding a command is one entry in the table of tools/fanoctl.c; a command
 * that talks to the daemon uses fanoctl_op_call (tools/fanoctl_op.c). */
#ifndef FANOCTL_H
#define FANOCTL_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* Exit codes (documented in `fanoctl --help` and docs/config.md). */
enum {
	FANOCTL_OK = 0,          /* done */
	FANOCTL_REFUSED = 1,     /* refused or invalid (bad config, daemon said no) */
	FANOCTL_USAGE = 2,       /* usage error, or malformed input (decode) */
	FANOCTL_UNREACHABLE = 3, /* the daemon's operator socket cannot be reached */
};

struct fanoctl_cmd {
	const char *name;
	const char *summary; /* one line for `fanoctl --help` */
	/* argv[0] is the command name; returns an exit code. */
	int (*run)(int argc, char **argv);
	/* Full help for `fanoctl CMD --help`; NULL: the command prints its own. */
	void (*help)(FILE *out);
	const char *alias; /* another name it answers to, or NULL */
};

/* Commands (one file per group). */
int fanoctl_decode(int argc, char **argv);
void fanoctl_decode_help(FILE *out);
int fanoctl_config(int argc, char **argv);
int fanoctl_counters(int argc, char **argv);
void fanoctl_counters_help(FILE *out);
void fanoctl_config_help(FILE *out);
int fanoctl_op_status(int argc, char **argv);
void fanoctl_op_status_help(FILE *out);
int fanoctl_op_lines(int argc, char **argv);
void fanoctl_op_lines_help(FILE *out);
int fanoctl_op_slots(int argc, char **argv);
void fanoctl_op_slots_help(FILE *out);
int fanoctl_op_slot(int argc, char **argv);
void fanoctl_op_slot_help(FILE *out);
int fanoctl_op_peers(int argc, char **argv);
int fanoctl_op_cluster(int argc, char **argv);
void fanoctl_op_cluster_help(FILE *out);
void fanoctl_op_peers_help(FILE *out);
int fanoctl_op_stats(int argc, char **argv);
int fanoctl_op_reload(int argc, char **argv); /* `fanoctl config reload` */
/* The running daemon's audit log path ([audit] path, from `status`) into
 * buf. Returns 0, or an exit code after printing why. */
int fanoctl_op_audit_path(char *buf, size_t len);
void fanoctl_op_stats_help(FILE *out);

/* True when argv[1..] holds -h or --help before any "--". */
bool fanoctl_wants_help(int argc, char **argv);
/* Print a JSON value to stdout followed by a newline; frees it. */
void fanoctl_json_print(json_t *v);
/* Shortest decimal text that reads back as the same f32 bits. */
void fanoctl_float_text(float f, char *buf, size_t cap);

#endif

/* fanoctl.c - the operator CLI's dispatcher: global options, the command
 * table, help, exit codes. Each command group lives in its own file
 * (fanoctl_audit.c, fanoctl_decode.c, fanoctl_config.c, fanoctl_op.c).
 *
 * Who may call: this is main(); single-threaded.
 *
 * Exit codes: 0 ok, 1 refused/invalid, 2 usage or malformed input,
 * 3 daemon unreachable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanoctl.h"

#include "fanoctl_audit.h"

/* Whether `audit tail`'s words (after "tail") name a FILE or ask for help. */
static bool tail_names_file(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-n")) {
			i++; /* its number */
			continue;
		}
		if (argv[i][0] != '-' || !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

/* fanoctl_audit_cli takes the words after "audit". `audit tail` without a
 * FILE reads the running daemon's log: its path comes from `status`. */
static int fanoctl_audit(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "tail") && !tail_names_file(argc - 2, argv + 2)) {
		static char path[4096];
		int rc = fanoctl_op_audit_path(path, sizeof(path));
		if (rc)
			return rc;
		char **av = calloc((size_t)argc + 1, sizeof(*av));
		if (!av)
			return FANOCTL_REFUSED;
		memcpy(av, argv + 1, (size_t)(argc - 1) * sizeof(*av));
		av[argc - 1] = path;
		rc = fanoctl_audit_cli(argc, av);
		free(av);
		return rc;
	}
	return fanoctl_audit_cli(argc - 1, argv + 1);
}

/* Sorted by name; one entry per command (a second name is its alias). */
static const struct fanoctl_cmd commands[] = {
	{"audit", "audit log: verify, tail, repair (offline; fanoctl audit --help)", fanoctl_audit, NULL, NULL},
	{"cluster", "nodes, leases, shared epoch, fleet line states (daemon, [cluster])", fanoctl_op_cluster,
	 fanoctl_op_cluster_help, NULL},
	{"config", "check a configuration file, list the keys", fanoctl_config, fanoctl_config_help, NULL},
	{"counters", "every dataplane counter: name, /metrics series, help (offline)", fanoctl_counters,
	 fanoctl_counters_help, NULL},
	{"decode", "decode aeon-flow frames, batches and UDP datagrams given as hex", fanoctl_decode,
	 fanoctl_decode_help, NULL},
	{"lines", "show the lines; enable, disable, shadow or force one (daemon)", fanoctl_op_lines,
	 fanoctl_op_lines_help, "line"},
	{"peers", "live peers per Fano point (daemon)", fanoctl_op_peers, fanoctl_op_peers_help, NULL},
	{"slot", "one slot by token and layer: fanoctl slot TOKEN LAYER (daemon)", fanoctl_op_slot,
	 fanoctl_op_slot_help, NULL},
	{"slots", "slot table occupancy, or one slot by layer and token (daemon)", fanoctl_op_slots,
	 fanoctl_op_slots_help, NULL},
	{"stats", "counters: ingress, outcomes, reasons, latency (daemon)", fanoctl_op_stats, fanoctl_op_stats_help,
	 NULL},
	{"status", "daemon status summary (daemon)", fanoctl_op_status, fanoctl_op_status_help, NULL},
};

/* The command called name (or by its alias), or NULL. */
static const struct fanoctl_cmd *command_find(const char *name)
{
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (strcmp(commands[k].name, name) == 0 || (commands[k].alias && strcmp(commands[k].alias, name) == 0))
			return &commands[k];
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: fanoctl [--socket PATH] COMMAND [ARGS...]\n"
		     "       fanoctl COMMAND --help\n\n"
		     "fanogate's operator CLI.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s%s%s\n", commands[i].name, commands[i].summary,
			commands[i].alias ? "; also: " : "", commands[i].alias ? commands[i].alias : "");
	fprintf(out, "\noptions:\n"
		     "  --socket PATH  operator socket (default: $FANOCTL_SOCKET, else\n"
		     "                 /run/fanogate/fanoctl.sock)\n"
		     "  -h, --help     this help\n"
		     "  --version      print the version\n"
		     "\nexit codes:\n"
		     "  0  ok\n"
		     "  1  refused or invalid (bad configuration, the daemon refused)\n"
		     "  2  usage error, or malformed input (decode prints the stable reason)\n"
		     "  3  the daemon's operator socket cannot be reached\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return FANOCTL_OK;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("fanoctl %s\n", FANOGATE_VERSION);
			return FANOCTL_OK;
		}
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			setenv("FANOCTL_SOCKET", argv[++i], 1);
			continue;
		}
		if (strncmp(argv[i], "--socket=", 9) == 0) {
			setenv("FANOCTL_SOCKET", argv[i] + 9, 1);
			continue;
		}
		fprintf(stderr, "fanoctl: unknown option '%s' (fanoctl --help)\n", argv[i]);
		return FANOCTL_USAGE;
	}
	if (i >= argc) {
		usage(stderr);
		return FANOCTL_USAGE;
	}
	bool asked_help = strcmp(argv[i], "help") == 0; /* fanoctl help CMD */

	if (asked_help && ++i >= argc) {
		usage(stdout);
		return FANOCTL_OK;
	}
	const struct fanoctl_cmd *cmd = command_find(argv[i]);

	if (!cmd) {
		fprintf(stderr, "fanoctl: unknown command '%s' (fanoctl --help)\n", argv[i]);
		return FANOCTL_USAGE;
	}
	if (cmd->help && (asked_help || fanoctl_wants_help(argc - i, argv + i))) {
		cmd->help(stdout);
		return FANOCTL_OK;
	}
	if (asked_help) { /* the command prints its own help */
		char *hv[] = {(char *)cmd->name, (char *)"--help", NULL};
		return cmd->run(2, hv);
	}
	return cmd->run(argc - i, argv + i);
}

/* fanoctl_config.c - `fanoctl config check FILE [--json]` (validate a
 * configuration and print its effective summary, or the refusal as
 * file:line: reason, exit 1; the files and directories it names are checked
 * as a start checks them, control/cp_check.h) and `fanoctl config keys [--json]` (every key
 * with its default, range and meaning; docs/config.md mirrors it).
 *
 * Who may call: fanoctl's main (single-threaded). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_check.h"
#include "fanoctl.h"
#include "fg/config.h"

void fanoctl_config_help(FILE *out)
{
	fprintf(out, "usage: fanoctl config check FILE [--json]\n"
		     "       fanoctl config keys [--json]\n"
		     "       fanoctl config reload [--json]\n\n"
		     "check  parse and validate FILE as fanogate would (fanogate --check-config\n"
		     "       does the same), check what a start checks of the files it names\n"
		     "       (certificate, key and CA parse and match, the tokens file is 0600 and\n"
		     "       well formed, every named file is a regular file, the audit log and\n"
		     "       socket directories are writable: run it as the user that starts\n"
		     "       fanogate) and print the effective configuration: every value,\n"
		     "       defaults included. A refusal prints FILE:LINE: REASON (LINE 0 for a\n"
		     "       named file or directory) and exits 1.\n"
		     "keys   list every key: section, name, type, default, accepted range, meaning.\n"
		     "reload ask the running daemon to re-read the file it was started with\n"
		     "       (also SIGHUP): the whole file is validated; [lines] auto_promote,\n"
		     "       promote_count, promote_ms, promote_min_ahead, promote_min_lead_us and\n"
		     "       [tls] ws_max_message, handshake and idle\n"
		     "       timeouts, send_queue_max, max_connections (grow only) change live, all\n"
		     "       at once; any other changed key refuses the reload as a whole, naming\n"
		     "       the keys that need a restart. Audited. Prints the changes applied.\n\n"
		     "exit: 0 valid (reload: applied or unchanged), 1 invalid, unreadable or refused\n"
		     "(reload prints FILE:LINE: REASON), 2 usage error, 3 daemon unreachable.\n");
}

/* The text of a setting as a JSON value of its key's type: numbers and
 * booleans as such, lists (prefixes, rules, neighbours) as arrays, an
 * empty address as null, everything else as a string. */
static json_t *setting_json(const struct fg_config_setting *s)
{
	const char *t = s->doc->type, *v = s->value;

	/* A number key may also read "auto" ([tls] unauth_per_source): a string. */
	if ((!strcmp(t, "uint") || !strcmp(t, "ms") || !strcmp(t, "bytes") || !strcmp(t, "hex16")) &&
	    *v >= '0' && *v <= '9')
		return json_integer((json_int_t)strtoull(v, NULL, 0));
	if (!strcmp(t, "bool"))
		return json_boolean(!strcmp(v, "true"));
	if (!strcmp(t, "fraction"))
		return json_real(strtod(v, NULL));
	if (!strcmp(t, "address"))
		return *v ? json_string(v) : json_null();
	if (strcmp(t, "prefixes") && strcmp(t, "rule") && strcmp(t, "list"))
		return json_string(v);
	json_t *arr = json_array();
	char list[sizeof(s->value)];

	snprintf(list, sizeof(list), "%s", v);
	for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
		json_array_append_new(arr, !strcmp(t, "rule") ? json_integer(atoi(tok)) : json_string(tok));
	return arr;
}

/* Setting by setting into a JSON object of sections. */
static void setting_add_json(const struct fg_config_setting *s, void *arg)
{
	json_t *root = arg, *sec = json_object_get(root, s->doc->section);

	if (!sec) {
		sec = json_object();
		json_object_set_new(root, s->doc->section, sec);
	}
	json_object_set_new(sec, s->key, setting_json(s));
}

/* Setting by setting as INI text: a [section] heading where the section
 * changes (the table is in section order), then key = value. */
static void setting_print(const struct fg_config_setting *s, void *arg)
{
	const char **section = arg;

	if (!*section || strcmp(*section, s->doc->section) != 0) {
		printf("%s[%s]\n", *section ? "\n" : "", s->doc->section);
		*section = s->doc->section;
	}
	printf("%s =%s%s\n", s->key, s->value[0] ? " " : "", s->value);
}

static int config_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': fanoctl_config_help(stdout); return FANOCTL_OK;
		default: fanoctl_config_help(stderr); return FANOCTL_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fanoctl config check: want exactly one FILE\n");
		return FANOCTL_USAGE;
	}
	struct fg_config cfg;
	struct fg_config_error err;
	int rc = fg_config_load(&cfg, argv[optind], &err);

	/* What a start checks of the files and directories it names
	 * (control/cp_check.h), as `fanogate --check-config` does. */
	if (rc == 0 && cp_check_files(&cfg, CP_CHECK_ALL, err.reason, sizeof(err.reason)) < 0)
		rc = -EINVAL;

	if (rc != 0) {
		if (json) {
			json_t *doc = json_object();
			json_object_set_new(doc, "ok", json_false());
			json_object_set_new(doc, "file", json_string(err.file));
			json_object_set_new(doc, "line", json_integer(err.line));
			json_object_set_new(doc, "reason", json_string(err.reason));
			fanoctl_json_print(doc);
		}
		fprintf(stderr, "%s:%d: %s\n", err.file, err.line, err.reason);
		return FANOCTL_REFUSED;
	}
	if (json) {
		json_t *doc = json_object();
		json_object_set_new(doc, "ok", json_true());
		json_object_set_new(doc, "file", json_string(argv[optind]));
		json_t *conf = json_object();
		fg_config_settings(&cfg, setting_add_json, conf);
		json_object_set_new(doc, "config", conf);
		fanoctl_json_print(doc);
	} else {
		const char *section = NULL;
		printf("; %s: valid. Effective configuration, every key (defaults included);\n"
		       "; largest seed frame: %llu bytes\n\n",
		       argv[optind], (unsigned long long)fg_config_max_frame(&cfg));
		fg_config_settings(&cfg, setting_print, &section);
	}
	return FANOCTL_OK;
}

static int config_keys(int argc, char **argv)
{
	bool json = argc > 1 && strcmp(argv[1], "--json") == 0;

	if (argc > (json ? 2 : 1)) {
		fprintf(stderr, "fanoctl config keys: takes only --json\n");
		return FANOCTL_USAGE;
	}
	json_t *arr = json ? json_array() : NULL;

	for (size_t i = 0; i < fg_config_key_count(); i++) {
		const struct fg_config_key_doc *k = fg_config_key(i);
		if (json) {
			json_t *o = json_object();
			json_object_set_new(o, "section", json_string(k->section));
			json_object_set_new(o, "key", json_string(k->key));
			json_object_set_new(o, "type", json_string(k->type));
			json_object_set_new(o, "default", json_string(k->def));
			json_object_set_new(o, "range", json_string(k->range));
			json_object_set_new(o, "help", json_string(k->help));
			json_array_append_new(arr, o);
		} else {
			printf("[%s] %s (%s) default \"%s\"; %s; %s\n", k->section, k->key, k->type, k->def, k->range, k->help);
		}
	}
	if (json)
		fanoctl_json_print(arr);
	return FANOCTL_OK;
}

int fanoctl_config(int argc, char **argv)
{
	if (argc < 2) {
		fanoctl_config_help(stderr);
		return FANOCTL_USAGE;
	}
	if (strcmp(argv[1], "check") == 0)
		return config_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "keys") == 0)
		return config_keys(argc - 1, argv + 1);
	if (strcmp(argv[1], "reload") == 0)
		return fanoctl_op_reload(argc - 1, argv + 1);
	fprintf(stderr, "fanoctl config: unknown subcommand '%s' (check, keys, reload)\n", argv[1]);
	return FANOCTL_USAGE;
}

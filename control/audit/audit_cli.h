/* audit_cli.h - `fanoctl audit ...` (offline: reads the log files directly).
 * Called by tools/fanoctl's dispatcher from the CLI's main thread. */
#ifndef FG_AUDIT_CLI_H
#define FG_AUDIT_CLI_H

/* argv holds the words AFTER "audit": {"verify", FILE...} or
 * {"tail", [--json], [-n N], [-f], FILE} or {"repair", FILE}. Returns the process exit code:
 * 0 ok, 1 the log is bad (verify names the first bad record's file, offset,
 * seq and reason), 2 usage or I/O error. tail -f returns only on error. */
int fg_audit_cli(int argc, char **argv);

#endif

/* fanoctl_audit.h - `fanoctl audit ...`: the offline audit log reader
 * (tools/fanoctl_audit.c). Called by tools/fanoctl's dispatcher and by
 * tests/audit/test_audit_cli.c from the CLI's only thread. */
#ifndef FANOCTL_AUDIT_H
#define FANOCTL_AUDIT_H

/* argv holds the words AFTER "audit": {"verify", FILE...} or
 * {"tail", [--json], [-n N], [-f], FILE} or {"repair", FILE}. Returns the
 * process exit code: 0 ok, 1 the log is bad (verify names the first bad
 * record's file, offset, seq and reason), 2 usage or I/O error. tail -f
 * returns only on error. repair is the writer's job: it runs
 * `fanogate --audit-repair FILE` ($FANOGATE, else the fanogate beside this
 * fanoctl, else the one on PATH) and returns its exit code. */
int fanoctl_audit_cli(int argc, char **argv);

#endif

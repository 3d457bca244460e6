/* cp_log.h - the daemon's log: one line per event on stderr, at a syslog
 * priority, with OpenSSL's error queue drained into that one line.
 *
 * Two forms, chosen once from the environment:
 *   - stderr is the journal (JOURNAL_STREAM holds stderr's device:inode, as
 *     systemd sets it for StandardError=journal): "<P>message", the
 *     sd-daemon(3) priority prefix, which journald strips and stores as the
 *     line's PRIORITY (journalctl -p warning, and syslog forwarding, see it);
 *     journald adds the time and pid itself.
 *   - anything else (a terminal, a file, a test's pipe):
 *     "2026-01-01T12:00:00.123Z fanogate[pid] LEVEL: message".
 * The prefix rather than libsystemd's sd_journal_send: no new library, and
 * the same single write(2) to the stream systemd already opened, so the
 * seccomp allow-list needs no socket call for logging.
 *
 * What goes at which level: failures the operator must act on (audit log
 * damage or failure, a refused start) at error; divergences, demotions,
 * conflicts, alerts and anything that lowers trust or drops work at warning;
 * state changes by the operator or the daemon at notice or info.
 *
 * Who may call: any control-plane thread, and the DPDK log bridge (any
 * lcore, before and after start); each line is one write(2), so lines from
 * different threads never interleave. Never called from the core or the
 * dataplane hot path. */
#ifndef CP_LOG_H
#define CP_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cp_log_level { CP_LOG_DEBUG = 0, CP_LOG_INFO, CP_LOG_NOTICE, CP_LOG_WARN, CP_LOG_ERR, CP_LOG_CRIT };

/* Lines below this level are dropped (default INFO; FANOGATE_DEBUG=1 in the
 * environment lowers it to DEBUG). */
void cp_log_set_level(enum cp_log_level lv);
bool cp_log_enabled(enum cp_log_level lv);

/* Decide the form from JOURNAL_STREAM and stderr (also done by the first
 * line logged). Call again after stderr changes. */
void cp_log_init(void);
/* True when lines carry the "<P>" journal prefix. */
bool cp_log_is_journal(void);

/* The syslog priority (0 emerg .. 7 debug) of a level, and the level of a
 * syslog priority (emerg, alert and crit are CRIT). Pure. */
int cp_log_syslog_prio(enum cp_log_level lv);
enum cp_log_level cp_log_level_of_prio(int prio);

/* Log one line at lv. */
void cp_log(enum cp_log_level lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Same, then append every queued OpenSSL error (ERR_get_error_all) as
 * " | lib:reason:file:line:data" and clear the queue, so one failure is one
 * line. */
void cp_log_ssl(enum cp_log_level lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drain and discard the OpenSSL error queue (after an expected failure that
 * was already answered, e.g. a peer's bad handshake logged at DEBUG). */
void cp_ssl_errors_clear(void);

/* The level of a line state change: WARN when trust falls (a line leaves
 * active, or becomes degraded), else NOTICE. Pure. */
enum cp_log_level cp_log_change_level(unsigned from, unsigned to);

/* Who did it, for a log line: "the daemon (audit)" for FG_UID_AUDIT (the
 * shadow audit, the cluster hold, the daemon's own decisions), else
 * "uid N". Writes into buf and returns it. */
const char *cp_log_actor(uint32_t uid, char *buf, size_t cap);

#define cp_debug(...) do { if (cp_log_enabled(CP_LOG_DEBUG)) cp_log(CP_LOG_DEBUG, __VA_ARGS__); } while (0)
#define cp_info(...) cp_log(CP_LOG_INFO, __VA_ARGS__)
#define cp_notice(...) cp_log(CP_LOG_NOTICE, __VA_ARGS__)
#define cp_warn(...) cp_log(CP_LOG_WARN, __VA_ARGS__)
#define cp_err(...) cp_log(CP_LOG_ERR, __VA_ARGS__)

#endif

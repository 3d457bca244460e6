/* cp_log.h - the control plane's log: one line per event on stderr, with a
 * UTC timestamp and a level, and OpenSSL's error queue drained into that one
 * line.
 *
 * Who may call: any control-plane thread (the loop thread in practice);
 * each line is written with one write(2) so lines from different threads never
 * interleave. Never called from the core or the dataplane hot path. */
#ifndef CP_LOG_H
#define CP_LOG_H

#include <stdbool.h>

enum cp_log_level { CP_LOG_DEBUG = 0, CP_LOG_INFO, CP_LOG_WARN, CP_LOG_ERR };

/* Lines below this level are dropped (default INFO; FANOGATE_DEBUG=1 in the
 * environment lowers it to DEBUG). */
void cp_log_set_level(enum cp_log_level lv);
bool cp_log_enabled(enum cp_log_level lv);

/* Write "2026-01-01T12:00:00.123Z fanogate[pid] LEVEL msg\n". */
void cp_log(enum cp_log_level lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Same, then append every queued OpenSSL error (ERR_get_error_all) as
 * " | lib:reason:file:line:data" and clear the queue, so one failure is one
 * line. */
void cp_log_ssl(enum cp_log_level lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drain and discard the OpenSSL error queue (after an expected failure that
 * was already answered, e.g. a peer's bad handshake logged at DEBUG). */
void cp_ssl_errors_clear(void);

#define cp_debug(...) do { if (cp_log_enabled(CP_LOG_DEBUG)) cp_log(CP_LOG_DEBUG, __VA_ARGS__); } while (0)
#define cp_info(...) cp_log(CP_LOG_INFO, __VA_ARGS__)
#define cp_warn(...) cp_log(CP_LOG_WARN, __VA_ARGS__)
#define cp_err(...) cp_log(CP_LOG_ERR, __VA_ARGS__)

#endif

/* cp_log.c - timestamped one-line-per-event logging to stderr, with the
 * OpenSSL error queue drained into the same line (see cp_log.h).
 * Any thread; one write(2) per line. */
#include "cp_log.h"

#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum cp_log_level g_level = CP_LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void cp_log_set_level(enum cp_log_level lv) { g_level = lv; }
bool cp_log_enabled(enum cp_log_level lv) { return lv >= g_level; }

static size_t log_prefix(char *buf, size_t cap, enum cp_log_level lv)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ fanogate[%d] %s: ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			 ts.tv_nsec / 1000000, (int)getpid(), level_names[lv]);
	return n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
}

static void log_emit(char *buf, size_t len, size_t cap)
{
	if (len >= cap - 1)
		len = cap - 2;
	/* one event, one line: fold any newline the message carried */
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\n' || buf[i] == '\r')
			buf[i] = ' ';
	buf[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, buf, len);
	(void)w;
}

static size_t log_format(char *buf, size_t cap, enum cp_log_level lv, const char *fmt, va_list ap)
{
	size_t len = log_prefix(buf, cap, lv);
	int n = vsnprintf(buf + len, cap - len, fmt, ap);
	if (n > 0)
		len += (size_t)n < cap - len ? (size_t)n : cap - len - 1;
	return len;
}

void cp_log(enum cp_log_level lv, const char *fmt, ...)
{
	if (!cp_log_enabled(lv))
		return;
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	size_t len = log_format(buf, sizeof(buf), lv, fmt, ap);
	va_end(ap);
	log_emit(buf, len, sizeof(buf));
}

void cp_log_ssl(enum cp_log_level lv, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	size_t len = log_format(buf, sizeof(buf), lv, fmt, ap);
	va_end(ap);
	const char *file, *data, *func;
	int line, flags;
	unsigned long e;
	while ((e = ERR_get_error_all(&file, &line, &func, &data, &flags)) != 0) {
		char ebuf[256];
		ERR_error_string_n(e, ebuf, sizeof(ebuf));
		if (len < sizeof(buf) - 1) {
			int n = snprintf(buf + len, sizeof(buf) - len, " | %s (%s:%d%s%s)", ebuf, file, line,
					 (flags & ERR_TXT_STRING) && data && *data ? " " : "",
					 (flags & ERR_TXT_STRING) && data ? data : "");
			if (n > 0)
				len += (size_t)n < sizeof(buf) - len ? (size_t)n : sizeof(buf) - len - 1;
		}
	}
	if (!cp_log_enabled(lv))
		return; /* the queue is drained either way */
	log_emit(buf, len, sizeof(buf));
}

void cp_ssl_errors_clear(void) { ERR_clear_error(); }

/* cp_log.c - one line per event to stderr at a syslog priority: the
 * journal's "<P>" prefix when stderr is the journal, else a timestamped line;
 * the OpenSSL error queue drained into the same line (see cp_log.h).
 * Any thread; one write(2) per line. */
#include "cp_log.h"

#include <openssl/err.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fg/line.h"

static enum cp_log_level g_level = CP_LOG_INFO;
/* 0: not decided yet, 1: timestamped lines, 2: journal prefix */
static atomic_int g_form;
static const char *const level_names[] = {"debug", "info", "notice", "warn", "error", "crit"};
static const int level_prio[] = {7, 6, 5, 4, 3, 2};

void cp_log_set_level(enum cp_log_level lv) { g_level = lv; }
bool cp_log_enabled(enum cp_log_level lv) { return lv >= g_level; }

int cp_log_syslog_prio(enum cp_log_level lv)
{
	return (unsigned)lv <= CP_LOG_CRIT ? level_prio[lv] : 3;
}

enum cp_log_level cp_log_level_of_prio(int prio)
{
	if (prio <= 2)
		return CP_LOG_CRIT;
	switch (prio) {
	case 3: return CP_LOG_ERR;
	case 4: return CP_LOG_WARN;
	case 5: return CP_LOG_NOTICE;
	case 6: return CP_LOG_INFO;
	default: return CP_LOG_DEBUG;
	}
}

void cp_log_init(void)
{
	/* JOURNAL_STREAM=<dev>:<ino> of the stream systemd connected; only
	 * when stderr is that stream (not redirected since) is it the journal */
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int form = 1;
	if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	    (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
		form = 2;
	atomic_store(&g_form, form);
}

bool cp_log_is_journal(void)
{
	if (!atomic_load(&g_form))
		cp_log_init();
	return atomic_load(&g_form) == 2;
}

static size_t log_prefix(char *buf, size_t cap, enum cp_log_level lv)
{
	int n;
	if ((unsigned)lv > CP_LOG_CRIT)
		lv = CP_LOG_ERR;
	if (cp_log_is_journal()) {
		n = snprintf(buf, cap, "<%d>", level_prio[lv]);
	} else {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ fanogate[%d] %s: ", tm.tm_year + 1900,
			     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
			     (int)getpid(), level_names[lv]);
	}
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

enum cp_log_level cp_log_change_level(unsigned from, unsigned to)
{
	if ((from == FG_LINE_ACTIVE && to != FG_LINE_ACTIVE) || (to == FG_LINE_DEGRADED && from != FG_LINE_DEGRADED))
		return CP_LOG_WARN;
	return CP_LOG_NOTICE;
}

const char *cp_log_actor(uint32_t uid, char *buf, size_t cap)
{
	if (uid == FG_UID_AUDIT)
		snprintf(buf, cap, "the daemon (audit)");
	else
		snprintf(buf, cap, "uid %u", (unsigned)uid);
	return buf;
}

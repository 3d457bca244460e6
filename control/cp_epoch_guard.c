/* cp_epoch_guard.c - canonical-report sources and model epoch advances:
 * who is believed, how often (see cp_epoch_guard.h). Loop thread only. */
#include "cp_epoch_guard.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "cp_points.h"
#include "fg/fano.h"

void cp_epoch_guard_init(struct cp_epoch_guard *g, const struct fg_config *cfg)
{
	*g = (struct cp_epoch_guard){0};
	uint32_t ms = cfg && cfg->epoch_min_interval_ms ? cfg->epoch_min_interval_ms : 1000u;
	g->min_ns = (uint64_t)ms * 1000000ull;
}

static int af_of(const struct fg_bm_src *s)
{
	return s->family == 6 ? AF_INET6 : AF_INET;
}

static bool in_any(const struct fg_prefix *p, unsigned n, const struct fg_bm_src *s)
{
	for (unsigned i = 0; i < n; i++)
		if (fg_prefix_match(&p[i], af_of(s), s->addr))
			return true;
	return false;
}

bool cp_epoch_guard_canon_source_ok(const struct fg_config *cfg, const struct fg_bm_src *src)
{
	if (src->family == 0)
		return true;
	return in_any(cfg->canon_src, cfg->n_canon_src, src);
}

uint8_t cp_epoch_guard_role_lines(const char *role)
{
	unsigned p = cp_point_of_role(role);
	return p ? fg_fano_lines_through(p) : (uint8_t)FG_FANO_FULL_MASK;
}

bool cp_epoch_guard_is_mapped(const struct fg_config *cfg, const struct fg_bm_src *src, unsigned line)
{
	if (src->family == 0)
		return line < FG_LINES && (src->lines >> line & 1u);
	const uint8_t *pts = fg_fano_line(line);
	if (!pts)
		return false;
	for (unsigned k = 0; k < 3; k++) {
		unsigned p = pts[k];
		if (p >= 1 && p <= FG_POINTS && in_any(cfg->point_prefix[p - 1], cfg->n_point_prefix[p - 1], src))
			return true;
	}
	return false;
}

enum cp_epoch_verdict cp_epoch_guard_judge(struct cp_epoch_guard *g, bool mapped, uint64_t now_ns,
					   bool *storm_began)
{
	*storm_began = false;
	if (!mapped) {
		g->held_unmapped++;
		return CP_EPOCH_HELD_UNMAPPED;
	}
	/* A storm that has been quiet long enough is over: the next held
	 * conflict starts (and alerts) a new one. */
	if (g->storm && now_ns - g->storm_last_ns >= CP_EPOCH_STORM_QUIET * g->min_ns)
		g->storm = false;
	if (!g->any || now_ns - g->last_ns >= g->min_ns) {
		if (!g->storm) {
			g->any = true;
			g->last_ns = now_ns;
			g->advanced++;
			return CP_EPOCH_ADVANCE;
		}
	}
	/* Inside the interval, or a storm still going: hold. A storm holds
	 * even past the interval, so a steady 1-per-interval flood after a
	 * burst does not flush once per interval for ever. */
	g->held_rate++;
	g->storm_last_ns = now_ns;
	if (!g->storm) {
		g->storm = true;
		g->storms++;
		*storm_began = true;
	}
	return CP_EPOCH_HELD_RATE;
}

void cp_epoch_src_name(const struct fg_bm_src *src, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	if (src->family == 0) {
		snprintf(buf, len, "tls");
		return;
	}
	if (!inet_ntop(af_of(src), src->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	if (src->family == 6)
		snprintf(buf, len, "udp [%s]:%u", a, (unsigned)src->port);
	else
		snprintf(buf, len, "udp %s:%u", a, (unsigned)src->port);
}

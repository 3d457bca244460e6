/* cp_points.c - Fano point liveness from TLS peers' roles and mapped UDP
 * sources (see cp_points.h). Decides only: no I/O, no logging. Loop thread
 * only. */
#include "cp_points.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *role;
	unsigned point;
} role_points[] = {
	{"embed", 1},        {"attn", 2},           {"gate-up", 3},      {"gate_up", 3},
	{"gateup", 3},       {"down", 4},           {"lm_head", 5},      {"lm-head", 5},
	{"layer-warden", 6}, {"layer_warden", 6},   {"cobordism-warden", 7}, {"cobordism_warden", 7},
};

unsigned cp_point_of_role(const char *role)
{
	if (!role)
		return 0;
	if ((role[0] == 'e' || role[0] == 'E') && role[1] >= '1' && role[1] <= '7' && !role[2])
		return (unsigned)(role[1] - '0');
	for (size_t i = 0; i < sizeof(role_points) / sizeof(role_points[0]); i++)
		if (!strcasecmp(role, role_points[i].role))
			return role_points[i].point;
	return 0;
}

void cp_points_init(struct cp_points *pt, const struct fg_config *cfg, bool udp)
{
	memset(pt, 0, sizeof(*pt));
	for (unsigned p = 1; p <= FG_POINTS; p++)
		if (udp && cfg->n_point_prefix[p - 1])
			pt->mapped |= (uint8_t)(1u << (p - 1));
	pt->udp_live = pt->mapped; /* mapped points start live (dp_init seeds last-seen) */
	pt->timeout_ns = (uint64_t)cfg->peer_timeout_ms * 1000000ull;
	if (!pt->timeout_ns)
		pt->timeout_ns = 3000ull * 1000000ull;
}

static bool udp_is_live(const struct cp_points *pt, unsigned p)
{
	return (pt->udp_live >> (p - 1)) & 1u;
}

uint8_t cp_points_udp_live(const struct cp_points *pt)
{
	return pt->udp_live;
}

uint8_t cp_points_udp_mapped(const struct cp_points *pt)
{
	return pt->mapped;
}

uint8_t cp_points_live(const struct cp_points *pt)
{
	uint8_t m = pt->udp_live;
	for (unsigned p = 1; p <= FG_POINTS; p++)
		if (pt->tls[p])
			m |= (uint8_t)(1u << (p - 1));
	return m;
}

bool cp_points_tls_attach(struct cp_points *pt, unsigned p)
{
	return p >= 1 && p <= FG_POINTS && pt->tls[p]++ == 0;
}

bool cp_points_tls_detach(struct cp_points *pt, unsigned p)
{
	if (p < 1 || p > FG_POINTS || !pt->tls[p] || --pt->tls[p] != 0)
		return false;
	/* a mapped point whose UDP sources are live stays up */
	return !udp_is_live(pt, p);
}

unsigned cp_points_udp_tick(struct cp_points *pt, const _Atomic uint64_t seen_ns[FG_POINTS + 1], uint64_t now,
			    uint8_t points_down, struct cp_point_change out[FG_POINTS])
{
	if (!pt->mapped || !seen_ns || now < pt->next_ns)
		return 0;
	pt->next_ns = now + 50ull * 1000000ull;
	unsigned n = 0;
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		uint8_t bit = (uint8_t)(1u << (p - 1));
		if (!(pt->mapped & bit))
			continue;
		uint64_t seen = atomic_load_explicit(&seen_ns[p], memory_order_relaxed);
		/* seen may be a hair ahead of now (another core's clock read): live */
		bool live = seen >= now || now - seen <= pt->timeout_ns;
		if (live == udp_is_live(pt, p))
			continue;
		if (live) {
			pt->udp_live |= bit;
			if (points_down & bit) {
				out[n].point = (uint8_t)p;
				out[n].down = false;
				snprintf(out[n].who, sizeof(out[n].who), "udp: a [points] e%u source sent again", p);
				n++;
			}
		} else {
			pt->udp_live &= (uint8_t)~bit;
			if (!pt->tls[p] && !(points_down & bit)) {
				out[n].point = (uint8_t)p;
				out[n].down = true;
				snprintf(out[n].who, sizeof(out[n].who), "udp: no datagram from [points] e%u for %llu ms",
					 p, (unsigned long long)((now - seen) / 1000000ull));
				n++;
			}
		}
	}
	return n;
}

/* cp_points.c - Fano point liveness from TLS peers' roles and mapped UDP
 * sources (see cp_points.h). Loop thread only. */
#include "cp_points.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cp_engine.h"
#include "cp_log.h"
#include "cp_server.h"
#include "fg/fano.h"

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

/* Mark Fano point p (1..7) down or up in the engine's line table: the lines
 * through it degrade or come back; each change is logged, emitted to the
 * audit as a line change (origin "peers") and the facts republished.
 * who: the peer that caused it ("udp: ..." for UDP sources). */
static void point_set(struct cp_engine *e, unsigned p, bool down, const char *who)
{
	struct fg_line_change chg[3];
	int n = fg_lines_point(&e->lines, p, down, cp_now_ns(), chg);
	bool udp = who && !strncmp(who, "udp:", 4);
	const char *src = udp ? "UDP sources" : "TLS peers";
	cp_info("point e%u %s: %s (%s)", p, down ? "down" : "up",
		down ? (udp ? "no live TLS peer or UDP source" : "its last TLS peer disconnected")
		     : (udp ? "a UDP source sent again" : "a TLS peer is back"),
		who ? who : "-");
	for (int i = 0; i < n; i++) {
		snprintf(chg[i].why, sizeof(chg[i].why), "point e%u %s (%s)", p, down ? "down" : "up", src);
		cp_info("line %u %s: %s -> %s (point e%u %s)", chg[i].line, fg_fano_line_name(chg[i].line),
			fg_line_state_name(chg[i].from), fg_line_state_name(chg[i].to), p, down ? "down" : "up");
		cp_engine_line_changed(e, &chg[i], "peers");
	}
	if (n > 0)
		cp_engine_publish(e);
}

/* UDP side. One daemon has one engine; the state follows the engine it was
 * built for (tests may make several in turn). */
static struct {
	const struct cp_engine *e;
	const uint32_t *tls;   /* the server's point_peers, once a TLS peer attached */
	uint8_t mapped;        /* bit p-1: point p has [points] prefixes (snapshot) */
	uint8_t udp_live;      /* bit p-1: heard within peer_timeout_ms at the last tick */
	uint64_t timeout_ns;
	uint64_t next_ns;
} U;

static void udp_state_for(const struct cp_engine *e)
{
	if (U.e == e)
		return;
	memset(&U, 0, sizeof(U));
	U.e = e;
	/* without the dataplane no UDP arrives: mapped points are judged by TLS only */
	for (unsigned p = 1; p <= FG_POINTS; p++)
		if (e->cfg && e->lanes_mode && e->b && e->cfg->n_point_prefix[p - 1])
			U.mapped |= (uint8_t)(1u << (p - 1));
	U.udp_live = U.mapped; /* mapped points start live (dp_init seeds last-seen) */
	U.timeout_ns = e->cfg ? (uint64_t)e->cfg->peer_timeout_ms * 1000000ull : 0;
	if (!U.timeout_ns)
		U.timeout_ns = 3000ull * 1000000ull;
}

static bool udp_is_live(unsigned p)
{
	return (U.udp_live >> (p - 1)) & 1u;
}

static uint32_t tls_count(unsigned p)
{
	return U.tls ? U.tls[p] : 0;
}

uint8_t cp_points_udp_live(void)
{
	return U.udp_live;
}

uint8_t cp_points_live(void)
{
	uint8_t m = U.udp_live;
	for (unsigned p = 1; p <= FG_POINTS; p++)
		if (tls_count(p))
			m |= (uint8_t)(1u << (p - 1));
	return m;
}

void cp_points_set(struct cp_engine *e, unsigned p, bool down, const char *who)
{
	if (p >= 1 && p <= FG_POINTS && !(e->lines.points_down & (1u << (p - 1))) == down)
		point_set(e, p, down, who);
}

uint8_t cp_points_udp_mapped(void)
{
	return U.mapped;
}

unsigned cp_points_udp_tick(struct cp_engine *e, uint64_t now)
{
	udp_state_for(e);
	if (!U.mapped || !e->b || now < U.next_ns)
		return 0;
	U.next_ns = now + 50ull * 1000000ull;
	unsigned changed = 0;
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		uint8_t bit = (uint8_t)(1u << (p - 1));
		if (!(U.mapped & bit))
			continue;
		uint64_t seen = atomic_load_explicit(&e->b->point_seen_ns[p], memory_order_relaxed);
		/* seen may be a hair ahead of now (another core's clock read): live */
		bool live = seen >= now || now - seen <= U.timeout_ns;
		if (live == udp_is_live(p))
			continue;
		char who[96];
		if (live) {
			U.udp_live |= bit;
			snprintf(who, sizeof(who), "udp: a [points] e%u source sent again", p);
			if (e->lines.points_down & bit) {
				point_set(e, p, false, who);
				changed++;
			}
		} else {
			U.udp_live &= (uint8_t)~bit;
			snprintf(who, sizeof(who), "udp: no datagram from [points] e%u for %llu ms", p,
				 (unsigned long long)((now - seen) / 1000000ull));
			if (!tls_count(p) && !(e->lines.points_down & bit)) {
				point_set(e, p, true, who);
				changed++;
			}
		}
	}
	return changed;
}

void cp_points_attach(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	if (c->point)
		return;
	unsigned p = cp_point_of_role(c->role);
	if (!p || !s->engine)
		return;
	c->point = (uint8_t)p;
	udp_state_for(s->engine);
	U.tls = s->point_peers;
	if (s->point_peers[p]++ == 0 && (s->engine->lines.points_down & (1u << (p - 1))))
		point_set(s->engine, p, false, c->peer);
}

void cp_points_detach(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	unsigned p = c->point;
	if (!p)
		return;
	c->point = 0;
	if (s->point_peers[p] && --s->point_peers[p] == 0 && !s->stopping && s->engine) {
		udp_state_for(s->engine);
		/* a mapped point whose UDP sources are live stays up */
		if (!udp_is_live(p))
			point_set(s->engine, p, true, c->peer);
	}
}

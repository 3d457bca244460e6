/* cp_points.c - Fano point liveness from TLS peers' roles (see cp_points.h).
 * Loop thread only. */
#include "cp_points.h"

#include <string.h>
#include <strings.h>

#include "cp_engine.h"
#include "cp_hooks.h"
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

void cp_points_attach(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	if (c->point)
		return;
	unsigned p = cp_point_of_role(c->role);
	if (!p || !s->engine)
		return;
	c->point = (uint8_t)p;
	if (s->point_peers[p]++ == 0 && (s->engine->lines.points_down & (1u << (p - 1))))
		cp_hooks_point(s->engine, p, false, c->peer);
}

void cp_points_detach(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	unsigned p = c->point;
	if (!p)
		return;
	c->point = 0;
	if (s->point_peers[p] && --s->point_peers[p] == 0 && !s->stopping && s->engine)
		cp_hooks_point(s->engine, p, true, c->peer);
}

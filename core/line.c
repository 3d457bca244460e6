/* line.c - the line state machine of include/fg/line.h (diagram and
 * transition table there; docs/lines.md for operators).
 *
 * Who may call: the single writer that owns the table (the control plane's
 * event loop); readers elsewhere use a published copy. No I/O, no logging:
 * every transition is returned as a fg_line_change for the caller to audit. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fg/line.h"
#include "fg/text.h"

static const char *const state_name[] = {
	[FG_LINE_DISABLED] = "disabled",
	[FG_LINE_SHADOW] = "shadow",
	[FG_LINE_ACTIVE] = "active",
	[FG_LINE_DEGRADED] = "degraded",
};

static const char *const event_name[] = {
	[FG_LEV_OP_ENABLE] = "op_enable",
	[FG_LEV_OP_DISABLE] = "op_disable",
	[FG_LEV_OP_SHADOW] = "op_shadow",
	[FG_LEV_OP_ACTIVE] = "op_active",
	[FG_LEV_CLEAN] = "clean",
	[FG_LEV_DIVERGENCE] = "divergence",
	[FG_LEV_CONFLICT] = "conflict",
	[FG_LEV_POINT_DOWN] = "point_down",
	[FG_LEV_POINT_UP] = "point_up",
	[FG_LEV_OP_AUTO_PROMOTE] = "op_auto_promote",
};
_Static_assert(FG_ARRAY_LEN(event_name) == FG_LEV__COUNT, "a name for every line event");

const char *fg_line_state_name(enum fg_line_state s)
{
	return (unsigned)s < FG_ARRAY_LEN(state_name) ? state_name[s] : "unknown";
}

const char *fg_line_event_name(enum fg_line_event ev)
{
	return (unsigned)ev < FG_ARRAY_LEN(event_name) ? event_name[ev] : "unknown";
}

int fg_line_state_parse(const char *s)
{
	if (!s)
		return -1;
	/* Only base states are configurable; "degraded" is an observation. */
	for (int i = FG_LINE_DISABLED; i <= FG_LINE_ACTIVE; i++)
		if (strcmp(s, state_name[i]) == 0)
			return i;
	return -1;
}

void fg_lines_init(struct fg_lines *ls, const enum fg_line_state initial[FG_LINES],
		   const struct fg_line_policy *pol, uint64_t now_ns)
{
	memset(ls, 0, sizeof(*ls));
	ls->policy = *pol;
	for (unsigned i = 0; i < FG_LINES; i++) {
		enum fg_line_state st = initial ? initial[i] : FG_LINE_SHADOW;

		if (st != FG_LINE_DISABLED && st != FG_LINE_ACTIVE)
			st = FG_LINE_SHADOW;
		ls->line[i].base = st;
		ls->line[i].auto_promote = pol->auto_promote;
		ls->line[i].window_start_ns = now_ns;
	}
}

static bool line_degraded(const struct fg_lines *ls, unsigned line)
{
	const uint8_t *t = fg_fano_line(line);

	for (unsigned k = 0; k < 3; k++)
		if (ls->points_down & (1u << (t[k] - 1)))
			return true;
	return false;
}

enum fg_line_state fg_line_effective(const struct fg_lines *ls, unsigned line)
{
	if (line >= FG_LINES)
		return FG_LINE_DISABLED;
	enum fg_line_state b = ls->line[line].base;

	if (b != FG_LINE_DISABLED && line_degraded(ls, line))
		return FG_LINE_DEGRADED;
	return b;
}

bool fg_line_is_usable(const struct fg_lines *ls, unsigned line)
{
	return fg_line_effective(ls, line) == FG_LINE_ACTIVE;
}

bool fg_line_is_shadow(const struct fg_lines *ls, unsigned line)
{
	enum fg_line_state e = fg_line_effective(ls, line);

	return e == FG_LINE_SHADOW || e == FG_LINE_DEGRADED;
}

void fg_line_set_auto_promote(struct fg_lines *ls, unsigned line, bool on)
{
	if (line < FG_LINES)
		ls->line[line].auto_promote = on;
}

int fg_line_auto_promote(struct fg_lines *ls, unsigned line, bool on, uint32_t uid, int32_t pid, const char *why,
			 struct fg_line_change *chg)
{
	if (line >= FG_LINES)
		return -EINVAL;
	struct fg_line *l = &ls->line[line];
	if (l->auto_promote == on)
		return 0;
	l->auto_promote = on;
	if (chg) {
		memset(chg, 0, sizeof(*chg));
		chg->line = line;
		chg->from = chg->to = fg_line_effective(ls, line);
		chg->base_from = chg->base_to = l->base;
		chg->event = FG_LEV_OP_AUTO_PROMOTE;
		chg->uid = uid;
		chg->pid = pid;
		chg->auto_promote = on;
		if (why && why[0])
			(void)fg_text_copy(chg->why, sizeof(chg->why), why);
		else
			snprintf(chg->why, sizeof(chg->why), "auto-promote %s", on ? "on" : "off");
	}
	return 1;
}

static void window_reset(struct fg_line *l, uint64_t now_ns)
{
	l->clean = 0;
	l->window_start_ns = now_ns;
	fg_lead_window_reset(&l->lead);
	l->held = false;
}

static bool window_ready(const struct fg_lines *ls, const struct fg_line *l, uint64_t now_ns)
{
	uint64_t elapsed = now_ns >= l->window_start_ns ? now_ns - l->window_start_ns : 0;

	return l->auto_promote && l->clean >= ls->policy.promote_count && elapsed >= ls->policy.promote_ns;
}

/* Whether the window's leads pass the policy (line.h, "the window is
 * ahead"); when not, why into out. A window with no lead on record is
 * not ahead: nothing shows the jump was ever first. */
static bool window_ahead(const struct fg_lines *ls, const struct fg_line *l, char *out, size_t cap)
{
	const struct fg_line_policy *p = &ls->policy;
	if (p->min_ahead > 0 && (l->lead.n == 0 || fg_lead_window_share_ahead(&l->lead) < p->min_ahead)) {
		snprintf(out, cap, "clean, not ahead: %.0f%% of %u seeds ahead, needs %.0f%%",
			 100.0 * fg_lead_window_share_ahead(&l->lead), l->lead.n, 100.0 * p->min_ahead);
		return false;
	}
	if (p->min_lead_us > 0) {
		int64_t med = fg_lead_window_pct(&l->lead, 50);
		if (med == FG_LEAD_NONE || med < (int64_t)p->min_lead_us * 1000) {
			if (med == FG_LEAD_NONE)
				snprintf(out, cap, "clean, lead too small: no lead measured, needs %u us", p->min_lead_us);
			else
				snprintf(out, cap, "clean, lead too small: median %lld us, needs %u us",
					 (long long)(med / 1000), p->min_lead_us);
			return false;
		}
	}
	return true;
}

void fg_line_note_lead(struct fg_lines *ls, unsigned line, int64_t lead_ns)
{
	if (line < FG_LINES)
		fg_lead_window_add(&ls->line[line].lead, lead_ns);
}

void fg_line_promotion(const struct fg_lines *ls, unsigned line, uint64_t now_ns, char *out, size_t len)
{
	if (!len)
		return;
	out[0] = '\0';
	if (line >= FG_LINES || ls->line[line].base != FG_LINE_SHADOW)
		return;
	const struct fg_line *l = &ls->line[line];
	uint64_t elapsed = now_ns >= l->window_start_ns ? now_ns - l->window_start_ns : 0;
	if (!l->auto_promote)
		snprintf(out, len, "auto-promote off");
	else if (line_degraded(ls, line))
		snprintf(out, len, "degraded");
	else if (l->clean < ls->policy.promote_count)
		snprintf(out, len, "window: %u of %u clean verdicts", l->clean, ls->policy.promote_count);
	else if (elapsed < ls->policy.promote_ns)
		snprintf(out, len, "window: %llu of %llu ms", (unsigned long long)(elapsed / 1000000u),
			 (unsigned long long)(ls->policy.promote_ns / 1000000u));
	else if (window_ahead(ls, l, out, len))
		snprintf(out, len, "promotes at the next clean verdict");
}

static void default_why(char *out, size_t cap, enum fg_line_event ev, const struct fg_line *l,
			uint64_t now_ns)
{
	switch (ev) {
	case FG_LEV_OP_ENABLE:
		snprintf(out, cap, "operator enable");
		break;
	case FG_LEV_OP_DISABLE:
		snprintf(out, cap, "operator disable");
		break;
	case FG_LEV_OP_SHADOW:
		snprintf(out, cap, "operator shadow");
		break;
	case FG_LEV_OP_ACTIVE:
		snprintf(out, cap, "operator force active");
		break;
	case FG_LEV_CLEAN: {
		uint64_t elapsed = now_ns >= l->window_start_ns ? now_ns - l->window_start_ns : 0;

		int k = snprintf(out, cap, "promoted: %u clean verdicts in %llu ms", l->clean,
				 (unsigned long long)(elapsed / 1000000u));
		if (l->lead.n && k > 0 && (size_t)k < cap)
			snprintf(out + k, cap - (size_t)k, ", %.0f%% of %u seeds ahead, median lead %lld us",
				 100.0 * fg_lead_window_share_ahead(&l->lead), l->lead.n,
				 (long long)(fg_lead_window_pct(&l->lead, 50) / 1000));
		break;
	}
	case FG_LEV_DIVERGENCE:
		snprintf(out, cap, "demoted: fingerprint divergence");
		break;
	case FG_LEV_CONFLICT:
		snprintf(out, cap, "demoted: conflicting duplicate");
		break;
	default:
		snprintf(out, cap, "%s", fg_line_event_name(ev));
		break;
	}
}

int fg_line_apply(struct fg_lines *ls, unsigned line, enum fg_line_event ev, uint64_t now_ns, uint32_t uid,
		  int32_t pid, const char *why, struct fg_line_change *chg)
{
	if (line >= FG_LINES)
		return -EINVAL;
	struct fg_line *l = &ls->line[line];
	enum fg_line_state base_from = l->base, eff_from = fg_line_effective(ls, line);
	enum fg_line_state to = base_from;
	char why_default[128];

	/* why_default must describe the window before it is reset. */
	why_default[0] = '\0';
	switch (ev) {
	case FG_LEV_OP_ENABLE:
		if (base_from != FG_LINE_DISABLED)
			return -EALREADY;
		to = FG_LINE_SHADOW;
		window_reset(l, now_ns);
		break;
	case FG_LEV_OP_DISABLE:
		to = FG_LINE_DISABLED;
		break;
	case FG_LEV_OP_SHADOW:
		to = FG_LINE_SHADOW;
		if (base_from != FG_LINE_SHADOW)
			window_reset(l, now_ns);
		break;
	case FG_LEV_OP_ACTIVE:
		to = FG_LINE_ACTIVE;
		break;
	case FG_LEV_CLEAN:
		l->verdicts++;
		if (base_from != FG_LINE_SHADOW)
			break;
		l->clean++;
		/* A window measured while a point is down says nothing about the
		 * line with all its peers: no promotion while degraded. */
		if (window_ready(ls, l, now_ns) && !line_degraded(ls, line)) {
			/* Correct but never first: trusting it gains nothing. Said
			 * once per window; the window keeps counting. */
			char held[128];
			if (!window_ahead(ls, l, held, sizeof(held))) {
				if (l->held)
					break;
				l->held = true;
				l->holds++;
				if (chg) {
					memset(chg, 0, sizeof(*chg));
					chg->line = line;
					chg->from = chg->to = eff_from;
					chg->base_from = chg->base_to = base_from;
					chg->event = ev;
					chg->uid = uid;
					chg->pid = pid;
					chg->auto_promote = l->auto_promote;
					(void)fg_text_copy(chg->why, sizeof(chg->why), held);
				}
				return FG_LINE_HELD;
			}
			default_why(why_default, sizeof(why_default), ev, l, now_ns);
			to = FG_LINE_ACTIVE;
		}
		break;
	case FG_LEV_DIVERGENCE:
	case FG_LEV_CONFLICT:
		if (ev == FG_LEV_DIVERGENCE) {
			l->verdicts++;
			l->divergences++;
		} else {
			l->conflicts++;
		}
		if (base_from == FG_LINE_DISABLED)
			break;
		to = FG_LINE_SHADOW;
		window_reset(l, now_ns);
		break;
	default:
		return -EINVAL;
	}
	l->base = to;
	enum fg_line_state eff_to = fg_line_effective(ls, line);

	if (to == base_from && eff_to == eff_from)
		return 0;
	if (chg) {
		memset(chg, 0, sizeof(*chg));
		chg->line = line;
		chg->from = eff_from;
		chg->to = eff_to;
		chg->base_from = base_from;
		chg->base_to = to;
		chg->event = ev;
		chg->uid = uid;
		chg->pid = pid;
		chg->auto_promote = l->auto_promote;
		if (why) /* an operator's reason: cut on a character boundary */
			(void)fg_text_copy(chg->why, sizeof(chg->why), why);
		else if (why_default[0])
			(void)fg_text_copy(chg->why, sizeof(chg->why), why_default);
		else
			default_why(chg->why, sizeof(chg->why), ev, l, now_ns);
	}
	return 1;
}

int fg_lines_point(struct fg_lines *ls, unsigned point, bool down, uint64_t now_ns,
		   struct fg_line_change chg[3])
{
	if (point < 1 || point > FG_POINTS)
		return -EINVAL;
	enum fg_line_state before[FG_LINES];

	for (unsigned i = 0; i < FG_LINES; i++)
		before[i] = fg_line_effective(ls, i);
	if (down)
		ls->points_down |= (uint8_t)(1u << (point - 1));
	else
		ls->points_down &= (uint8_t)~(1u << (point - 1));

	int n = 0;
	uint8_t through = fg_fano_lines_through(point);

	for (unsigned i = 0; i < FG_LINES; i++) {
		if (!(through & (1u << i)))
			continue;
		enum fg_line_state after = fg_line_effective(ls, i);

		if (after == before[i])
			continue;
		struct fg_line_change *c = &chg[n++];

		memset(c, 0, sizeof(*c));
		c->line = i;
		c->from = before[i];
		c->to = after;
		c->base_from = c->base_to = ls->line[i].base;
		c->event = down ? FG_LEV_POINT_DOWN : FG_LEV_POINT_UP;
		c->uid = FG_UID_AUDIT;
		c->pid = 0;
		c->auto_promote = ls->line[i].auto_promote;
		snprintf(c->why, sizeof(c->why), "point e%u %s", point,
			 down ? "has no live peer" : "has a live peer again");
	}
	(void)now_ns;
	return n;
}

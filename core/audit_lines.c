/* audit_lines.c - each line's state as the audit log records it, and the
 * start-up decision (contract and rules: include/fg/audit_lines.h). Pure:
 * no I/O, no logging; any thread, state is the caller's. */
#include <stdio.h>
#include <string.h>

#include "fg/audit_lines.h"
#include "fg/line.h"
#include "fg/text.h"

void fg_audit_fold_init(struct fg_audit_fold *f)
{
	memset(f, 0, sizeof(*f));
	f->summary_seq = FG_AUDIT_NO_SEQ;
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		f->line[i].event = FG_AUDIT_UNKNOWN;
		f->line[i].seq = FG_AUDIT_NO_SEQ;
	}
}

static void fold_entries(struct fg_audit_fold *f, const struct fg_audit_line_entry e[FG_AUDIT_LINES], uint64_t seq)
{
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		struct fg_audit_fold_line *l = &f->line[i];
		l->base_known = l->auto_known = true;
		l->base = e[i].base;
		l->auto_promote = e[i].auto_promote;
		l->event = e[i].event;
		/* The state stands on this record from now on; the entry's own
		 * seq names where it came from before. */
		l->seq = e[i].seq != FG_AUDIT_NO_SEQ ? e[i].seq : seq;
		(void)fg_text_copy(l->why, sizeof(l->why), e[i].why);
	}
	f->complete = true;
	f->cut = false;
	f->summary_seq = seq;
}

static void fold_line(struct fg_audit_fold *f, const struct fg_audit_rec *r)
{
	const struct fg_audit_line *p = &r->p.line;
	if (p->line >= FG_AUDIT_LINES)
		return;
	struct fg_audit_fold_line *l = &f->line[p->line];
	if (r->version >= 2) {
		l->base_known = l->auto_known = true;
		l->base = p->base_to;
		l->auto_promote = p->auto_promote;
	} else if (p->to != FG_LINE_DEGRADED) {
		l->base_known = true;
		l->base = p->to;
	} else if (p->from != FG_LINE_DEGRADED) {
		l->base_known = true; /* a point went down: the base is kept */
		l->base = p->from;
	} else if (l->base_known && l->base == FG_LINE_ACTIVE) {
		l->base = FG_LINE_SHADOW; /* degraded -> degraded: a demotion cannot be told apart */
	}
	l->event = p->event;
	l->seq = r->seq;
	(void)fg_text_copy(l->why, sizeof(l->why), p->why);
	f->line_records++;
}

void fg_audit_fold_rec(struct fg_audit_fold *f, const struct fg_audit_rec *r)
{
	f->records++;
	switch (r->type) {
	case FG_AREC_GENESIS: {
		uint64_t records = f->records, line_records = f->line_records;
		fg_audit_fold_init(f);
		f->records = records;
		f->line_records = line_records;
		f->complete = true;
		break;
	}
	case FG_AREC_START:
		fold_entries(f, r->p.start.line, r->seq);
		break;
	case FG_AREC_LINES:
		fold_entries(f, r->p.lines.line, r->seq);
		break;
	case FG_AREC_LINE:
		fold_line(f, r);
		break;
	case FG_AREC_RECOVERY:
		f->cut = true;
		break;
	default:
		break;
	}
}

void fg_audit_fold_merge_older(struct fg_audit_fold *f, const struct fg_audit_fold *older)
{
	if (f->complete)
		return;
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		struct fg_audit_fold_line *l = &f->line[i];
		const struct fg_audit_fold_line *o = &older->line[i];
		if (!l->base_known && o->base_known) {
			l->base_known = true;
			l->base = o->base;
			l->event = o->event;
			l->seq = o->seq;
			memcpy(l->why, o->why, sizeof(l->why));
		}
		if (!l->auto_known && o->auto_known) {
			l->auto_known = true;
			l->auto_promote = o->auto_promote;
		}
	}
	/* A cut in the older file after its last summary may hide a change
	 * that the newer file does not override. */
	f->cut = f->cut || older->cut;
	f->complete = older->complete;
	if (f->summary_seq == FG_AUDIT_NO_SEQ)
		f->summary_seq = older->summary_seq;
}

bool fg_audit_fold_has_history(const struct fg_audit_fold *f)
{
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++)
		if (f->line[i].base_known)
			return true;
	return false;
}

static void entry_config(const struct fg_audit_start_in *in, unsigned i, struct fg_audit_line_entry *e,
			 const char *prefix)
{
	e->base = in->cfg_base[i] <= FG_LINE_ACTIVE ? in->cfg_base[i] : FG_LINE_SHADOW;
	e->auto_promote = in->cfg_auto;
	e->event = FG_AUDIT_UNKNOWN;
	e->seq = FG_AUDIT_NO_SEQ;
	snprintf(e->why, sizeof(e->why), "%s[lines] line.%u = %s", prefix, i,
		 fg_line_state_name((enum fg_line_state)e->base));
}

/* The recorded state of line i, if the fold has one; false otherwise. */
static bool entry_log(const struct fg_audit_start_in *in, unsigned i, struct fg_audit_line_entry *e)
{
	const struct fg_audit_fold_line *l = in->fold ? &in->fold->line[i] : NULL;
	if (!l || !l->base_known)
		return false;
	e->base = l->base <= FG_LINE_ACTIVE ? l->base : FG_LINE_SHADOW;
	e->auto_promote = l->auto_known ? l->auto_promote : in->cfg_auto;
	e->event = l->event;
	e->seq = l->seq;
	memcpy(e->why, l->why, sizeof(e->why));
	e->why[sizeof(e->why) - 1] = '\0';
	return true;
}

void fg_audit_start_decide(const struct fg_audit_start_in *in, struct fg_audit_line_entry out[FG_AUDIT_LINES])
{
	bool cut = in->cut || (in->fold && in->fold->cut);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		struct fg_audit_line_entry *e = &out[i];
		memset(e, 0, sizeof(*e));
		if (in->damaged) {
			if (!entry_log(in, i, e))
				entry_config(in, i, e, "");
			if (e->base == FG_LINE_ACTIVE)
				e->base = FG_LINE_SHADOW;
			e->source = FG_LSRC_DAMAGED;
			(void)fg_text_copy(e->why, sizeof(e->why), in->damage ? in->damage : "log damaged");
			continue;
		}
		if (in->reset) {
			entry_config(in, i, e, "--reset-lines: ");
			e->source = FG_LSRC_RESET;
			continue;
		}
		if (entry_log(in, i, e)) {
			e->source = FG_LSRC_LOG;
		} else {
			entry_config(in, i, e, "");
			e->source = FG_LSRC_CONFIG;
		}
		if (cut && e->base == FG_LINE_ACTIVE) {
			e->base = FG_LINE_SHADOW;
			e->source = FG_LSRC_CUT;
			snprintf(e->why, sizeof(e->why), "records were cut; was active");
		}
	}
}

/*
 * answer.c - one owner per step and pair, and one headline per pair
 * (answer.h; docs/diagnose.md, "One owner"). The thresholds are the
 * verdict's, so that the split's owners mean what a verdict's does.
 */
#include <stdio.h>
#include <string.h>
#include "src/prism/answer.h"
#include "src/prism/decomp.h"

enum fsp_dx_owner fsp_answer_part_owner(unsigned part, enum fsp_dx_target t)
{
	int mount = t == FSP_DX_FSPRISM || t == FSP_DX_EMU;
	switch (part) {
	case FSP_DC_SUBMIT:
	case FSP_DC_COMPLETE:
		return mount ? FSP_DX_FUSE_TRANSPORT : FSP_DX_FS_CPU;
	case FSP_DC_FS_SUBMIT:
	case FSP_DC_FS_COMPLETE:
		return FSP_DX_FS_CPU;
	case FSP_DC_FUSE_QUEUE:
	case FSP_DC_DAEMON_RECV:
	case FSP_DC_FUSE_REPLY:
		return FSP_DX_FUSE_TRANSPORT;
	case FSP_DC_LAYER:
	case FSP_DC_INJECT:
		return FSP_DX_DAEMON;
	case FSP_DC_EMU:
		return FSP_DX_EMULATION;
	case FSP_DC_BACKING:
		return t == FSP_DX_EMU ? FSP_DX_EMULATION : FSP_DX_FS_CPU;
	case FSP_DC_BLOCK_QUEUE:
	case FSP_DC_DEVICE:
		return FSP_DX_DRIVE;
	default:
		return FSP_DX_UNKNOWN;
	}
}

enum fsp_dx_owner fsp_answer_split_owner(const double delta_us[FSP_DX__OWNERS],
					 enum fsp_dx_owner device_owner)
{
	double total = 0, best = 0, second = 0;
	int bi = -1;
	for (int c = 0; c < FSP_DX__OWNERS; c++) {
		total += delta_us[c];
		if (c == FSP_DX_NOISE || c == FSP_DX_UNKNOWN)
			continue;
		if (delta_us[c] > best) {
			second = best;
			best = delta_us[c];
			bi = c;
		} else if (delta_us[c] > second) {
			second = delta_us[c];
		}
	}
	if (bi < 0 || total <= 0 || best < FSP_ANSWER_SHARE * total ||
	    best < FSP_ANSWER_LEAD * second)
		return FSP_DX_UNKNOWN;
	return bi == FSP_DX_DRIVE ? device_owner : (enum fsp_dx_owner)bi;
}

/* Does o name a cause (not noise, not unknown)? */
static int names_cause(enum fsp_dx_owner o)
{
	return o > FSP_DX_UNKNOWN && o < FSP_DX__OWNERS;
}

void fsp_answer_owner(const struct fsp_dx_pair *p, const struct fsp_dx_verdict *v,
		      struct fsp_answer_owner *o)
{
	memset(o, 0, sizeof *o);
	o->mean = v->owner;
	o->median = o->tail = FSP_DX_UNKNOWN;
	o->have_split = p->a->have_split && p->b->have_split;
	if (o->have_split)
		for (int c = 0; c < FSP_DX__OWNERS; c++) {
			o->mid_us[c] = p->b->mid_us[c] - p->a->mid_us[c];
			o->tail_us[c] = p->b->tail_us[c] - p->a->tail_us[c];
		}
	if (v->owner == FSP_DX_NOISE) {
		o->owner = FSP_DX_NOISE;
		snprintf(o->text, sizeof o->text, "%s", fsp_dx_owner_name(o->owner));
		return;
	}
	/* a slower b: its median IOs' owner; a tail that grew beyond its
	 * spread: the tail's (also where b is faster on the whole) */
	int slower = v->mbps.rel < 0 && (v->mbps.med_a > 0 && v->mbps.med_b > 0);
	if (o->have_split && slower)
		o->median = fsp_answer_split_owner(o->mid_us, v->device_owner);
	if (o->have_split && v->have_lat && v->p99.j != FSP_DX_INSIDE &&
	    v->p99.rel > FSP_DX_FLOOR)
		o->tail = fsp_answer_split_owner(o->tail_us, v->device_owner);
	if (names_cause(v->owner))
		o->owner = v->owner;
	else if (slower && names_cause(o->median))
		o->owner = o->median;
	else if (slower && names_cause(o->tail))
		o->owner = o->tail;
	else
		o->owner = FSP_DX_UNKNOWN;
	size_t n = (size_t)snprintf(o->text, sizeof o->text, "%s", fsp_dx_owner_name(o->owner));
	if (names_cause(o->median) && o->median != o->owner && n < sizeof o->text)
		n += (size_t)snprintf(o->text + n, sizeof o->text - n, "; median: %s",
				      fsp_dx_owner_name(o->median));
	if (names_cause(o->tail) && o->tail != o->owner && n < sizeof o->text)
		snprintf(o->text + n, sizeof o->text - n, "; tail: %s",
			 fsp_dx_owner_name(o->tail));
}

/* Do the steps differ in key (0: mix, 1: queue depth)? */
static int varies(const struct fsp_answer_step *s, int n, int key)
{
	for (int i = 1; i < n; i++)
		if (key ? s[i].qd != s[0].qd : s[i].read_pct != s[0].read_pct)
			return 1;
	return 0;
}

void fsp_answer_step_name(const struct fsp_answer_step *s, int n, int i, char *buf,
			  size_t len)
{
	if (varies(s, n, 0))
		snprintf(buf, len, "%d/%d", s[i].read_pct, 100 - s[i].read_pct);
	else if (varies(s, n, 1))
		snprintf(buf, len, "QD%d", s[i].qd);
	else
		snprintf(buf, len, "%s", s[i].label && *s[i].label ? s[i].label : "step");
}

void fsp_answer_headline(const char *a_name, const char *b_name,
			 const struct fsp_answer_step *s, int n, int rounds,
			 struct fsp_answer_headline *h)
{
	memset(h, 0, sizeof *h);
	h->worst = -1;
	const char *unit = varies(s, n, 0) ? "mixes" : varies(s, n, 1) ? "queue depths" : "steps";
	double sum_a = 0, sum_b = 0;
	for (int i = 0; i < n; i++) {
		if (s[i].a_mbps <= 0 || s[i].b_mbps <= 0)
			continue;
		h->steps++;
		sum_a += s[i].a_mbps;
		sum_b += s[i].b_mbps;
		double rel = s[i].b_mbps / s[i].a_mbps - 1;
		if (rel < -FSP_DX_FLOOR) {
			h->slower++;
			h->outside += s[i].j == FSP_DX_OUTSIDE;
		}
		if (h->worst < 0 || rel < h->rel) {
			h->worst = i;
			h->rel = rel;
		}
	}
	if (!h->steps) {
		snprintf(h->text, sizeof h->text, "%s against %s: no step measured on both",
			 b_name, a_name);
		h->worst = -1;
		return;
	}
	double mean = sum_b / sum_a; /* of the means over the same steps */
	if (!h->slower) {
		snprintf(h->text, sizeof h->text, "%s not slower than %s at any of %d %s "
			 "(mean x%.2f)", b_name, a_name, h->steps, unit, mean);
		return;
	}
	const struct fsp_answer_step *w = &s[h->worst];
	fsp_answer_step_name(s, n, h->worst, h->step_name, sizeof h->step_name);
	for (int i = 0; i < n; i++)
		if (s[i].a_mbps > 0 && s[i].b_mbps > 0 &&
		    s[i].b_mbps / s[i].a_mbps - 1 < -FSP_DX_FLOOR && s[i].o && w->o &&
		    s[i].o->owner == w->o->owner)
			h->owner_steps++;
	char noise[64];
	if (rounds < 2)
		snprintf(noise, sizeof noise, "one round: noise not judged");
	else
		snprintf(noise, sizeof noise, "%d beyond the noise", h->outside);
	char owner[160];
	if (w->o && w->o->owner == FSP_DX_NOISE)
		snprintf(owner, sizeof owner, "inside the noise of the rounds");
	else
		snprintf(owner, sizeof owner, "owner %s", w->o ? w->o->text : "unknown");
	int k = snprintf(h->text, sizeof h->text, "%s slower than %s at %d/%d %s (%s), "
			 "worst %s: %.1f vs %.1f MB/s (%+.0f%%); %s", b_name, a_name,
			 h->slower, h->steps, unit, noise, h->step_name, w->b_mbps, w->a_mbps,
			 100 * h->rel, owner);
	if (k > 0 && (size_t)k < sizeof h->text && w->o && h->slower > 1 &&
	    w->o->owner != FSP_DX_NOISE)
		snprintf(h->text + k, sizeof h->text - (size_t)k, " (at %d of the %d slower %s)",
			 h->owner_steps, h->slower, unit);
}

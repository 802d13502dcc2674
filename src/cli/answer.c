/*
 * answer.c - the answer of a compare, printed: the screen `fsprism
 * compare` shows by default (a headline per pair of neighbouring targets,
 * the bathtub line, one row of MB/s per step with the owner of its largest
 * drop, the stalls; for a load curve its IOPS and p99 per step and where
 * the latency grew) and the "answer" object of `fsprism diagnose --format
 * json`, which the HTML report shows first. What they say is decided in
 * src/prism/answer.c over what diagnose.c read and judged, so that every
 * view names the same owner.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/json.h"
#include "src/cli/diagnose_int.h"
#include "src/prism/decomp.h"


/* The steps of the compare as the answer names them ("60/40"). */
static void step_names(const struct dx_run *d, char names[][32])
{
	struct fsp_answer_step s[MAX_STEPS];
	for (int i = 0; i < d->nsteps; i++) {
		const struct fsp_dx_step *e = NULL;
		for (int t = 0; t < FSP_DX__TARGETS && !e; t++)
			if (d->ev[t][i].present)
				e = &d->ev[t][i];
		s[i] = (struct fsp_answer_step){ .read_pct = e ? e->read_pct : 0,
						 .qd = e ? e->qd : 0, .label = d->steps[i].label };
	}
	for (int i = 0; i < d->nsteps; i++)
		fsp_answer_step_name(s, d->nsteps, i, names[i], 32);
}

/* The pair at step i with the largest drop below its a (beyond the 3%
 * floor); its b, or -1. */
static int largest_drop(const struct dx_run *d, const struct dx_result *res, int i)
{
	int best = -1;
	double low = -FSP_DX_FLOOR;
	for (int t = 1; t < FSP_DX__TARGETS; t++) {
		if (!res->have[i][t])
			continue;
		const struct fsp_dx_cmp *c = &res->v[i][t].mbps;
		if (c->med_a > 0 && c->med_b > 0 && c->med_b / c->med_a - 1 < low) {
			low = c->med_b / c->med_a - 1;
			best = t;
		}
	}
	(void)d;
	return best;
}

static void print_shapes(FILE *out, const struct dx_run *d, const struct dx_result *res,
			 char names[][32])
{
	char none[128] = "";
	size_t nn = 0;
	int any = 0;
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!fsp_dx_present(d, t) || !res->shape_done[t])
			continue;
		any = 1;
		const struct fsp_dx_shape *s = &res->shape[t];
		if (!s->found) {
			nn += (size_t)snprintf(none + nn, sizeof none - nn, "%s%s", nn ? ", " : "",
					       fsp_dx_tname(d, t));
			continue;
		}
		const char *first = "", *last = "", *low = "";
		for (int i = 0; i < d->nsteps; i++) {
			int pct = d->ev[t][i].read_pct;
			if (!d->ev[t][i].present)
				continue;
			if (pct == s->first_pct)
				first = names[i];
			if (pct == s->last_pct)
				last = names[i];
			if (pct == s->low_pct)
				low = names[i];
		}
		fprintf(out, "- bathtub: %s, %d mixes from %s to %s below %.0f%% of its pure steps "
			"(%.1f MB/s), lowest %.1f MB/s at %s (%.2fx); owner %s\n", fsp_dx_tname(d, t),
			s->nlow, first, last, 100 * FSP_DX_DIP, s->pure_mbps, s->low_mbps, low,
			s->depth, fsp_dx_owner_name(res->shape_owner[t]));
	}
	if (nn)
		fprintf(out, "- no bathtub: %s\n", none);
	if (!any)
		fprintf(out, "- no mix sweep: no bathtub to look for\n");
}

static void answer_lines(FILE *out, const struct dx_run *d, const struct dx_result *res);

/* Stalls print at most this many lines; the rest are counted. */
#define STALL_LINES 3

/* The label of step number step, "" if unknown. */
static const char *step_label(const struct dx_run *d, int step)
{
	for (int i = 0; i < d->nsteps; i++)
		if (d->steps[i].step == step)
			return d->steps[i].label;
	return "";
}

/* One stall as a person reads it: its target, its round, then the text of
 * src/prism/stall.c. */
static void stall_line(const struct dx_run *d, const struct dx_stall *x, char *buf, size_t len)
{
	char text[512], round[32] = "";
	fsp_stall_text(&x->s, step_label(d, x->s.step), text, sizeof text);
	if (d->rounds > 1)
		snprintf(round, sizeof round, " (round %d)", x->round + 1);
	snprintf(buf, len, "%s%s, %s", fsp_dx_tname(d, x->t), round, text);
}

/* The stalls, the longest first, STALL_LINES of them. */
static void print_stalls(FILE *out, const struct dx_run *d)
{
	size_t n = d->nstalls, shown = 0;
	int used[STALL_LINES];
	uint64_t more = 0;
	for (size_t i = 0; i < n; i++)
		more += (uint64_t)d->stalls[i].s.more;
	if (!n) {
		fprintf(out, "- no stall or outlier (no step with a bucket at zero throughput, no IO "
			"%.0fx beyond its step's p99.9)\n", FSP_STALL_OUTLIER_X);
		return;
	}
	while (shown < n && shown < STALL_LINES) {
		int best = -1;
		for (size_t i = 0; i < n; i++) {
			int taken = 0;
			for (size_t k = 0; k < shown; k++)
				taken |= used[k] == (int)i;
			if (!taken && (best < 0 || d->stalls[i].s.duration_ms >
						   d->stalls[best].s.duration_ms))
				best = (int)i;
		}
		used[shown++] = best;
		char line[640];
		stall_line(d, &d->stalls[best], line, sizeof line);
		fprintf(out, "- %s %s\n", d->stalls[best].s.kind == FSP_STALL_ZERO ? "stall:" :
			"outlier:", line);
	}
	if (n > shown || more)
		fprintf(out, "  (%" PRIu64 " more stalls and outliers: fsprism stats DB --run N for "
			"each target's run)\n", (uint64_t)(n - shown) + more);
}

void fsp_answer_print(FILE *out, const struct dx_run *d, const struct dx_result *res)
{
	char *text = NULL;
	size_t n = 0;
	FILE *mem = open_memstream(&text, &n);
	if (!mem) {
		answer_lines(out, d, res);
		return;
	}
	answer_lines(mem, d, res);
	fclose(mem);
	/* the columns pad with spaces: none at a line's end */
	for (size_t i = 0, start = 0; i < n; i++) {
		if (text[i] != '\n')
			continue;
		size_t end = i;
		while (end > start && text[end - 1] == ' ')
			end--;
		fwrite(text + start, 1, end - start, out);
		fputc('\n', out);
		start = i + 1;
	}
	free(text);
}

/* ---- a load curve ------------------------------------------------------------------ */

/* Target t's first rate step (asked > 0), or -1. */
static int first_rate_step(const struct dx_run *d, int t)
{
	for (int i = 0; i < d->nsteps; i++)
		if (d->ev[t][i].present && d->asked[t][i] > 0)
			return i;
	return -1;
}

/*
 * Where target t's latency grew from its first rate step to step i: the
 * part of the layer split whose mean per IO grew most (*us, by more than
 * 0.5 us), or -1: nothing grew, or no split at one of them.
 */
static int grew_part(const struct dx_run *d, int t, int i, double *us)
{
	int from = first_rate_step(d, t), best = -1;
	*us = 0;
	if (from < 0 || !d->curve_split_n[t][from] || !d->curve_split_n[t][i])
		return -1;
	for (int p = 0; p < FSP_DC__COUNT; p++) {
		double g = d->part_us[t][i][p] - d->part_us[t][from][p];
		if (g > 0.5 && g > *us) {
			*us = g;
			best = p;
		}
	}
	return best;
}

/* The maximum's step: the first closed-loop step (asked 0) every present target ran. */
static int curve_max_step(const struct dx_run *d)
{
	for (int i = 0; i < d->nsteps; i++) {
		int all = 1;
		for (int t = 0; t < FSP_DX__TARGETS; t++)
			if (fsp_dx_present(d, t))
				all &= d->ev[t][i].present && d->iops_n[t][i] && d->asked[t][i] == 0;
		if (all)
			return i;
	}
	return -1;
}

/*
 * A load curve's screen: the maxima against each other (the one step at
 * which the targets ran the same closed loop), then per step each
 * target's IOPS and p99 from the intended issue time (the curve), then
 * per rate step the part of the layer split that grew most since the
 * first rate step (where latency grows as load rises), then the stalls.
 */
static void curve_lines(FILE *out, const struct dx_run *d, const struct dx_result *res)
{
	fprintf(out, "\nthe answer (%d round%s): a load curve; each target's rate steps are shares "
		"of its own\nmaximum (rate=max), each IO's latency counted from its intended issue "
		"time\n", d->rounds, d->rounds == 1 ? "" : "s");
	int m = curve_max_step(d);
	if (m >= 0) {
		fprintf(out, "- maximum (closed loop):");
		const char *sep = " ";
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!fsp_dx_present(d, t))
				continue;
			fprintf(out, "%s%s %.0f IOPS", sep, fsp_dx_tname(d, t), d->iops[t][m]);
			sep = ", ";
		}
		fputc('\n', out);
		for (int t = 1; t < FSP_DX__TARGETS; t++) {
			if (!res->have[m][t])
				continue;
			const struct fsp_dx_verdict *v = &res->v[m][t];
			double a = d->iops[v->ta][m], b = d->iops[t][m];
			if (a <= 0 || b <= 0)
				continue;
			fprintf(out, "- at the maximum %s against %s: %.0f vs %.0f IOPS (%+.0f%%)",
				fsp_dx_tname(d, t), fsp_dx_tname(d, v->ta), b, a, 100 * (b / a - 1));
			if (b / a - 1 < -FSP_DX_FLOOR)
				fprintf(out, "; owner %s", res->own[m][t].text);
			fputc('\n', out);
		}
	}

	fprintf(out, "\n  %-9s", "step");
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		if (fsp_dx_present(d, t))
			fprintf(out, " %19s", fsp_dx_tname(d, t));
	fprintf(out, "\n  %-9s", "");
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		if (fsp_dx_present(d, t))
			fprintf(out, " %10s %8s", "IOPS", "p99 us");
	fputc('\n', out);
	int any_short = 0;
	for (int i = 0; i < d->nsteps; i++) {
		fprintf(out, "  %-9s", d->steps[i].label);
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!fsp_dx_present(d, t))
				continue;
			const struct fsp_dx_step *e = &d->ev[t][i];
			if (!e->present || !d->iops_n[t][i]) {
				fprintf(out, " %10s %8s", "-", "-");
				continue;
			}
			int is_short = d->asked[t][i] > 0 && d->iops[t][i] < 0.95 * d->asked[t][i];
			any_short |= is_short;
			fprintf(out, " %9.0f%c %8.1f", d->iops[t][i], is_short ? '!' : ' ',
				fsp_dx_median(e->p99, e->nrounds));
		}
		fputc('\n', out);
	}
	fprintf(out, "  (IOPS achieved%s; p99 of the step's main direction, from each IO's intended "
		"issue time%s)\n", d->rounds > 1 ? ", means of the rounds" : "",
		any_short ? "; !: short of the asked rate by more than 5%" : "");

	int have_split = 0;
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		for (int i = 0; i < d->nsteps; i++)
			have_split |= fsp_dx_present(d, t) && d->curve_split_n[t][i] > 0;
	if (!have_split) {
		fprintf(out, "- where latency grows: no layer split per IO (the runs have no per-IO "
			"rows: compare --record=full)\n");
	} else {
		fprintf(out, "\n  where latency grows: the part of the layer split per IO whose mean "
			"grew most\n  since the first rate step (us; fsprism stats DB --run N for "
			"every part)\n  %-9s", "step");
		for (int t = 0; t < FSP_DX__TARGETS; t++)
			if (fsp_dx_present(d, t))
				fprintf(out, " %19s", fsp_dx_tname(d, t));
		fputc('\n', out);
		for (int i = 0; i < d->nsteps; i++) {
			int rate_step = 0;
			for (int t = 0; t < FSP_DX__TARGETS; t++)
				rate_step |= fsp_dx_present(d, t) && first_rate_step(d, t) >= 0 &&
					     i > first_rate_step(d, t) && d->asked[t][i] > 0;
			if (!rate_step)
				continue;
			fprintf(out, "  %-9s", d->steps[i].label);
			for (int t = 0; t < FSP_DX__TARGETS; t++) {
				if (!fsp_dx_present(d, t))
					continue;
				double us;
				int p = grew_part(d, t, i, &us);
				char cell[40];
				if (p >= 0)
					snprintf(cell, sizeof cell, "%s +%.1f", fsp_dc_part_name((unsigned)p),
						 us);
				else
					snprintf(cell, sizeof cell, "%s",
						 d->curve_split_n[t][i] ? "-" : "n/a");
				fprintf(out, " %19s", cell);
			}
			fputc('\n', out);
		}
		fprintf(out, "  (-: no part grew by more than 0.5 us; n/a: no split at the step)\n");
	}
	print_stalls(out, d);
}

static void answer_lines(FILE *out, const struct dx_run *d, const struct dx_result *res)
{
	if (d->curve) {
		curve_lines(out, d, res);
		return;
	}
	char names[MAX_STEPS][32];
	step_names(d, names);
	fprintf(out, "\nthe answer (%d round%s; ", d->rounds, d->rounds == 1 ? "" : "s");
	if (d->rounds < 2)
		fprintf(out, "with one round a difference cannot be told from noise: "
			"--rounds 3 can):\n");
	else
		fprintf(out, "a difference inside the round-to-round spread is noise):\n");
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		if (res->have_head[t])
			fprintf(out, "- %s\n", res->head[t].text);
	print_shapes(out, d, res, names);

	/* one row per step: the medians over the rounds */
	fprintf(out, "\n  %-8s", "step");
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		if (fsp_dx_present(d, t))
			fprintf(out, " %9s", fsp_dx_tname(d, t));
	fprintf(out, "   largest drop: owner\n");
	double sum[FSP_DX__TARGETS] = { 0 };
	int nsum = 0;
	for (int i = 0; i < d->nsteps; i++) {
		fprintf(out, "  %-8s", names[i]);
		int all = 1;
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!fsp_dx_present(d, t))
				continue;
			const struct fsp_dx_step *e = &d->ev[t][i];
			double m = e->present ? fsp_dx_median(e->mbps, e->nrounds) : 0;
			if (m <= 0) {
				fprintf(out, " %9s", "-");
				all = 0;
				continue;
			}
			int beyond = res->have[i][t] && res->v[i][t].mbps.j == FSP_DX_OUTSIDE;
			fprintf(out, " %8.1f%c", m, beyond ? '*' : ' ');
		}
		if (all) {
			for (int t = 0; t < FSP_DX__TARGETS; t++)
				if (fsp_dx_present(d, t))
					sum[t] += fsp_dx_median(d->ev[t][i].mbps, d->ev[t][i].nrounds);
			nsum++;
		}
		int b = largest_drop(d, res, i);
		if (b >= 0)
			fprintf(out, "   %s %+.0f%%: %s", fsp_dx_tname(d, b),
				100 * (res->v[i][b].mbps.med_b / res->v[i][b].mbps.med_a - 1),
				res->own[i][b].text);
		fputc('\n', out);
	}
	if (nsum) {
		fprintf(out, "  %-8s", nsum < d->nsteps ? "mean*" : "mean");
		for (int t = 0; t < FSP_DX__TARGETS; t++)
			if (fsp_dx_present(d, t))
				fprintf(out, " %8.1f ", sum[t] / nsum);
		fputc('\n', out);
		if (fsp_dx_present(d, FSP_DX_RAW) && sum[FSP_DX_RAW] > 0) {
			fprintf(out, "  %-8s", "x raw");
			for (int t = 0; t < FSP_DX__TARGETS; t++)
				if (fsp_dx_present(d, t))
					fprintf(out, " %8.2f ", sum[t] / sum[FSP_DX_RAW]);
			fputc('\n', out);
		}
		if (nsum < d->nsteps)
			fprintf(out, "  (mean*: over the %d steps every target measured)\n", nsum);
	}
	fprintf(out, "  (MB/s%s%s)\n", d->rounds > 1 ? ", the median of the rounds" : "",
		d->rounds > 1 ? "; *: beyond the noise against the target before it" : "");
	print_stalls(out, d);
}

/* ---- JSON ------------------------------------------------------------------------ */

static void class_map(FILE *out, const char *key, const double *us)
{
	fprintf(out, "\"%s\": {", key);
	int first = 1;
	for (int c = FSP_DX_UNKNOWN; c < FSP_DX__OWNERS; c++) {
		if (us[c] == 0)
			continue;
		fprintf(out, "%s\"%s\": ", first ? "" : ", ", fsp_dx_owner_name(c));
		fsp_json_num(out, us[c]);
		first = 0;
	}
	fputc('}', out);
}

void fsp_answer_owner_json(FILE *out, const struct fsp_answer_owner *o)
{
	fprintf(out, "\"mean_owner\": \"%s\", \"median_owner\": \"%s\", \"tail_owner\": \"%s\", "
		"\"owner_text\": ", fsp_dx_owner_name(o->mean), fsp_dx_owner_name(o->median),
		fsp_dx_owner_name(o->tail));
	fsp_json_str(out, o->text);
	fputs(", ", out);
	if (o->have_split) {
		class_map(out, "mid_us", o->mid_us);
		fputs(", ", out);
		class_map(out, "tail_us", o->tail_us);
		fputs(", ", out);
	}
}

/* The two classes that grew most in us (b - a), as "+120 us fuse-transport,
 * +8 us drive"; 0 if none grew. */
static int grew(const double *us, char *buf, size_t len)
{
	int top[2] = { -1, -1 };
	for (int c = FSP_DX_UNKNOWN; c < FSP_DX__OWNERS; c++) {
		if (us[c] <= 0.5)
			continue;
		if (top[0] < 0 || us[c] > us[top[0]]) {
			top[1] = top[0];
			top[0] = c;
		} else if (top[1] < 0 || us[c] > us[top[1]]) {
			top[1] = c;
		}
	}
	if (top[0] < 0)
		return 0;
	int n = snprintf(buf, len, "+%.0f us %s", us[top[0]], fsp_dx_owner_name(top[0]));
	if (top[1] >= 0 && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", +%.0f us %s", us[top[1]],
			 fsp_dx_owner_name(top[1]));
	return 1;
}

int fsp_answer_split_text(const struct fsp_answer_owner *o, char *buf, size_t len)
{
	int med = o->median > FSP_DX_UNKNOWN && o->median != o->owner;
	int tail = o->tail > FSP_DX_UNKNOWN && o->tail != o->owner;
	if (!o->have_split || (!med && !tail))
		return 0;
	char m[160] = "", t[160] = "";
	int hm = grew(o->mid_us, m, sizeof m), ht = grew(o->tail_us, t, sizeof t);
	snprintf(buf, len, "layer split per IO: around the median %s; in the tail (p99 and "
		 "above) %s", hm ? m : "nothing grew", ht ? t : "nothing grew");
	return 1;
}

/* A load curve's points: per target and step its IOPS, the asked rate,
 * the p99 and the part that grew most since the first rate step. */
static void curve_json(FILE *out, const struct dx_run *d)
{
	fputs(", \"curve\": [", out);
	int first = 1;
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		for (int i = 0; i < d->nsteps; i++) {
			const struct fsp_dx_step *e = &d->ev[t][i];
			if (!fsp_dx_present(d, t) || !e->present || !d->iops_n[t][i])
				continue;
			fprintf(out, "%s\n  {\"target\": \"%s\", \"step\": %d, \"label\": ",
				first ? "" : ",", fsp_dx_label[t], d->steps[i].step);
			first = 0;
			fsp_json_str(out, d->steps[i].label);
			fputs(", \"iops\": ", out);
			fsp_json_num(out, d->iops[t][i]);
			fputs(", \"asked_iops\": ", out);
			fsp_json_num(out, d->asked[t][i]);
			fputs(", \"p99_us\": ", out);
			fsp_json_num(out, fsp_dx_median(e->p99, e->nrounds));
			double us;
			int p = grew_part(d, t, i, &us);
			fputs(", \"grew_part\": ", out);
			if (p >= 0) {
				fsp_json_str(out, fsp_dc_part_name((unsigned)p));
				fputs(", \"grew_us\": ", out);
				fsp_json_num(out, us);
			} else
				fputs("null, \"grew_us\": 0", out);
			fputc('}', out);
		}
	fputs("\n]", out);
}

void fsp_answer_json(FILE *out, const struct dx_run *d, const struct dx_result *res)
{
	char names[MAX_STEPS][32];
	step_names(d, names);
	fprintf(out, ",\n\"answer\": {\"rounds\": %d, \"headlines\": [", d->rounds);
	int first = 1;
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!res->have_head[t])
			continue;
		const struct fsp_answer_headline *h = &res->head[t];
		int a = res->head_a[t], w = res->head_worst[t];
		fprintf(out, "%s\n  {\"a\": \"%s\", \"b\": \"%s\", \"a_name\": ", first ? "" : ",",
			fsp_dx_label[a], fsp_dx_label[t]);
		first = 0;
		fsp_json_str(out, fsp_dx_tname(d, a));
		fputs(", \"b_name\": ", out);
		fsp_json_str(out, fsp_dx_tname(d, t));
		fprintf(out, ", \"steps\": %d, \"slower_steps\": %d, \"outside_steps\": %d, "
			"\"owner_steps\": %d, \"worst\": ", h->steps, h->slower, h->outside,
			h->owner_steps);
		if (w >= 0 && h->slower) {
			const struct fsp_dx_verdict *v = &res->v[w][t];
			const struct fsp_answer_owner *o = &res->own[w][t];
			fprintf(out, "{\"step\": %d, \"label\": ", d->steps[w].step);
			fsp_json_str(out, d->steps[w].label);
			fputs(", \"name\": ", out);
			fsp_json_str(out, names[w]);
			fprintf(out, ", \"read_pct\": %d, \"a_mbps\": ", d->ev[t][w].read_pct);
			fsp_json_num(out, v->mbps.med_a);
			fputs(", \"b_mbps\": ", out);
			fsp_json_num(out, v->mbps.med_b);
			fputs(", \"rel\": ", out);
			fsp_json_num(out, v->mbps.rel);
			fprintf(out, "}, \"owner\": \"%s\", ", fsp_dx_owner_name(o->owner));
			fsp_answer_owner_json(out, o);
		} else {
			fputs("null, \"owner\": null, \"owner_text\": null, ", out);
		}
		fputs("\"text\": ", out);
		fsp_json_str(out, h->text);
		fputc('}', out);
	}
	fputs("\n], \"steps\": [", out);
	first = 1;
	for (int i = 0; i < d->nsteps; i++)
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!res->have[i][t])
				continue;
			static const char *const j[] = { "inside", "outside", "spread-unknown" };
			const struct fsp_dx_verdict *v = &res->v[i][t];
			const struct fsp_answer_owner *o = &res->own[i][t];
			fprintf(out, "%s\n  {\"step\": %d, \"label\": ", first ? "" : ",",
				d->steps[i].step);
			first = 0;
			fsp_json_str(out, d->steps[i].label);
			fputs(", \"name\": ", out);
			fsp_json_str(out, names[i]);
			fprintf(out, ", \"read_pct\": %d, \"a\": \"%s\", \"b\": \"%s\", \"a_mbps\": ",
				d->ev[t][i].read_pct, fsp_dx_label[v->ta], fsp_dx_label[v->tb]);
			fsp_json_num(out, v->mbps.med_a);
			fputs(", \"b_mbps\": ", out);
			fsp_json_num(out, v->mbps.med_b);
			fprintf(out, ", \"judgement\": \"%s\", \"owner\": \"%s\", ", j[v->mbps.j],
				fsp_dx_owner_name(o->owner));
			fsp_answer_owner_json(out, o);
			fputs("\"evidence\": ", out);
			fsp_json_str(out, v->evidence[1][0] ? v->evidence[1] : v->evidence[0]);
			fputc('}', out);
		}
	fputs("\n], \"shapes\": [", out);
	first = 1;
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!fsp_dx_present(d, t) || !res->shape_done[t])
			continue;
		const struct fsp_dx_shape *s = &res->shape[t];
		fprintf(out, "%s\n  {\"target\": \"%s\", \"bathtub\": %s, \"owner\": ", first ? "" : ",",
			fsp_dx_label[t], s->found ? "true" : "false");
		first = 0;
		if (s->found)
			fprintf(out, "\"%s\"", fsp_dx_owner_name(res->shape_owner[t]));
		else
			fputs("null", out);
		fputs(", \"text\": ", out);
		char text[256];
		if (s->found)
			snprintf(text, sizeof text, "%s: bathtub, %d mixes from %d%% to %d%% reads below "
				 "%.0f%% of its pure steps, lowest %.1f MB/s at %d%% reads (%.2fx); "
				 "owner %s", fsp_dx_tname(d, t), s->nlow, s->first_pct, s->last_pct,
				 100 * FSP_DX_DIP, s->low_mbps, s->low_pct, s->depth,
				 fsp_dx_owner_name(res->shape_owner[t]));
		else
			snprintf(text, sizeof text, "%s: no bathtub", fsp_dx_tname(d, t));
		fsp_json_str(out, text);
		fputc('}', out);
	}
	fputs("\n], \"stalls\": [", out);
	for (size_t i = 0; i < d->nstalls; i++) {
		const struct dx_stall *x = &d->stalls[i];
		char text[640];
		stall_line(d, x, text, sizeof text);
		fprintf(out, "%s\n  {\"target\": \"%s\", \"run\": %" PRId64 ", \"round\": %d, "
			"\"step\": %d, \"label\": ", i ? "," : "", fsp_dx_label[x->t], x->run, x->round,
			x->s.step);
		fsp_json_str(out, step_label(d, x->s.step));
		fprintf(out, ", \"kind\": \"%s\", \"at_ms\": ", x->s.kind == FSP_STALL_ZERO ?
			"stall" : "outlier");
		fsp_json_num(out, x->s.at_ms);
		fputs(", \"duration_ms\": ", out);
		fsp_json_num(out, x->s.duration_ms);
		fprintf(out, ", \"zero_buckets\": %d, \"ios\": %d, \"io_us\": ", x->s.zero_buckets,
			x->s.ios);
		fsp_json_num(out, x->s.io_us);
		fprintf(out, ", \"dir\": %s, \"layer\": ", x->s.write < 0 ? "null" :
			x->s.write ? "\"write\"" : "\"read\"");
		if (x->s.part >= 0)
			fsp_json_str(out, fsp_dc_part_name((unsigned)x->s.part));
		else
			fputs("null", out);
		fputs(", \"layer_share\": ", out);
		fsp_json_num(out, x->s.part_share);
		fputs(", \"p999_us\": ", out);
		fsp_json_num(out, x->s.p999_us);
		fprintf(out, ", \"more\": %d, \"text\": ", x->s.more);
		fsp_json_str(out, text);
		fputc('}', out);
	}
	fputs("\n]", out);
	if (d->curve)
		curve_json(out, d);
	fputc('}', out);
}

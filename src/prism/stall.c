/*
 * stall.c - stalls and outliers of one engine step (stall.h): which whole
 * timeline buckets saw nothing complete while an IO was in flight, which
 * IOs lie far beyond the step's p99.9, merged, capped, and the part of the
 * per-IO decomposition that held the IO each finding names. Pure: the
 * caller reads the rows (src/cli/stalls.c). docs/prism.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/cmp.h"
#include "src/prism/stall.h"
#include "src/base/grow.h"

struct span {
	uint64_t a, b; /* submit, reap */
	size_t i;      /* index in the step's IOs */
};

static int span_cmp(const void *x, const void *y)
{
	const struct span *p = x, *q = y;
	return FSP_CMP(p->a, q->a) ?: FSP_CMP(p->i, q->i);
}

struct cand {
	struct fsp_stall f;
	size_t io;
	uint64_t from, to; /* a stall's window */
};

static int cand_cmp(const void *x, const void *y)
{
	const struct cand *p = x, *q = y;
	/* the longest first, then the earliest */
	return FSP_CMP(q->f.duration_ms, p->f.duration_ms) ?: FSP_CMP(p->f.at_ms, q->f.at_ms);
}

struct cands {
	struct cand *v;
	size_t n, cap;
};

static int push(struct cands *c, const struct cand *x)
{
	if (fsp_grow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v), 16))
		return -1;
	c->v[c->n++] = *x;
	return 0;
}

/* The finding's IO fields from IO i (SIZE_MAX: none). */
static void name_io(const struct fsp_stall_step *s, struct cand *c, size_t i)
{
	c->io = i;
	c->f.part = -1;
	if (i == SIZE_MAX) {
		c->f.write = -1;
		return;
	}
	const struct fsp_dc_io *io = &s->io[i];
	c->f.io_us = (double)(io->reap_ns - io->submit_ns) / 1e3;
	c->f.write = io->write ? 1 : 0;
	c->f.p999_us = (double)s->p999_ns[c->f.write] / 1e3;
}

static int is_outlier(const struct fsp_stall_step *s, const struct fsp_dc_io *io)
{
	uint64_t p = s->p999_ns[io->write ? 1 : 0];
	uint64_t lat = io->reap_ns - io->submit_ns;
	return p && (double)lat >= FSP_STALL_OUTLIER_X * (double)p &&
	       lat >= p + FSP_STALL_OUTLIER_MIN_NS;
}

int fsp_stall_detect(const struct fsp_stall_step *s, struct fsp_stall *out, size_t *io_index,
		     size_t max)
{
	struct span *sp = s->nio ? malloc(s->nio * sizeof(*sp)) : NULL;
	struct cands c = { 0 };
	size_t nstall = 0;
	int rc = -1;
	if (s->nio && !sp)
		return -1;
	uint64_t lmax = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nio; i++) {
		if (s->io[i].reap_ns < s->io[i].submit_ns)
			continue; /* clock inversion: nothing to say of it */
		sp[n++] = (struct span){ s->io[i].submit_ns, s->io[i].reap_ns, i };
		if (s->io[i].reap_ns - s->io[i].submit_ns > lmax)
			lmax = s->io[i].reap_ns - s->io[i].submit_ns;
	}
	if (n)
		qsort(sp, n, sizeof(*sp), span_cmp);

	/* stalls: runs of whole, zero, covered buckets */
	uint64_t w = s->width_ns, dur = s->ended_ns > s->started_ns ? s->ended_ns - s->started_ns : 0;
	uint64_t idle = dur > s->busy_ns ? dur - s->busy_ns : 0;
	int no_idle = 2 * idle < w;
	size_t j = 0;
	uint64_t reach = 0; /* the latest reap of the IOs submitted by t */
	uint64_t run_from = 0, run_to = 0;
	int run_n = 0;
	for (size_t k = 0; w && k <= s->nb; k++) {
		int stalled = 0;
		uint64_t t = 0;
		if (k < s->nb) {
			t = s->b[k].t_ns;
			while (j < n && sp[j].a <= t) {
				if (sp[j].b > reach)
					reach = sp[j].b;
				j++;
			}
			int whole = t >= s->started_ns && t + w <= s->ended_ns;
			int covered = reach >= t + w || (!s->all_ios && no_idle);
			stalled = whole && !s->b[k].ios && covered;
		}
		if (stalled && run_n && t == run_to) {
			run_to = t + w;
			run_n++;
			continue;
		}
		if (run_n) { /* a run ends: one stall */
			struct cand x = { .f = { .step = s->step, .kind = FSP_STALL_ZERO,
						 .at_ms = (double)(run_from - s->started_ns) / 1e6,
						 .duration_ms = (double)(run_to - run_from) / 1e6,
						 .zero_buckets = run_n },
					  .from = run_from, .to = run_to };
			size_t best = SIZE_MAX;
			uint64_t from = run_from > lmax ? run_from - lmax : 0;
			size_t lo = 0, hi = n;
			while (lo < hi) { /* the first IO submitted at or after from */
				size_t mid = lo + (hi - lo) / 2;
				if (sp[mid].a < from)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (size_t q = lo; q < n && sp[q].a < run_to; q++)
				if (sp[q].b > run_from) {
					x.f.ios++;
					if (best == SIZE_MAX ||
					    sp[q].b - sp[q].a > s->io[best].reap_ns - s->io[best].submit_ns)
						best = sp[q].i;
				}
			name_io(s, &x, best);
			if (push(&c, &x))
				goto out;
			run_n = 0;
		}
		if (stalled) {
			run_from = t;
			run_to = t + w;
			run_n = 1;
		}
	}
	nstall = c.n;

	/* outliers, in submission order: those overlapping a stall are part of
	 * it; the others merge with the previous group when close to it */
	struct cand g = { 0 };
	uint64_t g_end = 0;
	int have = 0;
	for (size_t q = 0; q < n; q++) {
		const struct fsp_dc_io *io = &s->io[sp[q].i];
		if (!is_outlier(s, io))
			continue;
		int in_stall = 0;
		for (size_t k = 0; k < nstall && !in_stall; k++)
			in_stall = sp[q].a < c.v[k].to && sp[q].b > c.v[k].from;
		if (in_stall)
			continue;
		if (have && sp[q].a <= g_end + FSP_STALL_MERGE_NS) {
			g.f.ios++;
			if (sp[q].b > g_end)
				g_end = sp[q].b;
			if (sp[q].b - sp[q].a > s->io[g.io].reap_ns - s->io[g.io].submit_ns) {
				name_io(s, &g, sp[q].i);
				g.f.duration_ms = g.f.io_us / 1e3;
			}
			continue;
		}
		if (have && push(&c, &g))
			goto out;
		g = (struct cand){ .f = { .step = s->step, .kind = FSP_STALL_OUTLIER,
					  .at_ms = (double)(sp[q].a - s->started_ns) / 1e6,
					  .ios = 1 } };
		name_io(s, &g, sp[q].i);
		g.f.duration_ms = g.f.io_us / 1e3;
		g_end = sp[q].b;
		have = 1;
	}
	if (have && push(&c, &g))
		goto out;

	if (c.n)
		qsort(c.v, c.n, sizeof(*c.v), cand_cmp);
	size_t keep = c.n < FSP_STALL_CAP ? c.n : FSP_STALL_CAP;
	if (keep > max)
		keep = max;
	for (size_t k = 0; k < keep; k++) {
		out[k] = c.v[k].f;
		if (io_index)
			io_index[k] = c.v[k].io;
	}
	if (keep)
		out[keep - 1].more = (int)(c.n - keep);
	rc = (int)keep;
out:
	free(sp);
	free(c.v);
	return rc;
}

void fsp_stall_attribute(struct fsp_stall *f, const struct fsp_dc_parts *p)
{
	uint64_t total = 0, best = 0;
	int part = -1;
	for (unsigned k = 0; k < FSP_DC__COUNT; k++) {
		total += p->ns[k];
		if (p->ns[k] > best) {
			best = p->ns[k];
			part = (int)k;
		}
	}
	f->part = total ? part : -1;
	f->part_share = total ? (double)best / (double)total : 0;
}

/* A duration for a person: 850 us, 2.4 ms, 630 ms. */
static void dur(char *buf, size_t len, double us)
{
	if (us < 1000)
		snprintf(buf, len, "%.0f us", us);
	else if (us < 10000)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else
		snprintf(buf, len, "%.0f ms", us / 1e3);
}

void fsp_stall_text(const struct fsp_stall *s, const char *step_label, char *buf, size_t len)
{
	char head[160], io[32], p999[32], at[32], d[32], tail[192] = "";
	const char *dir = s->write == 1 ? "write" : "read";
	if (step_label && *step_label)
		snprintf(head, sizeof(head), "step %d (%s)", s->step, step_label);
	else
		snprintf(head, sizeof(head), "step %d", s->step);
	dur(io, sizeof(io), s->io_us);
	dur(p999, sizeof(p999), s->p999_us);
	dur(at, sizeof(at), s->at_ms * 1e3);
	dur(d, sizeof(d), s->duration_ms * 1e3);
	char part[96];
	if (s->part >= 0)
		snprintf(part, sizeof(part), "spent %.0f%% in %s", 100 * s->part_share,
			 fsp_dc_part_name((unsigned)s->part));
	else
		snprintf(part, sizeof(part), "no decomposition of it");
	if (s->more)
		snprintf(tail, sizeof(tail), "; %d more finding%s in the step", s->more,
			 s->more == 1 ? "" : "s");
	if (s->kind == FSP_STALL_ZERO) {
		char what[224];
		if (s->write < 0)
			snprintf(what, sizeof(what), "no IO rows to say which IO");
		else
			snprintf(what, sizeof(what), "the longest IO, a %s of %s (of %d in flight), %s",
				 dir, io, s->ios, part);
		snprintf(buf, len, "%s: %s at zero throughput from %s (%d bucket%s); %s%s", head, d,
			 at, s->zero_buckets, s->zero_buckets == 1 ? "" : "s", what, tail);
		return;
	}
	char group[64] = "";
	if (s->ios > 1)
		snprintf(group, sizeof(group), " (the longest of %d within %.0f ms)", s->ios,
			 (double)FSP_STALL_MERGE_NS / 1e6);
	snprintf(buf, len, "%s: a %s of %s at %s%s, %.0fx the step's %s p99.9 of %s, %s%s", head,
		 dir, io, at, group, s->p999_us > 0 ? s->io_us / s->p999_us : 0, dir, p999, part,
		 tail);
}

/*
 * stalls.c - the stalls and outliers of an engine run (stalls.h): per step
 * its window, timeline, IOs and p99.9 per direction (its histograms) are
 * read and judged (src/prism/stall.c); then only the few IOs the findings
 * name are joined with the layers' rows of their own time (the IOs in
 * flight with them, the block requests and a mount's daemon rows of that
 * window), so memory is one step's IO rows and time a few small joins.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "src/db/block_ios.h"
#include "src/db/decomp_rows.h"
#include "src/db/results.h"
#include "src/prism/decomp.h"
#include "src/prism/stall.h"
#include "src/cli/stats.h"
#include "src/cli/stalls.h"
#include "src/base/grow.h"

struct sstep {
	int step;
	char *label;
	uint64_t started_ns, ended_ns, busy_ns;
	struct fsp_stall_bucket *b;
	size_t nb, cap;
};

struct walk {
	struct sstep *v;
	size_t n, cap;
	int failed;
};

static int step_row(void *arg, const struct fsp_step_row *r)
{
	struct walk *w = arg;
	if (fsp_grow((void **)&w->v, &w->cap, w->n + 1, sizeof(*w->v), 16)) {
		w->failed = 1;
		return 1;
	}
	w->v[w->n++] = (struct sstep){ .step = r->step,
				       .label = r->label ? strdup(r->label) : NULL,
				       .started_ns = r->started_ns, .ended_ns = r->ended_ns,
				       .busy_ns = r->busy_ns };
	return 0;
}

static int timeline_row(void *arg, int step, const struct fsp_timeline_row *t)
{
	struct walk *w = arg;
	struct sstep *s = NULL;
	for (size_t i = 0; i < w->n && !s; i++) /* steps are few */
		if (w->v[i].step == step)
			s = &w->v[i];
	if (!s)
		return 0;
	if (fsp_grow((void **)&s->b, &s->cap, s->nb + 1, sizeof(*s->b), 64)) {
		w->failed = 1;
		return 1;
	}
	s->b[s->nb++] = (struct fsp_stall_bucket){ t->t_ns, t->read_ios + t->write_ios };
	return 0;
}

static void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].label);
		free(w->v[i].b);
	}
	free(w->v);
}

/* The bucket width: the run's timeline parameter, else the smallest step
 * between two buckets of a step. */
static uint64_t bucket_width(struct fsp_store *st, int64_t run, const struct walk *w)
{
	char *v = fsp_store_attr(st, run, "param.timeline");
	uint64_t ns = 0;
	if (!v || fsp_parse_duration(v, &ns))
		ns = 0;
	free(v);
	for (size_t i = 0; !ns && i < w->n; i++)
		for (size_t k = 1; k < w->v[i].nb; k++) {
			uint64_t d = w->v[i].b[k].t_ns - w->v[i].b[k - 1].t_ns;
			if (d && (!ns || d < ns))
				ns = d;
		}
	return ns;
}

/* What the joins of the run share: the kind of target and the rows that
 * are read once (a mount's FUSE requests). */
struct djoin {
	int ok; /* 0: no decomposition (not traced) */
	struct fsp_dc_in in;
	int64_t run, mount_run, blk_run;
	uint64_t base;
	fsp_dc_fuses fuse;
};

static void djoin_init(struct fsp_store *st, int64_t run, int64_t mount_run, struct djoin *d)
{
	memset(d, 0, sizeof(*d));
	d->run = run;
	d->mount_run = mount_run;
	char *kind = fsp_store_attr(st, run, "target_kind");
	d->in.kind = mount_run ? FSP_DC_MOUNT : kind && !strcmp(kind, "raw") ? FSP_DC_RAW
									 : FSP_DC_FILE;
	free(kind);
	/* as stats_layers.c: a mount's backing IO from its own trace when it has one */
	d->blk_run = mount_run && fsp_block_ios_any(st, mount_run) == 1 ? mount_run : run;
	struct fsp_block_summary bs;
	fsp_block_ios_summary(st, d->blk_run, &bs);
	const char *b = strchr(bs.devices, '[');
	d->base = b ? strtoull(b + 1, NULL, 10) * 512 : 0;
	d->in.map.base = d->base;
	if (d->in.kind != FSP_DC_MOUNT && bs.traced != 1)
		return;
	if (d->in.kind == FSP_DC_MOUNT) {
		int have;
		char err[128];
		if (fsp_decomp_read_fuse(st, mount_run, &d->fuse, &have, err, sizeof(err)))
			memset(&d->fuse, 0, sizeof(d->fuse));
		d->in.fuse = d->fuse.n ? d->fuse.v : NULL;
		d->in.nfuse = d->fuse.n;
	}
	d->ok = 1;
}

struct pick {
	size_t want;
	struct fsp_dc_parts parts;
	int got;
};

static void pick_emit(void *arg, size_t i, const struct fsp_dc_parts *p)
{
	struct pick *k = arg;
	if (i == k->want) {
		k->parts = *p;
		k->got = 1;
	}
}

/* The parts of ios[want], joined with the IOs in flight with it and the
 * rows of their window. 1 found, 0 not (no rows), -1 error. */
static int decompose_one(struct fsp_store *st, struct djoin *d, int step, const fsp_dc_ios *ios,
			 size_t want, const fsp_dc_extents *ext, struct fsp_dc_parts *parts,
			 char *err, size_t errlen)
{
	const struct fsp_dc_io *me = &ios->v[want];
	size_t n = 0;
	for (size_t i = 0; i < ios->n; i++)
		if (ios->v[i].submit_ns < me->reap_ns && ios->v[i].reap_ns > me->submit_ns)
			n++;
	struct fsp_dc_io *sub = malloc(n * sizeof(*sub));
	if (!sub) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct pick k = { 0 };
	uint64_t from = me->submit_ns, to = me->reap_ns;
	n = 0;
	for (size_t i = 0; i < ios->n; i++)
		if (ios->v[i].submit_ns < me->reap_ns && ios->v[i].reap_ns > me->submit_ns) {
			if (i == want)
				k.want = n;
			sub[n++] = ios->v[i];
			if (ios->v[i].submit_ns < from)
				from = ios->v[i].submit_ns;
			if (ios->v[i].reap_ns > to)
				to = ios->v[i].reap_ns;
		}
	fsp_dc_blocks blk = { 0 };
	fsp_dc_daemons dmn = { 0 };
	int rc = -1;
	/* a request made just before an IO's submission can still serve it
	 * (merged into): 10 ms before the window */
	uint64_t early = from > 10000000ull ? from - 10000000ull : 0;
	if (fsp_decomp_read_blocks_window(st, d->blk_run, early, to, &blk, err, errlen))
		goto out;
	if (d->in.kind == FSP_DC_MOUNT) {
		int cols;
		if (fsp_decomp_read_daemon(st, d->mount_run, from, to, &dmn, &cols, err, errlen))
			goto out;
	}
	struct fsp_dc_in in = d->in;
	in.io = sub;
	in.nio = n;
	in.blk = blk.v;
	in.nblk = blk.n;
	in.map.ext = ext->n ? ext->v : NULL;
	in.map.n = ext->n;
	if (in.kind == FSP_DC_MOUNT)
		in.map.base = ext->n ? d->base : UINT64_MAX;
	in.dmn = dmn.v;
	in.ndmn = dmn.n;
	if (fsp_dc_join(&in, pick_emit, &k)) {
		snprintf(err, errlen, "out of memory joining step %d", step);
		goto out;
	}
	*parts = k.parts;
	rc = k.got;
out:
	free(sub);
	free(blk.v);
	free(dmn.v);
	return rc;
}

/* The p99.9 of op in the step from its histogram, else 0. */
static uint64_t p999_of(struct fsp_store *st, int64_t run, int step, int op, struct fsp_hist *h)
{
	uint64_t bytes, errors;
	if (fsp_store_load_hist(st, run, step, op, FSP_LAYER_TOTAL, h, &bytes, &errors) != 1 ||
	    !h->count)
		return 0;
	return fsp_hist_quantile(h, 0.999);
}

static int add_found(struct fsp_stall **v, size_t *n, size_t *cap, const struct fsp_stall *f)
{
	if (fsp_grow((void **)v, cap, *n + 1, sizeof(**v), 16))
		return -1;
	(*v)[(*n)++] = *f;
	return 0;
}

/* fsp_stalls_find, keeping the steps read in w (their labels, for the text). */
static int find(struct fsp_store *st, int64_t run, int64_t mount_run, struct walk *w,
		struct fsp_stall **out, size_t *nout, char *err, size_t errlen)
{
	struct fsp_run_row hdr;
	int found = fsp_store_load_run(st, run, &hdr);
	int is_run = found == 1 && hdr.kind && !strcmp(hdr.kind, "run");
	int all = hdr.record_mode && !strcmp(hdr.record_mode, "full");
	fsp_run_row_free(&hdr);
	*out = NULL;
	*nout = 0;
	if (found < 0) {
		snprintf(err, errlen, "cannot read run %" PRId64, run);
		return -1;
	}
	if (!is_run)
		return 0;
	if (!mount_run)
		mount_run = fsp_block_ios_fuse_run(st, run);
	if (mount_run < 0 || mount_run == run)
		mount_run = 0;
	if (fsp_store_each_step(st, run, step_row, w) || w->failed ||
	    fsp_store_each_timeline(st, run, timeline_row, w) || w->failed) {
		snprintf(err, errlen, "cannot read the steps of run %" PRId64, run);
		return -1;
	}
	uint64_t width = bucket_width(st, run, w);
	struct fsp_hist *h = malloc(sizeof(*h));
	struct djoin d;
	djoin_init(st, run, mount_run, &d);
	size_t cap = 0;
	int rc = h ? 0 : -1;
	if (!h)
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; i < w->n && !rc; i++) {
		struct sstep *ss = &w->v[i];
		fsp_dc_ios ios = { 0 };
		fsp_dc_extents ext = { 0 };
		if (fsp_decomp_read_ios(st, run, ss->step, &ios, err, errlen)) {
			rc = -1;
			break;
		}
		struct fsp_stall_step s = {
			.step = ss->step, .started_ns = ss->started_ns, .ended_ns = ss->ended_ns,
			.busy_ns = ss->busy_ns, .width_ns = width, .b = ss->b, .nb = ss->nb,
			.io = ios.v, .nio = ios.n, .all_ios = all && ios.n,
			.p999_ns = { p999_of(st, run, ss->step, FSP_OP_READ, h),
				     p999_of(st, run, ss->step, FSP_OP_WRITE, h) },
		};
		struct fsp_stall f[FSP_STALL_CAP];
		size_t idx[FSP_STALL_CAP];
		int nf = fsp_stall_detect(&s, f, idx, FSP_STALL_CAP);
		if (nf < 0) {
			snprintf(err, errlen, "out of memory in step %d", ss->step);
			rc = -1;
		}
		if (nf > 0 && d.ok && fsp_decomp_read_extents(st, run, ss->step, &ext, err, errlen))
			rc = -1;
		for (int k = 0; k < nf && !rc; k++) {
			struct fsp_dc_parts p;
			int got = 0;
			if (d.ok && idx[k] != SIZE_MAX)
				got = decompose_one(st, &d, ss->step, &ios, idx[k], &ext, &p, err,
						    errlen);
			if (got < 0)
				rc = -1;
			else if (got)
				fsp_stall_attribute(&f[k], &p);
			if (!rc && add_found(out, nout, &cap, &f[k])) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
			}
		}
		free(ios.v);
		free(ext.v);
	}
	free(h);
	free(d.fuse.v);
	if (rc) {
		free(*out);
		*out = NULL;
		*nout = 0;
	}
	return rc;
}

int fsp_stalls_find(struct fsp_store *st, int64_t run, int64_t mount_run,
		    struct fsp_stall **out, size_t *n, char *err, size_t errlen)
{
	struct walk w = { 0 };
	int rc = find(st, run, mount_run, &w, out, n, err, errlen);
	walk_free(&w);
	return rc;
}

static const char *label_of(const struct walk *w, int step)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].step == step)
			return w->v[i].label;
	return NULL;
}

int fsp_stats_stalls(struct fsp_store *st, int64_t run, const char *format, FILE *out)
{
	if (!strcmp(format, "csv"))
		return 0;
	struct walk w = { 0 };
	struct fsp_stall *f;
	size_t n;
	char err[256];
	int rc = find(st, run, 0, &w, &f, &n, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "fsprism stats: stalls: %s\n", err);
		walk_free(&w);
		return -1;
	}
	if (!w.n) { /* not an engine run */
		walk_free(&w);
		return 0;
	}
	if (!strcmp(format, "json")) {
		fputs(",\n  \"stalls\": [", out);
		for (size_t i = 0; i < n; i++) {
			const struct fsp_stall *s = &f[i];
			fprintf(out, "%s\n    {\"step\": %d, \"kind\": \"%s\", \"at_ms\": ",
				i ? "," : "", s->step, s->kind == FSP_STALL_ZERO ? "zero" : "outlier");
			fsp_json_num(out, s->at_ms);
			fputs(", \"duration_ms\": ", out);
			fsp_json_num(out, s->duration_ms);
			fprintf(out, ", \"zero_buckets\": %d, \"ios\": %d, \"io_us\": ",
				s->zero_buckets, s->ios);
			fsp_json_num(out, s->io_us);
			fprintf(out, ", \"op\": %s, \"part\": ",
				s->write < 0 ? "null" : s->write ? "\"write\"" : "\"read\"");
			if (s->part < 0)
				fputs("null", out);
			else
				fsp_json_str(out, fsp_dc_part_name((unsigned)s->part));
			fputs(", \"part_share\": ", out);
			fsp_json_num(out, s->part_share);
			fputs(", \"p999_us\": ", out);
			fsp_json_num(out, s->p999_us);
			fprintf(out, ", \"more\": %d}", s->more);
		}
		fputs(n ? "\n  ]" : "]", out);
	} else if (!n) {
		fputs("\nstalls and outliers: none\n", out);
	} else {
		fputs("\nStalls and outliers (docs/prism.md):\n", out);
		for (size_t i = 0; i < n; i++) {
			char line[512];
			fsp_stall_text(&f[i], label_of(&w, f[i].step), line, sizeof(line));
			fprintf(out, "  %s\n", line);
		}
	}
	free(f);
	walk_free(&w);
	return 0;
}

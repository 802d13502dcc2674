/*
 * diagnose.c - `fsprism diagnose DB [--run N] [--format table|json]`: the
 * verdicts of one compare run (docs/diagnose.md). This file reads the
 * evidence out of the database into the structs of src/prism/diagnose.h
 * (every round of every target: steps, histograms, block rows, the
 * emulation's device rows, the mounts' FUSE rows, the replays of a target's
 * device pattern) and prints what the rules there decide. compare prints
 * the same after its table (fsp_diagnose_print).
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/cli/cli.h"
#include "src/cli/compare.h"
#include "src/cli/diagnose.h"
#include "src/cli/diagnose_int.h"
#include "src/cli/opt.h"
#include "src/cli/stats.h"
#include "src/cli/stats_layers.h"
#include "src/cli/stalls.h"
#include "src/db/block_ios.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/prism/diagnose.h"
#include "src/prism/pattern.h"

const char *const fsp_dx_label[FSP_DX__TARGETS] = { "raw", "fs", "fsprism", "emu" };

const char *fsp_dx_tname(const struct dx_run *d, int t)
{
	return t == FSP_DX_FS && d->fs[0] ? d->fs : fsp_dx_label[t];
}

/* ---- the device view -------------------------------------------------------
 * One step's device IO as block requests: the traced block rows (the engine
 * run's for raw and fs, the mount's own trace of its device for fsprism and
 * emu: the backing file system's, the store's), or, where the mount was not
 * traced, the emulation's rows of its store IO (dev_* ops) taken as
 * requests (the passthrough has none: no view). The sequential share and streams of the
 * reads and of the writes, and the recency, are the access pattern's
 * (src/prism/pattern.c, docs/tracing.md), one definition for every view.
 */
struct devview {
	struct fsp_block_io *rows;
	size_t n, cap;
	int failed;
};

static void dev_push(struct devview *v, unsigned op, uint64_t off, uint64_t len,
		     uint64_t start_ns, uint64_t ns)
{
	if (v->n == v->cap) {
		size_t c = v->cap ? 2 * v->cap : 1024;
		struct fsp_block_io *p = realloc(v->rows, c * sizeof(*p));
		if (!p) {
			v->failed = 1;
			return;
		}
		v->rows = p;
		v->cap = c;
	}
	v->rows[v->n++] = (struct fsp_block_io){ .queue_ns = start_ns, .issue_ns = start_ns,
						 .complete_ns = start_ns + ns, .sector = off / 512,
						 .bytes = (uint32_t)len, .op = (uint16_t)op };
}

struct devsum {
	uint64_t ios, bytes, recent_reads, flushes;
	uint64_t dev_ns, flush_ns;
	/* per direction (FSP_DX_READS, FSP_DX_WRITES): the pattern's IOs, of
	 * them continuing a stream, continuing the request just before; its
	 * streams (0: fewer IOs than a window) */
	uint64_t dir_ios[FSP_DX__DIRS], seq[FSP_DX__DIRS], next[FSP_DX__DIRS];
	double streams[FSP_DX__DIRS];
};

/* The numbers diagnose judges, of one step's rows in issue order. */
static int dev_summary(struct fsp_block_io *rows, size_t n, struct devsum *d)
{
	memset(d, 0, sizeof *d);
	uint64_t last_end = 0; /* of the request just before, + 1 */
	for (size_t i = 0; i < n; i++) {
		struct fsp_block_io *r = &rows[i];
		uint64_t ns = r->complete_ns > r->issue_ns ? r->complete_ns - r->issue_ns : 0;
		r->step = 0; /* one step: the pattern's step 0 */
		if (r->error)
			continue;
		if (r->op == FSP_BLOCK_FLUSH) {
			d->flushes++;
			d->flush_ns += ns;
			continue;
		}
		if (r->op != FSP_BLOCK_READ && r->op != FSP_BLOCK_WRITE)
			continue;
		if (r->op == FSP_BLOCK_WRITE && (r->flags & FSP_BLOCK_F_FUA))
			d->flushes++; /* a FUA write: the write and a flush */
		d->ios++;
		d->bytes += r->bytes;
		d->dev_ns += ns;
		if (last_end == r->sector + 1) /* continues the request just before */
			d->next[r->op == FSP_BLOCK_READ ? FSP_DX_READS : FSP_DX_WRITES]++;
		last_end = r->sector + r->bytes / 512 + 1;
	}
	struct fsp_pattern *p = NULL;
	size_t np = 0;
	if (fsp_pattern_compute(rows, n, &p, &np))
		return -1;
	static const int pat_dir[FSP_DX__DIRS] = { FSP_PAT_READ, FSP_PAT_WRITE };
	for (int dir = 0; dir < FSP_DX__DIRS && np; dir++) {
		const struct fsp_seq *q = &p[0].seq[pat_dir[dir]];
		d->dir_ios[dir] = q->ios;
		d->seq[dir] = q->seq_ios;
		d->streams[dir] = (double)fsp_seq_streams_x1000(q) / 1000.0;
	}
	if (np) {
		d->recent_reads = p[0].recency[FSP_REC_1MS] + p[0].recency[FSP_REC_10MS] +
				  p[0].recency[FSP_REC_100MS];
	}
	free(p);
	return 0;
}

/* The FUSE requests and the emulation's device rows of one step window. */
struct window_acc {
	struct devview *dev; /* NULL: the mount's trace gives the device view */
	uint64_t fuse_reqs, fuse_total, fuse_backing, fuse_layer, fuse_emu, fuse_inject;
};

static int window_row(void *arg, const struct fsp_op_row *r)
{
	struct window_acc *w = arg;
	if (r->op == FSP_OP_READ || r->op == FSP_OP_WRITE) {
		w->fuse_reqs++;
		w->fuse_total += r->total_ns;
		w->fuse_backing += r->backing_ns;
		w->fuse_layer += r->layer_ns;
		w->fuse_emu += r->emu_ns;
		w->fuse_inject += r->inject_ns;
	} else if (!w->dev) {
		return 0;
	} else if (r->op == FSP_OP_DEV_READ) {
		dev_push(w->dev, FSP_BLOCK_READ, r->offset, r->length, r->start_ns, r->total_ns);
	} else if (r->op == FSP_OP_DEV_FLUSH) {
		dev_push(w->dev, FSP_BLOCK_FLUSH, 0, 0, r->start_ns, r->total_ns);
	} else if (r->op >= FSP_OP_DEV_WRITE_DATA && r->op <= FSP_OP_DEV_WRITE_CKPT) {
		dev_push(w->dev, FSP_BLOCK_WRITE, r->offset, r->length, r->start_ns, r->total_ns);
	}
	return 0;
}

/* ---- reading the evidence ---------------------------------------------------- */

struct step_load {
	struct fsp_store *st;
	struct dx_run *d;
	int t, round;
	int64_t run, mount;
	struct fsp_hist *h;
	int mount_traced; /* the mount's trace of its device (store, backing) has rows */
	int replay; /* loading a replay run: its MB/s only */
	int replay_depth; /* ... and its steps' qd is the depth it reached (replay.qd_max) */
	const struct fsp_layer_means *lm; /* the run's layers per IO, by step */
	size_t nlm;
};

/* The kernel's side of a FUSE request, measured per IO (docs/prism.md):
 * submit to the send, the FUSE queue, libfuse's dispatch, the reply and the
 * completion; -1 where the run has no measured transport for the step. */
static double measured_transport_us(const struct step_load *l, int step, double *q50,
				    double *q99)
{
	static const unsigned parts[] = { FSP_DC_SUBMIT, FSP_DC_FUSE_QUEUE, FSP_DC_DAEMON_RECV,
					  FSP_DC_FUSE_REPLY, FSP_DC_COMPLETE };
	for (size_t i = 0; i < l->nlm; i++) {
		if (l->lm[i].step != step || !l->lm[i].fuse)
			continue;
		double ns = 0;
		for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
			ns += l->lm[i].mean_ns[parts[k]];
		*q50 = l->lm[i].p50_ns[FSP_DC_FUSE_QUEUE] / 1000.0;
		*q99 = l->lm[i].p99_ns[FSP_DC_FUSE_QUEUE] / 1000.0;
		return ns / 1000.0;
	}
	return -1;
}

/* One round's layer split of a step into e, summed by owner class (the
 * main direction's IOs around the median and in the tail). */
static void split_add(const struct step_load *l, int step, struct fsp_dx_step *e, int *n)
{
	for (size_t i = 0; i < l->nlm; i++) {
		const struct fsp_layer_means *m = &l->lm[i];
		if (m->step != step || !m->mid_n || !m->tail_n)
			continue;
		for (unsigned p = 0; p < FSP_DC__COUNT; p++) {
			enum fsp_dx_owner c = fsp_answer_part_owner(p, (enum fsp_dx_target)l->t);
			e->mid_us[c] += m->mid_ns[p] / 1000.0;
			e->tail_us[c] += m->tail_ns[p] / 1000.0;
		}
		e->have_split = 1;
		(*n)++;
		return;
	}
}

/* A rate.step.STEP.NAME attribute of the run; -1 when absent. */
static double rate_attr(const struct step_load *l, int step, const char *name)
{
	char key[96];
	snprintf(key, sizeof key, "rate.step.%d.%s", step, name);
	char *v = fsp_store_attr(l->st, l->run, key);
	double x = v ? strtod(v, NULL) : -1;
	free(v);
	return x;
}

/* One round of a load curve's step i: its IOPS (run's rate.step.N.*
 * attributes) and its layer split's mean per IO by part, both directions. */
static void curve_add(const struct step_load *l, int step, int i)
{
	struct dx_run *d = l->d;
	double iops = rate_attr(l, step, "achieved_iops");
	if (iops < 0)
		return;
	double asked = rate_attr(l, step, "asked_iops");
	d->iops[l->t][i] += iops;
	d->asked[l->t][i] += asked > 0 ? asked : 0;
	d->iops_n[l->t][i]++;
	for (size_t k = 0; k < l->nlm; k++) {
		if (l->lm[k].step != step || !l->lm[k].ios)
			continue;
		for (unsigned p = 0; p < FSP_DC__COUNT; p++)
			d->part_us[l->t][i][p] += l->lm[k].mean_ns[p] / 1000.0;
		d->curve_split_n[l->t][i]++;
		break;
	}
}

static int step_index(struct dx_run *d, const struct fsp_step_row *r)
{
	for (int i = 0; i < d->nsteps; i++)
		if (d->steps[i].step == r->step)
			return i;
	if (d->nsteps == MAX_STEPS)
		return -1;
	struct step_info *s = &d->steps[d->nsteps];
	s->step = r->step;
	snprintf(s->label, sizeof s->label, "%s", r->label ? r->label : "");
	return d->nsteps++;
}

/* quantile (µs) and sum/count of op in one step; 0 if none */
static uint64_t op_hist(struct step_load *l, int step, int op, double q, double *qus,
			uint64_t *sum)
{
	uint64_t bytes, errors;
	*qus = 0;
	*sum = 0;
	if (fsp_store_load_hist(l->st, l->run, step, op, FSP_LAYER_TOTAL, l->h, &bytes,
				&errors) != 1 || !l->h->count)
		return 0;
	*qus = (double)fsp_hist_quantile(l->h, q) / 1000.0;
	*sum = l->h->sum;
	return l->h->count;
}

static int load_step(void *arg, const struct fsp_step_row *r)
{
	struct step_load *l = arg;
	struct dx_run *d = l->d;
	int i = step_index(d, r);
	if (i < 0)
		return 0;
	struct fsp_dx_step *e = &d->ev[l->t][i];
	int k = l->round;
	double busy = (double)r->busy_ns / 1e9;
	double mbps = busy > 0 ? (double)(r->read_bytes + r->write_bytes) / 1e6 / busy : 0;
	if (l->replay) {
		/* the original step's user bytes in the replay's time: what the
		 * application would have seen, had the device been all */
		e->have_replay = 1;
		e->replay_mbps[k] = busy > 0 ? d->user_bytes[l->t][i][k] / 1e6 / busy : 0;
		if (k + 1 > e->replay_rounds)
			e->replay_rounds = k + 1;
		if (l->replay_depth && r->qd > e->replay_qd_max)
			e->replay_qd_max = (int)r->qd;
		return 0;
	}
	e->present = 1;
	e->read_pct = (int)r->read_pct;
	e->qd = (int)r->qd;
	e->seq = r->access && !strcmp(r->access, "seq");
	e->block_size = (long)r->block_size;
	if (k + 1 > e->nrounds)
		e->nrounds = k + 1;
	e->mbps[k] = mbps;
	d->user_bytes[l->t][i][k] = (double)(r->read_bytes + r->write_bytes);
	curve_add(l, r->step, i);
	int main_op = r->read_pct >= 50 ? FSP_OP_READ : FSP_OP_WRITE;
	double p50, p99, unused;
	uint64_t sum_r, sum_w, sum;
	op_hist(l, r->step, main_op, 0.50, &p50, &sum);
	op_hist(l, r->step, main_op, 0.99, &p99, &sum);
	e->p50[k] = p50;
	e->p99[k] = p99;
	uint64_t nr = op_hist(l, r->step, FSP_OP_READ, 0.5, &unused, &sum_r);
	uint64_t nw = op_hist(l, r->step, FSP_OP_WRITE, 0.5, &unused, &sum_w);
	uint64_t user_ios = nr + nw;
	if (!user_ios)
		return 0;
	double lat = (double)(sum_r + sum_w) / (double)user_ios / 1000.0;
	e->lat_us += lat;
	d->lat_n[l->t][i]++;
	double user_bytes = (double)(r->read_bytes + r->write_bytes);

	/* the device view of this round */
	struct devview dv = { 0 };
	struct window_acc w = { .dev = l->mount_traced ? NULL : &dv };
	char err[256];
	if (l->t == FSP_DX_RAW || l->t == FSP_DX_FS) {
		if (fsp_block_ios_load(l->st, l->run, r->step, 0, 0, &dv.rows, &dv.n, err,
				       sizeof err))
			dv.failed = 1;
	} else if (l->mount) {
		fsp_store_each_op_in_window(l->st, l->mount, (int64_t)r->started_ns,
					    (int64_t)r->ended_ns, window_row, &w);
		/* the mount's own trace of its device: the emulation's
		 * store, the passthrough's backing file system */
		if (l->mount_traced &&
		    fsp_block_ios_load(l->st, l->mount, -1, (int64_t)r->started_ns,
				       (int64_t)r->ended_ns, &dv.rows, &dv.n, err, sizeof err))
			dv.failed = 1;
	}
	struct devsum ds, *p = &ds;
	int ok = !dv.failed && dev_summary(dv.rows, dv.n, &ds) == 0;
	free(dv.rows);
	if (!ok) {
		fprintf(stderr, "fsprism diagnose: cannot read the device IO of run %" PRId64
			" step %d\n", l->run, r->step);
		return -1;
	}
	if (p->ios) {
		double n = (double)user_ios;
		e->have_dev = 1;
		e->dev_per_io += (double)p->ios / n;
		e->dev_bytes += (double)p->bytes / (double)p->ios;
		e->amp += user_bytes > 0 ? (double)p->bytes / user_bytes : 0;
		e->flush_per_io += (double)p->flushes / n;
		e->dev_us += (double)(p->dev_ns + p->flush_ns) / n / 1000.0;
		e->flush_us += (double)p->flush_ns / n / 1000.0;
		d->dev_n[l->t][i]++;
		for (int dir = 0; dir < FSP_DX__DIRS; dir++) {
			double ios = (double)p->dir_ios[dir];
			if (!ios)
				continue;
			e->dev_seq[dir] += (double)p->seq[dir] / ios;
			e->dev_next[dir] += (double)p->next[dir] / ios;
			d->seq_n[dir][l->t][i]++;
			if (p->streams[dir] > 0) {
				e->dev_streams[dir] += p->streams[dir];
				d->streams_n[dir][l->t][i]++;
			}
		}
		if (p->dir_ios[FSP_DX_READS]) {
			e->recent_reads += (double)p->recent_reads /
					   (double)p->dir_ios[FSP_DX_READS];
			d->recent_n[l->t][i]++;
		}
	}
	split_add(l, r->step, e, &d->split_n[l->t][i]);
	if (w.fuse_reqs) {
		double n = (double)user_ios;
		double total = (double)w.fuse_total / n / 1000.0;
		e->have_fuse = 1;
		e->fuse_req_per_io += (double)w.fuse_reqs / n;
		/* measured where the FUSE transport was traced; else the
		 * difference of means, engine latency - handler total */
		double q50 = 0, q99 = 0;
		double tr = measured_transport_us(l, r->step, &q50, &q99);
		if (tr >= 0) {
			e->transport_measured = 1;
			e->fuse_queue_p50_us += q50;
			e->fuse_queue_p99_us += q99;
		}
		e->transport_us += tr >= 0 ? tr : lat > total ? lat - total : 0;
		e->daemon_us += (double)w.fuse_layer / n / 1000.0;
		e->emu_us += (double)w.fuse_emu / n / 1000.0;
		e->backing_us += (double)w.fuse_backing / n / 1000.0;
		e->inject_us += (double)w.fuse_inject / n / 1000.0;
		d->fuse_n[l->t][i]++;
	}
	return 0;
}

/* The sums of the rounds into means. */
static void finish_means(struct dx_run *d)
{
	for (int t = 0; t < FSP_DX__TARGETS; t++)
		for (int i = 0; i < d->nsteps; i++) {
			struct fsp_dx_step *e = &d->ev[t][i];
			int n = d->lat_n[t][i], dn = d->dev_n[t][i], fn = d->fuse_n[t][i];
			e->lat_us = n ? e->lat_us / n : -1;
			if (dn) {
				e->dev_per_io /= dn;
				e->dev_bytes /= dn;
				e->amp /= dn;
				e->flush_per_io /= dn;
				e->dev_us /= dn;
				e->flush_us /= dn;
			}
			for (int dir = 0; dir < FSP_DX__DIRS; dir++) {
				int sn = d->seq_n[dir][t][i], stn = d->streams_n[dir][t][i];
				e->dev_seq[dir] = sn ? e->dev_seq[dir] / sn : -1;
				e->dev_next[dir] = sn ? e->dev_next[dir] / sn : -1;
				e->dev_streams[dir] = stn ? e->dev_streams[dir] / stn : -1;
			}
			e->recent_reads = d->recent_n[t][i] ? e->recent_reads / d->recent_n[t][i] : -1;
			for (int c = 0; c < FSP_DX__OWNERS && d->split_n[t][i]; c++) {
				e->mid_us[c] /= d->split_n[t][i];
				e->tail_us[c] /= d->split_n[t][i];
			}
			if (d->iops_n[t][i]) {
				d->iops[t][i] /= d->iops_n[t][i];
				d->asked[t][i] /= d->iops_n[t][i];
			}
			for (unsigned p = 0; p < FSP_DC__COUNT && d->curve_split_n[t][i]; p++)
				d->part_us[t][i][p] /= d->curve_split_n[t][i];
			if (fn) {
				e->fuse_req_per_io /= fn;
				e->transport_us /= fn;
				e->fuse_queue_p50_us /= fn;
				e->fuse_queue_p99_us /= fn;
				e->daemon_us /= fn;
				e->emu_us /= fn;
				e->backing_us /= fn;
				e->inject_us /= fn;
			}
		}
}

/* A child run's round: its attribute `round`, else its place k among its
 * label's runs (a compare from before rounds); -1 beyond what is kept. */
static int run_round(struct fsp_store *st, int64_t run, int k)
{
	char *v = fsp_store_attr(st, run, "round");
	int r = v ? atoi(v) : k;
	free(v);
	return r >= 0 && r < FSP_DX_MAX_ROUNDS ? r : -1;
}

/* The stalls and outliers of one target's run in round r, added to d. */
static int load_stalls(struct fsp_store *st, struct dx_run *d, int t, int r, int64_t run,
		       int64_t mount)
{
	struct fsp_stall *f = NULL;
	size_t n = 0;
	char err[256];
	if (fsp_stalls_find(st, run, mount, &f, &n, err, sizeof err)) {
		fprintf(stderr, "fsprism diagnose: stalls of run %" PRId64 ": %s\n", run, err);
		return -1;
	}
	struct dx_stall *v = n ? realloc(d->stalls, (d->nstalls + n) * sizeof *v) : d->stalls;
	if (n && !v) {
		free(f);
		return -1;
	}
	d->stalls = v;
	for (size_t i = 0; i < n; i++)
		d->stalls[d->nstalls++] = (struct dx_stall){ .t = t, .round = r, .run = run,
							     .s = f[i] };
	free(f);
	return 0;
}

static int load(struct fsp_store *st, int64_t cmp_run, struct dx_run *d)
{
	memset(d, 0, sizeof *d);
	d->cmp_run = cmp_run;
	char *fs = fsp_store_attr(st, cmp_run, "fs");
	snprintf(d->fs, sizeof d->fs, "%s", fs ? fs : "");
	free(fs);
	struct fsp_hist *h = malloc(sizeof *h);
	if (!h)
		return -1;
	int rc = 0;
	for (int t = 0; t < FSP_DX__TARGETS && !rc; t++) {
		char label[32];
		d->nruns[t] = fsp_store_child_runs(st, cmp_run, "run", fsp_dx_label[t], d->runs[t],
						   FSP_DX_MAX_ROUNDS);
		snprintf(label, sizeof label, "%s-fuse", fsp_dx_label[t]);
		d->nmounts[t] = fsp_store_child_runs(st, cmp_run, "mount", label, d->mounts[t],
						     FSP_DX_MAX_ROUNDS);
		snprintf(label, sizeof label, "replay-%s", fsp_dx_label[t]);
		d->nreplays[t] = fsp_store_child_runs(st, cmp_run, "run", label, d->replays[t],
						      FSP_DX_MAX_ROUNDS);
		if (d->nruns[t] < 0 || d->nmounts[t] < 0 || d->nreplays[t] < 0) {
			rc = -1;
			break;
		}
		/* rounds by their attribute, so that a round missing on one
		 * target (or a mount not adopted) pairs nothing wrongly */
		int64_t mount_of[FSP_DX_MAX_ROUNDS] = { 0 };
		for (int k = 0; k < d->nmounts[t]; k++) {
			int r = run_round(st, d->mounts[t][k], k);
			if (r >= 0)
				mount_of[r] = d->mounts[t][k];
		}
		for (int k = 0; k < d->nruns[t]; k++) {
			int r = run_round(st, d->runs[t][k], k);
			if (r < 0)
				continue;
			if (r + 1 > d->rounds)
				d->rounds = r + 1;
			struct step_load l = { .st = st, .d = d, .t = t, .round = r,
					       .run = d->runs[t][k], .h = h,
					       .mount = mount_of[r] };
			l.mount_traced = mount_of[r] && fsp_block_ios_any(st, mount_of[r]) == 1;
			struct fsp_layer_means *lm = NULL;
			char err[256];
			/* every target's layer split: the owner's median and tail
			 * (src/prism/answer.h), and a mount's measured transport */
			if (fsp_layers_means(st, l.run, mount_of[r], &lm, &l.nlm, err,
					     sizeof err)) {
				fprintf(stderr, "fsprism diagnose: layers per IO of run %" PRId64
					": %s\n", l.run, err);
				rc = -1;
			}
			l.lm = lm;
			if (fsp_store_each_step(st, l.run, load_step, &l))
				rc = -1;
			free(lm);
			if (load_stalls(st, d, t, r, l.run, mount_of[r]))
				rc = -1;
		}
		for (int k = 0; k < d->nreplays[t]; k++) {
			int r = run_round(st, d->replays[t][k], k);
			if (r < 0)
				continue;
			struct step_load l = { .st = st, .d = d, .t = t, .round = r,
					       .run = d->replays[t][k], .h = h,
					       .replay = 1 };
			/* a serial replay of older versions kept the engine's qd */
			char *qd = fsp_store_attr(st, l.run, "replay.qd_max");
			l.replay_depth = qd != NULL;
			free(qd);
			if (fsp_store_each_step(st, l.run, load_step, &l))
				rc = -1;
		}
	}
	finish_means(d);
	/* a load curve: every step a rate step or the maximum */
	d->curve = d->nsteps > 1;
	for (int i = 0; i < d->nsteps; i++)
		d->curve &= strstr(d->steps[i].label, "rate=") != NULL;
	free(h);
	return rc;
}

/* ---- the verdicts --------------------------------------------------------------- */

int fsp_dx_present(const struct dx_run *d, int t)
{
	return d->nruns[t] > 0;
}

/* Each pair's headline over its steps (src/prism/answer.h). */
static void headlines(const struct dx_run *d, struct dx_result *res)
{
	int prev = -1;
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!fsp_dx_present(d, t))
			continue;
		if (prev >= 0) {
			struct fsp_answer_step s[MAX_STEPS];
			int n = 0;
			for (int i = 0; i < d->nsteps; i++) {
				const struct fsp_dx_step *a = &d->ev[prev][i], *b = &d->ev[t][i];
				if (!a->present || !b->present || !res->have[i][t] ||
				    (int)res->v[i][t].ta != prev)
					continue;
				s[n++] = (struct fsp_answer_step){
					.read_pct = b->read_pct, .qd = b->qd,
					.label = d->steps[i].label,
					.a_mbps = res->v[i][t].mbps.med_a,
					.b_mbps = res->v[i][t].mbps.med_b,
					.j = res->v[i][t].mbps.j, .o = &res->own[i][t],
				};
				res->head_step[t][n - 1] = i;
			}
			fsp_answer_headline(fsp_dx_tname(d, prev), fsp_dx_tname(d, t), s, n,
					    d->rounds, &res->head[t]);
			/* the worst step as an index of d->steps */
			res->head_worst[t] = res->head[t].worst >= 0 ?
					     res->head_step[t][res->head[t].worst] : -1;
			res->have_head[t] = 1;
			res->head_a[t] = prev;
		}
		prev = t;
	}
}

static void judge_all(const struct dx_run *d, struct dx_result *res)
{
	memset(res, 0, sizeof *res);
	for (int i = 0; i < d->nsteps; i++) {
		int prev = -1;
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!fsp_dx_present(d, t) || !d->ev[t][i].present)
				continue;
			if (prev >= 0) {
				const struct fsp_dx_step *a = &d->ev[prev][i], *b = &d->ev[t][i];
				struct fsp_dx_pair p = {
					.ta = prev, .tb = t, .a = a, .b = b,
					.raw = fsp_dx_present(d, FSP_DX_RAW) && d->ev[FSP_DX_RAW][i].present ?
					       &d->ev[FSP_DX_RAW][i] : NULL,
					.delta_us = a->lat_us >= 0 && b->lat_us >= 0 ?
						    b->lat_us - a->lat_us : 0,
				};
				fsp_dx_pair_verdict(&p, &res->v[i][t]);
				fsp_answer_owner(&p, &res->v[i][t], &res->own[i][t]);
				res->have[i][t] = 1;
			}
			prev = t;
		}
	}
	/* the shapes, and who owns a bathtub */
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!fsp_dx_present(d, t))
			continue;
		/* each round's lower pure step: a step's ratio to it, per round */
		double pure[FSP_DX_MAX_ROUNDS] = { 0 };
		for (int i = 0; i < d->nsteps; i++) {
			const struct fsp_dx_step *e = &d->ev[t][i];
			if (!e->present || (e->read_pct != 0 && e->read_pct != 100))
				continue;
			for (int k = 0; k < e->nrounds; k++)
				if (e->mbps[k] > 0 && (pure[k] == 0 || e->mbps[k] < pure[k]))
					pure[k] = e->mbps[k];
		}
		struct fsp_dx_point pts[MAX_STEPS];
		int n = 0;
		for (int i = 0; i < d->nsteps; i++) {
			const struct fsp_dx_step *e = &d->ev[t][i];
			if (!e->present)
				continue;
			double lo = 1e300, hi = -1;
			for (int k = 0; k < e->nrounds; k++) {
				if (e->mbps[k] <= 0 || pure[k] <= 0)
					continue;
				double r = e->mbps[k] / pure[k];
				lo = r < lo ? r : lo;
				hi = r > hi ? r : hi;
			}
			pts[n].read_pct = e->read_pct;
			pts[n].mbps = fsp_dx_median(e->mbps, e->nrounds);
			pts[n++].spread = hi >= 0 && e->nrounds >= 2 && lo < hi + 1 ? hi - lo : -1;
		}
		if (fsp_dx_bathtub(pts, n, &res->shape[t]) == 0)
			res->shape_done[t] = 1;
	}
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!res->shape_done[t] || !res->shape[t].found)
			continue;
		if (res->shape_done[FSP_DX_RAW] && res->shape[FSP_DX_RAW].found) {
			res->shape_owner[t] = FSP_DX_DRIVE; /* the same mixes collapse on raw */
			continue;
		}
		/* the owner named most often at the dip's steps, on the way down to t */
		int count[FSP_DX__OWNERS] = { 0 };
		const struct fsp_dx_shape *s = &res->shape[t];
		for (int i = 0; i < d->nsteps; i++) {
			int pct = d->ev[t][i].read_pct;
			if (pct > s->first_pct || pct < s->last_pct)
				continue;
			for (int u = 1; u <= t; u++)
				if (res->have[i][u] && res->own[i][u].owner > FSP_DX_UNKNOWN)
					count[res->own[i][u].owner] += u == t ? 2 : 1;
		}
		enum fsp_dx_owner best = FSP_DX_UNKNOWN;
		for (int o = FSP_DX_UNKNOWN + 1; o < FSP_DX__OWNERS; o++)
			if (count[o] > (best == FSP_DX_UNKNOWN ? 0 : count[best]))
				best = o;
		res->shape_owner[t] = best;
	}
	headlines(d, res);
}

/* ---- printing ---------------------------------------------------------------------- */

static void print_table(FILE *out, const struct dx_run *d,
			const struct dx_result *res)
{
	/* the answer first, then every verdict behind it */
	fsp_answer_print(out, d, res);
	fprintf(out, "\ndiagnosis of compare run %" PRId64 " (%d round%s", d->cmp_run,
		d->rounds, d->rounds == 1 ? "" : "s");
	if (d->rounds < 2)
		fprintf(out, ": the round-to-round spread is unknown, so a difference cannot "
			"be told from noise; compare --rounds 3 can)\n");
	else
		fprintf(out, "; a difference inside the round-to-round spread is noise)\n");
	int count[FSP_DX__OWNERS] = { 0 };
	for (int i = 0; i < d->nsteps; i++) {
		int any = 0;
		for (int t = 0; t < FSP_DX__TARGETS; t++)
			any |= res->have[i][t];
		if (!any)
			continue;
		const struct fsp_dx_step *e = NULL;
		for (int t = 0; t < FSP_DX__TARGETS && !e; t++)
			if (d->ev[t][i].present)
				e = &d->ev[t][i];
		fprintf(out, "step %d  %s  (%s, %ld KiB, QD%d, %d%% reads)\n", d->steps[i].step,
			d->steps[i].label, e->seq ? "seq" : "random", e->block_size / 1024, e->qd,
			e->read_pct);
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!res->have[i][t])
				continue;
			const struct fsp_dx_verdict *v = &res->v[i][t];
			char pair[80];
			snprintf(pair, sizeof pair, "%s -> %s", fsp_dx_tname(d, v->ta), fsp_dx_tname(d, v->tb));
			const struct fsp_answer_owner *o = &res->own[i][t];
			count[o->owner]++;
			fprintf(out, "    %-18s %-16s %s\n", pair, fsp_dx_owner_name(o->owner),
				v->evidence[0]);
			if (v->have_lat)
				fprintf(out, "    %-18s %-16s p50 %.0f -> %.0f us, p99 %.0f -> %.0f us\n",
					"", "", v->p50.med_a, v->p50.med_b, v->p99.med_a,
					v->p99.med_b);
			if (v->evidence[1][0])
				fprintf(out, "    %-18s %-16s %s\n", "", "", v->evidence[1]);
			char split[FSP_DX_EVIDENCE];
			if (fsp_answer_split_text(o, split, sizeof split))
				fprintf(out, "    %-18s %-16s %s\n", "", "", split);
		}
	}
	fprintf(out, "shape across mixes:\n");
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!fsp_dx_present(d, t))
			continue;
		const struct fsp_dx_shape *s = &res->shape[t];
		if (!res->shape_done[t])
			fprintf(out, "    %-8s no pure step: not a mix sweep\n", fsp_dx_tname(d, t));
		else if (!s->found)
			fprintf(out, "    %-8s no bathtub\n", fsp_dx_tname(d, t));
		else
			fprintf(out, "    %-8s bathtub: %d mixes from %d%% to %d%% reads below %.0f%% "
				"of the pure steps (%.1f MB/s), lowest %.1f MB/s at %d%% reads "
				"(%.2fx); owner %s\n", fsp_dx_tname(d, t), s->nlow, s->first_pct,
				s->last_pct, 100 * FSP_DX_DIP, s->pure_mbps, s->low_mbps,
				s->low_pct, s->depth, fsp_dx_owner_name(res->shape_owner[t]));
	}
	fprintf(out, "owners:");
	for (int o = 0; o < FSP_DX__OWNERS; o++)
		if (count[o])
			fprintf(out, " %s %d", fsp_dx_owner_name(o), count[o]);
	fprintf(out, " (pairs of steps)\n");
}

static void json_num(FILE *out, const char *key, double v, int comma)
{
	fprintf(out, "\"%s\": %.6g%s", key, v, comma ? ", " : "");
}

static void json_cmp(FILE *out, const char *key, const struct fsp_dx_cmp *c)
{
	static const char *const j[] = { "inside", "outside", "spread-unknown" };
	fprintf(out, "\"%s\": {", key);
	json_num(out, "a", c->med_a, 1);
	json_num(out, "b", c->med_b, 1);
	json_num(out, "rel", c->rel, 1);
	if (c->spread < 0)
		fprintf(out, "\"spread\": null, ");
	else
		json_num(out, "spread", c->spread, 1);
	fprintf(out, "\"paired\": %s, ", c->paired ? "true" : "false");
	fprintf(out, "\"judgement\": \"%s\"}", j[c->j]);
}

/* The evidence of one step on one target, as the rules saw it. */
static void json_step(FILE *out, const char *key, const struct fsp_dx_step *e)
{
	fprintf(out, "\"%s\": {", key);
	json_num(out, "lat_us", e->lat_us, 1);
	if (e->have_dev) {
		json_num(out, "dev_per_io", e->dev_per_io, 1);
		json_num(out, "dev_bytes", e->dev_bytes, 1);
		json_num(out, "amp", e->amp, 1);
		json_num(out, "flush_per_io", e->flush_per_io, 1);
		json_num(out, "dev_us", e->dev_us, 1);
		json_num(out, "flush_us", e->flush_us, 1);
		json_num(out, "read_seq", e->dev_seq[FSP_DX_READS], 1);
		json_num(out, "read_next", e->dev_next[FSP_DX_READS], 1);
		json_num(out, "read_streams", e->dev_streams[FSP_DX_READS], 1);
		json_num(out, "write_seq", e->dev_seq[FSP_DX_WRITES], 1);
		json_num(out, "write_next", e->dev_next[FSP_DX_WRITES], 1);
		json_num(out, "write_streams", e->dev_streams[FSP_DX_WRITES], 1);
		json_num(out, "recent_reads", e->recent_reads, 1);
	}
	if (e->have_fuse) {
		json_num(out, "fuse_req_per_io", e->fuse_req_per_io, 1);
		json_num(out, "transport_us", e->transport_us, 1);
		json_num(out, "daemon_us", e->daemon_us, 1);
		json_num(out, "emu_us", e->emu_us, 1);
		json_num(out, "backing_us", e->backing_us, 1);
		json_num(out, "inject_us", e->inject_us, 1);
	}
	fprintf(out, "\"device_view\": %s, \"fuse_view\": %s}", e->have_dev ? "true" : "false",
		e->have_fuse ? "true" : "false");
}

static void print_json(FILE *out, const struct dx_run *d, const struct dx_result *res)
{
	fprintf(out, "{\"compare_run\": %" PRId64 ", \"rounds\": %d, \"verdicts\": [",
		d->cmp_run, d->rounds);
	int first = 1;
	for (int i = 0; i < d->nsteps; i++)
		for (int t = 0; t < FSP_DX__TARGETS; t++) {
			if (!res->have[i][t])
				continue;
			const struct fsp_dx_verdict *v = &res->v[i][t];
			fprintf(out, "%s\n  {\"step\": %d, \"label\": ", first ? "" : ",",
				d->steps[i].step);
			first = 0;
			fsp_json_str(out, d->steps[i].label);
			const struct fsp_answer_owner *o = &res->own[i][t];
			fprintf(out, ", \"read_pct\": %d, \"a\": \"%s\", \"b\": \"%s\", "
				"\"owner\": \"%s\", ", d->ev[t][i].read_pct, fsp_dx_label[v->ta],
				fsp_dx_label[v->tb], fsp_dx_owner_name(o->owner));
			fsp_answer_owner_json(out, o);
			fprintf(out, "\"device_owner\": \"%s\", ",
				fsp_dx_owner_name(v->device_owner));
			json_cmp(out, "mbps", &v->mbps);
			if (v->have_lat) {
				fputs(", ", out);
				json_cmp(out, "p50_us", &v->p50);
				fputs(", ", out);
				json_cmp(out, "p99_us", &v->p99);
			}
			fputs(", ", out);
			json_step(out, "a_numbers", &d->ev[v->ta][i]);
			fputs(", ", out);
			json_step(out, "b_numbers", &d->ev[v->tb][i]);
			fputs(", ", out);
			json_num(out, "delta_us", v->delta_us, 1);
			json_num(out, "claim_us", v->claim_us, 1);
			fprintf(out, "\"evidence\": [");
			fsp_json_str(out, v->evidence[0]);
			fputs(", ", out);
			fsp_json_str(out, v->evidence[1]);
			fprintf(out, "]}");
		}
	fprintf(out, "\n], \"shapes\": [");
	first = 1;
	for (int t = 0; t < FSP_DX__TARGETS; t++) {
		if (!fsp_dx_present(d, t) || !res->shape_done[t])
			continue;
		const struct fsp_dx_shape *s = &res->shape[t];
		fprintf(out, "%s\n  {\"target\": \"%s\", \"bathtub\": %s", first ? "" : ",",
			fsp_dx_label[t], s->found ? "true" : "false");
		first = 0;
		if (s->found)
			fprintf(out, ", \"first_pct\": %d, \"last_pct\": %d, \"mixes\": %d, "
				"\"depth\": %.4f, \"pure_mbps\": %.2f, \"low_mbps\": %.2f, "
				"\"low_pct\": %d, \"owner\": \"%s\"", s->first_pct, s->last_pct,
				s->nlow, s->depth, s->pure_mbps, s->low_mbps, s->low_pct,
				fsp_dx_owner_name(res->shape_owner[t]));
		fputc('}', out);
	}
	fprintf(out, "\n]");
	fsp_answer_json(out, d, res);
	fprintf(out, "}\n");
}

int fsp_diagnose_print(FILE *out, struct fsp_store *st, int64_t cmp_run, int format,
		       const char *cmd)
{
	struct dx_run *d = calloc(1, sizeof *d);
	struct dx_result *res = malloc(sizeof *res);
	int rc = -1;
	if (!d || !res) {
		fprintf(stderr, "fsprism %s: out of memory\n", cmd);
		goto out;
	}
	if (load(st, cmp_run, d)) {
		fprintf(stderr, "fsprism %s: cannot read compare run %" PRId64 ": %s\n", cmd,
			cmp_run, fsp_store_errmsg(st));
		goto out;
	}
	if (!d->rounds) {
		fprintf(stderr, "fsprism %s: compare run %" PRId64 " has no measured target\n",
			cmd, cmp_run);
		goto out;
	}
	judge_all(d, res);
	char *text = NULL;
	size_t n = 0;
	int folded = format == FSP_DIAGNOSE_TABLE || format == FSP_DIAGNOSE_SUMMARY;
	FILE *mem = folded ? open_memstream(&text, &n) : NULL;
	if (format == FSP_DIAGNOSE_JSON) {
		print_json(out, d, res);
	} else if (!mem) {
		print_table(out, d, res);
	} else { /* folded as compare's report is (compare_fold) */
		if (format == FSP_DIAGNOSE_SUMMARY)
			fsp_answer_print(mem, d, res);
		else
			print_table(mem, d, res);
		fclose(mem);
		compare_fold(out, text, n, COMPARE_COLS);
		free(text);
	}
	rc = 0;
out:
	if (d)
		free(d->stalls);
	free(d);
	free(res);
	return rc;
}

/* ---- the command --------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: fsprism diagnose DB [--run N] [--format table|json] [--wide]\n"
"\n"
"The verdicts of a compare run (default: the newest): for each step and each\n"
"pair of neighbouring targets (raw -> native fs -> fsprism -> emu), the\n"
"difference in MB/s and p50/p99, judged against the round-to-round spread\n"
"(compare --rounds N), the one part that owns it and its evidence in numbers;\n"
"and a collapse of the mixed steps (a bathtub) as a shape. The table opens\n"
"with the answer compare prints (headlines, bathtub, a row per step with its\n"
"one owner, stalls and outliers). See docs/diagnose.md.\n"
"The table fits 100 columns (long lines folded); --wide prints them whole.\n");
}

enum { OPT_RUN = 256, OPT_FORMAT, OPT_WIDE };

int cmd_diagnose(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run", required_argument, NULL, OPT_RUN },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "wide", no_argument, NULL, OPT_WIDE },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct fsp_opt g;
	fsp_opt_init(&g, "diagnose", usage, longopts, "h", argc, argv);
	const char *run_arg = NULL, *format = "table";
	int c, wide = 0;
	while ((c = fsp_opt_next(&g)) != FSP_OPT_END) {
		if (c == FSP_OPT_EXIT)
			return g.status;
		if (c == OPT_RUN)
			run_arg = g.arg;
		else if (c == OPT_FORMAT)
			format = g.arg;
		else if (c == OPT_WIDE)
			wide = 1;
	}
	if (fsp_opt_one_database(&g))
		return 2;
	int json = !strcmp(format, "json");
	if (!json && strcmp(format, "table"))
		return fsp_usage_error("diagnose", "unknown --format '%s' (table or json)",
				       format);
	int64_t run = 0;
	if (run_arg && fsp_opt_run_id(run_arg, &run) < 0)
		return fsp_usage_error("diagnose", "--run needs a positive run id, not "
				       "'%s'", run_arg);
	char err[1024];
	struct fsp_store *st = fsp_store_open_readonly(g.pos[0], err, sizeof err);
	if (!st) {
		fprintf(stderr, "fsprism diagnose: %s\n", err);
		return 1;
	}
	int rc = 1;
	if (!run) {
		run = fsp_store_latest_run_of_kind(st, "compare");
		if (run <= 0) {
			fprintf(stderr, "fsprism diagnose: no compare run in %s\n", g.pos[0]);
			goto out;
		}
	} else {
		struct fsp_run_row r;
		int found = fsp_store_load_run(st, run, &r);
		if (found != 1) {
			fprintf(stderr, "fsprism diagnose: no run %" PRId64 " in %s\n", run,
				g.pos[0]);
			fsp_run_row_free(&r);
			goto out;
		}
		if (!r.kind || strcmp(r.kind, "compare")) {
			fprintf(stderr, "fsprism diagnose: run %" PRId64 " is of kind %s, not a "
				"compare run (diagnose judges a compare's targets)\n", run,
				r.kind ? r.kind : "?");
			fsp_run_row_free(&r);
			goto out;
		}
		fsp_run_row_free(&r);
	}
	if (!fsp_diagnose_print(stdout, st, run, json ? FSP_DIAGNOSE_JSON :
			       wide ? FSP_DIAGNOSE_WIDE : FSP_DIAGNOSE_TABLE, "diagnose"))
		rc = 0;
out:
	fsp_store_close(st);
	return rc;
}

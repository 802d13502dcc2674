/*
 * stats_block.c - the block layer in `fsprism stats` (stats_block.h): the
 * requests' queue and device times, and the device-level access pattern
 * (src/prism/pattern.h) with the IO sizes of the layers above the block
 * layer beside the requests' own.
 *
 * Quantiles are nearest-rank over the stored rows, exact: the value of
 * rank ceil(q * n), as the histograms' definition (docs/schema.md).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "src/db/block_ios.h"
#include "src/db/results.h"
#include "src/prism/pattern.h"
#include "src/cli/stats.h"
#include "src/cli/stats_part.h"
#include "src/cli/stats_block.h"

#define MAX_STEPS 4096

struct block_row {
	int step;
	unsigned op;
	size_t requests;
	uint64_t bytes;
	struct fsp_stats_part queue, device;
};



/* Every (step, direction) with rows: *rowsp malloc'd, count returned; -1 on error. */
static int load(struct fsp_store *st, int64_t run, struct block_row **rowsp)
{
	static const unsigned dirs[] = { FSP_BLOCK_READ, FSP_BLOCK_WRITE };
	int *steps = malloc(MAX_STEPS * sizeof(*steps));
	struct block_row *rows = NULL;
	int n = 0;
	*rowsp = NULL;
	if (!steps)
		return -1;
	int nsteps = fsp_block_ios_steps(st, run, steps, MAX_STEPS);
	rows = calloc((size_t)(nsteps ? nsteps : 1) * 2, sizeof(*rows));
	if (!rows) {
		free(steps);
		return -1;
	}
	for (int i = 0; i < nsteps; i++)
		for (int d = 0; d < 2; d++) {
			struct fsp_block_times t;
			char err[256];
			if (fsp_block_ios_times(st, run, steps[i], dirs[d], &t, err, sizeof(err))) {
				fprintf(stderr, "fsprism stats: %s\n", err);
				free(steps);
				free(rows);
				return -1;
			}
			if (t.nd) {
				struct block_row *r = &rows[n++];
				r->step = steps[i];
				r->op = dirs[d];
				r->requests = t.nd;
				r->bytes = t.bytes;
				fsp_stats_part_of((int64_t *)t.queue_ns, t.nq, &r->queue);
				fsp_stats_part_of((int64_t *)t.device_ns, t.nd, &r->device);
			}
			fsp_block_times_free(&t);
		}
	free(steps);
	*rowsp = rows;
	return n;
}


static int pattern_table_of(struct fsp_store *st, int64_t run, FILE *out);
static int pattern_csv_of(struct fsp_store *st, int64_t run, FILE *out);
static int pattern_json_of(struct fsp_store *st, int64_t run, FILE *out);



int fsp_stats_block_table(struct fsp_store *st, int64_t run, FILE *out)
{
	struct fsp_block_summary s;
	if (fsp_block_ios_summary(st, run, &s) != 0 || s.traced < 0)
		return 0;
	if (!s.traced) {
		fprintf(out, "\nblock layer: not traced (%s)\n", s.reason[0] ? s.reason : "unknown");
		return 0;
	}
	struct block_row *rows;
	int n = load(st, run, &rows);
	if (n < 0)
		return -1;
	fprintf(out, "\nBlock layer: device %s, %" PRIu64 " requests, %" PRIu64 " dropped\n",
		s.devices, s.requests, s.dropped);
	if (n == 0) {
		fprintf(out, "no block requests in the steps' windows\n");
		free(rows);
		return 0;
	}
	fprintf(out, "queue = queued to issued, device = issued to completed (microseconds)\n");
	fprintf(out, "%-4s %-5s %8s %8s", "step", "dir", "requests", "mean KiB");
	fsp_stats_part_heads(out, "queue");
	fsp_stats_part_heads(out, "dev");
	fputc('\n', out);
	for (int i = 0; i < n; i++) {
		const struct block_row *r = &rows[i];
		fprintf(out, "%-4d %-5s %8zu %8.1f", r->step, fsp_block_op_name(r->op),
			r->requests, (double)r->bytes / (double)r->requests / 1024.0);
		fsp_stats_part_table(out, &r->queue);
		fsp_stats_part_table(out, &r->device);
		fputc('\n', out);
	}
	free(rows);
	return pattern_table_of(st, run, out);
}

static void csv_part(FILE *out, int64_t run, const struct block_row *r, const char *layer,
		     const struct fsp_stats_part *p)
{
	if (!p->n)
		return;
	fprintf(out, "%" PRId64 ",%d,block_%s,%s,%zu,%" PRIu64 ",,0", run, r->step,
		fsp_block_op_name(r->op), layer, p->n, r->bytes);
	fsp_stats_part_csv_tail(out, p);
}

int fsp_stats_block_csv(struct fsp_store *st, int64_t run, FILE *out)
{
	struct block_row *rows;
	int n = load(st, run, &rows);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		csv_part(out, run, &rows[i], "queue", &rows[i].queue);
		csv_part(out, run, &rows[i], "device", &rows[i].device);
	}
	free(rows);
	return pattern_csv_of(st, run, out);
}


int fsp_stats_block_json(struct fsp_store *st, int64_t run, FILE *out)
{
	struct fsp_block_summary s;
	if (fsp_block_ios_summary(st, run, &s) != 0 || s.traced < 0)
		return 0;
	fprintf(out, ",\n  \"block\": {\"traced\": %s", s.traced ? "true" : "false");
	if (!s.traced) {
		fsp_json_member_str(out, "reason", s.reason);
		fputs("}", out);
		return 0;
	}
	struct block_row *rows;
	int n = load(st, run, &rows);
	if (n < 0)
		return -1;
	fsp_json_member_str(out, "devices", s.devices);
	fprintf(out, ", \"requests\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"steps\": [",
		s.requests, s.dropped);
	for (int i = 0; i < n; i++) {
		const struct block_row *r = &rows[i];
		fprintf(out, "%s\n    {\"step\": %d, \"op\": \"%s\", \"requests\": %zu, "
			"\"bytes\": %" PRIu64 ", \"mean_bytes\": %.1f", i ? "," : "", r->step,
			fsp_block_op_name(r->op), r->requests, r->bytes,
			(double)r->bytes / (double)r->requests);
		fsp_stats_part_json(out, "queue", &r->queue);
		fsp_stats_part_json(out, "device", &r->device);
		fputc('}', out);
	}
	fputs(n ? "\n  ]" : "]", out);
	free(rows);
	int rc = pattern_json_of(st, run, out);
	fputs("}", out);
	return rc;
}

/* ---- the access pattern ---------------------------------------------------- */

/* Layers whose IO sizes are shown beside the block requests'. */
enum { L_APP, L_FUSE, L_BLOCK, NLAYERS };
static const char *const layer_names[NLAYERS] = { "application", "fuse", "block" };

struct pat_step {
	struct fsp_pattern p;
	struct fsp_size_hist size[NLAYERS][2]; /* [layer][read, write] */
	int have[NLAYERS];
	int have_fsyncs;
	uint64_t fsyncs;
};

struct pat {
	struct pat_step *s;
	size_t n;
	int64_t fuse_run;
};

static struct pat_step *pat_find(struct pat *pt, int step)
{
	for (size_t i = 0; i < pt->n; i++)
		if (pt->s[i].p.step == step)
			return &pt->s[i];
	return NULL;
}

/* application: every engine IO of a step is of the step's block size */
static int app_sizes(void *arg, const struct fsp_step_row *r)
{
	struct pat_step *s = pat_find(arg, r->step);
	if (s && r->block_size > 0) {
		fsp_size_hist_add(&s->size[L_APP][0], (uint64_t)r->block_size, r->read_ios);
		fsp_size_hist_add(&s->size[L_APP][1], (uint64_t)r->block_size, r->write_ios);
		s->have[L_APP] = 1;
	}
	return 0;
}

static int fuse_sizes(void *arg, int op, uint64_t length, uint64_t count)
{
	struct pat_step *s = arg;
	fsp_size_hist_add(&s->size[L_FUSE][op == FSP_OP_WRITE], length, count);
	s->have[L_FUSE] = 1;
	return 0;
}

static void pat_free(struct pat *pt)
{
	free(pt->s);
	memset(pt, 0, sizeof(*pt));
}

/* The pattern of every step of run with block rows, and the sizes of the
 * layers above: 0 (pt->n may be 0), or -1 (printed). */
static int pat_load(struct fsp_store *st, int64_t run, struct pat *pt)
{
	struct fsp_block_io *rows;
	struct fsp_pattern *p;
	size_t nrows, np;
	char err[256];
	memset(pt, 0, sizeof(*pt));
	if (fsp_block_ios_load(st, run, -1, 0, 0, &rows, &nrows, err, sizeof(err))) {
		fprintf(stderr, "fsprism stats: %s\n", err);
		return -1;
	}
	int rc = fsp_pattern_compute(rows, nrows, &p, &np);
	free(rows);
	if (rc) {
		fprintf(stderr, "fsprism stats: out of memory for the access pattern\n");
		return -1;
	}
	pt->s = calloc(np ? np : 1, sizeof(*pt->s));
	if (!pt->s) {
		free(p);
		fprintf(stderr, "fsprism stats: out of memory for the access pattern\n");
		return -1;
	}
	pt->n = np;
	for (size_t i = 0; i < np; i++) {
		struct pat_step *s = &pt->s[i];
		s->p = p[i];
		s->size[L_BLOCK][0] = p[i].size[0];
		s->size[L_BLOCK][1] = p[i].size[1];
		s->have[L_BLOCK] = 1;
	}
	free(p);
	struct fsp_hist *h = malloc(sizeof(*h));
	if (!h || fsp_store_each_step(st, run, app_sizes, pt) < 0)
		goto fail;
	pt->fuse_run = fsp_block_ios_fuse_run(st, run);
	if (pt->fuse_run < 0)
		goto fail;
	for (size_t i = 0; i < pt->n; i++) {
		struct pat_step *s = &pt->s[i];
		int step = s->p.step;
		int64_t from = 0, to = 0;
		if (pt->fuse_run > 0 && pt->fuse_run != run) {
			/* a compare's engine run: its mount's requests in the step's window */
			char *label = NULL;
			int found = fsp_store_step_span(st, run, step, &label, &from, &to);
			free(label);
			if (found != 1)
				continue;
			step = -1;
		}
		if (pt->fuse_run > 0 &&
		    fsp_block_ios_op_lengths(st, pt->fuse_run, step, from, to, fuse_sizes, s) < 0)
			goto fail;
		int found = fsp_store_load_hist(st, run, s->p.step, FSP_OP_FSYNC, FSP_LAYER_TOTAL,
						h, NULL, NULL);
		if (found < 0)
			goto fail;
		s->have_fsyncs = found;
		s->fsyncs = found ? h->count : 0;
	}
	free(h);
	return 0;
fail:
	free(h);
	pat_free(pt);
	fprintf(stderr, "fsprism stats: cannot read the sizes of the layers above the block layer\n");
	return -1;
}

/* "4k 1024, 8k 3": the non-empty power-of-two bins, each by its lower bound */
static void print_bins(FILE *out, const struct fsp_size_hist *h)
{
	int first = 1;
	for (int k = 0; k < FSP_SIZE_BINS; k++) {
		if (!h->bin[k])
			continue;
		char b[32];
		fsp_format_size(k ? 1ull << k : 0, b, sizeof(b));
		fprintf(out, "%s%s %" PRIu64, first ? "" : ", ", b, h->bin[k]);
		first = 0;
	}
}

static double seq_share(const struct fsp_seq *q)
{
	return q->ios ? (double)q->seq_ios / (double)q->ios : NAN;
}

static uint64_t all_flushes(const struct fsp_pattern *p)
{
	return p->flushes + p->preflushes;
}

static void pattern_table(FILE *out, const struct pat *pt)
{
	fprintf(out, "\nAccess pattern (requests in the order issued; sequential: starts where one"
		" of the %d\nlatest streams ended; streams: distinct streams per %d requests)\n",
		FSP_SEQ_STREAMS, FSP_SEQ_WINDOW);
	fprintf(out, "%-5s %-6s %9s %10s %8s\n", "step", "dir", "requests", "sequential",
		"streams");
	for (size_t i = 0; i < pt->n; i++)
		for (int d = 0; d < FSP_PAT_NDIRS; d++) {
			const struct fsp_seq *q = &pt->s[i].p.seq[d];
			char sh[32], sm[32];
			if (!q->ios)
				continue;
			snprintf(sh, sizeof(sh), "%.1f%%", 100.0 * seq_share(q));
			if (q->windows)
				snprintf(sm, sizeof(sm), "%.2f",
					 (double)fsp_seq_streams_x1000(q) / 1000.0);
			else
				snprintf(sm, sizeof(sm), "-");
			fprintf(out, "%-5d %-6s %9" PRIu64 " %10s %8s\n", pt->s[i].p.step,
				fsp_pat_dir_name(d), q->ios, sh, sm);
		}

	fprintf(out, "\nIO sizes at each layer (by power of two: \"4k 10\" is 10 IOs of 4 KiB to"
		" under 8 KiB)\n");
	fprintf(out, "%-5s %-6s %-12s %9s %9s  %s\n", "step", "dir", "layer", "count",
		"mean KiB", "sizes");
	for (size_t i = 0; i < pt->n; i++)
		for (int d = 0; d < 2; d++)
			for (int l = 0; l < NLAYERS; l++) {
				const struct pat_step *s = &pt->s[i];
				const struct fsp_size_hist *h = &s->size[l][d];
				if (!s->have[l] || !h->count)
					continue;
				fprintf(out, "%-5d %-6s %-12s %9" PRIu64 " %9.1f  ", s->p.step,
					d ? "write" : "read", layer_names[l], h->count,
					fsp_size_hist_mean(h) / 1024.0);
				print_bins(out, h);
				fputc('\n', out);
			}

	fprintf(out, "\nReads after writes (device reads by the time since a write last covered"
		" any of their sectors)\n");
	fprintf(out, "%-5s %9s %8s %8s %8s %8s %8s %8s\n", "step", "reads", "<1ms", "<10ms",
		"<100ms", "<1s", ">=1s", "never");
	for (size_t i = 0; i < pt->n; i++) {
		const struct fsp_pattern *p = &pt->s[i].p;
		if (!p->size[0].count)
			continue;
		fprintf(out, "%-5d %9" PRIu64, p->step, p->size[0].count);
		for (int b = 0; b < FSP_REC_NBUCKETS; b++)
			fprintf(out, " %8" PRIu64, p->recency[b]);
		fputc('\n', out);
	}

	fprintf(out, "\nFlushes (flush requests and other requests with a preflush) and FUA"
		" writes\n");
	fprintf(out, "%-5s %9s %10s %10s %11s %10s %7s\n", "step", "flushes", "preflushes",
		"FUA writes", "user fsyncs", "per fsync", "errors");
	for (size_t i = 0; i < pt->n; i++) {
		const struct pat_step *s = &pt->s[i];
		char fs[32], per[32];
		snprintf(fs, sizeof(fs), "-");
		snprintf(per, sizeof(per), "-");
		if (s->have_fsyncs) {
			snprintf(fs, sizeof(fs), "%" PRIu64, s->fsyncs);
			if (s->fsyncs)
				snprintf(per, sizeof(per), "%.2f",
					 (double)all_flushes(&s->p) / (double)s->fsyncs);
		}
		fprintf(out, "%-5d %9" PRIu64 " %10" PRIu64 " %10" PRIu64 " %11s %10s %7" PRIu64
			"\n", s->p.step, s->p.flushes, s->p.preflushes, s->p.fua_writes, fs, per,
			s->p.errors);
	}
}

static int pattern_table_of(struct fsp_store *st, int64_t run, FILE *out)
{
	struct pat pt;
	if (pat_load(st, run, &pt))
		return -1;
	if (pt.n)
		pattern_table(out, &pt);
	pat_free(&pt);
	return 0;
}

/* CSV: (step, metric) rows in the ops table's columns: op pattern_read /
 * pattern_write / pattern_both / pattern_flush, layer the metric, count its
 * value, bytes for sizes; the other columns empty. */
static void csv_metric(FILE *out, int64_t run, int step, const char *op, const char *metric,
		       uint64_t v, const uint64_t *bytes)
{
	fprintf(out, "%" PRId64 ",%d,%s,%s,%" PRIu64 ",", run, step, op, metric, v);
	if (bytes)
		fprintf(out, "%" PRIu64, *bytes);
	fputs(",,,,,,,,\n", out);
}

static void pattern_csv(FILE *out, int64_t run, const struct pat *pt)
{
	static const char *const ops[FSP_PAT_NDIRS] = { "pattern_read", "pattern_write",
							 "pattern_both" };
	for (size_t i = 0; i < pt->n; i++) {
		const struct pat_step *s = &pt->s[i];
		int step = s->p.step;
		for (int d = 0; d < FSP_PAT_NDIRS; d++) {
			const struct fsp_seq *q = &s->p.seq[d];
			if (!q->ios)
				continue;
			csv_metric(out, run, step, ops[d], "ios", q->ios, NULL);
			csv_metric(out, run, step, ops[d], "seq_ios", q->seq_ios, NULL);
			csv_metric(out, run, step, ops[d], "windows", q->windows, NULL);
			csv_metric(out, run, step, ops[d], "streams_x1000", fsp_seq_streams_x1000(q),
				   NULL);
		}
		for (int d = 0; d < 2; d++)
			for (int l = 0; l < NLAYERS; l++) {
				const struct fsp_size_hist *h = &s->size[l][d];
				char m[64];
				if (!s->have[l] || !h->count)
					continue;
				snprintf(m, sizeof(m), "size_%s", layer_names[l]);
				csv_metric(out, run, step, ops[d], m, h->count, &h->bytes);
				for (int k = 0; k < FSP_SIZE_BINS; k++) {
					if (!h->bin[k])
						continue;
					char b[32];
					fsp_format_size(k ? 1ull << k : 0, b, sizeof(b));
					snprintf(m, sizeof(m), "size_%s_%s", layer_names[l], b);
					csv_metric(out, run, step, ops[d], m, h->bin[k], NULL);
				}
			}
		if (s->p.size[0].count)
			for (int b = 0; b < FSP_REC_NBUCKETS; b++) {
				char m[64];
				snprintf(m, sizeof(m), "recency_%s", fsp_recency_name(b));
				csv_metric(out, run, step, "pattern_read", m, s->p.recency[b], NULL);
			}
		csv_metric(out, run, step, "pattern_flush", "flushes", s->p.flushes, NULL);
		csv_metric(out, run, step, "pattern_flush", "preflushes", s->p.preflushes, NULL);
		csv_metric(out, run, step, "pattern_flush", "fua_writes", s->p.fua_writes, NULL);
		if (s->have_fsyncs)
			csv_metric(out, run, step, "pattern_flush", "fsyncs", s->fsyncs, NULL);
		csv_metric(out, run, step, "pattern_flush", "errors", s->p.errors, NULL);
	}
}

static int pattern_csv_of(struct fsp_store *st, int64_t run, FILE *out)
{
	struct pat pt;
	if (pat_load(st, run, &pt))
		return -1;
	pattern_csv(out, run, &pt);
	pat_free(&pt);
	return 0;
}

static void json_double(FILE *out, double v)
{
	if (isnan(v))
		fputs("null", out);
	else
		fprintf(out, "%.4f", v);
}

static void json_sizes(FILE *out, const struct fsp_size_hist *h, int have)
{
	if (!have || !h->count) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"mean_bytes\": ",
		h->count, h->bytes);
	json_double(out, fsp_size_hist_mean(h));
	fputs(", \"bins\": {", out);
	int first = 1;
	for (int k = 0; k < FSP_SIZE_BINS; k++)
		if (h->bin[k]) {
			fprintf(out, "%s\"%llu\": %" PRIu64, first ? "" : ", ",
				k ? 1ull << k : 0ull, h->bin[k]);
			first = 0;
		}
	fputs("}}", out);
}

static void pattern_json(FILE *out, const struct pat *pt)
{
	fputs(", \"pattern\": [", out);
	for (size_t i = 0; i < pt->n; i++) {
		const struct pat_step *s = &pt->s[i];
		fprintf(out, "%s\n    {\"step\": %d, \"sequential\": {", i ? "," : "", s->p.step);
		for (int d = 0; d < FSP_PAT_NDIRS; d++) {
			const struct fsp_seq *q = &s->p.seq[d];
			fprintf(out, "%s\"%s\": {\"ios\": %" PRIu64 ", \"seq_ios\": %" PRIu64
				", \"seq_share\": ", d ? ", " : "", fsp_pat_dir_name(d), q->ios,
				q->seq_ios);
			json_double(out, seq_share(q));
			fprintf(out, ", \"windows\": %" PRIu64 ", \"streams\": ", q->windows);
			json_double(out, q->windows ? (double)fsp_seq_streams_x1000(q) / 1000.0 : NAN);
			fputc('}', out);
		}
		fputs("},\n     \"sizes\": {", out);
		for (int d = 0; d < 2; d++) {
			fprintf(out, "%s\"%s\": {", d ? ", " : "", d ? "write" : "read");
			for (int l = 0; l < NLAYERS; l++) {
				fprintf(out, "%s\"%s\": ", l ? ", " : "", layer_names[l]);
				json_sizes(out, &s->size[l][d], s->have[l]);
			}
			fputc('}', out);
		}
		fputs("},\n     \"recency\": {", out);
		for (int b = 0; b < FSP_REC_NBUCKETS; b++)
			fprintf(out, "%s\"%s\": %" PRIu64, b ? ", " : "", fsp_recency_name(b),
				s->p.recency[b]);
		fprintf(out, "},\n     \"flushes\": %" PRIu64 ", \"preflushes\": %" PRIu64
			", \"fua_writes\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"fsyncs\": ",
			s->p.flushes, s->p.preflushes, s->p.fua_writes, s->p.errors);
		if (s->have_fsyncs)
			fprintf(out, "%" PRIu64, s->fsyncs);
		else
			fputs("null", out);
		fputs(", \"flushes_per_fsync\": ", out);
		json_double(out, s->fsyncs ? (double)all_flushes(&s->p) / (double)s->fsyncs : NAN);
		fputc('}', out);
	}
	fputs(pt->n ? "\n  ]" : "]", out);
}

static int pattern_json_of(struct fsp_store *st, int64_t run, FILE *out)
{
	struct pat pt;
	if (pat_load(st, run, &pt))
		return -1;
	pattern_json(out, &pt);
	pat_free(&pt);
	return 0;
}

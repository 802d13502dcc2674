/*
 * data.c - what the report's charts plot that `stats` does not print:
 * the step parameters, the latency CDFs, the throughput timeline, fill
 * segments, the latency heat map from op rows and where on the disk the
 * block requests went, each read through the src/db readers and written
 * as JSON (data.h). Percentiles, means and MB/s are not computed here:
 * they are the stats JSON that the report embeds beside this.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/grow.h"
#include "src/base/hist.h"
#include "src/base/json.h"
#include "src/base/ops.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/report/data.h"

/* Heat map: time columns at most, latency rows per decade from 1 us. */
#define HEAT_COLS 120
#define HEAT_PER_DECADE 10
#define HEAT_ROWS (HEAT_PER_DECADE * 8) /* 1 us .. 100 s */
/* Block requests drawn per run at most (every k-th beyond). */
#define BLOCK_POINTS 20000

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* Comma between array or object members. */
struct list {
	FILE *out;
	int n;
};

static void sep(struct list *l)
{
	fputs(l->n++ ? ",\n" : "\n", l->out);
}

/* ---- facts ------------------------------------------------------------------ */

static int fact_attr(void *arg, const char *key, const char *value)
{
	struct list *l = arg;
	fputs(l->n++ ? ", " : "", l->out);
	fsp_json_str(l->out, key);
	fputs(": ", l->out);
	fsp_json_str(l->out, value);
	return 0;
}

static int write_facts(FILE *out, struct fsp_store *st, int64_t run)
{
	struct fsp_run_facts f;
	struct fsp_run_row r;
	int rc = fsp_store_load_run_facts(st, run, &f);
	if (rc == 1)
		rc = fsp_store_load_run(st, run, &r);
	else
		memset(&r, 0, sizeof(r));
	if (rc == 1) {
		fputs("\"facts\": {\"host\": ", out);
		fsp_json_str(out, f.host);
		fputs(", \"kernel\": ", out);
		fsp_json_str(out, f.kernel);
		fputs(", \"version\": ", out);
		fsp_json_str(out, f.version);
		fputs(", \"started_at\": ", out);
		fsp_json_str(out, f.started_at);
		fputs(", \"ended_at\": ", out);
		fsp_json_str(out, f.ended_at);
		fputs(", \"kind\": ", out);
		fsp_json_str(out, r.kind);
		fputs(", \"label\": ", out);
		fsp_json_str(out, r.label);
		fputs(", \"options\": ", out);
		fsp_json_str(out, r.options);
		fputs(", \"backing_path\": ", out);
		fsp_json_str(out, r.backing_path);
		fputs(", \"backing_device\": ", out);
		fsp_json_str(out, r.device);
		fputs(", \"backing_fstype\": ", out);
		fsp_json_str(out, r.fstype);
		fputs(", \"record_mode\": ", out);
		fsp_json_str(out, r.record_mode);
		fputs(", \"attributes\": {", out);
		struct list l = { .out = out };
		rc = fsp_store_each_attr(st, run, FSP_ATTRS_ALL, fact_attr, &l) < 0 ? -1 : 1;
		fputs("}}", out);
	}
	fsp_run_facts_free(&f);
	fsp_run_row_free(&r);
	return rc == 1 ? 0 : -1;
}

/* ---- steps ------------------------------------------------------------------ */

static int write_step(void *arg, const struct fsp_step_row *s)
{
	struct list *l = arg;
	FILE *out = l->out;
	sep(l);
	fprintf(out, "  {\"step\": %d, \"label\": ", s->step);
	fsp_json_str(out, s->label);
	fputs(", \"access\": ", out);
	fsp_json_str(out, s->access);
	fprintf(out, ", \"block_size\": %" PRId64 ", \"qd\": %" PRId64 ", \"read_pct\": %"
		PRId64 ", \"pattern\": ", s->block_size, s->qd, s->read_pct);
	fsp_json_str(out, s->pattern);
	fprintf(out, ", \"span_offset\": %" PRIu64 ", \"span_size\": %" PRIu64
		", \"duration_s\": ", s->span_offset, s->span_size);
	fsp_json_num_g(out, s->ended_ns > s->started_ns ? secs(s->ended_ns - s->started_ns)
		       : NAN);
	fputc('}', out);
	return 0;
}

/* ---- latency CDFs, from the histograms -------------------------------------- */

struct cdf_walk {
	struct fsp_store *st;
	int64_t run;
	struct fsp_hist *h;
	struct list l;
	int failed;
};

/*
 * One (step, op)'s CDF: (latency us, fraction at or below) at the upper
 * end of a bucket whenever the fraction has grown enough to show, at the
 * buckets of p50, p90, p99 and p99.9, and at every bucket of the last 1%
 * (the tail is what the chart is for).
 */
static int write_cdf(void *arg, int step, int op)
{
	struct cdf_walk *w = arg;
	if (op >= FSP_OP_DEV_READ)
		return 0;
	uint64_t bytes, errors;
	int rc = fsp_store_load_hist(w->st, w->run, step, op, FSP_LAYER_TOTAL, w->h, &bytes,
				     &errors);
	if (rc < 0) {
		w->failed = 1;
		return 1;
	}
	if (rc == 0 || !w->h->count)
		return 0;
	FILE *out = w->l.out;
	sep(&w->l);
	fprintf(out, "  {\"step\": %d, \"op\": \"%s\", \"count\": %" PRIu64 ", \"points\": [",
		step, fsp_op_name(op), w->h->count);
	/* the buckets that hold stats' quantiles are always points */
	static const double crossings[] = { 0.5, 0.9, 0.99, 0.999, 2 };
	double n = (double)w->h->count, shown = -1;
	uint64_t upto = 0;
	int first = 1, next = 0;
	for (unsigned b = 0; b < FSP_HIST_NBUCKETS && upto < w->h->count; b++) {
		if (!w->h->buckets[b])
			continue;
		upto += w->h->buckets[b];
		double f = (double)upto / n;
		int crossed = 0;
		while ((double)upto >= crossings[next] * n) {
			crossed = 1;
			next++;
		}
		if (!crossed && upto < w->h->count && f - shown < 0.002 && f < 0.99)
			continue;
		uint64_t hi = fsp_hist_bucket_hi(b);
		if (hi > w->h->max)
			hi = w->h->max;
		fprintf(out, "%s[", first ? "" : ",");
		fsp_json_num_g(out, (double)hi / 1e3);
		fputc(',', out);
		fsp_json_num_g(out, f);
		fputc(']', out);
		first = 0;
		shown = f;
	}
	fputs("]}", out);
	return 0;
}

/* ---- timeline and segments -------------------------------------------------- */

/* The timeline of one step at a time: rows held until the step changes. */
struct timeline_walk {
	struct list l;
	uint64_t run_start;
	int step;
	struct fsp_timeline_row *rows;
	size_t n, cap;
	int failed;
};

static void flush_timeline(struct timeline_walk *w)
{
	if (!w->n)
		return;
	FILE *out = w->l.out;
	uint64_t width = 0; /* the bucket: the smallest gap between rows */
	for (size_t i = 1; i < w->n; i++) {
		uint64_t gap = w->rows[i].t_ns - w->rows[i - 1].t_ns;
		if (gap && (!width || gap < width))
			width = gap;
	}
	if (!width)
		width = 100000000; /* one row: the default interval */
	sep(&w->l);
	fprintf(out, "  {\"step\": %d, \"bucket_s\": ", w->step);
	fsp_json_num_g(out, secs(width));
	fputs(", \"rows\": [", out);
	for (size_t i = 0; i < w->n; i++) {
		const struct fsp_timeline_row *t = &w->rows[i];
		double at = t->t_ns > w->run_start ? secs(t->t_ns - w->run_start) : 0;
		fprintf(out, "%s[", i ? "," : "");
		fsp_json_num_g(out, at);
		fputc(',', out);
		fsp_json_num(out, (double)t->read_bytes / 1e6 / secs(width));
		fputc(',', out);
		fsp_json_num(out, (double)t->write_bytes / 1e6 / secs(width));
		fputc(']', out);
	}
	fputs("]}", out);
	w->n = 0;
}

static int timeline_row(void *arg, int step, const struct fsp_timeline_row *t)
{
	struct timeline_walk *w = arg;
	if (step != w->step)
		flush_timeline(w);
	w->step = step;
	if (fsp_grow((void **)&w->rows, &w->cap, w->n + 1, sizeof(*w->rows), 256)) {
		w->failed = 1;
		return 1;
	}
	w->rows[w->n++] = *t;
	return 0;
}

static int segment_row(void *arg, int step, const struct fsp_segment_row *g)
{
	struct list *l = arg;
	sep(l);
	fprintf(l->out, "  [%d,%" PRIu64 ",", step, g->segment);
	fsp_json_num_g(l->out, (double)g->offset / 1e9);
	fputc(',', l->out);
	fsp_json_num(l->out, g->ns ? (double)g->bytes / 1e6 / secs(g->ns) : NAN);
	fputc(']', l->out);
	return 0;
}

/* ---- heat map: time x latency, from op rows ------------------------------- */

struct heat_walk {
	uint64_t origin, col_ns;
	uint32_t (*cells)[HEAT_ROWS];
	uint64_t rows, outside;
};

static int heat_row(void *arg, int step, int op, uint64_t start_ns, uint64_t total_ns)
{
	struct heat_walk *w = arg;
	double us = (double)total_ns / 1e3;
	int row = us < 1 ? 0 : (int)floor(HEAT_PER_DECADE * log10(us));
	uint64_t col = start_ns > w->origin ? (start_ns - w->origin) / w->col_ns : 0;
	w->rows++;
	if (row >= HEAT_ROWS || col >= HEAT_COLS) {
		w->outside++;
		return 0;
	}
	w->cells[col][row]++;
	return 0;
}

static int write_heatmap(FILE *out, struct fsp_store *st, const struct fsp_run_row *r)
{
	int64_t nrows = fsp_store_count_op_rows(st, r->id);
	if (nrows < 0)
		return -1;
	fputs("\"heatmap\": ", out);
	if (nrows == 0) {
		fputs("{\"available\": false, \"record_mode\": ", out);
		fsp_json_str(out, r->record_mode);
		fputs("}", out);
		return 0;
	}
	uint64_t span = r->ended_ns > r->started_ns ? (uint64_t)(r->ended_ns - r->started_ns) :
		1000000000;
	/* columns of a whole number of 100 ms, at most HEAT_COLS of them */
	uint64_t col = 100000000;
	while (span / col >= HEAT_COLS)
		col += 100000000;
	struct heat_walk w = { .origin = (uint64_t)r->started_ns, .col_ns = col };
	w.cells = calloc(HEAT_COLS, sizeof(*w.cells));
	if (!w.cells || fsp_store_each_op_latency(st, r->id, heat_row, &w) < 0) {
		free(w.cells);
		return -1;
	}
	fprintf(out, "{\"available\": true, \"ops\": %" PRIu64 ", \"outside\": %" PRIu64
		", \"col_s\": ", w.rows, w.outside);
	fsp_json_num_g(out, secs(col));
	fprintf(out, ", \"rows_per_decade\": %d, \"cells\": [", HEAT_PER_DECADE);
	int first = 1;
	for (int c = 0; c < HEAT_COLS; c++)
		for (int k = 0; k < HEAT_ROWS; k++)
			if (w.cells[c][k]) {
				fprintf(out, "%s[", first ? "" : ",");
				fsp_json_num_g(out, secs((uint64_t)c * col));
				fputc(',', out);
				fsp_json_num_g(out, pow(10, (double)k / HEAT_PER_DECADE));
				fprintf(out, ",%" PRIu32 "]", w.cells[c][k]);
				first = 0;
			}
	fputs("]}", out);
	free(w.cells);
	return 0;
}

/* ---- block requests: offset against time ---------------------------------- */

struct block_walk {
	struct list l;
	uint64_t origin, stride, seen;
};

static int block_row(void *arg, int step, const char *op, uint64_t issue_ns,
		     uint64_t sector, uint64_t bytes)
{
	struct block_walk *w = arg;
	if (w->seen++ % w->stride)
		return 0;
	FILE *out = w->l.out;
	fputs(w->l.n++ ? "," : "", out);
	fprintf(out, "[%d,", step);
	fsp_json_str(out, op);
	fputc(',', out);
	fsp_json_num_g(out, issue_ns > w->origin ? secs(issue_ns - w->origin) : 0);
	fputc(',', out);
	fsp_json_num_g(out, (double)sector * 512 / (1024.0 * 1024 * 1024));
	fprintf(out, ",%" PRIu64 "]", bytes);
	return 0;
}

static int write_block(FILE *out, struct fsp_store *st, const struct fsp_run_row *r)
{
	int64_t n = fsp_store_count_block_positions(st, r->id);
	if (n < 0)
		return -1;
	struct block_walk w = { .l.out = out, .origin = (uint64_t)r->started_ns,
				.stride = n > BLOCK_POINTS ? (uint64_t)(n + BLOCK_POINTS - 1) /
							     BLOCK_POINTS : 1 };
	fprintf(out, "\"block_positions\": {\"requests\": %" PRId64 ", \"every\": %" PRIu64
		", \"rows\": [", n, w.stride);
	int rc = fsp_store_each_block_position(st, r->id, block_row, &w);
	fputs("]}", out);
	return rc;
}

/* ---- one run ---------------------------------------------------------------- */

int fsp_report_write_run_data(FILE *out, struct fsp_store *st, int64_t run)
{
	if (write_facts(out, st, run) < 0)
		return -1;

	struct list steps = { .out = out };
	fputs(",\n\"steps\": [", out);
	if (fsp_store_each_step(st, run, write_step, &steps) < 0)
		return -1;
	fputs("]", out);

	struct cdf_walk cw = { .st = st, .run = run, .h = malloc(sizeof(*cw.h)),
			       .l.out = out };
	if (!cw.h)
		return -1;
	fputs(",\n\"cdf\": [", out);
	int rc = fsp_store_each_hist_key(st, run, write_cdf, &cw);
	free(cw.h);
	if (rc < 0 || cw.failed)
		return -1;
	fputs("]", out);

	/* times below are seconds since the run began */
	struct fsp_run_row r;
	if (fsp_store_load_run(st, run, &r) != 1) {
		fsp_run_row_free(&r);
		return -1;
	}
	struct timeline_walk tw = { .l.out = out, .run_start = (uint64_t)r.started_ns,
				    .step = -1 };
	fputs(",\n\"timeline\": [", out);
	rc = fsp_store_each_timeline(st, run, timeline_row, &tw);
	if (rc == 0 && !tw.failed)
		flush_timeline(&tw);
	free(tw.rows);
	struct list seg = { .out = out };
	if (rc == 0 && !tw.failed) {
		fputs("],\n\"segments\": [", out);
		rc = fsp_store_each_segment(st, run, segment_row, &seg);
	}
	if (rc == 0 && !tw.failed) {
		fputs("],\n", out);
		rc = write_heatmap(out, st, &r);
	}
	if (rc == 0 && !tw.failed) {
		fputs(",\n", out);
		rc = write_block(out, st, &r);
	}
	fsp_run_row_free(&r);
	return rc < 0 || tw.failed ? -1 : 0;
}

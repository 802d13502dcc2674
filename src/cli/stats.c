/*
 * stats.c - `fsprism stats`: per-operation, per-layer latency statistics
 * of one stored run, as a table, CSV or JSON, and for a mount with the
 * copy-on-write / journaling emulation its device-level accounting (write
 * amplification, flushes per fsync, sequentiality, extents per file).
 *
 * Latencies and byte counts come from the run's stored histograms (hist,
 * hist_bins), not from op rows, so the numbers are exact whatever the
 * record mode was and however many rows were dropped. The device counters
 * that need the order of IOs (sequential share, streams) come from the
 * dev.* run attributes the mount writes; files and extents from emu_files
 * and emu_extents.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/cli/cli.h"
#include "src/cli/opt.h"
#include "src/base/grow.h"
#include "src/base/hist.h"
#include "src/base/json.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "src/cli/compare.h"
#include "src/cli/stats.h"
#include "src/cli/stats_hosts.h"
#include "src/db/results.h"
#include "src/cli/stats_block.h"
#include "src/cli/stats_curve.h"
#include "src/cli/stats_layers.h"
#include "src/cli/stalls.h"
#include "src/cli/stats_fuse.h"
#include "src/cli/stats_part.h"
#include "src/db/store.h"

#define NQUANT 4
static const double quants[NQUANT] = { 0.50, 0.90, 0.99, 0.999 };
static const char *const quant_names[NQUANT] = { "p50", "p90", "p99", "p99.9" };
static const char *const quant_keys[NQUANT] = { "p50", "p90", "p99", "p999" };

/* Layers in the order total = backing + emu + layer. */
static const int layer_order[FSP_LAYER__COUNT] = {
	FSP_LAYER_TOTAL, FSP_LAYER_BACKING, FSP_LAYER_EMU, FSP_LAYER_LAYER
};

/* What to print besides the per-op rows. */
struct view {
	int show_steps;
	int show_emu;       /* the emu layer (an emulated mount) */
	int engine;         /* a run of the engine: only total exists */
	int rate;           /* an engine run with rate steps: total, service, lag */
	int emulation;      /* the Emulation section / "emulation" key */
	unsigned flags;     /* FSP_STATS_* */
	int op_width;       /* width of the op column in the table */
	int show_expected;  /* some op had expected replies: errors/expected */
};

static int layer_shown(const struct view *v, int l)
{
	if (v->engine)
		return l == FSP_LAYER_TOTAL ||
		       (v->rate && (l == FSP_LAYER_BACKING || l == FSP_LAYER_LAYER));
	return l != FSP_LAYER_EMU || v->show_emu;
}

struct layer_stat {
	int present;                 /* 0: no histogram stored for this layer */
	uint64_t count;
	double mean, q[NQUANT], max; /* microseconds */
};

struct op_row {
	int step, op;
	char *step_label;
	char *rate_note;             /* a load curve's step: asked, achieved, lag (malloc'd) */
	uint64_t count, bytes, errors;
	uint64_t expected;           /* replies that answer, not fail (not in errors) */
	double secs;                 /* duration the throughput is over; 0 unknown */
	struct layer_stat layer[FSP_LAYER__COUNT];
};

static void db_error(struct fsp_store *st)
{
	fprintf(stderr, "fsprism stats: database error: %s\n", fsp_store_errmsg(st));
}

/* 1 found, 0 no such run, -1 error. */
static int load_hdr(struct fsp_store *st, int64_t run, struct fsp_run_row *h)
{
	int rc = fsp_store_load_run(st, run, h);
	if (rc < 0)
		db_error(st);
	return rc;
}

static double run_secs(const struct fsp_run_row *h)
{
	if (!h->ended_ns || h->ended_ns <= h->started_ns)
		return 0;
	return (double)(h->ended_ns - h->started_ns) / 1e9;
}

static void fill_layer(struct layer_stat *ls, const struct fsp_hist *h)
{
	ls->present = 1;
	ls->count = h->count;
	ls->mean = fsp_hist_mean(h) / 1e3;
	for (int i = 0; i < NQUANT; i++)
		ls->q[i] = (double)fsp_hist_quantile(h, quants[i]) / 1e3;
	ls->max = h->count ? (double)h->max / 1e3 : 0;
}

int fsp_stats_quantile_us(struct fsp_store *st, int64_t run, int step, int op,
			  int layer, double q, double *us)
{
	struct fsp_hist *h = malloc(sizeof(*h));
	if (!h)
		return -1;
	int rc = fsp_store_load_hist(st, run, step, op, layer, h, NULL, NULL);
	if (rc == 1)
		*us = (double)fsp_hist_quantile(h, q) / 1e3;
	free(h);
	return rc == 1 ? 0 : rc == 0 ? 1 : -1;
}

/* Step durations and labels from the steps table (absent for mounts). */
static void step_info(struct fsp_store *st, int64_t run, int step, double *secs,
		      char **label)
{
	int64_t a, b;
	if (fsp_store_step_span(st, run, step, label, &a, &b) == 1 && b > a)
		*secs = (double)(b - a) / 1e9;
}

/* Run attribute rate.step.STEP.NAME as a number; -1 when absent. */
static double attr_num(struct fsp_store *st, int64_t run, const char *name, int step)
{
	char key[96];
	snprintf(key, sizeof(key), "rate.step.%d.%s", step, name);
	char *v = fsp_store_attr(st, run, key);
	double d = v ? strtod(v, NULL) : -1;
	free(v);
	return d;
}

/*
 * A load curve's facts of one step (run attributes rate.step.N.*, stored by
 * `run`): the asked and achieved IOPS, the lag of the submissions behind
 * their intended times, the late IOs. NULL for a step without them.
 */
static char *rate_note(struct fsp_store *st, int64_t run, int step)
{
	double achieved = attr_num(st, run, "achieved_iops", step);
	if (achieved < 0)
		return NULL;
	double asked = attr_num(st, run, "asked_iops", step);
	char buf[256];
	if (asked < 0)
		snprintf(buf, sizeof(buf), "closed loop (the maximum): %.0f IOPS", achieved);
	else
		snprintf(buf, sizeof(buf), "asked %.0f IOPS, achieved %.0f; lag p50 %.1f p99 %.1f "
			 "max %.1f us; late %.0f, unissued %.0f", asked, achieved,
			 attr_num(st, run, "lag_p50_ns", step) / 1e3,
			 attr_num(st, run, "lag_p99_ns", step) / 1e3,
			 attr_num(st, run, "lag_max_ns", step) / 1e3,
			 attr_num(st, run, "late_ios", step),
			 attr_num(st, run, "unissued_ios", step));
	return strdup(buf);
}

/* The rows being loaded: one per (step, op), its layers from the histograms. */
struct rows_load {
	struct fsp_store *st;
	const struct fsp_run_row *hdr;
	struct fsp_hist *h;
	struct op_row *rows;
	size_t n, cap;
	int failed;
};

static int add_row(void *arg, int step, int op)
{
	struct rows_load *ld = arg;
	if (fsp_grow((void **)&ld->rows, &ld->cap, ld->n + 1, sizeof(*ld->rows), 16)) {
		ld->failed = 1;
		return 1;
	}
	struct op_row *r = &ld->rows[ld->n];
	memset(r, 0, sizeof(*r));
	r->step = step;
	r->op = op;
	r->secs = run_secs(ld->hdr);
	step_info(ld->st, ld->hdr->id, r->step, &r->secs, &r->step_label);
	if (ld->n == 0 || ld->rows[ld->n - 1].step != step)
		r->rate_note = rate_note(ld->st, ld->hdr->id, step);
	ld->n++;
	for (int l = 0; l < FSP_LAYER__COUNT; l++) {
		uint64_t bytes, errors;
		int found = fsp_store_load_hist(ld->st, ld->hdr->id, r->step, r->op, l,
						ld->h, &bytes, &errors);
		if (found < 0) {
			ld->failed = 1;
			return 1;
		}
		if (found)
			fill_layer(&r->layer[l], ld->h);
		if (l == FSP_LAYER_TOTAL) {
			r->count = ld->h->count;
			r->bytes = bytes;
			r->errors = errors;
			r->expected = fsp_store_expected_replies(ld->st, ld->hdr->id,
								 r->step, r->op);
		}
	}
	return 0;
}

/* All (step, op) rows of a run, in step then op order. */
static int load_rows(struct fsp_store *st, const struct fsp_run_row *hdr,
		     struct op_row **rowsp, size_t *np)
{
	struct rows_load ld = { .st = st, .hdr = hdr, .h = malloc(sizeof(*ld.h)) };

	*rowsp = NULL;
	*np = 0;
	if (!ld.h)
		return -1;
	int rc = fsp_store_each_hist_key(st, hdr->id, add_row, &ld);
	free(ld.h);
	*rowsp = ld.rows;
	*np = ld.n;
	if (rc < 0 || ld.failed) {
		db_error(st);
		return -1;
	}
	return 0;
}

static double mb_per_s(const struct op_row *r)
{
	return r->secs > 0 ? (double)r->bytes / 1e6 / r->secs : NAN;
}

/*
 * The table fits 100 columns: the op column is at most OP_COLS wide (a
 * longer name stands on a line of its own above its numbers) and p90 is
 * left to --wide, CSV and JSON. --wide prints every column at full width.
 */
#define OP_COLS 10
static int quant_shown(const struct view *v, int q)
{
	return (v->flags & FSP_STATS_WIDE) || quants[q] != 0.90;
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void print_table(const struct fsp_run_row *h, const struct op_row *rows,
			size_t n, const struct view *vw, FILE *out)
{
	double secs = run_secs(h);
	int w = vw->op_width;
	fprintf(out, "run %" PRId64 " (%s%s%s)  backing %s  device %s (%s)  record %s\n",
		h->id, or_dash(h->kind), h->label ? " " : "", h->label ? h->label : "",
		or_dash(h->backing_path), or_dash(h->device), or_dash(h->fstype),
		or_dash(h->record_mode));
	if (secs > 0)
		fprintf(out, "started %s  duration %.3f s", or_dash(h->started_at), secs);
	else
		fprintf(out, "started %s  duration unknown (run did not end)",
			or_dash(h->started_at));
	fprintf(out, "  recorded %" PRId64 " rows  dropped %" PRId64 " records\n",
		h->recorded, h->dropped);
	if (h->crashed) {
		int known = h->lost && strcmp(h->lost, "unknown");
		fprintf(out, "run crashed (its process died): rows and histograms recovered up to its "
			"log's last write; records lost: %s%s%s\n", known ? "at least " : "",
			known ? h->lost : "unknown",
			known ? " (and any of its last moments, which are not known)" : "");
	}
	if (n == 0) {
		fprintf(out, "\nno operations in this run's histograms\n");
		return;
	}
	if (vw->engine && vw->rate)
		fprintf(out, "latencies in microseconds; a load curve: total = from each IO's intended "
			"issue time\n  to completion; backing = from its io_submit (the service); "
			"layer = the lag\n  (submitted behind its intended time; docs/profiles.md, "
			"\"Load curves\")\n");
	else if (vw->engine)
		fprintf(out, "latencies in microseconds; total = the engine's submission to completion\n");
	else if (vw->show_emu)
		fprintf(out, "latencies in microseconds; total = backing + emu (the emulation's "
			"extra work)\n  + layer (fsprism's own work)\n");
	else
		fprintf(out, "latencies in microseconds; total = backing + layer (fsprism's own work)\n");
	/* with expected replies: "failed/expected" in a wider column */
	int ew = vw->show_expected ? 8 : 6;
	fprintf(out, "\n%-*s %9s %10s %8s %*s %-7s", w, "op", "count", "bytes", "MB/s",
		ew, vw->show_expected ? "err/exp" : "errors", "layer");
	fprintf(out, " %8s", "mean");
	for (int i = 0; i < NQUANT; i++)
		if (quant_shown(vw, i))
			fprintf(out, " %8s", quant_names[i]);
	fprintf(out, " %8s\n", "max");

	int cur_step = -1;
	for (size_t i = 0; i < n; i++) {
		const struct op_row *r = &rows[i];
		if (vw->show_steps && r->step != cur_step) {
			cur_step = r->step;
			fprintf(out, "-- step %d%s%s", r->step, r->step_label ? ": " : "",
				r->step_label ? r->step_label : "");
			if (r->secs > 0)
				fprintf(out, " (%.3f s)", r->secs);
			fputc('\n', out);
			if (r->rate_note)
				fprintf(out, "   %s\n", r->rate_note);
		}
		for (int k = 0; k < FSP_LAYER__COUNT; k++) {
			int l = layer_order[k];
			if (!layer_shown(vw, l))
				continue;
			const struct layer_stat *ls = &r->layer[l];
			char b[32], c[32], t[32], e[32], v[32];
			if (k == 0) {
				double mbs = mb_per_s(r);
				snprintf(c, sizeof(c), "%" PRIu64, r->count);
				fsp_format_bytes(r->bytes, b, sizeof(b));
				if (isnan(mbs))
					snprintf(t, sizeof(t), "-");
				else
					snprintf(t, sizeof(t), "%.2f", mbs);
				if (vw->show_expected)
					snprintf(e, sizeof(e), "%" PRIu64 "/%" PRIu64, r->errors,
						 r->expected);
				else
					snprintf(e, sizeof(e), "%" PRIu64, r->errors);
				const char *name = fsp_op_name(r->op);
				if ((int)strlen(name) > w) {
					fprintf(out, "%s\n", name);
					name = "";
				}
				fprintf(out, "%-*s %9s %10s %8s %*s", w, name, c,
					r->bytes ? b : "-", r->bytes ? t : "-", ew, e);
			} else {
				fprintf(out, "%-*s %9s %10s %8s %*s", w, "", "", "", "", ew, "");
			}
			fprintf(out, " %-7s", fsp_layer_name(l));
			if (!ls->present) {
				fprintf(out, "%s\n", "   (not stored)");
				continue;
			}
			fsp_stats_fmt_us(v, sizeof(v), ls->mean);
			fprintf(out, " %8s", v);
			for (int q = 0; q < NQUANT; q++) {
				if (!quant_shown(vw, q))
					continue;
				fsp_stats_fmt_us(v, sizeof(v), ls->q[q]);
				fprintf(out, " %8s", v);
			}
			fsp_stats_fmt_us(v, sizeof(v), ls->max);
			fprintf(out, " %8s\n", v);
		}
	}
	fprintf(out, "(latencies in microseconds; MB/s = bytes / %s duration)\n",
		vw->show_steps ? "step" : "run");
	if (vw->show_expected)
		fprintf(out, "(err/exp: failed replies / replies that answer the question: "
			"lookup ENOENT,\n getxattr and listxattr ENODATA; both are in count)\n");
}

void fsp_stats_csv_field(FILE *out, const char *v)
{
	fputc(',', out);
	if (!v || !v[strcspn(v, ",\"\n")]) {
		fputs(v ? v : "", out);
		return;
	}
	fputc('"', out);
	for (; *v; v++) {
		if (*v == '"')
			fputc('"', out);
		fputc(*v, out);
	}
	fputc('"', out);
}

static void print_csv(const struct fsp_run_row *h, const struct op_row *rows, size_t n,
		      const struct view *vw, FILE *out)
{
	fprintf(out, "run,step,op,layer,count,bytes,mb_per_s,errors,mean_us");
	for (int q = 0; q < NQUANT; q++)
		fprintf(out, ",%s_us", quant_keys[q]);
	/* added at the end: the columns before keep their places */
	fprintf(out, ",max_us,expected,step_label,target\n");
	for (size_t i = 0; i < n; i++) {
		const struct op_row *r = &rows[i];
		double mbs = mb_per_s(r);
		for (int k = 0; k < FSP_LAYER__COUNT; k++) {
			int l = layer_order[k];
			const struct layer_stat *ls = &r->layer[l];
			if (!ls->present || !layer_shown(vw, l))
				continue;
			fprintf(out, "%" PRId64 ",%d,%s,%s,%" PRIu64 ",%" PRIu64 ",", h->id,
				r->step, fsp_op_name(r->op), fsp_layer_name(l), ls->count,
				r->bytes);
			if (!isnan(mbs))
				fprintf(out, "%.3f", mbs);
			fprintf(out, ",%" PRIu64 ",%.3f", r->errors, ls->mean);
			for (int q = 0; q < NQUANT; q++)
				fprintf(out, ",%.3f", ls->q[q]);
			fprintf(out, ",%.3f,%" PRIu64, ls->max, r->expected);
			fsp_stats_csv_field(out, r->step_label);
			fsp_stats_csv_field(out, h->label);
			fputc('\n', out);
		}
	}
}

static void json_attr_value(FILE *out, const char *v);

static void print_json(const struct fsp_run_row *h, const struct op_row *rows, size_t n,
		       const struct view *vw, FILE *out)
{
	fprintf(out, "{\n  \"run\": {\"id\": %" PRId64 ", \"kind\": ", h->id);
	fsp_json_str(out, h->kind);
	fsp_json_member_str(out, "label", h->label);
	fsp_json_member_str(out, "backing_path", h->backing_path);
	fsp_json_member_str(out, "backing_device", h->device);
	fsp_json_member_str(out, "backing_fstype", h->fstype);
	fsp_json_member_str(out, "record_mode", h->record_mode);
	fsp_json_member_str(out, "options", h->options);
	fsp_json_member_str(out, "started_at", h->started_at);
	fputs(", \"duration_s\": ", out);
	fsp_json_num(out, run_secs(h) > 0 ? run_secs(h) : NAN);
	fprintf(out, ", \"recorded\": %" PRId64 ", \"dropped\": %" PRId64,
		h->recorded, h->dropped);
	if (h->crashed) {
		fputs(", \"end\": \"crashed\", \"records_lost\": ", out);
		json_attr_value(out, h->lost ? h->lost : "unknown");
	}
	fputs("},\n", out);
	fputs("  \"ops\": [", out);
	for (size_t i = 0; i < n; i++) {
		const struct op_row *r = &rows[i];
		fprintf(out, "%s\n    {\"step\": %d, \"step_label\": ", i ? "," : "", r->step);
		fsp_json_str(out, r->step_label);
		fsp_json_member_str(out, "op", fsp_op_name(r->op));
		fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"mb_per_s\": ", r->count, r->bytes);
		fsp_json_num(out, mb_per_s(r));
		fprintf(out, ", \"errors\": %" PRIu64 ", \"expected\": %" PRIu64
			", \"layers\": {", r->errors, r->expected);
		int first = 1;
		for (int k = 0; k < FSP_LAYER__COUNT; k++) {
			int l = layer_order[k];
			const struct layer_stat *ls = &r->layer[l];
			if (!ls->present || !layer_shown(vw, l))
				continue;
			fprintf(out, "%s\n      \"%s\": {\"mean_us\": ", first ? "" : ",",
				fsp_layer_name(l));
			first = 0;
			fsp_json_num(out, ls->mean);
			for (int q = 0; q < NQUANT; q++) {
				fprintf(out, ", \"%s_us\": ", quant_keys[q]);
				fsp_json_num(out, ls->q[q]);
			}
			fputs(", \"max_us\": ", out);
			fsp_json_num(out, ls->max);
			fputc('}', out);
		}
		fputs("}}", out);
	}
	fputs(n ? "\n  ]" : "]", out);
	/* the caller adds ",\n  \"emulation\": {...}" and closes the object */
}

/* ---- the emulation's device-level accounting -------------------------- */

/* Device write kinds, in the order they are printed. */
#define NKINDS 4
static const struct {
	int op;
	const char *name;
} dev_kinds[NKINDS] = {
	{ FSP_OP_DEV_WRITE_DATA, "data" },
	{ FSP_OP_DEV_WRITE_JOURNAL, "journal" },
	{ FSP_OP_DEV_WRITE_META, "metadata" },
	{ FSP_OP_DEV_WRITE_CKPT, "checkpoint" },
};

_Static_assert(NKINDS == FSP_EMU_KINDS, "stats.h lists the same kinds");

const char *fsp_stats_emu_kind_name(int k)
{
	return k >= 0 && k < NKINDS ? dev_kinds[k].name : "?";
}

/* Is s a whole unsigned decimal number? */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return 0;
	*v = x;
	return 1;
}

/* 1 and *v if the attribute is present and a number, else 0. */
static int attr_u64(struct fsp_store *st, int64_t run, const char *key, uint64_t *v)
{
	char *t = fsp_store_attr(st, run, key);
	int ok = parse_u64(t, v);
	free(t);
	return ok;
}

int fsp_stats_emu_acct(struct fsp_store *st, int64_t run, struct fsp_emu_acct *a)
{
	uint64_t c, b;
	memset(a, 0, sizeof(*a));
	if (fsp_store_op_totals(st, run, FSP_OP_WRITE, &c, &b) < 0)
		return -1;
	a->user_write_bytes = b;
	if (fsp_store_op_totals(st, run, FSP_OP_COPY_FILE_RANGE, &c, &b) < 0)
		return -1;
	a->user_write_bytes += b;
	for (int k = 0; k < NKINDS; k++) {
		if (fsp_store_op_totals(st, run, dev_kinds[k].op, &a->writes[k],
					&a->bytes[k]) < 0)
			return -1;
		a->write_count += a->writes[k];
		a->write_bytes += a->bytes[k];
	}
	if (fsp_store_op_totals(st, run, FSP_OP_DEV_READ, &a->reads, &a->read_bytes) < 0 ||
	    fsp_store_op_totals(st, run, FSP_OP_DEV_FLUSH, &a->flushes, &b) < 0 ||
	    fsp_store_op_totals(st, run, FSP_OP_FSYNC, &a->fsyncs, &b) < 0)
		return -1;
	a->have_ios = attr_u64(st, run, "dev.ios", &a->ios);
	a->have_seq = attr_u64(st, run, "dev.seq_ios", &a->seq_ios);
	a->have_streams = attr_u64(st, run, "dev.streams_x1000", &a->streams_x1000);
	a->have_fua = attr_u64(st, run, "dev.fua_writes", &a->fua_writes);
	fsp_store_emu_file_totals(st, run, &a->files, &a->extents);
	return 0;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : NAN;
}

static double seq_share(const struct fsp_emu_acct *a)
{
	return a->have_ios && a->have_seq ? ratio(a->seq_ios, a->ios) : NAN;
}

static double streams(const struct fsp_emu_acct *a)
{
	return a->have_streams ? (double)a->streams_x1000 / 1000.0 : NAN;
}

/* "x.xxx" or "-" */
static void fmt_ratio(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f", v);
}

/* The emu.* attributes print_store_attrs has not said in its sentences. */
struct other_attrs {
	FILE *out;
	const char *const *known;
	int nknown;
	int first;
};

static int print_other_attr(void *arg, const char *k, const char *val)
{
	struct other_attrs *o = arg;
	int is_known = 0;
	for (int i = 0; i < o->nknown && !is_known; i++)
		is_known = k && !strcmp(k, o->known[i]);
	if (is_known || !k)
		return 0;
	fprintf(o->out, "%s %s=%s", o->first ? "  also:" : "", k, val ? val : "");
	o->first = 0;
	return 0;
}

/* The store's state at mount (emu.* attributes), as sentences. */
static void print_store_attrs(struct fsp_store *st, int64_t run, FILE *out)
{
	static const char *const known[] = {
		"emu.store", "emu.cow", "emu.journal", "emu.alloc", "emu.formatted",
		"emu.clean", "emu.replay.end", "emu.replay.txns", "emu.replay.blocks",
		"emu.replay.discarded", "emu.damaged_objects", "emu.bitmap_mismatches",
	};
	enum { STORE, COW, JOURNAL, ALLOC, FORMATTED, CLEAN, R_END, R_TXNS, R_BLOCKS,
	       R_DISC, DAMAGED, BITMAP, NKNOWN };
	char *v[NKNOWN];
	for (int i = 0; i < NKNOWN; i++)
		v[i] = fsp_store_attr(st, run, known[i]);

	if (v[STORE] || v[COW] || v[JOURNAL] || v[ALLOC])
		fprintf(out, "  store %s  cow %s  journal %s  alloc %s\n", or_dash(v[STORE]),
			or_dash(v[COW]), or_dash(v[JOURNAL]), or_dash(v[ALLOC]));
	if (v[FORMATTED] || v[CLEAN]) {
		int formatted = v[FORMATTED] && !strcmp(v[FORMATTED], "1");
		fprintf(out, "  at mount: %s", formatted ? "formatted a new store" :
			v[FORMATTED] ? "opened an existing store" : "store");
		/* a new store has no previous close to speak of */
		if (v[CLEAN] && !formatted)
			fprintf(out, ", %s", !strcmp(v[CLEAN], "1") ? "closed cleanly before" :
				"NOT closed cleanly before");
		fputc('\n', out);
	}
	if (v[R_END] && strcmp(v[R_END], "none"))
		fprintf(out, "  journal replay: ended at %s, %s transactions (%s blocks) replayed,"
			" %s discarded\n", v[R_END], or_dash(v[R_TXNS]), or_dash(v[R_BLOCKS]),
			or_dash(v[R_DISC]));
	if (v[DAMAGED] || v[BITMAP])
		fprintf(out, "  damaged objects %s, bitmap mismatches %s\n", or_dash(v[DAMAGED]),
			or_dash(v[BITMAP]));
	for (int i = 0; i < NKNOWN; i++)
		free(v[i]);

	/* any other emu.* attribute, so that nothing the mount said is hidden */
	struct other_attrs o = { .out = out, .known = known, .nknown = NKNOWN, .first = 1 };
	fsp_store_each_attr(st, run, FSP_ATTRS_EMU, print_other_attr, &o);
	if (!o.first)
		fputc('\n', out);
}

/* A file's path for the table: NULL and "" (no path known) say so. */
static const char *path_or_none(const char *p)
{
	return p && *p ? p : "(no path)";
}

/* The extent listing under way: the object whose extents are being listed. */
struct extent_list {
	FILE *out;
	int any;
	int64_t cur;
	unsigned ext;
};

static int print_extent_row(void *arg, const struct fsp_emu_file *f,
			    const struct fsp_emu_extent *e)
{
	struct extent_list *x = arg;
	FILE *out = x->out;
	int64_t obj = (int64_t)f->obj;
	if (!x->any || obj != x->cur) {
		fprintf(out, "%s%s (obj %" PRIu64 "): size %" PRIu64 ", %" PRIu64
			" extents\n", x->any ? "\n" : "", path_or_none(f->path), (uint64_t)obj,
			f->size, (uint64_t)f->nextents);
		fprintf(out, " %4s: %25s: %25s: %12s:\n", "ext", "logical_offset",
			"physical_offset", "length");
		x->cur = obj;
		x->ext = 0;
		x->any = 1;
	}
	uint64_t lo = e->logical, ph = e->physical, len = e->length;
	uint64_t last = len ? len - 1 : 0;
	fprintf(out, " %4u: %12" PRIu64 "..%11" PRIu64 ": %12" PRIu64 "..%11" PRIu64
		": %12" PRIu64 ":\n", x->ext++, lo, lo + last, ph, ph + last, len);
	return 0;
}

/* FIEMAP-style listing per file, in bytes, laid out like `filefrag -v`. */
static int print_extents_table(struct fsp_store *st, int64_t run, FILE *out)
{
	struct extent_list x = { .out = out, .cur = -1 };
	fprintf(out, "\nExtents (FIEMAP style: byte offsets, physically contiguous runs joined;"
		" physical = offset on the store)\n");
	int rc = fsp_store_each_emu_extent(st, run, print_extent_row, &x);
	if (!x.any && rc == 0)
		fprintf(out, "no extents recorded for this run\n");
	return rc;
}

void fsp_stats_print_fua(FILE *out, const struct fsp_emu_acct *a)
{
	if (a->have_fua)
		fprintf(out, "  FUA writes %" PRIu64 " (each sent as the write and a flush, "
			"counted in the flushes above)\n", a->fua_writes);
}

/* One row of the files table, after its heading. */
struct file_list {
	FILE *out;
	int any;
};

static int print_file_row(void *arg, const struct fsp_emu_file *f)
{
	struct file_list *l = arg;
	if (!l->any)
		fprintf(l->out, "  %12s %14s %14s %8s  %s\n", "obj", "size", "allocated",
			"extents", "path");
	l->any = 1;
	fprintf(l->out, "  %12" PRIu64 " %14" PRIu64 " %14" PRIu64 " %8" PRIu64 "  %s\n",
		f->obj, f->size, f->allocated, (uint64_t)f->nextents, path_or_none(f->path));
	return 0;
}

static int print_emulation_table(struct fsp_store *st, int64_t run,
				 const struct fsp_emu_acct *a, unsigned flags, FILE *out)
{
	char b[32], r[32];
	fprintf(out, "\nEmulation (device-level accounting of the copy-on-write / journaling store)\n");
	print_store_attrs(st, run, out);
	fsp_format_bytes(a->user_write_bytes, b, sizeof(b));
	fprintf(out, "  user bytes written (write + copy_file_range): %" PRIu64 " (%s)\n",
		a->user_write_bytes, b);
	fprintf(out, "  %-16s %10s %16s %14s\n", "device writes", "count", "bytes",
		"amplification");
	for (int k = 0; k <= NKINDS; k++) {
		uint64_t n = k < NKINDS ? a->writes[k] : a->write_count;
		uint64_t by = k < NKINDS ? a->bytes[k] : a->write_bytes;
		fmt_ratio(r, sizeof(r), ratio(by, a->user_write_bytes));
		fprintf(out, "    %-14s %10" PRIu64 " %16" PRIu64 " %14s\n",
			k < NKINDS ? dev_kinds[k].name : "total", n, by, r);
	}
	fprintf(out, "  device reads %" PRIu64 ", %" PRIu64 " bytes\n", a->reads, a->read_bytes);
	fmt_ratio(r, sizeof(r), ratio(a->flushes, a->fsyncs));
	fprintf(out, "  flushes %" PRIu64 ", user fsyncs %" PRIu64 ", flushes per fsync %s\n",
		a->flushes, a->fsyncs, r);
	fsp_stats_print_fua(out, a);
	if (a->have_ios) {
		fprintf(out, "  device IOs %" PRIu64, a->ios);
		if (a->have_seq) {
			double sh = seq_share(a);
			fprintf(out, ", sequential %" PRIu64, a->seq_ios);
			if (!isnan(sh))
				fprintf(out, " (%.1f%%)", 100.0 * sh);
		}
		if (a->have_streams)
			fprintf(out, ", streams %.3f (mean distinct streams per 16 IOs)",
				streams(a));
		fputc('\n', out);
	} else {
		fprintf(out, "  device IOs: not recorded (no dev.* attributes: the mount did not end cleanly?)\n");
	}

	fprintf(out, "  files %" PRIu64 ", extents %" PRIu64, a->files, a->extents);
	if (a->files)
		fprintf(out, " (%.2f per file)", (double)a->extents / (double)a->files);
	fputc('\n', out);
	struct file_list l = { .out = out };
	if (fsp_store_each_emu_file(st, run, print_file_row, &l) < 0)
		return -1;
	if (flags & FSP_STATS_EXTENTS)
		return print_extents_table(st, run, out);
	return 0;
}

/* A run attribute's value in JSON: a number if it is one, else a string. */
static void json_attr_value(FILE *out, const char *v)
{
	uint64_t x;
	if (parse_u64(v, &x))
		fprintf(out, "%" PRIu64, x);
	else
		fsp_json_str(out, v);
}

/* A JSON array of {"obj", "path", cols[0..2]} objects, one per file or extent. */
struct json_rows {
	FILE *out;
	const char *const *cols;
	int first;
};

static void json_obj_row(struct json_rows *j, uint64_t obj, const char *path,
			 const uint64_t v[3])
{
	fprintf(j->out, "%s\n      {\"obj\": %" PRIu64 ", \"path\": ", j->first ? "" : ",",
		obj);
	j->first = 0;
	fsp_json_str(j->out, path);
	for (int c = 0; c < 3; c++)
		fprintf(j->out, ", \"%s\": %" PRIu64, j->cols[c], v[c]);
	fputc('}', j->out);
}

static int json_file_row(void *arg, const struct fsp_emu_file *f)
{
	const uint64_t v[3] = { f->size, f->allocated, f->nextents };
	json_obj_row(arg, f->obj, f->path, v);
	return 0;
}

static int json_extent_row(void *arg, const struct fsp_emu_file *f,
			   const struct fsp_emu_extent *e)
{
	const uint64_t v[3] = { e->logical, e->physical, e->length };
	json_obj_row(arg, f->obj, f->path, v);
	return 0;
}

/* ends the array a walk filled; the walk's result */
static int json_rows_end(struct json_rows *j, int rc)
{
	fputs(j->first ? "]" : "\n    ]", j->out);
	return rc;
}

/* One "key": value of the JSON attributes object. */
static int json_attr(void *arg, const char *key, const char *value)
{
	struct json_rows *j = arg;
	fputs(j->first ? "" : ", ", j->out);
	j->first = 0;
	fsp_json_str(j->out, key);
	fputs(": ", j->out);
	json_attr_value(j->out, value);
	return 0;
}

static int print_emulation_json(struct fsp_store *st, int64_t run,
				const struct fsp_emu_acct *a, unsigned flags, FILE *out)
{
	fprintf(out, ",\n  \"emulation\": {\"user_write_bytes\": %" PRIu64 ",\n"
		"    \"write_amplification\": {", a->user_write_bytes);
	for (int k = 0; k < NKINDS; k++) {
		fprintf(out, "\"%s\": ", dev_kinds[k].name);
		fsp_json_num(out, ratio(a->bytes[k], a->user_write_bytes));
		fputs(", ", out);
	}
	fputs("\"total\": ", out);
	fsp_json_num(out, ratio(a->write_bytes, a->user_write_bytes));
	fputs("},\n    \"device_bytes\": {", out);
	for (int k = 0; k < NKINDS; k++)
		fprintf(out, "\"%s\": %" PRIu64 ", ", dev_kinds[k].name, a->bytes[k]);
	fprintf(out, "\"read\": %" PRIu64 "},\n", a->read_bytes);
	fprintf(out, "    \"flushes\": %" PRIu64 ", \"fsyncs\": %" PRIu64
		", \"flushes_per_fsync\": ", a->flushes, a->fsyncs);
	fsp_json_num(out, ratio(a->flushes, a->fsyncs));
	if (a->have_fua)
		fprintf(out, ", \"fua_writes\": %" PRIu64, a->fua_writes);
	fputs(",\n    \"device\": {\"ios\": ", out);
	if (a->have_ios)
		fprintf(out, "%" PRIu64, a->ios);
	else
		fputs("null", out);
	fputs(", \"seq_ios\": ", out);
	if (a->have_seq)
		fprintf(out, "%" PRIu64, a->seq_ios);
	else
		fputs("null", out);
	fputs(", \"seq_share\": ", out);
	fsp_json_num(out, seq_share(a));
	fputs(", \"streams\": ", out);
	fsp_json_num(out, streams(a));
	fputs("},\n    \"attributes\": {", out);

	struct json_rows attrs = { .out = out, .first = 1 };
	if (fsp_store_each_attr(st, run, FSP_ATTRS_EMU | FSP_ATTRS_DEV, json_attr, &attrs) < 0)
		return -1;

	static const char *const file_cols[3] = { "size", "allocated", "extents" };
	static const char *const extent_cols[3] = { "logical", "physical", "length" };
	fputs("},\n    \"files\": ", out);
	struct json_rows files = { .out = out, .cols = file_cols, .first = 1 };
	fputc('[', out);
	if (json_rows_end(&files, fsp_store_each_emu_file(st, run, json_file_row, &files)) < 0)
		return -1;
	if (flags & FSP_STATS_EXTENTS) {
		fputs(",\n    \"extents\": ", out);
		struct json_rows ext = { .out = out, .cols = extent_cols, .first = 1 };
		fputc('[', out);
		if (json_rows_end(&ext, fsp_store_each_emu_extent(st, run, json_extent_row,
								   &ext)) < 0)
			return -1;
	}
	fputs("}", out);
	return 0;
}

static int valid_format(const char *f)
{
	return !strcmp(f, "table") || !strcmp(f, "csv") || !strcmp(f, "json");
}

/* fsprism replay's result (replay.* attributes, docs/replay.md): the
 * fidelity and the numbers it printed, in the table; every replay.*
 * attribute in JSON. Nothing for any other run. */
struct replay_json {
	FILE *out;
	int first;
};

static int replay_json_attr(void *arg, const char *k, const char *v)
{
	struct replay_json *j = arg;
	if (strncmp(k, "replay.", 7))
		return 0;
	fprintf(j->out, "%s\n    ", j->first ? "" : ",");
	fsp_json_str(j->out, k + 7);
	fputs(": ", j->out);
	json_attr_value(j->out, v);
	j->first = 0;
	return 0;
}

static void print_replay(struct fsp_store *st, int64_t run, int json, FILE *out)
{
	static const char *keys[] = { "replay.source", "replay.reads", "replay.writes",
		"replay.read_bytes", "replay.write_bytes", "replay.read_mean_ns",
		"replay.read_p99_ns", "replay.write_mean_ns", "replay.write_p99_ns",
		"replay.wall_ns", "replay.busy_pct", "replay.lag_p50_ns", "replay.lag_p99_ns",
		"replay.lag_max_ns", "replay.late", "replay.late_ns", "replay.buffered",
		"replay.syncs", "replay.qd_max", "replay.self_lag_p99_ns", "replay.late_self" };
	enum { NK = sizeof keys / sizeof keys[0] };
	char *v[NK];
	uint64_t u[NK];
	for (size_t i = 0; i < NK; i++) {
		v[i] = fsp_store_attr(st, run, keys[i]);
		u[i] = v[i] ? strtoull(v[i], NULL, 10) : 0;
	}
	if (!v[11])
		goto out; /* no replay */
	if (json) {
		struct replay_json j = { out, 1 };
		fputs(",\n  \"replay\": {", out);
		fsp_store_each_attr(st, run, FSP_ATTRS_ALL, replay_json_attr, &j);
		fputs("\n  }", out);
		goto out;
	}
	double wall = (double)u[9] / 1e9;
	fprintf(out, "\nreplay of %s: %s%% of wall time busy (at least one IO in flight), depth max %" PRIu64 "\n",
		v[0] ? v[0] : "?", v[10] ? v[10] : "?", u[18]);
	fprintf(out, "  read   %8" PRIu64 " IOs  %8.2f MB/s  mean %8.1f us  p99 %8.1f us\n", u[1],
		wall > 0 ? (double)u[3] / 1e6 / wall : 0.0, (double)u[5] / 1e3, (double)u[6] / 1e3);
	fprintf(out, "  write  %8" PRIu64 " IOs  %8.2f MB/s  mean %8.1f us  p99 %8.1f us\n", u[2],
		wall > 0 ? (double)u[4] / 1e6 / wall : 0.0, (double)u[7] / 1e3, (double)u[8] / 1e3);
	if (u[17])
		fprintf(out, "  sync   %8" PRIu64 "\n", u[17]);
	uint64_t n = u[1] + u[2] + u[17];
	fprintf(out, "  fidelity: issue lag p50 %.1f us, p99 %.1f us, max %.1f us; %" PRIu64
		" IOs late by more than %.1f us (%.2f%%)\n", (double)u[11] / 1e3,
		(double)u[12] / 1e3, (double)u[13] / 1e3, u[14], (double)u[15] / 1e3,
		n ? 100.0 * (double)u[14] / (double)n : 0.0);
	if (v[19])
		fprintf(out, "    its own part (from when the IOs it waits for were done): p99 %.1f us; %" PRIu64
			" late by that part alone\n", (double)u[19] / 1e3, u[20]);
	if (u[16])
		fprintf(out, "  %" PRIu64 " IOs off the O_DIRECT alignment went through the page cache\n",
			u[16]);
out:
	for (size_t i = 0; i < NK; i++)
		free(v[i]);
}

int fsp_stats_print(struct fsp_store *st, int64_t run, const char *format, unsigned flags,
		    FILE *out)
{
	struct fsp_run_row hdr;
	struct op_row *rows = NULL;
	size_t n = 0;
	int rc;

	if (!format)
		format = "table";
	if (!valid_format(format)) {
		fprintf(stderr, "fsprism stats: unknown format '%s' (table, csv or json)\n",
			format);
		return -1;
	}
	rc = load_hdr(st, run, &hdr);
	if (rc == 0)
		fprintf(stderr, "fsprism stats: no run %" PRId64 " in %s\n", run,
			fsp_store_filename(st));
	if (rc <= 0) {
		fsp_run_row_free(&hdr);
		return -1;
	}
	rc = -1;
	if (hdr.kind && (!strcmp(hdr.kind, "fio-clients") || !strcmp(hdr.kind, "hosts"))) {
		/* its numbers are its hosts' runs: side by side, and merged */
		rc = fsp_stats_hosts(out, st, &hdr, format);
		goto out;
	}
	if (hdr.kind && !strcmp(hdr.kind, "compare")) {
		/* its numbers are its targets' runs: the side-by-side table */
		int f = !strcmp(format, "csv") ? CMP_CSV : !strcmp(format, "json") ? CMP_JSON
									  : CMP_TABLE;
		if (f == CMP_TABLE)
			fprintf(out, "run %" PRId64 " (compare)  device %s (%s)  started %s\n"
				"the side-by-side table of its targets' runs, as fsprism "
				"compare printed it:\n", hdr.id, or_dash(hdr.device),
				or_dash(hdr.fstype), or_dash(hdr.started_at));
		if (compare_print_table(out, st, run, NULL, f) && f == CMP_TABLE)
			fprintf(out, "(no step of any target was measured)\n");
		rc = 0;
		goto out;
	}
	if (load_rows(st, &hdr, &rows, &n) == 0) {
		struct view vw = { .flags = flags, .op_width = 6 };
		struct fsp_emu_acct acct;
		vw.show_steps = fsp_store_count_hist_steps(st, run) > 1 ||
			fsp_store_count_steps(st, run) > 0;
		vw.emulation = fsp_store_is_emulated(st, run) > 0;
		/* runs without the emulation store all-zero emu histograms: not shown */
		vw.show_emu = vw.emulation || fsp_store_emu_layer_used(st, run) > 0;
		/* the engine stores its latency as total = backing, layer 0: not a split */
		vw.engine = hdr.kind && !strcmp(hdr.kind, "run");
		char *arrivals = vw.engine ? fsp_store_attr(st, run, "rate.arrivals") : NULL;
		vw.rate = arrivals != NULL;
		free(arrivals);
		for (size_t i = 0; i < n; i++) {
			vw.show_expected |= rows[i].expected > 0;
			int len = (int)strlen(fsp_op_name(rows[i].op));
			if (len > vw.op_width && (len <= OP_COLS || (flags & FSP_STATS_WIDE)))
				vw.op_width = len;
		}
		if (vw.emulation && fsp_stats_emu_acct(st, run, &acct) < 0) {
			db_error(st);
			goto out;
		}
		/* the run's own rows and its emulation, each format its own way;
		 * then the kernel-side sections, in the same order in all three */
		int erc = 0;
		int csv = !strcmp(format, "csv"), json = !strcmp(format, "json");
		if (csv) {
			print_csv(&hdr, rows, n, &vw, out);
		} else if (json) {
			print_json(&hdr, rows, n, &vw, out);
			if (vw.emulation)
				erc = print_emulation_json(st, run, &acct, flags, out);
		} else {
			print_table(&hdr, rows, n, &vw, out);
			if (vw.rate && fsp_stats_curve(st, run, "", out) < 0)
				erc = -1;
			if (vw.emulation)
				erc = print_emulation_table(st, run, &acct, flags, out);
			else if (flags & FSP_STATS_EXTENTS)
				fprintf(out, "\nno emulated files in this run (mount without"
					" --cow/--journal/--store)\n");
		}
		if (erc == 0)
			erc = csv ? fsp_stats_block_csv(st, run, out)
			    : json ? fsp_stats_block_json(st, run, out)
				   : fsp_stats_block_table(st, run, out);
		if (erc == 0)
			erc = fsp_stats_layers(st, run, format, out);
		if (erc == 0)
			erc = fsp_stats_stalls(st, run, format, out);
		if (erc == 0)
			erc = fsp_stats_fuse(st, run, format, out);
		if (erc == 0 && !csv)
			print_replay(st, run, json, out);
		if (json)
			fputs("\n}\n", out);
		if (erc < 0)
			db_error(st);
		else
			rc = 0;
	}
out:
	for (size_t i = 0; i < n; i++) {
		free(rows[i].step_label);
		free(rows[i].rate_note);
	}
	free(rows);
	fsp_run_row_free(&hdr);
	return rc;
}

static void stats_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism stats DB [--run N] [--format table|csv|json] [--extents] [--wide]\n"
"\n"
"Per operation: count, bytes, throughput, errors (and apart from them the\n"
"expected replies: lookup ENOENT, getxattr/listxattr ENODATA), and the mean,\n"
"p50, p90, p99, p99.9 and max latency (microseconds) of each layer: total (whole\n"
"handler), backing (inside backing-store system calls, or with the\n"
"emulation the store IO that moves the user's data), emu (the emulation's\n"
"extra work; shown for emulated mounts), layer (the rest: fsprism itself).\n"
"Computed from the run's exact histograms. Default: the newest run.\n"
"An engine run with rate steps (a load curve, rate=P%%): total runs from each\n"
"IO's intended issue time, backing is the service from its io_submit, layer\n"
"the lag; each step's line is followed by its asked and achieved IOPS, the\n"
"lag's p50, p99 and max, and the IOs late by more than 1 ms or not sent;\n"
"after the table, the curve in one (a row per step, as run prints it), and in\n"
"the layers per IO the lag is its own part.\n"
"\n"
"For a mount with --cow/--journal/--store, an Emulation section (JSON key\n"
"\"emulation\"): write amplification by kind (device bytes written / user\n"
"bytes written by write and copy_file_range), flushes per fsync, device\n"
"IOs, sequential share and streams, and the files with their extent counts.\n"
"--extents also lists every file's extents (bytes, like filefrag -v);\n"
"table and json only.\n"
"\n"
"When the block layer was traced (docs/tracing.md), a Block section (JSON key\n"
"\"block\"): per step and direction, requests, queue and device time, and the\n"
"access pattern the device saw: sequential share and streams, IO sizes at\n"
"each layer, read-after-write recency, flushes and FUA writes.\n"
"\n"
"The table fits 100 columns: p90 is in CSV and JSON, and in the table with\n"
"--wide, which also prints long operation names on their numbers' line.\n");
}

int cmd_stats(int argc, char **argv)
{
	const char *path = NULL, *format = "table", *run_arg = NULL;
	unsigned flags = 0;
	int64_t run = 0;
	char err[512];

	enum { OPT_RUN = 256, OPT_FORMAT, OPT_EXTENTS, OPT_WIDE };
	static const struct option longopts[] = {
		{ "run", required_argument, NULL, OPT_RUN },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "extents", no_argument, NULL, OPT_EXTENTS },
		{ "wide", no_argument, NULL, OPT_WIDE },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct fsp_opt g;
	fsp_opt_init(&g, "stats", stats_usage, longopts, "h", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		switch (c) {
		case FSP_OPT_EXIT: return g.status;
		case OPT_RUN: run_arg = g.arg; break;
		case OPT_FORMAT: format = g.arg; break;
		case OPT_EXTENTS: flags |= FSP_STATS_EXTENTS; break;
		case OPT_WIDE: flags |= FSP_STATS_WIDE; break;
		}
	}
	if (fsp_opt_one_database(&g))
		return 2;
	path = g.pos[0];
	if (!valid_format(format)) {
		fprintf(stderr, "fsprism stats: unknown format '%s' (table, csv or json)\n", format);
		return 2;
	}
	if ((flags & FSP_STATS_EXTENTS) && !strcmp(format, "csv")) {
		fprintf(stderr, "fsprism stats: --extents needs --format table or json\n");
		return 2;
	}
	if (run_arg && fsp_opt_run_id(run_arg, &run) < 0) {
		fprintf(stderr, "fsprism stats: --run needs a positive run id, not '%s'\n", run_arg);
		return 2;
	}
	struct fsp_store *st = fsp_store_open_readonly(path, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fsprism stats: %s\n", err);
		return 1;
	}
	if (!run_arg) {
		run = fsp_store_latest_run(st);
		if (run <= 0) {
			if (run == 0)
				fprintf(stderr, "fsprism stats: no runs in %s\n", path);
			else
				db_error(st);
			fsp_store_close(st);
			return 1;
		}
	}
	int rc = fsp_stats_print(st, run, format, flags, stdout);
	fsp_store_close(st);
	if (rc == 0 && fflush(stdout) != 0) {
		fprintf(stderr, "fsprism stats: cannot write output: %s\n", strerror(errno));
		return 1;
	}
	return rc == 0 ? 0 : 1;
}

/*
 * stats.c - `fsprism stats`: per-operation, per-layer latency statistics
 * of one stored run, as a table, CSV or JSON.
 *
 * Everything comes from the run's stored histograms (hist, hist_bins), not
 * from op rows, so the numbers are exact whatever the record mode was and
 * however many rows were dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "hist.h"
#include "ops.h"
#include "stats.h"
#include "store.h"

#define NQUANT 4
static const double quants[NQUANT] = { 0.50, 0.90, 0.99, 0.999 };
static const char *const quant_names[NQUANT] = { "p50", "p90", "p99", "p99.9" };
static const char *const quant_keys[NQUANT] = { "p50", "p90", "p99", "p999" };

struct run_hdr {
	int64_t id;
	char *kind, *backing_path, *device, *fstype, *record_mode, *label;
	char *started_at, *options;
	int64_t started_ns, ended_ns; /* ended_ns 0: run did not end cleanly */
	int64_t recorded, dropped;
};

struct layer_stat {
	int present;                 /* 0: no histogram stored for this layer */
	uint64_t count;
	double mean, q[NQUANT], max; /* microseconds */
};

struct op_row {
	int step, op;
	char *step_label;
	uint64_t count, bytes, errors;
	double secs;                 /* duration the throughput is over; 0 unknown */
	struct layer_stat layer[FSP_LAYER__COUNT];
};

static char *col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	return t ? strdup((const char *)t) : NULL;
}

static void hdr_free(struct run_hdr *h)
{
	free(h->kind);
	free(h->backing_path);
	free(h->device);
	free(h->fstype);
	free(h->record_mode);
	free(h->label);
	free(h->started_at);
	free(h->options);
}

static void db_error(sqlite3 *db)
{
	fprintf(stderr, "fsprism stats: database error: %s\n", sqlite3_errmsg(db));
}

/* 1 found, 0 no such run, -1 error. */
static int load_hdr(sqlite3 *db, int64_t run, struct run_hdr *h)
{
	sqlite3_stmt *s;
	memset(h, 0, sizeof(*h));
	if (sqlite3_prepare_v2(db,
		"SELECT id, kind, backing_path, backing_device, backing_fstype,"
		" record_mode, label, started_at, options, started_ns, ended_ns,"
		" recorded, dropped FROM runs WHERE id=?", -1, &s, NULL) != SQLITE_OK) {
		db_error(db);
		return -1;
	}
	sqlite3_bind_int64(s, 1, run);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		h->id = sqlite3_column_int64(s, 0);
		h->kind = col_text(s, 1);
		h->backing_path = col_text(s, 2);
		h->device = col_text(s, 3);
		h->fstype = col_text(s, 4);
		h->record_mode = col_text(s, 5);
		h->label = col_text(s, 6);
		h->started_at = col_text(s, 7);
		h->options = col_text(s, 8);
		h->started_ns = sqlite3_column_int64(s, 9);
		h->ended_ns = sqlite3_column_int64(s, 10);
		h->recorded = sqlite3_column_int64(s, 11);
		h->dropped = sqlite3_column_int64(s, 12);
	} else if (rc != SQLITE_DONE) {
		db_error(db);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

static double run_secs(const struct run_hdr *h)
{
	if (!h->ended_ns || h->ended_ns <= h->started_ns)
		return 0;
	return (double)(h->ended_ns - h->started_ns) / 1e9;
}

int64_t fsp_stats_latest_run(sqlite3 *db)
{
	sqlite3_stmt *s;
	int64_t id = -1;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) FROM runs", -1, &s,
			       NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
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

int fsp_stats_quantile_us(sqlite3 *db, int64_t run, int step, int op,
			  int layer, double q, double *us)
{
	struct fsp_hist *h = malloc(sizeof(*h));
	if (!h)
		return -1;
	int rc = fsp_store_load_hist_db(db, run, step, op, layer, h, NULL, NULL);
	if (rc == 1)
		*us = (double)fsp_hist_quantile(h, q) / 1e3;
	free(h);
	return rc == 1 ? 0 : rc == 0 ? 1 : -1;
}

/* Step durations and labels from the steps table (absent for mounts). */
static void step_info(sqlite3 *db, int64_t run, int step, double *secs, char **label)
{
	sqlite3_stmt *s;
	*label = NULL;
	if (sqlite3_prepare_v2(db,
		"SELECT label, started_ns, ended_ns FROM steps WHERE run=? AND step=?",
		-1, &s, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	if (sqlite3_step(s) == SQLITE_ROW) {
		*label = col_text(s, 0);
		int64_t a = sqlite3_column_int64(s, 1), b = sqlite3_column_int64(s, 2);
		if (b > a)
			*secs = (double)(b - a) / 1e9;
	}
	sqlite3_finalize(s);
}

/* All (step, op) rows of a run, in step then op order. */
static int load_rows(sqlite3 *db, const struct run_hdr *hdr, struct op_row **rowsp,
		     size_t *np)
{
	sqlite3_stmt *s;
	struct op_row *rows = NULL;
	size_t n = 0, cap = 0;
	struct fsp_hist *h = malloc(sizeof(*h));
	int rc;

	*rowsp = NULL;
	*np = 0;
	if (!h)
		return -1;
	if (sqlite3_prepare_v2(db,
		"SELECT DISTINCT step, op FROM hist WHERE run=? ORDER BY step, op",
		-1, &s, NULL) != SQLITE_OK) {
		db_error(db);
		free(h);
		return -1;
	}
	sqlite3_bind_int64(s, 1, hdr->id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct op_row *r = realloc(rows, cap * sizeof(*rows));
			if (!r)
				break;
			rows = r;
		}
		struct op_row *r = &rows[n];
		memset(r, 0, sizeof(*r));
		r->step = sqlite3_column_int(s, 0);
		r->op = sqlite3_column_int(s, 1);
		r->secs = run_secs(hdr);
		step_info(db, hdr->id, r->step, &r->secs, &r->step_label);
		n++;
		for (int l = 0; l < FSP_LAYER__COUNT; l++) {
			uint64_t bytes, errors;
			int found = fsp_store_load_hist_db(db, hdr->id, r->step, r->op, l,
							   h, &bytes, &errors);
			if (found < 0) {
				rc = SQLITE_ERROR;
				goto out;
			}
			if (found)
				fill_layer(&r->layer[l], h);
			if (l == FSP_LAYER_TOTAL) {
				r->count = h->count;
				r->bytes = bytes;
				r->errors = errors;
			}
		}
	}
out:
	sqlite3_finalize(s);
	free(h);
	*rowsp = rows;
	*np = n;
	if (rc != SQLITE_DONE) {
		db_error(db);
		return -1;
	}
	return 0;
}

static int count_query(sqlite3 *db, const char *sql, int64_t run)
{
	sqlite3_stmt *s;
	int v = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, run);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

static double mb_per_s(const struct op_row *r)
{
	return r->secs > 0 ? (double)r->bytes / 1e6 / r->secs : NAN;
}

/* Microseconds with precision that fits 8 columns. */
static void fmt_us(char *buf, size_t len, double us)
{
	if (us < 100)
		snprintf(buf, len, "%.2f", us);
	else if (us < 100000)
		snprintf(buf, len, "%.1f", us);
	else
		snprintf(buf, len, "%.0f", us);
}

static void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void print_table(const struct run_hdr *h, const struct op_row *rows,
			size_t n, int show_steps, FILE *out)
{
	double secs = run_secs(h);
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
	if (n == 0) {
		fprintf(out, "\nno operations in this run's histograms\n");
		return;
	}
	fprintf(out, "latencies in microseconds; total = backing + layer (fsprism's own work)\n");
	fprintf(out, "\n%-15s %9s %10s %8s %6s %-7s", "op", "count", "bytes", "MB/s",
		"errors", "layer");
	fprintf(out, " %8s", "mean");
	for (int i = 0; i < NQUANT; i++)
		fprintf(out, " %8s", quant_names[i]);
	fprintf(out, " %8s\n", "max");

	int cur_step = -1;
	for (size_t i = 0; i < n; i++) {
		const struct op_row *r = &rows[i];
		if (show_steps && r->step != cur_step) {
			cur_step = r->step;
			fprintf(out, "-- step %d%s%s", r->step, r->step_label ? ": " : "",
				r->step_label ? r->step_label : "");
			if (r->secs > 0)
				fprintf(out, " (%.3f s)", r->secs);
			fputc('\n', out);
		}
		for (int l = 0; l < FSP_LAYER__COUNT; l++) {
			const struct layer_stat *ls = &r->layer[l];
			char b[32], c[32], t[32], e[32], v[32];
			if (l == 0) {
				double mbs = mb_per_s(r);
				snprintf(c, sizeof(c), "%" PRIu64, r->count);
				fmt_bytes(b, sizeof(b), r->bytes);
				if (isnan(mbs))
					snprintf(t, sizeof(t), "-");
				else
					snprintf(t, sizeof(t), "%.2f", mbs);
				snprintf(e, sizeof(e), "%" PRIu64, r->errors);
				fprintf(out, "%-15s %9s %10s %8s %6s", fsp_op_name(r->op), c,
					r->bytes ? b : "-", r->bytes ? t : "-", e);
			} else {
				fprintf(out, "%-15s %9s %10s %8s %6s", "", "", "", "", "");
			}
			fprintf(out, " %-7s", fsp_layer_name(l));
			if (!ls->present) {
				fprintf(out, "%s\n", "   (not stored)");
				continue;
			}
			fmt_us(v, sizeof(v), ls->mean);
			fprintf(out, " %8s", v);
			for (int q = 0; q < NQUANT; q++) {
				fmt_us(v, sizeof(v), ls->q[q]);
				fprintf(out, " %8s", v);
			}
			fmt_us(v, sizeof(v), ls->max);
			fprintf(out, " %8s\n", v);
		}
	}
	fprintf(out, "(latencies in microseconds; MB/s = bytes / %s duration)\n",
		show_steps ? "step" : "run");
}

static void print_csv(const struct run_hdr *h, const struct op_row *rows, size_t n,
		      FILE *out)
{
	fprintf(out, "run,step,op,layer,count,bytes,mb_per_s,errors,mean_us");
	for (int q = 0; q < NQUANT; q++)
		fprintf(out, ",%s_us", quant_keys[q]);
	fprintf(out, ",max_us\n");
	for (size_t i = 0; i < n; i++) {
		const struct op_row *r = &rows[i];
		double mbs = mb_per_s(r);
		for (int l = 0; l < FSP_LAYER__COUNT; l++) {
			const struct layer_stat *ls = &r->layer[l];
			if (!ls->present)
				continue;
			fprintf(out, "%" PRId64 ",%d,%s,%s,%" PRIu64 ",%" PRIu64 ",", h->id,
				r->step, fsp_op_name(r->op), fsp_layer_name(l), ls->count,
				r->bytes);
			if (!isnan(mbs))
				fprintf(out, "%.3f", mbs);
			fprintf(out, ",%" PRIu64 ",%.3f", r->errors, ls->mean);
			for (int q = 0; q < NQUANT; q++)
				fprintf(out, ",%.3f", ls->q[q]);
			fprintf(out, ",%.3f\n", ls->max);
		}
	}
}

static void json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void json_num(FILE *out, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", out);
	else
		fprintf(out, "%.3f", v);
}

static void print_json(const struct run_hdr *h, const struct op_row *rows, size_t n,
		       FILE *out)
{
	fprintf(out, "{\n  \"run\": {\"id\": %" PRId64 ", \"kind\": ", h->id);
	json_str(out, h->kind);
	fputs(", \"label\": ", out);
	json_str(out, h->label);
	fputs(", \"backing_path\": ", out);
	json_str(out, h->backing_path);
	fputs(", \"backing_device\": ", out);
	json_str(out, h->device);
	fputs(", \"backing_fstype\": ", out);
	json_str(out, h->fstype);
	fputs(", \"record_mode\": ", out);
	json_str(out, h->record_mode);
	fputs(", \"options\": ", out);
	json_str(out, h->options);
	fputs(", \"started_at\": ", out);
	json_str(out, h->started_at);
	fputs(", \"duration_s\": ", out);
	json_num(out, run_secs(h) > 0 ? run_secs(h) : NAN);
	fprintf(out, ", \"recorded\": %" PRId64 ", \"dropped\": %" PRId64 "},\n",
		h->recorded, h->dropped);
	fputs("  \"ops\": [", out);
	for (size_t i = 0; i < n; i++) {
		const struct op_row *r = &rows[i];
		fprintf(out, "%s\n    {\"step\": %d, \"step_label\": ", i ? "," : "", r->step);
		json_str(out, r->step_label);
		fputs(", \"op\": ", out);
		json_str(out, fsp_op_name(r->op));
		fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"mb_per_s\": ", r->count, r->bytes);
		json_num(out, mb_per_s(r));
		fprintf(out, ", \"errors\": %" PRIu64 ", \"layers\": {", r->errors);
		int first = 1;
		for (int l = 0; l < FSP_LAYER__COUNT; l++) {
			const struct layer_stat *ls = &r->layer[l];
			if (!ls->present)
				continue;
			fprintf(out, "%s\n      \"%s\": {\"mean_us\": ", first ? "" : ",",
				fsp_layer_name(l));
			first = 0;
			json_num(out, ls->mean);
			for (int q = 0; q < NQUANT; q++) {
				fprintf(out, ", \"%s_us\": ", quant_keys[q]);
				json_num(out, ls->q[q]);
			}
			fputs(", \"max_us\": ", out);
			json_num(out, ls->max);
			fputc('}', out);
		}
		fputs("}}", out);
	}
	fputs(n ? "\n  ]\n}\n" : "]\n}\n", out);
}

static int valid_format(const char *f)
{
	return !strcmp(f, "table") || !strcmp(f, "csv") || !strcmp(f, "json");
}

int fsp_stats_print(sqlite3 *db, int64_t run, const char *format, FILE *out)
{
	struct run_hdr hdr;
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
	rc = load_hdr(db, run, &hdr);
	if (rc == 0)
		fprintf(stderr, "fsprism stats: no run %" PRId64 " in %s\n", run,
			sqlite3_db_filename(db, "main"));
	if (rc <= 0) {
		hdr_free(&hdr);
		return -1;
	}
	if (load_rows(db, &hdr, &rows, &n) == 0) {
		int show_steps =
			count_query(db, "SELECT count(DISTINCT step) FROM hist WHERE run=?", run) > 1 ||
			count_query(db, "SELECT count(*) FROM steps WHERE run=?", run) > 0;
		if (!strcmp(format, "csv"))
			print_csv(&hdr, rows, n, out);
		else if (!strcmp(format, "json"))
			print_json(&hdr, rows, n, out);
		else
			print_table(&hdr, rows, n, show_steps, out);
		rc = 0;
	} else {
		rc = -1;
	}
	for (size_t i = 0; i < n; i++)
		free(rows[i].step_label);
	free(rows);
	hdr_free(&hdr);
	return rc;
}

static void stats_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism stats DB [--run N] [--format table|csv|json]\n"
"\n"
"Per operation: count, bytes, throughput, errors, and the mean, p50, p90,\n"
"p99, p99.9 and max latency (microseconds) of each layer: total (whole\n"
"handler), backing (inside backing-store system calls), layer (the rest).\n"
"Computed from the run's exact histograms. Default: the newest run.\n");
}

static int parse_run_id(const char *s, int64_t *id)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 1)
		return -1;
	*id = v;
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	const char *path = NULL, *format = "table", *run_arg = NULL;
	int64_t run = 0;
	char err[512];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			stats_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--run") || !strcmp(a, "--format")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "fsprism stats: %s needs a value\n", a);
				return 2;
			}
			if (a[2] == 'r')
				run_arg = argv[++i];
			else
				format = argv[++i];
		} else if (!strncmp(a, "--run=", 6)) {
			run_arg = a + 6;
		} else if (!strncmp(a, "--format=", 9)) {
			format = a + 9;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "fsprism stats: unknown option '%s'\n", a);
			return 2;
		} else if (!path) {
			path = a;
		} else {
			fprintf(stderr, "fsprism stats: unexpected argument '%s' (one database only)\n", a);
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "fsprism stats: no database given (usage: fsprism stats DB [--run N] [--format F])\n");
		return 2;
	}
	if (!valid_format(format)) {
		fprintf(stderr, "fsprism stats: unknown format '%s' (table, csv or json)\n", format);
		return 2;
	}
	if (run_arg && parse_run_id(run_arg, &run) < 0) {
		fprintf(stderr, "fsprism stats: --run needs a positive run id, not '%s'\n", run_arg);
		return 2;
	}
	sqlite3 *db = fsp_store_open_existing(path, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "fsprism stats: %s\n", err);
		return 1;
	}
	if (!run_arg) {
		run = fsp_stats_latest_run(db);
		if (run <= 0) {
			if (run == 0)
				fprintf(stderr, "fsprism stats: no runs in %s\n", path);
			else
				fprintf(stderr, "fsprism stats: database error: %s\n",
					sqlite3_errmsg(db));
			sqlite3_close(db);
			return 1;
		}
	}
	int rc = fsp_stats_print(db, run, format, stdout);
	sqlite3_close(db);
	if (rc == 0 && fflush(stdout) != 0) {
		fprintf(stderr, "fsprism stats: cannot write output: %s\n", strerror(errno));
		return 1;
	}
	return rc == 0 ? 0 : 1;
}

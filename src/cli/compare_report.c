/*
 * compare_report.c - what `fsprism compare` prints once its targets have run:
 * per step and target MB/s, p50/p99 latency and the ratio to raw; for the
 * fsprism and emu targets the per-layer split their mounts logged during the
 * same steps; for emu the device-level accounting of its mount. Everything
 * is read back from the database (src/db/results.h), so it is what `stats`
 * would show for the same runs.
 */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/hist.h"
#include "src/base/json.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "src/cli/compare.h"
#include "src/cli/diagnose.h"
#include "src/cli/stats.h"
#include "src/cli/stats_curve.h"
#include "src/cli/stats_layers.h"
#include "src/db/decomp_rows.h"
#include "src/db/results.h"
#include "src/db/store.h"

/* the report's width without --wide */

const char *const target_label[T__COUNT] = { "raw", "fs", "fsprism", "emu" };

struct step_row {
	int step;
	char label[64];
	char access[16];
	int64_t bs, qd, read_pct;
	double mbps;
	double p50r, p99r, p50w, p99w; /* µs; < 0: no such IOs */
};

struct target_result {
	int64_t run;            /* 0: not run */
	struct step_row *rows;
	int nrows;
};

/* Quantile in µs of one step's op (total layer), -1 if absent. */
static double step_quantile(struct fsp_store *st, struct fsp_hist *h,
			    int64_t run, int step, int op, double q)
{
	uint64_t bytes, errors;
	if (fsp_store_load_hist(st, run, step, op, FSP_LAYER_TOTAL, h, &bytes,
				&errors) != 1 || !h->count)
		return -1;
	return (double)fsp_hist_quantile(h, q) / 1000.0;
}

/* One engine run's steps being loaded, with their quantiles. */
struct target_load {
	struct fsp_store *st;
	struct fsp_hist *h;
	struct target_result *tr;
};

static int add_step_row(void *arg, const struct fsp_step_row *sr)
{
	struct target_load *ld = arg;
	struct target_result *tr = ld->tr;
	struct step_row *r = realloc(tr->rows, sizeof *r * (size_t)(tr->nrows + 1));
	if (!r)
		return 1;
	tr->rows = r;
	r = &tr->rows[tr->nrows++];
	memset(r, 0, sizeof *r);
	r->step = sr->step;
	snprintf(r->label, sizeof r->label, "%s", sr->label ? sr->label : "");
	snprintf(r->access, sizeof r->access, "%s", sr->access ? sr->access : "");
	r->bs = sr->block_size;
	r->qd = sr->qd;
	r->read_pct = sr->read_pct;
	int64_t busy = (int64_t)sr->busy_ns;
	int64_t bytes = (int64_t)(sr->read_bytes + sr->write_bytes);
	r->mbps = busy > 0 ? (double)bytes / 1e6 / ((double)busy / 1e9) : 0;
	r->p50r = step_quantile(ld->st, ld->h, tr->run, r->step, FSP_OP_READ, 0.50);
	r->p99r = step_quantile(ld->st, ld->h, tr->run, r->step, FSP_OP_READ, 0.99);
	r->p50w = step_quantile(ld->st, ld->h, tr->run, r->step, FSP_OP_WRITE, 0.50);
	r->p99w = step_quantile(ld->st, ld->h, tr->run, r->step, FSP_OP_WRITE, 0.99);
	return 0;
}

static void load_target(struct fsp_store *st, struct fsp_hist *h,
			struct target_result *tr)
{
	struct target_load ld = { .st = st, .h = h, .tr = tr };
	fsp_store_each_step(st, tr->run, add_step_row, &ld);
}

static const struct step_row *find_step(const struct target_result *tr, int step)
{
	for (int i = 0; i < tr->nrows; i++)
		if (tr->rows[i].step == step)
			return &tr->rows[i];
	return NULL;
}

static void print_us(FILE *out, double us)
{
	if (us < 0)
		fprintf(out, " %9s", "-");
	else if (us < 100)
		fprintf(out, " %9.1f", us);
	else
		fprintf(out, " %9.0f", us);
}

/* A run attribute into buf ("-" if absent). */
static const char *run_attr(struct fsp_store *st, int64_t run, const char *key,
			    char *buf, size_t len)
{
	char *v = fsp_store_attr(st, run, key);
	snprintf(buf, len, "%s", v ? v : "-");
	free(v);
	return buf;
}

/*
 * The side-by-side table's content: per target its run and rows, which of
 * its steps it finished (an interrupted run's last step stopped part way),
 * and the steps every target finished, which the mean is over.
 */
struct cmp_table {
	struct target_result tr[T__COUNT];
	int want[T__COUNT];
	char name[T__COUNT][32];   /* the fs target by its file system */
	int interrupted[T__COUNT]; /* its engine run was interrupted */
	int cmp_interrupted;       /* the compare was */
	const struct target_result *ref; /* the step list */
};

static void table_load(struct cmp_table *ct, struct fsp_store *st, int64_t cmp_run,
		       const int want[T__COUNT])
{
	struct fsp_hist *h = malloc(sizeof *h);
	char fs[32];
	memset(ct, 0, sizeof *ct);
	run_attr(st, cmp_run, "fs", fs, sizeof fs);
	char *v = fsp_store_attr(st, cmp_run, "interrupted");
	ct->cmp_interrupted = v && !strcmp(v, "1");
	free(v);
	for (int t = 0; t < T__COUNT; t++) {
		snprintf(ct->name[t], sizeof ct->name[t], "%s",
			 t == T_FS && strcmp(fs, "-") ? fs : target_label[t]);
		ct->tr[t].run = fsp_store_child_run(st, cmp_run, target_label[t]);
		ct->want[t] = want ? want[t] : ct->tr[t].run > 0;
		if (!ct->want[t] || !ct->tr[t].run)
			continue;
		if (h)
			load_target(st, h, &ct->tr[t]);
		v = fsp_store_attr(st, ct->tr[t].run, "interrupted");
		ct->interrupted[t] = v && !strcmp(v, "1");
		free(v);
	}
	free(h);
	for (int t = 0; t < T__COUNT && !ct->ref; t++)
		if (ct->tr[t].nrows)
			ct->ref = &ct->tr[t];
}

static void table_free(struct cmp_table *ct)
{
	for (int t = 0; t < T__COUNT; t++)
		free(ct->tr[t].rows);
}

/* Did target t finish step? (an interrupted run's last step did not) */
static int step_finished(const struct cmp_table *ct, int t, int step)
{
	const struct target_result *tr = &ct->tr[t];
	if (!find_step(tr, step))
		return 0;
	return !(ct->interrupted[t] && tr->rows[tr->nrows - 1].step == step);
}

/* Did every wanted target finish step? */
static int step_common(const struct cmp_table *ct, int step)
{
	for (int t = 0; t < T__COUNT; t++)
		if (ct->want[t] && !step_finished(ct, t, step))
			return 0;
	return 1;
}

/* Target t's mean MB/s over the steps every target finished; n of them. */
static double table_mean(const struct cmp_table *ct, int t, int *n)
{
	double sum = 0;
	*n = 0;
	for (int i = 0; ct->ref && i < ct->ref->nrows; i++) {
		int step = ct->ref->rows[i].step;
		if (!step_common(ct, step))
			continue;
		sum += find_step(&ct->tr[t], step)->mbps;
		(*n)++;
	}
	return *n ? sum / *n : 0;
}

/* r's throughput against raw's in the same step; < 0 without one. */
static double x_raw(const struct cmp_table *ct, const struct step_row *r)
{
	const struct step_row *raw = find_step(&ct->tr[T_RAW], r->step);
	return raw && raw->mbps > 0 ? r->mbps / raw->mbps : -1;
}

static void print_steps(FILE *out, const struct cmp_table *ct)
{
	if (!ct->ref) {
		fprintf(out, "no steps were measured\n");
		return;
	}
	int said_stop[T__COUNT] = { 0 };
	for (int i = 0; i < ct->ref->nrows; i++) {
		const struct step_row *r0 = &ct->ref->rows[i];
		fprintf(out, "\nstep %d  %s  (%s, %" PRId64 " KiB, QD%" PRId64
			", %" PRId64 "%% reads)\n", r0->step, r0->label, r0->access,
			r0->bs / 1024, r0->qd, r0->read_pct);
		fprintf(out, "  %-8s %9s %7s %9s %9s %9s %9s   (latency in us)\n",
			"target", "MB/s", "x raw", "read p50", "read p99",
			"write p50", "write p99");
		for (int t = 0; t < T__COUNT; t++) {
			if (!ct->want[t])
				continue;
			const struct step_row *r = find_step(&ct->tr[t], r0->step);
			const char *name = ct->name[t];
			if (!r) {
				/* where an interrupted compare stopped: said once */
				int here = ct->cmp_interrupted && !said_stop[t];
				said_stop[t] = 1;
				fprintf(out, "  %-8s %9s\n", name,
					here ? "interrupted" : "(not run)");
				continue;
			}
			fprintf(out, "  %-8s %9.1f", name, r->mbps);
			double x = x_raw(ct, r);
			if (x >= 0)
				fprintf(out, " %7.2f", x);
			else
				fprintf(out, " %7s", "-");
			print_us(out, r->p50r);
			print_us(out, r->p99r);
			print_us(out, r->p50w);
			print_us(out, r->p99w);
			if (!step_finished(ct, t, r0->step)) {
				said_stop[t] = 1;
				fprintf(out, "  interrupted");
			}
			fputc('\n', out);
		}
	}
	int n = 0;
	double raw_mean = ct->want[T_RAW] ? table_mean(ct, T_RAW, &n) : 0;
	int nall = 0;
	for (int t = 0; t < T__COUNT && !nall; t++)
		if (ct->want[t])
			table_mean(ct, t, &nall);
	if (!nall) {
		fprintf(out, "\nno step was finished by every target: no mean\n");
		return;
	}
	if (nall < ct->ref->nrows)
		fprintf(out, "\nmean over the %d steps every target finished (MB/s):", nall);
	else
		fprintf(out, "\nmean over steps (MB/s):");
	for (int t = 0; t < T__COUNT; t++) {
		if (!ct->want[t])
			continue;
		double m = table_mean(ct, t, &n);
		fprintf(out, "  %s %.1f", ct->name[t], m);
		if (t != T_RAW && ct->want[T_RAW] && raw_mean > 0)
			fprintf(out, " (x%.2f)", m / raw_mean);
	}
	fputc('\n', out);
}

/* A value, or the empty CSV field / JSON null where there is none. */
static void csv_num(FILE *out, double v)
{
	if (v >= 0)
		fprintf(out, ",%.3f", v);
	else
		fputc(',', out);
}

static void json_num(FILE *out, const char *key, double v)
{
	fprintf(out, ", \"%s\": ", key);
	fsp_json_num(out, v >= 0 ? v : NAN);
}

/* One row per step and target: what the table prints, at full precision. */
static void print_steps_csv(FILE *out, const struct cmp_table *ct, int64_t cmp_run)
{
	fprintf(out, "compare_run,step,step_label,access,block_size,qd,read_pct,target,"
		"name,run,finished,mb_per_s,x_raw,read_p50_us,read_p99_us,write_p50_us,"
		"write_p99_us\n");
	for (int i = 0; ct->ref && i < ct->ref->nrows; i++) {
		const struct step_row *r0 = &ct->ref->rows[i];
		for (int t = 0; t < T__COUNT; t++) {
			const struct step_row *r = find_step(&ct->tr[t], r0->step);
			if (!ct->want[t] || !r)
				continue;
			fprintf(out, "%" PRId64 ",%d,%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64
				",%s,%s,%" PRId64 ",%d,%.3f", cmp_run, r->step, r->label,
				r->access, r->bs, r->qd, r->read_pct, target_label[t],
				ct->name[t], ct->tr[t].run, step_finished(ct, t, r->step),
				r->mbps);
			csv_num(out, x_raw(ct, r));
			csv_num(out, r->p50r);
			csv_num(out, r->p99r);
			csv_num(out, r->p50w);
			csv_num(out, r->p99w);
			fputc('\n', out);
		}
	}
}

static void print_steps_json(FILE *out, struct fsp_store *st, const struct cmp_table *ct,
			     int64_t cmp_run)
{
	char profile[256], device[PATH_MAX];
	fprintf(out, "{\n  \"compare_run\": %" PRId64 ", \"profile\": ", cmp_run);
	fsp_json_str(out, run_attr(st, cmp_run, "profile", profile, sizeof profile));
	fsp_json_member_str(out, "fs", ct->name[T_FS]);
	fsp_json_member_str(out, "device", run_attr(st, cmp_run, "device", device, sizeof device));
	fprintf(out, ", \"interrupted\": %s,\n  \"targets\": [",
		ct->cmp_interrupted ? "true" : "false");
	int first = 1;
	for (int t = 0; t < T__COUNT; t++) {
		if (!ct->want[t])
			continue;
		fprintf(out, "%s\n    {\"target\": \"%s\", \"name\": ", first ? "" : ",",
			target_label[t]);
		first = 0;
		fsp_json_str(out, ct->name[t]);
		fprintf(out, ", \"run\": ");
		if (ct->tr[t].run)
			fprintf(out, "%" PRId64, ct->tr[t].run);
		else
			fputs("null", out);
		int n;
		double m = table_mean(ct, t, &n);
		fputs(", \"mean_mb_per_s\": ", out);
		fsp_json_num(out, n ? m : NAN);
		fprintf(out, ", \"mean_steps\": %d}", n);
	}
	fputs("\n  ],\n  \"steps\": [", out);
	for (int i = 0; ct->ref && i < ct->ref->nrows; i++) {
		const struct step_row *r0 = &ct->ref->rows[i];
		fprintf(out, "%s\n    {\"step\": %d, \"step_label\": ", i ? "," : "", r0->step);
		fsp_json_str(out, r0->label);
		fsp_json_member_str(out, "access", r0->access);
		fprintf(out, ", \"block_size\": %" PRId64 ", \"qd\": %" PRId64
			", \"read_pct\": %" PRId64 ", \"targets\": {", r0->bs, r0->qd,
			r0->read_pct);
		first = 1;
		for (int t = 0; t < T__COUNT; t++) {
			const struct step_row *r = find_step(&ct->tr[t], r0->step);
			if (!ct->want[t] || !r)
				continue;
			fprintf(out, "%s\n      \"%s\": {\"run\": %" PRId64 ", \"finished\": %s",
				first ? "" : ",", target_label[t], ct->tr[t].run,
				step_finished(ct, t, r->step) ? "true" : "false");
			first = 0;
			json_num(out, "mb_per_s", r->mbps);
			json_num(out, "x_raw", x_raw(ct, r));
			json_num(out, "read_p50_us", r->p50r);
			json_num(out, "read_p99_us", r->p99r);
			json_num(out, "write_p50_us", r->p50w);
			json_num(out, "write_p99_us", r->p99w);
			fputc('}', out);
		}
		fputs("}}", out);
	}
	fputs(ct->ref && ct->ref->nrows ? "\n  ]\n}\n" : "]\n}\n", out);
}

int compare_print_table(FILE *out, struct fsp_store *st, int64_t cmp_run,
			const int want[T__COUNT], int format)
{
	struct cmp_table ct;
	table_load(&ct, st, cmp_run, want);
	if (format == CMP_JSON)
		print_steps_json(out, st, &ct, cmp_run);
	else if (format == CMP_CSV)
		print_steps_csv(out, &ct, cmp_run);
	else
		print_steps(out, &ct);
	int measured = ct.ref != NULL;
	table_free(&ct);
	return measured ? 0 : -1;
}

static void print_hist_row(FILE *out, int op, const char *name,
			   const struct fsp_hist *h)
{
	fprintf(out, "  %-6s %-16s %10" PRIu64, fsp_op_name(op), name, h->count);
	print_us(out, fsp_hist_mean(h) / 1000.0);
	print_us(out, (double)fsp_hist_quantile(h, 0.50) / 1000.0);
	print_us(out, (double)fsp_hist_quantile(h, 0.99) / 1000.0);
	fputc('\n', out);
}

/*
 * The split of the fsprism or emu target: what the engine saw per IO, what
 * the FUSE handler measured (total), how much of that was the backing file
 * system's system call (backing; for emu the store IO that moves the
 * user's data), the copy-on-write / journaling emulation's extra work
 * (emu; printed only when a mount emulated, i.e. when it is not all zero)
 * and fsprism itself (layer). The engine's time minus the handler's total
 * is the kernel's part: VFS, the FUSE request round trip, and the wake-ups
 * on both sides.
 *
 * The FUSE side comes from the mount's op rows inside the engine's step
 * windows when they were recorded (record=full, nothing dropped); else
 * from its histograms, which also count preparing the target file.
 */
static void print_layers(FILE *out, struct fsp_store *st, int t,
			 int64_t engine_run, int64_t mount_run)
{
	struct fsp_hist *h = malloc(sizeof *h * FSP_LAYER__COUNT);
	int64_t win[256][2];
	int nwin = fsp_store_step_windows(st, engine_run, win, 256);
	int64_t recorded = 0, dropped = 0;
	struct fsp_run_row mr;
	if (!h)
		goto done;
	if (fsp_store_load_run(st, mount_run, &mr) == 1) {
		recorded = mr.recorded;
		dropped = mr.dropped;
	}
	fsp_run_row_free(&mr);
	int use_rows = recorded > 0 && nwin > 0;
	fprintf(out, "\n%s target, per layer (engine run %" PRId64
		", FUSE log of mount run %" PRId64 "; latency in us)\n",
		target_label[t], engine_run, mount_run);
	if (use_rows)
		fprintf(out, "  FUSE requests that started during the %d measured "
			"steps%s\n", nwin, dropped ? " (some op rows were dropped: "
			"a sample)" : "");
	else
		fprintf(out, "  FUSE histograms of the whole mount (op rows not "
			"recorded), including preparing the target file\n");
	fprintf(out, "  %-6s %-16s %10s %9s %9s %9s\n", "op", "layer", "count",
		"mean", "p50", "p99");
	static const int ops[] = { FSP_OP_READ, FSP_OP_WRITE };
	/* display order: the parts in the order total = backing + emu + layer */
	const struct { int layer; const char *name; } rows[] = {
		{ FSP_LAYER_TOTAL, "fuse total" },
		/* with the emulation the backing layer is the store's device IO */
		{ FSP_LAYER_BACKING, t == T_EMU ? "  store IO" : "  backing fs" },
		{ FSP_LAYER_EMU, "  emulation" },
		{ FSP_LAYER_LAYER, "  fsprism" },
	};
	_Static_assert(sizeof(rows) / sizeof(rows[0]) == FSP_LAYER__COUNT,
		       "every layer has a row in the split");
	for (size_t i = 0; i < 2; i++) {
		int op = ops[i];
		fsp_store_load_hist_merged(st, engine_run, op, FSP_LAYER_TOTAL, &h[0]);
		if (!h[0].count)
			continue;
		double engine_mean = fsp_hist_mean(&h[0]) / 1000.0;
		print_hist_row(out, op, "engine (app)", &h[0]);
		if (use_rows) {
			fsp_store_windowed_layers(st, mount_run, op, win, nwin, h);
		} else {
			for (int l = 0; l < FSP_LAYER__COUNT; l++)
				fsp_store_load_hist_merged(st, mount_run, op, l, &h[l]);
		}
		if (!h[FSP_LAYER_TOTAL].count)
			continue;
		for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
			const struct fsp_hist *lh = &h[rows[r].layer];
			if (rows[r].layer == FSP_LAYER_EMU && lh->max == 0)
				continue; /* no emulation in this mount */
			print_hist_row(out, op, rows[r].name, lh);
		}
		/* measured in the layers per IO when the FUSE transport was traced */
		if (fsp_decomp_have_fuse(st, mount_run))
			continue;
		fprintf(out, "  %-6s %-16s %10s", fsp_op_name(op), "kernel+FUSE", "");
		print_us(out, engine_mean - fsp_hist_mean(&h[FSP_LAYER_TOTAL]) / 1000.0);
		fprintf(out, "             (engine mean - fuse total mean)\n");
	}
done:
	free(h);
}

/* "x.xxx", or "-" without a denominator; the format `fsprism stats` uses. */
static void print_ratio(FILE *out, uint64_t a, uint64_t b)
{
	if (b)
		fprintf(out, "%.3f", (double)a / (double)b);
	else
		fputc('-', out);
}

/*
 * The emu target's device-level accounting: the numbers of the Emulation
 * section of `fsprism stats DB --run MOUNT_RUN` (src/cli/stats.c computes
 * them), over the whole mount: preparing the target file, the measured
 * steps and the commit at unmount.
 */
static void print_emu_device(FILE *out, struct fsp_store *st, int64_t mount_run)
{
	struct fsp_emu_acct a;
	char cow[32], journal[32], alloc[32], store[PATH_MAX];
	if (fsp_stats_emu_acct(st, mount_run, &a)) {
		fprintf(out, "\nemu target, device level: cannot read mount run %"
			PRId64 " (%s)\n", mount_run, fsp_store_errmsg(st));
		return;
	}
	fprintf(out, "\nemu target, device level (mount run %" PRId64 ", whole mount "
		"including preparing the file; as in 'fsprism stats DB --run %" PRId64
		"')\n", mount_run, mount_run);
	fprintf(out, "  store %s  cow %s  journal %s  alloc %s\n",
		run_attr(st, mount_run, "emu.store", store, sizeof store),
		run_attr(st, mount_run, "emu.cow", cow, sizeof cow),
		run_attr(st, mount_run, "emu.journal", journal, sizeof journal),
		run_attr(st, mount_run, "emu.alloc", alloc, sizeof alloc));
	char sz[32];
	fsp_format_bytes(a.user_write_bytes, sz, sizeof sz);
	fprintf(out, "  user bytes written %" PRIu64 " (%s), device bytes written %"
		PRIu64 ", read %" PRIu64 "\n", a.user_write_bytes, sz, a.write_bytes,
		a.read_bytes);
	fprintf(out, "  write amplification:");
	for (int k = 0; k < FSP_EMU_KINDS; k++) {
		fprintf(out, " %s ", fsp_stats_emu_kind_name(k));
		print_ratio(out, a.bytes[k], a.user_write_bytes);
	}
	fprintf(out, "  total ");
	print_ratio(out, a.write_bytes, a.user_write_bytes);
	fprintf(out, "\n  flushes %" PRIu64 ", user fsyncs %" PRIu64
		", flushes per fsync ", a.flushes, a.fsyncs);
	print_ratio(out, a.flushes, a.fsyncs);
	fputc('\n', out);
	fsp_stats_print_fua(out, &a);
	if (a.have_ios && a.have_seq && a.have_streams) {
		fprintf(out, "  device IOs %" PRIu64 ", sequential %" PRIu64, a.ios,
			a.seq_ios);
		if (a.ios)
			fprintf(out, " (%.1f%%)", 100.0 * (double)a.seq_ios / (double)a.ios);
		fprintf(out, ", streams %.3f (mean distinct streams per 16 IOs)\n",
			(double)a.streams_x1000 / 1000.0);
	} else {
		fprintf(out, "  device IOs: not recorded (the mount did not end cleanly)\n");
	}
	/* the target file's fragmentation after the run */
	fprintf(out, "  files %" PRIu64 ", extents %" PRIu64, a.files, a.extents);
	if (a.files)
		fprintf(out, " (%.2f per file)", (double)a.extents / (double)a.files);
	fputc('\n', out);
}

/*
 * Every target's layers per IO (src/cli/stats_layers.c): each engine IO
 * joined with the block requests (and for the FUSE targets the mount's
 * rows) that served it, per step: the parts at p50/p99/p99.9 and the tail
 * attribution, as `fsprism stats` prints them for each run.
 */
static void print_layers_per_io(FILE *out, struct fsp_store *st,
				const struct target_result tr[T__COUNT],
				const int64_t mount_run[T__COUNT])
{
	for (int t = 0; t < T__COUNT; t++)
		if (tr[t].run)
			fsp_stats_layers_target(st, target_label[t], tr[t].run, mount_run[t], out);
}

/* A load curve's table per target (src/cli/stats_curve.c); nothing for other profiles. */
static void print_curves(FILE *out, struct fsp_store *st, const struct target_result tr[T__COUNT])
{
	for (int t = 0; t < T__COUNT; t++) {
		char title[64];
		snprintf(title, sizeof title, "%s target, ", target_label[t]);
		if (tr[t].run && fsp_stats_curve(st, tr[t].run, title, out) < 0)
			fprintf(out, "\n%s target: cannot read its load curve\n", target_label[t]);
	}
}

/*
 * Where a folded line goes on: after the last gap of two or more spaces in
 * its first 60 columns (the column its text starts in), else its own
 * indentation and two more.
 */
static size_t fold_indent(const char *line, size_t len)
{
	size_t lead = 0, at = 0;
	while (lead < len && line[lead] == ' ')
		lead++;
	for (size_t i = lead; i + 2 < len && i < 60; i++)
		if (line[i] == ' ' && line[i + 1] == ' ' && line[i + 2] != ' ')
			at = i + 2;
	if (lead >= 40) /* a continuation line already */
		return lead;
	return at ? at : lead + 2;
}

void compare_fold(FILE *out, const char *text, size_t n, size_t width)
{
	const char *end = text + n;
	while (text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		size_t len = nl ? (size_t)(nl - text) : (size_t)(end - text);
		size_t indent = fold_indent(text, len), col = 0;
		const char *p = text, *stop = text + len;
		while ((size_t)(stop - p) + col > width) {
			const char *cut = NULL;
			for (const char *q = p + (width - col); q > p; q--)
				if (*q == ' ' && (size_t)(q - p) + col > indent) {
					cut = q;
					break;
				}
			if (!cut)
				break; /* one word longer than the line: left long */
			fwrite(p, 1, (size_t)(cut - p), out);
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
			p = cut;
			while (p < stop && *p == ' ')
				p++;
		}
		fwrite(p, 1, (size_t)(stop - p), out);
		if (nl)
			fputc('\n', out);
		text += len + (nl != NULL);
	}
}

static int report_body(FILE *out, struct fsp_store *st, const struct opts *o,
		       const char *device, int64_t cmp_run,
		       const int64_t mount_run[T__COUNT]);

/* Where the details of the answer are: the commands that print them. */
static void print_where(FILE *out, struct fsp_store *st, const struct opts *o,
			int64_t cmp_run)
{
	const char *db = fsp_store_filename(st);
	char *text = NULL;
	size_t n = 0;
	FILE *mem = open_memstream(&text, &n);
	if (!mem)
		return;
	fprintf(mem, "\ndetails: every step's latency, the layer split per IO and every "
		"verdict with its evidence:\n");
	fprintf(mem, "  the table per step and target: fsprism stats %s --run %" PRId64
		" [--format json|csv]\n", db, cmp_run);
	fprintf(mem, "  every verdict: fsprism diagnose %s --run %" PRId64 "\n", db, cmp_run);
	fprintf(mem, "  all of it here, after the run: fsprism compare ... --details\n");
	if (o->report)
		fprintf(mem, "  the charts: %s\n", o->report);
	else
		fprintf(mem, "  the charts: fsprism report %s --run %" PRId64 " -o FILE.html\n",
			db, cmp_run);
	fclose(mem);
	compare_fold(out, text, n, COMPARE_COLS);
	free(text);
}

void compare_report(FILE *out, struct fsp_store *st, const struct opts *o,
		    const char *device, int64_t cmp_run,
		    const int64_t mount_run[T__COUNT])
{
	char *text = NULL;
	size_t n = 0;
	int measured;
	FILE *mem = o->wide || o->format != CMP_TABLE ? NULL : open_memstream(&text, &n);
	if (!mem) { /* as it is */
		measured = report_body(out, st, o, device, cmp_run, mount_run);
	} else {
		measured = report_body(mem, st, o, device, cmp_run, mount_run);
		fclose(mem);
		compare_fold(out, text, n, COMPARE_COLS);
		free(text);
	}
	if (!measured || o->format != CMP_TABLE)
		return;
	if (!o->details) { /* the answer first, and where the rest is */
		if (fsp_diagnose_print(out, st, cmp_run, FSP_DIAGNOSE_SUMMARY, "compare"))
			fprintf(out, "\n(no answer: see the message above)\n");
		print_where(out, st, o, cmp_run);
		return;
	}
	/* as `fsprism diagnose` prints it, line for line */
	compare_report_diagnosis(out, st, cmp_run, o->wide);
}

/* Everything but the diagnosis; 0 if nothing was measured (then nothing). */
static int report_body(FILE *out, struct fsp_store *st, const struct opts *o,
		       const char *device, int64_t cmp_run,
		       const int64_t mount_run[T__COUNT])
{
	struct target_result tr[T__COUNT];
	struct fsp_hist *h = malloc(sizeof *h);
	memset(tr, 0, sizeof tr);
	if (!h)
		return 0;
	for (int t = 0; t < T__COUNT; t++) {
		if (!o->want[t])
			continue;
		tr[t].run = fsp_store_child_run(st, cmp_run, target_label[t]);
		if (tr[t].run)
			load_target(st, h, &tr[t]);
	}
	int measured = 0;
	for (int t = 0; t < T__COUNT; t++)
		measured += tr[t].nrows;
	if (!measured) { /* failed or interrupted before any step */
		free(h);
		return 0;
	}
	if (o->format != CMP_TABLE) { /* the table alone, for a program */
		compare_print_table(out, st, cmp_run, o->want, o->format);
		for (int t = 0; t < T__COUNT; t++)
			free(tr[t].rows);
		free(h);
		return 1;
	}
	char sz[32];
	fsp_format_bytes(o->image_size, sz, sizeof sz);
	int native = o->want[T_FS] || o->want[T_FSPRISM];
	fprintf(out, "\nfsprism compare: profile %s on %s (%s%s)%s%s; compare run %"
		PRId64 " (runs:", o->profile, device,
		o->device ? "block device" : sz,
		o->device ? "" : " temporary image, loop direct IO",
		native ? ", " : "", native ? o->fs : "", cmp_run);
	for (int t = 0; t < T__COUNT; t++) {
		if (tr[t].run)
			fprintf(out, " %s=%" PRId64, target_label[t], tr[t].run);
		if (mount_run[t])
			fprintf(out, " %s-fuse=%" PRId64, target_label[t], mount_run[t]);
	}
	fprintf(out, ")\n");
	if (!o->details) { /* the answer follows (compare_report) */
		for (int t = 0; t < T__COUNT; t++)
			free(tr[t].rows);
		free(h);
		return 1;
	}
	if (o->rounds > 1)
		fprintf(out, "the table shows round %d of %d (its runs above); the diagnosis "
			"below judges every round\n", o->rounds, o->rounds);
	if (tr[T_EMU].run && mount_run[T_EMU]) {
		char cow[32], journal[32], alloc[32];
		fprintf(out, "emu: fsprism mount --cow=%s --journal=%s --alloc=%s with "
			"all of %s as its store\n",
			run_attr(st, mount_run[T_EMU], "emu.cow", cow, sizeof cow),
			run_attr(st, mount_run[T_EMU], "emu.journal", journal, sizeof journal),
			run_attr(st, mount_run[T_EMU], "emu.alloc", alloc, sizeof alloc),
			device);
	}
	compare_print_table(out, st, cmp_run, o->want, CMP_TABLE);
	for (int t = T_FSPRISM; t <= T_EMU; t++)
		if (tr[t].run && mount_run[t])
			print_layers(out, st, t, tr[t].run, mount_run[t]);
	if (tr[T_EMU].run && mount_run[T_EMU])
		print_emu_device(out, st, mount_run[T_EMU]);
	print_curves(out, st, tr);
	print_layers_per_io(out, st, tr, mount_run);
	for (int t = 0; t < T__COUNT; t++)
		free(tr[t].rows);
	free(h);
	return 1;
}

/* The verdicts (src/cli/diagnose.c), after the table and the splits. */
void compare_report_diagnosis(FILE *out, struct fsp_store *st, int64_t cmp_run, int wide)
{
	if (fsp_diagnose_print(out, st, cmp_run, wide ? FSP_DIAGNOSE_WIDE : FSP_DIAGNOSE_TABLE,
			       "compare"))
		fprintf(out, "\n(no diagnosis: see the message above)\n");
}


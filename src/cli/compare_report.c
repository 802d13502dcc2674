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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "src/cli/compare.h"
#include "src/cli/diagnose.h"
#include "src/cli/stats.h"
#include "src/cli/stats_layers.h"
#include "src/db/decomp_rows.h"
#include "src/db/results.h"
#include "src/db/store.h"

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

static void print_steps(FILE *out, const struct opts *o,
			const struct target_result tr[T__COUNT])
{
	/* the step list: of the first target that has one */
	const struct target_result *ref = NULL;
	for (int t = 0; t < T__COUNT && !ref; t++)
		if (tr[t].nrows)
			ref = &tr[t];
	if (!ref) {
		fprintf(out, "no steps were measured\n");
		return;
	}
	double sum[T__COUNT] = { 0 };
	int cnt[T__COUNT] = { 0 };
	for (int i = 0; i < ref->nrows; i++) {
		const struct step_row *r0 = &ref->rows[i];
		fprintf(out, "\nstep %d  %s  (%s, %" PRId64 " KiB, QD%" PRId64
			", %" PRId64 "%% reads)\n", r0->step, r0->label, r0->access,
			r0->bs / 1024, r0->qd, r0->read_pct);
		fprintf(out, "  %-8s %9s %7s %9s %9s %9s %9s   (latency in us)\n",
			"target", "MB/s", "x raw", "read p50", "read p99",
			"write p50", "write p99");
		const struct step_row *raw = find_step(&tr[T_RAW], r0->step);
		for (int t = 0; t < T__COUNT; t++) {
			if (!tr[t].run)
				continue;
			const struct step_row *r = find_step(&tr[t], r0->step);
			const char *name = t == T_FS ? o->fs : target_label[t];
			if (!r) {
				fprintf(out, "  %-8s %9s\n", name, "(not run)");
				continue;
			}
			sum[t] += r->mbps;
			cnt[t]++;
			fprintf(out, "  %-8s %9.1f", name, r->mbps);
			if (raw && raw->mbps > 0)
				fprintf(out, " %7.2f", r->mbps / raw->mbps);
			else
				fprintf(out, " %7s", "-");
			print_us(out, r->p50r);
			print_us(out, r->p99r);
			print_us(out, r->p50w);
			print_us(out, r->p99w);
			fputc('\n', out);
		}
	}
	fprintf(out, "\nmean over steps (MB/s):");
	for (int t = 0; t < T__COUNT; t++) {
		if (!cnt[t])
			continue;
		double m = sum[t] / cnt[t];
		fprintf(out, "  %s %.1f", t == T_FS ? o->fs : target_label[t], m);
		if (t != T_RAW && cnt[T_RAW] && sum[T_RAW] > 0)
			fprintf(out, " (x%.2f)", m / (sum[T_RAW] / cnt[T_RAW]));
	}
	fputc('\n', out);
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

/* A run attribute into buf ("-" if absent). */
static const char *run_attr(struct fsp_store *st, int64_t run, const char *key,
			    char *buf, size_t len)
{
	char *v = fsp_store_attr(st, run, key);
	snprintf(buf, len, "%s", v ? v : "-");
	free(v);
	return buf;
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

void compare_report(FILE *out, struct fsp_store *st, const struct opts *o,
		    const char *device, int64_t cmp_run,
		   const int64_t mount_run[T__COUNT])
{
	struct target_result tr[T__COUNT];
	struct fsp_hist *h = malloc(sizeof *h);
	memset(tr, 0, sizeof tr);
	if (!h)
		return;
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
		return;
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
	print_steps(out, o, tr);
	for (int t = T_FSPRISM; t <= T_EMU; t++)
		if (tr[t].run && mount_run[t])
			print_layers(out, st, t, tr[t].run, mount_run[t]);
	if (tr[T_EMU].run && mount_run[T_EMU])
		print_emu_device(out, st, mount_run[T_EMU]);
	print_layers_per_io(out, st, tr, mount_run);
	for (int t = 0; t < T__COUNT; t++)
		free(tr[t].rows);
	free(h);
	compare_report_diagnosis(out, st, cmp_run);
}

/* The verdicts (src/cli/diagnose.c), after the table and the splits. */
void compare_report_diagnosis(FILE *out, struct fsp_store *st, int64_t cmp_run)
{
	if (fsp_diagnose_print(out, st, cmp_run, 0, "compare"))
		fprintf(out, "\n(no diagnosis: see the message above)\n");
}


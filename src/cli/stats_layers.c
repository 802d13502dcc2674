/*
 * stats_layers.c - the layers of each engine IO in `stats` and `compare`
 * (stats_layers.h): reads one step at a time (its IOs, block requests, the
 * file's layout, a mount's daemon rows), joins them (src/prism/decomp.c)
 * into per-part histograms, prints them. Memory: one step's rows.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "src/db/block_ios.h"
#include "src/db/decomp_rows.h"
#include "src/db/results.h"
#include "src/prism/decomp.h"
#include "src/cli/stats.h"
#include "src/cli/stats_layers.h"

#define MAX_STEPS 4096

struct lrow {
	int step, write;
	struct fsp_dc_sum *sum;
};

struct layers {
	enum fsp_dc_kind kind;
	char why[320];  /* non-empty: no decomposition, and why */
	char note[160]; /* what is missing but not fatal (FUSE transport) */
	struct lrow *rows;
	size_t n;
	uint64_t ios;
	uint64_t base; /* the traced partition's start on its disk, bytes */
	int64_t blk_run; /* the run whose block rows serve: run, or its mount's */
};

static void layers_free(struct layers *L)
{
	for (size_t i = 0; i < L->n; i++)
		fsp_dc_sum_free(L->rows[i].sum);
	free(L->rows);
	L->rows = NULL;
	L->n = 0;
}

/* The partition's start in bytes from block.devices ("8:0[2048,+1048576]"). */
static uint64_t partition_base(const char *devices)
{
	const char *b = strchr(devices, '[');
	return b ? strtoull(b + 1, NULL, 10) * 512 : 0;
}

struct route {
	const struct fsp_dc_io *io;
	struct fsp_dc_sum *sum[2]; /* read, write */
};

static void route_emit(void *arg, size_t i, const struct fsp_dc_parts *p)
{
	struct route *r = arg;
	fsp_dc_sum_add(r->sum[r->io[i].write], p);
}

static int add_row(struct layers *L, int step, int write, struct fsp_dc_sum *sum)
{
	struct lrow *v = realloc(L->rows, (L->n + 1) * sizeof(*v));
	if (!v)
		return -1;
	L->rows = v;
	L->rows[L->n++] = (struct lrow){ step, write, sum };
	return 0;
}

/* One step: its rows read, joined, summed per direction. */
static int do_step(struct fsp_store *st, int64_t run, int64_t mount_run, int step,
		   const int64_t win[2], struct fsp_dc_in *in, struct layers *L, char *err,
		   size_t errlen)
{
	fsp_dc_ios ios;
	fsp_dc_blocks blk = { 0 };
	fsp_dc_extents ext = { 0 };
	fsp_dc_daemons dmn = { 0 };
	int rc = -1;
	if (fsp_decomp_read_ios(st, run, step, &ios, err, errlen))
		return -1;
	if (!ios.n) {
		free(ios.v);
		return 0;
	}
	/* a mount's backing IO: the requests the mount's own trace saw on its
	 * backing or store device in the step's window (the engine run traced
	 * the backing directory's device too: the same requests, or for an
	 * emulating mount another device; read once, from one run) */
	if (L->blk_run != run ? fsp_decomp_read_blocks_window(st, L->blk_run, (uint64_t)win[0],
							     (uint64_t)win[1] + 1000000000ull,
							     &blk, err, errlen)
			      : fsp_decomp_read_blocks(st, run, step, &blk, err, errlen))
		goto out;
	if (fsp_decomp_read_extents(st, run, step, &ext, err, errlen))
		goto out;
	if (in->kind == FSP_DC_MOUNT) {
		int cols;
		/* daemon rows of the step, and those an IO submitted at its end made */
		if (fsp_decomp_read_daemon(st, mount_run, (uint64_t)win[0],
					   (uint64_t)win[1] + 1000000000ull, &dmn, &cols, err,
					   errlen))
			goto out;
		if (!cols)
			snprintf(L->note, sizeof(L->note), "the mount's rows have no FUSE "
				 "transport columns (ops.recv_ns, fuse_unique): before and "
				 "after the handler is residual no_fuse");
	}
	uint64_t *totals[2] = { malloc(ios.n * sizeof(uint64_t)), malloc(ios.n * sizeof(uint64_t)) };
	size_t nt[2] = { 0, 0 };
	if (!totals[0] || !totals[1]) {
		snprintf(err, errlen, "out of memory");
		free(totals[0]);
		free(totals[1]);
		goto out;
	}
	for (size_t i = 0; i < ios.n; i++) {
		int w = ios.v[i].write;
		totals[w][nt[w]++] = ios.v[i].reap_ns - ios.v[i].submit_ns + ios.v[i].lag_ns;
	}
	struct route r = { ios.v, { fsp_dc_sum_new(totals[0], nt[0]),
				    fsp_dc_sum_new(totals[1], nt[1]) } };
	free(totals[0]);
	free(totals[1]);
	in->io = ios.v;
	in->nio = ios.n;
	in->blk = blk.v;
	in->nblk = blk.n;
	/* a mount's backing file: its layout when compare stored it, else by time */
	in->map.ext = ext.n ? ext.v : NULL;
	in->map.n = ext.n;
	if (in->kind == FSP_DC_MOUNT)
		in->map.base = ext.n ? L->base : UINT64_MAX;
	in->dmn = dmn.v;
	in->ndmn = dmn.n;
	if (!r.sum[0] || !r.sum[1] || fsp_dc_join(in, route_emit, &r)) {
		snprintf(err, errlen, "out of memory joining step %d", step);
		fsp_dc_sum_free(r.sum[0]);
		fsp_dc_sum_free(r.sum[1]);
		goto out;
	}
	L->ios += ios.n;
	for (int w = 0; w < 2; w++) {
		if (nt[w] && add_row(L, step, w, r.sum[w]) == 0)
			r.sum[w] = NULL;
		fsp_dc_sum_free(r.sum[w]);
	}
	rc = 0;
out:
	free(ios.v);
	free(blk.v);
	free(ext.v);
	free(dmn.v);
	return rc;
}

/*
 * Decompose every step of engine run `run`. 1: not an engine run (nothing
 * to say), 0: done (L->why says why there is nothing), -1 with err set.
 */
static int compute(struct fsp_store *st, int64_t run, int64_t mount_run, struct layers *L,
		   char *err, size_t errlen)
{
	memset(L, 0, sizeof(*L));
	struct fsp_run_row hdr;
	int found = fsp_store_load_run(st, run, &hdr);
	int is_run = found == 1 && hdr.kind && !strcmp(hdr.kind, "run");
	int64_t recorded = hdr.recorded;
	char mode[32];
	snprintf(mode, sizeof(mode), "%s", hdr.record_mode ? hdr.record_mode : "?");
	fsp_run_row_free(&hdr);
	if (found < 0) {
		snprintf(err, errlen, "cannot read run %" PRId64, run);
		return -1;
	}
	if (!is_run)
		return 1;
	if (!mount_run)
		mount_run = fsp_block_ios_fuse_run(st, run);
	if (mount_run < 0 || mount_run == run)
		mount_run = 0;
	char *kind = fsp_store_attr(st, run, "target_kind");
	struct fsp_block_summary bs;
	/* a mount's backing IO from the mount's own trace when it has one */
	L->blk_run = mount_run && fsp_block_ios_any(st, mount_run) == 1 ? mount_run : run;
	fsp_block_ios_summary(st, L->blk_run, &bs);
	struct fsp_dc_in in = { .kind = mount_run ? FSP_DC_MOUNT
				: kind && !strcmp(kind, "raw") ? FSP_DC_RAW : FSP_DC_FILE };
	free(kind);
	L->kind = in.kind;
	L->base = partition_base(bs.devices);
	in.map.base = L->base;
	if (in.kind != FSP_DC_MOUNT) {
		if (bs.traced != 1) {
			snprintf(L->why, sizeof(L->why), "the block layer was not traced (%s)",
				 bs.traced == 0 && bs.reason[0] ? bs.reason : "an older run");
			return 0;
		}
	}
	if (recorded <= 0) {
		snprintf(L->why, sizeof(L->why), "no per-IO rows (record mode %s): run with "
			 "--record=full or --record=sample:N", mode);
		return 0;
	}
	fsp_dc_fuses fuse = { 0 };
	if (in.kind == FSP_DC_MOUNT) {
		int have;
		if (fsp_decomp_read_fuse(st, mount_run, &fuse, &have, err, errlen))
			return -1;
		if (!have || !fuse.n)
			snprintf(L->note, sizeof(L->note), "no FUSE transport rows (fuse_reqs): "
				 "before and after the handler is residual no_fuse");
		in.fuse = fuse.v;
		in.nfuse = fuse.n;
	}
	int64_t (*win)[2] = malloc(MAX_STEPS * sizeof(*win));
	if (!win) {
		free(fuse.v);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int nwin = fsp_store_step_windows(st, run, win, MAX_STEPS);
	int rc = 0;
	for (int s = 0; s < nwin && !rc; s++)
		if (win[s][0])
			rc = do_step(st, run, mount_run, s, win[s], &in, L, err, errlen);
	free(win);
	free(fuse.v);
	if (!rc && !L->n)
		snprintf(L->why, sizeof(L->why), "no engine read or write rows in the steps");
	if (rc)
		layers_free(L);
	return rc;
}

/* The parts a kind of target has, in the order of the path. */
static size_t parts_of(enum fsp_dc_kind k, const struct lrow *rows, size_t n, unsigned *v)
{
	static const unsigned raw[] = { FSP_DC_LAG, FSP_DC_SUBMIT, FSP_DC_BLOCK_QUEUE,
					FSP_DC_DEVICE, FSP_DC_COMPLETE, FSP_DC_RESIDUAL };
	static const unsigned file[] = { FSP_DC_LAG, FSP_DC_FS_SUBMIT, FSP_DC_BLOCK_QUEUE,
					 FSP_DC_DEVICE, FSP_DC_FS_COMPLETE, FSP_DC_RESIDUAL };
	static const unsigned mount[] = { FSP_DC_LAG, FSP_DC_SUBMIT, FSP_DC_FUSE_QUEUE,
					  FSP_DC_DAEMON_RECV, FSP_DC_LAYER, FSP_DC_INJECT,
					  FSP_DC_EMU, FSP_DC_BACKING, FSP_DC_BLOCK_QUEUE,
					  FSP_DC_DEVICE, FSP_DC_FUSE_REPLY, FSP_DC_COMPLETE,
					  FSP_DC_RESIDUAL };
	const unsigned *p = k == FSP_DC_RAW ? raw : k == FSP_DC_FILE ? file : mount;
	size_t np = k == FSP_DC_RAW ? 6 : k == FSP_DC_FILE ? 6 : 13, m = 0;
	for (size_t i = 0; i < np; i++) {
		/* the emulation's, the injected delay's and a rate step's lag only
		 * when there were any */
		int used = p[i] != FSP_DC_EMU && p[i] != FSP_DC_INJECT && p[i] != FSP_DC_LAG;
		for (size_t r = 0; r < n && !used; r++)
			used = rows[r].sum->part[p[i]].max > 0;
		if (used)
			v[m++] = p[i];
	}
	return m;
}

static const char *kind_name(enum fsp_dc_kind k)
{
	return k == FSP_DC_RAW ? "raw device" : k == FSP_DC_FILE ? "native file system"
								: "fsprism mount";
}

static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

static double mean_of(uint64_t sum, uint64_t n)
{
	return n ? (double)sum / (double)n / 1e3 : 0;
}

/* The residual's share of the total, and of each reason, in percent. */
static double share(const struct fsp_dc_sum *s, uint64_t ns)
{
	return s->total.sum ? 100.0 * (double)ns / (double)s->total.sum : 0;
}

static void print_table(const struct layers *L, const char *indent, FILE *out)
{
	unsigned parts[FSP_DC__COUNT];
	size_t np = parts_of(L->kind, L->rows, L->n, parts);
	fprintf(out, "%s%-5s %-5s %-14s %9s %9s %9s %9s %10s %10s\n", indent, "step", "dir",
		"part", "p50", "p99", "p99.9", "mean", "tail mean", "mid mean");
	for (size_t r = 0; r < L->n; r++) {
		const struct fsp_dc_sum *s = L->rows[r].sum;
		const char *dir = L->rows[r].write ? "write" : "read";
		uint64_t tail = 0, mid = 0;
		for (unsigned k = 0; k < FSP_DC__COUNT; k++) {
			tail += s->tail_ns[k];
			mid += s->mid_ns[k];
		}
		fprintf(out, "%s%-5d %-5s %-14s %9.2f %9.2f %9.2f %9.2f %10.2f %10.2f\n", indent,
			L->rows[r].step, dir, "total", us(fsp_hist_quantile(&s->total, 0.5)),
			us(fsp_hist_quantile(&s->total, 0.99)),
			us(fsp_hist_quantile(&s->total, 0.999)), fsp_hist_mean(&s->total) / 1e3,
			mean_of(tail, s->tail_n), mean_of(mid, s->mid_n));
		for (size_t i = 0; i < np; i++) {
			const struct fsp_hist *h = &s->part[parts[i]];
			fprintf(out, "%s%-5s %-5s   %-12s %9.2f %9.2f %9.2f %9.2f %10.2f %10.2f\n",
				indent, "", "", fsp_dc_part_name(parts[i]),
				us(fsp_hist_quantile(h, 0.5)), us(fsp_hist_quantile(h, 0.99)),
				us(fsp_hist_quantile(h, 0.999)), fsp_hist_mean(h) / 1e3,
				mean_of(s->tail_ns[parts[i]], s->tail_n),
				mean_of(s->mid_ns[parts[i]], s->mid_n));
		}
		fprintf(out, "%s%-5s %-5s   (residual %.2f%%", indent, "", "",
			share(s, s->part[FSP_DC_RESIDUAL].sum));
		const char *sep = ": ";
		for (unsigned w = 0; w < FSP_DC_WHY__COUNT; w++)
			if (s->why_ns[w]) {
				fprintf(out, "%s%s %.2f%%", sep, fsp_dc_why_name(w),
					share(s, s->why_ns[w]));
				sep = ", ";
			}
		fprintf(out, "; %" PRIu64 " IOs, %" PRIu64 " with no row below)\n", s->total.count,
			s->ios_without_rows);
	}
}

static void print_head(const struct layers *L, FILE *out)
{
	fprintf(out, "%s, %" PRIu64 " IOs; each IO's parts add up to its total\n"
		"(microseconds; tail mean: IOs at or above the total's p99, mid mean: p45 to p55)\n",
		kind_name(L->kind), L->ios);
	if (L->note[0])
		fprintf(out, "  %s\n", L->note);
}

static void json_hist(FILE *out, const char *name, const struct fsp_hist *h, uint64_t tail,
		      uint64_t tail_n, uint64_t mid, uint64_t mid_n, int first)
{
	fprintf(out, "%s\"%s\": {\"p50_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f, "
		"\"mean_us\": %.3f, \"tail_mean_us\": %.3f, \"mid_mean_us\": %.3f}",
		first ? "" : ", ", name, us(fsp_hist_quantile(h, 0.5)),
		us(fsp_hist_quantile(h, 0.99)), us(fsp_hist_quantile(h, 0.999)),
		fsp_hist_mean(h) / 1e3, mean_of(tail, tail_n), mean_of(mid, mid_n));
}

static void print_json(const struct layers *L, FILE *out)
{
	unsigned parts[FSP_DC__COUNT];
	size_t np = parts_of(L->kind, L->rows, L->n, parts);
	fprintf(out, ",\n  \"layers\": {\"target\": \"%s\", \"ios\": %" PRIu64,
		L->kind == FSP_DC_RAW ? "raw" : L->kind == FSP_DC_FILE ? "file" : "mount", L->ios);
	if (L->note[0]) {
		fsp_json_member_str(out, "note", L->note);
	}
	fputs(", \"steps\": [", out);
	for (size_t r = 0; r < L->n; r++) {
		const struct fsp_dc_sum *s = L->rows[r].sum;
		uint64_t tail = 0, mid = 0;
		for (unsigned k = 0; k < FSP_DC__COUNT; k++) {
			tail += s->tail_ns[k];
			mid += s->mid_ns[k];
		}
		fprintf(out, "%s\n    {\"step\": %d, \"op\": \"%s\", \"ios\": %" PRIu64
			", \"tail_ios\": %" PRIu64 ", \"mid_ios\": %" PRIu64 ", ", r ? "," : "",
			L->rows[r].step, L->rows[r].write ? "write" : "read", s->total.count,
			s->tail_n, s->mid_n);
		json_hist(out, "total", &s->total, tail, s->tail_n, mid, s->mid_n, 1);
		fputs(", \"parts\": {", out);
		for (size_t i = 0; i < np; i++)
			json_hist(out, fsp_dc_part_name(parts[i]), &s->part[parts[i]],
				  s->tail_ns[parts[i]], s->tail_n, s->mid_ns[parts[i]], s->mid_n,
				  i == 0);
		fprintf(out, "}, \"residual_pct\": %.4f, \"residual_why_pct\": {",
			share(s, s->part[FSP_DC_RESIDUAL].sum));
		for (unsigned w = 0; w < FSP_DC_WHY__COUNT; w++)
			fprintf(out, "%s\"%s\": %.4f", w ? ", " : "", fsp_dc_why_name(w),
				share(s, s->why_ns[w]));
		fprintf(out, "}, \"rows\": %" PRIu64 ", \"ios_without_rows\": %" PRIu64 "}", s->rows,
			s->ios_without_rows);
	}
	fputs(L->n ? "\n  ]}" : "]}", out);
}

static void csv_row(FILE *out, int64_t run, const struct lrow *r, const char *layer,
		    const struct fsp_hist *h)
{
	fprintf(out, "%" PRId64 ",%d,io_%s,%s,%" PRIu64 ",,,0,%.3f,%.3f,,%.3f,%.3f,%.3f\n", run,
		r->step, r->write ? "write" : "read", layer, h->count, fsp_hist_mean(h) / 1e3,
		us(fsp_hist_quantile(h, 0.5)), us(fsp_hist_quantile(h, 0.99)),
		us(fsp_hist_quantile(h, 0.999)), us(h->count ? h->max : 0));
}

/* the tail attribution in the same columns: count and mean only */
static void csv_mean(FILE *out, int64_t run, const struct lrow *r, const char *layer,
		     const char *which, uint64_t sum, uint64_t n)
{
	fprintf(out, "%" PRId64 ",%d,io_%s,%s.%s,%" PRIu64 ",,,0,%.3f,,,,,\n", run, r->step,
		r->write ? "write" : "read", layer, which, n, mean_of(sum, n));
}

static void print_csv(const struct layers *L, int64_t run, FILE *out)
{
	unsigned parts[FSP_DC__COUNT];
	size_t np = parts_of(L->kind, L->rows, L->n, parts);
	for (size_t r = 0; r < L->n; r++) {
		const struct lrow *lr = &L->rows[r];
		const struct fsp_dc_sum *s = lr->sum;
		csv_row(out, run, lr, "total", &s->total);
		for (size_t i = 0; i < np; i++) {
			const char *name = fsp_dc_part_name(parts[i]);
			csv_row(out, run, lr, name, &s->part[parts[i]]);
			csv_mean(out, run, lr, name, "tail", s->tail_ns[parts[i]], s->tail_n);
			csv_mean(out, run, lr, name, "mid", s->mid_ns[parts[i]], s->mid_n);
		}
	}
}

int fsp_stats_layers(struct fsp_store *st, int64_t run, const char *format, FILE *out)
{
	struct layers L;
	char err[256];
	int rc = compute(st, run, 0, &L, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "fsprism stats: layers per IO: %s\n", err);
		return -1;
	}
	if (rc > 0)
		return 0;
	if (!strcmp(format, "json")) {
		if (L.why[0]) {
			fputs(",\n  \"layers\": {\"available\": false, \"reason\": ", out);
			fsp_json_str(out, L.why);
			fputs("}", out);
		} else
			print_json(&L, out);
	} else if (!strcmp(format, "csv")) {
		print_csv(&L, run, out);
	} else if (L.why[0]) {
		fprintf(out, "\nlayers per IO: none: %s\n", L.why);
	} else {
		fprintf(out, "\nLayers per IO: ");
		print_head(&L, out);
		print_table(&L, "", out);
	}
	layers_free(&L);
	return 0;
}

int fsp_stats_layers_target(struct fsp_store *st, const char *target, int64_t run,
			    int64_t mount_run, FILE *out)
{
	struct layers L;
	char err[256];
	int rc = compute(st, run, mount_run, &L, err, sizeof(err));
	if (rc < 0) {
		fprintf(out, "\n%s target, layers per IO: cannot compute: %s\n", target, err);
		return -1;
	}
	if (rc > 0)
		return 0;
	if (L.why[0]) {
		fprintf(out, "\n%s target, layers per IO (engine run %" PRId64 "): none: %s\n",
			target, run, L.why);
	} else {
		fprintf(out, "\n%s target, layers per IO (engine run %" PRId64 "): ", target, run);
		print_head(&L, out);
		print_table(&L, "  ", out);
	}
	layers_free(&L);
	return 0;
}

int fsp_layers_means(struct fsp_store *st, int64_t run, int64_t mount_run,
		     struct fsp_layer_means **out, size_t *n, char *err, size_t errlen)
{
	struct layers L;
	*out = NULL;
	*n = 0;
	int rc = compute(st, run, mount_run, &L, err, errlen);
	if (rc)
		return rc < 0 ? -1 : 0;
	struct fsp_layer_means *m = calloc(L.n ? L.n : 1, sizeof(*m));
	if (!m) {
		layers_free(&L);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t k = 0;
	for (size_t r = 0; r < L.n; r++) {
		const struct fsp_dc_sum *s = L.rows[r].sum;
		if (!k || m[k - 1].step != L.rows[r].step)
			m[k++] = (struct fsp_layer_means){ .step = L.rows[r].step };
		struct fsp_layer_means *x = &m[k - 1];
		/* the rows of one step come read then write: the quantiles of the
		 * direction with more IOs */
		int main_dir = s->total.count > x->ios;
		for (unsigned p = 0; p < FSP_DC__COUNT; p++) {
			x->mean_ns[p] = (x->mean_ns[p] * (double)x->ios + (double)s->part[p].sum) /
					(double)(x->ios + s->total.count);
			if (main_dir) {
				x->p50_ns[p] = (double)fsp_hist_quantile(&s->part[p], 0.5);
				x->p99_ns[p] = (double)fsp_hist_quantile(&s->part[p], 0.99);
				x->mid_ns[p] = s->mid_n ? (double)s->mid_ns[p] / (double)s->mid_n : 0;
				x->tail_ns[p] = s->tail_n ? (double)s->tail_ns[p] /
							    (double)s->tail_n : 0;
			}
		}
		if (main_dir) {
			x->mid_n = s->mid_n;
			x->tail_n = s->tail_n;
		}
		x->ios += s->total.count;
		x->fuse = L.kind == FSP_DC_MOUNT && !L.note[0];
	}
	layers_free(&L);
	*out = m;
	*n = k;
	return 0;
}

/*
 * stats_block.c - the block layer in `fsprism stats` (stats_block.h).
 *
 * Quantiles are nearest-rank over the stored rows, exact: the value of
 * rank ceil(q * n), as the histograms' definition (docs/schema.md).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "src/db/block_ios.h"
#include "src/cli/stats.h"
#include "src/cli/stats_block.h"

#define MAX_STEPS 4096
#define NQ 3
static const double qs[NQ] = { 0.50, 0.99, 0.999 };
static const char *const q_names[NQ] = { "p50", "p99", "p99.9" };
static const char *const q_keys[NQ] = { "p50", "p99", "p999" };

struct part {
	size_t n;
	double mean, q[NQ], max; /* microseconds */
};

struct block_row {
	int step;
	unsigned op;
	size_t requests;
	uint64_t bytes;
	struct part queue, device;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void summarize(uint64_t *v, size_t n, struct part *p)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	p->mean = sum / (double)n / 1e3;
	for (int k = 0; k < NQ; k++) {
		size_t rank = (size_t)ceil(qs[k] * (double)n);
		if (rank < 1)
			rank = 1;
		p->q[k] = (double)v[rank - 1] / 1e3;
	}
	p->max = (double)v[n - 1] / 1e3;
}

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
				summarize(t.queue_ns, t.nq, &r->queue);
				summarize(t.device_ns, t.nd, &r->device);
			}
			fsp_block_times_free(&t);
		}
	free(steps);
	*rowsp = rows;
	return n;
}

static void fmt_us(char *buf, size_t len, double us)
{
	if (us >= 100000)
		snprintf(buf, len, "%.0f", us);
	else if (us >= 100)
		snprintf(buf, len, "%.1f", us);
	else
		snprintf(buf, len, "%.2f", us);
}

static void table_part(FILE *out, const struct part *p)
{
	char b[32];
	for (int k = 0; k < NQ; k++) {
		if (p->n)
			fmt_us(b, sizeof(b), p->q[k]);
		else
			snprintf(b, sizeof(b), "-");
		fprintf(out, " %11s", b);
	}
}

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
	fprintf(out, "%-5s %-6s %9s %9s", "step", "dir", "requests", "mean KiB");
	for (int part = 0; part < 2; part++)
		for (int k = 0; k < NQ; k++) {
			char h[32];
			snprintf(h, sizeof(h), "%s %s", part ? "dev" : "queue", q_names[k]);
			fprintf(out, " %11s", h);
		}
	fputc('\n', out);
	for (int i = 0; i < n; i++) {
		const struct block_row *r = &rows[i];
		fprintf(out, "%-5d %-6s %9zu %9.1f", r->step, fsp_block_op_name(r->op),
			r->requests, (double)r->bytes / (double)r->requests / 1024.0);
		table_part(out, &r->queue);
		table_part(out, &r->device);
		fputc('\n', out);
	}
	free(rows);
	return 0;
}

static void csv_part(FILE *out, int64_t run, const struct block_row *r, const char *layer,
		     const struct part *p)
{
	if (!p->n)
		return;
	fprintf(out, "%" PRId64 ",%d,block_%s,%s,%zu,%" PRIu64 ",,0,%.3f", run, r->step,
		fsp_block_op_name(r->op), layer, p->n, r->bytes, p->mean);
	/* the ops columns are p50, p90, p99, p99.9: p90 is not computed here */
	fprintf(out, ",%.3f,,%.3f,%.3f,%.3f\n", p->q[0], p->q[1], p->q[2], p->max);
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
	return 0;
}

static void json_part(FILE *out, const char *name, const struct part *p)
{
	fprintf(out, ", \"%s\": ", name);
	if (!p->n) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"count\": %zu, \"mean_us\": %.3f", p->n, p->mean);
	for (int k = 0; k < NQ; k++)
		fprintf(out, ", \"%s_us\": %.3f", q_keys[k], p->q[k]);
	fprintf(out, ", \"max_us\": %.3f}", p->max);
}

int fsp_stats_block_json(struct fsp_store *st, int64_t run, FILE *out)
{
	struct fsp_block_summary s;
	if (fsp_block_ios_summary(st, run, &s) != 0 || s.traced < 0)
		return 0;
	fprintf(out, ",\n  \"block\": {\"traced\": %s", s.traced ? "true" : "false");
	if (!s.traced) {
		fputs(", \"reason\": ", out);
		fsp_json_str(out, s.reason);
		fputs("}", out);
		return 0;
	}
	struct block_row *rows;
	int n = load(st, run, &rows);
	if (n < 0)
		return -1;
	fputs(", \"devices\": ", out);
	fsp_json_str(out, s.devices);
	fprintf(out, ", \"requests\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"steps\": [",
		s.requests, s.dropped);
	for (int i = 0; i < n; i++) {
		const struct block_row *r = &rows[i];
		fprintf(out, "%s\n    {\"step\": %d, \"op\": \"%s\", \"requests\": %zu, "
			"\"bytes\": %" PRIu64 ", \"mean_bytes\": %.1f", i ? "," : "", r->step,
			fsp_block_op_name(r->op), r->requests, r->bytes,
			(double)r->bytes / (double)r->requests);
		json_part(out, "queue", &r->queue);
		json_part(out, "device", &r->device);
		fputc('}', out);
	}
	fputs(n ? "\n  ]}" : "]}", out);
	free(rows);
	return 0;
}

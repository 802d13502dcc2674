/*
 * stats_part.c - one part of a latency split as the stats sections print
 * it (stats_part.h).
 */
#include <stdlib.h>
#include <string.h>
#include "src/base/quantile.h"
#include "src/cli/stats_part.h"

static const double qs[FSP_PART_NQ] = { 0.50, 0.99, 0.999 };
static const char *const q_names[FSP_PART_NQ] = { "p50", "p99", "p99.9" };
static const char *const q_keys[FSP_PART_NQ] = { "p50", "p99", "p999" };

void fsp_stats_part_of(int64_t *v, size_t n, struct fsp_stats_part *p)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), fsp_cmp_i64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	p->mean = sum / (double)n / 1e3;
	for (int k = 0; k < FSP_PART_NQ; k++)
		p->q[k] = (double)fsp_quantile_i64(v, n, qs[k]) / 1e3;
	p->max = (double)v[n - 1] / 1e3;
}

void fsp_stats_fmt_us(char *buf, size_t len, double us)
{
	if (us >= 100000)
		snprintf(buf, len, "%.0f", us);
	else if (us >= 100)
		snprintf(buf, len, "%.1f", us);
	else
		snprintf(buf, len, "%.2f", us);
}

void fsp_stats_part_heads(FILE *out, const char *part)
{
	for (int k = 0; k < FSP_PART_NQ; k++) {
		char h[32];
		snprintf(h, sizeof(h), "%s %s", part, q_names[k]);
		fprintf(out, " %11s", h);
	}
}

void fsp_stats_part_table(FILE *out, const struct fsp_stats_part *p)
{
	char b[32];
	for (int k = 0; k < FSP_PART_NQ; k++) {
		if (p->n)
			fsp_stats_fmt_us(b, sizeof(b), p->q[k]);
		else
			snprintf(b, sizeof(b), "-");
		fprintf(out, " %11s", b);
	}
}

void fsp_stats_part_csv_tail(FILE *out, const struct fsp_stats_part *p)
{
	/* the ops columns are mean, p50, p90, p99, p99.9, max: p90 is not computed here */
	fprintf(out, ",%.3f,%.3f,,%.3f,%.3f,%.3f\n", p->mean, p->q[0], p->q[1], p->q[2],
		p->max);
}

void fsp_stats_part_json(FILE *out, const char *name, const struct fsp_stats_part *p)
{
	fprintf(out, ", \"%s\": ", name);
	if (!p->n) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"count\": %zu, \"mean_us\": %.3f", p->n, p->mean);
	for (int k = 0; k < FSP_PART_NQ; k++)
		fprintf(out, ", \"%s_us\": %.3f", q_keys[k], p->q[k]);
	fprintf(out, ", \"max_us\": %.3f}", p->max);
}

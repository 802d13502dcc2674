/*
 * stats_curve.c - a stored load curve as one table (stats_curve.h), the
 * same columns as `fsprism run` prints after a curve, from the database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/cli/stats_curve.h"

struct curve_print {
	struct fsp_store *st;
	int64_t run;
	FILE *out;
	struct fsp_hist *h;
	int failed;
};

/* rate.step.STEP.NAME as a number; -1 when absent. */
static double step_attr(struct fsp_store *st, int64_t run, int step, const char *name)
{
	char key[96];
	snprintf(key, sizeof key, "rate.step.%d.%s", step, name);
	char *v = fsp_store_attr(st, run, key);
	double x = v ? strtod(v, NULL) : -1;
	free(v);
	return x;
}

static int curve_row(void *arg, const struct fsp_step_row *r)
{
	struct curve_print *c = arg;
	double iops = step_attr(c->st, c->run, r->step, "achieved_iops");
	if (iops < 0)
		return 0;
	double asked = step_attr(c->st, c->run, r->step, "asked_iops");
	char a[24] = "max", lag[3][16] = { "-", "-", "-" }, late[24] = "-";
	if (asked >= 0) {
		static const char *const q[] = { "lag_p50_ns", "lag_p99_ns", "lag_max_ns" };
		snprintf(a, sizeof a, "%.0f", asked);
		for (int k = 0; k < 3; k++)
			snprintf(lag[k], sizeof lag[k], "%.1f",
				 step_attr(c->st, c->run, r->step, q[k]) / 1e3);
		snprintf(late, sizeof late, "%.0f",
			 step_attr(c->st, c->run, r->step, "late_ios") +
			 step_attr(c->st, c->run, r->step, "unissued_ios"));
	}
	const char *label = r->label && !strncmp(r->label, "rate=", 5) ? r->label + 5
		: r->label ? r->label : "";
	int first = 1;
	for (int d = 0; d < 2; d++) {
		uint64_t bytes, errors;
		int got = fsp_store_load_hist(c->st, c->run, r->step, d ? FSP_OP_WRITE : FSP_OP_READ,
					      FSP_LAYER_TOTAL, c->h, &bytes, &errors);
		if (got < 0) {
			c->failed = 1;
			return -1;
		}
		if (!got || !c->h->count)
			continue;
		if (first)
			fprintf(c->out, "  %-6s %8s %8.0f %8s %8s %8s %6s", label, a, iops, lag[0],
				lag[1], lag[2], late);
		else
			fprintf(c->out, "  %-6s %8s %8s %8s %8s %8s %6s", "", "", "", "", "", "", "");
		fprintf(c->out, " %2s %8.1f %8.1f %8.1f %8.1f\n", d ? "wr" : "rd",
			fsp_hist_mean(c->h) / 1e3, (double)fsp_hist_quantile(c->h, 0.5) / 1e3,
			(double)fsp_hist_quantile(c->h, 0.99) / 1e3,
			(double)fsp_hist_quantile(c->h, 0.999) / 1e3);
		first = 0;
	}
	if (first)
		fprintf(c->out, "  %-6s %8s %8.0f %8s %8s %8s %6s (no IO completed)\n", label, a,
			iops, lag[0], lag[1], lag[2], late);
	return 0;
}

int fsp_stats_curve(struct fsp_store *st, int64_t run, const char *title, FILE *out)
{
	/* a run with rate steps says its arrivals (run.c, store_rates) */
	char *arrivals = fsp_store_attr(st, run, "rate.arrivals");
	char *late_ns = fsp_store_attr(st, run, "rate.late_ns");
	if (!arrivals) {
		free(late_ns);
		return 0;
	}
	struct curve_print c = { .st = st, .run = run, .out = out, .h = malloc(sizeof(struct fsp_hist)) };
	if (!c.h) {
		free(arrivals);
		free(late_ns);
		return -1;
	}
	fprintf(out, "\n%sload curve (%s arrivals; latency from each IO's intended issue time, us;\n"
		"  late: sent more than %.0f us after it, or not at all):\n", title, arrivals,
		late_ns ? strtod(late_ns, NULL) / 1e3 : 1000.0);
	fprintf(out, "  %-6s %8s %8s %8s %8s %8s %6s %2s %8s %8s %8s %8s\n", "step", "asked", "IOPS",
		"lag p50", "lag p99", "lag max", "late", "", "mean", "p50", "p99", "p99.9");
	int rc = fsp_store_each_step(st, run, curve_row, &c);
	char *stopped = fsp_store_attr(st, run, "curve.stopped_after");
	if (stopped)
		fprintf(out, "  (stopped after step %s: its p99 passed stop-p99)\n", stopped);
	free(stopped);
	free(c.h);
	free(arrivals);
	free(late_ns);
	return rc || c.failed ? -1 : 0;
}

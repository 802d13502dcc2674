/*
 * report.c - `fsprism report DB [--run N] [--vs M] -o FILE.html`: the
 * charts of a stored run in one HTML file that opens offline, and the
 * same for run's and compare's --report. This file finds the run's
 * targets (a compare's engine and mount runs, or the run itself) and
 * hands each one's `stats --format json` to the page (src/report/), so
 * that every number a chart plots is the one stats prints.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "src/cli/cli.h"
#include "src/cli/diagnose.h"
#include "src/cli/opt.h"
#include "src/cli/report.h"
#include "src/cli/stats.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/report/report.h"

#define MAX_TARGETS 32

/* One run's targets being collected. */
struct targets {
	struct fsp_report_target t[MAX_TARGETS];
	char *label[MAX_TARGETS], *kind[MAX_TARGETS], *stats[MAX_TARGETS];
	int n;
	int mounts; /* 0: collecting engine runs, 1: mount runs */
};

static int add_child(void *arg, int64_t id, const char *kind, const char *label)
{
	struct targets *g = arg;
	int is_mount = kind && !strcmp(kind, "mount");
	if (is_mount != g->mounts || g->n == MAX_TARGETS)
		return 0;
	g->t[g->n].run = id;
	g->label[g->n] = strdup(label ? label : kind ? kind : "?");
	g->kind[g->n] = strdup(kind ? kind : "?");
	g->n++;
	return 0;
}

static void free_targets(struct targets *g)
{
	for (int i = 0; i < g->n; i++) {
		free(g->label[i]);
		free(g->kind[i]);
		free(g->stats[i]);
	}
}

/* A child run's round (its attribute `round`; 0 without one). */
static int run_round(struct fsp_store *st, int64_t run)
{
	char *v = fsp_store_attr(st, run, "round");
	int r = v ? atoi(v) : 0;
	free(v);
	return r;
}

/*
 * Of a compare's rounds, the charts show the last (as compare --details
 * shows its table): one run per label, the one of the highest round, the
 * newest among equals. The answer (diagnose) judges every round.
 */
static void last_round(struct fsp_store *st, struct targets *g)
{
	int round[MAX_TARGETS], keep[MAX_TARGETS];
	for (int i = 0; i < g->n; i++)
		round[i] = run_round(st, g->t[i].run);
	for (int i = 0; i < g->n; i++) {
		keep[i] = 1;
		for (int j = 0; j < g->n && keep[i]; j++)
			if (j != i && !strcmp(g->label[i], g->label[j]) &&
			    !strcmp(g->kind[i], g->kind[j]) &&
			    (round[j] > round[i] ||
			     (round[j] == round[i] && g->t[j].run > g->t[i].run)))
				keep[i] = 0;
	}
	int k = 0;
	for (int i = 0; i < g->n; i++) {
		if (!keep[i]) {
			free(g->label[i]);
			free(g->kind[i]);
			continue;
		}
		g->t[k] = g->t[i];
		g->label[k] = g->label[i];
		g->kind[k] = g->kind[i];
		k++;
	}
	g->n = k;
}

/* The targets of run (kind): a compare's engine runs, then its mounts;
 * any other run is its own target. Each with its stats JSON. */
static int load_targets(const char *cmd, struct fsp_store *st, int64_t run,
			const struct fsp_run_row *r, struct targets *g)
{
	memset(g, 0, sizeof(*g));
	if (r->kind && !strcmp(r->kind, "compare")) {
		for (g->mounts = 0; g->mounts < 2; g->mounts++)
			if (fsp_store_each_child_run(st, run, add_child, g) < 0)
				goto db_error;
		last_round(st, g);
	} else {
		char name[64];
		snprintf(name, sizeof(name), "run %" PRId64, run);
		g->t[0].run = run;
		g->label[0] = strdup(r->label ? r->label : name);
		g->kind[0] = strdup(r->kind ? r->kind : "?");
		g->n = 1;
	}
	for (int i = 0; i < g->n; i++) {
		size_t len;
		FILE *mem = open_memstream(&g->stats[i], &len);
		if (!mem || !g->label[i] || !g->kind[i]) {
			fprintf(stderr, "fsprism %s: out of memory\n", cmd);
			return -1;
		}
		/* the very numbers `fsprism stats --format json` prints */
		int rc = fsp_stats_print(st, g->t[i].run, "json", 0, mem);
		if (fclose(mem) != 0 || rc < 0)
			return -1; /* said by stats */
		g->t[i].label = g->label[i];
		g->t[i].kind = g->kind[i];
		g->t[i].stats_json = g->stats[i];
	}
	return 0;
db_error:
	fprintf(stderr, "fsprism %s: database error: %s\n", cmd, fsp_store_errmsg(st));
	return -1;
}

/*
 * The analyses' place in the run's object (docs/report.md). The layer
 * split per IO needs nothing here: it is each engine target's "layers" in
 * its stats JSON, which the page already has. The diagnosis of a compare
 * is added as "diagnosis": the very object `fsprism diagnose --format
 * json` prints, from the same function. NULL: nothing to add (not a
 * compare) or out of memory; a compare diagnose cannot read gets
 * {"available": false} (diagnose said why on stderr) and the report is
 * still written.
 */
static char *analysis_members(struct fsp_store *st, int64_t run, const char *kind)
{
	if (!kind || strcmp(kind, "compare"))
		return NULL;
	char *dx = NULL, *out = NULL;
	size_t len;
	FILE *mem = open_memstream(&dx, &len);
	if (!mem)
		return NULL;
	int rc = fsp_diagnose_print(mem, st, run, FSP_DIAGNOSE_JSON, "report");
	if (fclose(mem) != 0)
		rc = -1;
	if (rc == 0 && dx && len) {
		while (len && (dx[len - 1] == '\n' || dx[len - 1] == ' '))
			dx[--len] = 0;
		if (asprintf(&out, "\"diagnosis\": %s", dx) < 0)
			out = NULL;
	} else if (asprintf(&out, "\"diagnosis\": {\"available\": false, \"reason\": "
			    "\"fsprism diagnose could not read compare run %" PRId64 "\"}",
			    run) < 0) {
		out = NULL;
	}
	free(dx);
	return out;
}

/* 1 and *r for a run that exists, 0 (said) if not, -1 (said) on error. */
static int find_run(const char *cmd, struct fsp_store *st, int64_t run,
		    struct fsp_run_row *r)
{
	int rc = fsp_store_load_run(st, run, r);
	if (rc == 0)
		fprintf(stderr, "fsprism %s: no run %" PRId64 " in %s\n", cmd, run,
			fsp_store_filename(st));
	else if (rc < 0)
		fprintf(stderr, "fsprism %s: database error: %s\n", cmd, fsp_store_errmsg(st));
	return rc;
}

int report_html(const char *cmd, struct fsp_store *st, int64_t run, int64_t vs,
		const char *path, const char *chartjs, int quiet)
{
	struct fsp_run_row r[2];
	struct targets g[2];
	struct fsp_report_run runs[2];
	char *analysis[2] = { NULL, NULL };
	int nruns = vs ? 2 : 1, loaded = 0, rc = 1;
	char err[1024];

	memset(r, 0, sizeof(r));
	for (int i = 0; i < nruns; i++)
		if (find_run(cmd, st, i ? vs : run, &r[i]) != 1)
			goto out;
	if (vs && strcmp(r[0].kind ? r[0].kind : "", r[1].kind ? r[1].kind : "")) {
		fprintf(stderr, "fsprism %s: run %" PRId64 " is of kind '%s', run %" PRId64
			" of kind '%s': --vs needs two runs of the same kind\n", cmd, run,
			r[0].kind ? r[0].kind : "?", vs, r[1].kind ? r[1].kind : "?");
		goto out;
	}
	for (int i = 0; i < nruns; i++, loaded++) {
		if (load_targets(cmd, st, i ? vs : run, &r[i], &g[i]) < 0) {
			loaded++;
			goto out;
		}
		analysis[i] = analysis_members(st, i ? vs : run, r[i].kind);
		runs[i] = (struct fsp_report_run){
			.run = i ? vs : run, .kind = r[i].kind, .targets = g[i].t,
			.ntargets = g[i].n, .analysis_json = analysis[i],
		};
	}
	if (fsp_report_write(path, st, fsp_store_filename(st), runs, nruns,
			     chartjs ? chartjs : fsp_report_default_chartjs(), err,
			     sizeof(err)) < 0) {
		fprintf(stderr, "fsprism %s: %s\n", cmd, err);
		goto out;
	}
	if (!quiet)
		printf("report written to %s\n", path);
	rc = 0;
out:
	for (int i = 0; i < loaded; i++)
		free_targets(&g[i]);
	for (int i = 0; i < nruns; i++) {
		fsp_run_row_free(&r[i]);
		free(analysis[i]);
	}
	return rc;
}

int report_check_output(const char *cmd, const char *path)
{
	char *copy = strdup(path);
	if (!copy) {
		fprintf(stderr, "fsprism %s: out of memory\n", cmd);
		return 1;
	}
	const char *dir = dirname(copy);
	int ok = access(dir, W_OK | X_OK) == 0;
	if (!ok)
		fprintf(stderr, "fsprism %s: cannot write the report %s: %s: %s\n", cmd, path,
			dir, strerror(errno));
	free(copy);
	if (!ok)
		return 1;
	const char *lib = fsp_report_default_chartjs();
	if (!*lib || access(lib, R_OK) != 0) {
		fprintf(stderr, "fsprism %s: --report needs Chart.js, not found at %s "
			"(install libjs-chart.js, or configure --with-chartjs=FILE)\n", cmd,
			*lib ? lib : "(configured without it)");
		return 1;
	}
	return 0;
}

static void report_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism report DB [--run N] [--vs M] -o FILE.html [--chartjs FILE]\n"
"\n"
"Write the charts of run N (default: the newest top-level run) into one\n"
"self-contained HTML file that opens offline: for a compare, its diagnosis\n"
"first; throughput against the profile's mix, queue depth or the GB of a\n"
"fill per target, reads and writes apart; latency CDFs and p50/p99/p99.9\n"
"beside the mean per step; each engine target's layer split per IO (the\n"
"parts around the median and in the tail, and the tail attribution);\n"
"the throughput timeline and a latency heat map; the device side (block\n"
"requests' offset against time, the emulation's write amplification,\n"
"flushes, sequentiality, extents); the run's facts. Every chart has its\n"
"numbers beside it (a table and a CSV download). The numbers are those of\n"
"'fsprism stats --format json' (and 'fsprism diagnose --format json') for\n"
"the same runs.\n"
"\n"
"  -o, --output FILE  the report (written as FILE.tmp, then renamed)\n"
"  --run N            the run (a compare, a run or a mount)\n"
"  --vs M             overlay run M (of the same kind) and add a table of\n"
"                     ratios N / M\n"
"  --chartjs FILE     Chart.js to embed (default: %s)\n"
"See docs/report.md.\n", *fsp_report_default_chartjs() ? fsp_report_default_chartjs() :
		"none configured");
}

static int parse_id(const char *what, const char *s, int64_t *id)
{
	if (fsp_opt_run_id(s, id))
		return fsp_usage_error("report", "%s needs a positive run id, not '%s'", what, s);
	return 0;
}

/* The newest run that is nobody's part (a compare's targets are its parts). */
static int newest_top(void *arg, int64_t id, const char *kind, const char *label)
{
	*(int64_t *)arg = id;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	const char *out = NULL, *chartjs = NULL;
	int64_t run = 0, vs = 0;
	char err[512];
	enum { OPT_RUN = 256, OPT_VS, OPT_CHARTJS };
	static const struct option longopts[] = {
		{ "run", required_argument, NULL, OPT_RUN },
		{ "vs", required_argument, NULL, OPT_VS },
		{ "output", required_argument, NULL, 'o' },
		{ "chartjs", required_argument, NULL, OPT_CHARTJS },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct fsp_opt g;
	fsp_opt_init(&g, "report", report_usage, longopts, "ho:", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		switch (c) {
		case FSP_OPT_EXIT: return g.status;
		case OPT_RUN:
			if (parse_id("--run", g.arg, &run))
				return 2;
			break;
		case OPT_VS:
			if (parse_id("--vs", g.arg, &vs))
				return 2;
			break;
		case 'o': out = g.arg; break;
		case OPT_CHARTJS: chartjs = g.arg; break;
		}
	}
	if (fsp_opt_one_database(&g))
		return 2;
	if (!out)
		return fsp_usage_error("report", "no output file: give -o FILE.html");
	struct fsp_store *st = fsp_store_open_readonly(g.pos[0], err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fsprism report: %s\n", err);
		return 1;
	}
	if (!run) {
		/* the newest run without a parent: a whole compare, not its last part */
		if (fsp_store_each_child_run(st, 0, newest_top, &run) < 0 || run <= 0) {
			fprintf(stderr, "fsprism report: no runs in %s\n", g.pos[0]);
			fsp_store_close(st);
			return 1;
		}
	}
	if (vs == run) {
		fsp_store_close(st);
		return fsp_usage_error("report", "--vs %" PRId64 " is the run itself", vs);
	}
	int rc = report_html("report", st, run, vs, out, chartjs, 0);
	fsp_store_close(st);
	return rc;
}

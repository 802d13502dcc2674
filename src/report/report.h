/*
 * report.h - one self-contained HTML report: the charts (Chart.js, read
 * from its installed file and embedded), the page's script that draws
 * them (report.js, built in), and one JSON object with everything they
 * plot. Written to PATH.tmp and renamed over PATH, so that a reader never
 * sees half a report.
 */
#ifndef FSP_REPORT_REPORT_H
#define FSP_REPORT_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct fsp_store;

/* One target of a run: an engine run or a mount run of a compare, or the
 * run itself. stats_json is `fsprism stats --format json` of it. */
struct fsp_report_target {
	int64_t run;
	const char *label, *kind;
	const char *stats_json;
};

/*
 * One run the report shows (the first; with --vs the second overlaid).
 * analysis_json: members that the analyses add to the run's object (a
 * compare's "diagnosis"), comma-separated without braces, NULL for none;
 * the page shows each when present (docs/report.md says their shape).
 */
struct fsp_report_run {
	int64_t run;
	const char *kind;
	const struct fsp_report_target *targets;
	int ntargets;
	const char *analysis_json;
};

/* The Chart.js file configure found (--with-chartjs), "" if none. */
const char *fsp_report_default_chartjs(void);

/*
 * Write the report of runs[0..nruns) to path, with the Chart.js file
 * chartjs. 0, or -1 with a one-line reason in err (nothing left at path
 * or path.tmp then).
 */
int fsp_report_write(const char *path, struct fsp_store *st, const char *dbname,
		     const struct fsp_report_run *runs, int nruns, const char *chartjs,
		     char *err, size_t errlen);

#endif

/*
 * report.h - `fsprism report` and the --report FILE.html of run and
 * compare: one self-contained HTML report of a stored run (src/report/).
 */
#ifndef FSP_CLI_REPORT_H
#define FSP_CLI_REPORT_H

#include <stdint.h>

struct fsp_store;

/* Before a run: can a report be written to path (its directory writable,
 * Chart.js readable)? 0, or 1 with "fsprism CMD: ..." said. */
int report_check_output(const char *cmd, const char *path);

/*
 * Write the report of run (with vs overlaid, 0 for none) to path, with the
 * Chart.js file chartjs (NULL: configure's). 0 (and "report written to
 * PATH" on stdout unless quiet), or 1 with one "fsprism CMD: ..." line.
 */
int report_html(const char *cmd, struct fsp_store *st, int64_t run, int64_t vs,
		const char *path, const char *chartjs, int quiet);

#endif

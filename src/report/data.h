/*
 * data.h - the report's per-run chart data, read from the results
 * database and written as JSON members (docs/report.md lists them):
 * "facts" (host, kernel, version, dates, options, attributes), "steps",
 * "cdf" (per step and op), "timeline", "segments", "heatmap" (from op
 * rows) and "block_positions" (block_ios). The numbers `stats` prints
 * are not here: the report embeds the stats JSON itself.
 */
#ifndef FSP_REPORT_DATA_H
#define FSP_REPORT_DATA_H

#include <stdint.h>
#include <stdio.h>

struct fsp_store;

/* The members above, comma-separated, no braces. 0, or -1 on a database error. */
int fsp_report_write_run_data(FILE *out, struct fsp_store *st, int64_t run);

#endif

/*
 * stats_curve.h - a stored load curve as one table (docs/profiles.md,
 * "Load curves"): per step the asked and achieved IOPS, the lag of the
 * submissions, the late IOs, and per direction the latency from the
 * intended issue time (mean, p50, p99, p99.9), read back from the run's
 * rate.step.N.* attributes and histograms. `stats` prints it for a run
 * with rate steps, `compare --details` for each target.
 */
#ifndef FSP_CLI_STATS_CURVE_H
#define FSP_CLI_STATS_CURVE_H

#include <stdint.h>
#include <stdio.h>

struct fsp_store;

/*
 * Print run's curve under the line "<title>load curve ...": nothing for a
 * run without rate steps (returns 0 then too). -1 on a database error.
 */
int fsp_stats_curve(struct fsp_store *st, int64_t run, const char *title, FILE *out);

#endif

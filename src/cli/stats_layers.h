/*
 * stats_layers.h - the layers of each engine IO in `fsprism stats` and
 * `fsprism compare`: per step and direction, every part of the per-IO
 * decomposition (src/prism/decomp.h) at p50, p99, p99.9 and its mean, the
 * residual and why, and the tail attribution (the mean of each part over
 * the IOs at or above the p99 of the total, beside the same over the IOs
 * between p45 and p55). docs/prism.md.
 */
#ifndef FSP_STATS_LAYERS_H
#define FSP_STATS_LAYERS_H

#include <stdint.h>
#include <stdio.h>

struct fsp_store;

/* `stats`: the section of engine run `run` in format table, csv or json
 * (json: ',\n  "layers": {...}'). Nothing for a run that is no engine
 * run. 0, or -1 (printed). */
int fsp_stats_layers(struct fsp_store *st, int64_t run, const char *format, FILE *out);

/* `compare`: the table of engine run `run` under the heading of target
 * `target`; mount_run: the run of the mount it ran on (0: none). */
int fsp_stats_layers_target(struct fsp_store *st, const char *target, int64_t run,
			    int64_t mount_run, FILE *out);

#endif

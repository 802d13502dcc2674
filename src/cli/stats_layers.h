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

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "src/prism/decomp.h"

struct fsp_store;

/* `stats`: the section of engine run `run` in format table, csv or json
 * (json: ',\n  "layers": {...}'). Nothing for a run that is no engine
 * run. 0, or -1 (printed). */
int fsp_stats_layers(struct fsp_store *st, int64_t run, const char *format, FILE *out);

/* `compare`: the table of engine run `run` under the heading of target
 * `target`; mount_run: the run of the mount it ran on (0: none). */
int fsp_stats_layers_target(struct fsp_store *st, const char *target, int64_t run,
			    int64_t mount_run, FILE *out);

/* One step's parts, reads and writes together, for `diagnose`. */
struct fsp_layer_means {
	int step;
	uint64_t ios;
	double mean_ns[FSP_DC__COUNT]; /* per IO */
	double p50_ns[FSP_DC__COUNT], p99_ns[FSP_DC__COUNT]; /* of the step's main direction */
	/* the main direction's tail attribution: each part's mean over its IOs
	 * between p45 and p55 of the total (mid) and at or above p99 (tail) */
	double mid_ns[FSP_DC__COUNT], tail_ns[FSP_DC__COUNT];
	uint64_t mid_n, tail_n;
	int fuse; /* a mount whose FUSE transport was measured (not residual no_fuse) */
};
/* The parts of every step of engine run `run` (mount_run as above, 0: look
 * it up): *out malloc'd (free it), *n steps; *n 0 when the run has no
 * decomposition (no per-IO rows, not traced). 0, or -1 with err set. */
int fsp_layers_means(struct fsp_store *st, int64_t run, int64_t mount_run,
		     struct fsp_layer_means **out, size_t *n, char *err, size_t errlen);

#endif

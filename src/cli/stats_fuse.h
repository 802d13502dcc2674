/*
 * stats_fuse.h - the FUSE transport in `fsprism stats`: per operation, the
 * time a request waited in the kernel before a worker took it (queue) and
 * from the daemon's reply to the kernel's completion (reply), at
 * p50/p99/p99.9, with the requests joined and not, from the daemon's rows
 * joined to the fuse_reqs rows of the FUSE-transport trace
 * (docs/tracing.md).
 */
#ifndef FSP_STATS_FUSE_H
#define FSP_STATS_FUSE_H

#include <stdint.h>
#include <stdio.h>

struct fsp_store;

/*
 * The section in format "table", "json" (',\n  "fuse_transport": {...}')
 * or "csv" (rows in the ops table's columns, layer fuse_queue /
 * fuse_reply); nothing for a run that never tried to trace; one line with
 * the reason for a run that could not. 0 or -1 (printed).
 */
int fsp_stats_fuse(struct fsp_store *st, int64_t run, const char *format, FILE *out);

#endif

/*
 * stats_block.h - the block layer in `fsprism stats`: per step and
 * direction, the block requests' queue time (queued to issued) and device
 * time (issued to completed) at p50/p99/p99.9, their count and mean size,
 * and the device-level access pattern (sequential share, streams, IO sizes
 * at each layer, read-after-write recency, flushes and FUA writes), from
 * the block_ios rows of the block-layer trace (docs/tracing.md).
 */
#ifndef FSP_STATS_BLOCK_H
#define FSP_STATS_BLOCK_H

#include <stdint.h>
#include <stdio.h>

struct fsp_store;

/* Table: a "Block layer" section, or one line saying why the run was not
 * traced (nothing for a run that never tried). 0 or -1 (printed). */
int fsp_stats_block_table(struct fsp_store *st, int64_t run, FILE *out);
/* CSV: rows in the ops table's columns, op block_read/block_write, layer
 * queue/device; then the pattern's (step, metric) rows (docs/tracing.md). */
int fsp_stats_block_csv(struct fsp_store *st, int64_t run, FILE *out);
/* JSON: ',\n  "block": {...}' (nothing for a run that never tried). */
int fsp_stats_block_json(struct fsp_store *st, int64_t run, FILE *out);

#endif

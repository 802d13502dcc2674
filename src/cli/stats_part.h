/*
 * stats_part.h - one part of a latency split as the stats sections print
 * it (the block layer's queue and device time, the FUSE transport's queue
 * and reply): count, mean, p50/p99/p99.9 and max of the stored rows, in
 * each of stats' three formats.
 *
 * Quantiles are nearest-rank over the rows, exact: the value of rank
 * ceil(q * n), as the histograms' definition (docs/schema.md).
 */
#ifndef FSP_CLI_STATS_PART_H
#define FSP_CLI_STATS_PART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FSP_PART_NQ 3 /* p50, p99, p99.9 */

struct fsp_stats_part {
	size_t n;
	double mean, q[FSP_PART_NQ], max; /* microseconds */
};

/* Summarize v[0..n) (nanoseconds; sorted in place). */
void fsp_stats_part_of(int64_t *v, size_t n, struct fsp_stats_part *p);
/* Microseconds as stats' tables print them: two decimals below 100, one
 * below 100000, none from there. */
void fsp_stats_fmt_us(char *buf, size_t len, double us);
/* Table: the three quantiles' column heads, each " %11s" ("queue p50"). */
void fsp_stats_part_heads(FILE *out, const char *part);
/* Table: the three quantiles, each " %11s" ("-" without rows). */
void fsp_stats_part_table(FILE *out, const struct fsp_stats_part *p);
/* CSV: ",mean,p50,,p99,p99.9,max\n" in the ops columns' places (p90 empty). */
void fsp_stats_part_csv_tail(FILE *out, const struct fsp_stats_part *p);
/* JSON: `, "name": {"count": N, "mean_us": ..., ..., "max_us": ...}` or null. */
void fsp_stats_part_json(FILE *out, const char *name, const struct fsp_stats_part *p);

#endif

/*
 * quantile.h - nearest-rank quantiles, one definition for the histograms
 * (hist) and for numbers sorted in memory (the decomposition's totals,
 * stats' block and FUSE parts), and the comparators that sort them.
 *
 * The quantile q of n values is the value of rank ceil(q * n), rank 1 at
 * least (docs/schema.md): exact, one of the values, never interpolated.
 */
#ifndef FSP_BASE_QUANTILE_H
#define FSP_BASE_QUANTILE_H

#include <stddef.h>
#include <stdint.h>

/* The rank (1..n) of quantile q among n values: ceil(q * n), q clamped to
 * [0, 1] (NaN: 0); 0 when n is 0. */
uint64_t fsp_quantile_rank(uint64_t n, double q);

/* The value at quantile q of sorted[0..n) (ascending); 0 when n is 0. */
uint64_t fsp_quantile_u64(const uint64_t *sorted, size_t n, double q);
int64_t fsp_quantile_i64(const int64_t *sorted, size_t n, double q);

/* qsort/bsearch comparators, ascending. */
int fsp_cmp_u64(const void *a, const void *b);
int fsp_cmp_i64(const void *a, const void *b);

#endif

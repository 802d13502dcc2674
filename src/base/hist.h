/*
 * hist.h - exact log-linear latency histograms.
 *
 * Values (nanoseconds, or any uint64) below 2^(SUB_BITS+1) get one bucket
 * each; above that every power-of-two octave is split into 2^SUB_BITS equal
 * buckets. A bucket is therefore never wider than 1/128 of its lower bound,
 * so any quantile read back is within 1/128 (< 1%) of the true sample value.
 * Counting is exact: the histogram is updated for every operation, even when
 * per-operation rows are sampled, dropped or not recorded at all.
 *
 * fsp_hist_add() is inline because the FUSE handlers and the job engine call
 * it on their hot paths (per-thread instances, so no atomics).
 */
#ifndef FSP_HIST_H
#define FSP_HIST_H

#include <stdint.h>

#define FSP_HIST_SUB_BITS 7
#define FSP_HIST_SUB (1u << FSP_HIST_SUB_BITS)           /* 128 */
#define FSP_HIST_MAX_BITS 48                             /* 2^48 ns = 78 h */
#define FSP_HIST_LINEAR (2u * FSP_HIST_SUB)              /* 256 exact buckets */
#define FSP_HIST_NBUCKETS \
	(FSP_HIST_LINEAR + (FSP_HIST_MAX_BITS - FSP_HIST_SUB_BITS - 1) * FSP_HIST_SUB)

struct fsp_hist {
	uint64_t count;
	uint64_t sum;   /* sum of values (for means) */
	uint64_t min;   /* UINT64_MAX when empty */
	uint64_t max;
	uint64_t buckets[FSP_HIST_NBUCKETS];
};

static inline unsigned fsp_hist_bucket(uint64_t v)
{
	if (v < FSP_HIST_LINEAR)
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS+1 */
	if (msb >= FSP_HIST_MAX_BITS)
		return FSP_HIST_NBUCKETS - 1;
	unsigned shift = msb - FSP_HIST_SUB_BITS;
	unsigned sub = (unsigned)(v >> shift) - FSP_HIST_SUB; /* 0..SUB-1 */
	return FSP_HIST_LINEAR + (msb - FSP_HIST_SUB_BITS - 1) * FSP_HIST_SUB + sub;
}

static inline void fsp_hist_add(struct fsp_hist *h, uint64_t v)
{
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->buckets[fsp_hist_bucket(v)]++;
}

void fsp_hist_init(struct fsp_hist *h);
/* Smallest and largest value that falls into bucket b (inclusive). */
uint64_t fsp_hist_bucket_lo(unsigned b);
uint64_t fsp_hist_bucket_hi(unsigned b);
void fsp_hist_merge(struct fsp_hist *dst, const struct fsp_hist *src);
/*
 * Nearest-rank quantile, q in [0,1]: the value of rank ceil(q*count) (rank 1
 * for q == 0), estimated as the middle of its bucket and clamped to
 * [min,max]. Returns 0 for an empty histogram.
 */
uint64_t fsp_hist_quantile(const struct fsp_hist *h, double q);
double fsp_hist_mean(const struct fsp_hist *h);

#endif

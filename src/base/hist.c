/*
 * hist.c - log-linear histograms: bucket bounds, merging, quantiles.
 *
 * The bucket layout is described in hist.h. Everything here runs off the
 * hot path (fsp_hist_add is inline in the header).
 */
#include <string.h>
#include "src/base/hist.h"
#include "src/base/quantile.h"

void fsp_hist_init(struct fsp_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

uint64_t fsp_hist_bucket_lo(unsigned b)
{
	if (b < FSP_HIST_LINEAR)
		return b;
	if (b >= FSP_HIST_NBUCKETS)
		b = FSP_HIST_NBUCKETS - 1;
	unsigned octave = (b - FSP_HIST_LINEAR) / FSP_HIST_SUB; /* 0 = msb 8 */
	unsigned sub = (b - FSP_HIST_LINEAR) % FSP_HIST_SUB;
	unsigned shift = octave + 1;                 /* msb - SUB_BITS */
	return (uint64_t)(FSP_HIST_SUB + sub) << shift;
}

/*
 * The last bucket also holds every value >= 2^MAX_BITS (clamped by
 * fsp_hist_bucket); its nominal upper bound stays 2^MAX_BITS - 1 so that it
 * fits a signed SQLite integer. Quantiles clamp to [min,max] anyway.
 */
uint64_t fsp_hist_bucket_hi(unsigned b)
{
	if (b < FSP_HIST_LINEAR)
		return b;
	if (b >= FSP_HIST_NBUCKETS)
		b = FSP_HIST_NBUCKETS - 1;
	unsigned octave = (b - FSP_HIST_LINEAR) / FSP_HIST_SUB;
	return fsp_hist_bucket_lo(b) + ((uint64_t)1 << (octave + 1)) - 1;
}

void fsp_hist_merge(struct fsp_hist *dst, const struct fsp_hist *src)
{
	if (src->count == 0)
		return;
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	for (unsigned b = 0; b < FSP_HIST_NBUCKETS; b++)
		dst->buckets[b] += src->buckets[b];
}

uint64_t fsp_hist_quantile(const struct fsp_hist *h, double q)
{
	if (h->count == 0)
		return 0;
	uint64_t rank = fsp_quantile_rank(h->count, q);
	if (rank == 1)
		return h->min;
	if (rank == h->count)
		return h->max;

	uint64_t seen = 0;
	for (unsigned b = 0; b < FSP_HIST_NBUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			uint64_t lo = fsp_hist_bucket_lo(b), hi = fsp_hist_bucket_hi(b);
			uint64_t mid = lo + (hi - lo) / 2;
			if (mid < h->min)
				mid = h->min;
			if (mid > h->max)
				mid = h->max;
			return mid;
		}
	}
	return h->max; /* buckets inconsistent with count: be safe */
}

double fsp_hist_mean(const struct fsp_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

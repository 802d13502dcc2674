/*
 * quantile.c - nearest-rank quantiles and the comparators that sort for
 * them (quantile.h).
 */
#include <math.h>
#include "src/base/cmp.h"
#include "src/base/quantile.h"

uint64_t fsp_quantile_rank(uint64_t n, double q)
{
	if (!n)
		return 0;
	if (!(q > 0)) /* also catches NaN */
		q = 0;
	if (q > 1)
		q = 1;
	/* In double, not long double: q = 0.1 is slightly above 1/10, and
	 * only double rounding gives the expected rank 1 of 10 (long double
	 * would give 2). */
	double r = ceil(q * (double)n);
	return r < 1 ? 1 : (r >= (double)n ? n : (uint64_t)r);
}

uint64_t fsp_quantile_u64(const uint64_t *sorted, size_t n, double q)
{
	return n ? sorted[fsp_quantile_rank(n, q) - 1] : 0;
}

int64_t fsp_quantile_i64(const int64_t *sorted, size_t n, double q)
{
	return n ? sorted[fsp_quantile_rank(n, q) - 1] : 0;
}

int fsp_cmp_u64(const void *a, const void *b)
{
	return FSP_CMP(*(const uint64_t *)a, *(const uint64_t *)b);
}

int fsp_cmp_i64(const void *a, const void *b)
{
	return FSP_CMP(*(const int64_t *)a, *(const int64_t *)b);
}

/*
 * test_hist.c - histogram quantiles against exact sorted nearest-rank
 * quantiles, on random and adversarial data; bucket bounds; merging; the
 * quantiles of sorted numbers (src/base/quantile) against the same exact
 * reference, to the value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/base/cmp.h"
#include "src/base/hist.h"
#include "src/base/quantile.h"
#include "tests/unit.h"

/* Deterministic generator (splitmix64), so failures reproduce. */
static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static double rnd01(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* Exact nearest-rank quantile of sorted v[0..n). */
static uint64_t exact_quantile(const uint64_t *v, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static struct fsp_hist *hist_new(void)
{
	struct fsp_hist *h = malloc(sizeof(*h));
	assert_non_null(h);
	fsp_hist_init(h);
	return h;
}

static const double qs[] = { 0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95,
			     0.99, 0.995, 0.999, 0.9999, 1 };

/*
 * Every quantile within 1% of the exact one (values below 2^48, the
 * histogram's range); q=0 and q=1 exactly min and max; count/sum/min/max
 * exact.
 */
static void check_against_exact(uint64_t *v, size_t n)
{
	struct fsp_hist *h = hist_new();
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		fsp_hist_add(h, v[i]);
		sum += v[i];
	}
	qsort(v, n, sizeof(*v), fsp_cmp_u64);
	assert_int_equal(h->count, n);
	assert_int_equal(h->sum, sum);
	assert_int_equal(h->min, v[0]);
	assert_int_equal(h->max, v[n - 1]);
	assert_int_equal(fsp_hist_quantile(h, 0), v[0]);
	assert_int_equal(fsp_hist_quantile(h, 1), v[n - 1]);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t want = exact_quantile(v, n, qs[i]);
		uint64_t got = fsp_hist_quantile(h, qs[i]);
		double err = fabs((double)got - (double)want);
		if (err > 0.01 * (double)want) {
			fail_msg("q=%g: got %llu, exact %llu (rel err %g)", qs[i],
				 (unsigned long long)got, (unsigned long long)want,
				 err / (double)want);
		}
	}
	/* and at 1000 evenly spaced quantiles */
	for (int k = 0; k <= 1000; k++) {
		double q = k / 1000.0;
		uint64_t want = exact_quantile(v, n, q);
		uint64_t got = fsp_hist_quantile(h, q);
		assert_true(fabs((double)got - (double)want) <= 0.01 * (double)want);
		assert_int_equal(fsp_quantile_u64(v, n, q), want);
	}
	assert_true(fabs(fsp_hist_mean(h) - (double)sum / (double)n) < 1e-6 * (double)sum / (double)n + 1e-9);
	free(h);
}

#define N 200000

UNIT_TEST(test_bucket_bounds)
{
	/* buckets tile [0, 2^48) without gaps or overlap; values map into
	 * their own bucket; width <= lo/128 above the linear part */
	assert_int_equal(fsp_hist_bucket_lo(0), 0);
	for (unsigned b = 0; b < FSP_HIST_NBUCKETS; b++) {
		uint64_t lo = fsp_hist_bucket_lo(b), hi = fsp_hist_bucket_hi(b);
		assert_true(lo <= hi);
		assert_int_equal(fsp_hist_bucket(lo), b);
		assert_int_equal(fsp_hist_bucket(hi), b);
		if (b + 1 < FSP_HIST_NBUCKETS)
			assert_int_equal(fsp_hist_bucket_lo(b + 1), hi + 1);
		if (lo >= FSP_HIST_LINEAR)
			assert_true((hi - lo + 1) * 128 <= lo);
	}
	assert_int_equal(fsp_hist_bucket_hi(FSP_HIST_NBUCKETS - 1), (1ull << 48) - 1);
	assert_int_equal(fsp_hist_bucket(1ull << 48), FSP_HIST_NBUCKETS - 1);
	assert_int_equal(fsp_hist_bucket(UINT64_MAX), FSP_HIST_NBUCKETS - 1);
}

UNIT_TEST(test_uniform)
{
	uint64_t *v = malloc(N * sizeof(*v));
	for (size_t i = 0; i < N; i++)
		v[i] = 1000 + rnd() % 10000000; /* 1 us .. 10 ms */
	check_against_exact(v, N);
	free(v);
}

UNIT_TEST(test_lognormal)
{
	uint64_t *v = malloc(N * sizeof(*v));
	for (size_t i = 0; i < N; i++) {
		/* Box-Muller normal, exp'd: median ~ 50 us, wide spread */
		double u1 = rnd01() + 1e-12, u2 = rnd01();
		double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
		v[i] = (uint64_t)exp(log(50000.0) + 1.5 * z);
	}
	check_against_exact(v, N);
	free(v);
}

UNIT_TEST(test_heavy_tail)
{
	uint64_t *v = malloc(N * sizeof(*v));
	for (size_t i = 0; i < N; i++) {
		/* Pareto alpha=1.1 from 10 us: tail spans many octaves */
		double x = 10000.0 / pow(rnd01() + 1e-15, 1 / 1.1);
		if (x > 1e14)
			x = 1e14; /* stay below 2^48 */
		v[i] = (uint64_t)x;
	}
	check_against_exact(v, N);
	free(v);
}

UNIT_TEST(test_small_values_exact)
{
	/* below 256 every value has its own bucket: quantiles are exact */
	uint64_t *v = malloc(10000 * sizeof(*v));
	for (size_t i = 0; i < 10000; i++)
		v[i] = rnd() % 256;
	struct fsp_hist *h = hist_new();
	for (size_t i = 0; i < 10000; i++)
		fsp_hist_add(h, v[i]);
	qsort(v, 10000, sizeof(*v), fsp_cmp_u64);
	for (int k = 0; k <= 1000; k++)
		assert_int_equal(fsp_hist_quantile(h, k / 1000.0),
				 exact_quantile(v, 10000, k / 1000.0));
	free(h);
	free(v);
}

UNIT_TEST(test_all_equal)
{
	uint64_t vals[] = { 0, 1, 255, 256, 257, 12345, 1ull << 30, (1ull << 47) + 7 };
	for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++) {
		struct fsp_hist *h = hist_new();
		for (int i = 0; i < 1000; i++)
			fsp_hist_add(h, vals[k]);
		/* clamped to [min,max] = that value: exact */
		for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
			assert_int_equal(fsp_hist_quantile(h, qs[i]), vals[k]);
		assert_true(fsp_hist_mean(h) == (double)vals[k]);
		free(h);
	}
}

UNIT_TEST(test_boundaries)
{
	/* values exactly at and around every power of two */
	size_t n = 0;
	uint64_t *v = malloc(48 * 3 * 20 * sizeof(*v));
	for (int rep = 0; rep < 20; rep++)
		for (int k = 0; k < 48; k++) {
			v[n++] = 1ull << k;
			v[n++] = (1ull << k) - 1;
			v[n++] = (1ull << k) + 1;
		}
	check_against_exact(v, n);
	free(v);
}

UNIT_TEST(test_huge_values)
{
	/* >= 2^48 clamps into the last bucket, but count/min/max stay exact */
	struct fsp_hist *h = hist_new();
	uint64_t big[] = { 1ull << 48, 1ull << 50, (1ull << 62) + 3, UINT64_MAX / 4 };
	for (int i = 0; i < 100; i++)
		fsp_hist_add(h, 1000);
	for (size_t i = 0; i < 4; i++)
		fsp_hist_add(h, big[i]);
	assert_int_equal(h->count, 104);
	assert_int_equal(h->max, (1ull << 62) + 3);
	assert_int_equal(h->min, 1000);
	assert_int_equal(fsp_hist_quantile(h, 1), (1ull << 62) + 3);
	/* 1000's bucket is [1000,1003]: its midpoint, within 1% */
	assert_int_equal(fsp_hist_quantile(h, 0.5), 1001);
	assert_int_equal(h->buckets[FSP_HIST_NBUCKETS - 1], 4);
	/* a rank inside the clamped bucket reads back within [min,max] */
	uint64_t q = fsp_hist_quantile(h, 0.98);
	assert_true(q >= h->min && q <= h->max);
	free(h);
}

UNIT_TEST(test_empty_and_q_range)
{
	struct fsp_hist *h = hist_new();
	assert_int_equal(h->min, UINT64_MAX);
	assert_int_equal(fsp_hist_quantile(h, 0.5), 0);
	assert_true(fsp_hist_mean(h) == 0);
	fsp_hist_add(h, 500);
	fsp_hist_add(h, 70000);
	/* out-of-range q are clamped to [0,1] */
	assert_int_equal(fsp_hist_quantile(h, -1), 500);
	assert_int_equal(fsp_hist_quantile(h, 2), 70000);
	assert_int_equal(fsp_hist_quantile(h, NAN), 500);
	/* rank = ceil(q*n): q=0.5 of 2 values is rank 1 */
	assert_int_equal(fsp_hist_quantile(h, 0.5), 500);
	assert_int_equal(fsp_hist_quantile(h, 0.51), 70000);
	free(h);
}

UNIT_TEST(test_merge)
{
	struct fsp_hist *a = hist_new(), *b = hist_new(), *all = hist_new();
	struct fsp_hist *empty = hist_new();
	for (int i = 0; i < 50000; i++) {
		uint64_t x = rnd() % 5000000, y = 100 + rnd() % 100000000;
		fsp_hist_add(a, x);
		fsp_hist_add(all, x);
		fsp_hist_add(b, y);
		fsp_hist_add(all, y);
	}
	fsp_hist_merge(a, b);
	fsp_hist_merge(a, empty); /* merging an empty one changes nothing */
	assert_memory_equal(a, all, sizeof(*a));
	fsp_hist_merge(empty, all); /* into an empty one: a copy */
	assert_memory_equal(empty, all, sizeof(*a));
	free(a);
	free(b);
	free(all);
	free(empty);
}

/* The sorted numbers' quantiles: the rank's edges, signed values. */
UNIT_TEST(test_sorted_quantiles)
{
	assert_int_equal(fsp_quantile_rank(0, 0.5), 0);
	assert_int_equal(fsp_quantile_u64(NULL, 0, 0.5), 0);
	/* q = 0.1 of 10 is rank 1 (double rounding), 0.11 rank 2 */
	assert_int_equal(fsp_quantile_rank(10, 0.1), 1);
	assert_int_equal(fsp_quantile_rank(10, 0.11), 2);
	assert_int_equal(fsp_quantile_rank(10, 0), 1);
	assert_int_equal(fsp_quantile_rank(10, -1), 1);
	assert_int_equal(fsp_quantile_rank(10, NAN), 1);
	assert_int_equal(fsp_quantile_rank(10, 1), 10);
	assert_int_equal(fsp_quantile_rank(10, 2), 10);
	assert_int_equal(fsp_quantile_rank(1000, 0.999), 999);
	assert_int_equal(fsp_quantile_rank(1001, 0.999), 1000);
	int64_t v[] = { 7, -3, INT64_MAX, 0, INT64_MIN, -3, 12 };
	size_t n = sizeof(v) / sizeof(v[0]);
	qsort(v, n, sizeof(v[0]), fsp_cmp_i64);
	for (size_t i = 1; i < n; i++)
		assert_true(v[i - 1] <= v[i]);
	assert_true(fsp_quantile_i64(v, n, 0) == INT64_MIN);
	assert_true(fsp_quantile_i64(v, n, 0.5) == 0);  /* rank 4 of 7 */
	assert_true(fsp_quantile_i64(v, n, 0.3) == -3); /* rank 3 */
	assert_true(fsp_quantile_i64(v, n, 1) == INT64_MAX);
	uint64_t u[] = { UINT64_MAX, 1, 0, 1ull << 63 };
	qsort(u, 4, sizeof(u[0]), fsp_cmp_u64);
	assert_true(u[0] == 0 && u[1] == 1 && u[2] == 1ull << 63 && u[3] == UINT64_MAX);
	assert_true(fsp_quantile_u64(u, 4, 0.75) == 1ull << 63);
}

/* The three-way comparison of every comparator: the sign right where a
 * subtraction would overflow or wrap, 0 only on equal, the first differing
 * key deciding a chain. */
UNIT_TEST(test_cmp)
{
	(void)state;
	assert_int_equal(FSP_CMP((uint64_t)0, UINT64_MAX), -1);
	assert_int_equal(FSP_CMP(UINT64_MAX, (uint64_t)1), 1);
	assert_int_equal(FSP_CMP(INT64_MIN, INT64_MAX), -1);
	assert_int_equal(FSP_CMP(INT32_MAX, INT32_MIN), 1);
	assert_int_equal(FSP_CMP(1ull << 63, 1ull << 63), 0);
	assert_int_equal(FSP_CMP(-0.5, 0.25), -1);
	assert_int_equal(FSP_CMP(NAN, 1.0), 0); /* unordered: neither below nor above */
	struct { uint64_t t; uint32_t row; } x = { 5, 9 }, y = { 5, 2 }, z = { 4, 99 };
	assert_int_equal(FSP_CMP(x.t, y.t) ?: FSP_CMP(x.row, y.row), 1);
	assert_int_equal(FSP_CMP(z.t, y.t) ?: FSP_CMP(z.row, y.row), -1);
	assert_int_equal(FSP_CMP(x.t, x.t) ?: FSP_CMP(x.row, x.row), 0);
}

/*
 * test_emu.c - unit tests of the copy-on-write / journaling emulation's
 * building blocks: the block allocator (fs/emu/alloc), extent maps and
 * reference counts (fs/emu/extent), the write-ahead journal
 * (fs/emu/journal), its checksum (fs/emu/crc32c) and the IO interface they
 * write through (fs/emu/io). Randomised tests use a fixed-seed generator
 * and check every step against a plain array model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/emu/alloc.h"
#include "fs/emu/crc32c.h"
#include "fs/emu/extent.h"
#include "fs/emu/io.h"
#include "fs/emu/journal.h"
#include "tests/unit.h"

/* ---- deterministic random numbers ---- */

static uint64_t rng_state;

static void rng_seed(uint64_t s) { rng_state = s ? s : 1; }

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd(uint64_t n) { return rng() % n; }

/* ====================================================================
 * allocator
 * ==================================================================== */

enum { S_FREE = 0, S_USED = 1, S_PEND = 2 };

static uint64_t shadow_count(const uint8_t *sh, uint64_t n, int state)
{
	uint64_t c = 0;
	for (uint64_t i = 0; i < n; i++)
		c += sh[i] == state;
	return c;
}

/* free runs in the shadow: pending blocks are not free */
static uint64_t shadow_free_runs(const uint8_t *sh, uint64_t n, uint64_t *longest)
{
	uint64_t runs = 0, best = 0, cur = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (sh[i] == S_FREE) {
			if (!cur)
				runs++;
			cur++;
			if (cur > best)
				best = cur;
		} else {
			cur = 0;
		}
	}
	if (longest)
		*longest = best;
	return runs;
}

static void check_shadow(const struct emu_alloc *a, const uint8_t *sh, uint64_t n)
{
	uint64_t longest;
	assert_int_equal(emu_alloc_free_count(a), shadow_count(sh, n, S_FREE));
	assert_int_equal(emu_alloc_pending_count(a), shadow_count(sh, n, S_PEND));
	assert_int_equal(emu_alloc_free_extents(a), shadow_free_runs(sh, n, &longest));
	assert_int_equal(emu_alloc_largest_free(a), longest);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(emu_alloc_state(a, i), sh[i]);
}

UNIT_TEST(test_alloc_basic)
{
	struct emu_alloc *a = emu_alloc_new(1000, 0, EMU_ALLOC_FIRST_FIT);
	struct emu_run r[4];
	size_t nr;

	(void)state;
	assert_non_null(a);
	assert_int_equal(emu_alloc_block_size(a), 4096);
	assert_int_equal(emu_alloc_txid(a), 1);
	assert_int_equal(emu_alloc_get(a, 10, r, 4, &nr), 10);
	assert_int_equal(nr, 1);
	assert_int_equal(r[0].start, 0);
	assert_int_equal(r[0].len, 10);
	assert_int_equal(emu_alloc_free_count(a), 990);

	/* transactional free: pending until commit, not reallocated before */
	assert_int_equal(emu_alloc_free(a, 2, 3), 0);
	assert_int_equal(emu_alloc_pending_count(a), 3);
	assert_int_equal(emu_alloc_free_count(a), 990);
	assert_int_equal(emu_alloc_state(a, 3), S_PEND);
	assert_int_equal(emu_alloc_free(a, 3, 1), -EINVAL); /* double free (pending) */
	assert_int_equal(emu_alloc_free(a, 9, 2), -EINVAL); /* 10 is free */
	assert_int_equal(emu_alloc_free(a, 995, 10), -EINVAL); /* out of range */
	assert_int_equal(emu_alloc_free(a, 0, 0), -EINVAL);
	assert_int_equal(emu_alloc_get(a, 1, r, 4, &nr), 1);
	assert_int_equal(r[0].start, 10); /* not 2: still pending */
	assert_int_equal(emu_alloc_commit(a), 2);
	assert_int_equal(emu_alloc_pending_count(a), 0);
	assert_int_equal(emu_alloc_free_count(a), 992);
	assert_int_equal(emu_alloc_free(a, 2, 1), -EINVAL); /* double free (free) */
	assert_int_equal(emu_alloc_get(a, 3, r, 4, &nr), 3);
	assert_int_equal(r[0].start, 2); /* first-fit refills the hole */

	/* immediate free and reserve */
	assert_int_equal(emu_alloc_free_now(a, 2, 3), 0);
	assert_int_equal(emu_alloc_free_now(a, 2, 1), -EINVAL);
	assert_int_equal(emu_alloc_reserve(a, 2, 3), 0);
	assert_int_equal(emu_alloc_reserve(a, 4, 2), -EEXIST);

	/* no space: all or nothing */
	assert_int_equal(emu_alloc_get(a, 2000, r, 4, &nr), -ENOSPC);
	assert_int_equal(emu_alloc_get(a, 0, r, 4, &nr), -EINVAL);
	assert_null(emu_alloc_new(0, 0, EMU_ALLOC_NEXT_FIT));
	assert_null(emu_alloc_new(10, 3000, EMU_ALLOC_NEXT_FIT));
	emu_alloc_destroy(a);
}

/* next-fit and first-fit give different, predictable layouts */
UNIT_TEST(test_alloc_policies)
{
	struct emu_run r[4];
	size_t nr;
	(void)state;
	for (int p = 0; p < 2; p++) {
		enum emu_alloc_policy pol = p ? EMU_ALLOC_FIRST_FIT : EMU_ALLOC_NEXT_FIT;
		struct emu_alloc *a = emu_alloc_new(100, 4096, pol);
		assert_int_equal(emu_alloc_get(a, 10, r, 4, &nr), 10); /* A [0,10) */
		assert_int_equal(emu_alloc_get(a, 10, r, 4, &nr), 10); /* B [10,20) */
		assert_int_equal(r[0].start, 10);
		assert_int_equal(emu_alloc_get(a, 10, r, 4, &nr), 10); /* C [20,30) */
		assert_int_equal(emu_alloc_free(a, 10, 10), 0);
		assert_int_equal(emu_alloc_get(a, 5, r, 4, &nr), 5);
		assert_int_equal(r[0].start, 30); /* B's blocks are pending */
		emu_alloc_commit(a);
		assert_int_equal(emu_alloc_get(a, 5, r, 4, &nr), 5);
		assert_int_equal(r[0].start, pol == EMU_ALLOC_FIRST_FIT ? 10 : 35);
		assert_int_equal(emu_alloc_get(a, 8, r, 4, &nr), 8);
		/* first-fit: [15,20) is too small, so the first run of 8 is at 35;
		 * next-fit: continue at the frontier 40 */
		assert_int_equal(r[0].start, pol == EMU_ALLOC_FIRST_FIT ? 35 : 40);
		if (pol == EMU_ALLOC_NEXT_FIT) {
			/* fill to the end, then the frontier wraps to the hole */
			assert_int_equal(emu_alloc_get(a, 52, r, 4, &nr), 52);
			assert_int_equal(r[0].start, 48);
			assert_int_equal(emu_alloc_frontier(a), 0);
			assert_int_equal(emu_alloc_get(a, 3, r, 4, &nr), 3);
			assert_int_equal(r[0].start, 10);
			assert_int_equal(emu_alloc_frontier(a), 13);
		}
		emu_alloc_destroy(a);
	}
}

/* a request is served from one run when one fits, else from several */
UNIT_TEST(test_alloc_contiguous_runs)
{
	struct emu_alloc *a = emu_alloc_new(100, 4096, EMU_ALLOC_FIRST_FIT);
	struct emu_run r[4];
	size_t nr;
	(void)state;
	assert_int_equal(emu_alloc_reserve(a, 0, 100), 0);
	assert_int_equal(emu_alloc_free_now(a, 5, 3), 0);   /* [5,8)   3 */
	assert_int_equal(emu_alloc_free_now(a, 20, 2), 0);  /* [20,22) 2 */
	assert_int_equal(emu_alloc_free_now(a, 50, 10), 0); /* [50,60) 10 */
	assert_int_equal(emu_alloc_free_extents(a), 3);
	assert_int_equal(emu_alloc_get(a, 4, r, 4, &nr), 4);
	assert_int_equal(nr, 1);
	assert_int_equal(r[0].start, 50);
	/* 7 blocks, no run of 7 left: take runs in order */
	assert_int_equal(emu_alloc_get(a, 7, r, 4, &nr), 7);
	assert_int_equal(nr, 3);
	assert_int_equal(r[0].start, 5);
	assert_int_equal(r[0].len, 3);
	assert_int_equal(r[1].start, 20);
	assert_int_equal(r[1].len, 2);
	assert_int_equal(r[2].start, 54);
	assert_int_equal(r[2].len, 2);
	/* [56,60) left; max_runs caps the answer */
	assert_int_equal(emu_alloc_free_now(a, 70, 3), 0);
	assert_int_equal(emu_alloc_get(a, 6, r, 1, &nr), 4);
	assert_int_equal(nr, 1);
	assert_int_equal(r[0].start, 56);
	assert_int_equal(emu_alloc_get(a, 4, r, 4, &nr), -ENOSPC);
	assert_int_equal(emu_alloc_free_count(a), 3);
	emu_alloc_destroy(a);
}

/* random alloc/free/commit against a shadow model: never hands out a used
 * or pending block, counts and fragmentation always agree */
UNIT_TEST(test_alloc_random_shadow)
{
	enum { N = 1500 };
	(void)state;
	for (int p = 0; p < 2; p++) {
		enum emu_alloc_policy pol = p ? EMU_ALLOC_FIRST_FIT : EMU_ALLOC_NEXT_FIT;
		struct emu_alloc *a = emu_alloc_new(N, 4096, pol);
		uint8_t sh[N] = { 0 };
		rng_seed(42 + (uint64_t)p);
		for (int step = 0; step < 20000; step++) {
			uint64_t op = rnd(10);
			if (op < 4) {
				struct emu_run r[4];
				uint64_t n = 1 + rnd(40), longest, sum = 0;
				size_t max = 1 + (size_t)rnd(4), nr;
				uint64_t nfree = shadow_count(sh, N, S_FREE);
				int64_t got;
				shadow_free_runs(sh, N, &longest);
				got = emu_alloc_get(a, n, r, max, &nr);
				if (n > nfree) {
					assert_int_equal(got, -ENOSPC);
					continue;
				}
				assert_true(got > 0);
				assert_true(nr >= 1 && nr <= max);
				if (longest >= n)
					assert_int_equal(nr, 1);
				for (size_t k = 0; k < nr; k++) {
					for (uint64_t b = r[k].start; b < r[k].start + r[k].len; b++) {
						assert_true(b < N);
						assert_int_equal(sh[b], S_FREE);
						sh[b] = S_USED;
					}
					sum += r[k].len;
				}
				assert_int_equal(sum, (uint64_t)got);
				if ((uint64_t)got < n)
					assert_int_equal(nr, max);
			} else if (op < 6) {
				/* free a used range */
				uint64_t b = rnd(N), len = 0;
				while (b < N && sh[b] != S_USED)
					b++;
				if (b == N)
					continue;
				while (b + len < N && sh[b + len] == S_USED && len < 8)
					len++;
				assert_int_equal(emu_alloc_free(a, b, len), 0);
				memset(sh + b, S_PEND, len);
			} else if (op == 6) {
				/* arbitrary free: must fail unless all used */
				uint64_t b = rnd(N), len = 1 + rnd(4);
				int ok = b + len <= N;
				for (uint64_t i = b; ok && i < b + len; i++)
					ok = sh[i] == S_USED;
				assert_int_equal(emu_alloc_free(a, b, len), ok ? 0 : -EINVAL);
				if (ok)
					memset(sh + b, S_PEND, len);
			} else if (op == 7) {
				uint64_t b = rnd(N);
				if (sh[b] == S_USED) {
					assert_int_equal(emu_alloc_free_now(a, b, 1), 0);
					sh[b] = S_FREE;
				} else {
					assert_int_equal(emu_alloc_free_now(a, b, 1), -EINVAL);
				}
			} else if (op == 8) {
				emu_alloc_commit(a);
				for (int i = 0; i < N; i++)
					if (sh[i] == S_PEND)
						sh[i] = S_FREE;
			} else {
				check_shadow(a, sh, N);
			}
		}
		check_shadow(a, sh, N);
		emu_alloc_destroy(a);
	}
}

UNIT_TEST(test_alloc_serialize)
{
	struct emu_alloc *a = emu_alloc_new(1003, 4096, EMU_ALLOC_NEXT_FIT), *b;
	struct emu_run r[4];
	size_t nr, sz;
	uint8_t *img;
	(void)state;
	emu_alloc_get(a, 100, r, 4, &nr);
	emu_alloc_commit(a);
	emu_alloc_free(a, 10, 5);
	emu_alloc_reserve(a, 1000, 3); /* the last, partial bitmap byte */
	sz = emu_alloc_serial_size(a);
	assert_int_equal(sz, 48 + 126);
	img = malloc(sz);
	assert_int_equal(emu_alloc_serialize(a, img, sz - 1, 1), -EINVAL);

	assert_int_equal(emu_alloc_serialize(a, img, sz, 1), 0);
	assert_int_equal(emu_alloc_deserialize(img, sz, EMU_ALLOC_FIRST_FIT, &b), 0);
	assert_int_equal(emu_alloc_nblocks(b), 1003);
	assert_int_equal(emu_alloc_free_count(b), 1003 - 100 - 3 + 5);
	assert_int_equal(emu_alloc_state(b, 10), S_FREE);
	assert_int_equal(emu_alloc_state(b, 15), S_USED);
	assert_int_equal(emu_alloc_state(b, 1002), S_USED);
	assert_int_equal(emu_alloc_frontier(b), 100);
	assert_int_equal(emu_alloc_txid(b), 2);
	assert_int_equal(emu_alloc_policy(b), EMU_ALLOC_FIRST_FIT);
	emu_alloc_destroy(b);

	assert_int_equal(emu_alloc_serialize(a, img, sz, 0), 0);
	assert_int_equal(emu_alloc_deserialize(img, sz, EMU_ALLOC_NEXT_FIT, &b), 0);
	assert_int_equal(emu_alloc_state(b, 10), S_USED);
	assert_int_equal(emu_alloc_free_count(b), 1003 - 100 - 3);
	emu_alloc_destroy(b);

	img[48 + 3] ^= 0x10; /* a flipped bitmap bit */
	assert_int_equal(emu_alloc_deserialize(img, sz, EMU_ALLOC_NEXT_FIT, &b), -EINVAL);
	assert_null(b);
	img[48 + 3] ^= 0x10;
	assert_int_equal(emu_alloc_deserialize(img, sz - 1, EMU_ALLOC_NEXT_FIT, &b), -EINVAL);
	img[0] = 'X';
	assert_int_equal(emu_alloc_deserialize(img, sz, EMU_ALLOC_NEXT_FIT, &b), -EINVAL);
	free(img);
	emu_alloc_destroy(a);
}

/* ---- fragmentation under a scripted CoW overwrite pattern ---- */

struct cow_ctx {
	struct emu_alloc *a;
	uint64_t cur_txid;
	int released;
};

/* what a CoW write path does with a replaced range */
static void cow_release(void *ctx, uint64_t pblk, uint64_t len, uint64_t txid)
{
	struct cow_ctx *c = ctx;
	int rc = txid == c->cur_txid ? emu_alloc_free_now(c->a, pblk, len)
				      : emu_alloc_free(c->a, pblk, len);
	assert_int_equal(rc, 0);
	c->released += (int)len;
}

/* physically contiguous runs of a flat logical->physical array */
static size_t model_runs(const uint64_t *p, uint64_t n)
{
	size_t runs = 0;
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != UINT64_MAX && (i == 0 || p[i - 1] == UINT64_MAX || p[i] != p[i - 1] + 1))
			runs++;
	return runs;
}

/* one-block CoW write of logical block l; returns the new physical block */
static uint64_t cow_write_block(struct emu_emap *m, struct cow_ctx *c, uint64_t l)
{
	struct emu_map mp;
	struct emu_run r;
	size_t nr;
	emu_emap_classify(m, l, 1, c->cur_txid, &mp);
	if (mp.kind == EMU_MAP_INPLACE)
		return mp.pblk;
	assert_int_equal(emu_alloc_get(c->a, 1, &r, 1, &nr), 1);
	assert_int_equal(emu_emap_insert(m, l, r.start, 1, c->cur_txid, c->cur_txid,
					 cow_release, c), 0);
	return r.start;
}

UNIT_TEST(test_alloc_fragmentation)
{
	enum { DEV = 8192, FILE_BLOCKS = 1024, K1 = 100, K2 = 50 };
	struct emu_alloc *a = emu_alloc_new(DEV, 4096, EMU_ALLOC_NEXT_FIT);
	struct cow_ctx c = { a, 1, 0 };
	struct emu_emap m;
	struct emu_run r;
	static uint64_t p[FILE_BLOCKS];
	static uint8_t moved[FILE_BLOCKS];
	size_t nr, runs;
	(void)state;

	/* sequential write of the file: one extent */
	emu_emap_init(&m, 0);
	assert_int_equal(emu_alloc_get(a, FILE_BLOCKS, &r, 1, &nr), FILE_BLOCKS);
	assert_int_equal(r.start, 0);
	assert_int_equal(emu_emap_insert(&m, 0, r.start, FILE_BLOCKS, 1, 1, NULL, NULL), 0);
	for (uint64_t i = 0; i < FILE_BLOCKS; i++)
		p[i] = i;
	assert_int_equal(emu_emap_count_physical(&m), 1);
	c.cur_txid = emu_alloc_commit(a);

	/* next-fit CoW overwrite of K1 random blocks in one transaction: each
	 * lands at the frontier, in write order */
	rng_seed(7);
	for (int k = 0; k < K1; k++) {
		uint64_t l;
		do
			l = rnd(FILE_BLOCKS);
		while (moved[l]);
		moved[l] = 1;
		p[l] = cow_write_block(&m, &c, l);
		assert_int_equal(p[l], FILE_BLOCKS + (uint64_t)k);
	}
	runs = model_runs(p, FILE_BLOCKS);
	assert_int_equal(emu_emap_count_physical(&m), runs);
	assert_true(runs >= K1 + 1 && runs <= 2 * K1 + 1);
	assert_int_equal(emu_alloc_pending_count(a), K1);
	assert_int_equal(emu_alloc_free_count(a), DEV - FILE_BLOCKS - K1);

	/* a second write in the same transaction lands in place */
	for (uint64_t l = 0; l < FILE_BLOCKS; l++) {
		if (moved[l]) {
			assert_int_equal(cow_write_block(&m, &c, l), p[l]);
			break;
		}
	}
	assert_int_equal(emu_alloc_pending_count(a), K1);

	/* commit: the old copies become holes in the file's original area */
	c.cur_txid = emu_alloc_commit(a);
	{
		uint8_t hole[FILE_BLOCKS + 1] = { 0 };
		uint64_t holes = 0;
		for (uint64_t l = 0; l < FILE_BLOCKS; l++)
			hole[l] = moved[l];
		for (uint64_t l = 0; l < FILE_BLOCKS; l++)
			holes += hole[l] && (l == 0 || !hole[l - 1]);
		assert_int_equal(emu_alloc_free_extents(a), holes + 1);
	}

	/* first-fit refills the holes lowest first */
	emu_alloc_set_policy(a, EMU_ALLOC_FIRST_FIT);
	for (int k = 0; k < K2; k++) {
		uint64_t l, lowest = 0, np;
		do
			l = rnd(FILE_BLOCKS);
		while (moved[l] == 2);
		while (lowest < DEV && emu_alloc_state(a, lowest) != S_FREE)
			lowest++;
		np = cow_write_block(&m, &c, l);
		moved[l] = 2;
		assert_int_equal(np, lowest);
		assert_true(np < FILE_BLOCKS);
		p[l] = np;
	}
	assert_int_equal(emu_emap_count_physical(&m), model_runs(p, FILE_BLOCKS));
	emu_emap_free(&m);
	emu_alloc_destroy(a);
}

/* ====================================================================
 * extent maps
 * ==================================================================== */

struct rel_log {
	uint64_t pblk[64], len[64], txid[64];
	int n;
};

static void log_release(void *ctx, uint64_t pblk, uint64_t len, uint64_t txid)
{
	struct rel_log *lg = ctx;
	assert_true(lg->n < 64);
	lg->pblk[lg->n] = pblk;
	lg->len[lg->n] = len;
	lg->txid[lg->n] = txid;
	lg->n++;
}

static void assert_ext(const struct emu_emap *m, size_t i, uint64_t l, uint64_t p, uint64_t len)
{
	struct emu_ext e;
	assert_int_equal(emu_emap_nth(m, i, &e), 0);
	assert_int_equal(e.lblk, l);
	assert_int_equal(e.pblk, p);
	assert_int_equal(e.len, len);
	assert_int_equal(emu_emap_check(m), 0);
}

/* The i-th range lg saw released: len blocks at pblk. */
static void assert_released(const struct rel_log *lg, int i, uint64_t pblk, uint64_t len)
{
	assert_int_equal(lg->pblk[i], pblk);
	assert_int_equal(lg->len[i], len);
}

static uint64_t ext_txid(const struct emu_emap *m, size_t i)
{
	struct emu_ext e;
	assert_int_equal(emu_emap_nth(m, i, &e), 0);
	return e.txid;
}

UNIT_TEST(test_emap_split_merge)
{
	struct emu_emap m;
	struct rel_log lg = { .n = 0 };
	(void)state;
	emu_emap_init(&m, 0);
	assert_int_equal(emu_emap_insert(&m, 0, 1000, 100, 1, 1, log_release, &lg), 0);
	assert_int_equal(lg.n, 0);
	/* overwrite the middle: split in three */
	assert_int_equal(emu_emap_insert(&m, 10, 5000, 10, 1, 1, log_release, &lg), 0);
	assert_int_equal(emu_emap_count(&m), 3);
	assert_ext(&m, 0, 0, 1000, 10);
	assert_ext(&m, 1, 10, 5000, 10);
	assert_ext(&m, 2, 20, 1020, 80);
	assert_int_equal(lg.n, 1);
	assert_released(&lg, 0, 1010, 10);
	/* contiguous continuation merges with its left neighbour */
	assert_int_equal(emu_emap_insert(&m, 20, 5010, 10, 1, 1, log_release, &lg), 0);
	assert_int_equal(emu_emap_count(&m), 3);
	assert_ext(&m, 1, 10, 5000, 20);
	assert_ext(&m, 2, 30, 1030, 70);
	/* putting the original blocks back merges everything into one */
	assert_int_equal(emu_emap_insert(&m, 10, 1010, 20, 1, 1, log_release, &lg), 0);
	assert_int_equal(emu_emap_count(&m), 1);
	assert_ext(&m, 0, 0, 1000, 100);
	assert_int_equal(lg.n, 3);
	assert_released(&lg, 2, 5000, 20);
	/* overwrite spanning several extents and holes */
	lg.n = 0;
	assert_int_equal(emu_emap_insert(&m, 200, 3000, 10, 1, 1, NULL, NULL), 0);
	assert_int_equal(emu_emap_insert(&m, 90, 7000, 115, 1, 1, log_release, &lg), 0);
	assert_int_equal(lg.n, 2);
	assert_released(&lg, 0, 1090, 10);
	assert_released(&lg, 1, 3000, 5);
	assert_int_equal(emu_emap_count(&m), 3);
	assert_ext(&m, 2, 205, 3005, 5);
	assert_int_equal(emu_emap_end(&m), 210);
	assert_int_equal(emu_emap_mapped_blocks(&m), 90 + 115 + 5);
	emu_emap_free(&m);
}

UNIT_TEST(test_emap_lookup_holes)
{
	struct emu_emap m;
	struct emu_map mp;
	(void)state;
	emu_emap_init(&m, 0);
	assert_int_equal(emu_emap_lookup(&m, 5, 10, &mp), 10);
	assert_int_equal(mp.kind, EMU_MAP_HOLE);
	emu_emap_insert(&m, 10, 100, 10, 1, 1, NULL, NULL);
	emu_emap_insert(&m, 30, 300, 10, 1, 1, NULL, NULL);
	assert_int_equal(emu_emap_lookup(&m, 0, 100, &mp), 10);
	assert_int_equal(mp.kind, EMU_MAP_HOLE);
	assert_int_equal(emu_emap_lookup(&m, 15, 100, &mp), 5);
	assert_int_equal(mp.kind, EMU_MAP_MOVE);
	assert_int_equal(mp.pblk, 105);
	assert_int_equal(emu_emap_lookup(&m, 15, 2, &mp), 2);
	assert_int_equal(emu_emap_lookup(&m, 20, 5, &mp), 5);
	assert_int_equal(mp.kind, EMU_MAP_HOLE);
	assert_int_equal(emu_emap_lookup(&m, 20, 50, &mp), 10);
	assert_int_equal(emu_emap_lookup(&m, 39, 50, &mp), 1);
	assert_int_equal(mp.pblk, 309);
	assert_int_equal(emu_emap_lookup(&m, 40, 50, &mp), 50);
	assert_int_equal(mp.kind, EMU_MAP_HOLE);
	assert_int_equal(emu_emap_lookup(&m, 40, 0, &mp), 0);
	emu_emap_free(&m);
}

UNIT_TEST(test_emap_truncate_punch)
{
	struct emu_emap m;
	struct rel_log lg = { .n = 0 };
	(void)state;
	emu_emap_init(&m, 0);
	emu_emap_insert(&m, 0, 100, 10, 1, 1, NULL, NULL);
	emu_emap_insert(&m, 10, 500, 10, 2, 2, NULL, NULL);
	emu_emap_insert(&m, 30, 900, 10, 3, 3, NULL, NULL);
	/* punch [5,12): tail of the first, head of the second */
	assert_int_equal(emu_emap_punch(&m, 5, 7, log_release, &lg), 0);
	assert_int_equal(lg.n, 2);
	assert_released(&lg, 0, 105, 5);
	assert_int_equal(lg.txid[0], 1);
	assert_released(&lg, 1, 500, 2);
	assert_int_equal(lg.txid[1], 2);
	assert_ext(&m, 0, 0, 100, 5);
	assert_ext(&m, 1, 12, 502, 8);
	/* punch inside one extent splits it */
	lg.n = 0;
	assert_int_equal(emu_emap_punch(&m, 33, 2, log_release, &lg), 0);
	assert_int_equal(lg.n, 1);
	assert_int_equal(lg.pblk[0], 903);
	assert_int_equal(emu_emap_count(&m), 4);
	/* punching a hole releases nothing */
	lg.n = 0;
	assert_int_equal(emu_emap_punch(&m, 20, 10, log_release, &lg), 0);
	assert_int_equal(lg.n, 0);
	/* truncate to 15 blocks */
	assert_int_equal(emu_emap_truncate(&m, 15, log_release, &lg), 0);
	assert_int_equal(lg.n, 3);
	assert_released(&lg, 0, 505, 5);
	assert_released(&lg, 1, 900, 3);
	assert_released(&lg, 2, 905, 5);
	assert_int_equal(emu_emap_end(&m), 15);
	assert_int_equal(emu_emap_truncate(&m, 0, NULL, NULL), 0);
	assert_int_equal(emu_emap_count(&m), 0);
	emu_emap_free(&m);
}

/* in-place vs move, and the merge rule that keeps that answer exact */
UNIT_TEST(test_emap_txid)
{
	struct emu_emap m;
	struct emu_map mp;
	(void)state;
	emu_emap_init(&m, 0);
	emu_emap_insert(&m, 0, 100, 10, 4, 5, NULL, NULL);  /* older */
	emu_emap_insert(&m, 10, 110, 10, 5, 5, NULL, NULL); /* open txn */
	assert_int_equal(emu_emap_count(&m), 2); /* not merged: answers differ */
	assert_int_equal(emu_emap_count_physical(&m), 1);
	emu_emap_classify(&m, 3, 100, 5, &mp);
	assert_int_equal(mp.kind, EMU_MAP_MOVE);
	assert_int_equal(mp.len, 7);
	emu_emap_classify(&m, 12, 100, 5, &mp);
	assert_int_equal(mp.kind, EMU_MAP_INPLACE);
	assert_int_equal(mp.pblk, 112);
	emu_emap_classify(&m, 20, 3, 5, &mp);
	assert_int_equal(mp.kind, EMU_MAP_HOLE);
	/* after the transaction closes both answer "move", so an insert that
	 * touches them merges extents of different closed transactions */
	emu_emap_insert(&m, 20, 120, 5, 3, 6, NULL, NULL);
	assert_int_equal(emu_emap_count(&m), 2); /* [0,10) is not touched */
	assert_ext(&m, 1, 10, 110, 15);
	assert_int_equal(ext_txid(&m, 1), 5);
	emu_emap_insert(&m, 5, 105, 10, 4, 6, NULL, NULL);
	assert_int_equal(emu_emap_count(&m), 1);
	assert_ext(&m, 0, 0, 100, 25);
	assert_int_equal(ext_txid(&m, 0), 5);
	emu_emap_classify(&m, 12, 1, 6, &mp);
	assert_int_equal(mp.kind, EMU_MAP_MOVE);
	/* max_len splits long inserts and bounds merges */
	emu_emap_free(&m);
	emu_emap_init(&m, 8);
	emu_emap_insert(&m, 0, 0, 20, 1, 1, NULL, NULL);
	assert_int_equal(emu_emap_count(&m), 3);
	assert_ext(&m, 2, 16, 16, 4);
	assert_int_equal(emu_emap_count_physical(&m), 1);
	emu_emap_insert(&m, 20, 20, 4, 1, 1, NULL, NULL);
	assert_int_equal(emu_emap_count(&m), 3);
	assert_ext(&m, 2, 16, 16, 8);
	emu_emap_free(&m);
}

/* leaves drained by punches are merged again, so a map that shrinks does
 * not keep one leaf per surviving extent */
UNIT_TEST(test_emap_leaves)
{
	enum { N = 40 * EMU_EMAP_LEAF };
	struct emu_emap m;
	(void)state;
	emu_emap_init(&m, 0);
	for (uint64_t i = 0; i < N; i++) /* every other block: nothing merges */
		assert_int_equal(emu_emap_insert(&m, 2 * i, 10 * i, 1, 1, 1, NULL, NULL), 0);
	assert_int_equal(emu_emap_count(&m), N);
	assert_true(m.nleaf >= N / EMU_EMAP_LEAF);
	assert_int_equal(emu_emap_check(&m), 0);
	for (uint64_t i = 0; i < N; i++)
		if (i % EMU_EMAP_LEAF)
			assert_int_equal(emu_emap_punch(&m, 2 * i, 1, NULL, NULL), 0);
	assert_int_equal(emu_emap_count(&m), 40);
	assert_int_equal(emu_emap_check(&m), 0);
	assert_true(m.nleaf <= 2);
	/* and the survivors are the right ones */
	for (size_t i = 0; i < 40; i++)
		assert_ext(&m, i, 2 * i * EMU_EMAP_LEAF, 10 * i * EMU_EMAP_LEAF, 1);
	assert_int_equal(emu_emap_truncate(&m, 0, NULL, NULL), 0);
	assert_int_equal(m.nleaf, 0);
	emu_emap_free(&m);
}

/* randomised against a flat array */
struct flat_rel {
	uint64_t *pblk;   /* released physical blocks, in order */
	uint64_t *txid;
	size_t n, cap;
};

static void flat_release(void *ctx, uint64_t pblk, uint64_t len, uint64_t txid)
{
	struct flat_rel *f = ctx;
	for (uint64_t i = 0; i < len; i++) {
		assert_true(f->n < f->cap);
		f->pblk[f->n] = pblk + i;
		f->txid[f->n] = txid;
		f->n++;
	}
}

struct fiemap_chk {
	const uint64_t *p;
	uint64_t next_l;
	size_t runs;
};

static int fiemap_cb(void *ctx, uint64_t l, uint64_t p, uint64_t len)
{
	struct fiemap_chk *c = ctx;
	assert_true(l >= c->next_l);
	for (uint64_t i = 0; i < len; i++)
		assert_int_equal(c->p[l + i], p + i);
	c->next_l = l + len;
	c->runs++;
	return 0;
}

UNIT_TEST(test_emap_random_model)
{
	/* {logical blocks, max_len, longest op, steps}: the last one builds
	 * hundreds of extents, so leaves split, drain and merge */
	static const uint64_t variants[][4] = {
		{ 400, 0, 24, 6000 }, { 400, 16, 24, 6000 }, { 4000, 0, 6, 4000 },
	};
	(void)state;
	for (size_t variant = 0; variant < sizeof(variants) / sizeof(variants[0]); variant++) {
		const uint64_t L = variants[variant][0], maxop = variants[variant][2];
		uint64_t *p = malloc(L * sizeof(*p)), *t = malloc(L * sizeof(*t));
		uint64_t *exp_p = malloc(L * sizeof(*p)), *exp_t = malloc(L * sizeof(*t));
		uint64_t nextp = 10, cur = 1;
		size_t most = 0;
		struct emu_emap m;
		struct flat_rel f = { malloc(L * sizeof(uint64_t)), malloc(L * sizeof(uint64_t)), 0, L };
		emu_emap_init(&m, variants[variant][1]);
		for (uint64_t i = 0; i < L; i++)
			p[i] = t[i] = UINT64_MAX;
		rng_seed(1234 + (uint64_t)variant);
		for (uint64_t step = 0; step < variants[variant][3]; step++) {
			uint64_t op = rnd(10), l = rnd(L), len = 1 + rnd(maxop), nexp = 0;
			if (l + len > L)
				len = L - l;
			f.n = 0;
			if (op < 6) {
				/* insert; sometimes physically continuing the left neighbour */
				uint64_t pb = nextp + rnd(3);
				if (op == 0 && l > 0 && p[l - 1] != UINT64_MAX)
					pb = p[l - 1] + 1;
				for (uint64_t i = l; i < l + len; i++) {
					if (p[i] != UINT64_MAX) {
						exp_p[nexp] = p[i];
						exp_t[nexp++] = t[i];
					}
				}
				assert_int_equal(emu_emap_insert(&m, l, pb, len, cur, cur,
								 flat_release, &f), 0);
				for (uint64_t i = 0; i < len; i++) {
					p[l + i] = pb + i;
					t[l + i] = cur;
				}
				if (pb + len > nextp)
					nextp = pb + len;
			} else if (op < 8) {
				for (uint64_t i = l; i < l + len; i++) {
					if (p[i] != UINT64_MAX) {
						exp_p[nexp] = p[i];
						exp_t[nexp++] = t[i];
					}
					p[i] = t[i] = UINT64_MAX;
				}
				assert_int_equal(emu_emap_punch(&m, l, len, flat_release, &f), 0);
			} else if (op == 8) {
				/* truncate (rarely deep, so the map can grow) */
				uint64_t nb = L - rnd(rnd(64) ? L / 50 + 1 : L);
				for (uint64_t i = nb; i < L; i++) {
					if (p[i] != UINT64_MAX) {
						exp_p[nexp] = p[i];
						exp_t[nexp++] = t[i];
					}
					p[i] = t[i] = UINT64_MAX;
				}
				assert_int_equal(emu_emap_truncate(&m, nb, flat_release, &f), 0);
			} else {
				cur++; /* a commit */
			}
			/* released exactly the replaced blocks, in logical order */
			assert_int_equal(f.n, nexp);
			for (uint64_t i = 0; i < nexp; i++) {
				assert_int_equal(f.pblk[i], exp_p[i]);
				assert_int_equal(f.txid[i], exp_t[i]);
			}
			/* structure and lookups match the model */
			assert_int_equal(emu_emap_check(&m), 0);
			if (emu_emap_count(&m) > most)
				most = emu_emap_count(&m);
			for (uint64_t i = 0; i < L;) {
				struct emu_map mp;
				uint64_t n = emu_emap_classify(&m, i, L - i, cur, &mp);
				assert_true(n >= 1);
				for (uint64_t k = 0; k < n; k++) {
					if (mp.kind == EMU_MAP_HOLE) {
						assert_int_equal(p[i + k], UINT64_MAX);
					} else {
						assert_int_equal(p[i + k], mp.pblk + k);
						assert_int_equal(mp.kind == EMU_MAP_INPLACE, t[i + k] == cur);
					}
				}
				i += n;
			}
			assert_int_equal(emu_emap_count_physical(&m), model_runs(p, L));
			if (step % 50 == 0) {
				struct fiemap_chk c = { p, 0, 0 };
				assert_int_equal(emu_emap_fiemap(&m, 0, UINT64_MAX, fiemap_cb, &c), 0);
				assert_int_equal(c.runs, model_runs(p, L));
			}
		}
		if (L > 1000)
			assert_true(most > 8 * EMU_EMAP_LEAF); /* really many leaves */
		emu_emap_free(&m);
		free(f.pblk);
		free(f.txid);
		free(p);
		free(t);
		free(exp_p);
		free(exp_t);
	}
}

/* ---- reference counts ---- */

struct freed_blocks {
	uint8_t freed[256];
	uint64_t last_end;
};

static void refs_freed(void *ctx, uint64_t pblk, uint64_t len)
{
	struct freed_blocks *fb = ctx;
	assert_true(pblk >= fb->last_end); /* in physical order */
	for (uint64_t i = pblk; i < pblk + len; i++) {
		assert_true(i < 256);
		fb->freed[i]++;
	}
	fb->last_end = pblk + len;
}

UNIT_TEST(test_refs)
{
	struct emu_refs r;
	uint64_t cnt[256], run;
	(void)state;
	emu_refs_init(&r);
	/* clone [10,20), clone [15,30) again: 10..14 x2, 15..19 x3, 20..29 x2 */
	assert_int_equal(emu_refs_inc(&r, 10, 10), 0);
	assert_int_equal(emu_refs_inc(&r, 15, 15), 0);
	assert_int_equal(emu_refs_get(&r, 12, &run), 2);
	assert_int_equal(run, 3);
	assert_int_equal(emu_refs_get(&r, 15, &run), 3);
	assert_int_equal(run, 5);
	assert_int_equal(emu_refs_get(&r, 25, &run), 2);
	assert_int_equal(run, 5);
	assert_int_equal(emu_refs_get(&r, 5, &run), 1);
	assert_int_equal(run, 5);
	assert_int_equal(emu_refs_count(&r), 3);
	emu_refs_free(&r);

	/* random inc/dec against per-block counts */
	emu_refs_init(&r);
	for (int i = 0; i < 256; i++)
		cnt[i] = 1;
	rng_seed(99);
	for (int step = 0; step < 5000; step++) {
		uint64_t b = rnd(240), len = 1 + rnd(16);
		struct freed_blocks fb = { { 0 }, 0 };
		if (rnd(2)) {
			assert_int_equal(emu_refs_inc(&r, b, len), 0);
			for (uint64_t i = b; i < b + len; i++)
				cnt[i]++;
		} else {
			assert_int_equal(emu_refs_dec(&r, b, len, refs_freed, &fb), 0);
			for (uint64_t i = b; i < b + len; i++) {
				assert_int_equal(fb.freed[i], cnt[i] == 1);
				/* a freed block is re-allocated (count 1 again) */
				if (cnt[i] > 1)
					cnt[i]--;
			}
		}
		for (uint64_t i = 0; i < 256;) {
			uint64_t c = emu_refs_get(&r, i, &run);
			assert_true(run >= 1);
			for (uint64_t k = 0; k < run && i + k < 256; k++)
				assert_int_equal(cnt[i + k], c);
			i += run;
		}
		for (size_t i = 1; i < r.n; i++) /* coalesced */
			assert_false(r.v[i - 1].pblk + r.v[i - 1].len == r.v[i].pblk &&
				     r.v[i - 1].count == r.v[i].count);
	}
	emu_refs_free(&r);
}

/* ====================================================================
 * journal
 * ==================================================================== */

struct memdev {
	uint8_t *buf;
	size_t size;
	uint64_t writes[EMU_IO_NKINDS];
	uint64_t bytes[EMU_IO_NKINDS];
	uint64_t flushes;
	int64_t budget; /* bytes that still reach the medium; < 0 = all */
	char trace[512];
	size_t ntrace;
};

static void md_trace(struct memdev *d, char c)
{
	if (d->ntrace + 1 < sizeof(d->trace)) {
		d->trace[d->ntrace++] = c;
		d->trace[d->ntrace] = 0;
	}
}

static int md_pwrite(void *ctx, const void *buf, size_t len, uint64_t off,
		     enum emu_io_kind kind, unsigned flags)
{
	struct memdev *d = ctx;
	size_t n = len;
	assert_true(off + len <= d->size);
	assert_true(kind < EMU_IO_FLUSH);
	d->writes[kind]++;
	d->bytes[kind] += len;
	md_trace(d, flags & EMU_IO_FUA ? 'U' : 'W');
	if (d->budget >= 0) { /* power fails part-way: the rest is lost */
		if ((int64_t)n > d->budget)
			n = (size_t)d->budget;
		d->budget -= (int64_t)n;
	}
	memcpy(d->buf + off, buf, n);
	return 0;
}

static int md_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct memdev *d = ctx;
	if (off + len > d->size)
		return -EIO;
	memcpy(buf, d->buf + off, len);
	return 0;
}

static int md_flush(void *ctx)
{
	struct memdev *d = ctx;
	d->flushes++;
	md_trace(d, 'F');
	return 0;
}

enum { JBS = 512, JBASE_BLOCKS = 3, NHOME = 128 };

static void md_init(struct memdev *d, struct emu_io *io, size_t blocks)
{
	memset(d, 0, sizeof(*d));
	d->size = blocks * JBS;
	d->buf = calloc(1, d->size);
	d->budget = -1;
	io->pwrite = md_pwrite;
	io->pread = md_pread;
	io->flush = md_flush;
	io->ctx = d;
}

static void md_reset_stats(struct memdev *d)
{
	memset(d->writes, 0, sizeof(d->writes));
	memset(d->bytes, 0, sizeof(d->bytes));
	d->flushes = 0;
	d->ntrace = 0;
	d->trace[0] = 0;
}

static struct emu_journal_cfg jcfg(uint64_t nblocks, int fua)
{
	struct emu_journal_cfg c = { JBASE_BLOCKS * JBS, nblocks, JBS, fua, 0 };
	return c;
}

/* the "home" locations the journal's blocks belong to */
struct home {
	uint8_t b[NHOME][JBS];
	uint64_t applied;
	uint64_t last_seq;
};

static int home_apply(void *ctx, uint64_t seq, uint64_t tag, const void *block)
{
	struct home *h = ctx;
	assert_true(tag < NHOME);
	assert_true(seq >= h->last_seq);
	h->last_seq = seq;
	memcpy(h->b[tag], block, JBS);
	h->applied++;
	return 0;
}

/* What a journal test works on: a memory device, the journal's
 * configuration and handle, the last replay's report. */
struct jtest {
	struct memdev d;
	struct emu_io io;
	struct emu_journal_cfg cfg;
	struct emu_journal *j;
	struct emu_replay_report rep;
};

/* A fresh memory device holding a journal formatted with jt->cfg. */
static void jtest_format(struct jtest *jt)
{
	md_init(&jt->d, &jt->io, JBASE_BLOCKS + jt->cfg.nblocks);
	assert_int_equal(emu_journal_format(&jt->io, &jt->cfg, &jt->j), 0);
}

/* A new handle on the journal, as after a crash, replayed into h. */
static void jtest_replay(struct jtest *jt, struct home *h, int reset)
{
	assert_int_equal(emu_journal_open(&jt->io, &jt->cfg, &jt->j), 0);
	assert_int_equal(emu_journal_replay(jt->j, home_apply, h, reset, &jt->rep), 0);
}

static void jtest_end(struct jtest *jt)
{
	emu_journal_close(jt->j);
	free(jt->d.buf);
}

static void fill_block(uint8_t *b, uint64_t a, uint64_t c)
{
	for (int i = 0; i < JBS; i++)
		b[i] = (uint8_t)(a * 31 + c * 7 + (uint64_t)i * 13);
}

/* log blocks tags[0..n) with contents (txn, i); also apply to model */
static void log_txn(struct emu_journal *j, struct home *model, uint64_t txn,
		    const uint64_t *tags, int n)
{
	uint8_t blk[JBS];
	for (int i = 0; i < n; i++) {
		fill_block(blk, txn, (uint64_t)i);
		assert_int_equal(emu_journal_log(j, tags[i], blk), 0);
		if (model)
			memcpy(model->b[tags[i]], blk, JBS);
	}
}

static void commit_txn(struct emu_journal *j, struct home *model, uint64_t txn,
		       const uint64_t *tags, int n, uint64_t want_seq)
{
	uint64_t seq;
	log_txn(j, model, txn, tags, n);
	assert_int_equal(emu_journal_commit(j, &seq), 0);
	if (want_seq)
		assert_int_equal(seq, want_seq);
}

UNIT_TEST(test_crc32c)
{
	(void)state;
	assert_int_equal(emu_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(emu_crc32c(emu_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	assert_int_equal(emu_crc32c_portable(0, "123456789", 9), 0xe3069283u);
	/* the fast path (SSE4.2 where available) equals the table at every
	 * alignment and length, and continues a running CRC the same way */
	static uint8_t rnd[4096 + 16];
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		rnd[i] = (uint8_t)x;
	}
	for (size_t start = 0; start < 16; start++)
		for (size_t len = 0; len < 4096; len += 1 + len / 3) {
			uint32_t seed = (uint32_t)(start * 7919 + len);
			assert_int_equal(emu_crc32c(seed, rnd + start, len),
					 emu_crc32c_portable(seed, rnd + start, len));
		}
	assert_int_equal(emu_crc32c(0, "", 0), 0);
}

UNIT_TEST(test_journal_roundtrip)
{
	struct jtest jt = { .cfg = jcfg(256, 1) };
	struct emu_journal *j2;
	static struct home model, h;
	uint64_t tags[100];
	(void)state;

	memset(&model, 0, sizeof(model));
	memset(&h, 0, sizeof(h));
	jtest_format(&jt);
	assert_string_equal(jt.d.trace, "U");
	md_reset_stats(&jt.d);

	for (int i = 0; i < 100; i++)
		tags[i] = (uint64_t)i;
	commit_txn(jt.j, &model, 1, (uint64_t[]){ 1, 2, 3 }, 3, 1);
	/* 100 blocks need two descriptors at 60 tags per 512-byte block */
	log_txn(jt.j, &model, 2, tags, 100);
	assert_int_equal(emu_journal_commit_cost(jt.j), 2 + 100 + 1);
	assert_int_equal(emu_journal_commit(jt.j, NULL), 0);
	commit_txn(jt.j, &model, 3, (uint64_t[]){ 1 }, 1, 3);
	assert_int_equal(emu_journal_commit(jt.j, NULL), 0); /* empty: no IO */

	/* JBD2 order per commit: body, flush, commit with FUA */
	assert_string_equal(jt.d.trace, "WFUWFUWFU");
	assert_int_equal(jt.d.writes[EMU_IO_JOURNAL], 6);
	assert_int_equal(jt.d.bytes[EMU_IO_JOURNAL], (5 + 103 + 3) * JBS);
	assert_int_equal(jt.d.flushes, 3);
	assert_int_equal(emu_journal_free_blocks(jt.j), 255 - 111);
	assert_int_equal(emu_journal_next_seq(jt.j), 4);

	/* another handle, as after a crash: replay reproduces the model */
	assert_int_equal(emu_journal_open(&jt.io, &jt.cfg, &j2), 0);
	assert_int_equal(emu_journal_commit(j2, NULL), -EINVAL); /* needs replay */
	assert_int_equal(emu_journal_replay(j2, home_apply, &h, 0, &jt.rep), 0);
	assert_int_equal(jt.rep.txns_replayed, 3);
	assert_int_equal(jt.rep.blocks_replayed, 104);
	assert_int_equal(jt.rep.start_seq, 1);
	assert_int_equal(jt.rep.last_seq, 3);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
	assert_int_equal(jt.rep.txns_discarded, 0);
	assert_memory_equal(h.b, model.b, sizeof(model.b));
	emu_journal_close(j2);
	emu_journal_close(jt.j);

	/* write + flush instead of FUA */
	jt.cfg.commit_fua = 0;
	assert_int_equal(emu_journal_format(&jt.io, &jt.cfg, &jt.j), 0);
	md_reset_stats(&jt.d);
	commit_txn(jt.j, NULL, 1, (uint64_t[]){ 1, 2 }, 2, 1);
	assert_string_equal(jt.d.trace, "WFWF");
	emu_journal_close(jt.j);

	/* bad arguments and a region without a journal */
	jt.cfg.block_size = 1000;
	assert_int_equal(emu_journal_format(&jt.io, &jt.cfg, &jt.j), -EINVAL);
	jt.cfg = jcfg(256, 1);
	jt.cfg.base = 0; /* zeros there */
	assert_int_equal(emu_journal_open(&jt.io, &jt.cfg, &jt.j), -EINVAL);
	assert_null(jt.j);
	jt.cfg = jcfg(200, 1); /* size disagrees with the superblock */
	assert_int_equal(emu_journal_open(&jt.io, &jt.cfg, &jt.j), -EINVAL);
	free(jt.d.buf);
}

/* byte offset of log index i */
static size_t log_off(uint64_t i) { return (JBASE_BLOCKS + 1 + i) * JBS; }

UNIT_TEST(test_journal_torn_commit)
{
	/* how many bytes of the second commit's commit block reach the disk */
	static const int64_t torn[] = { 0, 20, 30, -1 /* body torn too */ };
	(void)state;
	for (size_t c = 0; c < sizeof(torn) / sizeof(torn[0]); c++) {
		struct jtest jt = { .cfg = jcfg(64, 1) };
		static struct home model, h;
		memset(&model, 0, sizeof(model));
		memset(&h, 0, sizeof(h));
		jtest_format(&jt);
		commit_txn(jt.j, &model, 1, (uint64_t[]){ 1, 2, 3 }, 3, 1);
		/* power fails during the second commit */
		jt.d.budget = torn[c] >= 0 ? 4 * JBS + torn[c] : 2 * JBS;
		commit_txn(jt.j, NULL, 2, (uint64_t[]){ 4, 5, 6 }, 3, 2);
		jt.d.budget = -1;
		emu_journal_close(jt.j);

		jtest_replay(&jt, &h, 1);
		assert_int_equal(jt.rep.txns_replayed, 1);
		assert_int_equal(jt.rep.blocks_replayed, 3);
		assert_int_equal(jt.rep.end, EMU_REPLAY_INCOMPLETE);
		assert_int_equal(jt.rep.stop_seq, 2);
		assert_int_equal(jt.rep.txns_discarded, 1);
		assert_memory_equal(h.b, model.b, sizeof(model.b));
		/* after the reset the journal works and the torn one stays dead */
		commit_txn(jt.j, &model, 3, (uint64_t[]){ 7 }, 1, 0);
		emu_journal_close(jt.j);
		memset(&h, 0, sizeof(h));
		jtest_replay(&jt, &h, 0);
		assert_int_equal(jt.rep.txns_replayed, 1);
		assert_int_equal(jt.rep.blocks_replayed, 1);
		assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
		assert_memory_equal(h.b[7], model.b[7], JBS);
		assert_int_equal(h.applied, 1);
		jtest_end(&jt);
	}
}

/* A fresh journal with three committed transactions of two blocks each
 * (tags 1-2, 3-4, 5-6; four log blocks each: descriptor, data, data,
 * commit), the first also applied to model; closed, as at a crash. */
static void jtest_three_txns(struct jtest *jt, struct home *model)
{
	jtest_format(jt);
	commit_txn(jt->j, model, 1, (uint64_t[]){ 1, 2 }, 2, 1);
	commit_txn(jt->j, NULL, 2, (uint64_t[]){ 3, 4 }, 2, 2);
	commit_txn(jt->j, NULL, 3, (uint64_t[]){ 5, 6 }, 2, 3);
	emu_journal_close(jt->j);
}

/* a corrupt logged byte: that transaction and every later one discarded */
UNIT_TEST(test_journal_corrupt_data)
{
	struct jtest jt = { .cfg = jcfg(64, 1) };
	static struct home model, h;
	(void)state;
	memset(&model, 0, sizeof(model));
	memset(&h, 0, sizeof(h));
	jtest_three_txns(&jt, &model);
	/* txn 2 = log blocks 4 (descriptor), 5, 6 (data), 7 (commit) */
	jt.d.buf[log_off(6) + 17] ^= 0x01;

	jtest_replay(&jt, &h, 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CHECKSUM);
	assert_int_equal(jt.rep.stop_seq, 2);
	assert_int_equal(jt.rep.txns_discarded, 2);
	assert_int_equal(jt.rep.blocks_discarded, 4);
	assert_memory_equal(h.b, model.b, sizeof(model.b));
	emu_journal_close(jt.j);

	/* recover, then commit a transaction exactly as long as the bad one:
	 * the intact old txn 3 right behind it must not come back to life */
	jtest_replay(&jt, &h, 1);
	commit_txn(jt.j, NULL, 4, (uint64_t[]){ 7, 8 }, 2, 0);
	emu_journal_close(jt.j);
	memset(&h, 0, sizeof(h));
	jtest_replay(&jt, &h, 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
	assert_int_equal(h.applied, 2);
	emu_journal_close(jt.j);

	/* a corrupt descriptor tag count is caught too */
	assert_int_equal(emu_journal_format(&jt.io, &jt.cfg, &jt.j), 0);
	commit_txn(jt.j, NULL, 1, (uint64_t[]){ 1, 2 }, 2, 1);
	commit_txn(jt.j, NULL, 2, (uint64_t[]){ 3, 4 }, 2, 2);
	emu_journal_close(jt.j);
	jt.d.buf[log_off(4) + EMU_J_DESC_OFF_NTAGS] = 200;
	memset(&h, 0, sizeof(h));
	jtest_replay(&jt, &h, 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_BAD_DESC);
	jtest_end(&jt);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* a well-formed transaction with the wrong sequence number is not replayed */
UNIT_TEST(test_journal_seq_gap)
{
	struct jtest jt = { .cfg = jcfg(64, 1) };
	static struct home model, h;
	uint8_t *desc, *commit;
	(void)state;
	memset(&model, 0, sizeof(model));
	memset(&h, 0, sizeof(h));
	jtest_three_txns(&jt, &model);
	/* renumber txn 2 as 7 and re-seal it, so only the sequence is wrong */
	desc = jt.d.buf + log_off(4);
	commit = jt.d.buf + log_off(7);
	put_le64(desc + EMU_J_OFF_SEQ, 7);
	put_le64(commit + EMU_J_OFF_SEQ, 7);
	put_le32(commit + EMU_J_COMMIT_OFF_DCRC, emu_crc32c(0, desc, 3 * JBS));
	put_le32(commit + EMU_J_COMMIT_OFF_CRC, emu_crc32c(0, commit, EMU_J_COMMIT_OFF_CRC));

	jtest_replay(&jt, &h, 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_SEQ_GAP);
	assert_int_equal(jt.rep.stop_seq, 7);
	assert_int_equal(jt.rep.txns_discarded, 1); /* txn 3 (seq 3 < 8) ends it */
	assert_memory_equal(h.b, model.b, sizeof(model.b));
	jtest_end(&jt);
}

/* many transactions through a small log: wrap-around, -ENOSPC, checkpoints */
UNIT_TEST(test_journal_wrap)
{
	enum { NJ = 16, NTX = 40 };
	struct jtest jt = { .cfg = jcfg(NJ, 1) };
	static struct home model, disk, h;
	uint8_t blk[JBS];
	int enospc = 0;
	uint64_t live_from = 1; /* first txn not yet written home */
	static uint8_t txn_blocks[NTX + 1][4][JBS];
	static uint64_t txn_tags[NTX + 1][4];
	int txn_n[NTX + 1];
	(void)state;

	memset(&model, 0, sizeof(model));
	memset(&disk, 0, sizeof(disk));
	jtest_format(&jt);
	for (uint64_t t = 1; t <= NTX; t++) {
		int n = 1 + (int)(t % 4);
		uint64_t seq;
		int rc;
		txn_n[t] = n;
		for (int i = 0; i < n; i++) {
			txn_tags[t][i] = (t * 7 + (uint64_t)i) % 32;
			fill_block(txn_blocks[t][i], t, (uint64_t)i);
			assert_int_equal(emu_journal_log(jt.j, txn_tags[t][i], txn_blocks[t][i]), 0);
			memcpy(model.b[txn_tags[t][i]], txn_blocks[t][i], JBS);
		}
		rc = emu_journal_commit(jt.j, &seq);
		if (rc == -ENOSPC) {
			enospc++;
			assert_int_equal(emu_journal_pending(jt.j), (uint64_t)n);
			/* write the live transactions home, then checkpoint */
			for (; live_from < t; live_from++)
				for (int i = 0; i < txn_n[live_from]; i++)
					memcpy(disk.b[txn_tags[live_from][i]],
					       txn_blocks[live_from][i], JBS);
			assert_int_equal(emu_journal_checkpoint(jt.j, UINT64_MAX), 0);
			assert_int_equal(emu_journal_free_blocks(jt.j), NJ - 1);
			assert_int_equal(emu_journal_tail_seq(jt.j), t);
			rc = emu_journal_commit(jt.j, &seq);
		}
		assert_int_equal(rc, 0);
		assert_int_equal(seq, t);
	}
	assert_true(enospc >= 5);
	/* a transaction larger than the whole log can never commit */
	for (int i = 0; i < NJ; i++) {
		fill_block(blk, 77, (uint64_t)i);
		assert_int_equal(emu_journal_log(jt.j, 1, blk), 0);
	}
	assert_int_equal(emu_journal_commit(jt.j, NULL), -EFBIG);
	assert_non_null(strstr(jt.d.trace, "WWF")); /* a commit split at the wrap */
	emu_journal_close(jt.j);

	/* crash: replay the live tail of the log over the home state */
	memcpy(&h, &disk, sizeof(h));
	h.applied = 0;
	h.last_seq = 0;
	jtest_replay(&jt, &h, 1);
	assert_int_equal(jt.rep.start_seq, live_from);
	assert_int_equal(jt.rep.txns_replayed, NTX - live_from + 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
	assert_memory_equal(h.b, model.b, sizeof(model.b));

	/* keep going after the reset (sequence numbers jump past stale ones) */
	fill_block(blk, 99, 0);
	assert_int_equal(emu_journal_log(jt.j, 3, blk), 0);
	assert_int_equal(emu_journal_commit(jt.j, NULL), 0);
	emu_journal_close(jt.j);
	memset(&h, 0, sizeof(h));
	jtest_replay(&jt, &h, 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
	assert_memory_equal(h.b[3], blk, JBS);
	jtest_end(&jt);
}

UNIT_TEST(test_journal_checkpoint_partial)
{
	struct jtest jt = { .cfg = jcfg(64, 0) };
	static struct home h;
	(void)state;
	memset(&h, 0, sizeof(h));
	jtest_format(&jt);
	commit_txn(jt.j, NULL, 1, (uint64_t[]){ 1 }, 1, 1);
	commit_txn(jt.j, NULL, 2, (uint64_t[]){ 2, 3 }, 2, 2);
	commit_txn(jt.j, NULL, 3, (uint64_t[]){ 4 }, 1, 3);
	md_reset_stats(&jt.d);
	assert_int_equal(emu_journal_checkpoint(jt.j, 3), 0); /* txns 1 and 2 home */
	/* flush before forgetting, then the superblock (write + flush) */
	assert_string_equal(jt.d.trace, "FWF");
	assert_int_equal(emu_journal_tail_seq(jt.j), 3);
	assert_int_equal(emu_journal_free_blocks(jt.j), 63 - 3);
	assert_int_equal(emu_journal_checkpoint(jt.j, 3), 0); /* nothing to do */
	assert_int_equal(jt.d.flushes, 2);
	emu_journal_close(jt.j);
	jtest_replay(&jt, &h, 0);
	assert_int_equal(jt.rep.start_seq, 3);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(h.applied, 1);
	jtest_end(&jt);
}

UNIT_TEST(test_journal_idempotent)
{
	struct jtest jt = { .cfg = jcfg(64, 1) };
	struct emu_replay_report rep1, rep2;
	static struct home model, h1, h2;
	uint8_t blk[JBS];
	(void)state;
	memset(&model, 0, sizeof(model));
	memset(&h1, 0, sizeof(h1));
	memset(&h2, 0, sizeof(h2));
	jtest_format(&jt);
	commit_txn(jt.j, &model, 1, (uint64_t[]){ 1, 2 }, 2, 1);
	commit_txn(jt.j, &model, 2, (uint64_t[]){ 2, 9 }, 2, 2);
	commit_txn(jt.j, &model, 3, (uint64_t[]){ 1 }, 1, 3);
	emu_journal_close(jt.j);

	/* replay without reset writes nothing: twice gives the same result */
	assert_int_equal(emu_journal_open(&jt.io, &jt.cfg, &jt.j), 0);
	md_reset_stats(&jt.d);
	assert_int_equal(emu_journal_replay(jt.j, home_apply, &h1, 0, &rep1), 0);
	h1.last_seq = 0;
	assert_int_equal(emu_journal_replay(jt.j, home_apply, &h1, 0, &rep2), 0);
	assert_int_equal(jt.d.writes[EMU_IO_JOURNAL], 0);
	assert_int_equal(jt.d.flushes, 0);
	assert_memory_equal(&rep1, &rep2, sizeof(rep1));
	assert_memory_equal(h1.b, model.b, sizeof(model.b));
	assert_int_equal(h1.applied, 10);
	emu_journal_close(jt.j);

	/* with reset: same home state, then the log is empty */
	jtest_replay(&jt, &h2, 1);
	assert_int_equal(jt.rep.txns_replayed, 3);
	assert_memory_equal(h2.b, model.b, sizeof(model.b));
	emu_journal_close(jt.j);
	assert_int_equal(emu_journal_open(&jt.io, &jt.cfg, &jt.j), 0);
	h2.applied = 0;
	assert_int_equal(emu_journal_replay(jt.j, home_apply, &h2, 1, &jt.rep), 0);
	assert_int_equal(jt.rep.txns_replayed, 0);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
	assert_int_equal(h2.applied, 0);
	fill_block(blk, 5, 5);
	assert_int_equal(emu_journal_log(jt.j, 4, blk), 0);
	assert_int_equal(emu_journal_commit(jt.j, NULL), 0);
	emu_journal_close(jt.j);
	jtest_replay(&jt, &h2, 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(h2.applied, 1);
	jtest_end(&jt);
}

/* a re-format ignores the previous journal's transactions */
UNIT_TEST(test_journal_stale_uuid)
{
	struct jtest jt = { .cfg = jcfg(64, 1) };
	static struct home h;
	(void)state;
	memset(&h, 0, sizeof(h));
	jt.cfg.uuid = 111;
	jtest_format(&jt);
	commit_txn(jt.j, NULL, 1, (uint64_t[]){ 1 }, 1, 1);
	commit_txn(jt.j, NULL, 2, (uint64_t[]){ 2 }, 1, 2);
	commit_txn(jt.j, NULL, 3, (uint64_t[]){ 3 }, 1, 3);
	emu_journal_close(jt.j);
	jt.cfg.uuid = 222;
	assert_int_equal(emu_journal_format(&jt.io, &jt.cfg, &jt.j), 0);
	commit_txn(jt.j, NULL, 9, (uint64_t[]){ 9 }, 1, 1);
	emu_journal_close(jt.j);
	jtest_replay(&jt, &h, 0);
	/* old txn 2 (same sequence, same place) belongs to another journal */
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(jt.rep.end, EMU_REPLAY_CLEAN);
	assert_int_equal(h.applied, 1);
	jtest_end(&jt);
}

static int failing_apply(void *ctx, uint64_t seq, uint64_t tag, const void *block)
{
	int *calls = ctx;
	(void)seq;
	(void)tag;
	(void)block;
	return ++*calls == 2 ? -EIO : 0;
}

/* an apply error stops replay, is returned, and leaves the log as it was */
UNIT_TEST(test_journal_apply_error)
{
	struct jtest jt = { .cfg = jcfg(64, 1) };
	static struct home h;
	int calls = 0;
	(void)state;
	memset(&h, 0, sizeof(h));
	jtest_format(&jt);
	commit_txn(jt.j, NULL, 1, (uint64_t[]){ 1, 2 }, 2, 1);
	emu_journal_close(jt.j);
	assert_int_equal(emu_journal_open(&jt.io, &jt.cfg, &jt.j), 0);
	md_reset_stats(&jt.d);
	assert_int_equal(emu_journal_replay(jt.j, failing_apply, &calls, 1, &jt.rep), -EIO);
	assert_int_equal(jt.d.writes[EMU_IO_JOURNAL], 0); /* no reset written */
	log_txn(jt.j, NULL, 2, (uint64_t[]){ 3 }, 1);
	assert_int_equal(emu_journal_commit(jt.j, NULL), -EINVAL); /* still needs replay */
	assert_int_equal(emu_journal_replay(jt.j, home_apply, &h, 1, &jt.rep), 0);
	assert_int_equal(jt.rep.txns_replayed, 1);
	assert_int_equal(h.applied, 2);
	assert_int_equal(emu_journal_commit(jt.j, NULL), 0);
	jtest_end(&jt);
}

/* the same journal on a real file through the fd backend and the
 * accounting wrapper; replay writes home through the same IO path */
struct file_home {
	const struct emu_io *io;
	uint64_t home_base;
	uint32_t bs;
};

static int file_apply(void *ctx, uint64_t seq, uint64_t tag, const void *block)
{
	struct file_home *fh = ctx;
	(void)seq;
	return fh->io->pwrite(fh->io->ctx, block, fh->bs, fh->home_base + tag * fh->bs,
			      EMU_IO_METADATA, 0);
}

UNIT_TEST(test_journal_on_file)
{
	enum { BS = 4096, NJB = 64, NTAG = 16 };
	char path[] = "/tmp/test_emu_journal.XXXXXX";
	struct emu_journal_cfg cfg = { BS, NJB, BS, 1, 0 };
	struct emu_fd_io fdctx;
	struct emu_io fdio, io;
	struct emu_io_acct acct;
	struct emu_journal *j;
	struct emu_replay_report rep;
	struct file_home fh = { &io, BS + NJB * BS, BS };
	static uint8_t model[NTAG][BS], blk[BS];
	int fd = mkstemp(path);
	(void)state;

	assert_true(fd >= 0);
	unlink(path); /* removed whatever happens next */
	memset(model, 0, sizeof(model));
	assert_int_equal(ftruncate(fd, (off_t)(fh.home_base + NTAG * BS)), 0);
	emu_io_from_fd(&fdio, &fdctx, fd, -1);
	emu_io_acct_init(&io, &acct, &fdio);
	assert_int_equal(emu_journal_format(&io, &cfg, &j), 0);
	for (uint64_t t = 1; t <= 5; t++) {
		for (uint64_t i = 0; i < t; i++) {
			uint64_t tag = (t * 3 + i) % NTAG;
			for (int b = 0; b < BS; b++)
				blk[b] = (uint8_t)(t * 11 + i * 5 + (uint64_t)b);
			assert_int_equal(emu_journal_log(j, tag, blk), 0);
			memcpy(model[tag], blk, BS);
		}
		assert_int_equal(emu_journal_commit(j, NULL), 0);
	}
	emu_journal_close(j);
	/* superblock + 5 x (body, commit); every write continues the last */
	assert_int_equal(acct.writes[EMU_IO_JOURNAL], 11);
	assert_int_equal(acct.bytes[EMU_IO_JOURNAL], (uint64_t)(1 + 5 * 2 + 15) * BS);
	assert_int_equal(acct.writes[EMU_IO_FLUSH], 5);
	assert_int_equal(acct.fua_writes, 6);
	assert_int_equal(acct.seq_writes, 10);

	/* recover from the file alone */
	emu_io_acct_init(&io, &acct, &fdio);
	assert_int_equal(emu_journal_open(&io, &cfg, &j), 0);
	assert_int_equal(emu_journal_replay(j, file_apply, &fh, 1, &rep), 0);
	assert_int_equal(rep.txns_replayed, 5);
	assert_int_equal(rep.blocks_replayed, 15);
	assert_int_equal(acct.writes[EMU_IO_METADATA], 15);
	assert_int_equal(acct.reads, 1 + 5 * 2 + 15 + 1); /* sb, txns, end probe */
	emu_journal_close(j);
	for (int t = 0; t < NTAG; t++) {
		assert_int_equal(pread(fd, blk, BS, (off_t)(fh.home_base + (uint64_t)t * BS)), BS);
		assert_memory_equal(blk, model[t], BS);
	}
	/* a read past the end of the file is an error, not zeros */
	assert_int_equal(fdio.pread(fdio.ctx, blk, BS, fh.home_base + NTAG * BS), -EIO);
	close(fd);
}

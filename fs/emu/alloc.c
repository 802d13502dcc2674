/*
 * alloc.c - bitmap block allocator with next-fit / first-fit policies
 * and commit-time frees (see alloc.h).
 *
 * Two bitmaps: "used" (allocated, pending included) and "pending" (freed in
 * the open transaction). Searches go a 64-bit word at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/emu/endian.h"
#include "fs/emu/alloc.h"
#include "fs/emu/crc32c.h"

struct emu_alloc {
	uint64_t nblocks;
	uint32_t block_size;
	enum emu_alloc_policy policy;
	uint64_t *used;
	uint64_t *pending;
	size_t nwords;
	uint64_t nfree;
	uint64_t npending;
	uint64_t pend_lo, pend_hi; /* word range holding pending bits */
	uint64_t frontier;
	uint64_t txid;
};

#define HDR_SIZE 48
static const char serial_magic[8] = { 'F', 'S', 'P', 'A', 'L', 'L', 'C', '1' };

/* ---- bitmap helpers ---- */

/* first index in [from, to) whose bit equals want, or to */
static uint64_t find_bit(const uint64_t *m, uint64_t from, uint64_t to, int want)
{
	while (from < to) {
		uint64_t w = m[from >> 6];
		if (!want)
			w = ~w;
		w &= ~0ULL << (from & 63);
		if (w) {
			uint64_t i = (from & ~63ULL) + (uint64_t)__builtin_ctzll(w);
			return i < to ? i : to;
		}
		from = (from | 63) + 1;
	}
	return to;
}

static void set_range(uint64_t *m, uint64_t start, uint64_t len, int val)
{
	uint64_t end = start + len;
	while (start < end) {
		uint64_t bit = start & 63;
		uint64_t n = 64 - bit < end - start ? 64 - bit : end - start;
		uint64_t mask = (n == 64 ? ~0ULL : ((1ULL << n) - 1)) << bit;
		if (val)
			m[start >> 6] |= mask;
		else
			m[start >> 6] &= ~mask;
		start += n;
	}
}

static int range_is(const uint64_t *m, uint64_t start, uint64_t len, int val)
{
	return find_bit(m, start, start + len, !val) == start + len;
}

static int test_bit(const uint64_t *m, uint64_t i)
{
	return (int)((m[i >> 6] >> (i & 63)) & 1);
}

static int range_valid(const struct emu_alloc *a, uint64_t start, uint64_t len)
{
	return len > 0 && start < a->nblocks && len <= a->nblocks - start;
}

/* ---- life cycle ---- */

struct emu_alloc *emu_alloc_new(uint64_t nblocks, uint32_t block_size,
				enum emu_alloc_policy policy)
{
	struct emu_alloc *a;

	if (!block_size)
		block_size = EMU_ALLOC_DEFAULT_BLOCK;
	if (!nblocks || (block_size & (block_size - 1)) ||
	    (policy != EMU_ALLOC_NEXT_FIT && policy != EMU_ALLOC_FIRST_FIT))
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->nblocks = nblocks;
	a->block_size = block_size;
	a->policy = policy;
	a->nwords = (size_t)((nblocks + 63) / 64);
	a->used = calloc(a->nwords, sizeof(uint64_t));
	a->pending = calloc(a->nwords, sizeof(uint64_t));
	if (!a->used || !a->pending) {
		emu_alloc_destroy(a);
		return NULL;
	}
	a->nfree = nblocks;
	a->pend_lo = a->nwords;
	a->txid = 1;
	return a;
}

void emu_alloc_destroy(struct emu_alloc *a)
{
	if (!a)
		return;
	free(a->used);
	free(a->pending);
	free(a);
}

void emu_alloc_set_policy(struct emu_alloc *a, enum emu_alloc_policy policy)
{
	a->policy = policy;
}

enum emu_alloc_policy emu_alloc_policy(const struct emu_alloc *a) { return a->policy; }

const char *emu_alloc_policy_name(enum emu_alloc_policy policy)
{
	return policy == EMU_ALLOC_FIRST_FIT ? "first-fit" : "next-fit";
}

/* ---- allocation ---- */

/*
 * Free runs are visited in policy order: next-fit starts at the frontier and
 * wraps, first-fit starts at 0. A run is found by its start; its end is
 * searched past the frontier (so a run straddling it is seen whole from its
 * start) but no further than the caller needs: measuring the whole free
 * tail of a large store for a one-block request would cost a scan of it.
 */
struct run_iter {
	const struct emu_alloc *a;
	uint64_t pos, lo, hi;
	int pass;
};

static void iter_init(struct run_iter *it, const struct emu_alloc *a)
{
	it->a = a;
	it->pass = 0;
	it->lo = a->policy == EMU_ALLOC_NEXT_FIT ? a->frontier : 0;
	it->hi = a->nblocks;
	it->pos = it->lo;
}

/* the next free run, measured up to want blocks */
static int iter_next(struct run_iter *it, uint64_t want, struct emu_run *r)
{
	const struct emu_alloc *a = it->a;
	for (;;) {
		uint64_t s = find_bit(a->used, it->pos, it->hi, 0);
		if (s < it->hi) {
			uint64_t lim = want < a->nblocks - s ? s + want : a->nblocks;
			uint64_t e = find_bit(a->used, s, lim, 1);
			r->start = s;
			r->len = e - s;
			it->pos = e;
			return 1;
		}
		if (it->pass || it->lo == 0)
			return 0;
		/* second pass: runs starting before the frontier */
		it->pass = 1;
		it->hi = it->lo;
		it->pos = 0;
	}
}

static void take(struct emu_alloc *a, uint64_t start, uint64_t len)
{
	set_range(a->used, start, len, 1);
	a->nfree -= len;
	a->frontier = start + len == a->nblocks ? 0 : start + len;
}

int64_t emu_alloc_get(struct emu_alloc *a, uint64_t n, struct emu_run *out,
		      size_t max_runs, size_t *nruns)
{
	struct run_iter it;
	struct emu_run r;
	uint64_t got = 0;
	size_t k = 0;

	*nruns = 0;
	if (!n || !max_runs)
		return -EINVAL;
	if (n > a->nfree)
		return -ENOSPC;
	iter_init(&it, a);
	while (iter_next(&it, n, &r)) {
		if (r.len >= n) {
			take(a, r.start, n);
			out[0] = (struct emu_run){ r.start, n };
			*nruns = 1;
			return (int64_t)n;
		}
	}
	/* No single run holds it: take runs in search order. */
	iter_init(&it, a);
	while (got < n && k < max_runs && iter_next(&it, n - got, &r)) {
		uint64_t len = r.len < n - got ? r.len : n - got;
		take(a, r.start, len);
		out[k++] = (struct emu_run){ r.start, len };
		got += len;
	}
	*nruns = k;
	return (int64_t)got;
}

/* What may be freed: a valid range, all in use, none of it freed already. */
static int range_freeable(const struct emu_alloc *a, uint64_t start, uint64_t len)
{
	return range_valid(a, start, len) && range_is(a->used, start, len, 1) &&
	       range_is(a->pending, start, len, 0);
}

int emu_alloc_free(struct emu_alloc *a, uint64_t start, uint64_t len)
{
	if (!range_freeable(a, start, len))
		return -EINVAL;
	set_range(a->pending, start, len, 1);
	a->npending += len;
	if (start / 64 < a->pend_lo)
		a->pend_lo = start / 64;
	if ((start + len - 1) / 64 + 1 > a->pend_hi)
		a->pend_hi = (start + len - 1) / 64 + 1;
	return 0;
}

int emu_alloc_free_now(struct emu_alloc *a, uint64_t start, uint64_t len)
{
	if (!range_freeable(a, start, len))
		return -EINVAL;
	set_range(a->used, start, len, 0);
	a->nfree += len;
	return 0;
}

int emu_alloc_reserve(struct emu_alloc *a, uint64_t start, uint64_t len)
{
	if (!range_valid(a, start, len))
		return -EINVAL;
	if (!range_is(a->used, start, len, 0))
		return -EEXIST;
	set_range(a->used, start, len, 1);
	a->nfree -= len;
	return 0;
}

uint64_t emu_alloc_commit(struct emu_alloc *a)
{
	for (uint64_t w = a->pend_lo; w < a->pend_hi; w++) {
		a->used[w] &= ~a->pending[w];
		a->pending[w] = 0;
	}
	a->nfree += a->npending;
	a->npending = 0;
	a->pend_lo = a->nwords;
	a->pend_hi = 0;
	return ++a->txid;
}

uint64_t emu_alloc_txid(const struct emu_alloc *a) { return a->txid; }

/* ---- accounting ---- */

uint64_t emu_alloc_nblocks(const struct emu_alloc *a) { return a->nblocks; }
uint32_t emu_alloc_block_size(const struct emu_alloc *a) { return a->block_size; }
uint64_t emu_alloc_free_count(const struct emu_alloc *a) { return a->nfree; }
uint64_t emu_alloc_pending_count(const struct emu_alloc *a) { return a->npending; }
uint64_t emu_alloc_frontier(const struct emu_alloc *a) { return a->frontier; }

int emu_alloc_state(const struct emu_alloc *a, uint64_t block)
{
	if (block >= a->nblocks)
		return -EINVAL;
	if (test_bit(a->pending, block))
		return 2;
	return test_bit(a->used, block);
}

uint64_t emu_alloc_free_extents(const struct emu_alloc *a)
{
	uint64_t n = 0, pos = 0;
	while ((pos = find_bit(a->used, pos, a->nblocks, 0)) < a->nblocks) {
		n++;
		pos = find_bit(a->used, pos, a->nblocks, 1);
	}
	return n;
}

uint64_t emu_alloc_largest_free(const struct emu_alloc *a)
{
	uint64_t best = 0, pos = 0;
	while ((pos = find_bit(a->used, pos, a->nblocks, 0)) < a->nblocks) {
		uint64_t e = find_bit(a->used, pos, a->nblocks, 1);
		if (e - pos > best)
			best = e - pos;
		pos = e;
	}
	return best;
}

/* ---- serialisation ---- */


static size_t bitmap_bytes(uint64_t nblocks) { return (size_t)((nblocks + 7) / 8); }

size_t emu_alloc_serial_size(const struct emu_alloc *a)
{
	return HDR_SIZE + bitmap_bytes(a->nblocks);
}

static uint32_t image_crc(const uint8_t *b, size_t len)
{
	uint32_t crc = emu_crc32c(0, b, 40);
	return emu_crc32c(crc, b + HDR_SIZE, len - HDR_SIZE);
}

int emu_alloc_serialize(const struct emu_alloc *a, void *buf, size_t len,
			int pending_as_free)
{
	uint8_t *b = buf;
	size_t nbytes = bitmap_bytes(a->nblocks);

	if (len < HDR_SIZE + nbytes)
		return -EINVAL;
	memset(b, 0, HDR_SIZE);
	memcpy(b, serial_magic, 8);
	put32(b + 8, a->block_size);
	put64(b + 16, a->nblocks);
	put64(b + 24, a->frontier);
	put64(b + 32, a->txid);
	for (size_t i = 0; i < nbytes; i++) {
		uint64_t w = a->used[i / 8];
		if (pending_as_free)
			w &= ~a->pending[i / 8];
		b[HDR_SIZE + i] = (uint8_t)(w >> (8 * (i % 8)));
	}
	if (a->nblocks % 8) /* bits past the last block are always zero */
		b[HDR_SIZE + nbytes - 1] &= (uint8_t)((1u << (a->nblocks % 8)) - 1);
	put32(b + 40, image_crc(b, HDR_SIZE + nbytes));
	return 0;
}

int emu_alloc_deserialize(const void *buf, size_t len, enum emu_alloc_policy policy,
			  struct emu_alloc **out)
{
	const uint8_t *b = buf;
	struct emu_alloc *a;
	uint64_t nblocks, used = 0;
	size_t nbytes;

	*out = NULL;
	if (len < HDR_SIZE || memcmp(b, serial_magic, 8))
		return -EINVAL;
	nblocks = get64(b + 16);
	if (!nblocks || nblocks > (uint64_t)SIZE_MAX / 2)
		return -EINVAL;
	nbytes = bitmap_bytes(nblocks);
	if (len != HDR_SIZE + nbytes || get32(b + 40) != image_crc(b, len) ||
	    get64(b + 24) >= nblocks || get64(b + 32) == 0)
		return -EINVAL;
	a = emu_alloc_new(nblocks, get32(b + 8), policy);
	if (!a)
		return -EINVAL;
	for (size_t i = 0; i < nbytes; i++)
		a->used[i / 8] |= (uint64_t)b[HDR_SIZE + i] << (8 * (i % 8));
	if (nblocks % 64) /* ignore stray bits past the end */
		a->used[a->nwords - 1] &= (1ULL << (nblocks % 64)) - 1;
	for (size_t w = 0; w < a->nwords; w++)
		used += (uint64_t)__builtin_popcountll(a->used[w]);
	a->nfree = nblocks - used;
	a->frontier = get64(b + 24);
	a->txid = get64(b + 32);
	*out = a;
	return 0;
}

/*
 * emu_extent.c - extent maps and shared-extent reference counts (see
 * emu_extent.h). Sorted arrays with binary search: files in a benchmark have
 * from one to some tens of thousands of extents, for which memmove on
 * insert is cheap and the code stays obviously correct.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_extent.h"

static uint64_t ext_end(const struct emu_ext *e) { return e->lblk + e->len; }

/* [lblk, lblk+len) clipped so the end does not overflow */
static uint64_t range_end(uint64_t lblk, uint64_t len)
{
	return len > UINT64_MAX - lblk ? UINT64_MAX : lblk + len;
}

void emu_emap_init(struct emu_emap *m, uint64_t max_len)
{
	memset(m, 0, sizeof(*m));
	m->max_len = max_len;
}

void emu_emap_free(struct emu_emap *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static int emap_reserve(struct emu_emap *m, size_t extra)
{
	size_t need = m->n + extra, cap;
	struct emu_ext *v;
	if (need <= m->cap)
		return 0;
	cap = m->cap ? m->cap : 8;
	while (cap < need)
		cap *= 2;
	v = realloc(m->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	m->cap = cap;
	return 0;
}

/* smallest i whose extent ends after lblk (n if none) */
static size_t first_ending_after(const struct emu_emap *m, uint64_t lblk)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ext_end(&m->v[mid]) > lblk)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void release_piece(emu_release_fn release, void *ctx, const struct emu_ext *e,
			  uint64_t from, uint64_t to)
{
	if (release)
		release(ctx, e->pblk + (from - e->lblk), to - from, e->txid);
}

/*
 * Drop the mappings of [lblk, end), splitting extents that straddle its
 * edges. Needs room for one more entry (a split in three). Returns the index
 * where a mapping of lblk would now go.
 */
static size_t remove_range(struct emu_emap *m, uint64_t lblk, uint64_t end,
			   emu_release_fn release, void *ctx)
{
	size_t i = first_ending_after(m, lblk), j;
	struct emu_ext *v = m->v;

	if (i < m->n && v[i].lblk < lblk && ext_end(&v[i]) > end) {
		/* the range is inside one extent: keep both sides */
		struct emu_ext right = v[i];
		right.lblk = end;
		right.pblk = v[i].pblk + (end - v[i].lblk);
		right.len = ext_end(&v[i]) - end;
		release_piece(release, ctx, &v[i], lblk, end);
		v[i].len = lblk - v[i].lblk;
		memmove(&v[i + 2], &v[i + 1], (m->n - i - 1) * sizeof(*v));
		v[i + 1] = right;
		m->n++;
		return i + 1;
	}
	if (i < m->n && v[i].lblk < lblk) {
		release_piece(release, ctx, &v[i], lblk, ext_end(&v[i]));
		v[i].len = lblk - v[i].lblk;
		i++;
	}
	for (j = i; j < m->n && ext_end(&v[j]) <= end; j++)
		release_piece(release, ctx, &v[j], v[j].lblk, ext_end(&v[j]));
	if (j < m->n && v[j].lblk < end) {
		uint64_t cut = end - v[j].lblk;
		release_piece(release, ctx, &v[j], v[j].lblk, end);
		v[j].lblk += cut;
		v[j].pblk += cut;
		v[j].len -= cut;
	}
	memmove(&v[i], &v[j], (m->n - j) * sizeof(*v));
	m->n -= j - i;
	return i;
}

static int mergeable(const struct emu_emap *m, const struct emu_ext *a,
		     const struct emu_ext *b, uint64_t cur_txid)
{
	return ext_end(a) == b->lblk && a->pblk + a->len == b->pblk &&
	       (a->txid == b->txid || (a->txid < cur_txid && b->txid < cur_txid)) &&
	       (!m->max_len || a->len + b->len <= m->max_len);
}

/* merge v[i] and v[i+1] if allowed */
static void try_merge(struct emu_emap *m, size_t i, uint64_t cur_txid)
{
	struct emu_ext *v = m->v;
	if (i + 1 >= m->n || !mergeable(m, &v[i], &v[i + 1], cur_txid))
		return;
	v[i].len += v[i + 1].len;
	if (v[i + 1].txid > v[i].txid)
		v[i].txid = v[i + 1].txid;
	memmove(&v[i + 1], &v[i + 2], (m->n - i - 2) * sizeof(*v));
	m->n--;
}

int emu_emap_insert(struct emu_emap *m, uint64_t lblk, uint64_t pblk, uint64_t len,
		    uint64_t txid, uint64_t cur_txid, emu_release_fn release, void *ctx)
{
	uint64_t chunk = m->max_len ? m->max_len : len;
	uint64_t nchunks;
	size_t idx;

	if (!len)
		return 0;
	if (len > UINT64_MAX - lblk || len > UINT64_MAX - pblk)
		return -EINVAL;
	nchunks = (len + chunk - 1) / chunk;
	if (nchunks > SIZE_MAX / 4 || emap_reserve(m, (size_t)nchunks + 1))
		return -ENOMEM;
	idx = remove_range(m, lblk, lblk + len, release, ctx);
	memmove(&m->v[idx + nchunks], &m->v[idx], (m->n - idx) * sizeof(*m->v));
	for (uint64_t k = 0; k < nchunks; k++) {
		uint64_t off = k * chunk;
		m->v[idx + k] = (struct emu_ext){
			lblk + off, pblk + off, len - off < chunk ? len - off : chunk, txid
		};
	}
	m->n += nchunks;
	try_merge(m, idx + nchunks - 1, cur_txid);
	if (idx > 0)
		try_merge(m, idx - 1, cur_txid);
	return 0;
}

int emu_emap_punch(struct emu_emap *m, uint64_t lblk, uint64_t len,
		   emu_release_fn release, void *ctx)
{
	if (!len)
		return 0;
	if (emap_reserve(m, 1))
		return -ENOMEM;
	remove_range(m, lblk, range_end(lblk, len), release, ctx);
	return 0;
}

int emu_emap_truncate(struct emu_emap *m, uint64_t nblocks,
		      emu_release_fn release, void *ctx)
{
	return emu_emap_punch(m, nblocks, UINT64_MAX - nblocks, release, ctx);
}

static uint64_t describe(const struct emu_emap *m, uint64_t lblk, uint64_t len,
			 int have_txn, uint64_t cur_txid, struct emu_map *out)
{
	size_t i = first_ending_after(m, lblk);
	memset(out, 0, sizeof(*out));
	out->lblk = lblk;
	if (i < m->n && m->v[i].lblk <= lblk) {
		const struct emu_ext *e = &m->v[i];
		uint64_t left = ext_end(e) - lblk;
		out->pblk = e->pblk + (lblk - e->lblk);
		out->len = len < left ? len : left;
		out->txid = e->txid;
		out->kind = have_txn && e->txid == cur_txid ? EMU_MAP_INPLACE : EMU_MAP_MOVE;
	} else {
		uint64_t gap = i < m->n ? m->v[i].lblk - lblk : len;
		out->len = len < gap ? len : gap;
		out->kind = EMU_MAP_HOLE;
	}
	return out->len;
}

uint64_t emu_emap_classify(const struct emu_emap *m, uint64_t lblk, uint64_t len,
			   uint64_t cur_txid, struct emu_map *out)
{
	return describe(m, lblk, len, 1, cur_txid, out);
}

uint64_t emu_emap_lookup(const struct emu_emap *m, uint64_t lblk, uint64_t len,
			 struct emu_map *out)
{
	return describe(m, lblk, len, 0, 0, out);
}

size_t emu_emap_count(const struct emu_emap *m) { return m->n; }

static int joined(const struct emu_ext *a, const struct emu_ext *b)
{
	return ext_end(a) == b->lblk && a->pblk + a->len == b->pblk;
}

size_t emu_emap_count_physical(const struct emu_emap *m)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++)
		if (i == 0 || !joined(&m->v[i - 1], &m->v[i]))
			n++;
	return n;
}

uint64_t emu_emap_mapped_blocks(const struct emu_emap *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->n; i++)
		n += m->v[i].len;
	return n;
}

uint64_t emu_emap_end(const struct emu_emap *m)
{
	return m->n ? ext_end(&m->v[m->n - 1]) : 0;
}

int emu_emap_fiemap(const struct emu_emap *m, uint64_t lblk, uint64_t len,
		    emu_extent_fn fn, void *ctx)
{
	uint64_t end = range_end(lblk, len);
	size_t i = first_ending_after(m, lblk);

	while (i < m->n && m->v[i].lblk < end) {
		uint64_t l = m->v[i].lblk, p = m->v[i].pblk, n = m->v[i].len;
		uint64_t from, to;
		int rc;
		while (i + 1 < m->n && joined(&m->v[i], &m->v[i + 1])) {
			i++;
			n += m->v[i].len;
		}
		i++;
		from = l > lblk ? l : lblk;
		to = l + n < end ? l + n : end;
		rc = fn(ctx, from, p + (from - l), to - from);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- reference counts ---- */

void emu_refs_init(struct emu_refs *r) { memset(r, 0, sizeof(*r)); }

void emu_refs_free(struct emu_refs *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

size_t emu_refs_count(const struct emu_refs *r) { return r->n; }

static int refs_reserve(struct emu_refs *r, size_t extra)
{
	size_t need = r->n + extra, cap;
	struct emu_ref *v;
	if (need <= r->cap)
		return 0;
	cap = r->cap ? r->cap : 8;
	while (cap < need)
		cap *= 2;
	v = realloc(r->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->v = v;
	r->cap = cap;
	return 0;
}

/* smallest i whose range ends after pblk */
static size_t refs_find(const struct emu_refs *r, uint64_t pblk)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->v[mid].pblk + r->v[mid].len > pblk)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

uint64_t emu_refs_get(const struct emu_refs *r, uint64_t pblk, uint64_t *run)
{
	size_t i = refs_find(r, pblk);
	if (i < r->n && r->v[i].pblk <= pblk) {
		if (run)
			*run = r->v[i].pblk + r->v[i].len - pblk;
		return r->v[i].count;
	}
	if (run)
		*run = i < r->n ? r->v[i].pblk - pblk : UINT64_MAX - pblk;
	return 1;
}

/* make x an entry boundary (split the entry strictly containing it) */
static int refs_split_at(struct emu_refs *r, uint64_t x)
{
	size_t i = refs_find(r, x);
	struct emu_ref right;
	if (i >= r->n || r->v[i].pblk >= x)
		return 0;
	if (refs_reserve(r, 1))
		return -ENOMEM;
	right = r->v[i];
	right.pblk = x;
	right.len = r->v[i].pblk + r->v[i].len - x;
	r->v[i].len = x - r->v[i].pblk;
	memmove(&r->v[i + 2], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
	r->v[i + 1] = right;
	r->n++;
	return 0;
}

static void refs_coalesce(struct emu_refs *r)
{
	size_t out = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (out && r->v[out - 1].pblk + r->v[out - 1].len == r->v[i].pblk &&
		    r->v[out - 1].count == r->v[i].count)
			r->v[out - 1].len += r->v[i].len;
		else
			r->v[out++] = r->v[i];
	}
	r->n = out;
}

/*
 * Rewrite [pblk, pblk+len) by adding delta (+1 or -1) to every block's
 * count, counting absent blocks as 1. Blocks reaching 1 leave the table;
 * blocks at 1 that are decremented go to fn.
 */
static int refs_adjust(struct emu_refs *r, uint64_t pblk, uint64_t len, int delta,
		       emu_refs_free_fn fn, void *ctx)
{
	uint64_t end, cur;
	size_t i, j, nnew = 0, cap;
	struct emu_ref *fresh;

	if (!len)
		return 0;
	if (len > UINT64_MAX - pblk)
		return -EINVAL;
	end = pblk + len;
	if (refs_split_at(r, pblk) || refs_split_at(r, end))
		return -ENOMEM;
	i = refs_find(r, pblk);
	for (j = i; j < r->n && r->v[j].pblk < end; j++)
		;
	/* the new entries for the range: at most one per old entry and gap */
	cap = 2 * (j - i) + 1;
	fresh = malloc(cap * sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	if (refs_reserve(r, cap)) {
		free(fresh);
		return -ENOMEM;
	}
	cur = pblk;
	for (size_t k = i; k <= j; k++) {
		uint64_t next = k < j ? r->v[k].pblk : end;
		if (next > cur) { /* a gap: count 1 */
			if (delta > 0)
				fresh[nnew++] = (struct emu_ref){ cur, next - cur, 2 };
			else if (fn)
				fn(ctx, cur, next - cur);
		}
		if (k < j) {
			uint64_t c = r->v[k].count + (uint64_t)(int64_t)delta;
			if (c >= 2)
				fresh[nnew++] = (struct emu_ref){ r->v[k].pblk, r->v[k].len, c };
			cur = r->v[k].pblk + r->v[k].len;
		}
	}
	memmove(&r->v[i + nnew], &r->v[j], (r->n - j) * sizeof(*r->v));
	memcpy(&r->v[i], fresh, nnew * sizeof(*fresh));
	r->n = r->n - (j - i) + nnew;
	free(fresh);
	refs_coalesce(r);
	return 0;
}

int emu_refs_inc(struct emu_refs *r, uint64_t pblk, uint64_t len)
{
	return refs_adjust(r, pblk, len, +1, NULL, NULL);
}

int emu_refs_dec(struct emu_refs *r, uint64_t pblk, uint64_t len,
		 emu_refs_free_fn fn, void *ctx)
{
	return refs_adjust(r, pblk, len, -1, fn, ctx);
}

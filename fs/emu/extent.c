/*
 * extent.c - extent maps and shared-extent reference counts (see
 * extent.h).
 *
 * The map is a two-level B+-tree: leaves hold up to EMU_EMAP_LEAF extents
 * in logical order, and a sorted array points to the leaves. A position is
 * (leaf index, index in leaf). Edits first reserve every leaf and pointer
 * slot they might need, so an allocation failure leaves the map untouched.
 * The reference table is a plain sorted array: it only holds cloned ranges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/emu/extent.h"
#include "src/base/grow.h"

static uint64_t ext_end(const struct emu_ext *e) { return e->lblk + e->len; }

/* [lblk, lblk+len) clipped so the end does not overflow */
static uint64_t range_end(uint64_t lblk, uint64_t len)
{
	return len > UINT64_MAX - lblk ? UINT64_MAX : lblk + len;
}

struct pos {
	size_t li;   /* leaf; nleaf means "past the end" */
	uint32_t ei; /* extent in that leaf */
};

static int valid(const struct emu_emap *m, struct pos p) { return p.li < m->nleaf; }

static struct emu_ext *at(const struct emu_emap *m, struct pos p)
{
	return &m->leaf[p.li]->e[p.ei];
}

static struct pos next_pos(const struct emu_emap *m, struct pos p)
{
	if (p.ei + 1 < m->leaf[p.li]->n)
		return (struct pos){ p.li, p.ei + 1 };
	return (struct pos){ p.li + 1, 0 };
}

static int prev_pos(const struct emu_emap *m, struct pos p, struct pos *out)
{
	if (p.li < m->nleaf && p.ei > 0) {
		*out = (struct pos){ p.li, p.ei - 1 };
		return 1;
	}
	if (p.li == 0)
		return 0;
	*out = (struct pos){ p.li - 1, m->leaf[p.li - 1]->n - 1 };
	return 1;
}

static uint64_t leaf_end(const struct emu_emap_leaf *l) { return ext_end(&l->e[l->n - 1]); }

/* the first extent that ends after lblk (past the end if none) */
static struct pos find(const struct emu_emap *m, uint64_t lblk)
{
	size_t lo = 0, hi = m->nleaf;
	uint32_t a, b;
	const struct emu_emap_leaf *l;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (leaf_end(m->leaf[mid]) > lblk)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == m->nleaf)
		return (struct pos){ m->nleaf, 0 };
	l = m->leaf[lo];
	a = 0;
	b = l->n;
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;
		if (ext_end(&l->e[mid]) > lblk)
			b = mid;
		else
			a = mid + 1;
	}
	return (struct pos){ lo, a };
}

void emu_emap_init(struct emu_emap *m, uint64_t max_len)
{
	memset(m, 0, sizeof(*m));
	m->max_len = max_len;
}

void emu_emap_free(struct emu_emap *m)
{
	for (size_t i = 0; i < m->nleaf; i++)
		free(m->leaf[i]);
	for (size_t i = 0; i < m->nspare; i++)
		free(m->spare[i]);
	free(m->leaf);
	free(m->spare);
	memset(m, 0, sizeof(*m));
}

/* room for k more leaves: k spare leaves and k more pointer slots */
static int reserve_leaves(struct emu_emap *m, size_t k)
{
	if (fsp_grow((void **)&m->leaf, &m->leaf_cap, m->nleaf + k, sizeof(*m->leaf), 8) ||
	    fsp_grow((void **)&m->spare, &m->spare_cap, k, sizeof(*m->spare), 8))
		return -ENOMEM;
	while (m->nspare < k) {
		struct emu_emap_leaf *l = malloc(sizeof(*l));
		if (!l)
			return -ENOMEM;
		l->n = 0;
		m->spare[m->nspare++] = l;
	}
	return 0;
}

static void put_leaf(struct emu_emap *m, struct emu_emap_leaf *l)
{
	if (m->nspare < m->spare_cap)
		m->spare[m->nspare++] = l;
	else
		free(l);
}

static void insert_leaf_ptr(struct emu_emap *m, size_t li, struct emu_emap_leaf *l)
{
	memmove(&m->leaf[li + 1], &m->leaf[li], (m->nleaf - li) * sizeof(*m->leaf));
	m->leaf[li] = l;
	m->nleaf++;
}

static void remove_leaf_ptr(struct emu_emap *m, size_t li)
{
	put_leaf(m, m->leaf[li]);
	memmove(&m->leaf[li], &m->leaf[li + 1], (m->nleaf - li - 1) * sizeof(*m->leaf));
	m->nleaf--;
}

/* Insert e before position p; returns where it went. Needs one spare leaf
 * and one pointer slot (reserve_leaves). */
static struct pos insert_at(struct emu_emap *m, struct pos p, const struct emu_ext *e)
{
	struct emu_emap_leaf *l;
	if (m->nleaf == 0) {
		l = m->spare[--m->nspare];
		l->n = 0;
		l->node_pblk = 0;
		l->node_crc = 0;
		insert_leaf_ptr(m, 0, l);
		p = (struct pos){ 0, 0 };
	} else if (p.li == m->nleaf) {
		p = (struct pos){ m->nleaf - 1, m->leaf[m->nleaf - 1]->n };
	}
	l = m->leaf[p.li];
	if (l->n == EMU_EMAP_LEAF) {
		/* split: the upper half moves to a new leaf */
		struct emu_emap_leaf *r = m->spare[--m->nspare];
		uint32_t half = EMU_EMAP_LEAF / 2;
		r->node_pblk = 0;
		r->node_crc = 0;
		r->n = EMU_EMAP_LEAF - half;
		memcpy(r->e, &l->e[half], r->n * sizeof(*r->e));
		l->n = half;
		insert_leaf_ptr(m, p.li + 1, r);
		if (p.ei > half) {
			p.li++;
			p.ei -= half;
			l = r;
		}
	}
	memmove(&l->e[p.ei + 1], &l->e[p.ei], (l->n - p.ei) * sizeof(*l->e));
	l->e[p.ei] = *e;
	l->n++;
	m->n++;
	return p;
}

/* after removing from leaf li: drop it if empty, merge it if underfull */
static void rebalance(struct emu_emap *m, size_t li)
{
	struct emu_emap_leaf *l = m->leaf[li];
	if (l->n == 0) {
		remove_leaf_ptr(m, li);
		return;
	}
	if (l->n >= EMU_EMAP_LEAF / 4)
		return;
	if (li + 1 < m->nleaf && l->n + m->leaf[li + 1]->n <= EMU_EMAP_LEAF) {
		struct emu_emap_leaf *r = m->leaf[li + 1];
		memcpy(&l->e[l->n], r->e, r->n * sizeof(*r->e));
		l->n += r->n;
		remove_leaf_ptr(m, li + 1);
	} else if (li > 0 && l->n + m->leaf[li - 1]->n <= EMU_EMAP_LEAF) {
		struct emu_emap_leaf *left = m->leaf[li - 1];
		memcpy(&left->e[left->n], l->e, l->n * sizeof(*l->e));
		left->n += l->n;
		remove_leaf_ptr(m, li);
	}
}

/* remove count extents of one leaf starting at p */
static void erase_in_leaf(struct emu_emap *m, struct pos p, uint32_t count)
{
	struct emu_emap_leaf *l = m->leaf[p.li];
	memmove(&l->e[p.ei], &l->e[p.ei + count], (l->n - p.ei - count) * sizeof(*l->e));
	l->n -= count;
	m->n -= count;
	rebalance(m, p.li);
}

static void release_piece(emu_release_fn release, void *ctx, const struct emu_ext *e,
			  uint64_t from, uint64_t to)
{
	if (release)
		release(ctx, e->pblk + (from - e->lblk), to - from, e->txid);
}

/*
 * Drop the mappings of [lblk, end), splitting extents that straddle its
 * edges; releases in logical order. Needs one spare leaf (a split in three).
 */
static void remove_range(struct emu_emap *m, uint64_t lblk, uint64_t end,
			 emu_release_fn release, void *ctx)
{
	struct pos p = find(m, lblk), q;
	struct emu_ext *e;

	if (!valid(m, p))
		return;
	e = at(m, p);
	if (e->lblk < lblk && ext_end(e) > end) {
		/* the range is inside one extent: keep both sides */
		struct emu_ext right = *e;
		right.lblk = end;
		right.pblk = e->pblk + (end - e->lblk);
		right.len = ext_end(e) - end;
		release_piece(release, ctx, e, lblk, end);
		e->len = lblk - e->lblk;
		insert_at(m, next_pos(m, p), &right);
		return;
	}
	if (e->lblk < lblk) {
		release_piece(release, ctx, e, lblk, ext_end(e));
		e->len = lblk - e->lblk;
		p = next_pos(m, p);
	}
	for (q = p; valid(m, q) && ext_end(at(m, q)) <= end; q = next_pos(m, q))
		release_piece(release, ctx, at(m, q), at(m, q)->lblk, ext_end(at(m, q)));
	if (valid(m, q) && at(m, q)->lblk < end) {
		uint64_t cut = end - at(m, q)->lblk;
		e = at(m, q);
		release_piece(release, ctx, e, e->lblk, end);
		e->lblk += cut;
		e->pblk += cut;
		e->len -= cut;
	}
	/* everything now starting inside [lblk, end) goes, a leaf at a time */
	for (;;) {
		struct emu_emap_leaf *l;
		uint32_t k = 0;
		p = find(m, lblk);
		if (!valid(m, p) || at(m, p)->lblk >= end)
			break;
		l = m->leaf[p.li];
		while (p.ei + k < l->n && l->e[p.ei + k].lblk < end)
			k++;
		erase_in_leaf(m, p, k);
	}
}

static int mergeable(const struct emu_emap *m, const struct emu_ext *a,
		     const struct emu_ext *b, uint64_t cur_txid)
{
	return ext_end(a) == b->lblk && a->pblk + a->len == b->pblk &&
	       (a->txid == b->txid || (a->txid < cur_txid && b->txid < cur_txid)) &&
	       (!m->max_len || a->len + b->len <= m->max_len);
}

/* merge the extent at p into a (the one before it) and remove p */
static void absorb(struct emu_emap *m, struct emu_ext *a, struct pos p)
{
	const struct emu_ext *b = at(m, p);
	a->len += b->len;
	if (b->txid > a->txid)
		a->txid = b->txid;
	erase_in_leaf(m, p, 1);
}

int emu_emap_insert(struct emu_emap *m, uint64_t lblk, uint64_t pblk, uint64_t len,
		    uint64_t txid, uint64_t cur_txid, emu_release_fn release, void *ctx)
{
	uint64_t chunk = m->max_len ? m->max_len : len;
	uint64_t nchunks;
	struct pos p, nx, pv;

	if (!len)
		return 0;
	if (len > UINT64_MAX - lblk || len > UINT64_MAX - pblk)
		return -EINVAL;
	nchunks = (len + chunk - 1) / chunk;
	if (nchunks > SIZE_MAX / 4 || reserve_leaves(m, (size_t)nchunks + 2))
		return -ENOMEM;
	remove_range(m, lblk, lblk + len, release, ctx);
	p = find(m, lblk);
	for (uint64_t k = 0; k < nchunks; k++) {
		uint64_t off = k * chunk;
		struct emu_ext e = {
			lblk + off, pblk + off, len - off < chunk ? len - off : chunk, txid
		};
		p = insert_at(m, p, &e);
		if (k + 1 < nchunks)
			p = next_pos(m, p);
	}
	/* p is the last chunk: merge with what follows, then the first chunk
	 * with what precedes */
	nx = next_pos(m, p);
	if (valid(m, nx) && mergeable(m, at(m, p), at(m, nx), cur_txid))
		absorb(m, at(m, p), nx);
	p = find(m, lblk);
	if (prev_pos(m, p, &pv) && mergeable(m, at(m, pv), at(m, p), cur_txid))
		absorb(m, at(m, pv), p);
	return 0;
}

int emu_emap_punch(struct emu_emap *m, uint64_t lblk, uint64_t len,
		   emu_release_fn release, void *ctx)
{
	if (!len)
		return 0;
	if (reserve_leaves(m, 1))
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
	struct pos p = find(m, lblk);
	memset(out, 0, sizeof(*out));
	out->lblk = lblk;
	if (valid(m, p) && at(m, p)->lblk <= lblk) {
		const struct emu_ext *e = at(m, p);
		uint64_t left = ext_end(e) - lblk;
		out->pblk = e->pblk + (lblk - e->lblk);
		out->len = len < left ? len : left;
		out->txid = e->txid;
		out->kind = have_txn && e->txid == cur_txid ? EMU_MAP_INPLACE : EMU_MAP_MOVE;
	} else {
		uint64_t gap = valid(m, p) ? at(m, p)->lblk - lblk : len;
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

int emu_emap_nth(const struct emu_emap *m, size_t i, struct emu_ext *out)
{
	for (size_t li = 0; li < m->nleaf; li++) {
		if (i < m->leaf[li]->n) {
			*out = m->leaf[li]->e[i];
			return 0;
		}
		i -= m->leaf[li]->n;
	}
	return -ERANGE;
}

int emu_emap_foreach(const struct emu_emap *m, emu_ext_visit_fn fn, void *ctx)
{
	for (size_t li = 0; li < m->nleaf; li++) {
		for (uint32_t i = 0; i < m->leaf[li]->n; i++) {
			int rc = fn(ctx, &m->leaf[li]->e[i]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int emu_emap_check(const struct emu_emap *m)
{
	const struct emu_ext *prev = NULL;
	size_t n = 0;
	for (size_t li = 0; li < m->nleaf; li++) {
		const struct emu_emap_leaf *l = m->leaf[li];
		if (l->n == 0 || l->n > EMU_EMAP_LEAF)
			return -EUCLEAN;
		for (uint32_t i = 0; i < l->n; i++) {
			const struct emu_ext *e = &l->e[i];
			if (e->len == 0 || e->lblk + e->len < e->lblk ||
			    (m->max_len && e->len > m->max_len) ||
			    (prev && ext_end(prev) > e->lblk))
				return -EUCLEAN;
			prev = e;
			n++;
		}
	}
	return n == m->n ? 0 : -EUCLEAN;
}

static int joined(const struct emu_ext *a, const struct emu_ext *b)
{
	return ext_end(a) == b->lblk && a->pblk + a->len == b->pblk;
}

size_t emu_emap_count_physical(const struct emu_emap *m)
{
	const struct emu_ext *prev = NULL;
	size_t n = 0;
	for (size_t li = 0; li < m->nleaf; li++) {
		for (uint32_t i = 0; i < m->leaf[li]->n; i++) {
			const struct emu_ext *e = &m->leaf[li]->e[i];
			if (!prev || !joined(prev, e))
				n++;
			prev = e;
		}
	}
	return n;
}

uint64_t emu_emap_mapped_blocks(const struct emu_emap *m)
{
	uint64_t n = 0;
	for (size_t li = 0; li < m->nleaf; li++)
		for (uint32_t i = 0; i < m->leaf[li]->n; i++)
			n += m->leaf[li]->e[i].len;
	return n;
}

uint64_t emu_emap_end(const struct emu_emap *m)
{
	return m->nleaf ? leaf_end(m->leaf[m->nleaf - 1]) : 0;
}

int emu_emap_fiemap(const struct emu_emap *m, uint64_t lblk, uint64_t len,
		    emu_extent_fn fn, void *ctx)
{
	uint64_t end = range_end(lblk, len);
	struct pos p = find(m, lblk);

	while (valid(m, p) && at(m, p)->lblk < end) {
		const struct emu_ext *e = at(m, p);
		uint64_t l = e->lblk, ph = e->pblk, n = e->len;
		uint64_t from, to;
		int rc;
		for (p = next_pos(m, p); valid(m, p) && joined(e, at(m, p)); p = next_pos(m, p)) {
			e = at(m, p);
			n += e->len;
		}
		from = l > lblk ? l : lblk;
		to = l + n < end ? l + n : end;
		rc = fn(ctx, from, ph + (from - l), to - from);
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
	return fsp_grow((void **)&r->v, &r->cap, r->n + extra, sizeof(*r->v), 8) ? -ENOMEM : 0;
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

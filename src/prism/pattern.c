/*
 * pattern.c - the device-level access pattern of block requests
 * (pattern.h).
 *
 * The recency is exact: the sectors' boundaries are compressed to the
 * distinct start and end positions of the reads and writes, and a segment
 * tree over them keeps, per range, the rank of the last write that
 * completed on it. Events are replayed in time order (a write at its
 * completion, a read when it entered the block layer); a write raises its
 * range to its rank, a read asks for the highest rank over its range.
 * Ranks grow with time, so "raise to the maximum" is "overwrite", and the
 * query needs no push-down: a node's tag covers its whole range.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "src/prism/pattern.h"
#include "src/base/cmp.h"
#include "src/base/quantile.h"

#define SECTOR 512u
#define DEV_SHIFT 40 /* positions: disk index << 40 | sector (512 TiB per disk) */

/* The distinct disks of the rows, sorted: a row's position is its disk's
 * index here and its sector, so that two disks never share a stream or a
 * sector. */
struct disks {
	uint32_t *dev;
	size_t n;
};

int fsp_size_bin(uint64_t bytes)
{
	int k = 0;
	while (bytes > 1 && k < FSP_SIZE_BINS - 1) {
		bytes >>= 1;
		k++;
	}
	return k;
}

void fsp_size_hist_add(struct fsp_size_hist *h, uint64_t bytes, uint64_t n)
{
	h->count += n;
	h->bytes += bytes * n;
	h->bin[fsp_size_bin(bytes)] += n;
}

double fsp_size_hist_mean(const struct fsp_size_hist *h)
{
	return h->count ? (double)h->bytes / (double)h->count : NAN;
}

enum fsp_recency fsp_recency_bucket(uint64_t age_ns)
{
	if (age_ns < 1000000ull)
		return FSP_REC_1MS;
	if (age_ns < 10000000ull)
		return FSP_REC_10MS;
	if (age_ns < 100000000ull)
		return FSP_REC_100MS;
	if (age_ns < 1000000000ull)
		return FSP_REC_1S;
	return FSP_REC_LONGER;
}

const char *fsp_recency_name(int bucket)
{
	static const char *const names[FSP_REC_NBUCKETS] = {
		"lt_1ms", "lt_10ms", "lt_100ms", "lt_1s", "ge_1s", "never",
	};
	return bucket >= 0 && bucket < FSP_REC_NBUCKETS ? names[bucket] : "?";
}

const char *fsp_pat_dir_name(int dir)
{
	static const char *const names[FSP_PAT_NDIRS] = { "read", "write", "both" };
	return dir >= 0 && dir < FSP_PAT_NDIRS ? names[dir] : "?";
}

uint64_t fsp_block_arrival_ns(const struct fsp_block_io *r)
{
	return r->queue_ns ? r->queue_ns : r->insert_ns ? r->insert_ns : r->issue_ns;
}

/* A read or write that counts: completed without error, with data. */
static int is_data(const struct fsp_block_io *r)
{
	return !r->error && r->bytes && (r->op == FSP_BLOCK_READ || r->op == FSP_BLOCK_WRITE);
}

static uint64_t pos_of(const struct disks *d, const struct fsp_block_io *r)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->dev[mid] < r->dev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return ((uint64_t)lo << DEV_SHIFT) | r->sector;
}

static int cmp_u32(const void *a, const void *b)
{
	return FSP_CMP(*(const uint32_t *)a, *(const uint32_t *)b);
}

static int disks_of(const struct fsp_block_io *rows, size_t n, struct disks *d)
{
	d->n = 0;
	d->dev = malloc((n ? n : 1) * sizeof(*d->dev));
	if (!d->dev)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!d->n || rows[i].dev != d->dev[d->n - 1]) /* runs of one disk: few to sort */
			d->dev[d->n++] = rows[i].dev;
	qsort(d->dev, d->n, sizeof(*d->dev), cmp_u32);
	size_t k = 0;
	for (size_t i = 0; i < d->n; i++)
		if (!k || d->dev[i] != d->dev[k - 1])
			d->dev[k++] = d->dev[i];
	d->n = k;
	uint32_t *small = realloc(d->dev, (k ? k : 1) * sizeof(*d->dev));
	if (small)
		d->dev = small;
	return 0;
}

static uint64_t sectors_of(const struct fsp_block_io *r)
{
	return (r->bytes + SECTOR - 1) / SECTOR;
}

static int cmp_int(const void *a, const void *b)
{
	return FSP_CMP(*(const int *)a, *(const int *)b);
}

/* The pattern of step, or NULL for a row outside every step. */
static struct fsp_pattern *step_of(struct fsp_pattern *p, size_t np, int step)
{
	if (step < 0)
		return NULL;
	size_t lo = 0, hi = np;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p[mid].step < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < np && p[lo].step == step ? &p[lo] : NULL;
}

/* ---- sequentiality, in the order the device received the requests ------- */

struct issued {
	uint64_t issue_ns, pos;
	uint32_t row;
};

static int cmp_issued(const void *a, const void *b)
{
	const struct issued *x = a, *y = b;
	return FSP_CMP(x->issue_ns, y->issue_ns) ?: FSP_CMP(x->row, y->row);
}

static int add_seq(const struct fsp_block_io *rows, size_t n, const struct disks *dk,
		   struct fsp_pattern *p, size_t np)
{
	struct issued *v = malloc((n ? n : 1) * sizeof(*v));
	size_t k = 0;
	if (!v)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (is_data(&rows[i]) && rows[i].step >= 0)
			v[k++] = (struct issued){ rows[i].issue_ns, pos_of(dk, &rows[i]), (uint32_t)i };
	qsort(v, k, sizeof(*v), cmp_issued);
	for (size_t i = 0; i < k; i++) {
		const struct fsp_block_io *r = &rows[v[i].row];
		struct fsp_pattern *s = step_of(p, np, r->step);
		if (!s)
			continue;
		int dir = r->op == FSP_BLOCK_READ ? FSP_PAT_READ : FSP_PAT_WRITE;
		fsp_seq_add(&s->seq[dir], v[i].pos, sectors_of(r));
		fsp_seq_add(&s->seq[FSP_PAT_BOTH], v[i].pos, sectors_of(r));
	}
	free(v);
	return 0;
}

/* ---- read-after-write recency ------------------------------------------- */

/* Segment tree over the segments [c[i], c[i+1]) of the compressed
 * positions. Node of [lo, hi): its left child covers [lo, mid) at node + 1,
 * its right child [mid, hi) at node + 2 * (mid - lo): 2 * nseg - 1 nodes. */
struct rtree {
	uint32_t *tag; /* the highest rank written over the node's whole range */
	uint32_t *max; /* the highest rank written anywhere in it */
};

static void rt_raise(struct rtree *t, size_t node, size_t lo, size_t hi, size_t a, size_t b,
		     uint32_t rank)
{
	if (b <= lo || hi <= a)
		return;
	if (a <= lo && hi <= b) {
		if (rank > t->tag[node])
			t->tag[node] = rank;
		if (rank > t->max[node])
			t->max[node] = rank;
		return;
	}
	size_t mid = lo + (hi - lo) / 2, l = node + 1, r = node + 2 * (mid - lo);
	rt_raise(t, l, lo, mid, a, b, rank);
	rt_raise(t, r, mid, hi, a, b, rank);
	uint32_t m = t->max[l] > t->max[r] ? t->max[l] : t->max[r];
	if (m > t->max[node])
		t->max[node] = m;
}

static uint32_t rt_highest(const struct rtree *t, size_t node, size_t lo, size_t hi, size_t a,
			   size_t b)
{
	if (b <= lo || hi <= a)
		return 0;
	if (a <= lo && hi <= b)
		return t->max[node];
	size_t mid = lo + (hi - lo) / 2;
	uint32_t l = rt_highest(t, node + 1, lo, mid, a, b);
	uint32_t r = rt_highest(t, node + 2 * (mid - lo), mid, hi, a, b);
	uint32_t m = l > r ? l : r;
	return m > t->tag[node] ? m : t->tag[node];
}

/* A write's completion (kind 0) or a read's arrival (kind 1): at equal
 * times the write comes first, so a read that arrives the moment a write
 * completes sees it. */
struct event {
	uint64_t t;
	uint32_t row, kind;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return FSP_CMP(x->t, y->t) ?: FSP_CMP(x->kind, y->kind) ?: FSP_CMP(x->row, y->row);
}

static size_t seg_index(const uint64_t *c, size_t nc, uint64_t v)
{
	size_t lo = 0, hi = nc;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int add_recency(const struct fsp_block_io *rows, size_t n, const struct disks *dk,
		       struct fsp_pattern *p, size_t np)
{
	size_t ndata = 0, nc = 0, ne = 0;
	for (size_t i = 0; i < n; i++)
		ndata += is_data(&rows[i]);
	if (!ndata)
		return 0;
	uint64_t *c = malloc(2 * ndata * sizeof(*c));
	struct event *ev = malloc(ndata * sizeof(*ev));
	uint64_t *wt = malloc((ndata + 1) * sizeof(*wt)); /* completion time by rank */
	struct rtree t = { 0 };
	int rc = -1;
	if (!c || !ev || !wt)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct fsp_block_io *r = &rows[i];
		if (!is_data(r))
			continue;
		c[nc++] = pos_of(dk, r);
		c[nc++] = pos_of(dk, r) + sectors_of(r);
		if (r->op == FSP_BLOCK_WRITE)
			ev[ne++] = (struct event){ r->complete_ns, (uint32_t)i, 0 };
		else
			ev[ne++] = (struct event){ fsp_block_arrival_ns(r), (uint32_t)i, 1 };
	}
	qsort(c, nc, sizeof(*c), fsp_cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < nc; i++)
		if (!k || c[i] != c[k - 1])
			c[k++] = c[i];
	nc = k;
	size_t nseg = nc - 1; /* every row has end > start, so nc >= 2 */
	t.tag = calloc(2 * nseg, sizeof(*t.tag));
	t.max = calloc(2 * nseg, sizeof(*t.max));
	if (!t.tag || !t.max)
		goto out;
	qsort(ev, ne, sizeof(*ev), cmp_event);
	uint32_t rank = 0;
	for (size_t i = 0; i < ne; i++) {
		const struct fsp_block_io *r = &rows[ev[i].row];
		uint64_t pos = pos_of(dk, r);
		size_t a = seg_index(c, nc, pos);
		size_t b = seg_index(c, nc, pos + sectors_of(r));
		if (ev[i].kind == 0) {
			wt[++rank] = ev[i].t;
			rt_raise(&t, 0, 0, nseg, a, b, rank);
			continue;
		}
		struct fsp_pattern *s = step_of(p, np, r->step);
		if (!s)
			continue;
		uint32_t last = rt_highest(&t, 0, 0, nseg, a, b);
		s->recency[last ? fsp_recency_bucket(ev[i].t - wt[last]) : FSP_REC_NEVER]++;
	}
	rc = 0;
out:
	free(c);
	free(ev);
	free(wt);
	free(t.tag);
	free(t.max);
	return rc;
}

/* ---- all of it ------------------------------------------------------------ */

int fsp_pattern_compute(const struct fsp_block_io *rows, size_t n,
			struct fsp_pattern **out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	if (n > UINT32_MAX)
		return -1;
	int *steps = malloc((n ? n : 1) * sizeof(*steps));
	if (!steps)
		return -1;
	size_t ns = 0;
	for (size_t i = 0; i < n; i++)
		if (rows[i].step >= 0)
			steps[ns++] = rows[i].step;
	qsort(steps, ns, sizeof(*steps), cmp_int);
	size_t np = 0;
	for (size_t i = 0; i < ns; i++)
		if (!np || steps[i] != steps[np - 1])
			steps[np++] = steps[i];
	struct fsp_pattern *p = calloc(np ? np : 1, sizeof(*p));
	if (!p) {
		free(steps);
		return -1;
	}
	for (size_t i = 0; i < np; i++)
		p[i].step = steps[i];
	free(steps);

	for (size_t i = 0; i < n; i++) {
		const struct fsp_block_io *r = &rows[i];
		struct fsp_pattern *s = step_of(p, np, r->step);
		if (!s)
			continue;
		if (r->error) {
			s->errors++;
			continue;
		}
		if (r->op == FSP_BLOCK_FLUSH)
			s->flushes++;
		else if (r->flags & FSP_BLOCK_F_PREFLUSH)
			s->preflushes++;
		if (r->op == FSP_BLOCK_WRITE && (r->flags & FSP_BLOCK_F_FUA))
			s->fua_writes++;
		if (r->op == FSP_BLOCK_READ || r->op == FSP_BLOCK_WRITE)
			fsp_size_hist_add(&s->size[r->op == FSP_BLOCK_WRITE], r->bytes, 1);
	}
	struct disks dk;
	if (disks_of(rows, n, &dk) || add_seq(rows, n, &dk, p, np) ||
	    add_recency(rows, n, &dk, p, np)) {
		free(dk.dev);
		free(p);
		return -1;
	}
	free(dk.dev);
	*out = p;
	*nout = np;
	return 0;
}

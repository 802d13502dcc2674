/*
 * decomp.c - the join of engine IOs with the rows that served them, and the
 * split of each IO's time into parts (decomp.h).
 *
 * Two steps. Matching: which rows serve which IO, one sweep over time in
 * which the IOs in flight are the active set (match()). Splitting: each
 * IO's window [submit, reap] cut at every stamp of its rows; every piece of
 * time goes to the highest-priority part in flight then (device over queue
 * over the daemon's handler ...), before the first row to submit, after
 * the last to complete, between rows with nothing in flight to residual
 * (split()). So the parts add up to the total whatever the rows say.
 */
#include <stdlib.h>
#include <string.h>
#include "src/prism/decomp.h"
#include "src/base/cmp.h"
#include "src/base/grow.h"
#include "src/base/quantile.h"

/* the first capacity of the join's growing arrays (fsp_grow) */
#define GROW_FIRST 1024

static const char *const part_names[FSP_DC__COUNT] = {
	"submit", "fs_submit", "fuse_queue", "daemon_recv", "layer", "inject", "emu", "backing",
	"block_queue", "device", "fuse_reply", "complete", "fs_complete", "lag", "residual",
};
static const char *const why_names[FSP_DC_WHY__COUNT] = {
	"no_block", "gap", "inverted", "not_nested", "no_daemon", "no_fuse",
};

const char *fsp_dc_part_name(unsigned part)
{
	return part < FSP_DC__COUNT ? part_names[part] : "?";
}

const char *fsp_dc_why_name(unsigned why)
{
	return why < FSP_DC_WHY__COUNT ? why_names[why] : "?";
}

/* ---- matching -------------------------------------------------------------------- */

/* Something that is served (an IO, a daemon row) over [lo, hi]. */
struct parent {
	uint64_t lo, hi, off, len;
	uint64_t covered; /* bytes of rows given to it so far */
	uint32_t tid;
	uint8_t write;
};

/* Something that serves (a block request or a piece of one, a daemon row). */
struct child {
	uint64_t at;   /* the moment it entered (request made, handler entry) */
	uint64_t late; /* later moment an IO may still have joined it (issue), 0: none */
	uint64_t off, len; /* len UINT64_MAX: any range (matched by time alone) */
	uint64_t bytes;
	size_t src;    /* its row */
	size_t first_pair, npairs;
	uint32_t tid;
	uint8_t write;
};

struct pair {
	size_t parent, child, next; /* next: the parent's next pair, SIZE_MAX ends */
	uint64_t ov_lo, ov_hi;      /* the bytes of the child given to the parent */
	uint8_t not_nested;
};

struct pairs {
	struct pair *p;
	size_t n, cap;
	size_t *head; /* per parent, its first pair */
};

struct event {
	uint64_t t;
	size_t child;
	int late;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return FSP_CMP(x->t, y->t) ?: FSP_CMP(x->late, y->late) ?: FSP_CMP(x->child, y->child);
}

static const struct parent *sort_parents; /* qsort has no context argument */

static int cmp_parent_lo(const void *a, const void *b)
{
	const struct parent *x = &sort_parents[*(const size_t *)a];
	const struct parent *y = &sort_parents[*(const size_t *)b];
	return FSP_CMP(x->lo, y->lo) ?: FSP_CMP(*(const size_t *)a, *(const size_t *)b);
}

struct cand {
	size_t parent;
	int tid_match;
	uint64_t lo;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return FSP_CMP(y->tid_match, x->tid_match) ?: FSP_CMP(x->lo, y->lo) ?:
	       FSP_CMP(x->parent, y->parent);
}

static int add_pair(struct pairs *ps, size_t parent, size_t child, uint64_t lo, uint64_t hi,
		    int not_nested)
{
	if (fsp_grow((void **)&ps->p, &ps->cap, ps->n + 1, sizeof(*ps->p), GROW_FIRST))
		return -1;
	struct pair *p = &ps->p[ps->n];
	p->parent = parent;
	p->child = child;
	p->ov_lo = lo;
	p->ov_hi = hi;
	p->not_nested = (uint8_t)not_nested;
	p->next = ps->head[parent];
	ps->head[parent] = ps->n++;
	return 0;
}

/*
 * Give each child to the parents it serves (decomp.h, fsp_dc_join). Events
 * in time order: a child's entry (`at`) and, for a request, its issue
 * (`late`), at which an IO submitted since may have merged into it.
 */
static int match(struct parent *par, size_t np, struct child *ch, size_t nc, int tid_required,
		 struct pairs *ps)
{
	int rc = -1;
	size_t *order = malloc((np ? np : 1) * sizeof(*order));
	struct event *ev = malloc((2 * nc + 1) * sizeof(*ev));
	size_t *active = NULL, nactive = 0, capactive = 0;
	struct cand *cand = NULL;
	size_t capcand = 0;
	uint64_t *taken = NULL; /* pairs of [lo, hi) already given, for one child */
	size_t captaken = 0;
	ps->head = malloc((np ? np : 1) * sizeof(*ps->head));
	if (!order || !ev || !ps->head)
		goto out;
	for (size_t i = 0; i < np; i++) {
		order[i] = i;
		ps->head[i] = SIZE_MAX;
	}
	sort_parents = par;
	qsort(order, np, sizeof(*order), cmp_parent_lo);
	size_t ne = 0;
	for (size_t i = 0; i < nc; i++) {
		ch[i].first_pair = 0;
		ch[i].npairs = 0;
		ev[ne++] = (struct event){ ch[i].at, i, 0 };
		if (ch[i].late > ch[i].at)
			ev[ne++] = (struct event){ ch[i].late, i, 1 };
	}
	qsort(ev, ne, sizeof(*ev), cmp_event);
	size_t next = 0;
	for (size_t e = 0; e < ne; e++) {
		uint64_t t = ev[e].t;
		struct child *c = &ch[ev[e].child];
		while (next < np && par[order[next]].lo <= t) {
			if (fsp_grow((void **)&active, &capactive, nactive + 1, sizeof(*active),
				     GROW_FIRST))
				goto out;
			active[nactive++] = order[next++];
		}
		size_t ncand = 0;
		for (size_t a = 0; a < nactive;) {
			struct parent *p = &par[active[a]];
			if (p->hi < t) { /* reaped: out of the active set for good */
				active[a] = active[--nactive];
				continue;
			}
			a++;
			if (p->write != c->write)
				continue;
			if (ev[e].late && p->lo <= c->at)
				continue; /* already considered at its entry */
			if (tid_required && p->tid != c->tid)
				continue;
			uint64_t cend = c->len == UINT64_MAX ? UINT64_MAX : c->off + c->len;
			if (c->off >= p->off + p->len || p->off >= cend) /* p->len is finite */
				continue;
			if (fsp_grow((void **)&cand, &capcand, ncand + 1, sizeof(*cand),
				     GROW_FIRST))
				goto out;
			cand[ncand++] = (struct cand){ (size_t)(p - par),
						       c->tid && p->tid == c->tid, p->lo };
		}
		if (!ncand)
			continue;
		qsort(cand, ncand, sizeof(*cand), cmp_cand);
		/* the bytes it gave at its entry (a late event comes last, so
		 * those pairs are still contiguous) */
		size_t ntaken = 0;
		for (size_t k = 0; k < c->npairs; k++) {
			if (fsp_grow((void **)&taken, &captaken, 2 * (ntaken + 1), sizeof(*taken),
				     GROW_FIRST))
				goto out;
			taken[2 * ntaken] = ps->p[c->first_pair + k].ov_lo;
			taken[2 * ntaken + 1] = ps->p[c->first_pair + k].ov_hi;
			ntaken++;
		}
		for (size_t k = 0; k < ncand; k++) {
			struct parent *p = &par[cand[k].parent];
			if (p->covered >= p->len)
				continue; /* it has all its bytes */
			uint64_t lo, hi;
			if (c->len == UINT64_MAX) { /* by time alone: one parent per child */
				lo = 0;
				hi = UINT64_MAX;
			} else {
				lo = c->off > p->off ? c->off : p->off;
				hi = c->off + c->len < p->off + p->len ? c->off + c->len
								       : p->off + p->len;
			}
			int clash = 0;
			for (size_t j = 0; j < ntaken && !clash; j++)
				clash = lo < taken[2 * j + 1] && taken[2 * j] < hi;
			if (clash)
				continue;
			if (!c->npairs)
				c->first_pair = ps->n;
			if (add_pair(ps, cand[k].parent, (size_t)(c - ch), lo, hi, ev[e].late))
				goto out;
			c->npairs++;
			uint64_t got = hi - lo < c->bytes ? hi - lo : c->bytes;
			p->covered += got;
			if (fsp_grow((void **)&taken, &captaken, 2 * (ntaken + 1), sizeof(*taken),
				     GROW_FIRST))
				goto out;
			taken[2 * ntaken] = lo;
			taken[2 * ntaken + 1] = hi;
			ntaken++;
		}
	}
	rc = 0;
out:
	free(order);
	free(ev);
	free(active);
	free(cand);
	free(taken);
	return rc;
}

/* ---- splitting one IO's window ---------------------------------------------------- */

/* Labels of intervals, highest priority first. */
enum {
	L_DEVICE, L_QUEUE, L_NOT_NESTED, L_INVERTED, L_HANDLER, L_RECV, L_FQUEUE, L_FREPLY,
	L__COUNT
};

struct ival {
	uint64_t a, b;
	int label;
};

struct ivals {
	struct ival *v;
	size_t n, cap;
};

static int ival_add(struct ivals *iv, uint64_t a, uint64_t b, int label)
{
	if (b <= a)
		return 0;
	if (fsp_grow((void **)&iv->v, &iv->cap, iv->n + 1, sizeof(*iv->v), GROW_FIRST))
		return -1;
	iv->v[iv->n++] = (struct ival){ a, b, label };
	return 0;
}

struct edge {
	uint64_t t;
	int label, delta;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	return FSP_CMP(x->t, y->t);
}

struct split {
	uint64_t ns[L__COUNT];
	uint64_t gap, before, after;
	uint64_t block_in_handler; /* device or queue time while a handler ran */
	int first, last;           /* label at the first and last covered instant, -1: none */
};

static int split(struct ivals *iv, uint64_t lo, uint64_t hi, struct split *s,
		 struct edge **edges, size_t *capedges)
{
	memset(s, 0, sizeof(*s));
	s->first = s->last = -1;
	size_t ne = 0;
	if (fsp_grow((void **)edges, capedges, 2 * iv->n + 1, sizeof(**edges), GROW_FIRST))
		return -1;
	for (size_t i = 0; i < iv->n; i++) {
		uint64_t a = iv->v[i].a < lo ? lo : iv->v[i].a;
		uint64_t b = iv->v[i].b > hi ? hi : iv->v[i].b;
		if (b <= a)
			continue;
		(*edges)[ne++] = (struct edge){ a, iv->v[i].label, 1 };
		(*edges)[ne++] = (struct edge){ b, iv->v[i].label, -1 };
	}
	if (!ne) {
		s->before = hi - lo;
		return 0;
	}
	qsort(*edges, ne, sizeof(**edges), cmp_edge);
	int count[L__COUNT] = { 0 };
	uint64_t first_t = (*edges)[0].t, last_t = first_t;
	uint64_t prev = first_t;
	for (size_t i = 0; i < ne;) {
		uint64_t t = (*edges)[i].t;
		if (t > prev) {
			int l = 0;
			while (l < L__COUNT && !count[l])
				l++;
			if (l == L__COUNT)
				s->gap += t - prev;
			else {
				s->ns[l] += t - prev;
				if (s->first < 0)
					s->first = l;
				s->last = l;
				last_t = t;
				if ((l == L_DEVICE || l == L_QUEUE) && count[L_HANDLER])
					s->block_in_handler += t - prev;
			}
			prev = t;
		}
		for (; i < ne && (*edges)[i].t == t; i++)
			count[(*edges)[i].label] += (*edges)[i].delta;
	}
	s->before = first_t - lo;
	s->after = hi - last_t;
	return 0;
}

/* ---- the join ------------------------------------------------------------------------ */

static uint64_t made_ns(const struct fsp_dc_block *b)
{
	if (b->queue_ns)
		return b->queue_ns;
	return b->insert_ns ? b->insert_ns : b->issue_ns;
}

static int cmp_ext_phys(const void *a, const void *b)
{
	const struct fsp_extent *x = a, *y = b;
	return FSP_CMP(x->physical, y->physical);
}

/* The block requests as children, mapped to the target's (or daemon's) offsets. */
static int block_children(const struct fsp_dc_in *in, int by_time, struct child **out,
			  size_t *nout)
{
	struct fsp_extent *ext = NULL;
	size_t next = 0;
	if (in->map.ext) {
		ext = malloc((in->map.n ? in->map.n : 1) * sizeof(*ext));
		if (!ext)
			return -1;
		for (size_t i = 0; i < in->map.n; i++)
			if (!(in->map.ext[i].flags &
			      (FSP_EXT_UNKNOWN | FSP_EXT_DELALLOC | FSP_EXT_INLINE)) &&
			    in->map.ext[i].length)
				ext[next++] = in->map.ext[i];
		qsort(ext, next, sizeof(*ext), cmp_ext_phys);
	}
	struct child *ch = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < in->nblk; i++) {
		const struct fsp_dc_block *b = &in->blk[i];
		if (in->blk_tgid && b->tgid && b->tgid != in->blk_tgid)
			continue;
		struct child c = { .at = made_ns(b), .bytes = b->bytes, .src = i,
				   .tid = b->tid, .write = b->write };
		c.late = b->issue_ns > c.at ? b->issue_ns : 0;
		uint64_t dev = b->sector * 512;
		if (by_time) {
			c.off = 0;
			c.len = UINT64_MAX;
		} else if (dev < in->map.base) {
			continue; /* before the partition */
		} else if (!in->map.ext) {
			c.off = dev - in->map.base;
			c.len = b->bytes;
		} else {
			dev -= in->map.base; /* extents are the partition's */
			/* each piece of the request inside an extent, at its logical place */
			uint64_t end = dev + b->bytes;
			size_t lo = 0, hi = next;
			while (lo < hi) { /* first extent ending after dev */
				size_t mid = lo + (hi - lo) / 2;
				if (ext[mid].physical + ext[mid].length <= dev)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (size_t k = lo; k < next && ext[k].physical < end; k++) {
				uint64_t a = dev > ext[k].physical ? dev : ext[k].physical;
				uint64_t z = end < ext[k].physical + ext[k].length
						     ? end : ext[k].physical + ext[k].length;
				if (z <= a)
					continue;
				struct child piece = c;
				piece.off = ext[k].logical + (a - ext[k].physical);
				piece.len = z - a;
				piece.bytes = z - a;
				if (fsp_grow((void **)&ch, &cap, n + 1, sizeof(*ch), GROW_FIRST))
					goto fail;
				ch[n++] = piece;
			}
			continue;
		}
		if (fsp_grow((void **)&ch, &cap, n + 1, sizeof(*ch), GROW_FIRST))
			goto fail;
		ch[n++] = c;
	}
	free(ext);
	*out = ch;
	*nout = n;
	return 0;
fail:
	free(ext);
	free(ch);
	return -1;
}

/* A request's intervals in the window of the IO it serves. */
static int block_ivals(struct ivals *iv, const struct fsp_dc_block *b, int not_nested,
		       uint64_t lo, uint64_t hi)
{
	uint64_t made = made_ns(b);
	if (made > b->issue_ns || b->issue_ns > b->complete_ns || b->complete_ns > hi ||
	    (!not_nested && made < lo)) {
		uint64_t a = made < b->issue_ns ? made : b->issue_ns;
		uint64_t z = b->complete_ns > b->issue_ns ? b->complete_ns : b->issue_ns;
		return ival_add(iv, a, z, L_INVERTED);
	}
	if (not_nested)
		return ival_add(iv, lo, b->issue_ns, L_NOT_NESTED) ||
		       ival_add(iv, b->issue_ns, b->complete_ns, L_DEVICE);
	return ival_add(iv, made, b->issue_ns, L_QUEUE) ||
	       ival_add(iv, b->issue_ns, b->complete_ns, L_DEVICE);
}

static const struct fsp_dc_fuse *find_fuse(const struct fsp_dc_fuse *f, size_t n, uint64_t u)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f[mid].unique < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && f[lo].unique == u ? &f[lo] : NULL;
}

static int cmp_fuse(const void *a, const void *b)
{
	const struct fsp_dc_fuse *x = a, *y = b;
	return FSP_CMP(x->unique, y->unique);
}

/* The layers of a daemon row's handler time: backing outside its block IO,
 * emu, the injected delay, and the rest, fsprism's own (layer). */
struct handler_sum {
	uint64_t backing, emu, inject, layer;
};

/*
 * A daemon row's intervals: FUSE queue, dispatch, handler, reply (what its
 * columns and the FUSE rows give), or one inverted span when its stamps are
 * out of order.
 */
static int daemon_ivals(struct ivals *iv, const struct fsp_dc_daemon *d,
			const struct fsp_dc_fuse *f, uint64_t lo, uint64_t hi)
{
	uint64_t end = d->start_ns + d->total_ns;
	uint64_t recv = d->recv_ns;
	int bad = d->start_ns < lo || end > hi || (recv && recv > d->start_ns);
	if (f)
		bad |= f->send_ns > (recv ? recv : d->start_ns) || f->end_ns < end ||
		       f->end_ns > hi;
	if (bad) {
		uint64_t a = f && f->send_ns < d->start_ns ? f->send_ns : d->start_ns;
		if (recv && recv < a)
			a = recv;
		uint64_t z = f && f->end_ns > end ? f->end_ns : end;
		return ival_add(iv, a, z, L_INVERTED);
	}
	if (f && ival_add(iv, f->send_ns, recv ? recv : d->start_ns, L_FQUEUE))
		return -1;
	if (recv && ival_add(iv, recv, d->start_ns, L_RECV))
		return -1;
	if (f && ival_add(iv, end, f->end_ns, L_FREPLY))
		return -1;
	return ival_add(iv, d->start_ns, end, L_HANDLER);
}

static void to_parts(const struct fsp_dc_in *in, const struct split *s,
		     const struct handler_sum *h, struct fsp_dc_parts *p)
{
	memset(p, 0, sizeof(*p));
	int mount = in->kind == FSP_DC_MOUNT, file = in->kind == FSP_DC_FILE;
	if (s->first < 0) { /* nothing served it */
		p->why_ns[mount ? FSP_DC_NO_DAEMON : FSP_DC_NO_BLOCK] = s->before;
	} else {
		if (!mount)
			p->ns[file ? FSP_DC_FS_SUBMIT : FSP_DC_SUBMIT] = s->before;
		else if (s->first == L_FQUEUE)
			p->ns[FSP_DC_SUBMIT] = s->before;
		else
			p->why_ns[FSP_DC_NO_FUSE] += s->before;
		if (!mount)
			p->ns[file ? FSP_DC_FS_COMPLETE : FSP_DC_COMPLETE] = s->after;
		else if (s->last == L_FREPLY)
			p->ns[FSP_DC_COMPLETE] = s->after;
		else
			p->why_ns[FSP_DC_NO_FUSE] += s->after;
	}
	p->ns[FSP_DC_DEVICE] = s->ns[L_DEVICE];
	p->ns[FSP_DC_BLOCK_QUEUE] = s->ns[L_QUEUE];
	p->ns[FSP_DC_FUSE_QUEUE] = s->ns[L_FQUEUE];
	p->ns[FSP_DC_DAEMON_RECV] = s->ns[L_RECV];
	p->ns[FSP_DC_FUSE_REPLY] = s->ns[L_FREPLY];
	p->why_ns[FSP_DC_NOT_NESTED] += s->ns[L_NOT_NESTED];
	p->why_ns[FSP_DC_INVERTED] += s->ns[L_INVERTED];
	p->why_ns[FSP_DC_GAP] += s->gap;
	/*
	 * The handler's time on its own is shared among its layers as the rows
	 * give them (their sums, with the backing IO's block time taken out of
	 * backing); exact for one row, in proportion for rows overlapping in time.
	 */
	uint64_t hns = s->ns[L_HANDLER];
	if (hns) {
		uint64_t bf = h->backing > s->block_in_handler ? h->backing - s->block_in_handler : 0;
		uint64_t sum = bf + h->emu + h->inject + h->layer;
		if (!sum)
			p->ns[FSP_DC_LAYER] = hns;
		else {
			uint64_t b = (uint64_t)((unsigned __int128)hns * bf / sum);
			uint64_t e = (uint64_t)((unsigned __int128)hns * h->emu / sum);
			uint64_t j = (uint64_t)((unsigned __int128)hns * h->inject / sum);
			p->ns[FSP_DC_BACKING] = b;
			p->ns[FSP_DC_EMU] = e;
			p->ns[FSP_DC_INJECT] = j;
			p->ns[FSP_DC_LAYER] = hns - b - e - j;
		}
	}
	for (unsigned w = 0; w < FSP_DC_WHY__COUNT; w++)
		p->ns[FSP_DC_RESIDUAL] += p->why_ns[w];
}

int fsp_dc_join(const struct fsp_dc_in *in, fsp_dc_emit_fn emit, void *arg)
{
	int rc = -1, mount = in->kind == FSP_DC_MOUNT;
	struct parent *io_par = calloc(in->nio ? in->nio : 1, sizeof(*io_par));
	struct parent *dm_par = NULL;
	struct child *blk_ch = NULL, *dm_ch = NULL;
	size_t nblk_ch = 0;
	struct pairs io_pairs = { 0 }, dm_pairs = { 0 };
	struct fsp_dc_fuse *fuse = NULL;
	struct ivals iv = { 0 };
	struct edge *edges = NULL;
	size_t capedges = 0;
	if (!io_par)
		goto out;
	for (size_t i = 0; i < in->nio; i++) {
		const struct fsp_dc_io *o = &in->io[i];
		io_par[i] = (struct parent){ .lo = o->submit_ns, .hi = o->reap_ns,
					     .off = o->offset, .len = o->length ? o->length : 1,
					     .tid = o->tid, .write = o->write };
	}
	if (block_children(in, mount && in->map.base == UINT64_MAX, &blk_ch, &nblk_ch))
		goto out;
	if (!mount) {
		if (match(io_par, in->nio, blk_ch, nblk_ch, 0, &io_pairs))
			goto out;
	} else {
		dm_par = calloc(in->ndmn ? in->ndmn : 1, sizeof(*dm_par));
		dm_ch = calloc(in->ndmn ? in->ndmn : 1, sizeof(*dm_ch));
		if (!dm_par || !dm_ch)
			goto out;
		for (size_t i = 0; i < in->ndmn; i++) {
			const struct fsp_dc_daemon *d = &in->dmn[i];
			uint64_t len = d->length ? d->length : 1;
			dm_par[i] = (struct parent){ .lo = d->start_ns, .hi = d->start_ns + d->total_ns,
						     .off = d->offset, .len = len,
						     .write = d->write };
			dm_ch[i] = (struct child){ .at = d->start_ns, .off = d->offset, .len = len,
						   .bytes = len, .src = i, .tid = d->pid,
						   .write = d->write };
		}
		if (match(io_par, in->nio, dm_ch, in->ndmn, 1, &io_pairs) ||
		    match(dm_par, in->ndmn, blk_ch, nblk_ch, 0, &dm_pairs))
			goto out;
		if (in->fuse && in->nfuse) {
			fuse = malloc(in->nfuse * sizeof(*fuse));
			if (!fuse)
				goto out;
			memcpy(fuse, in->fuse, in->nfuse * sizeof(*fuse));
			qsort(fuse, in->nfuse, sizeof(*fuse), cmp_fuse);
		}
	}
	for (size_t i = 0; i < in->nio; i++) {
		const struct fsp_dc_io *o = &in->io[i];
		uint64_t lo = o->submit_ns, hi = o->reap_ns > lo ? o->reap_ns : lo;
		struct handler_sum h = { 0 };
		unsigned rows = 0;
		iv.n = 0;
		for (size_t k = io_pairs.head[i]; k != SIZE_MAX; k = io_pairs.p[k].next) {
			const struct pair *pr = &io_pairs.p[k];
			rows++;
			if (!mount) {
				if (block_ivals(&iv, &in->blk[blk_ch[pr->child].src], pr->not_nested,
						lo, hi))
					goto out;
				continue;
			}
			size_t di = dm_ch[pr->child].src;
			const struct fsp_dc_daemon *d = &in->dmn[di];
			const struct fsp_dc_fuse *f = fuse && d->fuse_unique
				? find_fuse(fuse, in->nfuse, d->fuse_unique) : NULL;
			if (daemon_ivals(&iv, d, f, lo, hi))
				goto out;
			h.backing += d->backing_ns;
			h.emu += d->emu_ns;
			/* the delay is part of layer_ns (docs/inject.md): taken out of it */
			uint64_t inner = d->backing_ns + d->emu_ns;
			uint64_t rest = d->total_ns > inner ? d->total_ns - inner : 0;
			uint64_t inj = d->inject_ns < rest ? d->inject_ns : rest;
			h.inject += inj;
			h.layer += rest - inj;
			uint64_t dend = d->start_ns + d->total_ns;
			for (size_t q = dm_pairs.head[di]; q != SIZE_MAX; q = dm_pairs.p[q].next)
				if (block_ivals(&iv, &in->blk[blk_ch[dm_pairs.p[q].child].src],
						dm_pairs.p[q].not_nested, d->start_ns, dend))
					goto out;
		}
		struct split s;
		if (split(&iv, lo, hi, &s, &edges, &capedges))
			goto out;
		struct fsp_dc_parts p;
		to_parts(in, &s, &h, &p);
		p.ns[FSP_DC_LAG] = o->lag_ns; /* before the submit: the engine's own wait */
		p.rows = rows;
		emit(arg, i, &p);
	}
	rc = 0;
out:
	free(io_par);
	free(dm_par);
	free(blk_ch);
	free(dm_ch);
	free(io_pairs.p);
	free(io_pairs.head);
	free(dm_pairs.p);
	free(dm_pairs.head);
	free(fuse);
	free(iv.v);
	free(edges);
	return rc;
}

/* ---- distributions and the tail attribution ------------------------------------------ */

struct fsp_dc_sum *fsp_dc_sum_new(const uint64_t *totals, size_t n)
{
	struct fsp_dc_sum *s = calloc(1, sizeof(*s));
	uint64_t *t = malloc((n ? n : 1) * sizeof(*t));
	if (!s || !t) {
		free(s);
		free(t);
		return NULL;
	}
	for (unsigned k = 0; k < FSP_DC__COUNT; k++)
		fsp_hist_init(&s->part[k]);
	fsp_hist_init(&s->total);
	memcpy(t, totals, n * sizeof(*t));
	qsort(t, n, sizeof(*t), fsp_cmp_u64);
	s->p45 = fsp_quantile_u64(t, n, 0.45);
	s->p55 = fsp_quantile_u64(t, n, 0.55);
	s->p99 = fsp_quantile_u64(t, n, 0.99);
	free(t);
	return s;
}

void fsp_dc_sum_add(struct fsp_dc_sum *s, const struct fsp_dc_parts *p)
{
	uint64_t total = 0;
	for (unsigned k = 0; k < FSP_DC__COUNT; k++) {
		fsp_hist_add(&s->part[k], p->ns[k]);
		total += p->ns[k];
	}
	fsp_hist_add(&s->total, total);
	for (unsigned w = 0; w < FSP_DC_WHY__COUNT; w++)
		s->why_ns[w] += p->why_ns[w];
	s->rows += p->rows;
	if (!p->rows)
		s->ios_without_rows++;
	if (total >= s->p99) {
		s->tail_n++;
		for (unsigned k = 0; k < FSP_DC__COUNT; k++)
			s->tail_ns[k] += p->ns[k];
	}
	if (total >= s->p45 && total <= s->p55) {
		s->mid_n++;
		for (unsigned k = 0; k < FSP_DC__COUNT; k++)
			s->mid_ns[k] += p->ns[k];
	}
}

void fsp_dc_sum_emit(void *arg, size_t io_index, const struct fsp_dc_parts *p)
{
	(void)io_index;
	fsp_dc_sum_add(arg, p);
}

void fsp_dc_sum_free(struct fsp_dc_sum *s)
{
	free(s);
}

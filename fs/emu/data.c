/*
 * data.c - the data path: read, write, truncate, fallocate, clone and seek
 * of an object's data through its extent map, where each write lands
 * (--cow decides when data moves), and releasing the blocks a change no
 * longer maps (freed now, at the commit, or after the journal checkpoint).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "src/base/clock.h"
#include "fs/emu/store_int.h"

/* ---- freeing blocks ---- */

static void free_blocks(void *arg, uint64_t pblk, uint64_t len)
{
	struct release_ctx *rc = arg;
	struct emu_store *st = rc->st;
	uint64_t cur = emu_alloc_txid(st->alloc);
	int r;
	if (st->cfg.journal == EMU_JOURNAL_DATA) {
		/* a logged copy of these blocks may still be replayed home:
		 * never reuse them before the journal is checkpointed */
		for (uint64_t b = pblk; b < pblk + len; b++)
			if (pend_find(st, b) && !pend_find(st, b)->logged)
				pend_drop(st, b);
		r = defer_free(st, pblk, len);
	} else if ((rc->txid & ~UNWRITTEN) == cur) {
		r = emu_alloc_free_now(st->alloc, pblk, len);
	} else {
		r = emu_alloc_free(st->alloc, pblk, len);
	}
	if (r && !rc->err)
		rc->err = r;
}

/* emu_release_fn: one reference fewer to each released range. */
void release_range(void *arg, uint64_t pblk, uint64_t len, uint64_t txid)
{
	struct release_ctx *rc = arg;
	struct emu_store *st = rc->st;
	int r = 0;
	rc->txid = txid;
	for (uint64_t b = pblk, run; !r && b < pblk + len; b += run) {
		int shared = emu_refs_get(&st->refs, b, &run) > 1;
		if (run > pblk + len - b)
			run = pblk + len - b;
		if (shared)
			r = emu_refs_inc(&st->unshared, b, run);
	}
	if (!r)
		r = emu_refs_dec(&st->refs, pblk, len, free_blocks, rc);
	if (r && !rc->err)
		rc->err = r;
}

/* ---- reading and writing ---- */

/* Read blocks [pblk, pblk+n) of file data into buf, honouring blocks that
 * wait in the journal=data pending table. */
static int read_blocks(struct emu_store *st, struct emu_cx *cx, uint8_t *buf, uint64_t pblk,
		       uint64_t n, int user_data)
{
	int rc = dev_read(st, cx, buf, n * st->bs, pblk * st->bs, user_data);
	if (rc || st->cfg.journal != EMU_JOURNAL_DATA)
		return rc;
	pthread_mutex_lock(&st->lock);
	for (uint64_t i = 0; i < n; i++) {
		struct pend *p = pend_find(st, pblk + i);
		if (p)
			memcpy(buf + i * st->bs, p->buf, st->bs);
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* The modelled file system's per-extent CPU: a busy wait, as the kernel's
 * work would be (a sleep this short would oversleep). */
static void extent_work(const struct emu_store *st, size_t extents)
{
	if (!st->cfg.extent_ns)
		return;
	uint64_t until = fsp_now_ns() + st->cfg.extent_ns * extents;
	while (fsp_now_ns() < until)
		;
}

/* How much of len bytes at off lies before size (the object's end). */
static size_t below_size(uint64_t size, uint64_t off, size_t len)
{
	if (off >= size)
		return 0;
	return len > size - off ? (size_t)(size - off) : len;
}

ssize_t emu_store_read(struct emu_store *st, struct emu_cx *cx, uint64_t id, void *buf,
		       size_t len, uint64_t off)
{
	struct obj *o = obj_get(st, id, 0);
	ssize_t done = 0;
	uint32_t bs = st->bs;
	struct rpiece p[READ_PIECES];
	if (!o)
		return 0;
	gate_enter(st);
	pthread_rwlock_rdlock(&o->rw);
	if (o->damaged) {
		done = -EIO;
		goto out;
	}
	len = below_size(o->size, off, len);
	if (!len)
		goto out;
	while ((size_t)done < len) {
		uint64_t pos = off + (uint64_t)done;
		uint64_t first = pos / bs, boff = pos % bs;
		size_t chunk = len - (size_t)done;
		if (boff + chunk > BOUNCE_MAX)
			chunk = (size_t)(BOUNCE_MAX - boff);
		uint64_t nblocks = (boff + chunk + bs - 1) / bs;
		/* the pieces of [first, first + nblocks), under one lock hold */
		size_t n = 0;
		uint64_t at = first;
		pthread_mutex_lock(&st->lock);
		while (at < first + nblocks && n < READ_PIECES) {
			struct emu_map m;
			emu_emap_lookup(&o->map, at, first + nblocks - at, &m);
			p[n++] = (struct rpiece){ at, m.len, m.pblk,
						  m.kind != EMU_MAP_HOLE && !(m.txid & UNWRITTEN) };
			at += m.len;
		}
		pthread_mutex_unlock(&st->lock);
		extent_work(st, n);
		if (at < first + nblocks) { /* more pieces than one batch: a shorter chunk */
			nblocks = at - first;
			chunk = (size_t)(nblocks * bs - boff);
		}
		uint8_t *dst = (uint8_t *)buf + done;
		int direct = boff == 0 && chunk % bs == 0 && ((uintptr_t)dst % 4096) == 0 &&
			     st->cfg.journal != EMU_JOURNAL_DATA;
		uint8_t *target = direct ? dst : bounce_buf();
		if (!target) {
			done = done ? done : -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			if (!p[i].mapped)
				memset(target + (p[i].lblk - first) * bs, 0, p[i].n * bs);
		int rc = read_pieces(st, cx, p, n, first, target);
		if (!rc && st->cfg.journal == EMU_JOURNAL_DATA) {
			/* blocks still waiting for their home write */
			pthread_mutex_lock(&st->lock);
			for (size_t i = 0; i < n; i++)
				for (uint64_t b = 0; p[i].mapped && b < p[i].n; b++) {
					struct pend *q = pend_find(st, p[i].pblk + b);
					if (q)
						memcpy(target + (p[i].lblk - first + b) * bs, q->buf, bs);
				}
			pthread_mutex_unlock(&st->lock);
		}
		if (rc) {
			done = done ? done : rc;
			goto out;
		}
		if (!direct)
			memcpy(dst, target + boff, chunk);
		done += (ssize_t)chunk;
	}
	pthread_mutex_lock(&st->acct_lock);
	st->acct.user_read_bytes += (uint64_t)done;
	pthread_mutex_unlock(&st->acct_lock);
out:
	pthread_rwlock_unlock(&o->rw);
	gate_leave(st);
	obj_put(st, o);
	return done;
}

/* Blocks data may not take, so that a commit always finds room for the
 * metadata nodes it must write (a full copy-on-write store could
 * otherwise not commit at all). */
static uint64_t meta_reserve(const struct emu_store *st)
{
	uint64_t r = (st->nblocks - st->data_blk) / 64;
	return r < 256 ? 256 : r;
}

/*
 * Where the next piece of a write goes. Under st->lock. Fills *m with the
 * current mapping of [lblk, lblk+n) (clipped) and returns the destination
 * block, allocating when the piece is a hole or must move; *fresh says the
 * destination is new space (the map must be updated after the data write).
 */
static int64_t place(struct emu_store *st, struct obj *o, uint64_t lblk, uint64_t n,
		     struct emu_map *m, int *fresh)
{
	uint64_t cur = emu_alloc_txid(st->alloc);
	emu_emap_classify(&o->map, lblk, n, cur, m);
	*fresh = 1;
	if (m->kind != EMU_MAP_HOLE) {
		uint64_t run = 0, run_unshared = 0;
		int shared = emu_refs_get(&st->refs, m->pblk, &run) > 1;
		shared |= emu_refs_get(&st->unshared, m->pblk, &run_unshared) > 1;
		if (run_unshared < run)
			run = run_unshared;
		if (run < m->len)
			m->len = run; /* the sharing answer holds only this far */
		int move = shared || (!(m->txid & UNWRITTEN) &&
				      ((st->cfg.cow == EMU_COW_ALWAYS && m->kind == EMU_MAP_MOVE)));
		if (!move) {
			*fresh = (m->txid & UNWRITTEN) != 0; /* convert to written */
			return (int64_t)m->pblk;
		}
	}
	struct emu_run r;
	size_t nr;
	uint64_t avail = emu_alloc_free_count(st->alloc);
	if (avail <= meta_reserve(st))
		return -ENOSPC;
	if (m->len > avail - meta_reserve(st))
		m->len = avail - meta_reserve(st);
	int64_t got = emu_alloc_get(st->alloc, m->len, &r, 1, &nr);
	if (got < 0)
		return got;
	m->len = r.len; /* a shorter free run: the caller loops */
	return (int64_t)r.start;
}

/* After the data of a piece is on the device: map it (fresh space) and
 * release what it replaced. Under st->lock. */
static int map_piece(struct emu_store *st, struct obj *o, uint64_t lblk, uint64_t pblk,
		     uint64_t n, uint64_t txid)
{
	struct release_ctx rc = { st, 0, 0 };
	int r = emu_emap_insert(&o->map, lblk, pblk, n, txid, emu_alloc_txid(st->alloc),
				release_range, &rc);
	return r ? r : rc.err;
}

/* In-place conversion of an unwritten extent: the blocks stay, so the map
 * entry is replaced without releasing them. */
static void keep_range(void *arg, uint64_t pblk, uint64_t len, uint64_t txid)
{
	(void)arg;
	(void)pblk;
	(void)len;
	(void)txid;
}

/* Write [off, off+len) of o (held exclusively). zero: write zeros instead
 * of buf. */
static ssize_t write_locked(struct emu_store *st, struct emu_cx *cx, struct obj *o,
			    const uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	uint32_t bs = st->bs;
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t lblk = pos / bs, boff = pos % bs;
		uint64_t want = (boff + (len - done) + bs - 1) / bs;
		if (want > BOUNCE_MAX / bs)
			want = BOUNCE_MAX / bs;
		struct emu_map m;
		int fresh;
		pthread_mutex_lock(&st->lock);
		int64_t dest = st->broken ? -EIO : place(st, o, lblk, want, &m, &fresh);
		uint64_t cur = emu_alloc_txid(st->alloc);
		pthread_mutex_unlock(&st->lock);
		if (dest < 0)
			return done ? (ssize_t)done : dest;
		uint64_t nb = m.len;
		size_t piece = (size_t)(nb * bs - boff);
		if (piece > len - done)
			piece = len - done;
		size_t tail = (size_t)((boff + piece) % bs);
		const uint8_t *src = buf ? buf + done : NULL;
		const uint8_t *out;
		int rc = 0;
		int old_data = m.kind != EMU_MAP_HOLE && !(m.txid & UNWRITTEN);
		if (src && boff == 0 && tail == 0 && ((uintptr_t)src % 4096) == 0 &&
		    st->cfg.journal != EMU_JOURNAL_DATA) {
			out = src;
		} else {
			uint8_t *b = bounce_buf();
			if (!b)
				return -ENOMEM;
			/* read-modify-write of partial head and tail blocks */
			if (boff) {
				if (old_data)
					rc = read_blocks(st, cx, b, m.pblk, 1, 0);
				else
					memset(b, 0, bs);
			}
			if (!rc && tail && (nb > 1 || !boff)) {
				uint8_t *last = b + (nb - 1) * bs;
				if (old_data)
					rc = read_blocks(st, cx, last, m.pblk + nb - 1, 1, 0);
				else
					memset(last, 0, bs);
			}
			if (rc)
				return done ? (ssize_t)done : rc;
			if (src)
				memcpy(b + boff, src, piece);
			else
				memset(b + boff, 0, piece);
			out = b;
		}
		if (st->cfg.journal == EMU_JOURNAL_DATA) {
			/* data journaling: the block goes to the journal at
			 * commit and home at the journal checkpoint */
			pthread_mutex_lock(&st->lock);
			for (uint64_t i = 0; !rc && i < nb; i++)
				rc = pend_put(st, (uint64_t)dest + i, out + i * bs, 1);
			pthread_mutex_unlock(&st->lock);
		} else {
			rc = dev_write(st, cx, out, nb * bs, (uint64_t)dest * bs, EMU_IO_DATA, 0, 1);
		}
		pthread_mutex_lock(&st->lock);
		if (!rc && fresh) {
			if (m.kind != EMU_MAP_HOLE && (uint64_t)dest == m.pblk)
				rc = emu_emap_insert(&o->map, lblk, m.pblk, nb, cur, cur, keep_range, NULL);
			else
				rc = map_piece(st, o, lblk, (uint64_t)dest, nb, cur);
		} else if (rc && fresh && !(m.kind != EMU_MAP_HOLE && (uint64_t)dest == m.pblk)) {
			emu_alloc_free_now(st->alloc, (uint64_t)dest, nb);
		}
		/* an overwrite in place changes no metadata: nothing to
		 * commit (with --journal=data the block itself waits for one) */
		if (fresh || st->cfg.journal == EMU_JOURNAL_DATA) {
			o->dirty = 1;
			st->dirty_bytes += nb * bs;
		}
		pthread_mutex_unlock(&st->lock);
		if (rc)
			return done ? (ssize_t)done : rc;
		done += piece;
	}
	return (ssize_t)done;
}

static void maybe_commit(struct emu_store *st, struct emu_cx *cx)
{
	uint64_t limit = st->cfg.commit_bytes;
	if (st->cfg.journal == EMU_JOURNAL_DATA && limit > st->journal_blocks * st->bs / 4)
		limit = st->journal_blocks * st->bs / 4; /* a transaction must fit the log */
	pthread_mutex_lock(&st->lock);
	int due = st->dirty_bytes >= limit;
	pthread_mutex_unlock(&st->lock);
	if (due)
		emu_store_commit(st, cx);
}

ssize_t emu_store_write(struct emu_store *st, struct emu_cx *cx, uint64_t id, const void *buf,
			size_t len, uint64_t off)
{
	if (off + len < off)
		return -EFBIG;
	struct obj *o = obj_get(st, id, 1);
	if (!o)
		return -ENOMEM;
	gate_enter(st);
	pthread_rwlock_wrlock(&o->rw);
	ssize_t n = o->damaged ? -EIO : write_locked(st, cx, o, buf, len, off);
	if (n > 0 && off + (uint64_t)n > o->size) {
		pthread_mutex_lock(&st->lock);
		o->size = off + (uint64_t)n;
		o->dirty = 1;
		pthread_mutex_unlock(&st->lock);
	}
	pthread_rwlock_unlock(&o->rw);
	gate_leave(st);
	obj_put(st, o);
	if (n > 0) {
		pthread_mutex_lock(&st->acct_lock);
		st->acct.user_write_bytes += (uint64_t)n;
		pthread_mutex_unlock(&st->acct_lock);
		maybe_commit(st, cx);
	}
	return n;
}

/* Zero [from, to) inside one block if that block holds data (the tail of a
 * file that shrinks, the edges of a punched range). o held exclusively. */
static int zero_partial(struct emu_store *st, struct emu_cx *cx, struct obj *o, uint64_t from,
			uint64_t to)
{
	if (from >= to)
		return 0;
	struct emu_map m;
	pthread_mutex_lock(&st->lock);
	emu_emap_lookup(&o->map, from / st->bs, 1, &m);
	pthread_mutex_unlock(&st->lock);
	if (m.kind == EMU_MAP_HOLE || (m.txid & UNWRITTEN))
		return 0;
	ssize_t n = write_locked(st, cx, o, NULL, (size_t)(to - from), from);
	return n < 0 ? (int)n : 0;
}

static int truncate_locked(struct emu_store *st, struct emu_cx *cx, struct obj *o,
			   uint64_t size)
{
	int rc = 0;
	if (size < o->size) {
		uint64_t keep = (size + st->bs - 1) / st->bs;
		if (size % st->bs)
			rc = zero_partial(st, cx, o, size, keep * st->bs);
		if (!rc) {
			struct release_ctx r = { st, 0, 0 };
			pthread_mutex_lock(&st->lock);
			rc = emu_emap_truncate(&o->map, keep, release_range, &r);
			if (!rc)
				rc = r.err;
			pthread_mutex_unlock(&st->lock);
		}
	}
	if (!rc) {
		pthread_mutex_lock(&st->lock);
		o->size = size;
		o->dirty = 1;
		pthread_mutex_unlock(&st->lock);
	}
	return rc;
}

int emu_store_truncate(struct emu_store *st, struct emu_cx *cx, uint64_t id, uint64_t size)
{
	struct obj *o = obj_get(st, id, 1);
	if (!o)
		return -ENOMEM;
	gate_enter(st);
	pthread_rwlock_wrlock(&o->rw);
	int rc = o->damaged ? -EIO : st->broken ? -EIO : truncate_locked(st, cx, o, size);
	pthread_rwlock_unlock(&o->rw);
	gate_leave(st);
	obj_put(st, o);
	return rc;
}

/* Preallocate the holes of blocks [lblk, lblk+n) as unwritten extents. */
static int prealloc(struct emu_store *st, struct obj *o, uint64_t lblk, uint64_t n)
{
	int rc = 0;
	pthread_mutex_lock(&st->lock);
	uint64_t cur = emu_alloc_txid(st->alloc);
	while (!rc && n) {
		struct emu_map m;
		emu_emap_lookup(&o->map, lblk, n, &m);
		if (m.kind == EMU_MAP_HOLE) {
			struct emu_run r;
			size_t nr;
			uint64_t avail = emu_alloc_free_count(st->alloc);
			if (avail <= meta_reserve(st)) {
				rc = -ENOSPC;
				break;
			}
			if (m.len > avail - meta_reserve(st))
				m.len = avail - meta_reserve(st);
			int64_t got = emu_alloc_get(st->alloc, m.len, &r, 1, &nr);
			if (got < 0) {
				rc = (int)got;
				break;
			}
			m.len = r.len;
			rc = emu_emap_insert(&o->map, lblk, r.start, r.len, cur | UNWRITTEN, cur,
					     NULL, NULL);
			o->dirty = 1;
		}
		lblk += m.len;
		n -= m.len;
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

static int punch(struct emu_store *st, struct obj *o, uint64_t lblk, uint64_t n)
{
	struct release_ctx r = { st, 0, 0 };
	pthread_mutex_lock(&st->lock);
	int rc = emu_emap_punch(&o->map, lblk, n, release_range, &r);
	o->dirty = 1;
	pthread_mutex_unlock(&st->lock);
	return rc ? rc : r.err;
}

int emu_store_fallocate(struct emu_store *st, struct emu_cx *cx, uint64_t id, int mode,
			uint64_t off, uint64_t len)
{
	int keep = mode & FALLOC_FL_KEEP_SIZE;
	int op = mode & ~FALLOC_FL_KEEP_SIZE;
	if (op != 0 && op != FALLOC_FL_PUNCH_HOLE && op != FALLOC_FL_ZERO_RANGE)
		return -EOPNOTSUPP;
	if (op == FALLOC_FL_PUNCH_HOLE && !keep)
		return -EOPNOTSUPP;
	if (len == 0 || off + len < off)
		return -EINVAL;
	struct obj *o = obj_get(st, id, 1);
	if (!o)
		return -ENOMEM;
	gate_enter(st);
	pthread_rwlock_wrlock(&o->rw);
	int rc = o->damaged || st->broken ? -EIO : 0;
	uint64_t end = off + len, bs = st->bs;
	uint64_t first_full = (off + bs - 1) / bs, end_full = end / bs;
	if (!rc && op != 0) {
		/* punch / zero: zero the partial edges, unmap whole blocks */
		uint64_t lim = o->size < end ? o->size : end;
		if (first_full > end_full) {
			rc = zero_partial(st, cx, o, off, lim > off ? lim : off);
		} else {
			rc = zero_partial(st, cx, o, off, first_full * bs < lim ? first_full * bs : lim);
			if (!rc && end_full * bs < lim)
				rc = zero_partial(st, cx, o, end_full * bs, lim);
			if (!rc && end_full > first_full)
				rc = punch(st, o, first_full, end_full - first_full);
		}
	}
	if (!rc && op != FALLOC_FL_PUNCH_HOLE && end_full > first_full)
		rc = prealloc(st, o, first_full, end_full - first_full);
	if (!rc && op == 0 && off / bs < first_full) /* partial head block */
		rc = prealloc(st, o, off / bs, 1);
	if (!rc && op == 0 && end % bs && end_full >= first_full)
		rc = prealloc(st, o, end_full, 1);
	if (!rc && !keep && end > o->size) {
		pthread_mutex_lock(&st->lock);
		o->size = end;
		o->dirty = 1;
		pthread_mutex_unlock(&st->lock);
	}
	pthread_rwlock_unlock(&o->rw);
	gate_leave(st);
	obj_put(st, o);
	if (!rc)
		maybe_commit(st, cx);
	return rc;
}

/* Share src's blocks [sl, sl+n) as dst's [dl, dl+n); both held exclusively
 * (or the same object). */
static int share_blocks(struct emu_store *st, struct obj *src, uint64_t sl, struct obj *dst,
			uint64_t dl, uint64_t n)
{
	int rc = 0;
	pthread_mutex_lock(&st->lock);
	uint64_t cur = emu_alloc_txid(st->alloc);
	while (!rc && n) {
		struct emu_map m;
		emu_emap_lookup(&src->map, sl, n, &m);
		if (m.kind == EMU_MAP_HOLE) {
			struct release_ctx r = { st, 0, 0 };
			rc = emu_emap_punch(&dst->map, dl, m.len, release_range, &r);
			if (!rc)
				rc = r.err;
		} else {
			/* one more reference first, so releasing dst's old
			 * mapping (even the same blocks) never frees them */
			rc = emu_refs_inc(&st->refs, m.pblk, m.len);
			if (!rc) {
				struct release_ctx r = { st, 0, 0 };
				/* txid 0: shared blocks always move on write */
				rc = emu_emap_insert(&dst->map, dl, m.pblk, m.len,
						     m.txid & UNWRITTEN, cur, release_range, &r);
				if (!rc)
					rc = r.err;
			}
		}
		sl += m.len;
		dl += m.len;
		n -= m.len;
	}
	dst->dirty = 1;
	pthread_mutex_unlock(&st->lock);
	return rc;
}

ssize_t emu_store_clone(struct emu_store *st, struct emu_cx *cx, uint64_t src_id,
			uint64_t src_off, uint64_t dst_id, uint64_t dst_off, size_t len)
{
	struct obj *src = obj_get(st, src_id, 1), *dst = obj_get(st, dst_id, 1);
	ssize_t done = 0;
	uint64_t bs = st->bs;
	if (!src || !dst) {
		if (src)
			obj_put(st, src);
		if (dst)
			obj_put(st, dst);
		return -ENOMEM;
	}
	gate_enter(st);
	if (src == dst) {
		pthread_rwlock_wrlock(&src->rw);
	} else {
		/* lock order by address, so two opposite clones cannot deadlock */
		struct obj *a = src < dst ? src : dst, *b = src < dst ? dst : src;
		pthread_rwlock_wrlock(&a->rw);
		pthread_rwlock_wrlock(&b->rw);
	}
	if (src->damaged || dst->damaged || st->broken) {
		done = -EIO;
		goto out;
	}
	len = below_size(src->size, src_off, len); /* 0: nothing below, nothing done */
	int overlap = src == dst && src_off < dst_off + len && dst_off < src_off + len;
	/* whole blocks are shared when both sides are block aligned */
	if (!overlap && src_off % bs == 0 && dst_off % bs == 0 && len >= bs) {
		uint64_t n = len / bs;
		int rc = share_blocks(st, src, src_off / bs, dst, dst_off / bs, n);
		if (rc) {
			done = rc;
			goto out;
		}
		done = (ssize_t)(n * bs);
	}
	/* the rest is copied through a buffer */
	uint8_t *tmp = (size_t)done < len ? malloc(BOUNCE_MAX) : NULL;
	while ((size_t)done < len) {
		size_t piece = len - (size_t)done < BOUNCE_MAX ? len - (size_t)done : BOUNCE_MAX;
		if (!tmp) {
			done = done ? done : -ENOMEM;
			break;
		}
		/* read through the locked objects: emu_store_read would lock */
		uint64_t so = src_off + (uint64_t)done;
		size_t got = 0;
		while (got < piece) {
			struct emu_map m;
			uint64_t pos = so + got, lb = pos / bs, bo = pos % bs;
			pthread_mutex_lock(&st->lock);
			emu_emap_lookup(&src->map, lb, 1, &m);
			pthread_mutex_unlock(&st->lock);
			size_t k = (size_t)(bs - bo) < piece - got ? (size_t)(bs - bo) : piece - got;
			if (m.kind == EMU_MAP_HOLE || (m.txid & UNWRITTEN)) {
				memset(tmp + got, 0, k);
			} else {
				uint8_t blk[65536] __attribute__((aligned(4096)));
				int rc = read_blocks(st, cx, blk, m.pblk, 1, 0);
				if (rc) {
					free(tmp);
					done = done ? done : rc;
					goto out;
				}
				memcpy(tmp + got, blk + bo, k);
			}
			got += k;
		}
		ssize_t w = write_locked(st, cx, dst, tmp, piece, dst_off + (uint64_t)done);
		if (w < 0) {
			done = done ? done : w;
			break;
		}
		done += w;
	}
	free(tmp);
	if (done > 0 && dst_off + (uint64_t)done > dst->size) {
		pthread_mutex_lock(&st->lock);
		dst->size = dst_off + (uint64_t)done;
		dst->dirty = 1;
		pthread_mutex_unlock(&st->lock);
	}
out:
	pthread_rwlock_unlock(&src->rw);
	if (dst != src)
		pthread_rwlock_unlock(&dst->rw);
	gate_leave(st);
	obj_put(st, src);
	obj_put(st, dst);
	if (done > 0)
		maybe_commit(st, cx);
	return done;
}

int64_t emu_store_seek(struct emu_store *st, uint64_t id, uint64_t off, int whence)
{
	struct obj *o = obj_get(st, id, 0);
	int64_t res;
	if (!o)
		return -ENXIO;
	pthread_rwlock_rdlock(&o->rw);
	if (off >= o->size) {
		res = -ENXIO;
	} else {
		uint64_t lblk = off / st->bs, end = (o->size + st->bs - 1) / st->bs;
		res = whence == SEEK_HOLE ? (int64_t)o->size : -ENXIO;
		pthread_mutex_lock(&st->lock);
		while (lblk < end) {
			struct emu_map m;
			emu_emap_lookup(&o->map, lblk, end - lblk, &m);
			int data = m.kind != EMU_MAP_HOLE && !(m.txid & UNWRITTEN);
			if ((whence == SEEK_DATA) == data) {
				uint64_t at = lblk * st->bs;
				res = (int64_t)(at > off ? at : off);
				if ((uint64_t)res > o->size)
					res = whence == SEEK_HOLE ? (int64_t)o->size : -ENXIO;
				break;
			}
			lblk += m.len;
		}
		pthread_mutex_unlock(&st->lock);
	}
	pthread_rwlock_unlock(&o->rw);
	obj_put(st, o);
	return res;
}

void emu_store_statfs(struct emu_store *st, uint64_t *blocks, uint64_t *free_blocks,
		      uint32_t *block_size)
{
	pthread_mutex_lock(&st->lock);
	uint64_t avail = emu_alloc_free_count(st->alloc);
	*blocks = st->nblocks - st->data_blk;
	*free_blocks = avail > meta_reserve(st) ? avail - meta_reserve(st) : 0;
	*block_size = st->bs;
	pthread_mutex_unlock(&st->lock);
}

struct fiemap_buf {
	uint64_t (*v)[3];
	size_t n, cap;
	uint32_t bs;
};

static int fiemap_collect(void *arg, uint64_t lblk, uint64_t pblk, uint64_t len)
{
	struct fiemap_buf *f = arg;
	if (fsp_grow((void **)&f->v, &f->cap, f->n + 1, sizeof(*f->v), 64))
		return -ENOMEM;
	f->v[f->n][0] = lblk * f->bs;
	f->v[f->n][1] = pblk * f->bs;
	f->v[f->n][2] = len * f->bs;
	f->n++;
	return 0;
}

int emu_store_fiemap(struct emu_store *st, uint64_t id,
		     int (*fn)(void *ctx, uint64_t logical, uint64_t physical, uint64_t len),
		     void *ctx)
{
	struct fiemap_buf f = { .bs = st->bs };
	int rc = -ENOENT;
	pthread_mutex_lock(&st->lock);
	struct obj *o = obj_find(st, id);
	if (o)
		rc = emu_emap_fiemap(&o->map, 0, UINT64_MAX / st->bs, fiemap_collect, &f);
	pthread_mutex_unlock(&st->lock);
	for (size_t i = 0; !rc && i < f.n; i++)
		rc = fn(ctx, f.v[i][0], f.v[i][1], f.v[i][2]);
	free(f.v);
	return rc;
}

/*
 * store.c - the emulated copy-on-write / journaling store (see
 * store.h for the model and the layout, docs/emulation.md for the
 * on-disk formats and the differences from real file systems).
 *
 * Reading order: device IO and accounting (dev_*), objects, the data path
 * (read/write/truncate/fallocate/clone), the commit (metadata nodes, the
 * root, the three ways of making them durable), open/format/recovery.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <blkid.h>
#include "src/base/clock.h"
#include "fs/emu/crc32c.h"
#include "fs/emu/endian.h"
#include "fs/emu/extent.h"
#include "fs/emu/io.h"
#include "fs/emu/journal.h"
#include "fs/emu/store.h"
#include "src/base/ops.h"

#define SB_MAGIC 0x3153554d45505346ull /* "FSPEMUS1" */
#define SB_VERSION 2u   /* 2: a backup header at the end; 1 (read too): none */
#define NODE_ROOT 0x544f4f52u /* "ROOT" */
#define NODE_OMAP 0x50414d4fu /* "OMAP" */
#define NODE_INDEX 0x58444e49u /* "INDX" */
#define NODE_LEAF 0x4641454cu /* "LEAF" */
#define NODE_HDR 32           /* magic, crc, obj, seq, count, pad */
#define OMAP_ENT_V1 24        /* key (= object id), gen, first index node */
#define OMAP_ENT 32           /* key, object id, gen, first index node */
#define ROOT_OMAP_V2 1u       /* root flag: the object map has OMAP_ENT entries */
#define INDEX_HEAD 24         /* size, leaves in the whole chain, next node */
#define INDEX_ENT 16          /* first lblk, leaf node */
#define LEAF_ENT 32           /* lblk, pblk, len, txid */
#define ROOT_HEAD 64          /* header + txid, nobj, nomap, cow, journal */
/* An extent of preallocated, never written blocks (fallocate): reads as
 * zeros, and the first write lands in place (as btrfs does with prealloc). */
#define UNWRITTEN (1ull << 63)
#define TAG_DATA (1ull << 63) /* journal tag of a logged data block */
#define BOUNCE_MAX (1u << 20) /* largest single data IO the store issues */

static const char *const cow_names[] = { "off", "shared", "always" };
static const char *const journal_names[] = { "off", "writeback", "ordered", "data" };

int emu_cow_mode_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, cow_names[i]) == 0)
			return i;
	return -1;
}

int emu_journal_mode_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, journal_names[i]) == 0)
			return i;
	return -1;
}

const char *emu_cow_mode_name(int mode)
{
	return mode >= 0 && mode < 3 ? cow_names[mode] : "unknown";
}

const char *emu_journal_mode_name(int mode)
{
	return mode >= 0 && mode < 4 ? journal_names[mode] : "unknown";
}

void emu_store_cfg_default(struct emu_store_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->alloc = EMU_ALLOC_NEXT_FIT;
	cfg->block_size = 4096;
	cfg->commit_interval_ms = 5000;
	cfg->commit_bytes = 64ull << 20;
	cfg->fsync_commit = 1;
	cfg->flush = 1;
}

/* A growable array of block numbers. */
struct u64s {
	uint64_t *v;
	size_t n, cap;
};

static int u64s_push(struct u64s *a, uint64_t x)
{
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 64;
		uint64_t *v = realloc(a->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = ncap;
	}
	a->v[a->n++] = x;
	return 0;
}

/* ---- objects ---- */

struct obj {
	struct obj *hnext;
	uint64_t id;         /* the key callers use: the backing inode number while
			      * bound to a file, oid | EMU_ORPHAN_KEY when not */
	uint64_t oid;        /* the object's own id: never reused, sealed into its
			      * nodes, kept with the backing file (docs/emulation.md) */
	uint64_t gen, size;
	struct emu_emap map;
	pthread_rwlock_t rw; /* data IO: writers exclusive, readers shared */
	unsigned refs;       /* lookups in progress (under st->lock) */
	int dirty, damaged, removed;
	uint64_t *nodes;     /* node blocks of the last commit: leaves, then the index chain */
	size_t nnodes, nindex;
	uint32_t index_crc;  /* of the index chain's content last written */
};

/* A block waiting for its home write: journaled metadata until the journal
 * checkpoint, or (journal=data) file data until its commit and checkpoint. */
struct pend {
	struct pend *next;
	uint64_t pblk;
	int is_data;
	int logged; /* data: already in a committed transaction */
	uint8_t *buf;
};

#define STREAMS 32
#define WINDOW 16

struct emu_store {
	struct emu_store_cfg cfg;
	char path[4096];
	int fd, direct;
	uint32_t bs;
	uint64_t nblocks;
	uint64_t uuid;
	uint64_t backup_blk;  /* backup superblock (the root copy follows); 0: none */
	uint64_t oid_state;   /* xorshift state for new object ids (under lock) */
	/* layout, in blocks */
	uint64_t bitmap_blk[2], bitmap_blocks, journal_blk, journal_blocks, data_blk;

	pthread_mutex_t lock; /* everything below except the gate and acct */
	struct emu_alloc *alloc;
	struct emu_refs refs;
	/* blocks that lost a reference while shared in the open transaction,
	 * counted as in refs (> 1: listed): the durable state may still map
	 * them from two files, so they stay shared until the commit */
	struct emu_refs unshared;
	struct obj **htab;
	size_t hcap, nobj;
	int omap_dirty;
	uint64_t *omap_nodes; /* omap node blocks of the last commit */
	uint32_t *omap_crc;
	size_t nomap;
	uint32_t *bitmap_crc[2]; /* per root slot, per bitmap block */
	uint64_t root_seq;
	int root_slot;           /* slot of the newest root */
	uint64_t dirty_bytes;
	struct emu_journal *journal;
	struct pend **pend;      /* hash of blocks waiting for their home write */
	size_t pend_cap, npend;
	struct u64s deferred;    /* freed node/data blocks waiting for a journal checkpoint */
	int broken;              /* an IO error in a commit: refuse further writes */

	/* the IO gate: a commit waits for IO in flight and holds new IO back */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cv;
	int committing;
	uint64_t inflight;

	/* journal IO context (set while the journal is used, under commit) */
	struct emu_io jio;
	struct emu_cx *jcx;

	/* accounting */
	pthread_mutex_t acct_lock;
	struct emu_store_acct acct;
	uint64_t stream_end[STREAMS], stream_used[STREAMS], stream_id[STREAMS];
	uint64_t next_stream, io_clock;
	uint64_t window[WINDOW];
	unsigned nwindow;
	uint64_t streams_sum;

	/* the commit-interval thread */
	pthread_t timer;
	int timer_running, stop;
	pthread_cond_t timer_cv;
};

/* ---- device IO, timing and accounting ---- */

static __thread uint8_t *bounce;
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_key_init(void)
{
	pthread_key_create(&bounce_key, free);
}

/* A per-thread block-aligned buffer of BOUNCE_MAX + one block. */
static uint8_t *bounce_buf(void)
{
	if (!bounce) {
		void *p;
		pthread_once(&bounce_once, bounce_key_init);
		if (posix_memalign(&p, 65536, BOUNCE_MAX + 65536))
			return NULL;
		bounce = p;
		pthread_setspecific(bounce_key, p);
	}
	return bounce;
}

static int aligned(const void *p, size_t len, uint64_t off)
{
	return ((uintptr_t)p % 4096) == 0 && len % 512 == 0 && off % 512 == 0;
}

/* Sequentiality: a device IO continues a stream when it starts where one of
 * the STREAMS most recent streams ended. */
static void account_io(struct emu_store *st, uint64_t off, uint64_t len)
{
	int hit = -1, lru = 0;
	st->acct.ios++;
	st->io_clock++;
	for (int i = 0; i < STREAMS; i++) {
		if (st->stream_used[i] && st->stream_end[i] == off) {
			hit = i;
			break;
		}
		if (st->stream_used[i] < st->stream_used[lru])
			lru = i;
	}
	if (hit >= 0) {
		st->acct.seq_ios++;
	} else {
		hit = lru;
		st->stream_id[hit] = ++st->next_stream;
	}
	st->stream_end[hit] = off + len;
	st->stream_used[hit] = st->io_clock;
	st->window[st->nwindow++] = st->stream_id[hit];
	if (st->nwindow == WINDOW) {
		unsigned distinct = 0;
		for (unsigned i = 0; i < WINDOW; i++) {
			unsigned j = 0;
			while (j < i && st->window[j] != st->window[i])
				j++;
			distinct += j == i;
		}
		st->streams_sum += distinct;
		st->acct.windows++;
		st->nwindow = 0;
	}
}

/* Account one device IO that ran from t0 to t1. user_data: 1 the caller's
 * own data (backing time), 0 the emulation's (emu time), -1 the caller
 * accounts the time itself. */
static void dev_note_at(struct emu_store *st, struct emu_cx *cx, int op, int kind,
			uint64_t off, uint64_t len, uint64_t t0, uint64_t t1, int err,
			int user_data, unsigned flags)
{
	uint64_t ns = t1 - t0;
	if (cx && user_data >= 0) {
		if (user_data)
			cx->data_ns += ns;
		else
			cx->other_ns += ns;
	}
	pthread_mutex_lock(&st->acct_lock);
	if (!err) {
		if (op == FSP_OP_DEV_READ) {
			st->acct.reads++;
			st->acct.read_bytes += len;
		} else {
			st->acct.writes[kind]++;
			st->acct.bytes[kind] += len;
			if (flags & EMU_IO_FUA)
				st->acct.fua_writes++;
		}
		if (op != FSP_OP_DEV_FLUSH)
			account_io(st, off, len);
	}
	pthread_mutex_unlock(&st->acct_lock);
	if (st->cfg.devio)
		st->cfg.devio(st->cfg.devio_arg, cx, op, off, len, t0, ns, err);
}

static void dev_note(struct emu_store *st, struct emu_cx *cx, int op, int kind,
		     uint64_t off, uint64_t len, uint64_t t0, int err, int user_data,
		     unsigned flags)
{
	dev_note_at(st, cx, op, kind, off, len, t0, fsp_now_ns(), err, user_data, flags);
}

static const int write_op[EMU_IO_NKINDS] = {
	[EMU_IO_DATA] = FSP_OP_DEV_WRITE_DATA,
	[EMU_IO_JOURNAL] = FSP_OP_DEV_WRITE_JOURNAL,
	[EMU_IO_METADATA] = FSP_OP_DEV_WRITE_META,
	[EMU_IO_CHECKPOINT] = FSP_OP_DEV_WRITE_CKPT,
	[EMU_IO_FLUSH] = FSP_OP_DEV_FLUSH,
};

/* pwrite/pread the whole range, resuming after short transfers. */
static int full_io(int fd, void *buf, size_t len, uint64_t off, int write)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int dev_flush(struct emu_store *st, struct emu_cx *cx)
{
	if (!st->cfg.flush)
		return 0;
	uint64_t t0 = fsp_now_ns();
	int rc = fdatasync(st->fd) ? -errno : 0;
	dev_note(st, cx, FSP_OP_DEV_FLUSH, EMU_IO_FLUSH, 0, 0, t0, rc, 0, 0);
	return rc;
}

/*
 * One write to the store. Unaligned buffers go through the bounce buffer
 * (the store is opened O_DIRECT when the file system allows it). A FUA
 * write is sent as the write followed by a cache flush, recorded as such:
 * userspace cannot send REQ_FUA alone (an O_DSYNC write is a FUA write
 * *and* a flush), and write + flush is what the block layer itself sends
 * for FUA to a device without FUA support, so the flush count stays exact.
 */
static int dev_write(struct emu_store *st, struct emu_cx *cx, const void *buf, size_t len,
		     uint64_t off, int kind, unsigned flags, int user_data)
{
	const uint8_t *p = buf;
	int rc = 0;
	uint64_t t0 = fsp_now_ns();
	if (!st->cfg.flush)
		flags &= ~EMU_IO_FUA;
	int fd = st->fd;
	if (st->direct && !aligned(buf, len, off)) {
		uint8_t *b = bounce_buf();
		for (size_t done = 0; !rc && done < len;) {
			size_t n = len - done < BOUNCE_MAX ? len - done : BOUNCE_MAX;
			if (!b)
				return -ENOMEM;
			memcpy(b, p + done, n);
			rc = full_io(fd, b, n, off + done, 1);
			done += n;
		}
	} else {
		rc = full_io(fd, (void *)p, len, off, 1);
	}
	dev_note(st, cx, write_op[kind], kind, off, len, t0, rc, user_data, flags);
	if (!rc && (flags & EMU_IO_FUA))
		rc = dev_flush(st, cx);
	return rc;
}

static int dev_read(struct emu_store *st, struct emu_cx *cx, void *buf, size_t len,
		    uint64_t off, int user_data)
{
	uint8_t *p = buf;
	int rc = 0;
	uint64_t t0 = fsp_now_ns();
	if (st->direct && !aligned(buf, len, off)) {
		uint8_t *b = bounce_buf();
		for (size_t done = 0; !rc && done < len;) {
			size_t n = len - done < BOUNCE_MAX ? len - done : BOUNCE_MAX;
			if (!b)
				return -ENOMEM;
			rc = full_io(st->fd, b, n, off + done, 0);
			if (!rc)
				memcpy(p + done, b, n);
			done += n;
		}
	} else {
		rc = full_io(st->fd, p, len, off, 0);
	}
	dev_note(st, cx, FSP_OP_DEV_READ, EMU_IO_DATA, off, len, t0, rc, user_data, 0);
	return rc;
}

/* struct emu_io for the journal module: its IO is accounted to st->jcx. */
static int jio_pwrite(void *ctx, const void *buf, size_t len, uint64_t off,
		      enum emu_io_kind kind, unsigned flags)
{
	struct emu_store *st = ctx;
	return dev_write(st, st->jcx, buf, len, off, kind, flags, 0);
}

static int jio_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct emu_store *st = ctx;
	return dev_read(st, st->jcx, buf, len, off, 0);
}

static int jio_flush(void *ctx)
{
	struct emu_store *st = ctx;
	return dev_flush(st, st->jcx);
}

/* ---- the IO gate ---- */

static void gate_enter(struct emu_store *st)
{
	pthread_mutex_lock(&st->gate_lock);
	while (st->committing)
		pthread_cond_wait(&st->gate_cv, &st->gate_lock);
	st->inflight++;
	pthread_mutex_unlock(&st->gate_lock);
}

static void gate_leave(struct emu_store *st)
{
	pthread_mutex_lock(&st->gate_lock);
	if (--st->inflight == 0 && st->committing)
		pthread_cond_broadcast(&st->gate_cv);
	pthread_mutex_unlock(&st->gate_lock);
}

/* ---- object table (under st->lock) ---- */

static size_t hslot(const struct emu_store *st, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (st->hcap - 1);
}

static struct obj *obj_find(struct emu_store *st, uint64_t id)
{
	for (struct obj *o = st->htab[hslot(st, id)]; o; o = o->hnext)
		if (o->id == id)
			return o;
	return NULL;
}

static int htab_grow(struct emu_store *st)
{
	size_t ncap = st->hcap ? st->hcap * 2 : 64;
	struct obj **n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	struct obj **old = st->htab;
	size_t ocap = st->hcap;
	st->htab = n;
	st->hcap = ncap;
	for (size_t i = 0; i < ocap; i++)
		for (struct obj *o = old[i], *next; o; o = next) {
			next = o->hnext;
			size_t s = hslot(st, o->id);
			o->hnext = n[s];
			n[s] = o;
		}
	free(old);
	return 0;
}

/* A new object id: random, top bit set (so that the orphan key of an
 * object formatted before ids existed, its inode number, stays apart). */
static uint64_t new_oid(struct emu_store *st)
{
	uint64_t x = st->oid_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	st->oid_state = x;
	return x | EMU_ORPHAN_KEY;
}

static struct obj *obj_new(struct emu_store *st, uint64_t id, uint64_t gen)
{
	if (st->nobj + 1 > st->hcap / 2 && htab_grow(st))
		return NULL;
	struct obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->id = id;
	o->oid = new_oid(st);
	o->gen = gen;
	emu_emap_init(&o->map, 32768); /* ext4's longest extent; btrfs's is larger */
	pthread_rwlock_init(&o->rw, NULL);
	size_t s = hslot(st, id);
	o->hnext = st->htab[s];
	st->htab[s] = o;
	st->nobj++;
	o->dirty = 1;
	st->omap_dirty = 1;
	return o;
}

static void obj_unlink(struct emu_store *st, struct obj *o)
{
	struct obj **pp = &st->htab[hslot(st, o->id)];
	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
	st->nobj--;
	o->removed = 1;
}

/* Move o to another key (under st->lock; the new key is free). */
static void obj_rekey_locked(struct emu_store *st, struct obj *o, uint64_t id)
{
	struct obj **pp = &st->htab[hslot(st, o->id)];
	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
	o->id = id;
	size_t s = hslot(st, id);
	o->hnext = st->htab[s];
	st->htab[s] = o;
	st->omap_dirty = 1;
}

static void obj_destroy(struct obj *o)
{
	emu_emap_free(&o->map);
	pthread_rwlock_destroy(&o->rw);
	free(o->nodes);
	free(o);
}

/* Take a reference (create when create is set); NULL if absent. */
static struct obj *obj_get(struct emu_store *st, uint64_t id, int create)
{
	pthread_mutex_lock(&st->lock);
	struct obj *o = obj_find(st, id);
	if (!o && create)
		o = obj_new(st, id, 0);
	if (o)
		o->refs++;
	pthread_mutex_unlock(&st->lock);
	return o;
}

static void obj_put(struct emu_store *st, struct obj *o)
{
	pthread_mutex_lock(&st->lock);
	int gone = --o->refs == 0 && o->removed;
	pthread_mutex_unlock(&st->lock);
	if (gone)
		obj_destroy(o);
}

/* ---- pending home writes (under st->lock) ---- */

static struct pend **pend_slot(struct emu_store *st, uint64_t pblk)
{
	if (!st->pend_cap)
		return NULL;
	struct pend **pp = &st->pend[(pblk * 0x9e3779b97f4a7c15ull >> 24) & (st->pend_cap - 1)];
	while (*pp && (*pp)->pblk != pblk)
		pp = &(*pp)->next;
	return pp;
}

static struct pend *pend_find(struct emu_store *st, uint64_t pblk)
{
	struct pend **pp = pend_slot(st, pblk);
	return pp ? *pp : NULL;
}

/* Store a copy of one block for its later home write (replacing an older
 * copy of the same block). */
static int pend_put(struct emu_store *st, uint64_t pblk, const void *buf, int is_data)
{
	struct pend *p = pend_find(st, pblk);
	if (!p) {
		if (st->npend + 1 > st->pend_cap) {
			size_t ncap = st->pend_cap ? st->pend_cap * 2 : 1024;
			struct pend **n = calloc(ncap, sizeof(*n));
			if (!n)
				return -ENOMEM;
			struct pend **old = st->pend;
			size_t ocap = st->pend_cap;
			st->pend = n;
			st->pend_cap = ncap;
			for (size_t i = 0; i < ocap; i++)
				for (struct pend *q = old[i], *next; q; q = next) {
					next = q->next;
					struct pend **pp = pend_slot(st, q->pblk);
					q->next = *pp;
					*pp = q;
				}
			free(old);
		}
		p = calloc(1, sizeof(*p));
		if (!p || posix_memalign((void **)&p->buf, 4096, st->bs)) {
			free(p);
			return -ENOMEM;
		}
		p->pblk = pblk;
		struct pend **pp = pend_slot(st, pblk);
		p->next = *pp;
		*pp = p;
		st->npend++;
	}
	memcpy(p->buf, buf, st->bs);
	p->is_data = is_data;
	p->logged = 0;
	return 0;
}

static void pend_drop(struct emu_store *st, uint64_t pblk)
{
	struct pend **pp = pend_slot(st, pblk);
	if (pp && *pp) {
		struct pend *p = *pp;
		*pp = p->next;
		free(p->buf);
		free(p);
		st->npend--;
	}
}

/* ---- freeing blocks ---- */

static int defer_free(struct emu_store *st, uint64_t pblk, uint64_t len)
{
	int rc = 0;
	while (!rc && len--)
		rc = u64s_push(&st->deferred, pblk++);
	return rc;
}

struct release_ctx {
	struct emu_store *st;
	uint64_t txid;
	int err;
};

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
static void release_range(void *arg, uint64_t pblk, uint64_t len, uint64_t txid)
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

/* ---- the data path ---- */

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

/*
 * Reads of a fragmented range: the mapped pieces of one request go to the
 * device together, through a per-thread libaio context, as a kernel file
 * system submits one bio per extent and lets them run in parallel. A
 * request that maps to one piece is a plain pread.
 */
#define READ_PIECES 256

struct rpiece {
	uint64_t lblk, n, pblk; /* pblk valid when mapped */
	int mapped;
};

static __thread io_context_t aio_ctx;
static __thread int aio_state; /* 0 unknown, 1 ready, -1 unavailable */
static pthread_key_t aio_key;
static pthread_once_t aio_once = PTHREAD_ONCE_INIT;

static void aio_ctx_free(void *p)
{
	io_destroy((io_context_t)p);
}

static void aio_key_init(void)
{
	pthread_key_create(&aio_key, aio_ctx_free);
}

static io_context_t thread_aio(void)
{
	if (aio_state == 0) {
		pthread_once(&aio_once, aio_key_init);
		aio_state = io_setup(READ_PIECES, &aio_ctx) == 0 ? 1 : -1;
		if (aio_state == 1)
			pthread_setspecific(aio_key, aio_ctx);
	}
	return aio_state == 1 ? aio_ctx : NULL;
}

/* Read the mapped pieces p[0..n) into dst (block i of the range at
 * dst + (p.lblk - first) * bs). 0 or -errno. */
static int read_pieces(struct emu_store *st, struct emu_cx *cx, const struct rpiece *p,
		       size_t n, uint64_t first, uint8_t *dst)
{
	size_t mapped = 0;
	for (size_t i = 0; i < n; i++)
		mapped += p[i].mapped;
	io_context_t ctx = mapped > 1 ? thread_aio() : NULL;
	if (!ctx) {
		for (size_t i = 0; i < n; i++) {
			if (!p[i].mapped)
				continue;
			int rc = dev_read(st, cx, dst + (p[i].lblk - first) * st->bs, p[i].n * st->bs,
					  p[i].pblk * st->bs, 1);
			if (rc)
				return rc;
		}
		return 0;
	}
	struct iocb cbs[READ_PIECES], *cbp[READ_PIECES];
	struct io_event ev[READ_PIECES];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!p[i].mapped)
			continue;
		io_prep_pread(&cbs[k], st->fd, dst + (p[i].lblk - first) * st->bs,
			      p[i].n * st->bs, (long long)(p[i].pblk * st->bs));
		cbs[k].data = (void *)&p[i];
		cbp[k] = &cbs[k];
		k++;
	}
	uint64_t t0 = fsp_now_ns();
	int rc = 0;
	size_t submitted = 0, reaped = 0;
	while (submitted < k) {
		int r = io_submit(ctx, (long)(k - submitted), cbp + submitted);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r <= 0) {
			rc = r < 0 ? r : -EIO;
			break;
		}
		submitted += (size_t)r;
	}
	while (reaped < submitted) {
		int r = io_getevents(ctx, 1, (long)(submitted - reaped), ev, NULL);
		if (r == -EINTR)
			continue;
		if (r < 0) {
			rc = rc ? rc : r;
			break; /* cannot happen with a valid context; the pieces leak */
		}
		uint64_t now = fsp_now_ns();
		for (int e = 0; e < r; e++) {
			const struct rpiece *q = ev[e].data;
			long res = (long)ev[e].res;
			int err = res < 0 ? (int)res : (uint64_t)res != q->n * st->bs ? -EIO : 0;
			if (err && !rc)
				rc = err;
			/* each piece is recorded with its own completion time;
			 * the caller's data time is the batch's wall time,
			 * added once below */
			dev_note_at(st, cx, FSP_OP_DEV_READ, EMU_IO_DATA, q->pblk * st->bs,
				    q->n * st->bs, t0, now, err, -1, 0);
		}
		reaped += (size_t)r;
	}
	if (cx)
		cx->data_ns += fsp_now_ns() - t0;
	return rc;
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
	if (off >= o->size)
		goto out;
	if (len > o->size - off)
		len = (size_t)(o->size - off);
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
	if (src_off >= src->size)
		goto out;
	if (len > src->size - src_off)
		len = (size_t)(src->size - src_off);
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

int emu_store_obj_open(struct emu_store *st, struct emu_cx *cx, uint64_t id, uint64_t gen)
{
	struct obj *o = obj_get(st, id, 0);
	int rc = 0;
	if (!o)
		return 0; /* created by its first write */
	(void)cx;
	if (gen && o->gen && o->gen != gen) {
		/* the inode number was reused (the file was replaced behind
		 * the mount's back): the old object is not this file's data;
		 * it is kept, unbound, for a backing file that names its id */
		pthread_mutex_lock(&st->lock);
		if (!o->removed && obj_find(st, o->oid | EMU_ORPHAN_KEY) == NULL)
			obj_rekey_locked(st, o, o->oid | EMU_ORPHAN_KEY);
		else
			rc = -EEXIST;
		pthread_mutex_unlock(&st->lock);
	} else if (gen && !o->gen) {
		pthread_mutex_lock(&st->lock);
		o->gen = gen;
		st->omap_dirty = 1;
		pthread_mutex_unlock(&st->lock);
	}
	obj_put(st, o);
	return rc;
}

static int free_nodes(struct emu_store *st, const uint64_t *nodes, size_t n);

int emu_store_obj_remove(struct emu_store *st, struct emu_cx *cx, uint64_t id)
{
	(void)cx;
	struct obj *o = obj_get(st, id, 0);
	int rc = 0;
	if (!o)
		return 0;
	gate_enter(st);
	pthread_rwlock_wrlock(&o->rw);
	pthread_mutex_lock(&st->lock);
	if (!o->removed) {
		struct release_ctx r = { st, 0, 0 };
		if (!o->damaged)
			rc = emu_emap_truncate(&o->map, 0, release_range, &r);
		if (!rc)
			rc = r.err;
		if (!rc)
			rc = free_nodes(st, o->nodes, o->nnodes);
		o->nnodes = 0;
		obj_unlink(st, o);
		st->omap_dirty = 1;
	}
	pthread_mutex_unlock(&st->lock);
	pthread_rwlock_unlock(&o->rw);
	gate_leave(st);
	obj_put(st, o);
	return rc;
}

int emu_store_obj_size(struct emu_store *st, uint64_t id, uint64_t *size, uint64_t *allocated)
{
	pthread_mutex_lock(&st->lock);
	struct obj *o = obj_find(st, id);
	if (o) {
		*size = o->size;
		if (allocated)
			*allocated = emu_emap_mapped_blocks(&o->map) * st->bs;
	}
	pthread_mutex_unlock(&st->lock);
	return o ? 0 : -ENOENT;
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

/* ---- metadata nodes ---- */

static void node_seal(struct emu_store *st, uint8_t *b, uint32_t magic, uint64_t obj,
		      uint32_t count)
{
	put32(b, magic);
	put32(b + 4, 0);
	put64(b + 8, obj);
	put64(b + 16, st->root_seq);
	put32(b + 24, count);
	put32(b + 28, 0);
	put32(b + 4, emu_crc32c(0, b, st->bs));
}

/* 0 when b is a sound node of this magic (and object, unless obj is ~0). */
static int node_check(const struct emu_store *st, uint8_t *b, uint32_t magic, uint64_t obj)
{
	uint32_t crc = get32(b + 4);
	put32(b + 4, 0);
	uint32_t calc = emu_crc32c(0, b, st->bs);
	put32(b + 4, crc);
	if (get32(b) != magic || crc != calc)
		return -EUCLEAN;
	if (obj != ~0ull && get64(b + 8) != obj)
		return -EUCLEAN;
	return 0;
}

/* One metadata block to write in this commit. */
struct mwrite {
	uint64_t pblk;
	uint8_t *buf;
	int kind;
};

struct commit {
	struct mwrite *w;
	size_t n, cap;
	struct u64s freed; /* node blocks no longer referenced */
	int err;
};

static uint8_t *commit_block(struct emu_store *st, struct commit *c, uint64_t pblk, int kind)
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct mwrite *n = realloc(c->w, ncap * sizeof(*n));
		if (!n)
			return NULL;
		c->w = n;
		c->cap = ncap;
	}
	void *b;
	if (posix_memalign(&b, 4096, st->bs))
		return NULL;
	memset(b, 0, st->bs);
	c->w[c->n++] = (struct mwrite){ pblk, b, kind };
	return b;
}

static int commit_free(struct commit *c, uint64_t pblk)
{
	return u64s_push(&c->freed, pblk);
}

static int cow_meta(const struct emu_store *st)
{
	return st->cfg.cow != EMU_COW_OFF && st->cfg.journal == EMU_JOURNAL_OFF;
}

/* A block for a metadata node: copy-on-write always takes new space (the
 * old block is freed by whoever notices it is no longer referenced);
 * otherwise a node keeps its home. */
static int64_t node_home(struct emu_store *st, uint64_t old)
{
	if (old && !cow_meta(st))
		return (int64_t)old;
	struct emu_run r;
	size_t nr;
	int64_t got = emu_alloc_get(st->alloc, 1, &r, 1, &nr);
	return got < 0 ? got : (int64_t)r.start;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Free (at commit) every block of old[] that is not in new[]. */
static int free_unreferenced(struct commit *c, const uint64_t *old, size_t nold,
			     const uint64_t *new, size_t nnew)
{
	uint64_t *sorted = malloc((nnew ? nnew : 1) * sizeof(*sorted));
	int rc = 0;
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, new, nnew * sizeof(*sorted));
	qsort(sorted, nnew, sizeof(*sorted), cmp_u64);
	for (size_t i = 0; !rc && i < nold; i++)
		if (!bsearch(&old[i], sorted, nnew, sizeof(*sorted), cmp_u64))
			rc = commit_free(c, old[i]);
	free(sorted);
	return rc;
}

/* Write the object's changed leaves, then its index chain if the list of
 * leaves or the size changed. Under st->lock, gate closed. */
static int commit_obj(struct emu_store *st, struct commit *c, struct obj *o)
{
	struct emu_emap *m = &o->map;
	size_t nl = m->nleaf;
	size_t per_index = (st->bs - NODE_HDR - INDEX_HEAD) / INDEX_ENT;
	size_t nidx = nl ? (nl + per_index - 1) / per_index : 1;
	if (nidx < st->cfg.tree_depth)
		nidx = st->cfg.tree_depth; /* a deeper tree: more interior nodes per change */
	uint64_t *nodes = malloc((nl + nidx) * sizeof(*nodes));
	int rc = 0;
	if (!nodes)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < nl; i++) {
		struct emu_emap_leaf *l = m->leaf[i];
		uint8_t tmp[NODE_HDR + EMU_EMAP_LEAF * LEAF_ENT];
		memset(tmp, 0, sizeof(tmp));
		for (uint32_t k = 0; k < l->n; k++) {
			uint8_t *e = tmp + NODE_HDR + k * LEAF_ENT;
			put64(e, l->e[k].lblk);
			put64(e + 8, l->e[k].pblk);
			put64(e + 16, l->e[k].len);
			put64(e + 24, l->e[k].txid);
		}
		uint32_t crc = emu_crc32c(l->n, tmp, sizeof(tmp));
		if (!l->node_pblk || crc != l->node_crc) {
			int64_t at = node_home(st, l->node_pblk);
			uint8_t *b = at < 0 ? NULL : commit_block(st, c, (uint64_t)at, EMU_IO_METADATA);
			if (!b) {
				rc = at < 0 ? (int)at : -ENOMEM;
				break;
			}
			memcpy(b, tmp, sizeof(tmp));
			node_seal(st, b, NODE_LEAF, o->oid, l->n);
			l->node_pblk = (uint64_t)at;
			l->node_crc = crc;
		}
		nodes[i] = l->node_pblk;
	}
	/* the index chain's content: size, then (first block, leaf node) */
	uint32_t icrc = emu_crc32c(0, &o->size, sizeof(o->size));
	for (size_t i = 0; !rc && i < nl; i++) {
		icrc = emu_crc32c(icrc, &m->leaf[i]->e[0].lblk, sizeof(uint64_t));
		icrc = emu_crc32c(icrc, &nodes[i], sizeof(uint64_t));
	}
	icrc ^= (uint32_t)nl;
	int changed = !o->nnodes || icrc != o->index_crc || nidx != o->nindex;
	uint64_t *chain = nodes + nl;
	const uint64_t *old_chain = o->nnodes ? o->nodes + o->nnodes - o->nindex : NULL;
	for (size_t k = 0; !rc && k < nidx; k++) {
		uint64_t old = k < o->nindex && old_chain ? old_chain[k] : 0;
		int64_t at = changed ? node_home(st, old) : (int64_t)old;
		if (at < 0)
			rc = (int)at;
		else
			chain[k] = (uint64_t)at;
	}
	for (size_t k = 0; !rc && changed && k < nidx; k++) {
		uint8_t *b = commit_block(st, c, chain[k], EMU_IO_METADATA);
		size_t from = k * per_index;
		size_t cnt = from < nl ? (nl - from < per_index ? nl - from : per_index) : 0;
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		put64(b + NODE_HDR, o->size);
		put64(b + NODE_HDR + 8, nl);
		put64(b + NODE_HDR + 16, k + 1 < nidx ? chain[k + 1] : 0);
		for (size_t i = 0; i < cnt; i++) {
			uint8_t *e = b + NODE_HDR + INDEX_HEAD + i * INDEX_ENT;
			put64(e, m->leaf[from + i]->e[0].lblk);
			put64(e + 8, m->leaf[from + i]->node_pblk);
		}
		node_seal(st, b, NODE_INDEX, o->oid, (uint32_t)cnt);
	}
	if (!rc)
		rc = free_unreferenced(c, o->nodes, o->nnodes, nodes, nl + nidx);
	if (rc) {
		free(nodes);
		return rc;
	}
	free(o->nodes);
	o->nodes = nodes;
	o->nnodes = nl + nidx;
	o->nindex = nidx;
	o->index_crc = icrc;
	o->dirty = 0;
	return 0;
}


/* Nodes no longer referenced: free at commit (copy-on-write, after the
 * checkpoint) or after the journal checkpoint (a logged copy could be
 * replayed over their next user). Under st->lock. */
static int free_nodes(struct emu_store *st, const uint64_t *nodes, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = st->cfg.journal != EMU_JOURNAL_OFF ? defer_free(st, nodes[i], 1)
							: emu_alloc_free(st->alloc, nodes[i], 1);
	return rc;
}


/* The object map: every object's (id, gen, first index node), sorted by
 * id, in nodes of OMAP_ENT-byte entries; only nodes whose content changed
 * are written. Under st->lock. */
struct omap_ent {
	uint64_t id, oid, gen, index;
};

static int cmp_omap(const void *a, const void *b)
{
	const struct omap_ent *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int commit_omap(struct emu_store *st, struct commit *c, uint64_t **out_nodes,
		       uint32_t **out_crc, size_t *out_n)
{
	size_t per = (st->bs - NODE_HDR) / OMAP_ENT, n = 0;
	struct omap_ent *v = malloc((st->nobj ? st->nobj : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < st->hcap; i++)
		for (struct obj *o = st->htab[i]; o; o = o->hnext)
			if (o->nnodes)
				v[n++] = (struct omap_ent){ o->id, o->oid, o->gen,
							    o->nodes[o->nnodes - o->nindex] };
	qsort(v, n, sizeof(*v), cmp_omap);
	size_t nn = n ? (n + per - 1) / per : 0;
	size_t root_cap = (st->bs - ROOT_HEAD) / 8;
	if (nn > root_cap) {
		free(v);
		return -ENOSPC; /* more objects than one root can list */
	}
	uint64_t *nodes = calloc(nn ? nn : 1, sizeof(*nodes));
	uint32_t *crcs = calloc(nn ? nn : 1, sizeof(*crcs));
	int rc = nodes && crcs ? 0 : -ENOMEM;
	for (size_t k = 0; !rc && k < nn; k++) {
		size_t from = k * per, cnt = n - from < per ? n - from : per;
		uint8_t tmp[65536];
		memset(tmp, 0, st->bs);
		for (size_t i = 0; i < cnt; i++) {
			uint8_t *e = tmp + NODE_HDR + i * OMAP_ENT;
			put64(e, v[from + i].id);
			put64(e + 8, v[from + i].oid);
			put64(e + 16, v[from + i].gen);
			put64(e + 24, v[from + i].index);
		}
		uint32_t crc = emu_crc32c((uint32_t)cnt, tmp, st->bs);
		uint64_t old = k < st->nomap ? st->omap_nodes[k] : 0;
		if (old && crc == st->omap_crc[k]) {
			nodes[k] = old;
			crcs[k] = crc;
			continue;
		}
		int64_t at = node_home(st, old);
		uint8_t *b = at < 0 ? NULL : commit_block(st, c, (uint64_t)at, EMU_IO_METADATA);
		if (!b) {
			rc = at < 0 ? (int)at : -ENOMEM;
			break;
		}
		memcpy(b, tmp, st->bs);
		node_seal(st, b, NODE_OMAP, st->uuid, (uint32_t)cnt);
		nodes[k] = (uint64_t)at;
		crcs[k] = crc;
	}
	if (!rc)
		rc = free_unreferenced(c, st->omap_nodes, st->nomap, nodes, nn);
	free(v);
	if (rc) {
		free(nodes);
		free(crcs);
		return rc;
	}
	*out_nodes = nodes;
	*out_crc = crcs;
	*out_n = nn;
	return 0;
}

/* The allocation bitmap blocks that differ from what this slot holds. */
static int commit_bitmap(struct emu_store *st, struct commit *c, int slot)
{
	size_t len = emu_alloc_serial_size(st->alloc);
	uint8_t *img = malloc(len);
	int rc = 0;
	if (!img)
		return -ENOMEM;
	emu_alloc_serialize(st->alloc, img, len, 1);
	const uint8_t *bits = img + 48;
	size_t nbytes = len - 48;
	for (uint64_t k = 0; !rc && k < st->bitmap_blocks; k++) {
		size_t from = (size_t)(k * st->bs);
		size_t cnt = from < nbytes ? (nbytes - from < st->bs ? nbytes - from : st->bs) : 0;
		uint32_t crc = emu_crc32c(0, bits + from, cnt) ^ 0x5a5a5a5au;
		if (crc == st->bitmap_crc[slot][k])
			continue;
		uint8_t *b = commit_block(st, c, st->bitmap_blk[slot] + k, EMU_IO_METADATA);
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		memcpy(b, bits + from, cnt);
		st->bitmap_crc[slot][k] = crc;
	}
	free(img);
	return rc;
}

static int cmp_mwrite(const void *a, const void *b)
{
	const struct mwrite *x = a, *y = b;
	return x->pblk < y->pblk ? -1 : x->pblk > y->pblk;
}

/* Write blocks in device order, joining runs of consecutive blocks into one
 * IO (as the block layer would merge them). */
static int write_runs(struct emu_store *st, struct emu_cx *cx, struct mwrite *w, size_t n)
{
	qsort(w, n, sizeof(*w), cmp_mwrite);
	uint8_t *b = bounce_buf();
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && w[j].pblk == w[j - 1].pblk + 1 && w[j].kind == w[i].kind &&
		       (j - i + 1) * st->bs <= BOUNCE_MAX)
			j++;
		for (size_t k = i; k < j; k++)
			memcpy(b + (k - i) * st->bs, w[k].buf, st->bs);
		int rc = dev_write(st, cx, b, (j - i) * st->bs, w[i].pblk * st->bs, w[i].kind, 0,
				   w[i].kind == EMU_IO_DATA);
		if (rc)
			return rc;
		i = j;
	}
	return 0;
}

/* Write every block waiting for its home, then let the journal forget
 * them; blocks freed since can then be reused. Under st->lock. */
static int journal_checkpoint(struct emu_store *st, struct emu_cx *cx)
{
	struct mwrite *w = malloc((st->npend ? st->npend : 1) * sizeof(*w));
	size_t n = 0;
	int rc = 0;
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; p; p = p->next)
			if (!p->is_data || p->logged)
				w[n++] = (struct mwrite){ p->pblk, p->buf,
							  p->is_data ? EMU_IO_DATA : EMU_IO_METADATA };
	st->jcx = cx;
	rc = write_runs(st, cx, w, n);
	if (!rc)
		rc = emu_journal_checkpoint(st->journal, UINT64_MAX);
	for (size_t i = 0; !rc && i < n; i++)
		pend_drop(st, w[i].pblk);
	free(w);
	for (size_t i = 0; !rc && i < st->deferred.n; i++)
		rc = emu_alloc_free(st->alloc, st->deferred.v[i], 1);
	if (!rc)
		st->deferred.n = 0;
	return rc;
}

/* Log blocks a transaction of n blocks needs: descriptors, blocks, commit. */
static uint64_t journal_cost(const struct emu_store *st, uint64_t n)
{
	uint64_t per_desc = (st->bs - EMU_J_DESC_OFF_TAGS) / 8;
	return n + (n + per_desc - 1) / per_desc + 1;
}

/*
 * Make room in the journal for this commit: nmeta metadata blocks plus,
 * with --journal=data, the transaction's data blocks. If they do not fit
 * the free log, checkpoint first; if the data cannot fit even an empty log
 * (many concurrent large writes between two commits), write it home
 * directly after that checkpoint, as ordered mode would: no older logged
 * copy of those blocks is left to be replayed over them. Under st->lock.
 */
static int fit_journal(struct emu_store *st, struct emu_cx *cx, size_t nmeta)
{
	uint64_t ndata = 0;
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; p; p = p->next)
			ndata += p->is_data && !p->logged;
	uint64_t need = journal_cost(st, ndata + nmeta);
	if (need <= emu_journal_free_blocks(st->journal))
		return 0;
	int rc = journal_checkpoint(st, cx);
	if (rc || need <= emu_journal_free_blocks(st->journal))
		return rc;
	struct mwrite *w = malloc((ndata ? ndata : 1) * sizeof(*w));
	size_t n = 0;
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; p; p = p->next)
			if (p->is_data && !p->logged)
				w[n++] = (struct mwrite){ p->pblk, p->buf, EMU_IO_DATA };
	rc = write_runs(st, cx, w, n);
	for (size_t i = 0; !rc && i < n; i++)
		pend_drop(st, w[i].pblk);
	free(w);
	if (!rc && journal_cost(st, nmeta) > emu_journal_free_blocks(st->journal))
		rc = -EFBIG; /* the metadata alone does not fit the journal */
	return rc;
}

static void seal_root(struct emu_store *st, uint8_t *b, const uint64_t *omap, size_t nomap,
		      int bitmap_slot)
{
	put64(b + NODE_HDR, emu_alloc_txid(st->alloc));
	put64(b + NODE_HDR + 8, st->nobj);
	put32(b + NODE_HDR + 16, (uint32_t)st->cfg.cow);
	put32(b + NODE_HDR + 20, (uint32_t)st->cfg.journal);
	put32(b + NODE_HDR + 24, (uint32_t)bitmap_slot);
	put32(b + NODE_HDR + 28, ROOT_OMAP_V2);
	for (size_t i = 0; i < nomap; i++)
		put64(b + ROOT_HEAD + i * 8, omap[i]);
	node_seal(st, b, NODE_ROOT, st->uuid, (uint32_t)nomap);
}

static void commit_release(struct commit *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->w[i].buf);
	free(c->w);
	free(c->freed.v);
}

static int any_dirty(struct emu_store *st)
{
	if (st->omap_dirty || st->deferred.n)
		return 1;
	for (size_t i = 0; i < st->hcap; i++)
		for (struct obj *o = st->htab[i]; o; o = o->hnext)
			if (o->dirty)
				return 1;
	if (st->cfg.journal == EMU_JOURNAL_DATA)
		for (size_t i = 0; i < st->pend_cap; i++)
			for (struct pend *p = st->pend[i]; p; p = p->next)
				if (p->is_data && !p->logged)
					return 1;
	return 0;
}

/* The commit proper. Under st->lock with the gate closed. */
static int do_commit(struct emu_store *st, struct emu_cx *cx, int flush_anyway)
{
	struct commit c = { 0 };
	uint64_t *omap = NULL;
	uint32_t *omap_crc = NULL;
	size_t nomap = 0;
	int rc = 0;
	if (st->broken)
		return -EIO;
	if (!any_dirty(st))
		return flush_anyway ? dev_flush(st, cx) : 0;
	st->root_seq++;
	for (size_t i = 0; !rc && i < st->hcap; i++)
		for (struct obj *o = st->htab[i]; !rc && o; o = o->hnext)
			if (o->dirty && !o->damaged)
				rc = commit_obj(st, &c, o);
	if (!rc)
		rc = commit_omap(st, &c, &omap, &omap_crc, &nomap);
	/* nodes that are no longer referenced */
	for (size_t i = 0; !rc && i < c.freed.n; i++)
		rc = st->cfg.journal != EMU_JOURNAL_OFF ? defer_free(st, c.freed.v[i], 1)
							: emu_alloc_free(st->alloc, c.freed.v[i], 1);
	int slot = cow_meta(st) ? 1 - st->root_slot : 0;
	if (!rc)
		rc = commit_bitmap(st, &c, slot);
	uint8_t *root = rc ? NULL : commit_block(st, &c, 1 + (uint64_t)slot, EMU_IO_CHECKPOINT);
	if (!rc && !root)
		rc = -ENOMEM;
	if (rc)
		goto fail;
	seal_root(st, root, omap, nomap, slot);

	if (st->cfg.journal != EMU_JOURNAL_OFF) {
		/* JBD2: log the blocks (data first with data=journal), commit
		 * record after a flush, home writes at the checkpoint */
		st->jcx = cx;
		rc = fit_journal(st, cx, c.n);
		for (size_t i = 0; !rc && i < st->pend_cap; i++)
			for (struct pend *p = st->pend[i]; !rc && p; p = p->next)
				if (p->is_data && !p->logged) {
					rc = emu_journal_log(st->journal, p->pblk | TAG_DATA, p->buf);
					p->logged = 1;
				}
		for (size_t i = 0; !rc && i < c.n; i++)
			rc = emu_journal_log(st->journal, c.w[i].pblk, c.w[i].buf);
		uint64_t seq;
		if (!rc)
			rc = emu_journal_commit(st->journal, &seq);
		if (rc == -ENOSPC) {
			rc = journal_checkpoint(st, cx);
			if (!rc)
				rc = emu_journal_commit(st->journal, &seq);
		}
		for (size_t i = 0; !rc && i < c.n; i++)
			rc = pend_put(st, c.w[i].pblk, c.w[i].buf, 0);
		if (!rc && emu_journal_free_blocks(st->journal) < st->journal_blocks / 2)
			rc = journal_checkpoint(st, cx);
	} else if (cow_meta(st)) {
		/* APFS-like: new nodes, flush, then the checkpoint with FUA */
		rc = write_runs(st, cx, c.w, c.n - 1);
		if (!rc)
			rc = dev_flush(st, cx);
		if (!rc)
			rc = dev_write(st, cx, root, st->bs, (1 + (uint64_t)slot) * st->bs,
				       EMU_IO_CHECKPOINT, EMU_IO_FUA, 0);
	} else {
		/* no protection: everything home in place, then a flush */
		rc = write_runs(st, cx, c.w, c.n);
		if (!rc)
			rc = dev_flush(st, cx);
	}
	if (rc)
		goto fail;
	emu_alloc_commit(st->alloc);
	emu_refs_free(&st->unshared);
	free(st->omap_nodes);
	free(st->omap_crc);
	st->omap_nodes = omap;
	st->omap_crc = omap_crc;
	st->nomap = nomap;
	st->omap_dirty = 0;
	st->dirty_bytes = 0;
	st->root_slot = slot;
	commit_release(&c);
	return 0;
fail:
	/* the in-memory state no longer matches any durable state */
	st->broken = 1;
	free(omap);
	free(omap_crc);
	commit_release(&c);
	return rc;
}

static int commit_gated(struct emu_store *st, struct emu_cx *cx, int flush_anyway)
{
	struct emu_cx bg = { 0 };
	if (!cx)
		cx = &bg;
	pthread_mutex_lock(&st->gate_lock);
	while (st->committing)
		pthread_cond_wait(&st->gate_cv, &st->gate_lock);
	st->committing = 1;
	while (st->inflight)
		pthread_cond_wait(&st->gate_cv, &st->gate_lock);
	pthread_mutex_unlock(&st->gate_lock);

	pthread_mutex_lock(&st->lock);
	int rc = do_commit(st, cx, flush_anyway);
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_lock(&st->acct_lock);
	st->acct.commits++;
	pthread_mutex_unlock(&st->acct_lock);

	pthread_mutex_lock(&st->gate_lock);
	st->committing = 0;
	pthread_cond_broadcast(&st->gate_cv);
	pthread_mutex_unlock(&st->gate_lock);
	return rc;
}

int emu_store_commit(struct emu_store *st, struct emu_cx *cx)
{
	return commit_gated(st, cx, 0);
}

int emu_store_fsync(struct emu_store *st, struct emu_cx *cx, uint64_t id)
{
	(void)id; /* a commit covers every object, as a JBD2 or APFS transaction does */
	pthread_mutex_lock(&st->acct_lock);
	st->acct.fsyncs++;
	pthread_mutex_unlock(&st->acct_lock);
	if (st->cfg.fsync_commit)
		return commit_gated(st, cx, 1);
	return dev_flush(st, cx);
}

/* ---- the commit-interval thread ---- */

static void *timer_main(void *arg)
{
	struct emu_store *st = arg;
	pthread_mutex_lock(&st->gate_lock);
	while (!st->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ms = st->cfg.commit_interval_ms;
		ts.tv_sec += (time_t)(ms / 1000);
		ts.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&st->timer_cv, &st->gate_lock, &ts);
		if (st->stop)
			break;
		pthread_mutex_unlock(&st->gate_lock);
		emu_store_commit(st, NULL);
		pthread_mutex_lock(&st->gate_lock);
	}
	pthread_mutex_unlock(&st->gate_lock);
	return NULL;
}

int emu_store_start(struct emu_store *st)
{
	if (st->timer_running || st->cfg.commit_interval_ms == UINT64_MAX)
		return 0;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&st->timer_cv);
	pthread_cond_init(&st->timer_cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&st->timer, NULL, timer_main, st);
	if (rc)
		return -rc;
	st->timer_running = 1;
	return 0;
}

/* ---- walking ---- */

int emu_store_foreach_obj(struct emu_store *st,
			  int (*fn)(void *ctx, uint64_t obj, uint64_t gen, uint64_t size),
			  void *ctx)
{
	pthread_mutex_lock(&st->lock);
	size_t n = 0;
	struct omap_ent *v = malloc((st->nobj ? st->nobj : 1) * sizeof(*v));
	if (v)
		for (size_t i = 0; i < st->hcap; i++)
			for (struct obj *o = st->htab[i]; o; o = o->hnext)
				v[n++] = (struct omap_ent){ o->id, o->oid, o->gen, o->size };
	pthread_mutex_unlock(&st->lock);
	if (!v)
		return -ENOMEM;
	qsort(v, n, sizeof(*v), cmp_omap);
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = fn(ctx, v[i].id, v[i].gen, v[i].index);
	free(v);
	return rc;
}

uint64_t emu_store_uuid(const struct emu_store *st)
{
	return st->uuid;
}

static int cmp_ident_key(const void *a, const void *b)
{
	uint64_t x = ((const struct emu_obj_ident *)a)->key;
	uint64_t y = ((const struct emu_obj_ident *)b)->key;
	return x < y ? -1 : x > y;
}

static int cmp_ident_oid(const void *a, const void *b)
{
	uint64_t x = ((const struct emu_obj_ident *)a)->oid;
	uint64_t y = ((const struct emu_obj_ident *)b)->oid;
	return x < y ? -1 : x > y;
}

int emu_store_list(struct emu_store *st, struct emu_obj_ident **out, size_t *n)
{
	pthread_mutex_lock(&st->lock);
	size_t k = 0;
	struct emu_obj_ident *v = malloc((st->nobj ? st->nobj : 1) * sizeof(*v));
	if (v)
		for (size_t i = 0; i < st->hcap; i++)
			for (struct obj *o = st->htab[i]; o; o = o->hnext)
				v[k++] = (struct emu_obj_ident){ o->id, o->oid, o->gen, o->size };
	pthread_mutex_unlock(&st->lock);
	if (!v)
		return -ENOMEM;
	qsort(v, k, sizeof(*v), cmp_ident_key);
	*out = v;
	*n = k;
	return 0;
}

int emu_store_rebind(struct emu_store *st, struct emu_obj_ident *bind, size_t n,
		     uint64_t *changed)
{
	pthread_mutex_lock(&st->lock);
	size_t k = 0;
	struct obj **all = malloc((st->nobj ? st->nobj : 1) * sizeof(*all));
	uint64_t *keys = malloc((st->nobj ? st->nobj : 1) * sizeof(*keys));
	int rc = all && keys ? 0 : -ENOMEM;
	if (!rc) {
		for (size_t i = 0; i < st->hcap; i++)
			for (struct obj *o = st->htab[i]; o; o = o->hnext)
				all[k++] = o;
		qsort(bind, n, sizeof(*bind), cmp_ident_oid);
	}
	/* the new key of every object: its file's inode, or its orphan key */
	for (size_t i = 0; !rc && i < k; i++) {
		struct emu_obj_ident key = { .oid = all[i]->oid };
		const struct emu_obj_ident *b = n ? bsearch(&key, bind, n, sizeof(*bind),
							    cmp_ident_oid) : NULL;
		keys[i] = b ? b->key : all[i]->oid | EMU_ORPHAN_KEY;
		if (b && (b->key & EMU_ORPHAN_KEY))
			rc = -EINVAL;
	}
	/* all distinct, or nothing changes */
	uint64_t *sorted = rc ? NULL : malloc((k ? k : 1) * sizeof(*sorted));
	if (!rc && !sorted)
		rc = -ENOMEM;
	if (!rc) {
		memcpy(sorted, keys, k * sizeof(*keys));
		qsort(sorted, k, sizeof(*sorted), cmp_u64);
		for (size_t i = 1; i < k; i++)
			if (sorted[i] == sorted[i - 1])
				rc = -EEXIST;
	}
	uint64_t moved = 0;
	if (!rc) {
		memset(st->htab, 0, st->hcap * sizeof(*st->htab));
		for (size_t i = 0; i < k; i++) {
			struct obj *o = all[i];
			struct emu_obj_ident key = { .oid = o->oid };
			const struct emu_obj_ident *b = n ? bsearch(&key, bind, n, sizeof(*bind),
								    cmp_ident_oid) : NULL;
			if (o->id != keys[i])
				moved++;
			if (o->id != keys[i] || (b && b->gen && o->gen != b->gen))
				st->omap_dirty = 1;
			o->id = keys[i];
			if (b && b->gen)
				o->gen = b->gen; /* the file's birth time from now on */
			size_t s = hslot(st, o->id);
			o->hnext = st->htab[s];
			st->htab[s] = o;
		}
	}
	pthread_mutex_unlock(&st->lock);
	free(all);
	free(keys);
	free(sorted);
	if (changed)
		*changed = moved;
	return rc;
}

struct fiemap_buf {
	uint64_t (*v)[3];
	size_t n, cap;
	uint32_t bs;
};

static int fiemap_collect(void *arg, uint64_t lblk, uint64_t pblk, uint64_t len)
{
	struct fiemap_buf *f = arg;
	if (f->n == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 64;
		void *n = realloc(f->v, ncap * sizeof(*f->v));
		if (!n)
			return -ENOMEM;
		f->v = n;
		f->cap = ncap;
	}
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

void emu_store_get_acct(struct emu_store *st, struct emu_store_acct *out)
{
	pthread_mutex_lock(&st->acct_lock);
	*out = st->acct;
	out->streams_x1000 = st->acct.windows ? st->streams_sum * 1000 / st->acct.windows : 0;
	pthread_mutex_unlock(&st->acct_lock);
}

/* ---- superblock, format, open, recovery, close ---- */

#define SB_OFF_MAGIC 0
#define SB_OFF_VERSION 8
#define SB_OFF_BS 12
#define SB_OFF_NBLOCKS 16
#define SB_OFF_UUID 24
#define SB_OFF_BITMAP_A 32
#define SB_OFF_BITMAP_B 40
#define SB_OFF_BITMAP_N 48
#define SB_OFF_JOURNAL 56
#define SB_OFF_JOURNAL_N 64
#define SB_OFF_DATA 72
#define SB_OFF_CLEAN 80
#define SB_OFF_CRC_V1 84      /* version 1 ends here */
#define SB_OFF_BACKUP 88      /* block of the backup superblock, 0: none */
#define SB_OFF_CRC 96
#define SB_SIZE 100

/* The superblock image (with the given clean flag) in b. */
static void build_sb(const struct emu_store *st, uint8_t *b, int clean)
{
	memset(b, 0, st->bs);
	put64(b + SB_OFF_MAGIC, SB_MAGIC);
	put32(b + SB_OFF_VERSION, SB_VERSION);
	put32(b + SB_OFF_BS, st->bs);
	put64(b + SB_OFF_NBLOCKS, st->nblocks);
	put64(b + SB_OFF_UUID, st->uuid);
	put64(b + SB_OFF_BITMAP_A, st->bitmap_blk[0]);
	put64(b + SB_OFF_BITMAP_B, st->bitmap_blk[1]);
	put64(b + SB_OFF_BITMAP_N, st->bitmap_blocks);
	put64(b + SB_OFF_JOURNAL, st->journal_blk);
	put64(b + SB_OFF_JOURNAL_N, st->journal_blocks);
	put64(b + SB_OFF_DATA, st->data_blk);
	put32(b + SB_OFF_CLEAN, (uint32_t)clean);
	put64(b + SB_OFF_BACKUP, st->backup_blk);
	put32(b + SB_OFF_CRC, emu_crc32c(0, b, SB_OFF_CRC));
}

static int write_sb(struct emu_store *st, struct emu_cx *cx, int clean)
{
	uint8_t *b = bounce_buf();
	if (!b)
		return -ENOMEM;
	build_sb(st, b, clean);
	return dev_write(st, cx, b, st->bs, 0, EMU_IO_CHECKPOINT, EMU_IO_FUA, 0);
}

/*
 * The backup header at the end of the store: a copy of the superblock,
 * and (clean only) of the newest root after it. Open marks it in use (one
 * write), a clean close refreshes both (two writes); so a clean backup
 * always describes the store as the last clean close left it.
 */
static int write_backup(struct emu_store *st, struct emu_cx *cx, int clean)
{
	uint8_t *b = bounce_buf();
	if (!st->backup_blk)
		return 0;
	if (!b)
		return -ENOMEM;
	int rc = 0;
	if (clean) {
		rc = dev_read(st, cx, b, st->bs, (1 + (uint64_t)st->root_slot) * st->bs, 0);
		if (!rc)
			rc = dev_write(st, cx, b, st->bs, (st->backup_blk + 1) * st->bs,
				       EMU_IO_CHECKPOINT, EMU_IO_FUA, 0);
	}
	if (!rc) {
		build_sb(st, b, clean);
		rc = dev_write(st, cx, b, st->bs, st->backup_blk * st->bs, EMU_IO_CHECKPOINT,
			       EMU_IO_FUA, 0);
	}
	return rc;
}

/* Parse a superblock; 0 when it is a valid one (version 1 or 2). */
static int parse_sb(struct emu_store *st, const uint8_t *b, int *clean)
{
	uint32_t version = get32(b + SB_OFF_VERSION);
	size_t crc_at = version == 1 ? SB_OFF_CRC_V1 : SB_OFF_CRC;
	if (get64(b + SB_OFF_MAGIC) != SB_MAGIC || (version != 1 && version != SB_VERSION) ||
	    get32(b + crc_at) != emu_crc32c(0, b, crc_at))
		return -EINVAL;
	st->backup_blk = version == 1 ? 0 : get64(b + SB_OFF_BACKUP);
	st->bs = get32(b + SB_OFF_BS);
	st->nblocks = get64(b + SB_OFF_NBLOCKS);
	st->uuid = get64(b + SB_OFF_UUID);
	st->bitmap_blk[0] = get64(b + SB_OFF_BITMAP_A);
	st->bitmap_blk[1] = get64(b + SB_OFF_BITMAP_B);
	st->bitmap_blocks = get64(b + SB_OFF_BITMAP_N);
	st->journal_blk = get64(b + SB_OFF_JOURNAL);
	st->journal_blocks = get64(b + SB_OFF_JOURNAL_N);
	st->data_blk = get64(b + SB_OFF_DATA);
	*clean = (int)get32(b + SB_OFF_CLEAN);
	if (st->bs < 4096 || st->bs > 65536 || (st->bs & (st->bs - 1)) ||
	    st->data_blk >= st->nblocks || st->journal_blk + st->journal_blocks != st->data_blk ||
	    (st->backup_blk && (st->backup_blk != st->nblocks - 2 || st->backup_blk < st->data_blk)))
		return -EINVAL;
	return 0;
}

/* The backup superblock of a store of size bytes, if there is one:
 * at the second-last block, for every block size. 0 when found. */
static int find_backup(struct emu_store *st, struct emu_cx *cx, uint64_t size, int *clean)
{
	uint8_t *b = bounce_buf();
	if (!b)
		return -ENOMEM;
	for (uint64_t bs = 4096; bs <= 65536; bs *= 2) {
		uint64_t nb = size / bs;
		if (nb < 300)
			break;
		if (dev_read(st, cx, b, 4096, (nb - 2) * bs, 0))
			continue;
		struct emu_store tmp;
		memset(&tmp, 0, sizeof(tmp));
		if (parse_sb(&tmp, b, clean) || tmp.bs != bs || tmp.nblocks != nb ||
		    tmp.backup_blk != nb - 2)
			continue;
		parse_sb(st, b, clean);
		return 0;
	}
	return -ENOENT;
}

/* What the start of a device that is not a store holds, for the message. */
static void describe_foreign(struct emu_store *st, struct emu_cx *cx, uint64_t size,
			     char *what, size_t len)
{
	uint8_t *b = bounce_buf();
	uint64_t n = size < (1u << 20) ? size : 1u << 20;
	int zeros = b != NULL;
	for (uint64_t at = 0; zeros && at + 4096 <= n; at += 4096) {
		if (dev_read(st, cx, b, 4096, at, 0)) {
			zeros = 0;
			break;
		}
		for (size_t i = 0; i < 4096 && zeros; i++)
			zeros = b[i] == 0;
	}
	if (zeros) {
		snprintf(what, len, "all zeros in the first %llu KiB",
			 (unsigned long long)(n >> 10));
		return;
	}
	if (b && dev_read(st, cx, b, 4096, 0, 0) == 0 && get64(b + SB_OFF_MAGIC) == SB_MAGIC) {
		snprintf(what, len, "a damaged fsprism store header and no backup header");
		return;
	}
	const char *type = NULL, *pttype = NULL;
	blkid_probe pr = blkid_new_probe_from_filename(st->path);
	if (pr) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
		blkid_probe_enable_partitions(pr, 1);
		if (blkid_do_safeprobe(pr) == 0) {
			blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
			blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
		}
	}
	if (type)
		snprintf(what, len, "%s signature", type);
	else if (pttype)
		snprintf(what, len, "%s partition table", pttype);
	else
		snprintf(what, len, "data of an unknown kind");
	if (pr)
		blkid_free_probe(pr);
}

int emu_store_probe(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	uint8_t b[SB_SIZE];
	ssize_t n = pread(fd, b, sizeof(b), 0);
	int err = n < 0 ? -errno : 0;
	struct emu_store tmp;
	int clean, valid = 0;
	memset(&tmp, 0, sizeof(tmp));
	if (!err && (size_t)n == sizeof(b))
		valid = parse_sb(&tmp, b, &clean) == 0;
	/* the backup header (without O_DIRECT: a small buffered read) */
	struct stat sb;
	uint64_t size = 0;
	if (!err && !valid && fstat(fd, &sb) == 0)
		size = S_ISBLK(sb.st_mode) ? (ioctl(fd, BLKGETSIZE64, &size) ? 0 : size)
					   : (uint64_t)sb.st_size;
	for (uint64_t bs = 4096; !err && !valid && bs <= 65536 && size / bs >= 300; bs *= 2) {
		uint64_t nb = size / bs;
		memset(&tmp, 0, sizeof(tmp));
		if (pread(fd, b, sizeof(b), (off_t)((nb - 2) * bs)) == (ssize_t)sizeof(b) &&
		    parse_sb(&tmp, b, &clean) == 0 && tmp.bs == bs && tmp.nblocks == nb &&
		    tmp.backup_blk == nb - 2)
			valid = 2;
	}
	close(fd);
	return err ? err : valid;
}

static int layout(struct emu_store *st, uint64_t size, char *err, size_t errlen)
{
	uint32_t bs = st->cfg.block_size ? st->cfg.block_size : 4096;
	if (bs < 4096 || bs > 65536 || (bs & (bs - 1))) {
		snprintf(err, errlen, "block size %u: must be a power of two from 4096 to 65536", bs);
		return -EINVAL;
	}
	st->bs = bs;
	st->nblocks = size / bs;
	st->bitmap_blocks = ((st->nblocks + 7) / 8 + bs - 1) / bs;
	uint64_t jbytes = st->cfg.journal_bytes;
	if (!jbytes) {
		jbytes = size / 32;
		if (jbytes < (1u << 20))
			jbytes = 1u << 20;
		if (jbytes > (128u << 20))
			jbytes = 128u << 20;
	}
	st->journal_blocks = jbytes / bs;
	st->bitmap_blk[0] = 3;
	st->bitmap_blk[1] = 3 + st->bitmap_blocks;
	st->journal_blk = 3 + 2 * st->bitmap_blocks;
	st->data_blk = st->journal_blk + st->journal_blocks;
	st->backup_blk = st->nblocks - 2;
	if (st->journal_blocks < 16 || st->data_blk + 256 + 2 > st->nblocks) {
		snprintf(err, errlen,
			 "store of %llu bytes is too small for a %llu-byte journal and 256 data blocks",
			 (unsigned long long)size, (unsigned long long)jbytes);
		return -ENOSPC;
	}
	return 0;
}

static struct emu_journal_cfg journal_cfg(const struct emu_store *st)
{
	struct emu_journal_cfg jc = {
		.base = st->journal_blk * st->bs,
		.nblocks = st->journal_blocks,
		.block_size = st->bs,
		.commit_fua = 1,
	};
	return jc;
}

static int alloc_new(struct emu_store *st)
{
	st->alloc = emu_alloc_new(st->nblocks, st->bs, st->cfg.alloc);
	if (!st->alloc)
		return -ENOMEM;
	int rc = emu_alloc_reserve(st->alloc, 0, st->data_blk);
	if (!rc && st->backup_blk)
		rc = emu_alloc_reserve(st->alloc, st->backup_blk, 2);
	for (int s = 0; !rc && s < 2; s++) {
		st->bitmap_crc[s] = calloc(st->bitmap_blocks, sizeof(uint32_t));
		if (!st->bitmap_crc[s])
			rc = -ENOMEM;
	}
	return rc;
}

static int format(struct emu_store *st, struct emu_cx *cx, uint64_t size, char *err,
		  size_t errlen)
{
	int rc = layout(st, size, err, errlen);
	if (rc)
		return rc;
	if (getrandom(&st->uuid, sizeof(st->uuid), 0) != sizeof(st->uuid))
		st->uuid = fsp_now_ns() ^ (uint64_t)getpid() << 32;
	rc = alloc_new(st);
	/* invalidate both root slots, then one empty root in slot A */
	uint8_t *z = rc ? NULL : bounce_buf();
	if (!rc && !z)
		rc = -ENOMEM;
	if (!rc) {
		memset(z, 0, 2 * st->bs);
		rc = dev_write(st, cx, z, 2 * st->bs, st->bs, EMU_IO_CHECKPOINT, 0, 0);
	}
	if (!rc) {
		struct emu_journal_cfg jc = journal_cfg(st);
		st->jcx = cx;
		rc = emu_journal_format(&st->jio, &jc, &st->journal);
	}
	if (!rc) {
		st->root_slot = 1; /* so that the first commit fills slot A */
		st->omap_dirty = 1;
		rc = do_commit(st, cx, 1);
		if (!rc && st->cfg.journal != EMU_JOURNAL_OFF)
			rc = journal_checkpoint(st, cx);
	}
	if (!rc)
		rc = write_sb(st, cx, 1);
	if (rc && !*err)
		snprintf(err, errlen, "cannot format: %s", strerror(-rc));
	return rc;
}

/* Journal replay: each logged block goes home. */
static int replay_apply(void *ctx, uint64_t seq, uint64_t tag, const void *block)
{
	struct emu_store *st = ctx;
	(void)seq;
	uint64_t pblk = tag & ~TAG_DATA;
	if (pblk >= st->nblocks)
		return -EUCLEAN;
	return dev_write(st, st->jcx, block, st->bs, pblk * st->bs,
			 (tag & TAG_DATA) ? EMU_IO_DATA : EMU_IO_METADATA, 0, 0);
}

/* Read one node; 0 if it is sound. */
static int read_node(struct emu_store *st, struct emu_cx *cx, uint8_t *b, uint64_t pblk,
		     uint32_t magic, uint64_t obj)
{
	if (pblk < st->data_blk && magic != NODE_ROOT)
		return -EUCLEAN;
	if (pblk >= st->nblocks)
		return -EUCLEAN;
	int rc = dev_read(st, cx, b, st->bs, pblk * st->bs, 0);
	return rc ? rc : node_check(st, b, magic, obj);
}

struct loaded_ext {
	uint64_t pblk, len;
};

struct load {
	struct u64s nodes; /* every metadata block the root reaches */
	struct loaded_ext *ext;
	size_t next, ext_cap;
};

static int load_push_ext(struct load *L, uint64_t pblk, uint64_t len)
{
	if (L->next == L->ext_cap) {
		size_t ncap = L->ext_cap ? L->ext_cap * 2 : 1024;
		struct loaded_ext *n = realloc(L->ext, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		L->ext = n;
		L->ext_cap = ncap;
	}
	L->ext[L->next++] = (struct loaded_ext){ pblk, len };
	return 0;
}

/* Load one object from its index chain. A bad node marks it damaged. */
static int load_obj(struct emu_store *st, struct emu_cx *cx, struct load *L, struct obj *o,
		    uint64_t index, uint8_t *b, uint8_t *lb)
{
	size_t per_index = (st->bs - NODE_HDR - INDEX_HEAD) / INDEX_ENT;
	struct u64s leaves = { 0 }, chain = { 0 };
	int rc = 0;
	for (uint64_t at = index, hops = 0; at && !rc; hops++) {
		if (hops > st->nblocks || read_node(st, cx, b, at, NODE_INDEX, o->oid)) {
			o->damaged = 1;
			break;
		}
		if ((rc = u64s_push(&L->nodes, at)) || (rc = u64s_push(&chain, at)))
			break;
		o->size = get64(b + NODE_HDR);
		uint32_t cnt = get32(b + 24);
		if (cnt > per_index) {
			o->damaged = 1;
			break;
		}
		for (uint32_t i = 0; !rc && i < cnt && !o->damaged; i++) {
			uint64_t leaf = get64(b + NODE_HDR + INDEX_HEAD + i * INDEX_ENT + 8);
			if (read_node(st, cx, lb, leaf, NODE_LEAF, o->oid)) {
				o->damaged = 1;
				break;
			}
			rc = u64s_push(&L->nodes, leaf);
			if (!rc)
				rc = u64s_push(&leaves, leaf);
			uint32_t ne = get32(lb + 24);
			if (ne > EMU_EMAP_LEAF) {
				o->damaged = 1;
				break;
			}
			for (uint32_t k = 0; !rc && k < ne; k++) {
				const uint8_t *e = lb + NODE_HDR + k * LEAF_ENT;
				uint64_t lblk = get64(e), pblk = get64(e + 8);
				uint64_t len = get64(e + 16), txid = get64(e + 24);
				if (!len || pblk < st->data_blk || pblk + len > st->nblocks ||
				    pblk + len < pblk) {
					o->damaged = 1;
					break;
				}
				/* every durable block answers "move": txid 0 */
				rc = emu_emap_insert(&o->map, lblk, pblk, len, txid & UNWRITTEN, 1,
						     NULL, NULL);
				if (!rc)
					rc = load_push_ext(L, pblk, len);
			}
		}
		at = get64(b + NODE_HDR + 16);
	}
	/* the chain as it is on the device: freed when the object next changes */
	/* o->nodes: the leaves, then the index chain */
	for (size_t i = 0; !rc && i < chain.n; i++)
		rc = u64s_push(&leaves, chain.v[i]);
	if (!rc && !o->damaged) {
		o->nodes = leaves.v;
		o->nnodes = leaves.n;
		o->nindex = chain.n;
		leaves.v = NULL;
	}
	free(leaves.v);
	free(chain.v);
	return rc;
}

static int cmp_ext(const void *a, const void *b)
{
	const struct loaded_ext *x = a, *y = b;
	return x->pblk < y->pblk ? -1 : x->pblk > y->pblk;
}

/* Rebuild allocation and reference counts from what the maps reference:
 * the maps are authoritative, the stored bitmap is only checked. */
static int rebuild_alloc(struct emu_store *st, struct load *L)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < L->nodes.n; i++)
		if (emu_alloc_state(st->alloc, L->nodes.v[i]) == 0)
			rc = emu_alloc_reserve(st->alloc, L->nodes.v[i], 1);
	if (L->next)
		qsort(L->ext, L->next, sizeof(*L->ext), cmp_ext);
	for (size_t i = 0; !rc && i < L->next; i++) {
		uint64_t b = L->ext[i].pblk, end = b + L->ext[i].len;
		while (!rc && b < end) {
			int used = emu_alloc_state(st->alloc, b) != 0;
			uint64_t r = b + 1;
			while (r < end && (emu_alloc_state(st->alloc, r) != 0) == used)
				r++;
			rc = used ? emu_refs_inc(&st->refs, b, r - b)
				  : emu_alloc_reserve(st->alloc, b, r - b);
			b = r;
		}
	}
	return rc;
}

/* Compare the stored bitmap of the root's slot with the rebuilt one; fill
 * both slots' checksum caches with what is on the device. */
static int check_bitmaps(struct emu_store *st, struct emu_cx *cx, int slot,
			 struct emu_store_info *info)
{
	size_t len = emu_alloc_serial_size(st->alloc);
	uint8_t *img = malloc(len), *b = bounce_buf();
	int rc = img && b ? 0 : -ENOMEM;
	if (!rc)
		emu_alloc_serialize(st->alloc, img, len, 1);
	size_t nbytes = len - 48;
	for (int s = 0; !rc && s < 2; s++)
		for (uint64_t k = 0; !rc && k < st->bitmap_blocks; k++) {
			rc = dev_read(st, cx, b, st->bs, (st->bitmap_blk[s] + k) * st->bs, 0);
			size_t from = (size_t)(k * st->bs);
			size_t cnt = from < nbytes ? (nbytes - from < st->bs ? nbytes - from : st->bs) : 0;
			if (rc)
				break;
			st->bitmap_crc[s][k] = emu_crc32c(0, b, cnt) ^ 0x5a5a5a5au;
			/* a block the maps use but the bitmap calls free is
			 * damage; the reverse is normal (frees deferred to a
			 * journal checkpoint after the last bitmap write) */
			for (size_t q = 0; s == slot && q < cnt; q++)
				info->bitmap_mismatches +=
					(unsigned)__builtin_popcount(img[48 + from + q] & ~b[q] & 0xffu);
		}
	free(img);
	return rc;
}

static int mount_store(struct emu_store *st, struct emu_cx *cx, struct emu_store_info *info,
		       char *err, size_t errlen)
{
	int rc = alloc_new(st);
	if (rc)
		return rc;
	/* the journal first: its transactions are newer than any home block */
	struct emu_journal_cfg jc = journal_cfg(st);
	st->jcx = cx;
	rc = emu_journal_open(&st->jio, &jc, &st->journal);
	if (rc && info->header_recovered) {
		/* the store was closed cleanly, so its journal held nothing
		 * to replay: a new one loses nothing */
		rc = emu_journal_format(&st->jio, &jc, &st->journal);
		info->journal_reformatted = !rc;
	}
	if (rc) {
		snprintf(err, errlen, "journal superblock unreadable (%s)", strerror(-rc));
		return rc;
	}
	rc = emu_journal_replay(st->journal, replay_apply, st, 1, &info->replay);
	if (rc) {
		snprintf(err, errlen, "journal replay failed (%s)", strerror(rc < 0 ? -rc : rc));
		return rc < 0 ? rc : -EIO;
	}
	info->replayed = info->replay.txns_replayed > 0 || info->replay.txns_discarded > 0;
	/* the newest sound root */
	uint8_t *b, *lb;
	if (posix_memalign((void **)&b, 4096, st->bs) || posix_memalign((void **)&lb, 4096, st->bs))
		return -ENOMEM;
	int best = -1;
	uint64_t best_seq = 0;
	for (int s = 0; s < 2; s++) {
		if (read_node(st, cx, b, 1 + (uint64_t)s, NODE_ROOT, st->uuid))
			continue;
		uint64_t seq = get64(b + 16);
		if (best < 0 || seq > best_seq) {
			best = s;
			best_seq = seq;
		}
	}
	if (best < 0 && info->header_recovered &&
	    read_node(st, cx, b, st->backup_blk + 1, NODE_ROOT, st->uuid) == 0 &&
	    dev_write(st, cx, b, st->bs, st->bs, EMU_IO_CHECKPOINT, 0, 0) == 0 &&
	    read_node(st, cx, b, 1, NODE_ROOT, st->uuid) == 0) {
		/* both slots lost: the root of the last clean close goes to slot A */
		best = 0;
		best_seq = get64(b + 16);
		info->root_recovered = 1;
	}
	if (best < 0) {
		snprintf(err, errlen, "no valid root in either slot: the store is damaged "
			 "(use --format to start again)");
		free(b);
		free(lb);
		return -EUCLEAN;
	}
	read_node(st, cx, b, 1 + (uint64_t)best, NODE_ROOT, st->uuid);
	st->root_seq = best_seq;
	st->root_slot = best;
	int bitmap_slot = (int)get32(b + NODE_HDR + 24) & 1;
	/* a root written before objects had ids of their own: the key is the id */
	int omap_v2 = get32(b + NODE_HDR + 28) == ROOT_OMAP_V2;
	size_t ent = omap_v2 ? OMAP_ENT : OMAP_ENT_V1;
	uint32_t nomap = get32(b + 24);
	if (nomap > (st->bs - ROOT_HEAD) / 8) {
		free(b);
		free(lb);
		snprintf(err, errlen, "root lists %u object-map nodes: damaged", nomap);
		return -EUCLEAN;
	}
	uint64_t *omap = calloc(nomap ? nomap : 1, 8);
	uint32_t *omap_crc = calloc(nomap ? nomap : 1, 4);
	struct load L = { 0 };
	rc = omap && omap_crc ? 0 : -ENOMEM;
	for (uint32_t i = 0; i < nomap; i++)
		omap[i] = get64(b + ROOT_HEAD + i * 8);
	size_t per = (st->bs - NODE_HDR) / ent;
	for (uint32_t k = 0; !rc && k < nomap; k++) {
		uint8_t *ob = b; /* the root is no longer needed */
		if (read_node(st, cx, ob, omap[k], NODE_OMAP, st->uuid)) {
			info->damaged_objects++; /* a whole object-map node: its objects */
			continue;
		}
		rc = u64s_push(&L.nodes, omap[k]);
		uint32_t cnt = get32(ob + 24);
		if (cnt > per) {
			info->damaged_objects++;
			continue;
		}
		omap_crc[k] = emu_crc32c(cnt, ob, st->bs); /* refreshed at the first commit */
		uint8_t ib[65536] __attribute__((aligned(4096)));
		for (uint32_t i = 0; !rc && i < cnt; i++) {
			const uint8_t *e = ob + NODE_HDR + i * ent;
			uint64_t key = get64(e), oid = omap_v2 ? get64(e + 8) : key;
			uint64_t gen = get64(e + ent - 16), index = get64(e + ent - 8);
			if (obj_find(st, key)) {
				info->damaged_objects++; /* listed twice: keep the first */
				continue;
			}
			struct obj *o = obj_new(st, key, gen);
			if (!o) {
				rc = -ENOMEM;
				break;
			}
			o->oid = oid;
			o->dirty = 0;
			rc = load_obj(st, cx, &L, o, index, ib, lb);
			if (o->damaged)
				info->damaged_objects++;
		}
	}
	free(b);
	free(lb);
	st->omap_nodes = omap;
	st->omap_crc = omap_crc;
	st->nomap = nomap;
	st->omap_dirty = 1; /* object-map checksums above are of whole nodes */
	if (!rc)
		rc = rebuild_alloc(st, &L);
	if (!rc)
		rc = check_bitmaps(st, cx, bitmap_slot, info);
	/* a store formatted without a backup header gets one when its last
	 * two blocks are free */
	if (!rc && !st->backup_blk && st->nblocks - 2 >= st->data_blk &&
	    emu_alloc_state(st->alloc, st->nblocks - 2) == 0 &&
	    emu_alloc_state(st->alloc, st->nblocks - 1) == 0 &&
	    emu_alloc_reserve(st->alloc, st->nblocks - 2, 2) == 0)
		st->backup_blk = st->nblocks - 2;
	free(L.nodes.v);
	free(L.ext);
	if (rc && !*err)
		snprintf(err, errlen, "cannot load the store's metadata (%s)", strerror(-rc));
	return rc;
}

static void store_free(struct emu_store *st)
{
	for (size_t i = 0; i < st->hcap; i++)
		for (struct obj *o = st->htab[i], *next; o; o = next) {
			next = o->hnext;
			obj_destroy(o);
		}
	free(st->htab);
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i], *next; p; p = next) {
			next = p->next;
			free(p->buf);
			free(p);
		}
	free(st->pend);
	free(st->deferred.v);
	free(st->omap_nodes);
	free(st->omap_crc);
	free(st->bitmap_crc[0]);
	free(st->bitmap_crc[1]);
	if (st->journal)
		emu_journal_close(st->journal);
	if (st->alloc)
		emu_alloc_destroy(st->alloc);
	emu_refs_free(&st->refs);
	emu_refs_free(&st->unshared);
	if (st->fd >= 0)
		close(st->fd);
	pthread_mutex_destroy(&st->lock);
	pthread_mutex_destroy(&st->gate_lock);
	pthread_mutex_destroy(&st->acct_lock);
	pthread_cond_destroy(&st->gate_cv);
	pthread_cond_destroy(&st->timer_cv);
	free(st);
}

/* Open the store: O_DIRECT when the file system takes it. */
static int open_fds(struct emu_store *st, const char *path, uint64_t size_bytes,
		    uint64_t *size, int *fresh, char *err, size_t errlen)
{
	struct stat sb;
	int exists = stat(path, &sb) == 0;
	if (!exists) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "cannot create store %s: %s", path, strerror(errno));
			return -errno;
		}
		close(fd);
	} else if (!S_ISREG(sb.st_mode) && !S_ISBLK(sb.st_mode)) {
		snprintf(err, errlen, "store %s is neither a regular file nor a block device", path);
		return -EINVAL;
	}
	st->direct = 1;
	st->fd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT);
	if (st->fd < 0 && errno == EINVAL) {
		st->direct = 0; /* tmpfs and the like: no O_DIRECT */
		st->fd = open(path, O_RDWR | O_CLOEXEC);
	}
	if (st->fd < 0) {
		snprintf(err, errlen, "cannot open store %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(st->fd, &sb)) {
		snprintf(err, errlen, "cannot stat store %s: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISBLK(sb.st_mode)) {
		if (ioctl(st->fd, BLKGETSIZE64, size)) {
			snprintf(err, errlen, "cannot read the size of %s: %s", path, strerror(errno));
			return -errno;
		}
	} else {
		*size = (uint64_t)sb.st_size;
		if (*size == 0) {
			*fresh = 1; /* nothing to lose: formatted without --format */
			*size = size_bytes;
			if (fallocate(st->fd, 0, 0, (off_t)size_bytes) &&
			    ftruncate(st->fd, (off_t)size_bytes)) {
				snprintf(err, errlen, "cannot size store %s to %llu bytes: %s", path,
					 (unsigned long long)size_bytes, strerror(errno));
				return -errno;
			}
		}
	}
	return 0;
}

struct emu_store *emu_store_open(const char *path, uint64_t size_bytes,
				 const struct emu_store_cfg *cfg,
				 struct emu_store_info *info, char *err, size_t errlen)
{
	struct emu_store *st = calloc(1, sizeof(*st));
	struct emu_cx cx = { 0 };
	uint64_t size = 0;
	int rc;
	err[0] = 0;
	memset(info, 0, sizeof(*info));
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->cfg = *cfg;
	if (!st->cfg.commit_interval_ms)
		st->cfg.commit_interval_ms = 5000;
	if (!st->cfg.commit_bytes)
		st->cfg.commit_bytes = 64ull << 20;
	st->fd = -1;
	snprintf(st->path, sizeof(st->path), "%s", path);
	pthread_mutex_init(&st->lock, NULL);
	pthread_mutex_init(&st->gate_lock, NULL);
	pthread_mutex_init(&st->acct_lock, NULL);
	pthread_cond_init(&st->gate_cv, NULL);
	pthread_cond_init(&st->timer_cv, NULL);
	emu_refs_init(&st->refs);
	emu_refs_init(&st->unshared);
	st->jio = (struct emu_io){ jio_pwrite, jio_pread, jio_flush, st };
	if (htab_grow(st)) {
		rc = -ENOMEM;
		goto fail;
	}
	int fresh = 0;
	rc = open_fds(st, path, size_bytes, &size, &fresh, err, errlen);
	if (rc)
		goto fail;
	uint8_t *b = bounce_buf();
	int clean = 0;
	rc = b ? dev_read(st, &cx, b, 4096, 0, 0) : -ENOMEM;
	if (rc) {
		snprintf(err, errlen, "cannot read store %s: %s", path, strerror(-rc));
		goto fail;
	}
	{
		uint64_t seed = 0;
		if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
			seed = fsp_now_ns() ^ (uint64_t)getpid() << 32;
		st->oid_state = seed | 1; /* xorshift: never 0 */
	}
	if (!cfg->format && !fresh && parse_sb(st, b, &clean)) {
		/* not a store at its start: never formatted without --format.
		 * A backup header of a clean close gives the store back. */
		char what[160];
		int bclean = 0, found = find_backup(st, &cx, size, &bclean) == 0;
		if (found && bclean) {
			info->header_recovered = 1;
			clean = 1;
		} else if (found) {
			snprintf(err, errlen, "store %s: its header is damaged and the backup "
				 "header at its end is from a mount that did not end cleanly, so "
				 "it cannot be recovered safely; nothing was written (--format "
				 "starts a new store, destroying this one)", path);
			rc = -EUCLEAN;
			goto fail;
		} else {
			describe_foreign(st, &cx, size, what, sizeof(what));
			snprintf(err, errlen, "%s is not an fsprism store (found: %s); use "
				 "--format to create one", path, what);
			rc = -EINVAL;
			goto fail;
		}
	}
	if (cfg->format || (fresh && parse_sb(st, b, &clean))) {
		pthread_mutex_lock(&st->lock);
		rc = format(st, &cx, size, err, errlen);
		pthread_mutex_unlock(&st->lock);
		info->formatted = 1;
		clean = 1;
	} else {
		pthread_mutex_lock(&st->lock);
		rc = mount_store(st, &cx, info, err, errlen);
		pthread_mutex_unlock(&st->lock);
		if (!rc && info->header_recovered && info->damaged_objects) {
			/* more than the header was overwritten: its data (which has
			 * no checksums) cannot be trusted either */
			snprintf(err, errlen, "store %s: its header is damaged, and so is the "
				 "metadata of %llu object%s that its backup header leads to: "
				 "more of the store was overwritten (by another program?); "
				 "refusing to serve it (--format starts a new store, "
				 "destroying this one)", path,
				 (unsigned long long)info->damaged_objects,
				 info->damaged_objects == 1 ? "" : "s");
			rc = -EUCLEAN;
		}
	}
	if (rc)
		goto fail;
	info->clean = clean;
	/* from here until a clean close, a crash is detected at the next open */
	rc = write_sb(st, &cx, 0);
	if (!rc)
		rc = write_backup(st, &cx, 0);
	if (rc) {
		snprintf(err, errlen, "cannot write store superblock: %s", strerror(-rc));
		goto fail;
	}
	info->nblocks = st->nblocks;
	info->block_size = st->bs;
	info->data_blocks = st->nblocks - st->data_blk;
	info->objects = st->nobj;
	info->root_seq = st->root_seq;
	return st;
fail:
	if (!err[0])
		snprintf(err, errlen, "store %s: %s", path, strerror(rc < 0 ? -rc : EIO));
	store_free(st);
	return NULL;
}

int emu_store_close(struct emu_store *st, struct emu_store_acct *final)
{
	struct emu_cx cx = { 0 };
	if (st->timer_running) {
		pthread_mutex_lock(&st->gate_lock);
		st->stop = 1;
		pthread_cond_broadcast(&st->timer_cv);
		pthread_mutex_unlock(&st->gate_lock);
		pthread_join(st->timer, NULL);
	}
	int rc = commit_gated(st, &cx, 1);
	pthread_mutex_lock(&st->lock);
	if (!rc && st->cfg.journal != EMU_JOURNAL_OFF)
		rc = journal_checkpoint(st, &cx);
	else if (!rc && st->npend)
		rc = journal_checkpoint(st, &cx); /* blocks of an earlier journal mode */
	pthread_mutex_unlock(&st->lock);
	if (!rc)
		rc = dev_flush(st, &cx);
	if (!rc)
		rc = write_sb(st, &cx, 1);
	if (!rc)
		rc = write_backup(st, &cx, 1);
	if (final)
		emu_store_get_acct(st, final);
	store_free(st);
	return rc;
}

int emu_store_has_magic(const void *first_bytes, size_t len)
{
	/* the magic alone: a store with a damaged superblock is still data */
	return len >= 8 && get64(first_bytes) == SB_MAGIC;
}

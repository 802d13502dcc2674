/*
 * store_int.h - internal: shared by the store's files only (callers use
 * store.h). The store's state, its objects and pending blocks, the commit's
 * block list and the one small interface between the commit driver and the
 * three ways of making a commit durable.
 *
 * The store in files, in reading order (store.h has the model and the
 * layout, docs/emulation.md the on-disk formats):
 *   dev.c            device IO through one descriptor, timing and accounting
 *                    (counters, sequentiality, streams), the journal's emu_io
 *   objects.c        the object table: keys and ids, open/remove, orphans,
 *                    the walks and rebinding
 *   data.c           read/write/truncate/fallocate/clone/seek of an object's
 *                    data through its extent map, and releasing blocks
 *   meta.c           metadata nodes: encoding of leaves, index chains, the
 *                    object map, bitmaps and the root; sealing and checksums
 *   commit.c         the commit driver (the transaction, the IO gate, fsync)
 *                    and the commit-interval thread
 *   commit_journal.c the journaling modes: pending home writes, logging,
 *                    the checkpoint
 *   commit_cow.c     copy-on-write and the unprotected in-place mode
 *   format.c         mode words, the superblock and its backup, probe,
 *                    format, open, close
 *   recover.c        mounting an existing store: journal replay, the newest
 *                    root, loading the maps, rebuilding the allocation
 *
 * Locking: st->lock guards the store's state except the gate (gate_lock)
 * and the counters (acct_lock); each object's rw lock is held across its
 * data IO. Helpers say "under st->lock" where the caller holds it.
 */
#ifndef FSP_FS_EMU_STORE_INT_H
#define FSP_FS_EMU_STORE_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "src/base/grow.h"
#include "src/base/seqstream.h"
#include "fs/emu/alloc.h"
#include "fs/emu/extent.h"
#include "fs/emu/io.h"
#include "fs/emu/journal.h"
#include "fs/emu/store.h"

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

/* A growable array of block numbers. */
struct u64s {
	uint64_t *v;
	size_t n, cap;
};

static inline int u64s_push(struct u64s *a, uint64_t x)
{
	if (fsp_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v), 64))
		return -ENOMEM;
	a->v[a->n++] = x;
	return 0;
}

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
	const struct emu_commit_mode *mode; /* how a commit is made durable (commit.c) */

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
	struct fsp_seq seq;      /* sequentiality of the device IO */

	/* the commit-interval thread */
	pthread_t timer;
	int timer_running, stop;
	pthread_cond_t timer_cv;
};

/* What release_range (data.c) works with: the store, the txid of the
 * range being released, the first error. */
struct release_ctx {
	struct emu_store *st;
	uint64_t txid;
	int err;
};

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

/*
 * The commit modes. do_commit (commit.c) builds one transaction: the changed
 * nodes of every dirty object, the object map, the bitmap of the root's slot
 * and the root, in c->w[] with the root last; a mode makes it durable, the
 * way SQLite's pager hands a commit to its WAL or writes its rollback
 * journal. The mode is chosen once, at open (emu_commit_mode_of):
 *   journal (commit_journal.c)  --journal=writeback/ordered/data
 *   cow (commit_cow.c)          --cow=shared/always, no journal
 *   in place (commit_cow.c)     both off: no protection
 */
struct emu_commit_mode {
	/* 1: every changed node takes a new block and the root alternates
	 * between the two slots; 0: nodes keep their home, the root is slot A */
	int cow_meta;
	/* 1: blocks pass through the journal: a freed node waits for the
	 * journal checkpoint (a logged copy could be replayed over its next
	 * user), and format and close checkpoint the journal */
	int journaled;
	/* Make the transaction durable; root (= c->w[c->n - 1].buf) goes to
	 * root slot slot. Under st->lock with the gate closed. */
	int (*make_durable)(struct emu_store *st, struct emu_cx *cx, struct commit *c,
			    uint8_t *root, int slot);
};

extern const struct emu_commit_mode emu_commit_journal, emu_commit_cow, emu_commit_inplace;
const struct emu_commit_mode *emu_commit_mode_of(const struct emu_store_cfg *cfg);

/* dev.c: device IO and accounting */
extern __thread uint8_t *dev_bounce;
uint8_t *dev_bounce_alloc(void);
/* A per-thread block-aligned buffer of BOUNCE_MAX + one block. */
static inline uint8_t *bounce_buf(void)
{
	return dev_bounce ? dev_bounce : dev_bounce_alloc();
}
int dev_flush(struct emu_store *st, struct emu_cx *cx);
int dev_write(struct emu_store *st, struct emu_cx *cx, const void *buf, size_t len,
	      uint64_t off, int kind, unsigned flags, int user_data);
int dev_read(struct emu_store *st, struct emu_cx *cx, void *buf, size_t len,
	     uint64_t off, int user_data);
int read_pieces(struct emu_store *st, struct emu_cx *cx, const struct rpiece *p,
		size_t n, uint64_t first, uint8_t *dst);
struct emu_io dev_journal_io(struct emu_store *st);

/* objects.c: the object table (under st->lock) */
int htab_grow(struct emu_store *st);
struct obj *obj_new(struct emu_store *st, uint64_t id, uint64_t gen);
void obj_destroy(struct obj *o);

/* data.c */
void release_range(void *arg, uint64_t pblk, uint64_t len, uint64_t txid);

/* meta.c: metadata nodes (under st->lock) */
void node_seal(struct emu_store *st, uint8_t *b, uint32_t magic, uint64_t obj,
	       uint32_t count);
int node_check(const struct emu_store *st, uint8_t *b, uint32_t magic, uint64_t obj);
int commit_obj(struct emu_store *st, struct commit *c, struct obj *o);
int free_nodes(struct emu_store *st, const uint64_t *nodes, size_t n);
int commit_omap(struct emu_store *st, struct commit *c, uint64_t **out_nodes,
		uint32_t **out_crc, size_t *out_n);
int commit_bitmap(struct emu_store *st, struct commit *c, int slot);
void seal_root(struct emu_store *st, uint8_t *b, const uint64_t *omap, size_t nomap,
	       int bitmap_slot);

/* commit.c */
uint8_t *commit_block(struct emu_store *st, struct commit *c, uint64_t pblk, int kind);
int write_runs(struct emu_store *st, struct emu_cx *cx, struct mwrite *w, size_t n);
int do_commit(struct emu_store *st, struct emu_cx *cx, int flush_anyway);
int commit_gated(struct emu_store *st, struct emu_cx *cx, int flush_anyway);

/* commit_journal.c: pending home writes and the checkpoint (under st->lock) */
int pend_put(struct emu_store *st, uint64_t pblk, const void *buf, int is_data);
void pend_drop(struct emu_store *st, uint64_t pblk);
int defer_free(struct emu_store *st, uint64_t pblk, uint64_t len);
int journal_checkpoint(struct emu_store *st, struct emu_cx *cx);

/* format.c */
struct emu_journal_cfg journal_cfg(const struct emu_store *st);
int alloc_new(struct emu_store *st);

/* recover.c */
int mount_store(struct emu_store *st, struct emu_cx *cx, struct emu_store_info *info,
		char *err, size_t errlen);

/* ---- on every request's path: inline ---- */

/* the IO gate: a commit waits for IO in flight and holds new IO back */
static inline void gate_enter(struct emu_store *st)
{
	pthread_mutex_lock(&st->gate_lock);
	while (st->committing)
		pthread_cond_wait(&st->gate_cv, &st->gate_lock);
	st->inflight++;
	pthread_mutex_unlock(&st->gate_lock);
}

static inline void gate_leave(struct emu_store *st)
{
	pthread_mutex_lock(&st->gate_lock);
	if (--st->inflight == 0 && st->committing)
		pthread_cond_broadcast(&st->gate_cv);
	pthread_mutex_unlock(&st->gate_lock);
}

/* the object table (under st->lock) */
static inline size_t hslot(const struct emu_store *st, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (st->hcap - 1);
}

static inline struct obj *obj_find(struct emu_store *st, uint64_t id)
{
	for (struct obj *o = st->htab[hslot(st, id)]; o; o = o->hnext)
		if (o->id == id)
			return o;
	return NULL;
}

/* Take a reference (create when create is set); NULL if absent. */
static inline struct obj *obj_get(struct emu_store *st, uint64_t id, int create)
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

static inline void obj_put(struct emu_store *st, struct obj *o)
{
	pthread_mutex_lock(&st->lock);
	int gone = --o->refs == 0 && o->removed;
	pthread_mutex_unlock(&st->lock);
	if (gone)
		obj_destroy(o);
}

/* the pending home writes (under st->lock) */
static inline struct pend **pend_slot(struct emu_store *st, uint64_t pblk)
{
	if (!st->pend_cap)
		return NULL;
	struct pend **pp = &st->pend[(pblk * 0x9e3779b97f4a7c15ull >> 24) & (st->pend_cap - 1)];
	while (*pp && (*pp)->pblk != pblk)
		pp = &(*pp)->next;
	return pp;
}

static inline struct pend *pend_find(struct emu_store *st, uint64_t pblk)
{
	struct pend **pp = pend_slot(st, pblk);
	return pp ? *pp : NULL;
}

#endif

/*
 * block_ios.h - the block_ios table (docs/schema.md): one row per block
 * request that the block-layer trace (src/trace/) saw complete. Written
 * after the measured window, read by stats.
 */
#ifndef FSP_BLOCK_IOS_H
#define FSP_BLOCK_IOS_H

#include <stddef.h>
#include <stdint.h>
#include "src/db/store.h"

/* block_ios.op, as stored */
enum fsp_block_op {
	FSP_BLOCK_READ = 0,
	FSP_BLOCK_WRITE = 1,
	FSP_BLOCK_FLUSH = 2,
	FSP_BLOCK_DISCARD = 3,
	FSP_BLOCK_WRITE_ZEROES = 4,
	FSP_BLOCK_OTHER = 5,
};
const char *fsp_block_op_name(unsigned op);

/* block_ios.flags, as stored (the trace's FSP_BT_* bits) */
enum fsp_block_flag {
	FSP_BLOCK_F_SYNC = 1,
	FSP_BLOCK_F_META = 2,
	FSP_BLOCK_F_FUA = 4,
	FSP_BLOCK_F_PREFLUSH = 8,
	FSP_BLOCK_F_READAHEAD = 16,
};

/* One request. A zero queue_ns / insert_ns / tgid is stored as NULL. */
struct fsp_block_io {
	uint64_t queue_ns, insert_ns, issue_ns, complete_ns;
	uint64_t sector;
	uint32_t dev;   /* whole disk, kernel dev_t (major << 20 | minor) */
	uint32_t bytes;
	uint32_t tgid;
	uint32_t tid;   /* the thread that queued it (0: unknown, NULL) */
	uint16_t op;    /* enum fsp_block_op */
	uint16_t flags; /* 1 sync, 2 meta, 4 fua, 8 preflush, 16 readahead */
	int32_t error;
	int32_t step;   /* -1: outside every step's measured window (NULL) */
};

/* Insert n rows of run (call inside a transaction). 0, or -1 (printed). */
int fsp_block_ios_insert(struct fsp_store *st, int64_t run,
			 const struct fsp_block_io *rows, size_t n);

/* Does the database have block rows for run? 1, 0 (also for a version-2
 * database, which has no block_ios table), -1 on error. */
int fsp_block_ios_any(struct fsp_store *st, int64_t run);

/*
 * The durations of run's requests in one step and direction (reads:
 * FSP_BLOCK_READ, writes: FSP_BLOCK_WRITE): queue time (request made,
 * or else insert, to issue; requests with neither are left out of q) and
 * device time (issue to complete), and their bytes. Arrays malloc'd (free
 * them); counts in *nq and *nd. 0, or -1 with err set.
 */
struct fsp_block_times {
	uint64_t *queue_ns, *device_ns;
	size_t nq, nd;
	uint64_t bytes;
};
int fsp_block_ios_times(struct fsp_store *st, int64_t run, int step, unsigned op,
			struct fsp_block_times *t, char *err, size_t errlen);
void fsp_block_times_free(struct fsp_block_times *t);

/* The steps with block rows of run, ascending, into steps[0..max): count. */
int fsp_block_ios_steps(struct fsp_store *st, int64_t run, int *steps, int max);

/* The block requests of run: of step (-1: every step, and those outside
 * every step), made in [from_ns, to_ns] (0, 0: any time), in issue order
 * (dev back to a kernel dev_t, a NULL step as -1): *rows malloc'd (free
 * it), *n rows. A database without the table has none. The one reader of
 * the rows as stored. 0, or -1 with err set. */
int fsp_block_ios_load(struct fsp_store *st, int64_t run, int step, int64_t from_ns,
		       int64_t to_ns, struct fsp_block_io **rows, size_t *n, char *err,
		       size_t errlen);

/* The mount run whose FUSE requests served run's IO: run itself if it is a
 * mount; for an engine run of a compare, its target's mount run (same
 * parent, label NAME-fuse). 0 if none, -1 on error. */
int64_t fsp_block_ios_fuse_run(struct fsp_store *st, int64_t run);

/* How many of run's read and write op rows have each requested length:
 * fn(arg, op, length, count) per (op, length), among the rows of step
 * (-1: any step) that started in [from_ns, to_ns] (0, 0: any time). A
 * non-zero fn return stops the walk. 0, or -1 on error. */
int fsp_block_ios_op_lengths(struct fsp_store *st, int64_t run, int step, int64_t from_ns,
			     int64_t to_ns,
			     int (*fn)(void *arg, int op, uint64_t length, uint64_t count),
			     void *arg);

/* The trace's outcome: run's block.* attributes (docs/schema.md). */
struct fsp_block_summary {
	int traced;        /* 1, 0, or -1: no block.traced (run was not traced or older) */
	char reason[256];  /* block.untraced_reason */
	char devices[256]; /* block.devices */
	uint64_t requests, dropped;
};
int fsp_block_ios_summary(struct fsp_store *st, int64_t run, struct fsp_block_summary *s);

#endif

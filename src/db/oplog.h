/*
 * oplog.h - the per-operation latency log.
 *
 * Producers (FUSE worker threads, job-engine threads) call fsp_oplog_add()
 * once per operation. Each producer thread owns a lock-free single-producer
 * ring and a set of histograms; the hot path takes no lock and makes no
 * system call. One background writer thread drains the rings into a spill
 * file beside the database (DB-fsprism-spill-RUN), with a checkpoint of its
 * histograms and an fdatasync each second; fsp_oplog_close() loads it into
 * SQLite in large transactions, after the measured operations (rows appear
 * in the database at close, not while the log is open), and removes it. If
 * the process dies first, the next fsp_store_open of the database recovers
 * the run from it (fsp_oplog_recover). A record that finds
 * its ring full, or that cannot be spilled or stored, is dropped and
 * counted; histograms are updated for every operation regardless, so the
 * statistics stay exact under sampling, drops, or --record=hist.
 */
#ifndef FSP_OPLOG_H
#define FSP_OPLOG_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "src/base/hist.h"
#include "src/base/ops.h"

struct fsp_store;

/*
 * One operation (96 bytes). Device records (FSP_OP_DEV_*: the IOs the
 * copy-on-write / journaling emulation sends to its store) use the same
 * struct: node is the user operation's node, offset is the device offset,
 * and cause_ns is the start_ns of the user operation that caused the IO (0
 * for background commits), so the two join on (pid, start_ns = cause_ns).
 */
struct fsp_rec {
	uint64_t start_ns;   /* CLOCK_MONOTONIC at handler entry / submission */
	uint64_t total_ns;   /* whole handler (or submit->complete) time */
	uint64_t backing_ns; /* time inside backing-store system calls */
	uint64_t node;       /* FUSE node id (engine: 0) */
	uint64_t offset;     /* file offset, or 0 */
	uint32_t length;     /* bytes requested (read/write/...), or 0 */
	uint32_t pid;        /* caller pid (engine: its own thread id) */
	int32_t result;      /* 0 or a positive errno */
	uint16_t op;         /* enum fsp_op */
	uint16_t step;       /* job-engine step (QD / mix ...), 0 for FUSE */
	uint64_t bytes;      /* bytes actually transferred (read/write) */
	uint64_t emu_ns;     /* time in the emulation beyond moving the user's data */
	uint64_t cause_ns;   /* device records: start_ns of the causing operation */
	uint64_t inject_ns;  /* the delay `mount --inject` added (part of the layer) */
	uint64_t model_ns;   /* the cost `mount --device-model` added (part of the layer) */
	uint64_t fuse_unique; /* FUSE requests: the kernel's `unique` (0: unknown) */
	uint64_t recv_ns;    /* FUSE requests: a worker read it from /dev/fuse (0: unknown) */
};
/* The record before fuse_unique and recv_ns: spill files of older builds. */
#define FSP_REC_V1_LEN 80

/*
 * Is a failed reply of op one that answers the question asked rather than a
 * failure: a lookup of a name that is not there (ENOENT), a getxattr or
 * listxattr of an attribute that is not there (ENODATA)? Counted as
 * `expected`, not under errors (the histograms count them as operations).
 */
static inline int fsp_rec_expected(unsigned op, int32_t result)
{
	return (op == FSP_OP_LOOKUP && result == ENOENT) ||
	       ((op == FSP_OP_GETXATTR || op == FSP_OP_LISTXATTR) && result == ENODATA);
}

enum fsp_record_mode {
	FSP_RECORD_OFF = 0, /* nothing at all: no histograms, no rows */
	FSP_RECORD_HIST,    /* histograms only */
	FSP_RECORD_SAMPLE,  /* histograms, and every Nth row per thread */
	FSP_RECORD_FULL,    /* histograms and every row */
};

/* Parse "full", "sample:N", "hist" or "off". Returns 0, or -1 if invalid. */
int fsp_record_mode_parse(const char *s, enum fsp_record_mode *mode,
			  unsigned *sample_n);

struct fsp_oplog;

/*
 * Start logging into run `run_id` of `store`. The log does not touch the
 * store until fsp_oplog_close(), which writes the rows, histograms and
 * counts to it. ring_records is the capacity
 * of each producer thread's ring (rounded up to a power of two; 0 = default
 * 16384, 1.5 MiB). Returns NULL with errno set on failure.
 */
struct fsp_oplog *fsp_oplog_open(struct fsp_store *store, int64_t run_id,
				 enum fsp_record_mode mode, unsigned sample_n,
				 size_t ring_records);

/*
 * Make contexts for `producers` threads now, rings and all, so that threads
 * starting later adopt them instead of allocating (and page-faulting) while
 * their operations are measured. Optional; 0, or -1 if out of memory (the
 * log still works: the rest are made on first use).
 */
int fsp_oplog_reserve(struct fsp_oplog *log, unsigned producers);

/* Hot path. Safe from any number of threads; never blocks. */
void fsp_oplog_add(struct fsp_oplog *log, const struct fsp_rec *rec);

/*
 * Stop: wait until every ring is drained, join the writer, load the spilled
 * rows (per-operation rows: --record=full or sample), write the merged
 * histograms (per step x op x layer) and the dropped/recorded counts to the
 * run, build indexes. Producers must have stopped calling fsp_oplog_add().
 * Returns 0 or -1 (error already printed). Frees log.
 */
int fsp_oplog_close(struct fsp_oplog *log);

/*
 * Recover the runs whose process died with their log open (kill -9, a
 * crash, power loss): each spill file beside st's database
 * (DB-fsprism-spill-RUN) that no live log holds, of a run that never
 * ended, is stored in one transaction: the rows of every whole frame, the
 * histograms of the last checkpoint and of the rows after it, the counts,
 * run attributes run.end = crashed and records.lost; then the spill file is
 * removed. Called by fsp_store_open. Returns the number of runs recovered,
 * or -1 if one could not be (reason on stderr; its spill stays).
 */
int fsp_oplog_recover(struct fsp_store *st);
/* Does a spill file lie beside the database at db_path? (No lock, no read.) */
int fsp_oplog_spill_pending(const char *db_path);

/*
 * The spill file's descriptor (-1 with --record=off). For tests, which
 * put a failing file in its place to check that what cannot be kept is
 * counted as dropped.
 */
int fsp_oplog_spill_fd(const struct fsp_oplog *log);

/*
 * Counters so far (any thread may read them; approximate while running).
 * Rows are stored only at close, so recorded stays 0 until then.
 */
uint64_t fsp_oplog_dropped(const struct fsp_oplog *log);
uint64_t fsp_oplog_recorded(const struct fsp_oplog *log);
/*
 * Producer contexts allocated so far: at most the peak number of threads
 * that used the log at the same time (exited threads' contexts are reused).
 */
unsigned fsp_oplog_contexts(const struct fsp_oplog *log);

#endif

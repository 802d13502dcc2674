/*
 * store.h - the SQLite results database.
 *
 * One file holds every run of every subcommand (schema.h). The store opens
 * it in WAL mode, creates the schema in a new file, refuses one with an
 * unknown schema version, and offers the batched inserts that the oplog
 * writer thread uses. A store handle is used by one thread at a time.
 *
 * The handle is the only way to the database: this header has the
 * writers, results.h the readers (stats, compare); only src/db calls
 * sqlite3.
 */
#ifndef FSP_STORE_H
#define FSP_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "src/base/hist.h"
#include "src/db/oplog.h"

struct fsp_store;

struct fsp_run_info {
	const char *kind;           /* "mount", "run", "compare" (required) */
	const char *options;        /* the command line as given */
	const char *backing_path;
	const char *backing_device; /* NULL: looked up from backing_path */
	const char *backing_fstype; /* NULL: looked up from backing_path */
	const char *record_mode;
	int64_t parent;             /* 0: none */
	const char *label;
	const char *host;           /* NULL: this machine (an import names fio's host) */
};

/*
 * Open or create the database at path. On failure returns NULL and writes a
 * one-line reason naming the path to err (e.g. "cannot create database
 * /x/y.db: Permission denied", "database /x/y.db has schema version 7, this
 * fsprism knows version 3").
 */
struct fsp_store *fsp_store_open(const char *path, char *err, size_t errlen);

/*
 * Open a database that must already exist, for reading (stats): never
 * creates one and never changes its schema, and checks its schema version.
 * The file is opened read-write when it may be written (so that a WAL left
 * by a crash is recovered), else read-only. NULL + one-line reason in err
 * ("no database at PATH", "database PATH has schema version 7, ...").
 */
struct fsp_store *fsp_store_open_readonly(const char *path, char *err, size_t errlen);
void fsp_store_close(struct fsp_store *st);
/* Remove a closed database file and the files SQLite keeps beside it
 * (-wal, -shm, -journal); those that are not there are no error. */
void fsp_store_remove_files(const char *path);

/* The database file's absolute path ("" for an in-memory database). */
const char *fsp_store_filename(struct fsp_store *st);
/* SQLite's message for the handle's last failed call. */
const char *fsp_store_errmsg(struct fsp_store *st);

/*
 * Can path be opened for writing, or created? 0, or -1 with a one-line
 * reason in err ("cannot create database /x/y.db: Read-only file system").
 * fsp_store_open checks this itself; a caller may ask earlier (mount asks
 * before it forks).
 */
int fsp_store_check_writable(const char *path, char *err, size_t errlen);

/* Insert a run (host, kernel, version, start time filled in). Returns its id, or -1. */
int64_t fsp_store_begin_run(struct fsp_store *st, const struct fsp_run_info *info);
int fsp_store_end_run(struct fsp_store *st, int64_t run, uint64_t recorded,
		      uint64_t dropped);
/* The same with the end's wall-clock and CLOCK_MONOTONIC times given (a
 * recovered run ends when its log last wrote). */
int fsp_store_end_run_at(struct fsp_store *st, int64_t run, uint64_t recorded,
			 uint64_t dropped, uint64_t wall_ns, uint64_t mono_ns);
int fsp_store_set_attr(struct fsp_store *st, int64_t run, const char *key,
		       const char *value);
/* The same with a count as its value (in decimal). */
int fsp_store_set_attr_u64(struct fsp_store *st, int64_t run, const char *key, uint64_t v);

/* Make run part of parent under label (compare adopts its mounts' runs). 0 or -1. */
int fsp_store_adopt_run(struct fsp_store *st, int64_t run, int64_t parent,
			const char *label);

/*
 * Remove a run whose start failed: its runs row, attributes, histograms and
 * op rows (a start writes nothing else). 0, or -1 if a delete failed.
 */
int fsp_store_forget_run(struct fsp_store *st, int64_t run);

/* "fsprism ARGV..." as stored in runs.options (malloc'd; NULL if out of memory). */
char *fsp_store_cmdline(int argc, char **argv);

/* Transactions around batches of inserts (a failed commit rolls back). */
int fsp_store_tx_begin(struct fsp_store *st);
int fsp_store_tx_commit(struct fsp_store *st);
void fsp_store_tx_rollback(struct fsp_store *st);

/*
 * fsprism's own share of a record: total - backing - emu, clamped at 0
 * (clock granularity can make the measured parts exceed the whole). The
 * oplog's "layer" histogram and the ops.layer_ns column both use this.
 */
static inline uint64_t fsp_rec_layer_ns(const struct fsp_rec *r)
{
	uint64_t parts = r->backing_ns + r->emu_ns;
	return r->total_ns > parts ? r->total_ns - parts : 0;
}

/* Insert n op rows with prepared multi-row INSERTs (inside a transaction). */
int fsp_store_insert_recs(struct fsp_store *st, int64_t run,
			  const struct fsp_rec *recs, size_t n);

/* Store one histogram (hist row + its non-empty hist_bins); errors: failed
 * replies, expected: those that answer (fsp_rec_expected). */
int fsp_store_save_hist(struct fsp_store *st, int64_t run, int step, int op,
			int layer, const struct fsp_hist *h, uint64_t bytes,
			uint64_t errors, uint64_t expected);

/*
 * Load one histogram back (the bins reassemble it exactly, since each bin
 * maps to one bucket). Returns 1 if found, 0 if absent, -1 on error.
 */
int fsp_store_load_hist(struct fsp_store *st, int64_t run, int step, int op,
			int layer, struct fsp_hist *h, uint64_t *bytes,
			uint64_t *errors);

/*
 * The emulated store's files at unmount (emu_files, emu_extents): one
 * object, its path relative to the mount point (NULL or "" if unknown),
 * size and allocated bytes, and its extents FIEMAP style (physically
 * contiguous runs joined; byte offsets on the store device).
 */
struct fsp_emu_extent {
	uint64_t logical, physical, length;
};
struct fsp_emu_file {
	uint64_t obj;
	const char *path;
	uint64_t size, allocated;
	size_t nextents;
	const struct fsp_emu_extent *ext;
};

/*
 * Replace run's emulated files and extents with f[0..n) in one transaction
 * of its own (call it outside any other; the mount calls it after
 * fsp_oplog_close). 0, or -1 with the reason on stderr and nothing saved.
 */
int fsp_store_save_emu_files(struct fsp_store *st, int64_t run,
			     const struct fsp_emu_file *f, size_t n);

/*
 * One measured step of an engine run (the steps table), and its timeline
 * buckets and segments. fsp_store_add_* insert one row each; call them
 * inside a transaction (fsp_store_tx_begin). 0, or -1 with the reason on
 * stderr.
 */
struct fsp_step_row {
	int step;
	const char *label, *access, *pattern;
	int64_t block_size, qd, read_pct;
	uint64_t span_offset, span_size;
	uint64_t started_ns, ended_ns, busy_ns; /* CLOCK_MONOTONIC */
	uint64_t read_ios, write_ios, read_bytes, write_bytes;
	uint64_t cpu_user_ns, cpu_sys_ns;
};
int fsp_store_add_step(struct fsp_store *st, int64_t run, const struct fsp_step_row *r);
/* One timeline bucket of a step, starting at t_ns. */
struct fsp_timeline_row {
	uint64_t t_ns, read_bytes, write_bytes, read_ios, write_ios;
};
int fsp_store_add_timeline(struct fsp_store *st, int64_t run, int step,
			   const struct fsp_timeline_row *t);
/* One fill segment or burst of a step: bytes done in ns of busy time. */
struct fsp_segment_row {
	uint64_t segment, offset, bytes, ns;
};
int fsp_store_add_segment(struct fsp_store *st, int64_t run, int step,
			  const struct fsp_segment_row *g);

/* Build the indexes that are deferred until after capture. */
int fsp_store_build_indexes(struct fsp_store *st);

#endif

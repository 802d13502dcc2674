/*
 * results.h - reading the results database back: the questions `fsprism
 * stats` and `fsprism compare` ask of it (runs, attributes, steps,
 * histograms, op rows inside time windows, emulated files and extents),
 * each a function named by what it answers, on a store handle (store.h;
 * a reader opens it with fsp_store_open_readonly).
 *
 * Lists are walked with a callback: the rows stream out in the order
 * stated, and the callback may ask the store other questions meanwhile.
 * A callback returns 0 to go on, anything else to stop the walk. The
 * walks return 0 (done or stopped) or -1 on a database error
 * (fsp_store_errmsg says which). Strings handed to a callback live until
 * it returns.
 */
#ifndef FSP_DB_RESULTS_H
#define FSP_DB_RESULTS_H

#include <stdint.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/db/store.h"

/* ---- runs ----------------------------------------------------------------- */

/* The newest run (highest id), 0 if there is none, -1 on error. */
int64_t fsp_store_latest_run(struct fsp_store *st);

/* A runs row; strings malloc'd (NULL where the column is). */
struct fsp_run_row {
	int64_t id;
	char *kind, *backing_path;
	char *device, *fstype;        /* backing_device, backing_fstype */
	char *record_mode, *label, *started_at, *options;
	int64_t started_ns, ended_ns; /* ended_ns 0: run did not end cleanly */
	int64_t recorded, dropped;
	int crashed;                  /* run.end = crashed: recovered after its process died */
	char *lost;                   /* records.lost: a number or "unknown" */
};
/* 1 found, 0 no such run, -1 error. *r is zeroed first; free it either way. */
int fsp_store_load_run(struct fsp_store *st, int64_t run, struct fsp_run_row *r);
void fsp_run_row_free(struct fsp_run_row *r);

/* The newest mount run on backing_path with an id above after; 0 if none. */
int64_t fsp_store_find_mount_run(struct fsp_store *st, const char *backing_path,
				 int64_t after);
/* The newest engine run (kind 'run') of parent labelled label; 0 if none. */
int64_t fsp_store_child_run(struct fsp_store *st, int64_t parent, const char *label);

/* ---- attributes ----------------------------------------------------------- */

/* A run attribute's value (malloc'd), NULL if absent, NULL-valued or on error. */
char *fsp_store_attr(struct fsp_store *st, int64_t run, const char *key);

/* Which attributes fsp_store_each_attr walks, by key prefix. */
#define FSP_ATTRS_EMU 1u /* emu.*: the emulated store's state at mount */
#define FSP_ATTRS_DEV 2u /* dev.*: the emulation's device counters */
#define FSP_ATTRS_ALL 8u /* every attribute (alone, not with the others) */
/* run's attributes of the kinds in which (at least one), in key order. */
int fsp_store_each_attr(struct fsp_store *st, int64_t run, unsigned which,
			int (*fn)(void *arg, const char *key, const char *value),
			void *arg);

/* ---- steps ---------------------------------------------------------------- */

/* run's steps (the columns of struct fsp_step_row), in step order. */
int fsp_store_each_step(struct fsp_store *st, int64_t run,
			int (*fn)(void *arg, const struct fsp_step_row *r), void *arg);
/*
 * One step's label (malloc'd, NULL if none) and its start and end
 * (CLOCK_MONOTONIC ns). 1 found, 0 no such step (mounts have none), -1 error.
 */
int fsp_store_step_span(struct fsp_store *st, int64_t run, int step, char **label,
			int64_t *started_ns, int64_t *ended_ns);
/* run's steps as [started_ns, ended_ns] windows, in step order, at most max. */
int fsp_store_step_windows(struct fsp_store *st, int64_t run, int64_t (*win)[2], int max);
/* Rows of run in the steps table; -1 on error. */
int64_t fsp_store_count_steps(struct fsp_store *st, int64_t run);

/* ---- histograms ----------------------------------------------------------- */

/* The (step, op) pairs run has histograms of, in step then op order. */
int fsp_store_each_hist_key(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, int step, int op), void *arg);
/* Distinct steps among run's histograms; -1 on error. */
int64_t fsp_store_count_hist_steps(struct fsp_store *st, int64_t run);
/*
 * op's histogram of one layer merged over all steps of run (at most 1024
 * steps) into *acc; an absent one leaves acc empty. 0, -1 on error.
 */
int fsp_store_load_hist_merged(struct fsp_store *st, int64_t run, int op, int layer,
			       struct fsp_hist *acc);
/* count and bytes of op (total layer) over all steps of run; 0, 0 if absent. 0 or -1. */
int fsp_store_op_totals(struct fsp_store *st, int64_t run, int op, uint64_t *count,
			uint64_t *bytes);
/*
 * How many of op's replies in one step of run answered rather than failed
 * (the hist column expected: lookup ENOENT, getxattr ENODATA, ...); 0 where
 * a database from before that column counted them under errors.
 */
uint64_t fsp_store_expected_replies(struct fsp_store *st, int64_t run, int step, int op);
/* Has run an emu-layer histogram that is not all zero? 1, 0, -1 on error. */
int fsp_store_emu_layer_used(struct fsp_store *st, int64_t run);

/* ---- op rows -------------------------------------------------------------- */

/*
 * Per-layer histograms h[FSP_LAYER_*] of op from run's op rows that started
 * inside one of the windows [win[i][0], win[i][1]]. Returns the number of
 * rows used, -1 if the query failed.
 */
int64_t fsp_store_windowed_layers(struct fsp_store *st, int64_t run, int op,
				  int64_t (*win)[2], int nwin,
				  struct fsp_hist h[FSP_LAYER__COUNT]);

/* ---- the emulation -------------------------------------------------------- */

/*
 * Does run come from a mount with the emulation on (device ops in its
 * histograms, emulated files, or emu.* attributes)? 1, 0, -1 on error.
 */
int fsp_store_is_emulated(struct fsp_store *st, int64_t run);
/* Emulated files of run and their extents in all (0, 0 on error). 0 or -1. */
int fsp_store_emu_file_totals(struct fsp_store *st, int64_t run, uint64_t *files,
			      uint64_t *extents);
/*
 * run's emulated files (f->ext NULL; f->nextents from emu_files), files
 * with a path first, by path, then by object.
 */
int fsp_store_each_emu_file(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, const struct fsp_emu_file *f), void *arg);
/*
 * run's extents with their file (path NULL, size and nextents 0 for an
 * extent whose object has no emu_files row), in the file order above, then
 * by logical offset.
 */
int fsp_store_each_emu_extent(struct fsp_store *st, int64_t run,
			      int (*fn)(void *arg, const struct fsp_emu_file *f,
					const struct fsp_emu_extent *e),
			      void *arg);

/* ---- the report's questions (fsprism report) ------------------------------ */

/* What a runs row says about where and when it ran; strings malloc'd. */
struct fsp_run_facts {
	char *host, *kernel, *version, *started_at, *ended_at;
	int64_t parent; /* 0: none */
};
/* 1 found, 0 no such run, -1 error. *f is zeroed first; free it either way. */
int fsp_store_load_run_facts(struct fsp_store *st, int64_t run, struct fsp_run_facts *f);
void fsp_run_facts_free(struct fsp_run_facts *f);
/* The runs whose parent is run (a compare's targets and mounts; 0: the runs
 * that are nobody's part), in id order. */
int fsp_store_each_child_run(struct fsp_store *st, int64_t run,
			     int (*fn)(void *arg, int64_t id, const char *kind,
				       const char *label),
			     void *arg);
/* run's timeline rows, by step then time. */
int fsp_store_each_timeline(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, int step, const struct fsp_timeline_row *t),
			    void *arg);
/* run's fill segments and bursts, by step then segment. */
int fsp_store_each_segment(struct fsp_store *st, int64_t run,
			   int (*fn)(void *arg, int step, const struct fsp_segment_row *g),
			   void *arg);
/* Rows of run in the ops table (the recorded operations); -1 on error. */
int64_t fsp_store_count_op_rows(struct fsp_store *st, int64_t run);
/* Each recorded operation of run that is not a device op: its step, op,
 * start and total time, in no particular order. */
int fsp_store_each_op_latency(struct fsp_store *st, int64_t run,
			      int (*fn)(void *arg, int step, int op, uint64_t start_ns,
					uint64_t total_ns),
			      void *arg);
/* Block requests of run that carry data (not flushes) inside a step
 * (block_ios; none in a version-2 database): where on the disk and when,
 * by issue time. */
int64_t fsp_store_count_block_positions(struct fsp_store *st, int64_t run);
int fsp_store_each_block_position(struct fsp_store *st, int64_t run,
				  int (*fn)(void *arg, int step, const char *op,
					    uint64_t issue_ns, uint64_t sector,
					    uint64_t bytes),
				  void *arg);

/* ---- what diagnose asks ----------------------------------------------------- */

/*
 * The runs of parent of kind ("run", "mount") labelled label, oldest first
 * (one per round of `compare --rounds`), into ids[0..max): their number,
 * -1 on error.
 */
int fsp_store_child_runs(struct fsp_store *st, int64_t parent, const char *kind,
			 const char *label, int64_t *ids, int max);

/* The newest run of kind ("compare"), 0 if none, -1 on error. */
int64_t fsp_store_latest_run_of_kind(struct fsp_store *st, const char *kind);

/* One op row as diagnose reads it. */
struct fsp_op_row {
	int op;
	uint64_t offset, length, bytes;
	uint64_t start_ns, total_ns, backing_ns, layer_ns, emu_ns;
	uint64_t inject_ns; /* mount --inject's delay (part of layer_ns); 0 without the column */
};
/* run's op rows that started in [t0, t1] (CLOCK_MONOTONIC), by start_ns. */
int fsp_store_each_op_in_window(struct fsp_store *st, int64_t run, int64_t t0, int64_t t1,
				int (*fn)(void *arg, const struct fsp_op_row *r), void *arg);


/* A run's op row as a trace needs it (fsprism replay DB:RUN). */
struct fsp_replay_op_row {
	int op, result;             /* enum fsp_op; 0 or the positive errno */
	uint64_t node, pid;         /* FUSE node (the backing inode), the caller's thread */
	uint64_t offset, length, bytes;
	uint64_t start_ns, total_ns;
};
/* Every op row of run, by start_ns (then rowid); fn's nonzero stops. 0, or -1. */
int fsp_store_each_trace_op(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, const struct fsp_replay_op_row *r), void *arg);

/* ---- the FUSE transport: the daemon's rows joined to the kernel's ---- */

/* A daemon row (ops) and a traced request (fuse_reqs), as the join needs them. */
struct fsp_fuse_drow {
	uint64_t unique;            /* ops.fuse_unique (0: unknown) */
	uint64_t start_ns, total_ns, recv_ns;
	uint32_t op;                /* enum fsp_op */
};
struct fsp_fuse_trow {
	uint64_t unique, send_ns, end_ns;
	uint32_t opcode;
};

/* Per op of the daemon's rows: the parts of each joined request. */
struct fsp_fuse_parts {
	int64_t *queue_ns;  /* recv_ns - send_ns: waited in the kernel for a worker */
	int64_t *reply_ns;  /* end_ns - (start_ns + total_ns): reply to completion */
	size_t n, cap;      /* joined */
	uint64_t unjoined;  /* rows with no traced request (or no unique) */
};
struct fsp_fuse_transport {
	struct fsp_fuse_parts op[FSP_OP__COUNT];
	uint64_t joined, daemon_unjoined;
	uint64_t trace_unjoined;  /* traced requests no daemon row has (INIT,
				     requests libfuse answers itself, lost rows) */
	uint64_t negative;        /* joined parts below 0 (clocks disagree): kept */
};

/*
 * The join itself, on rows in any order (the traced ones come in the order
 * of their ends): both arrays are sorted by unique in place, then merged.
 * A daemon row with unique 0 joins nothing. 0, or -1 out of memory.
 */
int fsp_fuse_join(struct fsp_fuse_drow *d, size_t nd, struct fsp_fuse_trow *t, size_t nt,
		  struct fsp_fuse_transport *x);
void fsp_fuse_transport_free(struct fsp_fuse_transport *x);

/*
 * How long did run's FUSE requests wait in the kernel before a worker took
 * them, and from the reply to the kernel's completion? The daemon's rows
 * (FUSE operations, not device records) joined to fuse_reqs by
 * fuse_unique. 1 with *x filled, 0 if the run has no fuse_reqs rows (or
 * its database predates them), -1 on error.
 */
int fsp_store_fuse_transport(struct fsp_store *st, int64_t run, struct fsp_fuse_transport *x);

#endif

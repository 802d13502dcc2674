/*
 * decomp_rows.h - the rows the per-IO decomposition (src/prism/decomp.h)
 * joins, read from the database, and the one table it adds: the extents
 * of a run's target file (file_extents, docs/schema.md), through which a
 * block request's sector maps back to a file offset.
 *
 * The row types are the join's own input, so a reader fills what the join
 * takes without a copy. Every reader tolerates what an older database
 * lacks (block_ios.tid, ops.fuse_unique/recv_ns/inject_ns, fuse_reqs): 0 then.
 */
#ifndef FSP_DB_DECOMP_ROWS_H
#define FSP_DB_DECOMP_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include "src/sys/fiemap.h" /* struct fsp_extent */
#include "src/db/store.h"

/* One engine IO (an ops row of the run). */
struct fsp_dc_io {
	uint64_t submit_ns, reap_ns; /* its io_submit, start_ns + total_ns */
	uint64_t offset, length;     /* in the target (device or file) */
	uint32_t tid;                /* the engine thread (ops.pid) */
	uint8_t write;
	/* a rate step's IO: from its intended time (ops.start_ns) to its
	 * io_submit (ops.layer_ns, docs/profiles.md "Load curves"); 0 else */
	uint64_t lag_ns;
};

/* One block request (a block_ios row). */
struct fsp_dc_block {
	uint64_t queue_ns, insert_ns, issue_ns, complete_ns; /* 0: unknown */
	uint64_t sector;     /* 512-byte sectors on the whole disk */
	uint32_t bytes;
	uint32_t tid, tgid;  /* 0: unknown */
	uint8_t write;       /* reads and writes only: others are not passed */
};

/* Mount: one daemon row (ops row of the mount's run) for a read or write. */
struct fsp_dc_daemon {
	uint64_t start_ns, total_ns, backing_ns, emu_ns; /* handler entry and its layers */
	uint64_t inject_ns;   /* of the handler: the delay mount --inject added (0: absent) */
	uint64_t recv_ns;     /* received from /dev/fuse (0: column absent) */
	uint64_t fuse_unique; /* the kernel's unique (0: column absent) */
	uint64_t offset, length;
	uint32_t pid;         /* the caller: the engine thread */
	uint8_t write;
};

/* Mount: one FUSE request of the kernel (a fuse_reqs row). */
struct fsp_dc_fuse {
	uint64_t unique, send_ns, end_ns;
};

/* A growing array of rows; free(v). A reader that fails leaves it empty. */
#define FSP_DC_ARRAY(T) struct { T *v; size_t n, cap; }
typedef FSP_DC_ARRAY(struct fsp_dc_io) fsp_dc_ios;
typedef FSP_DC_ARRAY(struct fsp_dc_block) fsp_dc_blocks;
typedef FSP_DC_ARRAY(struct fsp_extent) fsp_dc_extents;
typedef FSP_DC_ARRAY(struct fsp_dc_daemon) fsp_dc_daemons;
typedef FSP_DC_ARRAY(struct fsp_dc_fuse) fsp_dc_fuses;

/* The engine's read and write rows of run's step (none without --record
 * full or sample:N). 0, or -1 with err set. */
int fsp_decomp_read_ios(struct fsp_store *st, int64_t run, int step, fsp_dc_ios *out,
			char *err, size_t errlen);
/* run's read and write block requests that entered in step (block_ios.step). */
int fsp_decomp_read_blocks(struct fsp_store *st, int64_t run, int step, fsp_dc_blocks *out,
			   char *err, size_t errlen);
/* A mount run's read and write requests (of its backing or store device)
 * made in [from_ns, to_ns]. */
int fsp_decomp_read_blocks_window(struct fsp_store *st, int64_t run, uint64_t from_ns,
				  uint64_t to_ns, fsp_dc_blocks *out, char *err, size_t errlen);
/* A mount run's read and write rows that began in [from_ns, to_ns]. */
int fsp_decomp_read_daemon(struct fsp_store *st, int64_t run, uint64_t from_ns,
			   uint64_t to_ns, fsp_dc_daemons *out, int *have_fuse_cols,
			   char *err, size_t errlen);
/* Has run FUSE transport rows (fuse_reqs)? 1 or 0 (also without the table). */
int fsp_decomp_have_fuse(struct fsp_store *st, int64_t run);
/* The FUSE requests of run (fuse_reqs); *have 0 when the table is absent. */
int fsp_decomp_read_fuse(struct fsp_store *st, int64_t run, fsp_dc_fuses *out, int *have,
			 char *err, size_t errlen);

/*
 * The layout of run's target file that holds for step: the one read after
 * that step if it was stored, else the latest read before it (after_step
 * -1: read before the first step). n 0: none stored (not a file, or no
 * FIEMAP). 0, or -1 with err set.
 */
int fsp_decomp_read_extents(struct fsp_store *st, int64_t run, int step, fsp_dc_extents *out,
			    char *err, size_t errlen);
/* Store a layout read after step after_step (-1: before the first). */
int fsp_file_extents_save(struct fsp_store *st, int64_t run, int after_step,
			  const struct fsp_extent *e, size_t n);

#endif

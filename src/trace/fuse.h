/*
 * fuse.h - the FUSE-transport trace: every request the kernel sends to one
 * FUSE connection (an fsprism mount), with its send and end times and its
 * `unique`, from eBPF (fuse.bpf.c), stored as fuse_reqs rows after the
 * measured window; ops.fuse_unique joins them to the daemon's own rows.
 *
 *   fsp_ftrace_start(conn)       load, attach, start the consumer thread
 *   fsp_ftrace_stop(ft)          detach (nothing stays attached), drain
 *   fsp_ftrace_save(ft, ...)     rows and counts stored
 *   fsp_ftrace_free(ft)
 *
 * Without eBPF start returns NULL with a one-line reason.
 */
#ifndef FSP_TRACE_FUSE_H
#define FSP_TRACE_FUSE_H

#include <stdint.h>
#include <sys/types.h>
#include "src/db/store.h"

struct fsp_ftrace_opts {
	size_t ring_bytes;   /* 0: 4 MiB, or FSPRISM_FUSE_TRACE_RING_BYTES */
	size_t max_inflight; /* slots for requests in flight, rounded up to a power
				of two (0: 16384, or FSPRISM_FUSE_TRACE_INFLIGHT) */
	size_t max_rows;     /* 0: 4 Mi, or FSPRISM_TRACE_MAX_ROWS */
};

struct fsp_ftrace;

/* Trace the connection of the FUSE mount whose st_dev is dev. */
struct fsp_ftrace *fsp_ftrace_start(dev_t dev, const struct fsp_ftrace_opts *o, char *why,
				    size_t whylen);
/* Detach, drain the ring buffer, stop the consumer. Idempotent. */
void fsp_ftrace_stop(struct fsp_ftrace *ft);

struct fsp_ftrace_counts {
	uint64_t requests;  /* rows kept */
	uint64_t ring_full; /* ended when the ring buffer was full */
	uint64_t map_full;  /* sent onto a slot still open (more in flight than slots) */
	uint64_t open;      /* sent, never ended before the trace stopped */
	uint64_t rows_full; /* over max_rows or out of memory (user side) */
	uint64_t unpaired;  /* ended with no send seen: sent before the trace began */
	uint64_t missed;    /* lost: ring_full + map_full + open + rows_full + the
			       programs' runs the kernel skipped */
};
void fsp_ftrace_counts(const struct fsp_ftrace *ft, struct fsp_ftrace_counts *c);

/*
 * After fsp_ftrace_stop: store the rows in fuse_reqs (step `step`) in one
 * transaction, and the run attributes fuse.traced=1, fuse.conn,
 * fuse.trace_requests, fuse.trace_missed and its parts. 0, or -1 (printed).
 */
int fsp_ftrace_save(struct fsp_ftrace *ft, struct fsp_store *st, int64_t run, int step);
/* fuse.traced=0 and fuse.untraced_reason=why. */
void fsp_ftrace_save_untraced(struct fsp_store *st, int64_t run, const char *why);
void fsp_ftrace_free(struct fsp_ftrace *ft);

#endif

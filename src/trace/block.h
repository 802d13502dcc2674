/*
 * block.h - the block-layer trace: every block request on a target's
 * device, with its queue, insert, issue and completion times, from eBPF
 * (block.bpf.c) during a measured run, stored as block_ios rows after it.
 *
 *   fsp_btrace_devs_for(target)  which disks and sector ranges to follow
 *   fsp_btrace_start(devs)       load, attach, start the consumer thread
 *   fsp_btrace_stop(bt)          detach (nothing stays attached), drain
 *   fsp_btrace_save(bt, ...)     rows joined to steps, stored, counts
 *   fsp_btrace_free(bt)
 *
 * Without eBPF (no privilege, no BTF, a build without it) start returns
 * NULL with a one-line reason; fsp_btrace_save_untraced stores it.
 */
#ifndef FSP_TRACE_BLOCK_H
#define FSP_TRACE_BLOCK_H

#include <stddef.h>
#include <stdint.h>
#include "src/db/store.h"
#include "src/trace/rows.h"

#define FSP_BTRACE_MAX_DEVS 16

/* Whole disks (kernel dev_t) and the sector range [first, end) on each. */
struct fsp_btrace_devs {
	unsigned n;
	uint32_t dev[FSP_BTRACE_MAX_DEVS];
	uint64_t first[FSP_BTRACE_MAX_DEVS], end[FSP_BTRACE_MAX_DEVS];
};

/*
 * The requests that serve IO on path: a block device's own (a partition's:
 * its range of the disk; a loop device's: the loop device's, not those it
 * sends to its backing file), or those of the device holding a file's file
 * system (for a file on an fsprism mount: the device of its backing
 * directory, which the daemon's backing IO reaches); a device-mapper or md
 * device stands for its component devices.
 * 0, or -1 with a reason ("the file system of X is not on a block device").
 */
int fsp_btrace_devs_for(const char *path, struct fsp_btrace_devs *d, char *why,
			size_t whylen);
/* "7:3" or "8:0[2048,+1048576] 8:16" into buf. */
void fsp_btrace_devs_format(const struct fsp_btrace_devs *d, char *buf, size_t len);

struct fsp_btrace_opts {
	size_t ring_bytes; /* BPF ring buffer (0: 8 MiB, or FSPRISM_TRACE_RING_BYTES) */
	size_t max_rows;   /* rows kept (0: 4M, or FSPRISM_TRACE_MAX_ROWS) */
};

struct fsp_btrace;

struct fsp_btrace *fsp_btrace_start(const struct fsp_btrace_devs *d,
				    const struct fsp_btrace_opts *o, char *why,
				    size_t whylen);
/* Detach every program, drain the ring buffer, stop the consumer. Idempotent. */
void fsp_btrace_stop(struct fsp_btrace *bt);

struct fsp_btrace_counts {
	uint64_t requests;     /* rows kept */
	uint64_t dropped_ring; /* found the ring buffer full (kernel side) */
	uint64_t missed;       /* the sum of the four causes below */
	uint64_t missed_nested;   /* a program run the kernel skipped: it was
				     already running on that CPU */
	uint64_t missed_tags;     /* a driver tag or hardware queue beyond the slots */
	uint64_t missed_reissued; /* issued again before its completion was seen */
	uint64_t missed_open;     /* still in flight when the trace stopped */
	uint64_t dropped_rows; /* over max_rows or out of memory (user side) */
};
void fsp_btrace_counts(const struct fsp_btrace *bt, struct fsp_btrace_counts *c);
const struct fsp_trows *fsp_btrace_rows(const struct fsp_btrace *bt);

/*
 * After fsp_btrace_stop: join the rows to the steps' windows (w[i] is step
 * i), store them in block_ios in one transaction, and the run attributes
 * block.traced=1, block.devices, block.requests, block.dropped (all lost
 * requests), block.dropped_ring, block.missed and its causes
 * (block.missed_nested, _tags, _reissued, _open). 0, or -1 (printed).
 */
int fsp_btrace_save(struct fsp_btrace *bt, struct fsp_store *st, int64_t run,
		    const struct fsp_bt_window *w, size_t nw);
/* block.traced=0 and block.untraced_reason=why. */
void fsp_btrace_save_untraced(struct fsp_store *st, int64_t run, const char *why);
void fsp_btrace_free(struct fsp_btrace *bt);

#endif

/*
 * blkparse.h - a blktrace capture as a trace (iotrace.h): the binary per-CPU
 * files `blktrace -o NAME` writes, NAME.blktrace.0, NAME.blktrace.1, ...,
 * each a sequence of the kernel's `struct blk_io_trace` (48 bytes: magic
 * 0x65617400 | version 7 or 8, sequence, time ns, sector, bytes, action,
 * pid, device, cpu, error, pdu_len) each followed by pdu_len bytes, in the
 * byte order of the machine that captured it (either is read).
 *
 * The events of all CPUs are merged by time; each request is its issue to
 * the driver (D) with its sector, size and direction (RWBS: read, write,
 * flush, FUA, discard) paired with its completion (C) by sector and
 * direction, so the trace has completion times (a D whose C the capture
 * lacks completes at its issue, and is counted in t->unpaired). A capture
 * without D events (a bio-based device) takes its queue events (Q)
 * instead. Offsets are device bytes (sector * 512), file FSP_IOTRACE_DEVICE;
 * thread is the issuing pid. Only the capture's first device is kept.
 * A mistake: "PATH: byte OFFSET: what".
 */
#ifndef FSP_BENCH_BLKPARSE_H
#define FSP_BENCH_BLKPARSE_H

#include <stddef.h>
#include <stdint.h>
#include "bench/engine/iotrace.h"

#define FSP_BLK_MAGIC 0x65617400u
#define FSP_BLK_EVENT_SIZE 48u

/* Is path a blktrace file (its first 4 bytes the magic, in either order),
 * or NAME with a NAME.blktrace.0 beside it? */
int fsp_blktrace_is(const char *path);

/* Parse the events of one file's bytes (named name in messages), adding
 * them to the capture being collected in *c. 0, or -1 with err set. */
struct fsp_blk_capture;
struct fsp_blk_capture *fsp_blk_capture_new(void);
int fsp_blk_capture_add(struct fsp_blk_capture *c, const unsigned char *buf, size_t len,
			const char *name, char *err, size_t errlen);
/* The collected events as IOs, into *t; frees c. 0, or -1 with err set. */
int fsp_blk_capture_finish(struct fsp_blk_capture *c, struct fsp_iotrace *t, char *err,
			   size_t errlen);
void fsp_blk_capture_free(struct fsp_blk_capture *c);

/* path: NAME.blktrace.N (that one file), or NAME (all of NAME.blktrace.0,
 * .1, ... that exist). 0, or -1 with err set. */
int fsp_blktrace_load(const char *path, struct fsp_iotrace *t, char *err, size_t errlen);

#endif

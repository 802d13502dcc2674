/*
 * iotrace.h - a captured IO workload, as every trace source becomes it
 * (docs/replay.md): fio's iolog (iolog.h), a blktrace capture
 * (blkparse.h), a mount's recorded requests (src/cli/replay.c). One struct
 * per IO: what it does, to which file (or the device), where, how much,
 * when it was issued, by which thread, and when it completed when the
 * source knows (then the replay keeps its happens-before order,
 * replay_order.h). Pure: no clock, no IO.
 */
#ifndef FSP_BENCH_IOTRACE_H
#define FSP_BENCH_IOTRACE_H

#include <stddef.h>
#include <stdint.h>

enum fsp_iotrace_op {
	FSP_IOTRACE_READ,
	FSP_IOTRACE_WRITE,
	FSP_IOTRACE_FSYNC,    /* fsync, or a block-level cache flush */
	FSP_IOTRACE_DATASYNC, /* fdatasync */
	FSP_IOTRACE_TRIM,     /* trim/discard: counted, not replayed */
	FSP_IOTRACE__COUNT
};

#define FSP_IOTRACE_DEVICE UINT32_MAX /* file: a block-level IO (offsets on the device) */

struct fsp_iotrace_io {
	uint64_t issue_ns;    /* from the trace's start */
	uint64_t complete_ns; /* the source's completion, when t->has_complete */
	uint64_t offset;      /* bytes in the file, or on the device */
	uint32_t len;         /* bytes; 0 for a sync */
	uint32_t file;        /* index in t->file, or FSP_IOTRACE_DEVICE */
	uint32_t thread;      /* the issuing thread (source's numbering); 0 if unknown */
	uint8_t op;           /* enum fsp_iotrace_op */
	uint8_t fua;          /* a block-level write with FUA */
};

struct fsp_iotrace_file {
	char *name;        /* as the source names it */
	uint64_t size;     /* the end of the farthest IO on it */
	uint64_t read_end; /* the end of the farthest read (what must exist before) */
};

struct fsp_iotrace {
	struct fsp_iotrace_io *io;
	size_t n, cap;
	struct fsp_iotrace_file *file;
	size_t nfiles, fcap;
	int has_complete;      /* every IO has its completion time */
	uint64_t device_size;  /* block-level: the end of the farthest IO */
	uint64_t unpaired;     /* block-level: issues whose completion was not in the capture */
};

/* Append one IO (its file's size follows). 0, or -1 out of memory. */
int fsp_iotrace_add(struct fsp_iotrace *t, const struct fsp_iotrace_io *io);
/* The file named name, added if new: its index, or -1 out of memory. */
int64_t fsp_iotrace_file(struct fsp_iotrace *t, const char *name);
void fsp_iotrace_free(struct fsp_iotrace *t);

/* Sort by issue time (stable), the first IO at 0. */
void fsp_iotrace_sort(struct fsp_iotrace *t);

/* One of "read", "write", "fsync", "datasync", "trim". */
const char *fsp_iotrace_op_name(int op);

#define FSP_IOTRACE_KEEP_IDLE UINT64_MAX

/*
 * The intended issue time of each IO of a sorted trace, in at[0..n):
 * every idle gap (nothing in flight: after the latest completion so far,
 * or, without completion times, after the previous issue) longer than
 * max_idle_ns shrinks to max_idle_ns (FSP_IOTRACE_KEEP_IDLE: none does),
 * then every time is multiplied by scale (1: as recorded; 0.5: twice as
 * fast; 0: all at once, as fast as the order allows). Returns the time
 * the clipping removed, before scaling.
 */
uint64_t fsp_iotrace_schedule(const struct fsp_iotrace *t, uint64_t max_idle_ns, double scale,
			    uint64_t *at);

#endif

/*
 * decomp.h - one decomposition per engine IO: the join of each IO the job
 * engine timed (submit to reap) with the rows of the layers below that
 * served it, into named parts that add up to its total by construction.
 *
 *   a rate step    lag (intended issue time to io_submit), then:
 *   raw device     submit, block_queue, device, complete
 *   native file    fs_submit, block_queue, device, fs_complete
 *   fsprism mount  submit, fuse_queue, daemon_recv, layer, inject, emu,
 *                  backing (and inside it the backing IO's block_queue, device),
 *                  fuse_reply, complete
 *
 * What cannot be attributed (no block request or daemon row found, a gap
 * with nothing in flight, a request that began before the IO, clock
 * inversions, FUSE transport rows absent) is the part `residual`, counted
 * by reason, never folded into a neighbour. docs/prism.md defines each part.
 *
 * Pure: rows in, parts out; the readers are in src/db/. Matching is a sort
 * and one sweep over time with the IOs in flight as the active set:
 * O((n + m) log(n + m) + m * depth) for n IOs, m rows, depth IOs in flight.
 */
#ifndef FSP_PRISM_DECOMP_H
#define FSP_PRISM_DECOMP_H

#include <stddef.h>
#include <stdint.h>
#include "src/base/hist.h"
#include "src/db/decomp_rows.h" /* the rows it joins */

enum fsp_dc_part {
	FSP_DC_SUBMIT,      /* raw: submit to the first block request; mount: to the FUSE send */
	FSP_DC_FS_SUBMIT,   /* native file system: submit to its first bio's request */
	FSP_DC_FUSE_QUEUE,  /* FUSE request sent by the kernel to received by a worker */
	FSP_DC_DAEMON_RECV, /* received to fsprism's handler entry (libfuse's dispatch) */
	FSP_DC_LAYER,       /* fsprism's own work in the handler */
	FSP_DC_INJECT,      /* of the handler: the delay mount --inject added (ops.inject_ns) */
	FSP_DC_EMU,         /* the emulation's work in the handler */
	FSP_DC_BACKING,     /* backing system calls, outside the backing IO's block layer */
	FSP_DC_BLOCK_QUEUE, /* a request made, none yet on the device */
	FSP_DC_DEVICE,      /* a request on the device (union over split requests) */
	FSP_DC_FUSE_REPLY,  /* the handler's reply to the kernel's end of the request */
	FSP_DC_COMPLETE,    /* the last completion (raw) or FUSE end (mount) to reap */
	FSP_DC_FS_COMPLETE, /* native file system: the last completion to reap */
	FSP_DC_LAG,         /* a rate step: the intended issue time to the io_submit */
	FSP_DC_RESIDUAL,    /* not attributed: see enum fsp_dc_why */
	FSP_DC__COUNT
};
const char *fsp_dc_part_name(unsigned part);

/* Why time is residual (the residual part is their sum). */
enum fsp_dc_why {
	FSP_DC_NO_BLOCK,   /* no block request found (page cache, unwritten extent, untraced) */
	FSP_DC_GAP,        /* between the first and last row, nothing of the IO in flight */
	FSP_DC_INVERTED,   /* a row's stamps out of order, or outside the IO's window */
	FSP_DC_NOT_NESTED, /* a request made before the IO was submitted (merged into) */
	FSP_DC_NO_DAEMON,  /* mount: no daemon row for the IO (not recorded, sampled) */
	FSP_DC_NO_FUSE,    /* mount: the FUSE transport's rows or columns are absent */
	FSP_DC_WHY__COUNT
};
const char *fsp_dc_why_name(unsigned why);

enum fsp_dc_kind { FSP_DC_RAW, FSP_DC_FILE, FSP_DC_MOUNT };

/*
 * From the disk's bytes to the target's: the disk from `base` (a
 * partition's start in bytes; 0 for a whole disk), then for a file its
 * extents (any order, physical offsets in the partition; those without a
 * location are skipped). A request crossing extents counts, piece by
 * piece, where each piece maps.
 */
struct fsp_dc_map {
	uint64_t base;
	const struct fsp_extent *ext; /* NULL: raw */
	size_t n;
};

struct fsp_dc_in {
	enum fsp_dc_kind kind;
	const struct fsp_dc_io *io;
	size_t nio;
	/* raw and file: the target's requests; mount: the backing device's */
	const struct fsp_dc_block *blk;
	size_t nblk;
	/* mount: from the backing device to the daemon's offsets; base
	 * UINT64_MAX: not mapped, the backing requests are matched to daemon
	 * rows by time, direction and blk_tgid alone, first come first served */
	struct fsp_dc_map map;
	uint32_t blk_tgid;       /* mount: only requests queued by this process (0: any) */
	const struct fsp_dc_daemon *dmn; /* mount */
	size_t ndmn;
	const struct fsp_dc_fuse *fuse; /* mount; NULL: no fuse_reqs rows */
	size_t nfuse;
};

/* The parts of one IO: sum(ns) == reap_ns - submit_ns + lag_ns (its
 * latency from its intended time), and ns[FSP_DC_RESIDUAL] == sum(why_ns). */
struct fsp_dc_parts {
	uint64_t ns[FSP_DC__COUNT];
	uint64_t why_ns[FSP_DC_WHY__COUNT];
	unsigned rows; /* block requests (raw, file) or daemon rows (mount) joined */
};

typedef void (*fsp_dc_emit_fn)(void *arg, size_t io_index, const struct fsp_dc_parts *p);

/*
 * Decompose every IO of in (in any order) and call emit once per IO, in
 * index order. Which rows serve an IO: same direction, range overlapping
 * the IO's (through map), made inside [submit, reap] (or before submit and
 * issued inside it: not nested, residual until its issue); a daemon row's
 * pid must be the IO's tid. Of IOs that claim the same bytes of one row
 * (two IOs in flight on one range), one gets it: first the one whose tid
 * queued it, then the earliest submitted that still lacks bytes. A row
 * serving several IOs on different bytes (a merged request) counts fully
 * in each: its time is the time each waited. 0, or -1 (out of memory).
 */
int fsp_dc_join(const struct fsp_dc_in *in, fsp_dc_emit_fn emit, void *arg);

/*
 * Per-part distributions over many IOs, in bounded memory (histograms),
 * with the tail attribution: the mean of each part over the IOs whose
 * total is at or above the p99 of the totals, beside the same over the
 * IOs between p45 and p55. The thresholds come from the totals first.
 */
struct fsp_dc_sum {
	struct fsp_hist part[FSP_DC__COUNT];
	struct fsp_hist total;
	uint64_t why_ns[FSP_DC_WHY__COUNT];
	uint64_t p45, p55, p99; /* of the totals */
	uint64_t tail_n, mid_n;
	uint64_t tail_ns[FSP_DC__COUNT], mid_ns[FSP_DC__COUNT];
	uint64_t rows; /* rows joined */
	uint64_t ios_without_rows;
};
/* malloc'd, thresholds from the n totals (any order); NULL: no memory. */
struct fsp_dc_sum *fsp_dc_sum_new(const uint64_t *totals, size_t n);
void fsp_dc_sum_add(struct fsp_dc_sum *s, const struct fsp_dc_parts *p);
/* emit function for fsp_dc_join: arg is the struct fsp_dc_sum */
void fsp_dc_sum_emit(void *arg, size_t io_index, const struct fsp_dc_parts *p);
void fsp_dc_sum_free(struct fsp_dc_sum *s);

#endif

/*
 * rows.h - where the block-layer trace keeps its requests until the
 * measured window is over: a list of fixed-size chunks, grown by one
 * thread (the trace's consumer), bounded by a cap on the rows (each row
 * past it, or one that finds no memory, is counted as dropped), and the
 * join of each row to the engine step whose window it fell in.
 * Kept apart from the BPF code so that it is tested without a kernel.
 */
#ifndef FSP_TRACE_ROWS_H
#define FSP_TRACE_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include "src/db/block_ios.h"

#define FSP_BT_CHUNK_ROWS 4096

struct fsp_bt_chunk {
	struct fsp_bt_chunk *next;
	size_t n;
	struct fsp_block_io rows[FSP_BT_CHUNK_ROWS];
};

struct fsp_bt_rows {
	struct fsp_bt_chunk *head, *tail;
	size_t n;         /* rows kept */
	size_t cap;       /* at most this many (0: none at all) */
	uint64_t dropped; /* rows not kept: over the cap or out of memory */
};

void fsp_bt_rows_init(struct fsp_bt_rows *r, size_t cap);
/* Keep a copy of io: 0, or -1 when it was counted as dropped. */
int fsp_bt_rows_add(struct fsp_bt_rows *r, const struct fsp_block_io *io);
void fsp_bt_rows_free(struct fsp_bt_rows *r);

/* A step's measured window, CLOCK_MONOTONIC, both ends inclusive. */
struct fsp_bt_window {
	uint64_t start_ns, end_ns;
};

/*
 * Set each row's step to the index of the window holding the moment its
 * request entered the block layer (queue_ns, else insert_ns, else
 * issue_ns); -1 when it is in none (ramp, idle gaps, preparation). The
 * windows are in time order and do not overlap; the steps that did not run
 * (start_ns 0: after an interrupt or an error) come last and hold nothing.
 */
void fsp_bt_rows_assign_steps(struct fsp_bt_rows *r, const struct fsp_bt_window *w,
			      size_t nw);

#endif

/*
 * rows.h - where a kernel-side trace keeps its rows until the measured
 * window is over: a list of fixed-size chunks of rows of one type (block
 * requests, FUSE requests), grown by one thread (the trace's consumer),
 * bounded by a cap on the rows (each row past it, or one that finds no
 * memory, is counted as dropped), stored once the window is over; and
 * the join of each block request to the engine step whose window it fell
 * in.
 * Kept apart from the BPF code so that it is tested without a kernel.
 */
#ifndef FSP_TRACE_ROWS_H
#define FSP_TRACE_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include "src/db/block_ios.h"

#define FSP_TROWS_CHUNK 4096 /* rows per chunk */

struct fsp_trows_chunk {
	struct fsp_trows_chunk *next;
	size_t n;
	_Alignas(16) unsigned char data[]; /* FSP_TROWS_CHUNK rows of elem bytes */
};

struct fsp_trows {
	struct fsp_trows_chunk *head, *tail;
	size_t elem;      /* bytes per row */
	size_t n;         /* rows kept */
	size_t cap;       /* at most this many (0: none at all) */
	uint64_t dropped; /* rows not kept: over the cap or out of memory */
};

/* Row i of chunk c, of type T. */
#define FSP_TROWS_AT(c, T, i) (&((T *)(void *)(c)->data)[i])

void fsp_trows_init(struct fsp_trows *r, size_t elem, size_t cap);
/* Keep a copy of row (elem bytes): 0, or -1 when it was counted as dropped. */
int fsp_trows_add(struct fsp_trows *r, const void *row);
void fsp_trows_free(struct fsp_trows *r);
/* Store the rows of run in one transaction, a chunk at a time, with insert
 * (a table's batched insert: fsp_block_ios_insert, fsp_fuse_reqs_insert).
 * 0, or -1 (printed) with none stored. */
int fsp_trows_store(const struct fsp_trows *r, struct fsp_store *st, int64_t run,
		    int (*insert)(struct fsp_store *st, int64_t run, const void *rows, size_t n));

/* A step's measured window, CLOCK_MONOTONIC, both ends inclusive. */
struct fsp_bt_window {
	uint64_t start_ns, end_ns;
};

/*
 * Rows of struct fsp_block_io: set each row's step to the index of the
 * window holding the moment its request entered the block layer (queue_ns,
 * else insert_ns, else issue_ns); -1 when it is in none (ramp, idle gaps,
 * preparation). The windows are in time order and do not overlap; the
 * steps that did not run (start_ns 0: after an interrupt or an error) come
 * last and hold nothing.
 */
void fsp_bt_rows_assign_steps(struct fsp_trows *r, const struct fsp_bt_window *w,
			      size_t nw);

#endif

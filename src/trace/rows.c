/*
 * rows.c - the traces' bounded row store, its storing, and the block rows'
 * join to steps (rows.h).
 */
#include <stdlib.h>
#include <string.h>
#include "src/trace/rows.h"

void fsp_trows_init(struct fsp_trows *r, size_t elem, size_t cap)
{
	r->head = r->tail = NULL;
	r->elem = elem;
	r->n = 0;
	r->cap = cap;
	r->dropped = 0;
}

int fsp_trows_add(struct fsp_trows *r, const void *row)
{
	if (r->n >= r->cap) {
		r->dropped++;
		return -1;
	}
	struct fsp_trows_chunk *c = r->tail;
	if (!c || c->n == FSP_TROWS_CHUNK) {
		c = malloc(sizeof(*c) + FSP_TROWS_CHUNK * r->elem);
		if (!c) {
			r->dropped++;
			return -1;
		}
		c->next = NULL;
		c->n = 0;
		if (r->tail)
			r->tail->next = c;
		else
			r->head = c;
		r->tail = c;
	}
	memcpy(c->data + c->n++ * r->elem, row, r->elem);
	r->n++;
	return 0;
}

void fsp_trows_free(struct fsp_trows *r)
{
	struct fsp_trows_chunk *c = r->head;
	while (c) {
		struct fsp_trows_chunk *next = c->next;
		free(c);
		c = next;
	}
	r->head = r->tail = NULL;
	r->n = 0;
}

int fsp_trows_store(const struct fsp_trows *r, struct fsp_store *st, int64_t run,
		    int (*insert)(struct fsp_store *st, int64_t run, const void *rows, size_t n))
{
	if (fsp_store_tx_begin(st) != 0)
		return -1;
	for (const struct fsp_trows_chunk *c = r->head; c; c = c->next)
		if (insert(st, run, c->data, c->n) != 0) {
			fsp_store_tx_rollback(st);
			return -1;
		}
	return fsp_store_tx_commit(st);
}

static uint64_t entered_ns(const struct fsp_block_io *io)
{
	if (io->queue_ns)
		return io->queue_ns;
	return io->insert_ns ? io->insert_ns : io->issue_ns;
}

/* Index of the window holding t (binary search over ordered windows), or -1. */
static int window_of(uint64_t t, const struct fsp_bt_window *w, size_t nw)
{
	size_t lo = 0, hi = nw;
	while (lo < hi) { /* first window that ends at or after t */
		size_t mid = lo + (hi - lo) / 2;
		if (w[mid].end_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nw && w[lo].start_ns <= t && t <= w[lo].end_ns)
		return (int)lo;
	return -1;
}

void fsp_bt_rows_assign_steps(struct fsp_trows *r, const struct fsp_bt_window *w,
			      size_t nw)
{
	size_t nran = 0; /* steps run in order: those that ran are a prefix */
	while (nran < nw && w[nran].start_ns)
		nran++;
	for (struct fsp_trows_chunk *c = r->head; c; c = c->next)
		for (size_t i = 0; i < c->n; i++) {
			struct fsp_block_io *io = FSP_TROWS_AT(c, struct fsp_block_io, i);
			io->step = window_of(entered_ns(io), w, nran);
		}
}

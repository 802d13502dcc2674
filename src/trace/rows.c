/*
 * rows.c - the trace's bounded row store and its join to steps (rows.h).
 */
#include <stdlib.h>
#include "src/trace/rows.h"

void fsp_bt_rows_init(struct fsp_bt_rows *r, size_t cap)
{
	r->head = r->tail = NULL;
	r->n = 0;
	r->cap = cap;
	r->dropped = 0;
}

int fsp_bt_rows_add(struct fsp_bt_rows *r, const struct fsp_block_io *io)
{
	if (r->n >= r->cap) {
		r->dropped++;
		return -1;
	}
	struct fsp_bt_chunk *c = r->tail;
	if (!c || c->n == FSP_BT_CHUNK_ROWS) {
		c = malloc(sizeof(*c));
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
	c->rows[c->n++] = *io;
	r->n++;
	return 0;
}

void fsp_bt_rows_free(struct fsp_bt_rows *r)
{
	struct fsp_bt_chunk *c = r->head;
	while (c) {
		struct fsp_bt_chunk *next = c->next;
		free(c);
		c = next;
	}
	r->head = r->tail = NULL;
	r->n = 0;
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

void fsp_bt_rows_assign_steps(struct fsp_bt_rows *r, const struct fsp_bt_window *w,
			      size_t nw)
{
	size_t nran = 0; /* steps run in order: those that ran are a prefix */
	while (nran < nw && w[nran].start_ns)
		nran++;
	for (struct fsp_bt_chunk *c = r->head; c; c = c->next)
		for (size_t i = 0; i < c->n; i++)
			c->rows[i].step = window_of(entered_ns(&c->rows[i]), w, nran);
}

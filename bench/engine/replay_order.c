/*
 * replay_order.c - the happens-before order and the depth of a recorded
 * device IO sequence (replay_order.h).
 */
#include <stdlib.h>
#include <string.h>
#include "bench/engine/replay_order.h"
#include "src/base/cmp.h"

/* a time and the IO it is of: sorted by time, then position (stable) */
struct key {
	uint64_t ns;
	size_t i;
};

static int by_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	return FSP_CMP(x->ns, y->ns) ?: FSP_CMP(x->i, y->i);
}

int fsp_replay_order_init(struct fsp_replay_order *o, struct fsp_replay_io *io, size_t n)
{
	memset(o, 0, sizeof *o);
	size_t m = n ? n : 1;
	struct key *k = malloc(m * sizeof *k);
	struct fsp_replay_io *sorted = malloc(m * sizeof *sorted);
	o->need = malloc(m * sizeof *o->need);
	o->by_complete = malloc(m * sizeof *o->by_complete);
	o->done = calloc(m, 1);
	if (!k || !sorted || !o->need || !o->by_complete || !o->done) {
		free(k);
		free(sorted);
		fsp_replay_order_free(o);
		return -1;
	}
	o->n = n;
	for (size_t i = 0; i < n; i++)
		k[i] = (struct key){ io[i].issue_ns, i };
	qsort(k, n, sizeof *k, by_key);
	for (size_t i = 0; i < n; i++) {
		sorted[i] = io[k[i].i];
		if (sorted[i].complete_ns < sorted[i].issue_ns)
			sorted[i].complete_ns = sorted[i].issue_ns;
	}
	if (n)
		memcpy(io, sorted, n * sizeof *io);
	free(sorted);
	for (size_t i = 0; i < n; i++)
		k[i] = (struct key){ io[i].complete_ns, i };
	qsort(k, n, sizeof *k, by_key);
	for (size_t i = 0; i < n; i++)
		o->by_complete[i] = k[i].i;
	free(k);
	/* issues ascend, so the completed prefix only grows: one walk */
	size_t p = 0;
	for (size_t i = 0; i < n; i++) {
		while (p < n && io[o->by_complete[p]].complete_ns < io[i].issue_ns)
			p++;
		o->need[i] = p;
		/* every IO completed before i's issue was issued before it, so
		 * those in flight are the i before it less the need[i] done */
		uint32_t d = fsp_replay_recorded_depth(o, i);
		if (d > o->depth_max)
			o->depth_max = d;
		o->depth_sum += d;
	}
	return 0;
}

void fsp_replay_order_free(struct fsp_replay_order *o)
{
	free(o->need);
	free(o->by_complete);
	free(o->done);
	memset(o, 0, sizeof *o);
}

void fsp_replay_done(struct fsp_replay_order *o, size_t i)
{
	o->done[i] = 1;
	while (o->done_prefix < o->n && o->done[o->by_complete[o->done_prefix]])
		o->done_prefix++;
}

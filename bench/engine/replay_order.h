/*
 * replay_order.h - the order and queue depth of a recorded device IO
 * sequence, for replaying it without its timing (compare --replay).
 *
 * A recording shows which IOs happened before which: IO j completed
 * before IO i was issued (a journal commit after its data, a flush after
 * the writes it covers). The replay keeps exactly that: IO i is submitted,
 * in issue order, once every IO that completed before i was issued in the
 * recording has completed in the replay. What is in flight at i's
 * submission is then a subset of what was in flight at i's issue in the
 * recording, so the replay's depth never exceeds the recorded one, and a
 * QD1 recording replays at QD1.
 *
 * The IOs that completed before i was issued are a prefix of the
 * completion order, of length need[i]; the replay keeps done_prefix, the
 * longest prefix of that order all completed, and i is ready when
 * done_prefix >= need[i]. Pure: no clock, no IO.
 */
#ifndef FSP_BENCH_REPLAY_ORDER_H
#define FSP_BENCH_REPLAY_ORDER_H

#include <stddef.h>
#include <stdint.h>

enum fsp_replay_dir { FSP_REPLAY_READ, FSP_REPLAY_WRITE, FSP_REPLAY_FLUSH };

/* One recorded device IO. */
struct fsp_replay_io {
	uint64_t issue_ns, complete_ns; /* in the recording (any one clock) */
	uint64_t offset;                /* bytes on the device */
	uint32_t len;                   /* bytes; 0 for a flush */
	uint8_t dir;                    /* enum fsp_replay_dir */
	uint8_t fua;                    /* a write stable on the media at completion */
};

struct fsp_replay_order {
	size_t n;
	size_t *need;        /* per IO, in issue order: the IOs completed before it was issued */
	size_t *by_complete; /* the IOs (issue-order indices) in completion order */
	uint8_t *done;       /* per IO: completed in the replay */
	size_t done_prefix;  /* the longest prefix of by_complete all done */
	/* the recording's depth: the IOs in flight at each IO's issue, itself included */
	uint32_t depth_max;
	uint64_t depth_sum;  /* over the n IOs: the mean is depth_sum / n */
};

/*
 * Sorts io[0..n) by issue time (IOs issued at the same time keep their
 * order; a completion before its issue counts as at the issue) and fills
 * *o for it. 0, or -1 out of memory (*o then needs no free).
 */
int fsp_replay_order_init(struct fsp_replay_order *o, struct fsp_replay_io *io, size_t n);
void fsp_replay_order_free(struct fsp_replay_order *o);

/* The recording's depth at IO i's issue (i in issue order). */
static inline uint32_t fsp_replay_recorded_depth(const struct fsp_replay_order *o, size_t i)
{
	return (uint32_t)(i - o->need[i] + 1);
}

/* May IO i (in issue order) be submitted? */
static inline int fsp_replay_ready(const struct fsp_replay_order *o, size_t i)
{
	return o->done_prefix >= o->need[i];
}

/* IO i completed in the replay (or was left out). */
void fsp_replay_done(struct fsp_replay_order *o, size_t i);

#endif

/*
 * replay.h - a recorded device IO sequence run again on a device with
 * libaio, in the recording's order and at most at its depth
 * (replay_order.h), without its timing: each IO goes out as soon as the
 * IOs the recording shows before it have completed.
 */
#ifndef FSP_BENCH_REPLAY_H
#define FSP_BENCH_REPLAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "bench/engine/replay_order.h"

#define FSP_REPLAY_MAX_LEN (8u << 20)  /* longer IOs are replayed as their first 8 MiB */
#define FSP_REPLAY_MAX_DEPTH 1024u     /* in flight at most (the aio context's size) */

struct fsp_replayer; /* the aio context and buffers, kept across sequences */

/* For IOs up to FSP_REPLAY_MAX_LEN on fd (opened O_RDWR | O_DIRECT),
 * whose logical block size is lbs, waiting for completions as the engine
 * does with that poll_ns (reap.h). NULL with err set on failure. */
struct fsp_replayer *fsp_replayer_new(int fd, unsigned lbs, uint64_t poll_ns, char *err,
				      size_t errlen);
void fsp_replayer_free(struct fsp_replayer *r);

struct fsp_replay_result {
	uint64_t read_ios, write_ios, flushes;
	uint64_t read_bytes, write_bytes;
	uint64_t skipped;      /* offset or length off the logical block size */
	uint64_t started_ns, ended_ns;
	/* the replay's depth: in flight at each submission, itself included */
	uint32_t depth_max;
	uint64_t depth_sum, submitted;
};

/*
 * Replays io[0..o->n), in issue order as fsp_replay_order_init left them,
 * adding to *res. Reads and writes asynchronously; a FUA write with
 * RWF_DSYNC; a flush as an asynchronous fdatasync. Stops submitting when
 * *stop is set and waits for what is in flight. 0, or -1 with err set
 * (the IO, its offset and the errno's text).
 */
int fsp_replay_run(struct fsp_replayer *r, const struct fsp_replay_io *io,
		   struct fsp_replay_order *o, volatile sig_atomic_t *stop,
		   struct fsp_replay_result *res, char *err, size_t errlen);

#endif

/*
 * reap.h - waiting for an aio context's next completions: a short poll of
 * the completion ring, then sleep (reap.c says why).
 */
#ifndef FSP_REAP_H
#define FSP_REAP_H

#include <libaio.h>
#include <stdint.h>

/* the engine's default poll (the `poll` parameter, docs/profiles.md) */
#define FSP_POLL_DEFAULT_NS 1000000ull

/*
 * Polling only pays while this few IOs are in flight. With more, a sleeping
 * thread's wake-up is hidden behind the IOs still running, and a poll only
 * takes CPU time from whatever completes them (docs/results/engine-vs-fio.md).
 */
#define FSP_POLL_MAX_INFLIGHT 4u

/* The waiting state of one aio context (reap.c). */
struct fsp_reaper {
	io_context_t ctx;
	uint64_t poll_ns;     /* the longest poll; 0: sleep at once, as fio does */
	uint64_t quiet_until; /* no poll before this time (fsp_now_ns), see reap.c */
	unsigned held;        /* polls in a row that held another task off */
	uint64_t polls;       /* waits that polled */
	uint64_t backoffs;    /* times the poll was set aside for FSP_POLL_BACKOFF_NS */
};

void fsp_reaper_init(struct fsp_reaper *r, io_context_t ctx, uint64_t poll_ns);

/*
 * io_getevents(ctx, 1, nr, events, NULL), but first, if poll_ns and at most
 * FSP_POLL_MAX_INFLIGHT IOs are in flight and no recent poll held another
 * task off the CPU, look at the completion ring for up to poll_ns, giving
 * the CPU to any other runnable task between looks.
 * Returns what io_getevents returns.
 */
int fsp_reap(struct fsp_reaper *r, unsigned inflight, long nr, struct io_event *events);

/* 1 if ctx's completion ring can be read in user space (the poll works), else 0 */
int fsp_reap_ring_usable(io_context_t ctx);

#endif

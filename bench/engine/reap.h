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
 * io_getevents(ctx, 1, nr, events, NULL), but first, if poll_ns, look at the
 * completion ring for up to poll_ns, giving the CPU to any other runnable
 * task between looks. Returns what io_getevents returns.
 */
int fsp_reap(io_context_t ctx, long nr, struct io_event *events, uint64_t poll_ns);

/* 1 if ctx's completion ring can be read in user space (the poll works), else 0 */
int fsp_reap_ring_usable(io_context_t ctx);

#endif

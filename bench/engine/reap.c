/*
 * reap.c - waiting for an aio context's next completions (reap.h).
 *
 * io_getevents() with min_nr 1 sleeps until a completion wakes the thread.
 * That wake-up is not the storage's time, yet at low queue depth it sits
 * inside every IO's latency, and what it costs depends on where the thread
 * and the completing CPU happen to be: an idle CPU may be in a deep sleep
 * state, and on a virtual machine whose idle vCPU halts, waking it is a
 * VM exit. On this project's test machines the same 128 KiB QD1 read ran
 * at 16k or 24k IOPS, for fio as for the engine, by nothing but placement
 * (docs/results/engine-vs-fio.md).
 *
 * So the engine waits the way io_uring's hybrid polling does: it first
 * looks at the completion ring that the kernel maps into the process (the
 * struct aio_ring that libaio's io_context_t points at, the same ring fio's
 * userspace_reap reads) for up to poll_ns, calling sched_yield() between
 * looks so that a task that must run on this CPU to complete the IO (a
 * loop device's worker, a FUSE daemon's thread) runs at once; then it
 * calls io_getevents, which returns at once when an event is there and
 * sleeps otherwise. poll_ns 0 is fio's way: sleep straight away.
 *
 * Only the ring's header is read here, and only to see whether it is
 * empty; the events themselves are always taken by io_getevents, so the
 * kernel's head index stays the kernel's to move.
 */
#include <sched.h>
#include "bench/engine/reap.h"
#include "src/base/clock.h"

/* the head of the kernel's struct aio_ring (fs/aio.c), a stable ABI */
struct aio_ring_head {
	unsigned id, nr, head, tail;
	unsigned magic, compat_features, incompat_features, header_length;
};
#define AIO_RING_MAGIC 0xa10a10a1u

/*
 * A sched_yield() that took longer than this gave the CPU to another task:
 * the CPU is shared, quite likely with the work that completes this IO (a
 * loop device's worker on the same CPU copying 128 KiB), and polling on
 * only takes turns with it. Then the engine sleeps instead, as without a
 * poll. A yield with nothing else to run returns in well under a
 * microsecond; a switch to another task and back takes several. With both
 * pinned to one CPU, polling through such turns left 128 KiB QD1 reads and
 * mixed IO at 0.98 and 0.86 of fio's IOPS; with this rule, 1.14 and 1.01
 * (two rounds each, docs/results/engine-vs-fio.md).
 */
#define FSP_POLL_SHARED_NS 5000u

int fsp_reap_ring_usable(io_context_t ctx)
{
	const struct aio_ring_head *ring = (const void *)ctx;
	return ring && ring->magic == AIO_RING_MAGIC && ring->incompat_features == 0;
}

static int ring_empty(const struct aio_ring_head *ring)
{
	return __atomic_load_n(&ring->head, __ATOMIC_RELAXED) ==
	       __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
}

int fsp_reap(io_context_t ctx, unsigned inflight, long nr, struct io_event *events,
	     uint64_t poll_ns)
{
	if (poll_ns && inflight <= FSP_POLL_MAX_INFLIGHT && fsp_reap_ring_usable(ctx)) {
		const struct aio_ring_head *ring = (const void *)ctx;
		uint64_t now = fsp_now_ns(), until = now + poll_ns;
		while (ring_empty(ring) && now < until) {
			sched_yield();
			uint64_t after = fsp_now_ns();
			if (after - now > FSP_POLL_SHARED_NS)
				break; /* see FSP_POLL_SHARED_NS */
			now = after;
		}
	}
	return io_getevents(ctx, 1, nr, events, NULL);
}

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

/*
 * sched_yield() does not make the scheduler run a task that has lately had
 * more than its share of the CPU: it lets that task wait until the poller
 * has had as much. So a poll on a CPU it shares with a busy task (a FUSE
 * daemon's worker spinning in its handler, a loop device's worker copying)
 * may hold that task off for tens of microseconds before a yield finally
 * gives it the CPU, and the IO the task was to serve waits as long. With
 * every thread of a compare on one CPU and 100 us injected in the daemon's
 * read handler, the kernel's FUSE queue grew by 71 us at p50 (against 1.9
 * us with the engine sleeping, docs/results/decomp-residual.md). A poll
 * that had run for more than FSP_POLL_HELD_NS when a yield gave the CPU
 * away, and whose IO had still not completed when the CPU came back, held
 * another task off. When FSP_POLL_HELD_STREAK polls in a row did, the
 * engine does not poll again for FSP_POLL_BACKOFF_NS and waits as fio
 * does. A yield that gives the CPU away at once (the task was ready to
 * run) held nobody off: that hand-over is cheaper than a sleep and a
 * wake-up, and the poll goes on as before. One poll that held something
 * off now and then is not a shared CPU: with the device's work on the
 * other CPU at 128 KiB QD1, about one poll in a thousand looked held, and
 * setting the poll aside on each took those cells from 2.1-2.3x fio to
 * 1.2x (docs/profiles.md, "Waiting for completions").
 */
#define FSP_POLL_HELD_NS 20000u
#define FSP_POLL_HELD_STREAK 4u
#define FSP_POLL_BACKOFF_NS 100000000ull

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

void fsp_reaper_init(struct fsp_reaper *r, io_context_t ctx, uint64_t poll_ns)
{
	*r = (struct fsp_reaper){ .ctx = ctx, .poll_ns = poll_ns };
}

int fsp_reap(struct fsp_reaper *r, unsigned inflight, long nr, struct io_event *events)
{
	const struct aio_ring_head *ring = (const void *)r->ctx;
	if (r->poll_ns && inflight <= FSP_POLL_MAX_INFLIGHT && fsp_reap_ring_usable(r->ctx)) {
		uint64_t now = fsp_now_ns();
		if (now >= r->quiet_until) {
			uint64_t start = now, until = now + r->poll_ns;
			int held = 0;
			r->polls++;
			while (ring_empty(ring) && now < until) {
				sched_yield();
				uint64_t after = fsp_now_ns();
				if (after - now > FSP_POLL_SHARED_NS) {
					/* see FSP_POLL_SHARED_NS and FSP_POLL_HELD_NS */
					held = now - start > FSP_POLL_HELD_NS && ring_empty(ring);
					break;
				}
				now = after;
			}
			r->held = held ? r->held + 1 : 0;
			if (r->held >= FSP_POLL_HELD_STREAK) {
				r->quiet_until = fsp_now_ns() + FSP_POLL_BACKOFF_NS;
				r->backoffs++;
				r->held = 0;
			}
		}
	}
	return io_getevents(r->ctx, 1, nr, events, NULL);
}

/*
 * clock.h - the one clock every fsprism measurement uses.
 *
 * CLOCK_MONOTONIC is served by the vDSO on Linux, so reading it is not a
 * system call; that is what lets the hot path time itself "with no syscall
 * beyond the clock".
 */
#ifndef FSP_CLOCK_H
#define FSP_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t fsp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall-clock time, for run start/end stamps only (never for durations). */
static inline uint64_t fsp_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Wait ns from now and return the time actually waited. A delay that is
 * itself the measurement (an injected fault, a model drive's cost) has to
 * be exact at 10-100 us, where a sleep is not: the timer slack (50 us for a
 * normal thread) and the wake-up add as much as is asked. So it spins on the
 * vDSO clock (no system call); only what lies beyond the first millisecond
 * of a longer wait is slept, with an absolute deadline, and the rest spun.
 */
#define FSP_SPIN_NS 1000000ull
static inline void fsp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline uint64_t fsp_wait_ns(uint64_t ns)
{
	uint64_t t0 = fsp_now_ns(), end = t0 + ns, now = t0;
	if (ns > 2 * FSP_SPIN_NS) {
		uint64_t wake = end - FSP_SPIN_NS;
		struct timespec ts = { (time_t)(wake / 1000000000ull),
				       (long)(wake % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while ((now = fsp_now_ns()) < end)
		fsp_cpu_relax();
	return now - t0;
}

#endif

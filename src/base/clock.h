/*
 * clock.h - the one clock every fsprism measurement uses.
 *
 * CLOCK_MONOTONIC is served by the vDSO on Linux, so reading it is not a
 * system call; that is what lets the hot path time itself "with no syscall
 * beyond the clock".
 */
#ifndef FSP_CLOCK_H
#define FSP_CLOCK_H

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

#endif

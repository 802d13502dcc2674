/*
 * trace_replay.h - a trace (iotrace.h) replayed at its times: each IO is
 * submitted at its intended issue time (fsp_iotrace_schedule: idle gaps
 * clipped, time scaled) once the IOs it depends on have completed -- with
 * completion times, the recording's happens-before order and so at most
 * its depth (replay_order.h); without them, in issue order with at most
 * qd of one thread's IOs in flight. libaio on O_DIRECT descriptors where
 * offset and size fit the alignment, else on a buffered descriptor (its
 * io_submit then does the IO before returning), counted. Every IO's lag
 * is its submission's time less its intended one: fsprism's own fidelity.
 */
#ifndef FSP_BENCH_TRACE_REPLAY_H
#define FSP_BENCH_TRACE_REPLAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "bench/engine/iotrace.h"

/* Where a trace file's IOs go: descriptors and the offset added to its
 * own (its place on a device or a single target file). */
struct fsp_treplay_file {
	int fd_direct; /* O_DIRECT, or -1: every IO buffered */
	int fd_buffered;
	uint64_t base;
	unsigned align; /* direct IO's offset and size multiple */
};

struct fsp_treplay_opts {
	uint64_t max_idle_ns; /* FSP_IOTRACE_KEEP_IDLE: keep every gap */
	double scale;         /* 1: as recorded */
	uint64_t late_ns;     /* an IO later than this is counted late */
	unsigned qd;          /* without completion times: in flight per thread */
};

struct fsp_treplay_result {
	uint64_t ios[FSP_IOTRACE__COUNT]; /* replayed, by op (trims: not replayed) */
	uint64_t read_bytes, write_bytes;
	uint64_t skipped;  /* trims and zero-length IOs left out */
	uint64_t buffered; /* IOs off the direct alignment, done through the buffered descriptor */
	uint64_t truncated; /* IOs longer than the replay's largest, replayed as their first part */
	uint64_t started_ns, ended_ns, busy_ns; /* busy: at least one IO in flight */
	uint64_t intended_ns, clipped_ns; /* the schedule's length, and what clipping removed */
	/* per replayed IO; sorted ascending when fsp_treplay_run returns */
	uint64_t *lag_ns, *read_lat_ns, *write_lat_ns, *sync_lat_ns;
	size_t nlag, nread, nwrite, nsync;
	/* reads' and writes' latency from their intended issue time (the lag
	 * plus the service time: what an application issuing at the trace's
	 * times would see, coordinated omission undone), nread and nwrite */
	uint64_t *read_ilat_ns, *write_ilat_ns;
	uint64_t late; /* IOs with a lag above late_ns */
	/* the lag's own part: submission less the later of the intended time
	 * and the moment the IOs it waits for were seen done (nlag of them,
	 * sorted); the rest of a lag is the target's, serving those IOs slower
	 * than the recording did */
	uint64_t *self_lag_ns;
	uint64_t late_self; /* IOs whose own part alone is above late_ns */
	uint32_t depth_max, recorded_depth_max;
	uint64_t depth_sum, submitted;
};

/*
 * Replays t (sorted) onto files[] (files[k] for trace file k, files[t->nfiles]
 * for FSP_IOTRACE_DEVICE). Stops submitting when *stop is set. 0, or -1 with
 * err set (the failing IO and errno); *res holds what was done either way;
 * free it with fsp_treplay_result_free.
 */
int fsp_treplay_run(const struct fsp_iotrace *t, const struct fsp_treplay_file *files,
		    const struct fsp_treplay_opts *o, volatile sig_atomic_t *stop,
		    struct fsp_treplay_result *res, char *err, size_t errlen);
void fsp_treplay_result_free(struct fsp_treplay_result *res);

#endif

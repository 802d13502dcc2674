/*
 * replay.h - a run's recorded op rows as a trace (bench/engine/iotrace.h):
 * what `fsprism replay DB:RUN` replays and `fsprism export` writes as a
 * fio iolog. Each read, write and fsync row that succeeded is one IO of the
 * file "inoNODE" (the FUSE node; an engine run's rows all have node 0),
 * at its start time, with its completion; the rest is counted.
 */
#ifndef FSP_CLI_REPLAY_H
#define FSP_CLI_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include "bench/engine/iotrace.h"
#include "src/db/store.h"

/* What the trace leaves out. */
struct fsp_trace_skips {
	uint64_t meta;       /* lookups, creates, opens, ...: not IO */
	uint64_t failed_ops; /* IO that failed */
	uint64_t other;      /* the emulation's own device IO */
};

/* run's op rows into t, sorted (the first IO at 0). 0, or -1 with the
 * reason in err (out of memory, the database's message). */
int fsp_trace_of_run(struct fsp_store *st, int64_t run, struct fsp_iotrace *t,
		     struct fsp_trace_skips *sk, char *err, size_t errlen);

#endif

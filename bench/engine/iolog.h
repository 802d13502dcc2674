/*
 * iolog.h - fio's iolog (`write_iolog=`), versions 2 and 3, as a trace
 * (iotrace.h). The first line is `fio version 2 iolog` or `fio version 3
 * iolog`; then per line `FILE add|open|close` or `FILE ACTION OFFSET
 * LENGTH` with ACTION read, write, sync, datasync, trim, and in version 2
 * wait (OFFSET microseconds after the previous wait; fio ignores waits
 * under 100); version 3 puts each line's time first, in microseconds from
 * the run's start, and has no wait. Each IO is of the file it names, all
 * of thread 0 (fio writes one iolog per job); no completion times.
 * A mistake: "PATH:LINE: what".
 *
 * fsp_iolog_write is the other way: a trace as a version 3 iolog, which
 * fio replays (read_iolog=) and fsp_iolog_parse reads back as the same IOs.
 */
#ifndef FSP_BENCH_IOLOG_H
#define FSP_BENCH_IOLOG_H

#include <stddef.h>
#include <stdio.h>
#include "bench/engine/iotrace.h"

/* Does the file start like an iolog ("fio version ")? */
int fsp_iolog_is(const char *path);

/* Parse f (named name in messages) into *t. 0, or -1 with err set. */
int fsp_iolog_parse(FILE *f, const char *name, struct fsp_iotrace *t, char *err, size_t errlen);
int fsp_iolog_load(const char *path, struct fsp_iotrace *t, char *err, size_t errlen);

/*
 * Write t (sorted, fsp_iotrace_sort) on f as a version 3 iolog: every file
 * added and opened at time 0, the IOs at their issue times in microseconds
 * (rounded down), every file closed at the last IO's time. A block-level IO
 * (FSP_IOTRACE_DEVICE) is of the file named device. 0, or -1 when a file's
 * name cannot stand in an iolog (empty, or with a blank or a newline).
 * Write errors are the caller's to see (ferror).
 */
int fsp_iolog_write(FILE *f, const struct fsp_iotrace *t, const char *device);

#endif

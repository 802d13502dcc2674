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

#endif

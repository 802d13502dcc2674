/*
 * fiowrite.h - a profile written as the equivalent fio job file.
 *
 * `fsprism profiles --fio PROFILE` prints it, so that a reader can check
 * fsprism's numbers with fio; `fsprism run --hosts` hands it to fio's
 * client/server. The writer is a pure function of the resolved parameters
 * (a profile with its overrides, the span already capped to the target):
 * one fio job per step (qds x mixes, in fsprism's step order), each behind
 * a stonewall, named like fsprism's step labels; what maps to what, and
 * what fio cannot say, is docs/fio.md.
 */
#ifndef FSP_BENCH_FIOWRITE_H
#define FSP_BENCH_FIOWRITE_H

#include <stddef.h>
#include <stdio.h>
#include "bench/engine/profile.h"

/* The jobs between steps that only idle are named so ("fsprism-idle-0"),
 * and the import (fiojson.h) skips them. */
#define FSP_FIO_IDLE_PREFIX "fsprism-idle-"

struct fsp_fiowrite {
	const char *profile;   /* the profile or job file, named in the file's first
				* comment; NULL: none */
	const char *filename;  /* the target, fio's filename= (required; ':' escaped) */
	const char *iolog;     /* non-NULL: every job writes write_iolog=IOLOG.STEP */
};

/*
 * Write the job file for p on f. 0, or -1 with one line in err naming what
 * fio cannot be told (e.g. "burst: fio thinks for a fixed time after each
 * burst; give both --time and --bytes to set it (docs/fio.md)", a target
 * with a newline in its name; a ':' is escaped as fio wants); nothing is
 * written then. A write error on f is
 * the caller's to see (ferror).
 */
int fsp_fio_write_job(FILE *f, const struct fsp_params *p, const struct fsp_fiowrite *w,
		      char *err, size_t errlen);

/* The number of fio jobs that carry IO (fsprism's steps), in the order written. */
unsigned fsp_fio_job_steps(const struct fsp_params *p);

#endif

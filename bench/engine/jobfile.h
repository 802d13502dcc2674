/*
 * jobfile.h - profiles written as small text files.
 *
 * Format (docs/profiles.md): one `key = value` per line; blank lines and
 * lines starting with '#' are ignored (also text after " #"). `profile =
 * NAME` (optional, anywhere in the file) picks the base profile whose
 * values the other keys override; without it the base is a neutral 4 KiB
 * random-read QD1 job. Every other key is a parameter name
 * (fsp_param_names: bs, qd, mix, access, offsets, interleave, norepeat,
 * span, offset, time, bytes, ramp, burst, duty, idle, pattern, seed,
 * segment, tail, timeline), plus `score = qd124|steps|bursts|fill` and
 * `fill = yes|no`.
 *
 *   # 50/50 mixed sequential at 64 KiB, QD2
 *   profile = mixed-seq
 *   bs = 64k
 *   qd = 2
 *   mix = 50
 */
#ifndef FSP_BENCH_JOBFILE_H
#define FSP_BENCH_JOBFILE_H

#include <stddef.h>
#include "bench/engine/profile.h"

/*
 * Load a job file at `scale` into p. Returns 0, or -1 with a one-line
 * message "PATH:LINE: problem" (or "PATH: problem") in err.
 */
int fsp_jobfile_load(const char *path, enum fsp_scale scale,
		     struct fsp_params *p, char *err, size_t errlen);

/* The same, from a string (name is used in messages). */
int fsp_jobfile_parse(const char *name, const char *text, enum fsp_scale scale,
		      struct fsp_params *p, char *err, size_t errlen);

#endif

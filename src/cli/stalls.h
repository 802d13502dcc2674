/*
 * stalls.h - the stalls and outliers of an engine run, named
 * (src/prism/stall.h): for `fsprism stats` (a "stalls" section) and for
 * `diagnose`, which prints them per target. Reads each step's timeline and
 * IOs, and decomposes only the IOs the findings name. docs/prism.md,
 * "Stalls and outliers".
 */
#ifndef FSP_CLI_STALLS_H
#define FSP_CLI_STALLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "src/prism/stall.h" /* struct fsp_stall, fsp_stall_text */

struct fsp_store;

/*
 * The findings of every step of engine run `run` (mount_run: the run of the
 * mount it ran on; 0: looked up from the block trace, none for raw or a
 * native file), by step, the longest first in each: *out malloc'd (free
 * it), *n of them (0 for a run that is no engine run). 0, or -1 with err.
 */
int fsp_stalls_find(struct fsp_store *st, int64_t run, int64_t mount_run,
		    struct fsp_stall **out, size_t *n, char *err, size_t errlen);

/* `stats`: the section of engine run `run` in format table or json (json:
 * ',\n  "stalls": [...]'; csv: nothing). 0, or -1 (printed). */
int fsp_stats_stalls(struct fsp_store *st, int64_t run, const char *format, FILE *out);

#endif

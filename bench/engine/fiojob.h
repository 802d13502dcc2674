/*
 * fiojob.h - knowing a fio job file when one is given as an fsprism job.
 *
 * fsprism reads its own job-file format only (jobfile.h). Users of this
 * field have fio job files at hand and will hand one over; rather than fail
 * on its first "[global]" with "missing '='", the job-file loader asks this
 * module whether the text is fio's, and if so says so, with the nearest
 * fsprism parameters for the keys that have one and the keys that have none.
 */
#ifndef FSP_BENCH_FIOJOB_H
#define FSP_BENCH_FIOJOB_H

#include <stddef.h>

/*
 * If text looks like a fio job file (an INI section line such as
 * "[global]", or a key only fio has, such as "ioengine" or "rw"), write into
 * msg one line:
 *   "LINE: a fio job file ('[global]'); fsprism reads its own job-file
 *    format only (docs/profiles.md); nearest fsprism parameters: --bs=128k
 *    --qd=1 ... (no counterpart: numjobs=4, ...)"
 * and return 1. Otherwise return 0 and leave msg alone. The translation
 * takes [global] and the first job section, in file order, the later value
 * winning, as fio does.
 */
int fsp_fiojob_explain(const char *text, char *msg, size_t msglen);

#endif

/* placeholder */
#ifndef FSP_BENCH_JOBFILE_H
#define FSP_BENCH_JOBFILE_H
#endif

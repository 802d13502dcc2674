/* placeholder */
#ifndef FSP_BENCH_PROFILE_H
#define FSP_BENCH_PROFILE_H
#endif

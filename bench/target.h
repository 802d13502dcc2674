/* placeholder */
#ifndef FSP_BENCH_TARGET_H
#define FSP_BENCH_TARGET_H
#endif

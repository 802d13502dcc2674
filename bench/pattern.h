/* placeholder */
#ifndef FSP_BENCH_PATTERN_H
#define FSP_BENCH_PATTERN_H
#endif

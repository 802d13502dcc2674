/* placeholder */
#ifndef FSP_BENCH_ENGINE_H
#define FSP_BENCH_ENGINE_H
#endif

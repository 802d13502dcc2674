/*
 * rate.h - open-loop rate control for the job engine: when each IO of a
 * rate step is meant to go out (the arrival schedule), and the bookkeeping
 * of when it really went (lag) and of the rate achieved.
 *
 * Pure: no clock, no IO, no libm. The engine (engine.c) asks the schedule
 * for the next intended issue time, submits the IO at that time if a slot
 * is free (later, as soon as one is, if not), and notes the actual submit
 * time here. An IO's latency is then counted from its intended time, so a
 * stall that holds IOs back shows in their latency instead of hiding in
 * fewer IOs issued (coordinated omission; docs/profiles.md, "Load curves").
 */
#ifndef FSP_BENCH_RATE_H
#define FSP_BENCH_RATE_H

#include <stdint.h>
#include "src/base/hist.h"

enum fsp_arrivals {
	FSP_ARRIVALS_UNIFORM = 0, /* IO i at start + i / rate, exactly */
	FSP_ARRIVALS_POISSON,     /* exponential gaps of mean 1 / rate, seeded */
};

/* An IO that went out later than this after its intended time is "late". */
#define FSP_RATE_LATE_NS 1000000ull

struct fsp_rate_sched {
	double rate;              /* IOs per second, > 0 */
	enum fsp_arrivals arrivals;
	uint64_t start_ns;        /* intended time of IO 0 */
	uint64_t n;               /* IOs scheduled so far */
	uint64_t next_ns;         /* intended time of the next IO */
	uint64_t rng;             /* Poisson: splitmix64 state */
	double acc_ns;            /* Poisson: sum of the gaps so far */
};

/* The schedule of a step at rate IOs/s from start_ns; the seed picks the Poisson gaps. */
void fsp_rate_init(struct fsp_rate_sched *s, double rate, enum fsp_arrivals arrivals,
		   uint64_t seed, uint64_t start_ns);
/* The intended time of the next IO (not consumed). */
static inline uint64_t fsp_rate_peek(const struct fsp_rate_sched *s)
{
	return s->next_ns;
}
/* Consume the next IO: returns its intended time and moves to the one after. */
uint64_t fsp_rate_take(struct fsp_rate_sched *s);

/*
 * -ln(u) for u = (x + 0.5) / 2^32: with x uniform in [0, 2^32), an
 * exponential variate of mean 1. Without libm: log2 by the position of the
 * top bit and 40 squarings of the mantissa (error below 1e-9); exposed for
 * the unit test.
 */
double fsp_rate_neg_ln(uint32_t x);

/* What a rate step did against its schedule. */
struct fsp_rate_book {
	struct fsp_hist lag;      /* actual submit - intended, per IO (lag.max: the largest) */
	uint64_t ios;             /* IOs submitted */
	uint64_t late;            /* of them, lag > late_ns */
	uint64_t early;           /* sent before their intended time: 0 unless the engine errs */
	uint64_t late_ns;
};

void fsp_rate_book_init(struct fsp_rate_book *b, uint64_t late_ns);
/* One IO submitted at actual_ns, intended at intended_ns (actual >= intended). */
static inline uint64_t fsp_rate_book_note(struct fsp_rate_book *b, uint64_t intended_ns,
					  uint64_t actual_ns)
{
	uint64_t lag = actual_ns > intended_ns ? actual_ns - intended_ns : 0;
	fsp_hist_add(&b->lag, lag);
	b->ios++;
	if (lag > b->late_ns)
		b->late++;
	return lag;
}

/* IOs per second: ios over ns (0 when ns is 0). */
double fsp_rate_achieved(uint64_t ios, uint64_t ns);

#endif

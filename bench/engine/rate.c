/*
 * rate.c - the arrival schedule of an open-loop (rate) step and its
 * bookkeeping: intended against actual submit times, and the achieved
 * rate (rate.h). Pure arithmetic: the engine brings the clock.
 */
#include <string.h>
#include "bench/engine/rate.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

double fsp_rate_neg_ln(uint32_t x)
{
	/* u = y / 2^33 with y = 2x + 1, odd, in [1, 2^33) */
	uint64_t y = 2ull * x + 1;
	int msb = 63 - __builtin_clzll(y);
	double m = (double)y / (double)(1ull << msb); /* [1, 2) */
	double frac = 0, bit = 0.5;
	for (int i = 0; i < 40; i++, bit /= 2) {
		m *= m;
		if (m >= 2) {
			m /= 2;
			frac += bit;
		}
	}
	double log2u = (double)msb + frac - 33.0; /* <= 0 */
	return -log2u * 0.69314718055994530942;
}

static void schedule_next(struct fsp_rate_sched *s)
{
	double period = 1e9 / s->rate;
	if (s->arrivals == FSP_ARRIVALS_POISSON) {
		/* IO 0 at the start, then exponential gaps */
		if (s->n > 0)
			s->acc_ns += period * fsp_rate_neg_ln((uint32_t)(splitmix64(&s->rng) >> 32));
		s->next_ns = s->start_ns + (uint64_t)s->acc_ns;
	} else {
		/* from the start, not from the previous IO: no rounding drift */
		s->next_ns = s->start_ns + (uint64_t)((double)s->n * period);
	}
}

void fsp_rate_init(struct fsp_rate_sched *s, double rate, enum fsp_arrivals arrivals,
		   uint64_t seed, uint64_t start_ns)
{
	memset(s, 0, sizeof(*s));
	s->rate = rate > 0 ? rate : 1;
	s->arrivals = arrivals;
	s->start_ns = start_ns;
	s->rng = seed ^ 0x72617465ull; /* "rate" */
	schedule_next(s);
}

uint64_t fsp_rate_take(struct fsp_rate_sched *s)
{
	uint64_t t = s->next_ns;
	s->n++;
	schedule_next(s);
	return t;
}

void fsp_rate_book_init(struct fsp_rate_book *b, uint64_t late_ns)
{
	memset(b, 0, sizeof(*b));
	fsp_hist_init(&b->lag);
	b->late_ns = late_ns;
}

double fsp_rate_achieved(uint64_t ios, uint64_t ns)
{
	return ns ? (double)ios * 1e9 / (double)ns : 0.0;
}

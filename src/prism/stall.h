/*
 * stall.h - stalls and outliers of one engine step, named: the moments a
 * throughput dip comes from, found in rows already read (no sqlite3, no
 * kernel). docs/prism.md, "Stalls and outliers".
 *
 *   stall    one or more consecutive whole timeline buckets, inside the
 *            step's window, in which nothing completed while an IO was in
 *            flight for the whole bucket (a bucket with nothing in flight is
 *            idle: a duty cycle's or a burst test's gap, not a stall)
 *   outlier  an IO at least FSP_STALL_OUTLIER_X times the step's p99.9 of
 *            its direction and at least FSP_STALL_OUTLIER_MIN_NS beyond it
 *
 * Outliers within FSP_STALL_MERGE_NS of each other are one finding, and an
 * outlier overlapping a stall is part of the stall. A step keeps its
 * FSP_STALL_CAP longest findings; `more` counts the rest.
 *
 * Two steps, so that only the few IOs named are decomposed: fsp_stall_detect
 * finds the findings and the IO each names (the longest involved), the
 * caller joins those IOs with the layers' rows (src/prism/decomp.h), and
 * fsp_stall_attribute names the part that held the IO longest.
 */
#ifndef FSP_PRISM_STALL_H
#define FSP_PRISM_STALL_H

#include <stddef.h>
#include <stdint.h>
#include "src/prism/decomp.h"

/* An outlier: at least this many times the step's p99.9 of its direction... */
#define FSP_STALL_OUTLIER_X 4.0
/* ... and at least this far beyond it (a scheduler hiccup is not one). */
#define FSP_STALL_OUTLIER_MIN_NS 1000000ull
/* Outliers closer than this (one's submission to another's reap) merge. */
#define FSP_STALL_MERGE_NS 100000000ull
/* Findings kept per step, the longest first. */
#define FSP_STALL_CAP 3

enum { FSP_STALL_ZERO = 1, FSP_STALL_OUTLIER = 2 };

struct fsp_stall {
	int step;
	int kind;            /* FSP_STALL_ZERO (buckets at zero throughput) or FSP_STALL_OUTLIER */
	double at_ms;        /* from the step's start */
	double duration_ms;  /* the stall's length; for an outlier its IO's latency */
	int zero_buckets;    /* buckets at zero (0 for an outlier) */
	int ios;             /* outliers merged into the finding (a stall: the IOs in
				flight across it); 0: no IO rows */
	double io_us;        /* the longest IO involved; 0: unknown (no IO rows) */
	int write;           /* its direction; -1 unknown */
	int part;            /* enum fsp_dc_part that held it longest; -1 unknown (no decomposition) */
	double part_share;   /* that part's share of the IO, 0..1 */
	double p999_us;      /* the step's p99.9 of that direction (0: unknown) */
	int more;            /* further findings of this step not listed (the cap);
				set on the step's last listed finding, 0 on the others */
};

/* One timeline bucket: what completed in [t_ns, t_ns + width). */
struct fsp_stall_bucket {
	uint64_t t_ns;
	uint64_t ios; /* reads and writes completed */
};

/* One step's evidence. */
struct fsp_stall_step {
	int step;
	uint64_t started_ns, ended_ns; /* the measured window (steps) */
	uint64_t busy_ns;              /* time with IO in flight (steps.busy_ns) */
	uint64_t width_ns;             /* the bucket width (0: no timeline) */
	const struct fsp_stall_bucket *b; /* by time */
	size_t nb;
	/* the step's IOs (any order); with all_ios 0 a sample or none */
	const struct fsp_dc_io *io;
	size_t nio;
	int all_ios;
	uint64_t p999_ns[2]; /* read, write; 0: no IOs of that direction */
};

/*
 * The findings of one step into out[0..max) (max >= FSP_STALL_CAP keeps
 * them all), the longest first; io_index[k] the index into s->io of the IO
 * finding k names (SIZE_MAX: none; its part stays -1). The number stored,
 * or -1 (out of memory). Where no IO rows show whether IO was in flight,
 * a zero bucket is a stall only when the step had less idle time
 * (ended - started - busy) than half a bucket.
 */
int fsp_stall_detect(const struct fsp_stall_step *s, struct fsp_stall *out, size_t *io_index,
		     size_t max);

/* The part of p that held the IO longest, and its share, into f. */
void fsp_stall_attribute(struct fsp_stall *f, const struct fsp_dc_parts *p);

/* One line for a person, e.g. "step 3 (mix=70/30): 600 ms at zero throughput
 * from 1200 ms (6 buckets); the longest IO, a write of 630 ms, spent 98% in
 * device". step_label NULL or "": no parenthesis. */
void fsp_stall_text(const struct fsp_stall *s, const char *step_label, char *buf, size_t len);

#endif

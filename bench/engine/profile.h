/*
 * profile.h - the reviewers' benchmark suite as named profiles, and the
 * parameters every profile (and job file, and command line) is made of.
 *
 * A profile fills a struct fsp_params at one of two scales: "full" is the
 * reviewers' sizes and durations (shared/methodology.md), "default" fits a
 * 2-core machine with a few GiB of disk and finishes in under a minute.
 * Any parameter can then be overridden by name (fsp_param_set), from the
 * command line (--bs=4k) or a job file (bs = 4k).
 *
 * The steps of a run are the cross product qds x mixes (one of them is
 * usually a single value); a fill profile is one step over the whole span.
 */
#ifndef FSP_BENCH_PROFILE_H
#define FSP_BENCH_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "bench/engine/engine.h"
#include "bench/engine/pattern.h"

#define FSP_MAX_LIST 32

enum fsp_score {
	FSP_SCORE_QD124 = 0, /* mean of the QD1, QD2, QD4 steps */
	FSP_SCORE_STEPS,     /* mean over steps (mixes) */
	FSP_SCORE_BURSTS,    /* mean over bursts */
	FSP_SCORE_FILL,      /* per-segment curve, mean of the tail, overall */
	FSP_SCORE_CURVE,     /* a load curve: the maximum (the closed-loop step) */
};

enum fsp_scale { FSP_SCALE_DEFAULT = 0, FSP_SCALE_FULL };

/*
 * One entry of the `rate` list: closed loop (`max`: the queue kept full,
 * which measures the maximum), a rate in IOs per second, or a percentage
 * of the rate that the latest closed-loop step before it achieved
 * (resolved at run time; docs/profiles.md, "Load curves").
 */
enum fsp_rate_kind { FSP_RATE_MAX = 0, FSP_RATE_IOPS, FSP_RATE_PCT };
struct fsp_rate_spec {
	enum fsp_rate_kind kind;
	unsigned value; /* IOPS or percent */
};
#define FSP_RATE_IOPS_MAX 10000000u
#define FSP_RATE_PCT_MAX 1000u

struct fsp_params {
	uint32_t bs;
	unsigned qds[FSP_MAX_LIST], nqd;
	unsigned mixes[FSP_MAX_LIST], nmix; /* read percentages */
	enum fsp_access access;
	enum fsp_offsets offsets; /* mixed IO: one offset sequence, or one per direction */
	enum fsp_interleave interleave; /* mixed IO: exact ratio, or random per IO */
	int norepeat;
	uint64_t span;        /* bytes; capped to the target at run time */
	uint64_t offset;      /* span start */
	uint64_t time_ns;     /* per step, busy time; 0 = no limit */
	uint64_t bytes;       /* per step; 0 = no limit (fill: the span) */
	uint64_t ramp_ns;     /* per step, IO before measuring starts; 0 = none */
	uint64_t poll_ns;     /* look for a completion this long before sleeping; 0 = sleep */
	uint64_t burst;       /* bytes per burst; 0 = no bursts */
	unsigned duty;        /* busy % (bursts, or steps without bursts) */
	uint64_t idle_ns;     /* extra idle between steps */
	struct fsp_pattern pattern;
	uint64_t seed;
	uint64_t segment;     /* fill: bytes per recorded segment */
	uint64_t tail;        /* fill: score the mean of the last `tail` bytes */
	uint64_t timeline_ns; /* throughput bucket width */
	int fill;             /* one sequential pass over the whole span */
	enum fsp_score score;
	int iops_score;       /* score in IOPS (random) rather than MB/s */
	unsigned span_set;    /* span given explicitly (not capped silently) */
	struct fsp_rate_spec rates[FSP_MAX_LIST]; /* one step per entry (innermost) */
	unsigned nrate;
	enum fsp_arrivals arrivals; /* rate steps: uniform or Poisson */
	uint64_t stop_p99_ns; /* end the run after the first rate step whose p99 passes it; 0 = never */
};

/* Steps of a run: qds x mixes x rates, or 1 for a fill. */
static inline unsigned fsp_params_nsteps(const struct fsp_params *p)
{
	return p->fill ? 1 : p->nqd * p->nmix * (p->nrate ? p->nrate : 1);
}

struct fsp_profile {
	const char *name;
	const char *summary;
};

extern const struct fsp_profile fsp_profiles[];
extern const size_t fsp_nprofiles;

/* "default" or "full": 0, or -1 if neither. */
int fsp_scale_parse(const char *s, enum fsp_scale *scale);

/* Fill p with profile `name` at `scale`. 0, or -1 if no such profile. */
int fsp_profile_load(const char *name, enum fsp_scale scale,
		     struct fsp_params *p);

/* Names of the settable parameters, NULL-terminated, in listing order. */
extern const char *const fsp_param_names[];

/*
 * Set one parameter from text. 0, or -1 with "<problem>" in err (the
 * caller prefixes the parameter name), e.g. "unknown parameter",
 * "'0' is not a queue depth (1..256)".
 */
int fsp_param_set(struct fsp_params *p, const char *key, const char *value,
		  char *err, size_t errlen);
/* Current value as text, in the form fsp_param_set accepts. */
void fsp_param_format(const struct fsp_params *p, const char *key, char *buf,
		      size_t len);
/* Is key a parameter name? Flags like "norepeat" take no value. */
int fsp_param_known(const char *key);
int fsp_param_is_flag(const char *key);

/* Does the job read / write at all (any mix below 100% / above 0% reads, or a fill)? */
int fsp_params_reads(const struct fsp_params *p);
int fsp_params_writes(const struct fsp_params *p);

/*
 * The label of the step at queue depth qd, read percentage read_pct and
 * rate (NULL: closed loop), as stats and compare show it: "fill", "qd=4",
 * "mix=70/30", "qd=4 mix=70/30", and with rate steps "rate=max",
 * "rate=10%", "qd=4 rate=2000".
 */
void fsp_step_label(const struct fsp_params *p, unsigned qd, unsigned read_pct,
		    const struct fsp_rate_spec *rate, char *buf, size_t len);

/* Check the parameters hang together (before the target is known). */
int fsp_params_check(const struct fsp_params *p, char *err, size_t errlen);
/*
 * The part of it that bounds memory (called again once the span is known):
 * qd x bs in flight, timeline buckets and burst/segment rows of the whole
 * run against FSP_INFLIGHT_MAX, FSP_TIMELINE_MAX, FSP_SEGMENTS_MAX.
 */
int fsp_params_check_memory(const struct fsp_params *p, char *err, size_t errlen);

#endif

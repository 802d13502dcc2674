/*
 * profile.c - the named profiles of the reviewers' suite and the parameter
 * table behind overrides, job files and `fsprism profiles` (profile.h).
 *
 * Sizes are binary: 4k = 4096, 1G = 2^30. The full-scale values are those
 * of shared/methodology.md (its "GB" read as GiB).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/engine/profile.h"
#include "bench/engine/reap.h"
#include "src/base/units.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)
#define PiB (1024ull * TiB)
#define MS 1000000ull
#define SEC 1000000000ull
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

const struct fsp_profile fsp_profiles[] = {
	{ "burst-randread", "4 KiB random read, QD1, in bursts at 20% duty" },
	{ "sustained-randread", "4 KiB random read, QD1..32, one step per QD" },
	{ "burst-randwrite", "4 KiB random write, QD1, in bursts at 20% duty" },
	{ "sustained-randwrite", "4 KiB random write, QD1..32, one step per QD" },
	{ "mixed-random", "4 KiB random, reads and writes interleaved, QD4, mixes 100/0..0/100, 50% duty" },
	{ "burst-seqread", "128 KiB sequential read, QD1, in bursts at 20% duty" },
	{ "sustained-seqread", "128 KiB sequential read, QD1..32, one step per QD" },
	{ "burst-seqwrite", "128 KiB sequential write, QD1, in bursts at 20% duty" },
	{ "sustained-seqwrite", "128 KiB sequential write, QD1..32, one step per QD" },
	{ "mixed-seq", "128 KiB sequential, reads and writes sharing one offset, QD1, mixes 100/0..0/100, 50% duty" },
	{ "fill", "128 KiB sequential write, QD32, the whole target once, throughput per segment" },
	{ "curve-randread", "load curve: 4 KiB random read, the maximum at QD128 (default scale QD32), then 10%..120% of it" },
	{ "curve-randwrite", "load curve: 4 KiB random write, the maximum at QD64 (default scale QD32), then 10%..120% of it" },
	{ "curve-seqread", "load curve: 64 KiB sequential read, the maximum at QD16, then 10%..120% of it" },
	{ "curve-seqwrite", "load curve: 64 KiB sequential write, the maximum at QD8, then 10%..120% of it" },
};
const size_t fsp_nprofiles = sizeof(fsp_profiles) / sizeof(fsp_profiles[0]);

/* The parameters, in listing order; their names are written only here. */
enum param {
	P_BS, P_QD, P_MIX, P_ACCESS, P_OFFSETS, P_INTERLEAVE, P_NOREPEAT, P_SPAN,
	P_OFFSET, P_TIME, P_BYTES, P_RAMP, P_POLL, P_BURST, P_DUTY, P_IDLE, P_PATTERN,
	P_SEED, P_SEGMENT, P_TAIL, P_TIMELINE, P_RATE, P_ARRIVALS, P_STOP_P99, P__COUNT
};

const char *const fsp_param_names[] = {
	[P_BS] = "bs", [P_QD] = "qd", [P_MIX] = "mix", [P_ACCESS] = "access",
	[P_OFFSETS] = "offsets", [P_INTERLEAVE] = "interleave", [P_NOREPEAT] = "norepeat",
	[P_SPAN] = "span", [P_OFFSET] = "offset", [P_TIME] = "time", [P_BYTES] = "bytes",
	[P_RAMP] = "ramp", [P_POLL] = "poll", [P_BURST] = "burst", [P_DUTY] = "duty", [P_IDLE] = "idle",
	[P_PATTERN] = "pattern", [P_SEED] = "seed", [P_SEGMENT] = "segment",
	[P_TAIL] = "tail", [P_TIMELINE] = "timeline", [P_RATE] = "rate",
	[P_ARRIVALS] = "arrivals", [P_STOP_P99] = "stop-p99", [P__COUNT] = NULL,
};

static void base_params(struct fsp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->bs = 4096;
	p->qds[0] = 1;
	p->nqd = 1;
	p->mixes[0] = 100;
	p->nmix = 1;
	p->access = FSP_ACCESS_RANDOM;
	p->duty = 100;
	p->pattern.kind = FSP_PATTERN_RANDOM;
	p->seed = 1;
	p->segment = GiB;
	p->tail = 16 * GiB;
	p->timeline_ns = 100 * MS;
	p->poll_ns = FSP_POLL_DEFAULT_NS;
	p->score = FSP_SCORE_STEPS;
	p->nrate = 1; /* rates[0]: max, closed loop */
}

static void set_qd_sweep(struct fsp_params *p)
{
	static const unsigned qds[] = { 1, 2, 4, 8, 16, 32 };
	for (unsigned i = 0; i < 6; i++)
		p->qds[i] = qds[i];
	p->nqd = 6;
}

static void set_mix_sweep(struct fsp_params *p)
{
	for (unsigned i = 0; i <= 10; i++)
		p->mixes[i] = 100 - 10 * i;
	p->nmix = 11;
}

/* Bursts: full = the reviewers' figures, default = ~1/32 of them. */
static void burst(struct fsp_params *p, int full, int seq, int read,
		  uint64_t burst_full, uint64_t total_full)
{
	p->bs = seq ? 128 * KiB : 4 * KiB;
	p->access = seq ? FSP_ACCESS_SEQ : FSP_ACCESS_RANDOM;
	p->iops_score = !seq;
	p->mixes[0] = read ? 100 : 0;
	p->duty = 20;
	p->score = FSP_SCORE_BURSTS;
	if (full) {
		p->span = 16 * GiB;
		p->burst = burst_full;
		p->bytes = total_full;
	} else {
		p->span = 256 * MiB;
		p->burst = burst_full / 16 > 1 * MiB ? burst_full / 16 : 1 * MiB;
		p->bytes = total_full / 32 > 16 * MiB ? total_full / 32 : 16 * MiB;
		p->time_ns = 3 * SEC;
	}
}

static void sustained(struct fsp_params *p, int full, int seq, int read)
{
	p->bs = seq ? 128 * KiB : 4 * KiB;
	p->access = seq ? FSP_ACCESS_SEQ : FSP_ACCESS_RANDOM;
	p->iops_score = !seq;
	p->mixes[0] = read ? 100 : 0;
	set_qd_sweep(p);
	p->score = FSP_SCORE_QD124;
	if (full) {
		p->span = 64 * GiB;
		p->time_ns = 60 * SEC;
		p->bytes = 32 * GiB;
		p->idle_ns = 60 * SEC;
	} else {
		p->span = 1 * GiB;
		p->time_ns = 2 * SEC;
		p->bytes = 1 * GiB;
		p->idle_ns = 200 * MS;
	}
}

static void mixed(struct fsp_params *p, int full, int seq)
{
	p->bs = seq ? 128 * KiB : 4 * KiB;
	p->access = seq ? FSP_ACCESS_SEQ : FSP_ACCESS_RANDOM;
	p->iops_score = !seq;
	p->qds[0] = seq ? 1 : 4;
	set_mix_sweep(p);
	p->duty = 50;
	p->score = FSP_SCORE_STEPS;
	if (full) {
		p->span = 64 * GiB;
		p->time_ns = 60 * SEC;
		p->bytes = 32 * GiB;
	} else {
		p->span = 1 * GiB;
		p->time_ns = 1500 * MS;
		p->bytes = 1 * GiB;
	}
}

static void fill(struct fsp_params *p, int full)
{
	p->bs = 128 * KiB;
	p->access = FSP_ACCESS_SEQ;
	p->qds[0] = 32;
	p->mixes[0] = 0;
	p->fill = 1;
	p->score = FSP_SCORE_FILL;
	if (full) {
		p->span = 0; /* the whole target */
		p->segment = 1 * GiB;
		p->tail = 16 * GiB;
	} else {
		p->span = 1 * GiB;
		p->segment = 64 * MiB;
		p->tail = 256 * MiB;
	}
}

/*
 * StorageReview's load curves (shared/methodology.md): its threads as the
 * queue depth (the cap on IOs outstanding); a closed-loop step measures the
 * maximum, then rate steps at 10%..120% of it. Default scale: QD at most 32
 * and 1 s a step, 13 s of IO per target.
 */
static void curve(struct fsp_params *p, int full, int seq, int read, unsigned threads)
{
	p->bs = seq ? 64 * KiB : 4 * KiB;
	p->access = seq ? FSP_ACCESS_SEQ : FSP_ACCESS_RANDOM;
	p->iops_score = 1;
	p->mixes[0] = read ? 100 : 0;
	p->qds[0] = full || threads <= 32 ? threads : 32;
	p->score = FSP_SCORE_CURVE;
	p->rates[0] = (struct fsp_rate_spec){ FSP_RATE_MAX, 0 };
	for (unsigned i = 1; i <= 12; i++)
		p->rates[i] = (struct fsp_rate_spec){ FSP_RATE_PCT, 10 * i };
	p->nrate = 13;
	if (full) {
		p->span = 64 * GiB;
		p->time_ns = 60 * SEC;
		p->idle_ns = 5 * SEC;
	} else {
		p->span = 1 * GiB;
		p->time_ns = 1 * SEC;
	}
}

int fsp_profile_load(const char *name, enum fsp_scale scale,
		     struct fsp_params *p)
{
	int full = scale == FSP_SCALE_FULL;
	base_params(p);
	if (!strcmp(name, "burst-randread"))
		burst(p, full, 0, 1, 32 * MiB, 1 * GiB);
	else if (!strcmp(name, "burst-randwrite"))
		burst(p, full, 0, 0, 4 * MiB, 128 * MiB);
	else if (!strcmp(name, "burst-seqread"))
		burst(p, full, 1, 1, 128 * MiB, 1 * GiB);
	else if (!strcmp(name, "burst-seqwrite"))
		burst(p, full, 1, 0, 128 * MiB, 1 * GiB);
	else if (!strcmp(name, "sustained-randread"))
		sustained(p, full, 0, 1);
	else if (!strcmp(name, "sustained-randwrite"))
		sustained(p, full, 0, 0);
	else if (!strcmp(name, "sustained-seqread"))
		sustained(p, full, 1, 1);
	else if (!strcmp(name, "sustained-seqwrite"))
		sustained(p, full, 1, 0);
	else if (!strcmp(name, "mixed-random"))
		mixed(p, full, 0);
	else if (!strcmp(name, "mixed-seq"))
		mixed(p, full, 1);
	else if (!strcmp(name, "fill"))
		fill(p, full);
	else if (!strcmp(name, "curve-randread"))
		curve(p, full, 0, 1, 128);
	else if (!strcmp(name, "curve-randwrite"))
		curve(p, full, 0, 0, 64);
	else if (!strcmp(name, "curve-seqread"))
		curve(p, full, 1, 1, 16);
	else if (!strcmp(name, "curve-seqwrite"))
		curve(p, full, 1, 0, 8);
	else
		return -1;
	return 0;
}

/* ---- value parsers (sizes and durations: src/base/units.h) ------------- */

int fsp_scale_parse(const char *s, enum fsp_scale *scale)
{
	if (!strcmp(s, "default"))
		*scale = FSP_SCALE_DEFAULT;
	else if (!strcmp(s, "full"))
		*scale = FSP_SCALE_FULL;
	else
		return -1;
	return 0;
}

/* "1,2,4" -> list of unsigned in [lo,hi]. */
static int parse_list(const char *s, unsigned *out, unsigned *n, unsigned lo,
		      unsigned hi, const char *what, char *err, size_t errlen)
{
	unsigned count = 0;
	const char *p = s;
	for (;;) {
		char *end;
		if (!isdigit((unsigned char)*p)) {
			snprintf(err, errlen, "'%s' is not a list of %s", s, what);
			return -1;
		}
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (errno || v < lo || v > hi) {
			snprintf(err, errlen, "'%.*s' is not a %s (%u..%u)",
				 (int)(end - p), p, what, lo, hi);
			return -1;
		}
		if (count == FSP_MAX_LIST) {
			snprintf(err, errlen, "more than %d values", FSP_MAX_LIST);
			return -1;
		}
		out[count++] = (unsigned)v;
		if (*end == 0)
			break;
		if (*end != ',') {
			snprintf(err, errlen, "'%s' is not a list of %s", s, what);
			return -1;
		}
		p = end + 1;
	}
	*n = count;
	return 0;
}

/* "max,10%,5000": closed loop, a percentage of the maximum, IOs per second. */
static int parse_rates(const char *s, struct fsp_params *p, char *err, size_t errlen)
{
	unsigned count = 0;
	const char *q = s;
	for (;;) {
		const char *end = q + strcspn(q, ",");
		struct fsp_rate_spec r = { FSP_RATE_MAX, 0 };
		int len = (int)(end - q);
		if (len == 3 && !strncmp(q, "max", 3)) {
			r.kind = FSP_RATE_MAX;
		} else {
			char *e;
			if (!isdigit((unsigned char)*q)) {
				snprintf(err, errlen, "'%s' is not a list of rates (max, N IOPS, P%%)", s);
				return -1;
			}
			errno = 0;
			unsigned long v = strtoul(q, &e, 10);
			int pct = e < end && *e == '%';
			if (pct)
				e++;
			if (e != end) {
				snprintf(err, errlen, "'%.*s' is not a rate (max, N IOPS, P%%)", len, q);
				return -1;
			}
			if (errno || v < 1 || v > (pct ? FSP_RATE_PCT_MAX : FSP_RATE_IOPS_MAX)) {
				snprintf(err, errlen, "'%.*s' is out of range (%s)", len, q,
					 pct ? "1%..1000%" : "1..10000000 IOPS");
				return -1;
			}
			r.kind = pct ? FSP_RATE_PCT : FSP_RATE_IOPS;
			r.value = (unsigned)v;
		}
		if (count == FSP_MAX_LIST) {
			snprintf(err, errlen, "more than %d values", FSP_MAX_LIST);
			return -1;
		}
		p->rates[count++] = r;
		if (*end == 0)
			break;
		q = end + 1;
	}
	p->nrate = count;
	return 0;
}

/*
 * Every size and duration has a range (docs/profiles.md, "Parameter
 * ranges"): wide enough for any methodology value, narrow enough that a
 * typo (timeline = 1ns, burst = 1) cannot turn a run into millions of rows
 * or gigabytes of tables. zero, if not NULL: 0 is accepted too, meaning that.
 */
struct range {
	uint64_t lo, hi;
	const char *zero;
	int duration;
};

static const struct range R_SPAN = { 512, PiB, "the whole target", 0 };
static const struct range R_OFFSET = { 0, PiB, NULL, 0 };
static const struct range R_BYTES = { 512, PiB, "no limit", 0 };
static const struct range R_BURST = { 512, 64 * GiB, "no bursts", 0 };
static const struct range R_SEGMENT = { 64 * KiB, TiB, NULL, 0 };
static const struct range R_TAIL = { 0, PiB, NULL, 0 };
static const struct range R_TIME = { 10 * MS, 24 * HOUR, "no limit", 1 };
static const struct range R_RAMP = { 1 * MS, 10 * MIN, "none", 1 };
static const struct range R_POLL = { 1000, 100 * MS, "no poll", 1 };
static const struct range R_IDLE = { 0, HOUR, NULL, 1 };
static const struct range R_TIMELINE = { 10 * MS, 60 * SEC, "none", 1 };
static const struct range R_STOP_P99 = { 1000, 10 * MIN, "never", 1 };

/* A range bound as a person writes it: 10ms, 60s, 10m, 24h. */
static void bound_text(const struct range *r, uint64_t v, char *buf, size_t len)
{
	if (!r->duration)
		fsp_format_size(v, buf, len);
	else if (v && v % HOUR == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(v / HOUR));
	else if (v >= 10 * MIN && v % MIN == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(v / MIN));
	else if (v && v % SEC == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(v / SEC));
	else
		fsp_format_duration(v, buf, len);
}

static int in_range(uint64_t v, const char *text, const struct range *r, char *err,
		    size_t errlen)
{
	if ((v == 0 && r->zero) || (v >= r->lo && v <= r->hi))
		return 0;
	char lo[32], hi[32];
	bound_text(r, r->lo, lo, sizeof(lo));
	bound_text(r, r->hi, hi, sizeof(hi));
	if (r->zero && r->lo)
		snprintf(err, errlen, "'%s' is out of range (%s..%s, or 0 for %s)", text,
			 lo, hi, r->zero);
	else
		snprintf(err, errlen, "'%s' is out of range (%s..%s)", text, lo, hi);
	return -1;
}

/* A size or a duration (as r says) within r. */
static int set_ranged(uint64_t *dst, const char *v, const struct range *r, char *err,
		      size_t errlen)
{
	uint64_t u;
	if (r->duration ? fsp_parse_duration(v, &u) : fsp_parse_size(v, &u)) {
		snprintf(err, errlen, "'%s' is not a %s", v, r->duration ?
			 "duration (e.g. 300ms, 2s, 1m)" : "size (e.g. 4k, 128M, 1G)");
		return -1;
	}
	if (in_range(u, v, r, err, errlen))
		return -1;
	*dst = u;
	return 0;
}

/*
 * How each parameter is read and written: a size or a duration within its
 * range (K_RANGED), or one of a few words, kept in the field at `field` of struct
 * fsp_params; K_OWN ones have code of their own in fsp_param_set and
 * fsp_param_format. A word list's first entry for a value is the one shown.
 */
enum kind { K_OWN = 0, K_RANGED, K_WORDS };

struct word {
	const char *text;
	int value;
};

struct spec {
	enum kind kind;
	size_t field;
	const struct range *range;   /* K_RANGED */
	const struct word *words;    /* K_WORDS, NULL-terminated */
	const char *expected;        /* K_WORDS: "'v' is not <expected>" */
};

static const struct word access_words[] = {
	{ "seq", FSP_ACCESS_SEQ }, { "random", FSP_ACCESS_RANDOM },
	{ "sequential", FSP_ACCESS_SEQ }, { "rand", FSP_ACCESS_RANDOM }, { NULL, 0 },
};
static const struct word offsets_words[] = {
	{ "shared", FSP_OFFSETS_SHARED }, { "per-direction", FSP_OFFSETS_PER_DIRECTION },
	{ NULL, 0 },
};
static const struct word arrivals_words[] = {
	{ "uniform", FSP_ARRIVALS_UNIFORM }, { "poisson", FSP_ARRIVALS_POISSON }, { NULL, 0 },
};
static const struct word interleave_words[] = {
	{ "exact", FSP_INTERLEAVE_EXACT }, { "random", FSP_INTERLEAVE_RANDOM }, { NULL, 0 },
};
/* a flag: given without a value, it is "yes" */
static const struct word yes_no_words[] = {
	{ "yes", 1 }, { "no", 0 }, { "", 1 }, { "1", 1 }, { "true", 1 },
	{ "0", 0 }, { "false", 0 }, { NULL, 0 },
};

#define FIELD(f) offsetof(struct fsp_params, f)
static const struct spec specs[P__COUNT] = {
	[P_ACCESS] = { K_WORDS, FIELD(access), NULL, access_words, "seq or random" },
	[P_OFFSETS] = { K_WORDS, FIELD(offsets), NULL, offsets_words, "shared or per-direction" },
	[P_INTERLEAVE] = { K_WORDS, FIELD(interleave), NULL, interleave_words, "exact or random" },
	[P_NOREPEAT] = { K_WORDS, FIELD(norepeat), NULL, yes_no_words, "yes or no" },
	[P_SPAN] = { K_RANGED, FIELD(span), &R_SPAN, NULL, NULL },
	[P_OFFSET] = { K_RANGED, FIELD(offset), &R_OFFSET, NULL, NULL },
	[P_TIME] = { K_RANGED, FIELD(time_ns), &R_TIME, NULL, NULL },
	[P_BYTES] = { K_RANGED, FIELD(bytes), &R_BYTES, NULL, NULL },
	[P_RAMP] = { K_RANGED, FIELD(ramp_ns), &R_RAMP, NULL, NULL },
	[P_POLL] = { K_RANGED, FIELD(poll_ns), &R_POLL, NULL, NULL },
	[P_BURST] = { K_RANGED, FIELD(burst), &R_BURST, NULL, NULL },
	[P_IDLE] = { K_RANGED, FIELD(idle_ns), &R_IDLE, NULL, NULL },
	[P_SEGMENT] = { K_RANGED, FIELD(segment), &R_SEGMENT, NULL, NULL },
	[P_TAIL] = { K_RANGED, FIELD(tail), &R_TAIL, NULL, NULL },
	[P_TIMELINE] = { K_RANGED, FIELD(timeline_ns), &R_TIMELINE, NULL, NULL },
	[P_ARRIVALS] = { K_WORDS, FIELD(arrivals), NULL, arrivals_words, "uniform or poisson" },
	[P_STOP_P99] = { K_RANGED, FIELD(stop_p99_ns), &R_STOP_P99, NULL, NULL },
};

static uint64_t *u64_field(struct fsp_params *p, const struct spec *sp)
{
	return (uint64_t *)((char *)p + sp->field);
}

/* the enums of the word parameters are int-sized (checked below) */
static int *int_field(struct fsp_params *p, const struct spec *sp)
{
	return (int *)((char *)p + sp->field);
}
_Static_assert(sizeof(enum fsp_access) == sizeof(int) &&
	       sizeof(enum fsp_offsets) == sizeof(int) &&
	       sizeof(enum fsp_interleave) == sizeof(int) &&
	       sizeof(enum fsp_arrivals) == sizeof(int), "word fields are ints");

static int set_word(int *dst, const char *v, const struct spec *sp, char *err,
		    size_t errlen)
{
	for (const struct word *w = sp->words; w->text; w++)
		if (!strcmp(v, w->text)) {
			*dst = w->value;
			return 0;
		}
	snprintf(err, errlen, "'%s' is not %s", v, sp->expected);
	return -1;
}

static void format_word(int value, const struct spec *sp, char *buf, size_t len)
{
	for (const struct word *w = sp->words; w->text; w++)
		if (w->value == value) {
			snprintf(buf, len, "%s", w->text);
			return;
		}
}

/* The parameter called key, or P__COUNT. */
static enum param param_of(const char *key)
{
	int i = 0;
	while (i < P__COUNT && strcmp(fsp_param_names[i], key))
		i++;
	return (enum param)i;
}

int fsp_param_known(const char *key)
{
	return param_of(key) != P__COUNT;
}

int fsp_param_is_flag(const char *key)
{
	return param_of(key) == P_NOREPEAT;
}

int fsp_param_set(struct fsp_params *p, const char *key, const char *v,
		  char *err, size_t errlen)
{
	uint64_t u;
	enum param k = param_of(key);
	if (k == P__COUNT) {
		snprintf(err, errlen, "unknown parameter");
		return -1;
	}
	const struct spec *sp = &specs[k];
	switch (sp->kind) {
	case K_RANGED:
		if (set_ranged(u64_field(p, sp), v, sp->range, err, errlen))
			return -1;
		if (k == P_SPAN)
			p->span_set = 1;
		return 0;
	case K_WORDS:
		return set_word(int_field(p, sp), v, sp, err, errlen);
	case K_OWN:
		break;
	}
	switch (k) {
	case P_BS:
		if (fsp_parse_size(v, &u) != 0) {
			snprintf(err, errlen, "'%s' is not a size (e.g. 4k, 128M, 1G)", v);
			return -1;
		}
		/* multiples of the target's logical block size are checked later */
		if (u < FSP_BS_MIN || u > FSP_BS_MAX) {
			snprintf(err, errlen, "'%s' is not a block size (512 to 16M)", v);
			return -1;
		}
		p->bs = (uint32_t)u;
		break;
	case P_QD:
		return parse_list(v, p->qds, &p->nqd, 1, FSP_QD_MAX, "queue depth",
				  err, errlen);
	case P_MIX:
		return parse_list(v, p->mixes, &p->nmix, 0, 100, "read percentage",
				  err, errlen);
	case P_DUTY: {
		char *end;
		unsigned long d = strtoul(v, &end, 10);
		if (!isdigit((unsigned char)*v) || *end || d < 1 || d > 100) {
			snprintf(err, errlen, "'%s' is not a duty cycle (1..100 percent busy)", v);
			return -1;
		}
		p->duty = (unsigned)d;
		break;
	}
	case P_PATTERN:
		return fsp_pattern_parse(v, &p->pattern, err, errlen);
	case P_RATE:
		return parse_rates(v, p, err, errlen);
	case P_SEED: {
		char *end;
		errno = 0;
		unsigned long long s = strtoull(v, &end, 0);
		if (!isdigit((unsigned char)*v) || *end || errno) {
			snprintf(err, errlen, "'%s' is not a number", v);
			return -1;
		}
		p->seed = s;
		break;
	}
	default:
		break;
	}
	return 0;
}

static void format_list(const unsigned *v, unsigned n, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "", v[i]);
}

void fsp_param_format(const struct fsp_params *p, const char *key, char *buf,
		      size_t len)
{
	enum param k = param_of(key);
	buf[0] = 0;
	if (k == P__COUNT)
		return;
	const struct spec *sp = &specs[k];
	const char *field = (const char *)p + sp->field;
	switch (sp->kind) {
	case K_RANGED:
		if (k == P_SPAN && p->span == 0)
			snprintf(buf, len, "whole");
		else if (sp->range->duration)
			fsp_format_duration(*(const uint64_t *)field, buf, len);
		else
			fsp_format_size(*(const uint64_t *)field, buf, len);
		return;
	case K_WORDS:
		format_word(*(const int *)field, sp, buf, len);
		return;
	case K_OWN:
		break;
	}
	switch (k) {
	case P_BS:
		fsp_format_size(p->bs, buf, len);
		break;
	case P_QD:
		format_list(p->qds, p->nqd, buf, len);
		break;
	case P_MIX:
		format_list(p->mixes, p->nmix, buf, len);
		break;
	case P_DUTY:
		snprintf(buf, len, "%u", p->duty);
		break;
	case P_PATTERN:
		fsp_pattern_format(&p->pattern, buf, len);
		break;
	case P_RATE: {
		size_t off = 0;
		for (unsigned i = 0; i < p->nrate && off < len; i++) {
			const struct fsp_rate_spec *r = &p->rates[i];
			if (r->kind == FSP_RATE_MAX)
				off += (size_t)snprintf(buf + off, len - off, "%smax", i ? "," : "");
			else
				off += (size_t)snprintf(buf + off, len - off, "%s%u%s", i ? "," : "",
							r->value, r->kind == FSP_RATE_PCT ? "%" : "");
		}
		break;
	}
	case P_SEED:
		snprintf(buf, len, "%llu", (unsigned long long)p->seed);
		break;
	default:
		break;
	}
}

void fsp_step_label(const struct fsp_params *p, unsigned qd, unsigned read_pct,
		    const struct fsp_rate_spec *rate, char *buf, size_t len)
{
	if (!p->fill && rate && (p->nrate > 1 || rate->kind != FSP_RATE_MAX)) {
		char r[24], pre[32] = "";
		if (rate->kind == FSP_RATE_MAX)
			snprintf(r, sizeof(r), "max");
		else
			snprintf(r, sizeof(r), "%u%s", rate->value,
				 rate->kind == FSP_RATE_PCT ? "%" : "");
		if (p->nqd > 1)
			snprintf(pre, sizeof(pre), "qd=%u ", qd);
		if (p->nmix > 1 || read_pct % 100 != 0)
			snprintf(pre + strlen(pre), sizeof(pre) - strlen(pre), "mix=%u/%u ",
				 read_pct, 100 - read_pct);
		snprintf(buf, len, "%srate=%s", pre, r);
	} else if (p->fill)
		snprintf(buf, len, "fill");
	else if ((p->nmix > 1 && p->nqd > 1) || (p->nmix == 1 && read_pct % 100 != 0))
		snprintf(buf, len, "qd=%u mix=%u/%u", qd, read_pct, 100 - read_pct);
	else if (p->nmix > 1)
		snprintf(buf, len, "mix=%u/%u", read_pct, 100 - read_pct);
	else
		snprintf(buf, len, "qd=%u", qd);
}

int fsp_params_check(const struct fsp_params *p, char *err, size_t errlen)
{
	if (p->span && p->span < p->bs) {
		snprintf(err, errlen, "span: %llu bytes is smaller than one block (bs %u)",
			 (unsigned long long)p->span, p->bs);
		return -1;
	}
	if (p->offset % p->bs) {
		snprintf(err, errlen, "offset: %llu is not a multiple of bs %u",
			 (unsigned long long)p->offset, p->bs);
		return -1;
	}
	if (!p->fill && !p->time_ns && !p->bytes) {
		snprintf(err, errlen, "time: a step needs a time or a bytes limit");
		return -1;
	}
	if (p->burst && p->burst < p->bs) {
		snprintf(err, errlen, "burst: %llu bytes is smaller than one block (bs %u)",
			 (unsigned long long)p->burst, p->bs);
		return -1;
	}
	if (p->burst && !p->bytes && !p->time_ns) {
		snprintf(err, errlen, "burst: bursts need a bytes or time limit");
		return -1;
	}
	if (p->ramp_ns && (p->burst || p->fill)) {
		snprintf(err, errlen, "ramp: not with %s (%s)",
			 p->fill ? "fill" : "bursts",
			 p->fill ? "a fill measures every byte of the span once"
				 : "a burst is measured from idle");
		return -1;
	}
	int open_loop = 0, have_max = 0;
	for (unsigned i = 0; i < p->nrate; i++) {
		if (p->rates[i].kind == FSP_RATE_MAX)
			have_max = 1;
		else
			open_loop = 1;
		if (p->rates[i].kind == FSP_RATE_PCT && !have_max) {
			snprintf(err, errlen, "rate: %u%% needs a closed-loop step (max) before it, "
				 "whose rate it is a percentage of", p->rates[i].value);
			return -1;
		}
	}
	if (open_loop && (p->burst || p->fill)) {
		snprintf(err, errlen, "rate: not with %s (a rate step issues at its own times)",
			 p->fill ? "fill" : "bursts");
		return -1;
	}
	if (open_loop && !p->time_ns) {
		snprintf(err, errlen, "rate: a rate step needs a time limit");
		return -1;
	}
	if (p->fill && p->segment < p->bs) {
		snprintf(err, errlen, "segment: smaller than one block (bs %u)", p->bs);
		return -1;
	}
	return fsp_params_check_memory(p, err, errlen);
}

int fsp_params_check_memory(const struct fsp_params *p, char *err, size_t errlen)
{
	char a[32], b[32], c[32];
	unsigned maxqd = 0, nsteps = fsp_params_nsteps(p);
	for (unsigned i = 0; i < p->nqd; i++)
		if (p->qds[i] > maxqd)
			maxqd = p->qds[i];
	if ((uint64_t)maxqd * p->bs > FSP_INFLIGHT_MAX) {
		fsp_format_size((uint64_t)maxqd * p->bs, a, sizeof(a));
		fsp_format_size(p->bs, b, sizeof(b));
		fsp_format_size(FSP_INFLIGHT_MAX, c, sizeof(c));
		snprintf(err, errlen, "qd: %u x bs %s is %s in flight, more than %s "
			 "(lower qd or bs)", maxqd, b, a, c);
		return -1;
	}
	if (p->timeline_ns && p->time_ns) {
		uint64_t n = (uint64_t)nsteps * (p->time_ns / p->timeline_ns + 1);
		if (n > FSP_TIMELINE_MAX) {
			fsp_format_duration(p->timeline_ns, a, sizeof(a));
			fsp_format_duration(p->time_ns, b, sizeof(b));
			snprintf(err, errlen, "timeline: %s over %u step(s) of %s is %llu "
				 "buckets, more than %u (make the timeline coarser)", a,
				 nsteps, b, (unsigned long long)n, FSP_TIMELINE_MAX);
			return -1;
		}
	}
	if (p->burst && p->bytes) {
		uint64_t n = (uint64_t)nsteps * (p->bytes / p->burst + 1);
		if (n > FSP_SEGMENTS_MAX) {
			fsp_format_size(p->burst, a, sizeof(a));
			fsp_format_size(p->bytes, b, sizeof(b));
			snprintf(err, errlen, "burst: %s bursts over %u step(s) of %s are %llu "
				 "bursts, more than %u (use larger bursts)", a, nsteps, b,
				 (unsigned long long)n, FSP_SEGMENTS_MAX);
			return -1;
		}
	}
	if (p->fill && p->span && p->span / p->segment + 1 > FSP_SEGMENTS_MAX) {
		fsp_format_size(p->segment, a, sizeof(a));
		fsp_format_size(p->span, b, sizeof(b));
		snprintf(err, errlen, "segment: %s over a span of %s is %llu segments, "
			 "more than %u (use a larger segment)", a, b,
			 (unsigned long long)(p->span / p->segment + 1), FSP_SEGMENTS_MAX);
		return -1;
	}
	return 0;
}

int fsp_params_writes(const struct fsp_params *p)
{
	if (p->fill)
		return 1;
	for (unsigned i = 0; i < p->nmix; i++)
		if (p->mixes[i] < 100)
			return 1;
	return 0;
}

int fsp_params_reads(const struct fsp_params *p)
{
	if (p->fill)
		return 0;
	for (unsigned i = 0; i < p->nmix; i++)
		if (p->mixes[i] > 0)
			return 1;
	return 0;
}

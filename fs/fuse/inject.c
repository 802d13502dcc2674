/*
 * inject.c - the rules of `fsprism mount --inject`: their grammar, the match
 * of a path against them, and the decision for one request (inject.h).
 *
 *   RULES := RULE { ';' RULE }
 *   RULE  := FIELD { ',' FIELD }
 *   FIELD := op=NAME{|NAME} | op=all | path=GLOB | delay=DIST[:P]
 *          | errno=NAME[:P] | seed=N
 *   DIST  := DURATION | uniform:DURATION-DURATION | exp:DURATION
 *
 * The decision draws from a per-thread xorshift64* whose state is seeded at
 * the thread's first draw from the rules' seed and an ordinal handed out in
 * order of first draws: no lock, no system call, and the same sequence for
 * the same thread (and the same requests) in every run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs/fuse/inject.h"
#include "src/base/err.h"
#include "src/base/ops.h"
#include "src/base/units.h"

enum dist { DIST_NONE, DIST_FIXED, DIST_UNIFORM, DIST_EXP };

struct rule {
	uint64_t ops[(FSP_OP__COUNT + 63) / 64]; /* bit per enum fsp_op */
	char *path;          /* NULL: every path */
	enum dist dist;
	uint64_t d1, d2;     /* fixed: d1; uniform: d1..d2; exp: mean d1 */
	uint64_t delay_thresh; /* a draw below it is delayed (UINT64_MAX: always) */
	double delay_p;
	int err;             /* 0: none */
	uint64_t err_thresh; /* a draw below it fails (UINT64_MAX: always) */
	double err_p;
};

struct fsp_inject {
	struct rule rule[FSP_INJECT_MAX_RULES];
	int nrules;
	uint64_t seed;
	int seed_given;
	uint32_t op_rules[FSP_OP__COUNT]; /* rules concerning each op */
	uint32_t op_path[FSP_OP__COUNT];  /* those of them with a pattern */
	uint32_t pathless;                /* rules without a pattern */
	unsigned threads;                 /* ordinals handed out (atomic) */
	uint64_t gen;                     /* which parse: keys the threads' state */
};

static uint64_t generations; /* rule sets parsed (atomic) */

static const struct { const char *name; int err; } errnos[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EROFS", EROFS }, { "EACCES", EACCES },
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EAGAIN", EAGAIN }, { "EINTR", EINTR },
	{ "ETIMEDOUT", ETIMEDOUT }, { "EDQUOT", EDQUOT }, { "EFBIG", EFBIG },
	{ "ENOMEM", ENOMEM }, { "EBUSY", EBUSY }, { "EINVAL", EINVAL }, { "EEXIST", EEXIST },
	{ "ENOTDIR", ENOTDIR }, { "EISDIR", EISDIR }, { "ENOTEMPTY", ENOTEMPTY },
	{ "ENODATA", ENODATA }, { "ESTALE", ESTALE }, { "ENXIO", ENXIO }, { "ENODEV", ENODEV },
	{ "EBADF", EBADF }, { "EMFILE", EMFILE }, { "ENFILE", ENFILE }, { "ENOTSUP", ENOTSUP },
	{ "EOPNOTSUPP", EOPNOTSUPP }, { "ENOSYS", ENOSYS }, { "EMLINK", EMLINK },
	{ "ENAMETOOLONG", ENAMETOOLONG }, { "ELOOP", ELOOP }, { "EXDEV", EXDEV },
	{ "ECANCELED", ECANCELED }, { "ENOLCK", ENOLCK }, { "EOVERFLOW", EOVERFLOW },
};

static const char *errno_name(int e)
{
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].err == e)
			return errnos[i].name;
	return NULL;
}

static int parse_ops(struct rule *r, char *v, char *err, size_t len)
{
	if (!strcmp(v, "all")) {
		/* not forget (no reply), nor the releases (the kernel ignores
		 * their error, and a handle must still be closed) */
		for (int op = 0; op <= FSP_OP_LSEEK; op++)
			if (op != FSP_OP_FORGET && op != FSP_OP_RELEASE &&
			    op != FSP_OP_RELEASEDIR)
				r->ops[op / 64] |= 1ull << (op % 64);
		return 0;
	}
	char *save = NULL;
	for (char *name = strtok_r(v, "|", &save); name; name = strtok_r(NULL, "|", &save)) {
		int op = fsp_op_from_name(name);
		if (op < 0 || op > FSP_OP_LSEEK)
			return fsp_set_err(err, len, "unknown operation '%s' (read, write, fsync, "
					   "getattr, ... or all)", name);
		if (op == FSP_OP_FORGET)
			return fsp_set_err(err, len,
					   "operation 'forget' has no reply to delay or fail");
		r->ops[op / 64] |= 1ull << (op % 64);
	}
	return 0;
}

static int parse_dur(const char *what, const char *s, uint64_t *ns, char *err, size_t len)
{
	if (fsp_parse_duration(s, ns) || *ns > 10 * FSP_SEC)
		return fsp_set_err(err, len, "invalid %s '%s' (a duration up to 10s, e.g. 100us)",
				   what, s);
	return 0;
}

/* A probability P, 0 < P <= 1, into *p and the draw threshold; -1 if s is none. */
static int parse_prob(const char *s, double *p, uint64_t *thresh)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0 && v <= 1))
		return -1;
	*p = v;
	*thresh = v >= 1 ? UINT64_MAX : (uint64_t)(v * 18446744073709551616.0);
	return 0;
}

static int parse_dist(struct rule *r, const char *v, char *err, size_t len);

/* DIST[:P]: a delay, applied with probability P (a tail of known cause). */
static int parse_delay(struct rule *r, const char *v, char *err, size_t len)
{
	r->delay_p = 1;
	r->delay_thresh = UINT64_MAX;
	const char *colon = strrchr(v, ':');
	char dist[128];
	if (colon && (size_t)(colon - v) < sizeof(dist) &&
	    !parse_prob(colon + 1, &r->delay_p, &r->delay_thresh)) {
		memcpy(dist, v, (size_t)(colon - v));
		dist[colon - v] = '\0';
		if (!parse_dist(r, dist, err, len))
			return 0;
		r->delay_p = 1; /* "exp:5": the colon was the distribution's */
		r->delay_thresh = UINT64_MAX;
	}
	return parse_dist(r, v, err, len);
}

static int parse_dist(struct rule *r, const char *v, char *err, size_t len)
{
	if (!strncmp(v, "uniform:", 8)) {
		char lo[64];
		const char *dash = strchr(v + 8, '-');
		if (!dash || (size_t)(dash - (v + 8)) >= sizeof(lo))
			return fsp_set_err(err, len, "invalid delay '%s' (uniform:MIN-MAX, e.g. "
					   "uniform:50us-150us)", v);
		memcpy(lo, v + 8, (size_t)(dash - (v + 8)));
		lo[dash - (v + 8)] = '\0';
		if (parse_dur("delay minimum", lo, &r->d1, err, len) ||
		    parse_dur("delay maximum", dash + 1, &r->d2, err, len))
			return -1;
		if (r->d2 < r->d1)
			return fsp_set_err(err, len, "invalid delay '%s' (the maximum is below "
					   "the minimum)", v);
		r->dist = DIST_UNIFORM;
	} else if (!strncmp(v, "exp:", 4)) {
		if (parse_dur("delay mean", v + 4, &r->d1, err, len))
			return -1;
		r->dist = DIST_EXP;
	} else {
		if (parse_dur("delay", v, &r->d1, err, len))
			return -1;
		r->dist = DIST_FIXED;
	}
	return 0;
}

static int parse_errno(struct rule *r, char *v, char *err, size_t len)
{
	char *colon = strchr(v, ':');
	double p = 1;
	if (colon) {
		*colon = '\0';
		char *end;
		errno = 0;
		p = strtod(colon + 1, &end);
		if (errno || end == colon + 1 || *end || !(p > 0 && p <= 1))
			return fsp_set_err(err, len, "invalid errno probability '%s' (0 < P <= 1)",
					   colon + 1);
	}
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (!strcmp(errnos[i].name, v))
			r->err = errnos[i].err;
	if (!r->err)
		return fsp_set_err(err, len, "unknown errno '%s' (EIO, ENOSPC, EROFS, EACCES, ...)",
				   v);
	r->err_p = p;
	r->err_thresh = p >= 1 ? UINT64_MAX : (uint64_t)(p * 18446744073709551616.0);
	return 0;
}

/* One RULE (modified in place). 1: a rule; 0: only a seed; -1: bad. */
static int parse_rule(struct fsp_inject *inj, char *s, char *err, size_t len)
{
	struct rule *r = &inj->rule[inj->nrules];
	memset(r, 0, sizeof(*r));
	int has_op = 0, has_seed = 0;
	char *save = NULL;
	for (char *f = strtok_r(s, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(f, '=');
		if (!eq || eq == f || !eq[1])
			return fsp_set_err(err, len, "'%s' is not KEY=VALUE (op, path, delay, "
					   "errno, seed)", f);
		*eq = '\0';
		char *v = eq + 1;
		int dup = 0;
		if (!strcmp(f, "op")) {
			dup = has_op;
			has_op = 1;
			if (!dup && parse_ops(r, v, err, len))
				return -1;
		} else if (!strcmp(f, "path")) {
			dup = r->path != NULL;
			if (!dup && !(r->path = strdup(v)))
				return fsp_set_err(err, len, "out of memory");
		} else if (!strcmp(f, "delay")) {
			dup = r->dist != DIST_NONE;
			if (!dup && parse_delay(r, v, err, len))
				return -1;
		} else if (!strcmp(f, "errno")) {
			dup = r->err != 0;
			if (!dup && parse_errno(r, v, err, len))
				return -1;
		} else if (!strcmp(f, "seed")) {
			char *end;
			errno = 0;
			unsigned long long n = strtoull(v, &end, 10);
			if (errno || *end || *v == '-')
				return fsp_set_err(err, len, "invalid seed '%s' (a number)", v);
			if (inj->seed_given && inj->seed != n)
				return fsp_set_err(err, len, "two seeds (%llu and %llu): the rules "
						   "have one", (unsigned long long)inj->seed, n);
			inj->seed = n;
			inj->seed_given = has_seed = 1;
		} else {
			return fsp_set_err(err, len,
					   "unknown key '%s' (op, path, delay, errno, seed)", f);
		}
		if (dup)
			return fsp_set_err(err, len, "'%s' given twice in one rule", f);
	}
	if (!has_op && r->dist == DIST_NONE && !r->err && !r->path && has_seed)
		return 0;
	if (!has_op)
		return fsp_set_err(err, len, "a rule without op= (which operations?)");
	if (r->dist == DIST_NONE && !r->err)
		return fsp_set_err(err, len, "a rule without delay= or errno= (what to inject?)");
	if (r->err && (r->ops[FSP_OP_RELEASE / 64] & (1ull << (FSP_OP_RELEASE % 64)) ||
		       r->ops[FSP_OP_RELEASEDIR / 64] & (1ull << (FSP_OP_RELEASEDIR % 64))))
		return fsp_set_err(err, len, "errno= on release or releasedir (the kernel ignores "
				   "their error; a delay is allowed)");
	return 1;
}

void fsp_inject_free(struct fsp_inject *inj)
{
	if (!inj)
		return;
	for (int i = 0; i < FSP_INJECT_MAX_RULES; i++)
		free(inj->rule[i].path);
	free(inj);
}

struct fsp_inject *fsp_inject_parse(const char *spec, char *err, size_t errlen)
{
	struct fsp_inject *inj = calloc(1, sizeof(*inj));
	char *copy = strdup(spec ? spec : "");
	if (!inj || !copy) {
		free(copy);
		free(inj);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	inj->seed = 1;
	inj->gen = __atomic_add_fetch(&generations, 1, __ATOMIC_RELAXED);
	char *save = NULL;
	for (char *rs = strtok_r(copy, ";", &save); rs; rs = strtok_r(NULL, ";", &save)) {
		if (inj->nrules == FSP_INJECT_MAX_RULES) {
			snprintf(err, errlen, "more than %d rules", FSP_INJECT_MAX_RULES);
			goto fail;
		}
		char rule_text[256];
		snprintf(rule_text, sizeof(rule_text), "%s", rs);
		char why[256];
		int rc = parse_rule(inj, rs, why, sizeof(why));
		if (rc < 0) {
			snprintf(err, errlen, "rule '%s': %s", rule_text, why);
			goto fail;
		}
		inj->nrules += rc;
	}
	if (!inj->nrules) {
		snprintf(err, errlen, "no rule in '%s'", spec ? spec : "");
		goto fail;
	}
	for (int i = 0; i < inj->nrules; i++) {
		const struct rule *r = &inj->rule[i];
		if (!r->path)
			inj->pathless |= 1u << i;
		for (int op = 0; op < FSP_OP__COUNT; op++) {
			if (!(r->ops[op / 64] & (1ull << (op % 64))))
				continue;
			inj->op_rules[op] |= 1u << i;
			if (r->path)
				inj->op_path[op] |= 1u << i;
		}
	}
	free(copy);
	return inj;
fail:
	free(copy);
	fsp_inject_free(inj);
	return NULL;
}

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
{
	if (at >= len)
		return at;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
	return n < 0 ? at : at + (size_t)n;
}

void fsp_inject_format(const struct fsp_inject *inj, char *buf, size_t len)
{
	size_t at = 0;
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < inj->nrules; i++) {
		const struct rule *r = &inj->rule[i];
		at = put(buf, len, at, "%sop=", i ? ";" : "");
		int first = 1;
		for (int op = 0; op < FSP_OP__COUNT; op++)
			if (r->ops[op / 64] & (1ull << (op % 64))) {
				at = put(buf, len, at, "%s%s", first ? "" : "|", fsp_op_name(op));
				first = 0;
			}
		if (r->path)
			at = put(buf, len, at, ",path=%s", r->path);
		char a[32], b[32];
		fsp_format_duration(r->d1, a, sizeof(a));
		fsp_format_duration(r->d2, b, sizeof(b));
		if (r->dist == DIST_FIXED)
			at = put(buf, len, at, ",delay=%s", a);
		else if (r->dist == DIST_UNIFORM)
			at = put(buf, len, at, ",delay=uniform:%s-%s", a, b);
		else if (r->dist == DIST_EXP)
			at = put(buf, len, at, ",delay=exp:%s", a);
		if (r->dist != DIST_NONE && r->delay_p < 1)
			at = put(buf, len, at, ":%g", r->delay_p);
		if (r->err)
			at = put(buf, len, at, ",errno=%s:%g", errno_name(r->err), r->err_p);
	}
	put(buf, len, at, ";seed=%llu", (unsigned long long)inj->seed);
}

int fsp_inject_op_has_path(const struct fsp_inject *inj, int op)
{
	return op >= 0 && op < FSP_OP__COUNT && inj->op_path[op] != 0;
}

int fsp_inject_op_any(const struct fsp_inject *inj, int op)
{
	return op >= 0 && op < FSP_OP__COUNT && inj->op_rules[op] != 0;
}

uint32_t fsp_inject_match(const struct fsp_inject *inj, const char *path)
{
	uint32_t m = inj->pathless;
	for (int i = 0; i < inj->nrules; i++)
		if (inj->rule[i].path && fnmatch(inj->rule[i].path, path, 0) == 0)
			m |= 1u << i;
	return m;
}

/* ---- the per-thread generator ---- */

static __thread uint64_t rng_gen; /* the rule set rng_state is of (0: none) */
static __thread uint64_t rng_state;

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rng_next(const struct fsp_inject *inj)
{
	if (__builtin_expect(rng_gen != inj->gen, 0)) {
		/* the thread's first draw of these rules */
		unsigned ord = __atomic_fetch_add(&((struct fsp_inject *)inj)->threads, 1,
						  __ATOMIC_RELAXED);
		rng_state = splitmix64(inj->seed ^ ((uint64_t)ord << 32)) | 1;
		rng_gen = inj->gen;
	}
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* uniform in [0, 1) */
static double rng_unit(const struct fsp_inject *inj)
{
	return (double)(rng_next(inj) >> 11) * (1.0 / 9007199254740992.0);
}

int fsp_inject_decide(const struct fsp_inject *inj, int op, uint32_t mask,
		      uint64_t *delay_ns)
{
	uint32_t m = inj->op_rules[op] & mask;
	uint64_t delay = 0;
	int err = 0;
	while (m) {
		int i = __builtin_ctz(m);
		m &= m - 1;
		const struct rule *r = &inj->rule[i];
		/* a delay with a probability draws first (one draw only then,
		 * so the rules without one keep their sequences) */
		int delayed = r->dist != DIST_NONE &&
			      (r->delay_thresh == UINT64_MAX || rng_next(inj) < r->delay_thresh);
		switch (delayed ? r->dist : DIST_NONE) {
		case DIST_NONE: break;
		case DIST_FIXED: delay += r->d1; break;
		case DIST_UNIFORM:
			delay += r->d1 + (uint64_t)(rng_unit(inj) * (double)(r->d2 - r->d1 + 1));
			break;
		case DIST_EXP:
			delay += (uint64_t)(-(double)r->d1 * log1p(-rng_unit(inj)) + 0.5);
			break;
		}
		if (r->err && !err &&
		    (r->err_thresh == UINT64_MAX || rng_next(inj) < r->err_thresh))
			err = r->err;
	}
	*delay_ns = delay;
	return err;
}

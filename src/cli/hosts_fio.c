/*
 * hosts_fio.c - STAND-IN for the fio branch's job writer and json+ import
 * (hosts_fio.h): a profile's steps as a fio job file, and fio --client's
 * json+ output read back per host into histograms.
 *
 * The JSON reader is the smallest that reads fio's output: a tree of
 * values, numbers kept as their text so that counts and nanoseconds stay
 * exact. fio's json+ "bins" map a latency (ns, the middle of fio's bin) to
 * a count; each lands in the fsprism bucket of that value, so fio's own
 * bins (about 1/64 of their value wide) bound the precision.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/err.h"
#include "src/cli/hosts_fio.h"

/* ---- steps and the job file ------------------------------------------------ */

struct fsp_hosts_step *fsp_hosts_steps(const struct fsp_params *p, unsigned *n)
{
	unsigned nq = p->fill ? 1 : p->nqd, nm = p->fill ? 1 : p->nmix;
	struct fsp_hosts_step *s = calloc((size_t)nq * nm, sizeof(*s));
	if (!s)
		return NULL;
	unsigned i = 0;
	for (unsigned q = 0; q < nq; q++)
		for (unsigned m = 0; m < nm; m++, i++) {
			s[i].qd = p->qds[q];
			s[i].read_pct = p->fill ? 0 : p->mixes[m];
			/* the labels run gives its steps */
			if (p->fill)
				snprintf(s[i].label, sizeof(s[i].label), "fill");
			else if ((nm > 1 && nq > 1) || (nm == 1 && s[i].read_pct % 100))
				snprintf(s[i].label, sizeof(s[i].label), "qd=%u mix=%u/%u",
					 s[i].qd, s[i].read_pct, 100 - s[i].read_pct);
			else if (nm > 1)
				snprintf(s[i].label, sizeof(s[i].label), "mix=%u/%u",
					 s[i].read_pct, 100 - s[i].read_pct);
			else
				snprintf(s[i].label, sizeof(s[i].label), "qd=%u", s[i].qd);
		}
	*n = i;
	return s;
}

static const char *rw_of(const struct fsp_params *p, unsigned read_pct)
{
	int seq = p->access == FSP_ACCESS_SEQ || p->fill;
	if (read_pct == 100)
		return seq ? "read" : "randread";
	if (read_pct == 0)
		return seq ? "write" : "randwrite";
	return seq ? "rw" : "randrw";
}

int fsp_hosts_job_write(FILE *f, const struct fsp_params *p, const struct fsp_hosts_step *s,
			unsigned nsteps, const char *target)
{
	fprintf(f, "; written by fsprism run --hosts: one job a step, one step after the other\n"
		"[global]\nioengine=libaio\ndirect=1\nfilename=%s\nbs=%u\n"
		"offset=%llu\nsize=%llu\nrandseed=%llu\n", target, p->bs,
		(unsigned long long)p->offset, (unsigned long long)p->span,
		(unsigned long long)p->seed);
	if (p->pattern.kind == FSP_PATTERN_ZEROS)
		fprintf(f, "zero_buffers=1\n");
	else if (p->pattern.kind == FSP_PATTERN_COMPRESS)
		fprintf(f, "buffer_compress_percentage=%u\nrefill_buffers=1\n",
			p->pattern.compress_pct);
	else
		fprintf(f, "refill_buffers=1\n");
	if (!p->norepeat)
		fprintf(f, "norandommap=1\n");
	for (unsigned i = 0; i < nsteps; i++) {
		fprintf(f, "\n[step-%u]\nstonewall\nrw=%s\niodepth=%u\n", i,
			rw_of(p, s[i].read_pct), s[i].qd);
		if (s[i].read_pct % 100)
			fprintf(f, "rwmixread=%u\n", s[i].read_pct);
		if (i && p->idle_ns)
			fprintf(f, "startdelay=%llums\n",
				(unsigned long long)(p->idle_ns / 1000000));
		if (p->ramp_ns)
			fprintf(f, "ramp_time=%llums\n", (unsigned long long)(p->ramp_ns / 1000000));
		if (p->fill)
			continue; /* the span once */
		if (p->time_ns)
			fprintf(f, "runtime=%llums\n", (unsigned long long)(p->time_ns / 1000000));
		if (p->bytes)
			fprintf(f, "io_size=%llu\n", (unsigned long long)p->bytes);
		else if (p->time_ns)
			fprintf(f, "time_based=1\n");
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* ---- a small JSON tree ----------------------------------------------------- */

enum jtype { J_NULL, J_TRUE, J_FALSE, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	char *s;          /* J_STR: the string; J_NUM: the number's text */
	size_t n;         /* J_ARR, J_OBJ: items */
	char **keys;      /* J_OBJ */
	struct jv *items;
};

struct jparse {
	const char *p;
	int depth;
};

static void jv_free(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jv_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->s);
}

static void skip_ws(struct jparse *j)
{
	while (isspace((unsigned char)*j->p))
		j->p++;
}

/* A string at j->p (at its '"'); escapes kept simple: \uXXXX becomes '?'. */
static char *parse_str(struct jparse *j)
{
	const char *p = j->p + 1;
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	while (s && *p && *p != '"') {
		char c = *p++;
		if (c == '\\') {
			c = *p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u':
				for (int k = 0; k < 4; k++)
					if (!isxdigit((unsigned char)*p++))
						goto bad;
				c = '?';
				break;
			case '"': case '\\': case '/': break;
			default: goto bad;
			}
		}
		if (n + 2 > cap) {
			char *t = realloc(s, cap *= 2);
			if (!t)
				goto bad;
			s = t;
		}
		s[n++] = c;
	}
	if (!s || *p != '"')
		goto bad;
	s[n] = 0;
	j->p = p + 1;
	return s;
bad:
	free(s);
	return NULL;
}

static int parse_value(struct jparse *j, struct jv *v);

static int parse_items(struct jparse *j, struct jv *v, int obj)
{
	size_t cap = 0;
	j->p++;
	skip_ws(j);
	if (*j->p == (obj ? '}' : ']')) {
		j->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(j);
		if (obj) {
			if (*j->p != '"' || !(key = parse_str(j)))
				return -1;
			skip_ws(j);
			if (*j->p++ != ':') {
				free(key);
				return -1;
			}
		}
		if (v->n == cap) {
			cap = cap ? cap * 2 : 8;
			struct jv *it = realloc(v->items, cap * sizeof(*it));
			char **k = obj ? realloc(v->keys, cap * sizeof(*k)) : NULL;
			if (it)
				v->items = it;
			if (k)
				v->keys = k;
			if (!it || (obj && !k)) {
				free(key);
				return -1;
			}
		}
		memset(&v->items[v->n], 0, sizeof(v->items[0]));
		if (obj)
			v->keys[v->n] = key;
		v->n++;
		if (parse_value(j, &v->items[v->n - 1]) != 0)
			return -1;
		skip_ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p++ != (obj ? '}' : ']'))
			return -1;
		return 0;
	}
}

static int parse_value(struct jparse *j, struct jv *v)
{
	skip_ws(j);
	if (++j->depth > 64)
		return -1;
	int rc = 0;
	const char *p = j->p;
	if (*p == '{' || *p == '[') {
		v->t = *p == '{' ? J_OBJ : J_ARR;
		rc = parse_items(j, v, *p == '{');
	} else if (*p == '"') {
		v->t = J_STR;
		rc = (v->s = parse_str(j)) ? 0 : -1;
	} else if (!strncmp(p, "null", 4) || !strncmp(p, "true", 4)) {
		v->t = *p == 'n' ? J_NULL : J_TRUE;
		j->p += 4;
	} else if (!strncmp(p, "false", 5)) {
		v->t = J_FALSE;
		j->p += 5;
	} else if (*p == '-' || isdigit((unsigned char)*p)) {
		size_t n = strspn(p, "+-0123456789.eE");
		v->t = J_NUM;
		rc = (v->s = strndup(p, n)) ? 0 : -1;
		j->p += n;
	} else
		rc = -1;
	j->depth--;
	return rc;
}

static const struct jv *jget(const struct jv *o, const char *key)
{
	if (!o || o->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return &o->items[i];
	return NULL;
}

static uint64_t jnum(const struct jv *v)
{
	if (!v || v->t != J_NUM || v->s[0] == '-')
		return 0;
	if (strpbrk(v->s, ".eE")) /* fio prints counts whole; a fraction rounds */
		return (uint64_t)(strtod(v->s, NULL) + 0.5);
	return strtoull(v->s, NULL, 10);
}

static const char *jstr(const struct jv *v)
{
	return v && v->t == J_STR ? v->s : "";
}

/* ---- fio's json+ per host --------------------------------------------------- */

/* n IOs of value ns, as fsp_hist_add would count them one by one */
static void hist_add_n(struct fsp_hist *h, uint64_t ns, uint64_t n)
{
	h->count += n;
	h->sum += ns * n;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
	h->buckets[fsp_hist_bucket(ns)] += n;
}

/* One direction of a job ("read", "write") into r's slot d. 0, or -1 (memory). */
static int read_dir(const struct jv *dir, struct fsp_host_step_result *r, int d)
{
	r->ios[d] = jnum(jget(dir, "total_ios"));
	r->bytes[d] = jnum(jget(dir, "io_bytes"));
	uint64_t rt = jnum(jget(dir, "runtime"));
	if (rt > r->runtime_ms)
		r->runtime_ms = rt;
	const struct jv *bins = jget(jget(dir, "clat_ns"), "bins");
	if (!bins || bins->t != J_OBJ || !bins->n)
		return 0;
	struct fsp_hist *h = malloc(sizeof(*h));
	if (!h)
		return -1;
	fsp_hist_init(h);
	for (size_t i = 0; i < bins->n; i++) {
		uint64_t n = jnum(&bins->items[i]);
		if (n)
			hist_add_n(h, strtoull(bins->keys[i], NULL, 10), n);
	}
	/* fio's own min and max are exact where its bins are not */
	uint64_t mn = jnum(jget(jget(dir, "clat_ns"), "min"));
	uint64_t mx = jnum(jget(jget(dir, "clat_ns"), "max"));
	if (h->count && mn && mn <= mx) {
		h->min = mn;
		h->max = mx;
	}
	r->hist[d] = h;
	return 0;
}

int fsp_hosts_read_json(const char *text, size_t nhosts, const char *const *addr,
			const unsigned *port, unsigned nsteps,
			struct fsp_host_step_result **res, char *err, size_t errlen)
{
	/* text lines fio printed first ("client: host=... disconnected") */
	const char *start = text;
	while (start && *start != '{')
		start = (start = strchr(start, '\n')) ? start + 1 : NULL;
	if (!start)
		return fsp_set_err(err, errlen, "fio printed no JSON");
	struct jparse j = { .p = start };
	struct jv root = { 0 };
	if (parse_value(&j, &root) != 0 || root.t != J_OBJ) {
		jv_free(&root);
		return fsp_set_err(err, errlen, "fio's output is not JSON it can read");
	}
	const struct jv *cs = jget(&root, "client_stats");
	if (!cs || cs->t != J_ARR) {
		jv_free(&root);
		return fsp_set_err(err, errlen, "fio's JSON has no client_stats (not fio --client output)");
	}
	int rc = 0;
	for (size_t i = 0; i < cs->n && !rc; i++) {
		const struct jv *c = &cs->items[i];
		const char *job = jstr(jget(c, "jobname"));
		unsigned step;
		char tail;
		if (sscanf(job, "step-%u%c", &step, &tail) != 1 || step >= nsteps)
			continue; /* "All clients", the sum fio adds */
		const char *host = jstr(jget(c, "hostname"));
		uint64_t p = jnum(jget(c, "port"));
		for (size_t h = 0; h < nhosts; h++) {
			if (strcmp(addr[h], host) || port[h] != p)
				continue;
			struct fsp_host_step_result *r = &res[h][step];
			r->present = 1;
			r->error = (int)jnum(jget(c, "error"));
			if (read_dir(jget(c, "read"), r, 0) || read_dir(jget(c, "write"), r, 1))
				rc = fsp_set_err(err, errlen, "out of memory");
			break;
		}
	}
	jv_free(&root);
	return rc;
}

void fsp_hosts_results_free(struct fsp_host_step_result *r, unsigned nsteps)
{
	for (unsigned s = 0; r && s < nsteps; s++) {
		free(r[s].hist[0]);
		free(r[s].hist[1]);
	}
	free(r);
}

/*
 * fiojob.c - knowing a fio job file, and its nearest fsprism parameters
 * (fiojob.h).
 *
 * One pass over the lines keeps, for [global] and the first job section,
 * the last value of each key this module can map; a second step turns
 * them into fsprism's options. What maps:
 *   rw/readwrite   access (seq | random) and mix (read percentage)
 *   rwmixread/rwmixwrite   mix
 *   bs/blocksize, iodepth, size, offset, runtime, ramp_time, randseed
 * What is fsprism's way anyway and needs no word: ioengine=libaio,
 * direct=1, time_based, group_reporting, name, description, thread,
 * stonewall, new_group. Everything else is listed as having no counterpart.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/engine/fiojob.h"

/* Keys that occur in fio job files and not in fsprism's (a detection hint
 * when the file has no section line). */
static const char *const fio_only[] = {
	"ioengine", "rw", "readwrite", "iodepth", "filename", "numjobs", "direct",
	"runtime", "time_based", "rwmixread", "rwmixwrite", "blocksize",
	"group_reporting", "ramp_time", "randrepeat", "buffered", "iodepth_batch",
	"filesize", "nrfiles", "directory", "norandommap", "randseed", NULL,
};

/* Keys fsprism already does its own way: no note. */
static const char *const implied[] = {
	"time_based", "group_reporting", "name", "description", "thread",
	"stonewall", "new_group", "wait_for_previous", NULL,
};

enum fkey { K_RW, K_MIXREAD, K_MIXWRITE, K_BS, K_QD, K_SIZE, K_OFFSET,
	    K_RUNTIME, K_RAMP, K_SEED, K__COUNT };
static const char *const mapped[K__COUNT] = {
	[K_RW] = "rw", [K_MIXREAD] = "rwmixread", [K_MIXWRITE] = "rwmixwrite",
	[K_BS] = "bs", [K_QD] = "iodepth", [K_SIZE] = "size", [K_OFFSET] = "offset",
	[K_RUNTIME] = "runtime", [K_RAMP] = "ramp_time", [K_SEED] = "randseed",
};

#define VAL_MAX 64

struct fio_job {
	char val[K__COUNT][VAL_MAX];
	char unmapped[512]; /* "numjobs=4, verify=md5" */
	int sections;       /* job sections seen (not [global]) */
	int first_line;     /* the line that gave the file away */
	char sign[VAL_MAX + 8];
};

static int in_list(const char *const *list, const char *key)
{
	for (int i = 0; list[i]; i++)
		if (!strcmp(list[i], key))
			return 1;
	return 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return s;
}

static int key_index(const char *key)
{
	if (!strcmp(key, "readwrite"))
		key = "rw";
	else if (!strcmp(key, "blocksize"))
		key = "bs";
	for (int k = 0; k < K__COUNT; k++)
		if (!strcmp(mapped[k], key))
			return k;
	return -1;
}

static void note_unmapped(struct fio_job *j, const char *key, const char *value)
{
	size_t n = strlen(j->unmapped);
	if (n + strlen(key) + strlen(value) + 4 >= sizeof(j->unmapped))
		return;
	snprintf(j->unmapped + n, sizeof(j->unmapped) - n, "%s%s%s%s",
		 n ? ", " : "", key, *value ? "=" : "", value);
}

/* A key of the kept sections: remember a mapped value, note the rest. */
static void take(struct fio_job *j, const char *key, const char *value)
{
	int k = key_index(key);
	if (k >= 0) {
		snprintf(j->val[k], VAL_MAX, "%s", value);
		return;
	}
	if (in_list(implied, key))
		return;
	if (!strcmp(key, "ioengine") && !strcmp(value, "libaio"))
		return;
	if (!strcmp(key, "direct") && !strcmp(value, "1"))
		return;
	if (!strcmp(key, "direct") || !strcmp(key, "buffered")) {
		note_unmapped(j, key, value); /* fsprism is O_DIRECT always */
		return;
	}
	note_unmapped(j, key, value);
}

/* Read the text; returns 1 when it is a fio job file. */
static int scan(const char *text, struct fio_job *j)
{
	int lineno = 0, keep = 1, is_fio = 0;
	for (const char *s = text; *s;) {
		char line[1024];
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		lineno++;
		if (n >= sizeof line)
			n = sizeof line - 1;
		memcpy(line, s, n);
		line[n] = 0;
		s = nl ? nl + 1 : s + strlen(s);
		char *l = trim(line);
		if (!*l || *l == '#' || *l == ';')
			continue;
		size_t len = strlen(l);
		if (l[0] == '[' && l[len - 1] == ']') {
			if (!is_fio) {
				is_fio = 1;
				j->first_line = lineno;
				snprintf(j->sign, sizeof j->sign, "'%.*s'", VAL_MAX, l);
			}
			l[len - 1] = 0;
			if (strcmp(trim(l + 1), "global")) {
				j->sections++;
				keep = j->sections == 1;
			} else {
				keep = 1;
			}
			continue;
		}
		char *eq = strchr(l, '=');
		char *key = l, *value = "";
		if (eq) {
			*eq = 0;
			value = trim(eq + 1);
		}
		key = trim(key);
		if (!is_fio && in_list(fio_only, key)) {
			is_fio = 1;
			j->first_line = lineno;
			snprintf(j->sign, sizeof j->sign, "key '%.*s'", VAL_MAX, key);
		}
		if (keep)
			take(j, key, value);
	}
	return is_fio;
}

/* fio's bare numbers of seconds ("30") become "30s"; "30s", "2m" stay. */
static void fio_seconds(const char *v, char *out, size_t len)
{
	size_t n = strspn(v, "0123456789");
	snprintf(out, len, "%s%s", v, n && !v[n] ? "s" : "");
}

/* Append " --key=value" to out. */
static void opt(char *out, size_t len, const char *key, const char *value)
{
	size_t n = strlen(out);
	snprintf(out + n, len - n, "%s--%s=%s", n ? " " : "", key, value);
}

static void translate(struct fio_job *j, char *out, size_t len)
{
	out[0] = 0;
	const char *rw = j->val[K_RW];
	int mix = -1;
	if (*rw) {
		char mode[VAL_MAX];
		snprintf(mode, sizeof mode, "%s", rw);
		char *colon = strchr(mode, ':'); /* rw=randread:8 */
		if (colon)
			*colon = 0;
		static const struct { const char *fio, *access; int mix; } rws[] = {
			{ "read", "seq", 100 }, { "write", "seq", 0 },
			{ "randread", "random", 100 }, { "randwrite", "random", 0 },
			{ "rw", "seq", 50 }, { "readwrite", "seq", 50 },
			{ "randrw", "random", 50 },
		};
		unsigned i = 0;
		while (i < sizeof rws / sizeof rws[0] && strcmp(rws[i].fio, mode))
			i++;
		if (i < sizeof rws / sizeof rws[0]) {
			opt(out, len, "access", rws[i].access);
			mix = rws[i].mix;
		} else {
			note_unmapped(j, "rw", rw);
		}
	}
	if (*j->val[K_MIXREAD])
		mix = atoi(j->val[K_MIXREAD]);
	else if (*j->val[K_MIXWRITE])
		mix = 100 - atoi(j->val[K_MIXWRITE]);
	if (mix >= 0 && mix <= 100) {
		char m[16];
		snprintf(m, sizeof m, "%d", mix);
		opt(out, len, "mix", m);
	}
	if (*j->val[K_BS]) {
		if (strchr(j->val[K_BS], ','))
			note_unmapped(j, "bs", j->val[K_BS]); /* read,write sizes */
		else
			opt(out, len, "bs", j->val[K_BS]);
	}
	if (*j->val[K_QD])
		opt(out, len, "qd", j->val[K_QD]);
	if (*j->val[K_SIZE])
		opt(out, len, "span", j->val[K_SIZE]);
	if (*j->val[K_OFFSET])
		opt(out, len, "offset", j->val[K_OFFSET]);
	char d[VAL_MAX + 2];
	if (*j->val[K_RUNTIME]) {
		fio_seconds(j->val[K_RUNTIME], d, sizeof d);
		opt(out, len, "time", d);
	}
	if (*j->val[K_RAMP]) {
		fio_seconds(j->val[K_RAMP], d, sizeof d);
		opt(out, len, "ramp", d);
	}
	if (*j->val[K_SEED])
		opt(out, len, "seed", j->val[K_SEED]);
}

int fsp_fiojob_explain(const char *text, char *msg, size_t msglen)
{
	struct fio_job *j = calloc(1, sizeof *j);
	if (!j)
		return 0;
	if (!scan(text, j)) {
		free(j);
		return 0;
	}
	char params[768];
	translate(j, params, sizeof params);
	char more[64] = "";
	if (j->sections > 1)
		snprintf(more, sizeof more, "; %d jobs, the first translated", j->sections);
	snprintf(msg, msglen,
		 "%d: a fio job file (%s); fsprism reads its own job-file format only "
		 "(docs/profiles.md)%s; nearest fsprism parameters: %s%s%s%s",
		 j->first_line, j->sign, more, *params ? params : "(none)",
		 *j->unmapped ? " (no counterpart: " : "", j->unmapped,
		 *j->unmapped ? ")" : "");
	free(j);
	return 1;
}

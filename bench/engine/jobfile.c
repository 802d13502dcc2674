/*
 * jobfile.c - the job-file parser (jobfile.h).
 *
 * Two passes: the first finds `profile =` so the base profile is loaded
 * before any override, wherever the line sits; the second applies every
 * other key in file order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/engine/fiojob.h"
#include "bench/engine/jobfile.h"

#define LINE_MAX_LEN 1024

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
		     s[n - 1] == '\n'))
		s[--n] = 0;
	return s;
}

/*
 * Split one line into key and value. Returns 0 for a blank/comment line,
 * 1 for key/value, -1 with err for a malformed line.
 */
static int split_line(char *line, char **key, char **value, char *err,
		      size_t errlen)
{
	char *hash = strstr(line, " #");
	if (!hash)
		hash = strstr(line, "\t#");
	if (hash)
		*hash = 0;
	char *s = trim(line);
	if (!*s || *s == '#')
		return 0;
	char *eq = strchr(s, '=');
	if (!eq) {
		snprintf(err, errlen, "missing '=' (expected 'key = value')");
		return -1;
	}
	*eq = 0;
	*key = trim(s);
	*value = trim(eq + 1);
	if (!**key) {
		snprintf(err, errlen, "missing key before '='");
		return -1;
	}
	return 1;
}

static int set_score(struct fsp_params *p, const char *v, char *err,
		     size_t errlen)
{
	if (!strcmp(v, "qd124"))
		p->score = FSP_SCORE_QD124;
	else if (!strcmp(v, "steps"))
		p->score = FSP_SCORE_STEPS;
	else if (!strcmp(v, "bursts"))
		p->score = FSP_SCORE_BURSTS;
	else if (!strcmp(v, "fill"))
		p->score = FSP_SCORE_FILL;
	else {
		snprintf(err, errlen, "score: '%s' is not qd124, steps, bursts or fill", v);
		return -1;
	}
	return 0;
}

static int apply(struct fsp_params *p, const char *key, const char *value,
		 char *err, size_t errlen)
{
	char why[256];
	if (!strcmp(key, "score"))
		return set_score(p, value, err, errlen);
	if (!strcmp(key, "fill")) {
		if (!strcmp(value, "yes") || !strcmp(value, "1"))
			p->fill = 1;
		else if (!strcmp(value, "no") || !strcmp(value, "0"))
			p->fill = 0;
		else {
			snprintf(err, errlen, "fill: '%s' is not yes or no", value);
			return -1;
		}
		return 0;
	}
	if (!fsp_param_known(key)) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -1;
	}
	if (!*value && !fsp_param_is_flag(key)) {
		snprintf(err, errlen, "%s: missing value", key);
		return -1;
	}
	if (fsp_param_set(p, key, value, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s: %s", key, why);
		return -1;
	}
	return 0;
}

/* Run one pass over text; base_pass looks only at `profile`. */
static int pass(const char *name, const char *text, int base_pass,
		enum fsp_scale scale, struct fsp_params *p, int *have_base,
		char *err, size_t errlen)
{
	const char *s = text;
	int lineno = 0;
	while (*s) {
		char line[LINE_MAX_LEN];
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "%s:%d: line too long", name, lineno);
			return -1;
		}
		memcpy(line, s, n);
		line[n] = 0;
		s += n + (nl ? 1 : 0);

		char *key, *value, why[300];
		int r = split_line(line, &key, &value, why, sizeof(why));
		if (r < 0) {
			if (base_pass)
				continue; /* reported in order by the second pass */
			snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
			return -1;
		}
		if (r == 0)
			continue;
		int is_profile = !strcmp(key, "profile");
		if (base_pass && is_profile) {
			if (*have_base) {
				snprintf(err, errlen, "%s:%d: profile given twice", name, lineno);
				return -1;
			}
			if (fsp_profile_load(value, scale, p) != 0) {
				snprintf(err, errlen, "%s:%d: profile: unknown profile '%s'",
					 name, lineno, value);
				return -1;
			}
			*have_base = 1;
		} else if (!base_pass && !is_profile) {
			if (apply(p, key, value, why, sizeof(why)) != 0) {
				snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
				return -1;
			}
		}
	}
	return 0;
}

int fsp_jobfile_parse(const char *name, const char *text, enum fsp_scale scale,
		      struct fsp_params *p, char *err, size_t errlen)
{
	int have_base = 0;
	char fio[1536];
	if (fsp_fiojob_explain(text, fio, sizeof fio)) {
		snprintf(err, errlen, "%s:%s", name, fio);
		return -1;
	}
	/* neutral base: a 4 KiB random-read QD1 job of 2 s over 256 MiB */
	fsp_profile_load("sustained-randread", scale, p);
	p->nqd = 1;
	p->span = 256ull << 20;
	p->time_ns = 2000000000ull;
	p->idle_ns = 0;
	p->score = FSP_SCORE_STEPS;
	if (pass(name, text, 1, scale, p, &have_base, err, errlen) != 0)
		return -1;
	return pass(name, text, 0, scale, p, &have_base, err, errlen);
}

int fsp_jobfile_load(const char *path, enum fsp_scale scale,
		     struct fsp_params *p, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *text = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if (cap > (1u << 20)) {
				snprintf(err, errlen, "%s: job file larger than 1 MiB", path);
				free(text);
				fclose(f);
				return -1;
			}
			char *t = realloc(text, cap);
			if (!t) {
				snprintf(err, errlen, "%s: out of memory", path);
				free(text);
				fclose(f);
				return -1;
			}
			text = t;
		}
		size_t got = fread(text + len, 1, 4096, f);
		len += got;
		if (got < 4096)
			break;
	}
	int rd_err = ferror(f);
	fclose(f);
	if (rd_err) {
		snprintf(err, errlen, "%s: read error", path);
		free(text);
		return -1;
	}
	text[len] = 0;
	int rc = fsp_jobfile_parse(path, text, scale, p, err, errlen);
	free(text);
	return rc;
}

/*
 * opt.c - the commands' option parser over getopt_long, and the one message
 * for each mistake on a command line (opt.h).
 *
 * getopt_long does the parsing (both value forms, short clusters, `--`,
 * permutation); this file only turns what it reports into one line a person
 * can act on: the unknown option with the closest valid name, the option
 * that needs a value, the command's --help to look at.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "src/sys/access.h"
#include "src/cli/opt.h"
#include "bench/engine/profile.h"

void fsp_opt_init(struct fsp_opt *g, const char *cmd, void (*usage)(FILE *f),
		  const struct option *longopts, const char *shortopts, int argc,
		  char **argv)
{
	*g = (struct fsp_opt){ .cmd = cmd, .usage = usage, .longopts = longopts,
			       .shortopts = shortopts, .argc = argc, .argv = argv };
	/* '-': a positional comes back in order as the value of option 1 (argv
	 * is not permuted); ':': a missing value comes back as ':', not '?' */
	snprintf(g->optstring, sizeof(g->optstring), "-:%s", shortopts);
	opterr = 0;  /* the messages are ours */
	optind = 0;  /* 0, not 1: glibc then also forgets an earlier scan */
}

static void add_pos(struct fsp_opt *g, const char *arg)
{
	if (g->npos < FSP_OPT_MAX_POS)
		g->pos[g->npos] = arg;
	g->npos++;
}

int fsp_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fsprism %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'fsprism %s --help')\n", cmd);
	return 2;
}

int fsp_opt_one_database(const struct fsp_opt *g)
{
	if (!g->npos)
		return fsp_usage_error(g->cmd, "no database given");
	if (g->npos > 1)
		return fsp_usage_error(g->cmd, "unexpected argument '%s': one database only",
				       g->pos[1]);
	return 0;
}

int fsp_opt_status_interval(const char *s, double *secs)
{
	char *end;
	double v = strtod(s, &end);
	if (*end || end == s || !(v >= 0.1 && v <= 3600))
		return -1;
	*secs = v;
	return 0;
}

int fsp_opt_run_id(const char *s, int64_t *id)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*s < '0' || *s > '9' || errno || *end || v < 1) /* digits only: no space, sign */
		return -1;
	*id = v;
	return 0;
}

int fsp_file_error(const char *cmd, const char *path, const char *what, int err,
		   int need_write)
{
	char why[512];
	int hint = fsp_access_explain(path, err, need_write, why, sizeof why);
	fprintf(stderr, "fsprism %s: %s: %s%s%s%s%s\n", cmd, path, what ? what : "",
		what ? ": " : "", strerror(err), hint ? "; " : "", hint ? why : "");
	return 1;
}

/* Edits (insert, delete, replace, swap two neighbours) from a to b. */
static int distance(const char *a, size_t na, const char *b)
{
	enum { MAX = 64 };
	size_t nb = strlen(b);
	if (na >= MAX || nb >= MAX)
		return MAX;
	int d[MAX][MAX];
	for (size_t i = 0; i <= na; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= nb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= na; i++)
		for (size_t j = 1; j <= nb; j++) {
			int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[na][nb];
}

/* The valid long name closest to the n bytes at name, if it is close. */
static const char *closest(const struct option *opts, const char *name, size_t n)
{
	const char *best = NULL;
	int best_d = n <= 4 ? 2 : 3; /* a typo, not another word */
	for (const struct option *o = opts; o->name; o++) {
		int d = distance(name, n, o->name);
		if (d < best_d) {
			best_d = d;
			best = o->name;
		}
	}
	return best;
}

/* --NAME or --NAME=VALUE as typed: "unknown option '--NAME' (...)". */
static int unknown_long(struct fsp_opt *g, const char *text, const char *suggest)
{
	const char *name = text + 2;
	size_t n = strcspn(name, "=");
	if (!suggest)
		suggest = closest(g->longopts, name, n);
	if (suggest)
		fprintf(stderr, "fsprism %s: unknown option '--%.*s' (did you mean --%s?)\n",
			g->cmd, (int)n, name, suggest);
	else
		fsp_usage_error(g->cmd, "unknown option '--%.*s'", (int)n, name);
	g->status = 2;
	return FSP_OPT_EXIT;
}

static int is_long(const char *text)
{
	return text && text[0] == '-' && text[1] == '-' && text[2];
}

int fsp_opt_next(struct fsp_opt *g)
{
	int idx, c;
	for (;;) {
		idx = -1;
		optarg = NULL;
		c = getopt_long(g->argc, g->argv, g->optstring, g->longopts, &idx);
		if (c != 1)
			break;
		add_pos(g, optarg);
	}
	g->arg = optarg;
	g->name = idx >= 0 ? g->longopts[idx].name : NULL;
	if (c == -1) {
		/* after "--": all that is left is positional */
		while (optind < g->argc)
			add_pos(g, g->argv[optind++]);
		return FSP_OPT_END;
	}
	/* the element just read: getopt has stepped past it (and its value) */
	const char *text = optind > 0 ? g->argv[optind - 1] : NULL;
	if (c == ':') {
		if (is_long(text))
			fsp_usage_error(g->cmd, "%s needs a value", text);
		else
			fsp_usage_error(g->cmd, "-%c needs a value", optopt);
		g->status = 2;
		return FSP_OPT_EXIT;
	}
	if (c == '?') {
		if (is_long(text) && optopt) {
			/* a flag given a value: --quiet=yes */
			fsp_usage_error(g->cmd, "--%.*s takes no value", (int)strcspn(text + 2, "="),
					text + 2);
			g->status = 2;
			return FSP_OPT_EXIT;
		}
		if (!optopt && is_long(text))
			return unknown_long(g, text, NULL); /* unknown, or an ambiguous prefix */
		fsp_usage_error(g->cmd, "unknown option '-%c'", optopt);
		g->status = 2;
		return FSP_OPT_EXIT;
	}
	if (idx >= 0) {
		/* getopt_long accepts a prefix of a name; we want the name */
		if (optarg && optarg == text && optind > 1)
			text = g->argv[optind - 2];
		size_t n = strcspn(text + 2, "=");
		if (n != strlen(g->name) || strncmp(text + 2, g->name, n))
			return unknown_long(g, text, g->name);
	}
	if (c == 'h') {
		g->usage(stdout);
		g->status = 0;
		return FSP_OPT_EXIT;
	}
	return c;
}

struct option *fsp_opt_with_params(const struct option *own)
{
	size_t n = 0, np = 0;
	while (own[n].name)
		n++;
	while (fsp_param_names[np])
		np++;
	struct option *all = calloc(n + np + 1, sizeof(*all));
	if (!all)
		return NULL;
	memcpy(all, own, n * sizeof(*all));
	for (size_t i = 0; i < np; i++) {
		const char *name = fsp_param_names[i];
		all[n + i] = (struct option){
			name, fsp_param_is_flag(name) ? optional_argument : required_argument,
			NULL, FSP_OPT_PARAM + (int)i,
		};
	}
	return all;
}

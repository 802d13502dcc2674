/*
 * opt.h - the one option parser of every command: a thin layer over
 * getopt_long, and the one rule for help, usage errors and exit status.
 *
 * GNU conventions everywhere: `--opt VALUE` and `--opt=VALUE` are the same,
 * short aliases (-q), `--` ends the options, positionals may stand between
 * options (collected in order in pos[]; argv itself is left as typed, so the
 * command line a run records is the one typed). Long names must be written
 * in full (getopt_long would take any unambiguous prefix; a prefix is
 * refused with the full name suggested).
 *
 * The rule (cli.h): --help / -h prints the command's help on stdout, exit 0;
 * a usage error prints one line on stderr, "fsprism CMD: PROBLEM (see
 * 'fsprism CMD --help')", exit 2; a runtime failure exits 1.
 */
#ifndef FSP_CLI_OPT_H
#define FSP_CLI_OPT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

/* Every table lists this: fsp_opt_next answers --help and -h itself. */
#define FSP_OPT_HELP { "help", no_argument, NULL, 'h' }
/* Keys of the profile parameters that fsp_opt_with_params adds: one each,
 * FSP_OPT_PARAM + its index in fsp_param_names. */
#define FSP_OPT_PARAM 1000

/* fsp_opt_next: no more options; the positionals are in pos[] */
#define FSP_OPT_END (-1)
/* fsp_opt_next: the command returns g->status now (0 after --help, 2) */
#define FSP_OPT_EXIT (-2)

/* positionals kept; a command wants two at most, the rest are counted */
#define FSP_OPT_MAX_POS 8

struct fsp_opt {
	const char *cmd;               /* "run": messages say "fsprism run: ..." */
	void (*usage)(FILE *f);        /* the command's --help text */
	const struct option *longopts; /* ends with a zeroed entry */
	const char *shortopts;         /* getopt's, e.g. "fo:hq" */
	int argc;
	char **argv;
	char optstring[64];            /* "-:" + shortopts (see opt.c) */
	/* set by fsp_opt_next */
	const char *arg;               /* the option's value, or NULL */
	const char *name;              /* its long name, NULL for a short one */
	int status;                    /* with FSP_OPT_EXIT */
	const char *pos[FSP_OPT_MAX_POS]; /* the positionals, in order ... */
	int npos;                      /* ... and how many (may exceed what pos holds) */
};

/* Start parsing argv (argv[0] is the command's name). */
void fsp_opt_init(struct fsp_opt *g, const char *cmd, void (*usage)(FILE *f),
		  const struct option *longopts, const char *shortopts, int argc,
		  char **argv);

/*
 * The next option's key (its `val`), FSP_OPT_END, or FSP_OPT_EXIT after
 * --help (status 0) or after printing the one message of a mistake (status 2):
 *   fsprism run: unknown option '--tme' (did you mean --time?)
 *   fsprism run: --time needs a value (see 'fsprism run --help')
 */
int fsp_opt_next(struct fsp_opt *g);

/* "fsprism CMD: MESSAGE (see 'fsprism CMD --help')" on stderr; returns 2. */
int fsp_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The commands that read one results database (stats, report, diagnose):
 * is there exactly one positional? 0, or 2 after the usage error. */
int fsp_opt_one_database(const struct fsp_opt *g);

/* s as a --status-interval's seconds, the one range run and compare
 * accept (compare passes its value on to run): 0, or -1 when s is not a
 * number in FSP_STATUS_RANGE; the command says so. */
#define FSP_STATUS_RANGE "(seconds, 0.1 to 3600)"
int fsp_opt_status_interval(const char *s, double *secs);

/* s as a run id (a whole number, 1 or more, digits only): 0, or -1;
 * the command says what it expected. */
int fsp_opt_run_id(const char *s, int64_t *id);

/*
 * A failure on a file, one line on stderr: "fsprism CMD: PATH: WHAT:
 * strerror(err)" (no WHAT: when what is NULL), and for a permission error
 * "; " and what access PATH needs and how to get it (src/sys/access.h), for
 * reading or, with need_write, reading and writing. Returns 1.
 */
int fsp_file_error(const char *cmd, const char *path, const char *what, int err,
		   int need_write);

/*
 * own followed by one entry per profile parameter (bench/engine/profile.h:
 * the one table of their names), with a value except for the flags
 * (--norepeat, --norepeat=no). malloc'ed: free it; NULL if out of memory.
 */
struct option *fsp_opt_with_params(const struct option *own);

#endif

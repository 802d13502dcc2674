/*
 * test_opt.c - the commands' option parser (src/cli/opt.h): both value
 * forms, short clusters, positionals in order, `--`, flags with an optional
 * value, and the mistakes (unknown, abbreviated, missing value) that end
 * parsing with status 2; and the values several commands read alike (a run
 * id, a status interval, the one database). The messages themselves:
 * tests/it_badinput.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/cli/opt.h"
#include "bench/engine/profile.h"
#include "tests/unit.h"

enum { K_LOG = 256, K_FORMAT };

static const struct option opts[] = {
	{ "log", required_argument, NULL, K_LOG },
	{ "format", no_argument, NULL, K_FORMAT },
	{ "quiet", no_argument, NULL, 'q' },
	FSP_OPT_HELP,
	{ NULL, 0, NULL, 0 },
};

static int helped;
static void usage(FILE *f)
{
	(void)f;
	helped++;
}

/* What one command line parses to: "k=v" per option, then "|" and the
 * positionals; or "exit N" where parsing stopped. */
static const char *parse(const struct option *table, int argc, char **argv)
{
	static char out[512];
	struct fsp_opt g;
	int c;
	size_t n = 0;
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w"); /* the one-line messages */
	fsp_opt_init(&g, "test", usage, table, "o:qh", argc, argv);
	out[0] = 0;
	while ((c = fsp_opt_next(&g)) != FSP_OPT_END) {
		if (c == FSP_OPT_EXIT) {
			snprintf(out, sizeof(out), "exit %d", g.status);
			break;
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s=%s ",
				      g.name ? g.name : "short", g.arg ? g.arg : "-");
	}
	fclose(stderr);
	stderr = saved;
	if (c == FSP_OPT_END) {
		n += (size_t)snprintf(out + n, sizeof(out) - n, "|");
		for (int i = 0; i < g.npos && i < FSP_OPT_MAX_POS; i++)
			n += (size_t)snprintf(out + n, sizeof(out) - n, " %s", g.pos[i]);
	}
	return out;
}

#define ARGV(...) (sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *)), (char *[]){ __VA_ARGS__, NULL }

UNIT_TEST(test_value_forms)
{
	(void)state;
	assert_string_equal(parse(opts, ARGV("cmd", "--log=a.db", "x")), "log=a.db | x");
	assert_string_equal(parse(opts, ARGV("cmd", "--log", "a.db", "x")), "log=a.db | x");
	assert_string_equal(parse(opts, ARGV("cmd", "--log=", "x")), "log= | x");
	/* the value of the separate form may start with '-' */
	assert_string_equal(parse(opts, ARGV("cmd", "--log", "-x")), "log=-x |");
	assert_string_equal(parse(opts, ARGV("cmd", "-oallow_other", "-o", "ro")),
			    "short=allow_other short=ro |");
	assert_string_equal(parse(opts, ARGV("cmd", "-qo", "v")), "short=- short=v |");
}

UNIT_TEST(test_positionals)
{
	(void)state;
	/* in order, between options; argv is not reordered */
	char *argv[] = { "cmd", "a", "--quiet", "b", "--log", "l", "c", NULL };
	assert_string_equal(parse(opts, 7, argv), "quiet=- log=l | a b c");
	assert_string_equal(argv[1], "a");
	assert_string_equal(argv[3], "b");
	/* -- ends the options; "-" is a positional */
	assert_string_equal(parse(opts, ARGV("cmd", "-", "--", "--quiet", "-q")), "| - --quiet -q");
	/* more than pos holds: counted, the first ones kept */
	assert_string_equal(parse(opts, ARGV("cmd", "1", "2", "3", "4", "5", "6", "7", "8", "9")),
			    "| 1 2 3 4 5 6 7 8");
}

UNIT_TEST(test_mistakes)
{
	(void)state;
	assert_string_equal(parse(opts, ARGV("cmd", "--bogus")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "--bogus=1", "x")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "-z")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "--log")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "x", "-o")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "--quiet=yes")), "exit 2");
	/* a prefix is not the name, also when it is the only one it fits */
	assert_string_equal(parse(opts, ARGV("cmd", "--form")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "--lo", "x")), "exit 2");
	assert_string_equal(parse(opts, ARGV("cmd", "--lo=x")), "exit 2");
	/* a later scan starts afresh */
	assert_string_equal(parse(opts, ARGV("cmd", "--log", "x")), "log=x |");
}

UNIT_TEST(test_help)
{
	(void)state;
	helped = 0;
	assert_string_equal(parse(opts, ARGV("cmd", "x", "--help", "--bogus")), "exit 0");
	assert_string_equal(parse(opts, ARGV("cmd", "-h")), "exit 0");
	assert_int_equal(helped, 2);
}

UNIT_TEST(test_params)
{
	(void)state;
	struct option *all = fsp_opt_with_params(opts);
	assert_non_null(all);
	size_t n = 0;
	while (all[n].name)
		n++;
	size_t np = 0;
	while (fsp_param_names[np])
		np++;
	assert_int_equal(n, 5 - 1 + np);
	assert_string_equal(parse(all, ARGV("cmd", "--bs=4k", "--time", "1s", "p", "t")),
			    "bs=4k time=1s | p t");
	/* a flag takes no value, or one after '=' */
	assert_string_equal(parse(all, ARGV("cmd", "--norepeat", "p", "--norepeat=no")),
			    "norepeat=- norepeat=no | p");
	assert_string_equal(parse(all, ARGV("cmd", "--tme=1s")), "exit 2");
	assert_string_equal(parse(all, ARGV("cmd", "--time")), "exit 2");
	free(all);
}

/* The values more than one command reads the same way: a run id, a status
 * interval's seconds, and the one database of the commands that read one. */
UNIT_TEST(test_shared_values)
{
	(void)state;
	int64_t id = 7;
	assert_int_equal(fsp_opt_run_id("42", &id), 0);
	assert_int_equal(id, 42);
	const char *not_ids[] = { "0", "-3", "", "4x", " 4", "+4", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(not_ids) / sizeof(not_ids[0]); i++) {
		assert_int_equal(fsp_opt_run_id(not_ids[i], &id), -1);
		assert_int_equal(id, 42); /* untouched */
	}

	double secs = -1;
	assert_int_equal(fsp_opt_status_interval("0.1", &secs), 0);
	assert_true(secs == 0.1);
	assert_int_equal(fsp_opt_status_interval("3600", &secs), 0);
	assert_true(secs == 3600);
	const char *not_secs[] = { "0.09", "3600.5", "", "1s", "nan", "-1" };
	for (size_t i = 0; i < sizeof(not_secs) / sizeof(not_secs[0]); i++) {
		assert_int_equal(fsp_opt_status_interval(not_secs[i], &secs), -1);
		assert_true(secs == 3600);
	}

	struct fsp_opt g;
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	fsp_opt_init(&g, "test", usage, opts, "o:qh", ARGV("cmd"));
	assert_int_equal(fsp_opt_next(&g), FSP_OPT_END);
	assert_int_equal(fsp_opt_one_database(&g), 2);
	fsp_opt_init(&g, "test", usage, opts, "o:qh", ARGV("cmd", "a.db", "b.db"));
	assert_int_equal(fsp_opt_next(&g), FSP_OPT_END);
	assert_int_equal(fsp_opt_one_database(&g), 2);
	fsp_opt_init(&g, "test", usage, opts, "o:qh", ARGV("cmd", "--quiet", "a.db"));
	assert_int_equal(fsp_opt_next(&g), 'q');
	assert_int_equal(fsp_opt_next(&g), FSP_OPT_END);
	assert_int_equal(fsp_opt_one_database(&g), 0);
	assert_string_equal(g.pos[0], "a.db");
	fclose(stderr);
	stderr = saved;
}

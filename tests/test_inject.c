/*
 * test_inject.c - the rules of `mount --inject` (fs/fuse/inject.h): the
 * grammar and its canonical form, what is refused, which rules a path and
 * an operation select, and the draws: fixed, uniform and exponential delays
 * in their bounds and at their means, errnos at their rate, the same
 * decisions again from the same seed, other ones from another.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "fs/fuse/inject.h"
#include "src/base/ops.h"
#include "tests/unit.h"

static struct fsp_inject *rules(const char *spec)
{
	char err[256];
	struct fsp_inject *inj = fsp_inject_parse(spec, err, sizeof(err));
	if (!inj)
		fail_msg("parse '%s': %s", spec, err);
	return inj;
}

UNIT_TEST(test_canonical_form)
{
	char buf[512];
	struct fsp_inject *inj = rules("op=write|read,path=/db/*,delay=100us;"
				       "op=fsync,errno=EIO:0.01,seed=7;op=getattr,delay=exp:1ms");
	fsp_inject_format(inj, buf, sizeof(buf));
	assert_string_equal(buf, "op=read|write,path=/db/*,delay=100us;op=fsync,errno=EIO:0.01;"
			    "op=getattr,delay=exp:1ms;seed=7");
	fsp_inject_free(inj);
	inj = rules("op=read,delay=uniform:50us-150us");
	fsp_inject_format(inj, buf, sizeof(buf));
	assert_string_equal(buf, "op=read,delay=uniform:50us-150us;seed=1");
	fsp_inject_free(inj);
}

UNIT_TEST(test_refused)
{
	static const struct { const char *spec, *names; } bad[] = {
		{ "op=raed,delay=1us", "raed" },
		{ "op=forget,delay=1us", "forget" },
		{ "op=dev_read,delay=1us", "dev_read" },
		{ "op=read", "without delay= or errno=" },
		{ "delay=1us", "without op=" },
		{ "op=read,delay=1us,delay=2us", "twice" },
		{ "op=read,delay=11s", "11s" },
		{ "op=read,delay=uniform:2us", "uniform:2us" },
		{ "op=read,delay=uniform:2us-1us", "below the minimum" },
		{ "op=read,errno=EIO:0", "'0'" },
		{ "op=read,errno=EIO:x", "'x'" },
		{ "op=read,errno=EWHAT", "EWHAT" },
		{ "op=releasedir,errno=EIO", "releasedir" },
		{ "op=read,delay=1us,colour=red", "colour" },
		{ "op=read,delay", "'delay'" },
		{ "op=read,delay=1us;seed=1;seed=2", "two seeds" },
		{ "", "no rule" },
		{ ";;", "no rule" },
	};
	char err[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		struct fsp_inject *inj = fsp_inject_parse(bad[i].spec, err, sizeof(err));
		if (inj)
			fail_msg("'%s' was accepted", bad[i].spec);
		if (!strstr(err, bad[i].names))
			fail_msg("'%s': '%s' does not name '%s'", bad[i].spec, err, bad[i].names);
	}
	/* 32 rules are fine, 33 are not */
	char many[33 * 24 + 1] = "";
	for (int i = 0; i < 33; i++)
		strcat(many, i ? ";op=read,delay=1us" : "op=read,delay=1us");
	assert_null(fsp_inject_parse(many, err, sizeof(err)));
	assert_non_null(strstr(err, "more than 32"));
	many[strlen(many) - strlen(";op=read,delay=1us")] = '\0';
	struct fsp_inject *inj = rules(many);
	fsp_inject_free(inj);
}

UNIT_TEST(test_selection)
{
	struct fsp_inject *inj = rules("op=read,path=/sub/*.dat,delay=1us;op=read|write,delay=2us;"
				       "op=all,path=*.txt,delay=4us");
	assert_true(fsp_inject_op_any(inj, FSP_OP_READ));
	assert_true(fsp_inject_op_has_path(inj, FSP_OP_READ));
	assert_true(fsp_inject_op_any(inj, FSP_OP_WRITE));
	assert_true(fsp_inject_op_has_path(inj, FSP_OP_WRITE)); /* the all rule */
	assert_false(fsp_inject_op_any(inj, FSP_OP_FORGET));
	assert_false(fsp_inject_op_any(inj, FSP_OP_RELEASE));
	assert_true(fsp_inject_op_any(inj, FSP_OP_GETATTR));
	assert_false(fsp_inject_op_any(inj, FSP_OP_DEV_READ));
	assert_int_equal(fsp_inject_match(inj, "/sub/a.dat"), 1 | 2);
	assert_int_equal(fsp_inject_match(inj, "/a.dat"), 2);
	assert_int_equal(fsp_inject_match(inj, "/sub/deep/a.txt"), 2 | 4); /* '*' crosses '/' */
	uint64_t d;
	assert_int_equal(fsp_inject_decide(inj, FSP_OP_READ, fsp_inject_match(inj, "/sub/a.dat"), &d), 0);
	assert_int_equal(d, 3000);
	assert_int_equal(fsp_inject_decide(inj, FSP_OP_WRITE, fsp_inject_match(inj, "/x.txt"), &d), 0);
	assert_int_equal(d, 6000);
	assert_int_equal(fsp_inject_decide(inj, FSP_OP_GETATTR, fsp_inject_match(inj, "/x"), &d), 0);
	assert_int_equal(d, 0);
	fsp_inject_free(inj);
}

UNIT_TEST(test_delays)
{
	struct fsp_inject *inj = rules("op=read,delay=uniform:50us-150us;op=write,delay=exp:100us");
	uint64_t d, lo = UINT64_MAX, hi = 0;
	double sum = 0, esum = 0;
	const int n = 20000;
	for (int i = 0; i < n; i++) {
		fsp_inject_decide(inj, FSP_OP_READ, UINT32_MAX, &d);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += (double)d;
		fsp_inject_decide(inj, FSP_OP_WRITE, UINT32_MAX, &d);
		esum += (double)d;
	}
	assert_true(lo >= 50000 && lo < 51000);
	assert_true(hi <= 150000 && hi > 149000);
	/* means within 3 standard errors: uniform sd 28.9 us, exponential 100 us */
	double se_u = 28868.0 / 141.4, se_e = 100000.0 / 141.4;
	assert_true(sum / n > 100000 - 3 * se_u && sum / n < 100000 + 3 * se_u);
	assert_true(esum / n > 100000 - 3 * se_e && esum / n < 100000 + 3 * se_e);
	fsp_inject_free(inj);
}

/* Fail pattern of n reads at p = 0.1 with seed, on a fresh rule set (this
 * thread's first draws of it). */
static void pattern(const char *spec, char *out, int n, int *fails)
{
	struct fsp_inject *inj = rules(spec);
	uint64_t d;
	*fails = 0;
	for (int i = 0; i < n; i++) {
		int e = fsp_inject_decide(inj, FSP_OP_READ, UINT32_MAX, &d);
		assert_true(e == 0 || e == EIO);
		out[i] = e ? 'x' : '.';
		*fails += e != 0;
	}
	out[n] = '\0';
	fsp_inject_free(inj);
}

UNIT_TEST(test_errno_rate_and_seed)
{
	enum { N = 10000 };
	static char a[N + 1], b[N + 1], c[N + 1];
	int fa, fb, fc;
	pattern("op=read,errno=EIO:0.1,seed=42", a, N, &fa);
	pattern("op=read,errno=EIO:0.1,seed=42", b, N, &fb);
	pattern("op=read,errno=EIO:0.1,seed=43", c, N, &fc);
	/* binomial: mean 1000, sd 30; 4 sd */
	assert_true(fa >= 880 && fa <= 1120);
	assert_true(fc >= 880 && fc <= 1120);
	assert_string_equal(a, b);
	assert_true(strcmp(a, c) != 0);
	/* p = 1: every request */
	pattern("op=read,errno=EIO", a, 100, &fa);
	assert_int_equal(fa, 100);
}

/* A delay with a probability: that share of the requests waits the
 * distribution's delay, the others none; in canonical form; a colon of the
 * distribution itself is not a probability. */
UNIT_TEST(test_delay_probability)
{
	char buf[256];
	struct fsp_inject *inj = rules("op=read,delay=5ms:0.02;op=write,delay=exp:1ms:0.5;"
				       "op=fsync,delay=uniform:1ms-2ms:1");
	fsp_inject_format(inj, buf, sizeof(buf));
	assert_string_equal(buf, "op=read,delay=5ms:0.02;op=write,delay=exp:1ms:0.5;"
			    "op=fsync,delay=uniform:1ms-2ms;seed=1");
	uint64_t d;
	int delayed = 0, other = 0;
	const int n = 20000;
	for (int i = 0; i < n; i++) {
		fsp_inject_decide(inj, FSP_OP_READ, UINT32_MAX, &d);
		if (d == 5000000)
			delayed++;
		else if (d != 0)
			other++;
	}
	/* binomial: mean 400, sd 19.8; 4 sd */
	assert_true(delayed >= 321 && delayed <= 479);
	assert_int_equal(other, 0);
	for (int i = 0; i < 100; i++) {
		fsp_inject_decide(inj, FSP_OP_FSYNC, UINT32_MAX, &d);
		assert_true(d >= 1000000 && d <= 2000000);
	}
	fsp_inject_free(inj);
	/* exp:5 is no probability of 5: a mean of 5 (ns), or refused alike */
	char err[256];
	struct fsp_inject *a = fsp_inject_parse("op=read,delay=exp:5ms", err, sizeof(err));
	assert_non_null(a);
	fsp_inject_format(a, buf, sizeof(buf));
	assert_string_equal(buf, "op=read,delay=exp:5ms;seed=1");
	fsp_inject_free(a);
	assert_null(fsp_inject_parse("op=read,delay=5ms:0", err, sizeof(err)));
	assert_null(fsp_inject_parse("op=read,delay=5ms:1.5", err, sizeof(err)));
}

/*
 * test_hosts.c - the host file of `fsprism run --hosts` (bench/engine/
 * hostfile.c: every form of a line, every mistake named with its line) and
 * the fleet's view of many hosts (src/prism/fleet.c: the merged histogram
 * is the union of the hosts' IOs, the straggler the host with the worst
 * tail).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bench/engine/hostfile.h"
#include "src/prism/fleet.h"
#include "src/base/hist.h"
#include "tests/unit.h"

static void parse_ok(const char *text, struct fsp_hostfile *hf)
{
	char err[512] = "";
	int rc = fsp_hostfile_parse(text, "hosts", hf, err, sizeof err);
	if (rc)
		print_error("unexpected: %s\n", err);
	assert_int_equal(rc, 0);
}

/* The one line a bad host file gives. */
static void parse_bad(const char *text, const char *want)
{
	struct fsp_hostfile hf;
	char err[512] = "";
	assert_int_equal(fsp_hostfile_parse(text, "hosts", &hf, err, sizeof err), -1);
	if (strcmp(err, want))
		print_error("got  '%s'\nwant '%s'\n", err, want);
	assert_string_equal(err, want);
	assert_null(hf.hosts);
	assert_int_equal(hf.n, 0);
}

UNIT_TEST(every_form_of_a_line)
{
	(void)state;
	struct fsp_hostfile hf;
	parse_ok("# the rack\n"
		 "\n"
		 "node1\n"
		 "  10.0.0.7:8766   /dev/nvme1n1   # its own drive\n"
		 "[fd00::7]:9000 /dev/sdb\n"
		 "[::1]\n"
		 "db-2.example.com:8765\t/data/f\n", &hf);
	assert_int_equal(hf.n, 5);
	assert_string_equal(hf.hosts[0].name, "node1:8765");
	assert_string_equal(hf.hosts[0].addr, "node1");
	assert_int_equal(hf.hosts[0].port, FSP_HOST_PORT);
	assert_string_equal(hf.hosts[0].target, "");
	assert_int_equal(hf.hosts[0].line, 3);
	assert_string_equal(hf.hosts[1].addr, "10.0.0.7");
	assert_int_equal(hf.hosts[1].port, 8766);
	assert_string_equal(hf.hosts[1].target, "/dev/nvme1n1");
	assert_int_equal(hf.hosts[1].line, 4);
	assert_string_equal(hf.hosts[2].addr, "fd00::7");
	assert_int_equal(hf.hosts[2].ipv6, 1);
	assert_int_equal(hf.hosts[2].port, 9000);
	assert_string_equal(hf.hosts[2].name, "[fd00::7]:9000");
	assert_string_equal(hf.hosts[3].name, "[::1]:8765");
	assert_string_equal(hf.hosts[4].target, "/data/f");

	char arg[300];
	fsp_host_fio_arg(&hf.hosts[0], arg, sizeof arg);
	assert_string_equal(arg, "node1,8765");
	fsp_host_fio_arg(&hf.hosts[1], arg, sizeof arg);
	assert_string_equal(arg, "ip:10.0.0.7,8766");
	fsp_host_fio_arg(&hf.hosts[2], arg, sizeof arg);
	assert_string_equal(arg, "ip6:fd00::7,9000");
	fsp_hostfile_free(&hf);
	assert_null(hf.hosts);
}

UNIT_TEST(no_newline_at_the_end_and_crlf_spaces)
{
	(void)state;
	struct fsp_hostfile hf;
	parse_ok("a\r\nb:1 /t\r\nc:65535", &hf);
	assert_int_equal(hf.n, 3);
	assert_string_equal(hf.hosts[1].target, "/t");
	assert_int_equal(hf.hosts[2].port, 65535);
	fsp_hostfile_free(&hf);
}

UNIT_TEST(mistakes_are_named_with_their_line)
{
	(void)state;
	parse_bad("", "hosts: no hosts (one ADDRESS[:PORT] [TARGET] a line)");
	parse_bad("# only a comment\n\n", "hosts: no hosts (one ADDRESS[:PORT] [TARGET] a line)");
	parse_bad("a\nb:70000\n", "hosts:2: '70000' is not a port (1..65535)");
	parse_bad("a:0\n", "hosts:1: '0' is not a port (1..65535)");
	parse_bad("a:\n", "hosts:1: '' is not a port (1..65535)");
	parse_bad("a:12x\n", "hosts:1: '12x' is not a port (1..65535)");
	parse_bad("a:-1\n", "hosts:1: '-1' is not a port (1..65535)");
	parse_bad("x\na /dev/sda extra\n",
		  "hosts:2: more than ADDRESS[:PORT] and TARGET on the line");
	parse_bad("a dev/sda\n", "hosts:1: target 'dev/sda' is not an absolute path");
	parse_bad("n1\n\nn2\nn1:8765\n", "hosts:4: n1:8765 is listed twice (line 1)");
	parse_bad("fd00::1\n", "hosts:1: 'fd00::1': an IPv6 address goes in brackets, [ADDRESS]:PORT");
	parse_bad("[fd00::1\n", "hosts:1: '[fd00::1': no ']' after the IPv6 address");
	parse_bad("[fd00::1]x\n", "hosts:1: '[fd00::1]x': ':PORT' or nothing may follow ']'");
	parse_bad("[zz]\n", "hosts:1: 'zz' is not an IPv6 address");
	parse_bad("no/slash\n", "hosts:1: 'no/slash' is not a host name or address");
	parse_bad("-rf\n", "hosts:1: '-rf' is not a host name or address");
}

UNIT_TEST(too_many_hosts)
{
	(void)state;
	size_t len = (FSP_HOSTS_MAX + 1) * 16;
	char *text = malloc(len), *p = text;
	assert_non_null(text);
	for (int i = 0; i <= FSP_HOSTS_MAX; i++)
		p += sprintf(p, "h%d\n", i);
	char want[64];
	snprintf(want, sizeof want, "hosts:%d: more than %d hosts", FSP_HOSTS_MAX + 1,
		 FSP_HOSTS_MAX);
	parse_bad(text, want);
	free(text);
}

UNIT_TEST(missing_file)
{
	(void)state;
	struct fsp_hostfile hf;
	char err[512];
	assert_int_equal(fsp_hostfile_load("/nonexistent/hosts", &hf, err, sizeof err), -1);
	assert_string_equal(err, "/nonexistent/hosts: No such file or directory");
}

/* ---- the fleet ---- */

static struct fsp_hist *hist_of(const uint64_t *v, size_t n)
{
	struct fsp_hist *h = malloc(sizeof(*h));
	assert_non_null(h);
	fsp_hist_init(h);
	for (size_t i = 0; i < n; i++)
		fsp_hist_add(h, v[i]);
	return h;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

UNIT_TEST(merged_histogram_is_the_union)
{
	(void)state;
	/* three hosts, different speeds and counts */
	enum { N0 = 1000, N1 = 3000, N2 = 500 };
	static uint64_t v0[N0], v1[N1], v2[N2], all[N0 + N1 + N2];
	uint64_t seed = 12345;
	size_t k = 0;
	for (size_t i = 0; i < N0; i++)
		all[k++] = v0[i] = 20000 + (seed = seed * 6364136223846793005ull + 1) % 5000;
	for (size_t i = 0; i < N1; i++)
		all[k++] = v1[i] = 50000 + (seed = seed * 6364136223846793005ull + 1) % 90000;
	for (size_t i = 0; i < N2; i++)
		all[k++] = v2[i] = 1000000 + (seed = seed * 6364136223846793005ull + 1) % 200000;
	struct fsp_hist *h[3] = { hist_of(v0, N0), hist_of(v1, N1), hist_of(v2, N2) };
	struct fsp_hist *u = hist_of(all, k), *m = malloc(sizeof(*m));
	assert_non_null(m);
	fsp_hist_init(m);
	const struct fsp_hist *src[4] = { h[0], NULL, h[1], h[2] }; /* NULL: nothing returned */
	fsp_fleet_merge(m, src, 4);
	assert_int_equal(m->count, u->count);
	assert_int_equal(m->sum, u->sum);
	assert_int_equal(m->min, u->min);
	assert_int_equal(m->max, u->max);
	assert_memory_equal(m->buckets, u->buckets, sizeof(m->buckets));
	/* and its quantiles are the union's, within a bucket of the sorted truth,
	 * never the average of the hosts' */
	qsort(all, k, sizeof(all[0]), cmp_u64);
	const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t got = fsp_hist_quantile(m, qs[i]);
		uint64_t rank = (uint64_t)(qs[i] * (double)k + 0.999999);
		uint64_t truth = all[rank - 1];
		assert_true(got * 128 >= truth * 127 && got * 127 <= truth * 128);
		assert_int_equal(got, fsp_hist_quantile(u, qs[i]));
	}
	uint64_t avg_p99 = (fsp_hist_quantile(h[0], 0.99) + fsp_hist_quantile(h[1], 0.99) +
			    fsp_hist_quantile(h[2], 0.99)) / 3;
	assert_true(fsp_hist_quantile(m, 0.99) > 2 * avg_p99);
	for (int i = 0; i < 3; i++)
		free(h[i]);
	free(u);
	free(m);
}

UNIT_TEST(straggler_is_the_worst_tail)
{
	(void)state;
	uint64_t fast[100], slow_tail[100], slow_mean[100];
	for (int i = 0; i < 100; i++) {
		fast[i] = 10000;
		slow_tail[i] = i >= 98 ? 5000000 : 9000; /* a better median, a worse p99 */
		slow_mean[i] = 10000 + (i < 50 ? 2000 : 0);
	}
	struct fsp_hist *a = hist_of(fast, 100), *b = hist_of(slow_tail, 100),
			*c = hist_of(slow_mean, 100), *empty = hist_of(NULL, 0);
	const struct fsp_hist *hosts[5] = { a, NULL, b, empty, c };
	assert_int_equal(fsp_fleet_straggler(hosts, 5), 2);
	/* the same p99 (exact buckets below 256 ns): the higher mean */
	uint64_t flat[100], one_slow[100];
	for (int i = 0; i < 100; i++) {
		flat[i] = 100;
		one_slow[i] = i == 99 ? 200 : 100;
	}
	struct fsp_hist *f = hist_of(flat, 100), *o = hist_of(one_slow, 100);
	assert_int_equal(fsp_hist_quantile(f, 0.99), fsp_hist_quantile(o, 0.99));
	const struct fsp_hist *tie[2] = { f, o };
	assert_int_equal(fsp_fleet_straggler(tie, 2), 1);
	free(f);
	free(o);
	/* equal hosts: the first */
	const struct fsp_hist *same[3] = { a, a, a };
	assert_int_equal(fsp_fleet_straggler(same, 3), 0);
	/* nobody returned an IO */
	const struct fsp_hist *none[2] = { NULL, empty };
	assert_int_equal(fsp_fleet_straggler(none, 2), -1);
	assert_int_equal(fsp_fleet_straggler(none, 0), -1);
	free(a);
	free(b);
	free(c);
	free(empty);
}

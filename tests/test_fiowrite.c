/*
 * test_fiowrite.c - a profile written as a fio job file
 * (bench/engine/fiowrite.h), and a trace written as a fio iolog v3
 * (fsp_iolog_write, bench/engine/iolog.h).
 *
 * The job file: one job per step in fsprism's step order, named as its
 * steps, each behind a stonewall; block size, queue depth, mix, span,
 * offsets rule, time and byte limits, ramp, seed per step, data pattern,
 * the idle between steps as an fsprism-idle job and bursts as thinktime;
 * what fio cannot be told refused in one line with nothing written. The
 * iolog: written, read back by fsprism's own parser as the same IOs, and
 * written again byte for byte the same.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "bench/engine/fiojob.h"
#include "bench/engine/fiowrite.h"
#include "bench/engine/iolog.h"
#include "bench/engine/iotrace.h"
#include "bench/engine/profile.h"
#include "tests/unit.h"

/* The job file of profile with the overrides key=value..., NULL-ended
 * ("scale", "full" first loads the full scale). */
static char *job_of(const char *profile, const char *target, ...)
{
	struct fsp_params p;
	char err[256] = "";
	assert_int_equal(fsp_profile_load(profile, FSP_SCALE_DEFAULT, &p), 0);
	va_list ap;
	va_start(ap, target);
	for (const char *k; (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		if (!strcmp(k, "scale")) { /* "scale", "full": first, before the overrides */
			assert_int_equal(fsp_profile_load(profile, FSP_SCALE_FULL, &p), 0);
			continue;
		}
		if (fsp_param_set(&p, k, v, err, sizeof err))
			fail_msg("%s=%s: %s", k, v, err);
	}
	va_end(ap);
	assert_int_equal(fsp_params_check(&p, err, sizeof err), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct fsp_fiowrite w = { .profile = profile, .filename = target };
	if (fsp_fio_write_job(f, &p, &w, err, sizeof err) != 0)
		fail_msg("%s: %s", profile, err);
	fclose(f);
	return text;
}

/* The text of section [name] up to the next section, or NULL. */
static char *section(const char *text, const char *name)
{
	char head[128];
	snprintf(head, sizeof head, "\n[%s]\n", name);
	const char *s = strstr(text, head);
	if (!s)
		return NULL;
	s += strlen(head);
	const char *e = strstr(s, "\n[");
	return strndup(s, e ? (size_t)(e - s) + 1 : strlen(s));
}

static void has_line(const char *sec, const char *line)
{
	char want[256];
	snprintf(want, sizeof want, "\n%s\n", line);
	char *padded;
	assert_true(asprintf(&padded, "\n%s", sec) > 0);
	if (!strstr(padded, want))
		fail_msg("no line '%s' in:\n%s", line, sec);
	free(padded);
}

static void lacks(const char *sec, const char *what)
{
	if (strstr(sec, what))
		fail_msg("'%s' should not be in:\n%s", what, sec);
}

static int count(const char *text, const char *what)
{
	int n = 0;
	for (const char *s = text; (s = strstr(s, what)); s++)
		n++;
	return n;
}

UNIT_TEST(test_mixed_random)
{
	char *t = job_of("mixed-random", "/dev/loop7", "mix", "100,70", "time", "1s",
			 "bytes", "8M", "span", "64M", "offset", "1M", "seed", "5",
			 "pattern", "compress:50", NULL);
	char *g = section(t, "global");
	assert_non_null(g);
	has_line(g, "filename=/dev/loop7");
	has_line(g, "ioengine=libaio");
	has_line(g, "direct=1");
	has_line(g, "bs=4096");
	has_line(g, "size=67108864");
	has_line(g, "offset=1048576");
	has_line(g, "lat_percentiles=1");
	has_line(g, "norandommap=1"); /* random with repeats, as fsprism's */
	has_line(g, "buffer_compress_percentage=50");
	has_line(g, "buffer_compress_chunk=512");
	has_line(g, "refill_buffers=1");
	char *a = section(t, "mix=100/0");
	assert_non_null(a);
	has_line(a, "rw=randread");
	has_line(a, "iodepth=4");
	has_line(a, "randseed=5");
	has_line(a, "io_size=8388608");
	has_line(a, "runtime=1000000us");
	lacks(a, "time_based"); /* both limits: whichever first, as fsprism */
	lacks(a, "stonewall"); /* the first job */
	/* 50% duty after a 1 s step: 1 s idle */
	char *idle = section(t, FSP_FIO_IDLE_PREFIX "0");
	assert_non_null(idle);
	has_line(idle, "stonewall");
	has_line(idle, "ioengine=null");
	has_line(idle, "thinktime=1000000");
	char *b = section(t, "mix=70/30");
	assert_non_null(b);
	has_line(b, "stonewall");
	has_line(b, "rw=randrw");
	has_line(b, "rwmixread=70");
	has_line(b, "randseed=6"); /* step i uses seed + i */
	/* no idle after the last step */
	assert_null(section(t, FSP_FIO_IDLE_PREFIX "1"));
	/* fsprism knows its own output as a fio job file */
	char msg[1024];
	assert_int_equal(fsp_fiojob_explain(t, msg, sizeof msg), 1);
	free(g), free(a), free(idle), free(b), free(t);
}

UNIT_TEST(test_sustained_steps)
{
	char *t = job_of("sustained-seqread", "f.img", "qd", "1,2,4", "time", "500ms",
			 "bytes", "0", "idle", "200ms", "ramp", "100ms", NULL);
	assert_int_equal(count(t, "\nstonewall\n"), 3 + 2 - 1); /* jobs and idles, not the first */
	const char *labels[] = { "qd=1", "qd=2", "qd=4" };
	for (int i = 0; i < 3; i++) {
		char *s = section(t, labels[i]);
		assert_non_null(s);
		has_line(s, "rw=read");
		char qd[32];
		snprintf(qd, sizeof qd, "iodepth=%s", labels[i] + 3);
		has_line(s, qd);
		has_line(s, "runtime=500000us");
		has_line(s, "time_based=1"); /* a time limit only */
		has_line(s, "ramp_time=100000us");
		lacks(s, "io_size");
		free(s);
	}
	char *idle = section(t, FSP_FIO_IDLE_PREFIX "1");
	has_line(idle, "thinktime=200000");
	free(idle);
	char *g = section(t, "global");
	lacks(g, "norandommap"); /* sequential */
	has_line(g, "filename=f.img");
	free(g);
	free(t);
	/* a ':' in the name is escaped, else fio reads two files */
	t = job_of("fill", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1", NULL);
	g = section(t, "global");
	has_line(g, "filename=/dev/disk/by-path/pci-0000\\:00\\:1f.2-ata-1");
	free(g);
	free(t);
}

UNIT_TEST(test_fill_and_patterns)
{
	char *t = job_of("fill", "/dev/sdz", "span", "256M", "pattern", "zeros", NULL);
	char *s = section(t, "fill");
	assert_non_null(s);
	has_line(s, "rw=write");
	has_line(s, "iodepth=32");
	lacks(s, "runtime");
	lacks(s, "io_size");
	char *g = section(t, "global");
	has_line(g, "size=268435456");
	has_line(g, "zero_buffers=1");
	lacks(g, "refill_buffers");
	free(s), free(g), free(t);
	/* a fill of the whole target: no size= */
	t = job_of("fill", "/dev/sdz", "scale", "full", NULL);
	g = section(t, "global");
	lacks(g, "size=");
	has_line(g, "refill_buffers=1"); /* random, stamped per write */
	free(g), free(t);
	t = job_of("sustained-randwrite", "x", "qd", "1", "pattern", "random,fixed", NULL);
	g = section(t, "global");
	has_line(g, "scramble_buffers=0");
	lacks(g, "refill_buffers");
	free(g), free(t);
	/* reads write no data: no pattern */
	t = job_of("sustained-randread", "x", "qd", "1", "norepeat", "", NULL);
	g = section(t, "global");
	lacks(g, "buffer");
	has_line(g, "norandommap=0");
	free(g), free(t);
}

UNIT_TEST(test_bursts)
{
	/* 2M bursts in 32M or 3 s: at the rate where the limits meet a burst
	 * takes 187.5 ms; at 20% duty it is followed by 750 ms */
	char *t = job_of("burst-randread", "x", NULL);
	char *s = section(t, "qd=1");
	assert_non_null(s);
	has_line(s, "thinktime=750000");
	has_line(s, "thinktime_blocks=512");
	has_line(s, "thinktime_blocks_type=complete");
	has_line(s, "io_size=33554432");
	has_line(s, "runtime=15000000us"); /* 3 s busy and its idle */
	free(s), free(t);
}

static int refused(const char *profile, const char *target, const char *k, const char *v,
		   const char *want)
{
	struct fsp_params p;
	char err[256] = "";
	assert_int_equal(fsp_profile_load(profile, FSP_SCALE_DEFAULT, &p), 0);
	if (k)
		assert_int_equal(fsp_param_set(&p, k, v, err, sizeof err), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct fsp_fiowrite w = { .filename = target };
	int rc = fsp_fio_write_job(f, &p, &w, err, sizeof err);
	fclose(f);
	if (rc != -1 || !strstr(err, want))
		fail_msg("%s: rc %d, '%s', wanted '%s'", profile, rc, err, want);
	assert_int_equal(len, 0); /* nothing written */
	free(text);
	return 0;
}

UNIT_TEST(test_refusals)
{
	refused("burst-randread", "x", "time", "0", "give both --time and --bytes");
	refused("mixed-random", "x", "time", "0", "duty: fio idles for a fixed time");
	refused("fill", "a\nb", NULL, NULL, "fio cannot name a file with a newline");
	refused("fill", "", NULL, NULL, "no target");
}

UNIT_TEST(test_step_counts)
{
	struct fsp_params p;
	assert_int_equal(fsp_profile_load("mixed-random", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_fio_job_steps(&p), 11);
	assert_int_equal(fsp_profile_load("fill", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_fio_job_steps(&p), 1);
}

UNIT_TEST(test_iolog_round_trip)
{
	struct fsp_iotrace t = { 0 };
	int64_t a = fsp_iotrace_file(&t, "/dev/loop3"), b = fsp_iotrace_file(&t, "ino12");
	assert_true(a == 0 && b == 1);
	const struct fsp_iotrace_io ios[] = {
		{ .issue_ns = 0, .offset = 4096, .len = 4096, .file = 0, .op = FSP_IOTRACE_READ },
		{ .issue_ns = 15000, .offset = 0, .len = 131072, .file = 1, .op = FSP_IOTRACE_WRITE },
		{ .issue_ns = 15000, .offset = 0, .len = 0, .file = 1, .op = FSP_IOTRACE_FSYNC },
		{ .issue_ns = 2000000, .offset = 1ull << 40, .len = 512, .file = 0,
		  .op = FSP_IOTRACE_WRITE },
		{ .issue_ns = 3000000, .offset = 8192, .len = 8192, .file = 0, .op = FSP_IOTRACE_TRIM },
	};
	for (size_t i = 0; i < sizeof ios / sizeof ios[0]; i++)
		assert_int_equal(fsp_iotrace_add(&t, &ios[i]), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(fsp_iolog_write(f, &t, "device"), 0);
	fclose(f);
	assert_memory_equal(text, "fio version 3 iolog\n0 /dev/loop3 add\n0 ino12 add\n", 47);
	assert_non_null(strstr(text, "\n15 ino12 write 0 131072\n15 ino12 sync 0 0\n"));
	assert_non_null(strstr(text, "\n3000 /dev/loop3 close\n3000 ino12 close\n"));

	/* fsprism's parser reads the same IOs back */
	struct fsp_iotrace back = { 0 };
	char err[256] = "";
	f = fmemopen(text, len, "r");
	if (fsp_iolog_parse(f, "log", &back, err, sizeof err))
		fail_msg("%s", err);
	fclose(f);
	assert_int_equal(back.n, t.n);
	assert_int_equal(back.nfiles, 2);
	for (size_t i = 0; i < t.n; i++) {
		assert_int_equal(back.io[i].issue_ns, t.io[i].issue_ns);
		assert_int_equal(back.io[i].offset, t.io[i].offset);
		assert_int_equal(back.io[i].len, t.io[i].len);
		assert_int_equal(back.io[i].op, t.io[i].op);
		assert_string_equal(back.file[back.io[i].file].name, t.file[t.io[i].file].name);
	}
	/* and writes it again byte for byte */
	char *again = NULL;
	size_t len2 = 0;
	f = open_memstream(&again, &len2);
	assert_int_equal(fsp_iolog_write(f, &back, "device"), 0);
	fclose(f);
	assert_int_equal(len2, len);
	assert_memory_equal(again, text, len);
	free(again);
	free(text);
	fsp_iotrace_free(&back);

	/* a name fio could not read back */
	free(t.file[1].name);
	t.file[1].name = strdup("a b");
	f = open_memstream(&text, &len);
	assert_int_equal(fsp_iolog_write(f, &t, "device"), -1);
	fclose(f);
	assert_int_equal(len, 0);
	free(text);
	fsp_iotrace_free(&t);
}

/*
 * test_trace_parse.c - the trace sources of fsprism replay and the
 * replay's schedule (bench/engine/iolog.h, blkparse.h, iotrace.h,
 * trace_replay.h).
 *
 * fio's iolog: a real version-3 log written by fio 3.33 here
 * (tests/fixtures/iolog/fio-v3.log: fio writes version 3 only), a
 * version-2 log as fio's HOWTO describes it (waits, one under 100 us
 * ignored as fio does, sync, trim), and corrupt ones, each refused with
 * FILE:LINE and what is wrong. blktrace: a two-CPU little-endian capture
 * and a big-endian one (tests/fixtures/blktrace/, written by
 * tests/blktrace_write.py and read back by blkparse(8) as the same
 * events; CPU 1 opens with a notify event and its data, as blktrace
 * records each process), D paired with C by sector across CPUs, flush and FUA; corrupt
 * ones refused with the byte offset. The schedule: idle gaps clipped
 * exactly, with and without completion times, kept, time-scaled. The
 * replay loop on a file: the IOs go out at their times, in order.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>
#include "bench/engine/blkparse.h"
#include "bench/engine/iolog.h"
#include "bench/engine/iotrace.h"
#include "bench/engine/trace_replay.h"
#include "tests/unit.h"

static const char *fixture(const char *name)
{
	static char p[PATH_MAX];
	const char *src = getenv("TESTS_SRCDIR");
	assert_non_null(src); /* set by make check */
	snprintf(p, sizeof p, "%s/fixtures/%s", src, name);
	return p;
}

/* the load's error, which must fail and contain want */
static void iolog_fails(const char *name, const char *want)
{
	struct fsp_iotrace t = { 0 };
	char err[512] = "";
	const char *p = fixture(name);
	assert_int_equal(fsp_iolog_load(p, &t, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("%s: got '%s', wanted '%s'", name, err, want);
	/* the message starts with the file's path */
	assert_memory_equal(err, p, strlen(p));
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_iolog_v3_real)
{
	struct fsp_iotrace t = { 0 };
	char err[512] = "";
	assert_int_equal(fsp_iolog_load(fixture("iolog/fio-v3.log"), &t, err, sizeof err), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.nfiles, 1);
	assert_string_equal(t.file[0].name, "/tmp/rp/f.img");
	assert_int_equal(t.has_complete, 0);
	/* microseconds from the run's start, the first IO at 0 */
	static const uint64_t at_us[4] = { 0, 10186 - 149, 20215 - 149, 30730 - 149 };
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(t.io[i].op, FSP_IOTRACE_READ);
		assert_int_equal(t.io[i].offset, 4096 * i);
		assert_int_equal(t.io[i].len, 4096);
		assert_int_equal(t.io[i].file, 0);
		assert_int_equal(t.io[i].issue_ns, at_us[i] * 1000);
	}
	assert_int_equal(t.file[0].size, 16384);
	assert_int_equal(t.file[0].read_end, 16384);
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_iolog_v2)
{
	struct fsp_iotrace t = { 0 };
	char err[512] = "";
	assert_int_equal(fsp_iolog_load(fixture("iolog/v2.log"), &t, err, sizeof err), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.io[0].op, FSP_IOTRACE_WRITE);
	assert_int_equal(t.io[0].issue_ns, 0);
	assert_int_equal(t.io[0].len, 8192);
	/* after "wait 2000": 2 ms; "wait 50" is below fio's 100 and ignored */
	assert_int_equal(t.io[1].op, FSP_IOTRACE_READ);
	assert_int_equal(t.io[1].issue_ns, 2000000);
	assert_int_equal(t.io[2].op, FSP_IOTRACE_FSYNC);
	assert_int_equal(t.io[2].issue_ns, 2000000);
	assert_int_equal(t.io[2].len, 0);
	assert_int_equal(t.io[3].op, FSP_IOTRACE_TRIM);
	assert_int_equal(t.io[3].offset, 8192);
	assert_int_equal(t.file[0].size, 8192); /* a trim does not make a file longer */
	assert_int_equal(t.file[0].read_end, 8192);
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_iolog_corrupt)
{
	iolog_fails("iolog/bad-action.log", ":5: unknown action 'frobnicate'");
	iolog_fails("iolog/bad-version.log", ":1: iolog version '9 iolog' is not supported");
	iolog_fails("iolog/not-open.log", ":3: /dev/sdz is not open");
	iolog_fails("iolog/bad-offset.log", ":4: offset '12x' is not a number");
	iolog_fails("iolog/v3-wait.log", ":4: 'wait' is not allowed in version 3");
	/* not an iolog at all */
	iolog_fails("blktrace/cap.blktrace.0", ":1: a NUL byte: not a text iolog");
}

UNIT_TEST(test_blktrace_two_cpus)
{
	struct fsp_iotrace t = { 0 };
	char err[512] = "";
	char base[PATH_MAX];
	snprintf(base, sizeof base, "%s", fixture("blktrace/cap"));
	assert_true(fsp_blktrace_is(base));
	assert_int_equal(fsp_blktrace_load(base, &t, err, sizeof err), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.has_complete, 1);
	assert_int_equal(t.unpaired, 0);
	/* by issue (D): the write, the read of CPU 1, the flush, the FUA write */
	assert_int_equal(t.io[0].op, FSP_IOTRACE_WRITE);
	assert_int_equal(t.io[0].offset, 2048 * 512);
	assert_int_equal(t.io[0].len, 65536);
	assert_int_equal(t.io[0].issue_ns, 0);
	assert_int_equal(t.io[0].complete_ns, 19000);
	assert_int_equal(t.io[0].thread, 100);
	assert_int_equal(t.io[0].file, FSP_IOTRACE_DEVICE);
	assert_int_equal(t.io[1].op, FSP_IOTRACE_READ);
	assert_int_equal(t.io[1].issue_ns, 2000);
	assert_int_equal(t.io[1].complete_ns, 9000);
	assert_int_equal(t.io[2].op, FSP_IOTRACE_FSYNC);
	assert_int_equal(t.io[2].len, 0);
	assert_int_equal(t.io[2].issue_ns, 29000);
	assert_int_equal(t.io[2].complete_ns, 30000);
	assert_int_equal(t.io[3].op, FSP_IOTRACE_WRITE);
	assert_int_equal(t.io[3].fua, 1);
	assert_int_equal(t.io[3].offset, 4096 * 512);
	assert_int_equal(t.io[3].complete_ns, 49000);
	assert_int_equal(t.device_size, 4096 * 512 + 4096); /* the FUA write ends farthest */
	fsp_iotrace_free(&t);
	/* one CPU's file alone, named as the file */
	snprintf(base, sizeof base, "%s", fixture("blktrace/cap.blktrace.1"));
	assert_int_equal(fsp_blktrace_load(base, &t, err, sizeof err), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.io[0].op, FSP_IOTRACE_READ);
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_blktrace_big_endian)
{
	struct fsp_iotrace t = { 0 };
	char err[512] = "";
	assert_int_equal(fsp_blktrace_load(fixture("blktrace/be"), &t, err, sizeof err), 0);
	assert_int_equal(t.n, 2); /* CPU 0's: the write and the flush */
	assert_int_equal(t.io[0].op, FSP_IOTRACE_WRITE);
	assert_int_equal(t.io[0].offset, 2048 * 512);
	assert_int_equal(t.io[0].len, 65536);
	assert_int_equal(t.io[0].complete_ns, 19000);
	assert_int_equal(t.io[1].op, FSP_IOTRACE_FSYNC);
	fsp_iotrace_free(&t);
}

static void blk_fails(const char *name, const char *want)
{
	struct fsp_iotrace t = { 0 };
	char err[512] = "";
	assert_int_equal(fsp_blktrace_load(fixture(name), &t, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("%s: got '%s', wanted '%s'", name, err, want);
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_blktrace_corrupt)
{
	blk_fails("blktrace/badmagic.blktrace.0", "badmagic.blktrace.0: byte 48: bad magic 0xefbeadde");
	blk_fails("blktrace/truncated.blktrace.0",
		  "truncated.blktrace.0: byte 96: truncated event (4 of its 48 bytes)");
	blk_fails("blktrace/badversion.blktrace.0",
		  "badversion.blktrace.0: byte 0: blktrace version 9 is not supported");
	blk_fails("blktrace/nothing", "no such file, and no");
	/* an iolog is no capture */
	blk_fails("iolog/v2.log", "byte 0: bad magic");
}

static void add(struct fsp_iotrace *t, uint64_t issue, uint64_t complete)
{
	struct fsp_iotrace_io io = { .issue_ns = issue, .complete_ns = complete, .len = 4096,
				     .file = FSP_IOTRACE_DEVICE, .op = FSP_IOTRACE_READ };
	assert_int_equal(fsp_iotrace_add(t, &io), 0);
}

UNIT_TEST(test_idle_clipping)
{
	struct fsp_iotrace t = { .has_complete = 1 };
	/* idle 10..100, 110..200 (the third overlaps nothing), 250..1000;
	 * the fifth is issued while the fourth is in flight: no gap */
	add(&t, 0, 10);
	add(&t, 100, 110);
	add(&t, 200, 250);
	add(&t, 1000, 1500);
	add(&t, 1100, 1200);
	add(&t, 1520, 1530); /* 20 after the latest completion (1500): kept */
	uint64_t at[6];
	assert_int_equal(fsp_iotrace_schedule(&t, 20, 1.0, at), 70 + 70 + 730);
	static const uint64_t want[6] = { 0, 30, 60, 130, 230, 650 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(at[i], want[i]);
	/* kept: as recorded */
	assert_int_equal(fsp_iotrace_schedule(&t, FSP_IOTRACE_KEEP_IDLE, 1.0, at), 0);
	assert_int_equal(at[3], 1000);
	assert_int_equal(at[5], 1520);
	/* scaled after clipping: twice as fast, then twice as slow, then at once */
	fsp_iotrace_schedule(&t, 20, 0.5, at);
	assert_int_equal(at[1], 15);
	assert_int_equal(at[5], 325);
	fsp_iotrace_schedule(&t, FSP_IOTRACE_KEEP_IDLE, 2.0, at);
	assert_int_equal(at[5], 3040);
	fsp_iotrace_schedule(&t, FSP_IOTRACE_KEEP_IDLE, 0.0, at);
	for (int i = 0; i < 6; i++)
		assert_int_equal(at[i], 0);
	/* without completion times the gaps are between issues */
	t.has_complete = 0;
	assert_int_equal(fsp_iotrace_schedule(&t, 50, 1.0, at), 50 + 50 + 750 + 50 + 370);
	static const uint64_t want2[6] = { 0, 50, 100, 150, 200, 250 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(at[i], want2[i]);
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_sort_stable_and_rebased)
{
	struct fsp_iotrace t = { .has_complete = 1 };
	add(&t, 5000, 6000);
	add(&t, 3000, 3500);
	add(&t, 5000, 5100);
	t.io[0].offset = 1;
	t.io[2].offset = 2;
	fsp_iotrace_sort(&t);
	assert_int_equal(t.io[0].issue_ns, 0);
	assert_int_equal(t.io[0].complete_ns, 500);
	assert_int_equal(t.io[1].offset, 1); /* same time: in the order they came */
	assert_int_equal(t.io[2].offset, 2);
	assert_int_equal(t.io[2].complete_ns, 2100);
	fsp_iotrace_free(&t);
}

UNIT_TEST(test_replay_keeps_times)
{
	char path[] = "/var/tmp/fsprism-test-treplay.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	struct fsp_iotrace t = { 0 };
	int64_t id = fsp_iotrace_file(&t, "f");
	assert_int_equal(id, 0);
	/* a write and two reads 5 ms apart, one thread, no completion times */
	for (int i = 0; i < 3; i++) {
		struct fsp_iotrace_io io = { .issue_ns = (uint64_t)i * 5000000, .offset = 4096u * i,
					     .len = i == 2 ? 100 : 4096, .file = 0,
					     .op = i ? FSP_IOTRACE_READ : FSP_IOTRACE_WRITE };
		assert_int_equal(fsp_iotrace_add(&t, &io), 0);
	}
	struct fsp_treplay_file f[2] = { { .fd_direct = -1, .fd_buffered = fd, .align = 4096 },
					 { .fd_direct = -1, .fd_buffered = -1 } };
	struct fsp_treplay_opts o = { .max_idle_ns = FSP_IOTRACE_KEEP_IDLE, .scale = 1.0,
				      .late_ns = 1000000, .qd = 1 };
	struct fsp_treplay_result r;
	volatile sig_atomic_t stop = 0;
	char err[256] = "";
	assert_int_equal(fsp_treplay_run(&t, f, &o, &stop, &r, err, sizeof err), 0);
	assert_int_equal(r.ios[FSP_IOTRACE_WRITE], 1);
	assert_int_equal(r.ios[FSP_IOTRACE_READ], 2);
	assert_int_equal(r.write_bytes, 4096);
	assert_int_equal(r.read_bytes, 4096 + 100);
	assert_int_equal(r.buffered, 3); /* no direct descriptor */
	assert_int_equal(r.nlag, 3);
	assert_true(r.ended_ns - r.started_ns >= 10000000); /* the last went out at 10 ms */
	assert_int_equal(r.intended_ns, 10000000);
	assert_true(r.busy_ns <= r.ended_ns - r.started_ns);
	assert_int_equal(r.depth_max, 1);
	char buf[16];
	assert_int_equal(pread(fd, buf, 16, 0), 16);
	assert_memory_equal(buf, "fsprism replay  ", 16);
	fsp_treplay_result_free(&r);
	fsp_iotrace_free(&t);
	close(fd);
}

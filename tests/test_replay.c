/*
 * test_replay.c - a recorded device IO sequence replayed in its order and
 * at most at its depth (bench/engine/replay_order.h, replay.h).
 *
 * The order and depth, on synthetic recordings with known answers: serial
 * QD1, fully overlapped QD32, completions out of order, a flush that waits
 * for the writes before it (and a read issued while it was in flight that
 * does not wait for it), equal timestamps, a completion stamped before its
 * issue, none at all; and on random recordings, replayed with random
 * completion orders, against a brute-force count: every IO waits for what
 * completed before its issue, and the replay's depth never exceeds the
 * recorded one.
 *
 * The replay itself, with real libaio on an O_DIRECT file: a serial
 * recording (reads, writes, a FUA write, flushes) at depth 1 with its
 * counts and its data on the file, an overlapped one at its full depth,
 * an IO off the block size skipped without holding up what waits for it,
 * a failed IO named with its errno, a stop before anything went out.
 */
#define _GNU_SOURCE /* O_DIRECT, nftw */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>
#include "bench/engine/reap.h"
#include "bench/engine/replay.h"
#include "bench/engine/replay_order.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static struct fsp_replay_io rec(int dir, uint64_t issue, uint64_t complete)
{
	return (struct fsp_replay_io){ .issue_ns = issue, .complete_ns = complete,
				       .offset = issue * 4096, .len = dir == FSP_REPLAY_FLUSH ? 0 :
				       4096, .dir = (uint8_t)dir };
}

UNIT_TEST(test_serial_qd1)
{
	(void)state;
	struct fsp_replay_io io[8];
	for (int i = 0; i < 8; i++)
		io[i] = rec(FSP_REPLAY_READ, 100 * (uint64_t)i, 100 * (uint64_t)i + 60);
	struct fsp_replay_order o;
	assert_int_equal(fsp_replay_order_init(&o, io, 8), 0);
	assert_int_equal(o.depth_max, 1);
	assert_int_equal(o.depth_sum, 8);
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(o.need[i], i);
		assert_int_equal(fsp_replay_recorded_depth(&o, i), 1);
		/* each waits for the one before it, and only for it */
		assert_true(fsp_replay_ready(&o, i));
		if (i + 1 < 8)
			assert_false(fsp_replay_ready(&o, i + 1));
		fsp_replay_done(&o, i);
	}
	assert_int_equal(o.done_prefix, 8);
	fsp_replay_order_free(&o);
}

UNIT_TEST(test_overlapped_qd32)
{
	(void)state;
	struct fsp_replay_io io[32];
	for (int i = 0; i < 32; i++)
		io[i] = rec(i % 2 ? FSP_REPLAY_WRITE : FSP_REPLAY_READ, (uint64_t)i,
			    1000 + 7 * (uint64_t)(31 - i));
	struct fsp_replay_order o;
	assert_int_equal(fsp_replay_order_init(&o, io, 32), 0);
	assert_int_equal(o.depth_max, 32);
	assert_int_equal(o.depth_sum, 32 * 33 / 2); /* mean 16.5 */
	for (size_t i = 0; i < 32; i++) {
		assert_int_equal(o.need[i], 0);
		assert_true(fsp_replay_ready(&o, i)); /* all at once */
	}
	/* the completion order is the reverse of the issue order */
	assert_int_equal(o.by_complete[0], 31);
	assert_int_equal(o.by_complete[31], 0);
	fsp_replay_order_free(&o);
}

UNIT_TEST(test_out_of_order)
{
	(void)state;
	/* A is long; B, issued after it, completes first; C is issued once
	 * B (not A) completed; D once all three did */
	struct fsp_replay_io io[4] = {
		rec(FSP_REPLAY_READ, 0, 100),   /* A */
		rec(FSP_REPLAY_READ, 10, 50),   /* B */
		rec(FSP_REPLAY_WRITE, 60, 110), /* C */
		rec(FSP_REPLAY_READ, 120, 130), /* D */
	};
	struct fsp_replay_order o;
	assert_int_equal(fsp_replay_order_init(&o, io, 4), 0);
	assert_int_equal(o.need[0], 0);
	assert_int_equal(o.need[1], 0);
	assert_int_equal(o.need[2], 1);
	assert_int_equal(o.need[3], 3);
	assert_int_equal(fsp_replay_recorded_depth(&o, 1), 2);
	assert_int_equal(fsp_replay_recorded_depth(&o, 2), 2);
	assert_int_equal(fsp_replay_recorded_depth(&o, 3), 1);
	assert_int_equal(o.depth_max, 2);
	assert_int_equal(o.depth_sum, 1 + 2 + 2 + 1);
	/* A done in the replay first: C still waits for B */
	fsp_replay_done(&o, 0);
	assert_int_equal(o.done_prefix, 0);
	assert_false(fsp_replay_ready(&o, 2));
	fsp_replay_done(&o, 1);
	assert_int_equal(o.done_prefix, 2);
	assert_true(fsp_replay_ready(&o, 2));
	assert_false(fsp_replay_ready(&o, 3));
	fsp_replay_done(&o, 2);
	assert_true(fsp_replay_ready(&o, 3));
	fsp_replay_order_free(&o);
}

UNIT_TEST(test_flush_after_writes)
{
	(void)state;
	/* three overlapping writes, a flush after all three completed, and
	 * a read issued while the flush was in flight */
	struct fsp_replay_io io[5] = {
		rec(FSP_REPLAY_WRITE, 0, 100), rec(FSP_REPLAY_WRITE, 5, 90),
		rec(FSP_REPLAY_WRITE, 10, 95), rec(FSP_REPLAY_FLUSH, 120, 200),
		rec(FSP_REPLAY_READ, 130, 140),
	};
	struct fsp_replay_order o;
	assert_int_equal(fsp_replay_order_init(&o, io, 5), 0);
	assert_int_equal(io[3].dir, FSP_REPLAY_FLUSH);
	assert_int_equal(o.need[3], 3);
	assert_int_equal(o.need[4], 3);
	assert_int_equal(fsp_replay_recorded_depth(&o, 2), 3);
	assert_int_equal(fsp_replay_recorded_depth(&o, 3), 1);
	assert_int_equal(fsp_replay_recorded_depth(&o, 4), 2);
	assert_int_equal(o.depth_max, 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(fsp_replay_ready(&o, i));
	/* the writes complete in the replay in yet another order */
	fsp_replay_done(&o, 2);
	assert_false(fsp_replay_ready(&o, 3));
	fsp_replay_done(&o, 0);
	assert_false(fsp_replay_ready(&o, 3));
	fsp_replay_done(&o, 1);
	assert_true(fsp_replay_ready(&o, 3));
	/* the read does not wait for the flush: it did not in the recording */
	assert_true(fsp_replay_ready(&o, 4));
	fsp_replay_order_free(&o);
}

UNIT_TEST(test_equal_timestamps)
{
	(void)state;
	/* given out of issue order; X and Y issued at the same ns (X first
	 * in the input), X done at that ns; Z issued as Y completed */
	struct fsp_replay_io io[4] = {
		rec(FSP_REPLAY_READ, 200, 300),  /* Z */
		rec(FSP_REPLAY_WRITE, 100, 100), /* X */
		rec(FSP_REPLAY_READ, 100, 200),  /* Y */
		rec(FSP_REPLAY_READ, 301, 400),  /* W */
	};
	struct fsp_replay_order o;
	assert_int_equal(fsp_replay_order_init(&o, io, 4), 0);
	/* sorted by issue, equal issues in their input order */
	assert_int_equal(io[0].dir, FSP_REPLAY_WRITE);
	assert_int_equal(io[1].issue_ns, 100);
	assert_int_equal(io[1].complete_ns, 200);
	assert_int_equal(io[2].issue_ns, 200);
	/* a completion at the very ns of an issue is not before it: both
	 * may be in flight at once */
	assert_int_equal(o.need[0], 0);
	assert_int_equal(o.need[1], 0);
	assert_int_equal(fsp_replay_recorded_depth(&o, 1), 2);
	assert_int_equal(o.need[2], 1);
	assert_int_equal(fsp_replay_recorded_depth(&o, 2), 2);
	assert_int_equal(o.need[3], 3);
	assert_int_equal(o.depth_max, 2);
	fsp_replay_order_free(&o);
}

UNIT_TEST(test_edges)
{
	(void)state;
	struct fsp_replay_order o;
	assert_int_equal(fsp_replay_order_init(&o, NULL, 0), 0);
	assert_int_equal(o.depth_max, 0);
	fsp_replay_order_free(&o);
	/* a completion stamped before its issue counts as at the issue */
	struct fsp_replay_io io[2] = { rec(FSP_REPLAY_READ, 50, 10),
				       rec(FSP_REPLAY_READ, 50, 60) };
	assert_int_equal(fsp_replay_order_init(&o, io, 2), 0);
	assert_int_equal(io[0].complete_ns, 50);
	assert_int_equal(o.need[1], 0);
	assert_int_equal(o.depth_max, 2);
	fsp_replay_order_free(&o);
}

/* Random recordings, replayed with random completion orders: every IO
 * submitted only after all that completed before its issue, in issue
 * order, and the replay's in-flight count never above the recorded. */
UNIT_TEST(test_random_against_brute_force)
{
	(void)state;
	srand(7);
	enum { N = 400 };
	static struct fsp_replay_io io[N];
	size_t inflight[N];
	for (int trial = 0; trial < 50; trial++) {
		size_t n = 1 + (size_t)rand() % N;
		for (size_t i = 0; i < n; i++) {
			uint64_t issue = (uint64_t)(rand() % 2000);
			io[i] = rec(rand() % 3, issue, issue + (uint64_t)(rand() % (1 + trial * 5)));
		}
		struct fsp_replay_order o;
		assert_int_equal(fsp_replay_order_init(&o, io, n), 0);
		uint64_t sum = 0;
		uint32_t max = 0;
		for (size_t i = 0; i < n; i++) {
			size_t need = 0, depth = 0;
			for (size_t j = 0; j < n; j++) {
				need += io[j].complete_ns < io[i].issue_ns;
				depth += j <= i && io[j].complete_ns >= io[i].issue_ns;
			}
			if (i)
				assert_true(io[i - 1].issue_ns <= io[i].issue_ns);
			assert_int_equal(o.need[i], need);
			assert_int_equal(fsp_replay_recorded_depth(&o, i), depth);
			sum += depth;
			max = depth > max ? (uint32_t)depth : max;
		}
		assert_int_equal(o.depth_sum, sum);
		assert_int_equal(o.depth_max, max);
		size_t next = 0, nin = 0;
		while (next < n || nin) {
			while (next < n && fsp_replay_ready(&o, next)) {
				for (size_t j = 0; j < n; j++)
					if (io[j].complete_ns < io[next].issue_ns)
						assert_true(o.done[j]);
				inflight[nin++] = next;
				assert_true(nin <= fsp_replay_recorded_depth(&o, next));
				next++;
			}
			assert_true(nin > 0); /* never stuck */
			size_t k = (size_t)rand() % nin;
			fsp_replay_done(&o, inflight[k]);
			inflight[k] = inflight[--nin];
		}
		assert_int_equal(o.done_prefix, n);
		fsp_replay_order_free(&o);
	}
}

/* ---- the replay, through libaio on an O_DIRECT file ---- */

/* A replayer on a 1 MiB O_DIRECT file in a fresh directory, and its error buffer. */
struct target {
	char dir[64], path[128];
	int fd;
	struct fsp_replayer *r;
	char err[256];
};

/* The file opened with flags (skips where there is no O_DIRECT). */
static void target_open(struct target *t, int flags)
{
	assert_int_equal(test_dir_make(t->dir, sizeof t->dir, "/var/tmp", "replay"), 0);
	test_dir_path(t->path, sizeof t->path, t->dir, "dev");
	t->fd = open(t->path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (t->fd < 0) {
		test_dir_remove(t->dir);
		skip();
	}
	assert_int_equal(ftruncate(t->fd, 1 << 20), 0);
	if (flags != O_RDWR) {
		close(t->fd);
		t->fd = open(t->path, flags | O_DIRECT);
		assert_true(t->fd >= 0);
	}
	t->r = fsp_replayer_new(t->fd, 4096, FSP_POLL_DEFAULT_NS, t->err, sizeof t->err);
	assert_non_null(t->r);
}

static void target_close(struct target *t)
{
	fsp_replayer_free(t->r);
	close(t->fd);
	assert_int_equal(test_dir_remove(t->dir), 0);
}

/* fsp_replay_run of io[n] in the order o made of them (the caller frees
 * it), stopped from the start or not, into res zeroed first. */
static int replay(struct target *t, struct fsp_replay_io *io, size_t n, struct fsp_replay_order *o,
		  int stopped, struct fsp_replay_result *res)
{
	assert_int_equal(fsp_replay_order_init(o, io, n), 0);
	volatile sig_atomic_t stop = stopped;
	memset(res, 0, sizeof *res);
	t->err[0] = 0;
	return fsp_replay_run(t->r, io, o, &stop, res, t->err, sizeof t->err);
}

UNIT_TEST(test_run_serial)
{
	(void)state;
	struct target t;
	target_open(&t, O_RDWR);
	/* write, read, FUA write, flush, read, 8 KiB write, flush: one at a time */
	struct fsp_replay_io io[7] = {
		rec(FSP_REPLAY_WRITE, 0, 10), rec(FSP_REPLAY_READ, 20, 30),
		rec(FSP_REPLAY_WRITE, 40, 50), rec(FSP_REPLAY_FLUSH, 60, 70),
		rec(FSP_REPLAY_READ, 80, 90), rec(FSP_REPLAY_WRITE, 100, 110),
		rec(FSP_REPLAY_FLUSH, 120, 130),
	};
	io[2].fua = 1;
	io[5].len = 8192;
	struct fsp_replay_order o;
	struct fsp_replay_result res;
	assert_int_equal(replay(&t, io, 7, &o, 0, &res), 0);
	assert_int_equal(res.read_ios, 2);
	assert_int_equal(res.write_ios, 3);
	assert_int_equal(res.flushes, 2);
	assert_int_equal(res.read_bytes, 2 * 4096);
	assert_int_equal(res.write_bytes, 4096 + 4096 + 8192);
	assert_int_equal(res.skipped, 0);
	assert_int_equal(res.submitted, 7);
	assert_int_equal(res.depth_max, 1);
	assert_int_equal(res.depth_sum, 7);
	assert_true(res.ended_ns >= res.started_ns);
	assert_int_equal(o.done_prefix, 7);
	fsp_replay_order_free(&o);
	/* the writes reached the file (at issue * 4096: 0, 40, 100 blocks) */
	int fd = open(t.path, O_RDONLY);
	unsigned char b[8192];
	assert_int_equal(pread(fd, b, 4096, 40 * 4096), 4096);
	assert_int_equal(b[0], 0x5a);
	assert_int_equal(b[4095], 0x5a);
	assert_int_equal(pread(fd, b, 8192, 100 * 4096), 8192);
	assert_int_equal(b[8191], 0x5a);
	assert_int_equal(pread(fd, b, 4096, 20 * 4096), 4096);
	assert_int_equal(b[0], 0); /* read, never written */
	close(fd);
	target_close(&t);
}

UNIT_TEST(test_run_overlapped)
{
	(void)state;
	struct target t;
	target_open(&t, O_RDWR);
	/* 32 reads all in flight together, then a write after them all */
	struct fsp_replay_io io[33];
	for (int i = 0; i < 32; i++)
		io[i] = rec(FSP_REPLAY_READ, (uint64_t)i, 1000);
	io[32] = rec(FSP_REPLAY_WRITE, 2000, 2100);
	struct fsp_replay_order o;
	struct fsp_replay_result res;
	assert_int_equal(replay(&t, io, 33, &o, 0, &res), 0);
	assert_int_equal(o.depth_max, 32);
	/* nothing holds the reads back: one batch, at the recorded depth */
	assert_int_equal(res.depth_max, 32);
	assert_int_equal(res.read_ios, 32);
	assert_int_equal(res.write_ios, 1);
	assert_int_equal(res.depth_sum, 32 * 33 / 2 + 1); /* the write alone */
	fsp_replay_order_free(&o);
	/* the replayer serves a second sequence */
	struct fsp_replay_io again[2] = { rec(FSP_REPLAY_READ, 0, 5),
					  rec(FSP_REPLAY_READ, 1, 5) };
	assert_int_equal(replay(&t, again, 2, &o, 0, &res), 0);
	assert_int_equal(res.read_ios, 2);
	assert_int_equal(res.depth_max, 2);
	fsp_replay_order_free(&o);
	target_close(&t);
}

UNIT_TEST(test_run_skip_error_stop)
{
	(void)state;
	struct target t;
	target_open(&t, O_RDWR);
	/* an IO off the block size, and one that waits for it */
	struct fsp_replay_io io[2] = { rec(FSP_REPLAY_READ, 0, 10), rec(FSP_REPLAY_READ, 20, 30) };
	io[0].offset = 512;
	struct fsp_replay_order o;
	struct fsp_replay_result res;
	assert_int_equal(replay(&t, io, 2, &o, 0, &res), 0);
	assert_int_equal(res.skipped, 1);
	assert_int_equal(res.read_ios, 1);
	assert_int_equal(res.submitted, 1);
	fsp_replay_order_free(&o);
	/* stopped before: nothing goes out */
	struct fsp_replay_io more[2] = { rec(FSP_REPLAY_READ, 0, 10), rec(FSP_REPLAY_READ, 1, 10) };
	assert_int_equal(replay(&t, more, 2, &o, 1, &res), 0);
	assert_int_equal(res.submitted + res.read_ios, 0);
	fsp_replay_order_free(&o);
	target_close(&t);
	/* a write on a descriptor opened for reading fails, named with its errno */
	target_open(&t, O_RDONLY);
	struct fsp_replay_io w[2] = { rec(FSP_REPLAY_READ, 0, 10), rec(FSP_REPLAY_WRITE, 20, 30) };
	assert_int_equal(replay(&t, w, 2, &o, 0, &res), -1);
	assert_non_null(strstr(t.err, "write"));
	assert_non_null(strstr(t.err, strerror(EBADF)));
	assert_int_equal(res.read_ios, 1);
	assert_int_equal(res.write_ios, 0);
	fsp_replay_order_free(&o);
	target_close(&t);
}

/*
 * test_replay_order.c - the order and depth of a recorded device IO
 * sequence (bench/engine/replay_order.h), on synthetic recordings with
 * known answers: serial QD1, fully overlapped QD32, completions out of
 * order, a flush that waits for the writes before it (and a read issued
 * while it was in flight that does not wait for it), equal timestamps,
 * a completion stamped before its issue, none at all; and on random
 * recordings, replayed with random completion orders, against a
 * brute-force count: every IO waits for what completed before its issue,
 * and the replay's depth never exceeds the recorded one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bench/engine/replay_order.h"

static struct fsp_replay_io rec(int dir, uint64_t issue, uint64_t complete)
{
	return (struct fsp_replay_io){ .issue_ns = issue, .complete_ns = complete,
				       .offset = issue * 4096, .len = dir == FSP_REPLAY_FLUSH ? 0 :
				       4096, .dir = (uint8_t)dir };
}

static void test_serial_qd1(void **state)
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

static void test_overlapped_qd32(void **state)
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

static void test_out_of_order(void **state)
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

static void test_flush_after_writes(void **state)
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

static void test_equal_timestamps(void **state)
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

static void test_edges(void **state)
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
static void test_random_against_brute_force(void **state)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serial_qd1),
		cmocka_unit_test(test_overlapped_qd32),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_flush_after_writes),
		cmocka_unit_test(test_equal_timestamps),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_random_against_brute_force),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_stall.c - stalls and outliers of one step (src/prism/stall.c) on
 * constructed steps whose cause is known: a run of zero buckets with an IO
 * in flight (one stall, its start, length and buckets, the longest IO),
 * a duty cycle's idle gaps (none), a partial last bucket (none), a step
 * without IO rows (a stall only without idle time), one IO at 10x p99.9
 * (one outlier, its largest part), outliers close together (merged) and
 * inside a stall (part of it), the cap and `more`, a step with no IOs,
 * the outlier thresholds just below and at their edges, and the text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/prism/stall.h"
#include "tests/unit.h"

#define MS 1000000ull
#define US 1000ull
#define T0 (5000 * MS) /* the step's start */
#define MAXIO 8192
#define MAXB 256

static struct fsp_dc_io io[MAXIO];
static size_t nio;
static struct fsp_stall_bucket bk[MAXB];
static struct fsp_stall out[8];
static size_t idx[8];

static size_t add_io(uint64_t submit, uint64_t reap, int write)
{
	assert_true(nio < MAXIO);
	io[nio] = (struct fsp_dc_io){ .submit_ns = T0 + submit, .reap_ns = T0 + reap,
				      .write = (uint8_t)write };
	return nio++;
}

/* IOs of 200 us every ms in [from, to), none overlapping [skip_a, skip_b). */
static void add_regular(uint64_t from, uint64_t to, uint64_t skip_a, uint64_t skip_b)
{
	for (uint64_t t = from; t + 200 * US <= to; t += MS)
		if (t + 200 * US <= skip_a || t >= skip_b)
			add_io(t, t + 200 * US, 0);
}

/* The step over [0, len) with 100 ms buckets counted from the IOs' reaps,
 * as the engine counts them (the last, partial one included). */
static struct fsp_stall_step step_of(uint64_t len, uint64_t busy)
{
	uint64_t w = 100 * MS;
	size_t nb = (size_t)((len + w - 1) / w);
	assert_true(nb <= MAXB);
	for (size_t b = 0; b < nb; b++)
		bk[b] = (struct fsp_stall_bucket){ .t_ns = T0 + b * w };
	for (size_t i = 0; i < nio; i++)
		bk[(io[i].reap_ns - T0) / w].ios++;
	return (struct fsp_stall_step){ .step = 3, .started_ns = T0, .ended_ns = T0 + len,
					.busy_ns = busy, .width_ns = w, .b = bk, .nb = nb,
					.io = io, .nio = nio, .all_ios = 1,
					.p999_ns = { 300 * US, 300 * US } };
}

static void reset(void)
{
	nio = 0;
	memset(bk, 0, sizeof(bk));
	memset(out, 0, sizeof(out));
	memset(idx, 0, sizeof(idx));
}

UNIT_TEST(zero_buckets_with_io_in_flight_are_one_stall)
{
	reset();
	add_regular(0, 2000 * MS, 1190 * MS, 1820 * MS);
	size_t slow = add_io(1190 * MS, 1820 * MS, 1);
	struct fsp_stall_step s = step_of(2000 * MS, 2000 * MS);
	int n = fsp_stall_detect(&s, out, idx, 8);
	/* the slow IO is an outlier too, but inside the stall: one finding */
	assert_int_equal(n, 1);
	assert_int_equal(out[0].kind, FSP_STALL_ZERO);
	assert_int_equal(out[0].step, 3);
	assert_true(out[0].at_ms > 1199.9 && out[0].at_ms < 1200.1);
	assert_true(out[0].duration_ms > 599.9 && out[0].duration_ms < 600.1);
	assert_int_equal(out[0].zero_buckets, 6);
	assert_int_equal(idx[0], slow);
	assert_int_equal(out[0].ios, 1);
	assert_true(out[0].io_us > 629999 && out[0].io_us < 630001);
	assert_int_equal(out[0].write, 1);
	assert_int_equal(out[0].part, -1); /* not decomposed yet */
	assert_true(out[0].p999_us > 299 && out[0].p999_us < 301);
	assert_int_equal(out[0].more, 0);
	/* its decomposition names the device */
	struct fsp_dc_parts p = { 0 };
	p.ns[FSP_DC_SUBMIT] = 5 * MS;
	p.ns[FSP_DC_DEVICE] = 617 * MS;
	p.ns[FSP_DC_COMPLETE] = 8 * MS;
	fsp_stall_attribute(&out[0], &p);
	assert_int_equal(out[0].part, FSP_DC_DEVICE);
	assert_true(out[0].part_share > 0.979 && out[0].part_share < 0.98);
	char line[512];
	fsp_stall_text(&out[0], "mix=70/30", line, sizeof(line));
	assert_string_equal(line, "step 3 (mix=70/30): 600 ms at zero throughput from 1200 ms "
			    "(6 buckets); the longest IO, a write of 630 ms (of 1 in flight), "
			    "spent 98% in device");
}

UNIT_TEST(duty_cycle_idle_is_no_stall)
{
	reset();
	/* bursts of 100 ms busy, then 300 ms idle: nothing in flight between */
	for (uint64_t b = 0; b < 2000 * MS; b += 400 * MS)
		add_regular(b, b + 100 * MS, 0, 0);
	struct fsp_stall_step s = step_of(2000 * MS, 500 * MS);
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	/* the same from a sample of the IOs: the idle time says no stall */
	s.all_ios = 0;
	s.nio = 3;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	/* an IO submitted in the middle of an idle bucket and reaped in the next
	 * does not make the bucket a stall: it is an outlier (110 ms), no more */
	add_io(450 * MS, 560 * MS, 0);
	s = step_of(2000 * MS, 500 * MS);
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 1);
	assert_int_equal(out[0].kind, FSP_STALL_OUTLIER);
}

UNIT_TEST(partial_last_bucket_is_no_stall)
{
	/* no IO rows and no idle time: only the bucket's wholeness decides */
	reset();
	struct fsp_stall_step s = { .step = 0, .started_ns = T0, .ended_ns = T0 + 1050 * MS,
				    .busy_ns = 1050 * MS, .width_ns = 100 * MS, .b = bk, .nb = 11 };
	for (int b = 0; b < 11; b++)
		bk[b] = (struct fsp_stall_bucket){ T0 + (uint64_t)b * 100 * MS, b == 10 ? 0 : 7 };
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	/* the same bucket whole (the step ends at its end): a stall */
	s.ended_ns = T0 + 1100 * MS;
	s.busy_ns = 1100 * MS;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 1);
	assert_int_equal(out[0].zero_buckets, 1);
	/* a bucket before the step's start (clock skew) is not inside it either */
	s.started_ns = T0 + 1;
	s.ended_ns = T0 + 1050 * MS;
	bk[10].ios = 7;
	bk[0].ios = 0;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
}

UNIT_TEST(no_io_rows_stall_only_without_idle)
{
	reset();
	struct fsp_stall_step s = { .step = 0, .started_ns = T0, .ended_ns = T0 + 500 * MS,
				    .busy_ns = 500 * MS - 10 * US, .width_ns = 100 * MS,
				    .b = bk, .nb = 5 };
	for (int b = 0; b < 5; b++)
		bk[b] = (struct fsp_stall_bucket){ T0 + (uint64_t)b * 100 * MS, b == 2 ? 0 : 9 };
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 1);
	assert_int_equal(out[0].zero_buckets, 1);
	assert_true(out[0].at_ms > 199.9 && out[0].at_ms < 200.1);
	assert_int_equal(out[0].write, -1);
	assert_int_equal(out[0].part, -1);
	assert_int_equal(out[0].ios, 0);
	assert_int_equal(idx[0], SIZE_MAX);
	char line[512];
	fsp_stall_text(&out[0], NULL, line, sizeof(line));
	assert_string_equal(line, "step 0: 100 ms at zero throughput from 200 ms (1 bucket); no "
			    "IO rows to say which IO");
	/* with 60 ms of idle time (more than half a bucket) the same is not sure */
	s.busy_ns = 440 * MS;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
}

UNIT_TEST(one_io_at_10x_p999_is_one_outlier_naming_its_part)
{
	reset();
	add_regular(0, 1000 * MS, 500 * MS, 504 * MS);
	size_t slow = add_io(500 * MS, 503 * MS, 0); /* 3 ms = 10x the 300 us p99.9 */
	struct fsp_stall_step s = step_of(1000 * MS, 1000 * MS);
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 1);
	assert_int_equal(out[0].kind, FSP_STALL_OUTLIER);
	assert_int_equal(idx[0], slow);
	assert_int_equal(out[0].zero_buckets, 0);
	assert_int_equal(out[0].ios, 1);
	assert_int_equal(out[0].write, 0);
	assert_true(out[0].at_ms > 499.9 && out[0].at_ms < 500.1);
	assert_true(out[0].duration_ms > 2.999 && out[0].duration_ms < 3.001);
	struct fsp_dc_parts p = { 0 };
	p.ns[FSP_DC_SUBMIT] = 100 * US;
	p.ns[FSP_DC_FUSE_QUEUE] = 200 * US;
	p.ns[FSP_DC_INJECT] = 2500 * US;
	p.ns[FSP_DC_BACKING] = 200 * US;
	fsp_stall_attribute(&out[0], &p);
	assert_int_equal(out[0].part, FSP_DC_INJECT);
	assert_true(out[0].part_share > 0.833 && out[0].part_share < 0.834);
	char line[512];
	fsp_stall_text(&out[0], "qd=1", line, sizeof(line));
	assert_string_equal(line, "step 3 (qd=1): a read of 3.0 ms at 500 ms, 10x the step's read "
			    "p99.9 of 300 us, spent 83% in inject");
	/* an all-zero decomposition names nothing */
	struct fsp_dc_parts z = { 0 };
	fsp_stall_attribute(&out[0], &z);
	assert_int_equal(out[0].part, -1);
}

UNIT_TEST(close_outliers_merge_far_ones_do_not)
{
	reset();
	add_regular(0, 2000 * MS, 0, 0);
	add_io(300 * MS, 305 * MS, 0);
	size_t longest = add_io(340 * MS, 350 * MS, 1); /* 40 ms after the first one */
	add_io(420 * MS, 426 * MS, 0); /* 70 ms after the second ended */
	size_t far = add_io(1500 * MS, 1504 * MS, 0);
	struct fsp_stall_step s = step_of(2000 * MS, 2000 * MS);
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 2);
	assert_int_equal(out[0].kind, FSP_STALL_OUTLIER);
	assert_int_equal(out[0].ios, 3);
	assert_int_equal(idx[0], longest);
	assert_int_equal(out[0].write, 1);
	assert_true(out[0].at_ms > 299.9 && out[0].at_ms < 300.1); /* the first one's */
	assert_true(out[0].duration_ms > 9.999 && out[0].duration_ms < 10.001);
	assert_int_equal(out[1].ios, 1);
	assert_int_equal(idx[1], far);
	char line[512];
	fsp_stall_text(&out[0], "", line, sizeof(line));
	assert_string_equal(line, "step 3: a write of 10 ms at 300 ms (the longest of 3 within "
			    "100 ms), 33x the step's write p99.9 of 300 us, no decomposition "
			    "of it");
}

UNIT_TEST(cap_keeps_the_longest_and_counts_the_rest)
{
	reset();
	add_regular(0, 3000 * MS, 0, 0);
	uint64_t lat[5] = { 2, 6, 3, 5, 4 }; /* ms, 500 ms apart */
	size_t id[5];
	for (int k = 0; k < 5; k++)
		id[k] = add_io((uint64_t)(k + 1) * 500 * MS,
			       (uint64_t)(k + 1) * 500 * MS + lat[k] * MS, 0);
	struct fsp_stall_step s = step_of(3000 * MS, 3000 * MS);
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), FSP_STALL_CAP);
	assert_int_equal(idx[0], id[1]);
	assert_int_equal(idx[1], id[3]);
	assert_int_equal(idx[2], id[4]);
	assert_int_equal(out[0].more, 0);
	assert_int_equal(out[1].more, 0);
	assert_int_equal(out[2].more, 2);
	char line[512];
	fsp_stall_text(&out[2], NULL, line, sizeof(line));
	assert_non_null(strstr(line, "; 2 more findings in the step"));
	/* room for fewer: the rest counted the same way */
	assert_int_equal(fsp_stall_detect(&s, out, idx, 1), 1);
	assert_int_equal(out[0].more, 4);
}

UNIT_TEST(step_with_no_ios)
{
	reset();
	struct fsp_stall_step s = { .step = 1, .started_ns = T0, .ended_ns = T0 + 300 * MS,
				    .busy_ns = 300 * MS, .width_ns = 100 * MS, .all_ios = 1 };
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	/* buckets, all empty, and no IO: idle, not stalled */
	for (int b = 0; b < 3; b++)
		bk[b] = (struct fsp_stall_bucket){ T0 + (uint64_t)b * 100 * MS, 0 };
	s.b = bk;
	s.nb = 3;
	s.busy_ns = 0;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	/* no timeline at all */
	s.width_ns = 0;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
}

UNIT_TEST(outlier_thresholds_at_their_edges)
{
	/* p99.9 1 ms: the 4x rule binds (4 ms; 1 ms beyond is 2 ms) */
	reset();
	add_regular(0, 1000 * MS, 0, 0);
	add_io(300 * MS, 304 * MS - 1, 0); /* just below 4x */
	struct fsp_stall_step s = step_of(1000 * MS, 1000 * MS);
	s.p999_ns[0] = 1 * MS;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	io[nio - 1].reap_ns += 1; /* 4x exactly */
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 1);
	/* p99.9 100 us: the 1 ms floor binds (1.1 ms; 4x is 400 us) */
	reset();
	add_regular(0, 1000 * MS, 0, 0);
	add_io(300 * MS, 300 * MS + 1100 * US - 1, 1);
	s = step_of(1000 * MS, 1000 * MS);
	s.p999_ns[1] = 100 * US;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
	io[nio - 1].reap_ns += 1;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 1);
	assert_int_equal(out[0].write, 1);
	/* a direction with no p99.9 (no IOs of it) has no outliers */
	s.p999_ns[1] = 0;
	assert_int_equal(fsp_stall_detect(&s, out, idx, 8), 0);
}

/*
 * test_trace_rows.c - the block-layer trace's row store and its join to
 * steps, on synthetic requests: the cap counts every row past it as
 * dropped and keeps the rest in order across chunks; each row lands in the
 * step whose window holds the moment it entered the block layer (queue,
 * else insert, else issue), at the window's edges too, and in none in the
 * gaps between steps (ramp, idle) or in steps that did not run. Also the
 * device list's format, which run attributes carry.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/trace/rows.h"
#include "src/trace/block.h"
#include "tests/unit.h"

static struct fsp_block_io io_at(uint64_t queue, uint64_t insert, uint64_t issue)
{
	struct fsp_block_io io = { .queue_ns = queue, .insert_ns = insert,
				   .issue_ns = issue, .complete_ns = issue + 10,
				   .bytes = 4096, .step = 99 };
	return io;
}

UNIT_TEST(test_cap_and_order)
{
	(void)state;
	struct fsp_trows r;
	const size_t cap = 2 * FSP_TROWS_CHUNK + 5;
	fsp_trows_init(&r, sizeof(struct fsp_block_io), cap);
	for (size_t i = 0; i < cap + 7; i++) {
		struct fsp_block_io io = io_at(0, 0, 1000 + i);
		io.sector = i;
		assert_int_equal(fsp_trows_add(&r, &io), i < cap ? 0 : -1);
	}
	assert_int_equal(r.n, cap);
	assert_int_equal(r.dropped, 7);
	size_t seen = 0, chunks = 0;
	for (struct fsp_trows_chunk *c = r.head; c; c = c->next, chunks++)
		for (size_t i = 0; i < c->n; i++, seen++)
			assert_int_equal(FSP_TROWS_AT(c, struct fsp_block_io, i)->sector, seen);
	assert_int_equal(seen, cap);
	assert_int_equal(chunks, 3);
	fsp_trows_free(&r);
	assert_null(r.head);

	/* cap 0: nothing kept, everything counted */
	fsp_trows_init(&r, sizeof(struct fsp_block_io), 0);
	struct fsp_block_io io = io_at(1, 0, 2);
	assert_int_equal(fsp_trows_add(&r, &io), -1);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.dropped, 1);
	fsp_trows_free(&r);
}

UNIT_TEST(test_assign_steps)
{
	(void)state;
	/* steps 0..2 ran, with gaps between; step 3 did not run */
	const struct fsp_bt_window w[] = {
		{ 100, 200 }, { 300, 400 }, { 500, 600 }, { 0, 0 },
	};
	struct { struct fsp_block_io io; int step; } cases[] = {
		{ io_at(50, 0, 150), -1 },   /* queued in the ramp, issued in step 0 */
		{ io_at(100, 0, 150), 0 },   /* the window's first moment */
		{ io_at(200, 0, 250), 0 },   /* its last */
		{ io_at(201, 0, 210), -1 },  /* the idle gap */
		{ io_at(0, 350, 360), 1 },   /* no bio seen: the insert */
		{ io_at(0, 0, 399), 1 },     /* issued directly: the issue */
		{ io_at(0, 250, 310), -1 },  /* inserted in the gap */
		{ io_at(550, 560, 570), 2 },
		{ io_at(601, 0, 700), -1 },  /* after the last step that ran */
		{ io_at(0, 0, 5), -1 },      /* before everything */
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	struct fsp_trows r;
	fsp_trows_init(&r, sizeof(struct fsp_block_io), 100);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fsp_trows_add(&r, &cases[i].io), 0);
	fsp_bt_rows_assign_steps(&r, w, sizeof(w) / sizeof(w[0]));
	for (size_t i = 0; i < n; i++) {
		if (FSP_TROWS_AT(r.head, struct fsp_block_io, i)->step != cases[i].step)
			fail_msg("case %zu: step %d, expected %d", i, FSP_TROWS_AT(r.head, struct fsp_block_io, i)->step,
				 cases[i].step);
	}
	/* no windows at all: every row outside */
	fsp_bt_rows_assign_steps(&r, w, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(FSP_TROWS_AT(r.head, struct fsp_block_io, i)->step, -1);
	fsp_trows_free(&r);
}

/* Many steps, many rows: the binary search agrees with a linear scan. */
UNIT_TEST(test_assign_many)
{
	(void)state;
	enum { NW = 37, NR = 20000 };
	struct fsp_bt_window w[NW];
	for (int i = 0; i < NW; i++) {
		w[i].start_ns = 1000 + (uint64_t)i * 1000;
		w[i].end_ns = w[i].start_ns + 700;
	}
	struct fsp_trows r;
	fsp_trows_init(&r, sizeof(struct fsp_block_io), NR);
	srand(7);
	for (int i = 0; i < NR; i++) {
		struct fsp_block_io io = io_at((uint64_t)(rand() % 40000), 0, 50000);
		fsp_trows_add(&r, &io);
	}
	fsp_bt_rows_assign_steps(&r, w, NW);
	for (struct fsp_trows_chunk *c = r.head; c; c = c->next)
		for (size_t i = 0; i < c->n; i++) {
			int want = -1;
			for (int k = 0; k < NW; k++)
				if (w[k].start_ns <= FSP_TROWS_AT(c, struct fsp_block_io, i)->queue_ns &&
				    FSP_TROWS_AT(c, struct fsp_block_io, i)->queue_ns <= w[k].end_ns)
					want = k;
			assert_int_equal(FSP_TROWS_AT(c, struct fsp_block_io, i)->step, want);
		}
	fsp_trows_free(&r);
}

UNIT_TEST(test_devs_format)
{
	(void)state;
	struct fsp_btrace_devs d = { 0 };
	char buf[128];
	d.n = 2;
	d.dev[0] = 7u << 20 | 3;
	d.first[0] = 0;
	d.end[0] = UINT64_MAX;
	d.dev[1] = 259u << 20 | 1;
	d.first[1] = 2048;
	d.end[1] = 2048 + 1024;
	fsp_btrace_devs_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "7:3 259:1[2048,+1024]");
}

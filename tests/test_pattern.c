/*
 * test_pattern.c - the device-level access pattern of block requests
 * (src/prism/pattern.h), on synthetic rows with known answers: size bins
 * and their mean; the sequential share and streams of one stream, of two
 * interleaved streams (per direction and both together), of one stream
 * alternating reads and writes, of random IO, in the order the device got
 * the requests whatever the rows' order; the recency of reads after
 * writes at every bucket's edges, with partial and overlapping
 * overwrites, a write still in flight, other disks, errors and rows
 * outside every step, and against a brute-force count on random rows;
 * flushes, preflushes and FUA writes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/prism/pattern.h"
#include "tests/unit.h"

#define MS 1000000ull

static struct fsp_block_io rq(unsigned op, uint64_t sector, uint32_t bytes, uint64_t issue)
{
	struct fsp_block_io r = { .queue_ns = issue, .issue_ns = issue,
				  .complete_ns = issue + 1000, .sector = sector,
				  .dev = 7 << 20 | 1, .bytes = bytes, .op = (uint16_t)op };
	return r;
}

/* a write that completed at done_ns, a read that arrived at at_ns */
static struct fsp_block_io wr_done(uint64_t sector, uint64_t sectors, uint64_t done_ns)
{
	struct fsp_block_io r = rq(FSP_BLOCK_WRITE, sector, (uint32_t)(sectors * 512),
				   done_ns - 1000);
	r.complete_ns = done_ns;
	return r;
}

static struct fsp_block_io rd_at(uint64_t sector, uint64_t sectors, uint64_t at_ns)
{
	return rq(FSP_BLOCK_READ, sector, (uint32_t)(sectors * 512), at_ns);
}

static struct fsp_pattern *compute(const struct fsp_block_io *rows, size_t n, size_t *np)
{
	struct fsp_pattern *p;
	assert_int_equal(fsp_pattern_compute(rows, n, &p, np), 0);
	return p;
}

UNIT_TEST(test_sizes)
{
	(void)state;
	assert_int_equal(fsp_size_bin(0), 0);
	assert_int_equal(fsp_size_bin(1), 0);
	assert_int_equal(fsp_size_bin(2), 1);
	assert_int_equal(fsp_size_bin(4095), 11);
	assert_int_equal(fsp_size_bin(4096), 12);
	assert_int_equal(fsp_size_bin(131072), 17);
	assert_int_equal(fsp_size_bin(UINT64_MAX), FSP_SIZE_BINS - 1);
	struct fsp_size_hist h = { 0 };
	fsp_size_hist_add(&h, 4096, 3);
	fsp_size_hist_add(&h, 8192, 1);
	assert_int_equal(h.count, 4);
	assert_int_equal(h.bytes, 20480);
	assert_int_equal(h.bin[12], 3);
	assert_int_equal(h.bin[13], 1);
	assert_true(fsp_size_hist_mean(&h) == 5120.0);

	/* block requests: by direction, split and merged sizes in their bins */
	struct fsp_block_io rows[] = {
		rq(FSP_BLOCK_READ, 0, 131072, 1), rq(FSP_BLOCK_READ, 256, 131072, 2),
		rq(FSP_BLOCK_READ, 512, 65536, 3), rq(FSP_BLOCK_WRITE, 9000, 4096, 4),
		rq(FSP_BLOCK_FLUSH, 0, 0, 5),
	};
	size_t np;
	struct fsp_pattern *p = compute(rows, 5, &np);
	assert_int_equal(np, 1);
	assert_int_equal(p[0].size[0].count, 3);
	assert_int_equal(p[0].size[0].bytes, 327680);
	assert_int_equal(p[0].size[0].bin[17], 2);
	assert_int_equal(p[0].size[0].bin[16], 1);
	assert_int_equal(p[0].size[1].count, 1);
	assert_int_equal(p[0].size[1].bin[12], 1);
	free(p);
}

UNIT_TEST(test_recency_buckets)
{
	(void)state;
	assert_int_equal(fsp_recency_bucket(0), FSP_REC_1MS);
	assert_int_equal(fsp_recency_bucket(MS - 1), FSP_REC_1MS);
	assert_int_equal(fsp_recency_bucket(MS), FSP_REC_10MS);
	assert_int_equal(fsp_recency_bucket(10 * MS - 1), FSP_REC_10MS);
	assert_int_equal(fsp_recency_bucket(10 * MS), FSP_REC_100MS);
	assert_int_equal(fsp_recency_bucket(100 * MS), FSP_REC_1S);
	assert_int_equal(fsp_recency_bucket(1000 * MS - 1), FSP_REC_1S);
	assert_int_equal(fsp_recency_bucket(1000 * MS), FSP_REC_LONGER);
	assert_string_equal(fsp_recency_name(FSP_REC_NEVER), "never");
}

/* Shuffle rows with a fixed seed: the result must not depend on order. */
static void shuffle(struct fsp_block_io *rows, size_t n, unsigned seed)
{
	srand(seed);
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rand() % i;
		struct fsp_block_io t = rows[i - 1];
		rows[i - 1] = rows[j];
		rows[j] = t;
	}
}

UNIT_TEST(test_one_stream)
{
	(void)state;
	struct fsp_block_io rows[48];
	for (int i = 0; i < 48; i++)
		rows[i] = rq(FSP_BLOCK_READ, 1000 + 8 * (uint64_t)i, 4096, 100 + (uint64_t)i);
	shuffle(rows, 48, 1);
	size_t np;
	struct fsp_pattern *p = compute(rows, 48, &np);
	const struct fsp_seq *s = &p[0].seq[FSP_PAT_READ];
	assert_int_equal(s->ios, 48);
	assert_int_equal(s->seq_ios, 47);
	assert_int_equal(s->windows, 3);
	assert_int_equal(fsp_seq_streams_x1000(s), 1000);
	assert_int_equal(p[0].seq[FSP_PAT_WRITE].ios, 0);
	assert_int_equal(p[0].seq[FSP_PAT_BOTH].seq_ios, 47);
	free(p);
}

/* R W R W ..., reads from sector 0 up, writes from 1 000 000 up: one
 * stream each, two together. */
UNIT_TEST(test_two_streams)
{
	(void)state;
	struct fsp_block_io rows[64];
	for (int i = 0; i < 64; i++) {
		uint64_t k = (uint64_t)i / 2;
		rows[i] = i % 2 ? rq(FSP_BLOCK_WRITE, 1000000 + 8 * k, 4096, 10 + (uint64_t)i)
				: rq(FSP_BLOCK_READ, 8 * k, 4096, 10 + (uint64_t)i);
	}
	shuffle(rows, 64, 2);
	size_t np;
	struct fsp_pattern *p = compute(rows, 64, &np);
	for (int d = FSP_PAT_READ; d <= FSP_PAT_WRITE; d++) {
		assert_int_equal(p[0].seq[d].ios, 32);
		assert_int_equal(p[0].seq[d].seq_ios, 31);
		assert_int_equal(fsp_seq_streams_x1000(&p[0].seq[d]), 1000);
	}
	assert_int_equal(p[0].seq[FSP_PAT_BOTH].ios, 64);
	assert_int_equal(p[0].seq[FSP_PAT_BOTH].seq_ios, 62);
	assert_int_equal(p[0].seq[FSP_PAT_BOTH].windows, 4);
	assert_int_equal(fsp_seq_streams_x1000(&p[0].seq[FSP_PAT_BOTH]), 2000);
	free(p);
}

/* One sequence alternating directions (mixed-seq, offsets=shared): each
 * direction skips a block every time, both together are one stream. */
UNIT_TEST(test_shared_sequence)
{
	(void)state;
	struct fsp_block_io rows[32];
	for (int i = 0; i < 32; i++)
		rows[i] = rq(i % 2 ? FSP_BLOCK_WRITE : FSP_BLOCK_READ, 8 * (uint64_t)i, 4096,
			     5 + (uint64_t)i);
	size_t np;
	struct fsp_pattern *p = compute(rows, 32, &np);
	assert_int_equal(p[0].seq[FSP_PAT_READ].seq_ios, 0);
	assert_int_equal(p[0].seq[FSP_PAT_WRITE].seq_ios, 0);
	assert_int_equal(fsp_seq_streams_x1000(&p[0].seq[FSP_PAT_READ]), 16000);
	assert_int_equal(p[0].seq[FSP_PAT_BOTH].seq_ios, 31);
	assert_int_equal(fsp_seq_streams_x1000(&p[0].seq[FSP_PAT_BOTH]), 1000);
	free(p);
}

/* The same offsets on two disks are two places, not one stream. */
UNIT_TEST(test_disks_apart)
{
	(void)state;
	struct fsp_block_io rows[4] = { rq(FSP_BLOCK_READ, 0, 4096, 1),
					rq(FSP_BLOCK_READ, 8, 4096, 2),
					wr_done(0, 8, 3), rd_at(0, 8, 4) };
	rows[1].dev = 8 << 20;
	/* majors 16 and 32 (dev_t bits above the 24th): still two disks */
	rows[2].dev = 16u << 20;
	rows[3].dev = 32u << 20;
	size_t np;
	struct fsp_pattern *p = compute(rows, 4, &np);
	assert_int_equal(p[0].seq[FSP_PAT_READ].seq_ios, 0);
	assert_int_equal(p[0].recency[FSP_REC_NEVER], 3);
	assert_int_equal(p[0].recency[FSP_REC_1MS], 0);
	free(p);
}

UNIT_TEST(test_recency_exact)
{
	(void)state;
	struct fsp_block_io rows[] = {
		/* [0,8) written at 1 ms: read 0.5 ms later; one arriving
		 * before the write completed does not see it; one arriving
		 * the very moment it completed does */
		wr_done(0, 8, 1 * MS),
		rd_at(0, 8, 1 * MS + MS / 2),   /* lt_1ms */
		rd_at(0, 8, 1 * MS - 1),        /* never */
		rd_at(0, 8, 1 * MS),            /* lt_1ms */
		/* partial overwrite: [100,116) at 10 ms, [108,124) at 500 ms */
		wr_done(100, 16, 10 * MS),
		wr_done(108, 16, 500 * MS),
		rd_at(100, 8, 600 * MS),        /* only the first: 590 ms, lt_1s */
		rd_at(104, 8, 505 * MS),        /* both: the second, 5 ms, lt_10ms */
		rd_at(120, 10, 1500 * MS),      /* the second over 4 of 10 sectors: 1 s, ge_1s */
		rd_at(124, 6, 1500 * MS),       /* past both: never */
		/* the same range twice: the later write counts */
		wr_done(200, 8, 100 * MS),
		wr_done(200, 8, 150 * MS),
		rd_at(200, 8, 160 * MS),        /* 10 ms: lt_100ms */
		/* a write inside an older one */
		wr_done(300, 100, 1000 * MS),
		wr_done(340, 10, 1900 * MS),
		rd_at(300, 10, 2000 * MS),      /* 1 s: ge_1s */
		rd_at(345, 1, 2000 * MS),       /* 100 ms: lt_1s */
		rd_at(330, 30, 1999 * MS),      /* 99 ms: lt_100ms */
		/* a write that failed is no write */
		wr_done(500, 8, 1 * MS),
		rd_at(500, 8, 2 * MS),          /* never */
	};
	size_t n = sizeof(rows) / sizeof(rows[0]);
	rows[18].error = -5;
	shuffle(rows, n, 3);
	size_t np;
	struct fsp_pattern *p = compute(rows, n, &np);
	assert_int_equal(np, 1);
	const uint64_t *r = p[0].recency;
	assert_int_equal(r[FSP_REC_1MS], 2);
	assert_int_equal(r[FSP_REC_10MS], 1);
	assert_int_equal(r[FSP_REC_100MS], 2);
	assert_int_equal(r[FSP_REC_1S], 2);
	assert_int_equal(r[FSP_REC_LONGER], 2);
	assert_int_equal(r[FSP_REC_NEVER], 3);
	assert_int_equal(p[0].errors, 1);
	free(p);
}

/* Steps: reads count in their own step; a write outside every step (a
 * ramp, between steps) is still history; another disk is another place;
 * a read's arrival is its queue time, else insert, else issue. */
UNIT_TEST(test_recency_steps)
{
	(void)state;
	struct fsp_block_io rows[] = {
		wr_done(0, 8, 1 * MS), rd_at(0, 8, 3 * MS), rd_at(0, 8, 50 * MS),
		rd_at(0, 8, 3 * MS),
	};
	rows[0].step = -1;
	rows[1].step = 2;
	rows[2].step = 5;
	rows[3].step = 2;
	rows[3].dev = 8 << 20;
	rows[3].queue_ns = 0;
	rows[3].insert_ns = 2 * MS; /* arrival 2 ms: 1 ms after, but on another disk */
	size_t np;
	struct fsp_pattern *p = compute(rows, 4, &np);
	assert_int_equal(np, 2);
	assert_int_equal(p[0].step, 2);
	assert_int_equal(p[1].step, 5);
	assert_int_equal(p[0].recency[FSP_REC_10MS], 1);
	assert_int_equal(p[0].recency[FSP_REC_NEVER], 1);
	assert_int_equal(p[1].recency[FSP_REC_100MS], 1);
	assert_int_equal(p[0].size[0].count, 2);
	free(p);
}

/* Random rows against a count by brute force. */
UNIT_TEST(test_recency_brute_force)
{
	(void)state;
	enum { N = 3000 };
	struct fsp_block_io *rows = calloc(N, sizeof(*rows));
	uint64_t expect[FSP_REC_NBUCKETS] = { 0 };
	assert_non_null(rows);
	srand(42);
	for (size_t i = 0; i < N; i++) {
		uint64_t t = (uint64_t)rand() % 3000 * MS / 2 + (uint64_t)rand() % 1000;
		uint64_t sector = (uint64_t)(rand() % 2000);
		uint64_t sectors = 1 + (uint64_t)(rand() % 64);
		rows[i] = rand() % 2 ? wr_done(sector + 1000, sectors, t + 1000)
				     : rd_at(sector + 1000, sectors, t + 1000);
		if (rand() % 4 == 0)
			rows[i].bytes -= 100; /* a partial last sector still covers it */
	}
	for (size_t i = 0; i < N; i++) {
		const struct fsp_block_io *r = &rows[i];
		if (r->op != FSP_BLOCK_READ)
			continue;
		uint64_t a = r->sector, b = r->sector + (r->bytes + 511) / 512, last = 0;
		int seen = 0;
		for (size_t j = 0; j < N; j++) {
			const struct fsp_block_io *w = &rows[j];
			uint64_t wa = w->sector, wb = w->sector + (w->bytes + 511) / 512;
			if (w->op != FSP_BLOCK_WRITE || wb <= a || b <= wa ||
			    w->complete_ns > r->queue_ns)
				continue;
			if (!seen || w->complete_ns > last)
				last = w->complete_ns;
			seen = 1;
		}
		expect[seen ? fsp_recency_bucket(r->queue_ns - last) : FSP_REC_NEVER]++;
	}
	size_t np;
	struct fsp_pattern *p = compute(rows, N, &np);
	for (int k = 0; k < FSP_REC_NBUCKETS; k++)
		assert_int_equal(p[0].recency[k], expect[k]);
	assert_true(expect[FSP_REC_NEVER] > 0 && expect[FSP_REC_1MS] + expect[FSP_REC_10MS] > 0);
	free(p);
	free(rows);
}

UNIT_TEST(test_flushes)
{
	(void)state;
	struct fsp_block_io rows[] = {
		rq(FSP_BLOCK_FLUSH, 0, 0, 1), rq(FSP_BLOCK_FLUSH, 0, 0, 2),
		rq(FSP_BLOCK_WRITE, 8, 4096, 3), rq(FSP_BLOCK_WRITE, 16, 4096, 4),
		rq(FSP_BLOCK_WRITE, 24, 4096, 5), rq(FSP_BLOCK_FLUSH, 0, 0, 6),
	};
	rows[2].flags = FSP_BLOCK_F_FUA | FSP_BLOCK_F_SYNC;
	rows[3].flags = FSP_BLOCK_F_PREFLUSH | FSP_BLOCK_F_FUA;
	rows[1].flags = FSP_BLOCK_F_PREFLUSH; /* a flush request: counted once */
	rows[5].error = 10;
	size_t np;
	struct fsp_pattern *p = compute(rows, 6, &np);
	assert_int_equal(p[0].flushes, 2);
	assert_int_equal(p[0].preflushes, 1);
	assert_int_equal(p[0].fua_writes, 2);
	assert_int_equal(p[0].errors, 1);
	/* flushes are no IO of the sequence */
	assert_int_equal(p[0].seq[FSP_PAT_BOTH].ios, 3);
	free(p);
}

UNIT_TEST(test_empty)
{
	(void)state;
	struct fsp_pattern *p;
	size_t np = 9;
	assert_int_equal(fsp_pattern_compute(NULL, 0, &p, &np), 0);
	assert_int_equal(np, 0);
	free(p);
	struct fsp_block_io out = rd_at(0, 8, MS);
	out.step = -1;
	assert_int_equal(fsp_pattern_compute(&out, 1, &p, &np), 0);
	assert_int_equal(np, 0);
	free(p);
}

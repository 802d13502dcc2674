/*
 * test_decomp.c - the join of engine IOs with the rows that served them
 * (src/prism/decomp.c), on synthetic rows whose every stamp is known: each
 * part is checked to the nanosecond, and the parts of every IO add up to
 * its total. Cases: one request, a partition's offset, out-of-order
 * completions, a split IO (with and without a gap), a merged request
 * serving two IOs (shared in full by both; one merged into before it was
 * submitted: not nested), an IO with no block request (page cache), QD32
 * on one thread on distinct and on one same range, a request queued by
 * another thread, clock inversions, a file's extents (unwritten, inline,
 * a request across two extents), the mount chain with the FUSE transport,
 * without it (columns absent), and with a reply from another thread, the
 * tail attribution, and random rows (sum == total always).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/prism/decomp.h"
#include "tests/unit.h"

#define MAXIO 4096

static struct fsp_dc_parts got[MAXIO];
static size_t ngot;

static void keep(void *arg, size_t i, const struct fsp_dc_parts *p)
{
	(void)arg;
	assert_true(i < MAXIO);
	assert_int_equal(i, ngot); /* in index order */
	got[i] = *p;
	ngot++;
}

static uint64_t sum_parts(const struct fsp_dc_parts *p)
{
	uint64_t s = 0, w = 0;
	for (unsigned k = 0; k < FSP_DC__COUNT; k++)
		s += p->ns[k];
	for (unsigned k = 0; k < FSP_DC_WHY__COUNT; k++)
		w += p->why_ns[k];
	assert_int_equal(w, p->ns[FSP_DC_RESIDUAL]);
	return s;
}

static void run_join(struct fsp_dc_in *in)
{
	ngot = 0;
	assert_int_equal(fsp_dc_join(in, keep, NULL), 0);
	assert_int_equal(ngot, in->nio);
	for (size_t i = 0; i < in->nio; i++)
		assert_int_equal(sum_parts(&got[i]),
				 in->io[i].reap_ns - in->io[i].submit_ns + in->io[i].lag_ns);
}

/* One value expected of an IO's parts: PART(DEVICE, 750) is ns[FSP_DC_DEVICE],
 * WHY(NO_BLOCK, 700) why_ns[FSP_DC_NO_BLOCK], ROWS(1) the rows joined. */
struct want {
	enum { W_PART, W_WHY, W_ROWS } what;
	unsigned k;
	uint64_t v;
	const char *name;
};
#define PART(k, ns) { W_PART, FSP_DC_##k, ns, #k }
#define WHY(k, ns) { W_WHY, FSP_DC_##k, ns, #k }
#define ROWS(n) { W_ROWS, 0, n, "rows" }

/* got[i] holds every value of w[n]; what w does not name is not looked at. */
static void expect_at(int line, size_t i, const struct want *w, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t v = w[k].what == W_PART ? got[i].ns[w[k].k]
			   : w[k].what == W_WHY ? got[i].why_ns[w[k].k] : got[i].rows;
		if (v != w[k].v)
			fail_msg("line %d: IO %zu: %s is %llu, expected %llu", line, i, w[k].name,
				 (unsigned long long)v, (unsigned long long)w[k].v);
	}
}
#define expect_io(i, ...) \
	expect_at(__LINE__, i, (const struct want[]){ __VA_ARGS__ }, \
		  sizeof((const struct want[]){ __VA_ARGS__ }) / sizeof(struct want))

static struct fsp_dc_io io(uint64_t submit, uint64_t reap, uint64_t off, uint64_t len,
			   uint32_t tid, int write)
{
	return (struct fsp_dc_io){ submit, reap, off, len, tid, (uint8_t)write };
}

static struct fsp_dc_block rq(uint64_t queue, uint64_t issue, uint64_t done, uint64_t off,
			      uint32_t bytes, uint32_t tid, int write)
{
	return (struct fsp_dc_block){ .queue_ns = queue, .issue_ns = issue, .complete_ns = done,
				      .sector = off / 512, .bytes = bytes, .tid = tid,
				      .tgid = 100, .write = (uint8_t)write };
}

static struct fsp_dc_in raw(const struct fsp_dc_io *ios, size_t nio,
			    const struct fsp_dc_block *b, size_t nb)
{
	return (struct fsp_dc_in){ .kind = FSP_DC_RAW, .io = ios, .nio = nio, .blk = b,
				   .nblk = nb };
}

UNIT_TEST(test_one_request)
{
	(void)state;
	struct fsp_dc_io ios[] = { io(1000, 2000, 8192, 4096, 7, 0) };
	struct fsp_dc_block b[] = {
		rq(1100, 1150, 1900, 8192, 4096, 7, 0),
		rq(1100, 1150, 1900, 8192, 4096, 7, 1),   /* a write: not this read */
		rq(1100, 1150, 1900, 65536, 4096, 7, 0),  /* another range */
		rq(2100, 2150, 2200, 8192, 4096, 7, 0),   /* after its reap */
	};
	struct fsp_dc_in in = raw(ios, 1, b, 4);
	run_join(&in);
	expect_io(0, PART(SUBMIT, 100), PART(BLOCK_QUEUE, 50), PART(DEVICE, 750),
		  PART(COMPLETE, 100), PART(RESIDUAL, 0), ROWS(1));

	/* a partition starting at 1 MiB of the disk: the request's sector
	 * is the disk's, the IO's offset the partition's */
	b[0].sector = (1048576 + 8192) / 512;
	in.map.base = 1048576;
	run_join(&in);
	expect_io(0, PART(DEVICE, 750));
	in.map.base = 0; /* now the request is at 1 MiB + 8 KiB: not the IO's */
	run_join(&in);
	expect_io(0, WHY(NO_BLOCK, 1000));
}

/* A rate step's IO, sent 400 ns after its intended time: the lag is its own
 * part, before the submit, and the parts add up to the latency from the
 * intended time; the block request is joined over the submit to the reap. */
UNIT_TEST(test_rate_lag)
{
	(void)state;
	struct fsp_dc_io ios[] = { io(1000, 2000, 8192, 4096, 7, 0) };
	ios[0].lag_ns = 400;
	struct fsp_dc_block b[] = { rq(1100, 1150, 1900, 8192, 4096, 7, 0) };
	struct fsp_dc_in in = raw(ios, 1, b, 1);
	run_join(&in);
	expect_io(0, PART(LAG, 400), PART(SUBMIT, 100), PART(BLOCK_QUEUE, 50), PART(DEVICE, 750),
		  PART(COMPLETE, 100), PART(RESIDUAL, 0), ROWS(1));
	assert_int_equal(sum_parts(&got[0]), 1400);
}

UNIT_TEST(test_out_of_order)
{
	(void)state;
	/* A submitted first completes last */
	struct fsp_dc_io ios[] = { io(1000, 5000, 0, 4096, 7, 0), io(1010, 2000, 4096, 4096, 7, 0) };
	struct fsp_dc_block b[] = {
		rq(1500, 1600, 1900, 4096, 4096, 7, 0), /* B's, done first */
		rq(1100, 1200, 4800, 0, 4096, 7, 0),    /* A's */
	};
	struct fsp_dc_in in = raw(ios, 2, b, 2);
	run_join(&in);
	expect_io(0, PART(SUBMIT, 100), PART(DEVICE, 3600), PART(COMPLETE, 200));
	expect_io(1, PART(SUBMIT, 490), PART(BLOCK_QUEUE, 100), PART(DEVICE, 300),
		  PART(COMPLETE, 100));
}

UNIT_TEST(test_split)
{
	(void)state;
	/* 256 KiB split into two requests that overlap on the device: the
	 * device part is their union, the queue part the time only queued */
	struct fsp_dc_io ios[] = { io(0, 1000, 0, 262144, 7, 1) };
	struct fsp_dc_block b[] = {
		rq(100, 200, 600, 0, 131072, 7, 1),
		rq(150, 400, 900, 131072, 131072, 7, 1),
	};
	struct fsp_dc_in in = raw(ios, 1, b, 2);
	run_join(&in);
	expect_io(0, PART(SUBMIT, 100), PART(BLOCK_QUEUE, 100), /* 100..200 */
		  PART(DEVICE, 700),                          /* 200..900 */
		  PART(COMPLETE, 100), PART(RESIDUAL, 0), ROWS(2));
	/* the second made only after the first completed: a gap, residual */
	b[1] = rq(700, 750, 900, 131072, 131072, 7, 1);
	run_join(&in);
	expect_io(0, PART(DEVICE, 400 + 150), PART(BLOCK_QUEUE, 100 + 50), WHY(GAP, 100));
}

UNIT_TEST(test_merged)
{
	(void)state;
	/* one 8 KiB request serves two adjacent 4 KiB IOs: each waited for
	 * all of it, so each gets all of its time */
	struct fsp_dc_io ios[] = { io(0, 1000, 0, 4096, 7, 0), io(10, 1010, 4096, 4096, 7, 0) };
	struct fsp_dc_block b[] = { rq(50, 100, 900, 0, 8192, 7, 0) };
	struct fsp_dc_in in = raw(ios, 2, b, 1);
	run_join(&in);
	expect_io(0, PART(DEVICE, 800));
	expect_io(1, PART(DEVICE, 800), PART(SUBMIT, 40), PART(BLOCK_QUEUE, 50));
	/* B submitted after the request was made, before its issue: B's bio
	 * was merged into it at some unknown moment, residual until issue */
	ios[1] = io(70, 1010, 4096, 4096, 7, 0);
	run_join(&in);
	expect_io(1, PART(SUBMIT, 0), WHY(NOT_NESTED, 30), PART(DEVICE, 800), PART(COMPLETE, 110));
	expect_io(0, PART(DEVICE, 800));
}

UNIT_TEST(test_no_block)
{
	(void)state;
	struct fsp_dc_io ios[] = { io(0, 700, 0, 4096, 7, 0) };
	struct fsp_dc_in in = raw(ios, 1, NULL, 0);
	run_join(&in);
	expect_io(0, PART(RESIDUAL, 700), WHY(NO_BLOCK, 700), ROWS(0));
	in.kind = FSP_DC_FILE; /* a file read served from the page cache */
	struct fsp_extent e = { 0, 1 << 20, 1 << 20, 0 };
	in.map.ext = &e;
	in.map.n = 1;
	run_join(&in);
	expect_io(0, WHY(NO_BLOCK, 700));
}

UNIT_TEST(test_qd32_one_thread)
{
	(void)state;
	static struct fsp_dc_io ios[32];
	static struct fsp_dc_block b[32];
	/* distinct ranges, completions in reverse order */
	for (unsigned i = 0; i < 32; i++) {
		ios[i] = io(1000 + 10 * i, 100000 - 100 * i, 4096ull * (i * 7 % 32), 4096, 7, 0);
		b[i] = rq(1005 + 10 * i, 1008 + 10 * i, 90000 - 100 * i, 4096ull * (i * 7 % 32),
			  4096, 7, 0);
	}
	struct fsp_dc_in in = raw(ios, 32, b, 32);
	run_join(&in);
	for (unsigned i = 0; i < 32; i++)
		expect_io(i, ROWS(1), PART(SUBMIT, 5),
			  PART(DEVICE, 90000 - 100 * i - (1008 + 10 * i)), PART(COMPLETE, 10000));
	/* all 32 on the same 4 KiB: each IO gets one request, in order */
	for (unsigned i = 0; i < 32; i++) {
		ios[i].offset = 0;
		b[i].sector = 0;
	}
	run_join(&in);
	for (unsigned i = 0; i < 32; i++)
		expect_io(i, ROWS(1), PART(SUBMIT, 5), PART(RESIDUAL, 0));
}

UNIT_TEST(test_other_thread)
{
	(void)state;
	/* issued from a worker (kblockd): another tid, still the IO's */
	struct fsp_dc_io ios[] = { io(0, 1000, 0, 4096, 7, 0), io(5, 1000, 0, 4096, 8, 0) };
	struct fsp_dc_block b[] = { rq(50, 60, 900, 0, 4096, 99, 0) };
	struct fsp_dc_in in = raw(ios, 1, b, 1);
	run_join(&in);
	expect_io(0, ROWS(1), PART(DEVICE, 840));
	/* two threads on one range: the tid that queued it decides, not FIFO */
	struct fsp_dc_block b2[] = { rq(50, 60, 900, 0, 4096, 8, 0),
				     rq(70, 80, 950, 0, 4096, 7, 0) };
	in = raw(ios, 2, b2, 2);
	run_join(&in);
	expect_io(0, PART(SUBMIT, 70), PART(DEVICE, 870));
	expect_io(1, PART(SUBMIT, 45), PART(DEVICE, 840));
}

UNIT_TEST(test_inversions)
{
	(void)state;
	struct fsp_dc_io ios[] = { io(0, 1000, 0, 4096, 7, 0) };
	/* completed after the engine reaped it */
	struct fsp_dc_block b[] = { rq(100, 200, 1200, 0, 4096, 7, 0) };
	struct fsp_dc_in in = raw(ios, 1, b, 1);
	run_join(&in);
	expect_io(0, PART(DEVICE, 0), WHY(INVERTED, 900), PART(SUBMIT, 100));
	/* issued before it was made */
	b[0] = rq(300, 200, 800, 0, 4096, 7, 0);
	run_join(&in);
	expect_io(0, WHY(INVERTED, 600), PART(COMPLETE, 200));
	/* an IO reaped before it was submitted: nothing to split */
	ios[0] = io(1000, 900, 0, 4096, 7, 0);
	ngot = 0;
	assert_int_equal(fsp_dc_join(&in, keep, NULL), 0);
	assert_int_equal(sum_parts(&got[0]), 0);
}

UNIT_TEST(test_file_extents)
{
	(void)state;
	/* file [0,64K) at disk 1M, [64K,128K) unwritten at 4M, [128K,..)
	 * inline (no location: skipped) */
	struct fsp_extent e[] = {
		{ 65536, 4 << 20, 65536, FSP_EXT_UNWRITTEN },
		{ 0, 1 << 20, 65536, 0 },
		{ 131072, 0, 4096, FSP_EXT_INLINE },
	};
	struct fsp_dc_io ios[] = {
		io(0, 1000, 4096, 4096, 7, 1),      /* at disk 1M + 4K */
		io(0, 1000, 65536 + 8192, 4096, 7, 1), /* in the unwritten extent */
		io(0, 1000, 131072, 100, 7, 0),     /* inline: no request */
	};
	struct fsp_dc_block b[] = {
		rq(100, 150, 900, (1 << 20) + 4096, 4096, 7, 1),
		rq(110, 160, 800, (4 << 20) + 8192, 4096, 7, 1),
		rq(120, 170, 700, 0, 4096, 7, 0), /* disk 0: not in the file */
	};
	struct fsp_dc_in in = { .kind = FSP_DC_FILE, .io = ios, .nio = 3, .blk = b, .nblk = 3,
				.map = { 0, e, 3 } };
	run_join(&in);
	expect_io(0, PART(FS_SUBMIT, 100), PART(DEVICE, 750), PART(FS_COMPLETE, 100),
		  PART(SUBMIT, 0));
	expect_io(1, PART(FS_SUBMIT, 110), PART(DEVICE, 640));
	expect_io(2, WHY(NO_BLOCK, 1000));
	/* one request across two extents adjacent on the disk but not in the
	 * file: each piece serves the IO at its own place in the file */
	struct fsp_extent e2[] = { { 0, 1 << 20, 4096, 0 }, { 65536, (1 << 20) + 4096, 4096, 0 } };
	struct fsp_dc_io ios2[] = { io(0, 1000, 0, 4096, 7, 0), io(0, 1000, 65536, 4096, 7, 0) };
	struct fsp_dc_block b2[] = { rq(100, 200, 900, 1 << 20, 8192, 7, 0) };
	in = (struct fsp_dc_in){ .kind = FSP_DC_FILE, .io = ios2, .nio = 2, .blk = b2, .nblk = 1,
				 .map = { 0, e2, 2 } };
	run_join(&in);
	expect_io(0, PART(DEVICE, 700));
	expect_io(1, PART(DEVICE, 700), PART(FS_COMPLETE, 100));
}

UNIT_TEST(test_mount_chain)
{
	(void)state;
	/* engine 0..10000; FUSE send 500, worker receives 1500, handler
	 * 1600..8000 (backing 5000, emu 400), its backing request 2000..6000
	 * queued by the worker; reply; kernel's end 8500 */
	struct fsp_dc_io ios[] = { io(0, 10000, 4096, 4096, 7, 0) };
	struct fsp_dc_daemon d[] = {
		{ .start_ns = 1600, .total_ns = 6400, .backing_ns = 5000, .emu_ns = 400,
		  .recv_ns = 1500, .fuse_unique = 42, .offset = 4096, .length = 4096,
		  .pid = 7, .write = 0 },
		{ .start_ns = 1700, .total_ns = 100, .offset = 4096, .length = 4096,
		  .pid = 9, .write = 0 }, /* another process's: not the engine's */
	};
	struct fsp_dc_fuse f[] = { { 41, 0, 10 }, { 42, 500, 8500 } };
	struct fsp_dc_block b[] = { rq(2000, 2500, 6000, (1 << 20) + 4096, 4096, 55, 0) };
	b[0].tgid = 50;
	struct fsp_extent e = { 0, 1 << 20, 1 << 20, 0 }; /* the backing file */
	struct fsp_dc_in in = { .kind = FSP_DC_MOUNT, .io = ios, .nio = 1, .blk = b, .nblk = 1,
				.map = { 0, &e, 1 }, .blk_tgid = 50, .dmn = d, .ndmn = 2,
				.fuse = f, .nfuse = 2 };
	run_join(&in);
	expect_io(0, ROWS(1), PART(SUBMIT, 500), PART(FUSE_QUEUE, 1000),
		  PART(DAEMON_RECV, 100), PART(BLOCK_QUEUE, 500), PART(DEVICE, 3500),
		  PART(BACKING, 1000),               /* 5000 - 4000 in the block layer */
		  PART(EMU, 400), PART(LAYER, 1000), /* 6400 - 5000 - 400 */
		  PART(FUSE_REPLY, 500), PART(COMPLETE, 1500), PART(RESIDUAL, 0));

	/* a delay injected at handler entry (of layer_ns): its own part, out of layer */
	d[0].inject_ns = 700;
	run_join(&in);
	expect_io(0, PART(INJECT, 700), PART(LAYER, 300), PART(BACKING, 1000), PART(EMU, 400));
	d[0].inject_ns = 0;

	/* another daemon process's request: not in the backing parts */
	in.blk_tgid = 51;
	run_join(&in);
	expect_io(0, PART(DEVICE, 0), PART(BACKING, 5000));

	/* unmapped backing (UINT64_MAX): matched by time and tgid alone */
	in.blk_tgid = 50;
	in.map = (struct fsp_dc_map){ UINT64_MAX, NULL, 0 };
	run_join(&in);
	expect_io(0, PART(DEVICE, 3500));

	/* the FUSE transport's rows absent (fuse_reqs missing, columns 0):
	 * before the handler and after it is residual, named */
	in.fuse = NULL;
	in.nfuse = 0;
	d[0].recv_ns = 0;
	d[0].fuse_unique = 0;
	run_join(&in);
	expect_io(0, WHY(NO_FUSE, 1600 + 2000), PART(SUBMIT, 0), PART(LAYER, 1000));

	/* no daemon row for the IO (sampled out) */
	d[0].pid = 8;
	run_join(&in);
	expect_io(0, WHY(NO_DAEMON, 10000));
}

UNIT_TEST(test_mount_aio_reply)
{
	(void)state;
	/* O_DIRECT through the mount with asynchronous backing IO: the worker
	 * submits and returns, the reaper thread replies. The row is the
	 * caller's (pid 7) whichever thread replied; its backing time runs
	 * from submission to collection and holds the backing request. Two
	 * IOs at QD2 from one engine thread, replied out of order. */
	struct fsp_dc_io ios[] = { io(0, 9000, 0, 4096, 7, 0), io(100, 5000, 8192, 4096, 7, 0) };
	struct fsp_dc_daemon d[] = {
		{ .start_ns = 1000, .total_ns = 7000, .backing_ns = 6500, .recv_ns = 900,
		  .fuse_unique = 2, .offset = 0, .length = 4096, .pid = 7 },
		{ .start_ns = 1100, .total_ns = 3000, .backing_ns = 2500, .recv_ns = 1050,
		  .fuse_unique = 4, .offset = 8192, .length = 4096, .pid = 7 },
	};
	struct fsp_dc_fuse f[] = { { 4, 150, 4200 }, { 2, 200, 8100 } };
	struct fsp_dc_block b[] = { rq(1200, 1300, 7400, 0, 4096, 61, 0),
				    rq(1250, 1350, 3500, 8192, 4096, 61, 0) };
	struct fsp_dc_in in = { .kind = FSP_DC_MOUNT, .io = ios, .nio = 2, .blk = b, .nblk = 2,
				.dmn = d, .ndmn = 2, .fuse = f, .nfuse = 2 };
	run_join(&in);
	expect_io(0, PART(SUBMIT, 200), PART(FUSE_QUEUE, 700), PART(DEVICE, 6100),
		  PART(BLOCK_QUEUE, 100), PART(BACKING, 300), PART(LAYER, 500),
		  PART(FUSE_REPLY, 100), PART(COMPLETE, 900));
	expect_io(1, PART(DEVICE, 2150), PART(FUSE_REPLY, 100), PART(RESIDUAL, 0));
}

UNIT_TEST(test_tail_attribution)
{
	(void)state;
	/* 100 IOs: 98 of 1000 ns (device 800), two slow ones whose extra
	 * time is all device: the tail's device mean stands out, its submit
	 * mean does not */
	static struct fsp_dc_io ios[100];
	static struct fsp_dc_block b[100];
	uint64_t totals[100];
	for (unsigned i = 0; i < 100; i++) {
		uint64_t t0 = 100000ull * i, dev = i >= 98 ? 50000 : 800;
		ios[i] = io(t0, t0 + 200 + dev, 4096ull * i, 4096, 7, 0);
		b[i] = rq(t0 + 100, t0 + 100, t0 + 100 + dev, 4096ull * i, 4096, 7, 0);
		totals[i] = 200 + dev;
	}
	struct fsp_dc_sum *s = fsp_dc_sum_new(totals, 100);
	assert_non_null(s);
	struct fsp_dc_in in = raw(ios, 100, b, 100);
	assert_int_equal(fsp_dc_join(&in, fsp_dc_sum_emit, s), 0);
	assert_int_equal(s->total.count, 100);
	assert_int_equal(s->p99, 50200);
	assert_int_equal(s->tail_n, 2);
	assert_int_equal(s->mid_n, 98);
	assert_int_equal(s->tail_ns[FSP_DC_DEVICE] / s->tail_n, 50000);
	assert_int_equal(s->mid_ns[FSP_DC_DEVICE] / s->mid_n, 800);
	assert_int_equal(s->tail_ns[FSP_DC_SUBMIT] / s->tail_n, 100);
	assert_int_equal(s->mid_ns[FSP_DC_SUBMIT] / s->mid_n, 100);
	assert_in_range(fsp_hist_quantile(&s->part[FSP_DC_DEVICE], 0.5), 796, 804);
	assert_int_equal(s->ios_without_rows, 0);
	fsp_dc_sum_free(s);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

UNIT_TEST(test_random_rows_add_up)
{
	(void)state;
	static struct fsp_dc_io ios[2000];
	static struct fsp_dc_block b[3000];
	static struct fsp_dc_daemon d[2000];
	static struct fsp_dc_fuse f[2000];
	uint64_t x = 88172645463325252ull;
	for (int round = 0; round < 20; round++) {
		for (unsigned i = 0; i < 2000; i++) {
			uint64_t s = rnd(&x) % 1000000;
			ios[i] = io(s, s + rnd(&x) % 20000, 4096 * (rnd(&x) % 64), 4096 << (rnd(&x) % 3),
				    7 + (uint32_t)(rnd(&x) % 2), (int)(rnd(&x) % 2));
			d[i] = (struct fsp_dc_daemon){ .start_ns = s + rnd(&x) % 5000,
				.total_ns = rnd(&x) % 9000, .backing_ns = rnd(&x) % 9000,
				.emu_ns = rnd(&x) % 3000, .recv_ns = s + rnd(&x) % 3000,
				.fuse_unique = 1 + rnd(&x) % 3000, .offset = ios[i].offset,
				.length = 4096, .pid = ios[i].tid, .write = ios[i].write };
			f[i] = (struct fsp_dc_fuse){ 1 + rnd(&x) % 3000, s + rnd(&x) % 2000,
						     s + rnd(&x) % 25000 };
		}
		for (unsigned i = 0; i < 3000; i++) {
			uint64_t q = rnd(&x) % 1000000;
			b[i] = rq(rnd(&x) % 4 ? q : 0, q + rnd(&x) % 3000, q + rnd(&x) % 15000,
				  4096 * (rnd(&x) % 64), 4096u << (rnd(&x) % 4), 7 + (uint32_t)(rnd(&x) % 3),
				  (int)(rnd(&x) % 2));
			b[i].insert_ns = rnd(&x) % 2 ? q + 10 : 0;
		}
		struct fsp_extent e[] = { { 0, 0, 65536, 0 }, { 65536, 1 << 20, 1 << 20, 0 } };
		enum fsp_dc_kind kinds[] = { FSP_DC_RAW, FSP_DC_FILE, FSP_DC_MOUNT };
		struct fsp_dc_in in = { .kind = kinds[round % 3], .io = ios, .nio = 2000, .blk = b,
					.nblk = 3000, .dmn = d, .ndmn = 2000,
					.fuse = round % 2 ? f : NULL, .nfuse = 2000 };
		if (in.kind == FSP_DC_FILE)
			in.map = (struct fsp_dc_map){ 0, e, 2 };
		run_join(&in); /* every IO's parts add up to its total */
	}
}

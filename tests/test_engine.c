/*
 * test_engine.c - unit tests of the job engine's pieces: offset generators,
 * the read/write mix, mixed-sequential offset sharing (also through a real
 * libaio run into a real SQLite store), duty-cycle arithmetic, data-pattern
 * compressibility (zlib), parameter parsing, profiles and job files.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <libaio.h>
#include <sys/resource.h>
#include "bench/engine/engine.h"
#include "bench/engine/jobfile.h"
#include "src/db/oplog.h"
#include "bench/engine/pattern.h"
#include "bench/engine/reap.h"
#include "bench/engine/profile.h"
#include "src/base/units.h"
#include "src/db/store.h"
#include "tests/testdb.h"
#include "tests/testdir.h"
#include "tests/unit.h"

/* ---- offsets ------------------------------------------------------------- */

UNIT_TEST(seq_wraps_at_span_end)
{
	(void)state;
	struct fsp_offgen g;
	/* 10 blocks of 512 starting at 4096, plus a ragged 100 bytes ignored */
	fsp_offgen_init(&g, 4096, 10 * 512 + 100, 512, FSP_ACCESS_SEQ, 0, 1);
	for (int round = 0; round < 3; round++)
		for (uint64_t i = 0; i < 10; i++)
			assert_int_equal(fsp_offgen_next(&g), 4096 + i * 512);
}

UNIT_TEST(random_stays_aligned_in_span_and_covers)
{
	(void)state;
	struct fsp_offgen g;
	const uint64_t n = 64, bs = 4096, off = 1 << 20;
	unsigned hits[64] = { 0 };
	fsp_offgen_init(&g, off, n * bs, (uint32_t)bs, FSP_ACCESS_RANDOM, 0, 42);
	for (int i = 0; i < 64 * 200; i++) {
		uint64_t o = fsp_offgen_next(&g);
		assert_true(o >= off && o < off + n * bs);
		assert_int_equal((o - off) % bs, 0);
		hits[(o - off) / bs]++;
	}
	/* uniform: every block drawn, none wildly over-drawn (expect 200) */
	for (uint64_t b = 0; b < n; b++) {
		assert_true(hits[b] > 100);
		assert_true(hits[b] < 320);
	}
}

UNIT_TEST(norepeat_every_block_once_per_pass)
{
	(void)state;
	static const uint64_t sizes[] = { 1, 2, 3, 7, 64, 1000, 1025, 4096, 100003 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint64_t n = sizes[s];
		struct fsp_offgen g;
		unsigned char *seen = calloc(n, 1);
		uint64_t *first = calloc(n, sizeof(*first));
		assert_non_null(seen);
		assert_non_null(first);
		fsp_offgen_init(&g, 0, n * 512, 512, FSP_ACCESS_RANDOM, 1, 9);
		for (int pass = 0; pass < 2; pass++) {
			memset(seen, 0, n);
			int same_order = 1;
			for (uint64_t i = 0; i < n; i++) {
				uint64_t b = fsp_offgen_next(&g) / 512;
				assert_true(b < n);
				assert_int_equal(seen[b], 0); /* no repeat within a pass */
				seen[b] = 1;
				if (pass == 0)
					first[i] = b;
				else if (first[i] != b)
					same_order = 0;
			}
			for (uint64_t b = 0; b < n; b++)
				assert_int_equal(seen[b], 1); /* full coverage */
			/* each pass is a new permutation */
			if (pass == 1 && n >= 64)
				assert_false(same_order);
		}
		free(seen);
		free(first);
	}
}

UNIT_TEST(random_reproducible_with_seed)
{
	(void)state;
	for (int norepeat = 0; norepeat < 2; norepeat++) {
		struct fsp_offgen a, b, c;
		fsp_offgen_init(&a, 0, 1 << 30, 4096, FSP_ACCESS_RANDOM, norepeat, 7);
		fsp_offgen_init(&b, 0, 1 << 30, 4096, FSP_ACCESS_RANDOM, norepeat, 7);
		fsp_offgen_init(&c, 0, 1 << 30, 4096, FSP_ACCESS_RANDOM, norepeat, 8);
		int differ = 0;
		for (int i = 0; i < 1000; i++) {
			uint64_t x = fsp_offgen_next(&a);
			assert_int_equal(x, fsp_offgen_next(&b));
			differ |= x != fsp_offgen_next(&c);
		}
		assert_true(differ);
	}
}

/* ---- mix ----------------------------------------------------------------- */

UNIT_TEST(mix_ratio_exact)
{
	(void)state;
	static const unsigned pcts[] = { 0, 1, 10, 30, 33, 50, 70, 90, 99, 100 };
	for (size_t k = 0; k < sizeof(pcts) / sizeof(pcts[0]); k++) {
		struct fsp_mix m;
		fsp_mix_init(&m, pcts[k], FSP_INTERLEAVE_EXACT, 1);
		unsigned reads = 0;
		for (unsigned i = 1; i <= 1000; i++) {
			reads += (unsigned)fsp_mix_next_is_read(&m);
			if (i % 100 == 0)
				assert_int_equal(reads, i / 100 * pcts[k]);
		}
	}
	/* 70/30: exactly 7 reads in every block of 10, interleaved */
	struct fsp_mix m;
	fsp_mix_init(&m, 70, FSP_INTERLEAVE_EXACT, 1);
	for (int block = 0; block < 50; block++) {
		unsigned reads = 0, run = 0, longest = 0;
		for (int i = 0; i < 10; i++) {
			int r = fsp_mix_next_is_read(&m);
			reads += (unsigned)r;
			run = r ? run + 1 : 0;
			if (run > longest)
				longest = run;
		}
		assert_int_equal(reads, 7);
		assert_true(longest <= 3); /* interleaved, not 7 then 3 */
	}
}

UNIT_TEST(mixed_sequential_shares_one_offset)
{
	(void)state;
	struct fsp_offgen g;
	struct fsp_mix m;
	fsp_offgen_init(&g, 0, 100 * 131072, 131072, FSP_ACCESS_SEQ, 0, 1);
	fsp_mix_init(&m, 50, FSP_INTERLEAVE_EXACT, 1);
	unsigned reads = 0, writes = 0;
	for (uint64_t i = 0; i < 250; i++) {
		uint64_t off;
		int r = fsp_engine_next_io(&g, &g, &m, &off);
		/* reads and writes continue one sequence: IO i is at block i */
		assert_int_equal(off, (i % 100) * 131072);
		reads += (unsigned)r;
		writes += (unsigned)!r;
	}
	assert_int_equal(reads, 125);
	assert_int_equal(writes, 125);
}

/*
 * fio's rw=rw: reads and writes each walk their own sequence from the span
 * start (checked against fio's write_iolog, see docs/profiles.md).
 */
UNIT_TEST(mixed_sequential_per_direction)
{
	(void)state;
	struct fsp_offgen rg, wg;
	struct fsp_mix m;
	fsp_offgen_init(&rg, 0, 100 * 131072, 131072, FSP_ACCESS_SEQ, 0, 1);
	fsp_offgen_init(&wg, 0, 100 * 131072, 131072, FSP_ACCESS_SEQ, 0, ~1ull);
	fsp_mix_init(&m, 70, FSP_INTERLEAVE_EXACT, 1);
	uint64_t reads = 0, writes = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t off;
		if (fsp_engine_next_io(&rg, &wg, &m, &off))
			assert_int_equal(off, (reads++ % 100) * 131072);
		else
			assert_int_equal(off, (writes++ % 100) * 131072);
	}
	assert_int_equal(reads, 700);
	assert_int_equal(writes, 300);
}

/* A step of spec; a step that fails fails the test, with the engine's message. */
static void step(struct fsp_step_spec *spec, struct fsp_step_result *res)
{
	char err[256];
	if (fsp_engine_step(spec, res, err, sizeof(err)) != 0)
		fail_msg("step failed: %s", err);
}

/*
 * The same through the real engine: libaio on an O_DIRECT file, every IO
 * logged (record=full) into a real SQLite store; at QD1 the submission
 * order must alternate reads and writes and walk one sequence (shared
 * offsets) or one per direction, each read followed by a write at its offset.
 */
static void mixed_seq_real_io(enum fsp_offsets offsets)
{
	char dir[64], file[128], dbpath[128], err[256];
	assert_int_equal(test_dir_make(dir, sizeof(dir), "/var/tmp", "engine"), 0);
	test_dir_path(file, sizeof(file), dir, "target");
	test_dir_path(dbpath, sizeof(dbpath), dir, "t.db");
	int fd = open(file, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0) {
		rmdir(dir);
		skip(); /* no O_DIRECT on this file system */
	}
	const uint32_t bs = 4096;
	const uint64_t span = 16 * bs;
	assert_int_equal(ftruncate(fd, (off_t)span), 0);

	struct fsp_store *st = fsp_store_open(dbpath, err, sizeof(err));
	assert_non_null(st);
	struct fsp_run_info info = { .kind = "run", .options = "test", .backing_path = file };
	int64_t run = fsp_store_begin_run(st, &info);
	assert_true(run > 0);
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 0);
	assert_non_null(log);

	volatile sig_atomic_t stop = 0;
	struct fsp_step_spec spec = {
		.fd = fd, .index = 3, .bs = bs, .qd = 1, .read_pct = 50,
		.access = FSP_ACCESS_SEQ, .offsets = offsets, .seed = 1,
		.span_off = 0, .span_size = span, .bytes = 40 * bs, .duty = 100, .timeline_ns = 100000000ull,
		.pattern = { .kind = FSP_PATTERN_RANDOM }, .log = log, .stop = &stop,
	};
	struct fsp_step_result res;
	step(&spec, &res);
	assert_int_equal(res.read_ios, 20);
	assert_int_equal(res.write_ios, 20);
	assert_int_equal(res.read_bytes + res.write_bytes, 40 * bs);
	assert_int_equal(res.read_hist->count, 20);
	assert_int_equal(res.write_hist->count, 20);
	assert_true(res.busy_ns > 0);
	fsp_step_result_free(&res);
	assert_int_equal(fsp_oplog_close(log), 0);

	sqlite3 *db = test_db_open(dbpath); /* the test's own, to look at the rows */
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT op, offset, length, bytes, total_ns, backing_ns, step FROM ops"
		" WHERE run=? ORDER BY start_ns, rowid", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, run);
	int i = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int op = sqlite3_column_int(s, 0);
		assert_int_equal(op, i % 2 == 0 ? FSP_OP_READ : FSP_OP_WRITE);
		int block = offsets == FSP_OFFSETS_SHARED ? i % 16 : i / 2 % 16;
		assert_int_equal(sqlite3_column_int64(s, 1), (int64_t)block * bs);
		assert_int_equal(sqlite3_column_int64(s, 2), bs);
		assert_int_equal(sqlite3_column_int64(s, 3), bs);
		assert_int_equal(sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 5));
		assert_int_equal(sqlite3_column_int(s, 6), 3);
		i++;
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	assert_int_equal(i, 40);
	fsp_store_close(st);
	close(fd);
	unlink(file);
	fsp_store_remove_files(dbpath);
	assert_int_equal(rmdir(dir), 0);
}

UNIT_TEST(engine_mixed_seq_real_io)
{
	(void)state;
	mixed_seq_real_io(FSP_OFFSETS_SHARED);
}

UNIT_TEST(engine_mixed_seq_per_direction_real_io)
{
	(void)state;
	mixed_seq_real_io(FSP_OFFSETS_PER_DIRECTION);
}

/*
 * A zero-filled temp file of size bytes from template, opened O_RDWR |
 * O_DIRECT and kept (the caller reads it back, then unlinks it); -1, with
 * the file gone, where the file system has no O_DIRECT.
 */
static int direct_temp_file(char *template, uint64_t size)
{
	int fd = mkstemp(template);
	assert_true(fd >= 0);
	close(fd);
	fd = open(template, O_RDWR | O_DIRECT);
	if (fd < 0) {
		unlink(template);
		return -1;
	}
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

/* The whole of a test file (malloc'd), which is then removed. */
static unsigned char *read_back(const char *path, size_t size)
{
	unsigned char *data = malloc(size);
	assert_non_null(data);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, data, size, 0), (ssize_t)size);
	close(fd);
	unlink(path);
	return data;
}

/*
 * A step on a zero-filled O_DIRECT temp file of file_size bytes, without
 * records: 0, and in *data, unless data is NULL, the file's content after
 * it (malloc'd); -1, nothing run, where the file system has no O_DIRECT.
 * The file is removed.
 */
static int run_file_step(struct fsp_step_spec *spec, uint64_t file_size,
			 struct fsp_step_result *res, unsigned char **data)
{
	char path[] = "/var/tmp/fsp-test-step.XXXXXX";
	int fd = direct_temp_file(path, file_size);
	if (fd < 0)
		return -1;
	spec->fd = fd;
	step(spec, res);
	close(fd);
	if (data)
		*data = read_back(path, (size_t)file_size);
	else
		unlink(path);
	return 0;
}

UNIT_TEST(engine_bursts_and_segments)
{
	(void)state;
	volatile sig_atomic_t stop = 0;
	struct fsp_step_result res;
	/* 64 KiB in bursts of 16 KiB: four bursts, each a segment row */
	struct fsp_step_spec burst = {
		.bs = 4096, .qd = 2, .read_pct = 0, .access = FSP_ACCESS_RANDOM,
		.seed = 5, .span_size = 1 << 20, .bytes = 64 << 10, .burst = 16 << 10,
		.duty = 90, .pattern = { .kind = FSP_PATTERN_ZEROS, .compress_pct = 100 }, .stop = &stop,
	};
	if (run_file_step(&burst, 1 << 20, &res, NULL) != 0)
		skip();
	assert_int_equal(res.write_ios, 16);
	assert_int_equal(res.read_ios, 0);
	assert_int_equal(res.nsegments, 4);
	uint64_t busy = 0;
	for (size_t i = 0; i < res.nsegments; i++) {
		assert_int_equal(res.segments[i].bytes, 16 << 10);
		assert_int_equal(res.segments[i].offset, i * (16 << 10));
		busy += res.segments[i].ns;
	}
	assert_int_equal(busy, res.busy_ns); /* idle is not busy time */
	assert_true(res.ended_ns - res.started_ns >= res.busy_ns);
	fsp_step_result_free(&res);

	/* a fill of 1 MiB in 256 KiB segments, sequential, QD 8 */
	struct fsp_step_spec fill = {
		.bs = 65536, .qd = 8, .read_pct = 0, .access = FSP_ACCESS_SEQ,
		.seed = 1, .span_off = 1 << 20, .span_size = 1 << 20,
		.bytes = 1 << 20, .segment = 256 << 10, .duty = 100,
		.timeline_ns = 1000000000ull,
		.pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = &stop,
	};
	if (run_file_step(&fill, 2 << 20, &res, NULL) != 0)
		skip();
	assert_int_equal(res.write_bytes, 1 << 20);
	assert_int_equal(res.nsegments, 4);
	for (size_t i = 0; i < res.nsegments; i++) {
		assert_int_equal(res.segments[i].offset, (1 << 20) + i * (256 << 10));
		assert_int_equal(res.segments[i].bytes, 256 << 10);
	}
	uint64_t tl_bytes = 0;
	for (size_t i = 0; i < res.ntimeline; i++)
		tl_bytes += res.timeline[i].write_bytes;
	assert_int_equal(tl_bytes, 1 << 20); /* every completion in the timeline */
	fsp_step_result_free(&res);

	/* a time limit ends a step with no byte limit; the stop flag too */
	struct fsp_step_spec timed = {
		.bs = 4096, .qd = 4, .read_pct = 100, .access = FSP_ACCESS_RANDOM,
		.seed = 2, .span_size = 1 << 20, .time_ns = 20000000ull, .duty = 100,
		.pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = &stop,
	};
	if (run_file_step(&timed, 1 << 20, &res, NULL) != 0)
		skip();
	assert_true(res.busy_ns >= timed.time_ns);
	assert_true(res.read_ios > 0);
	assert_false(res.interrupted);
	fsp_step_result_free(&res);
	stop = 1;
	timed.time_ns = 0;
	timed.bytes = 1ull << 40;
	if (run_file_step(&timed, 1 << 20, &res, NULL) != 0)
		skip();
	assert_true(res.interrupted);
	assert_int_equal(res.read_ios, 0);
	fsp_step_result_free(&res);
}

/*
 * Mixed steps write the stated pattern even though reads land in the
 * engine's memory too: a file of 0xab bytes, 50/50 sequential at QD2 with
 * zeros, then compress:50. Blocks read keep their 0xab; every block
 * written holds the pattern (all zero; zeros at the start of each sector).
 */
static void mixed_writes_keep_pattern(const struct fsp_pattern *pat)
{
	const uint32_t bs = 4096;
	const unsigned nblocks = 64;
	char path[] = "/var/tmp/fsp-test-mixpat.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unsigned char *buf = malloc(bs);
	assert_non_null(buf);
	memset(buf, 0xab, bs);
	for (unsigned b = 0; b < nblocks; b++)
		assert_int_equal(pwrite(fd, buf, bs, (off_t)b * bs), (ssize_t)bs);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0) {
		unlink(path);
		free(buf);
		skip();
	}
	volatile sig_atomic_t stop = 0;
	struct fsp_step_spec spec = {
		.fd = fd, .bs = bs, .qd = 2, .read_pct = 50, .access = FSP_ACCESS_SEQ,
		.seed = 9, .span_size = (uint64_t)nblocks * bs,
		.bytes = (uint64_t)nblocks * bs, .duty = 100, .pattern = *pat,
		.stop = &stop,
	};
	struct fsp_step_result res;
	step(&spec, &res);
	assert_int_equal(res.read_ios, nblocks / 2);
	assert_int_equal(res.write_ios, nblocks / 2);
	fsp_step_result_free(&res);
	close(fd);

	/* exact interleave, shared offsets: even blocks read, odd blocks written */
	size_t zeros = fsp_pattern_zero_len(pat);
	free(buf);
	buf = read_back(path, (size_t)nblocks * bs);
	for (unsigned b = 0; b < nblocks; b++) {
		for (uint32_t sector = 0; sector < bs; sector += 512)
			for (uint32_t i = 0; i < 512; i++) {
				unsigned char c = buf[(size_t)b * bs + sector + i];
				if (b % 2 == 0 && c != 0xab)
					fail_msg("block %u (read) changed at %u", b, sector + i);
				if (b % 2 == 1 && i < zeros && c != 0)
					fail_msg("block %u (written) byte %u is %#x, not 0",
						 b, sector + i, c);
			}
	}
	free(buf);
}

UNIT_TEST(engine_mixed_writes_keep_pattern)
{
	(void)state;
	struct fsp_pattern zeros = { .kind = FSP_PATTERN_ZEROS, .compress_pct = 100 };
	struct fsp_pattern half = { .kind = FSP_PATTERN_COMPRESS, .compress_pct = 50 };
	mixed_writes_keep_pattern(&zeros);
	mixed_writes_keep_pattern(&half);
}

/*
 * Every sector the engine writes is unique, at QD1 and with a batch of
 * writes in flight: checks the stamped spare buffers really alternate.
 */
UNIT_TEST(engine_writes_unique_sectors)
{
	(void)state;
	const uint32_t bs = 4096;
	const unsigned nblocks = 64, nsec = nblocks * bs / 512;
	static const unsigned qds[] = { 1, 4 };
	for (unsigned k = 0; k < 2; k++) {
		volatile sig_atomic_t stop = 0;
		struct fsp_step_spec spec = {
			.bs = bs, .qd = qds[k], .read_pct = 0,
			.access = FSP_ACCESS_SEQ, .seed = 3,
			.span_size = (uint64_t)nblocks * bs,
			.bytes = (uint64_t)nblocks * bs, .duty = 100,
			.pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = &stop,
		};
		struct fsp_step_result res;
		unsigned char *data;
		if (run_file_step(&spec, (uint64_t)nblocks * bs, &res, &data) != 0)
			skip();
		assert_int_equal(res.write_ios, nblocks);
		fsp_step_result_free(&res);
		for (unsigned i = 0; i < nsec; i++)
			for (unsigned j = i + 1; j < nsec; j++)
				if (!memcmp(data + i * 512, data + j * 512, 512))
					fail_msg("qd %u: sectors %u and %u are equal", qds[k], i, j);
		free(data);
	}
}

/*
 * A ramp runs IO that is not measured: 30 ms of sequential writes over a
 * zeroed file, then a step of exactly 8 blocks. The file shows more than 8
 * blocks written; the result and its histogram hold the 8.
 */
UNIT_TEST(engine_ramp_not_measured)
{
	(void)state;
	const uint32_t bs = 4096;
	const unsigned nblocks = 64;
	volatile sig_atomic_t stop = 0;
	struct fsp_step_spec spec = {
		.bs = bs, .qd = 2, .read_pct = 0, .access = FSP_ACCESS_SEQ,
		.seed = 1, .span_size = (uint64_t)nblocks * bs, .ramp_ns = 30000000ull,
		.bytes = 8ull * bs, .duty = 100, .timeline_ns = 1000000ull,
		.pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = &stop,
	};
	struct fsp_step_result res;
	unsigned char *data;
	if (run_file_step(&spec, (uint64_t)nblocks * bs, &res, &data) != 0)
		skip();
	assert_int_equal(res.write_ios, 8);
	assert_int_equal(res.write_bytes, 8ull * bs);
	assert_int_equal(res.write_hist->count, 8);
	uint64_t tl = 0;
	for (size_t i = 0; i < res.ntimeline; i++)
		tl += res.timeline[i].write_ios;
	assert_int_equal(tl, 8);
	assert_true(res.busy_ns < spec.ramp_ns); /* the ramp is not busy time */
	fsp_step_result_free(&res);
	static const unsigned char zero[4096];
	unsigned written = 0;
	for (unsigned b = 0; b < nblocks; b++)
		written += memcmp(data + (size_t)b * bs, zero, bs) != 0;
	free(data);
	assert_true(written > 8);
}

/* The voluntary context switches of the calling thread so far. */
static long thread_nvcsw(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

/*
 * How the engine waits for a completion (reap.h): with a poll, it looks at
 * the completion ring and yields, so a QD1 step of 64 reads from a file on
 * a real disk hardly ever sleeps; with poll 0 (fio's way) it sleeps in
 * io_getevents for most of them. Sleeping is a voluntary context switch;
 * a yield that lets another task run is not.
 */
UNIT_TEST(engine_poll_before_sleeping)
{
	(void)state;
	const uint32_t bs = 4096;
	const unsigned nblocks = 64;
	char path[] = "/var/tmp/fsp-test-poll.XXXXXX";
	int fd = direct_temp_file(path, (uint64_t)nblocks * bs);
	if (fd < 0)
		skip();
	/* data on the disk, so that every read goes to it (a hole reads as zeros at once) */
	int wfd = open(path, O_WRONLY);
	assert_true(wfd >= 0);
	static char block[4096];
	memset(block, 0x5a, sizeof block);
	for (unsigned b = 0; b < nblocks; b++)
		assert_int_equal(pwrite(wfd, block, bs, (off_t)b * bs), (ssize_t)bs);
	assert_int_equal(fsync(wfd), 0);
	close(wfd);
	io_context_t ctx = 0;
	assert_int_equal(io_setup(1, &ctx), 0);
	assert_int_equal(fsp_reap_ring_usable(ctx), 1); /* the poll has a ring to read */
	io_destroy(ctx);
	volatile sig_atomic_t stop = 0;
	long sleeps[2];
	uint64_t waits = 0, backoffs = 0;
	const uint64_t polls[2] = { 0, 100000000ull };
	/* the step with a poll is taken up to 3 times, the fewest sleeps
	 * counting: a sleep in io_submit is not the engine's wait, and with
	 * the disk shared attempts had 7-46 of them (a poll never used sleeps
	 * on nearly every read in every one) */
	for (int i = 0, attempt = 0; i < 2; attempt++) {
		struct fsp_step_spec spec = {
			.fd = fd, .bs = bs, .qd = 1, .read_pct = 100, .access = FSP_ACCESS_RANDOM,
			.seed = 1, .span_size = (uint64_t)nblocks * bs, .poll_ns = polls[i],
			.bytes = (uint64_t)nblocks * bs, .duty = 100,
			.pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = &stop,
		};
		struct fsp_step_result res;
		long before = thread_nvcsw();
		step(&spec, &res);
		long slept = thread_nvcsw() - before;
		assert_int_equal(res.read_ios, nblocks);
		if (i == 0) { /* poll 0: every wait sleeps at once */
			assert_int_equal(res.poll_waits, 0);
			assert_int_equal(res.poll_backoffs, 0);
			sleeps[0] = slept;
		} else if (attempt == 1 || slept < sleeps[1]) {
			/* QD1: at most one IO in flight, every wait may poll */
			sleeps[1] = slept;
			waits = res.poll_waits;
			backoffs = res.poll_backoffs;
		}
		if (i == 1 && attempt > 1)
			print_message("poll attempt %d: %ld sleeps in %u reads\n", attempt, slept, nblocks);
		fsp_step_result_free(&res);
		if (i == 0 || sleeps[1] <= (long)nblocks / 8 || attempt == 3)
			i++;
	}
	close(fd);
	unlink(path);
	if (sleeps[0] < (long)nblocks / 2)
		skip(); /* the reads completed within io_submit: nothing to wait for */
	assert_true(waits + backoffs > 0); /* with a poll, the waits polled */
	/* a poll that held another task off (a busy machine) is set aside for
	 * 100 ms, and the engine then sleeps, by design (reap.c's rule 3) */
	if (backoffs && sleeps[1] > sleeps[0] / 2) {
		print_message("the poll was set aside %llu times (another task wanted this CPU)\n",
			      (unsigned long long)backoffs);
		skip();
	}
	/* quiet, a poll sleeps a few times in 64; with the disk shared, io_submit
	 * itself sleeps now and then: judged against the same reads without the
	 * poll, which sleep on nearly every one */
	if (sleeps[1] > sleeps[0] / 2)
		fail_msg("with a poll the engine slept %ld times in %u reads (without: %ld)",
			 sleeps[1], nblocks, sleeps[0]);
}

/*
 * The reaper's gates (reap.h): it polls only with a poll time and at most
 * FSP_POLL_MAX_INFLIGHT IOs in flight, and a poll that returns with the
 * completion in hand neither sets the poll aside nor counts as holding a
 * task off. One real O_DIRECT read per wait, from a file on disk.
 */
UNIT_TEST(engine_reaper_gates)
{
	(void)state;
	const uint32_t bs = 4096;
	char path[] = "/var/tmp/fsp-test-reap.XXXXXX";
	int fd = direct_temp_file(path, 8 * bs);
	if (fd < 0)
		skip();
	void *buf = NULL;
	assert_int_equal(posix_memalign(&buf, 4096, bs), 0);
	io_context_t ctx = 0;
	assert_int_equal(io_setup(4, &ctx), 0);
	struct { uint64_t poll_ns; unsigned inflight; uint64_t polls; } cases[] = {
		{ 0, 1, 0 },                                  /* poll 0: sleep at once, as fio */
		{ 100000000ull, FSP_POLL_MAX_INFLIGHT + 1, 0 }, /* too many in flight */
		{ 100000000ull, 1, 3 },                       /* a poll per wait */
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct fsp_reaper r;
		fsp_reaper_init(&r, ctx, cases[c].poll_ns);
		for (int i = 0; i < 3; i++) {
			struct iocb cb, *cbs[1] = { &cb };
			struct io_event ev;
			io_prep_pread(&cb, fd, buf, bs, (long long)i * bs);
			assert_int_equal(io_submit(ctx, 1, cbs), 1);
			assert_int_equal(fsp_reap(&r, cases[c].inflight, 1, &ev), 1);
			assert_int_equal((long)ev.res, (long)bs);
		}
		if (r.polls != cases[c].polls)
			fail_msg("case %zu: %llu polls, expected %llu", c,
				 (unsigned long long)r.polls, (unsigned long long)cases[c].polls);
		assert_int_equal(r.backoffs, 0);
		assert_int_equal(r.quiet_until, 0);
	}
	io_destroy(ctx);
	free(buf);
	close(fd);
	unlink(path);
}

/* ---- duty cycle -------------------------------------------------------------- */

UNIT_TEST(duty_cycle_arithmetic)
{
	(void)state;
	assert_int_equal(fsp_duty_idle_ns(100, 20), 400);   /* 100 of 500 busy */
	assert_int_equal(fsp_duty_idle_ns(1000, 50), 1000);
	assert_int_equal(fsp_duty_idle_ns(3, 30), 7);        /* floor(3*70/30) */
	assert_int_equal(fsp_duty_idle_ns(123456, 100), 0);
	assert_int_equal(fsp_duty_idle_ns(123456, 0), 0);
	assert_int_equal(fsp_duty_idle_ns(0, 20), 0);
	/* no overflow for long busy periods */
	uint64_t big = 1ull << 62;
	assert_int_equal(fsp_duty_idle_ns(big, 50), big);
	assert_int_equal(fsp_duty_idle_ns(big / 4, 20), big);
	/* busy / (busy + idle) == duty for exact cases */
	for (unsigned d = 1; d <= 100; d++) {
		uint64_t busy = 100ull * 1000000;
		uint64_t idle = fsp_duty_idle_ns(busy, d);
		assert_int_equal(busy * 100 / (busy + idle), d);
	}
}

/* ---- patterns ------------------------------------------------------------------- */

static double compress_ratio(const struct fsp_pattern *p, int refreshes)
{
	const size_t len = 1 << 20;
	unsigned char *buf = malloc(len);
	uLongf out_len = compressBound(len);
	unsigned char *out = malloc(out_len);
	uint64_t rng = fsp_rand_seed(3), stamp = 0;
	assert_non_null(buf);
	assert_non_null(out);
	fsp_pattern_fill(p, buf, len, &rng);
	for (int i = 0; i < refreshes; i++)
		fsp_pattern_refresh(p, buf, len, &rng, &stamp);
	assert_int_equal(compress2(out, &out_len, buf, len, 9), Z_OK);
	free(buf);
	free(out);
	return (double)len / (double)out_len;
}

UNIT_TEST(pattern_compressibility)
{
	(void)state;
	struct fsp_pattern p;
	char err[128];
	assert_int_equal(fsp_pattern_parse("zeros", &p, err, sizeof(err)), 0);
	assert_true(compress_ratio(&p, 1) > 100.0);
	assert_int_equal(fsp_pattern_parse("random", &p, err, sizeof(err)), 0);
	double r = compress_ratio(&p, 1);
	assert_true(r > 0.98 && r < 1.02);
	assert_int_equal(fsp_pattern_parse("compress:50", &p, err, sizeof(err)), 0);
	r = compress_ratio(&p, 3);
	assert_true(r > 1.8 && r < 2.2);
	assert_int_equal(fsp_pattern_parse("compress:75", &p, err, sizeof(err)), 0);
	r = compress_ratio(&p, 3);
	assert_true(r > 3.4 && r < 4.4);
	assert_int_equal(fsp_pattern_parse("compress:0", &p, err, sizeof(err)), 0);
	r = compress_ratio(&p, 1);
	assert_true(r < 1.02);
	assert_int_equal(fsp_pattern_parse("compress:101", &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0 to 100"));
	assert_int_equal(fsp_pattern_parse("ones", &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a pattern"));
	/* ",fixed": same content, round-trips through the text form */
	assert_int_equal(fsp_pattern_parse("compress:50,fixed", &p, err, sizeof(err)), 0);
	assert_true(p.fixed);
	assert_int_equal(p.compress_pct, 50);
	r = compress_ratio(&p, 3);
	assert_true(r > 1.8 && r < 2.2);
	char text[64];
	fsp_pattern_format(&p, text, sizeof(text));
	assert_string_equal(text, "compress:50,fixed");
	assert_int_equal(fsp_pattern_parse("random", &p, err, sizeof(err)), 0);
	assert_false(p.fixed);
	assert_int_equal(fsp_pattern_parse("zeros,fixed", &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "never stamped"));
	assert_int_equal(fsp_pattern_parse("random,fixd", &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a pattern"));
	assert_int_equal(fsp_pattern_parse(",fixed", &p, err, sizeof(err)), -1);
}

/* After a refresh, no 512-byte sector repeats: neither within a buffer nor
 * against the previous write from the same buffer. */
UNIT_TEST(pattern_refresh_defeats_dedup)
{
	(void)state;
	static const char *const pats[] = { "random", "compress:50" };
	for (int k = 0; k < 2; k++) {
		struct fsp_pattern p;
		char err[64];
		assert_int_equal(fsp_pattern_parse(pats[k], &p, err, sizeof(err)), 0);
		const size_t len = 64 * 1024, nsec = len / 512;
		unsigned char *a = malloc(len), *b = malloc(len);
		assert_non_null(a);
		assert_non_null(b);
		uint64_t rng = fsp_rand_seed(1), stamp = 0;
		fsp_pattern_fill(&p, a, len, &rng);
		fsp_pattern_refresh(&p, a, len, &rng, &stamp);
		memcpy(b, a, len);
		fsp_pattern_refresh(&p, b, len, &rng, &stamp);
		for (size_t i = 0; i < nsec; i++) {
			assert_memory_not_equal(a + i * 512, b + i * 512, 512);
			for (size_t j = i + 1; j < nsec; j++)
				assert_memory_not_equal(b + i * 512, b + j * 512, 512);
		}
		free(a);
		free(b);
	}
	/* ",fixed" leaves the buffer as filled */
	struct fsp_pattern p;
	char err[64];
	assert_int_equal(fsp_pattern_parse("random,fixed", &p, err, sizeof(err)), 0);
	unsigned char a[4096], b[4096];
	uint64_t rng = fsp_rand_seed(1), stamp = 0;
	fsp_pattern_fill(&p, a, sizeof(a), &rng);
	memcpy(b, a, sizeof(a));
	fsp_pattern_refresh(&p, b, sizeof(b), &rng, &stamp);
	assert_memory_equal(a, b, sizeof(a));
}

/* ---- parameters, profiles, job files ------------------------------------------- */

static void expect_param_error(const char *key, const char *value, const char *needle)
{
	struct fsp_params p;
	char err[256] = "";
	assert_int_equal(fsp_profile_load("mixed-seq", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_param_set(&p, key, value, err, sizeof(err)), -1);
	if (!strstr(err, needle))
		fail_msg("%s=%s: expected '%s' in '%s'", key, value, needle, err);
}

UNIT_TEST(param_parsing)
{
	(void)state;
	struct fsp_params p;
	char err[256];
	expect_param_error("qd", "0", "'0' is not a queue depth (1..256)");
	expect_param_error("qd", "257", "not a queue depth");
	expect_param_error("qd", "1,,2", "not a list");
	expect_param_error("qd", "x", "not a list");
	expect_param_error("bs", "100", "not a block size");
	expect_param_error("bs", "32M", "not a block size");
	expect_param_error("bs", "4q", "not a size");
	expect_param_error("span", "lots", "not a size");
	expect_param_error("span", "-1G", "not a size");
	expect_param_error("time", "5 parsecs", "not a duration");
	expect_param_error("mix", "101", "not a read percentage");
	expect_param_error("duty", "0", "not a duty cycle");
	expect_param_error("pattern", "compress:x", "compress:N");
	expect_param_error("access", "sideways", "not seq or random");
	expect_param_error("offsets", "fio", "not shared or per-direction");
	expect_param_error("ramp", "soon", "not a duration");
	expect_param_error("frobnicate", "1", "unknown parameter");
	/* every size and duration has a range, named in the message */
	expect_param_error("timeline", "1ns", "'1ns' is out of range (10ms..60s, or 0 for none)");
	expect_param_error("timeline", "61s", "out of range (10ms..60s");
	expect_param_error("time", "1ms", "'1ms' is out of range (10ms..24h, or 0 for no limit)");
	expect_param_error("ramp", "1h", "out of range (1ms..10m");
	expect_param_error("idle", "2h", "'2h' is out of range (0..1h)");
	expect_param_error("poll", "5ns", "'5ns' is out of range (1us..100ms, or 0 for no poll)");
	expect_param_error("poll", "1s", "out of range (1us..100ms");
	expect_param_error("span", "2P", "out of range (512..1P");
	expect_param_error("bytes", "1", "'1' is out of range (512..1P, or 0 for no limit)");
	expect_param_error("burst", "1", "out of range (512..64G");
	expect_param_error("segment", "0", "'0' is out of range (64k..1T)");
	expect_param_error("tail", "2P", "out of range (0..1P)");
	expect_param_error("offset", "2P", "out of range (0..1P)");
	/* and the methodology's values are inside them */
	assert_int_equal(fsp_profile_load("mixed-seq", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_param_set(&p, "span", "64G", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "time", "1m", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "bytes", "16G", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "qd", "1,32,256", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "idle", "60s", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), 0);
	/* bounds on what the run keeps in memory */
	assert_int_equal(fsp_param_set(&p, "bs", "16M", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "qd: 256 x bs 16M is 4G in flight, more than 512M"));
	assert_int_equal(fsp_param_set(&p, "bs", "4k", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "time", "24h", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "timeline", "10ms", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "timeline: 10ms over"));

	assert_int_equal(fsp_profile_load("mixed-seq", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_param_set(&p, "bs", "128KiB", err, sizeof(err)), 0);
	assert_int_equal(p.bs, 131072);
	assert_int_equal(p.offsets, FSP_OFFSETS_SHARED); /* the profile's default */
	assert_int_equal(fsp_param_set(&p, "offsets", "per-direction", err, sizeof(err)), 0);
	assert_int_equal(p.offsets, FSP_OFFSETS_PER_DIRECTION);
	assert_int_equal(fsp_param_set(&p, "span", "1G", err, sizeof(err)), 0);
	assert_int_equal(p.span, 1ull << 30);
	assert_true(p.span_set);
	assert_int_equal(fsp_param_set(&p, "qd", "1,2,4", err, sizeof(err)), 0);
	assert_int_equal(p.nqd, 3);
	assert_int_equal(p.qds[2], 4);
	assert_int_equal(fsp_param_set(&p, "time", "300ms", err, sizeof(err)), 0);
	assert_int_equal(p.time_ns, 300000000ull);
	assert_int_equal(fsp_param_set(&p, "time", "1m", err, sizeof(err)), 0);
	assert_int_equal(p.time_ns, 60000000000ull);
	assert_int_equal(fsp_param_set(&p, "bs", "1000", err, sizeof(err)), 0);
	assert_int_equal(p.bs, 1000); /* multiple of the target's sector: checked at run */
	/* format round-trips */
	char buf[64];
	uint64_t v;
	fsp_format_size(3ull << 30, buf, sizeof(buf));
	assert_string_equal(buf, "3G");
	assert_int_equal(fsp_parse_size(buf, &v), 0);
	assert_int_equal(v, 3ull << 30);
	fsp_format_duration(1500000000ull, buf, sizeof(buf));
	assert_string_equal(buf, "1500ms");
	/* a step needs a limit */
	assert_int_equal(fsp_param_set(&p, "time", "0", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "bytes", "0", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "limit"));
	/* a ramp: any step but bursts (measured from idle) and fill (each byte once) */
	assert_int_equal(fsp_param_set(&p, "time", "2s", err, sizeof(err)), 0);
	assert_int_equal(fsp_param_set(&p, "ramp", "500ms", err, sizeof(err)), 0);
	assert_int_equal(p.ramp_ns, 500000000ull);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), 0);
	assert_int_equal(fsp_profile_load("burst-seqread", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_param_set(&p, "ramp", "1s", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ramp: not with bursts"));
	assert_int_equal(fsp_profile_load("fill", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_param_set(&p, "ramp", "1s", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ramp: not with fill"));
}

/*
 * The tables are capped whatever the parameters: a 1 ns timeline over 64
 * IOs keeps at most timeline_max buckets, 64 one-block bursts at most
 * segments_max rows; what did not fit is counted, nothing is lost silently.
 */
UNIT_TEST(engine_tables_capped)
{
	(void)state;
	const uint32_t bs = 4096;
	const unsigned nblocks = 64;
	volatile sig_atomic_t stop = 0;
	struct fsp_step_spec spec = {
		.bs = bs, .qd = 1, .read_pct = 0, .access = FSP_ACCESS_SEQ,
		.seed = 1, .span_size = (uint64_t)nblocks * bs, .bytes = (uint64_t)nblocks * bs,
		.burst = bs, .duty = 100, .timeline_ns = 1, .timeline_max = 4,
		.segments_max = 3, .pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = &stop,
	};
	struct fsp_step_result res;
	if (run_file_step(&spec, (uint64_t)nblocks * bs, &res, NULL) != 0)
		skip();
	assert_int_equal(res.write_ios, nblocks);
	assert_true(res.ntimeline <= 4);
	uint64_t tl = 0;
	for (size_t i = 0; i < res.ntimeline; i++)
		tl += res.timeline[i].write_ios;
	assert_true(res.timeline_dropped_ios > 0);
	assert_int_equal(tl + res.timeline_dropped_ios, nblocks);
	assert_int_equal(res.nsegments, 3);
	assert_int_equal(res.segments_dropped, nblocks - 3);
	fsp_step_result_free(&res);
}

UNIT_TEST(profiles_full_scale)
{
	(void)state;
	struct fsp_params p;
	for (size_t i = 0; i < fsp_nprofiles; i++) {
		char err[128];
		assert_int_equal(fsp_profile_load(fsp_profiles[i].name, FSP_SCALE_FULL, &p), 0);
		assert_int_equal(fsp_params_check(&p, err, sizeof(err)), 0);
		assert_int_equal(fsp_profile_load(fsp_profiles[i].name, FSP_SCALE_DEFAULT, &p), 0);
		assert_int_equal(fsp_params_check(&p, err, sizeof(err)), 0);
	}
	assert_int_equal(fsp_profile_load("nonesuch", FSP_SCALE_FULL, &p), -1);

	assert_int_equal(fsp_profile_load("sustained-randread", FSP_SCALE_FULL, &p), 0);
	assert_int_equal(p.bs, 4096);
	assert_int_equal(p.nqd, 6);
	assert_int_equal(p.qds[5], 32);
	assert_int_equal(p.time_ns, 60000000000ull);
	assert_int_equal(p.bytes, 32ull << 30);
	assert_int_equal(p.span, 64ull << 30);
	assert_int_equal(p.idle_ns, 60000000000ull);
	assert_int_equal(p.mixes[0], 100);
	assert_int_equal(p.score, FSP_SCORE_QD124);

	assert_int_equal(fsp_profile_load("mixed-seq", FSP_SCALE_FULL, &p), 0);
	assert_int_equal(p.bs, 131072);
	assert_int_equal(p.access, FSP_ACCESS_SEQ);
	assert_int_equal(p.nqd, 1);
	assert_int_equal(p.qds[0], 1);
	assert_int_equal(p.nmix, 11);
	assert_int_equal(p.mixes[0], 100);
	assert_int_equal(p.mixes[3], 70);
	assert_int_equal(p.mixes[10], 0);
	assert_int_equal(p.duty, 50);
	assert_int_equal(p.time_ns, 60000000000ull);
	assert_int_equal(p.bytes, 32ull << 30);

	assert_int_equal(fsp_profile_load("burst-randwrite", FSP_SCALE_FULL, &p), 0);
	assert_int_equal(p.burst, 4ull << 20);
	assert_int_equal(p.bytes, 128ull << 20);
	assert_int_equal(p.span, 16ull << 30);
	assert_int_equal(p.duty, 20);
	assert_int_equal(p.mixes[0], 0);

	assert_int_equal(fsp_profile_load("mixed-random", FSP_SCALE_FULL, &p), 0);
	assert_int_equal(p.qds[0], 4);
	assert_int_equal(p.access, FSP_ACCESS_RANDOM);

	assert_int_equal(fsp_profile_load("fill", FSP_SCALE_FULL, &p), 0);
	assert_int_equal(p.qds[0], 32);
	assert_int_equal(p.bs, 131072);
	assert_int_equal(p.segment, 1ull << 30);
	assert_int_equal(p.span, 0); /* the whole target */
	assert_int_equal(p.tail, 16ull << 30);
	assert_true(p.fill);
}

static void expect_job_error(const char *text, const char *needle)
{
	struct fsp_params p;
	char err[256] = "";
	assert_int_equal(fsp_jobfile_parse("job.ini", text, FSP_SCALE_DEFAULT, &p,
					   err, sizeof(err)), -1);
	if (!strstr(err, needle))
		fail_msg("expected '%s' in '%s'", needle, err);
}

UNIT_TEST(jobfile_errors_and_values)
{
	(void)state;
	expect_job_error("# c\nbs = 4k\nqd 4\n", "job.ini:3: missing '='");
	expect_job_error("bs = 4k\nflavour = vanilla\n", "job.ini:2: unknown key 'flavour'");
	expect_job_error("\n\n\n\nqd = 0\n", "job.ini:5: qd: '0' is not a queue depth");
	expect_job_error("bs=4k\nprofile = warp\n", "job.ini:2: profile: unknown profile 'warp'");
	expect_job_error("profile = fill\nprofile = fill\n", "job.ini:2: profile given twice");
	expect_job_error("span =\n", "job.ini:1: span: missing value");
	expect_job_error(" = 3\n", "job.ini:1: missing key");
	expect_job_error("pattern = plaid\n", "job.ini:1: pattern:");

	struct fsp_params p;
	char err[256];
	const char *job =
		"# 50/50 mixed sequential at 64 KiB\n"
		"bs = 64k     # overrides the profile\n"
		"\n"
		"mix = 50\n"
		"profile = mixed-seq\n"
		"norepeat\t= yes\n"
		"time = 250ms\r\n";
	assert_int_equal(fsp_jobfile_parse("j", job, FSP_SCALE_DEFAULT, &p, err, sizeof(err)), 0);
	assert_int_equal(p.bs, 65536);
	assert_int_equal(p.nmix, 1);
	assert_int_equal(p.mixes[0], 50);
	assert_int_equal(p.access, FSP_ACCESS_SEQ); /* from the base profile */
	assert_int_equal(p.duty, 50);
	assert_int_equal(p.norepeat, 1);
	assert_int_equal(p.time_ns, 250000000ull);

	/* a file on disk, and a missing one */
	char path[] = "/tmp/fsp-job.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *bad = "profile = fill\nsegment = 0\n";
	assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
	close(fd);
	assert_int_equal(fsp_jobfile_load(path, FSP_SCALE_DEFAULT, &p, err, sizeof(err)), -1);
	char want[128];
	snprintf(want, sizeof(want), "%s:2: segment: '0' is out of range (64k..1T)", path);
	assert_string_equal(err, want);
	unlink(path);
	assert_int_equal(fsp_jobfile_load(path, FSP_SCALE_DEFAULT, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
}

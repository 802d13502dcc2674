/*
 * test_emu_store.c - the emulated store (fs/emu/store) against a model:
 * random writes, truncates, fallocates and clones in every --cow/--journal
 * combination, checked byte for byte, across a clean remount and across a
 * crash at every device-IO boundary (the store file is copied after the
 * k-th IO, and the copy must mount with every fsync'd byte intact).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "fs/emu/io.h"
#include "fs/emu/store.h"
#include "src/base/ops.h"
#include "tests/testdir.h"
#include "tests/unit.h"

#define STORE_BYTES (16u << 20)
#define FILE_MAX (256u << 10)
#define NOBJ 3
#define CRASH_STORE_BYTES (3u << 20)

static char dir[256];

struct model {
	uint8_t data[NOBJ][FILE_MAX];
	uint64_t size[NOBJ];
};

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static struct emu_store *open_store(const char *name, int cow, int journal, int format,
				    struct emu_store_info *info)
{
	struct emu_store_cfg cfg;
	char path[512], err[512];
	emu_store_cfg_default(&cfg);
	cfg.cow = cow;
	cfg.journal = journal;
	cfg.format = format;
	cfg.commit_interval_ms = UINT64_MAX; /* commits only where the test says */
	cfg.commit_bytes = 1u << 20;
	cfg.flush = !getenv("EMU_TEST_NOFLUSH"); /* cache flushes of /tmp's disk are slow */
	path_of(path, sizeof(path), name);
	struct emu_store *st = emu_store_open(path, STORE_BYTES, &cfg, info, err, sizeof(err));
	if (!st)
		fprintf(stderr, "open %s: %s\n", path, err);
	return st;
}

static void check_obj(struct emu_store *st, const struct model *m, int i)
{
	static uint8_t buf[FILE_MAX + 4096];
	uint64_t size = 0;
	struct emu_cx cx = { 0 };
	if (emu_store_obj_size(st, (uint64_t)i + 1, &size, NULL) != 0)
		size = 0;
	assert_int_equal(size, m->size[i]);
	ssize_t n = emu_store_read(st, &cx, (uint64_t)i + 1, buf, sizeof(buf), 0);
	assert_int_equal(n, (ssize_t)m->size[i]);
	if (memcmp(buf, m->data[i], m->size[i]) != 0) {
		for (uint64_t k = 0; k < m->size[i]; k++)
			if (buf[k] != m->data[i][k]) {
				fprintf(stderr, "obj %d differs at %llu: %02x != %02x\n", i,
					(unsigned long long)k, buf[k], m->data[i][k]);
				break;
			}
		fail();
	}
}

static void check_all(struct emu_store *st, const struct model *m)
{
	for (int i = 0; i < NOBJ; i++)
		check_obj(st, m, i);
}

/* One random operation on both the store and the model. */
static void random_op(struct emu_store *st, struct model *m, int direct)
{
	static uint8_t buf[FILE_MAX] __attribute__((aligned(4096)));
	struct emu_cx cx = { 0 };
	int i = (int)(rnd() % NOBJ);
	uint64_t id = (uint64_t)i + 1;
	uint64_t off = rnd() % FILE_MAX, len = 1 + rnd() % (32u << 10);
	if (direct) {
		off &= ~4095ull;
		len = (len + 4095) & ~4095ull;
	}
	if (off + len > FILE_MAX)
		len = FILE_MAX - off;
	if (!len)
		return;
	switch (rnd() % 10) {
	case 0: { /* truncate */
		uint64_t size = rnd() % FILE_MAX;
		assert_int_equal(emu_store_truncate(st, &cx, id, size), 0);
		if (size > m->size[i])
			memset(m->data[i] + m->size[i], 0, size - m->size[i]);
		m->size[i] = size;
		break;
	}
	case 1: { /* punch or zero a range inside the file */
		if (off >= m->size[i])
			break;
		if (off + len > m->size[i])
			len = m->size[i] - off;
		int mode = rnd() % 2 ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
				     : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
		assert_int_equal(emu_store_fallocate(st, &cx, id, mode, off, len), 0);
		memset(m->data[i] + off, 0, len);
		break;
	}
	case 2: { /* preallocate, maybe extending */
		int keep = rnd() % 2;
		assert_int_equal(emu_store_fallocate(st, &cx, id, keep ? FALLOC_FL_KEEP_SIZE : 0,
						     off, len), 0);
		if (!keep && off + len > m->size[i]) {
			memset(m->data[i] + m->size[i], 0, off + len - m->size[i]);
			m->size[i] = off + len;
		}
		break;
	}
	case 3: { /* clone a range of another object (block aligned: shared) */
		int j = (int)(rnd() % NOBJ);
		uint64_t soff = (rnd() % FILE_MAX) & ~4095ull;
		if (rnd() % 3 == 0)
			soff += rnd() % 4096; /* unaligned: copied */
		if (soff >= m->size[j])
			break;
		if (len > m->size[j] - soff)
			len = m->size[j] - soff;
		if (i == j && soff < off + len && off < soff + len)
			break; /* overlapping copy inside one file: copy_file_range refuses it too */
		ssize_t n = emu_store_clone(st, &cx, (uint64_t)j + 1, soff, id, off, len);
		assert_int_equal(n, (ssize_t)len);
		if (off > m->size[i])
			memset(m->data[i] + m->size[i], 0, off - m->size[i]);
		memmove(m->data[i] + off, m->data[j] + soff, len);
		if (off + len > m->size[i])
			m->size[i] = off + len;
		break;
	}
	case 4:
		assert_int_equal(emu_store_fsync(st, &cx, id), 0);
		break;
	default: { /* write */
		for (uint64_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rnd();
		assert_int_equal(emu_store_write(st, &cx, id, buf, len, off), (ssize_t)len);
		if (off > m->size[i])
			memset(m->data[i] + m->size[i], 0, off - m->size[i]);
		memcpy(m->data[i] + off, buf, len);
		if (off + len > m->size[i])
			m->size[i] = off + len;
		break;
	}
	}
}

UNIT_TEST(test_bad_input)
{
	(void)state;
	struct emu_store_info info;
	struct emu_store_cfg cfg;
	char err[512], path[512];
	emu_store_cfg_default(&cfg);
	path_of(path, sizeof(path), "tiny");
	assert_null(emu_store_open(path, 64 << 10, &cfg, &info, err, sizeof(err)));
	assert_non_null(strstr(err, "too small"));
	cfg.block_size = 1000;
	path_of(path, sizeof(path), "odd");
	assert_null(emu_store_open(path, STORE_BYTES, &cfg, &info, err, sizeof(err)));
	assert_non_null(strstr(err, "block size"));
	assert_int_equal(emu_cow_mode_parse("always"), EMU_COW_ALWAYS);
	assert_int_equal(emu_cow_mode_parse("sometimes"), -1);
	assert_int_equal(emu_journal_mode_parse("data"), EMU_JOURNAL_DATA);
	/* a store with a damaged root in both slots is refused, not served */
	cfg.block_size = 4096;
	struct emu_store *st = open_store("broken", 0, 0, 1, &info);
	assert_non_null(st);
	assert_int_equal(emu_store_close(st, NULL), 0);
	path_of(path, sizeof(path), "broken");
	assert_int_equal(emu_store_probe(path), 1);
	int fd = open(path, O_WRONLY);
	static uint8_t junk[8192];
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 4096), (ssize_t)sizeof(junk));
	close(fd);
	assert_null(emu_store_open(path, STORE_BYTES, &cfg, &info, err, sizeof(err)));
	assert_non_null(strstr(err, "no valid root"));
}

/* --cow=always moves an overwritten block once per transaction; --cow=off
 * overwrites in place. Seen through the extent listing. */
static int count_ext(void *ctx, uint64_t l, uint64_t p, uint64_t len)
{
	(void)l;
	(void)p;
	(void)len;
	(*(int *)ctx)++;
	return 0;
}

UNIT_TEST(test_cow_fragments)
{
	(void)state;
	static uint8_t buf[1 << 20] __attribute__((aligned(4096)));
	for (int cow = 0; cow < 3; cow += 2) {
		struct emu_store_info info;
		struct emu_cx cx = { 0 };
		struct emu_store *st = open_store("frag", cow, 0, 1, &info);
		assert_non_null(st);
		memset(buf, 0x11, sizeof(buf));
		assert_int_equal(emu_store_write(st, &cx, 7, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		assert_int_equal(emu_store_commit(st, &cx), 0);
		int before = 0, after = 0;
		emu_store_fiemap(st, 7, count_ext, &before);
		assert_int_equal(before, 1);
		/* overwrite blocks 10, 20, 30 (and 20 again in the same transaction) */
		for (int b = 10; b <= 30; b += 10)
			assert_int_equal(emu_store_write(st, &cx, 7, buf, 4096, (uint64_t)b * 4096), 4096);
		assert_int_equal(emu_store_write(st, &cx, 7, buf, 4096, 20 * 4096), 4096);
		assert_int_equal(emu_store_commit(st, &cx), 0);
		emu_store_fiemap(st, 7, count_ext, &after);
		if (cow == 0)
			assert_int_equal(after, 1);
		else
			assert_int_equal(after, 7); /* 3 moved blocks split the file in 7 */
		struct emu_store_acct a;
		emu_store_get_acct(st, &a);
		assert_true(a.bytes[EMU_IO_DATA] >= sizeof(buf) + 4 * 4096);
		assert_int_equal(emu_store_close(st, NULL), 0);
	}
}

/* A full store refuses data with ENOSPC but can still commit, and what
 * was written survives a remount. */
UNIT_TEST(test_full_store)
{
	(void)state;
	static uint8_t buf[1 << 20] __attribute__((aligned(4096)));
	struct emu_store_info info;
	struct emu_cx cx = { 0 };
	struct emu_store *st = open_store("full", EMU_COW_ALWAYS, EMU_JOURNAL_OFF, 1, &info);
	assert_non_null(st);
	memset(buf, 0x77, sizeof(buf));
	uint64_t off = 0;
	ssize_t n;
	while ((n = emu_store_write(st, &cx, 3, buf, sizeof(buf), off)) == (ssize_t)sizeof(buf))
		off += (uint64_t)n;
	if (n > 0)
		off += (uint64_t)n;
	assert_true(off > STORE_BYTES / 2);
	assert_int_equal(emu_store_write(st, &cx, 3, buf, 4096, off), -ENOSPC);
	assert_int_equal(emu_store_commit(st, &cx), 0);
	/* copy-on-write needs new space to overwrite: refused, data intact */
	memset(buf, 0x88, 8192);
	assert_int_equal(emu_store_write(st, &cx, 3, buf, 8192, 0), -ENOSPC);
	assert_int_equal(emu_store_fsync(st, &cx, 3), 0);
	uint64_t blocks, freeb;
	uint32_t bs;
	emu_store_statfs(st, &blocks, &freeb, &bs);
	assert_true(freeb < 2);
	assert_int_equal(emu_store_close(st, NULL), 0);
	st = open_store("full", EMU_COW_ALWAYS, EMU_JOURNAL_OFF, 0, &info);
	assert_non_null(st);
	uint64_t size;
	assert_int_equal(emu_store_obj_size(st, 3, &size, NULL), 0);
	assert_int_equal(size, off);
	assert_int_equal(emu_store_read(st, &cx, 3, buf, 4096, off - 4096), 4096);
	assert_int_equal(buf[0], 0x77);
	assert_int_equal(buf[4095], 0x77);
	/* freeing space makes room again */
	assert_int_equal(emu_store_truncate(st, &cx, 3, 0), 0);
	assert_int_equal(emu_store_commit(st, &cx), 0);
	assert_int_equal(emu_store_write(st, &cx, 3, buf, 4096, 0), 4096);
	assert_int_equal(emu_store_close(st, NULL), 0);
}

/* Removing objects frees their data and nodes; the store stays consistent
 * across remounts in every mode. */
UNIT_TEST(test_remove)
{
	(void)state;
	static uint8_t buf[1 << 20] __attribute__((aligned(4096)));
	for (int cow = 0; cow < 3; cow++)
		for (int journal = 0; journal < 4; journal++) {
			struct emu_store_info info;
			struct emu_cx cx = { 0 };
			uint64_t blocks, free0, free1;
			uint32_t bs;
			struct emu_store *st = open_store("remove", cow, journal, 1, &info);
			assert_non_null(st);
			emu_store_statfs(st, &blocks, &free0, &bs);
			memset(buf, 0x42, sizeof(buf));
			for (int i = 0; i < 4; i++) {
				ssize_t n = emu_store_write(st, &cx, 9, buf, sizeof(buf), (uint64_t)i << 20);
				if (n != (ssize_t)sizeof(buf))
					fprintf(stderr, "cow %d journal %d write %d: %zd\n", cow, journal, i, n);
				assert_int_equal(n, (ssize_t)sizeof(buf));
			}
			assert_int_equal(emu_store_write(st, &cx, 10, buf, 4096, 0), 4096);
			assert_int_equal(emu_store_close(st, NULL), 0);
			st = open_store("remove", cow, journal, 0, &info);
			assert_non_null(st);
			assert_int_equal(info.bitmap_mismatches, 0);
			assert_int_equal(emu_store_obj_remove(st, &cx, 9), 0);
			assert_int_equal(emu_store_obj_remove(st, &cx, 10), 0);
			assert_int_equal(emu_store_close(st, NULL), 0);
			st = open_store("remove", cow, journal, 0, &info);
			assert_non_null(st);
			if (info.bitmap_mismatches)
				fprintf(stderr, "cow %d journal %d: %llu mismatches\n", cow, journal,
					(unsigned long long)info.bitmap_mismatches);
			assert_int_equal(info.bitmap_mismatches, 0);
			assert_int_equal(info.objects, 0);
			assert_int_equal(emu_store_obj_size(st, 9, &blocks, NULL), -ENOENT);
			/* all the space is back once the frees have been committed */
			assert_int_equal(emu_store_commit(st, &cx), 0);
			emu_store_statfs(st, &blocks, &free1, &bs);
			assert_int_equal(free1, free0);
			assert_int_equal(emu_store_close(st, NULL), 0);
		}
}

/* A clone shares blocks; writing the copy leaves the source alone. */
UNIT_TEST(test_clone_diverges)
{
	(void)state;
	static uint8_t a[64 << 10] __attribute__((aligned(4096))), b[64 << 10];
	struct emu_store_info info;
	struct emu_cx cx = { 0 };
	struct emu_store *st = open_store("clone", EMU_COW_OFF, EMU_JOURNAL_ORDERED, 1, &info);
	assert_non_null(st);
	memset(a, 0xaa, sizeof(a));
	assert_int_equal(emu_store_write(st, &cx, 1, a, sizeof(a), 0), (ssize_t)sizeof(a));
	uint64_t free0, free1, blocks;
	uint32_t bs;
	emu_store_statfs(st, &blocks, &free0, &bs);
	assert_int_equal(emu_store_clone(st, &cx, 1, 0, 2, 0, sizeof(a)), (ssize_t)sizeof(a));
	emu_store_statfs(st, &blocks, &free1, &bs);
	assert_int_equal(free0, free1); /* shared: no new space */
	memset(a, 0xbb, 4096);
	/* even --cow=off must move a shared block */
	assert_int_equal(emu_store_write(st, &cx, 2, a, 4096, 8192), 4096);
	assert_int_equal(emu_store_read(st, &cx, 1, b, sizeof(b), 0), (ssize_t)sizeof(b));
	for (size_t k = 0; k < sizeof(b); k++)
		assert_int_equal(b[k], 0xaa);
	assert_int_equal(emu_store_read(st, &cx, 2, b, sizeof(b), 0), (ssize_t)sizeof(b));
	assert_int_equal(b[8192], 0xbb);
	assert_int_equal(b[0], 0xaa);
	assert_int_equal(emu_store_close(st, NULL), 0);
	/* sharing survives a remount: the counts are rebuilt from the maps */
	st = open_store("clone", EMU_COW_OFF, EMU_JOURNAL_ORDERED, 0, &info);
	assert_non_null(st);
	assert_int_equal(info.bitmap_mismatches, 0);
	assert_int_equal(emu_store_write(st, &cx, 1, a, 4096, 0), 4096);
	assert_int_equal(emu_store_read(st, &cx, 2, b, 4096, 0), 4096);
	assert_int_equal(b[0], 0xaa);
	assert_int_equal(emu_store_close(st, NULL), 0);
}

/* Every mode combination: random ops checked as they go, then after a
 * clean close and remount. */
UNIT_TEST(test_modes_model)
{
	(void)state;
	static struct model m;
	setenv("EMU_TEST_NOFLUSH", "1", 1); /* flush paths: the other tests */
	for (int cow = 0; cow < 3; cow++)
		for (int journal = 0; journal < 4; journal++)
			for (int direct = 0; direct < 2; direct++) {
				struct emu_store_info info;
				memset(&m, 0, sizeof(m));
				rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)(cow * 8 + journal * 2 + direct);
				struct emu_store *st = open_store("modes", cow, journal, 1, &info);
				assert_non_null(st);
				assert_true(info.formatted);
				for (int k = 0; k < 400; k++) {
					random_op(st, &m, direct);
					if (k % 50 == 0)
						check_all(st, &m);
				}
				check_all(st, &m);
				assert_int_equal(emu_store_close(st, NULL), 0);
				st = open_store("modes", cow, journal, 0, &info);
				assert_non_null(st);
				assert_false(info.formatted);
				assert_true(info.clean);
				assert_int_equal(info.damaged_objects, 0);
				assert_int_equal(info.bitmap_mismatches, 0);
				check_all(st, &m);
				/* and it keeps working after the remount */
				for (int k = 0; k < 100; k++)
					random_op(st, &m, direct);
				check_all(st, &m);
				assert_int_equal(emu_store_close(st, NULL), 0);
			}
	unsetenv("EMU_TEST_NOFLUSH");
}

/* ---- crash at every device IO ---- */

static int crash_after;   /* take a snapshot after this many IOs (-1: never) */
static int ios_seen;
static char crash_path[512], snap_path[512];

static void copy_file(const char *from, const char *to)
{
	static uint8_t buf[1 << 20];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(in >= 0 && out >= 0);
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void crash_devio(void *arg, const struct emu_cx *cx, int op, uint64_t off,
			uint64_t len, uint64_t start_ns, uint64_t ns, int err)
{
	(void)arg; (void)cx; (void)off; (void)len; (void)start_ns; (void)ns; (void)err;
	if (op == FSP_OP_DEV_READ || op == FSP_OP_DEV_FLUSH)
		return;
	if (ios_seen++ == crash_after)
		copy_file(crash_path, snap_path);
}

/* The workload: writes with an fsync every few; the model of what was
 * fsync'd is kept per fsync so the snapshot can be checked against the
 * last fsync that completed before the crash point. */
struct durable {
	int ios_at_fsync; /* device writes issued when the fsync returned */
	int writes;       /* writes issued before it */
	struct model m;
};

/* every write of the workload, so a byte may hold any version written
 * after the last durable fsync (cow=off overwrites in place) */
struct wrec {
	int obj;
	uint64_t off;
	size_t len;
	uint8_t data[16384];
};

static void crash_mode(int cow, int journal)
{
	static struct durable d[16];
	static struct wrec w[30];
	static struct model m;
	static uint8_t buf[16384] __attribute__((aligned(4096)));
	int nd = 0, total;
	struct emu_store_info info;
	struct emu_store_cfg cfg;
	char err[512];
	path_of(crash_path, sizeof(crash_path), "crash");
	path_of(snap_path, sizeof(snap_path), "crash.snap");
	unlink(crash_path);
	emu_store_cfg_default(&cfg);
	cfg.cow = cow;
	cfg.journal = journal;
	cfg.commit_interval_ms = UINT64_MAX;
	cfg.devio = crash_devio;
	cfg.flush = 0; /* snapshots are taken at IO boundaries: flushes change nothing */
	/* one pass to count the IOs, then one crash per write IO */
	crash_after = -1;
	for (int pass = -1;; pass++) {
		memset(&m, 0, sizeof(m));
		nd = 0;
		rng_state = 42;
		crash_after = pass;
		ios_seen = 0;
		cfg.format = 1;
		struct emu_store *st = emu_store_open(crash_path, CRASH_STORE_BYTES, &cfg, &info, err, sizeof(err));
		assert_non_null(st);
		int base = ios_seen;
		if (pass >= 0)
			crash_after = base + pass; /* count from the end of the format */
		struct emu_cx cx = { 0 };
		d[nd].ios_at_fsync = ios_seen;
		d[nd].writes = 0;
		d[nd++].m = m;
		for (int k = 0; k < 30; k++) {
			int i = (int)(rnd() % 2);
			uint64_t off = (rnd() % 16) * 4096 + (k % 3 ? 0 : 100);
			size_t len = 4096 + (size_t)(rnd() % 8192);
			for (size_t q = 0; q < len; q++)
				buf[q] = (uint8_t)rnd();
			assert_int_equal(emu_store_write(st, &cx, (uint64_t)i + 1, buf, len, off), (ssize_t)len);
			memcpy(m.data[i] + off, buf, len);
			w[k].obj = i;
			w[k].off = off;
			w[k].len = len;
			memcpy(w[k].data, buf, len);
			if (off + len > m.size[i])
				m.size[i] = off + len;
			if (k % 6 == 5) {
				assert_int_equal(emu_store_fsync(st, &cx, (uint64_t)i + 1), 0);
				d[nd].ios_at_fsync = ios_seen;
				d[nd].writes = k + 1;
				d[nd++].m = m;
			}
		}
		total = ios_seen - base;
		crash_after = -1;
		assert_int_equal(emu_store_close(st, NULL), 0);
		if (pass < 0)
			continue;
		if (pass >= total)
			break;
		/* mount the snapshot: the state of the last completed fsync
		 * must be there, byte for byte, in the ranges no later write
		 * touched; here simply: objects at least as large, and every
		 * byte equal to that fsync's model or to some later state */
		int last = 0;
		while (last + 1 < nd && d[last + 1].ios_at_fsync <= base + pass + 1)
			last++;
		cfg.format = 0;
		cfg.devio = NULL;
		struct emu_store *s2 = emu_store_open(snap_path, CRASH_STORE_BYTES, &cfg, &info, err, sizeof(err));
		if (!s2)
			fprintf(stderr, "crash %d/%d (cow %d journal %d): %s\n", pass, total, cow, journal, err);
		assert_non_null(s2);
		assert_false(info.clean);
		static uint8_t got[FILE_MAX];
		for (int i = 0; i < 2; i++) {
			uint64_t size = 0;
			emu_store_obj_size(s2, (uint64_t)i + 1, &size, NULL);
			assert_true(size >= d[last].m.size[i]);
			memset(got, 0, sizeof(got));
			emu_store_read(s2, &cx, (uint64_t)i + 1, got, sizeof(got), 0);
			for (uint64_t q = 0; q < d[last].m.size[i]; q++) {
				int ok = got[q] == d[last].m.data[i][q];
				for (int k = d[last].writes; !ok && k < 30; k++)
					ok = w[k].obj == i && q >= w[k].off && q < w[k].off + w[k].len &&
					     got[q] == w[k].data[q - w[k].off];
				if (!ok)
					fprintf(stderr, "crash %d/%d cow %d journal %d: obj %d byte %llu "
						"lost (fsync %d)\n", pass, total, cow, journal, i,
						(unsigned long long)q, last);
				assert_true(ok);
			}
		}
		assert_int_equal(emu_store_close(s2, NULL), 0);
		cfg.devio = crash_devio;
	}
	unlink(snap_path);
}

UNIT_TEST(test_crash_every_io)
{
	(void)state;
	crash_mode(EMU_COW_ALWAYS, EMU_JOURNAL_OFF);
	crash_mode(EMU_COW_OFF, EMU_JOURNAL_ORDERED);
	crash_mode(EMU_COW_OFF, EMU_JOURNAL_DATA);
	crash_mode(EMU_COW_SHARED, EMU_JOURNAL_WRITEBACK);
}

/*
 * A clone is committed, then in the open transaction one file drops its
 * reference (overwrite, which moves the shared block, or truncate) and the
 * other overwrites the block. Until the commit, the durable state still
 * maps both files to that block, so the overwrite must not land in place:
 * a crash there would show one file's data in the other. The crash is a
 * copy of the store taken before any further commit.
 */
static void unshare_then_crash(int cow, int journal, int drop_by_truncate, int writer)
{
	static uint8_t a[64 << 10] __attribute__((aligned(4096))), b[64 << 10];
	static uint8_t x[4096] __attribute__((aligned(4096)));
	struct emu_store_info info;
	struct emu_cx cx = { 0 };
	char path[512], snap[512];
	uint64_t other = 3 - (uint64_t)writer; /* objects 1 and 2 */
	struct emu_store *st = open_store("unshare", cow, journal, 1, &info);
	assert_non_null(st);
	memset(a, 0xaa, sizeof(a));
	assert_int_equal(emu_store_write(st, &cx, 1, a, sizeof(a), 0), (ssize_t)sizeof(a));
	assert_int_equal(emu_store_clone(st, &cx, 1, 0, 2, 0, sizeof(a)), (ssize_t)sizeof(a));
	assert_int_equal(emu_store_fsync(st, &cx, 2), 0);
	if (drop_by_truncate) {
		assert_int_equal(emu_store_truncate(st, &cx, other, 0), 0);
	} else {
		memset(x, 0xbb, sizeof(x));
		assert_int_equal(emu_store_write(st, &cx, other, x, sizeof(x), 0), 4096);
	}
	memset(x, 0xcc, sizeof(x));
	assert_int_equal(emu_store_write(st, &cx, (uint64_t)writer, x, sizeof(x), 0), 4096);
	path_of(path, sizeof(path), "unshare");
	path_of(snap, sizeof(snap), "unshare.snap");
	copy_file(path, snap);
	assert_int_equal(emu_store_close(st, NULL), 0);

	struct emu_store_cfg cfg;
	char err[512];
	emu_store_cfg_default(&cfg);
	cfg.cow = cow;
	cfg.journal = journal;
	cfg.format = 0;
	st = emu_store_open(snap, STORE_BYTES, &cfg, &info, err, sizeof(err));
	if (!st)
		fprintf(stderr, "open %s: %s\n", snap, err);
	assert_non_null(st);
	/* the committed state: both files whole and 0xaa; the writer may
	 * also show its own later data, never the other's */
	for (uint64_t id = 1; id <= 2; id++) {
		memset(b, 0, sizeof(b));
		assert_int_equal(emu_store_read(st, &cx, id, b, sizeof(b), 0), (ssize_t)sizeof(b));
		for (size_t k = 0; k < sizeof(b); k++) {
			int ok = b[k] == 0xaa || (id == (uint64_t)writer && k < 4096 && b[k] == 0xcc) ||
				 (id == other && !drop_by_truncate && k < 4096 && b[k] == 0xbb);
			if (!ok)
				fprintf(stderr, "cow %d journal %d %s, writer %d: object %llu byte %zu "
					"is 0x%02x\n", cow, journal, drop_by_truncate ? "truncate" : "overwrite",
					writer, (unsigned long long)id, k, b[k]);
			assert_true(ok);
		}
	}
	assert_int_equal(emu_store_close(st, NULL), 0);
	unlink(snap);
}

UNIT_TEST(test_unshare_then_crash)
{
	(void)state;
	static const int journals[] = { EMU_JOURNAL_OFF, EMU_JOURNAL_ORDERED, EMU_JOURNAL_DATA };
	for (int cow = EMU_COW_OFF; cow <= EMU_COW_SHARED; cow++)
		for (size_t j = 0; j < sizeof(journals) / sizeof(*journals); j++)
			for (int trunc = 0; trunc <= 1; trunc++)
				for (int writer = 1; writer <= 2; writer++)
					unshare_then_crash(cow, journals[j], trunc, writer);
}

/* Write len bytes of value c at off of the file in dir. */
static void fill_file(const char *name, int c, size_t len, off_t off)
{
	char path[512];
	path_of(path, sizeof(path), name);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	uint8_t *z = malloc(len);
	assert_non_null(z);
	memset(z, c, len);
	assert_int_equal(pwrite(fd, z, len, off), (ssize_t)len);
	free(z);
	close(fd);
}

static void write_pattern(struct emu_store *st, uint64_t key, int seed, size_t len)
{
	struct emu_cx cx = { 0 };
	uint8_t *b = malloc(len);
	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 31 + (size_t)seed);
	assert_int_equal(emu_store_write(st, &cx, key, b, len, 0), (ssize_t)len);
	free(b);
}

static int has_pattern(struct emu_store *st, uint64_t key, int seed, size_t len)
{
	struct emu_cx cx = { 0 };
	uint8_t *b = calloc(1, len + 1);
	assert_non_null(b);
	ssize_t n = emu_store_read(st, &cx, key, b, len + 1, 0);
	int same = n == (ssize_t)len;
	for (size_t i = 0; same && i < len; i++)
		same = b[i] == (uint8_t)(i * 31 + (size_t)seed);
	free(b);
	return same;
}

/* A store whose first MiB was zeroed: opened from its backup header (the
 * last clean close), data intact; never formatted. */
UNIT_TEST(test_header_recovery)
{
	(void)state;
	struct emu_store_info info;
	struct emu_store_cfg cfg;
	char err[512], path[512], cmd[1200];
	for (int cow = 0; cow <= EMU_COW_ALWAYS; cow += EMU_COW_ALWAYS) {
		struct emu_store *st = open_store("hdr", cow, cow ? 0 : EMU_JOURNAL_ORDERED, 1, &info);
		assert_non_null(st);
		write_pattern(st, 3, cow, 20000);
		assert_int_equal(emu_store_close(st, NULL), 0);
		fill_file("hdr", 0, 1u << 20, 0);
		path_of(path, sizeof(path), "hdr");
		assert_int_equal(emu_store_probe(path), 2);
		st = open_store("hdr", cow, cow ? 0 : EMU_JOURNAL_ORDERED, 0, &info);
		assert_non_null(st);
		assert_int_equal(info.header_recovered, 1);
		assert_int_equal(info.formatted, 0);
		assert_int_equal(info.root_recovered, 1);
		assert_true(has_pattern(st, 3, cow, 20000));
		assert_int_equal(emu_store_close(st, NULL), 0);
		st = open_store("hdr", cow, cow ? 0 : EMU_JOURNAL_ORDERED, 0, &info);
		assert_non_null(st);
		assert_int_equal(info.header_recovered, 0);
		assert_int_equal(info.clean, 1);
		assert_true(has_pattern(st, 3, cow, 20000));
		/* a copy taken while it is open: its backup header says "in use" */
		char copy[512];
		path_of(copy, sizeof(copy), "hdr-open");
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, copy);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(emu_store_close(st, NULL), 0);
		fill_file("hdr-open", 0, 1u << 20, 0);
		emu_store_cfg_default(&cfg);
		assert_null(emu_store_open(copy, STORE_BYTES, &cfg, &info, err, sizeof(err)));
		assert_non_null(strstr(err, "did not end cleanly"));
		/* more than the header overwritten (its data area too): the
		 * backup leads to damaged metadata, so nothing is served */
		fill_file("hdr", 0, 1u << 20, 0);
		fill_file("hdr", 0x5a, STORE_BYTES - (1u << 20) - 8192, 1u << 20);
		assert_null(emu_store_open(path, STORE_BYTES, &cfg, &info, err, sizeof(err)));
		assert_non_null(strstr(err, "more of the store was overwritten"));
		unlink(copy);
		unlink(path);
	}
}

/* Without format, a non-empty file that is not a store is refused and left
 * as it was; an empty one is formatted. */
UNIT_TEST(test_not_a_store)
{
	(void)state;
	struct emu_store_info info;
	struct emu_store_cfg cfg;
	char err[512], path[512];
	uint8_t b[4096];
	emu_store_cfg_default(&cfg);
	fill_file("junk", 0x5a, STORE_BYTES, 0);
	path_of(path, sizeof(path), "junk");
	assert_int_equal(emu_store_probe(path), 0);
	assert_null(emu_store_open(path, STORE_BYTES, &cfg, &info, err, sizeof(err)));
	assert_non_null(strstr(err, "is not an fsprism store (found: data of an unknown kind)"));
	int fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	close(fd);
	assert_int_equal(b[0], 0x5a);
	assert_int_equal(b[4095], 0x5a);
	fill_file("zeros", 0, STORE_BYTES, 0);
	path_of(path, sizeof(path), "zeros");
	assert_null(emu_store_open(path, STORE_BYTES, &cfg, &info, err, sizeof(err)));
	assert_non_null(strstr(err, "(found: all zeros in the first 1024 KiB); use --format"));
	cfg.format = 1;
	struct emu_store *st = emu_store_open(path, STORE_BYTES, &cfg, &info, err, sizeof(err));
	assert_non_null(st);
	assert_int_equal(info.formatted, 1);
	assert_int_equal(emu_store_close(st, NULL), 0);
}

static int key_of(struct emu_store *st, uint64_t oid, uint64_t *key)
{
	struct emu_obj_ident *v;
	size_t n;
	assert_int_equal(emu_store_list(st, &v, &n), 0);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].oid == oid) {
			*key = v[i].key;
			found = 1;
		}
	free(v);
	return found;
}

/* Objects keep their ids across keys: rebound to other inode numbers,
 * made orphans (kept, not served) and bound again, across remounts. */
UNIT_TEST(test_rebind)
{
	(void)state;
	struct emu_store_info info;
	struct emu_store *st = open_store("ids", EMU_COW_ALWAYS, 0, 1, &info);
	assert_non_null(st);
	write_pattern(st, 5, 1, 9000);
	write_pattern(st, 6, 2, 5000);
	assert_int_equal(emu_store_close(st, NULL), 0);
	st = open_store("ids", EMU_COW_ALWAYS, 0, 0, &info);
	assert_non_null(st);
	struct emu_obj_ident *v;
	size_t n;
	assert_int_equal(emu_store_list(st, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].key, 5);
	assert_int_equal(v[1].key, 6);
	uint64_t oid5 = v[0].oid, oid6 = v[1].oid, key, changed;
	free(v);
	assert_true(oid5 != oid6);
	/* 5 moves to 6 and 6 to 5 (a copy whose inode numbers are swapped) */
	struct emu_obj_ident swap[2] = { { 6, oid5, 0, 0 }, { 5, oid6, 0, 0 } };
	assert_int_equal(emu_store_rebind(st, swap, 2, &changed), 0);
	assert_int_equal(changed, 2);
	assert_true(has_pattern(st, 6, 1, 9000));
	assert_true(has_pattern(st, 5, 2, 5000));
	/* two objects on one key: refused, nothing changes */
	struct emu_obj_ident twice[2] = { { 7, oid5, 0, 0 }, { 7, oid6, 0, 0 } };
	assert_int_equal(emu_store_rebind(st, twice, 2, NULL), -EEXIST);
	assert_true(has_pattern(st, 6, 1, 9000));
	/* only oid5 bound: oid6 becomes an orphan */
	struct emu_obj_ident one = { 9, oid5, 0, 0 };
	assert_int_equal(emu_store_rebind(st, &one, 1, NULL), 0);
	assert_int_equal(emu_store_obj_size(st, 5, &key, NULL), -ENOENT);
	assert_int_equal(emu_store_obj_size(st, 6, &key, NULL), -ENOENT);
	assert_true(has_pattern(st, 9, 1, 9000));
	assert_int_equal(emu_store_close(st, NULL), 0);
	st = open_store("ids", EMU_COW_ALWAYS, 0, 0, &info);
	assert_non_null(st);
	assert_int_equal(info.damaged_objects, 0);
	assert_true(key_of(st, oid5, &key));
	assert_int_equal(key, 9);
	assert_true(key_of(st, oid6, &key));
	assert_int_equal(key, oid6 | EMU_ORPHAN_KEY);
	assert_true(has_pattern(st, 9, 1, 9000));
	/* the orphan is found again */
	struct emu_obj_ident both[2] = { { 9, oid5, 0, 0 }, { 12, oid6, 0, 0 } };
	assert_int_equal(emu_store_rebind(st, both, 2, NULL), 0);
	assert_true(has_pattern(st, 12, 2, 5000));
	/* a replaced file (another birth time) does not get the old data,
	 * which stays as an orphan */
	struct emu_cx cx = { 0 };
	assert_int_equal(emu_store_obj_open(st, &cx, 12, 111), 0);
	assert_int_equal(emu_store_obj_open(st, &cx, 12, 222), 0);
	assert_int_equal(emu_store_obj_size(st, 12, &key, NULL), -ENOENT);
	assert_true(key_of(st, oid6, &key));
	assert_int_equal(key, oid6 | EMU_ORPHAN_KEY);
	assert_int_equal(emu_store_close(st, NULL), 0);
}

static int setup(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	return test_dir_make(dir, sizeof(dir), base, "emu-store");
}

static int teardown(void **state)
{
	(void)state;
	return test_dir_remove(dir);
}

UNIT_GROUP(setup, teardown)

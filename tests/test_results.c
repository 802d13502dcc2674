/*
 * test_results.c - the readers of the results database (src/db/results)
 * and the writers stats and compare read back (steps, timeline, segments,
 * a compare adopting its mounts, a failed start forgotten), on real
 * database files in a temp dir: every field, the order of every list,
 * what each filter leaves out, stopping a walk, and a database error.
 * Rows the store has no writer for (an extent without its file, a broken
 * table) are made with a connection of the test's own.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>
#include "src/base/hist.h"
#include "src/base/ops.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "tests/testdb.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static char tmpdir[64];
static char path[128];

static int setup(void **state)
{
	if (test_dir_make(tmpdir, sizeof(tmpdir), "/tmp", "results"))
		return -1;
	test_dir_path(path, sizeof(path), tmpdir, "r.db");
	return 0;
}

static int teardown(void **state)
{
	return test_dir_remove(tmpdir);
}

static struct fsp_store *open_rw(void)
{
	char err[512] = "";
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	if (!st)
		fail_msg("%s", err);
	return st;
}

static int64_t new_run(struct fsp_store *st, const char *kind, const char *backing)
{
	struct fsp_run_info info = { .kind = kind, .backing_path = backing,
				     .backing_device = "/dev/x", .backing_fstype = "xfs" };
	int64_t run = fsp_store_begin_run(st, &info);
	assert_true(run > 0);
	return run;
}

/* Run sql on a connection of the test's own. */
static void side_exec(const char *sql)
{
	sqlite3 *db = test_db_open(path);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

/* ---- runs ----------------------------------------------------------------- */

UNIT_TEST_SETUP(test_runs, setup, teardown)
{
	struct fsp_store *st = open_rw();
	assert_int_equal(fsp_store_latest_run(st), 0);
	struct fsp_run_row r;
	assert_int_equal(fsp_store_load_run(st, 1, &r), 0);
	fsp_run_row_free(&r);

	struct fsp_run_info info = { .kind = "mount", .options = "fsprism mount a b",
				     .backing_path = "/b", .backing_device = "/dev/x",
				     .backing_fstype = "xfs", .record_mode = "full",
				     .label = "emu-fuse" };
	int64_t a = fsp_store_begin_run(st, &info);
	assert_int_equal(fsp_store_end_run(st, a, 7, 2), 0);
	int64_t b = new_run(st, "run", NULL);
	assert_int_equal(fsp_store_latest_run(st), b);

	assert_int_equal(fsp_store_load_run(st, a, &r), 1);
	assert_int_equal(r.id, a);
	assert_string_equal(r.kind, "mount");
	assert_string_equal(r.options, "fsprism mount a b");
	assert_string_equal(r.backing_path, "/b");
	assert_string_equal(r.device, "/dev/x");
	assert_string_equal(r.fstype, "xfs");
	assert_string_equal(r.record_mode, "full");
	assert_string_equal(r.label, "emu-fuse");
	assert_non_null(r.started_at);
	assert_true(r.started_ns > 0 && r.ended_ns >= r.started_ns);
	assert_int_equal(r.recorded, 7);
	assert_int_equal(r.dropped, 2);
	fsp_run_row_free(&r);
	/* a run that did not end: no end, NULL columns stay NULL */
	assert_int_equal(fsp_store_load_run(st, b, &r), 1);
	assert_int_equal(r.ended_ns, 0);
	assert_null(r.backing_path);
	assert_null(r.label);
	fsp_run_row_free(&r);
	fsp_store_close(st);
}

UNIT_TEST_SETUP(test_compare_runs, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t cmp = new_run(st, "compare", NULL);
	int64_t m1 = new_run(st, "mount", "/w/fsprism");
	int64_t m2 = new_run(st, "mount", "/w/fsprism");
	new_run(st, "run", "/w/fsprism"); /* not a mount */
	new_run(st, "mount", "/w/other");
	/* the newest mount on that backing above after */
	assert_int_equal(fsp_store_find_mount_run(st, "/w/fsprism", cmp), m2);
	assert_int_equal(fsp_store_find_mount_run(st, "/w/fsprism", m2), 0);
	assert_int_equal(fsp_store_find_mount_run(st, "/w/none", 0), 0);

	assert_int_equal(fsp_store_adopt_run(st, m1, cmp, "fsprism-fuse"), 0);
	struct fsp_run_row r;
	assert_int_equal(fsp_store_load_run(st, m1, &r), 1);
	assert_string_equal(r.label, "fsprism-fuse");
	fsp_run_row_free(&r);

	/* child_run: kind 'run' only, the newest of that label under parent */
	struct fsp_run_info info = { .kind = "run", .parent = cmp, .label = "raw" };
	int64_t raw1 = fsp_store_begin_run(st, &info);
	int64_t raw2 = fsp_store_begin_run(st, &info);
	info.label = "fs";
	int64_t fs = fsp_store_begin_run(st, &info);
	assert_true(raw1 > 0 && raw2 > raw1 && fs > raw2);
	assert_int_equal(fsp_store_child_run(st, cmp, "raw"), raw2);
	assert_int_equal(fsp_store_child_run(st, cmp, "fs"), fs);
	assert_int_equal(fsp_store_child_run(st, cmp, "fsprism-fuse"), 0); /* a mount */
	assert_int_equal(fsp_store_child_run(st, cmp + 1000, "raw"), 0);
	fsp_store_close(st);
}

/* ---- attributes ----------------------------------------------------------- */

struct seen {
	int n, stop_at;
	char text[512];
};

static int note_attr(void *arg, const char *key, const char *value)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);
	snprintf(s->text + len, sizeof(s->text) - len, "%s%s=%s", len ? " " : "", key,
		 value ? value : "(null)");
	return ++s->n == s->stop_at;
}

UNIT_TEST_SETUP(test_attrs, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t run = new_run(st, "mount", NULL), other = new_run(st, "mount", NULL);
	static const char *const kv[][2] = {
		{ "dev.ios", "10" }, { "emu.cow", "always" }, { "threads", "4" },
		{ "emu.alloc", "next-fit" }, { "dev.fua_writes", "2" }, { "emu.none", NULL },
		{ "devx", "1" }, { "emux.y", "1" },
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		assert_int_equal(fsp_store_set_attr(st, run, kv[i][0], kv[i][1]), 0);
	assert_int_equal(fsp_store_set_attr(st, other, "emu.cow", "off"), 0);

	char *v = fsp_store_attr(st, run, "emu.cow");
	assert_string_equal(v, "always");
	free(v);
	assert_null(fsp_store_attr(st, run, "emu.none"));  /* NULL value */
	assert_null(fsp_store_attr(st, run, "missing"));
	v = fsp_store_attr(st, other, "emu.cow");
	assert_string_equal(v, "off");
	free(v);

	struct seen s = { 0 };
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_EMU, note_attr, &s), 0);
	assert_string_equal(s.text, "emu.alloc=next-fit emu.cow=always emu.none=(null)");
	memset(&s, 0, sizeof(s));
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_DEV, note_attr, &s), 0);
	assert_string_equal(s.text, "dev.fua_writes=2 dev.ios=10");
	memset(&s, 0, sizeof(s));
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_EMU | FSP_ATTRS_DEV,
					     note_attr, &s), 0);
	assert_string_equal(s.text, "dev.fua_writes=2 dev.ios=10 emu.alloc=next-fit "
			    "emu.cow=always emu.none=(null)");
	/* a callback that says stop ends the walk, which is not an error */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_EMU | FSP_ATTRS_DEV,
					     note_attr, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(fsp_store_each_attr(st, run, 0, note_attr, &s), -1);
	assert_int_equal(fsp_store_each_attr(st, run, 4, note_attr, &s), -1);
	/* every attribute of the run (the report's facts), none of the other run's */
	memset(&s, 0, sizeof(s));
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_ALL, note_attr, &s), 0);
	assert_string_equal(s.text, "dev.fua_writes=2 dev.ios=10 devx=1 emu.alloc=next-fit "
			    "emu.cow=always emu.none=(null) emux.y=1 threads=4");
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_ALL | FSP_ATTRS_EMU, note_attr,
					     &s), -1);

	/* a database error is one: -1, and the store says why */
	side_exec("DROP TABLE run_attrs");
	memset(&s, 0, sizeof(s));
	assert_int_equal(fsp_store_each_attr(st, run, FSP_ATTRS_EMU, note_attr, &s), -1);
	assert_int_equal(s.n, 0);
	assert_non_null(strstr(fsp_store_errmsg(st), "run_attrs"));
	fsp_store_close(st);
}

/* ---- steps ---------------------------------------------------------------- */

struct steps_seen {
	int n;
	struct fsp_step_row r[4];
	char label[4][32], pattern[4][32];
};

static int note_step(void *arg, const struct fsp_step_row *r)
{
	struct steps_seen *s = arg;
	if (s->n == 4)
		return 1;
	s->r[s->n] = *r;
	snprintf(s->label[s->n], sizeof(s->label[0]), "%s", r->label ? r->label : "(null)");
	snprintf(s->pattern[s->n], sizeof(s->pattern[0]), "%s", r->pattern ? r->pattern : "");
	s->n++;
	return 0;
}

UNIT_TEST_SETUP(test_steps, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t run = new_run(st, "run", NULL), other = new_run(st, "run", NULL);
	struct fsp_step_row r = {
		.step = 5, .label = "qd=4", .access = "random", .pattern = "random",
		.block_size = 4096, .qd = 4, .read_pct = 70, .span_offset = 1 << 20,
		.span_size = 1ull << 32, .started_ns = 1000, .ended_ns = 9000, .busy_ns = 7000,
		.read_ios = 11, .write_ios = 12, .read_bytes = 45056, .write_bytes = 49152,
		.cpu_user_ns = 13, .cpu_sys_ns = 14,
	};
	assert_int_equal(fsp_store_tx_begin(st), 0);
	assert_int_equal(fsp_store_add_step(st, run, &r), 0);  /* stored out of order */
	struct fsp_step_row r0 = { .step = 2, .label = NULL, .access = "seq",
				   .started_ns = 100, .ended_ns = 200 };
	assert_int_equal(fsp_store_add_step(st, run, &r0), 0);
	assert_int_equal(fsp_store_add_step(st, other, &r), 0);
	for (uint64_t b = 0; b < 3; b++) {
		struct fsp_timeline_row t = { .t_ns = 1000 + b * 10, .read_bytes = b,
					      .write_bytes = 2 * b, .read_ios = 3 * b,
					      .write_ios = 4 * b };
		assert_int_equal(fsp_store_add_timeline(st, run, 5, &t), 0);
	}
	struct fsp_segment_row g = { .segment = 1, .offset = 8192, .bytes = 65536, .ns = 77 };
	assert_int_equal(fsp_store_add_segment(st, run, 5, &g), 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);
	/* the same step twice is refused (primary key), and a rollback keeps nothing */
	assert_int_equal(fsp_store_tx_begin(st), 0);
	struct fsp_step_row r9 = { .step = 9 };
	assert_int_equal(fsp_store_add_step(st, run, &r9), 0);
	assert_int_equal(fsp_store_add_step(st, run, &r), -1);
	fsp_store_tx_rollback(st);
	fsp_store_close(st);

	/* read back through a reader's handle */
	char err[512];
	st = fsp_store_open_readonly(path, err, sizeof(err));
	assert_non_null(st);
	assert_int_equal(fsp_store_count_steps(st, run), 2);
	assert_int_equal(fsp_store_count_steps(st, run + 100), 0);
	struct steps_seen s = { 0 };
	assert_int_equal(fsp_store_each_step(st, run, note_step, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.r[0].step, 2);
	assert_string_equal(s.label[0], "(null)");
	const struct fsp_step_row *b = &s.r[1];
	assert_int_equal(b->step, 5);
	assert_string_equal(s.label[1], "qd=4");
	assert_string_equal(s.pattern[1], "random");
	assert_int_equal(b->block_size, 4096);
	assert_int_equal(b->qd, 4);
	assert_int_equal(b->read_pct, 70);
	assert_int_equal(b->span_offset, 1 << 20);
	assert_int_equal(b->span_size, 1ull << 32);
	assert_int_equal(b->started_ns, 1000);
	assert_int_equal(b->ended_ns, 9000);
	assert_int_equal(b->busy_ns, 7000);
	assert_int_equal(b->read_ios, 11);
	assert_int_equal(b->write_ios, 12);
	assert_int_equal(b->read_bytes, 45056);
	assert_int_equal(b->write_bytes, 49152);
	assert_int_equal(b->cpu_user_ns, 13);
	assert_int_equal(b->cpu_sys_ns, 14);

	char *label;
	int64_t from, to;
	assert_int_equal(fsp_store_step_span(st, run, 5, &label, &from, &to), 1);
	assert_string_equal(label, "qd=4");
	assert_int_equal(from, 1000);
	assert_int_equal(to, 9000);
	free(label);
	assert_int_equal(fsp_store_step_span(st, run, 3, &label, &from, &to), 0);
	assert_null(label);

	int64_t win[4][2];
	assert_int_equal(fsp_store_step_windows(st, run, win, 4), 2);
	assert_int_equal(win[0][0], 100);
	assert_int_equal(win[0][1], 200);
	assert_int_equal(win[1][0], 1000);
	assert_int_equal(win[1][1], 9000);
	assert_int_equal(fsp_store_step_windows(st, run, win, 1), 1);
	fsp_store_close(st);

	/* timeline and segments as stored (no reader needs them yet) */
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT sum(t_ns), sum(read_bytes),"
		" sum(write_bytes), sum(read_ios), sum(write_ios), count(*) FROM timeline"
		" WHERE run=? AND step=5", -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_int64(q, 1, run);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), 3030);
	assert_int_equal(sqlite3_column_int64(q, 1), 3);
	assert_int_equal(sqlite3_column_int64(q, 2), 6);
	assert_int_equal(sqlite3_column_int64(q, 3), 9);
	assert_int_equal(sqlite3_column_int64(q, 4), 12);
	assert_int_equal(sqlite3_column_int64(q, 5), 3);
	sqlite3_finalize(q);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT run, step, segment, offset, bytes, ns"
		" FROM segments", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), run);
	assert_int_equal(sqlite3_column_int64(q, 1), 5);
	assert_int_equal(sqlite3_column_int64(q, 2), 1);
	assert_int_equal(sqlite3_column_int64(q, 3), 8192);
	assert_int_equal(sqlite3_column_int64(q, 4), 65536);
	assert_int_equal(sqlite3_column_int64(q, 5), 77);
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	sqlite3_close(db);
}

/* ---- histograms and op rows ----------------------------------------------- */

static void save(struct fsp_store *st, int64_t run, int step, int op, int layer,
		 const uint64_t *ns, int n, uint64_t bytes)
{
	struct fsp_hist *h = malloc(sizeof(*h));
	assert_non_null(h);
	fsp_hist_init(h);
	for (int i = 0; i < n; i++)
		fsp_hist_add(h, ns[i]);
	assert_int_equal(fsp_store_save_hist(st, run, step, op, layer, h, bytes, 0, 0), 0);
	free(h);
}

struct keys_seen {
	int n;
	int step[8], op[8];
};

static int note_key(void *arg, int step, int op)
{
	struct keys_seen *k = arg;
	k->step[k->n] = step;
	k->op[k->n] = op;
	return ++k->n == 8;
}

UNIT_TEST_SETUP(test_hists, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t run = new_run(st, "run", NULL), other = new_run(st, "run", NULL);
	static const uint64_t a[] = { 1000, 2000, 3000 }, b[] = { 500000 }, zero[] = { 0 };
	assert_int_equal(fsp_store_tx_begin(st), 0);
	save(st, run, 2, FSP_OP_WRITE, FSP_LAYER_TOTAL, a, 3, 300);
	save(st, run, 0, FSP_OP_WRITE, FSP_LAYER_TOTAL, b, 1, 40);
	save(st, run, 2, FSP_OP_READ, FSP_LAYER_TOTAL, a, 2, 7);
	save(st, run, 2, FSP_OP_READ, FSP_LAYER_BACKING, a, 2, 7);
	save(st, run, 0, FSP_OP_WRITE, FSP_LAYER_EMU, zero, 1, 0);
	save(st, other, 1, FSP_OP_WRITE, FSP_LAYER_TOTAL, a, 3, 1);
	assert_int_equal(fsp_store_tx_commit(st), 0);

	/* distinct (step, op) in step then op order, layers folded */
	struct keys_seen k = { 0 };
	assert_int_equal(fsp_store_each_hist_key(st, run, note_key, &k), 0);
	assert_int_equal(k.n, 3);
	assert_int_equal(k.step[0], 0);
	assert_int_equal(k.op[0], FSP_OP_WRITE);
	assert_int_equal(k.step[1], 2);
	assert_int_equal(k.op[1], FSP_OP_READ);
	assert_int_equal(k.step[2], 2);
	assert_int_equal(k.op[2], FSP_OP_WRITE);
	assert_int_equal(fsp_store_count_hist_steps(st, run), 2);
	assert_int_equal(fsp_store_count_hist_steps(st, run + 100), 0);

	uint64_t count, bytes;
	assert_int_equal(fsp_store_op_totals(st, run, FSP_OP_WRITE, &count, &bytes), 0);
	assert_int_equal(count, 4);
	assert_int_equal(bytes, 340);
	assert_int_equal(fsp_store_op_totals(st, run, FSP_OP_FSYNC, &count, &bytes), 0);
	assert_int_equal(count, 0);
	assert_int_equal(bytes, 0);

	struct fsp_hist *m = malloc(sizeof(*m));
	assert_non_null(m);
	assert_int_equal(fsp_store_load_hist_merged(st, run, FSP_OP_WRITE, FSP_LAYER_TOTAL, m), 0);
	assert_int_equal(m->count, 4);
	assert_int_equal(m->sum, 506000);
	assert_int_equal(m->min, 1000);
	assert_int_equal(m->max, 500000);
	assert_int_equal(fsp_store_load_hist_merged(st, run, FSP_OP_WRITE, FSP_LAYER_LAYER, m), 0);
	assert_int_equal(m->count, 0);
	free(m);

	/* an emu histogram of zeros is not the emulation at work */
	assert_int_equal(fsp_store_emu_layer_used(st, run), 0);
	assert_int_equal(fsp_store_tx_begin(st), 0);
	save(st, run, 2, FSP_OP_WRITE, FSP_LAYER_EMU, a, 1, 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);
	assert_int_equal(fsp_store_emu_layer_used(st, run), 1);
	assert_int_equal(fsp_store_emu_layer_used(st, other), 0);
	fsp_store_close(st);
}

UNIT_TEST_SETUP(test_windowed_layers, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t run = new_run(st, "mount", NULL), other = new_run(st, "mount", NULL);
	/* start_ns 100..1000 step 100: windows [200, 300] and [700, 700] */
	struct fsp_rec r[10];
	memset(r, 0, sizeof(r));
	for (int i = 0; i < 10; i++) {
		r[i].start_ns = 100 * (uint64_t)(i + 1);
		r[i].op = i == 5 ? FSP_OP_WRITE : FSP_OP_READ;
		r[i].total_ns = 1000 + (uint64_t)i;
		r[i].backing_ns = 600;
		r[i].emu_ns = 100;
	}
	assert_int_equal(fsp_store_tx_begin(st), 0);
	assert_int_equal(fsp_store_insert_recs(st, run, r, 10), 0);
	assert_int_equal(fsp_store_insert_recs(st, other, r, 10), 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);

	int64_t win[2][2] = { { 200, 300 }, { 700, 700 } };
	struct fsp_hist *h = malloc(sizeof(*h) * FSP_LAYER__COUNT);
	assert_non_null(h);
	/* reads at 200, 300, 700 (600 is the write) */
	assert_int_equal(fsp_store_windowed_layers(st, run, FSP_OP_READ, win, 2, h), 3);
	assert_int_equal(h[FSP_LAYER_TOTAL].count, 3);
	assert_int_equal(h[FSP_LAYER_TOTAL].sum, 1001 + 1002 + 1006);
	assert_int_equal(h[FSP_LAYER_BACKING].sum, 3 * 600);
	assert_int_equal(h[FSP_LAYER_EMU].sum, 3 * 100);
	assert_int_equal(h[FSP_LAYER_LAYER].sum, 301 + 302 + 306);
	assert_int_equal(fsp_store_windowed_layers(st, run, FSP_OP_WRITE, win, 2, h), 0);
	assert_int_equal(h[FSP_LAYER_TOTAL].count, 0);
	assert_int_equal(fsp_store_windowed_layers(st, run, FSP_OP_READ, win, 0, h), 0);
	free(h);
	fsp_store_close(st);
}

/* ---- the emulation -------------------------------------------------------- */

static int note_file(void *arg, const struct fsp_emu_file *f)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);
	snprintf(s->text + len, sizeof(s->text) - len, "%s%llu:%s:%llu:%llu:%zu",
		 len ? " " : "", (unsigned long long)f->obj, f->path ? f->path : "(null)",
		 (unsigned long long)f->size, (unsigned long long)f->allocated, f->nextents);
	s->n++;
	return 0;
}

static int note_extent(void *arg, const struct fsp_emu_file *f, const struct fsp_emu_extent *e)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);
	snprintf(s->text + len, sizeof(s->text) - len, "%s%llu:%s:%llu:%zu@%llu+%llu>%llu",
		 len ? " " : "", (unsigned long long)f->obj, f->path ? f->path : "(null)",
		 (unsigned long long)f->size, f->nextents, (unsigned long long)e->logical,
		 (unsigned long long)e->length, (unsigned long long)e->physical);
	s->n++;
	return 0;
}

UNIT_TEST_SETUP(test_emu, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t files_run = new_run(st, "mount", NULL), dev_run = new_run(st, "mount", NULL);
	int64_t attr_run = new_run(st, "mount", NULL), plain = new_run(st, "mount", NULL);
	int64_t cow_run = new_run(st, "mount", NULL);

	/* three ways a run shows the emulation; a fourth run has none */
	static const struct fsp_emu_extent e7[] = { { 4096, 81920, 4096 }, { 0, 40960, 4096 } };
	static const struct fsp_emu_extent e9[] = { { 0, 12288, 8192 } };
	const struct fsp_emu_file f[] = {
		{ .obj = 9, .path = "b", .size = 8192, .allocated = 8192, .nextents = 1, .ext = e9 },
		{ .obj = 7, .path = NULL, .size = 5000, .allocated = 8192, .nextents = 2, .ext = e7 },
		{ .obj = 8, .path = "a", .size = 0, .allocated = 0, .nextents = 0 },
		{ .obj = 3, .path = "", .size = 1, .allocated = 4096, .nextents = 0 },
	};
	assert_int_equal(fsp_store_save_emu_files(st, files_run, f, 4), 0);
	static const uint64_t one[] = { 1000 };
	assert_int_equal(fsp_store_tx_begin(st), 0);
	save(st, dev_run, 0, FSP_OP_DEV_FLUSH, FSP_LAYER_TOTAL, one, 1, 0);
	save(st, plain, 0, FSP_OP_WRITE, FSP_LAYER_TOTAL, one, 1, 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);
	assert_int_equal(fsp_store_set_attr(st, attr_run, "emu.cow", "always"), 0);
	assert_int_equal(fsp_store_set_attr(st, plain, "emu_cow", "always"), 0); /* compare's */
	assert_int_equal(fsp_store_set_attr(st, cow_run, "dev.ios", "1"), 0);
	assert_int_equal(fsp_store_is_emulated(st, files_run), 1);
	assert_int_equal(fsp_store_is_emulated(st, dev_run), 1);
	assert_int_equal(fsp_store_is_emulated(st, attr_run), 1);
	assert_int_equal(fsp_store_is_emulated(st, plain), 0);
	assert_int_equal(fsp_store_is_emulated(st, cow_run), 0);

	uint64_t nfiles, next;
	assert_int_equal(fsp_store_emu_file_totals(st, files_run, &nfiles, &next), 0);
	assert_int_equal(nfiles, 4);
	assert_int_equal(next, 3);
	assert_int_equal(fsp_store_emu_file_totals(st, plain, &nfiles, &next), 0);
	assert_int_equal(nfiles, 0);
	assert_int_equal(next, 0);

	/* files with a path first, by path; then those without (NULL before "") */
	struct seen s = { 0 };
	assert_int_equal(fsp_store_each_emu_file(st, files_run, note_file, &s), 0);
	assert_string_equal(s.text, "8:a:0:0:0 9:b:8192:8192:1 7:(null):5000:8192:2 3::1:4096:0");

	/* an extent whose object has no emu_files row still lists, as no file */
	char sql[128];
	snprintf(sql, sizeof(sql), "INSERT INTO emu_extents(run, obj, logical, physical,"
		 " length) VALUES(%lld, 5, 0, 4096, 512)", (long long)files_run);
	side_exec(sql);
	memset(&s, 0, sizeof(s));
	assert_int_equal(fsp_store_each_emu_extent(st, files_run, note_extent, &s), 0);
	assert_string_equal(s.text, "9:b:8192:1@0+8192>12288 5:(null):0:0@0+512>4096 "
			    "7:(null):5000:2@0+4096>40960 7:(null):5000:2@4096+4096>81920");
	memset(&s, 0, sizeof(s));
	assert_int_equal(fsp_store_each_emu_extent(st, plain, note_extent, &s), 0);
	assert_int_equal(s.n, 0);
	fsp_store_close(st);
}

/* ---- a failed start forgotten --------------------------------------------- */

static int64_t count_of(const char *table, const char *col, int64_t run)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE %s=%lld", table, col,
		 (long long)run);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return n;
}

UNIT_TEST_SETUP(test_forget_run, setup, teardown)
{
	struct fsp_store *st = open_rw();
	int64_t keep = new_run(st, "mount", NULL), gone = new_run(st, "mount", NULL);
	static const uint64_t one[] = { 1000 };
	struct fsp_rec r = { .start_ns = 1, .total_ns = 2, .op = FSP_OP_READ };
	for (int i = 0; i < 2; i++) {
		int64_t run = i ? gone : keep;
		assert_int_equal(fsp_store_tx_begin(st), 0);
		save(st, run, 0, FSP_OP_READ, FSP_LAYER_TOTAL, one, 1, 0);
		assert_int_equal(fsp_store_insert_recs(st, run, &r, 1), 0);
		assert_int_equal(fsp_store_tx_commit(st), 0);
		assert_int_equal(fsp_store_set_attr(st, run, "k", "v"), 0);
	}
	assert_int_equal(fsp_store_forget_run(st, gone), 0);
	static const char *const tables[] = { "ops", "hist", "hist_bins", "run_attrs" };
	for (int t = 0; t < 4; t++) {
		assert_int_equal(count_of(tables[t], "run", gone), 0);
		assert_int_equal(count_of(tables[t], "run", keep), 1);
	}
	assert_int_equal(count_of("runs", "id", gone), 0);
	assert_int_equal(count_of("runs", "id", keep), 1);
	assert_int_equal(fsp_store_latest_run(st), keep);
	fsp_store_close(st);
}

/* The reader's handle: the file's absolute name, and nothing created. */
UNIT_TEST_SETUP(test_open_readonly, setup, teardown)
{
	char err[512] = "";
	fsp_store_close(open_rw());
	struct fsp_store *st = fsp_store_open_readonly(path, err, sizeof(err));
	assert_non_null(st);
	assert_string_equal(fsp_store_filename(st), path);
	assert_int_equal(fsp_store_latest_run(st), 0);
	fsp_store_close(st);
	char missing[160];
	test_dir_path(missing, sizeof(missing), tmpdir, "none.db");
	assert_null(fsp_store_open_readonly(missing, err, sizeof(err)));
	assert_int_equal(access(missing, F_OK), -1);
}

/*
 * test_oplog.c - the per-thread rings and the background writer under many
 * threads, on real SQLite files: every record arrives exactly once, drops
 * are counted exactly, sampling keeps ceil(n/N) rows per thread, the
 * histograms count every operation in every mode, and the four layers
 * (total, backing, emu, layer = total - backing - emu clamped at 0) come
 * out right for user and device (FSP_OP_DEV_*) records alike. Rows reach
 * SQLite only at close, through a spill file that leaves nothing behind;
 * when that file fails, the rows are counted as dropped. A process killed
 * with its log open leaves the spill, and the next open of the database
 * stores its rows and histograms, up to a torn or damaged frame, and
 * marks the run crashed; a live log's spill is left alone.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <zlib.h>
#include "src/db/oplog.h"
#include "src/db/store.h"
#include "tests/testdb.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static char tmpdir[64];

static int setup(void **state)
{
	return test_dir_make(tmpdir, sizeof(tmpdir), "/tmp", "oplog");
}

static int teardown(void **state)
{
	return test_dir_remove(tmpdir);
}

static struct fsp_store *open_store(const char *name, int64_t *run)
{
	char path[128], err[512];
	test_dir_path(path, sizeof(path), tmpdir, name);
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	if (!st)
		fail_msg("%s", err);
	struct fsp_run_info info = { .kind = "run", .record_mode = "test" };
	*run = fsp_store_begin_run(st, &info);
	assert_true(*run > 0);
	return st;
}

static int64_t q_int(struct fsp_store *st, const char *fmt, ...)
{
	char sql[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	sqlite3 *db = test_db_open(fsp_store_filename(st));
	int64_t v = test_db_int(db, sql);
	sqlite3_close(db);
	return v;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && !strcmp(s + n - t, tail);
}

/* Entries of tmpdir other than databases and their -wal / -shm files
 * (spill files, DB-fsprism-spill-RUN, count). */
static int count_non_db_files(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    ends_with(e->d_name, ".db") || ends_with(e->d_name, ".db-wal") ||
		    ends_with(e->d_name, ".db-shm"))
			continue;
		n++;
	}
	closedir(d);
	return n;
}

/* Ops a producer cycles through: user ops and every kind of device IO. */
static const uint16_t rec_ops[] = {
	FSP_OP_READ, FSP_OP_WRITE, FSP_OP_GETATTR, FSP_OP_DEV_READ, FSP_OP_DEV_WRITE_DATA,
	FSP_OP_DEV_WRITE_JOURNAL, FSP_OP_DEV_WRITE_META, FSP_OP_DEV_WRITE_CKPT,
	FSP_OP_DEV_FLUSH,
};
#define NREC_OPS (sizeof(rec_ops) / sizeof(rec_ops[0]))

/* The record a thread makes for its seq-th operation: unique (node, offset). */
static void make_rec(struct fsp_rec *r, unsigned thread, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	r->node = thread;
	r->offset = seq;
	r->op = rec_ops[seq % NREC_OPS];
	r->step = (uint16_t)(thread % 4 == 3 ? 60000 + thread : 0); /* far pages too */
	r->total_ns = 1000 + (seq * 7919 + thread * 104729) % 5000000;
	r->backing_ns = r->total_ns * 3 / 4;
	/* emulation share: none, an eighth, or half (backing + emu > total:
	 * the layer must clamp at 0) */
	r->emu_ns = seq % 5 < 2 ? 0 : seq % 5 < 4 ? r->total_ns / 8 : r->total_ns / 2;
	if (r->op >= FSP_OP_DEV_READ)
		r->cause_ns = seq % 4 ? seq - 1 : 0; /* 0: a background commit's IO */
	r->length = 4096;
	r->bytes = r->op == FSP_OP_GETATTR ? 0 : 4096;
	r->result = seq % 101 == 0 ? 5 : 0;
	r->pid = thread;
	r->start_ns = seq;
}

struct producer {
	struct fsp_oplog *log;
	unsigned thread;
	uint64_t n;
	pthread_barrier_t *all_registered; /* NULL: threads may exit any time */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct fsp_rec r;
	for (uint64_t i = 0; i < p->n; i++) {
		make_rec(&r, p->thread, i);
		fsp_oplog_add(p->log, &r);
	}
	/* no thread exits (and so hands its context on) before all have one */
	if (p->all_registered)
		pthread_barrier_wait(p->all_registered);
	return NULL;
}

static void run_producers(struct fsp_oplog *log, unsigned nthreads, uint64_t (*count)(unsigned))
{
	pthread_t tid[64];
	struct producer p[64];
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, nthreads);
	for (unsigned t = 0; t < nthreads; t++) {
		p[t] = (struct producer){ log, t, count(t), &barrier };
		assert_int_equal(pthread_create(&tid[t], NULL, produce, &p[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&barrier);
}

/* A log on a fresh database `name` (mode, sample_n, a ring of ring_recs
 * records per thread) that nthreads producers fill with count(t) records
 * each and that is then closed: the store, for the checks. */
static struct fsp_store *logged_run(const char *name, int64_t *run, enum fsp_record_mode mode,
				    unsigned sample_n, size_t ring_recs, unsigned nthreads,
				    uint64_t (*count)(unsigned))
{
	struct fsp_store *st = open_store(name, run);
	struct fsp_oplog *log = fsp_oplog_open(st, *run, mode, sample_n, ring_recs);
	assert_non_null(log);
	run_producers(log, nthreads, count);
	assert_int_equal(fsp_oplog_close(log), 0);
	return st;
}

/*
 * The stored histograms hold exactly every op the producers made: count,
 * sums of total/backing/layer, bytes and errors per (step, op).
 */
static void check_hists(struct fsp_store *st, int64_t run, unsigned nthreads,
			uint64_t (*count)(unsigned))
{
	uint64_t total_count = 0;
	for (unsigned t = 0; t < nthreads; t++)
		total_count += count(t);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist WHERE run=%lld AND layer=0",
			       (long long)run), total_count);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist_bins WHERE run=%lld AND layer=2",
			       (long long)run), total_count);

	/* per (step, op): recompute what the producers made, in one pass */
	struct expect {
		int step, op;
		uint64_t n, sum_total, sum_backing, sum_emu, sum_layer, bytes, errors;
	} *ex = calloc(4096, sizeof(*ex));
	size_t nex = 0;
	for (unsigned u = 0; u < nthreads; u++) {
		for (uint64_t i = 0; i < count(u); i++) {
			struct fsp_rec r;
			make_rec(&r, u, i);
			size_t k = 0;
			while (k < nex && (ex[k].step != r.step || ex[k].op != r.op))
				k++;
			if (k == nex) {
				assert_true(nex < 4096);
				ex[nex].step = r.step;
				ex[nex++].op = r.op;
			}
			ex[k].n++;
			ex[k].sum_total += r.total_ns;
			ex[k].sum_backing += r.backing_ns;
			ex[k].sum_emu += r.emu_ns;
			/* layer = total - backing - emu, clamped at 0 */
			if (r.total_ns > r.backing_ns + r.emu_ns)
				ex[k].sum_layer += r.total_ns - r.backing_ns - r.emu_ns;
			ex[k].bytes += r.bytes;
			ex[k].errors += r.result != 0;
		}
	}
	assert_int_equal(q_int(st, "SELECT count(*) FROM hist WHERE run=%lld", (long long)run),
			 nex * FSP_LAYER__COUNT);
	struct fsp_hist *h = malloc(sizeof(*h));
	for (size_t k = 0; k < nex; k++) {
		uint64_t b, e;
		assert_int_equal(fsp_store_load_hist(st, run, ex[k].step, ex[k].op,
						     FSP_LAYER_TOTAL, h, &b, &e), 1);
		assert_int_equal(h->count, ex[k].n);
		assert_int_equal(h->sum, ex[k].sum_total);
		assert_int_equal(b, ex[k].bytes);
		assert_int_equal(e, ex[k].errors);
		assert_int_equal(fsp_store_load_hist(st, run, ex[k].step, ex[k].op,
						     FSP_LAYER_BACKING, h, NULL, NULL), 1);
		assert_int_equal(h->sum, ex[k].sum_backing);
		assert_int_equal(h->count, ex[k].n);
		assert_int_equal(fsp_store_load_hist(st, run, ex[k].step, ex[k].op,
						     FSP_LAYER_EMU, h, NULL, NULL), 1);
		assert_int_equal(h->sum, ex[k].sum_emu);
		assert_int_equal(h->count, ex[k].n);
		assert_int_equal(fsp_store_load_hist(st, run, ex[k].step, ex[k].op,
						     FSP_LAYER_LAYER, h, NULL, NULL), 1);
		assert_int_equal(h->sum, ex[k].sum_layer);
		assert_int_equal(h->count, ex[k].n);
	}
	free(ex);
	free(h);
}

UNIT_TEST(test_mode_parse)
{
	enum fsp_record_mode m;
	unsigned n = 0;
	assert_int_equal(fsp_record_mode_parse("full", &m, &n), 0);
	assert_int_equal(m, FSP_RECORD_FULL);
	assert_int_equal(fsp_record_mode_parse("hist", &m, &n), 0);
	assert_int_equal(m, FSP_RECORD_HIST);
	assert_int_equal(fsp_record_mode_parse("off", &m, &n), 0);
	assert_int_equal(m, FSP_RECORD_OFF);
	assert_int_equal(fsp_record_mode_parse("sample:10", &m, &n), 0);
	assert_int_equal(m, FSP_RECORD_SAMPLE);
	assert_int_equal(n, 10);
	assert_int_equal(fsp_record_mode_parse("sample:1", &m, &n), 0);
	assert_int_equal(n, 1);
	const char *bad[] = { "", "Full", "sample", "sample:", "sample:0", "sample:-3",
			      "sample:1x", "sample: 5", "sample:99999999999", "hist ", NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_equal(fsp_record_mode_parse(bad[i], &m, &n), -1);
	assert_int_equal(fsp_record_mode_parse(NULL, &m, &n), -1);
}

#define FULL_N 20000
static uint64_t count_full(unsigned t) { return FULL_N; }

UNIT_TEST_SETUP(test_full_16_threads, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = open_store("full.db", &run);
	/* ring > records per thread: nothing can be dropped however slow the writer */
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 32768);
	assert_non_null(log);
	/* reserved contexts are adopted by the producers, not added to */
	assert_int_equal(fsp_oplog_reserve(log, 12), 0);
	assert_int_equal(fsp_oplog_contexts(log), 12);
	run_producers(log, 16, count_full);
	assert_int_equal(fsp_oplog_contexts(log), 16);
	/* rows go to SQLite at close, never while operations are measured */
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
	assert_int_equal(fsp_oplog_close(log), 0);
	/* the spill file is removed at close: only the database remains */
	assert_int_equal(count_non_db_files(), 0);

	const uint64_t total = 16ull * FULL_N;
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE run=%lld", (long long)run), total);
	assert_int_equal(q_int(st, "SELECT count(DISTINCT node * 1000000 + offset) FROM ops"), total);
	/* sum over threads of 0..N-1, and of thread ids */
	assert_int_equal(q_int(st, "SELECT sum(offset) FROM ops"),
			 16ull * FULL_N * (FULL_N - 1) / 2);
	assert_int_equal(q_int(st, "SELECT sum(node) FROM ops"), FULL_N * (15ull * 16 / 2));
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE layer_ns !="
			       " max(total_ns - backing_ns - emu_ns, 0)"), 0);
	assert_true(q_int(st, "SELECT count(*) FROM ops WHERE layer_ns = 0 AND emu_ns > 0") > 0);
	/* device rows carry their cause; user rows have none */
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE op < %d AND cause_ns != 0",
			       FSP_OP_DEV_READ), 0);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE op >= %d AND cause_ns != "
			       "(CASE WHEN offset %% 4 != 0 THEN offset - 1 ELSE 0 END)",
			       FSP_OP_DEV_READ), 0);
	assert_int_equal(q_int(st, "SELECT count(DISTINCT op) FROM ops"), NREC_OPS);
	for (unsigned t = 0; t < 16; t++)
		assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE node=%u AND step=%d",
				       t, t % 4 == 3 ? 60000 + t : 0), FULL_N);
	assert_int_equal(q_int(st, "SELECT recorded FROM runs WHERE id=%lld", (long long)run), total);
	assert_int_equal(q_int(st, "SELECT dropped FROM runs WHERE id=%lld", (long long)run), 0);
	assert_true(q_int(st, "SELECT ended_ns FROM runs WHERE id=%lld", (long long)run) > 0);
	/* indexes were built after capture */
	assert_int_equal(q_int(st, "SELECT count(*) FROM sqlite_master WHERE name='ops_run_op'"), 1);
	check_hists(st, run, 16, count_full);
	fsp_store_close(st);
}

#define TINY_N 50000
static uint64_t count_tiny(unsigned t) { return TINY_N; }

UNIT_TEST_SETUP(test_tiny_ring_drops_counted, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = open_store("tiny.db", &run);
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 4);
	assert_non_null(log);
	run_producers(log, 8, count_tiny);
	uint64_t dropped_before_close = fsp_oplog_dropped(log);
	assert_int_equal(fsp_oplog_close(log), 0);

	const uint64_t added = 8ull * TINY_N;
	int64_t rows = q_int(st, "SELECT count(*) FROM ops WHERE run=%lld", (long long)run);
	int64_t recorded = q_int(st, "SELECT recorded FROM runs WHERE id=%lld", (long long)run);
	int64_t dropped = q_int(st, "SELECT dropped FROM runs WHERE id=%lld", (long long)run);
	assert_int_equal(rows, recorded);
	assert_int_equal(recorded + dropped, added);
	assert_true(dropped > 0);
	assert_int_equal((uint64_t)dropped, dropped_before_close); /* producers had stopped */
	/* rows that did arrive arrived once */
	assert_int_equal(q_int(st, "SELECT count(DISTINCT node * 1000000 + offset) FROM ops"), rows);
	/* the histograms still count every op */
	check_hists(st, run, 8, count_tiny);
	fsp_store_close(st);
}

static uint64_t count_sample(unsigned t) { return 1000 + t * 13; }

UNIT_TEST_SETUP(test_sample, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = logged_run("sample.db", &run, FSP_RECORD_SAMPLE, 7, 4096, 8, count_sample);
	for (unsigned t = 0; t < 8; t++) {
		uint64_t n = count_sample(t);
		/* the 1st, 8th, 15th, ... op of each thread: ceil(n/7) rows */
		assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE node=%u", t), (n + 6) / 7);
		assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE node=%u AND offset %% 7 != 0", t), 0);
	}
	assert_int_equal(q_int(st, "SELECT dropped FROM runs"), 0);
	assert_int_equal(q_int(st, "SELECT recorded FROM runs"), q_int(st, "SELECT count(*) FROM ops"));
	check_hists(st, run, 8, count_sample);
	fsp_store_close(st);
}

/*
 * A ring too small for the writer to keep up with: the producers count the
 * overflow in histograms of their own, so the statistics stay exact, and
 * only a record that was to be kept as a row counts as dropped.
 */
UNIT_TEST_SETUP(test_tiny_ring_hist_and_sample, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = logged_run("tiny-hist.db", &run, FSP_RECORD_HIST, 0, 4, 8, count_tiny);
	assert_int_equal(q_int(st, "SELECT dropped FROM runs WHERE id=%lld", (long long)run), 0);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
	check_hists(st, run, 8, count_tiny);
	fsp_store_close(st);

	st = logged_run("tiny-sample.db", &run, FSP_RECORD_SAMPLE, 7, 4, 8, count_tiny);
	int64_t rows = q_int(st, "SELECT count(*) FROM ops");
	int64_t dropped = q_int(st, "SELECT dropped FROM runs WHERE id=%lld", (long long)run);
	assert_int_equal(q_int(st, "SELECT recorded FROM runs WHERE id=%lld", (long long)run), rows);
	assert_int_equal(rows + dropped, 8 * ((TINY_N + 6) / 7));
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE offset %% 7 != 0"), 0);
	check_hists(st, run, 8, count_tiny);
	fsp_store_close(st);
}

/*
 * The spill file fails (it is replaced by /dev/full, every write ENOSPC):
 * close reports the error, every row counts as dropped, and the histograms
 * and the run's counts are still stored.
 */
#define FULLDEV_N 5000
static uint64_t count_fulldev(unsigned t) { return FULLDEV_N; }

UNIT_TEST_SETUP(test_spill_fails_counted, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = open_store("spill-full.db", &run);
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 1 << 14);
	assert_non_null(log);
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	assert_true(full >= 0);
	assert_true(fsp_oplog_spill_fd(log) >= 0);
	assert_int_equal(dup2(full, fsp_oplog_spill_fd(log)), fsp_oplog_spill_fd(log));
	close(full);
	run_producers(log, 4, count_fulldev);
	assert_int_equal(fsp_oplog_close(log), -1);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
	assert_int_equal(q_int(st, "SELECT recorded FROM runs WHERE id=%lld", (long long)run), 0);
	assert_int_equal(q_int(st, "SELECT dropped FROM runs WHERE id=%lld", (long long)run),
			 4 * FULLDEV_N);
	check_hists(st, run, 4, count_fulldev);
	fsp_store_close(st);
}

static uint64_t count_hist(unsigned t) { return 3000 + t; }

UNIT_TEST_SETUP(test_hist_only, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = logged_run("hist.db", &run, FSP_RECORD_HIST, 0, 0, 6, count_hist);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
	assert_int_equal(q_int(st, "SELECT recorded FROM runs"), 0);
	assert_int_equal(q_int(st, "SELECT dropped FROM runs"), 0);
	check_hists(st, run, 6, count_hist);
	fsp_store_close(st);
}

UNIT_TEST_SETUP(test_off, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = open_store("off.db", &run);
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_OFF, 0, 0);
	assert_non_null(log);
	run_producers(log, 4, count_hist);
	assert_int_equal(fsp_oplog_contexts(log), 0); /* nothing at all was done */
	assert_int_equal(fsp_oplog_close(log), 0);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
	assert_int_equal(q_int(st, "SELECT count(*) FROM hist"), 0);
	assert_true(q_int(st, "SELECT ended_ns FROM runs") > 0);
	fsp_store_close(st);
}

static uint64_t count_short(unsigned t) { return 1000; }

UNIT_TEST_SETUP(test_orphans_adopted, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = open_store("orphans.db", &run);
	/* the ring holds all 100 threads' records: none may be lost */
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 1 << 17);
	assert_non_null(log);
	for (unsigned t = 0; t < 100; t++) {
		pthread_t tid;
		struct producer p = { log, t, count_short(t), NULL };
		assert_int_equal(pthread_create(&tid, NULL, produce, &p), 0);
		pthread_join(tid, NULL);
	}
	/* each thread exited before the next started: one context, reused */
	assert_int_equal(fsp_oplog_contexts(log), 1);
	assert_int_equal(fsp_oplog_close(log), 0);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 100000);
	assert_int_equal(q_int(st, "SELECT count(DISTINCT node * 1000000 + offset) FROM ops"), 100000);
	assert_int_equal(q_int(st, "SELECT dropped FROM runs"), 0);
	check_hists(st, run, 100, count_short);
	fsp_store_close(st);
}

/* One thread feeding two logs at once (the per-thread context cache). */
struct two_logs {
	struct fsp_oplog *a, *b;
	unsigned thread;
	pthread_barrier_t *all_registered;
};

static void *produce_two(void *arg)
{
	struct two_logs *p = arg;
	struct fsp_rec r;
	for (uint64_t i = 0; i < 5000; i++) {
		make_rec(&r, p->thread, i);
		fsp_oplog_add(i % 2 ? p->b : p->a, &r);
	}
	pthread_barrier_wait(p->all_registered);
	return NULL;
}

UNIT_TEST_SETUP(test_two_logs, setup, teardown)
{
	int64_t run_a, run_b;
	struct fsp_store *sa = open_store("a.db", &run_a), *sb = open_store("b.db", &run_b);
	struct two_logs p[4];
	pthread_t tid[4];
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, 4);
	struct fsp_oplog *a = fsp_oplog_open(sa, run_a, FSP_RECORD_FULL, 0, 8192);
	struct fsp_oplog *b = fsp_oplog_open(sb, run_b, FSP_RECORD_FULL, 0, 8192);
	assert_non_null(a);
	assert_non_null(b);
	for (unsigned t = 0; t < 4; t++) {
		p[t] = (struct two_logs){ a, b, t, &barrier };
		assert_int_equal(pthread_create(&tid[t], NULL, produce_two, &p[t]), 0);
	}
	for (unsigned t = 0; t < 4; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&barrier);
	assert_int_equal(fsp_oplog_contexts(a), 4);
	assert_int_equal(fsp_oplog_contexts(b), 4);
	assert_int_equal(fsp_oplog_close(a), 0);
	assert_int_equal(fsp_oplog_close(b), 0);
	assert_int_equal(q_int(sa, "SELECT count(*) FROM ops WHERE offset %% 2 = 0"), 4 * 2500);
	assert_int_equal(q_int(sa, "SELECT count(*) FROM ops WHERE offset %% 2 = 1"), 0);
	assert_int_equal(q_int(sb, "SELECT count(*) FROM ops WHERE offset %% 2 = 1"), 4 * 2500);
	assert_int_equal(q_int(sb, "SELECT sum(count) FROM hist WHERE layer=0"), 4 * 2500);
	fsp_store_close(sa);
	fsp_store_close(sb);
}

/*
 * The four layers of hand-made records, exactly, in full and hist mode;
 * device records join the user operation that caused them on
 * (pid, start_ns = cause_ns), as docs/schema.md says.
 */
UNIT_TEST_SETUP(test_layers_and_device_records, setup, teardown)
{
	static const struct fsp_rec recs[] = {
		/* a write: 1000 = 300 backing + 200 emu + 500 layer */
		{ .start_ns = 1000, .total_ns = 1000, .backing_ns = 300, .emu_ns = 200,
		  .pid = 7, .op = FSP_OP_WRITE, .bytes = 4096, .length = 4096 },
		/* an fsync whose measured parts exceed the whole: layer 0 */
		{ .start_ns = 5000, .total_ns = 1000, .backing_ns = 800, .emu_ns = 500,
		  .pid = 7, .op = FSP_OP_FSYNC },
		/* the device IO they caused, and one background checkpoint */
		{ .start_ns = 1100, .total_ns = 300, .backing_ns = 300, .pid = 7,
		  .op = FSP_OP_DEV_WRITE_DATA, .offset = 1ull << 30, .length = 4096,
		  .bytes = 4096, .cause_ns = 1000 },
		{ .start_ns = 5100, .total_ns = 400, .backing_ns = 400, .pid = 7,
		  .op = FSP_OP_DEV_WRITE_JOURNAL, .offset = 8192, .length = 8192,
		  .bytes = 8192, .cause_ns = 5000 },
		{ .start_ns = 5600, .total_ns = 90, .backing_ns = 60, .emu_ns = 10, .pid = 7,
		  .op = FSP_OP_DEV_FLUSH, .cause_ns = 5000 },
		{ .start_ns = 9000, .total_ns = 50, .backing_ns = 50, .pid = 0,
		  .op = FSP_OP_DEV_WRITE_CKPT, .offset = 4096, .length = 4096, .bytes = 4096 },
	};
	/* per record: { total, backing, emu, layer } */
	static const uint64_t want[][FSP_LAYER__COUNT] = {
		[0] = { [FSP_LAYER_TOTAL] = 1000, [FSP_LAYER_BACKING] = 300,
			[FSP_LAYER_EMU] = 200, [FSP_LAYER_LAYER] = 500 },
		[1] = { [FSP_LAYER_TOTAL] = 1000, [FSP_LAYER_BACKING] = 800,
			[FSP_LAYER_EMU] = 500, [FSP_LAYER_LAYER] = 0 },
		[2] = { [FSP_LAYER_TOTAL] = 300, [FSP_LAYER_BACKING] = 300 },
		[3] = { [FSP_LAYER_TOTAL] = 400, [FSP_LAYER_BACKING] = 400 },
		[4] = { [FSP_LAYER_TOTAL] = 90, [FSP_LAYER_BACKING] = 60,
			[FSP_LAYER_EMU] = 10, [FSP_LAYER_LAYER] = 20 },
		[5] = { [FSP_LAYER_TOTAL] = 50, [FSP_LAYER_BACKING] = 50 },
	};
	const size_t n = sizeof(recs) / sizeof(recs[0]);
	const enum fsp_record_mode modes[2] = { FSP_RECORD_FULL, FSP_RECORD_HIST };
	struct fsp_hist *h = malloc(sizeof(*h));

	for (int m = 0; m < 2; m++) {
		int64_t run;
		struct fsp_store *st = open_store(m ? "dev-hist.db" : "dev-full.db", &run);
		struct fsp_oplog *log = fsp_oplog_open(st, run, modes[m], 0, 64);
		assert_non_null(log);
		for (size_t i = 0; i < n; i++)
			fsp_oplog_add(log, &recs[i]);
		assert_int_equal(fsp_oplog_close(log), 0);

		/* each record is alone in its (step, op): min = max = sum = the value */
		for (size_t i = 0; i < n; i++) {
			for (int l = 0; l < FSP_LAYER__COUNT; l++) {
				uint64_t bytes, errors;
				assert_int_equal(fsp_store_load_hist(st, run, 0, recs[i].op, l, h,
								     &bytes, &errors), 1);
				assert_int_equal(h->count, 1);
				assert_int_equal(h->sum, want[i][l]);
				assert_int_equal(h->min, want[i][l]);
				assert_int_equal(h->max, want[i][l]);
				assert_int_equal(bytes, recs[i].bytes);
			}
		}
		assert_int_equal(q_int(st, "SELECT count(*) FROM hist"), n * FSP_LAYER__COUNT);
		if (modes[m] == FSP_RECORD_HIST) {
			assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
			fsp_store_close(st);
			continue;
		}
		/* the rows: the same layers, and the causes */
		assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(q_int(st, "SELECT layer_ns FROM ops WHERE op=%d", recs[i].op),
					 want[i][FSP_LAYER_LAYER]);
			assert_int_equal(q_int(st, "SELECT emu_ns FROM ops WHERE op=%d", recs[i].op),
					 want[i][FSP_LAYER_EMU]);
			assert_int_equal(q_int(st, "SELECT cause_ns FROM ops WHERE op=%d", recs[i].op),
					 recs[i].cause_ns);
			assert_int_equal(q_int(st, "SELECT offset FROM ops WHERE op=%d", recs[i].op),
					 recs[i].offset);
		}
		const char *join =
			"SELECT count(*) FROM ops d JOIN ops u ON u.run = d.run AND u.pid = d.pid"
			" AND u.start_ns = d.cause_ns WHERE d.op >= %d AND u.op = %d";
		assert_int_equal(q_int(st, join, FSP_OP_DEV_READ, FSP_OP_WRITE), 1);
		assert_int_equal(q_int(st, join, FSP_OP_DEV_READ, FSP_OP_FSYNC), 2);
		assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE op >= %d AND cause_ns = 0",
				       FSP_OP_DEV_READ), 1);
		fsp_store_close(st);
	}
	free(h);
}

/* ---- a process that dies with its log open ---- */

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/*
 * A child process logs `bursts` bursts of `per_burst` records into a new
 * database `name` (run 1), pause_ms after each so that each becomes a frame
 * of its own, then waits end_ms and dies without closing the log (as kill
 * -9 would).
 */
/* lookups answering ENOENT that crash_child adds to its first burst */
static unsigned crash_expected;

static void crash_child(const char *name, enum fsp_record_mode mode, unsigned bursts,
			unsigned per_burst, long pause_ms, long end_ms)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[128], err[512];
		snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
		struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
		struct fsp_run_info info = { .kind = "run", .record_mode = "test" };
		int64_t run = st ? fsp_store_begin_run(st, &info) : -1;
		struct fsp_oplog *log = run > 0 ? fsp_oplog_open(st, run, mode, 0, 1 << 14) : NULL;
		if (!log)
			_exit(1);
		uint64_t seq = 0;
		for (unsigned b = 0; b < bursts; b++) {
			for (unsigned i = 0; i < per_burst; i++) {
				struct fsp_rec r;
				make_rec(&r, 0, seq++);
				fsp_oplog_add(log, &r);
			}
			for (unsigned i = 0; b == 0 && i < crash_expected; i++) {
				struct fsp_rec r;
				make_rec(&r, 0, seq++);
				r.op = FSP_OP_LOOKUP;
				r.result = ENOENT;
				fsp_oplog_add(log, &r);
			}
			sleep_ms(pause_ms);
		}
		sleep_ms(end_ms);
		_exit(0);
	}
	int wst;
	assert_int_equal(waitpid(pid, &wst, 0), pid);
	assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
}

static void spill_path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s-fsprism-spill-1", tmpdir, name);
}

static char *q_text(struct fsp_store *st, const char *sql)
{
	/* a connection of the test's own on the store's file, as q_int */
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open_v2(fsp_store_filename(st), &db, SQLITE_OPEN_READWRITE,
					 NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	sqlite3_stmt *s;
	char *v = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		v = strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static void assert_attr(struct fsp_store *st, const char *key, const char *want)
{
	char sql[160];
	snprintf(sql, sizeof(sql), "SELECT value FROM run_attrs WHERE run=1 AND key='%s'", key);
	char *v = q_text(st, sql);
	assert_non_null(v);
	assert_string_equal(v, want);
	free(v);
}

static struct fsp_store *reopen(const char *name)
{
	char path[128], err[512];
	test_dir_path(path, sizeof(path), tmpdir, name);
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	if (!st)
		fail_msg("%s", err);
	return st;
}

/* The killed run's rows, up to a torn last frame, are stored at the next
 * open; once (the spill is gone); the histograms are the checkpoint's (a
 * second in: two bursts) plus the rows after it; the run says it crashed. */
UNIT_TEST_SETUP(test_crash_recovered_torn_tail, setup, teardown)
{
	char sp[160], ck[176];
	crash_child("crash.db", FSP_RECORD_FULL, 3, 1000, 600, 50);
	spill_path(sp, sizeof(sp), "crash.db");
	snprintf(ck, sizeof(ck), "%s-hist", sp);
	struct stat sb;
	assert_int_equal(stat(sp, &sb), 0);
	assert_int_equal(stat(ck, &sb), 0);
	/* a frame cut short, as a crash in the middle of its write leaves it */
	int fd = open(sp, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	char torn[64 + 200];
	memset(torn, 0x5a, sizeof(torn));
	uint32_t magic = 0x46525046u, len = (uint32_t)sizeof(struct fsp_rec) * 100;
	memcpy(torn, &magic, 4);
	memcpy(torn + 8, &len, 4);
	assert_int_equal(write(fd, torn, sizeof(torn)), (ssize_t)sizeof(torn));
	close(fd);

	struct fsp_store *st = reopen("crash.db");
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE run=1"), 3000);
	assert_int_equal(q_int(st, "SELECT count(DISTINCT offset) FROM ops WHERE run=1"), 3000);
	assert_int_equal(q_int(st, "SELECT recorded FROM runs WHERE id=1"), 3000);
	assert_int_equal(q_int(st, "SELECT ended_at IS NOT NULL FROM runs WHERE id=1"), 1);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist WHERE run=1 AND layer=0"), 3000);
	assert_attr(st, "run.end", "crashed");
	assert_attr(st, "records.seen", "3000");
	assert_attr(st, "records.lost", "unknown"); /* all seen were stored: none known lost */
	assert_int_equal(stat(sp, &sb), -1);
	assert_int_equal(stat(ck, &sb), -1);
	fsp_store_close(st);
	st = reopen("crash.db");
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE run=1"), 3000);
	fsp_store_close(st);
}

/* A damaged frame in the middle: the rows before it are stored, none after. */
UNIT_TEST_SETUP(test_crash_damaged_frame, setup, teardown)
{
	char sp[160];
	crash_child("damaged.db", FSP_RECORD_FULL, 3, 1000, 60, 50);
	spill_path(sp, sizeof(sp), "damaged.db");
	int fd = open(sp, O_RDWR);
	assert_true(fd >= 0);
	uint32_t len1;
	assert_int_equal(pread(fd, &len1, 4, 256 + 8), 4); /* header, then frame 1 */
	assert_true(len1 > 0 && len1 % sizeof(struct fsp_rec) == 0);
	char b = 0;
	off_t in2 = 256 + 64 + (off_t)len1 + 64 + 7; /* inside frame 2's payload */
	assert_int_equal(pread(fd, &b, 1, in2), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, in2), 1);
	close(fd);

	struct fsp_store *st = reopen("damaged.db");
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE run=1"), len1 / (uint32_t)sizeof(struct fsp_rec));
	assert_int_equal(q_int(st, "SELECT max(offset) FROM ops WHERE run=1"), len1 / (uint32_t)sizeof(struct fsp_rec) - 1);
	assert_attr(st, "run.end", "crashed");
	fsp_store_close(st);
}

/*
 * Rewrite a spill file (or its checkpoint, rows 0) of this build into the
 * format of a build whose records were FSP_REC_V1_LEN bytes (before
 * fuse_unique and recv_ns): header rec_len and CRC, each row frame's rows
 * cut to their first 80 bytes, its length and CRC.
 */
static void spill_to_v1(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char head[256];
	assert_int_equal(fread(head, 1, sizeof(head), f), sizeof(head));
	uint32_t v1 = FSP_REC_V1_LEN, crc;
	memcpy(head + 20, &v1, 4);
	crc = (uint32_t)crc32(0L, head, 252);
	memcpy(head + 252, &crc, 4);
	char tmp[200];
	snprintf(tmp, sizeof(tmp), "%s.v1", path);
	FILE *o = fopen(tmp, "wb");
	assert_non_null(o);
	fwrite(head, 1, sizeof(head), o);
	unsigned char fh[64];
	while (fread(fh, 1, sizeof(fh), f) == sizeof(fh)) {
		uint32_t len;
		uint16_t type;
		memcpy(&len, fh + 8, 4);
		memcpy(&type, fh + 4, 2);
		unsigned char *pl = malloc(len ? len : 1);
		assert_non_null(pl);
		assert_int_equal(fread(pl, 1, len, f), len);
		if (type == 1) { /* rows */
			size_t n = len / sizeof(struct fsp_rec);
			for (size_t i = 0; i < n; i++)
				memmove(pl + i * FSP_REC_V1_LEN, pl + i * sizeof(struct fsp_rec),
					FSP_REC_V1_LEN);
			len = (uint32_t)(n * FSP_REC_V1_LEN);
			memcpy(fh + 8, &len, 4);
		}
		memset(fh + 12, 0, 4);
		uLong c = crc32(0L, fh, sizeof(fh));
		crc = (uint32_t)crc32(c, pl, len);
		memcpy(fh + 12, &crc, 4);
		fwrite(fh, 1, sizeof(fh), o);
		fwrite(pl, 1, len, o);
		free(pl);
	}
	fclose(f);
	fclose(o);
	assert_int_equal(rename(tmp, path), 0);
}

/* A spill file an older build left (80-byte rows): recovered, each row as
 * it was written, its FUSE identity unknown (0); never misread. */
UNIT_TEST_SETUP(test_crash_old_spill, setup, teardown)
{
	(void)state;
	char sp[160], ck[176];
	crash_child("old.db", FSP_RECORD_FULL, 3, 1000, 60, 1300);
	spill_path(sp, sizeof(sp), "old.db");
	snprintf(ck, sizeof(ck), "%s-hist", sp);
	spill_to_v1(sp);
	struct stat sb;
	if (stat(ck, &sb) == 0)
		spill_to_v1(ck);
	struct fsp_store *st = reopen("old.db");
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE run=1"), 3000);
	assert_int_equal(q_int(st, "SELECT count(DISTINCT offset) FROM ops WHERE run=1"), 3000);
	assert_int_equal(q_int(st, "SELECT max(offset) FROM ops WHERE run=1"), 2999);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops WHERE run=1 AND length=4096"
			       " AND start_ns=offset AND fuse_unique=0 AND recv_ns=0"), 3000);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist WHERE run=1 AND layer=0"), 3000);
	assert_attr(st, "run.end", "crashed");
	assert_int_equal(stat(sp, &sb), -1);
	fsp_store_close(st);
}

/* --record=hist: no rows, but the histograms of the last checkpoint. */
UNIT_TEST_SETUP(test_crash_hist_checkpoint, setup, teardown)
{
	crash_child("hist-crash.db", FSP_RECORD_HIST, 1, 500, 60, 2300);
	/* checkpoints replace each other beside the spill, which holds no rows */
	char sp[160], ck[176];
	struct stat sb;
	spill_path(sp, sizeof(sp), "hist-crash.db");
	snprintf(ck, sizeof(ck), "%s-hist", sp);
	assert_int_equal(stat(sp, &sb), 0);
	assert_int_equal(sb.st_size, 256);
	assert_int_equal(stat(ck, &sb), 0);
	struct fsp_store *st = reopen("hist-crash.db");
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 0);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist WHERE run=1 AND layer=0"), 500);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist_bins WHERE run=1 AND layer=2"), 500);
	assert_attr(st, "run.end", "crashed");
	assert_attr(st, "records.seen", "500");
	assert_int_equal(stat(sp, &sb), -1);
	assert_int_equal(stat(ck, &sb), -1);
	fsp_store_close(st);
}

/*
 * Rewrite a checkpoint of this build into an older build's (frame type 2,
 * entries without the expected count): what a crash under that build left.
 */
static void ckpt_to_v1(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char head[256], fh[64];
	assert_int_equal(fread(head, 1, sizeof(head), f), sizeof(head));
	assert_int_equal(fread(fh, 1, sizeof(fh), f), sizeof(fh));
	uint32_t len;
	memcpy(&len, fh + 8, 4);
	unsigned char *pl = malloc(len ? len : 1), *out = malloc(len ? len : 1);
	assert_non_null(pl);
	assert_non_null(out);
	assert_int_equal(fread(pl, 1, len, f), len);
	fclose(f);
	size_t at = 0, n = 0;
	while (at < len) {
		memcpy(out + n, pl + at, 24); /* step, op, bytes, errors */
		n += 24;
		at += 32;
		for (int l = 0; l < FSP_LAYER__COUNT; l++) {
			uint32_t nbins;
			memcpy(&nbins, pl + at + 32, 4);
			size_t part = 40 + (size_t)nbins * 16;
			memcpy(out + n, pl + at, part);
			n += part;
			at += part;
		}
	}
	uint16_t type = 2;
	uint32_t nl = (uint32_t)n, crc = 0;
	memcpy(fh + 4, &type, 2);
	memcpy(fh + 8, &nl, 4);
	memcpy(fh + 12, &crc, 4);
	crc = (uint32_t)crc32(crc32(0L, fh, sizeof(fh)), out, nl);
	memcpy(fh + 12, &crc, 4);
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(head, 1, sizeof(head), f);
	fwrite(fh, 1, sizeof(fh), f);
	fwrite(out, 1, n, f);
	fclose(f);
	free(pl);
	free(out);
}

/* Expected replies (lookup ENOENT) are counted apart from the errors, also
 * through a checkpoint; an older build's checkpoint is read as such: its
 * histograms, its errors, nothing expected. */
UNIT_TEST_SETUP(test_crash_expected_checkpoint, setup, teardown)
{
	(void)state;
	char sp[160], ck[176];
	struct stat sb;
	crash_expected = 7;
	crash_child("exp-crash.db", FSP_RECORD_HIST, 1, 500, 60, 2300);
	crash_child("exp-old.db", FSP_RECORD_HIST, 1, 500, 60, 2300);
	crash_expected = 0;
	spill_path(sp, sizeof(sp), "exp-old.db");
	snprintf(ck, sizeof(ck), "%s-hist", sp);
	assert_int_equal(stat(ck, &sb), 0);
	ckpt_to_v1(ck);

	struct fsp_store *st = reopen("exp-crash.db");
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist WHERE run=1 AND layer=0"), 507);
	/* seq 0, 101, ... 404 are the EIO replies; the 7 lookups are expected */
	assert_int_equal(q_int(st, "SELECT sum(errors) FROM hist WHERE run=1 AND layer=0"), 5);
	assert_int_equal(q_int(st, "SELECT sum(expected) FROM hist WHERE run=1 AND layer=0"), 7);
	assert_int_equal(q_int(st, "SELECT expected FROM hist WHERE run=1 AND layer=0 AND op=%d",
			       FSP_OP_LOOKUP), 7);
	fsp_store_close(st);

	st = reopen("exp-old.db");
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist WHERE run=1 AND layer=0"), 507);
	assert_int_equal(q_int(st, "SELECT sum(count) FROM hist_bins WHERE run=1 AND layer=2"), 507);
	assert_int_equal(q_int(st, "SELECT sum(errors) FROM hist WHERE run=1 AND layer=0"), 5);
	assert_int_equal(q_int(st, "SELECT sum(expected) FROM hist WHERE run=1 AND layer=0"), 0);
	assert_attr(st, "run.end", "crashed");
	fsp_store_close(st);
}

/* The spill of a log that is still open is not touched by another open. */
UNIT_TEST_SETUP(test_live_spill_left_alone, setup, teardown)
{
	int64_t run;
	struct fsp_store *st = open_store("live.db", &run);
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 1 << 14);
	assert_non_null(log);
	struct fsp_rec r;
	for (uint64_t i = 0; i < 2000; i++) {
		make_rec(&r, 0, i);
		fsp_oplog_add(log, &r);
	}
	sleep_ms(60);
	struct fsp_store *other = reopen("live.db");
	assert_int_equal(q_int(other, "SELECT count(*) FROM ops"), 0);
	assert_int_equal(q_int(other, "SELECT count(*) FROM run_attrs WHERE key='run.end'"), 0);
	fsp_store_close(other);
	char sp[160];
	struct stat sb;
	spill_path(sp, sizeof(sp), "live.db");
	assert_int_equal(stat(sp, &sb), 0);
	assert_int_equal(fsp_oplog_close(log), 0);
	assert_int_equal(q_int(st, "SELECT count(*) FROM ops"), 2000);
	assert_int_equal(stat(sp, &sb), -1); /* a clean close removes it */
	fsp_store_close(st);
}

/*
 * test_rate.c - the open-loop rate control (bench/engine/rate.h) and the
 * engine's rate steps: the arrival schedule (uniform exact, Poisson's mean
 * and spread, seeded), the lag bookkeeping, and on a RAM-backed file
 * (tmpfs in /dev/shm, where the kernel takes O_DIRECT) the achieved rate
 * within 1% of the asked one at 100/s .. 100k/s, and each IO's latency
 * from its intended time: the service time plus the lag, equal to the
 * service time when nothing held the IO back, far above it when the
 * device cannot keep up (coordinated omission).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench/engine/engine.h"
#include "bench/engine/rate.h"
#include "bench/engine/profile.h"
#include "src/db/oplog.h"
#include "src/db/store.h"
#include "tests/testdb.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static double fabs_test(double x)
{
	return x < 0 ? -x : x;
}

/* ---- the schedule --------------------------------------------------------------- */

UNIT_TEST(uniform_schedule_is_exact)
{
	(void)state;
	struct fsp_rate_sched s;
	fsp_rate_init(&s, 1000, FSP_ARRIVALS_UNIFORM, 1, 5000);
	for (uint64_t i = 0; i < 100000; i++)
		assert_int_equal(fsp_rate_take(&s), 5000 + i * 1000000ull);
	/* a period that is no whole number of ns: from the start, no drift */
	fsp_rate_init(&s, 3, FSP_ARRIVALS_UNIFORM, 1, 0);
	uint64_t t = 0;
	for (int i = 0; i < 3001; i++)
		t = fsp_rate_take(&s);
	assert_true(t >= 999999999000ull && t <= 1000000000000ull); /* IO 3000 at 1000 s */
	/* peek does not consume */
	fsp_rate_init(&s, 100, FSP_ARRIVALS_UNIFORM, 1, 7);
	assert_int_equal(fsp_rate_peek(&s), 7);
	assert_int_equal(fsp_rate_peek(&s), 7);
	assert_int_equal(fsp_rate_take(&s), 7);
	assert_int_equal(fsp_rate_peek(&s), 7 + 10000000ull);
}

UNIT_TEST(neg_ln_without_libm)
{
	(void)state;
	/* u = 0.5 (+1.2e-10): ln 2; u = 2^-33: 33 ln 2; u near 1: near 0 */
	assert_true(fabs_test(fsp_rate_neg_ln(1u << 31) - 0.6931471803) < 1e-8);
	assert_true(fabs_test(fsp_rate_neg_ln(0) - 33 * 0.6931471805599453) < 1e-8);
	double top = fsp_rate_neg_ln(0xffffffffu);
	assert_true(top > 0 && top < 2e-10);
	/* u = 0.25: 2 ln 2; u = 0.75 (x = 3 * 2^30): ln(4/3) */
	assert_true(fabs_test(fsp_rate_neg_ln(1u << 30) - 1.3862943607) < 1e-8);
	assert_true(fabs_test(fsp_rate_neg_ln(3u << 30) - 0.2876820724) < 1e-8);
}

UNIT_TEST(poisson_mean_spread_and_seed)
{
	(void)state;
	const double rate = 10000; /* mean gap 100 us */
	const int n = 200000;
	struct fsp_rate_sched s;
	fsp_rate_init(&s, rate, FSP_ARRIVALS_POISSON, 42, 0);
	uint64_t prev = fsp_rate_take(&s);
	assert_int_equal(prev, 0); /* IO 0 at the start */
	double sum = 0, sum2 = 0;
	int zero_gaps = 0;
	for (int i = 0; i < n; i++) {
		uint64_t t = fsp_rate_take(&s);
		assert_true(t >= prev);
		double g = (double)(t - prev);
		sum += g;
		sum2 += g * g;
		zero_gaps += t == prev;
		prev = t;
	}
	double mean = sum / n, var = sum2 / n - mean * mean;
	/* the sample mean's sd is mean / sqrt(n) = 0.22%: 1.5% is 6.7 sd */
	assert_true(mean > 100000 * 0.985 && mean < 100000 * 1.015);
	/* an exponential's sd equals its mean (uniform gaps would give 0) */
	double cv2 = var / (mean * mean);
	assert_true(cv2 > 0.95 && cv2 < 1.05);
	assert_true(zero_gaps < n / 1000);

	/* seeded: the same seed the same times, another seed others */
	struct fsp_rate_sched a, b, c;
	fsp_rate_init(&a, 5000, FSP_ARRIVALS_POISSON, 7, 100);
	fsp_rate_init(&b, 5000, FSP_ARRIVALS_POISSON, 7, 100);
	fsp_rate_init(&c, 5000, FSP_ARRIVALS_POISSON, 8, 100);
	int differ = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t ta = fsp_rate_take(&a), tb = fsp_rate_take(&b), tc = fsp_rate_take(&c);
		assert_int_equal(ta, tb);
		differ += ta != tc;
	}
	assert_true(differ > 990);
}

UNIT_TEST(lag_bookkeeping)
{
	(void)state;
	struct fsp_rate_book *b = malloc(sizeof(*b));
	assert_non_null(b);
	fsp_rate_book_init(b, 1000000);
	assert_int_equal(fsp_rate_book_note(b, 100, 100), 0);
	assert_int_equal(fsp_rate_book_note(b, 100, 600), 500);
	assert_int_equal(fsp_rate_book_note(b, 100, 1000100), 1000000); /* not more than the bound */
	assert_int_equal(fsp_rate_book_note(b, 100, 1000101), 1000001); /* late */
	assert_int_equal(fsp_rate_book_note(b, 900, 800), 0);           /* early counts as 0 */
	assert_int_equal(b->ios, 5);
	assert_int_equal(b->late, 1);
	assert_int_equal(b->lag.max, 1000001);
	assert_int_equal(b->lag.count, 5);
	assert_int_equal(fsp_hist_quantile(&b->lag, 0.5), 500);
	assert_int_equal(fsp_rate_achieved(1000, 500000000), 2000);
	assert_true(fsp_rate_achieved(5, 0) == 0);
	free(b);
}

/* ---- the parameters and the curve profiles --------------------------------------- */

UNIT_TEST(rate_parameters_and_curve_profiles)
{
	(void)state;
	struct fsp_params p;
	char err[256], buf[256];
	assert_int_equal(fsp_profile_load("sustained-randread", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(p.nrate, 1);
	assert_int_equal(p.rates[0].kind, FSP_RATE_MAX);
	assert_int_equal(fsp_params_nsteps(&p), 6);
	assert_int_equal(fsp_param_set(&p, "rate", "max,25%,5000", err, sizeof(err)), 0);
	assert_int_equal(p.nrate, 3);
	assert_int_equal(p.rates[1].kind, FSP_RATE_PCT);
	assert_int_equal(p.rates[1].value, 25);
	assert_int_equal(p.rates[2].kind, FSP_RATE_IOPS);
	assert_int_equal(p.rates[2].value, 5000);
	assert_int_equal(fsp_params_nsteps(&p), 18); /* qd x mix x rate */
	fsp_param_format(&p, "rate", buf, sizeof(buf));
	assert_string_equal(buf, "max,25%,5000");
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), 0);
	static const char *const bad[] = { "fast", "0", "10%%", "1001%", "10000001", "max,", "5k" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fsp_param_set(&p, "rate", bad[i], err, sizeof(err)), -1);
	/* a percentage needs a closed-loop step before it */
	assert_int_equal(fsp_param_set(&p, "rate", "50%,max", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "needs a closed-loop step (max) before it"));
	/* not with bursts */
	assert_int_equal(fsp_profile_load("burst-randread", FSP_SCALE_DEFAULT, &p), 0);
	assert_int_equal(fsp_param_set(&p, "rate", "1000", err, sizeof(err)), 0);
	assert_int_equal(fsp_params_check(&p, err, sizeof(err)), -1);
	assert_int_equal(fsp_param_set(&p, "arrivals", "poisson", err, sizeof(err)), 0);
	assert_int_equal(p.arrivals, FSP_ARRIVALS_POISSON);
	assert_int_equal(fsp_param_set(&p, "arrivals", "bursty", err, sizeof(err)), -1);
	assert_int_equal(fsp_param_set(&p, "stop-p99", "5ms", err, sizeof(err)), 0);
	assert_int_equal(p.stop_p99_ns, 5000000);
	assert_int_equal(fsp_param_set(&p, "stop-p99", "1ns", err, sizeof(err)), -1);

	/* StorageReview's four: threads as QD (capped at 32 by default), 13 steps */
	static const struct { const char *name; uint32_t bs; unsigned qd_full, qd_default, read; } cv[] = {
		{ "curve-randread", 4096, 128, 32, 100 }, { "curve-randwrite", 4096, 64, 32, 0 },
		{ "curve-seqread", 65536, 16, 16, 100 }, { "curve-seqwrite", 65536, 8, 8, 0 },
	};
	for (unsigned i = 0; i < 4; i++)
		for (int full = 0; full < 2; full++) {
			assert_int_equal(fsp_profile_load(cv[i].name, full ? FSP_SCALE_FULL : FSP_SCALE_DEFAULT,
							  &p), 0);
			assert_int_equal(p.bs, cv[i].bs);
			assert_int_equal(p.qds[0], full ? cv[i].qd_full : cv[i].qd_default);
			assert_int_equal(p.mixes[0], cv[i].read);
			assert_int_equal(fsp_params_nsteps(&p), 13);
			fsp_param_format(&p, "rate", buf, sizeof(buf));
			assert_string_equal(buf, "max,10%,20%,30%,40%,50%,60%,70%,80%,90%,100%,110%,120%");
			assert_int_equal(p.time_ns, full ? 60000000000ull : 1000000000ull);
			assert_int_equal(fsp_params_check(&p, err, sizeof(err)), 0);
		}
}

/* ---- the engine on a RAM-backed file ------------------------------------------ */

/* What a failed test leaves is removed by its teardown (cmocka jumps out of the test). */
static char left_file[64], left_dir[64], left_db[128];

static int remove_left(void **state)
{
	(void)state;
	if (left_file[0])
		unlink(left_file);
	if (left_db[0])
		fsp_store_remove_files(left_db);
	if (left_dir[0])
		test_dir_remove(left_dir);
	left_file[0] = left_dir[0] = left_db[0] = 0;
	return 0;
}

/* A file of size bytes in /dev/shm opened O_DIRECT (path filled), or -1. */
static int ram_file(char *path, size_t len, uint64_t size)
{
	snprintf(path, len, "/dev/shm/fsprism-test-rate.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(left_file, sizeof(left_file), "%s", path);
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0) {
		unlink(path);
		return -1;
	}
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static struct fsp_step_spec read_spec(int fd, unsigned qd, double rate, uint64_t time_ns,
				      volatile sig_atomic_t *stop)
{
	return (struct fsp_step_spec){
		.fd = fd, .bs = 4096, .qd = qd, .read_pct = 100, .access = FSP_ACCESS_RANDOM,
		.seed = 3, .span_size = 64 << 20, .time_ns = time_ns, .duty = 100,
		.poll_ns = 1000000, .pattern = { .kind = FSP_PATTERN_RANDOM }, .stop = stop,
		.rate = rate,
	};
}

static void run_step(struct fsp_step_spec *spec, struct fsp_step_result *res)
{
	char err[256];
	if (fsp_engine_step(spec, res, err, sizeof(err)) != 0)
		fail_msg("step failed: %s", err);
}

/*
 * What depends on how this machine schedules the test (the rate held over
 * a step, IOs sent on time) is tried up to this many times, the best
 * attempt judged: CI shares two CPUs with other work that takes them for
 * milliseconds. What the engine must do exactly is checked on every attempt.
 */
#define ATTEMPTS 3

/*
 * The rate held, at 100/s .. 100k/s: every IO of the schedule sent (IOs
 * sent + unissued = asked x time, exactly), none before its time, never
 * faster than asked, and, best of ATTEMPTS, the achieved rate (IOs over
 * the time they took to send, at least the step's) within 1% of the asked
 * one with the median IO out within HELD_LAG_NS of its time: a controller
 * that fell behind fails the rate, one that sent in bunches the median.
 * The bound is 10 ms, not 1: with both CPUs busy beside it (a -j2 build),
 * the engine spinning out the gaps of a 10k/s step is time-sliced, and its
 * median IO went out 1.4 to 4.4 ms late in every attempt while the rate
 * held within 0.7%.
 */
#define HELD_LAG_NS 10000000ull
UNIT_TEST_SETUP(achieved_rate_within_one_percent, NULL, remove_left)
{
	(void)state;
	char path[64];
	int fd = ram_file(path, sizeof(path), 64 << 20);
	if (fd < 0)
		skip(); /* no O_DIRECT on /dev/shm */
	volatile sig_atomic_t stop = 0;
	struct fsp_step_result res;
	/* the device's closed-loop rate at the depth the rate steps may use */
	struct fsp_step_spec max = read_spec(fd, 16, 0, 300000000ull, &stop);
	run_step(&max, &res);
	double capacity = fsp_rate_achieved(res.read_ios, res.busy_ns);
	assert_null(res.rate); /* a closed-loop step keeps no lag book */
	fsp_step_result_free(&res);
	print_message("closed loop, QD16, 4 KiB random read on %s: %.0f IOPS\n", path, capacity);

	static const double rates[] = { 100, 1000, 10000, 100000 };
	int measured = 0;
	for (unsigned i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		double asked = rates[i];
		if (capacity < asked * 1.25) {
			print_message("SKIP %.0f/s: the device's closed-loop rate here is %.0f IOPS, "
				      "below 1.25x the asked rate\n", asked, capacity);
			continue;
		}
		uint64_t time_ns = asked <= 100 ? 2000000000ull : 1000000000ull;
		uint64_t expect_ios = (uint64_t)(asked * (double)time_ns / 1e9);
		int held = 0;
		for (int a = 1; a <= ATTEMPTS && !held; a++) {
			struct fsp_step_spec spec = read_spec(fd, 16, asked, time_ns, &stop);
			run_step(&spec, &res);
			assert_non_null(res.rate);
			double got = fsp_rate_achieved(res.read_ios, res.send_ns);
			uint64_t lag50 = fsp_hist_quantile(&res.rate->lag, 0.5);
			print_message("asked %.0f/s, attempt %d: achieved %.1f/s (%llu IOs sent in "
				      "%.4f s), lag p50 %.1f p99 %.1f max %.1f us, late %llu, "
				      "unissued %llu\n", asked, a, got,
				      (unsigned long long)res.read_ios, (double)res.send_ns / 1e9,
				      (double)lag50 / 1e3,
				      (double)fsp_hist_quantile(&res.rate->lag, 0.99) / 1e3,
				      (double)res.rate->lag.max / 1e3,
				      (unsigned long long)res.rate->late,
				      (unsigned long long)res.unissued);
			/* exactly, whatever the machine did: the schedule's IOs, each once */
			assert_int_equal(res.read_ios + res.unissued, expect_ios);
			assert_int_equal(res.rate->ios, res.read_ios);
			assert_int_equal(res.rate->lag.count, res.read_ios);
			assert_int_equal(res.rate->early, 0); /* none before its time */
			assert_true(res.send_ns >= time_ns && res.send_ns <= res.busy_ns);
			assert_true(res.busy_ns >= time_ns);
			assert_true(got <= asked); /* never faster than asked */
			/* a step short of its rate shows it, IOs late or never sent: its
			 * send ended over 1 ms past its time, after the last IO's time */
			if (got < asked * 0.999)
				assert_true(res.rate->late + res.unissued > 0);
			held = got > asked * 0.99 && lag50 < HELD_LAG_NS;
			fsp_step_result_free(&res);
		}
		if (!held)
			fail_msg("%.0f/s not held in %d attempts (achieved within 1%%, lag p50 under "
				 "%.0f us)", asked, ATTEMPTS, (double)HELD_LAG_NS / 1e3);
		measured++;
	}
	close(fd);
	unlink(path);
	assert_true(measured >= 2); /* 100/s and 1k/s are within any RAM file's reach */
}

/* One engine IO as stored: intended time, latency from it, service, lag. */
struct row {
	uint64_t start, total, service, lag;
};

struct rows {
	struct row *v;
	uint64_t n, identity_bad, lag_sum, total_sum, service_sum;
	uint64_t on_time, on_time_total, on_time_service; /* lag under ON_TIME_NS */
};

/* An IO "on time": sent within this of its intended time. */
#define ON_TIME_NS 5000ull

/* The engine's rows of run, by intended time. */
static void read_rows(const char *dbpath, int64_t run, struct rows *r)
{
	sqlite3 *db = test_db_open(dbpath);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT start_ns, total_ns, backing_ns, layer_ns FROM ops WHERE run=? "
		"ORDER BY start_ns", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, run);
	memset(r, 0, sizeof(*r));
	uint64_t cap = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct row w = { (uint64_t)sqlite3_column_int64(s, 0),
				 (uint64_t)sqlite3_column_int64(s, 1),
				 (uint64_t)sqlite3_column_int64(s, 2),
				 (uint64_t)sqlite3_column_int64(s, 3) };
		if (r->n == cap) {
			cap = cap ? 2 * cap : 1024;
			r->v = realloc(r->v, cap * sizeof(*r->v));
			assert_non_null(r->v);
		}
		r->v[r->n++] = w;
		r->identity_bad += w.total != w.service + w.lag || w.service == 0;
		r->lag_sum += w.lag;
		r->total_sum += w.total;
		r->service_sum += w.service;
		if (w.lag < ON_TIME_NS) {
			r->on_time++;
			r->on_time_total += w.total;
			r->on_time_service += w.service;
		}
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
}

/*
 * One rate step recorded with --record=full into a run of st; the exact
 * checks on its rows: one row per IO sent, the schedule's IO count, each
 * row's intended time (start_ns) the schedule's own (computed here from
 * the same rate, arrivals and seed: an IO sent early or off the schedule
 * would differ), its latency the service plus the lag to the ns, and the
 * step's histogram the latency from the intended time.
 */
static void recorded_step(struct fsp_store *st, const char *dbpath, int fd, double rate,
			  enum fsp_arrivals arrivals, uint64_t time_ns, struct rows *r,
			  uint64_t *late)
{
	volatile sig_atomic_t stop = 0;
	struct fsp_step_result res;
	struct fsp_run_info info = { .kind = "run", .options = "test", .backing_path = left_file };
	int64_t run = fsp_store_begin_run(st, &info);
	assert_true(run > 0);
	struct fsp_oplog *log = fsp_oplog_open(st, run, FSP_RECORD_FULL, 0, 0);
	assert_non_null(log);
	struct fsp_step_spec spec = read_spec(fd, 1, rate, time_ns, &stop);
	spec.arrivals = arrivals;
	spec.log = log;
	run_step(&spec, &res);
	uint64_t ios = res.read_ios, unissued = res.unissued;
	double hist_mean = fsp_hist_mean(res.read_hist);
	*late = res.rate->late;
	fsp_step_result_free(&res);
	assert_int_equal(fsp_oplog_close(log), 0);
	read_rows(dbpath, run, r);
	assert_int_equal(r->n, ios);
	assert_true(r->n > 0);
	assert_int_equal(r->identity_bad, 0);
	/* the schedule: from the first IO's intended time, the same times */
	struct fsp_rate_sched sched;
	fsp_rate_init(&sched, rate, arrivals, spec.seed, r->v[0].start);
	uint64_t off_schedule = 0;
	for (uint64_t i = 0; i < r->n; i++)
		off_schedule += r->v[i].start != fsp_rate_take(&sched);
	assert_int_equal(off_schedule, 0);
	/* all the IOs due in the step's time: sent, or counted as unissued */
	uint64_t due = r->n;
	while (fsp_rate_peek(&sched) < r->v[0].start + time_ns) {
		fsp_rate_take(&sched);
		due++;
	}
	assert_int_equal(ios + unissued, due);
	/* the step's histogram is the intended-time latency */
	double rows_mean = (double)r->total_sum / (double)r->n;
	assert_true(hist_mean > 0.99 * rows_mean && hist_mean < 1.01 * rows_mean);
}

/*
 * Each IO's latency from its intended time is its service time plus its
 * lag, row by row (recorded_step). An IO that went out on time (lag under
 * ON_TIME_NS) has its service as its latency, to within that lag; how
 * many did at 1000/s depends on how soon a sleeping thread wakes on this
 * machine: some must, best of ATTEMPTS. With QD1 asked for four times what
 * it can do, the IOs wait for the slot: most are late and their latency
 * is far above their service (coordinated omission, shown).
 */
UNIT_TEST_SETUP(latency_from_intended_time, NULL, remove_left)
{
	(void)state;
	char path[64], dir[64], dbpath[128], err[256];
	int fd = ram_file(path, sizeof(path), 64 << 20);
	if (fd < 0)
		skip();
	assert_int_equal(test_dir_make(dir, sizeof(dir), "/tmp", "rate"), 0);
	test_dir_path(dbpath, sizeof(dbpath), dir, "t.db");
	snprintf(left_dir, sizeof(left_dir), "%s", dir);
	snprintf(left_db, sizeof(left_db), "%s", dbpath);
	struct fsp_store *st = fsp_store_open(dbpath, err, sizeof(err));
	assert_non_null(st);
	volatile sig_atomic_t stop = 0;
	struct fsp_step_result res;
	struct rows r;
	uint64_t late;

	/* Poisson arrivals: the rows keep the seeded schedule too */
	recorded_step(st, dbpath, fd, 2000, FSP_ARRIVALS_POISSON, 200000000ull, &r, &late);
	print_message("poisson 2000/s: %llu IOs on the seeded schedule, %llu late\n",
		      (unsigned long long)r.n, (unsigned long long)late);
	free(r.v);

	int on_time = 0;
	for (int a = 1; a <= ATTEMPTS && !on_time; a++) {
		recorded_step(st, dbpath, fd, 1000, FSP_ARRIVALS_UNIFORM, 300000000ull, &r, &late);
		print_message("1000/s, attempt %d: %llu of %llu IOs within %.0f us of their time "
			      "(latency %.2f us = service %.2f us + lag), %llu late; all IOs: "
			      "mean lag %.1f us\n", a, (unsigned long long)r.on_time,
			      (unsigned long long)r.n, ON_TIME_NS / 1e3,
			      r.on_time ? (double)r.on_time_total / (double)r.on_time / 1e3 : 0,
			      r.on_time ? (double)r.on_time_service / (double)r.on_time / 1e3 : 0,
			      (unsigned long long)late, (double)r.lag_sum / (double)r.n / 1e3);
		/* the identity held for each (recorded_step): on time, the latency is the service */
		assert_true(r.on_time_total - r.on_time_service < r.on_time * ON_TIME_NS);
		on_time = r.on_time * 10 > r.n;
		free(r.v);
	}
	if (!on_time)
		fail_msg("at 1000/s fewer than 1 in 10 IOs went out within %.0f us of their time, "
			 "in %d attempts", ON_TIME_NS / 1e3, ATTEMPTS);

	int omitted = 0;
	for (int a = 1; a <= ATTEMPTS && !omitted; a++) {
		/* capacity at QD1, then four times it */
		struct fsp_step_spec cl = read_spec(fd, 1, 0, 200000000ull, &stop);
		run_step(&cl, &res);
		double qd1 = fsp_rate_achieved(res.read_ios, res.busy_ns);
		fsp_step_result_free(&res);
		double rate = qd1 * 4;
		recorded_step(st, dbpath, fd, rate, FSP_ARRIVALS_UNIFORM, 300000000ull, &r, &late);
		print_message("QD1 at %.0f/s (4x its %.0f IOPS), attempt %d: mean latency %.1f us "
			      "from the intended time, %.1f us service, %llu of %llu late\n", rate,
			      qd1, a, (double)r.total_sum / (double)r.n / 1e3,
			      (double)r.service_sum / (double)r.n / 1e3, (unsigned long long)late,
			      (unsigned long long)r.n);
		omitted = late > r.n / 2 && r.total_sum > 10 * r.service_sum;
		free(r.v);
	}
	if (!omitted)
		fail_msg("QD1 at 4x its rate: most IOs not late, or their latency not far above "
			 "their service, in %d attempts", ATTEMPTS);
	fsp_store_close(st);
	fsp_store_remove_files(dbpath);
	assert_int_equal(test_dir_remove(dir), 0);
	close(fd);
	unlink(path);
}

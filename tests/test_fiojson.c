/*
 * test_fiojson.c - fio's JSON results read and stored as runs
 * (bench/engine/fiojson.h).
 *
 * Fixtures made by fio 3.33 (tests/fixtures/fio/README): a json+ result of
 * two jobs with an fsprism idle job between them (lat_ns bins), a json+
 * result with clat_ns bins only, a plain json one (no bins: refused), and
 * fio --client's result of two servers (one run per host, "All clients"
 * skipped). Every percentile fio printed is checked against the histogram
 * the bins became, within half a bucket of fio's (1/128 of the value).
 * Corrupt ones (truncated, text, JSON that is not fio's, fio 2.x) are
 * refused with one line naming the file and the problem, leaving nothing.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <sqlite3.h>
#include "bench/engine/fiojson.h"
#include "src/base/ops.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "tests/testdb.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static char tmpdir[64];
static char dbpath[128];

static int setup(void **state)
{
	(void)state;
	if (test_dir_make(tmpdir, sizeof(tmpdir), "/tmp", "fiojson"))
		return -1;
	test_dir_path(dbpath, sizeof(dbpath), tmpdir, "f.db");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return test_dir_remove(tmpdir);
}

static const char *fixture(const char *name)
{
	static char p[PATH_MAX];
	const char *src = getenv("TESTS_SRCDIR");
	assert_non_null(src); /* set by make check */
	snprintf(p, sizeof p, "%s/fixtures/fio/%s", src, name);
	return p;
}

static void load_ok(const char *name, struct fsp_fio_result *r)
{
	char err[512] = "";
	if (fsp_fio_json_load(fixture(name), r, err, sizeof err) != 0)
		fail_msg("%s: %s", name, err);
	assert_string_equal(r->version, "fio-3.33");
}

static void load_fails(const char *name, const char *want)
{
	struct fsp_fio_result r;
	char err[512] = "";
	const char *p = fixture(name);
	assert_int_equal(fsp_fio_json_load(p, &r, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("%s: got '%s', wanted '%s'", name, err, want);
	assert_memory_equal(err, p, strlen(p)); /* names the file */
	assert_null(strchr(err, '\n'));         /* one line */
	assert_int_equal(r.nhosts, 0);
	assert_null(r.hosts);
}

/* fio's own JSON object of a fixture (what fio printed), for its percentiles */
static struct json_object *fio_json(const char *name)
{
	FILE *f = fopen(fixture(name), "r");
	assert_non_null(f);
	static char buf[1 << 17];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *brace = strstr(buf, "\n{");
	struct json_object *o = json_tokener_parse(buf[0] == '{' ? buf : brace + 1);
	assert_non_null(o);
	return o;
}

/*
 * Every percentile fio printed for one direction of one job equals the
 * histogram's quantile within half a fio bucket: fio's value is the middle
 * of its bucket, 1/64 of a power of two wide, so within 1/128 of it.
 */
static void percentiles_match(struct json_object *job, const char *dir, const char *lat,
			      const struct fsp_hist *h)
{
	struct json_object *d, *l, *pct;
	assert_true(json_object_object_get_ex(job, dir, &d));
	assert_true(json_object_object_get_ex(d, lat, &l));
	assert_true(json_object_object_get_ex(l, "percentile", &pct));
	int checked = 0;
	json_object_object_foreach(pct, key, val) {
		double q = strtod(key, NULL) / 100.0;
		double want = (double)json_object_get_int64(val);
		double got = (double)fsp_hist_quantile(h, q);
		double tol = want / 128.0 + 1;
		if (got < want - tol || got > want + tol)
			fail_msg("%s %s p%s: fio %.0f, fsprism %.0f", dir, lat, key, want, got);
		checked++;
	}
	assert_true(checked >= 10);
}

static struct json_object *fio_job(struct json_object *root, const char *array, size_t i)
{
	struct json_object *jobs;
	assert_true(json_object_object_get_ex(root, array, &jobs));
	return json_object_array_get_idx(jobs, i);
}

UNIT_TEST(test_json_plus_two_jobs)
{
	struct fsp_fio_result r;
	load_ok("fio-3.33-json-plus.json", &r);
	assert_int_equal(r.nhosts, 1);
	assert_string_equal(r.hosts[0].hostname, "");
	/* the idle job between them is not a step */
	assert_int_equal(r.hosts[0].njobs, 2);
	const struct fsp_fio_job *a = &r.hosts[0].jobs[0], *b = &r.hosts[0].jobs[1];
	assert_string_equal(a->name, "qd=1");
	assert_string_equal(a->rw, "randread");
	assert_int_equal(a->bs, 4096); /* from [global] */
	assert_int_equal(a->iodepth, 1);
	assert_int_equal(a->read_pct, 100);
	assert_int_equal(a->dir[0].ios, 256);
	assert_int_equal(a->dir[0].bytes, 1048576);
	assert_non_null(a->dir[0].hist);
	assert_true(a->dir[0].from_lat);
	assert_int_equal(a->dir[0].hist->count, 256);
	assert_int_equal(a->dir[0].hist->min, 37962);
	assert_int_equal(a->dir[0].hist->max, 463679);
	assert_null(a->dir[1].hist);
	assert_string_equal(b->name, "qd=4 mix=70/30");
	assert_string_equal(b->rw, "randrw");
	assert_int_equal(b->iodepth, 4);
	assert_int_equal(b->read_pct, 70);
	assert_int_equal(b->dir[0].hist->count, 174);
	assert_int_equal(b->dir[1].hist->count, 82);
	assert_int_equal(b->dir[1].bytes, 335872);

	struct json_object *root = fio_json("fio-3.33-json-plus.json");
	percentiles_match(fio_job(root, "jobs", 0), "read", "lat_ns", a->dir[0].hist);
	percentiles_match(fio_job(root, "jobs", 2), "read", "lat_ns", b->dir[0].hist);
	percentiles_match(fio_job(root, "jobs", 2), "write", "lat_ns", b->dir[1].hist);
	json_object_put(root);
	fsp_fio_result_free(&r);
}

UNIT_TEST(test_clat_bins_only)
{
	struct fsp_fio_result r;
	load_ok("fio-3.33-clat.json", &r);
	assert_int_equal(r.hosts[0].njobs, 1);
	const struct fsp_fio_job *j = &r.hosts[0].jobs[0];
	assert_int_equal(j->bs, 65536);
	assert_int_equal(j->read_pct, 0);
	assert_null(j->dir[0].hist);
	assert_non_null(j->dir[1].hist);
	assert_false(j->dir[1].from_lat);
	assert_int_equal(j->dir[1].hist->count, 32);
	struct json_object *root = fio_json("fio-3.33-clat.json");
	percentiles_match(fio_job(root, "jobs", 0), "write", "clat_ns", j->dir[1].hist);
	json_object_put(root);
	fsp_fio_result_free(&r);
}

UNIT_TEST(test_clients_one_run_per_host)
{
	struct fsp_fio_result r;
	load_ok("fio-3.33-clients.json", &r); /* fio's "<host> ..." lines before it */
	assert_int_equal(r.nhosts, 2); /* "All clients" is not a host */
	assert_string_equal(r.hosts[0].hostname, "127.0.0.2");
	assert_string_equal(r.hosts[1].hostname, "127.0.0.3");
	assert_int_equal(r.hosts[0].port, 18777);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(r.hosts[i].njobs, 1);
		assert_string_equal(r.hosts[i].jobs[0].name, "qd=2");
		assert_int_equal(r.hosts[i].jobs[0].dir[0].hist->count, 128);
	}
	assert_int_equal(r.hosts[0].jobs[0].dir[0].hist->max, 427340);
	assert_int_equal(r.hosts[1].jobs[0].dir[0].hist->max, 247208);
	struct json_object *root = fio_json("fio-3.33-clients.json");
	percentiles_match(fio_job(root, "client_stats", 0), "read", "lat_ns",
			  r.hosts[0].jobs[0].dir[0].hist);
	percentiles_match(fio_job(root, "client_stats", 1), "read", "lat_ns",
			  r.hosts[1].jobs[0].dir[0].hist);
	json_object_put(root);
	fsp_fio_result_free(&r);
}

UNIT_TEST(test_refusals)
{
	load_fails("fio-3.33-json.json", "job 'plain' has no latency bins");
	load_fails("truncated.json", "not JSON (it ends at byte 4000 inside an object");
	load_fails("not-json.json", "not JSON");
	load_fails("not-fio.json", "JSON but not fio's (no \"fio version\")");
	load_fails("fio-2.21-version.json", "fio version 'fio-2.21' is not supported (fio 3.x)");
	load_fails("missing.json", "No such file or directory");
	/* from text: an empty object, an array, a bin that is not a count */
	struct fsp_fio_result r;
	char err[256];
	assert_int_equal(fsp_fio_json_parse("{}", 2, "x", &r, err, sizeof err), -1);
	assert_string_equal(err, "x: JSON but not fio's (no \"fio version\")");
	assert_int_equal(fsp_fio_json_parse("[1]", 3, "x", &r, err, sizeof err), -1);
	assert_string_equal(err, "x: not JSON (no object in it)");
	const char *bad = "{\"fio version\": \"fio-3.33\", \"jobs\": [{\"jobname\": \"j\", "
			  "\"read\": {\"total_ios\": 1, \"lat_ns\": {\"N\": 1, \"bins\": "
			  "{\"100\": \"x\"}}}}]}";
	assert_int_equal(fsp_fio_json_parse(bad, strlen(bad), "x", &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "x: job 'j', read: a latency bin '100'"));
	const char *none = "{\"fio version\": \"fio-3.33\", \"jobs\": []}";
	assert_int_equal(fsp_fio_json_parse(none, strlen(none), "x", &r, err, sizeof err), -1);
	assert_string_equal(err, "x: fio's JSON with no job");
}

static int count_step(void *arg, const struct fsp_step_row *s)
{
	(void)s;
	(*(int *)arg)++;
	return 0;
}

UNIT_TEST_SETUP(test_store_runs, setup, teardown)
{
	struct fsp_fio_result r;
	char err[512] = "";
	load_ok("fio-3.33-json-plus.json", &r);
	struct fsp_store *st = fsp_store_open(dbpath, err, sizeof err);
	assert_non_null(st);
	struct fsp_fio_import o = { .label = "mine", .options = "fsprism import x",
				    .source = "x.json" };
	int64_t runs[1];
	int64_t run = fsp_fio_store(st, &r, &o, runs, err, sizeof err);
	assert_true(run > 0);
	assert_int_equal(runs[0], run);
	/* the histograms come back exactly as the bins made them */
	struct fsp_hist h;
	uint64_t bytes, errors;
	assert_int_equal(fsp_store_load_hist(st, run, 1, FSP_OP_WRITE, FSP_LAYER_TOTAL, &h,
					     &bytes, &errors), 1);
	assert_memory_equal(&h, r.hosts[0].jobs[1].dir[1].hist, sizeof(h));
	assert_int_equal(bytes, 335872);
	int nsteps = 0;
	assert_int_equal(fsp_store_each_step(st, run, count_step, &nsteps), 0);
	assert_int_equal(nsteps, 2);
	char *v = fsp_store_attr(st, run, "fio.latency");
	assert_string_equal(v, "lat");
	free(v);
	fsp_fio_result_free(&r);

	/* two hosts: a parent and a run per host, named by it */
	load_ok("fio-3.33-clients.json", &r);
	int64_t two[2];
	o.label = "fleet";
	int64_t parent = fsp_fio_store(st, &r, &o, two, err, sizeof err);
	assert_true(parent > run);
	struct fsp_run_row row;
	assert_int_equal(fsp_store_load_run(st, parent, &row), 1);
	assert_string_equal(row.kind, "fio-clients");
	assert_string_equal(row.label, "fleet");
	fsp_run_row_free(&row);
	assert_int_equal(fsp_store_load_run(st, two[1], &row), 1);
	assert_string_equal(row.kind, "run");
	assert_string_equal(row.label, "127.0.0.3");
	fsp_run_row_free(&row);
	assert_int_equal(fsp_store_child_run(st, parent, "127.0.0.2"), two[0]);

	/* under a parent of the caller's (run --hosts), named as the caller
	 * names them: no run of kind fio-clients in between */
	const struct fsp_fio_host *host = fsp_fio_host_of(&r, "127.0.0.3", 18777);
	assert_ptr_equal(host, &r.hosts[1]);
	assert_null(fsp_fio_host_of(&r, "127.0.0.3", 18778));
	assert_null(fsp_fio_host_of(&r, "127.0.0", 18777));
	free(r.hosts[1].hostname);
	r.hosts[1].hostname = strdup("rack2");
	struct fsp_run_info fleet = { .kind = "hosts", .label = "fleet2" };
	int64_t mine = fsp_store_begin_run(st, &fleet);
	assert_true(mine > 0);
	o.parent = mine;
	assert_int_equal(fsp_fio_store(st, &r, &o, two, err, sizeof err), mine);
	assert_int_equal(fsp_store_child_run(st, mine, "rack2"), two[1]);
	assert_int_equal(fsp_store_child_run(st, mine, "127.0.0.2"), two[0]);
	fsp_fio_result_free(&r);
	fsp_store_close(st);

	sqlite3 *db = test_db_open(dbpath);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM runs"), 7);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM runs WHERE kind = 'fio-clients'"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM runs WHERE host = '127.0.0.3'"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM runs WHERE host = 'rack2'"), 1);
	sqlite3_close(db);
}

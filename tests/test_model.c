/*
 * test_model.c - the model drive (fs/model/model.h) on synthetic IO
 * streams, one knob at a time: the stream-switch penalty (one stream free,
 * two interleaved streams charged on every switch, the tracked-stream
 * count), read-after-write by age and overlap, the flush cost, the write
 * cache filling and draining, the seeded jitter; and the spec grammar
 * (what is refused, the canonical form).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "fs/model/model.h"
#include "tests/unit.h"

#define US 1000ull
#define MS 1000000ull
#define K128 (128u << 10)

static struct fsp_model *model_of(const char *spec)
{
	struct fsp_model_cfg cfg;
	char err[256];
	if (fsp_model_parse(spec, &cfg, err, sizeof(err)))
		fail_msg("parse '%s': %s", spec, err);
	struct fsp_model *m = fsp_model_new(&cfg);
	assert_non_null(m);
	return m;
}

UNIT_TEST(test_one_stream_is_free)
{
	struct fsp_model *m = model_of("switch=200us");
	uint64_t total = 0;
	for (uint64_t i = 0; i < 100; i++)
		total += fsp_model_cost_ns(m, FSP_MODEL_READ, i * K128, K128, i * MS);
	assert_int_equal(total, 0);
	fsp_model_free(m);
}

UNIT_TEST(test_interleaved_streams_pay_each_switch)
{
	struct fsp_model *m = model_of("switch=200us");
	uint64_t total = 0;
	/* two sequential read streams, A at 0 and B at 1 GiB, alternating */
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t s = i % 2, k = i / 2;
		total += fsp_model_cost_ns(m, FSP_MODEL_READ, (s << 30) + k * K128, K128, i * MS);
	}
	/* the first IO has no previous stream: 99 switches */
	assert_int_equal(total, 99 * 200 * US);
	struct fsp_model_stats st;
	fsp_model_stats(m, &st);
	assert_int_equal(st.switches, 99);
	fsp_model_free(m);

	/* a read stream and a write stream in two places, interleaved: the same */
	m = model_of("switch=200us");
	total = 0;
	for (uint64_t i = 0; i < 10; i++)
		total += fsp_model_cost_ns(m, i % 2 ? FSP_MODEL_WRITE : FSP_MODEL_READ,
					   (i % 2 ? 1ull << 30 : 0) + (i / 2) * K128, K128, i * MS);
	assert_int_equal(total, 9 * 200 * US);
	fsp_model_free(m);
}

UNIT_TEST(test_mixed_directions_one_stream)
{
	/* reads and writes sharing one sequential offset (mixed-seq on a raw
	 * device): one stream, nothing to pay */
	struct fsp_model *m = model_of("switch=200us");
	uint64_t total = 0;
	for (uint64_t i = 0; i < 50; i++)
		total += fsp_model_cost_ns(m, i % 3 ? FSP_MODEL_READ : FSP_MODEL_WRITE,
					   i * K128, K128, i * MS);
	assert_int_equal(total, 0);
	/* the same with the writes moved elsewhere (copy-on-write): the reads'
	 * stream and the writes' stream interleave */
	uint64_t wr = 1ull << 30, rd = 0;
	total = 0;
	for (uint64_t i = 0; i < 50; i++) {
		int w = i % 3 == 0;
		uint64_t *at = w ? &wr : &rd;
		total += fsp_model_cost_ns(m, w ? FSP_MODEL_WRITE : FSP_MODEL_READ, *at, K128,
					   (50 + i) * MS);
		*at += w ? K128 : (i % 3 == 2 ? 2 * K128 : K128);
	}
	assert_true(total >= 30 * 200 * US);
	fsp_model_free(m);
}

UNIT_TEST(test_runs_of_a_stream)
{
	/* A A A A B B B B A A A A: two switches only; with one tracked stream
	 * A is a new stream again after B, still two switches */
	for (int tracked = 1; tracked <= 2; tracked++) {
		char spec[64];
		snprintf(spec, sizeof(spec), "switch=100us,streams=%d", tracked);
		struct fsp_model *m = model_of(spec);
		uint64_t a = 0, b = 1ull << 30, total = 0;
		for (int i = 0; i < 12; i++) {
			uint64_t *p = (i / 4) % 2 ? &b : &a;
			total += fsp_model_cost_ns(m, FSP_MODEL_READ, *p, K128, (uint64_t)i * MS);
			*p += K128;
		}
		assert_int_equal(total, 2 * 100 * US);
		fsp_model_free(m);
	}
}

UNIT_TEST(test_catching_up_an_old_stream)
{
	/* an old stream O stopped at 4 x 128k; a new one N runs from 0 past
	 * that offset and must stay N (no switch) even where O's slot comes
	 * first: two tracked streams, O made to replace the first slot */
	struct fsp_model *m = model_of("switch=100us,streams=2");
	uint64_t total = 0, t = 0, G = 1ull << 30;
	total += fsp_model_cost_ns(m, FSP_MODEL_READ, G, K128, t++);        /* P */
	total += fsp_model_cost_ns(m, FSP_MODEL_READ, 2 * G, K128, t++);    /* Q: switch */
	total += fsp_model_cost_ns(m, FSP_MODEL_READ, G + K128, K128, t++); /* P: switch */
	for (uint64_t i = 0; i < 4; i++) /* O replaces Q: switch */
		total += fsp_model_cost_ns(m, FSP_MODEL_READ, i * K128, K128, t++);
	for (uint64_t i = 0; i < 8; i++) /* N replaces P: switch */
		total += fsp_model_cost_ns(m, FSP_MODEL_READ, i * K128, K128, t++);
	assert_int_equal(total, 4 * 100 * US);
	fsp_model_free(m);
}

UNIT_TEST(test_random_io_switches)
{
	/* every IO a jump: each one leaves the last IO's stream */
	struct fsp_model *m = model_of("switch=50us,streams=4");
	uint64_t total = 0;
	for (uint64_t i = 0; i < 20; i++)
		total += fsp_model_cost_ns(m, FSP_MODEL_READ, ((i * 7919) % 1000) * K128 * 3,
					   4096, i * MS);
	assert_int_equal(total, 19 * 50 * US);
	fsp_model_free(m);
}

UNIT_TEST(test_read_after_write)
{
	struct fsp_model *m = model_of("raw=300us@5ms");
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 0, K128, 0), 0);
	/* recent and overlapping: charged */
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, 4096, 4096, 1 * MS), 300 * US);
	/* recent but elsewhere: not */
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, K128, 4096, 2 * MS), 0);
	/* the same data, older than 5 ms: not */
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, 0, 4096, 5 * MS), 0);
	/* rewritten: recent again */
	fsp_model_cost_ns(m, FSP_MODEL_WRITE, 0, 4096, 6 * MS);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, 0, 8192, 10 * MS), 300 * US);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, 0, 8192, 11 * MS), 0);
	struct fsp_model_stats st;
	fsp_model_stats(m, &st);
	assert_int_equal(st.raw_hits, 2);
	fsp_model_free(m);
}

UNIT_TEST(test_flush)
{
	struct fsp_model *m = model_of("flush=2ms,switch=100us");
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 0, 4096, 0), 0);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_FLUSH, 0, 0, 1), 2 * MS);
	/* a flush is no IO of a stream: the write stream goes on free */
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 4096, 4096, 2), 0);
	fsp_model_free(m);
}

UNIT_TEST(test_write_cache)
{
	struct fsp_model *m = model_of("cache=1M:80us");
	uint64_t slow = 0;
	/* 16 writes of 128 KiB: the first 8 fill the 1 MiB cache */
	for (uint64_t i = 0; i < 16; i++)
		if (fsp_model_cost_ns(m, FSP_MODEL_WRITE, i * K128, K128, i))
			slow++;
	assert_int_equal(slow, 8);
	/* reads are not charged */
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, 0, K128, 20), 0);
	fsp_model_free(m);

	/* draining at 128 MiB/s: 1 ms idle frees 128 KiB, one fast write */
	m = model_of("cache=1M:80us,drain=128M/s");
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, i * K128, K128, 0), 0);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 8 * K128, K128, 0), 80 * US);
	uint64_t t = 1000000000ull / 1024 + 1; /* a little over 128 KiB of drain */
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 9 * K128, K128, t), 0);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 10 * K128, K128, t), 80 * US);
	fsp_model_free(m);
}

UNIT_TEST(test_jitter_seeded)
{
	uint64_t a[50], b[50], c[50];
	struct fsp_model *m1 = model_of("jitter=100us,seed=7");
	struct fsp_model *m2 = model_of("jitter=100us,seed=7");
	struct fsp_model *m3 = model_of("jitter=100us,seed=8");
	int differ = 0;
	for (int i = 0; i < 50; i++) {
		a[i] = fsp_model_cost_ns(m1, FSP_MODEL_READ, (uint64_t)i * 4096, 4096, 0);
		b[i] = fsp_model_cost_ns(m2, FSP_MODEL_READ, (uint64_t)i * 4096, 4096, 0);
		c[i] = fsp_model_cost_ns(m3, FSP_MODEL_READ, (uint64_t)i * 4096, 4096, 0);
		assert_true(a[i] <= 100 * US);
		differ += a[i] != c[i];
	}
	assert_memory_equal(a, b, sizeof(a));
	assert_true(differ > 40);
	fsp_model_free(m1);
	fsp_model_free(m2);
	fsp_model_free(m3);
}

UNIT_TEST(test_base_costs)
{
	struct fsp_model *m = model_of("read=20us,write=30us");
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_READ, 0, 4096, 0), 20 * US);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_WRITE, 0, 4096, 0), 30 * US);
	assert_int_equal(fsp_model_cost_ns(m, FSP_MODEL_FLUSH, 0, 0, 0), 0);
	fsp_model_free(m);
}

UNIT_TEST(test_spec_grammar)
{
	struct fsp_model_cfg cfg;
	char err[256], buf[256];
	assert_int_equal(fsp_model_parse("switch=200us,raw=300us@5ms,flush=2ms,cache=64M:80us",
					 &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.switch_ns, 200 * US);
	assert_int_equal(cfg.raw_ns, 300 * US);
	assert_int_equal(cfg.raw_age_ns, 5 * MS);
	assert_int_equal(cfg.flush_ns, 2 * MS);
	assert_int_equal(cfg.cache_bytes, 64u << 20);
	assert_int_equal(cfg.cache_ns, 80 * US);
	fsp_model_format(&cfg, buf, sizeof(buf));
	assert_string_equal(buf, "switch=200us,streams=8,raw=300us@5ms,flush=2ms,"
			    "cache=64M:80us,seed=1");
	static const struct { const char *spec, *names; } bad[] = {
		{ "swich=1us", "swich" },
		{ "switch=1xs", "1xs" },
		{ "raw=300us", "300us" },
		{ "raw=300us@", "300us@" },
		{ "cache=64M", "64M" },
		{ "cache=0:80us", "0" },
		{ "streams=0", "0" },
		{ "streams=65", "65" },
		{ "switch=1us,switch=2us", "twice" },
		{ "drain=1M/s", "drain" },
		{ "", "no knob" },
		{ "switch", "switch" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(fsp_model_parse(bad[i].spec, &cfg, err, sizeof(err)), -1);
		if (!strstr(err, bad[i].names))
			fail_msg("'%s': '%s' does not name '%s'", bad[i].spec, err, bad[i].names);
	}
}

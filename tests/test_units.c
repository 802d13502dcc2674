/*
 * test_units.c - sizes and durations (src/base/units.h): the suffix forms
 * people write, what is refused (overflow, unknown units, signs), exact
 * formatting that parses back to the same value, and the rounded form.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "src/base/units.h"
#include "tests/unit.h"

static uint64_t size_of(const char *s)
{
	uint64_t v = 12345;
	assert_int_equal(fsp_parse_size(s, &v), 0);
	return v;
}

static uint64_t ns_of(const char *s)
{
	uint64_t v = 12345;
	assert_int_equal(fsp_parse_duration(s, &v), 0);
	return v;
}

UNIT_TEST(test_size_suffixes)
{
	(void)state;
	assert_int_equal(size_of("0"), 0);
	assert_int_equal(size_of("4096"), 4096);
	assert_int_equal(size_of("512b"), 512);
	assert_int_equal(size_of("512B"), 512);
	/* k, K, kb, KiB, kib: all the same binary unit */
	const char *const four_k[] = { "4k", "4K", "4kb", "4KB", "4KiB", "4kib" };
	for (size_t i = 0; i < sizeof(four_k) / sizeof(four_k[0]); i++)
		assert_int_equal(size_of(four_k[i]), 4096);
	assert_int_equal(size_of("128M"), 128 * FSP_MiB);
	assert_int_equal(size_of("1g"), FSP_GiB);
	assert_int_equal(size_of("2T"), 2 * FSP_TiB);
	assert_int_equal(size_of("1P"), FSP_PiB);
}

UNIT_TEST(test_size_refused)
{
	(void)state;
	uint64_t v = 7;
	const char *const bad[] = {
		"", "k", "-1", " 4k", "4 k", "4x", "4kx", "4kbb", "1.5k", "0x10",
		"18446744073709551616",  /* 2^64 */
		"16777216T",             /* 2^64 bytes */
		"16384P",                /* 2^64 bytes */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fsp_parse_size(bad[i], &v), -1);
		assert_int_equal(v, 7); /* untouched on error */
	}
	/* the largest that fits */
	assert_int_equal(size_of("18446744073709551615"), UINT64_MAX);
	assert_int_equal(size_of("16383P"), 16383 * FSP_PiB);
}

UNIT_TEST(test_duration_units)
{
	(void)state;
	assert_int_equal(ns_of("0"), 0);
	assert_int_equal(ns_of("30"), 30 * FSP_SEC); /* seconds by default */
	assert_int_equal(ns_of("2s"), 2 * FSP_SEC);
	assert_int_equal(ns_of("300ms"), 300 * FSP_MS);
	assert_int_equal(ns_of("100us"), 100000);
	assert_int_equal(ns_of("7ns"), 7);
	assert_int_equal(ns_of("2m"), 2 * FSP_MIN);
	assert_int_equal(ns_of("2min"), 2 * FSP_MIN);
	assert_int_equal(ns_of("1h"), FSP_HOUR);
	assert_int_equal(ns_of("1.5s"), 1500 * FSP_MS);
	assert_int_equal(ns_of(".5ms"), 500000);
	/* fractions round to the nearest nanosecond */
	assert_int_equal(ns_of("0.0000000014s"), 1);
	assert_int_equal(ns_of("1.6ns"), 2);
	assert_int_equal(ns_of("1.4ns"), 1);
}

UNIT_TEST(test_duration_refused)
{
	(void)state;
	uint64_t v = 7;
	const char *const bad[] = { "", "s", "-1s", "1x", "1 s", "1sec", "1ms2", "1H",
				    "1e19ns", "300000h" /* > 10^18 ns */ };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fsp_parse_duration(bad[i], &v), -1);
		assert_int_equal(v, 7);
	}
	assert_int_equal(ns_of("1000000000s"), 1000000000ull * FSP_SEC); /* 10^18 ns */
}

UNIT_TEST(test_size_round_trip)
{
	(void)state;
	static const struct { uint64_t v; const char *text; } cases[] = {
		{ 0, "0" }, { 1, "1" }, { 512, "512" }, { 1536, "1536" }, { 4096, "4k" },
		{ 131072, "128k" }, { 3 * FSP_GiB, "3G" }, { FSP_MiB + FSP_KiB, "1025k" },
		{ 5 * FSP_TiB, "5T" }, { FSP_PiB, "1P" }, { 2048 * FSP_PiB, "2048P" },
		{ UINT64_MAX, "18446744073709551615" },
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fsp_format_size(cases[i].v, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
		assert_int_equal(size_of(buf), cases[i].v);
	}
	/* every power of two and its neighbours survive the round trip */
	for (int s = 0; s < 64; s++)
		for (int d = -1; d <= 1; d++) {
			uint64_t v = (1ull << s) + (uint64_t)(int64_t)d;
			fsp_format_size(v, buf, sizeof(buf));
			assert_int_equal(size_of(buf), v);
		}
}

UNIT_TEST(test_duration_round_trip)
{
	(void)state;
	static const struct { uint64_t ns; const char *text; } cases[] = {
		{ 0, "0" }, { 1000, "1us" }, { 100000, "100us" }, { 250 * FSP_MS, "250ms" },
		{ 1500 * FSP_MS, "1500ms" }, { 5 * FSP_SEC, "5s" }, { 90 * FSP_SEC, "90s" },
		{ 2 * FSP_MIN, "2m" }, { 90 * FSP_MIN, "90m" }, { 24 * FSP_HOUR, "24h" },
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fsp_format_duration(cases[i].ns, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
		assert_int_equal(ns_of(buf), cases[i].ns);
	}
	/* below a microsecond the text is rounded down */
	fsp_format_duration(1999, buf, sizeof(buf));
	assert_string_equal(buf, "1us");
}

UNIT_TEST(test_format_bytes)
{
	(void)state;
	static const struct { uint64_t v; const char *text; } cases[] = {
		{ 0, "0 B" }, { 1023, "1023 B" }, { 1024, "1.0 KiB" }, { 1536, "1.5 KiB" },
		{ 4000000, "3.8 MiB" }, { 512 * FSP_MiB, "512.0 MiB" }, { FSP_GiB, "1.0 GiB" },
		{ 2 * FSP_GiB - 1, "2.0 GiB" }, /* rounded to one decimal */
		{ 4004773888ull, "3.7 GiB" }, { FSP_PiB, "1.0 PiB" }, { UINT64_MAX, "16.0 EiB" },
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fsp_format_bytes(cases[i].v, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
	/* a short buffer is cut, never overrun */
	char small[4];
	fsp_format_bytes(FSP_GiB, small, sizeof(small));
	assert_string_equal(small, "1.0");
	fsp_format_size(123456789, small, sizeof(small));
	assert_string_equal(small, "123");
}

/*
 * test_bufpool.c - the O_DIRECT buffer pool: size classes and alignment,
 * buffers that never overlap (also taken and given back by several threads
 * at once), reuse of given-back buffers, classes above the 2 MiB chunk, and
 * the huge-page share it reports against the kernel's setting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/base/bufpool.h"
#include "tests/unit.h"

#define MIB ((size_t)1 << 20)

UNIT_TEST(test_classes)
{
	(void)state;
	struct fsp_bufpool *p = fsp_bufpool_new();
	assert_non_null(p);
	const size_t asks[] = { 1, 512, 4096, 4097, 12288, 131072, 131073, MIB, 2 * MIB };
	const size_t caps[] = { 4096, 4096, 4096, 8192, 16384, 131072, 262144, MIB, 2 * MIB };
	for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
		size_t cap = 0;
		char *b = fsp_bufpool_get(p, asks[i], &cap);
		assert_non_null(b);
		assert_int_equal(cap, caps[i]);
		/* aligned to its class size, so at least to a page */
		assert_int_equal((uintptr_t)b % cap, 0);
		memset(b, 0xa5, cap); /* all of it is writable */
	}
	fsp_bufpool_free(p);
}

/* n buffers of one class: pairwise disjoint, and each keeps what was written. */
UNIT_TEST(test_disjoint_and_reuse)
{
	(void)state;
	struct fsp_bufpool *p = fsp_bufpool_new();
	enum { N = 40 }; /* 40 x 128 KiB: more than two chunks */
	char *b[N];
	size_t cap;
	for (int i = 0; i < N; i++) {
		b[i] = fsp_bufpool_get(p, 100000, &cap);
		assert_non_null(b[i]);
		assert_int_equal(cap, 131072);
		memset(b[i], i, cap);
	}
	for (int i = 0; i < N; i++)
		for (size_t k = 0; k < cap; k += 4096)
			assert_int_equal((unsigned char)b[i][k], i);
	uint64_t mapped, huge;
	fsp_bufpool_usage(p, &mapped, &huge);
	assert_int_equal(mapped, 3 * 2 * MIB); /* 16 per chunk */
	assert_true(huge <= mapped);

	/* given back, a buffer is handed out again before any new chunk */
	fsp_bufpool_put(p, b[7], cap);
	fsp_bufpool_put(p, b[3], cap);
	char *again1 = fsp_bufpool_get(p, 131072, &cap);
	char *again2 = fsp_bufpool_get(p, 1, &cap); /* another class: its own chunk */
	char *again3 = fsp_bufpool_get(p, 131072, &cap);
	assert_ptr_equal(again1, b[3]);
	assert_ptr_equal(again3, b[7]);
	assert_int_equal(cap, 131072);
	assert_int_equal((uintptr_t)again2 % (2 * MIB), 0); /* the first of its chunk */
	fsp_bufpool_usage(p, &mapped, &huge);
	assert_int_equal(mapped, 4 * 2 * MIB);
	fsp_bufpool_free(p);
}

/* A class above the chunk: one mapping per buffer, 2 MiB-aligned. */
UNIT_TEST(test_large)
{
	(void)state;
	struct fsp_bufpool *p = fsp_bufpool_new();
	size_t cap;
	char *a = fsp_bufpool_get(p, 5 * MIB, &cap);
	char *b = fsp_bufpool_get(p, 5 * MIB, &cap);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(cap, 8 * MIB);
	assert_int_equal((uintptr_t)a % (2 * MIB), 0);
	assert_true(a + cap <= b || b + cap <= a);
	memset(a, 1, cap);
	memset(b, 2, cap);
	assert_int_equal(a[cap - 1], 1);
	uint64_t mapped, huge;
	fsp_bufpool_usage(p, &mapped, &huge);
	assert_int_equal(mapped, 16 * MIB);
	/* a request no class can hold is refused, not truncated */
	assert_null(fsp_bufpool_get(p, SIZE_MAX, &cap));
	fsp_bufpool_free(p);
}

/* Touched chunks are backed by huge pages unless the kernel has them off. */
UNIT_TEST(test_huge_share)
{
	(void)state;
	char thp[128] = "[never]";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(thp, sizeof(thp), f))
			strcpy(thp, "[never]");
		fclose(f);
	}
	struct fsp_bufpool *p = fsp_bufpool_new();
	size_t cap;
	char *b = fsp_bufpool_get(p, 2 * MIB, &cap);
	assert_non_null(b);
	memset(b, 7, cap);
	uint64_t mapped, huge;
	fsp_bufpool_usage(p, &mapped, &huge);
	assert_int_equal(mapped, 2 * MIB);
	if (strstr(thp, "[never]"))
		assert_int_equal(huge, 0);
	else
		assert_int_equal(huge, 2 * MIB);
	fsp_bufpool_free(p);
}

/* Several threads taking and giving back at once: every buffer a thread
 * holds stays its own (it checks its mark after the others have run). */
struct worker {
	struct fsp_bufpool *p;
	int id;
	int bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (int round = 0; round < 200; round++) {
		char *held[8];
		size_t caps[8];
		for (int i = 0; i < 8; i++) {
			size_t len = (size_t)4096 << ((round + i) % 6);
			held[i] = fsp_bufpool_get(w->p, len, &caps[i]);
			if (!held[i])
				return (w->bad = 1, NULL);
			memset(held[i], w->id, caps[i]);
		}
		for (int i = 0; i < 8; i++) {
			for (size_t k = 0; k < caps[i]; k += 512)
				if (held[i][k] != (char)w->id)
					w->bad = 1;
			fsp_bufpool_put(w->p, held[i], caps[i]);
		}
	}
	return NULL;
}

UNIT_TEST(test_threads)
{
	(void)state;
	struct fsp_bufpool *p = fsp_bufpool_new();
	enum { T = 4 };
	pthread_t th[T];
	struct worker w[T];
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){ p, i + 1, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	fsp_bufpool_free(p);
}

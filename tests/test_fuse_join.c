/*
 * test_fuse_join.c - the join of the daemon's rows to the traced FUSE
 * requests (fsp_fuse_join, src/db/results.h), on synthetic rows with known
 * parts: traced requests arriving in the order of their ends, not of their
 * uniques; traced requests no daemon row has (an INIT or INTERRUPT libfuse
 * answers itself, a FORGET); a daemon row with no traced request and one
 * with no unique (spliced); an aio reply logged by the reaper thread, whose
 * row carries the worker's receive time; a part below zero counted, kept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "src/db/results.h"
#include "tests/unit.h"

static struct fsp_fuse_drow drow(uint64_t unique, uint32_t op, uint64_t recv, uint64_t start,
				 uint64_t total)
{
	struct fsp_fuse_drow r = { .unique = unique, .op = op, .recv_ns = recv,
				   .start_ns = start, .total_ns = total };
	return r;
}

static struct fsp_fuse_trow trow(uint64_t unique, uint64_t send, uint64_t end)
{
	struct fsp_fuse_trow t = { .unique = unique, .send_ns = send, .end_ns = end,
				   .opcode = 15 };
	return t;
}

/* queue and reply of the joined row of op with this queue part */
static int find_part(const struct fsp_fuse_parts *p, int64_t queue, int64_t *reply)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->queue_ns[i] == queue) {
			*reply = p->reply_ns[i];
			return 1;
		}
	return 0;
}

UNIT_TEST(test_join)
{
	(void)state;
	struct fsp_fuse_drow d[] = {
		/* read 10: sent 1000, read by a worker at 1300, handled 1310..1410,
		 * ended 1450: queue 300, reply 40 */
		drow(10, FSP_OP_READ, 1300, 1310, 100),
		/* read 12: an aio read, replied by the reaper long after; its row
		 * has the worker's recv_ns and start, total up to the reply */
		drow(12, FSP_OP_READ, 2100, 2105, 5000),
		/* write 14: no traced request (lost in the kernel's ring) */
		drow(14, FSP_OP_WRITE, 3000, 3002, 10),
		/* write with unique 0 (spliced): joins nothing */
		drow(0, FSP_OP_WRITE, 3100, 3101, 10),
		/* getattr 16: a clock disagreement, reply below zero */
		drow(16, FSP_OP_GETATTR, 4050, 4060, 100),
	};
	/* in the order of their ends: 12 ends last */
	struct fsp_fuse_trow t[] = {
		trow(16, 4000, 4150),  /* reply: 4150 - 4160 = -10 */
		trow(2, 50, 60),       /* INIT, answered by libfuse: no daemon row */
		trow(10, 1000, 1450),
		trow(11, 1001, 1002),  /* INTERRUPT of 10: no daemon row */
		trow(12, 2000, 7200),  /* queue 100, reply 7200 - 7105 = 95 */
		trow(99, 9000, 9010),  /* after every daemon row */
	};
	struct fsp_fuse_transport x;
	assert_int_equal(fsp_fuse_join(d, 5, t, 6, &x), 0);
	assert_int_equal(x.joined, 3);
	assert_int_equal(x.daemon_unjoined, 2);
	assert_int_equal(x.trace_unjoined, 3);
	assert_int_equal(x.negative, 1);
	const struct fsp_fuse_parts *rd = &x.op[FSP_OP_READ];
	assert_int_equal(rd->n, 2);
	assert_int_equal(rd->unjoined, 0);
	int64_t reply;
	assert_true(find_part(rd, 300, &reply));
	assert_int_equal(reply, 40);
	assert_true(find_part(rd, 100, &reply));
	assert_int_equal(reply, 95);
	assert_int_equal(x.op[FSP_OP_WRITE].n, 0);
	assert_int_equal(x.op[FSP_OP_WRITE].unjoined, 2);
	assert_int_equal(x.op[FSP_OP_GETATTR].n, 1);
	assert_int_equal(x.op[FSP_OP_GETATTR].queue_ns[0], 50);
	assert_int_equal(x.op[FSP_OP_GETATTR].reply_ns[0], -10);
	fsp_fuse_transport_free(&x);
}

/* Nothing on either side, and a side alone. */
UNIT_TEST(test_empty_sides)
{
	(void)state;
	struct fsp_fuse_transport x;
	assert_int_equal(fsp_fuse_join(NULL, 0, NULL, 0, &x), 0);
	assert_int_equal(x.joined + x.daemon_unjoined + x.trace_unjoined, 0);
	struct fsp_fuse_trow t[] = { trow(4, 1, 2), trow(6, 3, 4) };
	assert_int_equal(fsp_fuse_join(NULL, 0, t, 2, &x), 0);
	assert_int_equal(x.trace_unjoined, 2);
	fsp_fuse_transport_free(&x);
	struct fsp_fuse_drow d[] = { drow(4, FSP_OP_READ, 1, 2, 3) };
	assert_int_equal(fsp_fuse_join(d, 1, NULL, 0, &x), 0);
	assert_int_equal(x.daemon_unjoined, 1);
	assert_int_equal(x.op[FSP_OP_READ].unjoined, 1);
	fsp_fuse_transport_free(&x);
}

/* Many requests, ends shuffled: every one joins, each to its own. */
UNIT_TEST(test_many_shuffled)
{
	(void)state;
	enum { N = 5000 };
	struct fsp_fuse_drow *d = calloc(N, sizeof(*d));
	struct fsp_fuse_trow *t = calloc(N, sizeof(*t));
	assert_non_null(d);
	assert_non_null(t);
	for (int i = 0; i < N; i++) {
		uint64_t u = 2 * (uint64_t)i + 2, send = 1000 * (uint64_t)i;
		d[i] = drow(u, FSP_OP_READ, send + (uint64_t)i % 97, send + 200, 50);
		t[i] = trow(u, send, send + 250 + (uint64_t)i % 89);
	}
	srand(3);
	for (int i = N - 1; i > 0; i--) {
		int k = rand() % (i + 1);
		struct fsp_fuse_trow tmp = t[i];
		t[i] = t[k];
		t[k] = tmp;
	}
	struct fsp_fuse_transport x;
	assert_int_equal(fsp_fuse_join(d, N, t, N, &x), 0);
	assert_int_equal(x.joined, N);
	assert_int_equal(x.daemon_unjoined + x.trace_unjoined + x.negative, 0);
	/* the parts of the request whose unique is u = 2i + 2 */
	for (size_t k = 0; k < x.op[FSP_OP_READ].n; k++) {
		int64_t q = x.op[FSP_OP_READ].queue_ns[k], r = x.op[FSP_OP_READ].reply_ns[k];
		assert_true(q >= 0 && q < 97);
		assert_true(r >= 0 && r < 89);
	}
	fsp_fuse_transport_free(&x);
	free(d);
	free(t);
}

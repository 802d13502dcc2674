/*
 * stats_fuse.c - the FUSE transport in `fsprism stats` (stats_fuse.h).
 *
 * Quantiles are nearest-rank over the joined requests, exact: the value of
 * rank ceil(q * n), as the block section's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "src/db/results.h"
#include "src/cli/stats.h"
#include "src/cli/stats_part.h"
#include "src/cli/stats_fuse.h"


struct summary {
	int traced;          /* 1, 0, -1: never tried (no fuse.traced) */
	char *reason, *conn;
	uint64_t requests, missed;
};



/* op's queue and reply parts; 0 if op has no daemon rows at all. */
static int op_parts(struct fsp_fuse_transport *x, int op, struct fsp_stats_part *q, struct fsp_stats_part *r)
{
	struct fsp_fuse_parts *p = &x->op[op];
	if (!p->n && !p->unjoined)
		return 0;
	fsp_stats_part_of(p->queue_ns, p->n, q);
	fsp_stats_part_of(p->reply_ns, p->n, r);
	return 1;
}

static uint64_t attr_u64(struct fsp_store *st, int64_t run, const char *key)
{
	char *v = fsp_store_attr(st, run, key);
	uint64_t n = v ? strtoull(v, NULL, 10) : 0;
	free(v);
	return n;
}

static void load_summary(struct fsp_store *st, int64_t run, struct summary *s)
{
	char *t = fsp_store_attr(st, run, "fuse.traced");
	s->traced = t ? atoi(t) : -1;
	free(t);
	s->reason = fsp_store_attr(st, run, "fuse.untraced_reason");
	s->conn = fsp_store_attr(st, run, "fuse.conn");
	s->requests = attr_u64(st, run, "fuse.trace_requests");
	s->missed = attr_u64(st, run, "fuse.trace_missed");
}



static void print_table(const struct summary *s, struct fsp_fuse_transport *x, FILE *out)
{
	/* 100 columns, as stats' other tables: a longer op name stands above its numbers */
	fprintf(out, "\nFUSE transport: connection %s, %" PRIu64 " requests traced, %" PRIu64
		" missed;\n%" PRIu64 " daemon rows joined, %" PRIu64 " not, %" PRIu64
		" traced requests without a daemon row\n", s->conn ? s->conn : "?", s->requests,
		s->missed, x->joined, x->daemon_unjoined, x->trace_unjoined);
	fprintf(out, "queue = sent by the kernel to read by a worker, reply = the daemon's reply"
		" to the\nkernel's completion (microseconds)\n");
	fprintf(out, "%-10s %8s %8s", "op", "joined", "unjoined");
	fsp_stats_part_heads(out, "queue");
	fsp_stats_part_heads(out, "reply");
	fputc('\n', out);
	struct fsp_stats_part q, r;
	for (int op = 0; op < FSP_OP__COUNT; op++) {
		if (!op_parts(x, op, &q, &r))
			continue;
		const char *name = fsp_op_name(op);
		if (strlen(name) > 10) {
			fprintf(out, "%s\n", name);
			name = "";
		}
		fprintf(out, "%-10s %8zu %8" PRIu64, name, x->op[op].n, x->op[op].unjoined);
		fsp_stats_part_table(out, &q);
		fsp_stats_part_table(out, &r);
		fputc('\n', out);
	}
	if (x->negative)
		fprintf(out, "%" PRIu64 " parts below zero (the daemon's and the kernel's clocks"
			" disagree), kept as measured\n", x->negative);
}

static void csv_part(FILE *out, int64_t run, int op, const char *layer, const struct fsp_stats_part *p)
{
	if (!p->n)
		return;
	fprintf(out, "%" PRId64 ",0,%s,%s,%zu,,,0", run, fsp_op_name(op), layer, p->n);
	fsp_stats_part_csv_tail(out, p);
}


static void print_json(const struct summary *s, struct fsp_fuse_transport *x, FILE *out)
{
	fsp_json_member_str(out, "conn", s->conn ? s->conn : "");
	fprintf(out, ", \"requests\": %" PRIu64 ", \"missed\": %" PRIu64 ", \"joined\": %" PRIu64
		", \"daemon_unjoined\": %" PRIu64 ", \"trace_unjoined\": %" PRIu64
		", \"negative\": %" PRIu64 ", \"ops\": [", s->requests, s->missed, x->joined,
		x->daemon_unjoined, x->trace_unjoined, x->negative);
	int first = 1;
	struct fsp_stats_part q, r;
	for (int op = 0; op < FSP_OP__COUNT; op++) {
		if (!op_parts(x, op, &q, &r))
			continue;
		fprintf(out, "%s\n    {\"op\": \"%s\", \"joined\": %zu, \"unjoined\": %" PRIu64,
			first ? "" : ",", fsp_op_name(op), x->op[op].n, x->op[op].unjoined);
		fsp_stats_part_json(out, "queue", &q);
		fsp_stats_part_json(out, "reply", &r);
		fputc('}', out);
		first = 0;
	}
	fputs(first ? "]}" : "\n  ]}", out);
}

int fsp_stats_fuse(struct fsp_store *st, int64_t run, const char *format, FILE *out)
{
	struct summary s;
	struct fsp_fuse_transport x;
	int csv = !strcmp(format, "csv"), json = !strcmp(format, "json");
	int rc = 0;
	load_summary(st, run, &s);
	if (s.traced < 0)
		goto out;
	if (!s.traced) {
		if (json) {
			fputs(",\n  \"fuse_transport\": {\"traced\": false, \"reason\": ", out);
			fsp_json_str(out, s.reason ? s.reason : "");
			fputs("}", out);
		} else if (!csv) {
			fprintf(out, "\nFUSE transport: not traced (%s)\n",
				s.reason ? s.reason : "unknown");
		}
		goto out;
	}
	int have = fsp_store_fuse_transport(st, run, &x);
	if (have < 0) {
		rc = -1;
		goto out;
	}
	if (csv) {
		struct fsp_stats_part q, r;
		for (int op = 0; have && op < FSP_OP__COUNT; op++)
			if (op_parts(&x, op, &q, &r)) {
				csv_part(out, run, op, "fuse_queue", &q);
				csv_part(out, run, op, "fuse_reply", &r);
			}
	} else if (json) {
		fputs(",\n  \"fuse_transport\": {\"traced\": true", out);
		print_json(&s, &x, out);
	} else {
		print_table(&s, &x, out);
	}
	fsp_fuse_transport_free(&x);
out:
	free(s.reason);
	free(s.conn);
	return rc;
}

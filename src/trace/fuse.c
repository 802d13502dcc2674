/*
 * fuse.c - the FUSE-transport trace, user side (fuse.h): fuse.bpf.c loaded
 * through its generated skeleton with the connection to follow, its
 * requests drained into bounded memory (rows.h) (the load, attach and
 * consumer thread are every trace's: ring.h), and storing the rows after
 * the measured window.
 *
 * The ring buffer (4 MiB: 74898 records of 48 bytes and an 8-byte header)
 * holds FSP_TRING_POLL_MS of requests at 15 million a second.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "src/db/fuse_reqs.h"
#include "src/trace/fuse.h"
#include "src/trace/ring.h"
#include "src/trace/rows.h"

#define DEFAULT_RING_BYTES (4u << 20)
#define DEFAULT_INFLIGHT 16384

void fsp_ftrace_save_untraced(struct fsp_store *st, int64_t run, const char *why)
{
	fsp_store_set_attr(st, run, "fuse.traced", "0");
	fsp_store_set_attr(st, run, "fuse.untraced_reason", why);
}

#ifdef HAVE_BPF
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <linux/types.h>
#include "src/trace/fuse_event.h"
#include "src/trace/fuse.skel.h"

struct fsp_ftrace {
	struct fsp_fuse_bpf *skel;
	struct fsp_trace tr;
	struct fsp_trows rows;
	uint32_t conn;
	struct fsp_ftrace_counts c;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct fsp_ftrace *ft = ctx;
	const struct fsp_ft_event *e = data;
	if (size < sizeof(*e))
		return 0;
	struct fsp_fuse_req r = {
		.unique = e->unique, .send_ns = e->send_ns, .end_ns = e->end_ns,
		.conn = e->conn, .opcode = e->opcode, .len = e->len, .error = e->error,
	};
	fsp_trows_add(&ft->rows, &r);
	return 0;
}

struct fsp_ftrace *fsp_ftrace_start(dev_t dev, const struct fsp_ftrace_opts *o, char *why,
				    size_t whylen)
{
	struct fsp_ftrace_opts dflt = { 0 };
	if (!o)
		o = &dflt;
	if (!fsp_trace_have_btf(why, whylen))
		return NULL;
	if (!fsp_trace_has_tracepoint("fuse", "fuse_request_send")) {
		snprintf(why, whylen, "the kernel has no tracepoint fuse:fuse_request_send");
		return NULL;
	}
	struct fsp_ftrace *ft = calloc(1, sizeof(*ft));
	if (!ft) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	ft->conn = (uint32_t)major(dev) << 20 | (uint32_t)minor(dev);
	size_t inflight = fsp_trace_size(o->max_inflight, "FSPRISM_FUSE_TRACE_INFLIGHT",
					 DEFAULT_INFLIGHT);
	fsp_trows_init(&ft->rows, sizeof(struct fsp_fuse_req), fsp_trace_max_rows(o->max_rows));
	fsp_trace_libbpf_quiet();
	ft->skel = fsp_fuse_bpf__open();
	if (!ft->skel) {
		fsp_trace_open_why("FUSE-transport", why, whylen);
		goto fail;
	}
	uint32_t slots = 1;
	while (slots < inflight && slots < (1u << 20))
		slots <<= 1;
	ft->skel->rodata->conn = ft->conn;
	ft->skel->rodata->slot_mask = slots - 1;
	struct fsp_trace_spec spec = {
		.program = "FUSE-transport", .tracepoints = "FUSE",
		.events = ft->skel->maps.events,
		.ring_bytes = fsp_trace_size(o->ring_bytes, "FSPRISM_FUSE_TRACE_RING_BYTES",
					     DEFAULT_RING_BYTES),
		.inflight = ft->skel->maps.inflight, .slots = slots,
		.on_event = on_event, .ctx = ft,
	};
	if (fsp_trace_start(&ft->tr, ft->skel->skeleton, &spec, why, whylen) < 0)
		goto fail;
	return ft;
fail:
	fsp_ftrace_free(ft);
	return NULL;
}

void fsp_ftrace_stop(struct fsp_ftrace *ft)
{
	if (!ft || !fsp_trace_stop(&ft->tr))
		return;
	struct bpf_map *m = ft->skel->maps.lost;
	ft->c.ring_full = fsp_trace_percpu_sum(m, FSP_FT_RING_FULL);
	ft->c.map_full = fsp_trace_percpu_sum(m, FSP_FT_MAP_FULL);
	ft->c.unpaired = fsp_trace_percpu_sum(m, FSP_FT_UNPAIRED);
	/* sent, their end not seen */
	ft->c.open = FSP_TRACE_SLOTS_OPEN(ft->skel->maps.inflight, struct fsp_ft_sent);
	ft->c.missed = ft->c.ring_full + ft->c.map_full + ft->c.open +
		       fsp_trace_prog_misses(ft->skel->progs.fsp_fuse_send) +
		       fsp_trace_prog_misses(ft->skel->progs.fsp_fuse_end);
}

void fsp_ftrace_free(struct fsp_ftrace *ft)
{
	if (!ft)
		return;
	fsp_ftrace_stop(ft);
	fsp_trace_free(&ft->tr);
	fsp_fuse_bpf__destroy(ft->skel);
	fsp_trows_free(&ft->rows);
	free(ft);
}

#else
/* ---- built without eBPF ---- */

struct fsp_ftrace {
	struct fsp_trows rows;
	uint32_t conn;
	struct fsp_ftrace_counts c;
};

struct fsp_ftrace *fsp_ftrace_start(dev_t dev, const struct fsp_ftrace_opts *o, char *why,
				    size_t whylen)
{
	(void)dev;
	(void)o;
	snprintf(why, whylen, "%s", FSP_TRACE_UNBUILT);
	return NULL;
}

void fsp_ftrace_stop(struct fsp_ftrace *ft)
{
	(void)ft;
}

void fsp_ftrace_free(struct fsp_ftrace *ft)
{
	if (ft) {
		fsp_trows_free(&ft->rows);
		free(ft);
	}
}
#endif

void fsp_ftrace_counts(const struct fsp_ftrace *ft, struct fsp_ftrace_counts *c)
{
	*c = ft->c;
	c->requests = ft->rows.n;
	c->rows_full = ft->rows.dropped;
	c->missed += c->rows_full;
}

static int insert_fuse_reqs(struct fsp_store *st, int64_t run, const void *rows, size_t n)
{
	return fsp_fuse_reqs_insert(st, run, rows, n);
}

int fsp_ftrace_save(struct fsp_ftrace *ft, struct fsp_store *st, int64_t run, int step)
{
	struct fsp_ftrace_counts c;
	char conn[24];
	fsp_ftrace_stop(ft);
	fsp_ftrace_counts(ft, &c);
	for (struct fsp_trows_chunk *ch = ft->rows.head; ch; ch = ch->next)
		for (size_t i = 0; i < ch->n; i++)
			FSP_TROWS_AT(ch, struct fsp_fuse_req, i)->step = step;
	int rc = fsp_trows_store(&ft->rows, st, run, insert_fuse_reqs);
	snprintf(conn, sizeof(conn), "%u:%u", ft->conn >> 20, ft->conn & 0xfffff);
	fsp_store_set_attr(st, run, "fuse.traced", "1");
	fsp_store_set_attr(st, run, "fuse.conn", conn);
	fsp_store_set_attr_u64(st, run, "fuse.trace_requests", rc == 0 ? c.requests : 0);
	fsp_store_set_attr_u64(st, run, "fuse.trace_missed", c.missed + (rc == 0 ? 0 : c.requests));
	fsp_store_set_attr_u64(st, run, "fuse.trace_ring_full", c.ring_full);
	fsp_store_set_attr_u64(st, run, "fuse.trace_map_full", c.map_full);
	fsp_store_set_attr_u64(st, run, "fuse.trace_open", c.open);
	fsp_store_set_attr_u64(st, run, "fuse.trace_unpaired", c.unpaired);
	return rc;
}

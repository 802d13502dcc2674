/*
 * fuse.c - the FUSE-transport trace, user side (fuse.h): loading
 * fuse.bpf.c through its generated skeleton with the connection to
 * follow, the consumer thread (ring.h) that drains its ring buffer into
 * bounded memory (rows.h), and storing the rows after the measured window.
 *
 * The ring buffer (4 MiB: 74898 records of 48 bytes and an 8-byte header)
 * holds FSP_TRING_POLL_MS of requests at 15 million a second.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "src/db/fuse_reqs.h"
#include "src/trace/fuse.h"
#include "src/trace/rows.h"

#define DEFAULT_RING_BYTES (4u << 20)
#define DEFAULT_INFLIGHT 16384
#define DEFAULT_MAX_ROWS (4u << 20)

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
#include "src/trace/ring.h"

struct fsp_ftrace {
	struct fsp_fuse_bpf *skel;
	struct fsp_tring ring;
	struct fsp_trows rows;
	uint32_t conn;
	int stopped;
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
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(why, whylen, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s)",
			 strerror(errno));
		return NULL;
	}
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
	size_t ring = o->ring_bytes ? o->ring_bytes
		: fsp_trace_env_size("FSPRISM_FUSE_TRACE_RING_BYTES", DEFAULT_RING_BYTES);
	size_t inflight = o->max_inflight ? o->max_inflight
		: fsp_trace_env_size("FSPRISM_FUSE_TRACE_INFLIGHT", DEFAULT_INFLIGHT);
	fsp_trows_init(&ft->rows, sizeof(struct fsp_fuse_req),
		       o->max_rows ? o->max_rows
				   : fsp_trace_env_size("FSPRISM_TRACE_MAX_ROWS", DEFAULT_MAX_ROWS));
	fsp_trace_libbpf_quiet();
	ft->skel = fsp_fuse_bpf__open();
	if (!ft->skel) {
		snprintf(why, whylen, "cannot open the FUSE-transport BPF program: %s",
			 strerror(errno));
		goto fail;
	}
	uint32_t slots = 1;
	while (slots < inflight && slots < (1u << 20))
		slots <<= 1;
	ft->skel->rodata->conn = ft->conn;
	ft->skel->rodata->slot_mask = slots - 1;
	int err = bpf_map__set_max_entries(ft->skel->maps.events, (uint32_t)ring);
	if (!err)
		err = bpf_map__set_max_entries(ft->skel->maps.inflight, slots);
	if (!err)
		err = fsp_fuse_bpf__load(ft->skel);
	if (err) {
		fsp_trace_load_why(err, "FUSE-transport", why, whylen);
		goto fail;
	}
	err = fsp_fuse_bpf__attach(ft->skel);
	if (err) {
		fsp_trace_attach_why(err, "FUSE", why, whylen);
		goto fail;
	}
	if (fsp_tring_start(&ft->ring, ft->skel->maps.events, on_event, ft, why, whylen) < 0)
		goto fail;
	return ft;
fail:
	fsp_ftrace_free(ft);
	return NULL;
}

/* Slots still open once detached: sent, their end not seen. */
static uint64_t still_open(struct fsp_ftrace *ft)
{
	struct bpf_map *m = ft->skel->maps.inflight;
	uint32_t n = bpf_map__max_entries(m);
	struct fsp_ft_sent v;
	uint64_t open = 0;
	for (uint32_t i = 0; i < n; i++)
		if (bpf_map__lookup_elem(m, &i, sizeof(i), &v, sizeof(v), 0) == 0 && v.open)
			open++;
	return open;
}

void fsp_ftrace_stop(struct fsp_ftrace *ft)
{
	if (!ft || ft->stopped)
		return;
	ft->stopped = 1;
	if (ft->skel)
		fsp_fuse_bpf__detach(ft->skel);
	fsp_tring_stop(&ft->ring);
	if (ft->skel) {
		struct bpf_map *m = ft->skel->maps.lost;
		ft->c.ring_full = fsp_trace_percpu_sum(m, FSP_FT_RING_FULL);
		ft->c.map_full = fsp_trace_percpu_sum(m, FSP_FT_MAP_FULL);
		ft->c.unpaired = fsp_trace_percpu_sum(m, FSP_FT_UNPAIRED);
		ft->c.open = still_open(ft);
		ft->c.missed = ft->c.ring_full + ft->c.map_full + ft->c.open +
			       fsp_trace_prog_misses(ft->skel->progs.fsp_fuse_send) +
			       fsp_trace_prog_misses(ft->skel->progs.fsp_fuse_end);
	}
}

void fsp_ftrace_free(struct fsp_ftrace *ft)
{
	if (!ft)
		return;
	fsp_ftrace_stop(ft);
	fsp_tring_free(&ft->ring);
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
	snprintf(why, whylen, "this fsprism was built without eBPF (configure --disable-bpf, or libbpf, clang, bpftool or the kernel's BTF were missing)");
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

int fsp_ftrace_save(struct fsp_ftrace *ft, struct fsp_store *st, int64_t run, int step)
{
	struct fsp_ftrace_counts c;
	char conn[24];
	fsp_ftrace_stop(ft);
	fsp_ftrace_counts(ft, &c);
	int rc = fsp_store_tx_begin(st);
	for (struct fsp_trows_chunk *ch = ft->rows.head; rc == 0 && ch; ch = ch->next) {
		for (size_t i = 0; i < ch->n; i++)
			FSP_TROWS_AT(ch, struct fsp_fuse_req, i)->step = step;
		if (fsp_fuse_reqs_insert(st, run, FSP_TROWS_AT(ch, struct fsp_fuse_req, 0),
					 ch->n) != 0) {
			fsp_store_tx_rollback(st);
			rc = -1;
		}
	}
	if (rc == 0)
		rc = fsp_store_tx_commit(st);
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

/*
 * fuse.bpf.c - kernel side of the FUSE-transport trace (fuse.c loads it).
 *
 * On the plain tracepoints fuse:fuse_request_send (the request is queued
 * for the daemon) and fuse:fuse_request_end (its reply is done, or it was
 * aborted), filtered to one connection (the mount's st_dev, read-only data
 * set before load): the send time waits in a hash map keyed by the
 * request's `unique` until its end, which sends one fsp_ft_event through
 * the ring buffer without waking the reader. A full map or ring buffer is
 * counted in `lost`, never silent.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include "src/trace/fuse_event.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 conn = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* set by the loader */
	__type(key, __u64);
	__type(value, struct fsp_ft_sent);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* set by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FSP_FT_NLOST);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &which);
	if (n)
		(*n)++;
}

SEC("tracepoint/fuse/fuse_request_send")
int fsp_fuse_send(struct trace_event_raw_fuse_request_send *ctx)
{
	if (ctx->connection != conn)
		return 0;
	struct fsp_ft_sent s = {
		.send_ns = bpf_ktime_get_ns(),
		.opcode = (__u32)ctx->opcode,
		.len = ctx->len,
	};
	__u64 unique = ctx->unique;
	if (bpf_map_update_elem(&inflight, &unique, &s, BPF_ANY) != 0)
		count(FSP_FT_MAP_FULL);
	return 0;
}

SEC("tracepoint/fuse/fuse_request_end")
int fsp_fuse_end(struct trace_event_raw_fuse_request_end *ctx)
{
	if (ctx->connection != conn)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 unique = ctx->unique;
	struct fsp_ft_sent *s = bpf_map_lookup_elem(&inflight, &unique);
	if (!s) {
		count(FSP_FT_UNPAIRED);
		return 0;
	}
	struct fsp_ft_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(FSP_FT_RING_FULL);
	} else {
		e->unique = unique;
		e->send_ns = s->send_ns;
		e->end_ns = now;
		e->conn = conn;
		e->opcode = s->opcode;
		e->len = s->len;
		e->error = ctx->error;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP); /* the reader polls (ring.c) */
	}
	bpf_map_delete_elem(&inflight, &unique);
	return 0;
}

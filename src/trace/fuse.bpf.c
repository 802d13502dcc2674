/*
 * fuse.bpf.c - kernel side of the FUSE-transport trace (fuse.c loads it).
 *
 * On the tracepoints fuse:fuse_request_send (the request is queued for the
 * daemon) and fuse:fuse_request_end (its reply is done, or it was
 * aborted), as tp_btf programs that read the struct fuse_req the
 * tracepoint is given (attached through the kernel's BTF: no tracefs
 * needed, and no event record filled), filtered to one connection (the
 * mount's st_dev, read-only data set before load): the send time waits in the request's slot of an array
 * indexed by its `unique` (which the kernel steps by 2, so the slots are
 * used in turn: no hashing, locking or deleting, as the block trace's
 * slots) until its end, which sends one fsp_ft_event through the ring
 * buffer without waking the reader. A slot taken over while still open (more
 * requests in flight than slots) or a full ring buffer is counted in
 * `lost`, never silent.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "src/trace/fuse_event.h"

char LICENSE[] SEC("license") = "GPL";

/* the compiler keeps these loads and stores, in this order (x86 keeps the
 * order of stores and of loads among CPUs) */
#define barrier() asm volatile("" ::: "memory")
#define READ_ONCE_U64(x) (*(volatile __u64 *)&(x))
#define WRITE_ONCE_U64(x, v) (*(volatile __u64 *)&(x) = (v))

const volatile __u32 conn = 0;
const volatile __u32 slot_mask = 0; /* slots - 1, a power of two less one */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by the loader: slot_mask + 1 */
	__type(key, __u32);
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

/* the connection a request belongs to: what the tracepoints call
 * `connection`, the st_dev of the mount */
static __always_inline __u32 req_conn(const struct fuse_req *req)
{
	return req->fm->fc->dev;
}

SEC("tp_btf/fuse_request_send")
int BPF_PROG(fsp_fuse_send, const struct fuse_req *req)
{
	if (req_conn(req) != conn)
		return 0;
	__u64 unique = req->in.h.unique;
	__u32 idx = (__u32)(unique >> 1) & slot_mask;
	struct fsp_ft_sent *s = bpf_map_lookup_elem(&inflight, &idx);
	if (!s)
		return 0;
	if (s->open)
		count(FSP_FT_MAP_FULL);
	/* unique first: an end reading this slot meanwhile sees it change */
	WRITE_ONCE_U64(s->unique, unique);
	barrier();
	s->send_ns = bpf_ktime_get_ns();
	s->opcode = req->in.h.opcode;
	s->len = req->in.h.len;
	s->open = 1;
	return 0;
}

SEC("tp_btf/fuse_request_end")
int BPF_PROG(fsp_fuse_end, const struct fuse_req *req)
{
	if (req_conn(req) != conn)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 unique = req->in.h.unique;
	__u32 idx = (__u32)(unique >> 1) & slot_mask;
	struct fsp_ft_sent *s = bpf_map_lookup_elem(&inflight, &idx);
	if (!s || !s->open || s->unique != unique) {
		count(FSP_FT_UNPAIRED);
		return 0;
	}
	/* the slot's fields, then its owner again: a send on another CPU may
	 * have taken the slot over meanwhile (it writes unique first), and then
	 * these fields are not this request's */
	__u64 send_ns = s->send_ns;
	__u32 opcode = s->opcode, len = s->len;
	barrier();
	if (READ_ONCE_U64(s->unique) != unique) {
		count(FSP_FT_UNPAIRED);
		return 0;
	}
	struct fsp_ft_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(FSP_FT_RING_FULL);
	} else {
		e->unique = unique;
		e->send_ns = send_ns;
		e->end_ns = now;
		e->conn = conn;
		e->opcode = opcode;
		e->len = len;
		e->error = req->out.h.error;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP); /* the reader polls (ring.c) */
	}
	s->open = 0;
	return 0;
}

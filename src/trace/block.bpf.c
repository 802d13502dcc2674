/*
 * block.bpf.c - kernel side of the block-layer trace (block.c loads it).
 *
 * Follows each block request on the traced devices through insert and
 * issue to completion, with BTF tracepoints (this kernel has no kprobes),
 * and sends one fsp_bt_event per completed request through a ring buffer,
 * with the moment the block layer made the request from its first bio (the
 * kernel's start_time_ns). A full ring buffer is counted in `drops`, never
 * silent. Requests are keyed by their struct request pointer while in
 * flight. Two program runs per request (issue, complete; a third with an
 * I/O scheduler): the cost per request is what limits the rate.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "src/trace/block_event.h"

char LICENSE[] SEC("license") = "GPL";

/* The traced disks and their sector ranges, set by the loader before load:
 * read-only data, so the filter is a short scan the verifier bounds, with
 * no map lookup on the path of every request of every disk. */
const volatile __u32 ndevs = 0;
const volatile __u32 dev_ids[FSP_BT_MAX_DEVS] = {};
const volatile struct fsp_bt_range dev_ranges[FSP_BT_MAX_DEVS] = {};

struct rq_seen {
	__u64 insert_ns, issue_ns;
	__u32 tgid, bytes;
	__u16 op, flags;
	__u32 pad;
};

/* requests in flight on a traced disk, from first sight to completion */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct rq_seen);
} reqs SEC(".maps");

/* size set by the loader before load (power of two, >= one page) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23);
} events SEC(".maps");

/* completed requests that found the ring buffer full */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	return BPF_CORE_READ(disk, part0, bd_dev);
}

/* Is this request one of ours? Flushes (no bytes) concern the whole disk,
 * so they count for any range on it. */
static __always_inline int rq_traced(struct request *rq)
{
	__u32 dev = rq_dev(rq);
	__u64 sector = BPF_CORE_READ(rq, __sector);
	__u32 bytes = BPF_CORE_READ(rq, __data_len);
	for (int i = 0; i < FSP_BT_MAX_DEVS; i++) {
		if (i >= ndevs)
			break;
		if (dev_ids[i] == dev)
			return bytes == 0 || (sector >= dev_ranges[i].first &&
					      sector < dev_ranges[i].end);
	}
	return 0;
}

static __always_inline void op_flags(__u32 opf, __u16 *op, __u16 *flags)
{
	__u32 o = opf & ((1u << 8) - 1); /* REQ_OP_MASK: REQ_OP_BITS is 8 */
	__u16 f = 0;

	if (o == bpf_core_enum_value(enum req_op, REQ_OP_READ))
		*op = FSP_BT_OP_READ;
	else if (o == bpf_core_enum_value(enum req_op, REQ_OP_WRITE))
		*op = FSP_BT_OP_WRITE;
	else if (o == bpf_core_enum_value(enum req_op, REQ_OP_FLUSH))
		*op = FSP_BT_OP_FLUSH;
	else if (o == bpf_core_enum_value(enum req_op, REQ_OP_DISCARD))
		*op = FSP_BT_OP_DISCARD;
	else if (o == bpf_core_enum_value(enum req_op, REQ_OP_WRITE_ZEROES))
		*op = FSP_BT_OP_WRITE_ZEROES;
	else
		*op = FSP_BT_OP_OTHER;
	if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)))
		f |= FSP_BT_SYNC;
	if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		f |= FSP_BT_META;
	if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)))
		f |= FSP_BT_FUA;
	if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)))
		f |= FSP_BT_PREFLUSH;
	if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_RAHEAD)))
		f |= FSP_BT_RAHEAD;
	*flags = f;
}

/*
 * The request's entry, made on first sight: its insert, or its issue when
 * it is issued directly. Both run in the context of the task that queued
 * it (a plug flushed by it, or a direct issue), except a re-issue after a
 * requeue, which finds the entry already made.
 */
static __always_inline struct rq_seen *rq_entry(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rq_seen *e = bpf_map_lookup_elem(&reqs, &key);
	if (e)
		return e;
	struct rq_seen n = { .tgid = (__u32)(bpf_get_current_pid_tgid() >> 32) };
	bpf_map_update_elem(&reqs, &key, &n, BPF_ANY);
	return bpf_map_lookup_elem(&reqs, &key);
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(fsp_rq_insert, struct request *rq)
{
	if (!rq_traced(rq))
		return 0;
	struct rq_seen *e = rq_entry(rq);
	if (e && !e->insert_ns)
		e->insert_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(fsp_rq_issue, struct request *rq)
{
	if (!rq_traced(rq))
		return 0;
	struct rq_seen *e = rq_entry(rq);
	if (!e)
		return 0;
	e->issue_ns = bpf_ktime_get_ns(); /* a requeued request: its last issue */
	e->bytes = BPF_CORE_READ(rq, __data_len);
	op_flags(BPF_CORE_READ(rq, cmd_flags), &e->op, &e->flags);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(fsp_rq_complete, struct request *rq, blk_status_t error,
	     unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct rq_seen *e = bpf_map_lookup_elem(&reqs, &key);
	if (!e)
		return 0; /* not ours, or issued before the trace began */
	if (!e->issue_ns) {
		bpf_map_delete_elem(&reqs, &key);
		return 0;
	}
	struct fsp_bt_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__u32 zero = 0;
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			(*d)++;
		bpf_map_delete_elem(&reqs, &key);
		return 0;
	}
	/* made from its first bio: the kernel's own stamp (iostats), 0 without */
	ev->queue_ns = BPF_CORE_READ(rq, start_time_ns);
	ev->insert_ns = e->insert_ns;
	ev->issue_ns = e->issue_ns;
	ev->complete_ns = bpf_ktime_get_ns();
	ev->sector = BPF_CORE_READ(rq, __sector);
	ev->dev = rq_dev(rq);
	ev->bytes = e->bytes;
	ev->tgid = e->tgid;
	ev->op = e->op;
	ev->flags = e->flags;
	ev->error = error;
	ev->pad = 0;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP); /* the reader polls (block.c) */
	/* a partial completion ends the request's record: the rest of it
	 * completes without an entry and is not sent again */
	bpf_map_delete_elem(&reqs, &key);
	return 0;
}

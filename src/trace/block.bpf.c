/*
 * block.bpf.c - kernel side of the block-layer trace (block.c loads it).
 *
 * Follows each block request on the traced devices through insert and
 * issue to completion, with BTF tracepoints (this kernel has no kprobes),
 * and sends one fsp_bt_event per completed request through a ring buffer,
 * with the moment the block layer made the request from its first bio (the
 * kernel's start_time_ns). A full ring buffer is counted in `drops`, never
 * silent. A request in flight has the slot of its driver tag. Two program
 * runs per request (issue, complete; a third with an I/O scheduler), with
 * no hash map on that path: the cost per request is what limits the rate.
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
/* the in-flight slot of a request: disk index, hardware queue, driver tag */
const volatile __u32 tag_bits = 0, queue_bits = 0;

/*
 * Requests in flight, one slot per (disk, hardware queue, driver tag): a
 * tag belongs to one request from its issue until its completion has been
 * traced (the tag is freed after the block_rq_complete tracepoint), so an
 * array indexed by it needs no hashing, locking or deleting. `rq` says
 * whose the slot is.
 */
#define slot fsp_bt_slot

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by the loader */
	__type(key, __u32);
	__type(value, struct slot);
} inflight SEC(".maps");

/* Inserted requests (only with an I/O scheduler), until their issue: they
 * have no driver tag yet. */
struct inserted {
	__u64 ns;
	__u32 tgid, tid;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct inserted);
} inserts SEC(".maps");

/* set once anything was inserted: until then the issue skips the lookup */
int any_inserted = 0;

/* size set by the loader before load (power of two, >= one page) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23);
} events SEC(".maps");

/* requests lost: [0] found the ring buffer full, [1] had a tag or queue
 * beyond the slots, [2] completed unseen (their slot was taken over) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/*
 * Fields are read by plain loads: tp_btf arguments are typed kernel
 * pointers the verifier lets a program dereference (a faulting load reads
 * 0), with CO-RE relocations from vmlinux.h's preserve_access_index. That
 * is several times cheaper than bpf_probe_read_kernel per field.
 */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;
	if (!disk)
		return 0;
	return disk->part0->bd_dev;
}

/* The index of the request's disk among ours, or -1 when it is not ours.
 * Flushes (no bytes) concern the whole disk, so they count for any range
 * on it. */
static __always_inline int rq_traced(struct request *rq)
{
	__u32 dev = rq_dev(rq);
	__u64 sector = rq->__sector;
	__u32 bytes = rq->__data_len;
	for (int i = 0; i < FSP_BT_MAX_DEVS; i++) {
		if (i >= ndevs)
			break;
		if (dev_ids[i] == dev)
			return bytes == 0 || (sector >= dev_ranges[i].first &&
					      sector < dev_ranges[i].end) ? i : -1;
	}
	return -1;
}

static __always_inline void count_drop(__u32 which)
{
	__u64 *d = bpf_map_lookup_elem(&drops, &which);
	if (d)
		(*d)++;
}

/* The request's slot, or NULL (counted) when its tag or queue is beyond
 * the slots the loader made. */
static __always_inline struct slot *rq_slot(struct request *rq, int disk)
{
	__u32 tag = (__u32)rq->tag;
	__u32 queue = rq->mq_hctx->queue_num;
	if (tag >> tag_bits || queue >> queue_bits) {
		count_drop(1);
		return 0;
	}
	__u32 idx = (((__u32)disk << queue_bits | queue) << tag_bits) | tag;
	return bpf_map_lookup_elem(&inflight, &idx);
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

/* the current task's process (high half) and thread (low half) */
static __always_inline void current_task(__u32 *tgid, __u32 *tid)
{
	__u64 id = bpf_get_current_pid_tgid();
	*tgid = (__u32)(id >> 32);
	*tid = (__u32)id;
}

/*
 * The task that queued a request is the one its insert or, when it is
 * issued directly (the common case without an I/O scheduler), its issue
 * runs in: a plug flushed by that task, or its direct issue.
 */
SEC("tp_btf/block_rq_insert")
int BPF_PROG(fsp_rq_insert, struct request *rq)
{
	if (rq_traced(rq) < 0)
		return 0;
	__u64 key = (__u64)rq;
	struct inserted n = { .ns = bpf_ktime_get_ns() };
	current_task(&n.tgid, &n.tid);
	bpf_map_update_elem(&inserts, &key, &n, BPF_NOEXIST); /* a requeue keeps the first */
	if (!any_inserted)
		any_inserted = 1;
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(fsp_rq_issue, struct request *rq)
{
	int disk = rq_traced(rq);
	if (disk < 0)
		return 0;
	struct slot *e = rq_slot(rq, disk);
	if (!e)
		return 0;
	/* the slot's request was issued and never seen to complete (a
	 * requeue closes it first): lost, and counted. Without an I/O
	 * scheduler a tag always has the same struct request, so only this
	 * flag tells a new issue from the old one. */
	if (e->open)
		count_drop(2);
	e->open = 1;
	e->rq = (__u64)rq;
	e->issue_ns = bpf_ktime_get_ns(); /* a requeued request: its last issue */
	e->bytes = rq->__data_len;
	op_flags(rq->cmd_flags, &e->op, &e->flags);
	e->insert_ns = 0;
	e->tgid = 0;
	e->tid = 0;
	if (any_inserted) {
		__u64 key = (__u64)rq;
		struct inserted *in = bpf_map_lookup_elem(&inserts, &key);
		if (in) {
			e->insert_ns = in->ns;
			e->tgid = in->tgid;
			e->tid = in->tid;
			bpf_map_delete_elem(&inserts, &key);
		}
	}
	if (!e->tgid)
		current_task(&e->tgid, &e->tid);
	return 0;
}

/* A requeued request is issued again later: not a lost completion. */
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(fsp_rq_requeue, struct request *rq)
{
	int disk = rq_traced(rq);
	if (disk < 0)
		return 0;
	struct slot *e = rq_slot(rq, disk);
	if (e && e->rq == (__u64)rq)
		e->open = 0;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(fsp_rq_complete, struct request *rq, blk_status_t error,
	     unsigned int nr_bytes)
{
	int disk = rq_traced(rq);
	if (disk < 0)
		return 0;
	__u32 tag = (__u32)rq->tag;
	__u32 queue = rq->mq_hctx->queue_num;
	if (tag >> tag_bits || queue >> queue_bits)
		return 0; /* counted at its issue */
	__u32 idx = (((__u32)disk << queue_bits | queue) << tag_bits) | tag;
	struct slot *e = bpf_map_lookup_elem(&inflight, &idx);
	/* not ours: issued before the trace began, or a partial completion
	 * after the first (the first ends the request's record) */
	if (!e || !e->open || e->rq != (__u64)rq)
		return 0;
	e->open = 0;
	struct fsp_bt_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_drop(0);
		return 0;
	}
	/* made from its first bio: the kernel's own stamp (iostats), 0 without */
	ev->queue_ns = rq->start_time_ns;
	ev->insert_ns = e->insert_ns;
	ev->issue_ns = e->issue_ns;
	ev->complete_ns = bpf_ktime_get_ns();
	ev->sector = rq->__sector;
	ev->dev = dev_ids[disk & (FSP_BT_MAX_DEVS - 1)];
	ev->bytes = e->bytes;
	ev->tgid = e->tgid;
	ev->op = e->op;
	ev->flags = e->flags;
	ev->error = error;
	ev->tid = e->tid;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP); /* the reader polls (block.c) */
	return 0;
}

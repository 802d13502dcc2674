/*
 * block_event.h - what the block-layer BPF program (block.bpf.c) and its
 * reader (block.c) share: the filter key and value, and the record one
 * completed block request becomes in the ring buffer.
 *
 * Included by both sides; each provides __u32/__u64 first (vmlinux.h in BPF,
 * <linux/types.h> in user space). Times are bpf_ktime_get_ns(), the kernel's
 * CLOCK_MONOTONIC, the clock of every *_ns in the results database.
 */
#ifndef FSP_TRACE_BLOCK_EVENT_H
#define FSP_TRACE_BLOCK_EVENT_H

/* Devices traced: the key is a whole disk's kernel dev_t (major << 20 |
 * minor, as bd_dev holds it); requests on it count when their first sector
 * lies in [first, end) (a partition's range, or all of the disk). */
#define FSP_BT_MAX_DEVS 16
struct fsp_bt_range {
	__u64 first, end;
};

/* One in-flight slot of the program's `inflight` array (block.bpf.c). */
struct fsp_bt_slot {
	__u64 rq;
	__u64 insert_ns, issue_ns;
	__u32 tgid, bytes;
	__u16 op, flags;
	__u32 open; /* issued, completion not yet seen */
	__u32 tid, pad;
};

/* fsp_bt_event.op */
enum {
	FSP_BT_OP_READ = 0,
	FSP_BT_OP_WRITE = 1,
	FSP_BT_OP_FLUSH = 2,
	FSP_BT_OP_DISCARD = 3,
	FSP_BT_OP_WRITE_ZEROES = 4,
	FSP_BT_OP_OTHER = 5,
};

/* fsp_bt_event.flags (and block_ios.flags, docs/schema.md) */
#define FSP_BT_SYNC 1u
#define FSP_BT_META 2u
#define FSP_BT_FUA 4u
#define FSP_BT_PREFLUSH 8u
#define FSP_BT_RAHEAD 16u

struct fsp_bt_event {
	__u64 queue_ns;    /* made from its first bio (start_time_ns; 0: no iostats) */
	__u64 insert_ns;   /* inserted into the queue (0: issued directly) */
	__u64 issue_ns;    /* sent to the driver */
	__u64 complete_ns; /* completed */
	__u64 sector;      /* first sector (512 bytes) on the whole disk */
	__u32 dev;         /* whole disk, kernel dev_t */
	__u32 bytes;       /* request size when issued */
	__u32 tgid;        /* task that queued it: first seen at insert or issue */
	__u16 op;          /* FSP_BT_OP_* */
	__u16 flags;       /* FSP_BT_* */
	__s32 error;       /* blk_status_t at completion (0: ok) */
	__u32 tid;         /* the thread of that task, taken with tgid */
};

#endif

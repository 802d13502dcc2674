/*
 * fuse_event.h - what the FUSE-transport BPF program (fuse.bpf.c) and its
 * reader (fuse.c) share: the record one completed FUSE request becomes in
 * the ring buffer, and the program's loss counters.
 *
 * Included by both sides; each provides __u32/__u64 first (vmlinux.h in BPF,
 * <linux/types.h> in user space). Times are bpf_ktime_get_ns(), the kernel's
 * CLOCK_MONOTONIC, the clock of every *_ns in the results database.
 */
#ifndef FSP_TRACE_FUSE_EVENT_H
#define FSP_TRACE_FUSE_EVENT_H

/* A request sent and not yet ended: its slot of the program's `inflight`
 * array, indexed by (unique >> 1) & slot_mask (uniques step by 2). */
struct fsp_ft_sent {
	__u64 unique;
	__u64 send_ns;
	__u32 opcode, len;
	__u32 open, pad; /* sent, its end not yet seen */
};

/* Counters of the per-CPU `lost` array. */
enum {
	FSP_FT_RING_FULL = 0, /* ended, but the ring buffer was full */
	FSP_FT_MAP_FULL = 1,  /* sent onto a slot still open: that request's end
				 will not be seen (more in flight than slots) */
	FSP_FT_UNPAIRED = 2,  /* ended with no send seen (sent before attach, or
				 its slot taken over) */
	FSP_FT_NLOST = 3,
};

struct fsp_ft_event {
	__u64 unique;
	__u64 send_ns, end_ns;
	__u32 conn;    /* the connection: the mount's st_dev, kernel dev_t */
	__u32 opcode;  /* FUSE_* */
	__u32 len;     /* the request's length at send (header included) */
	__s32 error;   /* the reply's error (0, or -errno) */
};

#endif

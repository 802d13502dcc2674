/*
 * request.h - one FUSE request as the handlers (fuse_fs.c) and the data
 * paths (dp_*.c, behind datapath.h) both see it: the mount's state, the
 * request's timing and record, the handle's bits, and the small helpers
 * both sides use. Internal to fs/fuse/.
 *
 * Timing of one request (op_begin .. op_log):
 *   start    fsp_now_ns() at handler entry,
 *   backing  the summed durations of the backing system calls (BACKING()),
 *   emu      time in the emulated store beyond moving the caller's data
 *            (EMU_CALL, EMU_TIME),
 *   inject   the delay --inject added (inside total, outside backing and
 *            emu: fsprism's own layer time, shown on its own),
 *   model    the cost --device-model added (the same, on its own),
 *   total    fsp_now_ns() - start, taken just before fuse_reply_*().
 * With --record=off (fs->timing == 0) no clock is read at all.
 *
 * The request's identity on the wire: the worker loop (daemon.c) puts the
 * kernel's `unique` and the moment it read the request from /dev/fuse in
 * fsp_wire, this thread's, before libfuse calls the handler; op_begin
 * copies both into the op, which carries them (copied whole) into an aio
 * slot or a lock waiter, so a reply from another thread logs the right
 * ones.
 */
#ifndef FSP_FS_REQUEST_H
#define FSP_FS_REQUEST_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "fs/emu/store.h"
#include "fs/fuse/fuse_fs.h"
#include "fs/fuse/inode.h"
#include "src/base/clock.h"

struct fsp_aio;

/* The request this worker thread is serving: set by the worker loop
 * (daemon.c) before fuse_session_process_buf; 0 where unknown (spliced
 * requests, libfuse's own loop with --clone-fd). */
struct fsp_wire {
	uint64_t unique;
	uint64_t recv_ns;
};
extern __thread struct fsp_wire fsp_wire;

struct fsp_fs {
	struct fsp_itable *itable;
	struct fsp_oplog *log;
	double attr_timeout, entry_timeout;
	int timing;
	int track_inflight;
	int writeback_cache;
	int splice;
	int is_root;           /* can switch fsuid/fsgid per request */
	unsigned max_write;
	unsigned max_background;
	size_t bufsize;        /* per-thread bounce buffer */
	struct __user_cap_data_struct caps[2]; /* effective caps to restore */
	unsigned inflight, max_inflight;
	uint64_t buffer_bytes, huge_buffer_bytes; /* the aio slots' buffers, at stop */
	int use_aio;           /* O_DIRECT reads/writes through fs/fuse/aio.h */
	int noatime;           /* -o noatime: backing files opened O_NOATIME */
	int nodiratime;        /* -o nodiratime (or noatime): directories too */
	uint64_t direct_fallbacks; /* O_DIRECT requests served buffered (atomic) */
	struct fsp_aio *aio;   /* started by fsp_fs_start */
	/* lock requests waiting in threads of their own (lock_wait) */
	pthread_mutex_t waiters_lock;
	unsigned waiters;
	int stopping;          /* fsp_fs_stop ran: waiters neither reply nor log */
	/* emulation */
	struct emu_store *emu;  /* NULL: plain passthrough */
	dev_t emu_dev;          /* regular files on this device are emulated */
	int hide_store;         /* hide FSP_STORE_NAME at the root */
	uint32_t emu_bsize;     /* store block size, for st_blksize */
	pthread_mutex_t pending_lock;
	struct fsp_rec *pending; /* device records from before the log existed */
	size_t npending, pending_cap;
	/* --inject: the rules (NULL: none, the one branch a request pays) and
	 * the backing root's path, to match nodes' paths below it */
	const struct fsp_inject *inject;
	char *inject_root;
	/* --device-model: the model drive its data IO pays (NULL: none), one
	 * IO's update at a time */
	struct fsp_model *model;
	pthread_mutex_t model_lock;
	int hooks;             /* inject or model: the one branch of op_enter */
};

/* ---- per-request timing ---- */

struct op {
	struct fsp_fs *fs;
	uint64_t node;     /* backing inode number, for the record */
	uint64_t start;
	uint64_t backing;
	uint64_t emu;      /* time in the store beyond moving the caller's data */
	uint64_t inject;   /* the delay --inject added */
	uint64_t model;    /* the cost --device-model added */
	uint64_t total;
	uint64_t fuse_unique; /* the kernel's id of the request (fsp_wire) */
	uint64_t recv_ns;     /* read from /dev/fuse (fsp_wire) */
	uint32_t pid;
	int timing;
};

static inline void op_begin(struct op *o, fuse_req_t req)
{
	struct fsp_fs *fs = fuse_req_userdata(req);
	*o = (struct op){ .fs = fs, .timing = fs->timing }; /* the rest 0 */
	if (o->timing) {
		o->start = fsp_now_ns();
		o->pid = (uint32_t)fuse_req_ctx(req)->pid;
		o->fuse_unique = fsp_wire.unique;
		o->recv_ns = fsp_wire.recv_ns;
	}
}

/* The time expr takes, added to the op's field (when timing); errno
 * survives (the vDSO clock keeps it). */
#define OP_TIME(o, field, expr) ({                                      \
	uint64_t ot_t0_ = (o)->timing ? fsp_now_ns() : 0;               \
	__auto_type ot_r_ = (expr);                                     \
	if ((o)->timing)                                                \
		(o)->field += fsp_now_ns() - ot_t0_;                    \
	ot_r_; })

/* Time a backing system call. */
#define BACKING(o, expr) OP_TIME(o, backing, expr)

/*
 * Call the emulated store with context cx (filled by op_cx): the store's IO
 * of the caller's own data (cx->data_ns) counts as backing time, the rest of
 * the call (its CPU, metadata, journal, flushes) as emulation time.
 */
#define EMU_CALL(o, cx, expr) ({                                        \
	(cx)->data_ns = 0;                                              \
	(cx)->other_ns = 0;                                             \
	uint64_t em_t0_ = (o)->timing ? fsp_now_ns() : 0;               \
	__auto_type em_r_ = (expr);                                     \
	if ((o)->timing) {                                              \
		uint64_t em_d_ = fsp_now_ns() - em_t0_;                 \
		uint64_t em_b_ = (cx)->data_ns < em_d_ ? (cx)->data_ns : em_d_; \
		(o)->backing += em_b_;                                  \
		(o)->emu += em_d_ - em_b_;                              \
	}                                                               \
	em_r_; })

/* A store call that does no IO for the caller (sizes, seek, statfs). */
#define EMU_TIME(o, expr) OP_TIME(o, emu, expr)

/* The store's context for this operation: its device IO is tied to it. */
static inline void op_cx(const struct op *o, struct emu_cx *cx)
{
	cx->cause_ns = o->start;
	cx->node = o->node;
	cx->pid = o->pid;
	cx->data_ns = 0;
	cx->other_ns = 0;
}

static inline void op_end(struct op *o)
{
	if (o->timing)
		o->total = fsp_now_ns() - o->start;
}

static inline void op_log(struct op *o, int opcode, uint64_t offset,
			  uint64_t length, uint64_t bytes, int err)
{
	if (!o->timing || !o->fs->log)
		return;
	uint64_t backing = o->backing < o->total ? o->backing : o->total;
	uint64_t emu = o->emu < o->total - backing ? o->emu : o->total - backing;
	struct fsp_rec r = {
		.start_ns = o->start,
		.total_ns = o->total,
		.backing_ns = backing,
		.emu_ns = emu,
		.inject_ns = o->inject,
		.model_ns = o->model,
		.node = o->node,
		.offset = offset,
		.length = length > UINT32_MAX ? UINT32_MAX : (uint32_t)length,
		.pid = o->pid,
		.result = err,
		.op = (uint16_t)opcode,
		.step = 0,
		.bytes = bytes,
		.fuse_unique = o->fuse_unique,
		.recv_ns = o->recv_ns,
	};
	fsp_oplog_add(o->fs->log, &r);
}

/* ---- file handles ---- */

/*
 * fuse_file_info->fh: the backing fd in bits 0-31; bits 32-33 the data
 * path chosen at open (FSP_DP_*, datapath.h: FH_DIRECT an O_DIRECT
 * passthrough handle, FH_EMU data in the emulated store). An O_DIRECT
 * handle also carries log2 of the backing file's direct-IO alignment (bits
 * 34-38) and a second, buffered fd of the same file (bits 40-63), for the
 * requests the direct one cannot serve (dp_direct.c).
 */
#define FH_PATH_SHIFT 32
#define FH_DIRECT (1ull << 32)
#define FH_EMU (1ull << 33)
#define FH_ALIGN_SHIFT 34
#define FH_TWIN_SHIFT 40
#define FH_TWIN_MAX ((1 << 24) - 1)
static inline int fh_fd(const struct fuse_file_info *fi)
{
	return (int)(uint32_t)fi->fh;
}
static inline int fh_emu(const struct fuse_file_info *fi)
{
	return (fi->fh & FH_EMU) != 0;
}

/* ---- helpers of handlers and data paths ---- */

static inline void proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* O_NOATIME for a backing open where the mount asks for it (-o noatime;
 * -o nodiratime for directories), so reads through the mount leave the
 * backing atime alone. */
static inline int noatime_flag(const struct fsp_fs *fs, int dir)
{
	return (fs->noatime || (dir && fs->nodiratime)) ? O_NOATIME : 0;
}

/* openat with the mount's O_NOATIME; again without it where it is refused
 * (EPERM: neither the owner nor CAP_FOWNER). */
static inline int open_noatime(const struct fsp_fs *fs, int dirfd, const char *path,
			       int flags, mode_t mode, int dir)
{
	int na = noatime_flag(fs, dir);
	int fd = openat(dirfd, path, flags | na, mode);
	if (fd < 0 && na && errno == EPERM)
		fd = openat(dirfd, path, flags, mode);
	return fd;
}

/*
 * Per-thread page-aligned buffer for the synchronous paths (reads, O_DIRECT
 * writes, the emulation), from one process-wide pool in huge pages
 * (src/base/bufpool.h), kept in fuse_fs.c. The pool lives as long as the
 * process; a thread that ends gives its buffer back. The common case (the
 * buffer is large enough) is two thread-local loads.
 */
extern __thread void *fsp_tbuf;
extern __thread size_t fsp_tbuf_len;
void *fsp_tbuf_grow(struct fsp_fs *fs, size_t need);

static inline void *thread_buf(struct fsp_fs *fs, size_t need)
{
	if (__builtin_expect(need <= fsp_tbuf_len, 1))
		return fsp_tbuf;
	return fsp_tbuf_grow(fs, need);
}

static inline void inflight_enter(struct fsp_fs *fs)
{
	if (!fs->track_inflight)
		return;
	unsigned n = __atomic_add_fetch(&fs->inflight, 1, __ATOMIC_RELAXED);
	unsigned m = __atomic_load_n(&fs->max_inflight, __ATOMIC_RELAXED);
	while (n > m && !__atomic_compare_exchange_n(&fs->max_inflight, &m, n, 0,
						     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline void inflight_leave(struct fsp_fs *fs)
{
	if (fs->track_inflight)
		__atomic_sub_fetch(&fs->inflight, 1, __ATOMIC_RELAXED);
}

/* Copy a write request's payload (in memory or spliced) into buf. Returns
 * the bytes copied or -errno. */
static inline ssize_t payload_copy_to(void *buf, struct fuse_bufvec *in, size_t size)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	dst.buf[0].mem = buf;
	return fuse_buf_copy(&dst, in, 0);
}

/* The same into the per-thread page-aligned buffer, returned in *out. */
static inline ssize_t payload_copy(struct fsp_fs *fs, struct fuse_bufvec *in, size_t size,
				   void **out)
{
	void *buf = thread_buf(fs, size);
	if (!buf)
		return -ENOMEM;
	*out = buf;
	return payload_copy_to(buf, in, size);
}

/*
 * Writes to the store leave the backing file's mtime alone, so a node whose
 * data changed is marked (mtime_dirty) and its backing mtime and ctime are
 * set to "now" before its attributes are next reported or its handle is
 * released: the reported mtime is then never older than the change.
 */
static inline void mark_changed(struct fsp_inode *n)
{
	__atomic_store_n(&n->mtime_dirty, 1, __ATOMIC_RELAXED);
}

static inline void sync_mtime(struct op *o, struct fsp_inode *n, int fd)
{
	if (!__atomic_load_n(&n->mtime_dirty, __ATOMIC_RELAXED) ||
	    !__atomic_exchange_n(&n->mtime_dirty, 0, __ATOMIC_RELAXED))
		return;
	struct timespec tv[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	if (fd >= 0) {
		BACKING(o, futimens(fd, tv));
	} else {
		char path[64];
		proc_path(path, sizeof(path), n->fd);
		BACKING(o, utimensat(AT_FDCWD, path, tv, 0));
	}
}

#endif

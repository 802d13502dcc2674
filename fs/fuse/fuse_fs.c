/*
 * fuse_fs.c - the request handlers of fsprism's passthrough file system.
 *
 * Each handler maps one FUSE request onto the same system call on the
 * backing directory, replies, and logs itself (request.h: op_begin,
 * BACKING, op_end, op_log; op_begin through op_enter here, which is also
 * the one place `--inject` and `--device-model` act):
 *   start    fsp_now_ns() at handler entry,
 *   backing  the summed durations of the backing system calls (BACKING()),
 *   total    fsp_now_ns() - start, taken just before fuse_reply_*().
 * The record goes to the oplog after the reply, so logging never delays the
 * caller. With --record=off (fs->timing == 0) no clock is read at all.
 *
 * A regular file's data goes through its handle's data path (datapath.h),
 * chosen once at open or create: buffered (dp_buffered.c), O_DIRECT with
 * asynchronous IO (dp_direct.c) or the emulated store (dp_emu.c). The
 * handlers of READ, WRITE, FSYNC, FALLOCATE, COPY_FILE_RANGE, LSEEK and
 * RELEASE call through it once, and only time, reply and log; the read and
 * write paths take no lock, allocate nothing and make no system call but
 * the IO.
 *
 * Objects are created with the caller's fsuid/fsgid (so owners and setgid
 * inheritance come out as on the backing file system); permission checks
 * are the kernel's (default_permissions is always on).
 *
 * Emulation (fs->emu set): regular files on the backing root's file system
 * keep their name, owner, mode and times in the backing directory, but
 * their data is an object of the emulated store (fs/emu/store.h), keyed by
 * the backing inode number; the handlers here report the object's size
 * (emu_fix_attr), truncate it, and remove it with the file's last link
 * (emu_drop_if_last), each store call timed with EMU_CALL or EMU_TIME.
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include "fs/fuse/aio.h"
#include "fs/fuse/datapath.h"
#include "src/base/bufpool.h"
#include "src/base/clock.h"
#include "src/base/grow.h"
#include "fs/emu/store.h"
#include "fs/fuse/fuse_fs.h"
#include "fs/fuse/inject.h"
#include "fs/model/model.h"
#include "fs/fuse/inode.h"
#include "fs/fuse/request.h"
#include "src/base/ops.h"

#define FSP_DEF_MAX_WRITE (1u << 20)

/* Reply with an error (or 0) and log the request. */
static void finish_err(struct op *o, fuse_req_t req, int opcode, int err)
{
	op_end(o);
	fuse_reply_err(req, err);
	op_log(o, opcode, 0, 0, 0, err);
}

/* Reply with the attributes in st (a GETATTR, a SETATTR) or the error, and
 * log the request. */
static inline void finish_attr(struct op *o, fuse_req_t req, int opcode, uint64_t off,
			       int err, const struct stat *st)
{
	op_end(o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, st, o->fs->attr_timeout);
	op_log(o, opcode, off, 0, 0, err);
}

/* Reply with the count written (a WRITE, a COPY_FILE_RANGE) or the error
 * that res carries as -errno, and log the request. */
static inline void finish_write(struct op *o, fuse_req_t req, int opcode, uint64_t off,
				size_t size, ssize_t res)
{
	int err = res < 0 ? (int)-res : 0;
	op_end(o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, (size_t)res);
	op_log(o, opcode, off, size, err ? 0 : (uint64_t)res, err);
}

/* ---- helpers ---- */

static inline struct fsp_inode *node_of(struct op *o, fuse_ino_t ino)
{
	return fsp_inode_of(o->fs->itable, ino);
}

/*
 * The node a request addresses; its inode number is kept for the record
 * now, because once the reply is sent the kernel may FORGET the node (a
 * write-back WRITE can even race with its FORGET) and it may be freed.
 */
static inline struct fsp_inode *op_node(struct op *o, fuse_ino_t ino)
{
	struct fsp_inode *n = fsp_inode_of(o->fs->itable, ino);
	o->node = n->ino;
	return n;
}

/* ---- fault and latency injection (--inject, inject.h) ---- */

/*
 * The rules that a path below the mount ("/" the root) matches: the path of
 * fd (its backing path, from the /proc link, without the backing root),
 * with name under it if given.
 */
static uint32_t inject_match_fd(struct fsp_fs *fs, int fd, const char *name)
{
	char link[64], path[PATH_MAX + NAME_MAX + 2];
	proc_path(link, sizeof(link), fd);
	ssize_t len = readlink(link, path, PATH_MAX);
	if (len < 0)
		len = 0; /* matched as if at the root */
	path[len] = '\0';
	size_t rl = strlen(fs->inject_root);
	const char *rel = path;
	if (!strncmp(path, fs->inject_root, rl) && (path[rl] == '/' || !path[rl]))
		rel = path + rl;
	if (name)
		snprintf(path + len, sizeof(path) - (size_t)len, "/%s", name);
	return fsp_inject_match(fs->inject, *rel ? rel : "/");
}

/* A node's rules, matched once: its first request after the lookup. */
static uint32_t inject_mask(struct fsp_fs *fs, struct fsp_inode *n)
{
	if (__atomic_load_n(&n->inject_known, __ATOMIC_ACQUIRE))
		return n->inject_mask;
	uint32_t m = inject_match_fd(fs, n->fd, NULL);
	n->inject_mask = m;
	__atomic_store_n(&n->inject_known, 1, __ATOMIC_RELEASE);
	return m;
}

/*
 * Apply the rules to one request on node n (name: the name under n that a
 * name operation addresses). The delay is waited here, inside the timed
 * window (o->start is stamped), and kept as o->inject. Returns 1 if the
 * request was answered with an injected errno (and logged).
 */
static int inject_request(struct op *o, fuse_req_t req, int opcode, struct fsp_inode *n,
			  const char *name)
{
	const struct fsp_inject *inj = o->fs->inject;
	if (!inj || !fsp_inject_op_any(inj, opcode))
		return 0;
	uint32_t mask = UINT32_MAX;
	if (fsp_inject_op_has_path(inj, opcode))
		mask = name ? inject_match_fd(o->fs, n->fd, name) : inject_mask(o->fs, n);
	uint64_t delay;
	int err = fsp_inject_decide(inj, opcode, mask, &delay);
	if (delay)
		o->inject = fsp_wait_ns(delay);
	if (!err)
		return 0;
	finish_err(o, req, opcode, err);
	return 1;
}

/*
 * The model drive's cost of one data IO (fsync: a flush), from the request's
 * arrival, waited here like an injected delay and kept as o->model. The
 * model's state is shared by the workers: one update at a time.
 */
static void model_request(struct op *o, enum fsp_model_dir dir, uint64_t off, uint64_t len)
{
	struct fsp_fs *fs = o->fs;
	uint64_t now = o->timing ? o->start : fsp_now_ns();
	pthread_mutex_lock(&fs->model_lock);
	uint64_t cost = fsp_model_cost_ns(fs->model, dir, off, len, now);
	pthread_mutex_unlock(&fs->model_lock);
	if (cost)
		o->model = fsp_wait_ns(cost);
}

/* --inject, then --device-model (mdir < 0: not a data IO). 1: answered. */
static int __attribute__((noinline)) hooks_request(struct op *o, fuse_req_t req, int opcode,
						   struct fsp_inode *n, const char *name,
						   int mdir, uint64_t off, uint64_t len)
{
	if (inject_request(o, req, opcode, n, name))
		return 1;
	if (o->fs->model && mdir >= 0)
		model_request(o, (enum fsp_model_dir)mdir, off, len);
	return 0;
}

/*
 * Every handler starts here: the timing starts, the node is found, and the
 * injection rules and the model drive (if any: one predictable branch) act;
 * the model sees the data IO (dir: an fsp_model_dir, or -1 for none).
 * NULL: the request has been answered.
 */
static inline struct fsp_inode *op_enter_io(struct op *o, fuse_req_t req, int opcode,
					    fuse_ino_t ino, int dir, uint64_t off, uint64_t len)
{
	op_begin(o, req);
	struct fsp_inode *n = op_node(o, ino);
	if (__builtin_expect(o->fs->hooks, 0) &&
	    hooks_request(o, req, opcode, n, NULL, dir, off, len))
		return NULL;
	return n;
}

static inline struct fsp_inode *op_enter(struct op *o, fuse_req_t req, int opcode,
					 fuse_ino_t ino)
{
	return op_enter_io(o, req, opcode, ino, -1, 0, 0);
}

/* The same for an operation on name under parent: the rules' paths are
 * matched against parent/name. */
static inline struct fsp_inode *op_enter_name(struct op *o, fuse_req_t req, int opcode,
					      fuse_ino_t parent, const char *name)
{
	op_begin(o, req);
	struct fsp_inode *p = op_node(o, parent);
	if (__builtin_expect(o->fs->hooks, 0) &&
	    hooks_request(o, req, opcode, p, name, -1, 0, 0))
		return NULL;
	return p;
}

/*
 * The per-thread page-aligned buffer of the data paths (thread_buf in
 * request.h), from one process-wide pool in huge pages (src/base/bufpool.h).
 * The pool lives as long as the process; a thread that ends gives its
 * buffer back.
 */
static struct fsp_bufpool *tbuf_pool;
static pthread_key_t tbuf_key;
static pthread_once_t tbuf_once = PTHREAD_ONCE_INIT;
__thread void *fsp_tbuf;
__thread size_t fsp_tbuf_len;

static void tbuf_release(void *buf)
{
	fsp_bufpool_put(tbuf_pool, buf, fsp_tbuf_len);
}

static void tbuf_key_init(void)
{
	tbuf_pool = fsp_bufpool_new();
	pthread_key_create(&tbuf_key, tbuf_release);
}

/* thread_buf's slow path: the thread's buffer is too small, or none yet. */
void *fsp_tbuf_grow(struct fsp_fs *fs, size_t need)
{
	size_t cap;
	void *p = tbuf_pool ? fsp_bufpool_get(tbuf_pool, need > fs->bufsize ? need : fs->bufsize,
					      &cap) : NULL;
	if (!p)
		return NULL;
	fsp_bufpool_put(tbuf_pool, fsp_tbuf, fsp_tbuf_len);
	fsp_tbuf = p;
	fsp_tbuf_len = cap;
	pthread_setspecific(tbuf_key, p);
	return p;
}

uint64_t fsp_fs_direct_fallbacks(const struct fsp_fs *fs)
{
	return fs ? __atomic_load_n(&fs->direct_fallbacks, __ATOMIC_RELAXED) : 0;
}

unsigned fsp_fs_max_inflight(const struct fsp_fs *fs)
{
	return __atomic_load_n(&fs->max_inflight, __ATOMIC_RELAXED);
}

void fsp_fs_buffer_usage(const struct fsp_fs *fs, uint64_t *mapped, uint64_t *huge)
{
	*mapped = fs ? fs->buffer_bytes : 0;
	*huge = fs ? fs->huge_buffer_bytes : 0;
}

/*
 * Run the next creating system call with the caller's fsuid/fsgid, so new
 * objects get the caller as owner (and the backing fs applies setgid-dir
 * inheritance itself). Changing fsuid away from 0 drops the file-system
 * capabilities; they are raised again because the kernel has already
 * checked the caller's permissions (default_permissions). Per-thread.
 */
static int as_caller(struct fsp_fs *fs, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (!fs->is_root || (ctx->uid == 0 && ctx->gid == 0))
		return 0;
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	syscall(SYS_setfsgid, ctx->gid);
	syscall(SYS_setfsuid, ctx->uid);
	syscall(SYS_capset, &hdr, fs->caps);
	return 1;
}

static void as_daemon(int switched)
{
	if (!switched)
		return;
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
}

/* ---- emulation helpers ---- */

/* Is n's data in the store? Regular files of the backing root's file
 * system only: object ids are inode numbers, unique on one device. */
static inline int emulated(const struct fsp_fs *fs, const struct fsp_inode *n)
{
	return fs->emu && n->type == S_IFREG && n->dev == fs->emu_dev;
}

static inline int st_emulated(const struct fsp_fs *fs, const struct stat *st)
{
	return fs->emu && S_ISREG(st->st_mode) && st->st_dev == fs->emu_dev;
}

/* The store file BACKING/.fsprism-store is not part of the mount. */
static inline int hidden(const struct fsp_fs *fs, const struct fsp_inode *parent,
			 const char *name)
{
	return fs->hide_store && parent == fsp_itable_root(fs->itable) &&
	       !strcmp(name, FSP_STORE_NAME);
}

/* A hidden name does not exist for a lookup or a removal (err ENOENT) and
 * cannot be made (EPERM): answered here, 1; 0 for any other name. */
static int refused_hidden(struct op *o, fuse_req_t req, int opcode, struct fsp_inode *p,
			  const char *name, int err)
{
	if (!hidden(o->fs, p, name))
		return 0;
	finish_err(o, req, opcode, err);
	return 1;
}

/* op_enter_name for a request that makes or removes name: a hidden name
 * (the store) is refused with err. NULL: the request has been answered. */
static struct fsp_inode *op_enter_visible(struct op *o, fuse_req_t req, int opcode,
					  fuse_ino_t parent, const char *name, int err)
{
	struct fsp_inode *p = op_enter_name(o, req, opcode, parent, name);
	if (!p || refused_hidden(o, req, opcode, p, name, err))
		return NULL;
	return p;
}

/* Size and allocation of an emulated file come from its store object
 * (none yet: an empty file). */
static void emu_fix_attr(struct op *o, struct stat *st)
{
	if (!st_emulated(o->fs, st))
		return;
	uint64_t size = 0, alloc = 0;
	if (EMU_TIME(o, emu_store_obj_size(o->fs->emu, st->st_ino, &size, &alloc)) < 0)
		size = alloc = 0;
	st->st_size = (off_t)size;
	st->st_blocks = (blkcnt_t)((alloc + 511) / 512);
	st->st_blksize = (blksize_t)o->fs->emu_bsize;
}

/* fsp_itable_forget_cb callback: a node leaves the table. An unlinked
 * file the kernel has let go of (no handle open) takes its object along. */
static void node_gone(void *arg, struct fsp_inode *n)
{
	struct op *o = arg;
	if (!emulated(o->fs, n))
		return;
	pthread_mutex_lock(&n->lock);
	dp_emu_remove_if_gone_locked(o, n);
	pthread_mutex_unlock(&n->lock);
}

/* Drop count lookups of n (every forget in this file goes through here). */
static void node_forget(struct op *o, struct fsp_inode *n, uint64_t count)
{
	fsp_itable_forget_cb(o->fs->itable, n, count, o->fs->emu ? node_gone : NULL, o);
}

/*
 * pre is the stat of a name that unlink or rename has just removed or
 * replaced. If that was the last link of an emulated file, its object goes:
 * now if the kernel does not know the file, else when the last handle is
 * released or the kernel forgets the node, whichever is last. (Not at once:
 * an OPEN of the file may still be on its way, looked up before the unlink.)
 */
static void emu_drop_if_last(struct op *o, const struct stat *pre)
{
	if (!st_emulated(o->fs, pre) || pre->st_nlink != 1)
		return;
	struct fsp_inode *n = fsp_itable_find(o->fs->itable, pre->st_dev, pre->st_ino);
	if (n) {
		pthread_mutex_lock(&n->lock);
		n->unlinked = 1;
		pthread_mutex_unlock(&n->lock);
		node_forget(o, n, 1); /* the kernel may have forgotten it meanwhile */
	} else {
		/* not known, so not open through the mount */
		struct emu_cx cx;
		op_cx(o, &cx);
		EMU_CALL(o, &cx, emu_store_obj_remove(o->fs->emu, &cx, pre->st_ino));
	}
}

/* Look name up under parent; on success fills e (one new lookup ref). */
static int do_lookup(struct op *o, struct fsp_inode *parent, const char *name,
		     struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->attr_timeout = o->fs->attr_timeout;
	e->entry_timeout = o->fs->entry_timeout;
	if (hidden(o->fs, parent, name))
		return ENOENT;
	int fd = BACKING(o, openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0)
		return errno;
	int res = BACKING(o, fstatat(fd, "", &e->attr,
				     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	if (res < 0) {
		int err = errno;
		close(fd);
		return err;
	}
	struct fsp_inode *n = fsp_itable_get(o->fs->itable, fd, &e->attr);
	if (!n)
		return ENOMEM;
	e->ino = fsp_inode_id(o->fs->itable, n);
	if (emulated(o->fs, n)) {
		if (__atomic_load_n(&n->mtime_dirty, __ATOMIC_RELAXED)) {
			sync_mtime(o, n, -1);
			BACKING(o, fstat(n->fd, &e->attr));
		}
		emu_fix_attr(o, &e->attr);
	}
	return 0;
}

static void reply_entry_or_err(struct op *o, fuse_req_t req, int opcode,
			       int err, struct fuse_entry_param *e)
{
	op_end(o);
	if (err)
		fuse_reply_err(req, err);
	else if (fuse_reply_entry(req, e) == -ENOENT)
		/* interrupted: the kernel will not count this lookup */
		node_forget(o, fsp_inode_of(o->fs->itable, e->ino), 1);
	op_log(o, opcode, 0, 0, 0, err);
}

/* ---- session ---- */

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fsp_fs *fs = userdata;
	/* Let the kernel clear setuid/setgid on write (by a SETATTR), since our
	 * writes run as root and would not. */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (fs->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	unsigned splice = FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
	if (fs->splice)
		conn->want |= conn->capable & splice;
	else
		conn->want &= ~splice;
	conn->max_write = fs->max_write;
	conn->max_background = fs->max_background;
	conn->congestion_threshold = fs->max_background * 3 / 4;
	conn->time_gran = 1;
}

/* ---- name operations ---- */

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op o;
	struct fsp_inode *p = op_enter_name(&o, req, FSP_OP_LOOKUP, parent, name);
	if (!p)
		return;
	struct fuse_entry_param e;
	int err = do_lookup(&o, p, name, &e);
	reply_entry_or_err(&o, req, FSP_OP_LOOKUP, err, &e);
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct op o;
	op_begin(&o, req);
	struct fsp_inode *n = op_node(&o, ino);
	node_forget(&o, n, nlookup);
	op_end(&o);
	fuse_reply_none(req);
	op_log(&o, FSP_OP_FORGET, 0, nlookup, 0, 0);
}

static void fs_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct op o;
	op_begin(&o, req);
	for (size_t i = 0; i < count; i++)
		node_forget(&o, node_of(&o, forgets[i].ino), forgets[i].nlookup);
	op_end(&o);
	fuse_reply_none(req);
	op_log(&o, FSP_OP_FORGET, 0, count, 0, 0);
}

static void fs_mknod_common(fuse_req_t req, int opcode, fuse_ino_t parent,
			    const char *name, mode_t mode, dev_t rdev,
			    const char *link)
{
	struct op o;
	struct fsp_inode *p = op_enter_visible(&o, req, opcode, parent, name, EPERM);
	if (!p)
		return;
	int sw = as_caller(o.fs, req);
	int res;
	if (link)
		res = BACKING(&o, symlinkat(link, p->fd, name));
	else if (S_ISDIR(mode))
		res = BACKING(&o, mkdirat(p->fd, name, mode));
	else
		res = BACKING(&o, mknodat(p->fd, name, mode, rdev));
	int err = res < 0 ? errno : 0;
	as_daemon(sw);
	struct fuse_entry_param e;
	if (!err)
		err = do_lookup(&o, p, name, &e);
	reply_entry_or_err(&o, req, opcode, err, &e);
}

static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	fs_mknod_common(req, FSP_OP_MKNOD, parent, name, mode, rdev, NULL);
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	fs_mknod_common(req, FSP_OP_MKDIR, parent, name, S_IFDIR | mode, 0, NULL);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	fs_mknod_common(req, FSP_OP_SYMLINK, parent, name, S_IFLNK, 0, link);
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_LINK, ino);
	if (!n)
		return;
	struct fsp_inode *p = node_of(&o, newparent);
	if (refused_hidden(&o, req, FSP_OP_LINK, p, newname, EPERM))
		return;
	int res = BACKING(&o, linkat(n->fd, "", p->fd, newname, AT_EMPTY_PATH));
	int err = res < 0 ? errno : 0;
	struct fuse_entry_param e;
	if (!err)
		err = do_lookup(&o, p, newname, &e);
	reply_entry_or_err(&o, req, FSP_OP_LINK, err, &e);
}

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op o;
	struct fsp_inode *p = op_enter_visible(&o, req, FSP_OP_UNLINK, parent, name, ENOENT);
	if (!p)
		return;
	/* with emulation: is this the file's last link? (its object goes too) */
	struct stat pre;
	int have_pre = o.fs->emu &&
		BACKING(&o, fstatat(p->fd, name, &pre, AT_SYMLINK_NOFOLLOW)) == 0;
	int res = BACKING(&o, unlinkat(p->fd, name, 0));
	int err = res < 0 ? errno : 0;
	if (!err && have_pre)
		emu_drop_if_last(&o, &pre);
	finish_err(&o, req, FSP_OP_UNLINK, err);
}

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op o;
	struct fsp_inode *p = op_enter_visible(&o, req, FSP_OP_RMDIR, parent, name, ENOENT);
	if (!p)
		return;
	int res = BACKING(&o, unlinkat(p->fd, name, AT_REMOVEDIR));
	finish_err(&o, req, FSP_OP_RMDIR, res < 0 ? errno : 0);
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct op o;
	struct fsp_inode *p = op_enter_name(&o, req, FSP_OP_RENAME, parent, name);
	if (!p)
		return;
	struct fsp_inode *np = node_of(&o, newparent);
	if (hidden(o.fs, p, name) || hidden(o.fs, np, newname)) {
		finish_err(&o, req, FSP_OP_RENAME, hidden(o.fs, p, name) ? ENOENT : EPERM);
		return;
	}
	/* with emulation: a replaced target may lose its last link */
	struct stat src, dst;
	int have_pre = o.fs->emu && !(flags & (RENAME_EXCHANGE | RENAME_NOREPLACE)) &&
		BACKING(&o, fstatat(np->fd, newname, &dst, AT_SYMLINK_NOFOLLOW)) == 0 &&
		BACKING(&o, fstatat(p->fd, name, &src, AT_SYMLINK_NOFOLLOW)) == 0 &&
		!(src.st_ino == dst.st_ino && src.st_dev == dst.st_dev);
	int res = BACKING(&o, renameat2(p->fd, name, np->fd, newname, flags));
	int err = res < 0 ? errno : 0;
	if (!err && have_pre)
		emu_drop_if_last(&o, &dst);
	finish_err(&o, req, FSP_OP_RENAME, err);
}

static void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_READLINK, ino);
	if (!n)
		return;
	char buf[PATH_MAX + 1];
	ssize_t len = BACKING(&o, readlinkat(n->fd, "", buf, sizeof(buf)));
	int err = len < 0 ? errno : (len == (ssize_t)sizeof(buf) ? ENAMETOOLONG : 0);
	op_end(&o);
	if (err) {
		fuse_reply_err(req, err);
	} else {
		buf[len] = '\0';
		fuse_reply_readlink(req, buf);
	}
	op_log(&o, FSP_OP_READLINK, 0, 0, err ? 0 : (uint64_t)len, err);
}

/* ---- attributes ---- */

static int stat_node(struct op *o, struct fsp_inode *n, struct fuse_file_info *fi,
		     struct stat *st)
{
	int res;
	int fd = (fi && n->type == S_IFREG) ? fh_fd(fi) : -1;
	if (emulated(o->fs, n))
		sync_mtime(o, n, fd);
	if (fd >= 0)
		res = BACKING(o, fstat(fd, st));
	else
		res = BACKING(o, fstatat(n->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	if (res < 0)
		return errno;
	emu_fix_attr(o, st);
	return 0;
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_GETATTR, ino);
	if (!n)
		return;
	struct stat st;
	int err = stat_node(&o, n, fi, &st);
	finish_attr(&o, req, FSP_OP_GETATTR, 0, err, &st);
}

static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int valid, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_SETATTR, ino);
	if (!n)
		return;
	/* Directory handles hold a DIR *, not an fd: use the node for those. */
	int fd = (fi && n->type == S_IFREG) ? fh_fd(fi) : -1;
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	int res = 0;

	if (valid & FUSE_SET_ATTR_MODE) {
		if (fd >= 0)
			res = BACKING(&o, fchmod(fd, attr->st_mode));
		else
			res = BACKING(&o, chmod(path, attr->st_mode));
		if (res < 0)
			goto out;
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		res = BACKING(&o, fchownat(n->fd, "", uid, gid,
					   AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
		if (res < 0)
			goto out;
	}
	if ((valid & FUSE_SET_ATTR_SIZE) && emulated(o.fs, n)) {
		/* the data is the store's; the backing file stays as it is */
		struct emu_cx cx;
		op_cx(&o, &cx);
		res = dp_emu_obj_ensure(&o, n, &cx);
		if (!res)
			res = EMU_CALL(&o, &cx, emu_store_truncate(o.fs->emu, &cx, n->ino,
								   (uint64_t)attr->st_size));
		if (res < 0) {
			errno = -res;
			res = -1;
			goto out;
		}
		if (!(valid & FUSE_SET_ATTR_MTIME))
			mark_changed(n);
	} else if (valid & FUSE_SET_ATTR_SIZE) {
		if (fd >= 0)
			res = BACKING(&o, ftruncate(fd, attr->st_size));
		else
			res = BACKING(&o, truncate(path, attr->st_size));
		if (res < 0)
			goto out;
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		/* an explicit mtime wins over one pending from earlier writes */
		if (valid & FUSE_SET_ATTR_MTIME)
			__atomic_store_n(&n->mtime_dirty, 0, __ATOMIC_RELAXED);
		struct timespec tv[2];
		tv[0].tv_sec = 0;
		tv[1].tv_sec = 0;
		tv[0].tv_nsec = UTIME_OMIT;
		tv[1].tv_nsec = UTIME_OMIT;
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		if (fd >= 0)
			res = BACKING(&o, futimens(fd, tv));
		else
			res = BACKING(&o, utimensat(AT_FDCWD, path, tv, 0));
		if (res < 0)
			goto out;
	}
out:;
	int err = res < 0 ? errno : 0;
	struct stat st;
	if (!err)
		err = stat_node(&o, n, fi, &st);
	finish_attr(&o, req, FSP_OP_SETATTR,
		    (valid & FUSE_SET_ATTR_SIZE) ? (uint64_t)attr->st_size : 0, err, &st);
}

static void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_ACCESS, ino);
	if (!n)
		return;
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	int res = BACKING(&o, faccessat(AT_FDCWD, path, mask, AT_EACCESS));
	finish_err(&o, req, FSP_OP_ACCESS, res < 0 ? errno : 0);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_STATFS, ino);
	if (!n)
		return;
	struct statvfs sv;
	int res = BACKING(&o, fstatvfs(n->fd, &sv));
	int err = res < 0 ? errno : 0;
	if (!err && o.fs->emu) {
		/* space is the store's; names and inodes the backing's */
		uint64_t blocks, free_blocks;
		uint32_t bsize;
		EMU_TIME(&o, (emu_store_statfs(o.fs->emu, &blocks, &free_blocks, &bsize), 0));
		sv.f_bsize = sv.f_frsize = bsize;
		sv.f_blocks = blocks;
		sv.f_bfree = sv.f_bavail = free_blocks;
	}
	op_end(&o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_statfs(req, &sv);
	op_log(&o, FSP_OP_STATFS, 0, 0, 0, err);
}

/* ---- directories ---- */

struct dirh {
	DIR *dp;
	struct dirent *entry; /* read but not yet returned */
	off_t offset;
};

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_OPENDIR, ino);
	if (!n)
		return;
	int err = 0;
	struct dirh *d = calloc(1, sizeof(*d));
	if (!d) {
		err = ENOMEM;
		goto out;
	}
	int fd = BACKING(&o, open_noatime(o.fs, n->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 1));
	if (fd < 0) {
		err = errno;
		free(d);
		goto out;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		err = errno;
		close(fd);
		free(d);
		goto out;
	}
	fi->fh = (uintptr_t)d;
out:
	op_end(&o);
	if (err) {
		fuse_reply_err(req, err);
	} else if (fuse_reply_open(req, fi) == -ENOENT) {
		closedir(d->dp);
		free(d);
	}
	op_log(&o, FSP_OP_OPENDIR, 0, 0, 0, err);
}

static int is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		       struct fuse_file_info *fi, int plus)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, plus ? FSP_OP_READDIRPLUS : FSP_OP_READDIR, ino);
	if (!n)
		return;
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	int err = 0;
	char *buf = malloc(size);
	if (!buf) {
		err = ENOMEM;
		goto out;
	}
	if (offset != d->offset) {
		seekdir(d->dp, offset);
		d->entry = NULL;
		d->offset = offset;
	}
	size_t rem = size;
	char *p = buf;
	for (;;) {
		if (!d->entry) {
			errno = 0;
			d->entry = BACKING(&o, readdir(d->dp));
			if (!d->entry) {
				if (errno)
					err = errno;
				break;
			}
		}
		off_t next = d->entry->d_off;
		const char *name = d->entry->d_name;
		size_t used;
		if (hidden(o.fs, n, name)) {
			d->entry = NULL;
			d->offset = next;
			continue;
		}
		if (plus) {
			struct fuse_entry_param e;
			if (is_dot_or_dotdot(name)) {
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = d->entry->d_ino;
				e.attr.st_mode = (mode_t)d->entry->d_type << 12;
			} else {
				err = do_lookup(&o, n, name, &e);
				if (err == ENOENT) {
					/* removed since getdents: skip it, as ls would */
					err = 0;
					d->entry = NULL;
					d->offset = next;
					continue;
				}
				if (err)
					break;
			}
			used = fuse_add_direntry_plus(req, p, rem, name, &e, next);
			if (used > rem) {
				if (e.ino)
					node_forget(&o, node_of(&o, e.ino), 1);
				break;
			}
		} else {
			struct stat st;
			memset(&st, 0, sizeof(st));
			st.st_ino = d->entry->d_ino;
			st.st_mode = (mode_t)d->entry->d_type << 12;
			used = fuse_add_direntry(req, p, rem, name, &st, next);
			if (used > rem)
				break;
		}
		p += used;
		rem -= used;
		d->entry = NULL;
		d->offset = next;
	}
	/* Entries already added are returned; the error shows next time. */
	if (err && rem != size)
		err = 0;
	op_end(&o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, size - rem);
	op_log(&o, plus ? FSP_OP_READDIRPLUS : FSP_OP_READDIR, (uint64_t)offset, size, size - rem, err);
	free(buf);
	return;
out:
	finish_err(&o, req, plus ? FSP_OP_READDIRPLUS : FSP_OP_READDIR, err);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, offset, fi, 0);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t offset, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, offset, fi, 1);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op o;
	if (!op_enter(&o, req, FSP_OP_RELEASEDIR, ino))
		return;
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	BACKING(&o, closedir(d->dp));
	free(d);
	finish_err(&o, req, FSP_OP_RELEASEDIR, 0);
}

static void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct op o;
	if (!op_enter(&o, req, FSP_OP_FSYNCDIR, ino))
		return;
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	int fd = dirfd(d->dp);
	int res = BACKING(&o, datasync ? fdatasync(fd) : fsync(fd));
	finish_err(&o, req, FSP_OP_FSYNCDIR, res < 0 ? errno : 0);
}

/* ---- files ---- */

/* Flags for the backing open; writeback caching needs to read any file. */
static int backing_flags(struct fsp_fs *fs, int flags)
{
	flags &= ~O_NOFOLLOW;
	if (fs->writeback_cache) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND; /* the kernel computes append offsets */
	}
	return flags | O_CLOEXEC;
}

/* A handle's path by its bits 32-33 (no open sets both bits: 3 is the
 * store's, as FH_EMU decides wherever it is set). */
const struct fsp_datapath *const fsp_datapaths[4] = {
	[FSP_DP_BUFFERED] = &fsp_dp_buffered,
	[FSP_DP_DIRECT] = &fsp_dp_direct,
	[FSP_DP_EMU] = &fsp_dp_emu,
	[FSP_DP_EMU | FSP_DP_DIRECT] = &fsp_dp_emu,
};

/* The data path of a new handle on n, whose backing file is opened with
 * bflags: the store for an emulated file, else by O_DIRECT. */
static const struct fsp_datapath *path_for(const struct fsp_fs *fs, const struct fsp_inode *n,
					   int bflags)
{
	if (emulated(fs, n))
		return &fsp_dp_emu;
	return (bflags & O_DIRECT) ? &fsp_dp_direct : &fsp_dp_buffered;
}

static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *p = op_enter_visible(&o, req, FSP_OP_CREATE, parent, name, EPERM);
	if (!p)
		return;
	int flags = backing_flags(o.fs, fi->flags) | O_CREAT;
	/* the backing file of an emulated file does no IO (and a passthrough
	 * file created in an emulated mount is buffered) */
	int bflags = o.fs->emu ? flags & ~O_DIRECT : flags;
	int sw = as_caller(o.fs, req);
	int fd = BACKING(&o, open_noatime(o.fs, p->fd, name, bflags, mode, 0));
	int err = fd < 0 ? errno : 0;
	as_daemon(sw);
	struct fuse_entry_param e;
	struct fsp_inode *n = NULL;
	const struct fsp_datapath *dp = NULL;
	uint64_t fh = 0;
	if (!err) {
		err = do_lookup(&o, p, name, &e);
		if (err)
			close(fd);
	}
	if (!err) {
		n = node_of(&o, e.ino);
		dp = path_for(o.fs, n, bflags);
		/* an emulated file's object is opened (or a stale one renewed)
		 * here, before its size is reported */
		err = -dp->open(&o, n, fd, flags, &fh);
		if (err) {
			close(fd);
			node_forget(&o, n, 1);
		} else {
			emu_fix_attr(&o, &e.attr);
		}
	}
	op_end(&o);
	if (err) {
		fuse_reply_err(req, err);
	} else {
		fi->fh = fh;
		if (fuse_reply_create(req, &e, fi) == -ENOENT) {
			dp->abandon(&o, n, fi);
			node_forget(&o, n, 1);
		}
	}
	op_log(&o, FSP_OP_CREATE, 0, 0, 0, err);
}

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_OPEN, ino);
	if (!n)
		return;
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	int flags = backing_flags(o.fs, fi->flags) & ~O_CREAT;
	/* the backing file of an emulated file does no IO */
	int bflags = emulated(o.fs, n) ? flags & ~O_DIRECT : flags;
	int fd = BACKING(&o, open_noatime(o.fs, AT_FDCWD, path, bflags, 0, 0));
	int err = fd < 0 ? errno : 0;
	const struct fsp_datapath *dp = path_for(o.fs, n, bflags);
	uint64_t fh = 0;
	if (!err) {
		err = -dp->open(&o, n, fd, flags, &fh);
		if (err)
			close(fd);
	}
	op_end(&o);
	if (err) {
		fuse_reply_err(req, err);
	} else {
		fi->fh = fh;
		if (fuse_reply_open(req, fi) == -ENOENT)
			dp->abandon(&o, n, fi);
	}
	op_log(&o, FSP_OP_OPEN, 0, 0, 0, err);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct op o;
	if (!op_enter_io(&o, req, FSP_OP_READ, ino, FSP_MODEL_READ, (uint64_t)off, size))
		return;
	void *buf = NULL;
	ssize_t got = fh_path(fi)->read(&o, req, fi, size, off, &buf);
	if (got == FSP_DP_QUEUED)
		return; /* the reaper replies and logs */
	int err = got < 0 ? (int)-got : 0;
	op_end(&o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, (size_t)got);
	op_log(&o, FSP_OP_READ, (uint64_t)off, size,
	       got > 0 ? (uint64_t)got : 0, err);
}

static void fs_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
			 off_t off, struct fuse_file_info *fi)
{
	struct op o;
	size_t size = fuse_buf_size(in);
	struct fsp_inode *n = op_enter_io(&o, req, FSP_OP_WRITE, ino, FSP_MODEL_WRITE,
					  (uint64_t)off, size);
	if (!n)
		return;
	ssize_t res = fh_path(fi)->write_buf(&o, req, n, fi, in, &size, off);
	if (res == FSP_DP_QUEUED)
		return; /* the reaper replies and logs */
	finish_write(&o, req, FSP_OP_WRITE, (uint64_t)off, size, res);
}

/* Close the descriptor holding this lock owner's POSIX locks on n, if any. */
static void drop_lock_owner(struct op *o, struct fsp_inode *n, uint64_t owner)
{
	pthread_mutex_lock(&n->lock);
	for (struct fsp_lockfd **pp = &n->lockfds; *pp; pp = &(*pp)->next) {
		if ((*pp)->owner == owner) {
			struct fsp_lockfd *l = *pp;
			*pp = l->next;
			BACKING(o, close(l->fd));
			free(l);
			break;
		}
	}
	pthread_mutex_unlock(&n->lock);
}

static void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_FLUSH, ino);
	if (!n)
		return;
	/* POSIX: any close by the owner releases its locks on the file. */
	if (n->lockfds)
		drop_lock_owner(&o, n, fi->lock_owner);
	/* close() of a duplicate, so backing file systems that act on close
	 * (NFS: write back, report errors) do so now, as on the backing dir. */
	int dupfd = BACKING(&o, dup(fh_fd(fi)));
	int res = dupfd < 0 ? -1 : BACKING(&o, close(dupfd));
	finish_err(&o, req, FSP_OP_FLUSH, res < 0 ? errno : 0);
}

static void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_RELEASE, ino);
	if (!n)
		return;
	fh_path(fi)->release(&o, n, fi);
	finish_err(&o, req, FSP_OP_RELEASE, 0);
}

static void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter_io(&o, req, FSP_OP_FSYNC, ino, FSP_MODEL_FLUSH, 0, 0);
	if (!n)
		return;
	int r = fh_path(fi)->fsync(&o, n, fi, datasync);
	finish_err(&o, req, FSP_OP_FSYNC, -r);
}

static void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_FALLOCATE, ino);
	if (!n)
		return;
	int err = -fh_path(fi)->fallocate(&o, n, fi, mode, offset, length);
	op_end(&o);
	fuse_reply_err(req, err);
	op_log(&o, FSP_OP_FALLOCATE, (uint64_t)offset, (uint64_t)length, 0, err);
}

static void fs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	struct op o;
	struct fsp_inode *nout = op_enter(&o, req, FSP_OP_COPY_FILE_RANGE, ino_out);
	if (!nout)
		return;
	struct fsp_inode *nin = node_of(&o, ino_in);
	ssize_t res = fh_path(fi_out)->copy_file_range(&o, nin, fi_in, off_in, nout, fi_out,
						       off_out, len, flags);
	finish_write(&o, req, FSP_OP_COPY_FILE_RANGE, (uint64_t)off_out, len, res);
}

static void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct op o;
	if (!op_enter(&o, req, FSP_OP_LSEEK, ino))
		return;
	off_t res = fh_path(fi)->lseek(&o, fi, off, whence);
	int err = res < 0 ? (int)-res : 0;
	op_end(&o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_lseek(req, res);
	op_log(&o, FSP_OP_LSEEK, (uint64_t)off, 0, 0, err);
}

/* ---- locks ---- */

/*
 * POSIX (fcntl) locks belong to a lock owner (a process), not to an open
 * file. Each owner gets its own backing descriptor per inode and the locks
 * are taken there as OFD locks: owners conflict with each other, an owner
 * never conflicts with itself, and closing the descriptor (on the owner's
 * flush) releases all its locks, as POSIX close() does.
 */
static int lock_fd(struct op *o, struct fsp_inode *n, uint64_t owner, int create)
{
	int fd = -1;
	pthread_mutex_lock(&n->lock);
	for (struct fsp_lockfd *l = n->lockfds; l; l = l->next) {
		if (l->owner == owner) {
			fd = l->fd;
			goto out;
		}
	}
	if (!create) {
		errno = 0;
		goto out;
	}
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	fd = BACKING(o, open(path, O_RDWR | O_CLOEXEC | O_NOCTTY));
	if (fd < 0)
		fd = BACKING(o, open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY));
	if (fd < 0)
		goto out;
	struct fsp_lockfd *l = malloc(sizeof(*l));
	if (!l) {
		close(fd);
		fd = -1;
		errno = ENOMEM;
		goto out;
	}
	l->owner = owner;
	l->fd = fd;
	l->next = n->lockfds;
	n->lockfds = l;
out:
	pthread_mutex_unlock(&n->lock);
	return fd;
}

static void fs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_GETLK, ino);
	if (!n)
		return;
	int err = 0;
	int fd = lock_fd(&o, n, fi->lock_owner, 1);
	if (fd < 0) {
		err = errno;
	} else {
		lock->l_pid = 0;
		if (BACKING(&o, fcntl(fd, F_OFD_GETLK, lock)) < 0)
			err = errno;
		else if (lock->l_pid < 0)
			lock->l_pid = 0; /* held through another owner's OFD */
	}
	op_end(&o);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_lock(req, lock);
	op_log(&o, FSP_OP_GETLK, (uint64_t)lock->l_start, (uint64_t)lock->l_len, 0, err);
}

/*
 * A lock request that has to wait (F_SETLKW, flock without LOCK_NB, and the
 * lock is taken) waits in a thread of its own: the worker threads are few,
 * and lockers waiting in them could leave none for the request that
 * releases the lock. The thread replies and logs when the lock comes, unless
 * the mount is ending by then (fsp_fs_stop).
 */
struct lock_wait {
	struct op o;
	fuse_req_t req;
	int fd;
	int flock_op;       /* flock(2) operation, or -1: the POSIX lock below */
	struct flock lock;
};

static void *lock_wait_main(void *arg)
{
	struct lock_wait *w = arg;
	struct fsp_fs *fs = w->o.fs;
	int res = w->flock_op >= 0 ? BACKING(&w->o, flock(w->fd, w->flock_op))
				   : BACKING(&w->o, fcntl(w->fd, F_OFD_SETLKW, &w->lock));
	int err = res < 0 ? errno : 0;
	pthread_mutex_lock(&fs->waiters_lock);
	if (!fs->stopping)
		finish_err(&w->o, w->req, w->flock_op >= 0 ? FSP_OP_FLOCK : FSP_OP_SETLK, err);
	fs->waiters--;
	pthread_mutex_unlock(&fs->waiters_lock);
	free(w);
	return NULL;
}

/* 0: a thread now waits for the lock and will reply; -1: wait here. */
static int lock_wait_start(struct op *o, fuse_req_t req, int fd, int flock_op,
			   const struct flock *lock)
{
	struct fsp_fs *fs = o->fs;
	struct lock_wait *w = malloc(sizeof(*w));
	if (!w)
		return -1;
	w->o = *o;
	w->req = req;
	w->fd = fd;
	w->flock_op = flock_op;
	if (lock)
		w->lock = *lock;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_mutex_lock(&fs->waiters_lock);
	fs->waiters++;
	pthread_mutex_unlock(&fs->waiters_lock);
	pthread_t t;
	int rc = pthread_create(&t, &at, lock_wait_main, w);
	pthread_attr_destroy(&at);
	if (rc == 0)
		return 0;
	pthread_mutex_lock(&fs->waiters_lock);
	fs->waiters--;
	pthread_mutex_unlock(&fs->waiters_lock);
	free(w);
	return -1;
}

static void fs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock, int sleep)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_SETLK, ino);
	if (!n)
		return;
	int err = 0;
	int fd = lock_fd(&o, n, fi->lock_owner, lock->l_type != F_UNLCK);
	if (fd < 0) {
		err = errno; /* 0: unlocking an owner with no locks */
	} else {
		lock->l_pid = 0;
		/* try first: only a lock that is taken needs a waiting thread */
		if (BACKING(&o, fcntl(fd, F_OFD_SETLK, lock)) < 0) {
			err = errno;
			if (sleep && (err == EAGAIN || err == EACCES)) {
				if (lock_wait_start(&o, req, fd, -1, lock) == 0)
					return;
				/* no thread to be had: wait here */
				err = BACKING(&o, fcntl(fd, F_OFD_SETLKW, lock)) < 0 ? errno : 0;
			}
		}
	}
	finish_err(&o, req, FSP_OP_SETLK, err);
}

static void fs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     int op)
{
	struct op o;
	if (!op_enter(&o, req, FSP_OP_FLOCK, ino))
		return;
	int res = BACKING(&o, flock(fh_fd(fi), op | LOCK_NB));
	if (res < 0 && errno == EWOULDBLOCK && !(op & LOCK_NB)) {
		if (lock_wait_start(&o, req, fh_fd(fi), op, NULL) == 0)
			return;
		res = BACKING(&o, flock(fh_fd(fi), op));
	}
	finish_err(&o, req, FSP_OP_FLOCK, res < 0 ? errno : 0);
}

/* ---- extended attributes ---- */

/* fsprism's own attributes (the object id of an emulated file) are not the
 * user's: not listed, read, set or removed through the mount, so that a
 * copy made through the mount never shares its source's object. */
static inline int own_xattr(const char *name)
{
	return !strncmp(name, FSP_XATTR_PREFIX, sizeof(FSP_XATTR_PREFIX) - 1);
}

/* The listxattr list of path without fsprism's names, into buf (size 0:
 * only the length). Returns the length or -1 with errno set. One more
 * backing call than a plain listxattr: the full list's length first. */
static ssize_t list_user_xattrs(struct op *o, const char *path, char *buf, size_t size)
{
	ssize_t full = BACKING(o, listxattr(path, NULL, 0));
	if (full <= 0)
		return full;
	char *all = malloc((size_t)full);
	if (!all) {
		errno = ENOMEM;
		return -1;
	}
	ssize_t got = BACKING(o, listxattr(path, all, (size_t)full));
	size_t keep = 0;
	for (ssize_t at = 0; got > 0 && at < got; ) {
		size_t len = strnlen(all + at, (size_t)(got - at)) + 1;
		if (len > (size_t)(got - at))
			len = (size_t)(got - at); /* a last name without its NUL */
		if (!own_xattr(all + at)) {
			memmove(all + keep, all + at, len);
			keep += len;
		}
		at += (ssize_t)len;
	}
	if (got >= 0 && size && keep > size) {
		errno = ERANGE;
		got = -1;
	} else if (got >= 0 && size) {
		memcpy(buf, all, keep);
	}
	free(all);
	return got < 0 ? -1 : (ssize_t)keep;
}

static void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_SETXATTR, ino);
	if (!n)
		return;
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	errno = EPERM;
	int res = own_xattr(name) ? -1 : BACKING(&o, setxattr(path, name, value, size, flags));
	int err = res < 0 ? errno : 0;
	op_end(&o);
	fuse_reply_err(req, err);
	op_log(&o, FSP_OP_SETXATTR, 0, size, err ? 0 : size, err);
}

static void xattr_reply(struct op *o, fuse_req_t req, int opcode,
			struct fsp_inode *n, const char *name, size_t size)
{
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	char *buf = NULL;
	int err = 0;
	if (size) {
		buf = malloc(size);
		if (!buf) {
			finish_err(o, req, opcode, ENOMEM);
			return;
		}
	}
	errno = ENODATA;
	ssize_t res = name ? (own_xattr(name) ? -1 : BACKING(o, getxattr(path, name, buf, size)))
			   : list_user_xattrs(o, path, buf, size);
	if (res < 0)
		err = errno;
	op_end(o);
	if (err)
		fuse_reply_err(req, err);
	else if (size)
		fuse_reply_buf(req, buf, (size_t)res);
	else
		fuse_reply_xattr(req, (size_t)res);
	op_log(o, opcode, 0, size, err ? 0 : (uint64_t)res, err);
	free(buf);
}

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_GETXATTR, ino);
	if (n)
		xattr_reply(&o, req, FSP_OP_GETXATTR, n, name, size);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_LISTXATTR, ino);
	if (n)
		xattr_reply(&o, req, FSP_OP_LISTXATTR, n, NULL, size);
}

static void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct op o;
	struct fsp_inode *n = op_enter(&o, req, FSP_OP_REMOVEXATTR, ino);
	if (!n)
		return;
	char path[64];
	proc_path(path, sizeof(path), n->fd);
	errno = EPERM;
	int res = own_xattr(name) ? -1 : BACKING(&o, removexattr(path, name));
	finish_err(&o, req, FSP_OP_REMOVEXATTR, res < 0 ? errno : 0);
}

const struct fuse_lowlevel_ops fsp_fs_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.readlink = fs_readlink,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.open = fs_open,
	.read = fs_read,
	.write_buf = fs_write_buf,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.statfs = fs_statfs,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
	.access = fs_access,
	.create = fs_create,
	.getlk = fs_getlk,
	.setlk = fs_setlk,
	.flock = fs_flock,
	.fallocate = fs_fallocate,
	.copy_file_range = fs_copy_file_range,
	.lseek = fs_lseek,
};

struct fsp_fs *fsp_fs_new(const char *backing, const struct fsp_fs_opts *opts,
			  char *err, size_t errlen)
{
	pthread_once(&tbuf_once, tbuf_key_init);
	struct fsp_fs *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int fd = open(backing, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot open backing directory %s: %s",
			 backing, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(fs);
		return NULL;
	}
	fs->itable = fsp_itable_new(fd, &st);
	if (!fs->itable) {
		close(fd);
		free(fs);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fs->log = opts->log;
	fs->timing = opts->timing;
	fs->track_inflight = opts->track_inflight;
	fs->attr_timeout = opts->attr_timeout;
	fs->entry_timeout = opts->entry_timeout;
	fs->writeback_cache = opts->writeback_cache;
	fs->splice = opts->splice;
	fs->max_write = opts->max_write ? opts->max_write : FSP_DEF_MAX_WRITE;
	fs->max_background = opts->max_background ? opts->max_background : 64;
	/* Reads may be as large as max_pages (1 MiB); writes max_write. */
	fs->bufsize = fs->max_write > FSP_DEF_MAX_WRITE ? fs->max_write : FSP_DEF_MAX_WRITE;
	fs->is_root = geteuid() == 0;
	pthread_mutex_init(&fs->pending_lock, NULL);
	pthread_mutex_init(&fs->waiters_lock, NULL);
	fs->use_aio = opts->backing_aio;
	if (opts->inject) {
		fs->inject_root = realpath(backing, NULL);
		if (!fs->inject_root) {
			snprintf(err, errlen, "cannot resolve backing directory %s: %s",
				 backing, strerror(errno));
			fsp_itable_free(fs->itable);
			free(fs);
			return NULL;
		}
		if (!strcmp(fs->inject_root, "/"))
			fs->inject_root[0] = '\0';
		fs->inject = opts->inject;
	}
	fs->model = opts->model;
	pthread_mutex_init(&fs->model_lock, NULL);
	fs->hooks = fs->inject || fs->model;
	fs->noatime = opts->noatime;
	fs->nodiratime = opts->noatime || opts->nodiratime;
	if (fs->is_root) {
		struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
		if (syscall(SYS_capget, &hdr, fs->caps) < 0)
			fs->is_root = 0;
	}
	return fs;
}

void fsp_fs_set_log(struct fsp_fs *fs, struct fsp_oplog *log)
{
	pthread_mutex_lock(&fs->pending_lock);
	__atomic_store_n(&fs->log, log, __ATOMIC_RELEASE);
	for (size_t i = 0; log && i < fs->npending; i++)
		fsp_oplog_add(log, &fs->pending[i]);
	free(fs->pending);
	fs->pending = NULL;
	fs->npending = fs->pending_cap = 0;
	pthread_mutex_unlock(&fs->pending_lock);
}

void fsp_fs_set_emu(struct fsp_fs *fs, struct emu_store *st, int hide_store_name)
{
	fs->emu = st;
	fs->hide_store = st && hide_store_name;
	fs->emu_dev = fsp_itable_root(fs->itable)->dev;
	fs->emu_bsize = 4096;
	if (st) {
		uint64_t blocks, free_blocks;
		uint32_t bsize;
		emu_store_statfs(st, &blocks, &free_blocks, &bsize);
		if (bsize)
			fs->emu_bsize = bsize;
	}
}

void fsp_fs_devio(void *arg, const struct emu_cx *cx, int fsp_op, uint64_t off,
		  uint64_t len, uint64_t start_ns, uint64_t ns, int err)
{
	struct fsp_fs *fs = arg;
	if (!fs->timing)
		return;
	if (err < 0)
		err = -err;
	struct fsp_rec r = {
		.start_ns = start_ns,
		.total_ns = ns,
		.backing_ns = ns,
		.node = cx ? cx->node : 0,
		.offset = off,
		.length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len,
		.pid = cx ? cx->pid : 0,
		.result = err,
		.op = (uint16_t)fsp_op,
		.step = 0,
		.bytes = err ? 0 : len,
		.emu_ns = 0,
		.cause_ns = cx ? cx->cause_ns : 0,
	};
	struct fsp_oplog *log = __atomic_load_n(&fs->log, __ATOMIC_ACQUIRE);
	if (__builtin_expect(log != NULL, 1)) {
		fsp_oplog_add(log, &r);
		return;
	}
	/* The store's IO while it is opened (format, replay) comes before the
	 * oplog exists: keep it for fsp_fs_set_log. */
	pthread_mutex_lock(&fs->pending_lock);
	if (fs->log)
		fsp_oplog_add(fs->log, &r);
	else if (fsp_grow((void **)&fs->pending, &fs->pending_cap, fs->npending + 1,
			  sizeof(*fs->pending), 256) == 0)
		fs->pending[fs->npending++] = r;
	pthread_mutex_unlock(&fs->pending_lock);
}

int fsp_fs_start(struct fsp_fs *fs)
{
	if (!fs->use_aio)
		return 0;
	/* room for every async request the kernel may send, and the workers';
	 * capped, because the system-wide limit (fs.aio-max-nr, 65536 by
	 * default) is shared: an IO beyond the depth is done synchronously */
	unsigned depth = 4 * fs->max_background;
	if (depth > 1024)
		depth = 1024;
	fs->aio = fsp_aio_start(depth, dp_direct_slot_size(), fs->timing);
	return fs->aio ? 0 : -errno;
}

void fsp_fs_stop(struct fsp_fs *fs)
{
	if (fs->aio)
		fsp_aio_usage(fs->aio, &fs->buffer_bytes, &fs->huge_buffer_bytes);
	fsp_aio_stop(fs->aio);
	fs->aio = NULL;
	pthread_mutex_lock(&fs->waiters_lock);
	fs->stopping = 1;
	pthread_mutex_unlock(&fs->waiters_lock);
}

void fsp_fs_free(struct fsp_fs *fs)
{
	if (!fs)
		return;
	fsp_fs_stop(fs);
	pthread_mutex_lock(&fs->waiters_lock);
	unsigned waiting = fs->waiters;
	pthread_mutex_unlock(&fs->waiters_lock);
	if (waiting)
		return; /* threads still wait for locks and use fs; the process
			   ends next and takes them with it */
	fsp_itable_free(fs->itable);
	pthread_mutex_destroy(&fs->pending_lock);
	free(fs->pending);
	free(fs->inject_root);
	free(fs);
}

/*
 * dp_emu.c - the emulated data path (datapath.h): a regular file of the
 * backing root's file system keeps its name, owner, mode and times in the
 * backing directory, but its data is an object of the emulated store
 * (fs/emu/store.h) keyed by the backing inode number. Every store call is
 * timed with EMU_CALL (request.h), which counts the store's IO of the
 * caller's own data as backing time and the rest of the call as emulation
 * time. The backing fd of such a handle does no IO; it carries the times.
 *
 * Also the objects' life as handles see it: open counts on the node, and
 * the object of an unlinked file removed with its last handle.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fs/emu/store.h"
#include "fs/fuse/datapath.h"

/* The object's generation: the backing file's birth time, read once per
 * node (the node pins the inode, so it cannot change). Under n->lock. */
static uint64_t node_gen_locked(struct op *o, struct fsp_inode *n)
{
	if (!n->gen_known) {
		n->gen = BACKING(o, fsp_birth_ns(n->fd, "", AT_EMPTY_PATH));
		n->gen_known = 1;
	}
	return n->gen;
}

int dp_emu_obj_ensure(struct op *o, struct fsp_inode *n, struct emu_cx *cx)
{
	pthread_mutex_lock(&n->lock);
	uint64_t gen = node_gen_locked(o, n);
	pthread_mutex_unlock(&n->lock);
	return EMU_CALL(o, cx, emu_store_obj_open(o->fs->emu, cx, n->ino, gen));
}

/* A new handle on n's data: count it, open the object, apply O_TRUNC.
 * Returns 0 or a positive errno (then nothing is counted). */
static int emu_handle_open(struct op *o, struct fsp_inode *n, int flags)
{
	struct emu_cx cx;
	op_cx(o, &cx);
	pthread_mutex_lock(&n->lock);
	uint64_t gen = node_gen_locked(o, n);
	n->opens++;
	pthread_mutex_unlock(&n->lock);
	int r = EMU_CALL(o, &cx, emu_store_obj_open(o->fs->emu, &cx, n->ino, gen));
	if (!r && (flags & O_TRUNC))
		r = EMU_CALL(o, &cx, emu_store_truncate(o->fs->emu, &cx, n->ino, 0));
	if (r < 0) {
		pthread_mutex_lock(&n->lock);
		n->opens--;
		pthread_mutex_unlock(&n->lock);
		return -r;
	}
	return 0;
}

/* Its O_PATH fd pins the inode and tells whether a link has come back. */
void dp_emu_remove_if_gone_locked(struct op *o, struct fsp_inode *n)
{
	struct stat st;
	if (!n->unlinked || n->opens || BACKING(o, fstat(n->fd, &st)) < 0 || st.st_nlink)
		return;
	struct emu_cx cx;
	op_cx(o, &cx);
	EMU_CALL(o, &cx, emu_store_obj_remove(o->fs->emu, &cx, n->ino));
	n->unlinked = 0;
}

/* A handle on n's data was released: the last one of an unlinked file
 * takes the object with it. */
static void emu_handle_close(struct op *o, struct fsp_inode *n)
{
	pthread_mutex_lock(&n->lock);
	if (n->opens)
		n->opens--;
	dp_emu_remove_if_gone_locked(o, n);
	pthread_mutex_unlock(&n->lock);
}

static int emu_open(struct op *o, struct fsp_inode *n, int fd, int flags, uint64_t *fh)
{
	int err = emu_handle_open(o, n, flags);
	if (err)
		return -err;
	*fh = (uint64_t)(uint32_t)fd | FH_EMU;
	return 0;
}

static ssize_t emu_read(struct op *o, fuse_req_t req, const struct fuse_file_info *fi,
			size_t size, off_t off, void **buf)
{
	void *b = thread_buf(o->fs, size);
	if (!b)
		return -ENOMEM;
	*buf = b;
	struct emu_cx cx;
	op_cx(o, &cx);
	inflight_enter(o->fs);
	ssize_t got = EMU_CALL(o, &cx, emu_store_read(o->fs->emu, &cx, o->node, b, size,
						      (uint64_t)off));
	inflight_leave(o->fs);
	return got;
}

static ssize_t emu_write_buf(struct op *o, fuse_req_t req, struct fsp_inode *n,
			     const struct fuse_file_info *fi, struct fuse_bufvec *in,
			     size_t *size, off_t off)
{
	/* The store takes any alignment: write straight from the request
	 * buffer when the payload is in memory, else (spliced) copy it into
	 * the per-thread buffer first. */
	void *src;
	ssize_t res;
	if (in->count == 1 && in->idx == 0 && in->off == 0 &&
	    !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		src = in->buf[0].mem;
	} else if ((res = payload_copy(o->fs, in, *size, &src)) < 0) {
		return res;
	} else {
		*size = (size_t)res;
	}
	struct emu_cx cx;
	op_cx(o, &cx);
	inflight_enter(o->fs);
	res = EMU_CALL(o, &cx, emu_store_write(o->fs->emu, &cx, o->node, src, *size,
					       (uint64_t)off));
	inflight_leave(o->fs);
	if (res >= 0)
		mark_changed(n);
	return res;
}

/*
 * fsync of an emulated file commits the store (emu_store_fsync) and does not
 * fsync the backing file: the namespace file holds no data, and its own
 * flushes would reach the same device and blur the emulation's flush counts.
 * (docs/fuse.md, "Emulation": what a machine crash can lose.)
 */
static int emu_fsync(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
		     int datasync)
{
	sync_mtime(o, n, fh_fd(fi));
	struct emu_cx cx;
	op_cx(o, &cx);
	int r = EMU_CALL(o, &cx, emu_store_fsync(o->fs->emu, &cx, o->node));
	return r < 0 ? r : 0;
}

static int emu_fallocate(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
			 int mode, off_t off, off_t len)
{
	struct emu_cx cx;
	op_cx(o, &cx);
	int r = EMU_CALL(o, &cx, emu_store_fallocate(o->fs->emu, &cx, o->node, mode,
						     (uint64_t)off, (uint64_t)len));
	if (r < 0)
		return r;
	if (!(mode & FALLOC_FL_KEEP_SIZE) || (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)))
		mark_changed(n);
	return 0;
}

/* Whole blocks are shared by reference (a clone). */
static ssize_t emu_copy_file_range(struct op *o, struct fsp_inode *nin,
				   const struct fuse_file_info *fi_in, off_t off_in,
				   struct fsp_inode *nout, const struct fuse_file_info *fi_out,
				   off_t off_out, size_t len, int flags)
{
	if (!fh_emu(fi_in))
		return -EXDEV; /* one side in the store, one not: let the caller copy */
	struct emu_cx cx;
	op_cx(o, &cx);
	if (flags)
		return -EINVAL;
	ssize_t res = EMU_CALL(o, &cx, emu_store_clone(o->fs->emu, &cx, nin->ino,
						       (uint64_t)off_in, o->node,
						       (uint64_t)off_out, len));
	if (res > 0)
		mark_changed(nout);
	return res;
}

static off_t emu_lseek(struct op *o, const struct fuse_file_info *fi, off_t off, int whence)
{
	/* the kernel sends only SEEK_DATA and SEEK_HOLE */
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0)
		return -ENXIO;
	int64_t r = EMU_TIME(o, emu_store_seek(o->fs->emu, o->node, (uint64_t)off, whence));
	return (off_t)r;
}

static void emu_release(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi)
{
	sync_mtime(o, n, fh_fd(fi));
	BACKING(o, close(fh_fd(fi)));
	emu_handle_close(o, n);
}

static void emu_abandon(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi)
{
	BACKING(o, close(fh_fd(fi)));
	emu_handle_close(o, n);
}

const struct fsp_datapath fsp_dp_emu = {
	.name = "emu",
	.open = emu_open,
	.read = emu_read,
	.write_buf = emu_write_buf,
	.fsync = emu_fsync,
	.fallocate = emu_fallocate,
	.copy_file_range = emu_copy_file_range,
	.lseek = emu_lseek,
	.release = emu_release,
	.abandon = emu_abandon,
};

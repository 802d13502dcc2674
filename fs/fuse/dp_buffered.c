/*
 * dp_buffered.c - the buffered data path (datapath.h): a passthrough
 * handle's data goes to the backing file with pread, a copy of the payload
 * into the file (fuse_buf_copy: a write, or a splice), fsync, fallocate,
 * copy_file_range and lseek, each timed as backing time. The direct path
 * uses the same calls for its buffered twin and for what O_DIRECT does not
 * change (dp_fd_*).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "fs/fuse/datapath.h"

static int buffered_open(struct op *o, struct fsp_inode *n, int fd, int flags, uint64_t *fh)
{
	*fh = (uint64_t)(uint32_t)fd | (uint64_t)FSP_DP_BUFFERED << FH_PATH_SHIFT;
	return 0;
}

ssize_t dp_pread(struct op *o, int fd, size_t size, off_t off, void **buf)
{
	void *b = thread_buf(o->fs, size);
	if (!b)
		return -ENOMEM;
	*buf = b;
	inflight_enter(o->fs);
	ssize_t got = BACKING(o, pread(fd, b, size, off));
	if (got < 0)
		got = -errno;
	inflight_leave(o->fs);
	return got;
}

static ssize_t buffered_read(struct op *o, fuse_req_t req, const struct fuse_file_info *fi,
			     size_t size, off_t off, void **buf)
{
	return dp_pread(o, fh_fd(fi), size, off, buf);
}

ssize_t dp_pwrite_payload(struct op *o, int fd, struct fuse_bufvec *in, size_t size,
			  off_t off, int sync)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = fd;
	dst.buf[0].pos = off;
	inflight_enter(o->fs);
	ssize_t res = BACKING(o, fuse_buf_copy(&dst, in, 0));
	if (sync && res > 0 &&
	    BACKING(o, sync_file_range(fd, off, res, SYNC_FILE_RANGE_WAIT_BEFORE |
				       SYNC_FILE_RANGE_WRITE |
				       SYNC_FILE_RANGE_WAIT_AFTER)) < 0)
		res = -errno;
	inflight_leave(o->fs);
	return res;
}

static ssize_t buffered_write_buf(struct op *o, fuse_req_t req, struct fsp_inode *n,
				  const struct fuse_file_info *fi, struct fuse_bufvec *in,
				  size_t *size, off_t off)
{
	return dp_pwrite_payload(o, fh_fd(fi), in, *size, off, 0);
}

int dp_fd_fsync(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
		int datasync)
{
	int fd = fh_fd(fi);
	return BACKING(o, datasync ? fdatasync(fd) : fsync(fd)) < 0 ? -errno : 0;
}

int dp_fd_fallocate(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
		    int mode, off_t off, off_t len)
{
	return BACKING(o, fallocate(fh_fd(fi), mode, off, len)) < 0 ? -errno : 0;
}

ssize_t dp_fd_copy_file_range(struct op *o, struct fsp_inode *nin,
			      const struct fuse_file_info *fi_in, off_t off_in,
			      struct fsp_inode *nout, const struct fuse_file_info *fi_out,
			      off_t off_out, size_t len, int flags)
{
	if (fh_emu(fi_in))
		return -EXDEV; /* one side in the store, one not: let the caller copy */
	loff_t in = off_in, out = off_out;
	ssize_t res = BACKING(o, copy_file_range(fh_fd(fi_in), &in, fh_fd(fi_out), &out, len,
						 (unsigned)flags));
	return res < 0 ? -errno : res;
}

off_t dp_fd_lseek(struct op *o, const struct fuse_file_info *fi, off_t off, int whence)
{
	off_t res = BACKING(o, lseek(fh_fd(fi), off, whence));
	return res < 0 ? -errno : res;
}

static void buffered_release(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi)
{
	BACKING(o, close(fh_fd(fi)));
}

const struct fsp_datapath fsp_dp_buffered = {
	.name = "buffered",
	.open = buffered_open,
	.read = buffered_read,
	.write_buf = buffered_write_buf,
	.fsync = dp_fd_fsync,
	.fallocate = dp_fd_fallocate,
	.copy_file_range = dp_fd_copy_file_range,
	.lseek = dp_fd_lseek,
	.release = buffered_release,
	.abandon = buffered_release,
};

/*
 * dp_direct.c - the O_DIRECT data path (datapath.h): a passthrough handle
 * opened O_DIRECT.
 *
 * Reads and writes go to the O_DIRECT backing fd from aligned buffers: an
 * aio slot's (fs/fuse/aio.h), submitted with io_submit so that the worker
 * returns to /dev/fuse at once and the reaper thread replies and logs
 * (aio_done); or, where no slot is to be had or aio is off, the per-thread
 * bounce buffer and a pread/pwrite here. The payload libfuse hands over sits
 * right after the request headers, so a write is always copied.
 *
 * A request that the O_DIRECT fd cannot serve (an offset or length off the
 * backing file's direct-IO alignment: the kernel's write-back of mapped
 * pages cut at the end of the file, say) goes to a second, buffered fd of
 * the same file that the handle also carries (dio_fits, direct_open), and
 * is counted in fuse.direct_fallbacks.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fs/fuse/aio.h"
#include "fs/fuse/datapath.h"
#include "src/base/ops.h"
#include "src/sys/target.h"

#define FSP_PAGE 4096u

static inline uint64_t fh_make_direct(int fd, int twin, unsigned align_log2)
{
	return (uint64_t)(uint32_t)fd | FH_DIRECT | (uint64_t)align_log2 << FH_ALIGN_SHIFT |
	       (uint64_t)twin << FH_TWIN_SHIFT;
}

/* The buffered fd of an O_DIRECT handle. */
static inline int fh_twin(const struct fuse_file_info *fi)
{
	return (int)(fi->fh >> FH_TWIN_SHIFT);
}

/*
 * Can the O_DIRECT backing fd of handle fi serve len bytes at off? The one
 * place that decides: offset and length must be multiples of the backing
 * file's direct-IO alignment (statx's, at open: dio_align_log2). Buffers
 * are then aligned too: they are fsprism's own, from src/base/bufpool.c, aligned
 * to their power-of-two size, which is at least len. A few integer ops.
 */
static inline int dio_fits(const struct fuse_file_info *fi, uint64_t off, uint64_t len)
{
	uint64_t mask = (1ull << ((fi->fh >> FH_ALIGN_SHIFT) & 31)) - 1;
	return ((off | len) & mask) == 0;
}

static inline void count_fallback(struct fsp_fs *fs)
{
	__atomic_add_fetch(&fs->direct_fallbacks, 1, __ATOMIC_RELAXED);
}

/*
 * log2 of the direct-IO alignment of fd's file: the larger of statx's
 * offset and memory alignment; where statx does not say, the logical block
 * size of the device under the file system (src/sys/target.h, 4096 where that
 * is unknown). 0, no check, where statx says the file system does no direct
 * IO of this file (ext4 then serves O_DIRECT buffered itself).
 */
static unsigned dio_align_log2(int fd)
{
	unsigned a = 0;
#ifdef STATX_DIOALIGN
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		if (!stx.stx_dio_offset_align)
			return 0;
		a = stx.stx_dio_offset_align > stx.stx_dio_mem_align ?
			stx.stx_dio_offset_align : stx.stx_dio_mem_align;
	}
#endif
	if (!a) {
		char path[64];
		uint64_t size;
		proc_path(path, sizeof(path), fd);
		if (fsp_target_geometry(path, &size, &a) < 0 || !a)
			a = FSP_PAGE;
	}
	unsigned l = 0;
	while (l < 31 && (1u << l) < a)
		l++;
	return l;
}

/*
 * The handle of O_DIRECT backing fd (opened with flags): with a buffered
 * twin of the same file (the same access mode, O_APPEND, O_SYNC ...) for
 * the requests the direct fd cannot serve. Opened now rather than at the
 * first such request, since that may be the kernel's write-back of mapped
 * pages, which must not fail on an open (EMFILE) with the data only in the
 * page cache; it costs an open and a statx per O_DIRECT open.
 */
static int direct_open(struct op *o, struct fsp_inode *n, int fd, int flags, uint64_t *fh)
{
	char path[64];
	proc_path(path, sizeof(path), fd);
	int tflags = (flags & ~(O_DIRECT | O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC;
	int twin = BACKING(o, open_noatime(o->fs, AT_FDCWD, path, tflags, 0, 0));
	if (twin < 0)
		return -errno;
	if (twin > FH_TWIN_MAX) {
		close(twin);
		return -EMFILE;
	}
	*fh = fh_make_direct(fd, twin, BACKING(o, dio_align_log2(fd)));
	return 0;
}

/*
 * An O_DIRECT read or write of a backing file in flight (fs/fuse/aio.h): the
 * request's timing travels with it, and the reaper thread replies and logs.
 * "backing" is then the time from io_submit to the completion's collection.
 */
struct aio_req {
	struct fsp_aio_io io; /* first: the reaper hands this back */
	struct op o;
	fuse_req_t req;
	int opcode;           /* FSP_OP_READ or FSP_OP_WRITE */
	uint64_t off;
	size_t len;
};

size_t dp_direct_slot_size(void)
{
	return sizeof(struct aio_req);
}

static void aio_done(struct fsp_aio_io *io, long res, uint64_t done_ns)
{
	struct aio_req *r = (struct aio_req *)io;
	struct op *o = &r->o;
	int err = res < 0 ? (int)-res : 0;
	if (o->timing)
		o->backing += done_ns - io->submit_ns;
	inflight_leave(o->fs);
	op_end(o);
	if (err)
		fuse_reply_err(r->req, err);
	else if (r->opcode == FSP_OP_READ)
		fuse_reply_buf(r->req, io->buf, (size_t)res);
	else
		fuse_reply_write(r->req, (size_t)res);
	op_log(o, r->opcode, r->off, r->len, err ? 0 : (uint64_t)res, err);
}

/* Submit len bytes at off of io->buf as a read or write of fd. 0: the reaper
 * now owns the request; -1: not submitted, do it synchronously. */
static int aio_go(struct op *o, fuse_req_t req, struct fsp_aio_io *io, int opcode,
		  int fd, size_t len, off_t off)
{
	struct aio_req *r = (struct aio_req *)io;
	r->o = *o;
	r->req = req;
	r->opcode = opcode;
	r->off = (uint64_t)off;
	r->len = len;
	io->done = aio_done;
	if (opcode == FSP_OP_READ)
		io_prep_pread(&io->cb, fd, io->buf, len, off);
	else
		io_prep_pwrite(&io->cb, fd, io->buf, len, off);
	inflight_enter(o->fs);
	io->submit_ns = o->timing ? fsp_now_ns() : 0;
	if (fsp_aio_submit(o->fs->aio, io) == 0)
		return 0;
	inflight_leave(o->fs);
	return -1;
}

static ssize_t direct_read(struct op *o, fuse_req_t req, const struct fuse_file_info *fi,
			   size_t size, off_t off, void **buf)
{
	int fd = fh_fd(fi);
	if (__builtin_expect(!dio_fits(fi, (uint64_t)off, size), 0)) {
		fd = fh_twin(fi); /* read buffered below */
		count_fallback(o->fs);
	} else if (o->fs->aio) {
		struct fsp_aio_io *io = fsp_aio_get(o->fs->aio, size);
		if (io) {
			if (aio_go(o, req, io, FSP_OP_READ, fd, size, off) == 0)
				return FSP_DP_QUEUED;
			fsp_aio_put(o->fs->aio, io); /* read synchronously below */
		}
	}
	return dp_pread(o, fd, size, off, buf);
}

static ssize_t direct_write_buf(struct op *o, fuse_req_t req, struct fsp_inode *n,
				const struct fuse_file_info *fi, struct fuse_bufvec *in,
				size_t *size, off_t off)
{
	if (!dio_fits(fi, (uint64_t)off, *size)) {
		/* through the buffered twin (the request is off the direct-IO
		 * alignment). An application's O_DIRECT write is on the device
		 * when it returns: write the range out as a direct write would
		 * have (write-back of the kernel's page cache needs no more).
		 * Later direct IO of the backing file writes back and
		 * invalidates cached pages itself, as for any mix of the two. */
		ssize_t res = dp_pwrite_payload(o, fh_twin(fi), in, *size, off, !fi->writepage);
		count_fallback(o->fs);
		return res;
	}
	/* O_DIRECT needs an aligned source: copy the payload into an aio
	 * slot's buffer and write asynchronously, or else into the per-thread
	 * bounce buffer and write here. */
	struct fsp_aio_io *io = o->fs->aio ? fsp_aio_get(o->fs->aio, *size) : NULL;
	void *buf;
	ssize_t res;
	if (io) {
		buf = io->buf;
		res = payload_copy_to(buf, in, *size);
	} else {
		res = payload_copy(o->fs, in, *size, &buf);
	}
	if (res >= 0 && io &&
	    aio_go(o, req, io, FSP_OP_WRITE, fh_fd(fi), (size_t)res, off) == 0)
		return FSP_DP_QUEUED;
	if (res >= 0) {
		inflight_enter(o->fs);
		res = BACKING(o, pwrite(fh_fd(fi), buf, (size_t)res, off));
		if (res < 0)
			res = -errno;
		inflight_leave(o->fs);
	}
	if (io)
		fsp_aio_put(o->fs->aio, io);
	return res;
}

/* Close both backing fds. */
static void direct_release(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi)
{
	BACKING(o, close(fh_twin(fi)));
	BACKING(o, close(fh_fd(fi)));
}

const struct fsp_datapath fsp_dp_direct = {
	.name = "direct",
	.open = direct_open,
	.read = direct_read,
	.write_buf = direct_write_buf,
	.fsync = dp_fd_fsync,
	.fallocate = dp_fd_fallocate,
	.copy_file_range = dp_fd_copy_file_range,
	.lseek = dp_fd_lseek,
	.release = direct_release,
	.abandon = direct_release,
};

/*
 * datapath.h - the whole contract between the FUSE request handlers
 * (fuse_fs.c) and a file's data path.
 *
 * A regular file's handle is served by one of three paths, chosen once when
 * the file is opened or created and kept in the handle's bits (request.h):
 *   buffered  pread/pwrite on the backing file, through its page cache
 *             (dp_buffered.c);
 *   direct    an O_DIRECT backing file: asynchronous IO from aligned
 *             buffers (fs/fuse/aio.h), the reaper replying and logging, and
 *             a buffered twin of the file for what the direct fd cannot
 *             serve (dp_direct.c);
 *   emu       the file's data is an object of the emulated store
 *             (dp_emu.c).
 * Here are only the operations whose behaviour differs by path; every other
 * request is the handlers' own. A handler times the request (op_begin),
 * calls its handle's path once, replies and logs; the path does the backing
 * or store calls inside BACKING / EMU_CALL, so the recorded layers mean the
 * same whichever path served. One indirect call per request, nothing else.
 *
 * Results: a byte count or offset (>= 0), or -errno. read and write_buf may
 * return FSP_DP_QUEUED instead: the request went to the asynchronous IO's
 * reaper, which replies and logs; the handler then returns at once.
 */
#ifndef FSP_FS_DATAPATH_H
#define FSP_FS_DATAPATH_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include "fs/fuse/request.h"

#define FSP_DP_QUEUED (-SSIZE_MAX - 1)

struct fsp_datapath {
	const char *name;
	/* Make the handle (*fh) of backing fd, just opened with flags, of node
	 * n. 0 or -errno; on an error fd is still the caller's to close. */
	int (*open)(struct op *o, struct fsp_inode *n, int fd, int flags, uint64_t *fh);
	/* Read size bytes at off into a buffer of the path's, *buf. */
	ssize_t (*read)(struct op *o, fuse_req_t req, const struct fuse_file_info *fi,
			size_t size, off_t off, void **buf);
	/* Write the payload in (*size bytes; the bytes taken from it if it has
	 * to be copied first) at off. */
	ssize_t (*write_buf)(struct op *o, fuse_req_t req, struct fsp_inode *n,
			     const struct fuse_file_info *fi, struct fuse_bufvec *in,
			     size_t *size, off_t off);
	int (*fsync)(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
		     int datasync);
	int (*fallocate)(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
			 int mode, off_t off, off_t len);
	/* Called on the destination's path; the source may be on another
	 * (then -EXDEV: the caller copies). */
	ssize_t (*copy_file_range)(struct op *o, struct fsp_inode *nin,
				   const struct fuse_file_info *fi_in, off_t off_in,
				   struct fsp_inode *nout, const struct fuse_file_info *fi_out,
				   off_t off_out, size_t len, int flags);
	/* lseek of the handle (the kernel sends only SEEK_DATA and SEEK_HOLE). */
	off_t (*lseek)(struct op *o, const struct fuse_file_info *fi, off_t off, int whence);
	/* The kernel released the handle. */
	void (*release)(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi);
	/* The reply to the open did not reach the kernel: undo the open. */
	void (*abandon)(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi);
};

/* The paths, by their number in a handle's bits 32-33. */
enum { FSP_DP_BUFFERED = 0, FSP_DP_DIRECT = 1, FSP_DP_EMU = 2 };
extern const struct fsp_datapath fsp_dp_buffered, fsp_dp_direct, fsp_dp_emu;
extern const struct fsp_datapath *const fsp_datapaths[4];

/* The path of an open handle: one load from a constant table. */
static inline const struct fsp_datapath *fh_path(const struct fuse_file_info *fi)
{
	return fsp_datapaths[(fi->fh >> FH_PATH_SHIFT) & 3];
}

/* ---- shared by the passthrough paths (dp_buffered.c) ---- */

/* pread of fd into the per-thread buffer (*buf): bytes or -errno. */
ssize_t dp_pread(struct op *o, int fd, size_t size, off_t off, void **buf);
/* The payload in to fd at off through the page cache; with sync, the range
 * is then written out (sync_file_range) before returning. */
ssize_t dp_pwrite_payload(struct op *o, int fd, struct fuse_bufvec *in, size_t size,
			  off_t off, int sync);
int dp_fd_fsync(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
		int datasync);
int dp_fd_fallocate(struct op *o, struct fsp_inode *n, const struct fuse_file_info *fi,
		    int mode, off_t off, off_t len);
ssize_t dp_fd_copy_file_range(struct op *o, struct fsp_inode *nin,
			      const struct fuse_file_info *fi_in, off_t off_in,
			      struct fsp_inode *nout, const struct fuse_file_info *fi_out,
			      off_t off_out, size_t len, int flags);
off_t dp_fd_lseek(struct op *o, const struct fuse_file_info *fi, off_t off, int whence);

/* ---- the direct path's asynchronous IO (dp_direct.c) ---- */

/* The size of one asynchronous request's slot (fsp_aio_start). */
size_t dp_direct_slot_size(void);

/* ---- the emulation's objects, for the handlers (dp_emu.c) ---- */

/* Make sure n's object exists (and is not a stale one of an earlier file
 * with the same inode number). 0 or -errno. */
int dp_emu_obj_ensure(struct op *o, struct fsp_inode *n, struct emu_cx *cx);
/* Remove the object of n, whose last link went through the mount, once no
 * handle is open and no link has come back. Under n->lock. */
void dp_emu_remove_if_gone_locked(struct op *o, struct fsp_inode *n);

#endif

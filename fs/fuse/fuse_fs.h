/*
 * fuse_fs.h - fsprism's passthrough file system (libfuse3 low-level API).
 *
 * Every request is served by the matching system call on the backing
 * directory and timed: total handler time, time inside backing system calls,
 * and the difference (fsprism's own work). One struct fsp_rec per request
 * goes to the oplog after the reply is sent.
 *
 * With the copy-on-write / journaling emulation on (fsp_fs_set_emu), the
 * backing directory keeps the namespace and the data of its regular files
 * lives in the emulated store (fs/emu/store.h): reads, writes, sizes,
 * truncation, fallocate, copy_file_range, SEEK_DATA/SEEK_HOLE, fsync and
 * statfs go to the store. Each store IO becomes a device record
 * (FSP_OP_DEV_*) through fsp_fs_devio. See docs/fuse.md, "Emulation".
 */
#ifndef FSP_FS_FUSE_FS_H
#define FSP_FS_FUSE_FS_H

#include <stddef.h>
#include <stdint.h>
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>
#include "src/db/oplog.h"

struct emu_store;
struct emu_cx;
struct fsp_inject;
struct fsp_model;

struct fsp_fs_opts {
	double attr_timeout;     /* seconds the kernel may cache attributes */
	double entry_timeout;    /* seconds the kernel may cache names */
	int writeback_cache;     /* negotiate FUSE_CAP_WRITEBACK_CACHE */
	int splice;              /* splice write payloads /dev/fuse -> file */
	unsigned max_write;      /* bytes per WRITE request (0: 1 MiB) */
	unsigned max_background; /* kernel's async request limit (0: 64) */
	int timing;              /* 0 (--record=off): no clock reads at all */
	int track_inflight;      /* count concurrent backing reads/writes */
	int backing_aio;         /* O_DIRECT data IO asynchronous (fs/fuse/aio.h) */
	int noatime;             /* -o noatime: backing opens with O_NOATIME */
	int nodiratime;          /* -o nodiratime: directories' opens only */
	struct fsp_oplog *log;   /* NULL when timing is 0 */
	const struct fsp_inject *inject; /* --inject rules (inject.h), or NULL;
					  * the caller keeps them alive */
	struct fsp_model *model;         /* --device-model (fs/model/model.h), or
					  * NULL; the caller keeps it alive */
};

struct fsp_fs;

/*
 * Open the backing directory and build the inode table. On failure returns
 * NULL and writes a reason naming the path to err.
 */
struct fsp_fs *fsp_fs_new(const char *backing, const struct fsp_fs_opts *opts,
			  char *err, size_t errlen);
void fsp_fs_free(struct fsp_fs *fs);

/*
 * Attach the oplog once the run exists (before any request is served).
 * Device records that fsp_fs_devio received before (the store's IO while
 * it was opened) are added to it now.
 */
void fsp_fs_set_log(struct fsp_fs *fs, struct fsp_oplog *log);

/*
 * Serve regular files' data from st (before any request is served).
 * hide_store_name: the store is BACKING/FSP_STORE_NAME, which is then
 * invisible at the root of the mount (lookup, readdir, create, rename ...).
 */
#define FSP_STORE_NAME ".fsprism-store"
void fsp_fs_set_emu(struct fsp_fs *fs, struct emu_store *st, int hide_store_name);

/* The extended attribute that ties a backing file to its object in the
 * store ("STORE-UUID:OBJECT-ID"); FSP_XATTR_PREFIX names are fsprism's
 * own and not listed, read, set or removed through the mount. */
#define FSP_XATTR_PREFIX "user.fsprism."
#define FSP_IDENT_XATTR FSP_XATTR_PREFIX "obj"

/*
 * The store's devio callback (struct emu_store_cfg; arg = the fsp_fs): one
 * FSP_OP_DEV_* record per store IO, tied to the user operation in cx.
 * Nothing is recorded when timing is off.
 */
void fsp_fs_devio(void *arg, const struct emu_cx *cx, int fsp_op, uint64_t off,
		  uint64_t len, uint64_t start_ns, uint64_t ns, int err);

/*
 * Start the threads the file system needs (the reaper of asynchronous
 * backing IO), in the process that will serve: 0 or -errno.
 */
int fsp_fs_start(struct fsp_fs *fs);

/*
 * After the session loop has ended, before the session is destroyed: wait
 * for the backing IO still in flight to complete and be answered. Lock
 * requests still waiting are then abandoned (neither answered nor logged).
 */
void fsp_fs_stop(struct fsp_fs *fs);

/* The request handlers; userdata for fuse_session_new must be the fsp_fs. */
extern const struct fuse_lowlevel_ops fsp_fs_ops;

/* O_DIRECT reads and writes that the backing O_DIRECT fd could not serve
 * (off its direct-IO alignment) and that went through the handle's buffered
 * fd instead. */
uint64_t fsp_fs_direct_fallbacks(const struct fsp_fs *fs);

/* Most backing reads+writes seen in flight at once (track_inflight only). */
unsigned fsp_fs_max_inflight(const struct fsp_fs *fs);

/* After fsp_fs_stop: bytes mapped for the asynchronous IO's buffers, and
 * how many of them huge pages backed (src/base/bufpool.h); 0 and 0 without it. */
void fsp_fs_buffer_usage(const struct fsp_fs *fs, uint64_t *mapped, uint64_t *huge);

#endif

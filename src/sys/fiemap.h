/*
 * fiemap.h - where a file's data lies on its device: its extents, read
 * with the FIEMAP ioctl (as filefrag does), so that a block request's
 * sector can be mapped back to an offset in the file.
 */
#ifndef FSP_SYS_FIEMAP_H
#define FSP_SYS_FIEMAP_H

#include <stddef.h>
#include <stdint.h>

/* FIEMAP_EXTENT_* flags that decide whether an extent has a location */
#define FSP_EXT_UNKNOWN 0x2u   /* no location yet */
#define FSP_EXT_DELALLOC 0x4u  /* delayed allocation: no location yet */
#define FSP_EXT_INLINE 0x200u  /* data in the inode, not in a block of its own */
#define FSP_EXT_UNWRITTEN 0x800u /* allocated, reads return zeroes without IO */

/* One extent: file bytes [logical, +length) at byte physical of the device
 * holding the file system (for a partition: of the partition). */
struct fsp_extent {
	uint64_t logical, physical, length;
	uint32_t flags;
};

/*
 * The extents of the open file fd, in file order, into *out (malloc'd;
 * free it); *n 0 for a file with no block. 0, or -1 with errno (EOPNOTSUPP:
 * its file system has no FIEMAP, e.g. FUSE or tmpfs).
 */
int fsp_fiemap_read(int fd, struct fsp_extent **out, size_t *n);

#endif

/*
 * target.h - what a benchmark writes to, and the checks that keep it from
 * destroying data it should not.
 *
 * A target is a block device ("raw") or a regular file. Before any write to
 * a block device, fsp_target_check_raw_write() refuses a device that is
 * mounted, has a mounted partition, has holders (dm, md, ...) or is open
 * exclusively, or carries a file-system, RAID or partition-table signature
 * (libblkid) or an fsprism store (on it or on a partition) -- unless
 * destroy_data is set. Every command that writes a device (run, compare,
 * mount --store) asks this one function.
 */
#ifndef FSP_TARGET_H
#define FSP_TARGET_H

#include <stddef.h>
#include <stdint.h>

/*
 * Returns 0 if writing to block device `dev` is allowed, or -1 with a
 * one-line reason in err that names what was found, e.g.
 * "/dev/loop3 has a mounted partition /dev/loop3p1 (on /mnt/x)" or
 * "/dev/loop3 carries an ext4 file system signature (use --destroy-data to overwrite it)",
 * "/dev/loop3 holds an fsprism store (use --destroy-data to overwrite it)".
 */
int fsp_target_check_raw_write(const char *dev, int destroy_data, char *err,
			       size_t errlen);

/* 1 if path is a block device, 0 if not, -1 (errno set) if it cannot be stat'ed. */
int fsp_target_is_blockdev(const char *path);

/* Size in bytes and logical block size of a block device or regular file. */
int fsp_target_geometry(const char *path, uint64_t *size, unsigned *logical_bs);

#endif

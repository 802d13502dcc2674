/*
 * io.h - the small IO interface through which the copy-on-write /
 * journaling emulation (its journal, its store) reaches a device: struct
 * emu_io, with two ready-made implementations, over a file descriptor and
 * an accounting wrapper around another emu_io.
 *
 * Every IO carries a kind (data, journal, metadata, checkpoint, flush) so
 * device-level accounting can count it; unit tests plug in a memory buffer.
 */
#ifndef FSP_FS_EMU_IO_H
#define FSP_FS_EMU_IO_H

#include <stddef.h>
#include <stdint.h>

enum emu_io_kind {
	EMU_IO_DATA = 0,     /* file data (home location or CoW destination) */
	EMU_IO_JOURNAL,      /* journal descriptor, logged block, commit, jsb */
	EMU_IO_METADATA,     /* metadata written home (tree nodes, maps) */
	EMU_IO_CHECKPOINT,   /* CoW checkpoint / superblock */
	EMU_IO_FLUSH,        /* cache flush (only ever passed to flush()) */
	EMU_IO_NKINDS
};

#define EMU_IO_FUA 1u /* pwrite flag: forced unit access for this write */

/*
 * The store. Offsets are absolute byte offsets on the store. Each function
 * returns 0 on success or a negative errno; short transfers are errors.
 */
struct emu_io {
	int (*pwrite)(void *ctx, const void *buf, size_t len, uint64_t off,
		      enum emu_io_kind kind, unsigned flags);
	int (*pread)(void *ctx, void *buf, size_t len, uint64_t off);
	int (*flush)(void *ctx);
	void *ctx;
};

const char *emu_io_kind_name(enum emu_io_kind kind);

/* pwrite (write) or pread the whole range of fd, resuming after short
 * transfers and EINTR: 0, -errno, or -EIO when the file ends first. */
int emu_fd_full_io(int fd, void *buf, size_t len, uint64_t off, int write);

/*
 * struct emu_io over a file descriptor (a block device or a file). pwrite
 * and pread loop over short transfers; a short read (end of file) is -EIO.
 * flush is fdatasync(fd). A FUA write goes to fua_fd when it is >= 0 (the
 * caller opens it with O_DSYNC, which the kernel turns into a FUA write on
 * devices that support it) and is otherwise emulated as pwrite + fdatasync.
 */
struct emu_fd_io {
	int fd;
	int fua_fd;
};
void emu_io_from_fd(struct emu_io *io, struct emu_fd_io *ctx, int fd, int fua_fd);

/*
 * Accounting wrapper: counts every IO passed to an inner struct emu_io by
 * kind (writes, bytes; flushes under EMU_IO_FLUSH), FUA writes, reads, and
 * writes that start exactly where the previous write ended (sequential at
 * the device). Not thread-safe: one emulation instance serialises its IO
 * issue, or each thread wraps its own.
 */
struct emu_io_acct {
	struct emu_io inner;
	uint64_t writes[EMU_IO_NKINDS]; /* writes[EMU_IO_FLUSH] counts flushes */
	uint64_t bytes[EMU_IO_NKINDS];
	uint64_t fua_writes;
	uint64_t seq_writes;
	uint64_t reads, read_bytes;
	uint64_t last_end; /* end offset of the previous write (UINT64_MAX: none) */
};
void emu_io_acct_init(struct emu_io *io, struct emu_io_acct *acct, const struct emu_io *inner);

#endif

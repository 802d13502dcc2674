/*
 * io.c - struct emu_io over a file descriptor, and the accounting wrapper
 * (see io.h).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fs/emu/io.h"

const char *emu_io_kind_name(enum emu_io_kind kind)
{
	static const char *names[EMU_IO_NKINDS] = {
		"data", "journal", "metadata", "checkpoint", "flush"
	};
	return (unsigned)kind < EMU_IO_NKINDS ? names[kind] : "?";
}

/* ---- struct emu_io over a file descriptor ---- */

int emu_fd_full_io(int fd, void *buf, size_t len, uint64_t off, int write)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int fd_flush(void *ctx)
{
	struct emu_fd_io *f = ctx;
	return fdatasync(f->fd) ? -errno : 0;
}

static int fd_pwrite(void *ctx, const void *buf, size_t len, uint64_t off,
		     enum emu_io_kind kind, unsigned flags)
{
	struct emu_fd_io *f = ctx;
	int rc;
	(void)kind;
	if ((flags & EMU_IO_FUA) && f->fua_fd >= 0)
		return emu_fd_full_io(f->fua_fd, (void *)buf, len, off, 1);
	rc = emu_fd_full_io(f->fd, (void *)buf, len, off, 1);
	if (!rc && (flags & EMU_IO_FUA))
		rc = fd_flush(ctx);
	return rc;
}

static int fd_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct emu_fd_io *f = ctx;
	return emu_fd_full_io(f->fd, buf, len, off, 0);
}

void emu_io_from_fd(struct emu_io *io, struct emu_fd_io *ctx, int fd, int fua_fd)
{
	ctx->fd = fd;
	ctx->fua_fd = fua_fd;
	io->pwrite = fd_pwrite;
	io->pread = fd_pread;
	io->flush = fd_flush;
	io->ctx = ctx;
}

/* ---- accounting wrapper ---- */

static int acct_pwrite(void *ctx, const void *buf, size_t len, uint64_t off,
		       enum emu_io_kind kind, unsigned flags)
{
	struct emu_io_acct *a = ctx;
	if ((unsigned)kind < EMU_IO_NKINDS) {
		a->writes[kind]++;
		a->bytes[kind] += len;
	}
	if (flags & EMU_IO_FUA)
		a->fua_writes++;
	if (off == a->last_end)
		a->seq_writes++;
	a->last_end = off + len;
	return a->inner.pwrite(a->inner.ctx, buf, len, off, kind, flags);
}

static int acct_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct emu_io_acct *a = ctx;
	a->reads++;
	a->read_bytes += len;
	return a->inner.pread(a->inner.ctx, buf, len, off);
}

static int acct_flush(void *ctx)
{
	struct emu_io_acct *a = ctx;
	a->writes[EMU_IO_FLUSH]++;
	return a->inner.flush(a->inner.ctx);
}

void emu_io_acct_init(struct emu_io *io, struct emu_io_acct *acct, const struct emu_io *inner)
{
	memset(acct, 0, sizeof(*acct));
	acct->inner = *inner;
	acct->last_end = UINT64_MAX;
	io->pwrite = acct_pwrite;
	io->pread = acct_pread;
	io->flush = acct_flush;
	io->ctx = acct;
}

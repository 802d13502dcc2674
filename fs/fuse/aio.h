/*
 * aio.h - asynchronous backing IO for the FUSE layer (libaio).
 *
 * A request handler that would block in pread/pwrite on an O_DIRECT backing
 * file instead takes a slot (a page-aligned buffer plus the handler's own
 * state), submits the IO and returns to read the next request; one reaper
 * thread collects completions and calls the slot's completion function,
 * which replies to the kernel and logs the request. So a few worker threads
 * keep the backing file at the application's queue depth, and the kernel
 * wakes no thread per request just to sleep in a system call
 * (docs/results/performance.md, "Asynchronous backing IO").
 *
 * Slots are recycled through a free list, buffers kept with them, so the
 * steady state allocates nothing. The buffers come from a pool in huge
 * pages (src/base/bufpool.h), so each backing IO pins one page, not 32 at
 * 128 KiB.
 */
#ifndef FSP_FS_AIO_H
#define FSP_FS_AIO_H

#include <stddef.h>
#include <stdint.h>
#include <libaio.h>

struct fsp_aio;

struct fsp_aio_io {
	struct iocb cb;
	/* called by the reaper: res is the byte count or -errno, done_ns the
	 * CLOCK_MONOTONIC time the completion was collected (0 if untimed) */
	void (*done)(struct fsp_aio_io *io, long res, uint64_t done_ns);
	void *buf;          /* page-aligned, cap bytes (a power of two) */
	size_t cap;
	uint64_t submit_ns; /* set by the caller before fsp_aio_submit */
	struct fsp_aio_io *next;
	/* the caller's state follows (slot_size bytes in all) */
};

/*
 * Start: an io context of `depth` IOs and the reaper thread. slot_size is
 * the size of the caller's struct that begins with struct fsp_aio_io;
 * timed: read the clock at each completion. NULL with errno on failure.
 */
struct fsp_aio *fsp_aio_start(unsigned depth, size_t slot_size, int timed);

/* A free slot whose buffer holds at least len bytes; NULL if none can be
 * made (then do the IO synchronously). */
struct fsp_aio_io *fsp_aio_get(struct fsp_aio *a, size_t len);

/* Give back a slot that was not submitted. */
void fsp_aio_put(struct fsp_aio *a, struct fsp_aio_io *io);

/*
 * Submit io->cb (prepared with io_prep_pread/io_prep_pwrite on io->buf).
 * 0: io->done will be called from the reaper and the slot then recycled.
 * -errno: nothing was submitted, the slot is still the caller's (the IO
 * should then be done synchronously, which also yields the right errno).
 */
int fsp_aio_submit(struct fsp_aio *a, struct fsp_aio_io *io);

/* Bytes mapped for the slots' buffers, and of them in huge pages now. */
void fsp_aio_usage(struct fsp_aio *a, uint64_t *mapped, uint64_t *huge);

/* Wait until every submitted IO is completed and answered, stop the reaper
 * and free everything. */
void fsp_aio_stop(struct fsp_aio *a);

#endif

/*
 * bufpool.h - buffers for O_DIRECT IO, in transparent huge pages.
 *
 * For every O_DIRECT IO the kernel pins the pages of the user's buffer,
 * inside io_submit or pread: 32 pages for a 128 KiB buffer in 4 KiB pages,
 * one in a 2 MiB page. Both the job engine (its buffers) and the FUSE layer
 * (its backing-IO slots) take their buffers from a pool, so that this cost
 * is as small as the machine allows and the same in both.
 *
 * Buffers come in power-of-two size classes from 4 KiB (so each is aligned
 * to its size, at least a page). A class's buffers are carved from 2 MiB
 * chunks, each its own mapping aligned to 2 MiB and advised MADV_HUGEPAGE;
 * a class above 2 MiB gets a chunk per buffer. A buffer given back goes on
 * its class's free list; chunks are unmapped only when the pool is freed,
 * so a steady state maps nothing. Where transparent huge pages are off the
 * advice is ignored and chunks are ordinary pages. Thread-safe (one mutex:
 * callers keep a buffer across many IOs and come back only to grow it).
 */
#ifndef FSP_BUFPOOL_H
#define FSP_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

struct fsp_bufpool;

/* NULL (errno set) if out of memory. */
struct fsp_bufpool *fsp_bufpool_new(void);

/* A buffer of at least len bytes; *cap is what it holds (its class size).
 * NULL (errno set) if no chunk can be mapped. Contents are unspecified. */
void *fsp_bufpool_get(struct fsp_bufpool *p, size_t len, size_t *cap);

/* Give back a buffer with the cap fsp_bufpool_get reported. */
void fsp_bufpool_put(struct fsp_bufpool *p, void *buf, size_t cap);

/* Bytes mapped for buffers, and how many of them huge pages back now (from
 * /proc/self/smaps; 0 if it cannot be read). */
void fsp_bufpool_usage(struct fsp_bufpool *p, uint64_t *mapped, uint64_t *huge);

/* Unmap everything; every buffer of the pool becomes invalid. */
void fsp_bufpool_free(struct fsp_bufpool *p);

#endif

/*
 * alloc.h - the block allocator of the copy-on-write / journaling
 * emulation.
 *
 * A bitmap over a store of N blocks. Two policies:
 *   EMU_ALLOC_NEXT_FIT   search from a moving frontier (where the previous
 *                        allocation ended), wrapping at the end: what a
 *                        log-structured or CoW file system does, so
 *                        overwritten data migrates to the frontier.
 *   EMU_ALLOC_FIRST_FIT  search from block 0: refills the lowest holes.
 * Both first look for one free run that holds the whole request; failing
 * that they take free runs in search order, so a request comes back in as
 * few extents as the policy allows.
 *
 * Frees are transactional: emu_alloc_free() makes blocks "pending"; they
 * stay allocated until emu_alloc_commit(), so a CoW file system never
 * reuses a block the last durable checkpoint still references. Blocks that
 * were allocated in the open transaction (no checkpoint can reference them)
 * may be released at once with emu_alloc_free_now(). Freeing a block that is
 * free or already pending is an error (-EINVAL) and changes nothing.
 *
 * Not thread-safe: the owner serialises calls.
 */
#ifndef FSP_FS_EMU_ALLOC_H
#define FSP_FS_EMU_ALLOC_H

#include <stddef.h>
#include <stdint.h>

enum emu_alloc_policy { EMU_ALLOC_NEXT_FIT = 0, EMU_ALLOC_FIRST_FIT };

#define EMU_ALLOC_DEFAULT_BLOCK 4096u

/* A run of physical blocks. */
struct emu_run {
	uint64_t start;
	uint64_t len;
};

struct emu_alloc;

/* block_size 0 means EMU_ALLOC_DEFAULT_BLOCK. NULL on bad arguments or
 * out of memory. */
struct emu_alloc *emu_alloc_new(uint64_t nblocks, uint32_t block_size,
				enum emu_alloc_policy policy);
void emu_alloc_destroy(struct emu_alloc *a);

void emu_alloc_set_policy(struct emu_alloc *a, enum emu_alloc_policy policy);
enum emu_alloc_policy emu_alloc_policy(const struct emu_alloc *a);
const char *emu_alloc_policy_name(enum emu_alloc_policy policy);

/*
 * Allocate n blocks as at most max_runs runs, written to out[]. All or
 * nothing with respect to space: -ENOSPC (nothing allocated) when fewer than
 * n blocks are free. Otherwise returns the number of blocks allocated, which
 * is n unless max_runs runs were not enough (the caller asks again); *nruns
 * gets the number of runs. -EINVAL for n == 0 or max_runs == 0.
 */
int64_t emu_alloc_get(struct emu_alloc *a, uint64_t n, struct emu_run *out,
		      size_t max_runs, size_t *nruns);

/* Transactional free: the range becomes pending until commit. */
int emu_alloc_free(struct emu_alloc *a, uint64_t start, uint64_t len);
/* Immediate free: only for blocks allocated in the open transaction. */
int emu_alloc_free_now(struct emu_alloc *a, uint64_t start, uint64_t len);
/* Mark a free range used (reserved regions, rebuilding from extent maps);
 * -EEXIST if any block of it is already used. */
int emu_alloc_reserve(struct emu_alloc *a, uint64_t start, uint64_t len);

/* End the open transaction: pending blocks become free. Returns the new
 * transaction id (ids start at 1 and only grow). */
uint64_t emu_alloc_commit(struct emu_alloc *a);
uint64_t emu_alloc_txid(const struct emu_alloc *a);

/* ---- accounting ---- */
uint64_t emu_alloc_nblocks(const struct emu_alloc *a);
uint32_t emu_alloc_block_size(const struct emu_alloc *a);
uint64_t emu_alloc_free_count(const struct emu_alloc *a);     /* allocatable now */
uint64_t emu_alloc_pending_count(const struct emu_alloc *a);  /* free at commit */
uint64_t emu_alloc_free_extents(const struct emu_alloc *a);   /* maximal free runs */
uint64_t emu_alloc_largest_free(const struct emu_alloc *a);
uint64_t emu_alloc_frontier(const struct emu_alloc *a);
/* 0 free, 1 used, 2 pending (used until commit) */
int emu_alloc_state(const struct emu_alloc *a, uint64_t block);

/*
 * Serialisation for checkpoints. The image is a 48-byte header (magic
 * "FSPALLC1", block size, nblocks, frontier, txid, CRC32C) followed by the
 * used bitmap, bit i of byte i/8 for block i. With pending_as_free = 1
 * pending blocks are written as free: the state the checkpoint being written
 * at commit describes. With 0 they are written as used (conservative).
 */
size_t emu_alloc_serial_size(const struct emu_alloc *a);
int emu_alloc_serialize(const struct emu_alloc *a, void *buf, size_t len,
			int pending_as_free);
/* -EINVAL on a short, foreign or corrupt image. */
int emu_alloc_deserialize(const void *buf, size_t len, enum emu_alloc_policy policy,
			  struct emu_alloc **out);

#endif

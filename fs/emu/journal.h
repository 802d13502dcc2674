/*
 * journal.h - a JBD2-like write-ahead journal for the copy-on-write /
 * journaling emulation.
 *
 * The journal lives in a circular region of a store (a device or a file)
 * that is reached only through struct emu_io (fs/emu/io.h), so unit tests
 * use a memory buffer and the FUSE layer later uses a device fd.
 *
 * On-disk layout (all integers little-endian), block size B:
 *   block 0        journal superblock: uuid, start block, start sequence
 *   blocks 1..N-1  the circular log; a transaction is
 *                    descriptor, logged blocks..., [descriptor, blocks...]...,
 *                    commit
 *                  where a descriptor lists one 64-bit tag per logged block
 *                  (the caller's name for it, e.g. its home block number)
 *                  and the commit block carries a CRC32C over every
 *                  descriptor and logged block of the transaction.
 * Commit order is JBD2's with barriers: write descriptors + blocks, flush,
 * write the commit block with FUA (or write + flush when FUA is off).
 * Replay walks from the superblock's start, applies complete transactions in
 * sequence order and stops at the first torn, corrupt or out-of-sequence
 * one; everything from there on is discarded and reported.
 */
#ifndef FSP_FS_EMU_JOURNAL_H
#define FSP_FS_EMU_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include "fs/emu/io.h"

/* ---- on-disk format (exposed for tests and tools) ---- */

#define EMU_J_MAGIC 0x4a505346u /* "FSPJ" */
#define EMU_J_VERSION 1u
enum emu_j_type { EMU_J_SB = 1, EMU_J_DESC = 2, EMU_J_COMMIT = 3 };

/* common block header: magic u32, type u32, seq u64, uuid u64 */
#define EMU_J_OFF_MAGIC 0
#define EMU_J_OFF_TYPE 4
#define EMU_J_OFF_SEQ 8
#define EMU_J_OFF_UUID 16
#define EMU_J_HDR 24
/* superblock: version u32, block size u32, nblocks u64, start u64, crc u32
 * (the sequence of the transaction at start is the header seq) */
#define EMU_J_SB_OFF_VERSION 24
#define EMU_J_SB_OFF_BSIZE 28
#define EMU_J_SB_OFF_NBLOCKS 32
#define EMU_J_SB_OFF_START 40
#define EMU_J_SB_OFF_CRC 48 /* crc32c of bytes [0, 48) */
/* descriptor: ntags u32, pad u32, then ntags u64 tags */
#define EMU_J_DESC_OFF_NTAGS 24
#define EMU_J_DESC_OFF_TAGS 32
/* commit: nblocks u32 (descriptors + logged), data crc u32, self crc u32 */
#define EMU_J_COMMIT_OFF_NBLOCKS 24
#define EMU_J_COMMIT_OFF_DCRC 28
#define EMU_J_COMMIT_OFF_CRC 32 /* crc32c of bytes [0, 32) */

/* ---- the journal ---- */

struct emu_journal;

struct emu_journal_cfg {
	uint64_t base;       /* byte offset of the journal region on the store */
	uint64_t nblocks;    /* region size in blocks, superblock included (>= 4) */
	uint32_t block_size; /* power of two, >= 512 */
	int commit_fua;      /* 1: commit block written with FUA; 0: write+flush */
	uint64_t uuid;       /* format only: 0 = pick one at random */
};

/* Write a fresh superblock (start = block 1). Stale transactions from an
 * earlier format are ignored because they carry another uuid. The journal
 * returned is ready for commits. */
int emu_journal_format(const struct emu_io *io, const struct emu_journal_cfg *cfg,
		       struct emu_journal **out);

/* Read and validate the superblock at cfg->base (cfg->nblocks and
 * cfg->block_size must match it). The journal must be replayed before it
 * accepts commits. */
int emu_journal_open(const struct emu_io *io, const struct emu_journal_cfg *cfg,
		     struct emu_journal **out);

void emu_journal_close(struct emu_journal *j);

/* Add one block (block_size bytes, copied) to the open transaction. */
int emu_journal_log(struct emu_journal *j, uint64_t tag, const void *block);

/* Blocks logged in the open transaction, and the log blocks its commit
 * needs (descriptors + blocks + commit). */
uint64_t emu_journal_pending(const struct emu_journal *j);
uint64_t emu_journal_commit_cost(const struct emu_journal *j);
/* Free log blocks (not yet holding an un-checkpointed transaction). */
uint64_t emu_journal_free_blocks(const struct emu_journal *j);
uint32_t emu_journal_block_size(const struct emu_journal *j);

/*
 * Write the open transaction. Returns its sequence number (> 0) via *seq, 0
 * on success; -ENOSPC when the log lacks room (the transaction stays open:
 * write the logged blocks home, emu_journal_checkpoint(), retry); -EFBIG
 * when it could never fit the log (split it); -EINVAL
 * when the journal still needs replay; an IO error otherwise (the journal is
 * then unusable until reopened and replayed). An empty transaction writes
 * nothing and returns seq 0.
 */
int emu_journal_commit(struct emu_journal *j, uint64_t *seq);

/*
 * Free log space: the caller promises every block of every transaction with
 * sequence < upto_seq is durable at home. Flushes, then rewrites the
 * superblock to start at the first transaction >= upto_seq. UINT64_MAX means
 * everything committed.
 */
int emu_journal_checkpoint(struct emu_journal *j, uint64_t upto_seq);
/* Oldest and next sequence numbers (oldest == next when the log is empty). */
uint64_t emu_journal_tail_seq(const struct emu_journal *j);
uint64_t emu_journal_next_seq(const struct emu_journal *j);

enum emu_replay_end {
	EMU_REPLAY_CLEAN = 0,   /* no further transaction: the log ended normally */
	EMU_REPLAY_INCOMPLETE,  /* a transaction without a valid commit block */
	EMU_REPLAY_CHECKSUM,    /* commit present, data checksum mismatch */
	EMU_REPLAY_SEQ_GAP,     /* next descriptor has a higher sequence than expected */
	EMU_REPLAY_BAD_DESC,    /* descriptor claims an impossible tag count */
	EMU_REPLAY_IO           /* a read failed */
};

struct emu_replay_report {
	uint64_t start_seq;        /* sequence replay started at */
	uint64_t txns_replayed;
	uint64_t blocks_replayed;
	uint64_t last_seq;         /* last replayed sequence (start_seq-1 if none) */
	enum emu_replay_end end;
	uint64_t stop_seq;         /* sequence of the first rejected transaction */
	uint64_t txns_discarded;   /* rejected one + well-formed ones behind it */
	uint64_t blocks_discarded; /* logged blocks in those */
};

const char *emu_replay_end_name(enum emu_replay_end end);

/* Called for each logged block of each complete transaction, in order. A
 * non-zero return stops replay and is returned by emu_journal_replay. */
typedef int (*emu_journal_apply_fn)(void *ctx, uint64_t seq, uint64_t tag,
				    const void *block);

/*
 * Replay the log. Reads only the journal region and calls apply(); with
 * reset = 0 nothing is written, so replaying twice applies the same blocks
 * again (idempotent for full-block home images). With reset = 1, after
 * applying: flush (making the home writes durable), then write a superblock
 * that starts past everything scanned with a sequence number no stale block
 * in the region can carry; the journal then accepts commits.
 */
int emu_journal_replay(struct emu_journal *j, emu_journal_apply_fn apply, void *ctx,
		       int reset, struct emu_replay_report *rep);

#endif

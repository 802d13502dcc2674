/*
 * extent.h - per-file extent maps and the shared-extent reference
 * table of the copy-on-write emulation.
 *
 * An extent map sends logical blocks of one file to physical blocks:
 * non-overlapping extents {lblk, pblk, len, txid} kept in logical order in
 * leaves of up to EMU_EMAP_LEAF extents, themselves in a sorted array of
 * leaf pointers (a two-level B+-tree). Lookups are two binary searches;
 * an edit moves at most one leaf's worth of extents plus leaf pointers, so
 * a file fragmented into 100k extents still costs microseconds per write,
 * not a 3 MB memmove. txid is the allocator transaction that wrote the
 * extent's blocks; it implements "a block moves at most once per open
 * transaction": a write to blocks whose txid is the open transaction lands
 * in place (nothing durable references them), a write to older blocks moves
 * them (emu_emap_classify says which).
 *
 * Adjacent extents that are contiguous both logically and physically are
 * merged, unless that would mix blocks of the open transaction with older
 * ones (their in-place/move answers differ) or exceed max_len. Older
 * transactions merge freely: once a transaction is closed its blocks all
 * answer "move", whatever their exact txid.
 *
 * Shared extents (FICLONE, copy_file_range) are counted in a separate
 * table keyed by physical range, struct emu_refs, because a reference count
 * belongs to the physical blocks, not to any one file's map (as in btrfs's
 * extent tree or APFS's extent-reference tree). Only ranges with two or more
 * references are stored; everything else counts 1.
 */
#ifndef FSP_FS_EMU_EXTENT_H
#define FSP_FS_EMU_EXTENT_H

#include <stddef.h>
#include <stdint.h>

struct emu_ext {
	uint64_t lblk;
	uint64_t pblk;
	uint64_t len;
	uint64_t txid;
};

#define EMU_EMAP_LEAF 64

struct emu_emap_leaf {
	uint32_t n;
	/* Where the store last wrote this leaf as a metadata node, and a
	 * checksum of what it wrote (fs/emu/store; 0 for a new leaf). */
	uint32_t node_crc;
	uint64_t node_pblk;
	struct emu_ext e[EMU_EMAP_LEAF];
};

struct emu_emap {
	struct emu_emap_leaf **leaf; /* in logical order, none empty */
	size_t nleaf, leaf_cap;
	struct emu_emap_leaf **spare; /* preallocated, so edits never fail half-way */
	size_t nspare, spare_cap;
	size_t n;                     /* extents */
	uint64_t max_len; /* longest extent built by merging; 0 = no limit */
};

/* Receives each physical range a map operation drops, in logical order. */
typedef void (*emu_release_fn)(void *ctx, uint64_t pblk, uint64_t len, uint64_t txid);

void emu_emap_init(struct emu_emap *m, uint64_t max_len);
void emu_emap_free(struct emu_emap *m);

/*
 * Map [lblk, lblk+len) to [pblk, pblk+len), written in transaction txid,
 * replacing what was mapped there (each replaced physical range goes to
 * release, which may be NULL). cur_txid is the open transaction (for the
 * merge rule). Ranges longer than max_len are stored as several extents.
 * -ENOMEM leaves the map unchanged and calls nothing.
 */
int emu_emap_insert(struct emu_emap *m, uint64_t lblk, uint64_t pblk, uint64_t len,
		    uint64_t txid, uint64_t cur_txid, emu_release_fn release, void *ctx);
/* Unmap [lblk, lblk+len). */
int emu_emap_punch(struct emu_emap *m, uint64_t lblk, uint64_t len,
		   emu_release_fn release, void *ctx);
/* Unmap everything at or beyond block nblocks. */
int emu_emap_truncate(struct emu_emap *m, uint64_t nblocks,
		      emu_release_fn release, void *ctx);

enum emu_map_kind {
	EMU_MAP_HOLE = 0, /* nothing mapped: a write allocates */
	EMU_MAP_INPLACE,  /* mapped in the open transaction: write in place */
	EMU_MAP_MOVE      /* mapped by an older transaction: CoW moves it */
};

struct emu_map {
	uint64_t lblk;
	uint64_t pblk;    /* valid unless kind == EMU_MAP_HOLE */
	uint64_t len;     /* how far this answer holds, <= the asked length */
	uint64_t txid;    /* valid unless a hole */
	enum emu_map_kind kind;
};

/* Describe the start of [lblk, lblk+len): the mapped piece or the hole up to
 * the next extent. cur_txid decides INPLACE vs MOVE. Returns out->len (0
 * only when len == 0). */
uint64_t emu_emap_classify(const struct emu_emap *m, uint64_t lblk, uint64_t len,
			   uint64_t cur_txid, struct emu_map *out);
/* Same, without a transaction: kind is HOLE or MOVE. */
uint64_t emu_emap_lookup(const struct emu_emap *m, uint64_t lblk, uint64_t len,
			 struct emu_map *out);

/* Extents stored (entries), and extents as FIEMAP would list them after
 * joining entries that are logically and physically contiguous. */
size_t emu_emap_count(const struct emu_emap *m);
/* The i-th stored extent (walks the leaves: for tests and tools). */
int emu_emap_nth(const struct emu_emap *m, size_t i, struct emu_ext *out);
/* Visit stored extents in logical order (e.g. to write map nodes); a
 * non-zero return from fn stops the walk and is returned. */
typedef int (*emu_ext_visit_fn)(void *ctx, const struct emu_ext *e);
int emu_emap_foreach(const struct emu_emap *m, emu_ext_visit_fn fn, void *ctx);
/* Structural self-check (order, no overlap, leaf fill, counts, max_len):
 * 0 when sound, -EUCLEAN otherwise. */
int emu_emap_check(const struct emu_emap *m);
size_t emu_emap_count_physical(const struct emu_emap *m);
uint64_t emu_emap_mapped_blocks(const struct emu_emap *m);
/* One past the last mapped logical block (0 when empty). */
uint64_t emu_emap_end(const struct emu_emap *m);

/* FIEMAP-style listing: calls fn for each physically contiguous run (joined
 * as in count_physical) overlapping [lblk, lblk+len), clipped to the range.
 * A non-zero return from fn stops the walk and is returned. */
typedef int (*emu_extent_fn)(void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len);
int emu_emap_fiemap(const struct emu_emap *m, uint64_t lblk, uint64_t len,
		    emu_extent_fn fn, void *ctx);

/* ---- reference counts of shared physical ranges ---- */

struct emu_ref {
	uint64_t pblk;
	uint64_t len;
	uint64_t count; /* >= 2 */
};

struct emu_refs {
	struct emu_ref *v;
	size_t n, cap;
};

/* Receives physical ranges whose last reference was dropped. */
typedef void (*emu_refs_free_fn)(void *ctx, uint64_t pblk, uint64_t len);

void emu_refs_init(struct emu_refs *r);
void emu_refs_free(struct emu_refs *r);
/* Reference count of pblk (1 when not shared); *run gets how many blocks
 * from pblk share that count (UINT64_MAX-pblk if to the end). */
uint64_t emu_refs_get(const struct emu_refs *r, uint64_t pblk, uint64_t *run);
/* One more reference to every block of the range (a clone). */
int emu_refs_inc(struct emu_refs *r, uint64_t pblk, uint64_t len);
/* One reference fewer; blocks whose count was 1 go to fn (may be NULL). */
int emu_refs_dec(struct emu_refs *r, uint64_t pblk, uint64_t len,
		 emu_refs_free_fn fn, void *ctx);
size_t emu_refs_count(const struct emu_refs *r);

#endif

/*
 * store.h - the emulated copy-on-write / journaling store behind
 * `fsprism mount --cow=... --journal=...`.
 *
 * With an emulation on, the backing directory keeps the namespace (names,
 * modes, owners, times, xattrs) and file *data* lives in one store: a block
 * device or a large file, owned by this module. Each regular file is an
 * object with an id of its own (kept with the backing file, see
 * emu_store_rebind), reached by a key: the backing inode number while the
 * object is bound to a file. Its data is reached through an
 * extent map (fs/emu/extent) over blocks handed out by the allocator
 * (fs/emu/alloc), and the metadata that describes it (extent-map leaf
 * nodes, per-file index nodes, the object map, allocation bitmaps, a root)
 * is written to the store the way the modelled file system would: copied
 * to new blocks and sealed by a checkpoint (copy-on-write), or logged in a
 * write-ahead journal (fs/emu/journal) and written home later (journaling),
 * or written home in place with no protection (both off).
 *
 * Store layout (block size B, default 4 KiB; every offset is a real offset
 * on the device):
 *   block 0                 superblock (geometry, uuid, CRC32C)
 *   blocks 1, 2             root slots A and B (copy-on-write alternates;
 *                           otherwise A is the root's home)
 *   bitmap A, bitmap B      allocation bitmaps, one copy per root slot
 *   journal region          always reserved, so the layout (and the region
 *                           of the drive data lands in) is the same in every mode
 *   data area               everything else, owned by the allocator
 *   last two blocks         backup superblock and a copy of the root as the
 *                           last clean close left them (a store formatted
 *                           before the backup existed gets it when free)
 *
 * Transactions: every change joins the open transaction; a commit (timer,
 * size trigger, fsync, unmount) writes the changed metadata and makes it
 * durable with the modelled file system's flush / FUA order. Data follows
 * --cow: `always` moves every overwritten block to new space once per
 * transaction, `shared` only blocks shared by a clone, `off` overwrites in
 * place. A clean close leaves a store the next open mounts; after a crash
 * the open replays the journal (or takes the newest valid root) and reports
 * what it found in struct emu_store_info.
 *
 * Threads: any number of callers. Writes to one object are serialised (a
 * per-object lock, held across the data IO); reads of one object run in
 * parallel with each other; objects are independent. A commit waits for the
 * IO in flight to finish and holds new IO back while it runs (a simpler
 * model than JBD2's overlapping running/committing transactions; see
 * docs/emulation.md).
 */
#ifndef FSP_FS_EMU_STORE_H
#define FSP_FS_EMU_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "fs/emu/alloc.h"
#include "fs/emu/io.h"
#include "fs/emu/journal.h"

enum emu_cow_mode { EMU_COW_OFF = 0, EMU_COW_SHARED, EMU_COW_ALWAYS };
enum emu_journal_mode {
	EMU_JOURNAL_OFF = 0,
	EMU_JOURNAL_WRITEBACK,
	EMU_JOURNAL_ORDERED,
	EMU_JOURNAL_DATA
};

/* Parse / name the mode words used on the command line. -1 if unknown. */
int emu_cow_mode_parse(const char *s);
int emu_journal_mode_parse(const char *s);
const char *emu_cow_mode_name(int mode);
const char *emu_journal_mode_name(int mode);

/*
 * The caller's context for one user operation. The store adds the device
 * time it spends on the caller's behalf, split into the IO that moves the
 * caller's own data (data_ns: the "backing" share) and everything else it
 * sent to the store for this operation (other_ns: read-modify-write reads,
 * metadata, journal, checkpoint, flushes). Background commits use a
 * context with cause_ns = 0.
 */
struct emu_cx {
	uint64_t cause_ns; /* start_ns of the user operation (0: background) */
	uint64_t node;     /* the user operation's node id, for the record */
	uint32_t pid;
	uint64_t data_ns;
	uint64_t other_ns;
};

struct emu_store_cfg {
	enum emu_cow_mode cow;
	enum emu_journal_mode journal;
	enum emu_alloc_policy alloc;   /* next-fit (default) or first-fit */
	uint32_t block_size;           /* format only; 0 = 4096 (also the metadata node size) */
	uint32_t tree_depth;           /* index nodes written per changed file, at least (the
					* interior nodes of a deeper tree); 0 = 1 */
	uint64_t journal_bytes;        /* format only; 0 = 1/32 of the store, 1-128 MiB */
	uint64_t commit_interval_ms;   /* 0 = 5000 (ext4's default); UINT64_MAX = never */
	uint64_t commit_bytes;         /* dirty bytes that force a commit; 0 = 64 MiB */
	uint64_t extent_ns;            /* CPU time spent on each extent a read crosses, to
					* model a kernel file system's per-extent work
					* (lookup, locking, one bio each); 0 = none */
	int fsync_commit;              /* 1 (default via emu_store_cfg_default): fsync commits */
	int flush;                     /* 1: send flushes/FUA; 0: like mount -o nobarrier */
	int format;                    /* 1: format even if a valid store is there */
	/* Device-level accounting: called for every IO sent to the store,
	 * from the thread that issued it. May be NULL. */
	void (*devio)(void *arg, const struct emu_cx *cx, int fsp_op,
		      uint64_t off, uint64_t len, uint64_t start_ns, uint64_t ns, int err);
	void *devio_arg;
};

void emu_store_cfg_default(struct emu_store_cfg *cfg);

struct emu_store;

/* What the open found (also filled for a fresh format). */
struct emu_store_info {
	int formatted;               /* 1: a new store was written */
	int clean;                   /* 1: the previous close was clean */
	uint64_t nblocks, block_size, data_blocks;
	uint64_t objects;
	uint64_t root_seq;           /* sequence of the root that was mounted */
	/* journal replay (when the store was not clean) */
	struct emu_replay_report replay;
	int replayed;
	/* metadata nodes that failed their checksum: objects lost (their data
	 * is refused with EIO rather than served as garbage) */
	uint64_t damaged_objects;
	/* bitmap blocks whose content disagreed with the maps (rebuilt from
	 * the maps, which are authoritative) */
	uint64_t bitmap_mismatches;
	/* the superblock at the start did not validate and the store was
	 * opened from its backup header (written at the last clean close);
	 * root_recovered: the root slots were lost too and the backup's root
	 * was put back; journal_reformatted: so was the journal's header */
	int header_recovered, root_recovered, journal_reformatted;
};

/*
 * Open the store at path (block device or regular file). A regular file
 * that does not exist or is empty is created with size_bytes (and
 * fallocated) and formatted; with cfg->format the store is always
 * formatted. Anything else without a valid superblock is never formatted:
 * it is opened from its backup header when that is from a clean close
 * (info->header_recovered), else refused with a message naming what was
 * found (all zeros, a file system signature, ...). The caller has already
 * done the raw-device safety checks. On error returns NULL and writes a
 * one-line reason to err.
 */
struct emu_store *emu_store_open(const char *path, uint64_t size_bytes,
				 const struct emu_store_cfg *cfg,
				 struct emu_store_info *info, char *err, size_t errlen);

/* 1 if path holds a valid fsprism store superblock, 2 if only its backup
 * superblock is valid (the open recovers it), 0 if neither, -errno if it
 * cannot be read. (Re-mounting an existing store needs no --destroy-data;
 * formatting over anything else does.) */
int emu_store_probe(const char *path);

/* 1 if first_bytes (the start of a device, partition or file, at least 8
 * bytes) carry the store's superblock magic, valid or not: the signature
 * the raw-write checks (src/sys/target.h) recognise as an fsprism store. */
int emu_store_has_magic(const void *first_bytes, size_t len);

struct emu_store_acct;
/* Commit, write everything home, mark clean, close. 0 or -errno. When
 * final is not NULL it receives the device counters including the close's
 * own IO. */
int emu_store_close(struct emu_store *st, struct emu_store_acct *final);

/* Start the commit-interval thread (after open, once the caller is ready
 * for devio callbacks from another thread). */
int emu_store_start(struct emu_store *st);

/*
 * Objects. gen is a generation tag for the backing file (its birth time in
 * ns, or 0 when unknown); an existing object with a different non-zero gen
 * is stale (its inode number was reused behind the mount's back): it
 * becomes an orphan and the file starts without data.
 */
int emu_store_obj_open(struct emu_store *st, struct emu_cx *cx, uint64_t obj, uint64_t gen);
/* Drop the object and its blocks (last link gone and no opener left). */
int emu_store_obj_remove(struct emu_store *st, struct emu_cx *cx, uint64_t obj);
/* Size in bytes and allocated bytes; -ENOENT if the object does not exist
 * (a file never written through the emulation: size 0). */
int emu_store_obj_size(struct emu_store *st, uint64_t obj, uint64_t *size,
		       uint64_t *allocated);

/* Data. Any alignment; returns bytes transferred or -errno. Reads stop at
 * the object's size; holes read as zeros. */
ssize_t emu_store_read(struct emu_store *st, struct emu_cx *cx, uint64_t obj,
		       void *buf, size_t len, uint64_t off);
ssize_t emu_store_write(struct emu_store *st, struct emu_cx *cx, uint64_t obj,
			const void *buf, size_t len, uint64_t off);
int emu_store_truncate(struct emu_store *st, struct emu_cx *cx, uint64_t obj,
		       uint64_t size);
/* fallocate(2) modes: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE |
 * FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE [| KEEP_SIZE]; else -EOPNOTSUPP. */
int emu_store_fallocate(struct emu_store *st, struct emu_cx *cx, uint64_t obj,
			int mode, uint64_t off, uint64_t len);
/* copy_file_range: whole blocks are shared by reference (a clone), the
 * unaligned head and tail are copied. Returns bytes or -errno. */
ssize_t emu_store_clone(struct emu_store *st, struct emu_cx *cx, uint64_t src,
			uint64_t src_off, uint64_t dst, uint64_t dst_off, size_t len);
/* SEEK_DATA / SEEK_HOLE on the object's map; -ENXIO past the end. */
int64_t emu_store_seek(struct emu_store *st, uint64_t obj, uint64_t off, int whence);
/* fsync / fdatasync: commit the open transaction (when fsync_commit) and
 * flush. */
int emu_store_fsync(struct emu_store *st, struct emu_cx *cx, uint64_t obj);
/* Commit now (timer, unmount, tests). */
int emu_store_commit(struct emu_store *st, struct emu_cx *cx);

/* statfs: store blocks, free blocks (allocatable now). */
void emu_store_statfs(struct emu_store *st, uint64_t *blocks, uint64_t *free_blocks,
		      uint32_t *block_size);

/* Visit every object (id, gen, size) / every extent of one object (byte
 * offsets, FIEMAP style: physically contiguous runs joined). A non-zero
 * return from fn stops the walk and is returned. */
int emu_store_foreach_obj(struct emu_store *st,
			  int (*fn)(void *ctx, uint64_t obj, uint64_t gen, uint64_t size),
			  void *ctx);
int emu_store_fiemap(struct emu_store *st, uint64_t obj,
		     int (*fn)(void *ctx, uint64_t logical, uint64_t physical, uint64_t len),
		     void *ctx);

/*
 * Identity. An object's id (oid) is the store's own, random and never
 * reused; its key is what the calls above take: the backing inode number
 * while bound to a file, oid | EMU_ORPHAN_KEY while not (an orphan: kept,
 * never served, bound again when a backing file names its oid).
 */
#define EMU_ORPHAN_KEY (1ull << 63)
struct emu_obj_ident {
	uint64_t key, oid, gen, size;
};
uint64_t emu_store_uuid(const struct emu_store *st);
/* Every object, sorted by key; *out to be freed. 0 or -ENOMEM. */
int emu_store_list(struct emu_store *st, struct emu_obj_ident **out, size_t *n);
/* The object of such a list v[0..n) whose key is key, or NULL. */
struct emu_obj_ident *emu_store_list_find(struct emu_obj_ident *v, size_t n, uint64_t key);
/* Give each object of bind[] (by oid) the key bind[].key (an inode number)
 * and the generation bind[].gen (when not 0); every other object becomes
 * an orphan. All or nothing: -EEXIST if two objects would share a key,
 * -EINVAL for an orphan key in bind[]. bind[] is sorted in place. Before
 * emu_store_start. *changed: objects whose key changed. */
int emu_store_rebind(struct emu_store *st, struct emu_obj_ident *bind, size_t n,
		     uint64_t *changed);

/* Device-level counters since open. */
struct emu_store_acct {
	uint64_t writes[EMU_IO_NKINDS]; /* writes[EMU_IO_FLUSH] = flushes */
	uint64_t bytes[EMU_IO_NKINDS];
	uint64_t fua_writes;
	uint64_t reads, read_bytes;
	uint64_t user_write_bytes, user_read_bytes;
	uint64_t fsyncs, commits;
	/* sequentiality: device IOs (reads and writes) that start where an
	 * earlier IO of the same stream ended; streams are tracked as the 32
	 * most recent end offsets */
	uint64_t ios, seq_ios;
	/* mean number of distinct streams per window of 16 consecutive device
	 * IOs, times 1000 (1000 = one stream: purely sequential) */
	uint64_t streams_x1000;
	uint64_t windows;
};
void emu_store_get_acct(struct emu_store *st, struct emu_store_acct *out);

#endif

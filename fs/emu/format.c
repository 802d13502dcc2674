/*
 * format.c - a store's life from open to close: the mode words and the
 * defaults, the superblock and its backup header at the end of the store,
 * the probe and the magic the raw-write checks know, the layout, format,
 * open (format, recover or refuse, and say why) and the clean close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <blkid.h>
#include "src/base/clock.h"
#include "fs/emu/crc32c.h"
#include "fs/emu/endian.h"
#include "fs/emu/store_int.h"

#define SB_MAGIC 0x3153554d45505346ull /* "FSPEMUS1" */
#define SB_VERSION 2u   /* 2: a backup header at the end; 1 (read too): none */
#define SB_OFF_MAGIC 0
#define SB_OFF_VERSION 8
#define SB_OFF_BS 12
#define SB_OFF_NBLOCKS 16
#define SB_OFF_UUID 24
#define SB_OFF_BITMAP_A 32
#define SB_OFF_BITMAP_B 40
#define SB_OFF_BITMAP_N 48
#define SB_OFF_JOURNAL 56
#define SB_OFF_JOURNAL_N 64
#define SB_OFF_DATA 72
#define SB_OFF_CLEAN 80
#define SB_OFF_CRC_V1 84      /* version 1 ends here */
#define SB_OFF_BACKUP 88      /* block of the backup superblock, 0: none */
#define SB_OFF_CRC 96
#define SB_SIZE 100

static const char *const cow_names[] = { "off", "shared", "always" };
static const char *const journal_names[] = { "off", "writeback", "ordered", "data" };

int emu_cow_mode_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, cow_names[i]) == 0)
			return i;
	return -1;
}

int emu_journal_mode_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, journal_names[i]) == 0)
			return i;
	return -1;
}

const char *emu_cow_mode_name(int mode)
{
	return mode >= 0 && mode < 3 ? cow_names[mode] : "unknown";
}

const char *emu_journal_mode_name(int mode)
{
	return mode >= 0 && mode < 4 ? journal_names[mode] : "unknown";
}

void emu_store_cfg_default(struct emu_store_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->alloc = EMU_ALLOC_NEXT_FIT;
	cfg->block_size = 4096;
	cfg->commit_interval_ms = 5000;
	cfg->commit_bytes = 64ull << 20;
	cfg->fsync_commit = 1;
	cfg->flush = 1;
}

/* The superblock image (with the given clean flag) in b. */
static void build_sb(const struct emu_store *st, uint8_t *b, int clean)
{
	memset(b, 0, st->bs);
	put64(b + SB_OFF_MAGIC, SB_MAGIC);
	put32(b + SB_OFF_VERSION, SB_VERSION);
	put32(b + SB_OFF_BS, st->bs);
	put64(b + SB_OFF_NBLOCKS, st->nblocks);
	put64(b + SB_OFF_UUID, st->uuid);
	put64(b + SB_OFF_BITMAP_A, st->bitmap_blk[0]);
	put64(b + SB_OFF_BITMAP_B, st->bitmap_blk[1]);
	put64(b + SB_OFF_BITMAP_N, st->bitmap_blocks);
	put64(b + SB_OFF_JOURNAL, st->journal_blk);
	put64(b + SB_OFF_JOURNAL_N, st->journal_blocks);
	put64(b + SB_OFF_DATA, st->data_blk);
	put32(b + SB_OFF_CLEAN, (uint32_t)clean);
	put64(b + SB_OFF_BACKUP, st->backup_blk);
	put32(b + SB_OFF_CRC, emu_crc32c(0, b, SB_OFF_CRC));
}

static int write_sb(struct emu_store *st, struct emu_cx *cx, int clean)
{
	uint8_t *b = bounce_buf();
	if (!b)
		return -ENOMEM;
	build_sb(st, b, clean);
	return dev_write(st, cx, b, st->bs, 0, EMU_IO_CHECKPOINT, EMU_IO_FUA, 0);
}

/*
 * The backup header at the end of the store: a copy of the superblock,
 * and (clean only) of the newest root after it. Open marks it in use (one
 * write), a clean close refreshes both (two writes); so a clean backup
 * always describes the store as the last clean close left it.
 */
static int write_backup(struct emu_store *st, struct emu_cx *cx, int clean)
{
	uint8_t *b = bounce_buf();
	if (!st->backup_blk)
		return 0;
	if (!b)
		return -ENOMEM;
	int rc = 0;
	if (clean) {
		rc = dev_read(st, cx, b, st->bs, (1 + (uint64_t)st->root_slot) * st->bs, 0);
		if (!rc)
			rc = dev_write(st, cx, b, st->bs, (st->backup_blk + 1) * st->bs,
				       EMU_IO_CHECKPOINT, EMU_IO_FUA, 0);
	}
	if (!rc) {
		build_sb(st, b, clean);
		rc = dev_write(st, cx, b, st->bs, st->backup_blk * st->bs, EMU_IO_CHECKPOINT,
			       EMU_IO_FUA, 0);
	}
	return rc;
}

/* Parse a superblock; 0 when it is a valid one (version 1 or 2). */
static int parse_sb(struct emu_store *st, const uint8_t *b, int *clean)
{
	uint32_t version = get32(b + SB_OFF_VERSION);
	size_t crc_at = version == 1 ? SB_OFF_CRC_V1 : SB_OFF_CRC;
	if (get64(b + SB_OFF_MAGIC) != SB_MAGIC || (version != 1 && version != SB_VERSION) ||
	    get32(b + crc_at) != emu_crc32c(0, b, crc_at))
		return -EINVAL;
	st->backup_blk = version == 1 ? 0 : get64(b + SB_OFF_BACKUP);
	st->bs = get32(b + SB_OFF_BS);
	st->nblocks = get64(b + SB_OFF_NBLOCKS);
	st->uuid = get64(b + SB_OFF_UUID);
	st->bitmap_blk[0] = get64(b + SB_OFF_BITMAP_A);
	st->bitmap_blk[1] = get64(b + SB_OFF_BITMAP_B);
	st->bitmap_blocks = get64(b + SB_OFF_BITMAP_N);
	st->journal_blk = get64(b + SB_OFF_JOURNAL);
	st->journal_blocks = get64(b + SB_OFF_JOURNAL_N);
	st->data_blk = get64(b + SB_OFF_DATA);
	*clean = (int)get32(b + SB_OFF_CLEAN);
	if (st->bs < 4096 || st->bs > 65536 || (st->bs & (st->bs - 1)) ||
	    st->data_blk >= st->nblocks || st->journal_blk + st->journal_blocks != st->data_blk ||
	    (st->backup_blk && (st->backup_blk != st->nblocks - 2 || st->backup_blk < st->data_blk)))
		return -EINVAL;
	return 0;
}

/* The backup superblock of a store of size bytes, if there is one:
 * at the second-last block, for every block size. 0 when found. */
static int find_backup(struct emu_store *st, struct emu_cx *cx, uint64_t size, int *clean)
{
	uint8_t *b = bounce_buf();
	if (!b)
		return -ENOMEM;
	for (uint64_t bs = 4096; bs <= 65536; bs *= 2) {
		uint64_t nb = size / bs;
		if (nb < 300)
			break;
		if (dev_read(st, cx, b, 4096, (nb - 2) * bs, 0))
			continue;
		struct emu_store tmp;
		memset(&tmp, 0, sizeof(tmp));
		if (parse_sb(&tmp, b, clean) || tmp.bs != bs || tmp.nblocks != nb ||
		    tmp.backup_blk != nb - 2)
			continue;
		parse_sb(st, b, clean);
		return 0;
	}
	return -ENOENT;
}

/* What the start of a device that is not a store holds, for the message. */
static void describe_foreign(struct emu_store *st, struct emu_cx *cx, uint64_t size,
			     char *what, size_t len)
{
	uint8_t *b = bounce_buf();
	uint64_t n = size < (1u << 20) ? size : 1u << 20;
	int zeros = b != NULL;
	for (uint64_t at = 0; zeros && at + 4096 <= n; at += 4096) {
		if (dev_read(st, cx, b, 4096, at, 0)) {
			zeros = 0;
			break;
		}
		for (size_t i = 0; i < 4096 && zeros; i++)
			zeros = b[i] == 0;
	}
	if (zeros) {
		snprintf(what, len, "all zeros in the first %llu KiB",
			 (unsigned long long)(n >> 10));
		return;
	}
	if (b && dev_read(st, cx, b, 4096, 0, 0) == 0 && get64(b + SB_OFF_MAGIC) == SB_MAGIC) {
		snprintf(what, len, "a damaged fsprism store header and no backup header");
		return;
	}
	const char *type = NULL, *pttype = NULL;
	blkid_probe pr = blkid_new_probe_from_filename(st->path);
	if (pr) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
		blkid_probe_enable_partitions(pr, 1);
		if (blkid_do_safeprobe(pr) == 0) {
			blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
			blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
		}
	}
	if (type)
		snprintf(what, len, "%s signature", type);
	else if (pttype)
		snprintf(what, len, "%s partition table", pttype);
	else
		snprintf(what, len, "data of an unknown kind");
	if (pr)
		blkid_free_probe(pr);
}

int emu_store_probe(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	uint8_t b[SB_SIZE];
	ssize_t n = pread(fd, b, sizeof(b), 0);
	int err = n < 0 ? -errno : 0;
	struct emu_store tmp;
	int clean, valid = 0;
	memset(&tmp, 0, sizeof(tmp));
	if (!err && (size_t)n == sizeof(b))
		valid = parse_sb(&tmp, b, &clean) == 0;
	/* the backup header (without O_DIRECT: a small buffered read) */
	struct stat sb;
	uint64_t size = 0;
	if (!err && !valid && fstat(fd, &sb) == 0)
		size = S_ISBLK(sb.st_mode) ? (ioctl(fd, BLKGETSIZE64, &size) ? 0 : size)
					   : (uint64_t)sb.st_size;
	for (uint64_t bs = 4096; !err && !valid && bs <= 65536 && size / bs >= 300; bs *= 2) {
		uint64_t nb = size / bs;
		memset(&tmp, 0, sizeof(tmp));
		if (pread(fd, b, sizeof(b), (off_t)((nb - 2) * bs)) == (ssize_t)sizeof(b) &&
		    parse_sb(&tmp, b, &clean) == 0 && tmp.bs == bs && tmp.nblocks == nb &&
		    tmp.backup_blk == nb - 2)
			valid = 2;
	}
	close(fd);
	return err ? err : valid;
}

static int layout(struct emu_store *st, uint64_t size, char *err, size_t errlen)
{
	uint32_t bs = st->cfg.block_size ? st->cfg.block_size : 4096;
	if (bs < 4096 || bs > 65536 || (bs & (bs - 1))) {
		snprintf(err, errlen, "block size %u: must be a power of two from 4096 to 65536", bs);
		return -EINVAL;
	}
	st->bs = bs;
	st->nblocks = size / bs;
	st->bitmap_blocks = ((st->nblocks + 7) / 8 + bs - 1) / bs;
	uint64_t jbytes = st->cfg.journal_bytes;
	if (!jbytes) {
		jbytes = size / 32;
		if (jbytes < (1u << 20))
			jbytes = 1u << 20;
		if (jbytes > (128u << 20))
			jbytes = 128u << 20;
	}
	st->journal_blocks = jbytes / bs;
	st->bitmap_blk[0] = 3;
	st->bitmap_blk[1] = 3 + st->bitmap_blocks;
	st->journal_blk = 3 + 2 * st->bitmap_blocks;
	st->data_blk = st->journal_blk + st->journal_blocks;
	st->backup_blk = st->nblocks - 2;
	if (st->journal_blocks < 16 || st->data_blk + 256 + 2 > st->nblocks) {
		snprintf(err, errlen,
			 "store of %llu bytes is too small for a %llu-byte journal and 256 data blocks",
			 (unsigned long long)size, (unsigned long long)jbytes);
		return -ENOSPC;
	}
	return 0;
}

struct emu_journal_cfg journal_cfg(const struct emu_store *st)
{
	struct emu_journal_cfg jc = {
		.base = st->journal_blk * st->bs,
		.nblocks = st->journal_blocks,
		.block_size = st->bs,
		.commit_fua = 1,
	};
	return jc;
}

int alloc_new(struct emu_store *st)
{
	st->alloc = emu_alloc_new(st->nblocks, st->bs, st->cfg.alloc);
	if (!st->alloc)
		return -ENOMEM;
	int rc = emu_alloc_reserve(st->alloc, 0, st->data_blk);
	if (!rc && st->backup_blk)
		rc = emu_alloc_reserve(st->alloc, st->backup_blk, 2);
	for (int s = 0; !rc && s < 2; s++) {
		st->bitmap_crc[s] = calloc(st->bitmap_blocks, sizeof(uint32_t));
		if (!st->bitmap_crc[s])
			rc = -ENOMEM;
	}
	return rc;
}

static int format(struct emu_store *st, struct emu_cx *cx, uint64_t size, char *err,
		  size_t errlen)
{
	int rc = layout(st, size, err, errlen);
	if (rc)
		return rc;
	if (getrandom(&st->uuid, sizeof(st->uuid), 0) != sizeof(st->uuid))
		st->uuid = fsp_now_ns() ^ (uint64_t)getpid() << 32;
	rc = alloc_new(st);
	/* invalidate both root slots, then one empty root in slot A */
	uint8_t *z = rc ? NULL : bounce_buf();
	if (!rc && !z)
		rc = -ENOMEM;
	if (!rc) {
		memset(z, 0, 2 * st->bs);
		rc = dev_write(st, cx, z, 2 * st->bs, st->bs, EMU_IO_CHECKPOINT, 0, 0);
	}
	if (!rc) {
		struct emu_journal_cfg jc = journal_cfg(st);
		st->jcx = cx;
		rc = emu_journal_format(&st->jio, &jc, &st->journal);
	}
	if (!rc) {
		st->root_slot = 1; /* so that the first commit fills slot A */
		st->omap_dirty = 1;
		rc = do_commit(st, cx, 1);
		if (!rc && st->mode->journaled)
			rc = journal_checkpoint(st, cx);
	}
	if (!rc)
		rc = write_sb(st, cx, 1);
	if (rc && !*err)
		snprintf(err, errlen, "cannot format: %s", strerror(-rc));
	return rc;
}

static void store_free(struct emu_store *st)
{
	for (size_t i = 0; i < st->hcap; i++)
		for (struct obj *o = st->htab[i], *next; o; o = next) {
			next = o->hnext;
			obj_destroy(o);
		}
	free(st->htab);
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i], *next; p; p = next) {
			next = p->next;
			free(p->buf);
			free(p);
		}
	free(st->pend);
	free(st->deferred.v);
	free(st->omap_nodes);
	free(st->omap_crc);
	free(st->bitmap_crc[0]);
	free(st->bitmap_crc[1]);
	if (st->journal)
		emu_journal_close(st->journal);
	if (st->alloc)
		emu_alloc_destroy(st->alloc);
	emu_refs_free(&st->refs);
	emu_refs_free(&st->unshared);
	if (st->fd >= 0)
		close(st->fd);
	pthread_mutex_destroy(&st->lock);
	pthread_mutex_destroy(&st->gate_lock);
	pthread_mutex_destroy(&st->acct_lock);
	pthread_cond_destroy(&st->gate_cv);
	pthread_cond_destroy(&st->timer_cv);
	free(st);
}

/* Open the store: O_DIRECT when the file system takes it. */
static int open_fds(struct emu_store *st, const char *path, uint64_t size_bytes,
		    uint64_t *size, int *fresh, char *err, size_t errlen)
{
	struct stat sb;
	int exists = stat(path, &sb) == 0;
	if (!exists) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "cannot create store %s: %s", path, strerror(errno));
			return -errno;
		}
		close(fd);
	} else if (!S_ISREG(sb.st_mode) && !S_ISBLK(sb.st_mode)) {
		snprintf(err, errlen, "store %s is neither a regular file nor a block device", path);
		return -EINVAL;
	}
	st->direct = 1;
	st->fd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT);
	if (st->fd < 0 && errno == EINVAL) {
		st->direct = 0; /* tmpfs and the like: no O_DIRECT */
		st->fd = open(path, O_RDWR | O_CLOEXEC);
	}
	if (st->fd < 0) {
		snprintf(err, errlen, "cannot open store %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(st->fd, &sb)) {
		snprintf(err, errlen, "cannot stat store %s: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISBLK(sb.st_mode)) {
		if (ioctl(st->fd, BLKGETSIZE64, size)) {
			snprintf(err, errlen, "cannot read the size of %s: %s", path, strerror(errno));
			return -errno;
		}
	} else {
		*size = (uint64_t)sb.st_size;
		if (*size == 0) {
			*fresh = 1; /* nothing to lose: formatted without --format */
			*size = size_bytes;
			if (fallocate(st->fd, 0, 0, (off_t)size_bytes) &&
			    ftruncate(st->fd, (off_t)size_bytes)) {
				snprintf(err, errlen, "cannot size store %s to %llu bytes: %s", path,
					 (unsigned long long)size_bytes, strerror(errno));
				return -errno;
			}
		}
	}
	return 0;
}

struct emu_store *emu_store_open(const char *path, uint64_t size_bytes,
				 const struct emu_store_cfg *cfg,
				 struct emu_store_info *info, char *err, size_t errlen)
{
	struct emu_store *st = calloc(1, sizeof(*st));
	struct emu_cx cx = { 0 };
	uint64_t size = 0;
	int rc;
	err[0] = 0;
	memset(info, 0, sizeof(*info));
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->cfg = *cfg;
	st->mode = emu_commit_mode_of(&st->cfg);
	if (!st->cfg.commit_interval_ms)
		st->cfg.commit_interval_ms = 5000;
	if (!st->cfg.commit_bytes)
		st->cfg.commit_bytes = 64ull << 20;
	st->fd = -1;
	snprintf(st->path, sizeof(st->path), "%s", path);
	pthread_mutex_init(&st->lock, NULL);
	pthread_mutex_init(&st->gate_lock, NULL);
	pthread_mutex_init(&st->acct_lock, NULL);
	pthread_cond_init(&st->gate_cv, NULL);
	pthread_cond_init(&st->timer_cv, NULL);
	emu_refs_init(&st->refs);
	emu_refs_init(&st->unshared);
	st->jio = dev_journal_io(st);
	if (htab_grow(st)) {
		rc = -ENOMEM;
		goto fail;
	}
	int fresh = 0;
	rc = open_fds(st, path, size_bytes, &size, &fresh, err, errlen);
	if (rc)
		goto fail;
	uint8_t *b = bounce_buf();
	int clean = 0;
	rc = b ? dev_read(st, &cx, b, 4096, 0, 0) : -ENOMEM;
	if (rc) {
		snprintf(err, errlen, "cannot read store %s: %s", path, strerror(-rc));
		goto fail;
	}
	{
		uint64_t seed = 0;
		if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
			seed = fsp_now_ns() ^ (uint64_t)getpid() << 32;
		st->oid_state = seed | 1; /* xorshift: never 0 */
	}
	if (!cfg->format && !fresh && parse_sb(st, b, &clean)) {
		/* not a store at its start: never formatted without --format.
		 * A backup header of a clean close gives the store back. */
		char what[160];
		int bclean = 0, found = find_backup(st, &cx, size, &bclean) == 0;
		if (found && bclean) {
			info->header_recovered = 1;
			clean = 1;
		} else if (found) {
			snprintf(err, errlen, "store %s: its header is damaged and the backup "
				 "header at its end is from a mount that did not end cleanly, so "
				 "it cannot be recovered safely; nothing was written (--format "
				 "starts a new store, destroying this one)", path);
			rc = -EUCLEAN;
			goto fail;
		} else {
			describe_foreign(st, &cx, size, what, sizeof(what));
			snprintf(err, errlen, "%s is not an fsprism store (found: %s); use "
				 "--format to create one", path, what);
			rc = -EINVAL;
			goto fail;
		}
	}
	if (cfg->format || (fresh && parse_sb(st, b, &clean))) {
		pthread_mutex_lock(&st->lock);
		rc = format(st, &cx, size, err, errlen);
		pthread_mutex_unlock(&st->lock);
		info->formatted = 1;
		clean = 1;
	} else {
		pthread_mutex_lock(&st->lock);
		rc = mount_store(st, &cx, info, err, errlen);
		pthread_mutex_unlock(&st->lock);
		if (!rc && info->header_recovered && info->damaged_objects) {
			/* more than the header was overwritten: its data (which has
			 * no checksums) cannot be trusted either */
			snprintf(err, errlen, "store %s: its header is damaged, and so is the "
				 "metadata of %llu object%s that its backup header leads to: "
				 "more of the store was overwritten (by another program?); "
				 "refusing to serve it (--format starts a new store, "
				 "destroying this one)", path,
				 (unsigned long long)info->damaged_objects,
				 info->damaged_objects == 1 ? "" : "s");
			rc = -EUCLEAN;
		}
	}
	if (rc)
		goto fail;
	info->clean = clean;
	/* from here until a clean close, a crash is detected at the next open */
	rc = write_sb(st, &cx, 0);
	if (!rc)
		rc = write_backup(st, &cx, 0);
	if (rc) {
		snprintf(err, errlen, "cannot write store superblock: %s", strerror(-rc));
		goto fail;
	}
	info->nblocks = st->nblocks;
	info->block_size = st->bs;
	info->data_blocks = st->nblocks - st->data_blk;
	info->objects = st->nobj;
	info->root_seq = st->root_seq;
	return st;
fail:
	if (!err[0])
		snprintf(err, errlen, "store %s: %s", path, strerror(rc < 0 ? -rc : EIO));
	store_free(st);
	return NULL;
}

int emu_store_close(struct emu_store *st, struct emu_store_acct *final)
{
	struct emu_cx cx = { 0 };
	if (st->timer_running) {
		pthread_mutex_lock(&st->gate_lock);
		st->stop = 1;
		pthread_cond_broadcast(&st->timer_cv);
		pthread_mutex_unlock(&st->gate_lock);
		pthread_join(st->timer, NULL);
	}
	int rc = commit_gated(st, &cx, 1);
	pthread_mutex_lock(&st->lock);
	if (!rc && st->mode->journaled)
		rc = journal_checkpoint(st, &cx);
	else if (!rc && st->npend)
		rc = journal_checkpoint(st, &cx); /* blocks of an earlier journal mode */
	pthread_mutex_unlock(&st->lock);
	if (!rc)
		rc = dev_flush(st, &cx);
	if (!rc)
		rc = write_sb(st, &cx, 1);
	if (!rc)
		rc = write_backup(st, &cx, 1);
	if (final)
		emu_store_get_acct(st, final);
	store_free(st);
	return rc;
}

int emu_store_has_magic(const void *first_bytes, size_t len)
{
	/* the magic alone: a store with a damaged superblock is still data */
	return len >= 8 && get64(first_bytes) == SB_MAGIC;
}

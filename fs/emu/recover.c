/*
 * recover.c - mounting an existing store: the journal first (its
 * transactions are newer than any home block), then the newest sound
 * root, every object's maps from its nodes (a node that fails its checksum
 * marks its object damaged, refused with EIO), and the allocation rebuilt
 * from what the maps reference (the stored bitmap is only checked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs/emu/crc32c.h"
#include "fs/emu/endian.h"
#include "fs/emu/store_int.h"
#include "src/base/cmp.h"

/* Journal replay: each logged block goes home. */
static int replay_apply(void *ctx, uint64_t seq, uint64_t tag, const void *block)
{
	struct emu_store *st = ctx;
	(void)seq;
	uint64_t pblk = tag & ~TAG_DATA;
	if (pblk >= st->nblocks)
		return -EUCLEAN;
	return dev_write(st, st->jcx, block, st->bs, pblk * st->bs,
			 (tag & TAG_DATA) ? EMU_IO_DATA : EMU_IO_METADATA, 0, 0);
}

/* Read one node; 0 if it is sound. */
static int read_node(struct emu_store *st, struct emu_cx *cx, uint8_t *b, uint64_t pblk,
		     uint32_t magic, uint64_t obj)
{
	if (pblk < st->data_blk && magic != NODE_ROOT)
		return -EUCLEAN;
	if (pblk >= st->nblocks)
		return -EUCLEAN;
	int rc = dev_read(st, cx, b, st->bs, pblk * st->bs, 0);
	return rc ? rc : node_check(st, b, magic, obj);
}

struct loaded_ext {
	uint64_t pblk, len;
};

struct load {
	struct u64s nodes; /* every metadata block the root reaches */
	struct loaded_ext *ext;
	size_t next, ext_cap;
};

static int load_push_ext(struct load *L, uint64_t pblk, uint64_t len)
{
	if (fsp_grow((void **)&L->ext, &L->ext_cap, L->next + 1, sizeof(*L->ext), 1024))
		return -ENOMEM;
	L->ext[L->next++] = (struct loaded_ext){ pblk, len };
	return 0;
}

/* Load one object from its index chain. A bad node marks it damaged. */
static int load_obj(struct emu_store *st, struct emu_cx *cx, struct load *L, struct obj *o,
		    uint64_t index, uint8_t *b, uint8_t *lb)
{
	size_t per_index = (st->bs - NODE_HDR - INDEX_HEAD) / INDEX_ENT;
	struct u64s leaves = { 0 }, chain = { 0 };
	int rc = 0;
	for (uint64_t at = index, hops = 0; at && !rc; hops++) {
		if (hops > st->nblocks || read_node(st, cx, b, at, NODE_INDEX, o->oid)) {
			o->damaged = 1;
			break;
		}
		if ((rc = u64s_push(&L->nodes, at)) || (rc = u64s_push(&chain, at)))
			break;
		o->size = get64(b + NODE_HDR);
		uint32_t cnt = get32(b + 24);
		if (cnt > per_index) {
			o->damaged = 1;
			break;
		}
		for (uint32_t i = 0; !rc && i < cnt && !o->damaged; i++) {
			uint64_t leaf = get64(b + NODE_HDR + INDEX_HEAD + i * INDEX_ENT + 8);
			if (read_node(st, cx, lb, leaf, NODE_LEAF, o->oid)) {
				o->damaged = 1;
				break;
			}
			rc = u64s_push(&L->nodes, leaf);
			if (!rc)
				rc = u64s_push(&leaves, leaf);
			uint32_t ne = get32(lb + 24);
			if (ne > EMU_EMAP_LEAF) {
				o->damaged = 1;
				break;
			}
			for (uint32_t k = 0; !rc && k < ne; k++) {
				const uint8_t *e = lb + NODE_HDR + k * LEAF_ENT;
				uint64_t lblk = get64(e), pblk = get64(e + 8);
				uint64_t len = get64(e + 16), txid = get64(e + 24);
				if (!len || pblk < st->data_blk || pblk + len > st->nblocks ||
				    pblk + len < pblk) {
					o->damaged = 1;
					break;
				}
				/* every durable block answers "move": txid 0 */
				rc = emu_emap_insert(&o->map, lblk, pblk, len, txid & UNWRITTEN, 1,
						     NULL, NULL);
				if (!rc)
					rc = load_push_ext(L, pblk, len);
			}
		}
		at = get64(b + NODE_HDR + 16);
	}
	/* the chain as it is on the device: freed when the object next changes */
	/* o->nodes: the leaves, then the index chain */
	for (size_t i = 0; !rc && i < chain.n; i++)
		rc = u64s_push(&leaves, chain.v[i]);
	if (!rc && !o->damaged) {
		o->nodes = leaves.v;
		o->nnodes = leaves.n;
		o->nindex = chain.n;
		leaves.v = NULL;
	}
	free(leaves.v);
	free(chain.v);
	return rc;
}

static int cmp_ext(const void *a, const void *b)
{
	const struct loaded_ext *x = a, *y = b;
	return FSP_CMP(x->pblk, y->pblk);
}

/* Rebuild allocation and reference counts from what the maps reference:
 * the maps are authoritative, the stored bitmap is only checked. */
static int rebuild_alloc(struct emu_store *st, struct load *L)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < L->nodes.n; i++)
		if (emu_alloc_state(st->alloc, L->nodes.v[i]) == 0)
			rc = emu_alloc_reserve(st->alloc, L->nodes.v[i], 1);
	if (L->next)
		qsort(L->ext, L->next, sizeof(*L->ext), cmp_ext);
	for (size_t i = 0; !rc && i < L->next; i++) {
		uint64_t b = L->ext[i].pblk, end = b + L->ext[i].len;
		while (!rc && b < end) {
			int used = emu_alloc_state(st->alloc, b) != 0;
			uint64_t r = b + 1;
			while (r < end && (emu_alloc_state(st->alloc, r) != 0) == used)
				r++;
			rc = used ? emu_refs_inc(&st->refs, b, r - b)
				  : emu_alloc_reserve(st->alloc, b, r - b);
			b = r;
		}
	}
	return rc;
}

/* Compare the stored bitmap of the root's slot with the rebuilt one; fill
 * both slots' checksum caches with what is on the device. */
static int check_bitmaps(struct emu_store *st, struct emu_cx *cx, int slot,
			 struct emu_store_info *info)
{
	size_t len = emu_alloc_serial_size(st->alloc);
	uint8_t *img = malloc(len), *b = bounce_buf();
	int rc = img && b ? 0 : -ENOMEM;
	if (!rc)
		emu_alloc_serialize(st->alloc, img, len, 1);
	size_t nbytes = len - 48;
	for (int s = 0; !rc && s < 2; s++)
		for (uint64_t k = 0; !rc && k < st->bitmap_blocks; k++) {
			rc = dev_read(st, cx, b, st->bs, (st->bitmap_blk[s] + k) * st->bs, 0);
			size_t from = (size_t)(k * st->bs);
			size_t cnt = from < nbytes ? (nbytes - from < st->bs ? nbytes - from : st->bs) : 0;
			if (rc)
				break;
			st->bitmap_crc[s][k] = emu_crc32c(0, b, cnt) ^ 0x5a5a5a5au;
			/* a block the maps use but the bitmap calls free is
			 * damage; the reverse is normal (frees deferred to a
			 * journal checkpoint after the last bitmap write) */
			for (size_t q = 0; s == slot && q < cnt; q++)
				info->bitmap_mismatches +=
					(unsigned)__builtin_popcount(img[48 + from + q] & ~b[q] & 0xffu);
		}
	free(img);
	return rc;
}

int mount_store(struct emu_store *st, struct emu_cx *cx, struct emu_store_info *info,
		       char *err, size_t errlen)
{
	int rc = alloc_new(st);
	if (rc)
		return rc;
	/* the journal first: its transactions are newer than any home block */
	struct emu_journal_cfg jc = journal_cfg(st);
	st->jcx = cx;
	rc = emu_journal_open(&st->jio, &jc, &st->journal);
	if (rc && info->header_recovered) {
		/* the store was closed cleanly, so its journal held nothing
		 * to replay: a new one loses nothing */
		rc = emu_journal_format(&st->jio, &jc, &st->journal);
		info->journal_reformatted = !rc;
	}
	if (rc) {
		snprintf(err, errlen, "journal superblock unreadable (%s)", strerror(-rc));
		return rc;
	}
	rc = emu_journal_replay(st->journal, replay_apply, st, 1, &info->replay);
	if (rc) {
		snprintf(err, errlen, "journal replay failed (%s)", strerror(rc < 0 ? -rc : rc));
		return rc < 0 ? rc : -EIO;
	}
	info->replayed = info->replay.txns_replayed > 0 || info->replay.txns_discarded > 0;
	/* the newest sound root */
	uint8_t *b, *lb;
	if (posix_memalign((void **)&b, 4096, st->bs) || posix_memalign((void **)&lb, 4096, st->bs))
		return -ENOMEM;
	int best = -1;
	uint64_t best_seq = 0;
	for (int s = 0; s < 2; s++) {
		if (read_node(st, cx, b, 1 + (uint64_t)s, NODE_ROOT, st->uuid))
			continue;
		uint64_t seq = get64(b + 16);
		if (best < 0 || seq > best_seq) {
			best = s;
			best_seq = seq;
		}
	}
	if (best < 0 && info->header_recovered &&
	    read_node(st, cx, b, st->backup_blk + 1, NODE_ROOT, st->uuid) == 0 &&
	    dev_write(st, cx, b, st->bs, st->bs, EMU_IO_CHECKPOINT, 0, 0) == 0 &&
	    read_node(st, cx, b, 1, NODE_ROOT, st->uuid) == 0) {
		/* both slots lost: the root of the last clean close goes to slot A */
		best = 0;
		best_seq = get64(b + 16);
		info->root_recovered = 1;
	}
	if (best < 0) {
		snprintf(err, errlen, "no valid root in either slot: the store is damaged "
			 "(use --format to start again)");
		free(b);
		free(lb);
		return -EUCLEAN;
	}
	read_node(st, cx, b, 1 + (uint64_t)best, NODE_ROOT, st->uuid);
	st->root_seq = best_seq;
	st->root_slot = best;
	int bitmap_slot = (int)get32(b + NODE_HDR + 24) & 1;
	/* a root written before objects had ids of their own: the key is the id */
	int omap_v2 = get32(b + NODE_HDR + 28) == ROOT_OMAP_V2;
	size_t ent = omap_v2 ? OMAP_ENT : OMAP_ENT_V1;
	uint32_t nomap = get32(b + 24);
	if (nomap > (st->bs - ROOT_HEAD) / 8) {
		free(b);
		free(lb);
		snprintf(err, errlen, "root lists %u object-map nodes: damaged", nomap);
		return -EUCLEAN;
	}
	uint64_t *omap = calloc(nomap ? nomap : 1, 8);
	uint32_t *omap_crc = calloc(nomap ? nomap : 1, 4);
	struct load L = { 0 };
	rc = omap && omap_crc ? 0 : -ENOMEM;
	for (uint32_t i = 0; i < nomap; i++)
		omap[i] = get64(b + ROOT_HEAD + i * 8);
	size_t per = (st->bs - NODE_HDR) / ent;
	for (uint32_t k = 0; !rc && k < nomap; k++) {
		uint8_t *ob = b; /* the root is no longer needed */
		if (read_node(st, cx, ob, omap[k], NODE_OMAP, st->uuid)) {
			info->damaged_objects++; /* a whole object-map node: its objects */
			continue;
		}
		rc = u64s_push(&L.nodes, omap[k]);
		uint32_t cnt = get32(ob + 24);
		if (cnt > per) {
			info->damaged_objects++;
			continue;
		}
		omap_crc[k] = emu_crc32c(cnt, ob, st->bs); /* refreshed at the first commit */
		uint8_t ib[65536] __attribute__((aligned(4096)));
		for (uint32_t i = 0; !rc && i < cnt; i++) {
			const uint8_t *e = ob + NODE_HDR + i * ent;
			uint64_t key = get64(e), oid = omap_v2 ? get64(e + 8) : key;
			uint64_t gen = get64(e + ent - 16), index = get64(e + ent - 8);
			if (obj_find(st, key)) {
				info->damaged_objects++; /* listed twice: keep the first */
				continue;
			}
			struct obj *o = obj_new(st, key, gen);
			if (!o) {
				rc = -ENOMEM;
				break;
			}
			o->oid = oid;
			o->dirty = 0;
			rc = load_obj(st, cx, &L, o, index, ib, lb);
			if (o->damaged)
				info->damaged_objects++;
		}
	}
	free(b);
	free(lb);
	st->omap_nodes = omap;
	st->omap_crc = omap_crc;
	st->nomap = nomap;
	st->omap_dirty = 1; /* object-map checksums above are of whole nodes */
	if (!rc)
		rc = rebuild_alloc(st, &L);
	if (!rc)
		rc = check_bitmaps(st, cx, bitmap_slot, info);
	/* a store formatted without a backup header gets one when its last
	 * two blocks are free */
	if (!rc && !st->backup_blk && st->nblocks - 2 >= st->data_blk &&
	    emu_alloc_state(st->alloc, st->nblocks - 2) == 0 &&
	    emu_alloc_state(st->alloc, st->nblocks - 1) == 0 &&
	    emu_alloc_reserve(st->alloc, st->nblocks - 2, 2) == 0)
		st->backup_blk = st->nblocks - 2;
	free(L.nodes.v);
	free(L.ext);
	if (rc && !*err)
		snprintf(err, errlen, "cannot load the store's metadata (%s)", strerror(-rc));
	return rc;
}

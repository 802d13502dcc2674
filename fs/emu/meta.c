/*
 * meta.c - the store's metadata nodes as a commit writes them: an object's
 * extent-map leaves and its index chain, the object map, the allocation
 * bitmaps and the root, each node sealed with its magic, owner, sequence
 * and CRC32C; only nodes whose content changed are written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/cmp.h"
#include "src/base/quantile.h"
#include "fs/emu/crc32c.h"
#include "fs/emu/endian.h"
#include "fs/emu/store_int.h"

void node_seal(struct emu_store *st, uint8_t *b, uint32_t magic, uint64_t obj,
		      uint32_t count)
{
	put32(b, magic);
	put32(b + 4, 0);
	put64(b + 8, obj);
	put64(b + 16, st->root_seq);
	put32(b + 24, count);
	put32(b + 28, 0);
	put32(b + 4, emu_crc32c(0, b, st->bs));
}

/* 0 when b is a sound node of this magic (and object, unless obj is ~0). */
int node_check(const struct emu_store *st, uint8_t *b, uint32_t magic, uint64_t obj)
{
	uint32_t crc = get32(b + 4);
	put32(b + 4, 0);
	uint32_t calc = emu_crc32c(0, b, st->bs);
	put32(b + 4, crc);
	if (get32(b) != magic || crc != calc)
		return -EUCLEAN;
	if (obj != ~0ull && get64(b + 8) != obj)
		return -EUCLEAN;
	return 0;
}

static int commit_free(struct commit *c, uint64_t pblk)
{
	return u64s_push(&c->freed, pblk);
}

/* A block for a metadata node: copy-on-write always takes new space (the
 * old block is freed by whoever notices it is no longer referenced);
 * otherwise a node keeps its home. */
static int64_t node_home(struct emu_store *st, uint64_t old)
{
	if (old && !st->mode->cow_meta)
		return (int64_t)old;
	struct emu_run r;
	size_t nr;
	int64_t got = emu_alloc_get(st->alloc, 1, &r, 1, &nr);
	return got < 0 ? got : (int64_t)r.start;
}

/* Free (at commit) every block of old[] that is not in new[]. */
static int free_unreferenced(struct commit *c, const uint64_t *old, size_t nold,
			     const uint64_t *new, size_t nnew)
{
	uint64_t *sorted = malloc((nnew ? nnew : 1) * sizeof(*sorted));
	int rc = 0;
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, new, nnew * sizeof(*sorted));
	qsort(sorted, nnew, sizeof(*sorted), fsp_cmp_u64);
	for (size_t i = 0; !rc && i < nold; i++)
		if (!bsearch(&old[i], sorted, nnew, sizeof(*sorted), fsp_cmp_u64))
			rc = commit_free(c, old[i]);
	free(sorted);
	return rc;
}

/* Write the object's changed leaves, then its index chain if the list of
 * leaves or the size changed. Under st->lock, gate closed. */
int commit_obj(struct emu_store *st, struct commit *c, struct obj *o)
{
	struct emu_emap *m = &o->map;
	size_t nl = m->nleaf;
	size_t per_index = (st->bs - NODE_HDR - INDEX_HEAD) / INDEX_ENT;
	size_t nidx = nl ? (nl + per_index - 1) / per_index : 1;
	if (nidx < st->cfg.tree_depth)
		nidx = st->cfg.tree_depth; /* a deeper tree: more interior nodes per change */
	uint64_t *nodes = malloc((nl + nidx) * sizeof(*nodes));
	int rc = 0;
	if (!nodes)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < nl; i++) {
		struct emu_emap_leaf *l = m->leaf[i];
		uint8_t tmp[NODE_HDR + EMU_EMAP_LEAF * LEAF_ENT];
		memset(tmp, 0, sizeof(tmp));
		for (uint32_t k = 0; k < l->n; k++) {
			uint8_t *e = tmp + NODE_HDR + k * LEAF_ENT;
			put64(e, l->e[k].lblk);
			put64(e + 8, l->e[k].pblk);
			put64(e + 16, l->e[k].len);
			put64(e + 24, l->e[k].txid);
		}
		uint32_t crc = emu_crc32c(l->n, tmp, sizeof(tmp));
		if (!l->node_pblk || crc != l->node_crc) {
			int64_t at = node_home(st, l->node_pblk);
			uint8_t *b = at < 0 ? NULL : commit_block(st, c, (uint64_t)at, EMU_IO_METADATA);
			if (!b) {
				rc = at < 0 ? (int)at : -ENOMEM;
				break;
			}
			memcpy(b, tmp, sizeof(tmp));
			node_seal(st, b, NODE_LEAF, o->oid, l->n);
			l->node_pblk = (uint64_t)at;
			l->node_crc = crc;
		}
		nodes[i] = l->node_pblk;
	}
	/* the index chain's content: size, then (first block, leaf node) */
	uint32_t icrc = emu_crc32c(0, &o->size, sizeof(o->size));
	for (size_t i = 0; !rc && i < nl; i++) {
		icrc = emu_crc32c(icrc, &m->leaf[i]->e[0].lblk, sizeof(uint64_t));
		icrc = emu_crc32c(icrc, &nodes[i], sizeof(uint64_t));
	}
	icrc ^= (uint32_t)nl;
	int changed = !o->nnodes || icrc != o->index_crc || nidx != o->nindex;
	uint64_t *chain = nodes + nl;
	const uint64_t *old_chain = o->nnodes ? o->nodes + o->nnodes - o->nindex : NULL;
	for (size_t k = 0; !rc && k < nidx; k++) {
		uint64_t old = k < o->nindex && old_chain ? old_chain[k] : 0;
		int64_t at = changed ? node_home(st, old) : (int64_t)old;
		if (at < 0)
			rc = (int)at;
		else
			chain[k] = (uint64_t)at;
	}
	for (size_t k = 0; !rc && changed && k < nidx; k++) {
		uint8_t *b = commit_block(st, c, chain[k], EMU_IO_METADATA);
		size_t from = k * per_index;
		size_t cnt = from < nl ? (nl - from < per_index ? nl - from : per_index) : 0;
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		put64(b + NODE_HDR, o->size);
		put64(b + NODE_HDR + 8, nl);
		put64(b + NODE_HDR + 16, k + 1 < nidx ? chain[k + 1] : 0);
		for (size_t i = 0; i < cnt; i++) {
			uint8_t *e = b + NODE_HDR + INDEX_HEAD + i * INDEX_ENT;
			put64(e, m->leaf[from + i]->e[0].lblk);
			put64(e + 8, m->leaf[from + i]->node_pblk);
		}
		node_seal(st, b, NODE_INDEX, o->oid, (uint32_t)cnt);
	}
	if (!rc)
		rc = free_unreferenced(c, o->nodes, o->nnodes, nodes, nl + nidx);
	if (rc) {
		free(nodes);
		return rc;
	}
	free(o->nodes);
	o->nodes = nodes;
	o->nnodes = nl + nidx;
	o->nindex = nidx;
	o->index_crc = icrc;
	o->dirty = 0;
	return 0;
}

/* Nodes no longer referenced: free at commit (copy-on-write, after the
 * checkpoint) or after the journal checkpoint (a logged copy could be
 * replayed over their next user). Under st->lock. */
int free_nodes(struct emu_store *st, const uint64_t *nodes, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = st->mode->journaled ? defer_free(st, nodes[i], 1)
					 : emu_alloc_free(st->alloc, nodes[i], 1);
	return rc;
}

/* The object map: every object's (id, gen, first index node), sorted by
 * id, in nodes of OMAP_ENT-byte entries; only nodes whose content changed
 * are written. Under st->lock. */
struct omap_ent {
	uint64_t id, oid, gen, index;
};

static int cmp_omap(const void *a, const void *b)
{
	const struct omap_ent *x = a, *y = b;
	return FSP_CMP(x->id, y->id);
}

int commit_omap(struct emu_store *st, struct commit *c, uint64_t **out_nodes,
		       uint32_t **out_crc, size_t *out_n)
{
	size_t per = (st->bs - NODE_HDR) / OMAP_ENT, n = 0;
	struct omap_ent *v = malloc((st->nobj ? st->nobj : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < st->hcap; i++)
		for (struct obj *o = st->htab[i]; o; o = o->hnext)
			if (o->nnodes)
				v[n++] = (struct omap_ent){ o->id, o->oid, o->gen,
							    o->nodes[o->nnodes - o->nindex] };
	qsort(v, n, sizeof(*v), cmp_omap);
	size_t nn = n ? (n + per - 1) / per : 0;
	size_t root_cap = (st->bs - ROOT_HEAD) / 8;
	if (nn > root_cap) {
		free(v);
		return -ENOSPC; /* more objects than one root can list */
	}
	uint64_t *nodes = calloc(nn ? nn : 1, sizeof(*nodes));
	uint32_t *crcs = calloc(nn ? nn : 1, sizeof(*crcs));
	int rc = nodes && crcs ? 0 : -ENOMEM;
	for (size_t k = 0; !rc && k < nn; k++) {
		size_t from = k * per, cnt = n - from < per ? n - from : per;
		uint8_t tmp[65536];
		memset(tmp, 0, st->bs);
		for (size_t i = 0; i < cnt; i++) {
			uint8_t *e = tmp + NODE_HDR + i * OMAP_ENT;
			put64(e, v[from + i].id);
			put64(e + 8, v[from + i].oid);
			put64(e + 16, v[from + i].gen);
			put64(e + 24, v[from + i].index);
		}
		uint32_t crc = emu_crc32c((uint32_t)cnt, tmp, st->bs);
		uint64_t old = k < st->nomap ? st->omap_nodes[k] : 0;
		if (old && crc == st->omap_crc[k]) {
			nodes[k] = old;
			crcs[k] = crc;
			continue;
		}
		int64_t at = node_home(st, old);
		uint8_t *b = at < 0 ? NULL : commit_block(st, c, (uint64_t)at, EMU_IO_METADATA);
		if (!b) {
			rc = at < 0 ? (int)at : -ENOMEM;
			break;
		}
		memcpy(b, tmp, st->bs);
		node_seal(st, b, NODE_OMAP, st->uuid, (uint32_t)cnt);
		nodes[k] = (uint64_t)at;
		crcs[k] = crc;
	}
	if (!rc)
		rc = free_unreferenced(c, st->omap_nodes, st->nomap, nodes, nn);
	free(v);
	if (rc) {
		free(nodes);
		free(crcs);
		return rc;
	}
	*out_nodes = nodes;
	*out_crc = crcs;
	*out_n = nn;
	return 0;
}

/* The allocation bitmap blocks that differ from what this slot holds. */
int commit_bitmap(struct emu_store *st, struct commit *c, int slot)
{
	size_t len = emu_alloc_serial_size(st->alloc);
	uint8_t *img = malloc(len);
	int rc = 0;
	if (!img)
		return -ENOMEM;
	emu_alloc_serialize(st->alloc, img, len, 1);
	const uint8_t *bits = img + 48;
	size_t nbytes = len - 48;
	for (uint64_t k = 0; !rc && k < st->bitmap_blocks; k++) {
		size_t from = (size_t)(k * st->bs);
		size_t cnt = from < nbytes ? (nbytes - from < st->bs ? nbytes - from : st->bs) : 0;
		uint32_t crc = emu_crc32c(0, bits + from, cnt) ^ 0x5a5a5a5au;
		if (crc == st->bitmap_crc[slot][k])
			continue;
		uint8_t *b = commit_block(st, c, st->bitmap_blk[slot] + k, EMU_IO_METADATA);
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		memcpy(b, bits + from, cnt);
		st->bitmap_crc[slot][k] = crc;
	}
	free(img);
	return rc;
}

void seal_root(struct emu_store *st, uint8_t *b, const uint64_t *omap, size_t nomap,
		      int bitmap_slot)
{
	put64(b + NODE_HDR, emu_alloc_txid(st->alloc));
	put64(b + NODE_HDR + 8, st->nobj);
	put32(b + NODE_HDR + 16, (uint32_t)st->cfg.cow);
	put32(b + NODE_HDR + 20, (uint32_t)st->cfg.journal);
	put32(b + NODE_HDR + 24, (uint32_t)bitmap_slot);
	put32(b + NODE_HDR + 28, ROOT_OMAP_V2);
	for (size_t i = 0; i < nomap; i++)
		put64(b + ROOT_HEAD + i * 8, omap[i]);
	node_seal(st, b, NODE_ROOT, st->uuid, (uint32_t)nomap);
}

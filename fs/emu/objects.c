/*
 * objects.c - the store's object table: a hash of objects by key (the
 * backing inode number while bound, oid | EMU_ORPHAN_KEY while not), new
 * object ids, open (a stale generation makes an orphan), remove, size, and
 * the walks and the rebinding of keys at mount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/cmp.h"
#include "src/base/quantile.h"
#include "fs/emu/store_int.h"

/* Double the table (64 slots at first), rehashing every object. */
int htab_grow(struct emu_store *st)
{
	size_t ncap = st->hcap ? st->hcap * 2 : 64;
	struct obj **n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	struct obj **old = st->htab;
	size_t ocap = st->hcap;
	st->htab = n;
	st->hcap = ncap;
	for (size_t i = 0; i < ocap; i++)
		for (struct obj *o = old[i], *next; o; o = next) {
			next = o->hnext;
			size_t s = hslot(st, o->id);
			o->hnext = n[s];
			n[s] = o;
		}
	free(old);
	return 0;
}

/* A new object id: random, top bit set (so that the orphan key of an
 * object formatted before ids existed, its inode number, stays apart). */
static uint64_t new_oid(struct emu_store *st)
{
	uint64_t x = st->oid_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	st->oid_state = x;
	return x | EMU_ORPHAN_KEY;
}

struct obj *obj_new(struct emu_store *st, uint64_t id, uint64_t gen)
{
	if (st->nobj + 1 > st->hcap / 2 && htab_grow(st))
		return NULL;
	struct obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->id = id;
	o->oid = new_oid(st);
	o->gen = gen;
	emu_emap_init(&o->map, 32768); /* ext4's longest extent; btrfs's is larger */
	pthread_rwlock_init(&o->rw, NULL);
	size_t s = hslot(st, id);
	o->hnext = st->htab[s];
	st->htab[s] = o;
	st->nobj++;
	o->dirty = 1;
	st->omap_dirty = 1;
	return o;
}

static void obj_unlink(struct emu_store *st, struct obj *o)
{
	struct obj **pp = &st->htab[hslot(st, o->id)];
	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
	st->nobj--;
	o->removed = 1;
}

/* Move o to another key (under st->lock; the new key is free). */
static void obj_rekey_locked(struct emu_store *st, struct obj *o, uint64_t id)
{
	struct obj **pp = &st->htab[hslot(st, o->id)];
	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
	o->id = id;
	size_t s = hslot(st, id);
	o->hnext = st->htab[s];
	st->htab[s] = o;
	st->omap_dirty = 1;
}

void obj_destroy(struct obj *o)
{
	emu_emap_free(&o->map);
	pthread_rwlock_destroy(&o->rw);
	free(o->nodes);
	free(o);
}

int emu_store_obj_open(struct emu_store *st, struct emu_cx *cx, uint64_t id, uint64_t gen)
{
	struct obj *o = obj_get(st, id, 0);
	int rc = 0;
	if (!o)
		return 0; /* created by its first write */
	(void)cx;
	if (gen && o->gen && o->gen != gen) {
		/* the inode number was reused (the file was replaced behind
		 * the mount's back): the old object is not this file's data;
		 * it is kept, unbound, for a backing file that names its id */
		pthread_mutex_lock(&st->lock);
		if (!o->removed && obj_find(st, o->oid | EMU_ORPHAN_KEY) == NULL)
			obj_rekey_locked(st, o, o->oid | EMU_ORPHAN_KEY);
		else
			rc = -EEXIST;
		pthread_mutex_unlock(&st->lock);
	} else if (gen && !o->gen) {
		pthread_mutex_lock(&st->lock);
		o->gen = gen;
		st->omap_dirty = 1;
		pthread_mutex_unlock(&st->lock);
	}
	obj_put(st, o);
	return rc;
}

int emu_store_obj_remove(struct emu_store *st, struct emu_cx *cx, uint64_t id)
{
	(void)cx;
	struct obj *o = obj_get(st, id, 0);
	int rc = 0;
	if (!o)
		return 0;
	gate_enter(st);
	pthread_rwlock_wrlock(&o->rw);
	pthread_mutex_lock(&st->lock);
	if (!o->removed) {
		struct release_ctx r = { st, 0, 0 };
		if (!o->damaged)
			rc = emu_emap_truncate(&o->map, 0, release_range, &r);
		if (!rc)
			rc = r.err;
		if (!rc)
			rc = free_nodes(st, o->nodes, o->nnodes);
		o->nnodes = 0;
		obj_unlink(st, o);
		st->omap_dirty = 1;
	}
	pthread_mutex_unlock(&st->lock);
	pthread_rwlock_unlock(&o->rw);
	gate_leave(st);
	obj_put(st, o);
	return rc;
}

int emu_store_obj_size(struct emu_store *st, uint64_t id, uint64_t *size, uint64_t *allocated)
{
	pthread_mutex_lock(&st->lock);
	struct obj *o = obj_find(st, id);
	if (o) {
		*size = o->size;
		if (allocated)
			*allocated = emu_emap_mapped_blocks(&o->map) * st->bs;
	}
	pthread_mutex_unlock(&st->lock);
	return o ? 0 : -ENOENT;
}

uint64_t emu_store_uuid(const struct emu_store *st)
{
	return st->uuid;
}

static int cmp_ident_key(const void *a, const void *b)
{
	const struct emu_obj_ident *x = a, *y = b;
	return FSP_CMP(x->key, y->key);
}

static int cmp_ident_oid(const void *a, const void *b)
{
	const struct emu_obj_ident *x = a, *y = b;
	return FSP_CMP(x->oid, y->oid);
}

int emu_store_list(struct emu_store *st, struct emu_obj_ident **out, size_t *n)
{
	pthread_mutex_lock(&st->lock);
	size_t k = 0;
	struct emu_obj_ident *v = malloc((st->nobj ? st->nobj : 1) * sizeof(*v));
	if (v)
		for (size_t i = 0; i < st->hcap; i++)
			for (struct obj *o = st->htab[i]; o; o = o->hnext)
				v[k++] = (struct emu_obj_ident){ o->id, o->oid, o->gen, o->size };
	pthread_mutex_unlock(&st->lock);
	if (!v)
		return -ENOMEM;
	qsort(v, k, sizeof(*v), cmp_ident_key);
	*out = v;
	*n = k;
	return 0;
}

struct emu_obj_ident *emu_store_list_find(struct emu_obj_ident *v, size_t n, uint64_t key)
{
	struct emu_obj_ident k = { .key = key };
	return n ? bsearch(&k, v, n, sizeof(*v), cmp_ident_key) : NULL;
}

/* The walk over a snapshot (fn may call the store). */
int emu_store_foreach_obj(struct emu_store *st,
			  int (*fn)(void *ctx, uint64_t obj, uint64_t gen, uint64_t size),
			  void *ctx)
{
	struct emu_obj_ident *v;
	size_t n;
	int rc = emu_store_list(st, &v, &n);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++)
		rc = fn(ctx, v[i].key, v[i].gen, v[i].size);
	free(v);
	return rc;
}

int emu_store_rebind(struct emu_store *st, struct emu_obj_ident *bind, size_t n,
		     uint64_t *changed)
{
	pthread_mutex_lock(&st->lock);
	size_t k = 0;
	struct obj **all = malloc((st->nobj ? st->nobj : 1) * sizeof(*all));
	uint64_t *keys = malloc((st->nobj ? st->nobj : 1) * sizeof(*keys));
	int rc = all && keys ? 0 : -ENOMEM;
	if (!rc) {
		for (size_t i = 0; i < st->hcap; i++)
			for (struct obj *o = st->htab[i]; o; o = o->hnext)
				all[k++] = o;
		qsort(bind, n, sizeof(*bind), cmp_ident_oid);
	}
	/* the new key of every object: its file's inode, or its orphan key */
	for (size_t i = 0; !rc && i < k; i++) {
		struct emu_obj_ident key = { .oid = all[i]->oid };
		const struct emu_obj_ident *b = n ? bsearch(&key, bind, n, sizeof(*bind),
							    cmp_ident_oid) : NULL;
		keys[i] = b ? b->key : all[i]->oid | EMU_ORPHAN_KEY;
		if (b && (b->key & EMU_ORPHAN_KEY))
			rc = -EINVAL;
	}
	/* all distinct, or nothing changes */
	uint64_t *sorted = rc ? NULL : malloc((k ? k : 1) * sizeof(*sorted));
	if (!rc && !sorted)
		rc = -ENOMEM;
	if (!rc) {
		memcpy(sorted, keys, k * sizeof(*keys));
		qsort(sorted, k, sizeof(*sorted), fsp_cmp_u64);
		for (size_t i = 1; i < k; i++)
			if (sorted[i] == sorted[i - 1])
				rc = -EEXIST;
	}
	uint64_t moved = 0;
	if (!rc) {
		memset(st->htab, 0, st->hcap * sizeof(*st->htab));
		for (size_t i = 0; i < k; i++) {
			struct obj *o = all[i];
			struct emu_obj_ident key = { .oid = o->oid };
			const struct emu_obj_ident *b = n ? bsearch(&key, bind, n, sizeof(*bind),
								    cmp_ident_oid) : NULL;
			if (o->id != keys[i])
				moved++;
			if (o->id != keys[i] || (b && b->gen && o->gen != b->gen))
				st->omap_dirty = 1;
			o->id = keys[i];
			if (b && b->gen)
				o->gen = b->gen; /* the file's birth time from now on */
			size_t s = hslot(st, o->id);
			o->hnext = st->htab[s];
			st->htab[s] = o;
		}
	}
	pthread_mutex_unlock(&st->lock);
	free(all);
	free(keys);
	free(sorted);
	if (changed)
		*changed = moved;
	return rc;
}

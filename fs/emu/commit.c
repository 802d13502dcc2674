/*
 * commit.c - the commit driver: one transaction of every change since the
 * last commit (the dirty objects' nodes, the object map, the bitmap, the
 * root), built here and made durable by the store's commit mode (struct
 * emu_commit_mode, store_int.h); the IO gate around it, fsync, and the
 * commit-interval thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fs/emu/store_int.h"
#include "src/base/cmp.h"

uint8_t *commit_block(struct emu_store *st, struct commit *c, uint64_t pblk, int kind)
{
	if (fsp_grow((void **)&c->w, &c->cap, c->n + 1, sizeof(*c->w), 64))
		return NULL;
	void *b;
	if (posix_memalign(&b, 4096, st->bs))
		return NULL;
	memset(b, 0, st->bs);
	c->w[c->n++] = (struct mwrite){ pblk, b, kind };
	return b;
}

static int cmp_mwrite(const void *a, const void *b)
{
	const struct mwrite *x = a, *y = b;
	return FSP_CMP(x->pblk, y->pblk);
}

/* Write blocks in device order, joining runs of consecutive blocks into one
 * IO (as the block layer would merge them). */
int write_runs(struct emu_store *st, struct emu_cx *cx, struct mwrite *w, size_t n)
{
	qsort(w, n, sizeof(*w), cmp_mwrite);
	uint8_t *b = bounce_buf();
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && w[j].pblk == w[j - 1].pblk + 1 && w[j].kind == w[i].kind &&
		       (j - i + 1) * st->bs <= BOUNCE_MAX)
			j++;
		for (size_t k = i; k < j; k++)
			memcpy(b + (k - i) * st->bs, w[k].buf, st->bs);
		int rc = dev_write(st, cx, b, (j - i) * st->bs, w[i].pblk * st->bs, w[i].kind, 0,
				   w[i].kind == EMU_IO_DATA);
		if (rc)
			return rc;
		i = j;
	}
	return 0;
}

static void commit_release(struct commit *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->w[i].buf);
	free(c->w);
	free(c->freed.v);
}

static int any_dirty(struct emu_store *st)
{
	if (st->omap_dirty || st->deferred.n)
		return 1;
	for (size_t i = 0; i < st->hcap; i++)
		for (struct obj *o = st->htab[i]; o; o = o->hnext)
			if (o->dirty)
				return 1;
	if (st->cfg.journal == EMU_JOURNAL_DATA)
		for (size_t i = 0; i < st->pend_cap; i++)
			for (struct pend *p = st->pend[i]; p; p = p->next)
				if (p->is_data && !p->logged)
					return 1;
	return 0;
}

/* The store's commit mode, from --cow and --journal (chosen at open). */
const struct emu_commit_mode *emu_commit_mode_of(const struct emu_store_cfg *cfg)
{
	if (cfg->journal != EMU_JOURNAL_OFF)
		return &emu_commit_journal;
	return cfg->cow != EMU_COW_OFF ? &emu_commit_cow : &emu_commit_inplace;
}

/* The commit proper. Under st->lock with the gate closed. */
int do_commit(struct emu_store *st, struct emu_cx *cx, int flush_anyway)
{
	struct commit c = { 0 };
	uint64_t *omap = NULL;
	uint32_t *omap_crc = NULL;
	size_t nomap = 0;
	int rc = 0;
	if (st->broken)
		return -EIO;
	if (!any_dirty(st))
		return flush_anyway ? dev_flush(st, cx) : 0;
	st->root_seq++;
	for (size_t i = 0; !rc && i < st->hcap; i++)
		for (struct obj *o = st->htab[i]; !rc && o; o = o->hnext)
			if (o->dirty && !o->damaged)
				rc = commit_obj(st, &c, o);
	if (!rc)
		rc = commit_omap(st, &c, &omap, &omap_crc, &nomap);
	/* nodes that are no longer referenced */
	for (size_t i = 0; !rc && i < c.freed.n; i++)
		rc = st->mode->journaled ? defer_free(st, c.freed.v[i], 1)
				 : emu_alloc_free(st->alloc, c.freed.v[i], 1);
	int slot = st->mode->cow_meta ? 1 - st->root_slot : 0;
	if (!rc)
		rc = commit_bitmap(st, &c, slot);
	uint8_t *root = rc ? NULL : commit_block(st, &c, 1 + (uint64_t)slot, EMU_IO_CHECKPOINT);
	if (!rc && !root)
		rc = -ENOMEM;
	if (rc)
		goto fail;
	seal_root(st, root, omap, nomap, slot);

	rc = st->mode->make_durable(st, cx, &c, root, slot);
	if (rc)
		goto fail;
	emu_alloc_commit(st->alloc);
	emu_refs_free(&st->unshared);
	free(st->omap_nodes);
	free(st->omap_crc);
	st->omap_nodes = omap;
	st->omap_crc = omap_crc;
	st->nomap = nomap;
	st->omap_dirty = 0;
	st->dirty_bytes = 0;
	st->root_slot = slot;
	commit_release(&c);
	return 0;
fail:
	/* the in-memory state no longer matches any durable state */
	st->broken = 1;
	free(omap);
	free(omap_crc);
	commit_release(&c);
	return rc;
}

int commit_gated(struct emu_store *st, struct emu_cx *cx, int flush_anyway)
{
	struct emu_cx bg = { 0 };
	if (!cx)
		cx = &bg;
	pthread_mutex_lock(&st->gate_lock);
	while (st->committing)
		pthread_cond_wait(&st->gate_cv, &st->gate_lock);
	st->committing = 1;
	while (st->inflight)
		pthread_cond_wait(&st->gate_cv, &st->gate_lock);
	pthread_mutex_unlock(&st->gate_lock);

	pthread_mutex_lock(&st->lock);
	int rc = do_commit(st, cx, flush_anyway);
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_lock(&st->acct_lock);
	st->acct.commits++;
	pthread_mutex_unlock(&st->acct_lock);

	pthread_mutex_lock(&st->gate_lock);
	st->committing = 0;
	pthread_cond_broadcast(&st->gate_cv);
	pthread_mutex_unlock(&st->gate_lock);
	return rc;
}

int emu_store_commit(struct emu_store *st, struct emu_cx *cx)
{
	return commit_gated(st, cx, 0);
}

int emu_store_fsync(struct emu_store *st, struct emu_cx *cx, uint64_t id)
{
	(void)id; /* a commit covers every object, as a JBD2 or APFS transaction does */
	pthread_mutex_lock(&st->acct_lock);
	st->acct.fsyncs++;
	pthread_mutex_unlock(&st->acct_lock);
	if (st->cfg.fsync_commit)
		return commit_gated(st, cx, 1);
	return dev_flush(st, cx);
}

/* ---- the commit-interval thread ---- */

static void *timer_main(void *arg)
{
	struct emu_store *st = arg;
	pthread_mutex_lock(&st->gate_lock);
	while (!st->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ms = st->cfg.commit_interval_ms;
		ts.tv_sec += (time_t)(ms / 1000);
		ts.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&st->timer_cv, &st->gate_lock, &ts);
		if (st->stop)
			break;
		pthread_mutex_unlock(&st->gate_lock);
		emu_store_commit(st, NULL);
		pthread_mutex_lock(&st->gate_lock);
	}
	pthread_mutex_unlock(&st->gate_lock);
	return NULL;
}

int emu_store_start(struct emu_store *st)
{
	if (st->timer_running || st->cfg.commit_interval_ms == UINT64_MAX)
		return 0;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&st->timer_cv);
	pthread_cond_init(&st->timer_cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&st->timer, NULL, timer_main, st);
	if (rc)
		return -rc;
	st->timer_running = 1;
	return 0;
}

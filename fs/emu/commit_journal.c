/*
 * commit_journal.c - the journaling commit modes (--journal=writeback,
 * ordered, data), as JBD2 does them: the transaction's blocks (with
 * data=journal its data blocks first) go to the write-ahead journal
 * (fs/emu/journal), the commit record after a flush, and the blocks home
 * only at the journal checkpoint. Until then each waits in the table of
 * pending home writes, and freed blocks wait too (a logged copy could be
 * replayed over their next user).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "fs/emu/store_int.h"

/* Store a copy of one block for its later home write (replacing an older
 * copy of the same block). */
int pend_put(struct emu_store *st, uint64_t pblk, const void *buf, int is_data)
{
	struct pend *p = pend_find(st, pblk);
	if (!p) {
		if (st->npend + 1 > st->pend_cap) {
			size_t ncap = st->pend_cap ? st->pend_cap * 2 : 1024;
			struct pend **n = calloc(ncap, sizeof(*n));
			if (!n)
				return -ENOMEM;
			struct pend **old = st->pend;
			size_t ocap = st->pend_cap;
			st->pend = n;
			st->pend_cap = ncap;
			for (size_t i = 0; i < ocap; i++)
				for (struct pend *q = old[i], *next; q; q = next) {
					next = q->next;
					struct pend **pp = pend_slot(st, q->pblk);
					q->next = *pp;
					*pp = q;
				}
			free(old);
		}
		p = calloc(1, sizeof(*p));
		if (!p || posix_memalign((void **)&p->buf, 4096, st->bs)) {
			free(p);
			return -ENOMEM;
		}
		p->pblk = pblk;
		struct pend **pp = pend_slot(st, pblk);
		p->next = *pp;
		*pp = p;
		st->npend++;
	}
	memcpy(p->buf, buf, st->bs);
	p->is_data = is_data;
	p->logged = 0;
	return 0;
}

void pend_drop(struct emu_store *st, uint64_t pblk)
{
	struct pend **pp = pend_slot(st, pblk);
	if (pp && *pp) {
		struct pend *p = *pp;
		*pp = p->next;
		free(p->buf);
		free(p);
		st->npend--;
	}
}

int defer_free(struct emu_store *st, uint64_t pblk, uint64_t len)
{
	int rc = 0;
	while (!rc && len--)
		rc = u64s_push(&st->deferred, pblk++);
	return rc;
}

/* Write every block waiting for its home, then let the journal forget
 * them; blocks freed since can then be reused. Under st->lock. */
int journal_checkpoint(struct emu_store *st, struct emu_cx *cx)
{
	struct mwrite *w = malloc((st->npend ? st->npend : 1) * sizeof(*w));
	size_t n = 0;
	int rc = 0;
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; p; p = p->next)
			if (!p->is_data || p->logged)
				w[n++] = (struct mwrite){ p->pblk, p->buf,
							  p->is_data ? EMU_IO_DATA : EMU_IO_METADATA };
	st->jcx = cx;
	rc = write_runs(st, cx, w, n);
	if (!rc)
		rc = emu_journal_checkpoint(st->journal, UINT64_MAX);
	for (size_t i = 0; !rc && i < n; i++)
		pend_drop(st, w[i].pblk);
	free(w);
	for (size_t i = 0; !rc && i < st->deferred.n; i++)
		rc = emu_alloc_free(st->alloc, st->deferred.v[i], 1);
	if (!rc)
		st->deferred.n = 0;
	return rc;
}

/* Log blocks a transaction of n blocks needs: descriptors, blocks, commit. */
static uint64_t journal_cost(const struct emu_store *st, uint64_t n)
{
	uint64_t per_desc = (st->bs - EMU_J_DESC_OFF_TAGS) / 8;
	return n + (n + per_desc - 1) / per_desc + 1;
}

/*
 * Make room in the journal for this commit: nmeta metadata blocks plus,
 * with --journal=data, the transaction's data blocks. If they do not fit
 * the free log, checkpoint first; if the data cannot fit even an empty log
 * (many concurrent large writes between two commits), write it home
 * directly after that checkpoint, as ordered mode would: no older logged
 * copy of those blocks is left to be replayed over them. Under st->lock.
 */
static int fit_journal(struct emu_store *st, struct emu_cx *cx, size_t nmeta)
{
	uint64_t ndata = 0;
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; p; p = p->next)
			ndata += p->is_data && !p->logged;
	uint64_t need = journal_cost(st, ndata + nmeta);
	if (need <= emu_journal_free_blocks(st->journal))
		return 0;
	int rc = journal_checkpoint(st, cx);
	if (rc || need <= emu_journal_free_blocks(st->journal))
		return rc;
	struct mwrite *w = malloc((ndata ? ndata : 1) * sizeof(*w));
	size_t n = 0;
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; p; p = p->next)
			if (p->is_data && !p->logged)
				w[n++] = (struct mwrite){ p->pblk, p->buf, EMU_IO_DATA };
	rc = write_runs(st, cx, w, n);
	for (size_t i = 0; !rc && i < n; i++)
		pend_drop(st, w[i].pblk);
	free(w);
	if (!rc && journal_cost(st, nmeta) > emu_journal_free_blocks(st->journal))
		rc = -EFBIG; /* the metadata alone does not fit the journal */
	return rc;
}

/* JBD2: log the blocks (data first with data=journal), commit record after
 * a flush, home writes at the checkpoint. */
static int journal_make_durable(struct emu_store *st, struct emu_cx *cx, struct commit *c,
				uint8_t *root, int slot)
{
	(void)root; /* logged with the rest, home at the checkpoint (slot A) */
	(void)slot;
	st->jcx = cx;
	int rc = fit_journal(st, cx, c->n);
	for (size_t i = 0; !rc && i < st->pend_cap; i++)
		for (struct pend *p = st->pend[i]; !rc && p; p = p->next)
			if (p->is_data && !p->logged) {
				rc = emu_journal_log(st->journal, p->pblk | TAG_DATA, p->buf);
				p->logged = 1;
			}
	for (size_t i = 0; !rc && i < c->n; i++)
		rc = emu_journal_log(st->journal, c->w[i].pblk, c->w[i].buf);
	uint64_t seq;
	if (!rc)
		rc = emu_journal_commit(st->journal, &seq);
	if (rc == -ENOSPC) {
		rc = journal_checkpoint(st, cx);
		if (!rc)
			rc = emu_journal_commit(st->journal, &seq);
	}
	for (size_t i = 0; !rc && i < c->n; i++)
		rc = pend_put(st, c->w[i].pblk, c->w[i].buf, 0);
	if (!rc && emu_journal_free_blocks(st->journal) < st->journal_blocks / 2)
		rc = journal_checkpoint(st, cx);
	return rc;
}

const struct emu_commit_mode emu_commit_journal = {
	.cow_meta = 0,
	.journaled = 1,
	.make_durable = journal_make_durable,
};

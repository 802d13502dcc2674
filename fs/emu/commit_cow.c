/*
 * commit_cow.c - the two commit modes that write the transaction home
 * directly. Copy-on-write (--cow=shared/always without a journal), as APFS
 * and btrfs do: every changed node took new space, so the nodes are written
 * and flushed first and the root last, with FUA, into the slot the newest
 * root is not in. In place (both off): every node is written over its home,
 * then a flush; nothing protects a commit cut short.
 */
#define _GNU_SOURCE
#include "fs/emu/store_int.h"

/* APFS-like: new nodes, flush, then the checkpoint with FUA */
static int cow_make_durable(struct emu_store *st, struct emu_cx *cx, struct commit *c,
			    uint8_t *root, int slot)
{
	int rc = write_runs(st, cx, c->w, c->n - 1);
	if (!rc)
		rc = dev_flush(st, cx);
	if (!rc)
		rc = dev_write(st, cx, root, st->bs, (1 + (uint64_t)slot) * st->bs,
			       EMU_IO_CHECKPOINT, EMU_IO_FUA, 0);
	return rc;
}

/* no protection: everything home in place, then a flush */
static int inplace_make_durable(struct emu_store *st, struct emu_cx *cx, struct commit *c,
				uint8_t *root, int slot)
{
	(void)root; /* c->w[] holds it, for slot A */
	(void)slot;
	int rc = write_runs(st, cx, c->w, c->n);
	if (!rc)
		rc = dev_flush(st, cx);
	return rc;
}

const struct emu_commit_mode emu_commit_cow = {
	.cow_meta = 1,
	.journaled = 0,
	.make_durable = cow_make_durable,
};

const struct emu_commit_mode emu_commit_inplace = {
	.cow_meta = 0,
	.journaled = 0,
	.make_durable = inplace_make_durable,
};

/*
 * journal.c - the emulation's write-ahead journal (see journal.h).
 *
 * The open transaction is staged in memory already laid out as it will be
 * written (descriptor, its blocks, next descriptor, ...), so a commit is one
 * or two writes (two when it wraps), a flush and the commit block. Committed
 * transactions that are not yet checkpointed are kept in a small list so the
 * superblock's start can move past them when the caller says they are home.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "src/base/grow.h"
#include "fs/emu/crc32c.h"
#include "fs/emu/endian.h"
#include "fs/emu/journal.h"

const char *emu_replay_end_name(enum emu_replay_end end)
{
	switch (end) {
	case EMU_REPLAY_CLEAN: return "clean";
	case EMU_REPLAY_INCOMPLETE: return "incomplete";
	case EMU_REPLAY_CHECKSUM: return "checksum";
	case EMU_REPLAY_SEQ_GAP: return "sequence-gap";
	case EMU_REPLAY_BAD_DESC: return "bad-descriptor";
	case EMU_REPLAY_IO: return "io-error";
	}
	return "?";
}


/* ---- state ---- */

struct live_txn {
	uint64_t seq;
	uint64_t start;   /* log index of its first block */
	uint64_t nblocks; /* log blocks it occupies, commit included */
};

struct emu_journal {
	struct emu_io io;
	uint64_t base;
	uint32_t bs;
	uint64_t logn;          /* log blocks (region minus the superblock) */
	uint32_t tags_per_desc;
	int commit_fua;
	uint64_t uuid;

	uint64_t tail, tail_seq; /* oldest live transaction (or head when empty) */
	uint64_t head, next_seq; /* where and as what the next commit goes */
	uint64_t used;           /* log blocks between tail and head */
	int need_replay;
	int broken;

	struct live_txn *live;
	size_t nlive, live_cap;

	uint8_t *stage;      /* open transaction, laid out as on disk */
	size_t stage_cap;    /* in blocks */
	uint64_t nlogged;    /* logged blocks in the open transaction */

	uint8_t *scratch;    /* one block: superblock / commit / replay reads */
};

static uint64_t block_off(const struct emu_journal *j, uint64_t log_index)
{
	return j->base + (1 + log_index % j->logn) * (uint64_t)j->bs;
}

static uint64_t desc_count(const struct emu_journal *j, uint64_t nlogged)
{
	return nlogged ? (nlogged + j->tags_per_desc - 1) / j->tags_per_desc : 0;
}

/* position, inside the staged transaction, of logged block i */
static uint64_t stage_slot(const struct emu_journal *j, uint64_t i)
{
	return (i / j->tags_per_desc) * (j->tags_per_desc + 1) + 1 + i % j->tags_per_desc;
}

static void put_hdr(const struct emu_journal *j, uint8_t *b, uint32_t type, uint64_t seq)
{
	memset(b, 0, j->bs);
	put32(b + EMU_J_OFF_MAGIC, EMU_J_MAGIC);
	put32(b + EMU_J_OFF_TYPE, type);
	put64(b + EMU_J_OFF_SEQ, seq);
	put64(b + EMU_J_OFF_UUID, j->uuid);
}

/* ours and of the given type? */
static int hdr_ok(const struct emu_journal *j, const uint8_t *b, uint32_t type)
{
	return get32(b + EMU_J_OFF_MAGIC) == EMU_J_MAGIC &&
	       get32(b + EMU_J_OFF_TYPE) == type &&
	       get64(b + EMU_J_OFF_UUID) == j->uuid;
}

static int write_durable(struct emu_journal *j, const void *buf, uint64_t off)
{
	int rc;
	if (j->commit_fua)
		return j->io.pwrite(j->io.ctx, buf, j->bs, off, EMU_IO_JOURNAL, EMU_IO_FUA);
	rc = j->io.pwrite(j->io.ctx, buf, j->bs, off, EMU_IO_JOURNAL, 0);
	return rc ? rc : j->io.flush(j->io.ctx);
}

static int write_sb(struct emu_journal *j, uint64_t start, uint64_t seq)
{
	uint8_t *b = j->scratch;
	put_hdr(j, b, EMU_J_SB, seq);
	put32(b + EMU_J_SB_OFF_VERSION, EMU_J_VERSION);
	put32(b + EMU_J_SB_OFF_BSIZE, j->bs);
	put64(b + EMU_J_SB_OFF_NBLOCKS, j->logn + 1);
	put64(b + EMU_J_SB_OFF_START, 1 + start % j->logn);
	put32(b + EMU_J_SB_OFF_CRC, emu_crc32c(0, b, EMU_J_SB_OFF_CRC));
	return write_durable(j, b, j->base);
}

static int cfg_ok(const struct emu_journal_cfg *cfg)
{
	uint32_t bs = cfg->block_size;
	return bs >= 512 && (bs & (bs - 1)) == 0 && cfg->nblocks >= 4;
}

/* A handle for cfg on io, before the superblock is written or read; NULL
 * with *rc -EINVAL (a bad configuration) or -ENOMEM. */
static struct emu_journal *journal_new(const struct emu_io *io,
				       const struct emu_journal_cfg *cfg, int *rc)
{
	struct emu_journal *j;
	*rc = -EINVAL;
	if (!cfg_ok(cfg))
		return NULL;
	*rc = -ENOMEM;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->io = *io;
	j->base = cfg->base;
	j->bs = cfg->block_size;
	j->logn = cfg->nblocks - 1;
	j->tags_per_desc = (cfg->block_size - EMU_J_DESC_OFF_TAGS) / 8;
	j->commit_fua = cfg->commit_fua;
	j->scratch = malloc(j->bs);
	if (!j->scratch) {
		free(j);
		return NULL;
	}
	return j;
}

void emu_journal_close(struct emu_journal *j)
{
	if (!j)
		return;
	free(j->live);
	free(j->stage);
	free(j->scratch);
	free(j);
}

static uint64_t random_uuid(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		v = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
	}
	return v ? v : 1;
}

int emu_journal_format(const struct emu_io *io, const struct emu_journal_cfg *cfg,
		       struct emu_journal **out)
{
	struct emu_journal *j;
	int rc;

	*out = NULL;
	j = journal_new(io, cfg, &rc);
	if (!j)
		return rc;
	j->uuid = cfg->uuid ? cfg->uuid : random_uuid();
	j->tail_seq = j->next_seq = 1;
	rc = write_sb(j, 0, 1);
	if (rc) {
		emu_journal_close(j);
		return rc;
	}
	*out = j;
	return 0;
}

int emu_journal_open(const struct emu_io *io, const struct emu_journal_cfg *cfg,
		     struct emu_journal **out)
{
	struct emu_journal *j;
	uint8_t *b;
	uint64_t start;
	int rc;

	*out = NULL;
	j = journal_new(io, cfg, &rc);
	if (!j)
		return rc;
	b = j->scratch;
	rc = io->pread(io->ctx, b, j->bs, j->base);
	if (rc)
		goto fail;
	rc = -EINVAL;
	if (get32(b + EMU_J_OFF_MAGIC) != EMU_J_MAGIC || get32(b + EMU_J_OFF_TYPE) != EMU_J_SB ||
	    get32(b + EMU_J_SB_OFF_CRC) != emu_crc32c(0, b, EMU_J_SB_OFF_CRC) ||
	    get32(b + EMU_J_SB_OFF_VERSION) != EMU_J_VERSION ||
	    get32(b + EMU_J_SB_OFF_BSIZE) != j->bs ||
	    get64(b + EMU_J_SB_OFF_NBLOCKS) != j->logn + 1)
		goto fail;
	start = get64(b + EMU_J_SB_OFF_START);
	if (start < 1 || start > j->logn)
		goto fail;
	j->uuid = get64(b + EMU_J_OFF_UUID);
	j->tail = j->head = start - 1;
	j->tail_seq = j->next_seq = get64(b + EMU_J_OFF_SEQ);
	j->need_replay = 1;
	*out = j;
	return 0;
fail:
	emu_journal_close(j);
	return rc;
}

/* ---- building and committing transactions ---- */

uint32_t emu_journal_block_size(const struct emu_journal *j) { return j->bs; }
uint64_t emu_journal_pending(const struct emu_journal *j) { return j->nlogged; }
uint64_t emu_journal_tail_seq(const struct emu_journal *j) { return j->tail_seq; }
uint64_t emu_journal_next_seq(const struct emu_journal *j) { return j->next_seq; }
uint64_t emu_journal_free_blocks(const struct emu_journal *j) { return j->logn - j->used; }

uint64_t emu_journal_commit_cost(const struct emu_journal *j)
{
	return j->nlogged ? desc_count(j, j->nlogged) + j->nlogged + 1 : 0;
}

int emu_journal_log(struct emu_journal *j, uint64_t tag, const void *block)
{
	uint64_t slot = stage_slot(j, j->nlogged);
	uint64_t desc = slot - 1 - j->nlogged % j->tags_per_desc;
	uint8_t *d;

	if (fsp_grow((void **)&j->stage, &j->stage_cap, slot + 1, j->bs, 64))
		return -ENOMEM;
	memcpy(j->stage + slot * j->bs, block, j->bs);
	d = j->stage + desc * j->bs;
	/* The descriptor header (seq) is filled at commit; tags go in now. */
	put64(d + EMU_J_DESC_OFF_TAGS + 8 * (j->nlogged % j->tags_per_desc), tag);
	j->nlogged++;
	return 0;
}

/* room to remember one more committed transaction */
static int live_reserve(struct emu_journal *j)
{
	if (fsp_grow((void **)&j->live, &j->live_cap, j->nlive + 1, sizeof(*j->live), 16))
		return -ENOMEM;
	return 0;
}

/* write n staged blocks at log index pos, splitting at the wrap */
static int write_ring(struct emu_journal *j, const uint8_t *buf, uint64_t n, uint64_t pos)
{
	while (n) {
		uint64_t at = pos % j->logn;
		uint64_t run = j->logn - at < n ? j->logn - at : n;
		int rc = j->io.pwrite(j->io.ctx, buf, run * j->bs, block_off(j, at),
				      EMU_IO_JOURNAL, 0);
		if (rc)
			return rc;
		buf += run * j->bs;
		pos += run;
		n -= run;
	}
	return 0;
}

int emu_journal_commit(struct emu_journal *j, uint64_t *seqp)
{
	uint64_t ndesc = desc_count(j, j->nlogged);
	uint64_t nbody = ndesc + j->nlogged; /* descriptors + logged blocks */
	uint64_t seq = j->next_seq;
	uint32_t dcrc = 0;
	uint8_t *c = j->scratch;
	int rc;

	if (seqp)
		*seqp = 0;
	if (j->need_replay || j->broken)
		return -EINVAL;
	if (!j->nlogged)
		return 0;
	if (nbody + 1 > j->logn)
		return -EFBIG;
	if (nbody + 1 > j->logn - j->used)
		return -ENOSPC;
	if (live_reserve(j))
		return -ENOMEM;

	for (uint64_t d = 0; d < ndesc; d++) {
		uint8_t *b = j->stage + d * (j->tags_per_desc + 1) * j->bs;
		uint64_t left = j->nlogged - d * j->tags_per_desc;
		uint32_t ntags = left < j->tags_per_desc ? (uint32_t)left : j->tags_per_desc;
		/* keep the tags, rewrite the header */
		memset(b, 0, EMU_J_DESC_OFF_TAGS);
		memset(b + EMU_J_DESC_OFF_TAGS + 8 * ntags, 0,
		       j->bs - EMU_J_DESC_OFF_TAGS - 8 * ntags);
		put32(b + EMU_J_OFF_MAGIC, EMU_J_MAGIC);
		put32(b + EMU_J_OFF_TYPE, EMU_J_DESC);
		put64(b + EMU_J_OFF_SEQ, seq);
		put64(b + EMU_J_OFF_UUID, j->uuid);
		put32(b + EMU_J_DESC_OFF_NTAGS, ntags);
	}
	dcrc = emu_crc32c(0, j->stage, nbody * j->bs);

	/* JBD2 order: body, flush (REQ_PREFLUSH), commit (REQ_FUA). */
	j->broken = 1;
	rc = write_ring(j, j->stage, nbody, j->head);
	if (!rc)
		rc = j->io.flush(j->io.ctx);
	if (rc)
		return rc;
	put_hdr(j, c, EMU_J_COMMIT, seq);
	put32(c + EMU_J_COMMIT_OFF_NBLOCKS, (uint32_t)nbody);
	put32(c + EMU_J_COMMIT_OFF_DCRC, dcrc);
	put32(c + EMU_J_COMMIT_OFF_CRC, emu_crc32c(0, c, EMU_J_COMMIT_OFF_CRC));
	rc = write_durable(j, c, block_off(j, j->head + nbody));
	if (rc)
		return rc;
	j->broken = 0;

	j->live[j->nlive++] = (struct live_txn){ seq, j->head, nbody + 1 };
	j->head = (j->head + nbody + 1) % j->logn;
	j->used += nbody + 1;
	j->next_seq++;
	j->nlogged = 0;
	if (seqp)
		*seqp = seq;
	return 0;
}

int emu_journal_checkpoint(struct emu_journal *j, uint64_t upto_seq)
{
	size_t n = 0;
	int rc;

	if (j->need_replay || j->broken)
		return -EINVAL;
	while (n < j->nlive && j->live[n].seq < upto_seq)
		n++;
	if (!n)
		return 0;
	/* The home writes must be durable before the log forgets them. */
	rc = j->io.flush(j->io.ctx);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		j->used -= j->live[i].nblocks;
	memmove(j->live, j->live + n, (j->nlive - n) * sizeof(*j->live));
	j->nlive -= n;
	if (j->nlive) {
		j->tail = j->live[0].start;
		j->tail_seq = j->live[0].seq;
	} else {
		j->tail = j->head;
		j->tail_seq = j->next_seq;
	}
	return write_sb(j, j->tail, j->tail_seq);
}

/* ---- replay ---- */

struct parsed {
	uint64_t seq;
	uint64_t nlogged;
	uint64_t nblocks;    /* log blocks, commit included (when known) */
	uint64_t *tags;
	uint8_t *data;
	size_t cap;          /* in blocks */
};

static int parsed_grow(struct parsed *p, uint64_t need, uint32_t bs)
{
	size_t cap;
	uint64_t *t;
	uint8_t *d;
	if (need <= p->cap)
		return 0;
	cap = p->cap ? p->cap : 64;
	while (cap < need)
		cap *= 2;
	t = realloc(p->tags, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	p->tags = t;
	d = realloc(p->data, cap * bs);
	if (!d)
		return -ENOMEM;
	p->data = d;
	p->cap = cap;
	return 0;
}

static int read_block(struct emu_journal *j, uint8_t *b, uint64_t pos)
{
	return j->io.pread(j->io.ctx, b, j->bs, block_off(j, pos));
}

/*
 * Parse the transaction starting at log index pos. With any_seq = 0 it must
 * carry sequence *seq; with any_seq = 1 its sequence is stored in *seq.
 * Returns CLEAN for "a complete, valid transaction" (reusing the enum),
 * otherwise why it is rejected; -errno for allocation failure. max_blocks
 * bounds the scan so a corrupt log cannot loop.
 */
static int parse_txn(struct emu_journal *j, uint64_t pos, uint64_t *seq, int any_seq,
		     uint64_t max_blocks, struct parsed *p, int *is_txn)
{
	uint8_t *b = j->scratch;
	uint64_t s, n = 0;
	uint32_t crc = 0;

	*is_txn = 0;
	p->nlogged = 0;
	p->nblocks = 0;
	if (read_block(j, b, pos))
		return EMU_REPLAY_IO;
	if (!hdr_ok(j, b, EMU_J_DESC))
		return EMU_REPLAY_CLEAN;
	s = get64(b + EMU_J_OFF_SEQ);
	if (!any_seq && s < *seq)
		return EMU_REPLAY_CLEAN; /* stale: from an earlier lap */
	*is_txn = 1;
	p->seq = s;
	if (!any_seq && s > *seq)
		return EMU_REPLAY_SEQ_GAP;
	*seq = s;
	for (;;) {
		uint32_t ntags = get32(b + EMU_J_DESC_OFF_NTAGS);
		if (ntags == 0 || ntags > j->tags_per_desc || n + 1 + ntags + 1 > max_blocks)
			return EMU_REPLAY_BAD_DESC;
		if (parsed_grow(p, p->nlogged + ntags, j->bs))
			return -ENOMEM;
		for (uint32_t i = 0; i < ntags; i++)
			p->tags[p->nlogged + i] = get64(b + EMU_J_DESC_OFF_TAGS + 8 * i);
		crc = emu_crc32c(crc, b, j->bs);
		n++;
		for (uint32_t i = 0; i < ntags; i++) {
			uint8_t *d = p->data + (p->nlogged + i) * j->bs;
			if (read_block(j, d, pos + n))
				return EMU_REPLAY_IO;
			crc = emu_crc32c(crc, d, j->bs);
			n++;
		}
		p->nlogged += ntags;
		p->nblocks = n + 1; /* the commit slot, even if it proves torn */
		if (read_block(j, b, pos + n))
			return EMU_REPLAY_IO;
		if (hdr_ok(j, b, EMU_J_DESC) && get64(b + EMU_J_OFF_SEQ) == s)
			continue;
		if (!hdr_ok(j, b, EMU_J_COMMIT) || get64(b + EMU_J_OFF_SEQ) != s ||
		    get32(b + EMU_J_COMMIT_OFF_CRC) != emu_crc32c(0, b, EMU_J_COMMIT_OFF_CRC))
			return EMU_REPLAY_INCOMPLETE;
		if (get32(b + EMU_J_COMMIT_OFF_NBLOCKS) != n ||
		    get32(b + EMU_J_COMMIT_OFF_DCRC) != crc)
			return EMU_REPLAY_CHECKSUM;
		return EMU_REPLAY_CLEAN;
	}
}

/* After a rejected transaction: count the well-formed ones behind it. */
static void count_discarded(struct emu_journal *j, uint64_t pos, uint64_t seq,
			    uint64_t budget, struct parsed *p, struct emu_replay_report *rep)
{
	while (budget >= 2) {
		int is_txn;
		int r = parse_txn(j, pos, &seq, 0, budget, p, &is_txn);
		if (r != EMU_REPLAY_CLEAN || !is_txn)
			return;
		rep->txns_discarded++;
		rep->blocks_discarded += p->nlogged;
		pos += p->nblocks;
		budget -= p->nblocks;
		seq++;
	}
}

int emu_journal_replay(struct emu_journal *j, emu_journal_apply_fn apply, void *ctx,
		       int reset, struct emu_replay_report *rep)
{
	struct parsed p = { 0 };
	uint64_t pos = j->tail, seq = j->tail_seq, budget = j->logn;
	int rc = 0;

	memset(rep, 0, sizeof(*rep));
	rep->start_seq = seq;
	rep->last_seq = seq - 1;
	if (j->broken)
		return -EINVAL;
	for (;;) {
		int is_txn;
		int r = parse_txn(j, pos, &seq, 0, budget, &p, &is_txn);
		if (r < 0) {
			rc = r;
			goto out;
		}
		if (r != EMU_REPLAY_CLEAN || !is_txn) {
			rep->end = (enum emu_replay_end)r;
			if (is_txn) {
				rep->stop_seq = p.seq;
				rep->txns_discarded = 1;
				rep->blocks_discarded = p.nlogged;
				if (r == EMU_REPLAY_SEQ_GAP) {
					/* count it and what follows as discarded */
					rep->txns_discarded = 0;
					rep->blocks_discarded = 0;
					count_discarded(j, pos, p.seq, budget, &p, rep);
				} else if (p.nblocks && budget > p.nblocks) {
					count_discarded(j, pos + p.nblocks, seq + 1,
							budget - p.nblocks, &p, rep);
				}
			}
			break;
		}
		for (uint64_t i = 0; i < p.nlogged; i++) {
			rc = apply(ctx, seq, p.tags[i], p.data + i * j->bs);
			if (rc)
				goto out;
		}
		rep->txns_replayed++;
		rep->blocks_replayed += p.nlogged;
		rep->last_seq = seq;
		pos = (pos + p.nblocks) % j->logn;
		budget -= p.nblocks;
		seq++;
		if (budget < 2) {
			rep->end = EMU_REPLAY_CLEAN;
			break;
		}
	}
	if (rep->end == EMU_REPLAY_IO) {
		rc = -EIO;
		goto out;
	}
	if (reset) {
		/*
		 * Every transaction in the region has a sequence below
		 * tail_seq + logn/2 (each takes >= 2 blocks), so starting at
		 * tail_seq + logn no stale block can ever pass for a new one.
		 */
		uint64_t new_seq = j->tail_seq + j->logn;
		rc = j->io.flush(j->io.ctx);
		if (rc)
			goto out;
		j->head = j->tail = pos % j->logn;
		j->next_seq = j->tail_seq = new_seq;
		j->used = 0;
		j->nlive = 0;
		rc = write_sb(j, j->tail, new_seq);
		if (rc)
			goto out;
		j->need_replay = 0;
	}
out:
	free(p.tags);
	free(p.data);
	return rc;
}

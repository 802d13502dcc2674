/*
 * decomp_rows.c - reading the rows the per-IO decomposition joins, and the
 * file_extents table (decomp_rows.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/ops.h"
#include "src/db/decomp_rows.h"
#include "src/db/handle.h"
#include "src/db/schema.h"

/* The rows of s into out, a FSP_DC_ARRAY, each set by fill(row, s). */
#define LOAD(st, s, out, fill, what, err, errlen)                                      \
	fsp_db_load_rows(st, s, (void **)&(out)->v, &(out)->n, &(out)->cap,             \
			 sizeof(*(out)->v), fill, what, err, errlen)

static void io_row(void *row, sqlite3_stmt *s)
{
	struct fsp_dc_io *io = row;
	uint64_t intended = fsp_db_col_u64(s, 0), total = fsp_db_col_u64(s, 1);
	/* the engine's layer_ns is the lag: 0 unless a rate step held the IO back */
	io->lag_ns = fsp_db_col_u64(s, 6);
	if (io->lag_ns > total)
		io->lag_ns = total;
	io->submit_ns = intended + io->lag_ns;
	io->reap_ns = intended + total;
	io->offset = fsp_db_col_u64(s, 2);
	io->length = fsp_db_col_u64(s, 3);
	io->tid = (uint32_t)fsp_db_col_u64(s, 4);
	io->write = sqlite3_column_int(s, 5) == FSP_OP_WRITE;
}

int fsp_decomp_read_ios(struct fsp_store *st, int64_t run, int step, fsp_dc_ios *out,
			char *err, size_t errlen)
{
	sqlite3_stmt *s;
	memset(out, 0, sizeof(*out));
	if (fsp_db_prepare_read(st, "SELECT start_ns, total_ns, offset, length, pid, op, layer_ns FROM ops"
				" WHERE run = ? AND step = ? AND op IN (?, ?) AND result = 0", &s,
				"ops", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int(s, 3, FSP_OP_READ);
	sqlite3_bind_int(s, 4, FSP_OP_WRITE);
	return LOAD(st, s, out, io_row, "ops", err, errlen);
}

static void block_row(void *row, sqlite3_stmt *s)
{
	struct fsp_dc_block *b = row;
	b->queue_ns = fsp_db_col_u64(s, 0);
	b->insert_ns = fsp_db_col_u64(s, 1);
	b->issue_ns = fsp_db_col_u64(s, 2);
	b->complete_ns = fsp_db_col_u64(s, 3);
	b->sector = fsp_db_col_u64(s, 4);
	b->bytes = (uint32_t)fsp_db_col_u64(s, 5);
	b->tgid = (uint32_t)fsp_db_col_u64(s, 6);
	b->tid = (uint32_t)fsp_db_col_u64(s, 7);
	const char *op = (const char *)sqlite3_column_text(s, 8);
	b->write = op && !strcmp(op, "write");
}

/* run's read and write requests: of step (step >= 0), or made in [from, to]. */
static int read_blocks(struct fsp_store *st, int64_t run, int step, uint64_t from_ns,
		       uint64_t to_ns, fsp_dc_blocks *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (fsp_db_has_table(st->db, "block_ios") <= 0)
		return 0;
	/* block_ios.tid came later in version 3 */
	char sql[400];
	snprintf(sql, sizeof(sql), "SELECT queue_ns, insert_ns, issue_ns, complete_ns, sector,"
		 " bytes, tgid, %s, op FROM block_ios WHERE run = ?1 AND %s"
		 " AND op IN ('read', 'write') AND error = 0",
		 fsp_db_column_or_0(st->db, "block_ios", "tid"),
		 step >= 0 ? "step = ?2"
			   : "coalesce(queue_ns, insert_ns, issue_ns) BETWEEN ?3 AND ?4");
	sqlite3_stmt *s;
	if (fsp_db_prepare_read(st, sql, &s, "block_ios", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int64(s, 3, (int64_t)from_ns);
	sqlite3_bind_int64(s, 4, (int64_t)to_ns);
	return LOAD(st, s, out, block_row, "block_ios", err, errlen);
}

int fsp_decomp_read_blocks(struct fsp_store *st, int64_t run, int step, fsp_dc_blocks *out,
			   char *err, size_t errlen)
{
	return read_blocks(st, run, step, 0, 0, out, err, errlen);
}

int fsp_decomp_read_blocks_window(struct fsp_store *st, int64_t run, uint64_t from_ns,
				  uint64_t to_ns, fsp_dc_blocks *out, char *err, size_t errlen)
{
	return read_blocks(st, run, -1, from_ns, to_ns, out, err, errlen);
}

static void daemon_row(void *row, sqlite3_stmt *s)
{
	struct fsp_dc_daemon *d = row;
	d->start_ns = fsp_db_col_u64(s, 0);
	d->total_ns = fsp_db_col_u64(s, 1);
	d->backing_ns = fsp_db_col_u64(s, 2);
	d->emu_ns = fsp_db_col_u64(s, 3);
	d->offset = fsp_db_col_u64(s, 4);
	d->length = fsp_db_col_u64(s, 5);
	d->pid = (uint32_t)fsp_db_col_u64(s, 6);
	d->write = sqlite3_column_int(s, 7) == FSP_OP_WRITE;
	d->recv_ns = fsp_db_col_u64(s, 8);
	d->fuse_unique = fsp_db_col_u64(s, 9);
	d->inject_ns = fsp_db_col_u64(s, 10);
}

int fsp_decomp_read_daemon(struct fsp_store *st, int64_t run, uint64_t from_ns,
			   uint64_t to_ns, fsp_dc_daemons *out, int *have_fuse_cols,
			   char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	/* ops.recv_ns and ops.fuse_unique come with the FUSE transport's trace,
	 * ops.inject_ns with mount --inject: 0 where a database lacks them */
	int have = fsp_db_has_column(st->db, "ops", "recv_ns") > 0 &&
		   fsp_db_has_column(st->db, "ops", "fuse_unique") > 0;
	*have_fuse_cols = have;
	char sql[320];
	snprintf(sql, sizeof(sql), "SELECT start_ns, total_ns, backing_ns, emu_ns, offset, length,"
		 " pid, op, %s, %s FROM ops WHERE run = ? AND op IN (?, ?)"
		 " AND start_ns BETWEEN ? AND ? AND result = 0",
		 have ? "recv_ns, fuse_unique" : "0, 0",
		 fsp_db_column_or_0(st->db, "ops", "inject_ns"));
	sqlite3_stmt *s;
	if (fsp_db_prepare_read(st, sql, &s, "ops", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, FSP_OP_READ);
	sqlite3_bind_int(s, 3, FSP_OP_WRITE);
	sqlite3_bind_int64(s, 4, (int64_t)from_ns);
	sqlite3_bind_int64(s, 5, (int64_t)to_ns);
	return LOAD(st, s, out, daemon_row, "ops", err, errlen);
}

int fsp_decomp_have_fuse(struct fsp_store *st, int64_t run)
{
	return fsp_db_run_has_rows(st, "fuse_reqs", run) == 1;
}

static void fuse_row(void *row, sqlite3_stmt *s)
{
	struct fsp_dc_fuse *f = row;
	f->unique = fsp_db_col_u64(s, 0);
	f->send_ns = fsp_db_col_u64(s, 1);
	f->end_ns = fsp_db_col_u64(s, 2);
}

int fsp_decomp_read_fuse(struct fsp_store *st, int64_t run, fsp_dc_fuses *out, int *have,
			 char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	*have = fsp_db_has_table(st->db, "fuse_reqs") > 0;
	if (!*have)
		return 0;
	sqlite3_stmt *s;
	if (fsp_db_prepare_read(st, "SELECT fuse_unique, send_ns, end_ns FROM fuse_reqs"
				" WHERE run = ?", &s, "fuse_reqs", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	return LOAD(st, s, out, fuse_row, "fuse_reqs", err, errlen);
}

static void extent_row(void *row, sqlite3_stmt *s)
{
	struct fsp_extent *e = row;
	e->logical = fsp_db_col_u64(s, 0);
	e->physical = fsp_db_col_u64(s, 1);
	e->length = fsp_db_col_u64(s, 2);
	e->flags = (uint32_t)fsp_db_col_u64(s, 3);
}

int fsp_decomp_read_extents(struct fsp_store *st, int64_t run, int step, fsp_dc_extents *out,
			    char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (fsp_db_has_table(st->db, "file_extents") <= 0)
		return 0;
	sqlite3_stmt *s;
	if (fsp_db_prepare_read(st, "SELECT logical, physical, length, flags FROM file_extents"
				" WHERE run = ?1 AND after_step = (SELECT max(after_step)"
				" FROM file_extents WHERE run = ?1 AND after_step <= ?2)"
				" ORDER BY logical", &s, "file_extents", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	return LOAD(st, s, out, extent_row, "file_extents", err, errlen);
}

static void bind_extent(sqlite3_stmt *s, const void *row, const void *arg)
{
	const struct fsp_extent *e = row;
	sqlite3_bind_int(s, 2, *(const int *)arg); /* after_step */
	sqlite3_bind_int64(s, 3, (int64_t)e->logical);
	sqlite3_bind_int64(s, 4, (int64_t)e->physical);
	sqlite3_bind_int64(s, 5, (int64_t)e->length);
	sqlite3_bind_int64(s, 6, e->flags);
}

static const struct fsp_db_insert file_extents_insert = {
	.sql = "INSERT OR REPLACE INTO file_extents(run, after_step, logical, physical, length,"
	       " flags) VALUES(?,?,?,?,?,?)",
	.elem = sizeof(struct fsp_extent),
	.bind = bind_extent,
	.prepare_fail = "cannot store the file's extents",
	.insert_fail = "cannot store the file's extents",
};

int fsp_file_extents_save(struct fsp_store *st, int64_t run, int after_step,
			  const struct fsp_extent *e, size_t n)
{
	sqlite3 *db = st->db;
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	int rc = fsp_db_insert_rows(st, &file_extents_insert, run, e, n, &after_step);
	sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	return rc;
}

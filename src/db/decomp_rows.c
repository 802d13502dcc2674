/*
 * decomp_rows.c - reading the rows the per-IO decomposition joins, and the
 * file_extents table (decomp_rows.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/grow.h"
#include "src/base/ops.h"
#include "src/db/decomp_rows.h"
#include "src/db/handle.h"
#include "src/db/schema.h"

static int has_table(sqlite3 *db, const char *table)
{
	sqlite3_stmt *s;
	int rc = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master"
			       " WHERE type = 'table' AND name = ?", -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		rc = sqlite3_column_int(s, 0) > 0;
	sqlite3_finalize(s);
	return rc;
}

static int has_column(sqlite3 *db, const char *table, const char *column)
{
	char sql[96];
	sqlite3_stmt *s;
	int rc = 0;
	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;
	while (!rc && sqlite3_step(s) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 1);
		rc = name && !strcmp(name, column);
	}
	sqlite3_finalize(s);
	return rc;
}

#define PUSH(arr) (fsp_grow((void **)&(arr)->v, &(arr)->cap, (arr)->n + 1, \
			    sizeof(*(arr)->v), 1024) ? NULL : &(arr)->v[(arr)->n++])

static uint64_t col_u64(sqlite3_stmt *s, int i)
{
	return (uint64_t)sqlite3_column_int64(s, i); /* NULL reads 0 */
}

/* Step through s, calling row() for each; the common error path. */
static int each_row(sqlite3 *db, sqlite3_stmt *s, int (*row)(sqlite3_stmt *, void *), void *arg,
		    const char *what, char *err, size_t errlen)
{
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (row(s, arg)) {
			snprintf(err, errlen, "out of memory reading %s", what);
			sqlite3_finalize(s);
			return -1;
		}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "cannot read %s: %s", what, sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **s, const char *what, char *err,
		   size_t errlen)
{
	if (sqlite3_prepare_v2(db, sql, -1, s, NULL) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "cannot read %s: %s", what, sqlite3_errmsg(db));
	return -1;
}

static int io_row(sqlite3_stmt *s, void *arg)
{
	struct fsp_dc_io *io = PUSH((fsp_dc_ios *)arg);
	if (!io)
		return -1;
	io->submit_ns = col_u64(s, 0);
	io->reap_ns = io->submit_ns + col_u64(s, 1);
	io->offset = col_u64(s, 2);
	io->length = col_u64(s, 3);
	io->tid = (uint32_t)col_u64(s, 4);
	io->write = sqlite3_column_int(s, 5) == FSP_OP_WRITE;
	return 0;
}

int fsp_decomp_read_ios(struct fsp_store *st, int64_t run, int step, fsp_dc_ios *out,
			char *err, size_t errlen)
{
	sqlite3_stmt *s;
	memset(out, 0, sizeof(*out));
	if (prepare(st->db, "SELECT start_ns, total_ns, offset, length, pid, op FROM ops"
		    " WHERE run = ? AND step = ? AND op IN (?, ?) AND result = 0", &s, "ops",
		    err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int(s, 3, FSP_OP_READ);
	sqlite3_bind_int(s, 4, FSP_OP_WRITE);
	return each_row(st->db, s, io_row, out, "ops", err, errlen);
}

static int block_row(sqlite3_stmt *s, void *arg)
{
	struct fsp_dc_block *b = PUSH((fsp_dc_blocks *)arg);
	if (!b)
		return -1;
	b->queue_ns = col_u64(s, 0);
	b->insert_ns = col_u64(s, 1);
	b->issue_ns = col_u64(s, 2);
	b->complete_ns = col_u64(s, 3);
	b->sector = col_u64(s, 4);
	b->bytes = (uint32_t)col_u64(s, 5);
	b->tgid = (uint32_t)col_u64(s, 6);
	b->tid = (uint32_t)col_u64(s, 7);
	const char *op = (const char *)sqlite3_column_text(s, 8);
	b->write = op && !strcmp(op, "write");
	return 0;
}

/* run's read and write requests: of step (step >= 0), or made in [from, to]. */
static int read_blocks(struct fsp_store *st, int64_t run, int step, uint64_t from_ns,
		       uint64_t to_ns, fsp_dc_blocks *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!has_table(st->db, "block_ios"))
		return 0;
	/* block_ios.tid came later in version 3: 0 where it is absent */
	char sql[400];
	snprintf(sql, sizeof(sql), "SELECT queue_ns, insert_ns, issue_ns, complete_ns, sector,"
		 " bytes, tgid, %s, op FROM block_ios WHERE run = ?1 AND %s"
		 " AND op IN ('read', 'write') AND error = 0",
		 has_column(st->db, "block_ios", "tid") ? "tid" : "0",
		 step >= 0 ? "step = ?2"
			   : "coalesce(queue_ns, insert_ns, issue_ns) BETWEEN ?3 AND ?4");
	sqlite3_stmt *s;
	if (prepare(st->db, sql, &s, "block_ios", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int64(s, 3, (int64_t)from_ns);
	sqlite3_bind_int64(s, 4, (int64_t)to_ns);
	return each_row(st->db, s, block_row, out, "block_ios", err, errlen);
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

static int daemon_row(sqlite3_stmt *s, void *arg)
{
	struct fsp_dc_daemon *d = PUSH((fsp_dc_daemons *)arg);
	if (!d)
		return -1;
	d->start_ns = col_u64(s, 0);
	d->total_ns = col_u64(s, 1);
	d->backing_ns = col_u64(s, 2);
	d->emu_ns = col_u64(s, 3);
	d->offset = col_u64(s, 4);
	d->length = col_u64(s, 5);
	d->pid = (uint32_t)col_u64(s, 6);
	d->write = sqlite3_column_int(s, 7) == FSP_OP_WRITE;
	d->recv_ns = col_u64(s, 8);
	d->fuse_unique = col_u64(s, 9);
	d->inject_ns = col_u64(s, 10);
	return 0;
}

int fsp_decomp_read_daemon(struct fsp_store *st, int64_t run, uint64_t from_ns,
			   uint64_t to_ns, fsp_dc_daemons *out, int *have_fuse_cols,
			   char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	/* ops.recv_ns and ops.fuse_unique come with the FUSE transport's trace,
	 * ops.inject_ns with mount --inject: 0 where a database lacks them */
	int have = has_column(st->db, "ops", "recv_ns") && has_column(st->db, "ops", "fuse_unique");
	*have_fuse_cols = have;
	char sql[320];
	snprintf(sql, sizeof(sql), "SELECT start_ns, total_ns, backing_ns, emu_ns, offset, length,"
		 " pid, op, %s, %s FROM ops WHERE run = ? AND op IN (?, ?)"
		 " AND start_ns BETWEEN ? AND ? AND result = 0",
		 have ? "recv_ns, fuse_unique" : "0, 0",
		 has_column(st->db, "ops", "inject_ns") ? "inject_ns" : "0");
	sqlite3_stmt *s;
	if (prepare(st->db, sql, &s, "ops", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, FSP_OP_READ);
	sqlite3_bind_int(s, 3, FSP_OP_WRITE);
	sqlite3_bind_int64(s, 4, (int64_t)from_ns);
	sqlite3_bind_int64(s, 5, (int64_t)to_ns);
	return each_row(st->db, s, daemon_row, out, "ops", err, errlen);
}

int fsp_decomp_have_fuse(struct fsp_store *st, int64_t run)
{
	sqlite3_stmt *s;
	int have = 0;
	if (!has_table(st->db, "fuse_reqs") ||
	    sqlite3_prepare_v2(st->db, "SELECT EXISTS(SELECT 1 FROM fuse_reqs WHERE run = ?)", -1,
			       &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, run);
	if (sqlite3_step(s) == SQLITE_ROW)
		have = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return have;
}

static int fuse_row(sqlite3_stmt *s, void *arg)
{
	struct fsp_dc_fuse *f = PUSH((fsp_dc_fuses *)arg);
	if (!f)
		return -1;
	f->unique = col_u64(s, 0);
	f->send_ns = col_u64(s, 1);
	f->end_ns = col_u64(s, 2);
	return 0;
}

int fsp_decomp_read_fuse(struct fsp_store *st, int64_t run, fsp_dc_fuses *out, int *have,
			 char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	*have = has_table(st->db, "fuse_reqs");
	if (!*have)
		return 0;
	sqlite3_stmt *s;
	if (prepare(st->db, "SELECT fuse_unique, send_ns, end_ns FROM fuse_reqs WHERE run = ?",
		    &s, "fuse_reqs", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	return each_row(st->db, s, fuse_row, out, "fuse_reqs", err, errlen);
}

static int extent_row(sqlite3_stmt *s, void *arg)
{
	struct fsp_extent *e = PUSH((fsp_dc_extents *)arg);
	if (!e)
		return -1;
	e->logical = col_u64(s, 0);
	e->physical = col_u64(s, 1);
	e->length = col_u64(s, 2);
	e->flags = (uint32_t)col_u64(s, 3);
	return 0;
}

int fsp_decomp_read_extents(struct fsp_store *st, int64_t run, int step, fsp_dc_extents *out,
			    char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!has_table(st->db, "file_extents"))
		return 0;
	sqlite3_stmt *s;
	if (prepare(st->db, "SELECT logical, physical, length, flags FROM file_extents"
		    " WHERE run = ?1 AND after_step = (SELECT max(after_step) FROM file_extents"
		    " WHERE run = ?1 AND after_step <= ?2) ORDER BY logical", &s, "file_extents",
		    err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	return each_row(st->db, s, extent_row, out, "file_extents", err, errlen);
}

int fsp_file_extents_save(struct fsp_store *st, int64_t run, int after_step,
			  const struct fsp_extent *e, size_t n)
{
	sqlite3 *db = st->db;
	sqlite3_stmt *s;
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO file_extents(run, after_step, logical,"
			       " physical, length, flags) VALUES(?,?,?,?,?,?)", -1, &s,
			       NULL) != SQLITE_OK) {
		fprintf(stderr, "fsprism: database: cannot store the file's extents: %s\n",
			sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		sqlite3_bind_int64(s, 1, run);
		sqlite3_bind_int(s, 2, after_step);
		sqlite3_bind_int64(s, 3, (int64_t)e[i].logical);
		sqlite3_bind_int64(s, 4, (int64_t)e[i].physical);
		sqlite3_bind_int64(s, 5, (int64_t)e[i].length);
		sqlite3_bind_int64(s, 6, e[i].flags);
		if (sqlite3_step(s) != SQLITE_DONE) {
			fprintf(stderr, "fsprism: database: cannot store the file's extents: %s\n",
				sqlite3_errmsg(db));
			rc = -1;
		}
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	return rc;
}

/*
 * fuse_reqs.c - writing the fuse_reqs table (fuse_reqs.h).
 */
#include "src/db/fuse_reqs.h"
#include "src/db/handle.h"

static void bind_fuse_req(sqlite3_stmt *s, const void *row, const void *arg)
{
	const struct fsp_fuse_req *r = row;
	(void)arg;
	sqlite3_bind_int(s, 2, r->step);
	fsp_db_bind_devno(s, 3, r->conn);
	sqlite3_bind_int64(s, 4, (int64_t)r->unique);
	sqlite3_bind_int64(s, 5, r->opcode);
	sqlite3_bind_int64(s, 6, r->len);
	sqlite3_bind_int64(s, 7, (int64_t)r->send_ns);
	sqlite3_bind_int64(s, 8, (int64_t)r->end_ns);
	sqlite3_bind_int(s, 9, r->error);
}

static const struct fsp_db_insert fuse_reqs_insert = {
	.sql = "INSERT INTO fuse_reqs(run, step, conn, fuse_unique, opcode, len, send_ns,"
	       " end_ns, error) VALUES(?,?,?,?,?,?,?,?,?)",
	.elem = sizeof(struct fsp_fuse_req),
	.bind = bind_fuse_req,
	.prepare_fail = "cannot prepare the FUSE request rows",
	.insert_fail = "cannot insert FUSE request rows",
};

int fsp_fuse_reqs_insert(struct fsp_store *st, int64_t run,
			 const struct fsp_fuse_req *rows, size_t n)
{
	return fsp_db_insert_rows(st, &fuse_reqs_insert, run, rows, n, NULL);
}

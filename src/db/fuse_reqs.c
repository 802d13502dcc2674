/*
 * fuse_reqs.c - writing the fuse_reqs table (fuse_reqs.h).
 */
#include <stdio.h>
#include "src/db/fuse_reqs.h"
#include "src/db/handle.h"

int fsp_fuse_reqs_insert(struct fsp_store *st, int64_t run,
			 const struct fsp_fuse_req *rows, size_t n)
{
	sqlite3 *db = st->db;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db,
		"INSERT INTO fuse_reqs(run, step, conn, fuse_unique, opcode, len, send_ns,"
		" end_ns, error) VALUES(?,?,?,?,?,?,?,?,?)", -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "fsprism: database: cannot prepare the FUSE request rows: %s\n",
			sqlite3_errmsg(db));
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct fsp_fuse_req *r = &rows[i];
		char conn[24];
		snprintf(conn, sizeof(conn), "%u:%u", r->conn >> 20, r->conn & 0xfffff);
		sqlite3_bind_int64(s, 1, run);
		sqlite3_bind_int(s, 2, r->step);
		sqlite3_bind_text(s, 3, conn, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 4, (int64_t)r->unique);
		sqlite3_bind_int64(s, 5, r->opcode);
		sqlite3_bind_int64(s, 6, r->len);
		sqlite3_bind_int64(s, 7, (int64_t)r->send_ns);
		sqlite3_bind_int64(s, 8, (int64_t)r->end_ns);
		sqlite3_bind_int(s, 9, r->error);
		if (sqlite3_step(s) != SQLITE_DONE) {
			fprintf(stderr, "fsprism: database: cannot insert FUSE request rows: %s\n",
				sqlite3_errmsg(db));
			rc = -1;
		}
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return rc;
}

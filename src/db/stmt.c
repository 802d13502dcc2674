/*
 * stmt.c - the statement patterns the files of src/db share (handle.h):
 * the schema probes every reader of an older database needs, the one-row
 * queries on a run, the readers that fill a growing array and say why
 * they failed, and a table's batched insert.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/err.h"
#include "src/base/grow.h"
#include "src/db/handle.h"

int fsp_db_has_table(sqlite3 *db, const char *table)
{
	sqlite3_stmt *s;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master"
			       " WHERE type = 'table' AND name = ?", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		rc = sqlite3_column_int(s, 0) > 0;
	sqlite3_finalize(s);
	return rc;
}

int fsp_db_has_column(sqlite3 *db, const char *table, const char *column)
{
	char sql[128];
	sqlite3_stmt *s;
	int found = 0, rc;
	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	while (!found && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 1);
		found = name && !strcmp(name, column);
	}
	sqlite3_finalize(s);
	return found ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

const char *fsp_db_column_or_0(sqlite3 *db, const char *table, const char *column)
{
	return fsp_db_has_column(db, table, column) > 0 ? column : "0";
}

sqlite3_stmt *fsp_db_prepare_run(struct fsp_store *st, const char *sql, int64_t run)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(s, 1, run);
	return s;
}

int64_t fsp_db_run_int(struct fsp_store *st, const char *sql, int64_t run, int64_t dflt)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, sql, run);
	if (!s)
		return -1;
	int rc = sqlite3_step(s);
	int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) :
		rc == SQLITE_DONE ? dflt : -1;
	sqlite3_finalize(s);
	return v;
}

int fsp_db_run_has_rows(struct fsp_store *st, const char *table, int64_t run)
{
	int t = fsp_db_has_table(st->db, table);
	if (t <= 0)
		return t;
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT EXISTS(SELECT 1 FROM %s WHERE run = ?)", table);
	return (int)fsp_db_run_int(st, sql, run, -1);
}

int fsp_db_prepare_read(struct fsp_store *st, const char *sql, sqlite3_stmt **s,
			const char *what, char *err, size_t errlen)
{
	if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) == SQLITE_OK)
		return 0;
	fsp_set_err(err, errlen, "cannot read %s: %s", what, sqlite3_errmsg(st->db));
	return -1;
}

int fsp_db_each_row(struct fsp_store *st, sqlite3_stmt *s, int (*row)(void *arg, sqlite3_stmt *s),
		    void *arg, const char *what, char *err, size_t errlen)
{
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (row(arg, s)) {
			fsp_set_err(err, errlen, "out of memory reading %s", what);
			sqlite3_finalize(s);
			return -1;
		}
	if (rc != SQLITE_DONE)
		fsp_set_err(err, errlen, "cannot read %s: %s", what, sqlite3_errmsg(st->db));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* fsp_db_load_rows' array, as fsp_db_each_row's argument */
struct growing {
	void **v;
	size_t *n, *cap, elem;
	void (*fill)(void *row, sqlite3_stmt *s);
};

static int append_row(void *arg, sqlite3_stmt *s)
{
	struct growing *g = arg;
	if (fsp_grow((void **)g->v, g->cap, *g->n + 1, g->elem, 1024))
		return -1;
	g->fill((char *)*g->v + *g->n * g->elem, s);
	(*g->n)++;
	return 0;
}

int fsp_db_load_rows(struct fsp_store *st, sqlite3_stmt *s, void **v, size_t *n, size_t *cap,
		     size_t elem, void (*fill)(void *row, sqlite3_stmt *s), const char *what,
		     char *err, size_t errlen)
{
	struct growing g = { v, n, cap, elem, fill };
	if (fsp_db_each_row(st, s, append_row, &g, what, err, errlen) == 0)
		return 0;
	free(*v);
	*v = NULL;
	*n = *cap = 0;
	return -1;
}

int fsp_db_insert_rows(struct fsp_store *st, const struct fsp_db_insert *ins, int64_t run,
		       const void *rows, size_t n, const void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, ins->sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "fsprism: database: %s: %s\n", ins->prepare_fail,
			sqlite3_errmsg(st->db));
		return -1;
	}
	sqlite3_bind_int64(s, 1, run); /* kept by every reset */
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		ins->bind(s, (const char *)rows + i * ins->elem, arg);
		if (sqlite3_step(s) != SQLITE_DONE) {
			fprintf(stderr, "fsprism: database: %s: %s\n", ins->insert_fail,
				sqlite3_errmsg(st->db));
			rc = -1;
		}
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return rc;
}

void fsp_db_bind_devno(sqlite3_stmt *s, int i, uint32_t dev)
{
	char text[24];
	snprintf(text, sizeof(text), "%u:%u", dev >> 20, dev & 0xfffff);
	sqlite3_bind_text(s, i, text, -1, SQLITE_TRANSIENT);
}

/*
 * handle.h - the inside of the results database, for the files of src/db
 * only: the store handle (store.c opens it and writes, results.c reads),
 * and the statement patterns its files share, written once (stmt.c).
 * Everything outside src/db sees struct fsp_store as an opaque type and
 * never a sqlite3 *.
 */
#ifndef FSP_DB_HANDLE_H
#define FSP_DB_HANDLE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

struct fsp_store {
	sqlite3 *db;
	char *path;
	/* prepared once per handle (SQLITE_PREPARE_PERSISTENT), finalized at close */
	sqlite3_stmt *ins_many; /* INSERT_ROWS op rows */
	sqlite3_stmt *ins_one;
	sqlite3_stmt *hist_ins;
	sqlite3_stmt *hist_del_bins;
	sqlite3_stmt *bin_ins;
	sqlite3_stmt *step_ins;
	sqlite3_stmt *timeline_ins;
	sqlite3_stmt *segment_ins;
};

/* Column i of the row s stands on, as the unsigned count or time it stores
 * (a NULL reads 0): how every reader in src/db reads one. */
static inline uint64_t fsp_db_col_u64(sqlite3_stmt *s, int i)
{
	return (uint64_t)sqlite3_column_int64(s, i);
}

/* ---- stmt.c ---------------------------------------------------------------- */

/* What a database made by an older fsprism may lack: is there a table
 * `table`, has it a column `column` (0 also without the table)? 1, 0, or
 * -1 when the schema cannot be read. Asked of the connection: store.c asks
 * while opening, before there is a handle. */
int fsp_db_has_table(sqlite3 *db, const char *table);
int fsp_db_has_column(sqlite3 *db, const char *table, const char *column);
/* A column an older database may lack, to SELECT: its name, or "0" without it. */
const char *fsp_db_column_or_0(sqlite3 *db, const char *table, const char *column);

/* A statement on st with run bound to parameter 1; NULL if it does not prepare. */
sqlite3_stmt *fsp_db_prepare_run(struct fsp_store *st, const char *sql, int64_t run);
/* The one integer of a one-row query on run: dflt if there is no row, -1 on error. */
int64_t fsp_db_run_int(struct fsp_store *st, const char *sql, int64_t run, int64_t dflt);
/* Has table rows of run? 1, 0 (none, or no such table), -1 on error. */
int fsp_db_run_has_rows(struct fsp_store *st, const char *table, int64_t run);

/*
 * The readers that answer with a message, "cannot read WHAT: SQLite's
 * reason" or "out of memory reading WHAT":
 *   fsp_db_prepare_read  sql prepared into *s, or -1 with err set;
 *   fsp_db_each_row      s stepped to its end, row(arg, s) on each row (a
 *                        non-zero return: it had no memory), s finalized;
 *   fsp_db_load_rows     the rows of s appended to a growing array (*v, *n
 *                        rows, room for *cap) of elem-byte rows, each set by
 *                        fill(row, s); on a failure the array is freed (*v
 *                        NULL, *n and *cap 0).
 * 0, or -1 with err set.
 */
int fsp_db_prepare_read(struct fsp_store *st, const char *sql, sqlite3_stmt **s,
			const char *what, char *err, size_t errlen);
int fsp_db_each_row(struct fsp_store *st, sqlite3_stmt *s, int (*row)(void *arg, sqlite3_stmt *s),
		    void *arg, const char *what, char *err, size_t errlen);
int fsp_db_load_rows(struct fsp_store *st, sqlite3_stmt *s, void **v, size_t *n, size_t *cap,
		     size_t elem, void (*fill)(void *row, sqlite3_stmt *s), const char *what,
		     char *err, size_t errlen);

/*
 * A table's batched insert: one statement, parameter 1 the run, the rest of
 * each row bound by bind(s, row, arg); on a failure, "fsprism: database:
 * PREPARE_FAIL: ..." or "...: INSERT_FAIL: ..." on stderr.
 */
struct fsp_db_insert {
	const char *sql;
	size_t elem; /* bytes from one row to the next */
	void (*bind)(sqlite3_stmt *s, const void *row, const void *arg);
	const char *prepare_fail, *insert_fail;
};
/* Insert the n rows of run (the caller holds the transaction). 0, or -1. */
int fsp_db_insert_rows(struct fsp_store *st, const struct fsp_db_insert *ins, int64_t run,
		       const void *rows, size_t n, const void *arg);
/* A kernel dev_t (major << 20 | minor) as the tables store it: "M:m". */
void fsp_db_bind_devno(sqlite3_stmt *s, int i, uint32_t dev);

#endif

/*
 * testdb.h - a unit test's own look at a database the store wrote: a
 * connection of its own on the file (so that what it sees is what reached
 * the file, not the store's connection state) and one-number queries.
 * Include after <cmocka.h> and <sqlite3.h>.
 */
#ifndef FSP_TESTS_TESTDB_H
#define FSP_TESTS_TESTDB_H

/* A read-write connection on path that waits for the store's writers. */
static inline sqlite3 *test_db_open(const char *path)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	return db;
}

/* The first column of the first row of sql; -12345 if there is no row. */
static inline int64_t test_db_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -12345;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

#endif

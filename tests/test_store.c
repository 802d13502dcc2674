/*
 * test_store.c - the SQLite store on real database files in a temp dir:
 * creation, reopening, refusals (schema version, a real version-1
 * database, non-database, unwritable locations), runs, op-row, histogram
 * and emulated-file round trips; a committed version-2 database
 * (tests/fixtures/schema-v2.sql) read as it is and upgraded by a writer.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <cmocka.h>
#include <sqlite3.h>
#include "src/db/schema.h"
#include "src/cli/stats.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/db/block_ios.h"
#include "tests/testdb.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static char tmpdir[64];

static int setup(void **state)
{
	return test_dir_make(tmpdir, sizeof(tmpdir), "/tmp", "store");
}

static int teardown(void **state)
{
	chmod(tmpdir, 0700);
	return test_dir_remove(tmpdir);
}

static void path_in(char *buf, size_t len, const char *name)
{
	test_dir_path(buf, len, tmpdir, name);
}

UNIT_TEST_SETUP(test_create_reopen, setup, teardown)
{
	char path[128], err[512] = "";
	path_in(path, sizeof(path), "new.db");
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	sqlite3 *db = test_db_open(path);
	assert_int_equal(test_db_int(db, "PRAGMA user_version"), FSP_SCHEMA_VERSION);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM op_names"), FSP_OP__COUNT);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM layer_names"), FSP_LAYER__COUNT);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM sqlite_master WHERE name IN"
			       "('runs','run_attrs','ops','hist','hist_bins','steps','timeline','segments',"
			       "'emu_files','emu_extents')"), 10);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM pragma_table_info('ops')"
			       " WHERE name IN ('emu_ns','cause_ns')"), 2);
	assert_int_equal(test_db_int(db, "SELECT layer FROM layer_names WHERE name='emu'"), FSP_LAYER_EMU);
	assert_int_equal(test_db_int(db, "SELECT op FROM op_names WHERE name='dev_flush'"), FSP_OP_DEV_FLUSH);
	assert_int_equal(test_db_int(db, "SELECT op FROM op_names WHERE name='copy_file_range'"),
			 FSP_OP_COPY_FILE_RANGE);

	struct fsp_run_info info = { .kind = "mount", .options = "mount -f a b",
				     .backing_path = tmpdir, .record_mode = "full" };
	int64_t run = fsp_store_begin_run(st, &info);
	assert_true(run > 0);
	assert_int_equal(fsp_store_set_attr(st, run, "threads", "4"), 0);
	assert_int_equal(fsp_store_end_run(st, run, 10, 3), 0);
	assert_int_equal(fsp_store_end_run(st, run + 100, 10, 3), -1); /* no such run */
	fsp_store_close(st);
	sqlite3_close(db);

	/* reopen: same schema, the run is still there, nothing re-created */
	st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	db = test_db_open(path);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM runs"), 1);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT kind, host, kernel, version, backing_device, backing_fstype,"
		" started_at, recorded, dropped, ended_ns >= started_ns, journal_mode"
		" FROM runs, pragma_journal_mode WHERE id=?", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, run);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(s, 0), "mount");
	assert_non_null(sqlite3_column_text(s, 1));
	assert_non_null(sqlite3_column_text(s, 2));
	assert_string_equal(sqlite3_column_text(s, 3), FSP_VERSION);
	/* the mount holding /tmp is found in /proc/self/mountinfo */
	assert_non_null(sqlite3_column_text(s, 4));
	assert_non_null(sqlite3_column_text(s, 5));
	const char *started = (const char *)sqlite3_column_text(s, 6);
	assert_int_equal(strlen(started), strlen("2026-11-30T08:41:07.123Z"));
	assert_int_equal(started[10], 'T');
	assert_int_equal(started[23], 'Z');
	assert_int_equal(sqlite3_column_int64(s, 7), 10);
	assert_int_equal(sqlite3_column_int64(s, 8), 3);
	assert_int_equal(sqlite3_column_int64(s, 9), 1);
	assert_string_equal(sqlite3_column_text(s, 10), "wal");
	sqlite3_finalize(s);
	assert_int_equal(test_db_int(db, "SELECT value FROM run_attrs WHERE key='threads'"), 4);
	fsp_store_close(st);
	sqlite3_close(db);

	/* the reader open sees the same database and never creates one */
	struct fsp_store *rd = fsp_store_open_readonly(path, err, sizeof(err));
	assert_non_null(rd);
	assert_int_equal(fsp_store_latest_run(rd), run);
	fsp_store_close(rd);
	char missing[128];
	path_in(missing, sizeof(missing), "missing.db");
	assert_null(fsp_store_open_readonly(missing, err, sizeof(err)));
	assert_non_null(strstr(err, "no database at"));
	assert_non_null(strstr(err, missing));
	assert_int_equal(access(missing, F_OK), -1);
}

/* A raw block device as the backing path is its own device, no fstype. */
UNIT_TEST_SETUP(test_run_on_block_device, setup, teardown)
{
	char path[128], err[512], dev[300] = "";
	DIR *d = opendir("/dev");
	struct dirent *e;
	struct stat sb;
	while (d && (e = readdir(d))) {
		snprintf(dev, sizeof(dev), "/dev/%s", e->d_name);
		if (stat(dev, &sb) == 0 && S_ISBLK(sb.st_mode) && !strchr(e->d_name, '.'))
			break;
		dev[0] = 0;
	}
	if (d)
		closedir(d);
	if (!dev[0])
		skip(); /* no block device visible here */
	path_in(path, sizeof(path), "blk.db");
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	struct fsp_run_info info = { .kind = "run", .backing_path = dev };
	int64_t run = fsp_store_begin_run(st, &info);
	sqlite3 *db = test_db_open(path);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT backing_device, backing_fstype IS NULL FROM runs WHERE id=?",
		-1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, run);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	char real[PATH_MAX];
	assert_non_null(realpath(dev, real));
	assert_string_equal(sqlite3_column_text(s, 0), real);
	assert_int_equal(sqlite3_column_int(s, 1), 1);
	sqlite3_finalize(s);
	sqlite3_close(db);
	fsp_store_close(st);
}

static void make_versioned_db(const char *path, int version)
{
	sqlite3 *db;
	char sql[128];
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "CREATE TABLE runs(id); PRAGMA user_version=%d", version);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

UNIT_TEST_SETUP(test_version_mismatch, setup, teardown)
{
	char path[128], err[512] = "";
	path_in(path, sizeof(path), "v99.db");
	make_versioned_db(path, 99);
	assert_null(fsp_store_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "99"));
	char knows[64];
	snprintf(knows, sizeof(knows), "this fsprism knows version %d", FSP_SCHEMA_VERSION);
	assert_non_null(strstr(err, knows));
	assert_null(strchr(err, '\n'));
	/* refused, not migrated or touched */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(test_db_int(db, "PRAGMA user_version"), 99);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM sqlite_master"), 1);
	sqlite3_close(db);
	err[0] = 0;
	assert_null(fsp_store_open_readonly(path, err, sizeof(err)));
	assert_non_null(strstr(err, "99"));

	/* tables but no version: someone else's database */
	path_in(path, sizeof(path), "other.db");
	make_versioned_db(path, 0);
	assert_null(fsp_store_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, "not an fsprism database"));
	assert_non_null(strstr(err, path));
}

/*
 * A database written by the previous release (schema version 1: ops
 * without emu_ns / cause_ns, no emu tables) is refused by writers and
 * readers alike, with both versions named, and left exactly as it was.
 */
UNIT_TEST_SETUP(test_v1_refused, setup, teardown)
{
	static const char v1[] =
		"CREATE TABLE runs(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, host TEXT,"
		" kernel TEXT, version TEXT, options TEXT, backing_path TEXT,"
		" backing_device TEXT, backing_fstype TEXT, record_mode TEXT,"
		" started_at TEXT, ended_at TEXT, started_ns INTEGER, ended_ns INTEGER,"
		" recorded INTEGER DEFAULT 0, dropped INTEGER DEFAULT 0, parent INTEGER,"
		" label TEXT);"
		"CREATE TABLE ops(run INTEGER NOT NULL, step INTEGER NOT NULL,"
		" op INTEGER NOT NULL, node INTEGER, pid INTEGER, offset INTEGER,"
		" length INTEGER, bytes INTEGER, result INTEGER, start_ns INTEGER,"
		" total_ns INTEGER, backing_ns INTEGER, layer_ns INTEGER);"
		"INSERT INTO runs(id, kind) VALUES(1, 'mount');"
		"INSERT INTO ops VALUES(1, 0, 13, 1, 2, 0, 4096, 4096, 0, 5, 100, 60, 40);"
		"PRAGMA user_version=1;";
	char path[128], err[512] = "", expect[256];
	path_in(path, sizeof(path), "v1.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	snprintf(expect, sizeof(expect),
		 "database %s has schema version 1, this fsprism knows version %d",
		 path, FSP_SCHEMA_VERSION);
	assert_true(FSP_SCHEMA_VERSION >= 2);
	assert_null(fsp_store_open(path, err, sizeof(err)));
	assert_string_equal(err, expect);
	err[0] = 0;
	assert_null(fsp_store_open_readonly(path, err, sizeof(err)));
	assert_string_equal(err, expect);

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(test_db_int(db, "PRAGMA user_version"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM sqlite_master"), 2);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM pragma_table_info('ops')"), 13);
	assert_int_equal(test_db_int(db, "SELECT layer_ns FROM ops"), 40);
	sqlite3_close(db);
}

/*
 * A database written with schema version 2 (before the block-layer trace):
 * readers open it as it is (stats prints its run, no block rows, version
 * unchanged); a writer adds block_ios and sets version 3, keeping every row.
 */
UNIT_TEST_SETUP(test_v2_read_and_upgraded, setup, teardown)
{
	const char *src = getenv("TESTS_SRCDIR");
	char fixture[PATH_MAX], path[128], err[512] = "";
	assert_non_null(src); /* set by make check */
	snprintf(fixture, sizeof(fixture), "%s/fixtures/schema-v2.sql", src);
	FILE *f = fopen(fixture, "r");
	assert_non_null(f);
	static char sql[1 << 16];
	size_t len = fread(sql, 1, sizeof(sql) - 1, f);
	fclose(f);
	assert_true(len > 0 && len < sizeof(sql) - 1);
	sql[len] = 0;
	path_in(path, sizeof(path), "v2.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(test_db_int(db, "PRAGMA user_version"), 2);
	sqlite3_close(db);

	struct fsp_store *ro = fsp_store_open_readonly(path, err, sizeof(err));
	if (!ro)
		fail_msg("reader refused the version-2 database: %s", err);
	assert_int_equal(fsp_block_ios_any(ro, 1), 0);
	FILE *out = fopen("/dev/null", "w");
	assert_int_equal(fsp_stats_print(ro, 1, "table", 0, out), 0);
	assert_int_equal(fsp_stats_print(ro, 1, "json", 0, out), 0);
	fclose(out);
	fsp_store_close(ro);
	/* the reader changed nothing: a connection of the test's own says so */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(test_db_int(db, "PRAGMA user_version"), 2);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM sqlite_master WHERE name='block_ios'"), 0);
	sqlite3_close(db);

	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	if (!st)
		fail_msg("writer refused the version-2 database: %s", err);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	assert_int_equal(test_db_int(db, "PRAGMA user_version"), FSP_SCHEMA_VERSION);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM sqlite_master WHERE name='block_ios'"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM runs"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM ops WHERE run=1"), 4);
	/* block rows go in and come back */
	struct fsp_block_io io[2] = {
		{ .queue_ns = 100, .issue_ns = 150, .complete_ns = 400, .sector = 8,
		  .dev = 7u << 20 | 2, .bytes = 4096, .tgid = 42, .op = FSP_BLOCK_READ, .step = 0 },
		{ .issue_ns = 500, .complete_ns = 900, .dev = 7u << 20 | 2, .bytes = 4096,
		  .op = FSP_BLOCK_READ, .step = 0 },
	};
	assert_int_equal(fsp_store_tx_begin(st), 0);
	assert_int_equal(fsp_block_ios_insert(st, 1, io, 2), 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM block_ios WHERE dev='7:2'"
			       " AND queue_ns IS NULL AND insert_ns IS NULL AND tgid IS NULL"), 1);
	sqlite3_close(db);
	assert_int_equal(fsp_block_ios_any(st, 1), 1);
	struct fsp_block_times t;
	assert_int_equal(fsp_block_ios_times(st, 1, 0, FSP_BLOCK_READ, &t, err, sizeof(err)), 0);
	assert_int_equal(t.nq, 1); /* the row without a queue time has none */
	assert_int_equal(t.queue_ns[0], 50);
	assert_int_equal(t.nd, 2);
	assert_int_equal(t.device_ns[0] + t.device_ns[1], 250 + 400);
	assert_int_equal(t.bytes, 8192);
	fsp_block_times_free(&t);
	fsp_store_close(st);
}


/* A version-3 database from before the FUSE transport (no fuse_reqs, no
 * ops.fuse_unique / recv_ns): read as it is, the join finding nothing; a
 * writer adds the table and the columns, its older rows reading NULL, and
 * new rows keep both. */
UNIT_TEST_SETUP(test_v3_gains_fuse_columns, setup, teardown)
{
	(void)state;
	char path[128], err[512] = "";
	path_in(path, sizeof(path), "v3old.db");
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	struct fsp_run_info info = { .kind = "mount", .record_mode = "full" };
	int64_t run = fsp_store_begin_run(st, &info);
	struct fsp_rec r = { .start_ns = 10, .total_ns = 5, .op = FSP_OP_READ };
	assert_int_equal(fsp_store_insert_recs(st, run, &r, 1), 0);
	fsp_store_close(st);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "ALTER TABLE ops DROP COLUMN recv_ns;"
				      "ALTER TABLE ops DROP COLUMN fuse_unique;"
				      "DROP TABLE fuse_reqs;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	struct fsp_store *ro = fsp_store_open_readonly(path, err, sizeof(err));
	assert_non_null(ro);
	struct fsp_fuse_transport x;
	assert_int_equal(fsp_store_fuse_transport(ro, run, &x), 0);
	FILE *out = fopen("/dev/null", "w");
	assert_int_equal(fsp_stats_print(ro, run, "table", 0, out), 0);
	fclose(out);
	fsp_store_close(ro);

	st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	r.fuse_unique = 42;
	r.recv_ns = 7;
	assert_int_equal(fsp_store_insert_recs(st, run, &r, 1), 0);
	fsp_store_close(st);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM sqlite_master WHERE name='fuse_reqs'"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM ops WHERE fuse_unique IS NULL"
			       " AND recv_ns IS NULL"), 1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM ops WHERE fuse_unique=42 AND recv_ns=7"), 1);
	sqlite3_close(db);
}
UNIT_TEST_SETUP(test_not_a_database, setup, teardown)
{
	char path[128], err[512] = "", buf[256];
	static const char text[] = "precious user data, not a database\n"
		"padding padding padding padding padding padding padding padding\n";
	path_in(path, sizeof(path), "notes.txt");
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_null(fsp_store_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "not a SQLite database"));
	/* the file is left exactly as it was */
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_memory_equal(buf, text, sizeof(text) - 1);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 20 * (sizeof(text) - 1));

	/* a directory is not a database either */
	assert_null(fsp_store_open(tmpdir, err, sizeof(err)));
	assert_non_null(strstr(err, tmpdir));
}

/*
 * An unwritable directory must fail at open, naming the path. Root ignores
 * permission bits, so as root the check runs in a child with its own mount
 * namespace and a read-only tmpfs (gone when the child exits).
 */
static int unwritable_child(const char *dir, const char *existing_dir)
{
	char path[256], err[512] = "";
	snprintf(path, sizeof(path), "%s/x.db", dir);
	if (fsp_store_open(path, err, sizeof(err)))
		return 10;
	if (!strstr(err, "cannot create database") || !strstr(err, path))
		return 11;
	if (access(path, F_OK) == 0)
		return 12;
	if (existing_dir) {
		/* an existing database on a read-only file system: refused at
		 * open, not at the first insert */
		snprintf(path, sizeof(path), "%s/old.db", existing_dir);
		if (fsp_store_open(path, err, sizeof(err)))
			return 13;
		if (!strstr(err, path))
			return 14;
	}
	return 0;
}

UNIT_TEST_SETUP(test_unwritable, setup, teardown)
{
	char dir[128], err[512] = "", path[256];
	path_in(dir, sizeof(dir), "ro");
	assert_int_equal(mkdir(dir, 0755), 0);

	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/missing/x.db", tmpdir);
	assert_null(fsp_store_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, "cannot create database"));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "No such file or directory"));

	if (geteuid() != 0) {
		assert_int_equal(chmod(dir, 0555), 0);
		assert_int_equal(unwritable_child(dir, NULL), 0);
		chmod(dir, 0755);
		return;
	}
	/* an existing database, to be made read-only below */
	char olddir[128];
	path_in(olddir, sizeof(olddir), "olddir");
	assert_int_equal(mkdir(olddir, 0755), 0);
	snprintf(path, sizeof(path), "%s/old.db", olddir);
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	fsp_store_close(st);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("tmpfs", dir, "tmpfs", MS_RDONLY, "size=1m") != 0 ||
		    mount(olddir, olddir, NULL, MS_BIND, NULL) != 0 ||
		    mount(NULL, olddir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0)
			_exit(99);
		_exit(unwritable_child(dir, olddir));
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 99)
		skip(); /* no mount namespaces here (container without CAP_SYS_ADMIN) */
	assert_int_equal(WEXITSTATUS(status), 0);
}

UNIT_TEST_SETUP(test_recs_roundtrip, setup, teardown)
{
	char path[128], err[512];
	path_in(path, sizeof(path), "recs.db");
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	struct fsp_run_info info = { .kind = "run", .backing_path = "/nonexistent/x" };
	int64_t run = fsp_store_begin_run(st, &info);
	assert_true(run > 0);

	enum { N = 64 * 20 + 37 }; /* full multi-row statements plus a remainder */
	struct fsp_rec *r = calloc(N, sizeof(*r));
	for (int i = 0; i < N; i++) {
		r[i].start_ns = 1000000000ull + (uint64_t)i * 7;
		r[i].total_ns = 5000 + (uint64_t)i;
		/* every 10th: backing > total (clock skew), layer must clamp to 0 */
		r[i].backing_ns = i % 10 == 0 ? r[i].total_ns + 5 : 3000 + (uint64_t)i / 2;
		/* emulation share: none, some, or enough to make backing + emu > total */
		r[i].emu_ns = i % 3 == 0 ? 0 : i % 3 == 1 ? 700 + (uint64_t)i % 50 : 2500;
		r[i].node = 0x7f0000000000ull + (uint64_t)i;
		r[i].offset = (uint64_t)i << 32;
		r[i].length = 4096 + (uint32_t)i;
		r[i].pid = 100 + (uint32_t)i;
		r[i].result = i % 13 == 0 ? 5 : 0;
		r[i].op = (uint16_t)(i % FSP_OP__COUNT);
		/* device records name the op that caused them (0: background) */
		r[i].cause_ns = r[i].op >= FSP_OP_DEV_READ && i % 4 ? r[i].start_ns - 3 : 0;
		r[i].step = (uint16_t)(i % 3);
		r[i].bytes = (uint64_t)i * 3;
	}
	assert_int_equal(fsp_store_tx_begin(st), 0);
	assert_int_equal(fsp_store_insert_recs(st, run, r, 5), 0);     /* remainder only */
	assert_int_equal(fsp_store_insert_recs(st, run, r + 5, N - 5), 0);
	assert_int_equal(fsp_store_insert_recs(st, run, r, 0), 0);     /* nothing */
	assert_int_equal(fsp_store_tx_commit(st), 0);
	assert_int_equal(fsp_store_build_indexes(st), 0);

	sqlite3 *db = test_db_open(path);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT run, step, op, node, pid, offset, length, bytes, result,"
		" start_ns, total_ns, backing_ns, layer_ns, emu_ns, cause_ns"
		" FROM ops ORDER BY rowid",
		-1, &s, NULL), SQLITE_OK);
	int i = 0, clamped = 0, causes = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		assert_true(i < N);
		const struct fsp_rec *e = &r[i];
		/* layer = total - backing - emu, clamped at 0 (computed here in
		 * signed arithmetic, independently of fsp_rec_layer_ns) */
		int64_t d = (int64_t)e->total_ns - (int64_t)e->backing_ns - (int64_t)e->emu_ns;
		uint64_t layer = d > 0 ? (uint64_t)d : 0;
		clamped += d < 0;
		causes += e->cause_ns > 0;
		assert_int_equal(sqlite3_column_int64(s, 0), run);
		assert_int_equal(sqlite3_column_int64(s, 1), e->step);
		assert_int_equal(sqlite3_column_int64(s, 2), e->op);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 3), e->node);
		assert_int_equal(sqlite3_column_int64(s, 4), e->pid);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 5), e->offset);
		assert_int_equal(sqlite3_column_int64(s, 6), e->length);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 7), e->bytes);
		assert_int_equal(sqlite3_column_int64(s, 8), e->result);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 9), e->start_ns);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 10), e->total_ns);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 11), e->backing_ns);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 12), layer);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 13), e->emu_ns);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 14), e->cause_ns);
		i++;
	}
	sqlite3_finalize(s);
	assert_int_equal(i, N);
	assert_true(clamped > N / 4); /* the clamp was exercised, by emu too */
	assert_true(causes > 0); /* device rows with a cause were exercised */
	free(r);
	sqlite3_close(db);
	fsp_store_close(st);
}

UNIT_TEST_SETUP(test_hist_roundtrip, setup, teardown)
{
	char path[128], err[512];
	path_in(path, sizeof(path), "hist.db");
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	struct fsp_run_info info = { .kind = "mount" };
	int64_t run = fsp_store_begin_run(st, &info);

	struct fsp_hist *h = malloc(sizeof(*h)), *back = malloc(sizeof(*back));
	fsp_hist_init(h);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		fsp_hist_add(h, x % (1ull << (i % 49))); /* every octave, 0..2^48 */
	}
	fsp_hist_add(h, 0);
	fsp_hist_add(h, (1ull << 48) - 1);
	fsp_hist_add(h, 1ull << 55); /* clamps into the last bucket */
	assert_int_equal(fsp_store_tx_begin(st), 0);
	assert_int_equal(fsp_store_save_hist(st, run, 3, FSP_OP_READ, FSP_LAYER_BACKING,
					     h, 123456789, 42, 0), 0);
	/* saving again replaces, never duplicates */
	assert_int_equal(fsp_store_save_hist(st, run, 3, FSP_OP_READ, FSP_LAYER_BACKING,
					     h, 123456789, 42, 0), 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);
	fsp_store_close(st);

	st = fsp_store_open(path, err, sizeof(err));
	uint64_t bytes = 0, errors = 0;
	assert_int_equal(fsp_store_load_hist(st, run, 3, FSP_OP_READ, FSP_LAYER_BACKING,
					     back, &bytes, &errors), 1);
	assert_memory_equal(h, back, sizeof(*h));
	assert_int_equal(bytes, 123456789);
	assert_int_equal(errors, 42);
	unsigned nonempty = 0;
	for (unsigned b = 0; b < FSP_HIST_NBUCKETS; b++)
		nonempty += h->buckets[b] != 0;
	char sql[160];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM hist_bins WHERE run=%lld",
		 (long long)run);
	sqlite3 *db = test_db_open(path);
	assert_int_equal(test_db_int(db, sql), nonempty);
	/* bins carry their bucket bounds */
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM hist_bins WHERE hi_ns < lo_ns"), 0);
	sqlite3_close(db);
	/* the helper compare uses reads the same quantiles */
	double us = -1;
	assert_int_equal(fsp_stats_quantile_us(st, run, 3, FSP_OP_READ,
					       FSP_LAYER_BACKING, 0.99, &us), 0);
	assert_true(us == (double)fsp_hist_quantile(h, 0.99) / 1e3);
	assert_int_equal(fsp_stats_quantile_us(st, run, 3, FSP_OP_WRITE,
					       FSP_LAYER_BACKING, 0.99, &us), 1);
	assert_int_equal(fsp_store_load_hist(st, run, 3, FSP_OP_READ, FSP_LAYER_LAYER,
					     back, &bytes, &errors), 0);
	assert_int_equal(back->count, 0);
	free(h);
	free(back);
	fsp_store_close(st);
}

/* Sum of a column over emu_extents of (run, obj), e.g. for a checksum. */
static int64_t ext_q(sqlite3 *db, const char *expr, int64_t run, uint64_t obj)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT %s FROM emu_extents WHERE run=%lld AND obj=%llu",
		 expr, (long long)run, (unsigned long long)obj);
	return test_db_int(db, sql);
}

UNIT_TEST_SETUP(test_emu_files_roundtrip, setup, teardown)
{
	char path[128], err[512];
	path_in(path, sizeof(path), "emu.db");
	struct fsp_store *st = fsp_store_open(path, err, sizeof(err));
	assert_non_null(st);
	sqlite3 *db = test_db_open(path);
	struct fsp_run_info info = { .kind = "mount" };
	int64_t run = fsp_store_begin_run(st, &info), other = fsp_store_begin_run(st, &info);
	assert_true(run > 0 && other > run);

	/* a fragmented file, a file with a hole and no path, an empty file */
	enum { NA = 300 };
	struct fsp_emu_extent *a = calloc(NA, sizeof(*a));
	uint64_t sum_len = 0;
	for (int i = 0; i < NA; i++) {
		a[i].logical = (uint64_t)i * 8192;
		a[i].physical = (1ull << 40) + (uint64_t)(NA - i) * 65536; /* > 2^32 */
		a[i].length = 4096 * (1 + (uint64_t)i % 2);
		sum_len += a[i].length;
	}
	const struct fsp_emu_extent b[2] = { { 0, 4096, 4096 }, { 1 << 20, 8192, 12288 } };
	const struct fsp_emu_file files[3] = {
		{ .obj = 0xfedcba9876ull, .path = "/dir/frag's \"file\"", .size = NA * 8192ull,
		  .allocated = sum_len, .nextents = NA, .ext = a },
		{ .obj = 12, .path = NULL, .size = (1 << 20) + 12288, .allocated = 16384,
		  .nextents = 2, .ext = b },
		{ .obj = 13, .path = "/empty", .size = 0, .allocated = 0, .nextents = 0, .ext = NULL },
	};
	assert_int_equal(fsp_store_save_emu_files(st, run, files, 3), 0);
	assert_int_equal(fsp_store_save_emu_files(st, other, &files[1], 1), 0);

	assert_int_equal(test_db_int(db, "SELECT count(*) FROM emu_files"), 4);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT obj, path, size, allocated, extents"
		" FROM emu_files WHERE run=? ORDER BY obj", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, run);
	static const int order[3] = { 1, 2, 0 }; /* by obj */
	for (int k = 0; k < 3; k++) {
		const struct fsp_emu_file *e = &files[order[k]];
		assert_int_equal(sqlite3_step(s), SQLITE_ROW);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 0), e->obj);
		if (e->path)
			assert_string_equal(sqlite3_column_text(s, 1), e->path);
		else
			assert_int_equal(sqlite3_column_type(s, 1), SQLITE_NULL);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 2), e->size);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 3), e->allocated);
		assert_int_equal((uint64_t)sqlite3_column_int64(s, 4), e->nextents);
		/* every extent, exactly */
		assert_int_equal(ext_q(db, "count(*)", run, e->obj), e->nextents);
		uint64_t sl = 0, sp = 0, sn = 0;
		for (size_t x = 0; x < e->nextents; x++) {
			sl += e->ext[x].logical * (x + 1);
			sp += e->ext[x].physical * (x + 1);
			sn += e->ext[x].length * (x + 1);
		}
		/* weighted by rank in logical order: catches swapped or shifted rows */
		assert_int_equal((uint64_t)ext_q(db, "coalesce(sum(logical * (SELECT count(*) FROM"
			" emu_extents x WHERE x.run=emu_extents.run AND x.obj=emu_extents.obj AND"
			" x.logical <= emu_extents.logical)), 0)", run, e->obj), sl);
		assert_int_equal((uint64_t)ext_q(db, "coalesce(sum(physical * (SELECT count(*) FROM"
			" emu_extents x WHERE x.run=emu_extents.run AND x.obj=emu_extents.obj AND"
			" x.logical <= emu_extents.logical)), 0)", run, e->obj), sp);
		assert_int_equal((uint64_t)ext_q(db, "coalesce(sum(length * (SELECT count(*) FROM"
			" emu_extents x WHERE x.run=emu_extents.run AND x.obj=emu_extents.obj AND"
			" x.logical <= emu_extents.logical)), 0)", run, e->obj), sn);
	}
	assert_int_equal(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);

	/* saving again replaces the run's set; the other run keeps its own */
	assert_int_equal(fsp_store_save_emu_files(st, run, &files[2], 1), 0);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM emu_files"), 2);
	assert_int_equal(ext_q(db, "count(*)", run, files[0].obj), 0);
	assert_int_equal(ext_q(db, "count(*)", other, 12), 2);

	/* bad arguments change nothing */
	struct fsp_emu_file bad = files[1];
	bad.ext = NULL;
	assert_int_equal(fsp_store_save_emu_files(st, run, &bad, 1), -1);
	assert_int_equal(fsp_store_save_emu_files(st, run, NULL, 2), -1);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM emu_files"), 2);
	assert_int_equal(fsp_store_save_emu_files(st, run, NULL, 0), 0); /* nothing: cleared */
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM emu_files WHERE run=%lld", (long long)run);
	assert_int_equal(test_db_int(db, sql), 0);
	assert_int_equal(test_db_int(db, "SELECT count(*) FROM emu_files"), 1);

	/* one transaction: a failure part-way (here a trigger refuses one
	 * object's extents) leaves the previous set in place */
	assert_int_equal(fsp_store_save_emu_files(st, run, files, 2), 0);
	assert_int_equal(sqlite3_exec(db, "CREATE TRIGGER boom BEFORE INSERT ON emu_extents"
		" WHEN NEW.obj = 12 BEGIN SELECT RAISE(ABORT, 'boom'); END", NULL, NULL, NULL),
		SQLITE_OK);
	assert_int_equal(fsp_store_save_emu_files(st, run, &files[1], 1), -1);
	assert_int_equal(test_db_int(db, sql), 2);
	assert_int_equal(ext_q(db, "count(*)", run, files[0].obj), NA);
	/* and the store is usable afterwards (no transaction left open) */
	assert_int_equal(fsp_store_set_attr(st, run, "emu.clean", "1"), 0);
	assert_int_equal(fsp_store_tx_begin(st), 0);
	assert_int_equal(fsp_store_tx_commit(st), 0);
	free(a);
	sqlite3_close(db);
	fsp_store_close(st);
}

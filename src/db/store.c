/*
 * store.c - the SQLite results database (see store.h and docs/schema.md).
 *
 * Opening checks, up front, everything that could otherwise fail halfway
 * through a capture: that the path can be created and written (a real
 * write transaction), that the file is a SQLite database, and that its
 * schema version is the one this fsprism knows.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/sys/access.h"
#include "src/db/handle.h"
#include "src/db/schema.h"
#include "src/sys/mountinfo.h"
#include "src/db/store.h"

#define INSERT_ROWS 52  /* rows per multi-row INSERT (19 columns: 988 params) */
#define OPS_COLUMNS 19

/* SQLite's limit on parameters per statement is 32766 since 3.32 and 999
 * before: the multi-row insert must fit the older limit. */
_Static_assert(INSERT_ROWS * OPS_COLUMNS <= 999, "ops insert exceeds 999 parameters");

/* "cannot open database PATH: REASON", and what access it needs when the
 * reason is a permission error. */
static void access_err(char *err, size_t errlen, const char *path, int e,
		       const char *reason)
{
	char why[512];
	if (fsp_access_explain(path, e, 0, why, sizeof why))
		fsp_set_err(err, errlen, "cannot open database %s: %s; %s", path, strerror(e), why);
	else
		fsp_set_err(err, errlen, "cannot open database %s: %s", path, reason);
}

/* The most telling reason SQLite has: the OS errno if there was one. */
static const char *db_reason(sqlite3 *db)
{
	int sys = db ? sqlite3_system_errno(db) : 0;
	if (sys)
		return strerror(sys);
	return db ? sqlite3_errmsg(db) : "out of memory";
}

static void store_fail(struct fsp_store *st, const char *what)
{
	fprintf(stderr, "fsprism: database %s: %s: %s\n", st->path, what,
		sqlite3_errmsg(st->db));
}

/* Run s once and reset it for its next use; a failure is printed as
 * "WHAT: SQLite's reason". 0, or -1. */
static int step_once(struct fsp_store *st, sqlite3_stmt *s, const char *what)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		store_fail(st, what);
		return -1;
	}
	return 0;
}

/* The writers' statements: a row inserted (or deleted) */
static int step_reset(struct fsp_store *st, sqlite3_stmt *s)
{
	return step_once(st, s, "cannot insert");
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* Integer result of a one-row query, or -1 with *rc set on failure. */
static int64_t query_int(sqlite3 *db, const char *sql, int *rc)
{
	sqlite3_stmt *s;
	int64_t v = -1;
	*rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (*rc != SQLITE_OK)
		return -1;
	*rc = sqlite3_step(s);
	if (*rc == SQLITE_ROW) {
		v = sqlite3_column_int64(s, 0);
		*rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return v;
}

/*
 * Version check shared by writers and readers. Returns 0 if the schema is
 * ours, 1 if the database is new (no tables, version 0), 2 if it has an
 * older version that only lacks tables (readable as is; a writer adds them),
 * -1 with err set.
 */
static int check_version(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	int rc;
	int64_t version = query_int(db, "PRAGMA user_version", &rc);
	if (rc != SQLITE_OK) {
		if (rc == SQLITE_NOTADB)
			fsp_set_err(err, errlen, "%s is not a SQLite database", path);
		else
			fsp_set_err(err, errlen, "cannot read database %s: %s", path,
				    sqlite3_errmsg(db));
		return -1;
	}
	int64_t tables = query_int(db, "SELECT count(*) FROM sqlite_master", &rc);
	if (rc != SQLITE_OK) {
		fsp_set_err(err, errlen, "cannot read database %s: %s", path,
			    sqlite3_errmsg(db));
		return -1;
	}
	if (version == 0 && tables == 0)
		return 1;
	if (version == 0) {
		fsp_set_err(err, errlen,
			    "database %s is not an fsprism database (it has tables but no schema version)",
			    path);
		return -1;
	}
	if (version >= FSP_SCHEMA_VERSION_OLDEST && version < FSP_SCHEMA_VERSION)
		return 2;
	if (version != FSP_SCHEMA_VERSION) {
		fsp_set_err(err, errlen,
			    "database %s has schema version %lld, this fsprism knows version %d",
			    path, (long long)version, FSP_SCHEMA_VERSION);
		return -1;
	}
	return 0;
}

static int create_schema(sqlite3 *db)
{
	char sql[160];
	int rc = exec_sql(db, FSP_SCHEMA_SQL);
	for (int op = 0; rc == SQLITE_OK && op < FSP_OP__COUNT; op++) {
		snprintf(sql, sizeof(sql),
			 "INSERT OR REPLACE INTO op_names VALUES(%d,'%s')", op,
			 fsp_op_name(op));
		rc = exec_sql(db, sql);
	}
	for (int l = 0; rc == SQLITE_OK && l < FSP_LAYER__COUNT; l++) {
		snprintf(sql, sizeof(sql),
			 "INSERT OR REPLACE INTO layer_names VALUES(%d,'%s')", l,
			 fsp_layer_name(l));
		rc = exec_sql(db, sql);
	}
	if (rc == SQLITE_OK) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%d",
			 FSP_SCHEMA_VERSION);
		rc = exec_sql(db, sql);
	}
	return rc;
}

/*
 * Tables and columns added to version 3 after it began (file_extents,
 * fuse_reqs; the columns below): an older version-3 database gets them at
 * its first open for writing, and the readers tolerate their absence.
 */
static int migrate_v3(sqlite3 *db)
{
	static const struct { const char *table, *column; } added[] = {
		{ "ops", "inject_ns" }, { "ops", "model_ns" },
		{ "ops", "fuse_unique" }, { "ops", "recv_ns" },
		{ "block_ios", "tid" },
		{ "hist", "expected" },
	};
	int rc = exec_sql(db, FSP_SCHEMA_SQL); /* the new tables: IF NOT EXISTS */
	for (size_t i = 0; rc == SQLITE_OK && i < sizeof(added) / sizeof(added[0]); i++) {
		int has = fsp_db_has_column(db, added[i].table, added[i].column);
		char sql[128];
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s INTEGER",
			 added[i].table, added[i].column);
		if (has < 0)
			rc = SQLITE_ERROR;
		else if (!has)
			rc = exec_sql(db, sql);
	}
	return rc;
}

/*
 * Checked with access(2) before SQLite touches the file: SQLite's own
 * failure on a read-only or missing directory carries a stale errno from
 * probing its journal files, which would name the wrong reason.
 */
int fsp_store_check_writable(const char *path, char *err, size_t errlen)
{
	if (access(path, F_OK) == 0) {
		if (access(path, R_OK | W_OK) < 0) {
			fsp_set_err(err, errlen, "database %s is not writable: %s", path,
				    strerror(errno));
			return -1;
		}
		return 0;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	struct stat st;
	if (stat(dir, &st) < 0) {
		fsp_set_err(err, errlen, "cannot create database %s: directory %s does not "
			    "exist (%s)", path, dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fsp_set_err(err, errlen, "cannot create database %s: %s is not a directory",
			    path, dir);
		return -1;
	}
	if (access(dir, W_OK) < 0) {
		fsp_set_err(err, errlen, "cannot create database %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

struct fsp_store *fsp_store_open(const char *path, char *err, size_t errlen)
{
	struct stat sb;
	int existed = stat(path, &sb) == 0;
	const char *verb = existed ? "open" : "create";
	sqlite3 *db = NULL;

	if (existed && !S_ISREG(sb.st_mode)) {
		fsp_set_err(err, errlen, "cannot open database %s: not a regular file", path);
		return NULL;
	}
	if (fsp_store_check_writable(path, err, errlen))
		return NULL;
	/* NOMUTEX: a store is used by one thread at a time (store.h), so the
	 * per-call connection mutex is pure cost on the writer's insert path */
	int rc = sqlite3_open_v2(path, &db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				 SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		fsp_set_err(err, errlen, "cannot %s database %s: %s", verb, path,
			    db_reason(db));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, 10000);
	int fresh = check_version(db, path, err, errlen);
	if (fresh < 0)
		goto fail_quiet;
	/* WAL: the writer appends while readers (stats) can still read. */
	/* checkpoint every ~40 MB of WAL instead of 4 MB: measured 1.3x more
	 * inserted rows per second for the oplog writer */
	if (exec_sql(db, "PRAGMA journal_mode=WAL") != SQLITE_OK ||
	    exec_sql(db, "PRAGMA synchronous=NORMAL") != SQLITE_OK ||
	    exec_sql(db, "PRAGMA wal_autocheckpoint=10000") != SQLITE_OK)
		goto fail;
	/* A real write now, so that an unwritable path fails here. */
	if (exec_sql(db, "BEGIN IMMEDIATE") != SQLITE_OK)
		goto fail;
	if (fresh) {
		/* Re-check under the write lock: another process may have won. */
		int again = check_version(db, path, err, errlen);
		if (again < 0) {
			exec_sql(db, "ROLLBACK");
			goto fail_quiet;
		}
		/* new, or older: the schema is all CREATE ... IF NOT EXISTS */
		if (again >= 1 && create_schema(db) != SQLITE_OK) {
			fsp_set_err(err, errlen, "cannot %s database %s: %s", verb, path,
				    db_reason(db));
			exec_sql(db, "ROLLBACK");
			goto fail_quiet;
		}
	}
	if (migrate_v3(db) != SQLITE_OK) {
		fsp_set_err(err, errlen, "cannot %s database %s: %s", verb, path, db_reason(db));
		exec_sql(db, "ROLLBACK");
		goto fail_quiet;
	}
	if (exec_sql(db, "COMMIT") != SQLITE_OK)
		goto fail;

	struct fsp_store *st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		fsp_set_err(err, errlen, "cannot %s database %s: out of memory", verb, path);
		goto fail_quiet;
	}
	st->db = db;
	/* runs whose process died with their log open (kill -9, a crash):
	 * stored now, before anything reads or adds to the database */
	fsp_oplog_recover(st);
	return st;

fail:
	fsp_set_err(err, errlen, "cannot %s database %s: %s", verb, path, db_reason(db));
fail_quiet:
	sqlite3_close(db);
	/* never leave a half-made file behind */
	if (!existed)
		fsp_store_remove_files(path);
	return NULL;
}

void fsp_store_remove_files(const char *path)
{
	static const char *const sides[] = { "", "-wal", "-shm", "-journal" };
	char p[PATH_MAX + 16];
	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, sides[i]);
		unlink(p);
	}
}

struct fsp_store *fsp_store_open_readonly(const char *path, char *err, size_t errlen)
{
	struct stat sb;
	sqlite3 *db = NULL;

	if (stat(path, &sb) != 0) {
		if (errno == ENOENT)
			fsp_set_err(err, errlen, "no database at %s", path);
		else
			access_err(err, errlen, path, errno, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(sb.st_mode)) {
		fsp_set_err(err, errlen, "cannot open database %s: not a regular file", path);
		return NULL;
	}
	/* a run whose process died left its records in a spill file: store
	 * them first (that needs the database writable; else they wait) */
	if (fsp_oplog_spill_pending(path) && access(path, W_OK) == 0) {
		char rerr[512];
		struct fsp_store *st = fsp_store_open(path, rerr, sizeof(rerr));
		if (st)
			fsp_store_close(st);
		else
			fprintf(stderr, "fsprism: cannot recover the runs whose records wait "
				"beside %s: %s\n", path, rerr);
	} else if (fsp_oplog_spill_pending(path)) {
		fprintf(stderr, "fsprism: records of a run that did not end wait in a spill file "
			"beside %s, which is not writable; they are stored once it is opened "
			"writable\n", path);
	}
	/* read-write (so a WAL left by a crash can be recovered), never create;
	 * fall back to read-only for files we may not write */
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(db);
		db = NULL;
		rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	}
	if (rc != SQLITE_OK) {
		access_err(err, errlen, path, access(path, R_OK) ? errno : 0, db_reason(db));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, 10000);
	int v = check_version(db, path, err, errlen);
	if (v == 1) {
		fsp_set_err(err, errlen, "database %s is empty (not an fsprism database)", path);
		v = -1;
	}
	if (v < 0) { /* an older version (2) is read as it is */
		sqlite3_close(db);
		return NULL;
	}
	struct fsp_store *st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		fsp_set_err(err, errlen, "cannot open database %s: out of memory", path);
		sqlite3_close(db);
		return NULL;
	}
	st->db = db;
	return st;
}

void fsp_store_close(struct fsp_store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->ins_many);
	sqlite3_finalize(st->ins_one);
	sqlite3_finalize(st->hist_ins);
	sqlite3_finalize(st->hist_del_bins);
	sqlite3_finalize(st->bin_ins);
	sqlite3_finalize(st->step_ins);
	sqlite3_finalize(st->timeline_ins);
	sqlite3_finalize(st->segment_ins);
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

const char *fsp_store_filename(struct fsp_store *st)
{
	return sqlite3_db_filename(st->db, "main");
}

const char *fsp_store_errmsg(struct fsp_store *st)
{
	return sqlite3_errmsg(st->db);
}

/* ISO 8601 UTC with milliseconds, e.g. 2026-11-30T08:41:07.123Z */
static void iso_utc_at(char *buf, size_t len, uint64_t ns)
{
	time_t secs = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char day[32];
	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", day, (unsigned)(ns / 1000000ull % 1000));
}

static void iso_utc(char *buf, size_t len)
{
	iso_utc_at(buf, len, fsp_wall_ns());
}

/* Is mount point mp a path-component prefix of path? */
static int mount_covers(const char *mp, const char *path)
{
	size_t n = strlen(mp);
	if (strcmp(mp, "/") == 0)
		return 1;
	return strncmp(mp, path, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/*
 * The mount holding path: the longest mount point that is a prefix of its
 * real path (the last one listed wins when mounts are stacked).
 */
static int lookup_mount(const char *path, char **device, char **fstype)
{
	char real[PATH_MAX];
	struct stat sb;
	if (!realpath(path, real))
		return -1;
	if (stat(real, &sb) == 0 && S_ISBLK(sb.st_mode)) {
		/* a raw device target is its own device, with no file system */
		*device = strdup(real);
		return *device ? 0 : -1;
	}
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	size_t best = 0;
	if (fsp_mountinfo_open(&mi) < 0)
		return -1;
	while (fsp_mountinfo_next(&mi, &m)) {
		size_t n = strlen(m.mount_point);
		if (mount_covers(m.mount_point, real) && n >= best) {
			best = n;
			free(*device);
			free(*fstype);
			*device = strdup(m.source);
			*fstype = strdup(m.fstype);
		}
	}
	fsp_mountinfo_close(&mi);
	return *device ? 0 : -1;
}

char *fsp_store_cmdline(int argc, char **argv)
{
	size_t len = sizeof("fsprism");
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len);
	if (!s)
		return NULL;
	strcpy(s, "fsprism");
	for (int i = 0; i < argc; i++) {
		strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

int64_t fsp_store_begin_run(struct fsp_store *st, const struct fsp_run_info *info)
{
	struct utsname un;
	char started[48];
	char *device = NULL, *fstype = NULL;
	sqlite3_stmt *s;
	int64_t id = -1;

	if (uname(&un) != 0)
		memset(&un, 0, sizeof(un));
	iso_utc(started, sizeof(started));
	if (info->backing_path && (!info->backing_device || !info->backing_fstype))
		lookup_mount(info->backing_path, &device, &fstype);

	if (sqlite3_prepare_v2(st->db,
		"INSERT INTO runs(kind, host, kernel, version, options, backing_path,"
		" backing_device, backing_fstype, record_mode, started_at, started_ns,"
		" parent, label) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, NULL) != SQLITE_OK) {
		store_fail(st, "cannot insert run");
		goto out;
	}
	bind_text_or_null(s, 1, info->kind ? info->kind : "unknown");
	bind_text_or_null(s, 2, info->host ? info->host : un.nodename);
	bind_text_or_null(s, 3, un.release);
	bind_text_or_null(s, 4, FSP_VERSION);
	bind_text_or_null(s, 5, info->options);
	bind_text_or_null(s, 6, info->backing_path);
	bind_text_or_null(s, 7, info->backing_device ? info->backing_device : device);
	bind_text_or_null(s, 8, info->backing_fstype ? info->backing_fstype : fstype);
	bind_text_or_null(s, 9, info->record_mode);
	bind_text_or_null(s, 10, started);
	sqlite3_bind_int64(s, 11, (int64_t)fsp_now_ns());
	if (info->parent)
		sqlite3_bind_int64(s, 12, info->parent);
	else
		sqlite3_bind_null(s, 12);
	bind_text_or_null(s, 13, info->label);
	if (step_once(st, s, "cannot insert run") == 0)
		id = sqlite3_last_insert_rowid(st->db);
	sqlite3_finalize(s);
out:
	free(device);
	free(fstype);
	return id;
}

int fsp_store_end_run(struct fsp_store *st, int64_t run, uint64_t recorded,
		      uint64_t dropped)
{
	return fsp_store_end_run_at(st, run, recorded, dropped, fsp_wall_ns(), fsp_now_ns());
}

int fsp_store_end_run_at(struct fsp_store *st, int64_t run, uint64_t recorded,
			 uint64_t dropped, uint64_t wall_ns, uint64_t mono_ns)
{
	char ended[48];
	sqlite3_stmt *s;
	int ok;

	iso_utc_at(ended, sizeof(ended), wall_ns);
	if (sqlite3_prepare_v2(st->db,
		"UPDATE runs SET ended_at=?, ended_ns=?, recorded=?, dropped=? WHERE id=?",
		-1, &s, NULL) != SQLITE_OK) {
		store_fail(st, "cannot end run");
		return -1;
	}
	sqlite3_bind_text(s, 1, ended, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 2, (int64_t)mono_ns);
	sqlite3_bind_int64(s, 3, (int64_t)recorded);
	sqlite3_bind_int64(s, 4, (int64_t)dropped);
	sqlite3_bind_int64(s, 5, run);
	ok = sqlite3_step(s) == SQLITE_DONE;
	if (!ok)
		fprintf(stderr, "fsprism: database %s: cannot end run %lld: %s\n",
			st->path, (long long)run, sqlite3_errmsg(st->db));
	else if (sqlite3_changes(st->db) != 1) {
		fprintf(stderr, "fsprism: database %s: cannot end run %lld: no such run\n",
			st->path, (long long)run);
		ok = 0;
	}
	sqlite3_finalize(s);
	return ok ? 0 : -1;
}

int fsp_store_set_attr(struct fsp_store *st, int64_t run, const char *key,
		       const char *value)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db,
		"INSERT OR REPLACE INTO run_attrs(run, key, value) VALUES(?,?,?)",
		-1, &s, NULL) != SQLITE_OK) {
		store_fail(st, "cannot set run attribute");
		return -1;
	}
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_text(s, 2, key, -1, SQLITE_TRANSIENT);
	bind_text_or_null(s, 3, value);
	int rc = step_once(st, s, "cannot set run attribute");
	sqlite3_finalize(s);
	return rc;
}

int fsp_store_set_attr_u64(struct fsp_store *st, int64_t run, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return fsp_store_set_attr(st, run, key, buf);
}

int fsp_store_adopt_run(struct fsp_store *st, int64_t run, int64_t parent,
			const char *label)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "UPDATE runs SET parent=?, label=? WHERE id=?",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, parent);
	sqlite3_bind_text(s, 2, label, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, run);
	int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(s);
	return rc;
}

int fsp_store_forget_run(struct fsp_store *st, int64_t run)
{
	static const char *const tables[] = { "ops", "hist", "hist_bins", "run_attrs" };
	char sql[128];
	int rc = 0;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE %s=%lld", tables[i],
			 "run", (long long)run);
		if (exec_sql(st->db, sql) != SQLITE_OK)
			rc = -1;
	}
	snprintf(sql, sizeof(sql), "DELETE FROM runs WHERE id=%lld", (long long)run);
	if (exec_sql(st->db, sql) != SQLITE_OK)
		rc = -1;
	return rc;
}

int fsp_store_tx_begin(struct fsp_store *st)
{
	if (exec_sql(st->db, "BEGIN IMMEDIATE") != SQLITE_OK) {
		store_fail(st, "cannot begin transaction");
		return -1;
	}
	return 0;
}

int fsp_store_tx_commit(struct fsp_store *st)
{
	if (exec_sql(st->db, "COMMIT") != SQLITE_OK) {
		store_fail(st, "cannot commit");
		exec_sql(st->db, "ROLLBACK");
		return -1;
	}
	return 0;
}

void fsp_store_tx_rollback(struct fsp_store *st)
{
	exec_sql(st->db, "ROLLBACK");
}

/* "INSERT INTO ops(...) VALUES(?,...),(?,...)..." with rows row groups. */
static sqlite3_stmt *prepare_ops_insert(struct fsp_store *st, int rows)
{
	static const char head[] =
		"INSERT INTO ops(run, step, op, node, pid, offset, length, bytes,"
		" result, start_ns, total_ns, backing_ns, layer_ns, emu_ns, cause_ns,"
		" inject_ns, model_ns, fuse_unique, recv_ns) VALUES";
	static const char group[] = "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
	size_t len = sizeof(head) + (size_t)rows * sizeof(group) + 1;
	char *sql = malloc(len);
	sqlite3_stmt *s = NULL;
	if (!sql)
		return NULL;
	char *p = stpcpy(sql, head);
	for (int i = 0; i < rows; i++) {
		if (i)
			*p++ = ',';
		p = stpcpy(p, group);
	}
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s,
			       NULL) != SQLITE_OK) {
		store_fail(st, "cannot prepare insert");
		s = NULL;
	}
	free(sql);
	return s;
}

static void bind_rec(sqlite3_stmt *s, int base, int64_t run, const struct fsp_rec *r)
{
	sqlite3_bind_int64(s, base + 1, run);
	sqlite3_bind_int64(s, base + 2, r->step);
	sqlite3_bind_int64(s, base + 3, r->op);
	sqlite3_bind_int64(s, base + 4, (int64_t)r->node);
	sqlite3_bind_int64(s, base + 5, r->pid);
	sqlite3_bind_int64(s, base + 6, (int64_t)r->offset);
	sqlite3_bind_int64(s, base + 7, r->length);
	sqlite3_bind_int64(s, base + 8, (int64_t)r->bytes);
	sqlite3_bind_int64(s, base + 9, r->result);
	sqlite3_bind_int64(s, base + 10, (int64_t)r->start_ns);
	sqlite3_bind_int64(s, base + 11, (int64_t)r->total_ns);
	sqlite3_bind_int64(s, base + 12, (int64_t)r->backing_ns);
	sqlite3_bind_int64(s, base + 13, (int64_t)fsp_rec_layer_ns(r));
	sqlite3_bind_int64(s, base + 14, (int64_t)r->emu_ns);
	sqlite3_bind_int64(s, base + 15, (int64_t)r->cause_ns);
	sqlite3_bind_int64(s, base + 16, (int64_t)r->inject_ns);
	sqlite3_bind_int64(s, base + 17, (int64_t)r->model_ns);
	sqlite3_bind_int64(s, base + 18, (int64_t)r->fuse_unique);
	sqlite3_bind_int64(s, base + 19, (int64_t)r->recv_ns);
}

int fsp_store_insert_recs(struct fsp_store *st, int64_t run,
			  const struct fsp_rec *recs, size_t n)
{
	if (!st->ins_many && !(st->ins_many = prepare_ops_insert(st, INSERT_ROWS)))
		return -1;
	if (!st->ins_one && !(st->ins_one = prepare_ops_insert(st, 1)))
		return -1;
	size_t i = 0;
	for (; i + INSERT_ROWS <= n; i += INSERT_ROWS) {
		for (int k = 0; k < INSERT_ROWS; k++)
			bind_rec(st->ins_many, k * OPS_COLUMNS, run, &recs[i + (size_t)k]);
		if (step_reset(st, st->ins_many) < 0)
			return -1;
	}
	for (; i < n; i++) {
		bind_rec(st->ins_one, 0, run, &recs[i]);
		if (step_reset(st, st->ins_one) < 0)
			return -1;
	}
	return 0;
}

static int prepare_once(struct fsp_store *st, sqlite3_stmt **s, const char *sql)
{
	if (*s)
		return 0;
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s,
			       NULL) != SQLITE_OK) {
		store_fail(st, "cannot prepare");
		*s = NULL;
		return -1;
	}
	return 0;
}

/* Parameters 1-4 of every hist / hist_bins statement: the histogram's key. */
static void bind_hist_key(sqlite3_stmt *s, int64_t run, int step, int op, int layer)
{
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int(s, 3, op);
	sqlite3_bind_int(s, 4, layer);
}

int fsp_store_save_hist(struct fsp_store *st, int64_t run, int step, int op,
			int layer, const struct fsp_hist *h, uint64_t bytes,
			uint64_t errors, uint64_t expected)
{
	if (prepare_once(st, &st->hist_ins,
		"INSERT OR REPLACE INTO hist(run, step, op, layer, count, sum_ns,"
		" min_ns, max_ns, bytes, errors, expected) VALUES(?,?,?,?,?,?,?,?,?,?,?)") < 0 ||
	    prepare_once(st, &st->hist_del_bins,
		"DELETE FROM hist_bins WHERE run=? AND step=? AND op=? AND layer=?") < 0 ||
	    prepare_once(st, &st->bin_ins,
		"INSERT INTO hist_bins(run, step, op, layer, lo_ns, hi_ns, count)"
		" VALUES(?,?,?,?,?,?,?)") < 0)
		return -1;

	sqlite3_stmt *s = st->hist_ins;
	bind_hist_key(s, run, step, op, layer);
	sqlite3_bind_int64(s, 5, (int64_t)h->count);
	sqlite3_bind_int64(s, 6, (int64_t)h->sum);
	sqlite3_bind_int64(s, 7, (int64_t)h->min); /* UINT64_MAX (empty) reads back as -1 */
	sqlite3_bind_int64(s, 8, (int64_t)h->max);
	sqlite3_bind_int64(s, 9, (int64_t)bytes);
	sqlite3_bind_int64(s, 10, (int64_t)errors);
	sqlite3_bind_int64(s, 11, (int64_t)expected);
	if (step_reset(st, s) < 0)
		return -1;

	s = st->hist_del_bins;
	bind_hist_key(s, run, step, op, layer);
	if (step_reset(st, s) < 0)
		return -1;

	s = st->bin_ins;
	bind_hist_key(s, run, step, op, layer);
	for (unsigned b = 0; b < FSP_HIST_NBUCKETS; b++) {
		if (!h->buckets[b])
			continue;
		sqlite3_bind_int64(s, 5, (int64_t)fsp_hist_bucket_lo(b));
		sqlite3_bind_int64(s, 6, (int64_t)fsp_hist_bucket_hi(b));
		sqlite3_bind_int64(s, 7, (int64_t)h->buckets[b]);
		if (step_reset(st, s) < 0)
			return -1;
	}
	return 0;
}

int fsp_store_load_hist(struct fsp_store *st, int64_t run, int step, int op,
			int layer, struct fsp_hist *h, uint64_t *bytes,
			uint64_t *errors)
{
	sqlite3 *db = st->db;
	sqlite3_stmt *s;
	int found = 0;

	fsp_hist_init(h);
	if (bytes)
		*bytes = 0;
	if (errors)
		*errors = 0;
	if (sqlite3_prepare_v2(db,
		"SELECT count, sum_ns, min_ns, max_ns, bytes, errors FROM hist"
		" WHERE run=? AND step=? AND op=? AND layer=?", -1, &s, NULL) != SQLITE_OK)
		return -1;
	bind_hist_key(s, run, step, op, layer);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		found = 1;
		h->count = fsp_db_col_u64(s, 0);
		h->sum = fsp_db_col_u64(s, 1);
		h->min = fsp_db_col_u64(s, 2);
		h->max = fsp_db_col_u64(s, 3);
		if (bytes)
			*bytes = fsp_db_col_u64(s, 4);
		if (errors)
			*errors = fsp_db_col_u64(s, 5);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : -1;

	if (sqlite3_prepare_v2(db,
		"SELECT lo_ns, count FROM hist_bins"
		" WHERE run=? AND step=? AND op=? AND layer=?", -1, &s, NULL) != SQLITE_OK)
		return -1;
	bind_hist_key(s, run, step, op, layer);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		uint64_t lo = fsp_db_col_u64(s, 0);
		h->buckets[fsp_hist_bucket(lo)] += fsp_db_col_u64(s, 1);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? found : -1;
}

int fsp_store_save_emu_files(struct fsp_store *st, int64_t run,
			     const struct fsp_emu_file *f, size_t n)
{
	sqlite3_stmt *del_files = NULL, *del_ext = NULL, *ins_file = NULL, *ins_ext = NULL;
	int ok = 0;

	if (n && !f) {
		fprintf(stderr, "fsprism: database %s: no emulated files given\n", st->path);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (f[i].nextents && !f[i].ext) {
			fprintf(stderr, "fsprism: database %s: object %" PRIu64
				" has %zu extents but no extent list\n",
				st->path, f[i].obj, f[i].nextents);
			return -1;
		}
	if (fsp_store_tx_begin(st) != 0)
		return -1;
	if (sqlite3_prepare_v2(st->db, "DELETE FROM emu_files WHERE run=?", -1,
			       &del_files, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "DELETE FROM emu_extents WHERE run=?", -1,
			       &del_ext, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
		"INSERT OR REPLACE INTO emu_files(run, obj, path, size, allocated, extents)"
		" VALUES(?,?,?,?,?,?)", -1, &ins_file, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
		"INSERT OR REPLACE INTO emu_extents(run, obj, logical, physical, length)"
		" VALUES(?,?,?,?,?)", -1, &ins_ext, NULL) != SQLITE_OK)
		goto out;
	/* a second save of the same run replaces the first, never mixes */
	sqlite3_bind_int64(del_files, 1, run);
	sqlite3_bind_int64(del_ext, 1, run);
	if (step_reset(st, del_files) < 0 || step_reset(st, del_ext) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct fsp_emu_file *e = &f[i];
		sqlite3_bind_int64(ins_file, 1, run);
		sqlite3_bind_int64(ins_file, 2, (int64_t)e->obj);
		bind_text_or_null(ins_file, 3, e->path);
		sqlite3_bind_int64(ins_file, 4, (int64_t)e->size);
		sqlite3_bind_int64(ins_file, 5, (int64_t)e->allocated);
		sqlite3_bind_int64(ins_file, 6, (int64_t)e->nextents);
		if (step_reset(st, ins_file) < 0)
			goto out;
		sqlite3_bind_int64(ins_ext, 1, run);
		sqlite3_bind_int64(ins_ext, 2, (int64_t)e->obj);
		for (size_t k = 0; k < e->nextents; k++) {
			sqlite3_bind_int64(ins_ext, 3, (int64_t)e->ext[k].logical);
			sqlite3_bind_int64(ins_ext, 4, (int64_t)e->ext[k].physical);
			sqlite3_bind_int64(ins_ext, 5, (int64_t)e->ext[k].length);
			if (step_reset(st, ins_ext) < 0)
				goto out;
		}
	}
	ok = 1;
out:
	if (!ok && !(del_files && del_ext && ins_file && ins_ext))
		store_fail(st, "cannot save emulated files");
	sqlite3_finalize(del_files);
	sqlite3_finalize(del_ext);
	sqlite3_finalize(ins_file);
	sqlite3_finalize(ins_ext);
	if (!ok) {
		exec_sql(st->db, "ROLLBACK");
		return -1;
	}
	return fsp_store_tx_commit(st);
}

/* Parameters first.. of s: the n values of v, in order. */
static void bind_u64s(sqlite3_stmt *s, int first, const uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		sqlite3_bind_int64(s, first + i, (int64_t)v[i]);
}

int fsp_store_add_step(struct fsp_store *st, int64_t run, const struct fsp_step_row *r)
{
	if (prepare_once(st, &st->step_ins,
		"INSERT INTO steps(run, step, label, access, block_size, qd, read_pct,"
		" pattern, span_offset, span_size, started_ns, ended_ns, busy_ns,"
		" read_ios, write_ios, read_bytes, write_bytes, cpu_user_ns, cpu_sys_ns)"
		" VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") < 0)
		return -1;
	sqlite3_stmt *s = st->step_ins;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, r->step);
	bind_text_or_null(s, 3, r->label);
	bind_text_or_null(s, 4, r->access);
	sqlite3_bind_int64(s, 5, r->block_size);
	sqlite3_bind_int64(s, 6, r->qd);
	sqlite3_bind_int64(s, 7, r->read_pct);
	bind_text_or_null(s, 8, r->pattern);
	const uint64_t v[] = { r->span_offset, r->span_size, r->started_ns, r->ended_ns,
			       r->busy_ns, r->read_ios, r->write_ios, r->read_bytes,
			       r->write_bytes, r->cpu_user_ns, r->cpu_sys_ns };
	bind_u64s(s, 9, v, 11);
	return step_reset(st, s);
}

/* One row of a per-step table: run, step, then the n integers v. */
static int add_step_row(struct fsp_store *st, sqlite3_stmt **stmt, const char *sql,
			int64_t run, int step, const uint64_t *v, int n)
{
	if (prepare_once(st, stmt, sql) < 0)
		return -1;
	sqlite3_bind_int64(*stmt, 1, run);
	sqlite3_bind_int(*stmt, 2, step);
	bind_u64s(*stmt, 3, v, n);
	return step_reset(st, *stmt);
}

int fsp_store_add_timeline(struct fsp_store *st, int64_t run, int step,
			   const struct fsp_timeline_row *t)
{
	const uint64_t v[] = { t->t_ns, t->read_bytes, t->write_bytes, t->read_ios,
			       t->write_ios };
	return add_step_row(st, &st->timeline_ins,
		"INSERT INTO timeline(run, step, t_ns, read_bytes, write_bytes, read_ios,"
		" write_ios) VALUES(?,?,?,?,?,?,?)", run, step, v, 5);
}

int fsp_store_add_segment(struct fsp_store *st, int64_t run, int step,
			  const struct fsp_segment_row *g)
{
	const uint64_t v[] = { g->segment, g->offset, g->bytes, g->ns };
	return add_step_row(st, &st->segment_ins,
		"INSERT INTO segments(run, step, segment, offset, bytes, ns)"
		" VALUES(?,?,?,?,?,?)", run, step, v, 4);
}

int fsp_store_build_indexes(struct fsp_store *st)
{
	if (exec_sql(st->db, FSP_SCHEMA_INDEX_SQL) != SQLITE_OK) {
		store_fail(st, "cannot build indexes");
		return -1;
	}
	return 0;
}

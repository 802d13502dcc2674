/*
 * block_ios.c - writing and reading the block_ios table (block_ios.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/grow.h"
#include "src/base/ops.h"
#include "src/db/block_ios.h"
#include "src/db/handle.h"

static const char *const op_names[] = {
	"read", "write", "flush", "discard", "write_zeroes", "other",
};

const char *fsp_block_op_name(unsigned op)
{
	return op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "other";
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, uint64_t v)
{
	if (v)
		sqlite3_bind_int64(s, i, (int64_t)v);
	else
		sqlite3_bind_null(s, i);
}

int fsp_block_ios_insert(struct fsp_store *st, int64_t run,
			 const struct fsp_block_io *rows, size_t n)
{
	sqlite3 *db = st->db;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db,
		"INSERT INTO block_ios(run, step, dev, sector, bytes, op, flags, tgid,"
		" queue_ns, insert_ns, issue_ns, complete_ns, error, tid)"
		" VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "fsprism: database: cannot prepare the block rows: %s\n",
			sqlite3_errmsg(db));
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct fsp_block_io *r = &rows[i];
		char dev[24];
		snprintf(dev, sizeof(dev), "%u:%u", r->dev >> 20, r->dev & 0xfffff);
		sqlite3_bind_int64(s, 1, run);
		if (r->step >= 0)
			sqlite3_bind_int(s, 2, r->step);
		else
			sqlite3_bind_null(s, 2);
		sqlite3_bind_text(s, 3, dev, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 4, (int64_t)r->sector);
		sqlite3_bind_int64(s, 5, r->bytes);
		sqlite3_bind_text(s, 6, fsp_block_op_name(r->op), -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 7, r->flags);
		bind_u64_or_null(s, 8, r->tgid);
		bind_u64_or_null(s, 9, r->queue_ns);
		bind_u64_or_null(s, 10, r->insert_ns);
		sqlite3_bind_int64(s, 11, (int64_t)r->issue_ns);
		sqlite3_bind_int64(s, 12, (int64_t)r->complete_ns);
		sqlite3_bind_int(s, 13, r->error);
		bind_u64_or_null(s, 14, r->tid);
		if (sqlite3_step(s) != SQLITE_DONE) {
			fprintf(stderr, "fsprism: database: cannot insert block rows: %s\n",
				sqlite3_errmsg(db));
			rc = -1;
		}
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return rc;
}

static int has_table(sqlite3 *db)
{
	sqlite3_stmt *s;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master"
			       " WHERE type = 'table' AND name = 'block_ios'",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		rc = sqlite3_column_int(s, 0) > 0;
	sqlite3_finalize(s);
	return rc;
}

/* block_ios.tid came later in version 3 */
static int has_tid(sqlite3 *db)
{
	sqlite3_stmt *s;
	int rc = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('block_ios')"
			       " WHERE name = 'tid'", -1, &s, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(s) == SQLITE_ROW)
		rc = sqlite3_column_int(s, 0) > 0;
	sqlite3_finalize(s);
	return rc;
}

int fsp_block_ios_any(struct fsp_store *st, int64_t run)
{
	sqlite3 *db = st->db;
	int t = has_table(db);
	if (t <= 0)
		return t;
	sqlite3_stmt *s;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT EXISTS(SELECT 1 FROM block_ios WHERE run = ?)",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run);
	if (sqlite3_step(s) == SQLITE_ROW)
		rc = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return rc;
}

int fsp_block_ios_steps(struct fsp_store *st, int64_t run, int *steps, int max)
{
	sqlite3 *db = st->db;
	if (has_table(db) <= 0)
		return 0;
	sqlite3_stmt *s;
	int n = 0;
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT step FROM block_ios"
			       " WHERE run = ? AND step IS NOT NULL ORDER BY step",
			       -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, run);
	while (n < max && sqlite3_step(s) == SQLITE_ROW)
		steps[n++] = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return n;
}

static int push(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (fsp_grow((void **)a, cap, *n + 1, sizeof(**a), 1024))
		return -1;
	(*a)[(*n)++] = v;
	return 0;
}

int fsp_block_ios_times(struct fsp_store *st, int64_t run, int step, unsigned op,
			struct fsp_block_times *t, char *err, size_t errlen)
{
	sqlite3 *db = st->db;
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db,
		"SELECT coalesce(queue_ns, insert_ns), issue_ns, complete_ns, bytes"
		" FROM block_ios WHERE run = ? AND step = ? AND op = ?",
		-1, &s, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot read block_ios: %s", sqlite3_errmsg(db));
		return -1;
	}
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_text(s, 3, fsp_block_op_name(op), -1, SQLITE_STATIC);
	size_t capq = 0, capd = 0;
	int rc, fail = 0;
	while (!fail && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		uint64_t issue = (uint64_t)sqlite3_column_int64(s, 1);
		uint64_t done = (uint64_t)sqlite3_column_int64(s, 2);
		if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
			uint64_t q = (uint64_t)sqlite3_column_int64(s, 0);
			fail |= push(&t->queue_ns, &t->nq, &capq, issue > q ? issue - q : 0);
		}
		fail |= push(&t->device_ns, &t->nd, &capd, done > issue ? done - issue : 0);
		t->bytes += (uint64_t)sqlite3_column_int64(s, 3);
	}
	if (!fail && rc != SQLITE_DONE) {
		snprintf(err, errlen, "cannot read block_ios: %s", sqlite3_errmsg(db));
		fail = 1;
	} else if (fail)
		snprintf(err, errlen, "out of memory reading block_ios");
	sqlite3_finalize(s);
	if (fail) {
		fsp_block_times_free(t);
		return -1;
	}
	return 0;
}

void fsp_block_times_free(struct fsp_block_times *t)
{
	free(t->queue_ns);
	free(t->device_ns);
	memset(t, 0, sizeof(*t));
}

int fsp_block_ios_summary(struct fsp_store *st, int64_t run, struct fsp_block_summary *sum)
{
	sqlite3 *db = st->db;
	memset(sum, 0, sizeof(*sum));
	sum->traced = -1;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, "SELECT key, value FROM run_attrs"
			       " WHERE run = ? AND key LIKE 'block.%'", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		const char *v = (const char *)sqlite3_column_text(s, 1);
		if (!k || !v)
			continue;
		if (!strcmp(k, "block.traced"))
			sum->traced = atoi(v) != 0;
		else if (!strcmp(k, "block.untraced_reason"))
			snprintf(sum->reason, sizeof(sum->reason), "%s", v);
		else if (!strcmp(k, "block.devices"))
			snprintf(sum->devices, sizeof(sum->devices), "%s", v);
		else if (!strcmp(k, "block.requests"))
			sum->requests = strtoull(v, NULL, 10);
		else if (!strcmp(k, "block.dropped"))
			sum->dropped = strtoull(v, NULL, 10);
	}
	sqlite3_finalize(s);
	return 0;
}

/* "7:3" -> 7 << 20 | 3 */
static uint32_t parse_dev(const char *s)
{
	unsigned ma = 0, mi = 0;
	if (!s || sscanf(s, "%u:%u", &ma, &mi) != 2)
		return 0;
	return ma << 20 | (mi & 0xfffff);
}

static unsigned op_number(const char *name)
{
	for (unsigned i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (name && !strcmp(name, op_names[i]))
			return i;
	return FSP_BLOCK_OTHER;
}

int fsp_block_ios_load(struct fsp_store *st, int64_t run, int step, int64_t from_ns,
		       int64_t to_ns, struct fsp_block_io **rows, size_t *n, char *err,
		       size_t errlen)
{
	sqlite3 *db = st->db;
	*rows = NULL;
	*n = 0;
	int t = has_table(db);
	if (t <= 0) {
		if (t < 0)
			snprintf(err, errlen, "cannot read the schema: %s", sqlite3_errmsg(db));
		return t;
	}
	int tid = has_tid(db);
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "SELECT step, dev, sector, bytes, op, flags, tgid, queue_ns, insert_ns,"
		 " issue_ns, complete_ns, error, %s FROM block_ios WHERE run = ?1"
		 " AND (?2 < 0 OR step = ?2) AND (?3 = 0 AND ?4 = 0 OR"
		 " coalesce(queue_ns, insert_ns, issue_ns) BETWEEN ?3 AND ?4)"
		 " ORDER BY issue_ns, rowid", tid ? "tid" : "0");
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot read block_ios: %s", sqlite3_errmsg(db));
		return -1;
	}
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int64(s, 3, from_ns);
	sqlite3_bind_int64(s, 4, to_ns);
	size_t cap = 0;
	int rc, fail = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (fsp_grow((void **)rows, &cap, *n + 1, sizeof(**rows), 1024)) {
			fail = 1;
			break;
		}
		struct fsp_block_io *r = &(*rows)[(*n)++];
		memset(r, 0, sizeof(*r));
		r->step = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 0);
		r->dev = parse_dev((const char *)sqlite3_column_text(s, 1));
		r->sector = (uint64_t)sqlite3_column_int64(s, 2);
		r->bytes = (uint32_t)sqlite3_column_int64(s, 3);
		r->op = (uint16_t)op_number((const char *)sqlite3_column_text(s, 4));
		r->flags = (uint16_t)sqlite3_column_int(s, 5);
		r->tgid = (uint32_t)sqlite3_column_int64(s, 6);
		r->queue_ns = (uint64_t)sqlite3_column_int64(s, 7);
		r->insert_ns = (uint64_t)sqlite3_column_int64(s, 8);
		r->issue_ns = (uint64_t)sqlite3_column_int64(s, 9);
		r->complete_ns = (uint64_t)sqlite3_column_int64(s, 10);
		r->error = sqlite3_column_int(s, 11);
		r->tid = (uint32_t)sqlite3_column_int64(s, 12);
	}
	if (fail)
		snprintf(err, errlen, "out of memory reading block_ios");
	else if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "cannot read block_ios: %s", sqlite3_errmsg(db));
		fail = 1;
	}
	sqlite3_finalize(s);
	if (fail) {
		free(*rows);
		*rows = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

int64_t fsp_block_ios_fuse_run(struct fsp_store *st, int64_t run)
{
	sqlite3_stmt *s;
	int64_t id = -1;
	if (sqlite3_prepare_v2(st->db,
		"SELECT CASE WHEN r.kind = 'mount' THEN r.id ELSE"
		" (SELECT m.id FROM runs m WHERE m.parent = r.parent AND m.kind = 'mount'"
		"  AND m.label = r.label || '-fuse' ORDER BY m.id DESC LIMIT 1) END"
		" FROM runs r WHERE r.id = ?", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		id = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		id = 0;
	sqlite3_finalize(s);
	return id;
}

int fsp_block_ios_op_lengths(struct fsp_store *st, int64_t run, int step, int64_t from_ns,
			     int64_t to_ns,
			     int (*fn)(void *arg, int op, uint64_t length, uint64_t count),
			     void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db,
		"SELECT op, length, count(*) FROM ops WHERE run = ?1 AND op IN (?2, ?3)"
		" AND (?4 < 0 OR step = ?4) AND (?5 = 0 AND ?6 = 0 OR start_ns BETWEEN ?5 AND ?6)"
		" GROUP BY op, length ORDER BY op, length", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, FSP_OP_READ);
	sqlite3_bind_int(s, 3, FSP_OP_WRITE);
	sqlite3_bind_int(s, 4, step);
	sqlite3_bind_int64(s, 5, from_ns);
	sqlite3_bind_int64(s, 6, to_ns);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int(s, 0), (uint64_t)sqlite3_column_int64(s, 1),
		       (uint64_t)sqlite3_column_int64(s, 2))) {
			rc = SQLITE_DONE;
			break;
		}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

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

static void bind_block_io(sqlite3_stmt *s, const void *row, const void *arg)
{
	const struct fsp_block_io *r = row;
	(void)arg;
	if (r->step >= 0)
		sqlite3_bind_int(s, 2, r->step);
	else
		sqlite3_bind_null(s, 2);
	fsp_db_bind_devno(s, 3, r->dev);
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
}

static const struct fsp_db_insert block_ios_insert = {
	.sql = "INSERT INTO block_ios(run, step, dev, sector, bytes, op, flags, tgid,"
	       " queue_ns, insert_ns, issue_ns, complete_ns, error, tid)"
	       " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	.elem = sizeof(struct fsp_block_io),
	.bind = bind_block_io,
	.prepare_fail = "cannot prepare the block rows",
	.insert_fail = "cannot insert block rows",
};

int fsp_block_ios_insert(struct fsp_store *st, int64_t run,
			 const struct fsp_block_io *rows, size_t n)
{
	return fsp_db_insert_rows(st, &block_ios_insert, run, rows, n, NULL);
}

int fsp_block_ios_any(struct fsp_store *st, int64_t run)
{
	return fsp_db_run_has_rows(st, "block_ios", run);
}

int fsp_block_ios_steps(struct fsp_store *st, int64_t run, int *steps, int max)
{
	if (fsp_db_has_table(st->db, "block_ios") <= 0)
		return 0;
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT DISTINCT step FROM block_ios WHERE"
					     " run = ? AND step IS NOT NULL ORDER BY step", run);
	int n = 0;
	if (!s)
		return 0;
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

/* fsp_block_ios_times' arrays, as fsp_db_each_row's argument */
struct times {
	struct fsp_block_times *t;
	size_t capq, capd;
};

static int times_row(void *arg, sqlite3_stmt *s)
{
	struct times *x = arg;
	struct fsp_block_times *t = x->t;
	uint64_t issue = fsp_db_col_u64(s, 1);
	uint64_t done = fsp_db_col_u64(s, 2);
	if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
		uint64_t q = fsp_db_col_u64(s, 0);
		if (push(&t->queue_ns, &t->nq, &x->capq, issue > q ? issue - q : 0))
			return -1;
	}
	if (push(&t->device_ns, &t->nd, &x->capd, done > issue ? done - issue : 0))
		return -1;
	t->bytes += fsp_db_col_u64(s, 3);
	return 0;
}

int fsp_block_ios_times(struct fsp_store *st, int64_t run, int step, unsigned op,
			struct fsp_block_times *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *s;
	if (fsp_db_prepare_read(st, "SELECT coalesce(queue_ns, insert_ns), issue_ns, complete_ns,"
				" bytes FROM block_ios WHERE run = ? AND step = ? AND op = ?", &s,
				"block_ios", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_text(s, 3, fsp_block_op_name(op), -1, SQLITE_STATIC);
	struct times x = { t, 0, 0 };
	if (fsp_db_each_row(st, s, times_row, &x, "block_ios", err, errlen)) {
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
	memset(sum, 0, sizeof(*sum));
	sum->traced = -1;
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT key, value FROM run_attrs"
					     " WHERE run = ? AND key LIKE 'block.%'", run);
	if (!s)
		return -1;
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

static void fill_block_io(void *row, sqlite3_stmt *s)
{
	struct fsp_block_io *r = row;
	memset(r, 0, sizeof(*r));
	r->step = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 0);
	r->dev = parse_dev((const char *)sqlite3_column_text(s, 1));
	r->sector = fsp_db_col_u64(s, 2);
	r->bytes = (uint32_t)sqlite3_column_int64(s, 3);
	r->op = (uint16_t)op_number((const char *)sqlite3_column_text(s, 4));
	r->flags = (uint16_t)sqlite3_column_int(s, 5);
	r->tgid = (uint32_t)sqlite3_column_int64(s, 6);
	r->queue_ns = fsp_db_col_u64(s, 7);
	r->insert_ns = fsp_db_col_u64(s, 8);
	r->issue_ns = fsp_db_col_u64(s, 9);
	r->complete_ns = fsp_db_col_u64(s, 10);
	r->error = sqlite3_column_int(s, 11);
	r->tid = (uint32_t)sqlite3_column_int64(s, 12);
}

int fsp_block_ios_load(struct fsp_store *st, int64_t run, int step, int64_t from_ns,
		       int64_t to_ns, struct fsp_block_io **rows, size_t *n, char *err,
		       size_t errlen)
{
	*rows = NULL;
	*n = 0;
	int t = fsp_db_has_table(st->db, "block_ios");
	if (t <= 0) {
		if (t < 0)
			snprintf(err, errlen, "cannot read the schema: %s", sqlite3_errmsg(st->db));
		return t;
	}
	/* block_ios.tid came later in version 3 */
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "SELECT step, dev, sector, bytes, op, flags, tgid, queue_ns, insert_ns,"
		 " issue_ns, complete_ns, error, %s FROM block_ios WHERE run = ?1"
		 " AND (?2 < 0 OR step = ?2) AND (?3 = 0 AND ?4 = 0 OR"
		 " coalesce(queue_ns, insert_ns, issue_ns) BETWEEN ?3 AND ?4)"
		 " ORDER BY issue_ns, rowid", fsp_db_column_or_0(st->db, "block_ios", "tid"));
	sqlite3_stmt *s;
	if (fsp_db_prepare_read(st, sql, &s, "block_ios", err, errlen))
		return -1;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int64(s, 3, from_ns);
	sqlite3_bind_int64(s, 4, to_ns);
	size_t cap = 0;
	return fsp_db_load_rows(st, s, (void **)rows, n, &cap, sizeof(**rows), fill_block_io,
				"block_ios", err, errlen);
}

int64_t fsp_block_ios_fuse_run(struct fsp_store *st, int64_t run)
{
	/* no mount run: NULL, read as 0 */
	return fsp_db_run_int(st,
		"SELECT CASE WHEN r.kind = 'mount' THEN r.id ELSE"
		" (SELECT m.id FROM runs m WHERE m.parent = r.parent AND m.kind = 'mount'"
		"  AND m.label = r.label || '-fuse' ORDER BY m.id DESC LIMIT 1) END"
		" FROM runs r WHERE r.id = ?", run, 0);
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
		if (fn(arg, sqlite3_column_int(s, 0), fsp_db_col_u64(s, 1),
		       fsp_db_col_u64(s, 2))) {
			rc = SQLITE_DONE;
			break;
		}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

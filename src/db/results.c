/*
 * results.c - the readers of the results database (see results.h): each
 * function one query, or one question answered by a few, on the store's
 * connection. The writers are in store.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/db/handle.h"
#include "src/db/results.h"
#include "src/base/cmp.h"

static char *col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	return t ? strdup((const char *)t) : NULL;
}

static const char *col_str(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

/* The end of a walk over s: finalized; 0 when done or stopped, -1 on error. */
static int walk_end(sqlite3_stmt *s, int rc)
{
	sqlite3_finalize(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

/* ---- runs ----------------------------------------------------------------- */

int64_t fsp_store_latest_run(struct fsp_store *st)
{
	sqlite3_stmt *s;
	int64_t id = -1;
	if (sqlite3_prepare_v2(st->db, "SELECT coalesce(max(id), 0) FROM runs", -1, &s,
			       NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

/* The text fields of a runs row, in the order of columns 1.. of the query
 * in fsp_store_load_run; loaded and freed from this one list. */
enum { RUN_NTEXT = 8 };
static void run_texts(struct fsp_run_row *h, char **text[RUN_NTEXT])
{
	char **t[RUN_NTEXT] = { &h->kind, &h->backing_path, &h->device, &h->fstype,
				&h->record_mode, &h->label, &h->started_at, &h->options };
	memcpy(text, t, sizeof(t));
}

int fsp_store_load_run(struct fsp_store *st, int64_t run, struct fsp_run_row *h)
{
	memset(h, 0, sizeof(*h));
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT id, kind, backing_path, backing_device, backing_fstype,"
		" record_mode, label, started_at, options, started_ns, ended_ns,"
		" recorded, dropped FROM runs WHERE id=?", run);
	if (!s)
		return -1;
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		char **text[RUN_NTEXT];
		run_texts(h, text);
		h->id = sqlite3_column_int64(s, 0);
		for (int i = 0; i < RUN_NTEXT; i++)
			*text[i] = col_text(s, 1 + i);
		h->started_ns = sqlite3_column_int64(s, 9);
		h->ended_ns = sqlite3_column_int64(s, 10);
		h->recorded = sqlite3_column_int64(s, 11);
		h->dropped = sqlite3_column_int64(s, 12);
	}
	sqlite3_finalize(s);
	if (rc == SQLITE_ROW) {
		char *end = fsp_store_attr(st, run, "run.end");
		h->crashed = end && !strcmp(end, "crashed");
		free(end);
		h->lost = fsp_store_attr(st, run, "records.lost");
	}
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

void fsp_run_row_free(struct fsp_run_row *h)
{
	char **text[RUN_NTEXT];
	run_texts(h, text);
	for (int i = 0; i < RUN_NTEXT; i++)
		free(*text[i]);
	free(h->lost);
}

/* The id of a one-row query with two parameters: text as parameter text_at
 * (1 or 2), num as the other one. 0 if there is no row. */
static int64_t id_query(struct fsp_store *st, const char *sql, int text_at,
			const char *text, int64_t num)
{
	sqlite3_stmt *s;
	int64_t id = 0;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(s, text_at, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3 - text_at, num);
	if (sqlite3_step(s) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

int64_t fsp_store_find_mount_run(struct fsp_store *st, const char *backing_path,
				 int64_t after)
{
	return id_query(st, "SELECT id FROM runs WHERE kind='mount' AND "
			"backing_path=? AND id>? ORDER BY id DESC LIMIT 1", 1,
			backing_path, after);
}

int64_t fsp_store_child_run(struct fsp_store *st, int64_t parent, const char *label)
{
	return id_query(st, "SELECT id FROM runs WHERE parent=? AND label=? "
			"AND kind='run' ORDER BY id DESC LIMIT 1", 2, label, parent);
}

/* ---- attributes ----------------------------------------------------------- */

char *fsp_store_attr(struct fsp_store *st, int64_t run, const char *key)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT value FROM run_attrs WHERE run=?"
					     " AND key=?", run);
	char *v = NULL;
	if (!s)
		return NULL;
	sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = col_text(s, 0);
	sqlite3_finalize(s);
	return v;
}

int fsp_store_each_attr(struct fsp_store *st, int64_t run, unsigned which,
			int (*fn)(void *arg, const char *key, const char *value),
			void *arg)
{
	static const char *const sql[FSP_ATTRS_ALL + 1] = {
		[FSP_ATTRS_EMU] = "SELECT key, value FROM run_attrs WHERE run=?"
			" AND key LIKE 'emu.%' ORDER BY key",
		[FSP_ATTRS_DEV] = "SELECT key, value FROM run_attrs WHERE run=?"
			" AND key LIKE 'dev.%' ORDER BY key",
		[FSP_ATTRS_EMU | FSP_ATTRS_DEV] = "SELECT key, value FROM run_attrs WHERE run=? AND"
			" (key LIKE 'emu.%' OR key LIKE 'dev.%') ORDER BY key",
		[FSP_ATTRS_ALL] = "SELECT key, value FROM run_attrs WHERE run=? ORDER BY key",
	};
	if (which > FSP_ATTRS_ALL || !sql[which])
		return -1;
	sqlite3_stmt *s = fsp_db_prepare_run(st, sql[which], run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(arg, col_str(s, 0), col_str(s, 1)))
			break;
	return walk_end(s, rc);
}

/* ---- steps ---------------------------------------------------------------- */

int fsp_store_each_step(struct fsp_store *st, int64_t run,
			int (*fn)(void *arg, const struct fsp_step_row *r), void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT step, label, access, block_size, qd, read_pct, pattern,"
		" span_offset, span_size, started_ns, ended_ns, busy_ns, read_ios,"
		" write_ios, read_bytes, write_bytes, cpu_user_ns, cpu_sys_ns"
		" FROM steps WHERE run=? ORDER BY step", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_step_row r = {
			.step = sqlite3_column_int(s, 0),
			.label = col_str(s, 1),
			.access = col_str(s, 2),
			.block_size = sqlite3_column_int64(s, 3),
			.qd = sqlite3_column_int64(s, 4),
			.read_pct = sqlite3_column_int64(s, 5),
			.pattern = col_str(s, 6),
			.span_offset = fsp_db_col_u64(s, 7),
			.span_size = fsp_db_col_u64(s, 8),
			.started_ns = fsp_db_col_u64(s, 9),
			.ended_ns = fsp_db_col_u64(s, 10),
			.busy_ns = fsp_db_col_u64(s, 11),
			.read_ios = fsp_db_col_u64(s, 12),
			.write_ios = fsp_db_col_u64(s, 13),
			.read_bytes = fsp_db_col_u64(s, 14),
			.write_bytes = fsp_db_col_u64(s, 15),
			.cpu_user_ns = fsp_db_col_u64(s, 16),
			.cpu_sys_ns = fsp_db_col_u64(s, 17),
		};
		if (fn(arg, &r))
			break;
	}
	return walk_end(s, rc);
}

int fsp_store_step_span(struct fsp_store *st, int64_t run, int step, char **label,
			int64_t *started_ns, int64_t *ended_ns)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT label, started_ns, ended_ns FROM steps WHERE run=? AND step=?", run);
	*label = NULL;
	*started_ns = *ended_ns = 0;
	if (!s)
		return -1;
	sqlite3_bind_int(s, 2, step);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*label = col_text(s, 0);
		*started_ns = sqlite3_column_int64(s, 1);
		*ended_ns = sqlite3_column_int64(s, 2);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int fsp_store_step_windows(struct fsp_store *st, int64_t run, int64_t (*win)[2], int max)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT started_ns, ended_ns FROM steps WHERE "
					     "run=? ORDER BY step", run);
	int n = 0;
	if (!s)
		return 0;
	while (n < max && sqlite3_step(s) == SQLITE_ROW) {
		win[n][0] = sqlite3_column_int64(s, 0);
		win[n][1] = sqlite3_column_int64(s, 1);
		n++;
	}
	sqlite3_finalize(s);
	return n;
}

int64_t fsp_store_count_steps(struct fsp_store *st, int64_t run)
{
	return fsp_db_run_int(st, "SELECT count(*) FROM steps WHERE run=?", run, 0);
}

/* ---- histograms ----------------------------------------------------------- */

int fsp_store_each_hist_key(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, int step, int op), void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT DISTINCT step, op FROM hist WHERE run=? ORDER BY step, op", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int(s, 0), sqlite3_column_int(s, 1)))
			break;
	return walk_end(s, rc);
}

int64_t fsp_store_count_hist_steps(struct fsp_store *st, int64_t run)
{
	return fsp_db_run_int(st, "SELECT count(DISTINCT step) FROM hist WHERE run=?", run, 0);
}

int fsp_store_load_hist_merged(struct fsp_store *st, int64_t run, int op, int layer,
			       struct fsp_hist *acc)
{
	fsp_hist_init(acc);
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT DISTINCT step FROM hist WHERE run=? "
					     "AND op=? AND layer=?", run);
	if (!s)
		return -1;
	sqlite3_bind_int(s, 2, op);
	sqlite3_bind_int(s, 3, layer);
	int steps[1024], n = 0;
	while (n < 1024 && sqlite3_step(s) == SQLITE_ROW)
		steps[n++] = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	struct fsp_hist *tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return -1;
	for (int i = 0; i < n; i++) {
		uint64_t bytes, errors;
		if (fsp_store_load_hist(st, run, steps[i], op, layer, tmp, &bytes,
					&errors) == 1)
			fsp_hist_merge(acc, tmp);
	}
	free(tmp);
	return 0;
}

uint64_t fsp_store_expected_replies(struct fsp_store *st, int64_t run, int step, int op)
{
	sqlite3_stmt *s;
	uint64_t n = 0;
	/* an older database has no such column: its prepare fails, 0 */
	if (sqlite3_prepare_v2(st->db, "SELECT coalesce(expected, 0) FROM hist WHERE run=?"
			       " AND step=? AND op=? AND layer=?", -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_int(s, 2, step);
	sqlite3_bind_int(s, 3, op);
	sqlite3_bind_int(s, 4, FSP_LAYER_TOTAL);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = fsp_db_col_u64(s, 0);
	sqlite3_finalize(s);
	return n;
}

int fsp_store_op_totals(struct fsp_store *st, int64_t run, int op, uint64_t *count,
			uint64_t *bytes)
{
	*count = *bytes = 0;
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT coalesce(sum(count), 0), coalesce(sum(bytes), 0) FROM hist"
		" WHERE run=? AND op=? AND layer=?", run);
	if (!s)
		return -1;
	sqlite3_bind_int(s, 2, op);
	sqlite3_bind_int(s, 3, FSP_LAYER_TOTAL);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*count = fsp_db_col_u64(s, 0);
		*bytes = fsp_db_col_u64(s, 1);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : -1;
}

int fsp_store_emu_layer_used(struct fsp_store *st, int64_t run)
{
	char sql[160];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM hist WHERE run=? AND layer=%d"
		 " AND max_ns > 0", FSP_LAYER_EMU);
	int64_t n = fsp_db_run_int(st, sql, run, 0);
	return n < 0 ? -1 : n > 0;
}

/* ---- op rows -------------------------------------------------------------- */

int64_t fsp_store_windowed_layers(struct fsp_store *st, int64_t run, int op,
				  int64_t (*win)[2], int nwin,
				  struct fsp_hist h[FSP_LAYER__COUNT])
{
	int64_t n = 0;
	for (int l = 0; l < FSP_LAYER__COUNT; l++)
		fsp_hist_init(&h[l]);
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT start_ns, total_ns, backing_ns, layer_ns, "
					     "emu_ns FROM ops WHERE run=? AND op=?", run);
	if (!s)
		return -1;
	sqlite3_bind_int(s, 2, op);
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(s, 0);
		int in = 0;
		for (int i = 0; i < nwin && !in; i++)
			in = t >= win[i][0] && t <= win[i][1];
		if (!in)
			continue;
		fsp_hist_add(&h[FSP_LAYER_TOTAL], fsp_db_col_u64(s, 1));
		fsp_hist_add(&h[FSP_LAYER_BACKING], fsp_db_col_u64(s, 2));
		fsp_hist_add(&h[FSP_LAYER_LAYER], fsp_db_col_u64(s, 3));
		fsp_hist_add(&h[FSP_LAYER_EMU], fsp_db_col_u64(s, 4));
		n++;
	}
	sqlite3_finalize(s);
	return n;
}

/* ---- the emulation -------------------------------------------------------- */

int fsp_store_is_emulated(struct fsp_store *st, int64_t run)
{
	char sql[320];
	snprintf(sql, sizeof(sql),
		 "SELECT (SELECT count(*) FROM hist WHERE run=?1 AND op>=%d AND op<=%d)"
		 " + (SELECT count(*) FROM emu_files WHERE run=?1)"
		 " + (SELECT count(*) FROM run_attrs WHERE run=?1 AND key LIKE 'emu.%%')",
		 FSP_OP_DEV_READ, FSP_OP_DEV_FLUSH);
	int64_t n = fsp_db_run_int(st, sql, run, 0);
	return n < 0 ? -1 : n > 0;
}

int fsp_store_emu_file_totals(struct fsp_store *st, int64_t run, uint64_t *files,
			      uint64_t *extents)
{
	int64_t f = fsp_db_run_int(st, "SELECT count(*) FROM emu_files WHERE run=?", run, 0);
	int64_t e = fsp_db_run_int(st, "SELECT coalesce(sum(extents), 0) FROM emu_files"
				   " WHERE run=?", run, 0);
	*files = f > 0 ? (uint64_t)f : 0;
	*extents = e > 0 ? (uint64_t)e : 0;
	return f < 0 || e < 0 ? -1 : 0;
}

int fsp_store_each_emu_file(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, const struct fsp_emu_file *f), void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT obj, path, size, allocated, extents FROM emu_files WHERE run=?"
		" ORDER BY coalesce(path, '') = '', path, obj", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_emu_file f = {
			.obj = fsp_db_col_u64(s, 0), .path = col_str(s, 1), .size = fsp_db_col_u64(s, 2),
			.allocated = fsp_db_col_u64(s, 3), .nextents = (size_t)fsp_db_col_u64(s, 4),
		};
		if (fn(arg, &f))
			break;
	}
	return walk_end(s, rc);
}

int fsp_store_each_emu_extent(struct fsp_store *st, int64_t run,
			      int (*fn)(void *arg, const struct fsp_emu_file *f,
					const struct fsp_emu_extent *e),
			      void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT e.obj, f.path, e.logical, e.physical, e.length, f.size, f.extents"
		" FROM emu_extents e LEFT JOIN emu_files f ON f.run = e.run AND f.obj = e.obj"
		" WHERE e.run=? ORDER BY coalesce(f.path, '') = '', f.path, e.obj, e.logical",
		run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_emu_file f = {
			.obj = fsp_db_col_u64(s, 0), .path = col_str(s, 1), .size = fsp_db_col_u64(s, 5),
			.nextents = (size_t)fsp_db_col_u64(s, 6),
		};
		struct fsp_emu_extent e = {
			.logical = fsp_db_col_u64(s, 2), .physical = fsp_db_col_u64(s, 3), .length = fsp_db_col_u64(s, 4),
		};
		if (fn(arg, &f, &e))
			break;
	}
	return walk_end(s, rc);
}

/* ---- the report's questions ----------------------------------------------- */

int fsp_store_load_run_facts(struct fsp_store *st, int64_t run, struct fsp_run_facts *f)
{
	memset(f, 0, sizeof(*f));
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT host, kernel, version, started_at,"
					     " ended_at, coalesce(parent, 0) FROM runs"
					     " WHERE id=?", run);
	if (!s)
		return -1;
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		f->host = col_text(s, 0);
		f->kernel = col_text(s, 1);
		f->version = col_text(s, 2);
		f->started_at = col_text(s, 3);
		f->ended_at = col_text(s, 4);
		f->parent = sqlite3_column_int64(s, 5);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

void fsp_run_facts_free(struct fsp_run_facts *f)
{
	free(f->host);
	free(f->kernel);
	free(f->version);
	free(f->started_at);
	free(f->ended_at);
}

int fsp_store_each_child_run(struct fsp_store *st, int64_t run,
			     int (*fn)(void *arg, int64_t id, const char *kind,
				       const char *label),
			     void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT id, kind, label FROM runs"
					     " WHERE coalesce(parent, 0)=?"
					     " ORDER BY id", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int64(s, 0), col_str(s, 1), col_str(s, 2)))
			break;
	return walk_end(s, rc);
}

int fsp_store_each_timeline(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, int step, const struct fsp_timeline_row *t),
			    void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT step, t_ns, read_bytes, write_bytes,"
					     " read_ios, write_ios FROM timeline WHERE run=?"
					     " ORDER BY step, t_ns", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_timeline_row t = {
			.t_ns = fsp_db_col_u64(s, 1), .read_bytes = fsp_db_col_u64(s, 2),
			.write_bytes = fsp_db_col_u64(s, 3), .read_ios = fsp_db_col_u64(s, 4),
			.write_ios = fsp_db_col_u64(s, 5),
		};
		if (fn(arg, sqlite3_column_int(s, 0), &t))
			break;
	}
	return walk_end(s, rc);
}

int fsp_store_each_segment(struct fsp_store *st, int64_t run,
			   int (*fn)(void *arg, int step, const struct fsp_segment_row *g),
			   void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT step, segment, offset, bytes, ns"
					     " FROM segments WHERE run=?"
					     " ORDER BY step, segment", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_segment_row g = {
			.segment = fsp_db_col_u64(s, 1), .offset = fsp_db_col_u64(s, 2),
			.bytes = fsp_db_col_u64(s, 3), .ns = fsp_db_col_u64(s, 4),
		};
		if (fn(arg, sqlite3_column_int(s, 0), &g))
			break;
	}
	return walk_end(s, rc);
}

int64_t fsp_store_count_op_rows(struct fsp_store *st, int64_t run)
{
	return fsp_db_run_int(st, "SELECT count(*) FROM ops WHERE run=?", run, 0);
}

int fsp_store_each_op_latency(struct fsp_store *st, int64_t run,
			      int (*fn)(void *arg, int step, int op, uint64_t start_ns,
					uint64_t total_ns),
			      void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT step, op, start_ns, total_ns FROM ops"
					     " WHERE run=? AND op NOT IN (SELECT op FROM op_names"
					     " WHERE name LIKE 'dev!_%' ESCAPE '!')", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int(s, 0), sqlite3_column_int(s, 1), fsp_db_col_u64(s, 2),
		       fsp_db_col_u64(s, 3)))
			break;
	return walk_end(s, rc);
}

/* Is there a block_ios table (a version-2 database has none)? */
static int have_block_ios(struct fsp_store *st)
{
	return fsp_db_has_table(st->db, "block_ios") > 0;
}

int64_t fsp_store_count_block_positions(struct fsp_store *st, int64_t run)
{
	if (!have_block_ios(st))
		return 0;
	return fsp_db_run_int(st, "SELECT count(*) FROM block_ios WHERE run=? AND step IS NOT NULL"
			      " AND bytes > 0", run, 0);
}

int fsp_store_each_block_position(struct fsp_store *st, int64_t run,
				  int (*fn)(void *arg, int step, const char *op,
					    uint64_t issue_ns, uint64_t sector,
					    uint64_t bytes),
				  void *arg)
{
	if (!have_block_ios(st))
		return 0;
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT step, op, issue_ns, sector, bytes"
					     " FROM block_ios WHERE run=? AND step IS NOT NULL"
					     " AND bytes > 0 ORDER BY issue_ns", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int(s, 0), col_str(s, 1), fsp_db_col_u64(s, 2),
		       fsp_db_col_u64(s, 3), fsp_db_col_u64(s, 4)))
			break;
	return walk_end(s, rc);
}

/* ---- what diagnose asks ----------------------------------------------------- */

int fsp_store_child_runs(struct fsp_store *st, int64_t parent, const char *kind,
			 const char *label, int64_t *ids, int max)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, "SELECT id FROM runs WHERE parent=? AND kind=?"
					     " AND label=? ORDER BY id", parent);
	if (!s)
		return -1;
	sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, label, -1, SQLITE_STATIC);
	int n = 0, rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < max)
		ids[n++] = sqlite3_column_int64(s, 0);
	return walk_end(s, rc) ? -1 : n;
}

int64_t fsp_store_latest_run_of_kind(struct fsp_store *st, const char *kind)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "SELECT coalesce(max(id), 0) FROM runs WHERE kind=?",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
	int64_t id = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
	sqlite3_finalize(s);
	return id;
}

int fsp_store_each_op_in_window(struct fsp_store *st, int64_t run, int64_t t0, int64_t t1,
				int (*fn)(void *arg, const struct fsp_op_row *r), void *arg)
{
	/* ops.inject_ns is newer than the version-2 and -3 files: 0 without it */
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT op, offset, length, bytes, start_ns, total_ns, backing_ns, layer_ns,"
		" coalesce(emu_ns, 0), coalesce(inject_ns, 0) FROM ops"
		" WHERE run=? AND start_ns BETWEEN ? AND ? ORDER BY start_ns", run);
	if (!s)
		s = fsp_db_prepare_run(st,
			"SELECT op, offset, length, bytes, start_ns, total_ns, backing_ns,"
			" layer_ns, coalesce(emu_ns, 0), 0 FROM ops"
			" WHERE run=? AND start_ns BETWEEN ? AND ? ORDER BY start_ns", run);
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 2, t0);
	sqlite3_bind_int64(s, 3, t1);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_op_row r = {
			.op = sqlite3_column_int(s, 0), .offset = fsp_db_col_u64(s, 1),
			.length = fsp_db_col_u64(s, 2), .bytes = fsp_db_col_u64(s, 3),
			.start_ns = fsp_db_col_u64(s, 4), .total_ns = fsp_db_col_u64(s, 5),
			.backing_ns = fsp_db_col_u64(s, 6), .layer_ns = fsp_db_col_u64(s, 7),
			.emu_ns = fsp_db_col_u64(s, 8), .inject_ns = fsp_db_col_u64(s, 9),
		};
		if (fn(arg, &r))
			break;
	}
	return walk_end(s, rc);
}


int fsp_store_each_trace_op(struct fsp_store *st, int64_t run,
			    int (*fn)(void *arg, const struct fsp_replay_op_row *r), void *arg)
{
	sqlite3_stmt *s = fsp_db_prepare_run(st,
		"SELECT op, coalesce(result, 0), node, pid, offset, length, bytes, start_ns,"
		" total_ns FROM ops WHERE run=? ORDER BY start_ns, rowid", run);
	if (!s)
		return -1;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsp_replay_op_row r = {
			.op = sqlite3_column_int(s, 0), .result = sqlite3_column_int(s, 1),
			.node = fsp_db_col_u64(s, 2), .pid = fsp_db_col_u64(s, 3),
			.offset = fsp_db_col_u64(s, 4), .length = fsp_db_col_u64(s, 5),
			.bytes = fsp_db_col_u64(s, 6), .start_ns = fsp_db_col_u64(s, 7),
			.total_ns = fsp_db_col_u64(s, 8),
		};
		if (fn(arg, &r))
			break;
	}
	return walk_end(s, rc);
}


/* ---- the FUSE transport ---------------------------------------------------- */

static int cmp_drow(const void *a, const void *b)
{
	const struct fsp_fuse_drow *x = a, *y = b;
	return FSP_CMP(x->unique, y->unique);
}

static int cmp_trow(const void *a, const void *b)
{
	const struct fsp_fuse_trow *x = a, *y = b;
	return FSP_CMP(x->unique, y->unique);
}

static int parts_add(struct fsp_fuse_parts *p, int64_t queue, int64_t reply)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		int64_t *q = realloc(p->queue_ns, cap * sizeof(*q));
		if (!q)
			return -1;
		p->queue_ns = q;
		int64_t *r = realloc(p->reply_ns, cap * sizeof(*r));
		if (!r)
			return -1;
		p->reply_ns = r;
		p->cap = cap;
	}
	p->queue_ns[p->n] = queue;
	p->reply_ns[p->n++] = reply;
	return 0;
}

int fsp_fuse_join(struct fsp_fuse_drow *d, size_t nd, struct fsp_fuse_trow *t, size_t nt,
		  struct fsp_fuse_transport *x)
{
	memset(x, 0, sizeof(*x));
	if (nd)
		qsort(d, nd, sizeof(*d), cmp_drow);
	if (nt)
		qsort(t, nt, sizeof(*t), cmp_trow);
	size_t i = 0, j = 0;
	while (i < nd) {
		const struct fsp_fuse_drow *r = &d[i];
		struct fsp_fuse_parts *p = &x->op[r->op < FSP_OP__COUNT ? r->op : 0];
		while (j < nt && t[j].unique < r->unique) {
			x->trace_unjoined++;
			j++;
		}
		if (r->unique && j < nt && t[j].unique == r->unique) {
			int64_t queue = (int64_t)(r->recv_ns - t[j].send_ns);
			int64_t reply = (int64_t)(t[j].end_ns - (r->start_ns + r->total_ns));
			if (parts_add(p, queue, reply) < 0) {
				fsp_fuse_transport_free(x);
				return -1;
			}
			x->joined++;
			x->negative += (queue < 0) + (reply < 0);
			j++;
		} else {
			p->unjoined++;
			x->daemon_unjoined++;
		}
		i++;
	}
	x->trace_unjoined += nt - j;
	return 0;
}

void fsp_fuse_transport_free(struct fsp_fuse_transport *x)
{
	for (int i = 0; i < FSP_OP__COUNT; i++) {
		free(x->op[i].queue_ns);
		free(x->op[i].reply_ns);
	}
	memset(x, 0, sizeof(*x));
}

static void fill_drow(void *row, sqlite3_stmt *s)
{
	struct fsp_fuse_drow *r = row;
	r->op = (uint32_t)sqlite3_column_int(s, 0);
	r->unique = fsp_db_col_u64(s, 1);
	r->start_ns = fsp_db_col_u64(s, 2);
	r->total_ns = fsp_db_col_u64(s, 3);
	r->recv_ns = fsp_db_col_u64(s, 4);
}

static void fill_trow(void *row, sqlite3_stmt *s)
{
	struct fsp_fuse_trow *r = row;
	r->unique = fsp_db_col_u64(s, 0);
	r->send_ns = fsp_db_col_u64(s, 1);
	r->end_ns = fsp_db_col_u64(s, 2);
	r->opcode = (uint32_t)sqlite3_column_int(s, 3);
}

/* The rows of one query on run into a growing array of elem bytes (free
 * it), each set by fill(row, s). 0, or -1 (the caller names no reason). */
static int load_run_rows(struct fsp_store *st, const char *sql, int64_t run, void **v,
			 size_t *n, size_t elem, void (*fill)(void *row, sqlite3_stmt *s))
{
	sqlite3_stmt *s = fsp_db_prepare_run(st, sql, run);
	size_t cap = 0;
	return s ? fsp_db_load_rows(st, s, v, n, &cap, elem, fill, "rows", NULL, 0) : -1;
}

int fsp_store_fuse_transport(struct fsp_store *st, int64_t run, struct fsp_fuse_transport *x)
{
	memset(x, 0, sizeof(*x));
	if (fsp_db_has_column(st->db, "fuse_reqs", "fuse_unique") <= 0 ||
	    fsp_db_has_column(st->db, "ops", "fuse_unique") <= 0 ||
	    fsp_db_run_has_rows(st, "fuse_reqs", run) != 1)
		return 0;
	char sql[256];
	struct fsp_fuse_drow *d = NULL;
	struct fsp_fuse_trow *t = NULL;
	size_t nd = 0, nt = 0;
	/* the FUSE operations' rows: not the emulation's device records */
	snprintf(sql, sizeof(sql), "SELECT op, coalesce(fuse_unique, 0), start_ns, total_ns,"
		 " coalesce(recv_ns, 0) FROM ops WHERE run=? AND op < %d", FSP_OP_DEV_READ);
	int rc = load_run_rows(st, sql, run, (void **)&d, &nd, sizeof(*d), fill_drow) ||
		 load_run_rows(st, "SELECT fuse_unique, send_ns, end_ns, opcode FROM fuse_reqs"
			       " WHERE run=?", run, (void **)&t, &nt, sizeof(*t), fill_trow) ||
		 fsp_fuse_join(d, nd, t, nt, x) ? -1 : 1;
	free(d);
	free(t);
	return rc;
}

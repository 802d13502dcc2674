/*
 * schema.h - the one SQLite schema shared by `mount`, `run`, `compare` and
 * `stats`. docs/schema.md documents every table and column.
 *
 * FSP_SCHEMA_VERSION is stored in PRAGMA user_version. A database with a
 * different non-zero version is refused (never silently migrated or mixed).
 * Bump the version for any incompatible change.
 */
#ifndef FSP_SCHEMA_H
#define FSP_SCHEMA_H

/* 2: ops.emu_ns, ops.cause_ns, the "emu" layer, device ops, emu_files,
 * emu_extents
 * 3: block_ios (the block-layer trace); a version-2 database is opened by
 * adding the table (nothing else changed); later, within version 3:
 * fuse_reqs, and ops.fuse_unique, ops.recv_ns (added on open for writing) */
#define FSP_SCHEMA_VERSION 3
/* the oldest version that is opened, and upgraded when written */
#define FSP_SCHEMA_VERSION_OLDEST 2

/* the target file's layout of a run (added in version 3; also created on
 * a writer's open of an older version-3 database, decomp_rows.c) */
#define FSP_SCHEMA_FILE_EXTENTS_SQL \
"CREATE TABLE IF NOT EXISTS file_extents(\n" \
"  run INTEGER NOT NULL,\n" \
"  after_step INTEGER NOT NULL, -- read after this step; -1: before the first\n" \
"  logical INTEGER NOT NULL, physical INTEGER, length INTEGER,\n" \
"  flags INTEGER,               -- FIEMAP_EXTENT_* flags\n" \
"  PRIMARY KEY(run, after_step, logical));\n"

#define FSP_SCHEMA_SQL \
"CREATE TABLE IF NOT EXISTS runs(\n" \
"  id INTEGER PRIMARY KEY,\n" \
"  kind TEXT NOT NULL,          -- 'mount', 'run', 'compare'\n" \
"  host TEXT, kernel TEXT, version TEXT,\n" \
"  options TEXT,                -- the command line, as given\n" \
"  backing_path TEXT,           -- mount: backing dir; run: target\n" \
"  backing_device TEXT,         -- block device holding backing_path\n" \
"  backing_fstype TEXT,\n" \
"  record_mode TEXT,            -- full | sample:N | hist | off\n" \
"  started_at TEXT, ended_at TEXT, -- ISO 8601 UTC\n" \
"  started_ns INTEGER, ended_ns INTEGER, -- CLOCK_MONOTONIC, same clock as ops.start_ns\n" \
"  recorded INTEGER DEFAULT 0,  -- op rows stored\n" \
"  dropped INTEGER DEFAULT 0,   -- op rows lost to full buffers\n" \
"  parent INTEGER,              -- compare: the compare run this belongs to\n" \
"  label TEXT                   -- compare: target name ('raw','ext4','fsprism')\n" \
");\n" \
"CREATE TABLE IF NOT EXISTS run_attrs(run INTEGER NOT NULL, key TEXT NOT NULL,\n" \
"  value TEXT, PRIMARY KEY(run, key));\n" \
"CREATE TABLE IF NOT EXISTS op_names(op INTEGER PRIMARY KEY, name TEXT NOT NULL);\n" \
"CREATE TABLE IF NOT EXISTS layer_names(layer INTEGER PRIMARY KEY, name TEXT NOT NULL);\n" \
"CREATE TABLE IF NOT EXISTS ops(\n" \
"  run INTEGER NOT NULL, step INTEGER NOT NULL, op INTEGER NOT NULL,\n" \
"  node INTEGER, pid INTEGER, offset INTEGER, length INTEGER,\n" \
"  bytes INTEGER, result INTEGER,\n" \
"  start_ns INTEGER, total_ns INTEGER, backing_ns INTEGER, layer_ns INTEGER,\n" \
"  emu_ns INTEGER,              -- emulation's share beyond moving the user's data\n" \
"  cause_ns INTEGER,            -- dev_* rows: start_ns of the causing op (0: background)\n" \
"  inject_ns INTEGER,           -- the delay mount --inject added (part of layer_ns)\n" \
"  model_ns INTEGER,            -- the cost mount --device-model added (part of layer_ns)\n" \
"  fuse_unique INTEGER,         -- FUSE requests: the kernel's unique (0: unknown)\n" \
"  recv_ns INTEGER              -- FUSE requests: read from /dev/fuse by a worker\n" \
");\n" \
"CREATE TABLE IF NOT EXISTS hist(\n" \
"  run INTEGER NOT NULL, step INTEGER NOT NULL, op INTEGER NOT NULL,\n" \
"  layer INTEGER NOT NULL, count INTEGER, sum_ns INTEGER, min_ns INTEGER,\n" \
"  max_ns INTEGER, bytes INTEGER, errors INTEGER,\n" \
"  expected INTEGER,             -- replies that answer, not fail: lookup ENOENT, ...\n" \
"  PRIMARY KEY(run, step, op, layer));\n" \
"CREATE TABLE IF NOT EXISTS hist_bins(\n" \
"  run INTEGER NOT NULL, step INTEGER NOT NULL, op INTEGER NOT NULL,\n" \
"  layer INTEGER NOT NULL, lo_ns INTEGER NOT NULL, hi_ns INTEGER NOT NULL,\n" \
"  count INTEGER NOT NULL);\n" \
"CREATE TABLE IF NOT EXISTS steps(\n" \
"  run INTEGER NOT NULL, step INTEGER NOT NULL, label TEXT,\n" \
"  access TEXT, block_size INTEGER, qd INTEGER, read_pct INTEGER,\n" \
"  pattern TEXT, span_offset INTEGER, span_size INTEGER,\n" \
"  started_ns INTEGER, ended_ns INTEGER, busy_ns INTEGER,\n" \
"  read_ios INTEGER, write_ios INTEGER, read_bytes INTEGER, write_bytes INTEGER,\n" \
"  cpu_user_ns INTEGER, cpu_sys_ns INTEGER,\n" \
"  PRIMARY KEY(run, step));\n" \
"CREATE TABLE IF NOT EXISTS timeline(\n" \
"  run INTEGER NOT NULL, step INTEGER NOT NULL, t_ns INTEGER NOT NULL,\n" \
"  read_bytes INTEGER, write_bytes INTEGER, read_ios INTEGER, write_ios INTEGER);\n" \
"CREATE TABLE IF NOT EXISTS segments(\n" \
"  run INTEGER NOT NULL, step INTEGER NOT NULL, segment INTEGER NOT NULL,\n" \
"  offset INTEGER, bytes INTEGER, ns INTEGER);\n" \
"CREATE TABLE IF NOT EXISTS emu_files(\n" \
"  run INTEGER NOT NULL, obj INTEGER NOT NULL, path TEXT,\n" \
"  size INTEGER, allocated INTEGER, extents INTEGER,\n" \
"  PRIMARY KEY(run, obj));\n" \
"CREATE TABLE IF NOT EXISTS emu_extents(\n" \
"  run INTEGER NOT NULL, obj INTEGER NOT NULL, logical INTEGER NOT NULL,\n" \
"  physical INTEGER, length INTEGER,\n" \
"  PRIMARY KEY(run, obj, logical));\n" \
"CREATE TABLE IF NOT EXISTS block_ios(\n" \
"  run INTEGER NOT NULL,\n" \
"  step INTEGER,                -- NULL: outside every step's measured window\n" \
"  dev TEXT NOT NULL,           -- whole disk, 'major:minor'\n" \
"  sector INTEGER, bytes INTEGER,\n" \
"  op TEXT NOT NULL,            -- read, write, flush, discard, write_zeroes, other\n" \
"  flags INTEGER NOT NULL,      -- 1 sync, 2 meta, 4 fua, 8 preflush, 16 readahead\n" \
"  tgid INTEGER,                -- process that queued it (NULL: unknown)\n" \
"  queue_ns INTEGER,            -- made from its first bio (NULL: no iostats)\n" \
"  insert_ns INTEGER,           -- inserted into the queue (NULL: issued directly)\n" \
"  issue_ns INTEGER NOT NULL, complete_ns INTEGER NOT NULL,\n" \
"  error INTEGER NOT NULL,      -- blk_status_t, 0: ok\n" \
"  tid INTEGER                  -- thread that queued it (NULL: unknown)\n" \
");\n" \
FSP_SCHEMA_FILE_EXTENTS_SQL \
"CREATE TABLE IF NOT EXISTS fuse_reqs(\n" \
"  run INTEGER NOT NULL, step INTEGER,\n" \
"  conn TEXT NOT NULL,          -- the FUSE connection, 'major:minor' (the mount's st_dev)\n" \
"  fuse_unique INTEGER NOT NULL, -- the kernel's id, = ops.fuse_unique of the daemon's row\n" \
"  opcode INTEGER NOT NULL,     -- FUSE_* (15 READ, 16 WRITE, ...)\n" \
"  len INTEGER,                 -- the request's length at send\n" \
"  send_ns INTEGER NOT NULL,    -- queued for the daemon\n" \
"  end_ns INTEGER NOT NULL,     -- its reply done in the kernel\n" \
"  error INTEGER NOT NULL       -- 0 or -errno\n" \
");\n"

/* Built after capture, so that inserts during capture stay cheap. */
#define FSP_SCHEMA_INDEX_SQL \
"CREATE INDEX IF NOT EXISTS ops_run_op ON ops(run, step, op);\n" \
"CREATE INDEX IF NOT EXISTS hist_bins_key ON hist_bins(run, step, op, layer);\n"

#endif

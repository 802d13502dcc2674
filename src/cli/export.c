/*
 * export.c - `fsprism export DB [--run N]`: a run's recorded IOs as a fio
 * iolog (version 3), so that fio replays a workload fsprism recorded
 * (fio --read_iolog=FILE). The IOs are the run's op rows, as `fsprism
 * replay` reads them (src/cli/replay.h); written by bench/engine/iolog.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench/engine/iolog.h"
#include "bench/engine/iotrace.h"
#include "src/cli/cli.h"
#include "src/cli/opt.h"
#include "src/cli/replay.h"
#include "src/db/results.h"
#include "src/db/store.h"

static void export_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism export DB [--run N] [--format fio-iolog] [-o FILE]\n"
"\n"
"Write a run's recorded IOs (a run or mount recorded with --record=full) as a\n"
"fio iolog, version 3, which fio replays:\n"
"  fio --name=replay --ioengine=libaio --direct=1 --read_iolog=FILE\n"
"Reads, writes and fsyncs that succeeded, at their issue times; a run's IOs\n"
"name its target, a mount's name the file by its inode (inoN: fio's option\n"
"replay_redirect sends them all to one file).\n"
"See docs/fio.md.\n"
"\n"
"options:\n"
"  --run N             the run (default: the newest)\n"
"  --format fio-iolog  the format (the only one)\n"
"  -o, --output FILE   write to FILE (default: stdout)\n"
"\n"
"Exit 0; 1 when the database cannot be read or FILE written; 2 for a usage\n"
"error or a run without every IO recorded.\n");
}

/* The iolog on f. 0, or 2 (said). */
static int write_log(FILE *f, const struct fsp_iotrace *t)
{
	if (fsp_iolog_write(f, t, "device") != 0) {
		fprintf(stderr, "fsprism export: a file name fio cannot read back "
			"(empty, or with a blank)\n");
		return 2;
	}
	return 0;
}

static int write_out(const struct fsp_iotrace *t, const char *path)
{
	if (!path) {
		int rc = write_log(stdout, t);
		if (!rc && (fflush(stdout) != 0 || ferror(stdout)))
			return fsp_file_error("export", "stdout", "cannot write", errno, 1);
		return rc;
	}
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		fprintf(stderr, "fsprism export: %s: name too long\n", path);
		return 2;
	}
	FILE *f = fopen(tmp, "w");
	if (!f)
		return fsp_file_error("export", tmp, "cannot create", errno, 1);
	int rc = write_log(f, t);
	int werr = ferror(f) ? EIO : 0;
	if (fclose(f) != 0 && !werr)
		werr = errno;
	if (!rc && !werr && rename(tmp, path) != 0)
		werr = errno;
	if (rc || werr) {
		unlink(tmp);
		return rc ? rc : fsp_file_error("export", path, "cannot write", werr, 1);
	}
	return 0;
}

int cmd_export(int argc, char **argv)
{
	enum { OPT_RUN = 256, OPT_FORMAT };
	static const struct option longopts[] = {
		{ "run", required_argument, NULL, OPT_RUN },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	int64_t run = 0;
	const char *output = NULL;
	struct fsp_opt g;
	fsp_opt_init(&g, "export", export_usage, longopts, "ho:", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		switch (c) {
		case FSP_OPT_EXIT:
			return g.status;
		case OPT_RUN:
			if (fsp_opt_run_id(g.arg, &run) < 0)
				return fsp_usage_error("export", "--run: '%s' is not a run id", g.arg);
			break;
		case OPT_FORMAT:
			if (strcmp(g.arg, "fio-iolog"))
				return fsp_usage_error("export", "--format: '%s' is not fio-iolog",
						       g.arg);
			break;
		case 'o':
			output = g.arg;
			break;
		}
	}
	int rc = fsp_opt_one_database(&g);
	if (rc)
		return rc;
	const char *db = g.pos[0];
	char err[1024];
	struct fsp_store *st = fsp_store_open_readonly(db, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fsprism export: %s\n", err);
		return 1;
	}
	if (!run)
		run = fsp_store_latest_run(st);
	struct fsp_run_row row;
	int found = run > 0 ? fsp_store_load_run(st, run, &row) : 0;
	struct fsp_iotrace t;
	memset(&t, 0, sizeof(t));
	struct fsp_trace_skips sk;
	rc = 2;
	if (found < 0) {
		fprintf(stderr, "fsprism export: %s: %s\n", db, fsp_store_errmsg(st));
		rc = 1;
	} else if (!found) {
		fprintf(stderr, "fsprism export: %s has no run %" PRId64 "\n", db, run);
	} else if (!row.kind || (strcmp(row.kind, "run") && strcmp(row.kind, "mount"))) {
		fprintf(stderr, "fsprism export: run %" PRId64 " of %s is a '%s' run: only "
			"a run or a mount records IOs\n", run, db, row.kind ? row.kind : "?");
	} else if (!row.record_mode || strcmp(row.record_mode, "full")) {
		fprintf(stderr, "fsprism export: run %" PRId64 " of %s was recorded with "
			"--record=%s: only --record=full keeps every IO\n", run, db,
			row.record_mode ? row.record_mode : "?");
	} else if (row.dropped > 0) {
		fprintf(stderr, "fsprism export: run %" PRId64 " of %s lost %" PRId64
			" of its IOs' records: not a whole trace\n", run, db, row.dropped);
	} else if (fsp_trace_of_run(st, run, &t, &sk, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism export: cannot read the IOs of run %" PRId64 " of %s: %s\n",
			run, db, err);
		rc = 1;
	} else if (!t.n) {
		fprintf(stderr, "fsprism export: run %" PRId64 " of %s has no read, write or "
			"fsync\n", run, db);
	} else {
		/* an engine run's IOs are all of its target (node 0) */
		if (!strcmp(row.kind, "run") && row.backing_path && t.nfiles == 1) {
			char *name = strdup(row.backing_path);
			if (name) {
				free(t.file[0].name);
				t.file[0].name = name;
			}
		}
		rc = write_out(&t, output);
	}
	if (found > 0)
		fsp_run_row_free(&row);
	fsp_iotrace_free(&t);
	fsp_store_close(st);
	return rc;
}

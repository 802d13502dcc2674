/*
 * import.c - `fsprism import FILE.json`: fio's JSON results stored as runs
 * (bench/engine/fiojson.h), so that stats, compare-style tables and the
 * report read them as they read fsprism's own runs (docs/fio.md).
 *
 * The file is read and checked before the database is opened: a file that
 * is not fio's JSON leaves no database and no run behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench/engine/fiojson.h"
#include "src/cli/cli.h"
#include "src/cli/opt.h"
#include "src/db/store.h"

static void import_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism import FILE.json [--db DB] [--label NAME]\n"
"\n"
"Store fio's results (fio --output-format=json+) as runs in the database: each\n"
"fio job a step, its latency bins a histogram, so that stats, report and\n"
"compare-style tables work on them. A result of fio --client with several\n"
"servers becomes one run per host, labelled by the host, under one run of\n"
"kind fio-clients. See docs/fio.md for what is kept and what is lost.\n"
"\n"
"options:\n"
"  --db FILE       results database (default ./fsprism.db)\n"
"  --label NAME    the run's label (default: fio's host name, if any)\n"
"\n"
"It prints the run ids. Exit 0; 1 when the file cannot be read or the\n"
"database written; 2 for a usage error or a file that is not fio's JSON (or\n"
"of an unsupported fio version).\n");
}

int cmd_import(int argc, char **argv)
{
	enum { OPT_DB = 256, OPT_LABEL };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "label", required_argument, NULL, OPT_LABEL },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	const char *db = "fsprism.db", *label = NULL;
	struct fsp_opt g;
	fsp_opt_init(&g, "import", import_usage, longopts, "h", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		switch (c) {
		case FSP_OPT_EXIT:
			return g.status;
		case OPT_DB:
			db = g.arg;
			break;
		case OPT_LABEL:
			label = g.arg;
			break;
		}
	}
	if (!g.npos)
		return fsp_usage_error("import", "no fio JSON file given");
	if (g.npos > 1)
		return fsp_usage_error("import", "unexpected argument '%s': one file only",
				       g.pos[1]);
	const char *path = g.pos[0];
	struct stat sb;
	if (stat(path, &sb) != 0)
		return fsp_file_error("import", path, NULL, errno, 0);
	if (!S_ISREG(sb.st_mode)) {
		fprintf(stderr, "fsprism import: %s: not a file\n", path);
		return 2;
	}
	/* a file we cannot read is a failure (1); a wrong one is bad input (2) */
	if (access(path, R_OK) != 0)
		return fsp_file_error("import", path, NULL, errno, 0);
	char err[1024];
	struct fsp_fio_result r;
	if (fsp_fio_json_load(path, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism import: %s\n", err);
		return 2;
	}
	struct stat dbst;
	int new_db = stat(db, &dbst) != 0; /* made here: removed again if nothing is stored */
	struct fsp_store *st = fsp_store_open(db, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fsprism import: %s\n", err);
		fsp_fio_result_free(&r);
		return 1;
	}
	int64_t *runs = calloc(r.nhosts, sizeof(*runs));
	char *cmdline = fsp_store_cmdline(argc, argv);
	struct fsp_fio_import o = { .label = label, .options = cmdline, .source = path };
	int64_t top = runs ? fsp_fio_store(st, &r, &o, runs, err, sizeof(err)) : -1;
	int rc = 0;
	if (top < 0) {
		fprintf(stderr, "fsprism import: %s: %s\n", db,
			runs ? err : "out of memory");
		rc = 1;
	} else if (r.nhosts == 1) {
		size_t nj = r.hosts[0].njobs;
		printf("run %" PRId64 ": %s, %zu job%s%s%s\n", top, r.version, nj,
		       nj == 1 ? "" : "s", *r.hosts[0].hostname ? " of " : "",
		       r.hosts[0].hostname);
	} else {
		printf("run %" PRId64 ": %s, %zu hosts\n", top, r.version, r.nhosts);
		for (size_t i = 0; i < r.nhosts; i++)
			printf("  run %" PRId64 ": %s, %zu job%s\n", runs[i], r.hosts[i].hostname,
			       r.hosts[i].njobs, r.hosts[i].njobs == 1 ? "" : "s");
	}
	free(cmdline);
	free(runs);
	fsp_fio_result_free(&r);
	fsp_store_close(st);
	if (rc && new_db)
		fsp_store_remove_files(db);
	return rc;
}

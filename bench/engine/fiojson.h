/*
 * fiojson.h - fio's JSON results (--output-format=json+ or json), read
 * into runs of the database.
 *
 * `fsprism import` stores a fio result so that stats, compare-style tables
 * and the report work on it; `fsprism run --hosts` imports what fio
 * --client returned. Each fio job becomes a step; its latency histogram
 * (json+'s lat_ns.bins when fio ran with lat_percentiles=1, as the jobs
 * fsprism writes do, else clat_ns.bins: fio's buckets, 64 per power of
 * two) becomes the step's read and write histograms. fio's "client_stats" (one
 * entry per job and host) become one run per host, named by the host.
 * Parsing uses json-c; docs/fio.md says what is kept and what is lost.
 */
#ifndef FSP_BENCH_FIOJSON_H
#define FSP_BENCH_FIOJSON_H

/* fio versions read: 3.x (fio 3.0 of 2017 on; the JSON's layout since) */
#define FSP_FIO_MAJOR 3

#include <stddef.h>
#include <stdint.h>
#include "src/base/hist.h"
#include "src/db/store.h"

/* One direction (read, write) of one fio job. */
struct fsp_fio_dir {
	uint64_t ios, bytes;
	uint64_t runtime_ms;   /* fio's "runtime" of the direction */
	struct fsp_hist *hist; /* fio's bins; NULL when the direction did no IO */
	int from_lat;          /* 1: fio's lat_ns (submission + completion), 0: clat_ns */
};

struct fsp_fio_job {
	char *name;
	int error;            /* fio's "error" (errno) of the job; 0 = none */
	uint64_t bs;          /* job options, 0 when absent */
	unsigned iodepth;
	int read_pct;         /* -1 when unknown */
	char *rw;             /* fio's rw= ("randread", ...); NULL when absent */
	uint64_t job_runtime_ms;
	struct fsp_fio_dir dir[2]; /* [0] read, [1] write */
};

struct fsp_fio_host {
	char *hostname;       /* "" for a result of fio without --client; "NAME:PORT"
			       * when two servers of one name differ by port */
	unsigned port;        /* the server's port (fio --client), 0 if none */
	struct fsp_fio_job *jobs;
	size_t njobs;
};

struct fsp_fio_result {
	char *version;        /* "fio-3.33" */
	uint64_t timestamp;   /* fio's "timestamp" (seconds since the epoch) */
	struct fsp_fio_host *hosts;
	size_t nhosts;
};

/*
 * Parse text (len bytes, named name in messages) into *r. 0, or -1 with
 * one line in err: "NAME: not JSON (at byte 120: unexpected end of data)",
 * "NAME: JSON but not fio's (no \"fio version\")", "NAME: fio version
 * 'fio-2.1' is not supported (fio 3.x)", "NAME: job 'x' has no latency
 * bins (run fio with --output-format=json+)"; *r is then empty. Jobs named
 * FSP_FIO_IDLE_PREFIX... (the idle between steps, fiowrite.h) and fio
 * --client's sum "All clients" are skipped.
 */
int fsp_fio_json_parse(const char *text, size_t len, const char *name,
		       struct fsp_fio_result *r, char *err, size_t errlen);
/* The same from a file ("PATH: No such file or directory"). */
int fsp_fio_json_load(const char *path, struct fsp_fio_result *r, char *err, size_t errlen);
void fsp_fio_result_free(struct fsp_fio_result *r);

/* The host of r that fio --client named hostname on port (fio's own
 * "hostname" and "port"), also when its name became "NAME:PORT"; NULL if
 * none. */
const struct fsp_fio_host *fsp_fio_host_of(const struct fsp_fio_result *r, const char *hostname,
					   unsigned port);

struct fsp_fio_import {
	const char *label;    /* one host: the run's label (NULL: the host's name, if any);
			       * several: the fio-clients run's */
	const char *options;  /* runs.options: the command line */
	const char *source;   /* stored as the attribute fio.source (the file) */
	int64_t parent;       /* 0: none */
};

/*
 * Store r as runs of kind "run": one per host, labelled by its hostname
 * (a caller may set a host's hostname to another name first). Several
 * hosts are children of o->parent when given, else of a new run of kind
 * "fio-clients" labelled o->label; one host's run is o->parent's child
 * (or no one's). runs[i] gets host i's run id (runs may be NULL). Returns
 * the one host's run id, or that of the run several are under (the
 * fio-clients run or o->parent), or -1 with one line in err and nothing
 * stored (one transaction).
 */
int64_t fsp_fio_store(struct fsp_store *st, const struct fsp_fio_result *r,
		      const struct fsp_fio_import *o, int64_t *runs, char *err, size_t errlen);

#endif

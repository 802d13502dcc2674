/*
 * replay.c - `fsprism replay SOURCE TARGET`: a captured workload run again
 * at its times (docs/replay.md). SOURCE is a results database's mount run
 * recorded with --record=full (DB or DB:RUN), a fio iolog (v2, v3) or a
 * blktrace capture (NAME or NAME.blktrace.N); all become one trace
 * (bench/engine/iotrace.h). TARGET is a raw block device (it passes the
 * raw-write checks, src/sys/target.c, first), a regular file, or a
 * directory, under which a file-level trace's files are recreated. The
 * replay itself is bench/engine/trace_replay.c; this file finds the source,
 * lays the trace out on the target, prints the result and stores it (a
 * kind='run' run labelled 'replay', docs/schema.md).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench/engine/blkparse.h"
#include "bench/engine/iolog.h"
#include "bench/engine/replay.h"
#include "bench/engine/iotrace.h"
#include "bench/engine/trace_replay.h"
#include "src/base/ops.h"
#include "src/base/quantile.h"
#include "src/base/units.h"
#include "src/cli/cli.h"
#include "src/cli/replay.h"
#include "src/cli/opt.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/sys/target.h"

#define CMD "replay"
#define LAYOUT_ALIGN 4096u /* files laid out on a device or one file: at 4 KiB boundaries */
#define DIRECT_ALIGN_FILE 4096u /* O_DIRECT on a file: offsets and sizes of 4 KiB */

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: fsprism replay SOURCE TARGET [options]\n"
"       fsprism replay SOURCE --dump [--max-idle DUR | --keep-idle] [--time-scale X]\n"
"\n"
"Replay a captured workload on a target at its recorded times, keeping its\n"
"order, sizes and queue depth, and say how closely the replay kept the times.\n"
"\n"
"SOURCE is one of:\n"
"  DB[:RUN]           a mount run recorded with --record=full (default: the\n"
"                     newest mount run of the results database DB)\n"
"  IOLOG              a fio iolog (write_iolog=), version 2 or 3\n"
"  NAME               a blktrace capture: NAME.blktrace.0, .1, ... (or one such file)\n"
"TARGET is a raw block device (offsets as in the trace; refused when it is\n"
"mounted or carries a file system unless --destroy-data), a regular file, or\n"
"a directory: a file-level trace's files are recreated in it (named ino<N>\n"
"after a mount's inode numbers, or after the iolog's paths; a block-level\n"
"trace becomes the file 'device'), each created and filled as far as the\n"
"trace reads it before the replay starts.\n"
"\n"
"options:\n"
"  --max-idle DUR     shrink every idle gap (nothing in flight) longer than\n"
"                     DUR to DUR (default 25ms)\n"
"  --keep-idle        keep every idle gap as recorded\n"
"  --time-scale X     multiply the trace's times by X (default 1; 0.5: twice as\n"
"                     fast; 0: as fast as the order allows)\n"
"  --late DUR         an IO issued more than DUR after its time is late\n"
"                     (default 1ms)\n"
"  --qd N             a trace without completion times (an iolog): at most N\n"
"                     IOs of one thread in flight (default 1)\n"
"  --db FILE          store the result as a run in FILE (default: the source\n"
"                     database, when SOURCE is one; else not stored)\n"
"  --destroy-data     replay onto a device that carries a file system or other\n"
"                     signature (never onto a mounted or held one)\n"
"  --dump             print the trace (with its schedule) as text and replay\n"
"                     nothing: fsprism replay SOURCE --dump\n"
"  -h, --help         this help\n"
"\n"
"It prints MB/s, mean and p99 latency of reads and writes, busy time (the\n"
"share of wall time with an IO in flight) and the replay's fidelity: each\n"
"IO's lag behind its intended issue time (p50, p99, max) and the IOs late by\n"
"more than --late. 'fsprism stats DB --run N' shows a stored replay.\n"
"Exit 0; 1 when the replay failed; 2 for a usage error or bad input.\n");
}

/* ---- sources --------------------------------------------------------------- */

static int is_sqlite(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char h[16];
	size_t n = fread(h, 1, 16, f);
	fclose(f);
	return n == 16 && !memcmp(h, "SQLite format 3", 16);
}

struct mload {
	struct fsp_iotrace *t;
	struct fsp_trace_skips *sk;
	int oom;
};

static int from_op(void *arg, const struct fsp_replay_op_row *r)
{
	struct mload *m = arg;
	int op;
	uint64_t len = 0;
	switch (r->op) {
	case FSP_OP_READ: op = FSP_IOTRACE_READ; len = r->bytes; break;
	case FSP_OP_WRITE: op = FSP_IOTRACE_WRITE; len = r->length; break;
	case FSP_OP_FSYNC: op = FSP_IOTRACE_FSYNC; break;
	case FSP_OP_DEV_READ: case FSP_OP_DEV_WRITE_DATA: case FSP_OP_DEV_WRITE_JOURNAL:
	case FSP_OP_DEV_WRITE_META: case FSP_OP_DEV_WRITE_CKPT: case FSP_OP_DEV_FLUSH:
		m->sk->other++; /* the emulation's own device IO: not the application's */
		return 0;
	default:
		m->sk->meta++; /* lookups, creates, opens, ...: their files are made before */
		return 0;
	}
	if (r->result) {
		m->sk->failed_ops++;
		return 0;
	}
	if ((op == FSP_IOTRACE_READ || op == FSP_IOTRACE_WRITE) && !len)
		return 0; /* a read at the end of the file: nothing to replay */
	char name[32];
	snprintf(name, sizeof name, "ino%" PRIu64, r->node);
	int64_t id = fsp_iotrace_file(m->t, name);
	struct fsp_iotrace_io io = {
		.issue_ns = r->start_ns, .complete_ns = r->start_ns + r->total_ns,
		.offset = op == FSP_IOTRACE_FSYNC ? 0 : r->offset,
		.len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len), .file = (uint32_t)id,
		.thread = (uint32_t)r->pid, .op = (uint8_t)op };
	if (id < 0 || fsp_iotrace_add(m->t, &io)) {
		m->oom = 1;
		return 1;
	}
	return 0;
}

int fsp_trace_of_run(struct fsp_store *st, int64_t run, struct fsp_iotrace *t,
		     struct fsp_trace_skips *sk, char *err, size_t errlen)
{
	memset(sk, 0, sizeof(*sk));
	struct mload m = { .t = t, .sk = sk };
	if (fsp_store_each_trace_op(st, run, from_op, &m) || m.oom) {
		snprintf(err, errlen, "%s", m.oom ? "out of memory" : fsp_store_errmsg(st));
		return -1;
	}
	t->has_complete = 1;
	fsp_iotrace_sort(t);
	return 0;
}

struct source {
	char kind[32];    /* "mount run 3", "iolog v3", "blktrace" */
	char path[4096];  /* the database, iolog or capture */
	int64_t run;      /* a mount run: its id */
	uint64_t meta, failed_ops;
	int is_db;
};

/* 0, 2 (bad input: said) or 1 (could not read: said) */
static int load_source(const char *arg, struct source *s, struct fsp_iotrace *t)
{
	char err[512];
	snprintf(s->path, sizeof s->path, "%s", arg);
	const char *colon = strrchr(arg, ':');
	if (!is_sqlite(s->path) && colon && colon != arg) {
		snprintf(s->path, sizeof s->path, "%.*s", (int)(colon - arg), arg);
		if (is_sqlite(s->path)) {
			if (fsp_opt_run_id(colon + 1, &s->run) < 0) {
				fprintf(stderr, "fsprism replay: %s: the run after ':' must be a run id, not '%s'\n",
					arg, colon + 1);
				return 2;
			}
		} else {
			snprintf(s->path, sizeof s->path, "%s", arg);
		}
	}
	if (is_sqlite(s->path)) {
		s->is_db = 1;
		struct fsp_store *st = fsp_store_open_readonly(s->path, err, sizeof err);
		if (!st) {
			fprintf(stderr, "fsprism replay: %s\n", err);
			return 1;
		}
		int rc = 2;
		if (!s->run)
			s->run = fsp_store_latest_run_of_kind(st, "mount");
		struct fsp_run_row row;
		int found = s->run > 0 ? fsp_store_load_run(st, s->run, &row) : 0;
		if (s->run <= 0) {
			fprintf(stderr, "fsprism replay: %s has no mount run to replay\n", s->path);
		} else if (found <= 0) {
			fprintf(stderr, "fsprism replay: %s has no run %" PRId64 "\n", s->path, s->run);
		} else if (!row.kind || strcmp(row.kind, "mount")) {
			fprintf(stderr, "fsprism replay: run %" PRId64 " of %s is a '%s' run, not a mount run\n",
				s->run, s->path, row.kind ? row.kind : "?");
		} else if (!row.record_mode || strcmp(row.record_mode, "full")) {
			fprintf(stderr, "fsprism replay: mount run %" PRId64 " of %s was recorded with --record=%s: "
				"only --record=full keeps every request\n", s->run, s->path,
				row.record_mode ? row.record_mode : "?");
		} else if (row.dropped > 0) {
			fprintf(stderr, "fsprism replay: mount run %" PRId64 " of %s lost %" PRId64
				" of its requests' records: not a whole trace\n", s->run, s->path,
				row.dropped);
		} else {
			struct fsp_trace_skips m;
			if (fsp_trace_of_run(st, s->run, t, &m, err, sizeof err)) {
				fprintf(stderr, "fsprism replay: cannot read the requests of run %" PRId64
					" of %s: %s\n", s->run, s->path, err);
				rc = 1;
			} else if (!t->n) {
				fprintf(stderr, "fsprism replay: mount run %" PRId64 " of %s has no read, write or fsync to replay\n",
					s->run, s->path);
			} else {
				s->meta = m.meta;
				s->failed_ops = m.failed_ops;
				snprintf(s->kind, sizeof s->kind, "mount run %" PRId64, s->run);
				rc = 0;
			}
		}
		if (found > 0 || s->run > 0)
			fsp_run_row_free(&row);
		fsp_store_close(st);
		return rc;
	}
	struct stat sb;
	if (fsp_iolog_is(s->path)) {
		FILE *f = fopen(s->path, "re");
		char head[32] = "";
		if (f) {
			if (!fgets(head, sizeof head, f))
				head[0] = 0;
			fclose(f);
		}
		if (fsp_iolog_load(s->path, t, err, sizeof err)) {
			fprintf(stderr, "fsprism replay: %s\n", err);
			return 2;
		}
		snprintf(s->kind, sizeof s->kind, "iolog v%c", head[12] ? head[12] : '?');
		if (!t->n) {
			fprintf(stderr, "fsprism replay: %s has no IO to replay\n", s->path);
			return 2;
		}
		return 0;
	}
	if (fsp_blktrace_is(s->path)) {
		if (fsp_blktrace_load(s->path, t, err, sizeof err)) {
			fprintf(stderr, "fsprism replay: %s\n", err);
			return 2;
		}
		snprintf(s->kind, sizeof s->kind, "blktrace");
		return 0;
	}
	if (stat(s->path, &sb)) {
		fprintf(stderr, "fsprism replay: %s: %s\n", s->path, strerror(errno));
		return 2;
	}
	fprintf(stderr, "fsprism replay: %s is not a results database, a fio iolog or a blktrace capture\n",
		s->path);
	return 2;
}

/* --dump: the trace as text (docs/replay.md, "The trace as text") */
static void print_trace(const struct fsp_iotrace *t, const struct source *s,
			const struct fsp_treplay_opts *o)
{
	uint64_t *at = malloc((t->n ? t->n : 1) * sizeof *at);
	if (at)
		fsp_iotrace_schedule(t, o->max_idle_ns, o->scale, at);
	printf("# fsprism trace 1: %s %s\n", s->kind, s->path);
	printf("# %zu IOs, %zu files, completion times %s\n", t->n, t->nfiles,
	       t->has_complete ? "known" : "unknown");
	printf("# file ID SIZE READ_END NAME\n");
	for (size_t k = 0; k < t->nfiles; k++)
		printf("file %zu %" PRIu64 " %" PRIu64 " %s\n", k, t->file[k].size,
		       t->file[k].read_end, t->file[k].name);
	printf("# io ISSUE_NS COMPLETE_NS AT_NS THREAD OP FILE OFFSET LENGTH FUA"
	       " (AT_NS: the schedule's time, after clipping and scaling; FILE -: the device)\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct fsp_iotrace_io *e = &t->io[i];
		char file[24] = "-", done[24] = "-";
		if (e->file != FSP_IOTRACE_DEVICE)
			snprintf(file, sizeof file, "%" PRIu32, e->file);
		if (t->has_complete)
			snprintf(done, sizeof done, "%" PRIu64, e->complete_ns);
		printf("io %" PRIu64 " %s %" PRIu64 " %" PRIu32 " %s %s %" PRIu64 " %" PRIu32 " %d\n",
		       e->issue_ns, done, at ? at[i] : e->issue_ns, e->thread,
		       fsp_iotrace_op_name(e->op), file, e->offset, e->len, e->fua);
	}
	free(at);
}

/* ---- targets --------------------------------------------------------------- */

enum { TGT_DEV, TGT_FILE, TGT_DIR };

struct target {
	int kind;
	const char *path;
	struct fsp_treplay_file *f; /* nfiles + 1: the last one for block-level IO */
	size_t nf;
	char **created; /* files made in a directory, removed on failure */
	size_t ncreated;
	unsigned lbs;
};

static const char *kind_name(int k)
{
	return k == TGT_DEV ? "raw device" : k == TGT_FILE ? "file" : "directory";
}

/* the iolog's path as one file name: "/tmp/a/b" -> "tmp_a_b" */
static void file_name(const char *src, char *out, size_t len)
{
	while (*src == '/')
		src++;
	snprintf(out, len, "%s", *src ? src : "file");
	for (char *p = out; *p; p++)
		if (*p == '/')
			*p = '_';
	if (!strcmp(out, ".") || !strcmp(out, ".."))
		snprintf(out, len, "file");
}

/* write a recognizable fill over [from, to) of fd, then make it stable */
static int fill(int fd, uint64_t from, uint64_t to)
{
	static char buf[1 << 20];
	if (!buf[0])
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = "fsprism fill    "[i % 16];
	for (uint64_t o = from; o < to;) {
		size_t n = to - o < sizeof buf ? (size_t)(to - o) : sizeof buf;
		ssize_t w = pwrite(fd, buf, n, (off_t)o);
		if (w <= 0)
			return -1;
		o += (uint64_t)w;
	}
	if (to > from && fdatasync(fd))
		return -1;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return 0;
}

static void target_close(struct target *g, int remove_created)
{
	/* a device or a file: one pair of descriptors, shared by every trace file */
	for (size_t i = 0; g->f && i < (g->kind == TGT_DIR ? g->nf : 1); i++) {
		if (g->f[i].fd_direct >= 0)
			close(g->f[i].fd_direct);
		if (g->f[i].fd_buffered >= 0)
			close(g->f[i].fd_buffered);
	}
	for (size_t i = 0; i < g->ncreated; i++) {
		if (remove_created)
			unlink(g->created[i]);
		free(g->created[i]);
	}
	free(g->created);
	free(g->f);
	g->f = NULL;
	g->created = NULL;
	g->nf = g->ncreated = 0;
}

/* a device or one file: every trace file at its base, 4 KiB aligned */
static uint64_t lay_out(const struct fsp_iotrace *t, struct target *g)
{
	uint64_t end = 0;
	for (size_t k = 0; k < t->nfiles; k++) {
		g->f[k].base = end;
		uint64_t sz = t->file[k].size;
		end += (sz + LAYOUT_ALIGN - 1) / LAYOUT_ALIGN * LAYOUT_ALIGN;
		if (t->nfiles == 1)
			end = sz; /* one file: its offsets are the target's */
	}
	g->f[t->nfiles].base = 0;
	return end > t->device_size ? end : t->device_size;
}

/* 0, 2 (bad input: said) or 1 (failed: said); nothing left behind on error */
static int target_open(const char *path, const struct fsp_iotrace *t, int destroy, struct target *g)
{
	char err[512];
	struct stat sb;
	g->path = path;
	g->nf = t->nfiles + 1;
	g->f = calloc(g->nf, sizeof *g->f);
	if (!g->f) {
		fprintf(stderr, "fsprism replay: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < g->nf; i++)
		g->f[i] = (struct fsp_treplay_file){ .fd_direct = -1, .fd_buffered = -1 };
	if (stat(path, &sb)) {
		fprintf(stderr, "fsprism replay: target %s: %s (a device, a file or a directory)\n",
			path, strerror(errno));
		return 2;
	}
	g->kind = S_ISBLK(sb.st_mode) ? TGT_DEV : S_ISREG(sb.st_mode) ? TGT_FILE :
		  S_ISDIR(sb.st_mode) ? TGT_DIR : -1;
	if (g->kind < 0) {
		fprintf(stderr, "fsprism replay: target %s is not a block device, a regular file or a directory\n",
			path);
		return 2;
	}
	if (g->kind == TGT_DEV || g->kind == TGT_FILE) {
		uint64_t size = 0;
		unsigned lbs = 512;
		if (g->kind == TGT_DEV && fsp_target_check_raw_write(path, destroy, err, sizeof err)) {
			fprintf(stderr, "fsprism replay: %s\n", err);
			return 2;
		}
		if (fsp_target_geometry(path, &size, &lbs) || !lbs)
			lbs = 512;
		g->lbs = lbs;
		uint64_t need = lay_out(t, g);
		if (g->kind == TGT_DEV && need > size) {
			fprintf(stderr, "fsprism replay: the trace reaches byte %" PRIu64 ", beyond the end of %s (%" PRIu64
				" bytes)\n", need, path, size);
			return 2;
		}
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return fsp_file_error(CMD, path, "cannot open", errno, 1);
		int dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
		if (g->kind == TGT_FILE && size < need && fill(fd, size, need)) {
			int e = errno;
			close(fd);
			if (dfd >= 0)
				close(dfd);
			return fsp_file_error(CMD, path, "cannot extend", e, 1);
		}
		unsigned align = g->kind == TGT_DEV ? lbs : DIRECT_ALIGN_FILE;
		for (size_t i = 0; i < g->nf; i++) {
			g->f[i].fd_buffered = fd;
			g->f[i].fd_direct = dfd;
			g->f[i].align = align;
		}
		return 0;
	}
	/* a directory: one file per trace file, "device" for block-level IO,
	 * two descriptors each, all open at once */
	g->lbs = DIRECT_ALIGN_FILE;
	struct rlimit rl;
	rlim_t need_fds = (rlim_t)(2 * g->nf + 64);
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < need_fds) {
		rl.rlim_cur = rl.rlim_max < need_fds ? rl.rlim_max : need_fds;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < need_fds) {
			fprintf(stderr, "fsprism replay: the trace has %zu files, which need %llu descriptors "
				"open at once; the limit is %llu (ulimit -n)\n", t->nfiles,
				(unsigned long long)need_fds, (unsigned long long)rl.rlim_cur);
			return 2;
		}
	}
	g->created = calloc(g->nf, sizeof *g->created);
	if (!g->created) {
		fprintf(stderr, "fsprism replay: out of memory\n");
		return 1;
	}
	int block = t->device_size > 0;
	/* names first, all of them checked before anything is made */
	char (*names)[256] = calloc(g->nf, sizeof *names);
	if (!names) {
		fprintf(stderr, "fsprism replay: out of memory\n");
		return 1;
	}
	int rc = 0;
	for (size_t k = 0; k < g->nf && !rc; k++) {
		if (k < t->nfiles)
			file_name(t->file[k].name, names[k], sizeof names[k]);
		else if (block)
			snprintf(names[k], sizeof names[k], "device");
		else
			continue;
		for (size_t j = 0; j < k; j++)
			if (!strcmp(names[j], names[k])) {
				fprintf(stderr, "fsprism replay: two of the trace's files would both be %s/%s\n",
					path, names[k]);
				rc = 2;
			}
		char p[4352];
		snprintf(p, sizeof p, "%s/%s", path, names[k]);
		if (!rc && !lstat(p, &sb)) {
			fprintf(stderr, "fsprism replay: %s exists: the replay makes the trace's files itself "
				"(give a directory without them)\n", p);
			rc = 2;
		}
	}
	for (size_t k = 0; k < g->nf && !rc; k++) {
		if (!names[k][0])
			continue;
		char p[4352];
		snprintf(p, sizeof p, "%s/%s", path, names[k]);
		int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			rc = fsp_file_error(CMD, p, "cannot create", errno, 1);
			break;
		}
		g->created[g->ncreated++] = strdup(p);
		g->f[k].fd_buffered = fd;
		uint64_t read_end = k < t->nfiles ? t->file[k].read_end : t->device_size;
		if (fill(fd, 0, read_end)) {
			rc = fsp_file_error(CMD, p, "cannot fill", errno, 1);
			break;
		}
		g->f[k].fd_direct = open(p, O_RDWR | O_DIRECT | O_CLOEXEC);
		g->f[k].align = DIRECT_ALIGN_FILE;
	}
	free(names);
	if (rc)
		target_close(g, 1);
	return rc;
}

/* ---- results --------------------------------------------------------------- */

static double mean(const uint64_t *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)v[i];
	return n ? s / (double)n : 0;
}

static void dur(uint64_t ns, char *b, size_t len)
{
	if (ns < 10000)
		snprintf(b, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000)
		snprintf(b, len, "%.0f us", (double)ns / 1e3);
	else if (ns < 1000000000ull)
		snprintf(b, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(b, len, "%.2f s", (double)ns / 1e9);
}

static void print_dir(const char *name, uint64_t n, uint64_t bytes, const uint64_t *lat,
		      const uint64_t *ilat, size_t nlat, uint64_t wall)
{
	char m[32], p[32], b[32], ip[32] = "";
	if (!n) {
		printf("  %-6s none\n", name);
		return;
	}
	dur((uint64_t)mean(lat, nlat), m, sizeof m);
	dur(fsp_quantile_u64(lat, nlat, 0.99), p, sizeof p);
	if (ilat)
		dur(fsp_quantile_u64(ilat, nlat, 0.99), ip, sizeof ip);
	if (bytes) {
		fsp_format_bytes(bytes, b, sizeof b);
		printf("  %-6s %8" PRIu64 " IOs  %10s  %8.2f MB/s  mean %s  p99 %s (%s from its time)\n",
		       name, n, b, wall ? (double)bytes / 1e6 / ((double)wall / 1e9) : 0.0, m, p, ip);
	} else {
		printf("  %-6s %8" PRIu64 " IOs  mean %s  p99 %s\n", name, n, m, p);
	}
}

static void set(struct fsp_store *st, int64_t run, const char *k, uint64_t v)
{
	fsp_store_set_attr_u64(st, run, k, v);
}

/* The run, begun before the replay so that its times are the replay's:
 * its id, or -1 (said). */
static int64_t store_begin(struct fsp_store *st, const char *dbpath, int argc, char **argv,
			   const char *target, int tkind)
{
	char opts[2048] = "fsprism";
	for (int i = 0; i < argc; i++) {
		size_t l = strlen(opts);
		snprintf(opts + l, sizeof opts - l, " %s", argv[i]);
	}
	struct fsp_run_info info = { .kind = "run", .options = opts, .backing_path = target,
				     .backing_device = tkind == TGT_DEV ? target : NULL,
				     .backing_fstype = tkind == TGT_DEV ? "block" : NULL,
				     .record_mode = "off", .label = "replay" };
	int64_t run = fsp_store_begin_run(st, &info);
	if (run < 0)
		fprintf(stderr, "fsprism replay: cannot store the result in %s\n", dbpath);
	return run;
}

static void store(struct fsp_store *st, int64_t run, int tkind, const struct source *s,
		  const struct fsp_iotrace *t, const struct fsp_treplay_opts *o,
		  const struct fsp_treplay_result *r, int failed)
{
	char v[64];
	fsp_store_set_attr(st, run, "replay.source", s->kind);
	fsp_store_set_attr(st, run, "replay.source_path", s->path);
	if (s->is_db)
		set(st, run, "replay.of", (uint64_t)s->run);
	fsp_store_set_attr(st, run, "replay.target", kind_name(tkind));
	set(st, run, "replay.trace_ios", t->n);
	set(st, run, "replay.files", t->nfiles);
	set(st, run, "replay.reads", r->ios[FSP_IOTRACE_READ]);
	set(st, run, "replay.writes", r->ios[FSP_IOTRACE_WRITE]);
	set(st, run, "replay.syncs", r->ios[FSP_IOTRACE_FSYNC] + r->ios[FSP_IOTRACE_DATASYNC]);
	set(st, run, "replay.read_bytes", r->read_bytes);
	set(st, run, "replay.write_bytes", r->write_bytes);
	set(st, run, "replay.skipped", r->skipped);
	set(st, run, "replay.buffered", r->buffered);
	set(st, run, "replay.truncated", r->truncated);
	set(st, run, "replay.read_mean_ns", (uint64_t)mean(r->read_lat_ns, r->nread));
	set(st, run, "replay.read_p99_ns", fsp_quantile_u64(r->read_lat_ns, r->nread, 0.99));
	set(st, run, "replay.write_mean_ns", (uint64_t)mean(r->write_lat_ns, r->nwrite));
	set(st, run, "replay.write_p99_ns", fsp_quantile_u64(r->write_lat_ns, r->nwrite, 0.99));
	set(st, run, "replay.read_p99_from_intended_ns",
	    fsp_quantile_u64(r->read_ilat_ns, r->nread, 0.99));
	set(st, run, "replay.write_p99_from_intended_ns",
	    fsp_quantile_u64(r->write_ilat_ns, r->nwrite, 0.99));
	uint64_t wall = r->ended_ns - r->started_ns;
	set(st, run, "replay.wall_ns", wall);
	set(st, run, "replay.busy_ns", r->busy_ns);
	snprintf(v, sizeof v, "%.2f", wall ? 100.0 * (double)r->busy_ns / (double)wall : 0.0);
	fsp_store_set_attr(st, run, "replay.busy_pct", v);
	set(st, run, "replay.intended_ns", r->intended_ns);
	set(st, run, "replay.clipped_ns", r->clipped_ns);
	if (o->max_idle_ns == FSP_IOTRACE_KEEP_IDLE)
		fsp_store_set_attr(st, run, "replay.max_idle_ns", "keep");
	else
		set(st, run, "replay.max_idle_ns", o->max_idle_ns);
	snprintf(v, sizeof v, "%g", o->scale);
	fsp_store_set_attr(st, run, "replay.time_scale", v);
	set(st, run, "replay.lag_p50_ns", fsp_quantile_u64(r->lag_ns, r->nlag, 0.5));
	set(st, run, "replay.lag_p99_ns", fsp_quantile_u64(r->lag_ns, r->nlag, 0.99));
	set(st, run, "replay.lag_max_ns", r->nlag ? r->lag_ns[r->nlag - 1] : 0);
	set(st, run, "replay.late", r->late);
	set(st, run, "replay.self_lag_p50_ns", fsp_quantile_u64(r->self_lag_ns, r->nlag, 0.5));
	set(st, run, "replay.self_lag_p99_ns", fsp_quantile_u64(r->self_lag_ns, r->nlag, 0.99));
	set(st, run, "replay.self_lag_max_ns", r->nlag ? r->self_lag_ns[r->nlag - 1] : 0);
	set(st, run, "replay.late_self", r->late_self);
	set(st, run, "replay.late_ns", o->late_ns);
	set(st, run, "replay.qd_max", r->depth_max);
	snprintf(v, sizeof v, "%.2f", r->submitted ? (double)r->depth_sum / (double)r->submitted : 0.0);
	fsp_store_set_attr(st, run, "replay.qd_mean", v);
	if (t->has_complete)
		set(st, run, "replay.recorded_qd_max", r->recorded_depth_max);
	else
		set(st, run, "replay.qd_limit", o->qd);
	if (t->unpaired)
		set(st, run, "replay.unpaired", t->unpaired);
	if (stop_sig)
		fsp_store_set_attr(st, run, "interrupted", "1");
	else if (failed)
		fsp_store_set_attr(st, run, "failed", "1");
	struct fsp_step_row row = {
		.step = 0, .label = "replay", .access = "trace", .pattern = "replay",
		.qd = r->depth_max, .started_ns = r->started_ns, .ended_ns = r->ended_ns,
		.busy_ns = r->busy_ns, .read_ios = r->ios[FSP_IOTRACE_READ],
		.write_ios = r->ios[FSP_IOTRACE_WRITE], .read_bytes = r->read_bytes,
		.write_bytes = r->write_bytes };
	fsp_store_tx_begin(st);
	fsp_store_add_step(st, run, &row);
	fsp_store_tx_commit(st);
	fsp_store_end_run(st, run, 0, 0);
}

int cmd_replay(int argc, char **argv)
{
	enum { OPT_MAX_IDLE = 256, OPT_KEEP_IDLE, OPT_SCALE, OPT_LATE, OPT_QD, OPT_DB,
	       OPT_DESTROY, OPT_DUMP };
	static const struct option longopts[] = {
		{ "max-idle", required_argument, NULL, OPT_MAX_IDLE },
		{ "keep-idle", no_argument, NULL, OPT_KEEP_IDLE },
		{ "time-scale", required_argument, NULL, OPT_SCALE },
		{ "late", required_argument, NULL, OPT_LATE },
		{ "qd", required_argument, NULL, OPT_QD },
		{ "db", required_argument, NULL, OPT_DB },
		{ "destroy-data", no_argument, NULL, OPT_DESTROY },
		{ "dump", no_argument, NULL, OPT_DUMP },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct fsp_treplay_opts o = { .max_idle_ns = 25000000, .scale = 1.0, .late_ns = 1000000,
				      .qd = 1 };
	const char *db = NULL, *max_idle = NULL;
	int keep_idle = 0, destroy = 0, dump = 0;
	struct fsp_opt g;
	fsp_opt_init(&g, CMD, usage, longopts, "h", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		char *end;
		uint64_t v;
		switch (c) {
		case FSP_OPT_EXIT: return g.status;
		case OPT_MAX_IDLE:
			max_idle = g.arg;
			if (fsp_parse_duration(g.arg, &o.max_idle_ns))
				return fsp_usage_error(CMD, "--max-idle needs a duration (25ms, 1s), not '%s'",
						       g.arg);
			break;
		case OPT_KEEP_IDLE: keep_idle = 1; break;
		case OPT_SCALE:
			errno = 0;
			o.scale = strtod(g.arg, &end);
			if (!*g.arg || *end || errno || !(o.scale >= 0) || o.scale > 1000)
				return fsp_usage_error(CMD, "--time-scale needs a number from 0 to 1000, not '%s'",
						       g.arg);
			break;
		case OPT_LATE:
			if (fsp_parse_duration(g.arg, &o.late_ns))
				return fsp_usage_error(CMD, "--late needs a duration (1ms, 100us), not '%s'",
						       g.arg);
			break;
		case OPT_QD:
			errno = 0;
			v = strtoull(g.arg, &end, 10);
			if (*g.arg < '1' || *g.arg > '9' || *end || errno || v > 1024)
				return fsp_usage_error(CMD, "--qd needs a whole number from 1 to 1024, not '%s'",
						       g.arg);
			o.qd = (unsigned)v;
			break;
		case OPT_DB: db = g.arg; break;
		case OPT_DESTROY: destroy = 1; break;
		case OPT_DUMP: dump = 1; break;
		}
	}
	if (keep_idle && max_idle)
		return fsp_usage_error(CMD, "--keep-idle and --max-idle contradict each other");
	if (keep_idle)
		o.max_idle_ns = FSP_IOTRACE_KEEP_IDLE;
	if (dump && g.npos != 1)
		return fsp_usage_error(CMD, "--dump takes a SOURCE and no TARGET");
	if (dump && (db || destroy))
		return fsp_usage_error(CMD, "--dump replays nothing: no --db or --destroy-data");
	if (!dump && g.npos != 2)
		return fsp_usage_error(CMD, g.npos < 2 ? "needs a SOURCE and a TARGET" :
					     "takes a SOURCE and a TARGET, no more");
	struct fsp_iotrace t = { 0 };
	struct source s = { 0 };
	int rc = load_source(g.pos[0], &s, &t);
	if (rc) {
		fsp_iotrace_free(&t);
		return rc;
	}
	if (dump) {
		print_trace(&t, &s, &o);
		fsp_iotrace_free(&t);
		if (fflush(stdout) || ferror(stdout)) {
			fprintf(stderr, "fsprism replay: cannot write the trace: %s\n", strerror(errno));
			return 1;
		}
		return 0;
	}
	if (!db && s.is_db)
		db = s.path;
	struct fsp_store *st = NULL;
	if (db) {
		char err[512];
		if (fsp_store_check_writable(db, err, sizeof err)) {
			fprintf(stderr, "fsprism replay: %s\n", err);
			fsp_iotrace_free(&t);
			return 2;
		}
	}
	struct target tg = { 0 };
	rc = target_open(g.pos[1], &t, destroy, &tg);
	int64_t run = 0;
	if (!rc && db) {
		/* opened only now: bad input leaves no new database behind */
		char err[512];
		if (!(st = fsp_store_open(db, err, sizeof err))) {
			fprintf(stderr, "fsprism replay: %s\n", err);
			rc = 1;
		} else if ((run = store_begin(st, db, argc, argv, g.pos[1], tg.kind)) < 0) {
			rc = 1;
		}
	}
	if (rc) {
		target_close(&tg, 1);
		fsp_iotrace_free(&t);
		if (st)
			fsp_store_close(st);
		return rc;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	char a[32], b[32];
	dur(t.n ? t.io[t.n - 1].issue_ns : 0, a, sizeof a);
	printf("fsprism replay: %s %s: %zu IOs", s.kind, s.path, t.n);
	if (t.nfiles)
		printf(" on %zu file%s", t.nfiles, t.nfiles == 1 ? "" : "s");
	printf(" over %s, onto %s %s\n", a, kind_name(tg.kind), tg.path);
	struct fsp_treplay_result r;
	char err[512] = "";
	int failed = fsp_treplay_run(&t, tg.f, &o, &stop_sig, &r, err, sizeof err);
	if (tg.kind == TGT_DIR)
		for (size_t k = 0; k < tg.nf; k++)
			if (tg.f[k].fd_buffered >= 0)
				fsync(tg.f[k].fd_buffered);
	target_close(&tg, 0);
	if (failed)
		fprintf(stderr, "fsprism replay: %s\n", err);
	uint64_t wall = r.ended_ns - r.started_ns;
	dur(r.intended_ns, a, sizeof a);
	if (o.max_idle_ns == FSP_IOTRACE_KEEP_IDLE) {
		printf("  schedule: %s, idle gaps kept", a);
	} else {
		dur(o.max_idle_ns, b, sizeof b);
		printf("  schedule: %s, idle gaps over %s clipped", a, b);
		dur(r.clipped_ns, b, sizeof b);
		printf(" (%s removed)", b);
	}
	printf(", time scale %g; %s\n", o.scale,
	       t.has_complete ? "the recording's order and depth" :
	       "issue order, no completion times in the trace");
	print_dir("read", r.ios[FSP_IOTRACE_READ], r.read_bytes, r.read_lat_ns, r.read_ilat_ns,
		  r.nread, wall);
	print_dir("write", r.ios[FSP_IOTRACE_WRITE], r.write_bytes, r.write_lat_ns, r.write_ilat_ns,
		  r.nwrite, wall);
	uint64_t syncs = r.ios[FSP_IOTRACE_FSYNC] + r.ios[FSP_IOTRACE_DATASYNC];
	if (syncs)
		print_dir("sync", syncs, 0, r.sync_lat_ns, NULL, r.nsync, wall);
	dur(wall, a, sizeof a);
	printf("  busy   %.1f%% of %s (at least one IO in flight)\n",
	       wall ? 100.0 * (double)r.busy_ns / (double)wall : 0.0, a);
	if (t.has_complete)
		printf("  depth  max %" PRIu32 ", mean %.2f (recorded max %" PRIu32 ")\n", r.depth_max,
		       r.submitted ? (double)r.depth_sum / (double)r.submitted : 0.0,
		       r.recorded_depth_max);
	else
		printf("  depth  max %" PRIu32 ", mean %.2f (at most %u per thread)\n", r.depth_max,
		       r.submitted ? (double)r.depth_sum / (double)r.submitted : 0.0, o.qd);
	char p50[32], p99[32], mx[32], late[32];
	dur(fsp_quantile_u64(r.lag_ns, r.nlag, 0.5), p50, sizeof p50);
	dur(fsp_quantile_u64(r.lag_ns, r.nlag, 0.99), p99, sizeof p99);
	dur(r.nlag ? r.lag_ns[r.nlag - 1] : 0, mx, sizeof mx);
	dur(o.late_ns, late, sizeof late);
	printf("  fidelity: issue lag p50 %s, p99 %s, max %s; %" PRIu64 " of %zu IOs (%.2f%%) late by more than %s\n",
	       p50, p99, mx, r.late, r.nlag, r.nlag ? 100.0 * (double)r.late / (double)r.nlag : 0.0,
	       late);
	dur(fsp_quantile_u64(r.self_lag_ns, r.nlag, 0.5), p50, sizeof p50);
	dur(fsp_quantile_u64(r.self_lag_ns, r.nlag, 0.99), p99, sizeof p99);
	dur(r.nlag ? r.self_lag_ns[r.nlag - 1] : 0, mx, sizeof mx);
	printf("    its own part (from when the IOs it waits for were done): p50 %s, p99 %s, max %s;\n"
	       "    %" PRIu64 " late by that part alone, %" PRIu64 " held back by the IOs they wait for completing late\n",
	       p50, p99, mx, r.late_self, r.late > r.late_self ? r.late - r.late_self : 0);
	if (r.buffered)
		printf("  note: %" PRIu64 " IOs off the %u-byte O_DIRECT alignment went through the page cache\n",
		       r.buffered, tg.kind == TGT_DEV ? tg.lbs : DIRECT_ALIGN_FILE);
	if (r.skipped)
		printf("  note: %" PRIu64 " IOs not replayed (trims, empty IOs)\n", r.skipped);
	if (r.truncated)
		printf("  note: %" PRIu64 " IOs longer than %u bytes replayed as their first %u bytes\n",
		       r.truncated, FSP_REPLAY_MAX_LEN, FSP_REPLAY_MAX_LEN);
	if (t.unpaired)
		printf("  note: %" PRIu64 " requests had no completion in the capture\n", t.unpaired);
	if (s.meta)
		printf("  note: %" PRIu64 " metadata requests (lookup, create, open, ...) not replayed: "
		       "their files were made before\n", s.meta);
	if (st) {
		store(st, run, tg.kind, &s, &t, &o, &r, failed);
		fsp_store_close(st);
		printf("stored as run %" PRId64 " in %s ('fsprism stats %s --run %" PRId64 "')\n",
		       run, db, db, run);
	}
	fsp_treplay_result_free(&r);
	fsp_iotrace_free(&t);
	if (stop_sig)
		return 128 + stop_sig;
	return failed ? 1 : 0;
}

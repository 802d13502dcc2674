/*
 * run.c - `fsprism run PROFILE|JOBFILE TARGET` and `fsprism profiles`.
 *
 * run resolves the parameters (profile or job file, scale, overrides),
 * checks them against the target (block size vs logical block size, span
 * vs size, raw-write safety), prepares a file target, runs the steps with
 * the engine while the oplog stores per-IO latency, then stores the steps,
 * timeline and segments and prints a summary with the profile's score.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "src/cli/cli.h"
#include "src/cli/opt.h"
#include "src/cli/report.h"
#include "src/cli/run_hosts.h"
#include "src/base/clock.h"
#include "src/base/units.h"
#include "bench/engine/engine.h"
#include "bench/engine/jobfile.h"
#include "src/db/oplog.h"
#include "bench/engine/profile.h"
#include "src/db/store.h"
#include "src/sys/sysfs.h"
#include "src/sys/target.h"
#include "src/trace/block.h"
#include "src/sys/fiemap.h"
#include "src/db/decomp_rows.h"
#include "bench/engine/fiowrite.h"

#define ERRLEN 2048
#define MAX_OVERRIDES 64

static volatile sig_atomic_t run_stop;

static void on_signal(int sig)
{
	run_stop = sig; /* exit status 128 + sig, as a shell reports it */
}

/* ---- command line ----------------------------------------------------------- */

struct run_opts {
	const char *profile;
	const char *target;
	const char *db;
	enum fsp_scale scale;
	int destroy_data;
	int64_t parent;
	const char *label;
	int quiet;
	int no_trace;
	const char *report;       /* --report FILE.html, or NULL */
	uint64_t status_ns;       /* --status-interval: a status line that often, 0 none */
	unsigned part, parts;     /* --part-of K/N: run K of N of one compare, 0 0 none */
	const char *hosts;        /* --hosts HOSTFILE: fio on many hosts (run_hosts.c) */
	int record_set;           /* --record given */
	enum fsp_record_mode record;
	unsigned sample_n;
	const char *record_text;
	const char *override_key[MAX_OVERRIDES]; /* names in fsp_param_names */
	const char *override_val[MAX_OVERRIDES];
	int noverrides;
	struct option *longopts;  /* the options and the parameters */
};

/* The profile parameters, from the one list of their names, as --help shows them. */
static void print_param_list(FILE *f)
{
	fprintf(f, "parameters (override the profile; see fsprism-run(1)):\n");
	int col = fprintf(f, " ");
	for (int i = 0; fsp_param_names[i]; i++) {
		const char *name = fsp_param_names[i];
		int flag = fsp_param_is_flag(name);
		if (col + 3 + (int)strlen(name) + !flag > 78)
			col = fprintf(f, "\n ");
		col += fprintf(f, " --%s%s", name, flag ? "" : "=");
	}
	fputc('\n', f);
}

static void run_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism run PROFILE|JOBFILE TARGET [options] [--PARAM=VALUE ...]\n"
"\n"
"Run a benchmark profile (see 'fsprism profiles') or a job file on a block\n"
"device or a regular file, store the results in the database, print a summary.\n"
"\n"
"options:\n"
"  --db FILE              results database (default ./fsprism.db)\n"
"  --scale=default|full   default: small and quick; full: the reviewers' sizes\n"
"  --destroy-data         allow writing a block device that carries a signature\n"
"  --parent RUNID         store as part of run RUNID (used by compare)\n"
"  --label NAME           a name for this run (used by compare)\n"
"  --record=MODE          full | sample:N | hist (default) | off; full or\n"
"                         sample:N: stats gives the layers per IO (docs/prism.md)\n"
"  --quiet                no summary table, only the run number line\n"
"  --no-trace             do not trace the block layer (traced by default when\n"
"                         eBPF is available: block_ios rows, docs/schema.md)\n"
"  --report FILE.html     also write the run's charts (as fsprism report)\n"
"  --status-interval SECS a one-line status on stderr every SECS seconds, also\n"
"                         on a pipe or in a log (on a terminal: a progress line)\n"
"  --part-of K/N          this run is run K of N of the same job (used by\n"
"                         compare): progress shows the ETA of all N\n"
"  --hosts HOSTFILE       run the profile with fio on every host of HOSTFILE\n"
"                         (fio --server on each; TARGET unless the host file\n"
"                         names the host's own), one start for all; see\n"
"                         docs/hosts.md\n");
	print_param_list(f);
}

enum { OPT_DB = 256, OPT_SCALE, OPT_DESTROY, OPT_PARENT, OPT_LABEL, OPT_RECORD, OPT_NO_TRACE,
       OPT_REPORT, OPT_STATUS, OPT_PART_OF, OPT_HOSTS };

/* Returns 0, 1 after --help, or 2 (usage error, said). */
static int parse_args(int argc, char **argv, struct run_opts *o)
{
	static const struct option own[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "scale", required_argument, NULL, OPT_SCALE },
		{ "destroy-data", no_argument, NULL, OPT_DESTROY },
		{ "parent", required_argument, NULL, OPT_PARENT },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-trace", no_argument, NULL, OPT_NO_TRACE },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "status-interval", required_argument, NULL, OPT_STATUS },
		{ "part-of", required_argument, NULL, OPT_PART_OF },
		{ "hosts", required_argument, NULL, OPT_HOSTS },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	memset(o, 0, sizeof(*o));
	o->db = "fsprism.db";
	o->record = FSP_RECORD_HIST;
	o->record_text = "hist";
	/* --bs=, --qd=, ...: one option per profile parameter */
	o->longopts = fsp_opt_with_params(own);
	if (!o->longopts) {
		fprintf(stderr, "fsprism run: out of memory\n");
		return 2;
	}
	struct fsp_opt g;
	fsp_opt_init(&g, "run", run_usage, o->longopts, "hq", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		const char *v = g.arg;
		switch (c) {
		case FSP_OPT_EXIT:
			return g.status ? g.status : 1;
		case OPT_DESTROY:
			o->destroy_data = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case OPT_NO_TRACE:
			o->no_trace = 1;
			break;
		case OPT_REPORT:
			o->report = v;
			break;
		case OPT_STATUS: {
			double secs;
			if (fsp_opt_status_interval(v, &secs) < 0)
				return fsp_usage_error("run", "bad --status-interval '%s' "
						       FSP_STATUS_RANGE, v);
			o->status_ns = (uint64_t)(secs * 1e9);
			break;
		}
		case OPT_PART_OF:
			if (sscanf(v, "%u/%u", &o->part, &o->parts) != 2 || !o->part ||
			    o->part > o->parts)
				return fsp_usage_error("run", "bad --part-of '%s' (K/N, "
						       "1 <= K <= N)", v);
			break;
		case OPT_DB:
			o->db = v;
			break;
		case OPT_HOSTS:
			o->hosts = v;
			break;
		case OPT_SCALE:
			if (fsp_scale_parse(v, &o->scale)) {
				fprintf(stderr, "fsprism run: scale: '%s' is not default or full\n", v);
				return 2;
			}
			break;
		case OPT_PARENT:
			if (fsp_opt_run_id(v, &o->parent) < 0) {
				fprintf(stderr, "fsprism run: parent: '%s' is not a run id\n", v);
				return 2;
			}
			break;
		case OPT_LABEL:
			o->label = v;
			break;
		case OPT_RECORD:
			if (fsp_record_mode_parse(v, &o->record, &o->sample_n) != 0) {
				fprintf(stderr, "fsprism run: record: '%s' is not full, sample:N, hist or off\n", v);
				return 2;
			}
			o->record_text = v;
			o->record_set = 1;
			break;
		default:
			/* a parameter: checked once the profile is loaded */
			if (o->noverrides == MAX_OVERRIDES) {
				fprintf(stderr, "fsprism run: too many parameters\n");
				return 2;
			}
			o->override_key[o->noverrides] = g.name;
			o->override_val[o->noverrides++] = v ? v : ""; /* a flag: --norepeat */
			break;
		}
	}
	if (g.npos > 0)
		o->profile = g.pos[0];
	if (g.npos > 1)
		o->target = g.pos[1];
	if (g.npos > 2)
		return fsp_usage_error("run", "unexpected argument '%s'", g.pos[2]);
	if (!o->profile) {
		fprintf(stderr, "fsprism run: missing PROFILE (see fsprism profiles)\n");
		return 2;
	}
	if (!o->target) {
		fprintf(stderr, "fsprism run: missing TARGET (a block device or a file)\n");
		return 2;
	}
	if (o->hosts) {
		/* fio runs the IO on the hosts: what only fsprism's engine does here is refused */
		const char *no = o->record_set ? "--record" : o->no_trace ? "--no-trace" :
			o->report ? "--report" : o->parent ? "--parent" : o->parts ? "--part-of" :
			o->status_ns ? "--status-interval" : NULL;
		if (no)
			return fsp_usage_error("run", "%s does not go with --hosts (fio runs the "
					       "IO on the hosts)", no);
		if (o->target[0] != '/')
			return fsp_usage_error("run", "with --hosts, TARGET '%s' must be an "
					       "absolute path (a path on the hosts)", o->target);
	}
	return 0;
}

static void free_opts(struct run_opts *o)
{
	free(o->longopts);
}

/* Profile or job file, then overrides. Returns 0 or an exit status. */
static int resolve_params_as(const char *cmd, const struct run_opts *o,
			     struct fsp_params *p, int *is_jobfile)
{
	char err[ERRLEN];
	struct stat st;
	*is_jobfile = 0;
	if (stat(o->profile, &st) == 0 && S_ISREG(st.st_mode)) {
		*is_jobfile = 1;
		if (fsp_jobfile_load(o->profile, o->scale, p, err, sizeof(err)) != 0) {
			fprintf(stderr, "fsprism %s: %s\n", cmd, err);
			return 2;
		}
	} else if (fsp_profile_load(o->profile, o->scale, p) != 0) {
		fprintf(stderr, "fsprism %s: unknown profile '%s' (see fsprism profiles)\n",
			cmd, o->profile);
		return 2;
	}
	for (int i = 0; i < o->noverrides; i++) {
		if (fsp_param_set(p, o->override_key[i], o->override_val[i], err,
				  sizeof(err)) != 0) {
			fprintf(stderr, "fsprism %s: %s: %s\n", cmd, o->override_key[i], err);
			return 2;
		}
	}
	if (fsp_params_check(p, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism %s: %s\n", cmd, err);
		return 2;
	}
	return 0;
}

/* ---- the target ----------------------------------------------------------------- */

struct target {
	const char *path;
	int raw;          /* block device */
	int created;      /* we created the file (removed again on early failure) */
	int fd;
	uint64_t size;    /* device size, or what the file may grow to */
	unsigned lbs;     /* logical block size */
	uint64_t file_size;
};

static uint64_t free_bytes_at(const char *path)
{
	char dir[4096];
	struct statvfs vfs;
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	if (statvfs(dir, &vfs) != 0)
		return 0;
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

/* Look at the target without changing it. Returns 0 or an exit status. */
static int target_inspect(struct target *t, const char *path)
{
	struct stat st;
	memset(t, 0, sizeof(*t));
	t->path = path;
	t->fd = -1;
	if (stat(path, &st) != 0) {
		/* A missing /dev/sdz is a missing device, /dev/shm/x a new file. */
		int under_dev = !strncmp(path, "/dev/", 5) && strncmp(path, "/dev/shm/", 9);
		if (errno != ENOENT) {
			return fsp_file_error("run", path, NULL, errno, 1);
		} else if (under_dev) {
			fprintf(stderr, "fsprism run: %s: no such device\n", path);
			return 1;
		}
		/* a new file: its directory must exist */
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", path);
		char *slash = strrchr(dir, '/');
		struct stat dst;
		if (slash && slash != dir) {
			*slash = 0;
			if (stat(dir, &dst) != 0 || !S_ISDIR(dst.st_mode)) {
				fprintf(stderr, "fsprism run: %s: directory %s does not exist\n",
					path, dir);
				return 1;
			}
		}
		t->size = free_bytes_at(path);
		t->lbs = 512;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		t->raw = 1;
		if (fsp_target_geometry(path, &t->size, &t->lbs) != 0)
			return fsp_file_error("run", path, "cannot read its size", errno, 1);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "fsprism run: %s: not a block device or a regular file\n", path);
		return 1;
	}
	if (fsp_target_geometry(path, &t->file_size, &t->lbs) != 0)
		return fsp_file_error("run", path, NULL, errno, 1);
	/* a file can grow into the free space of its file system */
	t->size = t->file_size + free_bytes_at(path);
	return 0;
}

/* Span and block size against the target. Returns 0 or 2 (usage error). */
static int check_against_target(struct fsp_params *p, const struct target *t)
{
	char a[32], b[32];
	if (p->bs % t->lbs) {
		fprintf(stderr, "fsprism run: bs: %u is not a multiple of the logical block size (%u) of %s\n",
			p->bs, t->lbs, t->path);
		return 2;
	}
	if (p->offset % t->lbs) {
		fprintf(stderr, "fsprism run: offset: %llu is not a multiple of the logical block size (%u) of %s\n",
			(unsigned long long)p->offset, t->lbs, t->path);
		return 2;
	}
	if (p->offset >= t->size) {
		fsp_format_size(p->offset, a, sizeof(a));
		fsp_format_bytes(t->size, b, sizeof(b));
		fprintf(stderr, "fsprism run: offset: %s is beyond the end of %s (%s)\n",
			a, t->path, b);
		return 2;
	}
	uint64_t room = t->size - p->offset;
	if (p->span == 0 && !t->raw) {
		/* never fill a whole file system by accident */
		if (t->file_size <= p->offset) {
			fprintf(stderr, "fsprism run: span: %s is empty or new, so a whole-target run needs --span\n",
				t->path);
			return 2;
		}
		p->span = t->file_size - p->offset;
	} else if (p->span == 0) {
		p->span = room;
	} else if (p->span > room) {
		if (p->span_set) {
			fsp_format_size(p->span, a, sizeof(a));
			fsp_format_bytes(room, b, sizeof(b));
			fprintf(stderr, "fsprism run: span: %s at offset %llu is beyond the end of %s (%s %s)\n",
				a, (unsigned long long)p->offset, t->path, b,
				t->raw ? "available" : "free on its file system");
			return 2;
		}
		p->span = room; /* a profile default adapts to a small target */
	}
	/* an existing file keeps its size unless a span was asked for */
	if (!t->raw && !p->span_set && t->file_size > p->offset &&
	    p->span > t->file_size - p->offset)
		p->span = t->file_size - p->offset;
	p->span -= p->span % p->bs;
	if (p->span < p->bs) {
		fprintf(stderr, "fsprism run: span: %s is smaller than one block\n", t->path);
		return 2;
	}
	return 0;
}

/*
 * Write the pattern over [from, to) with O_DIRECT so reads hit real blocks,
 * every sector unique even for a ",fixed" pattern (a deduplicating drive
 * must not turn the prefill into a few shared blocks).
 */
static int prefill(int fd, uint64_t from, uint64_t to, const struct fsp_pattern *job_pat)
{
	const size_t chunk = 1u << 20;
	struct fsp_pattern stamped = *job_pat;
	stamped.fixed = 0;
	const struct fsp_pattern *pat = &stamped;
	void *buf;
	uint64_t rng = fsp_rand_seed(7), stamp = 0;
	if (posix_memalign(&buf, 4096, chunk) != 0)
		return -1;
	fsp_pattern_fill(pat, buf, chunk, &rng);
	for (uint64_t off = from; off < to && !run_stop;) {
		size_t n = to - off < chunk ? (size_t)(to - off) : chunk;
		fsp_pattern_refresh(pat, buf, n, &rng, &stamp);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			free(buf);
			return -1;
		}
		off += (uint64_t)w;
	}
	free(buf);
	return run_stop ? -1 : 0;
}

/*
 * Open the target for the job and, for a file, make sure the span is
 * allocated (and written, if the job reads it: a read of an unwritten
 * extent never reaches the device). Returns 0 or an exit status.
 */
static int target_open(struct target *t, const struct fsp_params *p, int quiet)
{
	int writes = fsp_params_writes(p), reads = fsp_params_reads(p);
	int flags = O_DIRECT | O_CLOEXEC | (writes || !t->raw ? O_RDWR : O_RDONLY);
	/* a block device opened O_EXCL cannot be mounted or claimed meanwhile */
	if (t->raw && writes)
		flags |= O_EXCL;
	if (!t->raw) {
		struct stat st;
		if (stat(t->path, &st) != 0)
			t->created = 1;
		flags |= O_CREAT;
	}
	t->fd = open(t->path, flags, 0644);
	if (t->fd < 0) {
		int e = errno;
		if (e == EBUSY && t->raw)
			fprintf(stderr, "fsprism run: %s: device is busy (mounted or in use)\n",
				t->path);
		else if (e == EINVAL)
			fprintf(stderr, "fsprism run: %s: its file system does not support O_DIRECT\n",
				t->path);
		else
			fsp_file_error("run", t->path, NULL, e, (flags & O_ACCMODE) == O_RDWR);
		return 1;
	}
	if (t->raw)
		return 0;
	struct stat st;
	uint64_t end = p->offset + p->span;
	if (fstat(t->fd, &st) != 0)
		return 1;
	/*
	 * Existing data is never overwritten here: only the part of the span
	 * beyond the file's end is allocated and, for a job that reads, written.
	 * A file with no block allocated at all (new, or made by truncate) holds
	 * no data, so all of it is prepared.
	 */
	uint64_t old = (uint64_t)st.st_size;
	int empty = st.st_blocks == 0;
	if (old >= end && !(empty && reads))
		return 0;
	uint64_t from = empty ? 0 : (old + 4095) & ~4095ull;
	if (from >= end) /* only a partial block to add: extending is enough */
		return ftruncate(t->fd, (off_t)end) == 0 ? 0 : 1;
	if (!quiet && isatty(2))
		fprintf(stderr, "preparing %s: allocating %llu MiB%s\n", t->path,
			(unsigned long long)((end - from) >> 20), reads ? " and writing it" : "");
	int rc = fallocate(t->fd, 0, (off_t)from, (off_t)(end - from));
	if (rc != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
		fprintf(stderr, "fsprism run: %s: cannot allocate %llu bytes: %s\n",
			t->path, (unsigned long long)end, strerror(errno));
		return 1;
	}
	/* no fallocate (e.g. some FUSE file systems): writing allocates */
	if (rc != 0 || reads) {
		if (prefill(t->fd, from, end, &p->pattern) != 0) {
			fprintf(stderr, "fsprism run: %s: cannot write %llu bytes: %s\n",
				t->path, (unsigned long long)end,
				run_stop ? "interrupted" : strerror(errno));
			return run_stop ? 128 + run_stop : 1;
		}
		if (fdatasync(t->fd) != 0) {
			fprintf(stderr, "fsprism run: %s: fdatasync: %s\n", t->path, strerror(errno));
			return 1;
		}
	}
	return 0;
}

static void target_close(struct target *t, int failed_early)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (failed_early && t->created)
		unlink(t->path);
}

/* ---- steps ---------------------------------------------------------------------- */

struct step {
	char label[48];
	unsigned qd, read_pct;
	struct fsp_rate_spec rate; /* max: closed loop */
	double asked;              /* a rate step's IOs per second, resolved at run time */
	unsigned of_step;          /* a percentage's closed-loop step */
	struct fsp_step_result res;
	int ran;
};

/* How a load curve ended (--stop-p99, docs/profiles.md "Load curves"). */
struct curve_end {
	int stopped;          /* a rate step's p99 passed stop-p99: the steps after it did not run */
	unsigned step;        /* that step */
	uint64_t p99_ns;      /* its p99 (the larger of reads and writes) */
};

static int run_has_rates(const struct fsp_params *p)
{
	for (unsigned i = 0; i < p->nrate; i++)
		if (p->rates[i].kind != FSP_RATE_MAX)
			return 1;
	return 0;
}

/* p99 of a step's IOs from their intended times, the larger of reads and writes */
static uint64_t step_p99(const struct fsp_step_result *r)
{
	uint64_t a = r->read_hist && r->read_hist->count ? fsp_hist_quantile(r->read_hist, 0.99) : 0;
	uint64_t b = r->write_hist && r->write_hist->count ? fsp_hist_quantile(r->write_hist, 0.99) : 0;
	return a > b ? a : b;
}

/*
 * IOPS: of a closed-loop step over its busy time; of a rate step over the
 * time its IOs took to send (engine.h: send_ns), the rate the engine held.
 */
static double step_iops(const struct fsp_step_result *r)
{
	return fsp_rate_achieved(r->read_ios + r->write_ios, r->rate ? r->send_ns : r->busy_ns);
}

static double mbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 1e3 / (double)ns : 0.0;
}

/*
 * Progress: profile, step (numbered as stats and compare number them),
 * elapsed, ETA; with --part-of also the ETA of the whole job. On a terminal
 * one line redrawn; with --status-interval a line every so often.
 */
struct progress {
	const char *profile;
	const struct fsp_params *p;
	unsigned step, nsteps;
	const char *label;
	uint64_t run_start_ns;
	uint64_t done_steps_ns; /* busy+idle of finished steps */
	int shown;
	int tty;                /* redraw one line (else: status lines) */
	uint64_t status_ns, last_status_ns;
	const char *run_label;  /* --label: the compare target */
	unsigned part, parts;
};

static uint64_t step_estimate_ns(const struct fsp_params *p, uint64_t busy_ns,
				 uint64_t bytes)
{
	uint64_t est = p->time_ns;
	uint64_t limit = p->fill ? p->span : p->bytes;
	if (limit && bytes && busy_ns) {
		uint64_t by_bytes = (uint64_t)((double)busy_ns * (double)limit / (double)bytes);
		if (!est || by_bytes < est)
			est = by_bytes;
	}
	if (p->burst && p->duty < 100)
		est = est * 100 / p->duty;
	return est;
}

static void show_progress(void *arg, uint64_t busy_ns, uint64_t bytes)
{
	struct progress *pr = arg;
	uint64_t now = fsp_now_ns();
	uint64_t elapsed = now - pr->run_start_ns;
	uint64_t this_est = step_estimate_ns(pr->p, busy_ns, bytes);
	uint64_t this_left = this_est > busy_ns ? this_est - busy_ns : 0;
	uint64_t per_step = this_est + pr->p->idle_ns;
	if (pr->p->duty < 100 && !pr->p->burst)
		per_step += fsp_duty_idle_ns(this_est, pr->p->duty);
	uint64_t eta = this_left + (uint64_t)(pr->nsteps - 1 - pr->step) * per_step;
	if (!pr->tty) {
		if (pr->last_status_ns && now - pr->last_status_ns < pr->status_ns)
			return;
		pr->last_status_ns = now;
	}
	char part[96] = "", all[64] = "";
	if (pr->parts) {
		/* the runs after this one: the same job, about as long each */
		uint64_t rest = (uint64_t)(pr->parts - pr->part) * (elapsed + eta);
		snprintf(part, sizeof(part), "%s %u/%u, ", pr->run_label ? pr->run_label : "run",
			 pr->part, pr->parts);
		snprintf(all, sizeof(all), ", all %.0fs", (double)(eta + rest) / 1e9);
	}
	fprintf(stderr, "%s%s%s: step %u (%u of %u) %s  %.1f MB/s  elapsed %.1fs  ETA %.0fs%s%s",
		pr->tty ? "\r" : "", part, pr->profile, pr->step, pr->step + 1, pr->nsteps,
		pr->label, mbps(bytes, busy_ns), (double)elapsed / 1e9, (double)eta / 1e9, all,
		pr->tty ? "   " : "\n");
	pr->shown = pr->tty;
}

/* ---- storing ---------------------------------------------------------------------- */

static int store_steps(struct fsp_store *st, int64_t run, const struct fsp_params *p,
		       const struct step *steps, unsigned nsteps)
{
	char pat[32];
	fsp_pattern_format(&p->pattern, pat, sizeof(pat));
	if (fsp_store_tx_begin(st) != 0)
		return -1;
	for (unsigned i = 0; i < nsteps; i++) {
		const struct step *s = &steps[i];
		const struct fsp_step_result *r = &s->res;
		if (!s->ran)
			continue;
		struct fsp_step_row row = {
			.step = (int)i, .label = s->label,
			.access = p->access == FSP_ACCESS_SEQ ? "seq" : "random",
			.block_size = p->bs, .qd = s->qd, .read_pct = s->read_pct,
			.pattern = pat, .span_offset = p->offset, .span_size = p->span,
			.started_ns = r->started_ns, .ended_ns = r->ended_ns,
			.busy_ns = r->busy_ns, .read_ios = r->read_ios,
			.write_ios = r->write_ios, .read_bytes = r->read_bytes,
			.write_bytes = r->write_bytes, .cpu_user_ns = r->cpu_user_ns,
			.cpu_sys_ns = r->cpu_sys_ns,
		};
		if (fsp_store_add_step(st, run, &row))
			goto rollback;
		for (size_t b = 0; b < r->ntimeline; b++) {
			const struct fsp_timeline_bucket *tb = &r->timeline[b];
			struct fsp_timeline_row t = {
				.t_ns = r->started_ns + b * p->timeline_ns,
				.read_bytes = tb->read_bytes, .write_bytes = tb->write_bytes,
				.read_ios = tb->read_ios, .write_ios = tb->write_ios,
			};
			if (fsp_store_add_timeline(st, run, (int)i, &t))
				goto rollback;
		}
		for (size_t g = 0; g < r->nsegments; g++) {
			struct fsp_segment_row seg = {
				.segment = g, .offset = r->segments[g].offset,
				.bytes = r->segments[g].bytes, .ns = r->segments[g].ns,
			};
			if (fsp_store_add_segment(st, run, (int)i, &seg))
				goto rollback;
		}
	}
	return fsp_store_tx_commit(st);
rollback:
	fsp_store_tx_rollback(st);
	return -1;
}

static void set_attr_double(struct fsp_store *st, int64_t run, const char *key, double v)
{
	char buf[48];
	snprintf(buf, sizeof(buf), "%.3f", v);
	fsp_store_set_attr(st, run, key, buf);
}

/*
 * Where the run's IO could run: the CPUs the engine's thread may use and
 * the CPUs of the kernel's unbound workqueues (where a loop device's IO
 * runs), as run attributes, since a result depends on the placement
 * (docs/results/engine-vs-fio.md).
 */
static void store_placement(struct fsp_store *st, int64_t run)
{
	cpu_set_t set;
	char list[256] = "";
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		size_t n = 0;
		for (int c = 0; c < CPU_SETSIZE && n + 8 < sizeof(list); c++)
			if (CPU_ISSET(c, &set))
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", n ? "," : "", c);
		fsp_store_set_attr(st, run, "engine.cpus", list);
	}
	char mask[64];
	if (fsp_sysfs_line("/sys/devices/virtual/workqueue/cpumask", mask, sizeof(mask)) == 0)
		fsp_store_set_attr(st, run, "sys.workqueue_cpumask", mask);
}

static void store_params(struct fsp_store *st, int64_t run, const struct run_opts *o,
			 const struct fsp_params *p, const struct target *t, int is_jobfile)
{
	char buf[256];
	fsp_store_set_attr(st, run, is_jobfile ? "jobfile" : "profile", o->profile);
	fsp_store_set_attr(st, run, "scale", o->scale == FSP_SCALE_FULL ? "full" : "default");
	fsp_store_set_attr(st, run, "target_kind", t->raw ? "raw" : "file");
	fsp_store_set_attr_u64(st, run, "target_logical_bs", t->lbs);
	for (int i = 0; fsp_param_names[i]; i++) {
		char key[64];
		fsp_param_format(p, fsp_param_names[i], buf, sizeof(buf));
		snprintf(key, sizeof(key), "param.%s", fsp_param_names[i]);
		fsp_store_set_attr(st, run, key, buf);
	}
	fsp_pattern_format(&p->pattern, buf, sizeof(buf));
	fsp_store_set_attr(st, run, "pattern", buf);
	fsp_store_set_attr_u64(st, run, "span_bytes", p->span);
	store_placement(st, run);
}

/*
 * The smallest share, over the steps, of the IO buffers that huge pages
 * backed (engine.c): below 100 the engine spent more of its own time per
 * IO pinning 4 KiB pages, which matters when comparing runs.
 */
static void store_huge_share(struct fsp_store *st, int64_t run,
			     const struct step *steps, unsigned nsteps)
{
	double least = -1;
	for (unsigned i = 0; i < nsteps; i++) {
		const struct fsp_step_result *r = &steps[i].res;
		if (!steps[i].ran || !r->buffer_bytes)
			continue;
		double pct = 100.0 * (double)r->huge_buffer_bytes / (double)r->buffer_bytes;
		if (least < 0 || pct < least)
			least = pct;
	}
	if (least >= 0)
		set_attr_double(st, run, "engine.huge_buffer_pct", least);
}

/*
 * The steps' counts, summed over the run: what the capped tables could not
 * keep (engine.h, FSP_TIMELINE_MAX; stored only if any), and how the engine
 * waited (bench/engine/reap.h; a poll set aside shows that the engine's
 * polls held another task off the CPU).
 */
static void store_counts(struct fsp_store *st, int64_t run, const struct step *steps,
			 unsigned nsteps)
{
	uint64_t ios = 0, segs = 0, polls = 0, backoffs = 0;
	for (unsigned i = 0; i < nsteps; i++) {
		ios += steps[i].res.timeline_dropped_ios;
		segs += steps[i].res.segments_dropped;
		polls += steps[i].res.poll_waits;
		backoffs += steps[i].res.poll_backoffs;
	}
	if (ios)
		fsp_store_set_attr_u64(st, run, "timeline_dropped_ios", ios);
	if (segs)
		fsp_store_set_attr_u64(st, run, "segments_dropped", segs);
	fsp_store_set_attr_u64(st, run, "engine.poll_waits", polls);
	fsp_store_set_attr_u64(st, run, "engine.poll_backoffs", backoffs);
}

/*
 * A load curve's facts per step, as run attributes keyed by step
 * (docs/schema.md, "run_attrs"): for every step of a run with rate steps
 * the achieved IOPS, and for a rate step the asked rate, its lag quantiles
 * and the IOs that went out late or not at all; how the curve ended.
 */
static void store_rates(struct fsp_store *st, int64_t run, const struct fsp_params *p,
			const struct step *steps, unsigned nsteps, const struct curve_end *ce)
{
	if (!run_has_rates(p))
		return;
	char key[96];
	fsp_store_set_attr(st, run, "rate.arrivals",
			   p->arrivals == FSP_ARRIVALS_POISSON ? "poisson" : "uniform");
	fsp_store_set_attr_u64(st, run, "rate.late_ns", FSP_RATE_LATE_NS);
	for (unsigned i = 0; i < nsteps; i++) {
		const struct step *s = &steps[i];
		const struct fsp_step_result *r = &s->res;
		if (!s->ran)
			continue;
		snprintf(key, sizeof(key), "rate.step.%u.achieved_iops", i);
		set_attr_double(st, run, key, step_iops(r));
		if (s->rate.kind == FSP_RATE_MAX || !r->rate)
			continue;
		/* to the last bit: with it and the first IO's time, the schedule
		 * of every IO can be computed again (tests/it_curve.sh does) */
		char exact[48];
		snprintf(key, sizeof(key), "rate.step.%u.asked_iops", i);
		snprintf(exact, sizeof(exact), "%.17g", s->asked);
		fsp_store_set_attr(st, run, key, exact);
		if (s->rate.kind == FSP_RATE_PCT) {
			snprintf(key, sizeof(key), "rate.step.%u.of_step", i);
			fsp_store_set_attr_u64(st, run, key, s->of_step);
		}
		snprintf(key, sizeof(key), "rate.step.%u.lag_p50_ns", i);
		fsp_store_set_attr_u64(st, run, key, fsp_hist_quantile(&r->rate->lag, 0.5));
		snprintf(key, sizeof(key), "rate.step.%u.lag_p99_ns", i);
		fsp_store_set_attr_u64(st, run, key, fsp_hist_quantile(&r->rate->lag, 0.99));
		snprintf(key, sizeof(key), "rate.step.%u.lag_max_ns", i);
		fsp_store_set_attr_u64(st, run, key, r->rate->lag.count ? r->rate->lag.max : 0);
		snprintf(key, sizeof(key), "rate.step.%u.late_ios", i);
		fsp_store_set_attr_u64(st, run, key, r->rate->late);
		snprintf(key, sizeof(key), "rate.step.%u.unissued_ios", i);
		fsp_store_set_attr_u64(st, run, key, r->unissued);
		snprintf(key, sizeof(key), "rate.step.%u.send_ns", i);
		fsp_store_set_attr_u64(st, run, key, r->send_ns);
	}
	if (p->stop_p99_ns) {
		fsp_store_set_attr_u64(st, run, "curve.stop_p99_ns", p->stop_p99_ns);
		if (ce->stopped) {
			fsp_store_set_attr_u64(st, run, "curve.stopped_after", ce->step);
			fsp_store_set_attr_u64(st, run, "curve.stopped_p99_ns", ce->p99_ns);
		}
	}
}

/* ---- score and summary ------------------------------------------------------------ */

struct score {
	double value;      /* MB/s or IOPS */
	const char *unit;
	const char *how;
	char how_buf[64];
	double tail, overall; /* fill */
	int have;
};

static double step_rate(const struct fsp_params *p, const struct step *s)
{
	const struct fsp_step_result *r = &s->res;
	uint64_t bytes = r->read_bytes + r->write_bytes;
	if (!r->busy_ns)
		return 0;
	if (p->iops_score)
		return (double)(r->read_ios + r->write_ios) * 1e9 / (double)r->busy_ns;
	return mbps(bytes, r->busy_ns);
}

static double seg_rate(const struct fsp_params *p, const struct fsp_segment *g)
{
	if (!g->ns)
		return 0;
	if (p->iops_score)
		return (double)g->bytes / p->bs * 1e9 / (double)g->ns;
	return mbps(g->bytes, g->ns);
}

static void compute_score(const struct fsp_params *p, const struct step *steps,
			  unsigned nsteps, struct score *sc)
{
	memset(sc, 0, sizeof(*sc));
	double sum = 0;
	unsigned n = 0;
	sc->unit = p->iops_score ? "IOPS" : "MB/s";
	switch (p->score) {
	case FSP_SCORE_QD124:
		strcpy(sc->how_buf, "mean of");
		for (unsigned i = 0; i < nsteps; i++)
			if (steps[i].ran && (steps[i].qd == 1 || steps[i].qd == 2 || steps[i].qd == 4)) {
				size_t len = strlen(sc->how_buf);
				snprintf(sc->how_buf + len, sizeof(sc->how_buf) - len, "%s QD%u",
					 n ? "," : "", steps[i].qd);
				sum += step_rate(p, &steps[i]);
				n++;
			}
		if (n) {
			sc->how = sc->how_buf;
			break;
		}
		sc->how = "mean over steps (no QD1/2/4 step)";
		/* fall through */
	case FSP_SCORE_STEPS:
		if (p->score == FSP_SCORE_STEPS)
			sc->how = nsteps > 1 ? "mean over steps" : "the step";
		for (unsigned i = 0; i < nsteps; i++)
			if (steps[i].ran) {
				sum += step_rate(p, &steps[i]);
				n++;
			}
		break;
	case FSP_SCORE_BURSTS:
		sc->how = "mean over bursts";
		for (unsigned i = 0; i < nsteps; i++)
			for (size_t g = 0; steps[i].ran && g < steps[i].res.nsegments; g++) {
				sum += seg_rate(p, &steps[i].res.segments[g]);
				n++;
			}
		break;
	case FSP_SCORE_CURVE:
		/* the maximum: the closed-loop step(s) */
		sc->how = "the maximum (closed-loop step)";
		for (unsigned i = 0; i < nsteps; i++)
			if (steps[i].ran && steps[i].rate.kind == FSP_RATE_MAX) {
				sum += step_rate(p, &steps[i]);
				n++;
			}
		break;
	case FSP_SCORE_FILL: {
		sc->how = "mean of the tail";
		uint64_t tb = 0, tn = 0, all_b = 0, all_n = 0;
		for (unsigned i = 0; i < nsteps; i++) {
			const struct fsp_step_result *r = &steps[i].res;
			if (!steps[i].ran)
				continue;
			all_b += r->write_bytes + r->read_bytes;
			all_n += r->busy_ns;
			for (size_t g = r->nsegments; g-- > 0 && tb < p->tail;) {
				tb += r->segments[g].bytes;
				tn += r->segments[g].ns;
			}
		}
		sc->tail = mbps(tb, tn);
		sc->overall = mbps(all_b, all_n);
		sc->unit = "MB/s";
		sc->value = sc->tail;
		sc->have = all_n > 0;
		return;
	}
	}
	if (n) {
		sc->value = sum / n;
		sc->have = 1;
	}
}

static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

/*
 * A load curve's table: per step the asked and achieved IOPS, the lag of
 * the submissions behind their intended times (p50, p99, max) and the IOs
 * late by more than FSP_RATE_LATE_NS, then per direction the latency from
 * the intended time: mean, p50, p99, p99.9 (us).
 */
static void print_curve(const struct fsp_params *p, const struct step *steps,
			unsigned nsteps, const struct curve_end *ce)
{
	printf("%-10s %9s %9s %8s %8s %8s %7s %2s %8s %8s %8s %8s\n", "step", "asked",
	       "IOPS", "lag p50", "lag p99", "lag max", "late", "", "mean", "p50", "p99",
	       "p99.9");
	for (unsigned i = 0; i < nsteps; i++) {
		const struct step *s = &steps[i];
		const struct fsp_step_result *r = &s->res;
		if (!s->ran)
			continue;
		char asked[24] = "max", lag[3][16] = { "-", "-", "-" }, late[24] = "-";
		if (s->rate.kind != FSP_RATE_MAX)
			snprintf(asked, sizeof(asked), "%.0f", s->asked);
		if (r->rate && r->rate->lag.count) {
			snprintf(lag[0], 16, "%.1f", us(fsp_hist_quantile(&r->rate->lag, 0.5)));
			snprintf(lag[1], 16, "%.1f", us(fsp_hist_quantile(&r->rate->lag, 0.99)));
			snprintf(lag[2], 16, "%.1f", us(r->rate->lag.max));
			snprintf(late, sizeof(late), "%llu", (unsigned long long)(r->rate->late + r->unissued));
		}
		const char *label = strncmp(s->label, "rate=", 5) ? s->label : s->label + 5;
		int first = 1;
		for (int d = 0; d < 2; d++) {
			const struct fsp_hist *h = d == 0 ? r->read_hist : r->write_hist;
			if (!h || !h->count)
				continue;
			if (first)
				printf("%-10s %9s %9.0f %8s %8s %8s %7s", label, asked, step_iops(r),
				       lag[0], lag[1], lag[2], late);
			else
				printf("%-10s %9s %9s %8s %8s %8s %7s", "", "", "", "", "", "", "");
			printf(" %2s %8.1f %8.1f %8.1f %8.1f\n", d == 0 ? "rd" : "wr",
			       fsp_hist_mean(h) / 1e3, us(fsp_hist_quantile(h, 0.5)),
			       us(fsp_hist_quantile(h, 0.99)), us(fsp_hist_quantile(h, 0.999)));
			first = 0;
		}
		if (first)
			printf("%-10s %9s %9.0f %8s %8s %8s %7s (no IO completed)\n", label, asked,
			       step_iops(r), lag[0], lag[1], lag[2], late);
	}
	printf("(latency from each IO's intended issue time, us; late: went out more than "
	       "%.0f us after it, or not at all)\n", us(FSP_RATE_LATE_NS));
	if (ce->stopped)
		printf("curve stopped after step %u (%s): p99 %.1f us > stop-p99 %.1f us\n",
		       ce->step, steps[ce->step].label, us(ce->p99_ns), us(p->stop_p99_ns));
}

static void print_summary(const struct run_opts *o, const struct fsp_params *p,
			  const struct target *t, const struct step *steps,
			  unsigned nsteps, const struct score *sc, const struct curve_end *ce)
{
	char pat[32], span[32], bs[32];
	fsp_pattern_format(&p->pattern, pat, sizeof(pat));
	fsp_format_size(p->span, span, sizeof(span));
	fsp_format_size(p->bs, bs, sizeof(bs));
	printf("%s on %s (%s, %s %s, pattern %s, span %s)\n", o->profile, t->path,
	       t->raw ? "raw device" : "file", bs,
	       p->access == FSP_ACCESS_SEQ ? "sequential" : "random", pat, span);
	if (run_has_rates(p)) {
		print_curve(p, steps, nsteps, ce);
		nsteps = 0; /* the curve's table is the steps' table */
	} else
		printf("%-14s %10s %10s %11s %11s %11s %11s\n", "step", "MB/s", "IOPS",
		       "rd avg us", "rd p99 us", "wr avg us", "wr p99 us");
	for (unsigned i = 0; i < nsteps; i++) {
		const struct step *s = &steps[i];
		const struct fsp_step_result *r = &s->res;
		if (!s->ran)
			continue;
		double sec = (double)r->busy_ns / 1e9;
		double iops = sec > 0 ? (double)(r->read_ios + r->write_ios) / sec : 0;
		printf("%-14s %10.1f %10.0f", s->label,
		       mbps(r->read_bytes + r->write_bytes, r->busy_ns), iops);
		if (r->read_hist && r->read_hist->count)
			printf(" %11.1f %11.1f", fsp_hist_mean(r->read_hist) / 1e3,
			       us(fsp_hist_quantile(r->read_hist, 0.99)));
		else
			printf(" %11s %11s", "-", "-");
		if (r->write_hist && r->write_hist->count)
			printf(" %11.1f %11.1f", fsp_hist_mean(r->write_hist) / 1e3,
			       us(fsp_hist_quantile(r->write_hist, 0.99)));
		else
			printf(" %11s %11s", "-", "-");
		printf("\n");
	}
	if (p->score == FSP_SCORE_BURSTS || p->score == FSP_SCORE_FILL) {
		for (unsigned i = 0; i < nsteps; i++) {
			const struct fsp_step_result *r = &steps[i].res;
			if (!steps[i].ran || !r->nsegments)
				continue;
			printf("%s (%s):", p->score == FSP_SCORE_FILL ? "segments" : "bursts",
			       p->iops_score ? "IOPS" : "MB/s");
			for (size_t g = 0; g < r->nsegments; g++)
				printf(" %.0f", seg_rate(p, &r->segments[g]));
			printf("\n");
		}
	}
	if (!sc->have)
		printf("score: none (nothing measured)\n");
	else if (p->score == FSP_SCORE_FILL) {
		char tail[32];
		fsp_format_size(p->tail, tail, sizeof(tail));
		printf("score: %.1f MB/s mean of the last %s; overall mean %.1f MB/s\n",
		       sc->tail, tail, sc->overall);
	} else
		printf("score: %.1f %s (%s)\n", sc->value, sc->unit, sc->how);
}

/* ---- the command --------------------------------------------------------------------- */

static void step_label(struct step *s, const struct fsp_params *p)
{
	fsp_step_label(p, s->qd, s->read_pct, &s->rate, s->label, sizeof(s->label));
}

/*
 * The block-layer trace of the target's device, started just before the
 * steps: NULL when it is off (--no-trace) or not possible, which is then
 * said in one line and stored in the run's block.* attributes.
 */
static struct fsp_btrace *trace_begin(const struct run_opts *o, const struct target *t,
				      struct fsp_store *st, int64_t run)
{
	char why[ERRLEN];
	struct fsp_btrace_devs d;
	struct fsp_btrace *bt = NULL;
	if (o->no_trace) {
		fsp_btrace_save_untraced(st, run, "--no-trace");
		return NULL;
	}
	if (fsp_btrace_devs_for(t->path, &d, why, sizeof(why)) == 0)
		bt = fsp_btrace_start(&d, NULL, why, sizeof(why));
	if (!bt) {
		fprintf(stderr, "fsprism run: block layer not traced: %s\n", why);
		fsp_btrace_save_untraced(st, run, why);
	}
	return bt;
}

/* Store the trace's requests, each in the step whose window it entered in. */
static int trace_save(struct fsp_btrace *bt, struct fsp_store *st, int64_t run,
		      const struct step *steps, unsigned nsteps)
{
	struct fsp_bt_window *w = calloc(nsteps ? nsteps : 1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "fsprism run: out of memory\n");
		return -1;
	}
	for (unsigned i = 0; i < nsteps; i++)
		if (steps[i].ran) {
			w[i].start_ns = steps[i].res.started_ns;
			w[i].end_ns = steps[i].res.ended_ns;
		}
	int rc = fsp_btrace_save(bt, st, run, w, nsteps);
	free(w);
	return rc;
}

/*
 * The target file's layout (file_extents), so that a block request's sector
 * maps back to a file offset: read once the file is laid out, before the
 * first step, and again after each step that wrote (a write into a hole or
 * an unwritten extent allocates or converts; a copy-on-write file system
 * moves what it overwrites), kept when it changed, stored after the steps.
 */
struct layout_set {
	int fd;
	struct layout { int after; struct fsp_extent *e; size_t n; } *v;
	size_t n;
};

static int same_layout(const struct layout *a, const struct fsp_extent *e, size_t n)
{
	return a->n == n && !memcmp(a->e, e, n * sizeof(*e));
}

static void layout_read(struct layout_set *ls, int after)
{
	struct fsp_extent *e;
	size_t n;
	if (ls->fd < 0 || fsp_fiemap_read(ls->fd, &e, &n) != 0)
		return; /* no FIEMAP (FUSE, tmpfs): the join then finds no block request */
	struct layout *v = ls->n ? &ls->v[ls->n - 1] : NULL;
	if ((v && same_layout(v, e, n)) ||
	    !(v = realloc(ls->v, (ls->n + 1) * sizeof(*v)))) {
		free(e);
		return;
	}
	ls->v = v;
	ls->v[ls->n++] = (struct layout){ after, e, n };
}

static void layout_save(struct layout_set *ls, struct fsp_store *st, int64_t run)
{
	for (size_t i = 0; i < ls->n; i++) {
		fsp_file_extents_save(st, run, ls->v[i].after, ls->v[i].e, ls->v[i].n);
		free(ls->v[i].e);
	}
	free(ls->v);
	ls->v = NULL;
	ls->n = 0;
}

/* Run every step; returns 0, 1 (IO error) or 128+signal (130 for Ctrl-C). */
static int run_steps(const struct run_opts *o, const struct fsp_params *p,
		     const struct target *t, struct fsp_oplog *log, struct step *steps,
		     unsigned nsteps, struct layout_set *lay, struct curve_end *ce)
{
	int tty = !o->quiet && isatty(2);
	struct progress pr = { .profile = o->profile, .p = p, .nsteps = nsteps,
			       .run_start_ns = fsp_now_ns(), .tty = tty,
			       .status_ns = o->status_ns, .run_label = o->label,
			       .part = o->part, .parts = o->parts };
	/* the status lines also under --quiet, as fio's */
	int show = tty || o->status_ns;
	for (unsigned i = 0; i < nsteps && !run_stop; i++) {
		struct step *s = &steps[i];
		char err[ERRLEN];
		struct fsp_step_spec spec = {
			.fd = t->fd, .index = (uint16_t)i, .bs = p->bs, .qd = s->qd,
			.read_pct = s->read_pct, .access = p->access,
			.offsets = p->offsets, .interleave = p->interleave,
			.norepeat = p->norepeat, .seed = p->seed + i,
			.span_off = p->offset, .span_size = p->span,
			.ramp_ns = p->ramp_ns, .poll_ns = p->poll_ns, .time_ns = p->time_ns,
			.bytes = p->fill ? p->span : p->bytes,
			.burst = p->burst, .duty = p->duty,
			.segment = p->fill ? p->segment : 0,
			.timeline_ns = p->timeline_ns, .pattern = p->pattern,
			/* the run's tables share the caps (fsp_params_check_memory) */
			.timeline_max = FSP_TIMELINE_MAX / nsteps,
			.segments_max = FSP_SEGMENTS_MAX / nsteps,
			.log = log, .stop = &run_stop,
			.progress = show ? show_progress : NULL,
			.progress_arg = &pr,
			/* status lines: looked at often, printed every status_ns */
			.progress_ns = tty ? 500000000ull : 100000000ull,
		};
		pr.step = i;
		pr.label = s->label;
		if (s->rate.kind == FSP_RATE_IOPS)
			s->asked = s->rate.value;
		else if (s->rate.kind == FSP_RATE_PCT) {
			/* of the rate the latest closed-loop step achieved (fsp_params_check) */
			unsigned b = i;
			while (b-- > 0 && steps[b].rate.kind != FSP_RATE_MAX)
				;
			s->of_step = b;
			double max = steps[b].ran ? step_iops(&steps[b].res) : 0;
			s->asked = max * s->rate.value / 100.0;
			if (s->asked < 1) {
				fprintf(stderr, "fsprism run: %s: step %s: step %u (%s) measured no "
					"rate to take %u%% of\n", t->path, s->label, b, steps[b].label,
					s->rate.value);
				return 1;
			}
		}
		spec.rate = s->asked;
		spec.arrivals = p->arrivals;
		int rc = fsp_engine_step(&spec, &s->res, err, sizeof(err));
		s->ran = s->res.started_ns != 0;
		if (!tty && o->status_ns && s->ran) /* a step shorter than the interval */
			show_progress(&pr, s->res.busy_ns, s->res.read_bytes + s->res.write_bytes);
		if (s->ran && (p->fill || s->read_pct < 100))
			layout_read(lay, (int)i);
		if (rc != 0) {
			if (pr.shown)
				fprintf(stderr, "\n");
			fprintf(stderr, "fsprism run: %s: step %s: %s\n", t->path, s->label, err);
			return 1;
		}
		if (p->stop_p99_ns && s->rate.kind != FSP_RATE_MAX &&
		    step_p99(&s->res) > p->stop_p99_ns) {
			ce->stopped = 1;
			ce->step = i;
			ce->p99_ns = step_p99(&s->res);
			break;
		}
		if (i + 1 < nsteps && !run_stop) {
			uint64_t idle = p->idle_ns;
			if (!p->burst && p->duty < 100)
				idle += fsp_duty_idle_ns(s->res.busy_ns, p->duty);
			if (tty && idle)
				fprintf(stderr, "\r%s: step %u (%u of %u) %s done, idle %.1fs%30s",
					o->profile, i, i + 1, nsteps, s->label, (double)idle / 1e9, "");
			fsp_engine_idle(idle, &run_stop);
		}
	}
	if (pr.shown)
		fprintf(stderr, "\r%100s\r", "");
	return run_stop ? 128 + run_stop : 0;
}

/*
 * --hosts: the targets are on other machines, so fsprism cannot look at
 * them; a job that writes needs --destroy-data, the user's word that no
 * host's target holds data (the raw-write check of a local run cannot run
 * there).
 */
static int run_on_hosts(const struct run_opts *o, struct fsp_params *p, int argc,
			char **argv)
{
	char err[ERRLEN];
	if (fsp_params_writes(p) && !o->destroy_data) {
		fprintf(stderr, "fsprism run: %s writes, and with --hosts no host's target can be "
			"checked for data: give --destroy-data to write them\n", o->profile);
		return 2;
	}
	if (!p->span) {
		fprintf(stderr, "fsprism run: span: with --hosts give --span (the hosts' targets "
			"are not known here)\n");
		return 2;
	}
	p->span -= p->span % p->bs;
	if (fsp_params_check_memory(p, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism run: %s\n", err);
		return 2;
	}
	struct fsp_hosts_opts h = {
		.hostfile = o->hosts, .profile = o->profile, .target = o->target,
		.db = o->db, .label = o->label, .quiet = o->quiet, .argc = argc, .argv = argv,
	};
	return fsp_run_hosts(&h, p);
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct fsp_params p;
	struct target t = { .fd = -1 };
	int is_jobfile, rc;
	char err[ERRLEN];

	rc = parse_args(argc, argv, &o);
	if (rc) {
		free_opts(&o);
		return rc == 1 ? 0 : rc;
	}
	rc = resolve_params_as("run", &o, &p, &is_jobfile);
	if (!rc && o.hosts) {
		rc = run_on_hosts(&o, &p, argc, argv);
		free_opts(&o);
		return rc;
	}
	if (!rc)
		rc = target_inspect(&t, o.target);
	if (!rc)
		rc = check_against_target(&p, &t);
	if (!rc && fsp_params_check_memory(&p, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism run: %s\n", err); /* a fill's span is known now */
		rc = 2;
	}
	if (!rc && o.report && report_check_output("run", o.report))
		rc = 1;
	if (!rc && t.raw && fsp_params_writes(&p) &&
	    fsp_target_check_raw_write(t.path, o.destroy_data, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism run: %s\n", err);
		rc = 1;
	}
	if (rc) {
		free_opts(&o);
		return rc;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: io_getevents returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	rc = target_open(&t, &p, o.quiet);
	if (rc) {
		target_close(&t, 1);
		free_opts(&o);
		return rc;
	}
	struct fsp_store *st = fsp_store_open(o.db, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fsprism run: %s\n", err);
		target_close(&t, 1);
		free_opts(&o);
		return 1;
	}
	char *cmdline = fsp_store_cmdline(argc, argv);
	struct fsp_run_info info = {
		.kind = "run", .options = cmdline, .backing_path = t.path,
		.record_mode = o.record_text, .parent = o.parent, .label = o.label,
	};
	int64_t run = fsp_store_begin_run(st, &info);
	free(cmdline);
	if (run < 0) {
		fsp_store_close(st);
		target_close(&t, 1);
		free_opts(&o);
		return 1;
	}
	store_params(st, run, &o, &p, &t, is_jobfile);

	unsigned nsteps = fsp_params_nsteps(&p);
	struct curve_end ce = { 0 };
	struct step *steps = calloc(nsteps, sizeof(*steps));
	struct fsp_oplog *log = NULL;
	if (!steps) {
		fprintf(stderr, "fsprism run: out of memory\n");
		rc = 1;
	} else if (o.record != FSP_RECORD_OFF) {
		log = fsp_oplog_open(st, run, o.record, o.sample_n, 0);
		if (!log) {
			fprintf(stderr, "fsprism run: cannot start the operation log: %s\n",
				strerror(errno));
			rc = 1;
		} else
			fsp_oplog_reserve(log, 1); /* the IO thread's ring, touched now */
	}
	struct fsp_btrace *bt = NULL;
	struct layout_set lay = { .fd = t.raw ? -1 : t.fd };
	if (!rc)
		bt = trace_begin(&o, &t, st, run);
	if (!rc) {
		for (unsigned q = 0, i = 0; q < (p.fill ? 1 : p.nqd); q++)
			for (unsigned m = 0; m < (p.fill ? 1 : p.nmix); m++)
				for (unsigned k = 0; k < (p.fill ? 1 : p.nrate); k++, i++) {
					steps[i].qd = p.qds[q];
					steps[i].read_pct = p.fill ? 0 : p.mixes[m];
					steps[i].rate = p.fill ? (struct fsp_rate_spec){ 0 } : p.rates[k];
					step_label(&steps[i], &p);
				}
		layout_read(&lay, -1);
		rc = run_steps(&o, &p, &t, log, steps, nsteps, &lay, &ce);
	}
	fsp_btrace_stop(bt); /* detached before anything else: nothing stays attached */
	/* store what was measured, also after an error or Ctrl-C */
	if (log && fsp_oplog_close(log) != 0 && !rc)
		rc = 1;
	if (!log)
		fsp_store_end_run(st, run, 0, 0);
	if (steps && store_steps(st, run, &p, steps, nsteps) != 0 && !rc)
		rc = 1;
	if (bt && trace_save(bt, st, run, steps, nsteps) != 0 && !rc)
		rc = 1;
	layout_save(&lay, st, run);
	fsp_btrace_free(bt);
	struct score sc = { 0 };
	if (steps) {
		compute_score(&p, steps, nsteps, &sc);
		if (sc.have) {
			set_attr_double(st, run, "score", sc.value);
			fsp_store_set_attr(st, run, "score_unit", sc.unit);
			fsp_store_set_attr(st, run, "score_method", sc.how);
			if (p.score == FSP_SCORE_FILL)
				set_attr_double(st, run, "score_overall", sc.overall);
		}
	}
	if (steps) {
		store_huge_share(st, run, steps, nsteps);
		store_counts(st, run, steps, nsteps);
		store_rates(st, run, &p, steps, nsteps, &ce);
	}
	if (rc > 128)
		fsp_store_set_attr(st, run, "interrupted", "1");
	else if (rc)
		fsp_store_set_attr(st, run, "failed", "1");
	if (steps && !o.quiet)
		print_summary(&o, &p, &t, steps, nsteps, &sc, &ce);
	if (rc > 128)
		printf("interrupted: ");
	printf("run %lld stored in %s\n", (long long)run, o.db);
	fflush(stdout);
	if (o.report && report_html("run", st, run, 0, o.report, NULL, 0) && !rc)
		rc = 1;
	for (unsigned i = 0; steps && i < nsteps; i++)
		fsp_step_result_free(&steps[i].res);
	free(steps);
	fsp_store_close(st);
	target_close(&t, 0);
	free_opts(&o);
	return rc;
}

static void profiles_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism profiles\n"
"       fsprism profiles --fio PROFILE|JOBFILE [options] [--PARAM=VALUE ...]\n"
"\n"
"List the benchmark profiles of 'fsprism run' with their parameters at the\n"
"default and the full scale. See docs/profiles.md.\n"
"\n"
"With --fio, write the fio job file equivalent to the profile (or job file)\n"
"with its overrides instead: one fio job per step (docs/fio.md).\n"
"\n"
"options:\n"
"  --fio PROFILE|JOBFILE  write the fio job file of this profile or job file\n"
"  --target PATH          fio's filename= (default ${FSPRISM_TARGET}, which\n"
"                         fio takes from the environment)\n"
"  -o, --output FILE      write the job file to FILE (default: stdout)\n"
"  --iolog PREFIX         every job writes its IOs to PREFIX.STEP (fio's\n"
"                         write_iolog)\n"
"  --scale=default|full   the profile's scale (default: default)\n");
	print_param_list(f);
}

enum { OPT_FIO = 256, OPT_TARGET, OPT_IOLOG, OPT_PSCALE };

/* The job file on out, or into path written aside and renamed. 0 or an exit status. */
static int write_fio_job(const struct fsp_params *p, const struct fsp_fiowrite *w,
			 const char *path)
{
	char err[ERRLEN];
	if (!path) {
		if (fsp_fio_write_job(stdout, p, w, err, sizeof(err)) != 0) {
			fprintf(stderr, "fsprism profiles: %s\n", err);
			return 2;
		}
		if (fflush(stdout) != 0 || ferror(stdout))
			return fsp_file_error("profiles", "stdout", "cannot write", errno, 1);
		return 0;
	}
	/* refused before anything is made: the file stays as it was */
	FILE *probe = fopen("/dev/null", "w");
	int rc = probe ? fsp_fio_write_job(probe, p, w, err, sizeof(err)) : 0;
	if (probe)
		fclose(probe);
	if (rc != 0) {
		fprintf(stderr, "fsprism profiles: %s\n", err);
		return 2;
	}
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		fprintf(stderr, "fsprism profiles: %s: name too long\n", path);
		return 2;
	}
	FILE *f = fopen(tmp, "w");
	if (!f)
		return fsp_file_error("profiles", tmp, "cannot create", errno, 1);
	fsp_fio_write_job(f, p, w, err, sizeof(err));
	int werr = ferror(f) ? EIO : 0;
	if (fclose(f) != 0 && !werr)
		werr = errno;
	if (!werr && rename(tmp, path) != 0)
		werr = errno;
	if (werr) {
		unlink(tmp);
		return fsp_file_error("profiles", path, "cannot write", werr, 1);
	}
	return 0;
}

int cmd_profiles(int argc, char **argv)
{
	static const struct option own[] = {
		{ "fio", required_argument, NULL, OPT_FIO },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "output", required_argument, NULL, 'o' },
		{ "iolog", required_argument, NULL, OPT_IOLOG },
		{ "scale", required_argument, NULL, OPT_PSCALE },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct run_opts o;
	memset(&o, 0, sizeof(o));
	const char *output = NULL;
	struct fsp_fiowrite w = { .filename = "${FSPRISM_TARGET}" };
	o.longopts = fsp_opt_with_params(own);
	if (!o.longopts) {
		fprintf(stderr, "fsprism profiles: out of memory\n");
		return 1;
	}
	struct fsp_opt g;
	fsp_opt_init(&g, "profiles", profiles_usage, o.longopts, "ho:", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;) {
		switch (c) {
		case FSP_OPT_EXIT:
			free_opts(&o);
			return g.status;
		case OPT_FIO:
			o.profile = g.arg;
			break;
		case OPT_TARGET:
			w.filename = g.arg;
			break;
		case 'o':
			output = g.arg;
			break;
		case OPT_IOLOG:
			w.iolog = g.arg;
			break;
		case OPT_PSCALE:
			if (fsp_scale_parse(g.arg, &o.scale)) {
				free_opts(&o);
				return fsp_usage_error("profiles", "scale: '%s' is not default "
						       "or full", g.arg);
			}
			break;
		default:
			if (o.noverrides == MAX_OVERRIDES) {
				free_opts(&o);
				return fsp_usage_error("profiles", "too many parameters");
			}
			o.override_key[o.noverrides] = g.name;
			o.override_val[o.noverrides++] = g.arg ? g.arg : "";
			break;
		}
	}
	if (g.npos) {
		free_opts(&o);
		return fsp_usage_error("profiles", "unexpected argument '%s'", g.pos[0]);
	}
	if (!o.profile && (o.noverrides || output || w.iolog || o.scale ||
			   strcmp(w.filename, "${FSPRISM_TARGET}"))) {
		free_opts(&o);
		return fsp_usage_error("profiles", "parameters, --target, --output, --iolog "
				       "and --scale go with --fio");
	}
	if (o.profile) {
		struct fsp_params p;
		int is_jobfile;
		int rc = resolve_params_as("profiles", &o, &p, &is_jobfile);
		if (!rc) {
			w.profile = o.profile;
			rc = write_fio_job(&p, &w, output);
		}
		free_opts(&o);
		return rc;
	}
	free_opts(&o);
	printf("Profiles (fsprism run PROFILE TARGET [--scale=full] [--PARAM=VALUE]):\n");
	for (size_t i = 0; i < fsp_nprofiles; i++) {
		struct fsp_params d, f;
		fsp_profile_load(fsp_profiles[i].name, FSP_SCALE_DEFAULT, &d);
		fsp_profile_load(fsp_profiles[i].name, FSP_SCALE_FULL, &f);
		printf("\n%s - %s\n", fsp_profiles[i].name, fsp_profiles[i].summary);
		printf("  %-10s %-34s %s\n", "parameter", "default scale", "full scale");
		for (int k = 0; fsp_param_names[k]; k++) {
			char a[160], b[160];
			const char *key = fsp_param_names[k];
			fsp_param_format(&d, key, a, sizeof(a));
			fsp_param_format(&f, key, b, sizeof(b));
			if (!d.fill && (!strcmp(key, "segment") || !strcmp(key, "tail")))
				continue;
			if (!run_has_rates(&d) && (!strcmp(key, "arrivals") || !strcmp(key, "stop-p99")))
				continue;
			printf("  %-10s %-34s %s\n", key, a, b);
		}
		const char *score = "";
		switch (d.score) {
		case FSP_SCORE_QD124: score = "mean of QD1, QD2, QD4"; break;
		case FSP_SCORE_STEPS: score = "mean over mixes"; break;
		case FSP_SCORE_BURSTS: score = "mean over bursts"; break;
		case FSP_SCORE_FILL: score = "per-segment curve; mean of the tail; overall mean"; break;
		case FSP_SCORE_CURVE: score = "the maximum; latency per rate step"; break;
		}
		printf("  score: %s (%s)\n", score, d.iops_score ? "IOPS" : "MB/s");
	}
	return 0;
}

/*
 * mount.c - `fsprism mount` and `fsprism umount`.
 *
 * mount validates every input before anything is mounted, then (unless -f)
 * forks: the child opens the database, starts the run and the oplog,
 * mounts, and reports "ok" or its one-line error through a pipe; the parent
 * prints that error or returns once the mount is ready. The daemon holds an
 * flock on a pid file for as long as it runs, including the final flush of
 * records, so `fsprism umount` can unmount and then wait on that lock until
 * the database is complete.
 */
#include "config.h"
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <fuse_lowlevel.h>
#include "mountinfo.h"
#include "cli.h"
#include "fuse_fs.h"
#include "oplog.h"
#include "store.h"

#define DEF_THREADS 32
#define DEF_MAX_BACKGROUND 64
#define DEF_MAX_WRITE (1u << 20)
#define DEF_TIMEOUT 1.0
#define UMOUNT_WAIT_S 120

struct mount_opts {
	int foreground;
	char *fuse_opts;      /* -o, as given */
	char *log_path;       /* absolute */
	const char *record;   /* as given */
	enum fsp_record_mode record_mode;
	unsigned sample_n;
	unsigned threads;
	int clone_fd;
	int writeback_cache;
	int splice;
	int count_inflight;
	unsigned max_write;
	unsigned max_background;
	double attr_timeout, entry_timeout;
	char backing[PATH_MAX];
	char mnt[PATH_MAX];
	char *cmdline;        /* for the run's options column */
};

static void mount_usage(FILE *f)
{
	fprintf(f,
"usage: fsprism mount [options] BACKING_DIR MOUNTPOINT\n"
"\n"
"Mount BACKING_DIR at MOUNTPOINT through fsprism's passthrough FUSE layer and\n"
"log every operation's latency, split into total / backing / layer time.\n"
"\n"
"options (default in brackets):\n"
"  -f                   stay in the foreground [daemonize once mounted]\n"
"  -o OPTS              FUSE mount options, e.g. allow_other [none;\n"
"                       default_permissions is always added]\n"
"  --log FILE           SQLite database for the records [./fsprism.db]\n"
"  --record MODE        full | sample:N | hist | off [full]\n"
"  --threads N          worker threads [%u]\n"
"  --clone-fd           one /dev/fuse descriptor per thread [off]\n"
"  --writeback-cache    kernel write-back caching [off]\n"
"  --splice             splice write payloads from /dev/fuse [off]\n"
"  --max-write BYTES    largest WRITE request, 4k..1M [1M]\n"
"  --max-background N   kernel limit on async requests [%u]\n"
"  --attr-timeout S     attribute cache seconds [%.1f]\n"
"  --entry-timeout S    name cache seconds [%.1f]\n"
"  --count-inflight     record the most concurrent backing reads/writes\n"
"                       as run attribute max_inflight_io [off]\n"
"  -h, --help           this text\n"
"\n"
"Unmount with 'fsprism umount MOUNTPOINT' (waits until every record is stored),\n"
"fusermount3 -u, or SIGTERM/SIGINT to the daemon. See docs/fuse.md.\n",
		DEF_THREADS, DEF_MAX_BACKGROUND, DEF_TIMEOUT, DEF_TIMEOUT);
}

/* ---- small helpers ---- */

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out,
		      int allow_suffix)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (allow_suffix && *end) {
		unsigned long long mul = 0;
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		default: return -1;
		}
		end++;
		if (v > max / mul)
			return -1;
		v *= mul;
	}
	if (*end || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 86400)
		return -1;
	*out = v;
	return 0;
}

/*
 * Is path (a realpath) a mount point? Returns 1 and the fs type of the last
 * (topmost) mount there, 0 if not mounted, -1 if mountinfo is unreadable.
 */
static int find_mount(const char *path, char *fstype, size_t fstype_len)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	int found = 0;
	if (fsp_mountinfo_open(&mi) < 0)
		return -1;
	while (fsp_mountinfo_next(&mi, &m)) {
		if (strcmp(m.mount_point, path))
			continue;
		found = 1;
		snprintf(fstype, fstype_len, "%s", m.fstype);
	}
	fsp_mountinfo_close(&mi);
	return found;
}

/* The pid file whose flock says "this daemon is still running / flushing". */
static void pidfile_path(const char *mnt, char *out, size_t len)
{
	char dir[64];
	if (geteuid() == 0)
		snprintf(dir, sizeof(dir), "/run/fsprism");
	else
		snprintf(dir, sizeof(dir), "/tmp/fsprism-%u", (unsigned)geteuid());
	char name[NAME_MAX + 1];
	size_t n = 0;
	for (const char *p = mnt; *p && n + 4 < sizeof(name) - 5; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_')
			name[n++] = (char)c;
		else
			n += (size_t)sprintf(name + n, "%%%02X", c);
	}
	name[n] = '\0';
	if (strlen(mnt) * 3 > sizeof(name) - 10) {
		/* too long to escape: a hash of the path instead */
		uint64_t h = 1469598103934665603ull;
		for (const char *p = mnt; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		snprintf(name, sizeof(name), "long-%016llx", (unsigned long long)h);
	}
	snprintf(out, len, "%s/%s.pid", dir, name);
}

static int pidfile_open_locked(const char *mnt, char *err, size_t errlen)
{
	char path[PATH_MAX];
	pidfile_path(mnt, path, sizeof(path));
	char *slash = strrchr(path, '/');
	*slash = '\0';
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	*slash = '/';
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create pid file %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "an fsprism daemon for %s is still running (%s is locked)",
			 mnt, path);
		close(fd);
		return -1;
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || write(fd, pid, (size_t)n) != n) {
		snprintf(err, errlen, "cannot write pid file %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* libfuse's own messages, kept so a failure can be reported on one line. */
static char fuse_last_msg[512];

static void capture_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	if (level > FUSE_LOG_ERR)
		return;
	/* libfuse may build one message out of several calls: append. */
	size_t n = strlen(fuse_last_msg);
	vsnprintf(fuse_last_msg + n, sizeof(fuse_last_msg) - n, fmt, ap);
	for (char *p = fuse_last_msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	n = strlen(fuse_last_msg);
	while (n && fuse_last_msg[n - 1] == ' ')
		fuse_last_msg[--n] = '\0';
}

/* Append s to the option string, escaping ',' and '\' for fuse_opt. */
static void opt_escape(char *out, size_t len, const char *s)
{
	size_t n = strlen(out);
	for (; *s && n + 2 < len; s++) {
		if (*s == ',' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = '\0';
}

/* ---- argument parsing and validation (before anything is mounted) ---- */

static int validate_dir(const char *what, const char *arg, char *real, int need_read)
{
	struct stat st;
	if (stat(arg, &st) < 0) {
		fprintf(stderr, "fsprism mount: %s %s: %s\n", what, arg,
			errno == ENOENT ? "does not exist" : strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fsprism mount: %s %s is not a directory\n", what, arg);
		return -1;
	}
	if (!realpath(arg, real)) {
		fprintf(stderr, "fsprism mount: %s %s: %s\n", what, arg, strerror(errno));
		return -1;
	}
	if (need_read) {
		int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "fsprism mount: cannot read %s %s: %s\n", what,
				arg, strerror(errno));
			return -1;
		}
		close(fd);
	}
	return 0;
}

enum { OPT_LOG = 256, OPT_RECORD, OPT_THREADS, OPT_CLONE_FD, OPT_WRITEBACK,
       OPT_SPLICE, OPT_MAX_WRITE, OPT_MAX_BG, OPT_ATTR_TO, OPT_ENTRY_TO,
       OPT_INFLIGHT };

/* Returns 0, or the exit status to return. */
static int parse_mount_args(int argc, char **argv, struct mount_opts *o)
{
	static const struct option longopts[] = {
		{ "log", required_argument, NULL, OPT_LOG },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "clone-fd", no_argument, NULL, OPT_CLONE_FD },
		{ "writeback-cache", no_argument, NULL, OPT_WRITEBACK },
		{ "splice", no_argument, NULL, OPT_SPLICE },
		{ "max-write", required_argument, NULL, OPT_MAX_WRITE },
		{ "max-background", required_argument, NULL, OPT_MAX_BG },
		{ "attr-timeout", required_argument, NULL, OPT_ATTR_TO },
		{ "entry-timeout", required_argument, NULL, OPT_ENTRY_TO },
		{ "count-inflight", no_argument, NULL, OPT_INFLIGHT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log = "fsprism.db";
	unsigned long long v;
	o->record = "full";
	o->threads = DEF_THREADS;
	o->max_write = DEF_MAX_WRITE;
	o->max_background = DEF_MAX_BACKGROUND;
	o->attr_timeout = DEF_TIMEOUT;
	o->entry_timeout = DEF_TIMEOUT;
	opterr = 0;
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, ":fo:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o->foreground = 1; break;
		case 'o': o->fuse_opts = optarg; break;
		case 'h': mount_usage(stdout); return -1;
		case OPT_LOG: log = optarg; break;
		case OPT_RECORD: o->record = optarg; break;
		case OPT_CLONE_FD: o->clone_fd = 1; break;
		case OPT_WRITEBACK: o->writeback_cache = 1; break;
		case OPT_SPLICE: o->splice = 1; break;
		case OPT_INFLIGHT: o->count_inflight = 1; break;
		case OPT_THREADS:
			if (parse_uint(optarg, 1024, &v, 0) || v < 1) {
				fprintf(stderr, "fsprism mount: invalid --threads '%s' (1..1024)\n", optarg);
				return 2;
			}
			o->threads = (unsigned)v;
			break;
		case OPT_MAX_WRITE:
			if (parse_uint(optarg, 1u << 20, &v, 1) || v < 4096) {
				fprintf(stderr, "fsprism mount: invalid --max-write '%s' (4k..1M)\n", optarg);
				return 2;
			}
			o->max_write = (unsigned)v;
			break;
		case OPT_MAX_BG:
			if (parse_uint(optarg, 65535, &v, 0) || v < 1) {
				fprintf(stderr, "fsprism mount: invalid --max-background '%s' (1..65535)\n", optarg);
				return 2;
			}
			o->max_background = (unsigned)v;
			break;
		case OPT_ATTR_TO:
		case OPT_ENTRY_TO:
			if (parse_seconds(optarg, c == OPT_ATTR_TO ? &o->attr_timeout
								   : &o->entry_timeout)) {
				fprintf(stderr, "fsprism mount: invalid --%s '%s' (seconds, 0..86400)\n",
					c == OPT_ATTR_TO ? "attr-timeout" : "entry-timeout", optarg);
				return 2;
			}
			break;
		case ':':
			fprintf(stderr, "fsprism mount: option %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			if (optopt)
				fprintf(stderr, "fsprism mount: unknown option '-%c' (try --help)\n", optopt);
			else
				fprintf(stderr, "fsprism mount: unknown option '%s' (try --help)\n",
					argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "fsprism mount: expected BACKING_DIR and MOUNTPOINT (try --help)\n");
		return 2;
	}
	if (fsp_record_mode_parse(o->record, &o->record_mode, &o->sample_n)) {
		fprintf(stderr, "fsprism mount: invalid --record '%s' (full, sample:N, hist or off)\n",
			o->record);
		return 2;
	}
	if (validate_dir("backing directory", argv[optind], o->backing, 1))
		return 1;
	if (validate_dir("mountpoint", argv[optind + 1], o->mnt, 0))
		return 1;
	char fstype[64];
	if (find_mount(o->mnt, fstype, sizeof(fstype)) == 1) {
		fprintf(stderr, "fsprism mount: mountpoint %s is already a mount point (%s)\n",
			o->mnt, fstype);
		return 1;
	}
	size_t blen = strlen(o->backing);
	if (!strcmp(o->mnt, o->backing) ||
	    (!strncmp(o->mnt, o->backing, blen) && (o->mnt[blen] == '/' || blen == 1))) {
		/* the daemon would walk into its own mount */
		fprintf(stderr, "fsprism mount: mountpoint %s is %sthe backing directory %s\n",
			o->mnt, strcmp(o->mnt, o->backing) ? "inside " : "", o->backing);
		return 1;
	}
	struct stat fst;
	if (stat("/dev/fuse", &fst) < 0) {
		fprintf(stderr, "fsprism mount: no /dev/fuse: %s (is the fuse module loaded?)\n",
			strerror(errno));
		return 1;
	}
	if (!S_ISCHR(fst.st_mode) || fst.st_rdev != makedev(10, 229)) {
		fprintf(stderr, "fsprism mount: /dev/fuse is not the FUSE device (char 10:229)\n");
		return 1;
	}
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "fsprism mount: cannot open /dev/fuse: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	/* Resolve the database path now, before the daemon leaves the cwd. */
	if (log[0] == '/') {
		o->log_path = strdup(log);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "fsprism mount: cannot resolve --log %s: %s\n", log,
				strerror(errno));
			return 1;
		}
		o->log_path = malloc(strlen(cwd) + strlen(log) + 2);
		if (o->log_path)
			sprintf(o->log_path, "%s/%s", cwd, log);
	}
	char dberr[PATH_MAX + 128];
	if (o->log_path && fsp_store_check_writable(o->log_path, dberr, sizeof(dberr))) {
		/* said before forking, so the command itself reports it */
		fprintf(stderr, "fsprism mount: %s\n", dberr);
		return 1;
	}
	o->cmdline = fsp_store_cmdline(argc, argv);
	if (!o->log_path || !o->cmdline) {
		fprintf(stderr, "fsprism mount: out of memory\n");
		return 1;
	}
	return 0;
}

/* ---- the daemon ---- */

struct daemon {
	struct mount_opts *o;
	struct fsp_store *store;
	int64_t run;
	struct fsp_oplog *log;
	struct fsp_fs *fs;
	struct fuse_session *se;
	int pid_fd;
	int mounted;
	int db_existed;
};

/*
 * Everything up to a ready mount. Returns 0, or -1 with err filled. The
 * checks that need no database come first (the -o options are validated by
 * creating the session), so a bad input leaves the database untouched.
 */
static int daemon_start(struct daemon *d, char *err, size_t errlen)
{
	struct mount_opts *o = d->o;
	struct fsp_fs_opts fo = {
		.attr_timeout = o->attr_timeout,
		.entry_timeout = o->entry_timeout,
		.writeback_cache = o->writeback_cache,
		.splice = o->splice,
		.max_write = o->max_write,
		.max_background = o->max_background,
		.timing = o->record_mode != FSP_RECORD_OFF,
		.track_inflight = o->count_inflight,
		.log = NULL, /* attached below, once the run exists */
	};
	d->fs = fsp_fs_new(o->backing, &fo, err, errlen);
	if (!d->fs)
		return -1;

	char opts[PATH_MAX * 2 + 256] = "default_permissions,subtype=fsprism,fsname=";
	opt_escape(opts, sizeof(opts), o->backing);
	if (o->fuse_opts && *o->fuse_opts) {
		strncat(opts, ",", sizeof(opts) - strlen(opts) - 1);
		strncat(opts, o->fuse_opts, sizeof(opts) - strlen(opts) - 1);
	}
	char *fargv[] = { "fsprism", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	fuse_last_msg[0] = '\0';
	d->se = fuse_session_new(&args, &fsp_fs_ops, sizeof(fsp_fs_ops), d->fs);
	fuse_opt_free_args(&args); /* libfuse may have copied and extended them */
	if (!d->se) {
		snprintf(err, errlen, "invalid -o options '%s'%s%s", o->fuse_opts ? o->fuse_opts : "",
			 fuse_last_msg[0] ? ": " : "", fuse_last_msg);
		return -1;
	}

	struct stat st;
	d->db_existed = stat(o->log_path, &st) == 0;
	char serr[PATH_MAX + 512];
	d->store = fsp_store_open(o->log_path, serr, sizeof(serr));
	if (!d->store) {
		snprintf(err, errlen, "%s", serr);
		return -1;
	}
	d->pid_fd = pidfile_open_locked(o->mnt, err, errlen);
	if (d->pid_fd < 0)
		return -1;
	struct fsp_run_info info = {
		.kind = "mount",
		.options = o->cmdline,
		.backing_path = o->backing,
		.record_mode = o->record,
	};
	d->run = fsp_store_begin_run(d->store, &info);
	if (d->run < 0) {
		snprintf(err, errlen, "cannot start a run in database %s", o->log_path);
		return -1;
	}
	if (o->record_mode != FSP_RECORD_OFF) {
		d->log = fsp_oplog_open(d->store, d->run, o->record_mode, o->sample_n, 0);
		if (!d->log) {
			snprintf(err, errlen, "cannot start the operation log on %s: %s",
				 o->log_path, strerror(errno));
			return -1;
		}
		fsp_fs_set_log(d->fs, d->log);
	}
	if (fuse_set_signal_handlers(d->se) < 0) {
		snprintf(err, errlen, "cannot install signal handlers");
		return -1;
	}
	fuse_last_msg[0] = '\0';
	if (fuse_session_mount(d->se, o->mnt) < 0) {
		snprintf(err, errlen, "cannot mount %s%s%s", o->mnt,
			 fuse_last_msg[0] ? ": " : "", fuse_last_msg);
		return -1;
	}
	d->mounted = 1;
	return 0;
}

/*
 * A start that failed after the database was touched: remove what it wrote
 * (the whole file if this start created it), so no half-written run stays.
 */
static void forget_failed_run(struct daemon *d)
{
	const char *path = d->o->log_path;
	if (!d->db_existed) {
		char p[PATH_MAX + 8];
		unlink(path);
		snprintf(p, sizeof(p), "%s-wal", path);
		unlink(p);
		snprintf(p, sizeof(p), "%s-shm", path);
		unlink(p);
		return;
	}
	if (d->run <= 0)
		return;
	struct fsp_store *st = fsp_store_open(path, NULL, 0);
	if (!st)
		return;
	static const char *const tables[] = { "ops", "hist", "hist_bins", "run_attrs" };
	sqlite3 *db = fsp_store_db(st);
	char sql[128];
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE %s=%lld", tables[i],
			 "run", (long long)d->run);
		sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	snprintf(sql, sizeof(sql), "DELETE FROM runs WHERE id=%lld", (long long)d->run);
	sqlite3_exec(db, sql, NULL, NULL, NULL);
	fsp_store_close(st);
}

/* Serve until unmounted or signalled, then store everything and clean up. */
static int daemon_finish(struct daemon *d, int serve)
{
	int status = 0;
	if (serve) {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_max_threads(cfg, d->o->threads);
		/* Keep every thread: creating them per burst costs latency. */
		fuse_loop_cfg_set_idle_threads(cfg, d->o->threads);
		fuse_loop_cfg_set_clone_fd(cfg, (unsigned)d->o->clone_fd);
		int res = fuse_session_loop_mt(d->se, cfg);
		fuse_loop_cfg_destroy(cfg);
		if (res < 0)
			status = 1;
	}
	if (d->se) {
		/* Unmount unless someone already did (fsprism umount, fusermount3 -u). */
		char fstype[64];
		if (d->mounted && find_mount(d->o->mnt, fstype, sizeof(fstype)) == 1 &&
		    !strcmp(fstype, "fuse.fsprism"))
			fuse_session_unmount(d->se);
		fuse_remove_signal_handlers(d->se);
		fuse_session_destroy(d->se);
	}
	if (d->log) {
		if (fsp_oplog_close(d->log) < 0)
			status = 1;
	} else if (d->store && d->run > 0) {
		fsp_store_end_run(d->store, d->run, 0, 0);
	}
	if (d->store && d->run > 0 && d->o->count_inflight) {
		char v[32];
		snprintf(v, sizeof(v), "%u", fsp_fs_max_inflight(d->fs));
		fsp_store_set_attr(d->store, d->run, "max_inflight_io", v);
	}
	if (d->store) {
		fsp_store_close(d->store);
		d->store = NULL;
		if (!serve)
			forget_failed_run(d);
	}
	fsp_fs_free(d->fs);
	if (d->pid_fd >= 0) {
		char path[PATH_MAX];
		pidfile_path(d->o->mnt, path, sizeof(path));
		unlink(path);
		/* pid_fd stays open: its lock goes with the process, so when
		 * `fsprism umount` stops waiting, the daemon is gone too. */
	}
	return status;
}

static void free_opts(struct mount_opts *o)
{
	free(o->log_path);
	free(o->cmdline);
}

int cmd_mount(int argc, char **argv)
{
	struct mount_opts o;
	memset(&o, 0, sizeof(o));
	int rc = parse_mount_args(argc, argv, &o);
	if (rc) {
		free_opts(&o);
		return rc < 0 ? 0 : rc;
	}
	fuse_set_log_func(capture_fuse_log);
	umask(0); /* the kernel already applied the caller's umask */

	struct daemon d = { .o = &o, .pid_fd = -1 };
	char err[2 * PATH_MAX + 512];
	if (o.foreground) {
		if (daemon_start(&d, err, sizeof(err)) < 0) {
			fprintf(stderr, "fsprism mount: %s\n", err);
			daemon_finish(&d, 0);
			free_opts(&o);
			return 1;
		}
		fuse_set_log_func(NULL);
		rc = daemon_finish(&d, 1);
		free_opts(&o);
		return rc;
	}

	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "fsprism mount: pipe: %s\n", strerror(errno));
		free_opts(&o);
		return 1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fsprism mount: fork: %s\n", strerror(errno));
		free_opts(&o);
		return 1;
	}
	if (pid > 0) {
		close(pfd[1]);
		char msg[2 * PATH_MAX + 512];
		size_t n = 0;
		ssize_t r;
		while (n < sizeof(msg) - 1 &&
		       ((r = read(pfd[0], msg + n, sizeof(msg) - 1 - n)) > 0 ||
			(r < 0 && errno == EINTR)))
			if (r > 0)
				n += (size_t)r;
		msg[n] = '\0';
		close(pfd[0]);
		free_opts(&o);
		if (!strcmp(msg, "ok"))
			return 0;
		int wst;
		waitpid(pid, &wst, 0);
		if (n)
			fprintf(stderr, "fsprism mount: %s\n", msg);
		else
			fprintf(stderr, "fsprism mount: the daemon exited during start-up\n");
		return 1;
	}

	/* child: the daemon */
	close(pfd[0]);
	setsid();
	if (daemon_start(&d, err, sizeof(err)) < 0) {
		daemon_finish(&d, 0);
		if (write(pfd[1], err, strlen(err)) < 0) {
			/* the parent is gone; nothing else to tell */
		}
		free_opts(&o);
		exit(1); /* exit, not _exit: sanitizer builds check for leaks */
	}
	/* From now on libfuse reports to stderr: /dev/null, or the file named
	 * by FSPRISM_DAEMON_LOG (for debugging and the tests). */
	fuse_set_log_func(NULL);
	int null = open("/dev/null", O_RDWR);
	const char *dlog = getenv("FSPRISM_DAEMON_LOG");
	int errfd = dlog ? open(dlog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(errfd >= 0 ? errfd : null, 2);
		if (null > 2)
			close(null);
	}
	if (errfd > 2)
		close(errfd);
	if (chdir("/") < 0) {
		/* harmless: every path is absolute */
	}
	if (write(pfd[1], "ok", 2) < 0) {
		/* parent gone: keep serving */
	}
	close(pfd[1]);
	rc = daemon_finish(&d, 1);
	free_opts(&o);
	exit(rc);
}

/* ---- umount ---- */

int cmd_umount(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: fsprism umount MOUNTPOINT\n\n"
		       "Unmount an fsprism mount and wait (up to %d s) until its daemon\n"
		       "has stored every record in the database.\n", UMOUNT_WAIT_S);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		if (argc == 2)
			fprintf(stderr, "fsprism umount: unknown option '%s'\n", argv[1]);
		else
			fprintf(stderr, "usage: fsprism umount MOUNTPOINT\n");
		return 2;
	}
	const char *arg = argv[1];
	char mnt[PATH_MAX];
	if (!realpath(arg, mnt)) {
		fprintf(stderr, "fsprism umount: %s: %s\n", arg,
			errno == ENOENT ? "does not exist" : strerror(errno));
		return 1;
	}
	char fstype[64];
	int found = find_mount(mnt, fstype, sizeof(fstype));
	if (found < 0) {
		fprintf(stderr, "fsprism umount: cannot read /proc/self/mountinfo: %s\n",
			strerror(errno));
		return 1;
	}
	if (!found) {
		fprintf(stderr, "fsprism umount: %s is not mounted\n", arg);
		return 1;
	}
	if (strcmp(fstype, "fuse.fsprism")) {
		fprintf(stderr, "fsprism umount: %s is not an fsprism mount (it is %s)\n",
			arg, fstype);
		return 1;
	}
	char pidpath[PATH_MAX];
	pidfile_path(mnt, pidpath, sizeof(pidpath));
	int pid_fd = open(pidpath, O_RDONLY | O_CLOEXEC);

	if (geteuid() == 0) {
		if (umount2(mnt, 0) < 0) {
			fprintf(stderr, "fsprism umount: cannot unmount %s: %s\n", arg,
				errno == EBUSY ? "it is busy" : strerror(errno));
			if (pid_fd >= 0)
				close(pid_fd);
			return 1;
		}
	} else {
		pid_t pid = fork();
		if (pid == 0) {
			execlp("fusermount3", "fusermount3", "-u", "--", mnt, (char *)NULL);
			_exit(127);
		}
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "fsprism umount: fusermount3 -u %s failed\n", arg);
			if (pid_fd >= 0)
				close(pid_fd);
			return 1;
		}
	}
	if (pid_fd < 0)
		return 0; /* no daemon pid file (already gone): nothing to wait for */
	/* The daemon holds an exclusive lock until the last record is stored. */
	for (int waited_ms = 0; flock(pid_fd, LOCK_SH | LOCK_NB) < 0; waited_ms += 20) {
		if (waited_ms >= UMOUNT_WAIT_S * 1000) {
			fprintf(stderr, "fsprism umount: %s unmounted, but its daemon is still "
				"storing records after %d s; the database is not complete yet\n",
				arg, UMOUNT_WAIT_S);
			close(pid_fd);
			return 1;
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	close(pid_fd);
	return 0;
}

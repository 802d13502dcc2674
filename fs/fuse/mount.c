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
 *
 * With --cow / --journal / --store the data of regular files lives in an
 * emulated store (fs/emu/store.h). Its inputs are checked before forking
 * (raw-write safety for a block device, as for `fsprism run`); the daemon
 * opens it before mounting, so an error still reaches the terminal and
 * leaves nothing mounted. At mount it drops objects whose file is gone
 * from the backing tree; at unmount it closes the store before the oplog
 * (so the last commit's device IO is recorded) and stores the device
 * counters (dev.* run attributes) and every file's extents.
 */
#include "config.h"
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
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
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <fuse_lowlevel.h>
#include "src/sys/mountinfo.h"
#include "src/cli/cli.h"
#include "fs/emu/store.h"
#include "fs/fuse/fuse_fs.h"
#include "fs/fuse/inode.h"
#include "src/db/oplog.h"
#include "src/base/units.h"
#include "src/db/store.h"
#include "src/sys/target.h"

/*
 * Worker threads. With asynchronous backing IO a worker never waits for the
 * data, and every thread beyond what the CPUs keep busy costs a wake-up per
 * request (docs/fuse.md, Measurements): 2. When data IO waits in the worker
 * (--backing-io=sync, or the emulated store), the thread count is the queue
 * depth the backing file or store can see: 32.
 */
#define DEF_THREADS_AIO 2
#define DEF_THREADS 32
#define DEF_MAX_BACKGROUND 64
#define DEF_MAX_WRITE (1u << 20)
#define DEF_TIMEOUT 1.0
#define UMOUNT_WAIT_S 120
#define DEF_STORE_SIZE (1ull << 30)
#define DEF_COMMIT_INTERVAL_S 5
#define DEF_COMMIT_BYTES (64ull << 20)

struct mount_opts {
	int foreground;
	char *fuse_opts;      /* -o, as given; then without the atime options
			       * libfuse does not know (atime_opts) */
	char *fuse_opts_buf;  /* owns fuse_opts once rewritten */
	int noatime, nodiratime; /* -o noatime / nodiratime: O_NOATIME opens */
	char *log_path;       /* absolute */
	const char *record;   /* as given */
	enum fsp_record_mode record_mode;
	unsigned sample_n;
	unsigned threads;
	int clone_fd;
	int writeback_cache;
	int splice;
	int count_inflight;
	int backing_sync;      /* --backing-io=sync */
	unsigned max_write;
	unsigned max_background;
	double attr_timeout, entry_timeout;
	char backing[PATH_MAX];
	char mnt[PATH_MAX];
	char *cmdline;        /* for the run's options column */
	/* emulation: on when --store is given or --cow / --journal is not off */
	int emu;
	struct emu_store_cfg ecfg;
	char store[PATH_MAX]; /* absolute */
	int store_given;
	int hide_store;       /* the store is BACKING/.fsprism-store */
	uint64_t store_size;  /* a new store file's size */
	int store_size_given;
	int journal_size_given;
	int block_size_given;
	int destroy_data;
	int adopt_store;      /* --adopt-store: mount though most objects have no file */
	int drop_orphans;     /* --drop-orphans: delete the objects no file names */
	int emu_opt_given;    /* an emulation-only option, for "needs --store ..." */
	const char *emu_opt_name;
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
"                       default_permissions is always added]; noatime opens\n"
"                       backing files O_NOATIME (nodiratime: directories),\n"
"                       relatime and strictatime need the backing fs's rule\n"
"  --log FILE           SQLite database for the records [./fsprism.db]\n"
"  --record MODE        full | sample:N | hist | off [full]\n"
"  --threads N          worker threads [%u; %u with --backing-io=sync or\n"
"                       the emulation]\n"
"  --clone-fd           one /dev/fuse descriptor per thread [off]\n"
"  --backing-io MODE    aio | sync: O_DIRECT reads and writes of backing\n"
"                       files asynchronous (libaio) or in the worker [aio]\n"
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
"copy-on-write / journaling emulation (on when --store is given or --cow or\n"
"--journal is not off; file data then lives in the store, names, owners,\n"
"modes and times in BACKING_DIR):\n"
"  --cow MODE           off | shared | always: move overwritten blocks to new\n"
"                       space never, only when shared by a clone, always [off]\n"
"  --journal MODE       off | writeback | ordered | data [off]\n"
"  --store PATH         block device or file holding the data\n"
"                       [BACKING_DIR/.fsprism-store, hidden from the mount]\n"
"  --store-size SIZE    size of a new store file, e.g. 4G [1G]\n"
"  --format             format the store even if it holds a valid one (without\n"
"                       it only a new or empty store file is formatted; a\n"
"                       damaged store is recovered from its backup header\n"
"                       or refused)\n"
"  --destroy-data       allow formatting a device or file that holds other\n"
"                       data (a signature, or an existing fsprism store on a\n"
"                       device with --format) [refuse]\n"
"  --adopt-store        mount even though most of the store's objects match no\n"
"                       file of BACKING_DIR (another or a copied directory?);\n"
"                       the unmatched ones are kept as orphans [refuse]\n"
"  --drop-orphans       delete the store's orphans: objects that no file of\n"
"                       BACKING_DIR names [keep them]\n"
"  --alloc POLICY       next-fit | first-fit block allocation [next-fit]\n"
"  --commit-interval S  seconds between commits; 0 or never: only on fsync,\n"
"                       --commit-bytes and unmount [%d]\n"
"  --commit-bytes SIZE  dirty data that forces a commit [64M]\n"
"  --journal-size SIZE  journal of a new store [1/32 of it, 1M..128M]\n"
"  --no-flush           send no cache flushes or FUA writes (like nobarrier)\n"
"  --no-fsync-commit    fsync only flushes the device cache; metadata waits for\n"
"                       the next timer or size commit\n"
"  --block-size SIZE    block and metadata node size of a new store, 4k..64k [4k]\n"
"  --tree-depth N       index nodes rewritten per changed file at least, to model\n"
"                       a deeper file-system tree (APFS: 2-3) [1]\n"
"  --extent-cost TIME   CPU time spent on each extent a read crosses, to model a\n"
"                       kernel file system's per-extent work, e.g. 5us [0]\n"
"\n"
"Unmount with 'fsprism umount MOUNTPOINT' (waits until every record is stored),\n"
"fusermount3 -u, or SIGTERM/SIGINT to the daemon. See docs/fuse.md.\n",
		DEF_THREADS_AIO, DEF_THREADS, DEF_MAX_BACKGROUND, DEF_TIMEOUT, DEF_TIMEOUT, DEF_COMMIT_INTERVAL_S);
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

/*
 * The atime options among -o. FUSE leaves atimes to the server (the kernel
 * updates none of a FUSE file's), and the backing reads update the backing
 * atimes by the backing file system's own rule; so noatime and nodiratime
 * become O_NOATIME opens of backing files (and directories), and relatime
 * or strictatime are accepted only where the backing file system follows
 * that rule already. libfuse 3 knows noatime and atime only: the others
 * are taken out of the string it gets. Returns 0 or the exit status.
 */
static int atime_opts(struct mount_opts *o)
{
	if (!o->fuse_opts)
		return 0;
	enum { AT_NONE, AT_ATIME, AT_NOATIME, AT_RELATIME, AT_STRICT } mode = AT_NONE;
	char *out = malloc(strlen(o->fuse_opts) + 1);
	if (!out) {
		fprintf(stderr, "fsprism mount: out of memory\n");
		return 1;
	}
	size_t n = 0;
	for (const char *p = o->fuse_opts; *p;) {
		const char *e = p;
		while (*e && *e != ',')
			e += (e[0] == '\\' && e[1]) ? 2 : 1;
		size_t len = (size_t)(e - p);
		int keep = 1;
#define IS(word) (len == strlen(word) && !strncmp(p, word, len))
		if (IS("noatime")) {
			mode = AT_NOATIME;
		} else if (IS("atime")) {
			mode = AT_ATIME;
		} else if (IS("nodiratime")) {
			o->nodiratime = 1;
			keep = 0;
		} else if (IS("relatime") || IS("strictatime")) {
			mode = IS("relatime") ? AT_RELATIME : AT_STRICT;
			keep = 0;
		}
#undef IS
		if (keep && len) {
			if (n)
				out[n++] = ',';
			memcpy(out + n, p, len);
			n += len;
		}
		p = *e ? e + 1 : e;
	}
	out[n] = '\0';
	o->fuse_opts = o->fuse_opts_buf = out;
	o->noatime = mode == AT_NOATIME;
	if (mode == AT_RELATIME || mode == AT_STRICT) {
		struct statvfs sv;
		if (statvfs(o->backing, &sv) < 0) {
			fprintf(stderr, "fsprism mount: backing directory %s: %s\n", o->backing,
				strerror(errno));
			return 1;
		}
		const char *want = mode == AT_RELATIME ? "relatime" : "strictatime";
		const char *has = (sv.f_flag & ST_NOATIME) ? "noatime" :
				  (sv.f_flag & ST_RELATIME) ? "relatime" : "strictatime";
		if (strcmp(want, has)) {
			fprintf(stderr, "fsprism mount: -o %s: the backing directory %s is on a file "
				"system mounted %s, whose rule reads through the mount follow "
				"(remount it %s, or leave the option out)\n", want, o->backing, has, want);
			return 2;
		}
	}
	return 0;
}

/* ---- the emulated store: its path and whether it may be written ---- */

/*
 * The store's absolute path: --store resolved (the file need not exist yet,
 * its directory must), or BACKING/.fsprism-store. Any other path inside the
 * backing directory is refused: it would show (and could be written) through
 * the mount. Returns 0 or the exit status.
 */
static int resolve_store(struct mount_opts *o, const char *arg)
{
	char def[PATH_MAX + sizeof(FSP_STORE_NAME) + 1];
	snprintf(def, sizeof(def), "%s/%s", strcmp(o->backing, "/") ? o->backing : "",
		 FSP_STORE_NAME);
	if (!arg) {
		if (snprintf(o->store, sizeof(o->store), "%s", def) >= (int)sizeof(o->store)) {
			fprintf(stderr, "fsprism mount: store %s: path too long\n", def);
			return 1;
		}
	} else if (!realpath(arg, o->store)) {
		if (errno != ENOENT) {
			fprintf(stderr, "fsprism mount: store %s: %s\n", arg, strerror(errno));
			return 1;
		}
		/* a new store file: its directory must exist */
		char dir[PATH_MAX], real[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", arg);
		char *slash = strrchr(dir, '/');
		const char *base = slash ? slash + 1 : dir;
		if (slash == dir)
			snprintf(real, sizeof(real), "/");
		else if (slash)
			*slash = '\0';
		if (!*base || (slash != dir && !realpath(slash ? dir : ".", real))) {
			fprintf(stderr, "fsprism mount: store %s: directory %s\n", arg,
				!*base ? "path, not a file" : "does not exist");
			return 1;
		}
		if (snprintf(o->store, sizeof(o->store), "%s/%s", strcmp(real, "/") ? real : "",
			     base) >= (int)sizeof(o->store)) {
			fprintf(stderr, "fsprism mount: store %s: path too long\n", arg);
			return 1;
		}
	}
	o->hide_store = !strcmp(o->store, def);
	size_t blen = strlen(o->backing);
	if (!o->hide_store && !strncmp(o->store, o->backing, blen) &&
	    (o->store[blen] == '/' || blen == 1)) {
		fprintf(stderr, "fsprism mount: store %s is inside the backing directory %s "
			"(only %s is hidden from the mount)\n", o->store, o->backing, def);
		return 1;
	}
	return 0;
}

/*
 * Refuse to overwrite what is not ours. A block device gets the raw-write
 * checks of `fsprism run` (mounted, holders, swap, exclusive openers,
 * signatures -- an fsprism store among them -- unless --destroy-data); one that already holds a valid
 * fsprism store is re-mounted without --destroy-data, but formatting over
 * it needs it. A non-empty regular file that is not an fsprism store is
 * refused without --destroy-data. Without --format nothing is formatted
 * but a new or empty store file: the open recovers a store from its backup
 * header or refuses, naming what it found. Returns 0 or the exit status.
 */
static int check_store(struct mount_opts *o)
{
	char err[PATH_MAX + 512];
	struct stat st;
	if (stat(o->store, &st) < 0) {
		if (errno == ENOENT)
			return 0; /* created at open, --store-size bytes */
		fprintf(stderr, "fsprism mount: store %s: %s\n", o->store, strerror(errno));
		return 1;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "fsprism mount: store %s is neither a block device nor a "
			"regular file\n", o->store);
		return 1;
	}
	if (S_ISBLK(st.st_mode) && o->store_size_given) {
		fprintf(stderr, "fsprism mount: --store-size is for a store file; %s is a "
			"block device (its whole size is used)\n", o->store);
		return 2;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0)
		return 0; /* an empty file: formatted at open */
	int valid = emu_store_probe(o->store);
	if (valid < 0) {
		fprintf(stderr, "fsprism mount: cannot read store %s: %s\n", o->store,
			strerror(-valid));
		return 1;
	}
	if (S_ISREG(st.st_mode) && !valid && !o->destroy_data) {
		fprintf(stderr, "fsprism mount: store %s (%lld bytes) is not an fsprism "
			"store (use --format --destroy-data to overwrite it)\n", o->store,
			(long long)st.st_size);
		return 1;
	}
	if (S_ISREG(st.st_mode))
		return 0; /* without --format the open recovers it or refuses */
	if (!valid && !o->ecfg.format) {
		/* nothing is written but a recovered header: the busy checks */
		if (fsp_target_check_raw_write(o->store, 1, err, sizeof(err))) {
			fprintf(stderr, "fsprism mount: %s\n", err);
			return 1;
		}
		return 0; /* the open recovers it or says what it holds */
	}
	/* re-mounting a valid store overwrites nothing: only the busy checks;
	 * formatting (over a store or anything else) gets all of them */
	int overwrites = o->ecfg.format || !valid;
	if (fsp_target_check_raw_write(o->store, o->destroy_data || !overwrites, err,
				       sizeof(err))) {
		fprintf(stderr, "fsprism mount: %s\n", err);
		return 1;
	}
	return 0;
}

/* SIZE option value: 0, or 2 after the message. */
static int parse_size_opt(const char *name, const char *arg, uint64_t min,
			  uint64_t max, uint64_t *out)
{
	uint64_t v;
	if (fsp_parse_size(arg, &v) || v < min || v > max || v % 4096) {
		char a[32], b[32];
		fsp_format_size(min, a, sizeof(a));
		fsp_format_size(max, b, sizeof(b));
		fprintf(stderr, "fsprism mount: invalid --%s '%s' (a multiple of 4k, %s..%s)\n",
			name, arg, a, b);
		return 2;
	}
	*out = v;
	return 0;
}

enum { OPT_LOG = 256, OPT_RECORD, OPT_THREADS, OPT_CLONE_FD, OPT_WRITEBACK,
       OPT_SPLICE, OPT_MAX_WRITE, OPT_MAX_BG, OPT_ATTR_TO, OPT_ENTRY_TO,
       OPT_INFLIGHT, OPT_COW, OPT_JOURNAL, OPT_STORE, OPT_STORE_SIZE, OPT_FORMAT,
       OPT_DESTROY, OPT_ALLOC, OPT_COMMIT_INT, OPT_COMMIT_BYTES, OPT_JOURNAL_SIZE,
       OPT_NO_FLUSH, OPT_BLOCK_SIZE, OPT_TREE_DEPTH, OPT_EXTENT_COST, OPT_NO_FSYNC_COMMIT,
       OPT_BACKING_IO, OPT_ADOPT, OPT_DROP_ORPHANS };

/* Returns 0, or the exit status to return. */
static int parse_mount_args(int argc, char **argv, struct mount_opts *o)
{
	static const struct option longopts[] = {
		{ "log", required_argument, NULL, OPT_LOG },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "clone-fd", no_argument, NULL, OPT_CLONE_FD },
		{ "backing-io", required_argument, NULL, OPT_BACKING_IO },
		{ "writeback-cache", no_argument, NULL, OPT_WRITEBACK },
		{ "splice", no_argument, NULL, OPT_SPLICE },
		{ "max-write", required_argument, NULL, OPT_MAX_WRITE },
		{ "max-background", required_argument, NULL, OPT_MAX_BG },
		{ "attr-timeout", required_argument, NULL, OPT_ATTR_TO },
		{ "entry-timeout", required_argument, NULL, OPT_ENTRY_TO },
		{ "count-inflight", no_argument, NULL, OPT_INFLIGHT },
		{ "cow", required_argument, NULL, OPT_COW },
		{ "journal", required_argument, NULL, OPT_JOURNAL },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "store-size", required_argument, NULL, OPT_STORE_SIZE },
		{ "format", no_argument, NULL, OPT_FORMAT },
		{ "destroy-data", no_argument, NULL, OPT_DESTROY },
		{ "adopt-store", no_argument, NULL, OPT_ADOPT },
		{ "drop-orphans", no_argument, NULL, OPT_DROP_ORPHANS },
		{ "alloc", required_argument, NULL, OPT_ALLOC },
		{ "commit-interval", required_argument, NULL, OPT_COMMIT_INT },
		{ "commit-bytes", required_argument, NULL, OPT_COMMIT_BYTES },
		{ "journal-size", required_argument, NULL, OPT_JOURNAL_SIZE },
		{ "no-flush", no_argument, NULL, OPT_NO_FLUSH },
		{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
		{ "tree-depth", required_argument, NULL, OPT_TREE_DEPTH },
		{ "extent-cost", required_argument, NULL, OPT_EXTENT_COST },
		{ "no-fsync-commit", no_argument, NULL, OPT_NO_FSYNC_COMMIT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log = "fsprism.db";
	const char *store = NULL;
	unsigned long long v;
	int m;
	double secs;
	emu_store_cfg_default(&o->ecfg);
	o->store_size = DEF_STORE_SIZE;
	o->record = "full";
	o->threads = 0; /* default below, once --backing-io and the emulation are known */
	o->max_write = DEF_MAX_WRITE;
	o->max_background = DEF_MAX_BACKGROUND;
	o->attr_timeout = DEF_TIMEOUT;
	o->entry_timeout = DEF_TIMEOUT;
	opterr = 0;
	optind = 1;
	int c;
	int longidx = -1;
	while ((c = getopt_long(argc, argv, ":fo:h", longopts, &longidx)) != -1) {
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
		case OPT_BACKING_IO:
			if (strcmp(optarg, "aio") && strcmp(optarg, "sync")) {
				fprintf(stderr, "fsprism mount: invalid --backing-io '%s' (aio or sync)\n", optarg);
				return 2;
			}
			o->backing_sync = !strcmp(optarg, "sync");
			break;
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
		case OPT_COW:
			if ((m = emu_cow_mode_parse(optarg)) < 0) {
				fprintf(stderr, "fsprism mount: invalid --cow '%s' (off, shared or always)\n", optarg);
				return 2;
			}
			o->ecfg.cow = (enum emu_cow_mode)m;
			break;
		case OPT_JOURNAL:
			if ((m = emu_journal_mode_parse(optarg)) < 0) {
				fprintf(stderr, "fsprism mount: invalid --journal '%s' (off, writeback, ordered or data)\n",
					optarg);
				return 2;
			}
			o->ecfg.journal = (enum emu_journal_mode)m;
			break;
		case OPT_STORE:
			if (!*optarg) {
				fprintf(stderr, "fsprism mount: invalid --store '' (a path)\n");
				return 2;
			}
			store = optarg;
			o->store_given = 1;
			break;
		case OPT_STORE_SIZE:
			if (parse_size_opt("store-size", optarg, 1ull << 20, 1ull << 50, &o->store_size))
				return 2;
			o->store_size_given = 1;
			goto emu_only;
		case OPT_FORMAT:
			o->ecfg.format = 1;
			goto emu_only;
		case OPT_DESTROY:
			o->destroy_data = 1;
			goto emu_only;
		case OPT_ADOPT:
			o->adopt_store = 1;
			goto emu_only;
		case OPT_DROP_ORPHANS:
			o->drop_orphans = 1;
			goto emu_only;
		case OPT_ALLOC:
			if (!strcmp(optarg, "next-fit")) {
				o->ecfg.alloc = EMU_ALLOC_NEXT_FIT;
			} else if (!strcmp(optarg, "first-fit")) {
				o->ecfg.alloc = EMU_ALLOC_FIRST_FIT;
			} else {
				fprintf(stderr, "fsprism mount: invalid --alloc '%s' (next-fit or first-fit)\n", optarg);
				return 2;
			}
			goto emu_only;
		case OPT_COMMIT_INT:
			if (!strcmp(optarg, "never")) {
				secs = 0;
			} else if (parse_seconds(optarg, &secs) || (secs > 0 && secs < 0.001)) {
				fprintf(stderr, "fsprism mount: invalid --commit-interval '%s' "
					"(seconds, 0.001..86400, or 0 or never)\n", optarg);
				return 2;
			}
			o->ecfg.commit_interval_ms = secs > 0 ? (uint64_t)(secs * 1000 + 0.5) : UINT64_MAX;
			goto emu_only;
		case OPT_COMMIT_BYTES:
			if (parse_size_opt("commit-bytes", optarg, 4096, 1ull << 40, &o->ecfg.commit_bytes))
				return 2;
			goto emu_only;
		case OPT_JOURNAL_SIZE:
			if (parse_size_opt("journal-size", optarg, 64 << 10, 1ull << 30,
					   &o->ecfg.journal_bytes))
				return 2;
			o->journal_size_given = 1;
			goto emu_only;
		case OPT_BLOCK_SIZE: {
			uint64_t bsz;
			if (fsp_parse_size(optarg, &bsz) || bsz < 4096 || bsz > 65536 ||
			    (bsz & (bsz - 1))) {
				fprintf(stderr, "fsprism mount: invalid --block-size '%s' (a power of "
					"two, 4k..64k)\n", optarg);
				return 2;
			}
			o->ecfg.block_size = (uint32_t)bsz;
			o->block_size_given = 1;
			goto emu_only;
		}
		case OPT_TREE_DEPTH: {
			char *end;
			long depth = strtol(optarg, &end, 10);
			if (*optarg == 0 || *end || depth < 1 || depth > 16) {
				fprintf(stderr, "fsprism mount: invalid --tree-depth '%s' (1..16)\n", optarg);
				return 2;
			}
			o->ecfg.tree_depth = (uint32_t)depth;
			goto emu_only;
		}
		case OPT_EXTENT_COST:
			if (fsp_parse_duration(optarg, &o->ecfg.extent_ns) ||
			    o->ecfg.extent_ns > 1000000) {
				fprintf(stderr, "fsprism mount: invalid --extent-cost '%s' (a duration "
					"up to 1ms, e.g. 5us)\n", optarg);
				return 2;
			}
			goto emu_only;
		case OPT_NO_FSYNC_COMMIT:
			o->ecfg.fsync_commit = 0;
			goto emu_only;
		case OPT_NO_FLUSH:
			o->ecfg.flush = 0;
		emu_only:
			/* meaningful only with the emulation: checked below */
			o->emu_opt_given = 1;
			/* argv[optind - 1] may be the option's value: name it */
			o->emu_opt_name = longopts[longidx].name;
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
	o->emu = o->store_given || o->ecfg.cow != EMU_COW_OFF || o->ecfg.journal != EMU_JOURNAL_OFF;
	if (!o->threads)
		o->threads = (o->emu || o->backing_sync) ? DEF_THREADS : DEF_THREADS_AIO;
	if (!o->emu && o->emu_opt_given) {
		fprintf(stderr, "fsprism mount: --%s needs the emulation (--store, --cow or --journal)\n",
			o->emu_opt_name);
		return 2;
	}
	if (validate_dir("backing directory", argv[optind], o->backing, 1))
		return 1;
	int arc = atime_opts(o);
	if (arc)
		return arc;
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
	if (o->emu) {
		int rc = resolve_store(o, store);
		if (!rc)
			rc = check_store(o);
		if (rc)
			return rc;
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

/* The store's files at unmount, kept from before the store closes until
 * the oplog has closed and the database is ours again. */
struct emu_files {
	struct fsp_emu_file *f;
	size_t n, cap;
};

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
	/* emulation */
	struct emu_store *emu;
	struct emu_store_info einfo;
	int store_fd;         /* holds the flock: one daemon per store */
	int store_created;    /* this start created the store file */
	struct emu_store_acct acct;
	int have_acct;
	struct emu_files files;
};

/* ---- the emulated store in the daemon ---- */

/* The regular files of the backing tree (one file system: FTW_MOUNT). */
struct tree_file {
	uint64_t ino;
	uint64_t btime; /* birth time in ns, 0 if unknown (want_btime only) */
	char *path;     /* relative to the backing directory (want_paths only) */
	uint64_t oid;   /* the object its FSP_IDENT_XATTR names (want_ident only) */
	int ident;      /* 1: an id of this store, -1: of another store, 0: none */
};

struct tree {
	struct tree_file *v;
	size_t n, cap;
	size_t skip;    /* strlen of "BACKING/" */
	int want_paths, want_btime;
	int want_ident;
	uint64_t uuid;  /* the store's, for want_ident */
	int incomplete; /* a directory or file could not be read */
};

/* The identity xattr's value: "STORE-UUID:OBJECT-ID", both 16 hex digits. */
static void ident_format(char *buf, size_t len, uint64_t uuid, uint64_t oid)
{
	snprintf(buf, len, "%016llx:%016llx", (unsigned long long)uuid, (unsigned long long)oid);
}

/* 1: an id of store uuid (*oid), -1: of another store, 0: none. */
static int ident_read(const char *path, uint64_t uuid, uint64_t *oid)
{
	char v[64];
	ssize_t n = lgetxattr(path, FSP_IDENT_XATTR, v, sizeof(v) - 1);
	unsigned long long u, o;
	char tail;
	if (n <= 0)
		return 0;
	v[n] = 0;
	if (sscanf(v, "%16llx:%16llx%c", &u, &o, &tail) != 2)
		return -1;
	*oid = o;
	return u == uuid ? 1 : -1;
}

static struct tree *tree_cur; /* nftw passes no context */

static int tree_visit(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	struct tree *t = tree_cur;
	(void)ftw;
	if (type == FTW_DNR || type == FTW_NS) {
		t->incomplete = 1;
		return 0;
	}
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct tree_file *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	struct tree_file *f = &t->v[t->n];
	f->ino = sb->st_ino;
	f->btime = t->want_btime ? fsp_birth_ns(AT_FDCWD, fpath, 0) : 0;
	f->path = NULL;
	f->oid = 0;
	f->ident = t->want_ident ? ident_read(fpath, t->uuid, &f->oid) : 0;
	if (t->want_paths && !(f->path = strdup(strlen(fpath) > t->skip ? fpath + t->skip : "")))
		return -1;
	t->n++;
	return 0;
}

static int cmp_tree_file(const void *a, const void *b)
{
	uint64_t x = ((const struct tree_file *)a)->ino, y = ((const struct tree_file *)b)->ino;
	return x < y ? -1 : x > y;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Walk the backing tree, files sorted by inode; with ident_uuid, read each
 * file's object id. 0, or -1 if it could not be read completely (then
 * nothing may be concluded from a missing file). */
static int tree_walk(const char *backing, struct tree *t, int want_paths, int want_btime,
		     const uint64_t *ident_uuid)
{
	memset(t, 0, sizeof(*t));
	t->skip = strcmp(backing, "/") ? strlen(backing) + 1 : 1;
	t->want_paths = want_paths;
	t->want_btime = want_btime;
	t->want_ident = ident_uuid != NULL;
	t->uuid = ident_uuid ? *ident_uuid : 0;
	tree_cur = t;
	int rc = nftw(backing, tree_visit, 64, FTW_PHYS | FTW_MOUNT);
	tree_cur = NULL;
	if (rc || t->incomplete)
		return -1;
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_tree_file);
	return 0;
}

static struct tree_file *tree_find(const struct tree *t, uint64_t ino)
{
	struct tree_file key = { .ino = ino };
	return t->n ? bsearch(&key, t->v, t->n, sizeof(key), cmp_tree_file) : NULL;
}

struct obj_list {
	uint64_t (*v)[2]; /* id, gen */
	size_t n, cap;
};

static int obj_list_add(void *ctx, uint64_t obj, uint64_t gen, uint64_t size)
{
	struct obj_list *l = ctx;
	(void)size;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		void *v = realloc(l->v, cap * sizeof(*l->v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n][0] = obj;
	l->v[l->n][1] = gen;
	l->n++;
	return 0;
}

/* What binding the store's objects to the backing tree found. */
struct bind_report {
	uint64_t objects;   /* in the store */
	uint64_t bound;     /* matched to a file now */
	uint64_t was_bound; /* bound to a file at the last mount */
	uint64_t lost;      /* of those, matched to no file now */
	uint64_t found;     /* orphans matched to a file again */
	uint64_t orphans;   /* unmatched, kept */
	uint64_t dropped;   /* unmatched, deleted (--drop-orphans) */
	uint64_t rekeyed;   /* objects whose inode number changed (a copy) */
	uint64_t dup_ids;   /* files naming an object another file has */
	uint64_t dup_cloned; /* of those, given a clone of that file's data */
	uint64_t ids_failed; /* ids that could not be written to their file */
	int ids_errno;
	int refused;
};

struct oid_idx {
	uint64_t oid;
	size_t i;
};

static int cmp_oid_idx(const void *a, const void *b)
{
	uint64_t x = ((const struct oid_idx *)a)->oid, y = ((const struct oid_idx *)b)->oid;
	return x < y ? -1 : x > y;
}

static int cmp_ident_key(const void *a, const void *b)
{
	uint64_t x = ((const struct emu_obj_ident *)a)->key;
	uint64_t y = ((const struct emu_obj_ident *)b)->key;
	return x < y ? -1 : x > y;
}

/* BACKING/f->path in buf; 0, or -1 if it does not fit. */
static int tree_path(const char *backing, const struct tree_file *f, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", backing, f->path);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Write f's identity xattr; 0, or -1 with errno set. */
static int ident_write(const char *backing, const struct tree_file *f, uint64_t uuid,
		       uint64_t oid)
{
	char path[PATH_MAX], v[40];
	if (tree_path(backing, f, path, sizeof(path))) {
		errno = ENAMETOOLONG;
		return -1;
	}
	ident_format(v, sizeof(v), uuid, oid);
	return lsetxattr(path, FSP_IDENT_XATTR, v, strlen(v), 0) < 0 ? -1 : 0;
}

/* The most objects of a store mounted with a backing directory whose
 * files name few of them: at least this many, more than half unmatched. */
#define ADOPT_MIN_OBJECTS 4

/*
 * Bind each object of the store to the backing file that carries its id
 * (FSP_IDENT_XATTR; a file without one: the object last bound to its inode
 * number with the same birth time, which covers stores and files from
 * before ids and a daemon killed before writing them). Objects no file
 * names become orphans: kept, never deleted here (but with
 * --drop-orphans). When most objects bound at the last mount match no
 * file, nothing is changed and the mount is refused unless --adopt-store.
 * Returns 0, or -1 if the tree cannot be read completely (the binding of
 * the last mount is kept).
 */
static int bind_objects(struct daemon *d, struct bind_report *r)
{
	struct tree t;
	struct emu_obj_ident *objs = NULL, *bind = NULL;
	struct oid_idx *by_oid = NULL;
	unsigned char *claimed = NULL;
	uint64_t *claim_ino = NULL;
	uint64_t (*dups)[2] = NULL; /* a copy's inode, its original's */
	size_t nobj = 0, nbind = 0, ndup = 0;
	uint64_t uuid = emu_store_uuid(d->emu);
	int rc = -1;
	memset(r, 0, sizeof(*r));
	if (tree_walk(d->o->backing, &t, 1, 1, &uuid) < 0 || emu_store_list(d->emu, &objs, &nobj))
		goto out;
	by_oid = malloc((nobj ? nobj : 1) * sizeof(*by_oid));
	bind = malloc((nobj ? nobj : 1) * sizeof(*bind));
	claimed = calloc(nobj ? nobj : 1, 1);
	claim_ino = calloc(nobj ? nobj : 1, sizeof(*claim_ino));
	dups = malloc((t.n ? t.n : 1) * sizeof(*dups));
	if (!by_oid || !bind || !claimed || !claim_ino || !dups)
		goto out;
	for (size_t i = 0; i < nobj; i++)
		by_oid[i] = (struct oid_idx){ objs[i].oid, i };
	if (nobj)
		qsort(by_oid, nobj, sizeof(*by_oid), cmp_oid_idx);
	/* the files that name an object: first those still at its inode
	 * number (so that a copy of a file inside the directory does not
	 * take the original's object), then the others */
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < t.n; k++) {
			struct tree_file *f = &t.v[k];
			struct oid_idx key = { f->oid, 0 }, *x;
			if (f->ident != 1 || !nobj ||
			    !(x = bsearch(&key, by_oid, nobj, sizeof(key), cmp_oid_idx)))
				continue;
			if ((objs[x->i].key == f->ino) != (pass == 0))
				continue;
			if (claimed[x->i]) {
				if (claim_ino[x->i] != f->ino && pass == 1) {
					/* a copy made in the backing directory: it gets
					 * a clone of the original's data below, and an
					 * id of its own at unmount */
					char path[PATH_MAX];
					if (tree_path(d->o->backing, f, path, sizeof(path)) == 0)
						lremovexattr(path, FSP_IDENT_XATTR);
					f->ident = 0;
					dups[ndup][0] = f->ino;
					dups[ndup++][1] = claim_ino[x->i];
					r->dup_ids++;
				}
				continue;
			}
			claimed[x->i] = 1;
			claim_ino[x->i] = f->ino;
			bind[nbind++] = (struct emu_obj_ident){ f->ino, objs[x->i].oid, f->btime, 0 };
			f->ident = 2; /* bound, its id is right */
		}
	/* files without an id of this store: by inode number and birth time */
	for (size_t k = 0; k < t.n; k++) {
		struct tree_file *f = &t.v[k];
		struct emu_obj_ident key = { .key = f->ino };
		struct emu_obj_ident *o = f->ident == 1 || f->ident == 2 || !nobj ? NULL :
			bsearch(&key, objs, nobj, sizeof(key), cmp_ident_key);
		if (!o || claimed[o - objs] || (o->gen && f->btime && o->gen != f->btime))
			continue;
		claimed[o - objs] = 1;
		claim_ino[o - objs] = f->ino;
		bind[nbind++] = (struct emu_obj_ident){ f->ino, o->oid, f->btime, 0 };
		f->oid = o->oid;
		f->ident = 3; /* bound, its id to be written */
	}
	r->objects = nobj;
	r->bound = nbind;
	for (size_t i = 0; i < nobj; i++) {
		int orphan = (objs[i].key & EMU_ORPHAN_KEY) != 0;
		r->was_bound += !orphan;
		r->lost += !orphan && !claimed[i];
		r->found += orphan && claimed[i];
		r->orphans += !claimed[i];
		r->rekeyed += !orphan && claimed[i] && claim_ino[i] != objs[i].key;
	}
	if (!d->o->adopt_store && r->was_bound >= ADOPT_MIN_OBJECTS && r->lost * 2 > r->was_bound) {
		r->refused = 1;
		rc = 0;
		goto out;
	}
	int e = emu_store_rebind(d->emu, bind, nbind, NULL);
	if (e < 0) {
		fprintf(stderr, "fsprism mount: cannot bind the objects of store %s to the files "
			"of %s (%s): the binding of the last mount is kept\n", d->o->store,
			d->o->backing, strerror(-e));
		goto out;
	}
	for (size_t k = 0; k < t.n; k++)
		if (t.v[k].ident == 3 && ident_write(d->o->backing, &t.v[k], uuid, t.v[k].oid)) {
			r->ids_failed++;
			r->ids_errno = errno;
		}
	for (size_t k = 0; k < ndup; k++) {
		struct emu_cx cx = { 0 };
		uint64_t size = 0, have;
		if (emu_store_obj_size(d->emu, dups[k][0], &have, NULL) == 0)
			continue; /* a second name of the same copy */
		if (emu_store_obj_size(d->emu, dups[k][1], &size, NULL) == 0 &&
		    emu_store_clone(d->emu, &cx, dups[k][1], 0, dups[k][0], 0,
				    (size_t)size) == (ssize_t)size)
			r->dup_cloned++;
	}
	if (d->o->drop_orphans)
		for (size_t i = 0; i < nobj; i++) {
			struct emu_cx cx = { 0 };
			if (!claimed[i] &&
			    emu_store_obj_remove(d->emu, &cx, objs[i].oid | EMU_ORPHAN_KEY) == 0)
				r->dropped++;
		}
	r->orphans -= r->dropped;
	rc = 0;
out:
	tree_free(&t);
	free(objs);
	free(bind);
	free(by_oid);
	free(claimed);
	free(claim_ino);
	free(dups);
	return rc;
}

/*
 * Give every bound object's file its id (new files of this mount), so that
 * a copy of the directory finds its data. Returns the ids that could not
 * be written.
 */
static uint64_t write_ids(struct daemon *d, struct tree *t)
{
	struct emu_obj_ident *objs = NULL;
	size_t nobj = 0;
	uint64_t failed = 0, uuid = emu_store_uuid(d->emu);
	if (emu_store_list(d->emu, &objs, &nobj))
		return 0;
	for (size_t k = 0; k < t->n; k++) {
		struct tree_file *f = &t->v[k];
		struct emu_obj_ident key = { .key = f->ino };
		struct emu_obj_ident *o = nobj ? bsearch(&key, objs, nobj, sizeof(key),
							 cmp_ident_key) : NULL;
		if (o && !(f->ident == 1 && f->oid == o->oid) && f->path &&
		    ident_write(d->o->backing, f, uuid, o->oid) == 0) {
			f->ident = 1; /* hard links: the next name sees it written */
			f->oid = o->oid;
		} else if (o && !(f->ident == 1 && f->oid == o->oid)) {
			failed++;
		}
	}
	free(objs);
	return failed;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The emu.replay.end attribute: how replay ended, or "none". */
static const char *replay_end_attr(const struct emu_store_info *in)
{
	if (!in->replayed && in->clean)
		return "none";
	if (in->replay.end == EMU_REPLAY_IO)
		return "io";
	return emu_replay_end_name(in->replay.end);
}

/* One line on stderr (the user's terminal: the daemon has not detached
 * yet) when the store was not closed cleanly. A journaled mount whose log
 * held nothing to replay says so ("replayed 0 transactions"). */
static void report_unclean(const char *path, const struct emu_store_info *in,
			   enum emu_journal_mode journal)
{
	if (in->formatted || in->clean)
		return;
	char line[PATH_MAX + 512];
	int n;
	if (in->replayed || journal != EMU_JOURNAL_OFF) {
		n = snprintf(line, sizeof(line), "store %s was not closed cleanly: journal replayed "
			     "%llu transaction%s (%llu block%s), stopped at %s", path,
			     (unsigned long long)in->replay.txns_replayed,
			     plural(in->replay.txns_replayed),
			     (unsigned long long)in->replay.blocks_replayed,
			     plural(in->replay.blocks_replayed), replay_end_attr(in));
		if (in->replay.txns_discarded && n > 0 && (size_t)n < sizeof(line))
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " (%llu transaction%s discarded)",
				      (unsigned long long)in->replay.txns_discarded,
				      plural(in->replay.txns_discarded));
	} else {
		n = snprintf(line, sizeof(line), "store %s was not closed cleanly and has no "
			     "journal: changes after the last commit are lost", path);
	}
	if (in->damaged_objects && n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %llu object%s damaged",
			      (unsigned long long)in->damaged_objects, plural(in->damaged_objects));
	if (in->bitmap_mismatches && n > 0 && (size_t)n < sizeof(line))
		snprintf(line + n, sizeof(line) - (size_t)n, "; %llu bitmap block%s rebuilt",
			 (unsigned long long)in->bitmap_mismatches, plural(in->bitmap_mismatches));
	fprintf(stderr, "fsprism mount: %s\n", line);
}

static void set_attr_u64(struct daemon *d, const char *key, uint64_t v)
{
	char s[32];
	snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
	fsp_store_set_attr(d->store, d->run, key, s);
}

/*
 * Lock and open the store (creating a store file), report what the open
 * found, drop orphaned objects, record the emu.* attributes. The oplog does
 * not exist yet: fsp_fs_devio keeps the open's device IO until it does.
 */
static int emu_begin(struct daemon *d, char *err, size_t errlen)
{
	struct mount_opts *o = d->o;
	struct stat st;
	d->store_created = stat(o->store, &st) < 0;
	d->store_fd = open(o->store, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (d->store_fd < 0) {
		snprintf(err, errlen, "cannot %s store %s: %s", d->store_created ? "create" : "open",
			 o->store, strerror(errno));
		return -1;
	}
	if (flock(d->store_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "store %s is in use by another fsprism mount", o->store);
		return -1;
	}
	/* --format --store-size over a store file: empty it, so that the new
	 * store gets the size asked for */
	if (fstat(d->store_fd, &st) == 0 && S_ISREG(st.st_mode) && o->ecfg.format &&
	    o->store_size_given && st.st_size && truncate(o->store, 0) < 0) {
		snprintf(err, errlen, "cannot resize store %s: %s", o->store, strerror(errno));
		return -1;
	}
	struct emu_store_cfg cfg = o->ecfg;
	cfg.devio = fsp_fs_devio;
	cfg.devio_arg = d->fs;
	char serr[PATH_MAX + 256];
	d->emu = emu_store_open(o->store, o->store_size, &cfg, &d->einfo, serr, sizeof(serr));
	if (!d->emu) {
		snprintf(err, errlen, "%s", serr);
		return -1;
	}
	fsp_fs_set_emu(d->fs, d->emu, o->hide_store);
	report_unclean(o->store, &d->einfo, o->ecfg.journal);
	int size_differs = o->store_size_given &&
		d->einfo.nblocks * d->einfo.block_size != o->store_size;
	int bs_differs = o->block_size_given && d->einfo.block_size != o->ecfg.block_size;
	if (!d->einfo.formatted && (size_differs || o->journal_size_given || bs_differs))
		fprintf(stderr, "fsprism mount: store %s already exists: %s applies only when "
			"a store is formatted (--format)\n", o->store,
			size_differs ? "--store-size" : bs_differs ? "--block-size" : "--journal-size");
	if (d->einfo.header_recovered)
		fprintf(stderr, "fsprism mount: store %s: its header was damaged; recovered from "
			"the backup header of its last clean close%s%s\n", o->store,
			d->einfo.root_recovered ? " (root restored)" : "",
			d->einfo.journal_reformatted ? " (journal recreated)" : "");
	struct bind_report br;
	int have_binding = bind_objects(d, &br) == 0;
	if (!have_binding)
		fprintf(stderr, "fsprism mount: cannot read all of %s: the store's objects keep "
			"the files of the last mount\n", o->backing);
	if (have_binding && br.refused) {
		snprintf(err, errlen, "store %s: %llu of the %llu objects it holds match no file "
			 "of %s: is that the directory this store was used with, and not a copy, "
			 "a restore or another one? No object was changed. --adopt-store mounts them "
			 "together anyway (the unmatched objects are kept as orphans)", o->store,
			 (unsigned long long)br.lost, (unsigned long long)br.was_bound, o->backing);
		return -1;
	}
	if (have_binding && br.found)
		fprintf(stderr, "fsprism mount: store %s: %llu orphaned object%s found %s file%s "
			"again\n", o->store, (unsigned long long)br.found, plural(br.found),
			br.found == 1 ? "its" : "their", plural(br.found));
	if (have_binding && br.orphans)
		fprintf(stderr, "fsprism mount: store %s: %llu object%s match%s no file of %s "
			"and %s kept as %s (mounting with the directory they belong to gets "
			"them back; --drop-orphans deletes them)\n", o->store,
			(unsigned long long)br.orphans, plural(br.orphans),
			br.orphans == 1 ? "es" : "", o->backing, br.orphans == 1 ? "is" : "are",
			br.orphans == 1 ? "an orphan" : "orphans");
	if (have_binding && br.dropped)
		fprintf(stderr, "fsprism mount: store %s: %llu orphaned object%s deleted "
			"(--drop-orphans)\n", o->store, (unsigned long long)br.dropped,
			plural(br.dropped));
	if (have_binding && br.dup_ids)
		fprintf(stderr, "fsprism mount: %llu file%s of %s named the object of another file "
			"(copies made in the backing directory, which copy no data): %llu got a "
			"copy-on-write clone of that file's data as it is now\n",
			(unsigned long long)br.dup_ids, plural(br.dup_ids), o->backing,
			(unsigned long long)br.dup_cloned);
	if (have_binding && br.ids_failed)
		fprintf(stderr, "fsprism mount: cannot keep the object ids with %llu file%s of %s "
			"(extended attribute %s: %s): a copy of the directory will not find "
			"their data\n", (unsigned long long)br.ids_failed, plural(br.ids_failed),
			o->backing, FSP_IDENT_XATTR, strerror(br.ids_errno));

	const struct emu_store_info *in = &d->einfo;
	fsp_store_set_attr(d->store, d->run, "emu.cow", emu_cow_mode_name(o->ecfg.cow));
	fsp_store_set_attr(d->store, d->run, "emu.journal",
			   emu_journal_mode_name(o->ecfg.journal));
	fsp_store_set_attr(d->store, d->run, "emu.alloc", emu_alloc_policy_name(o->ecfg.alloc));
	set_attr_u64(d, "emu.extent_cost_ns", o->ecfg.extent_ns);
	fsp_store_set_attr(d->store, d->run, "emu.store", o->store);
	set_attr_u64(d, "emu.formatted", (uint64_t)in->formatted);
	set_attr_u64(d, "emu.clean", (uint64_t)(in->formatted || in->clean));
	fsp_store_set_attr(d->store, d->run, "emu.replay.end", replay_end_attr(in));
	set_attr_u64(d, "emu.replay.txns", in->replayed ? in->replay.txns_replayed : 0);
	set_attr_u64(d, "emu.replay.blocks", in->replayed ? in->replay.blocks_replayed : 0);
	set_attr_u64(d, "emu.replay.discarded", in->replayed ? in->replay.txns_discarded : 0);
	set_attr_u64(d, "emu.damaged_objects", in->damaged_objects);
	set_attr_u64(d, "emu.bitmap_mismatches", in->bitmap_mismatches);
	set_attr_u64(d, "emu.header_recovered", (uint64_t)in->header_recovered);
	if (have_binding) {
		set_attr_u64(d, "emu.objects", br.objects);
		set_attr_u64(d, "emu.objects_bound", br.bound);
		set_attr_u64(d, "emu.objects_rebound", br.rekeyed);
		set_attr_u64(d, "emu.orphans", br.orphans);
		set_attr_u64(d, "emu.orphans_new", br.lost);
		set_attr_u64(d, "emu.orphans_found", br.found);
		set_attr_u64(d, "emu.orphans_removed", br.dropped);
	}
	return 0;
}

/* Collect one object's extents (emu_store_fiemap callback). */
static int file_add_extent(void *ctx, uint64_t logical, uint64_t physical, uint64_t len)
{
	struct fsp_emu_file *f = ctx;
	if ((f->nextents & (f->nextents - 1)) == 0) {
		/* grow at powers of two */
		size_t cap = f->nextents ? f->nextents * 2 : 4;
		void *v = realloc((void *)f->ext, cap * sizeof(*f->ext));
		if (!v)
			return -ENOMEM;
		f->ext = v;
	}
	((struct fsp_emu_extent *)f->ext)[f->nextents++] =
		(struct fsp_emu_extent){ logical, physical, len };
	return 0;
}

struct files_ctx {
	struct daemon *d;
	struct tree *tree;
};

static int file_add(void *ctx, uint64_t obj, uint64_t gen, uint64_t size)
{
	struct files_ctx *c = ctx;
	struct emu_files *fl = &c->d->files;
	(void)gen;
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 256;
		void *v = realloc(fl->f, cap * sizeof(*fl->f));
		if (!v)
			return -ENOMEM;
		fl->f = v;
		fl->cap = cap;
	}
	struct fsp_emu_file *f = &fl->f[fl->n];
	memset(f, 0, sizeof(*f));
	f->obj = obj;
	f->size = size;
	uint64_t alloc = 0;
	if (emu_store_obj_size(c->d->emu, obj, &f->size, &alloc) == 0)
		f->allocated = alloc;
	struct tree_file *tf = c->tree ? tree_find(c->tree, obj) : NULL;
	f->path = strdup(tf && tf->path ? tf->path : "");
	fl->n++;
	if (!f->path)
		return -ENOMEM;
	int rc = emu_store_fiemap(c->d->emu, obj, file_add_extent, f);
	return rc == -ENOENT ? 0 : rc;
}

static void files_free(struct emu_files *fl)
{
	for (size_t i = 0; i < fl->n; i++) {
		free((void *)fl->f[i].path);
		free((void *)fl->f[i].ext);
	}
	free(fl->f);
	memset(fl, 0, sizeof(*fl));
}

/*
 * Unmount: drop the objects no name leads to any more, commit, note every
 * object's extents and path and the device counters, close the store (while
 * the oplog still takes its device IO). Returns 0 or -1 (reason on stderr).
 */
static int emu_end(struct daemon *d, int served)
{
	int rc = 0;
	if (served) {
		struct emu_cx cx = { 0 };
		struct tree t;
		uint64_t uuid = emu_store_uuid(d->emu);
		int have_tree = tree_walk(d->o->backing, &t, 1, 0, &uuid) == 0;
		if (have_tree) {
			/* files of this mount unlinked while the kernel still held
			 * them, or deleted in the backing directory: their objects
			 * go now (orphans stay) */
			struct obj_list l = { 0 };
			if (emu_store_foreach_obj(d->emu, obj_list_add, &l) == 0)
				for (size_t i = 0; i < l.n; i++)
					if (!(l.v[i][0] & EMU_ORPHAN_KEY) && !tree_find(&t, l.v[i][0]))
						emu_store_obj_remove(d->emu, &cx, l.v[i][0]);
			free(l.v);
			uint64_t failed = write_ids(d, &t);
			if (failed)
				fprintf(stderr, "fsprism mount: cannot keep the object ids with %llu "
					"file%s of %s (extended attribute %s): a copy of the "
					"directory will not find their data\n",
					(unsigned long long)failed, plural(failed), d->o->backing,
					FSP_IDENT_XATTR);
		}
		int c = emu_store_commit(d->emu, &cx);
		if (c < 0) {
			fprintf(stderr, "fsprism mount: commit of store %s failed: %s\n",
				d->o->store, strerror(-c));
			rc = -1;
		}
		struct files_ctx fc = { d, have_tree ? &t : NULL };
		if (emu_store_foreach_obj(d->emu, file_add, &fc) < 0) {
			fprintf(stderr, "fsprism mount: cannot list the files of store %s\n",
				d->o->store);
			files_free(&d->files);
		}
		tree_free(&t);
	}
	/* the counters include the close's own IO (checkpoint, flush, superblock) */
	int c = emu_store_close(d->emu, &d->acct);
	d->have_acct = 1;
	d->emu = NULL;
	if (c < 0) {
		fprintf(stderr, "fsprism mount: closing store %s failed: %s\n", d->o->store,
			strerror(-c));
		rc = -1;
	}
	return rc;
}

/* After the oplog has closed: dev.* attributes and the files' extents. */
static void emu_save(struct daemon *d)
{
	if (d->have_acct) {
		const struct emu_store_acct *a = &d->acct;
		set_attr_u64(d, "dev.ios", a->ios);
		set_attr_u64(d, "dev.seq_ios", a->seq_ios);
		set_attr_u64(d, "dev.streams_x1000", a->streams_x1000);
		set_attr_u64(d, "dev.windows", a->windows);
		set_attr_u64(d, "dev.fsyncs", a->fsyncs);
		set_attr_u64(d, "dev.commits", a->commits);
		set_attr_u64(d, "dev.fua_writes", a->fua_writes);
		set_attr_u64(d, "dev.user_write_bytes", a->user_write_bytes);
		set_attr_u64(d, "dev.user_read_bytes", a->user_read_bytes);
	}
	if (d->files.n)
		fsp_store_save_emu_files(d->store, d->run, d->files.f, d->files.n);
}

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
		.backing_aio = !o->backing_sync,
		.noatime = o->noatime,
		.nodiratime = o->nodiratime,
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
	/* the effective values, defaults included (the options column holds
	 * only what was typed) */
	char nthreads[16];
	snprintf(nthreads, sizeof(nthreads), "%u", o->threads);
	fsp_store_set_attr(d->store, d->run, "fuse.threads", nthreads);
	fsp_store_set_attr(d->store, d->run, "fuse.backing_io", o->backing_sync ? "sync" : "aio");
	if (o->emu && emu_begin(d, err, errlen) < 0)
		return -1;
	if (o->record_mode != FSP_RECORD_OFF) {
		d->log = fsp_oplog_open(d->store, d->run, o->record_mode, o->sample_n, 0);
		if (!d->log) {
			snprintf(err, errlen, "cannot start the operation log on %s: %s",
				 o->log_path, strerror(errno));
			return -1;
		}
		/* the workers, the aio reaper, the store's commit thread and
		 * this one: their rings are allocated and touched now, not
		 * while measuring */
		fsp_oplog_reserve(d->log, o->threads + 3);
		fsp_fs_set_log(d->fs, d->log);
	}
	if (d->emu) {
		int rc = emu_store_start(d->emu);
		if (rc < 0) {
			snprintf(err, errlen, "cannot start the commit thread of store %s: %s",
				 o->store, strerror(-rc));
			return -1;
		}
	}
	int rc = fsp_fs_start(d->fs);
	if (rc < 0) {
		snprintf(err, errlen, "cannot start asynchronous backing IO (libaio): %s%s",
			 strerror(-rc), rc == -EAGAIN ? " (see /proc/sys/fs/aio-max-nr)" : "");
		return -1;
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
		fsp_fs_stop(d->fs); /* IO still in flight is answered first */
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
	/* no request runs now; the store's last IO still goes to the oplog */
	if (d->emu && emu_end(d, serve) < 0)
		status = 1;
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
	uint64_t mapped, huge;
	fsp_fs_buffer_usage(d->fs, &mapped, &huge);
	if (d->store && d->run > 0 && mapped) {
		char v[32];
		snprintf(v, sizeof(v), "%.3f", 100.0 * (double)huge / (double)mapped);
		fsp_store_set_attr(d->store, d->run, "fuse.huge_buffer_pct", v);
	}
	if (d->store && d->run > 0 && !d->o->emu) {
		/* O_DIRECT requests the backing O_DIRECT fd could not serve */
		char v[32];
		snprintf(v, sizeof(v), "%" PRIu64, fsp_fs_direct_fallbacks(d->fs));
		fsp_store_set_attr(d->store, d->run, "fuse.direct_fallbacks", v);
	}
	if (d->store && d->run > 0 && serve)
		emu_save(d);
	files_free(&d->files);
	if (d->store) {
		fsp_store_close(d->store);
		d->store = NULL;
		if (!serve)
			forget_failed_run(d);
	}
	fsp_fs_free(d->fs);
	if (d->store_fd >= 0) {
		/* a store file this failed start created goes again */
		if (!serve && d->store_created)
			unlink(d->o->store);
		close(d->store_fd);
		d->store_fd = -1;
	}
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
	free(o->fuse_opts_buf);
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

	struct daemon d = { .o = &o, .pid_fd = -1, .store_fd = -1 };
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

/* The pid written in a daemon's pid file, or -1. */
static long pidfile_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *end;
	long pid = strtol(buf, &end, 10);
	return pid > 0 && (*end == '\n' || *end == '\0') ? pid : -1;
}

/* utime + stime of a process, in clock ticks (0 if it is gone). */
static uint64_t proc_cpu_ticks(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* fields after the command name, which may hold spaces: state is 3rd */
	char *p = strrchr(buf, ')');
	unsigned long long utime = 0, stime = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &utime, &stime) != 2)
		return 0;
	return utime + stime;
}

int cmd_umount(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: fsprism umount MOUNTPOINT\n\n"
		       "Unmount an fsprism mount and wait until its daemon has stored every\n"
		       "record in the database (as long as it makes progress; it gives up\n"
		       "after %d s without any).\n", UMOUNT_WAIT_S);
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
	/*
	 * The daemon holds an exclusive lock until the last record is stored.
	 * Loading a long run's rows into SQLite can take minutes, so wait as
	 * long as the daemon's CPU time advances; give up only when it has not
	 * for UMOUNT_WAIT_S.
	 */
	long daemon = pidfile_pid(pid_fd);
	uint64_t cpu_seen = daemon > 0 ? proc_cpu_ticks(daemon) : 0;
	for (int still_ms = 0; flock(pid_fd, LOCK_SH | LOCK_NB) < 0; still_ms += 20) {
		uint64_t cpu = daemon > 0 ? proc_cpu_ticks(daemon) : 0;
		if (cpu != cpu_seen) {
			cpu_seen = cpu;
			still_ms = 0;
		}
		if (still_ms >= UMOUNT_WAIT_S * 1000) {
			fprintf(stderr, "fsprism umount: %s unmounted, but its daemon has made no "
				"progress storing records for %d s; the database is not complete yet\n",
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

/*
 * mount.c - `fsprism mount` and `fsprism umount`: their command lines.
 *
 * mount validates every input before anything is mounted (the options, the
 * directories, /dev/fuse, the database, the emulated store's path and its
 * raw-write safety, as for `fsprism run`), then hands the options to the
 * daemon (fs/fuse/daemon.h), so that a bad input leaves nothing mounted and
 * no database touched. umount unmounts and then waits on the daemon's pid
 * file lock until the database is complete.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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
#include "src/base/units.h"
#include "src/cli/cli.h"
#include "src/cli/opt.h"
#include "src/db/oplog.h"
#include "src/db/store.h"
#include "src/sys/mountinfo.h"
#include "src/sys/target.h"
#include "fs/emu/store.h"
#include "fs/fuse/daemon.h"
#include "fs/fuse/fuse_fs.h" /* FSP_STORE_NAME */
#include "fs/fuse/inject.h"

/*
 * Worker threads. With asynchronous backing IO a worker never waits for the
 * data, and every thread beyond what the CPUs keep busy costs a wake-up per
 * request (docs/results/fuse-options.md): 2. When data IO waits in the worker
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
"  --inject RULES       fault and latency injection, RULE;RULE... or repeated:\n"
"                       RULE is KEY=VALUE,... with op=NAME|NAME (read, write,\n"
"                       fsync, getattr, ... the op names of 'fsprism stats';\n"
"                       all), path=GLOB (fnmatch on the path below the mount,\n"
"                       '*' crosses '/'; every path), delay=DURATION |\n"
"                       uniform:MIN-MAX | exp:MEAN, then :P to delay only\n"
"                       that share of the requests, errno=NAME[:P] (e.g.\n"
"                       EIO:0.01, P 1), seed=N (of all rules) [none];\n"
"                       e.g. 'op=read,path=/db/*,delay=100us;op=write,\n"
"                       errno=ENOSPC:0.001;seed=7'. See docs/inject.md\n"
"  --device-model SPEC  a model drive under the data IO of the mount: KNOB=V,...\n"
"                       read=T, write=T (per IO), switch=T (an IO off the last\n"
"                       IO's stream), streams=N [8], raw=T@AGE (a read of data\n"
"                       written less than AGE ago), flush=T (fsync),\n"
"                       cache=SIZE:T (writes beyond SIZE), drain=SIZE/s,\n"
"                       jitter=T, seed=N; e.g. 'switch=200us,raw=300us@5ms,\n"
"                       flush=2ms,cache=64M:80us' [none]. See docs/inject.md\n"
"  --no-trace           do not trace the FUSE transport and the backing\n"
"                       device's block layer with eBPF [traced]\n"
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

/* --NAME N, a count in lo..hi: 0, or 2 after the message. */
static int parse_count(const char *name, const char *s, unsigned lo, unsigned hi,
		       unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-' || *end || v < lo || v > hi) {
		fprintf(stderr, "fsprism mount: invalid --%s '%s' (%u..%u)\n", name, s, lo, hi);
		return 2;
	}
	*out = (unsigned)v;
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
		return fsp_file_error("mount", o->store, "cannot read the store", -valid, 1);
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

/* Append one --inject's rules to *all (joined with ';'): 0, or 2 after
 * the message. */
static int add_inject(char **all, const char *rules)
{
	size_t have = *all ? strlen(*all) : 0;
	char *s = realloc(*all, have + strlen(rules) + 2);
	if (!s) {
		fprintf(stderr, "fsprism mount: out of memory\n");
		return 2;
	}
	if (have)
		s[have++] = ';';
	strcpy(s + have, rules);
	*all = s;
	return 0;
}

enum { OPT_LOG = 256, OPT_RECORD, OPT_THREADS, OPT_CLONE_FD, OPT_WRITEBACK,
       OPT_SPLICE, OPT_MAX_WRITE, OPT_MAX_BG, OPT_ATTR_TO, OPT_ENTRY_TO,
       OPT_INFLIGHT, OPT_COW, OPT_JOURNAL, OPT_STORE, OPT_STORE_SIZE, OPT_FORMAT,
       OPT_DESTROY, OPT_ALLOC, OPT_COMMIT_INT, OPT_COMMIT_BYTES, OPT_JOURNAL_SIZE,
       OPT_NO_FLUSH, OPT_BLOCK_SIZE, OPT_TREE_DEPTH, OPT_EXTENT_COST, OPT_NO_FSYNC_COMMIT,
       OPT_BACKING_IO, OPT_ADOPT, OPT_DROP_ORPHANS, OPT_INJECT, OPT_MODEL, OPT_NO_TRACE };

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
		{ "no-trace", no_argument, NULL, OPT_NO_TRACE },
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
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "device-model", required_argument, NULL, OPT_MODEL },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	const char *log = "fsprism.db";
	const char *store = NULL;
	uint64_t v;
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
	struct fsp_opt g;
	fsp_opt_init(&g, "mount", mount_usage, longopts, "fo:h", argc, argv);
	int c;
	while ((c = fsp_opt_next(&g)) != FSP_OPT_END) {
		switch (c) {
		case FSP_OPT_EXIT: return g.status ? g.status : -1; /* -1: after --help */
		case 'f': o->foreground = 1; break;
		case 'o': o->fuse_opts = optarg; break;
		case OPT_LOG: log = optarg; break;
		case OPT_RECORD: o->record = optarg; break;
		case OPT_CLONE_FD: o->clone_fd = 1; break;
		case OPT_WRITEBACK: o->writeback_cache = 1; break;
		case OPT_SPLICE: o->splice = 1; break;
		case OPT_INFLIGHT: o->count_inflight = 1; break;
		case OPT_INJECT:
			if (add_inject(&o->inject_text, optarg))
				return 2;
			break;
		case OPT_MODEL: {
			char why[512];
			if (o->model_on) {
				fprintf(stderr, "fsprism mount: --device-model given twice\n");
				return 2;
			}
			if (fsp_model_parse(optarg, &o->model_cfg, why, sizeof(why))) {
				fprintf(stderr, "fsprism mount: invalid --device-model '%s': %s\n",
					optarg, why);
				return 2;
			}
			o->model_on = 1;
			break;
		}
		case OPT_NO_TRACE: o->no_trace = 1; break;
		case OPT_BACKING_IO:
			if (strcmp(optarg, "aio") && strcmp(optarg, "sync")) {
				fprintf(stderr, "fsprism mount: invalid --backing-io '%s' (aio or sync)\n", optarg);
				return 2;
			}
			o->backing_sync = !strcmp(optarg, "sync");
			break;
		case OPT_THREADS:
			if (parse_count("threads", optarg, 1, 1024, &o->threads))
				return 2;
			break;
		case OPT_MAX_WRITE:
			if (fsp_parse_size(optarg, &v) || v < 4096 || v > 1u << 20) {
				fprintf(stderr, "fsprism mount: invalid --max-write '%s' (4k..1M)\n", optarg);
				return 2;
			}
			o->max_write = (unsigned)v;
			break;
		case OPT_MAX_BG:
			if (parse_count("max-background", optarg, 1, 65535, &o->max_background))
				return 2;
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
			/* name the option, not what may be its value */
			o->emu_opt_name = g.name;
			break;
		}
	}
	if (o->inject_text) {
		char why[512];
		o->inject = fsp_inject_parse(o->inject_text, why, sizeof(why));
		if (!o->inject) {
			fprintf(stderr, "fsprism mount: invalid --inject: %s\n", why);
			return 2;
		}
	}
	if (g.npos != 2)
		return fsp_usage_error("mount", "expected BACKING_DIR and MOUNTPOINT");
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
	if (validate_dir("backing directory", g.pos[0], o->backing, 1))
		return 1;
	int arc = atime_opts(o);
	if (arc)
		return arc;
	if (validate_dir("mountpoint", g.pos[1], o->mnt, 0))
		return 1;
	char fstype[64];
	if (fsp_mountinfo_find(o->mnt, fstype, sizeof(fstype)) == 1) {
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
		return fsp_file_error("mount", "/dev/fuse", NULL, errno, 1);
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

static int wait_daemon_done(int pid_fd, const char *what, const char *mnt);

/*
 * A daemon of this mount point may still be storing its records (it was
 * unmounted with a plain umount or fusermount3 -u, which do not wait): wait
 * for it as `fsprism umount` would, so that a remount in a loop works. 0, or
 * 1 if it made no progress for UMOUNT_WAIT_S (message printed).
 */
static int wait_previous_daemon(const char *mnt)
{
	char path[PATH_MAX];
	fsp_daemon_pidfile_path(mnt, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* none */
	int rc = wait_daemon_done(fd, "mount", mnt) < 0 ? 1 : 0;
	close(fd);
	return rc;
}

int cmd_mount(int argc, char **argv)
{
	struct mount_opts o;
	memset(&o, 0, sizeof(o));
	int rc = parse_mount_args(argc, argv, &o);
	if (rc) {
		fsp_mount_opts_free(&o);
		return rc < 0 ? 0 : rc;
	}
	if (wait_previous_daemon(o.mnt)) {
		fsp_mount_opts_free(&o);
		return 1;
	}
	return fsp_daemon_run(&o);
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

static void umount_usage(FILE *f)
{
	fprintf(f, "usage: fsprism umount MOUNTPOINT\n\n"
		"Unmount an fsprism mount and wait until its daemon has stored every\n"
		"record in the database (as long as it makes progress; it gives up\n"
		"after %d s without any).\n", UMOUNT_WAIT_S);
}

/*
 * The daemon holds an exclusive lock on its pid file (pid_fd) until the
 * last record is stored. Loading a long run's rows into SQLite can take
 * minutes, so wait as long as the daemon's CPU time advances; give up only
 * when it has not for UMOUNT_WAIT_S. 0 once the lock is free, or -1 (the
 * reason printed as "fsprism CMD: ..."). The mount says it waits if that
 * lasts over a second.
 */
static int wait_daemon_done(int pid_fd, const char *cmd, const char *mnt)
{
	long daemon = pidfile_pid(pid_fd);
	uint64_t cpu_seen = daemon > 0 ? proc_cpu_ticks(daemon) : 0;
	int told = !strcmp(cmd, "umount"), waited_ms = 0;
	for (int still_ms = 0; flock(pid_fd, LOCK_SH | LOCK_NB) < 0;
	     still_ms += 20, waited_ms += 20) {
		uint64_t cpu = daemon > 0 ? proc_cpu_ticks(daemon) : 0;
		if (cpu != cpu_seen) {
			cpu_seen = cpu;
			still_ms = 0;
		}
		if (!told && waited_ms >= 1000) {
			fprintf(stderr, "fsprism %s: waiting for the previous daemon of %s (pid %ld) "
				"to store its records\n", cmd, mnt, daemon);
			told = 1;
		}
		if (still_ms >= UMOUNT_WAIT_S * 1000) {
			if (!strcmp(cmd, "umount"))
				fprintf(stderr, "fsprism umount: %s unmounted, but its daemon has made no "
					"progress storing records for %d s; the database is not complete yet\n",
					mnt, UMOUNT_WAIT_S);
			else
				fprintf(stderr, "fsprism %s: the previous daemon of %s (pid %ld) has made no "
					"progress storing its records for %d s; not mounting\n",
					cmd, mnt, daemon, UMOUNT_WAIT_S);
			return -1;
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	flock(pid_fd, LOCK_UN);
	return 0;
}

/* The device numbers of the topmost mount at mnt (left as they are if none). */
static void mount_dev(const char *mnt, unsigned *major, unsigned *minor)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	if (fsp_mountinfo_open(&mi) < 0)
		return;
	while (fsp_mountinfo_next(&mi, &m))
		if (!strcmp(m.mount_point, mnt)) {
			*major = m.major;
			*minor = m.minor;
		}
	fsp_mountinfo_close(&mi);
}

/*
 * Unmounted here, the file system lives on while another mount namespace
 * holds a copy of the mount (a process started by unshare or `ip netns
 * exec` while it was mounted): the daemon never sees the end of its
 * connection and would serve that copy for as long as it lives. The user
 * asked for the mount to end, so end its daemon: on SIGTERM it stores its
 * records and exits, and the copy's requests fail from then on. Only while
 * such a copy exists is the daemon still serving, with its handlers up.
 */
static void end_held_daemon(int pid_fd, unsigned major, unsigned minor, const char *arg)
{
	long daemon = pidfile_pid(pid_fd);
	long holder = major || minor ? fsp_mountinfo_holder(major, minor) : 0;
	if (daemon <= 0 || !holder)
		return;
	char comm[64] = "", path[64];
	snprintf(path, sizeof(path), "/proc/%ld/comm", holder);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	fprintf(stderr, "fsprism umount: %s is still mounted in another mount namespace (that of "
		"pid %ld, %s): ending its daemon, so that nothing stays mounted\n",
		arg, holder, comm[0] ? comm : "?");
	kill((pid_t)daemon, SIGTERM);
}

int cmd_umount(int argc, char **argv)
{
	static const struct option longopts[] = { FSP_OPT_HELP, { NULL, 0, NULL, 0 } };
	struct fsp_opt g;
	fsp_opt_init(&g, "umount", umount_usage, longopts, "h", argc, argv);
	for (int c; (c = fsp_opt_next(&g)) != FSP_OPT_END;)
		if (c == FSP_OPT_EXIT)
			return g.status;
	if (g.npos != 1)
		return fsp_usage_error("umount", "expected one MOUNTPOINT");
	const char *arg = g.pos[0];
	char mnt[PATH_MAX];
	if (!realpath(arg, mnt)) {
		fprintf(stderr, "fsprism umount: %s: %s\n", arg,
			errno == ENOENT ? "does not exist" : strerror(errno));
		return 1;
	}
	char fstype[64];
	int found = fsp_mountinfo_find(mnt, fstype, sizeof(fstype));
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
	fsp_daemon_pidfile_path(mnt, pidpath, sizeof(pidpath));
	int pid_fd = open(pidpath, O_RDONLY | O_CLOEXEC);
	unsigned major = 0, minor = 0;
	mount_dev(mnt, &major, &minor);

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
	end_held_daemon(pid_fd, major, minor, arg);
	int rc = wait_daemon_done(pid_fd, "umount", arg);
	close(pid_fd);
	return rc < 0 ? 1 : 0;
}

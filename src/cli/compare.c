/*
 * compare.c - `fsprism compare`: one profile, in one invocation, on
 *   raw      the block device itself,
 *   fs       a file on a native file system made on that device,
 *   fsprism  a file on an fsprism passthrough mount of that file system,
 *   emu      a file on an fsprism mount that emulates a copy-on-write /
 *            journaling file system with the device itself as its store
 *            (--cow, --journal; after the native file system is unmounted),
 * then a side-by-side table (per step, per target: MB/s, p50/p99 latency,
 * ratio to raw) and, for the fsprism and emu targets, the per-layer split
 * that the FUSE layer logged during the same run; for emu also the
 * device-level accounting of its mount (write amplification, flushes,
 * sequentiality), as `fsprism stats` computes it.
 *
 * Without --device it builds its own device (the "embedded default"): a
 * sparse image file attached with losetup --direct-io=on. Everything it sets
 * up is recorded in struct setup and undone in reverse order on every exit
 * path: success, error, SIGINT/SIGTERM/SIGHUP.
 *
 * Each target is measured by a child `fsprism run` (the same binary via
 * /proc/self/exe), so compare measures exactly what `run` measures. Children
 * run in their own process group: a Ctrl-C reaches only compare, which
 * forwards it to the running benchmark and lets setup commands (mkfs,
 * losetup, mount) finish so that it knows what to undo.
 *
 * The report, once every target has run, is compare_report.c's.
 *
 * The database is shared by compare, the child run and the mount daemon
 * (which stores its rows when it is unmounted) at the same time (WAL + busy
 * timeout); compare only writes a few single-statement transactions.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/loop.h>
#include "src/sys/mountinfo.h"
#include "src/sys/fiemap.h"
#include "src/db/decomp_rows.h"
#include "src/cli/cli.h"
#include "src/cli/compare.h"
#include "src/cli/opt.h"
#include "src/base/clock.h"
#include "fs/emu/store.h"
#include "fs/fuse/inject.h"
#include "fs/model/model.h"
#include "src/base/hist.h"
#include "bench/engine/jobfile.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "bench/engine/profile.h"
#include "src/cli/report.h"
#include "src/cli/stats.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/sys/target.h"

#define DEFAULT_PROFILE "mixed-seq"
#define DEFAULT_FS "ext4"
#define DEFAULT_DB "fsprism.db"
#define DEFAULT_IMAGE_SIZE (2ull << 30)
#define MAX_ROUNDS 16 /* FSP_DX_MAX_ROUNDS: diagnose reads this many */
/* Without --rounds, --time and --bytes, compare spends the profile's step
 * time in this many rounds of shorter steps, so that the noise rule has a
 * spread to judge by at the same measuring time. */
#define DEFAULT_ROUNDS 3
/* An fsprism mount that compare makes: the fsprism or the emu target's. */
struct fuse_mnt {
	const char *name;         /* "fsprism" (mounted on WORKDIR/fuse), "emu" */
	char dir[1100];           /* mount point */
	char backing[1200];       /* backing directory */
	int dir_made, mounted;
	int backing_made;         /* compare's own dir: removed with its content */
};

/* What has been set up, so that cleanup undoes exactly that. */
struct setup {
	char workdir[1024];       /* mkdtemp; holds image, mount points */
	char image[1100];
	char loopdev[64];
	char fsdir[1100];         /* native file system mount point */
	const char *device;       /* user's device or loopdev */
	int workdir_made, image_made, loop_attached, fsdir_made, fs_mounted;
	struct fuse_mnt fuse;     /* fsprism target: backing fsdir/fsprism */
	struct fuse_mnt emu;      /* emu target: backing workdir/emu-backing,
				     store = the device */
	struct fuse_mnt model;    /* --device-model: the image's mount,
				     backing workdir/model */
};

static volatile sig_atomic_t stop_sig;   /* first signal received, 0 if none */
static volatile pid_t forward_to;        /* running benchmark child */

static void on_signal(int sig)
{
	if (!stop_sig)
		stop_sig = sig;
	pid_t child = forward_to;
	if (child > 0)
		kill(child, sig);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fputs("fsprism compare: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: fsprism compare [--profile P] [--device DEV] [--fs ext4|xfs|btrfs]\n"
"                       [--targets raw,fs,fsprism,emu] [--db FILE] [--scale S]\n"
"                       [--cow=off|shared|always]\n"
"                       [--journal=off|writeback|ordered|data]\n"
"                       [--alloc=next-fit|first-fit]\n"
"                       [--size SIZE] [--destroy-data] [--quiet]\n"
"                       [--device-model SPEC] [--inject RULES]\n"
"                       [--rounds N] [--replay] [--max-write SIZE]\n"
"                       [--report FILE.html] [--format table|json|csv]\n"
"                       [--details] [--wide]\n"
"                       [--record MODE] [--no-trace] [--status-interval SECS]\n"
"                       [--PARAM=VALUE ...]\n"
"\n"
"Run one profile (default " DEFAULT_PROFILE ") on a raw block device, on a file of a\n"
"native file system made on it, and on a file of an fsprism mount of that\n"
"file system; print the answer: a headline per pair of neighbouring targets\n"
"(how often and how much the second is slower, its worst step and the one\n"
"owner there), the bathtub line, one row of MB/s per step with the owner of\n"
"its largest drop, and the stalls and outliers (docs/compare.md). A load\n"
"curve (--profile curve-*): the maxima, each target's IOPS and p99 per step\n"
"and where its latency grows as the rate rises (docs/profiles.md).\n"
"Target emu (added to the default targets by --cow, --journal or --alloc): a\n"
"file on an fsprism mount that emulates a copy-on-write / journaling file\n"
"system with those modes, using the whole device as its store (formatted\n"
"after the native file system is unmounted); it also prints the device-level\n"
"accounting of that mount.\n"
"Every target's run and mount records a row per IO (--record=full), and the\n"
"report ends with each target's layers per IO (docs/prism.md); --record MODE\n"
"(full, sample:N, hist, off) is passed to every run and mount instead, and\n"
"--no-trace to them all (no block-layer or FUSE-transport trace).\n"
"\n"
"Without --device, a temporary sparse image of --size (default 2G) in $TMPDIR\n"
"(default /var/tmp) is attached with losetup --direct-io=on and removed again.\n"
"With --device, the device is refused if it or a partition of it is mounted\n"
"or in use, and, unless --destroy-data, if it carries any signature.\n"
"--device-model SPEC (without --device): the image is a file of an fsprism\n"
"mount with that model drive (see 'fsprism mount --help'), so that every\n"
"target's IO pays the model's costs; docs/inject.md.\n"
"--rounds N measures every target N times, the order of the targets rotated\n"
"each round, so that diagnose can judge every difference against the\n"
"round-to-round spread. Default: 3 rounds of steps a third of the profile's\n"
"time long, unless --time or --bytes sets the step's length (then 1).\n"
"--max-write and --inject (fsprism mount\n"
"--help) are passed to the fsprism and emu mounts.\n"
"--replay: after the rounds, the device IO that the fs and emu targets made\n"
"is replayed on the raw device (same offsets, sizes, order, at most the\n"
"recorded queue depth), so that the diagnosis can tell the drive's response\n"
"to a pattern from software; it overwrites what they left on the device.\n"
"--details: after the answer, every step's table, the per-layer splits, each\n"
"target's layers per IO and every verdict (fsprism diagnose).\n"
"Other --PARAM=VALUE options are passed to 'fsprism run' unchanged.\n"
"On a terminal, progress is shown unless --quiet, with the ETA of the whole\n"
"compare; --status-interval SECS: a status line every SECS seconds on stderr\n"
"instead (for a pipe or a log). See docs/compare.md.\n"
"--format json|csv: print only the side-by-side table (per step and target)\n"
"in that form, for a program; table (default): the answer (and with\n"
"--details the rest).\n"
"--wide: --details with the long lines uncut (without, it fits 100 columns).\n"
"--report FILE.html: also write the charts of the compare (fsprism report).\n");
}

/* ---- small helpers ------------------------------------------------------ */

/* Is an executable named `name` on $PATH (or in the sbin dirs)? */
static int have_program(const char *name)
{
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin", path ? path : "/usr/bin:/bin");
	char *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", d, name);
		if (!access(p, X_OK))
			return 1;
	}
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* ---- child processes ---------------------------------------------------- */

/*
 * Run argv in its own process group with stdin from /dev/null. If out is
 * given, stdout and stderr are captured into it (for short commands only);
 * if quiet_stdout, stdout goes to /dev/null. With forward, signals that
 * compare receives are passed on. Returns the exit status, 128+N if killed
 * by signal N, -1 if it could not be started.
 */
static int spawn(char *const argv[], int forward, int quiet_stdout,
		 char *out, size_t outlen)
{
	int pfd[2] = { -1, -1 };
	if (out && pipe2(pfd, O_CLOEXEC))
		return -1;
	/*
	 * Signals stay blocked until the child's pid is known to the handler
	 * (parent) or the handlers are back to default (child), so that a
	 * forwarded Ctrl-C can neither be lost nor be swallowed by compare's
	 * handler in the child before exec.
	 */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (out) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0)
			dup2(nul, 0);
		if (out) {
			dup2(pfd[1], 1);
			dup2(pfd[1], 2);
		} else if (quiet_stdout && nul >= 0) {
			dup2(nul, 1);
		}
		if (argv[0][0] == '/')
			execv(argv[0], argv);
		else
			execvp(argv[0], argv);
		_exit(127);
	}
	if (forward) {
		forward_to = pid;
		if (stop_sig) /* arrived before the fork */
			kill(pid, stop_sig);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (out) {
		size_t n = 0;
		close(pfd[1]);
		for (;;) {
			size_t room = n + 1 < outlen ? outlen - n - 1 : 0;
			char sink[256];
			ssize_t r = room ? read(pfd[0], out + n, room)
					 : read(pfd[0], sink, sizeof sink); /* drain */
			if (r > 0) {
				if (room)
					n += (size_t)r;
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		close(pfd[0]);
		if (outlen)
			out[n] = 0;
	}
	int status = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, 0);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			status = 0x7f00; /* unknown: treat as failure */
			break;
		}
	}
	forward_to = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* First line of a command's captured output, for a one-line message. */
static const char *first_line(char *out)
{
	char *nl = strchr(out, '\n');
	while (nl && nl == out) { /* skip empty lines */
		out++;
		nl = strchr(out, '\n');
	}
	if (nl)
		*nl = 0;
	return *out ? out : "no message";
}

/* ---- setup and teardown ------------------------------------------------- */

/* The directory for the image and the mount points, in $TMPDIR. */
static int make_workdir(struct setup *su)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/var/tmp";
	char tmpl[PATH_MAX], real[PATH_MAX];
	if (strlen(tmp) > 900) {
		fail("TMPDIR %s is too long", tmp);
		return -1;
	}
	snprintf(tmpl, sizeof tmpl, "%s/fsprism-compare.XXXXXX", tmp);
	if (!mkdtemp(tmpl)) {
		fail("cannot create a temporary directory in %s: %s (set TMPDIR)",
		     tmp, strerror(errno));
		return -1;
	}
	/* canonical, so the mount's backing_path matches what we look for */
	const char *dir = realpath(tmpl, real) && strlen(real) < 1000 ? real : tmpl;
	snprintf(su->workdir, sizeof su->workdir, "%.1000s", dir);
	su->workdir_made = 1;
	return 0;
}

static int mount_fsprism(struct fuse_mnt *m, const char *workdir, const char *db,
			 char *const extra[]);

/*
 * --device-model: the image's directory (WORKDIR/model) mounted with the
 * model at WORKDIR/model-mnt; the image is made in the directory itself
 * and attached through the mount. The mount's run is in the database.
 */
static int mount_model(struct setup *su, const struct opts *o, const char *db)
{
	struct fuse_mnt *m = &su->model;
	snprintf(m->backing, sizeof m->backing, "%s/model", su->workdir);
	if (mkdir(m->backing, 0700)) {
		fail("cannot create %s: %s", m->backing, strerror(errno));
		return -1;
	}
	m->backing_made = 1;
	char *extra[] = { "--device-model", (char *)o->device_model, NULL };
	return mount_fsprism(m, su->workdir, db, extra);
}

static int make_image(struct setup *su, const struct opts *o, const char *db)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/var/tmp";

	struct statvfs vfs;
	if (!statvfs(su->workdir, &vfs) &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < o->image_size) {
		char need[32], have[32];
		fsp_format_bytes(o->image_size, need, sizeof need);
		fsp_format_bytes((uint64_t)vfs.f_bavail * vfs.f_frsize, have, sizeof have);
		fail("not enough space in %s for a %s image (%s free; use --size "
		     "or TMPDIR)", tmp, need, have);
		return -1;
	}
	char attach[sizeof su->image];
	if (o->device_model) {
		if (mount_model(su, o, db))
			return -1;
		snprintf(su->image, sizeof su->image, "%.1000s/image", su->model.backing);
		snprintf(attach, sizeof attach, "%.1000s/image", su->model.dir);
	} else {
		snprintf(su->image, sizeof su->image, "%s/image", su->workdir);
		snprintf(attach, sizeof attach, "%s", su->image);
	}
	int fd = open(su->image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fail("cannot create %s: %s", su->image, strerror(errno));
		return -1;
	}
	su->image_made = 1;
	if (ftruncate(fd, (off_t)o->image_size)) {
		fail("cannot size %s: %s", su->image, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);

	char out[1024];
	char *argv[] = { "losetup", "--find", "--show", "--direct-io=on",
			 attach, NULL };
	int rc = spawn(argv, 0, 0, out, sizeof out);
	if (rc != 0) {
		fail("losetup %s failed: %s", su->image,
		     rc == 127 ? "losetup not found" : first_line(out));
		return -1;
	}
	/* the device line; a warning (no direct IO on tmpfs) may come first */
	char *dev = strstr(out, "/dev/");
	if (dev)
		dev[strcspn(dev, "\n")] = 0;
	if (!dev || strlen(dev) >= sizeof su->loopdev) {
		fail("losetup printed '%s', not a device", first_line(out));
		return -1;
	}
	snprintf(su->loopdev, sizeof su->loopdev, "%s", dev);
	su->loop_attached = 1;
	su->device = su->loopdev;
	return 0;
}

static int make_fs(struct setup *su, const struct opts *o)
{
	char prog[64], out[2048];
	snprintf(prog, sizeof prog, "mkfs.%s", o->fs);
	char *dev = (char *)su->device;
	/* ext4: initialise inode tables and journal now, not in the
	 * background during the measurement */
	char *ext4[] = { prog, "-q", "-F", "-E",
			 "lazy_itable_init=0,lazy_journal_init=0", dev, NULL };
	char *xfs[] = { prog, "-q", "-f", dev, NULL };
	char *btrfs[] = { prog, "-q", "-f", dev, NULL };
	char **argv = !strcmp(o->fs, "ext4") ? ext4 : !strcmp(o->fs, "xfs") ? xfs : btrfs;
	int rc = spawn(argv, 0, 0, out, sizeof out);
	if (rc) {
		fail("%s %s failed: %s", prog, dev, first_line(out));
		return -1;
	}
	snprintf(su->fsdir, sizeof su->fsdir, "%s/fs", su->workdir);
	if (!su->fsdir_made && mkdir(su->fsdir, 0700)) { /* made in an earlier round */
		fail("cannot create %s: %s", su->fsdir, strerror(errno));
		return -1;
	}
	su->fsdir_made = 1;
	if (mount(dev, su->fsdir, o->fs, 0, NULL)) {
		fail("cannot mount %s (%s) on %s: %s", dev, o->fs, su->fsdir,
		     strerror(errno));
		return -1;
	}
	su->fs_mounted = 1;
	return 0;
}

/* Is dir a mount point of a FUSE file system right now? */
static int is_fuse_mounted(const char *dir)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	int found = 0;
	if (fsp_mountinfo_open(&mi) < 0)
		return 0;
	while (!found && fsp_mountinfo_next(&mi, &m))
		found = !strcmp(m.mount_point, dir) && !strncmp(m.fstype, "fuse", 4);
	fsp_mountinfo_close(&mi);
	return found;
}

/*
 * fsprism mount --log DB [extra options] m->backing m->dir. The mount
 * point is made in the work dir; whatever the mount says, if it is
 * mounted afterwards it is unmounted at teardown.
 */
static int mount_fsprism(struct fuse_mnt *m, const char *workdir, const char *db,
			 char *const extra[])
{
	snprintf(m->dir, sizeof m->dir, "%s/%s", workdir,
		 !strcmp(m->name, "fsprism") ? "fuse" : m->name);
	if (mkdir(m->dir, 0700)) {
		fail("cannot create %s: %s", m->dir, strerror(errno));
		return -1;
	}
	m->dir_made = 1;
	char *argv[24] = { "/proc/self/exe", "mount", "--log", (char *)db };
	int n = 4;
	for (int i = 0; extra && extra[i] && n < 21; i++)
		argv[n++] = extra[i];
	argv[n++] = m->backing;
	argv[n++] = m->dir;
	argv[n] = NULL;
	int rc = spawn(argv, 0, 1, NULL, 0);
	m->mounted = is_fuse_mounted(m->dir);
	if (rc || !m->mounted) {
		if (rc != 1) /* 1: fsprism mount printed its own reason */
			fail("fsprism mount %s %s failed (status %d)", m->backing,
			     m->dir, rc);
		return -1;
	}
	return 0;
}

static int umount_fsprism(struct fuse_mnt *m)
{
	char *argv[] = { "/proc/self/exe", "umount", m->dir, NULL };
	int rc = spawn(argv, 0, 1, NULL, 0);
	if (is_fuse_mounted(m->dir)) {
		/* the daemon is gone or stuck: do not leave the mount behind */
		umount2(m->dir, MNT_DETACH);
		rc = rc ? rc : 1;
	}
	m->mounted = 0;
	return rc ? -1 : 0;
}

/* nftw callback: remove one entry of compare's own directory tree. */
static int remove_entry(const char *path, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP ? rmdir(path) : unlink(path))
		fail("cannot remove %s: %s", path, strerror(errno));
	return 0; /* go on: remove as much as possible */
}

/* Unmount (if mounted) and remove a mount point and compare's backing dir. */
static int teardown_fuse(struct fuse_mnt *m)
{
	int rc = 0;
	if (m->mounted && umount_fsprism(m)) {
		fail("fsprism umount %s failed; detached it lazily", m->dir);
		rc = -1;
	}
	if (m->dir_made) {
		rmdir(m->dir);
		m->dir_made = 0;
	}
	/* FTW_MOUNT: never descend into anything mounted below it */
	if (m->backing_made) {
		nftw(m->backing, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		m->backing_made = 0;
	}
	return rc;
}

/* Unmount the native file system; waits while it is busy (a daemon that is
 * still closing its backing files), else detaches it lazily. */
static int umount_fs(struct setup *su)
{
	int ok = 0;
	for (int i = 0; i < 50 && !ok; i++) {
		ok = !umount2(su->fsdir, 0);
		if (!ok && errno != EBUSY)
			break;
		if (!ok)
			sleep_ms(100);
	}
	su->fs_mounted = 0;
	if (!ok) {
		fail("cannot unmount %s: %s; detached it lazily", su->fsdir,
		     strerror(errno));
		umount2(su->fsdir, MNT_DETACH);
		return -1;
	}
	return 0;
}

/* LOOP_CLR_FD; on a still-busy device the kernel detaches on last close. */
static void detach_loop(const char *dev)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (int i = 0; i < 50; i++) {
		if (!ioctl(fd, LOOP_CLR_FD, 0) || errno != EBUSY)
			break;
		sleep_ms(100);
	}
	close(fd);
}

/* Undo everything in reverse order; never stops halfway. */
static int teardown(struct setup *su)
{
	int rc = 0;
	if (teardown_fuse(&su->emu))
		rc = -1;
	if (teardown_fuse(&su->fuse))
		rc = -1;
	if (su->fs_mounted && umount_fs(su))
		rc = -1;
	if (su->fsdir_made) {
		rmdir(su->fsdir);
		su->fsdir_made = 0;
	}
	if (su->loop_attached) {
		detach_loop(su->loopdev);
		su->loop_attached = 0;
	}
	/* the model drive goes last: every target's IO reached it */
	if (teardown_fuse(&su->model))
		rc = -1;
	if (su->image_made) {
		unlink(su->image);
		su->image_made = 0;
	}
	if (su->workdir_made) {
		if (rmdir(su->workdir)) {
			fail("cannot remove %s: %s", su->workdir, strerror(errno));
			rc = -1;
		}
		su->workdir_made = 0;
	}
	return rc;
}

/* ---- the benchmark children --------------------------------------------- */

/*
 * Write the raw target's span before a job that reads it. run does this
 * for files (a read of an unwritten extent never reaches the device); on a
 * raw device the same holds for a hole in the temporary image or a
 * trimmed SSD block, so without it raw reads would be measured against
 * nothing. Incompressible data, 1 MiB O_DIRECT writes.
 */
static int prefill_raw(const char *dev, const struct fsp_params *p,
		       const char *span_arg, uint64_t dev_size, int show)
{
	uint64_t span = p->span;
	if (span_arg[0])
		span = strtoull(span_arg + strlen("--span="), NULL, 10);
	if (p->offset >= dev_size || p->offset % 4096)
		return 0; /* run reports what is wrong with it */
	if (!span || span > dev_size - p->offset)
		span = dev_size - p->offset;
	span &= ~4095ull; /* whole O_DIRECT blocks */
	const size_t chunk = 1u << 20;
	uint64_t *buf;
	if (posix_memalign((void **)&buf, 4096, chunk))
		return -1;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < chunk / 8; i++) { /* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x;
	}
	int fd = open(dev, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		fail("cannot open %s for writing: %s", dev, strerror(errno));
		free(buf);
		return -1;
	}
	if (show)
		fprintf(stderr, "compare: raw target: writing %" PRIu64 " MiB so "
			"that reads reach the device\n", span >> 20);
	int rc = 0;
	for (uint64_t off = p->offset, end = p->offset + span; off < end && !stop_sig;) {
		size_t n = end - off < chunk ? (size_t)(end - off) : chunk;
		/* a fresh word in every 4 KiB: nothing to deduplicate */
		for (size_t i = 0; i < n / 8; i += 512)
			buf[i] = off + i;
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fail("cannot write %s at %" PRIu64 ": %s", dev, off,
			     w < 0 ? strerror(errno) : "short write");
			rc = -1;
			break;
		}
		off += (uint64_t)w;
	}
	if (!rc && fdatasync(fd)) {
		fail("fdatasync %s: %s", dev, strerror(errno));
		rc = -1;
	}
	close(fd);
	free(buf);
	return rc;
}

/*
 * On a terminal the child shows its own progress line (step, QD or mix,
 * elapsed, ETA); its summary goes to /dev/null either way, since compare
 * prints the joint table.
 */
static int run_target(const struct opts *o, const char *db, int64_t parent,
		      int t, const char *target, int show, int destroy, const char *part_of)
{
	char *argv[24 + MAX_PASS];
	char parent_s[32];
	int n = 0;
	snprintf(parent_s, sizeof parent_s, "%" PRId64, parent);
	argv[n++] = "/proc/self/exe";
	argv[n++] = "run";
	argv[n++] = (char *)o->profile;
	argv[n++] = (char *)target;
	argv[n++] = "--db";
	argv[n++] = (char *)db;
	argv[n++] = "--parent";
	argv[n++] = parent_s;
	argv[n++] = "--label";
	argv[n++] = (char *)target_label[t];
	/* a row per IO by default: every target gets its layers per IO
	 * (docs/prism.md) */
	char record[80];
	snprintf(record, sizeof record, "--record=%s", o->record);
	argv[n++] = record;
	if (o->no_trace)
		argv[n++] = "--no-trace";
	if (t == T_RAW && (o->destroy_data || destroy))
		argv[n++] = "--destroy-data";
	char scale[80];
	if (o->scale) {
		snprintf(scale, sizeof scale, "--scale=%s", o->scale);
		argv[n++] = scale;
	}
	for (int i = 0; i < o->npass; i++)
		argv[n++] = o->pass[i];
	if (o->span_arg[0])
		argv[n++] = (char *)o->span_arg;
	if (!show)
		argv[n++] = "--quiet";
	/* the progress's ETA covers every run of the compare */
	char part[64], status[64];
	snprintf(part, sizeof part, "--part-of=%s", part_of);
	argv[n++] = part;
	if (o->status_interval > 0) {
		snprintf(status, sizeof status, "--status-interval=%g", o->status_interval);
		argv[n++] = status;
	}
	argv[n] = NULL;
	if (show || o->status_interval > 0)
		fprintf(stderr, "compare: %s target: %s\n", target_label[t], target);
	int rc = spawn(argv, 1, 1, NULL, 0);
	if (show) /* the child's progress line may be left standing */
		fprintf(stderr, "\r\033[K");
	if (rc && !stop_sig)
		fail("the %s run on %s failed (status %d; its reason is above)",
		     target_label[t], target, rc);
	return rc ? -1 : 0;
}

/* ---- the command -------------------------------------------------------- */

static int parse_targets(const char *list, int want[T__COUNT])
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", list);
	memset(want, 0, sizeof(int) * T__COUNT);
	char *save = NULL;
	int any = 0;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int t;
		for (t = 0; t < T__COUNT; t++)
			if (!strcmp(w, target_label[t]))
				break;
		if (t == T__COUNT) {
			fail("unknown target '%s' in --targets (" TARGET_NAMES ")", w);
			return -1;
		}
		want[t] = any = 1;
	}
	if (!any) {
		fail("--targets is empty (" TARGET_NAMES ")");
		return -1;
	}
	return 0;
}

enum { OPT_PROFILE = 256, OPT_DEVICE, OPT_FS, OPT_TARGETS, OPT_DB, OPT_SCALE, OPT_SIZE,
       OPT_COW, OPT_JOURNAL, OPT_ALLOC, OPT_DESTROY, OPT_REPORT, OPT_DEVICE_MODEL, OPT_ROUNDS,
       OPT_MAX_WRITE, OPT_INJECT, OPT_REPLAY, OPT_RECORD, OPT_NO_TRACE, OPT_FORMAT,
       OPT_WIDE, OPT_DETAILS, OPT_STATUS };

/* Returns 0, 1 after --help, or -1 (usage error, said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option own[] = {
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "fs", required_argument, NULL, OPT_FS },
		{ "targets", required_argument, NULL, OPT_TARGETS },
		{ "db", required_argument, NULL, OPT_DB },
		{ "scale", required_argument, NULL, OPT_SCALE },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "cow", required_argument, NULL, OPT_COW },
		{ "journal", required_argument, NULL, OPT_JOURNAL },
		{ "alloc", required_argument, NULL, OPT_ALLOC },
		{ "destroy-data", no_argument, NULL, OPT_DESTROY },
		{ "device-model", required_argument, NULL, OPT_DEVICE_MODEL },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "max-write", required_argument, NULL, OPT_MAX_WRITE },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "replay", no_argument, NULL, OPT_REPLAY },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "no-trace", no_argument, NULL, OPT_NO_TRACE },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "details", no_argument, NULL, OPT_DETAILS },
		{ "status-interval", required_argument, NULL, OPT_STATUS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "report", required_argument, NULL, OPT_REPORT },
		FSP_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	memset(o, 0, sizeof *o);
	o->profile = DEFAULT_PROFILE;
	o->fs = DEFAULT_FS;
	o->db = DEFAULT_DB;
	o->image_size = DEFAULT_IMAGE_SIZE;
	o->rounds = 1;
	o->record = "full";
	const char *rounds = NULL, *format = NULL, *status = NULL;
	o->want[T_RAW] = o->want[T_FS] = o->want[T_FSPRISM] = 1;
	const char *size = NULL, *targets = NULL;
	/* --bs=, --qd=, ...: one option per profile parameter, passed to run */
	struct option *longopts = fsp_opt_with_params(own);
	if (!longopts) {
		fail("out of memory");
		return -1;
	}
	struct fsp_opt g;
	fsp_opt_init(&g, "compare", usage, longopts, "hq", argc, argv);
	int c, rc = 0;
	while (!rc && (c = fsp_opt_next(&g)) != FSP_OPT_END) {
		const char *v = g.arg;
		switch (c) {
		case FSP_OPT_EXIT: rc = g.status ? -1 : 1; break;
		case OPT_PROFILE: o->profile = v; break;
		case OPT_DEVICE: o->device = v; break;
		case OPT_FS: o->fs = v; break;
		case OPT_TARGETS: targets = v; break;
		case OPT_DB: o->db = v; break;
		case OPT_SCALE: o->scale = v; break;
		case OPT_SIZE: size = v; break;
		case OPT_COW: o->cow = v; break;
		case OPT_JOURNAL: o->journal = v; break;
		case OPT_ALLOC: o->alloc = v; break;
		case OPT_DESTROY: o->destroy_data = 1; break;
		case OPT_DEVICE_MODEL: o->device_model = v; break;
		case OPT_ROUNDS: rounds = v; break;
		case OPT_MAX_WRITE: o->max_write = v; break;
		case OPT_INJECT: o->inject = v; break;
		case OPT_REPLAY: o->replay = 1; break;
		case OPT_RECORD: o->record = v; break;
		case OPT_NO_TRACE: o->no_trace = 1; break;
		case OPT_FORMAT: format = v; break;
		case OPT_WIDE: o->wide = o->details = 1; break;
		case OPT_DETAILS: o->details = 1; break;
		case OPT_STATUS: status = v; break;
		case 'q': o->quiet = 1; break;
		case OPT_REPORT: o->report = v; break;
		default: {
			/* a run parameter: validate_params checks it; the
			 * children get it as --key=value */
			if (o->npass == MAX_PASS) {
				fail("too many parameter overrides");
				rc = -1;
				break;
			}
			char *j = o->joined[o->npass];
			size_t jl = sizeof o->joined[0];
			if ((v ? snprintf(j, jl, "--%s=%s", g.name, v) :
				 snprintf(j, jl, "--%s", g.name)) >= (int)jl) {
				fail("--%s: value too long", g.name);
				rc = -1;
				break;
			}
			o->pass_key[o->npass] = g.name;
			o->pass_val[o->npass] = v ? v : ""; /* a flag: --norepeat */
			o->pass[o->npass++] = j;
		}
		}
	}
	free(longopts); /* g.name points into fsp_param_names, not here */
	if (rc)
		return rc;
	if (g.npos) {
		fsp_usage_error("compare", "unexpected argument '%s'", g.pos[0]);
		return -1;
	}
	if (strcmp(o->fs, "ext4") && strcmp(o->fs, "xfs") && strcmp(o->fs, "btrfs")) {
		fail("unsupported --fs '%s' (ext4, xfs or btrfs)", o->fs);
		return -1;
	}
	if (targets && parse_targets(targets, o->want))
		return -1;
	if (o->cow && emu_cow_mode_parse(o->cow) < 0) {
		fail("invalid --cow '%s' (off, shared or always)", o->cow);
		return -1;
	}
	if (o->journal && emu_journal_mode_parse(o->journal) < 0) {
		fail("invalid --journal '%s' (off, writeback, ordered or data)",
		     o->journal);
		return -1;
	}
	if (o->alloc && strcmp(o->alloc, "next-fit") && strcmp(o->alloc, "first-fit")) {
		fail("invalid --alloc '%s' (next-fit or first-fit)", o->alloc);
		return -1;
	}
	if (o->cow || o->journal || o->alloc) {
		/* they configure the emu target: added to the default targets */
		if (!targets) {
			o->want[T_EMU] = 1;
		} else if (!o->want[T_EMU]) {
			fail("--cow, --journal and --alloc configure the emu target, "
			     "which --targets leaves out (add emu)");
			return -1;
		}
	}
	if (o->inject) {
		char why[512];
		struct fsp_inject *inj = fsp_inject_parse(o->inject, why, sizeof why);
		if (!inj) {
			fail("invalid --inject: %s", why);
			return -1;
		}
		fsp_inject_free(inj);
		if (!o->want[T_FSPRISM] && !o->want[T_EMU]) {
			fail("--inject acts in the fsprism and emu mounts, which --targets "
			     "leaves out");
			return -1;
		}
	}
	if (o->device_model) {
		struct fsp_model_cfg mc;
		char why[512];
		if (o->device) {
			fail("--device-model puts the temporary image on a model drive; it "
			     "cannot be used with --device");
			return -1;
		}
		if (fsp_model_parse(o->device_model, &mc, why, sizeof why)) {
			fail("invalid --device-model '%s': %s", o->device_model, why);
			return -1;
		}
	}
	if (size) {
		if (o->device) {
			fail("--size sets the size of the temporary image; it cannot "
			     "be used with --device");
			return -1;
		}
		if (fsp_parse_size(size, &o->image_size) ||
		    (o->image_size &= ~((1ull << 20) - 1)) < (64ull << 20)) {
			fail("bad --size '%s' (at least 64M, e.g. 512M or 2G)", size);
			return -1;
		}
	}
	if (!*o->profile) {
		fail("--profile is empty");
		return -1;
	}
	if (rounds) {
		char *end;
		long r = strtol(rounds, &end, 10);
		if (*end || end == rounds || r < 1 || r > MAX_ROUNDS) {
			fail("bad --rounds '%s' (1 to %d)", rounds, MAX_ROUNDS);
			return -1;
		}
		o->rounds = (int)r;
		o->rounds_given = 1;
	}
	if (o->max_write) {
		uint64_t mw;
		if (fsp_parse_size(o->max_write, &mw) || mw < 4096 || mw > (1u << 20)) {
			fail("bad --max-write '%s' (4k to 1M)", o->max_write);
			return -1;
		}
	}
	if (o->max_write && !o->want[T_FSPRISM] && !o->want[T_EMU]) {
		fail("--max-write configures the fsprism and emu mounts, which --targets "
		     "leaves out");
		return -1;
	}
	{
		enum fsp_record_mode mode;
		unsigned sample_n;
		if (fsp_record_mode_parse(o->record, &mode, &sample_n)) {
			fail("invalid --record '%s' (full, sample:N, hist or off)", o->record);
			return -1;
		}
	}
	if (format) {
		if (!strcmp(format, "table"))
			o->format = CMP_TABLE;
		else if (!strcmp(format, "json"))
			o->format = CMP_JSON;
		else if (!strcmp(format, "csv"))
			o->format = CMP_CSV;
		else {
			fail("invalid --format '%s' (table, json or csv)", format);
			return -1;
		}
	}
	if (status && fsp_opt_status_interval(status, &o->status_interval) < 0) {
		fail("bad --status-interval '%s' " FSP_STATUS_RANGE, status);
		return -1;
	}
	if (o->replay && !o->want[T_FS] && !o->want[T_EMU]) {
		fail("--replay replays the device IO of the fs and emu targets, which "
		     "--targets leaves out");
		return -1;
	}
	return 0;
}

/*
 * Resolve profile (or job file), scale and overrides exactly as run will,
 * before anything is set up, so that a typo costs no mkfs. Returns 0 or -1.
 */
static int validate_params(struct opts *o, struct fsp_params *p)
{
	char err[512];
	enum fsp_scale scale = FSP_SCALE_DEFAULT;
	if (o->scale) {
		if (fsp_scale_parse(o->scale, &scale)) {
			fail("--scale '%s' is not default or full", o->scale);
			return -1;
		}
	}
	struct stat st;
	if (!stat(o->profile, &st) && S_ISREG(st.st_mode)) {
		if (fsp_jobfile_load(o->profile, scale, p, err, sizeof err)) {
			fail("%s", err);
			return -1;
		}
	} else if (fsp_profile_load(o->profile, scale, p)) {
		fail("unknown profile '%s' (see fsprism profiles)", o->profile);
		return -1;
	}
	for (int i = 0; i < o->npass; i++) {
		if (fsp_param_set(p, o->pass_key[i], o->pass_val[i], err, sizeof err)) {
			fail("%s: %s", o->pass_key[i], err);
			return -1;
		}
	}
	int own_length = o->rounds_given;
	for (int i = 0; i < o->npass; i++)
		own_length |= !strcmp(o->pass_key[i], "time") || !strcmp(o->pass_key[i], "bytes");
	if (!own_length && p->time_ns >= DEFAULT_ROUNDS * 100000000ull && o->npass < MAX_PASS) {
		/* the profile's step time, spread over DEFAULT_ROUNDS rounds */
		char *j = o->joined[o->npass], t[64];
		snprintf(t, sizeof t, "%" PRIu64 "ns", p->time_ns / DEFAULT_ROUNDS);
		if (fsp_param_set(p, "time", t, err, sizeof err)) {
			fail("time: %s", err);
			return -1;
		}
		fsp_param_format(p, "time", t, sizeof t);
		snprintf(j, sizeof o->joined[0], "--time=%s", t);
		o->pass_key[o->npass] = "time";
		o->pass_val[o->npass] = j + 7;
		o->pass[o->npass++] = j;
		o->rounds = DEFAULT_ROUNDS;
	}
	if (fsp_params_check(p, err, sizeof err)) {
		fail("%s", err);
		return -1;
	}
	return 0;
}

/*
 * All three targets get the same span. A profile default larger than the
 * device would adapt to each target separately (the device, then the
 * file system's smaller free space), so cap it to 70% of the device, which
 * every supported file system leaves free on a fresh mkfs.
 */
static void choose_span(const struct fsp_params *p, uint64_t dev_size,
			char *arg, size_t len)
{
	arg[0] = 0;
	if (p->span_set)
		return;
	uint64_t cap = dev_size / 10 * 7;
	uint64_t span = p->span;
	if (p->offset >= cap)
		return; /* run will say what is wrong */
	if (span == 0 || p->offset + span > cap)
		span = cap - p->offset;
	span -= span % (1u << 20);
	if (span != p->span)
		snprintf(arg, len, "--span=%" PRIu64, span);
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: waits return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a closed stdout must not skip cleanup */
}


/* Everything one compare invocation works with. */
struct compare {
	struct opts o;
	struct fsp_params params;
	struct setup su;
	struct fsp_store *st;
	char db[2 * PATH_MAX + 2];
	uint64_t dev_size;
	int64_t run;
	int64_t mount_run[T__COUNT]; /* mount runs of the fsprism and emu targets
					(of the latest round) */
	int device_written;       /* compare has written the device (mkfs, a store) */
	int64_t engine_run[T__COUNT]; /* the newest engine run of each target */
	int show;                 /* progress on a terminal */
	int part, parts;          /* the engine run under way, of all (rounds x targets) */
	char part_of[32];         /* "K/N" for run's --part-of */
};

/* The next engine run's "K/N" (counted once per run_target). */
static const char *next_part(struct compare *c)
{
	snprintf(c->part_of, sizeof c->part_of, "%d/%d", ++c->part, c->parts);
	return c->part_of;
}

/*
 * The layout of the passthrough target's backing file (FIEMAP cannot reach
 * through FUSE), stored with its engine run: through it the backing IO's
 * block requests map to the file offsets of the mount's rows (docs/prism.md).
 * Read after the run, which only converted unwritten extents in place.
 */
static void store_backing_layout(struct compare *c, int t, const char *backing)
{
	char path[PATH_MAX + 16];
	struct fsp_extent *e;
	size_t n;
	int64_t run = fsp_store_child_run(c->st, c->run, target_label[t]);
	snprintf(path, sizeof path, "%s/target.dat", backing);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !run)
		goto out;
	if (fsp_fiemap_read(fd, &e, &n) == 0) {
		fsp_file_extents_save(c->st, run, -1, e, n);
		free(e);
	}
out:
	if (fd >= 0)
		close(fd);
}

/* Checks that need no setup: root, tools, the device. Returns 0 or 1. */
static int preflight(struct compare *c)
{
	const struct opts *o = &c->o;
	if (geteuid() != 0) {
		fail("must run as root (it attaches loop devices, makes and mounts "
		     "file systems)");
		return 1;
	}
	char mkfs[64];
	snprintf(mkfs, sizeof mkfs, "mkfs.%s", o->fs);
	if ((o->want[T_FS] || o->want[T_FSPRISM]) && !have_program(mkfs)) {
		fail("%s not found (needed for --fs %s)", mkfs, o->fs);
		return 1;
	}
	if (!o->device && !have_program("losetup")) {
		fail("losetup not found (needed for the temporary image)");
		return 1;
	}
	c->dev_size = o->image_size;
	if (o->device) {
		char err[1024];
		unsigned lbs;
		if (fsp_target_check_raw_write(o->device, o->destroy_data, err,
					       sizeof err)) {
			fail("%s", err);
			return 1;
		}
		if (fsp_target_geometry(o->device, &c->dev_size, &lbs)) {
			fail("cannot get the size of %s: %s", o->device, strerror(errno));
			return 1;
		}
	}
	/* absolute: the mount daemon does not run in our directory */
	if (o->db[0] == '/') {
		snprintf(c->db, sizeof c->db, "%s", o->db);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			fail("cannot get the current directory: %s", strerror(errno));
			return 1;
		}
		snprintf(c->db, sizeof c->db, "%s/%s", cwd, o->db);
	}
	return 0;
}

/* The compare's own runs row and attributes. Returns 0 or -1. */
static int record_compare(struct compare *c, int argc, char **argv)
{
	char *options = fsp_store_cmdline(argc, argv);
	struct fsp_run_info info = {
		.kind = "compare", .options = options,
		.backing_path = c->su.device, .backing_device = c->su.device,
		.backing_fstype = c->o.fs, .label = "compare",
	};
	c->run = fsp_store_begin_run(c->st, &info);
	free(options);
	if (c->run < 0) {
		fail("cannot record the compare run in %s", c->db);
		return -1;
	}
	fsp_store_set_attr(c->st, c->run, "profile", c->o.profile);
	fsp_store_set_attr(c->st, c->run, "fs", c->o.fs);
	fsp_store_set_attr(c->st, c->run, "device", c->su.device);
	/* not emu.*: that prefix marks an emulated mount's run for stats */
	if (c->o.cow)
		fsp_store_set_attr(c->st, c->run, "emu_cow", c->o.cow);
	if (c->o.journal)
		fsp_store_set_attr(c->st, c->run, "emu_journal", c->o.journal);
	if (c->o.alloc)
		fsp_store_set_attr(c->st, c->run, "emu_alloc", c->o.alloc);
	if (c->o.inject)
		fsp_store_set_attr(c->st, c->run, "inject", c->o.inject);
	if (c->o.device_model) {
		fsp_store_set_attr(c->st, c->run, "device_model", c->o.device_model);
		int64_t mr = fsp_store_find_mount_run(c->st, c->su.model.backing, 0);
		if (mr > 0) {
			char id[32];
			snprintf(id, sizeof id, "%" PRId64, mr);
			fsp_store_set_attr(c->st, c->run, "model_run", id);
			fsp_store_adopt_run(c->st, mr, c->run, "model-fuse");
		}
	}
	if (!c->o.device) {
		fsp_store_set_attr(c->st, c->run, "image", c->su.image);
		fsp_store_set_attr_u64(c->st, c->run, "image_size", c->o.image_size);
	}
	return 0;
}

/* The round a child run belongs to, as its attribute `round` (0 first). */
static void set_round(struct compare *c, int64_t run, int round)
{
	char v[16];
	snprintf(v, sizeof v, "%d", round);
	fsp_store_set_attr(c->st, run, "round", v);
}

/*
 * The fsprism or emu target: mount, adopt the mount's run, make the job's
 * file through the mount and measure it, unmount (which waits until the
 * daemon has stored every record, the device accounting included).
 *
 * fsprism: a passthrough mount of a directory on the native file system.
 * emu: the emulation with the device as its store, formatted: compare owns
 * the device (the temporary image, or a --device that passed the raw-write
 * checks), and the native file system on it is unmounted by now; the
 * namespace lives in a small backing directory in the work dir.
 */
static int measure_mount(struct compare *c, int t, int round)
{
	struct setup *su = &c->su;
	struct fuse_mnt *m = t == T_EMU ? &su->emu : &su->fuse;
	char *extra[20];
	int n = 0;
	char cow[64], journal[64], alloc[64], maxw[80];
	/* the mount run of an earlier round is older than this one's */
	int64_t after = c->mount_run[t] > c->run ? c->mount_run[t] : c->run;
	c->mount_run[t] = 0;
	if (c->o.max_write) {
		snprintf(maxw, sizeof maxw, "--max-write=%s", c->o.max_write);
		extra[n++] = maxw;
	}
	if (c->o.inject) {
		extra[n++] = "--inject";
		extra[n++] = (char *)c->o.inject;
	}
	extra[n++] = "--record";
	extra[n++] = (char *)c->o.record;
	if (c->o.no_trace)
		extra[n++] = "--no-trace";
	if (t == T_EMU) {
		snprintf(m->backing, sizeof m->backing, "%s/emu-backing", su->workdir);
		if (mkdir(m->backing, 0700)) {
			fail("cannot create %s: %s", m->backing, strerror(errno));
			return -1;
		}
		m->backing_made = 1;
		extra[n++] = "--store";
		extra[n++] = (char *)su->device;
		extra[n++] = "--format";
		extra[n++] = "--destroy-data";
		if (c->o.cow) {
			snprintf(cow, sizeof cow, "--cow=%s", c->o.cow);
			extra[n++] = cow;
		}
		if (c->o.journal) {
			snprintf(journal, sizeof journal, "--journal=%s", c->o.journal);
			extra[n++] = journal;
		}
		if (c->o.alloc) {
			snprintf(alloc, sizeof alloc, "--alloc=%s", c->o.alloc);
			extra[n++] = alloc;
		}
	} else {
		snprintf(m->backing, sizeof m->backing, "%s/fsprism", su->fsdir);
		if (mkdir(m->backing, 0700) && errno != EEXIST) {
			fail("cannot create %s: %s", m->backing, strerror(errno));
			return -1;
		}
	}
	extra[n] = NULL;
	if (c->show && t == T_EMU)
		fprintf(stderr, "compare: emu target: formatting %s as the store of "
			"an fsprism mount\n", su->device);
	if (mount_fsprism(m, su->workdir, c->db, extra))
		return -1;
	char label[32];
	snprintf(label, sizeof label, "%s-fuse", target_label[t]);
	for (int i = 0; i < 30 && !c->mount_run[t]; i++) {
		c->mount_run[t] = fsp_store_find_mount_run(c->st, m->backing, after);
		if (!c->mount_run[t])
			sleep_ms(100);
	}
	if (c->mount_run[t])
		fsp_store_adopt_run(c->st, c->mount_run[t], c->run, label);
	char file[PATH_MAX + 16];
	snprintf(file, sizeof file, "%s/target.dat", m->dir);
	int r = run_target(&c->o, c->db, c->run, t, file, c->show, 0, next_part(c));
	if (!r && t == T_FSPRISM)
		store_backing_layout(c, t, m->backing);
	/* the emu file stays until unmount, which records its extents; the
	 * whole backing dir goes at teardown and the store with the device */
	if (t != T_EMU)
		unlink(file);
	if (umount_fsprism(m)) {
		fail("fsprism umount %s failed; the FUSE log may be incomplete",
		     m->dir);
		return -1;
	}
	if (!c->mount_run[t]) {
		c->mount_run[t] = fsp_store_find_mount_run(c->st, m->backing, after);
		if (c->mount_run[t])
			fsp_store_adopt_run(c->st, c->mount_run[t], c->run, label);
	}
	if (c->mount_run[t])
		set_round(c, c->mount_run[t], round);
	return r;
}

/* The engine run this round made (none if the child failed before its
 * run row: then the newest is an earlier round's, and keeps its round). */
static void mark_engine_round(struct compare *c, int t, int round)
{
	int64_t run = fsp_store_child_run(c->st, c->run, target_label[t]);
	if (run > c->engine_run[t]) {
		set_round(c, run, round);
		c->engine_run[t] = run;
	}
}

/* The native file system mounted, made afresh if raw or emu wrote over it. */
static int ensure_fs(struct compare *c)
{
	if (c->su.fs_mounted)
		return 0;
	c->device_written = 1;
	return make_fs(&c->su, &c->o);
}

/* One target of one round. */
static int measure_target(struct compare *c, int t, int round)
{
	const struct opts *o = &c->o;
	struct setup *su = &c->su;
	int r = 0;
	switch (t) {
	case T_RAW:
		/* raw writes the whole span: nothing may be mounted on it */
		if (su->fs_mounted && umount_fs(su))
			return -1;
		if (fsp_params_reads(&c->params) &&
		    prefill_raw(su->device, &c->params, o->span_arg, c->dev_size, c->show))
			return -1;
		/* after a file system or a store of compare's own: compare owns
		 * the device (it passed the raw-write checks first) */
		if (!stop_sig)
			r = run_target(o, c->db, c->run, T_RAW, su->device, c->show,
				       c->device_written, next_part(c));
		break;
	case T_FS: {
		if (ensure_fs(c))
			return -1;
		char file[PATH_MAX + 16];
		snprintf(file, sizeof file, "%s/target.dat", su->fsdir);
		if (!stop_sig)
			r = run_target(o, c->db, c->run, T_FS, file, c->show, 0, next_part(c));
		unlink(file); /* room for the fsprism target's file */
		break;
	}
	case T_FSPRISM:
		if (ensure_fs(c))
			return -1;
		if (!stop_sig)
			r = measure_mount(c, T_FSPRISM, round);
		teardown_fuse(&su->fuse); /* a new mount point next round */
		break;
	case T_EMU:
		/* the emulation takes over the whole device */
		if (su->fs_mounted && umount_fs(su))
			return -1;
		c->device_written = 1;
		if (!stop_sig)
			r = measure_mount(c, T_EMU, round);
		teardown_fuse(&su->emu); /* a fresh namespace for the next store */
		break;
	}
	mark_engine_round(c, t, round); /* an interrupted run keeps what it measured */
	return r ? -1 : 0;
}

/*
 * --replay: every round's device IO of the fs and emu targets, again on the
 * raw device, once nothing is mounted on it any more.
 */
static int replay_all(struct compare *c)
{
	struct setup *su = &c->su;
	if (su->fs_mounted && umount_fs(su))
		return -1;
	static const int targets[] = { T_FS, T_EMU };
	for (size_t i = 0; i < 2 && !stop_sig; i++) {
		int t = targets[i];
		if (!c->o.want[t])
			continue;
		int64_t runs[MAX_ROUNDS], mounts[MAX_ROUNDS];
		char label[32];
		snprintf(label, sizeof label, "%s-fuse", target_label[t]);
		int nr = fsp_store_child_runs(c->st, c->run, "run", target_label[t], runs,
					      MAX_ROUNDS);
		int nm = fsp_store_child_runs(c->st, c->run, "mount", label, mounts,
					      MAX_ROUNDS);
		for (int k = 0; k < nr && !stop_sig; k++) {
			char err[1024];
			if (c->show)
				fprintf(stderr, "compare: replaying the %s target's device IO "
					"of round %d on %s\n", target_label[t], k + 1,
					su->device);
			if (compare_replay(c->st, su->device, c->run, t, k, runs[k],
					   k < nm ? mounts[k] : 0, &stop_sig, err, sizeof err)) {
				fail("replay of the %s target: %s", target_label[t], err);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * Every round runs every wanted target once; round 0 in the order raw, fs,
 * fsprism, emu (raw first: it overwrites the device), round k rotated by k,
 * so that no target always runs first or last. Stops at the first failure
 * or signal.
 */
static int measure(struct compare *c)
{
	int order[T__COUNT], n = 0;
	for (int t = 0; t < T__COUNT; t++)
		if (c->o.want[t])
			order[n++] = t;
	c->parts = n * c->o.rounds;
	for (int round = 0; round < c->o.rounds && !stop_sig; round++) {
		if (c->show && c->o.rounds > 1)
			fprintf(stderr, "compare: round %d of %d\n", round + 1, c->o.rounds);
		for (int i = 0; i < n && !stop_sig; i++)
			if (measure_target(c, order[(i + round) % n], round))
				return -1;
	}
	if (c->o.replay && !stop_sig && replay_all(c))
		return -1;
	return stop_sig ? -1 : 0;
}

int cmd_compare(int argc, char **argv)
{
	static struct compare c; /* large; one per process */
	memset(&c, 0, sizeof c);
	int prc = parse_args(argc, argv, &c.o);
	if (prc)
		return prc > 0 ? 0 : 2;
	if (validate_params(&c.o, &c.params))
		return 2;
	if (preflight(&c))
		return 1;
	if (c.o.report && report_check_output("compare", c.o.report))
		return 1;
	choose_span(&c.params, c.dev_size, c.o.span_arg, sizeof c.o.span_arg);

	char err[1024];
	c.st = fsp_store_open(c.db, err, sizeof err);
	if (!c.st) {
		fail("%s", err);
		return 1;
	}
	install_signals();
	c.su.device = c.o.device;
	c.su.fuse.name = target_label[T_FSPRISM];
	c.su.emu.name = target_label[T_EMU];
	c.su.model.name = "model-mnt";
	c.show = !c.o.quiet && isatty(2);
	int rc = 1;
	if (make_workdir(&c.su) || (!c.o.device && make_image(&c.su, &c.o, c.db)) ||
	    record_compare(&c, argc, argv))
		goto out;
	if (c.show)
		fprintf(stderr, "fsprism compare: profile %s on %s, %s, db %s\n",
			c.o.profile, c.su.device, c.o.fs, c.db);
	if (!measure(&c))
		rc = 0;
out:;
	int torn = teardown(&c.su);
	if (torn)
		rc = 1;
	if (c.run > 0) {
		if (stop_sig)
			fsp_store_set_attr(c.st, c.run, "interrupted", "1");
		else if (rc)
			fsp_store_set_attr(c.st, c.run, "failed", "1");
		fsp_store_end_run(c.st, c.run, 0, 0);
		/* also after Ctrl-C or a failure: what was measured is shown */
		compare_report(stdout, c.st, &c.o, c.su.device, c.run, c.mount_run);
		fflush(stdout);
		if (c.o.report && report_html("compare", c.st, c.run, 0, c.o.report, NULL, 0) &&
		    !rc)
			rc = 1;
	}
	if (stop_sig) {
		fail("interrupted by signal %d; %s", (int)stop_sig, torn ?
		     "see above for what could not be removed" :
		     "everything it set up was removed");
		rc = 128 + stop_sig; /* 130, 143: what a shell reports for the signal */
	}
	fsp_store_close(c.st);
	return rc;
}

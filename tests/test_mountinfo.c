/*
 * test_mountinfo.c - the one reader of /proc/self/mountinfo: the kernel's
 * octal escapes undone (and malformed ones left alone), every field of a
 * line parsed (also with optional fields, an empty source, a line without
 * the separator), and the live table: "/" and /proc found with the device
 * stat() reports, and (as root) a tmpfs of the test's own under a name
 * with a space, a tab and a backslash, a bind mount's root, and the last
 * of two mounts at one path being the one on top.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>
#include "src/sys/mountinfo.h"
#include "tests/testdir.h"
#include "tests/unit.h"

UNIT_TEST(test_unescape)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "/plain/path", "/plain/path" },
		{ "/mnt/a\\040b", "/mnt/a b" },
		{ "\\040\\040", "  " },
		{ "tab\\011here", "tab\there" },
		{ "back\\134slash", "back\\slash" },
		{ "nl\\012", "nl\n" },
		{ "\\134040", "\\040" },    /* an escaped backslash, then text */
		{ "\\\\040", "\\ " },       /* a lone backslash, then an escape */
		/* malformed: left as they are */
		{ "end\\", "end\\" },
		{ "short\\04", "short\\04" },
		{ "short\\0", "short\\0" },
		{ "big\\400", "big\\400" }, /* above \377 */
		{ "digit\\080", "digit\\080" },
		{ "hex\\x41", "hex\\x41" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];
		strcpy(buf, cases[i].in);
		fsp_unescape_octal(buf);
		assert_string_equal(buf, cases[i].out);
	}
}

/* Parse the given text as if it were /proc/self/mountinfo (the reader only
 * needs its FILE). */
static void open_text(struct fsp_mountinfo *mi, const char *text)
{
	mi->line = NULL;
	mi->cap = 0;
	mi->f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(mi->f);
}

static void expect_mount(struct fsp_mountinfo *mi, unsigned major, unsigned minor,
			 const char *root, const char *mp, const char *fstype,
			 const char *source)
{
	struct fsp_mount m;
	assert_int_equal(fsp_mountinfo_next(mi, &m), 1);
	assert_int_equal(m.major, major);
	assert_int_equal(m.minor, minor);
	assert_string_equal(m.root, root);
	assert_string_equal(m.mount_point, mp);
	assert_string_equal(m.fstype, fstype);
	assert_string_equal(m.source, source);
}

UNIT_TEST(test_fields)
{
	(void)state;
	static const char text[] =
		/* proc(5)'s example: one optional field */
		"36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
		/* no optional field */
		"22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
		/* two optional fields, escapes in root, mount point and source */
		"40 22 0:45 /a\\040b /mnt/x\\011y rw shared:3 master:7 - fuse.fsprism back\\040ing rw,user_id=0\n"
		/* no separator: not a mount line, skipped */
		"41 22 0:46 / /broken rw shared:4\n"
		/* too few fields: skipped */
		"42 22\n"
		/* an empty source (mount -t tmpfs '' /mnt/e) */
		"43 22 0:47 / /mnt/e rw,relatime - tmpfs  rw\n"
		/* the last line without a newline */
		"44 22 259:3 / /boot rw - vfat /dev/nvme0n1p1 rw";
	struct fsp_mountinfo mi;
	open_text(&mi, text);
	expect_mount(&mi, 98, 0, "/mnt1", "/mnt/parent", "ext3", "/dev/root");
	expect_mount(&mi, 8, 1, "/", "/", "ext4", "/dev/sda1");
	expect_mount(&mi, 0, 45, "/a b", "/mnt/x\ty", "fuse.fsprism", "back ing");
	expect_mount(&mi, 0, 47, "/", "/mnt/e", "tmpfs", "");
	expect_mount(&mi, 259, 3, "/", "/boot", "vfat", "/dev/nvme0n1p1");
	struct fsp_mount m;
	assert_int_equal(fsp_mountinfo_next(&mi, &m), 0);
	assert_int_equal(fsp_mountinfo_next(&mi, &m), 0); /* and stays at the end */
	fsp_mountinfo_close(&mi);
	assert_null(mi.f);
}

/* The last mount at path in the live table; its strings copied out. */
struct found {
	int n; /* mounts at the path */
	unsigned major, minor;
	char root[256], fstype[64], source[256];
};

static struct found find_mount(const char *path)
{
	struct found r = { 0 };
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	assert_int_equal(fsp_mountinfo_open(&mi), 0);
	while (fsp_mountinfo_next(&mi, &m)) {
		if (strcmp(m.mount_point, path))
			continue;
		r.n++;
		r.major = m.major;
		r.minor = m.minor;
		snprintf(r.root, sizeof(r.root), "%s", m.root);
		snprintf(r.fstype, sizeof(r.fstype), "%s", m.fstype);
		snprintf(r.source, sizeof(r.source), "%s", m.source);
	}
	fsp_mountinfo_close(&mi);
	return r;
}

static void assert_dev_of(const struct found *f, const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(f->major, major(st.st_dev));
	assert_int_equal(f->minor, minor(st.st_dev));
}

UNIT_TEST(test_live_root_and_proc)
{
	(void)state;
	struct found root = find_mount("/");
	assert_true(root.n >= 1);
	assert_dev_of(&root, "/"); /* the last one at "/" is the one in use */
	assert_true(root.fstype[0] != 0);

	struct found proc = find_mount("/proc");
	assert_true(proc.n >= 1);
	assert_string_equal(proc.fstype, "proc");
	assert_string_equal(proc.root, "/");
	assert_dev_of(&proc, "/proc");
}

/* As root: mounts of the test's own in a directory that it removes. */
static char base[64];
static char mnt_odd[128], mnt_bind[128], mnt_empty[128];
static int mounted[4];

static int setup_mounts(void **state)
{
	(void)state;
	if (test_dir_make(base, sizeof(base), "/var/tmp", "mountinfo"))
		return -1;
	snprintf(mnt_odd, sizeof(mnt_odd), "%s/mnt point\twith\\back", base);
	snprintf(mnt_bind, sizeof(mnt_bind), "%s/bind", base);
	snprintf(mnt_empty, sizeof(mnt_empty), "%s/empty", base);
	if (mkdir(mnt_odd, 0755) || mkdir(mnt_bind, 0755) || mkdir(mnt_empty, 0755))
		return -1;
	return 0;
}

static int teardown_mounts(void **state)
{
	(void)state;
	/* unmount only what this test mounted, the top one first */
	for (int i = 3; i >= 0; i--) {
		const char *p = i == 0 || i == 3 ? mnt_odd : i == 1 ? mnt_bind : mnt_empty;
		if (mounted[i] && umount2(p, 0) == 0)
			mounted[i] = 0;
	}
	rmdir(mnt_odd);
	rmdir(mnt_bind);
	rmdir(mnt_empty);
	return rmdir(base);
}

UNIT_TEST_SETUP(test_live_own_mounts, setup_mounts, teardown_mounts)
{
	(void)state;
	if (mount("fsp src", mnt_odd, "tmpfs", 0, "size=1m") != 0) {
		if (errno == EPERM)
			skip(); /* not root: cannot mount */
		fail_msg("mount tmpfs: %s", strerror(errno));
	}
	mounted[0] = 1;
	struct found f = find_mount(mnt_odd);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.fstype, "tmpfs");
	assert_string_equal(f.source, "fsp src");
	assert_string_equal(f.root, "/");
	assert_dev_of(&f, mnt_odd);

	/* a bind mount of a subdirectory: root names it, source is the fs's */
	char sub[200];
	snprintf(sub, sizeof(sub), "%s/sub dir", mnt_odd);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(mount(sub, mnt_bind, NULL, MS_BIND, NULL), 0);
	mounted[1] = 1;
	f = find_mount(mnt_bind);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.root, "/sub dir");
	assert_string_equal(f.fstype, "tmpfs");
	assert_string_equal(f.source, "fsp src");
	assert_dev_of(&f, mnt_bind);

	/* an empty source is an empty string, not the next field */
	assert_int_equal(mount("", mnt_empty, "tmpfs", 0, "size=1m"), 0);
	mounted[2] = 1;
	f = find_mount(mnt_empty);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.fstype, "tmpfs");
	assert_string_equal(f.source, "");

	/* two at one path: the later one is on top */
	assert_int_equal(mount("fsp top", mnt_odd, "tmpfs", 0, "size=1m"), 0);
	mounted[3] = 1;
	f = find_mount(mnt_odd);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.source, "fsp top");
	assert_dev_of(&f, mnt_odd);
}

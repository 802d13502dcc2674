/*
 * test_target.c - the raw-write safety check and target geometry
 * (src/sys/target.h), called directly. Without root: a missing path, a
 * regular file (all zeros or carrying ext4) and a character device are
 * refused as not block devices, whatever destroy_data says; geometry and
 * is_blockdev of files. As root, on loop devices the test attaches over
 * files of its own: all zeros is allowed; an ext4 signature and a dos
 * partition table are refused unless destroy_data; mounted (also named
 * through a symlink), opened exclusively, or the backing device of another
 * loop device is refused even with destroy_data. Each message names the
 * device, the problem and what to do (the option, or unmount/detach).
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/loop.h>
#include <cmocka.h>
#include "src/sys/target.h"
#include "tests/testdir.h"
#include "tests/unit.h"

#define MIB (1 << 20)

static char dir[64];
static char zero_file[96], ext4_file[96], pt_file[96], mnt[96], link_path[96];
static char loops[4][64]; /* attached by this test, detached in teardown */
static int nloops;
static int mounted;

static void make_zero(const char *p, off_t size)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

static void run(const char *cmd)
{
	int rc = system(cmd);
	if (rc != 0)
		fail_msg("'%s' exited %d", cmd, rc);
}

static int setup(void **state)
{
	(void)state;
	if (test_dir_make(dir, sizeof(dir), "/var/tmp", "target"))
		return -1;
	test_dir_path(zero_file, sizeof(zero_file), dir, "zero.img");
	test_dir_path(ext4_file, sizeof(ext4_file), dir, "ext4.img");
	test_dir_path(pt_file, sizeof(pt_file), dir, "pt.img");
	test_dir_path(mnt, sizeof(mnt), dir, "mnt");
	test_dir_path(link_path, sizeof(link_path), dir, "dev-link");
	nloops = 0;
	mounted = 0;
	return mkdir(mnt, 0755);
}

static int teardown(void **state)
{
	(void)state;
	if (mounted && umount2(mnt, 0) == 0)
		mounted = 0;
	/* only the loop devices this test attached, the top one first */
	while (nloops > 0) {
		int fd = open(loops[--nloops], O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ioctl(fd, LOOP_CLR_FD, 0);
			close(fd);
		}
	}
	unlink(zero_file);
	unlink(ext4_file);
	unlink(pt_file);
	unlink(link_path);
	rmdir(mnt);
	return rmdir(dir);
}

static void make_ext4(const char *p)
{
	make_zero(p, 8 * MIB);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -F -q '%s' >/dev/null 2>&1", p);
	run(cmd);
}

/* Root only: a loop device over backing (a file or another loop device). */
static const char *attach(const char *backing)
{
	if (geteuid() != 0)
		skip(); /* loop devices need root */
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "losetup --find --show '%s' 2>/dev/null", backing);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *dev = loops[nloops];
	int got = fgets(dev, sizeof(loops[0]), p) != NULL;
	int rc = pclose(p);
	if (!got || rc != 0)
		skip(); /* no loop devices here (a container without /dev/loop-control) */
	dev[strcspn(dev, "\n")] = 0;
	nloops++;
	return dev;
}

/* The check's verdict and message. */
static int check(const char *dev, int destroy_data, char *err, size_t len)
{
	memset(err, 'x', len);
	err[len - 1] = 0;
	return fsp_target_check_raw_write(dev, destroy_data, err, len);
}

static void expect_refused(const char *dev, int destroy_data, const char *want)
{
	char err[512];
	assert_int_equal(check(dev, destroy_data, err, sizeof(err)), -1);
	assert_string_equal(err, want);
}

static void expect_allowed(const char *dev, int destroy_data)
{
	char err[512];
	assert_int_equal(check(dev, destroy_data, err, sizeof(err)), 0);
}

/* fsp_target_geometry of path fails with errno e. */
static void expect_no_geometry(const char *path, int e)
{
	uint64_t size = 7;
	unsigned bs = 7;
	errno = 0;
	assert_int_equal(fsp_target_geometry(path, &size, &bs), -1);
	assert_int_equal(errno, e);
}

UNIT_TEST_SETUP(test_missing, setup, teardown)
{
	(void)state;
	char missing[128];
	snprintf(missing, sizeof(missing), "%s/no-such-device", dir);
	char want[256];
	snprintf(want, sizeof(want), "cannot access %s: No such file or directory", missing);
	expect_refused(missing, 0, want);
	expect_refused(missing, 1, want);
	errno = 0;
	assert_int_equal(fsp_target_is_blockdev(missing), -1);
	assert_int_equal(errno, ENOENT);
	expect_no_geometry(missing, ENOENT);
}

/* The raw-write check is for block devices: a file is never "raw". */
UNIT_TEST_SETUP(test_not_block_devices, setup, teardown)
{
	(void)state;
	make_zero(zero_file, 8 * MIB);
	make_ext4(ext4_file);
	const char *paths[] = { zero_file, ext4_file, "/dev/null", dir };
	for (int i = 0; i < 4; i++) {
		char want[256];
		snprintf(want, sizeof(want), "%s is not a block device", paths[i]);
		expect_refused(paths[i], 0, want);
		expect_refused(paths[i], 1, want);
		assert_int_equal(fsp_target_is_blockdev(paths[i]), 0);
	}
	/* a message longer than the buffer is cut, not overrun */
	char small[8];
	assert_int_equal(check(zero_file, 0, small, sizeof(small)), -1);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, zero_file, sizeof(small) - 1);
	/* and no buffer at all is allowed */
	assert_int_equal(fsp_target_check_raw_write(zero_file, 0, NULL, 0), -1);
}

UNIT_TEST_SETUP(test_geometry_of_files, setup, teardown)
{
	(void)state;
	make_zero(zero_file, 8 * MIB + 123);
	uint64_t size = 0;
	unsigned bs = 0;
	assert_int_equal(fsp_target_geometry(zero_file, &size, &bs), 0);
	assert_int_equal(size, 8 * MIB + 123);
	/* the device's logical block size: what O_DIRECT on the file needs */
	assert_true(bs >= 512 && bs <= 4096 && (bs & (bs - 1)) == 0);
	int fd = open(zero_file, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd >= 0) {
		void *buf = NULL;
		assert_int_equal(posix_memalign(&buf, bs, bs), 0);
		assert_int_equal(pread(fd, buf, bs, bs), (ssize_t)bs);
		free(buf);
		close(fd);
	}
	/* neither a file nor a block device */
	expect_no_geometry("/dev/null", EINVAL);
	expect_no_geometry(dir, EINVAL);
}

UNIT_TEST_SETUP(test_loop_zero_allowed, setup, teardown)
{
	(void)state;
	make_zero(zero_file, 8 * MIB);
	const char *dev = attach(zero_file);
	expect_allowed(dev, 0);
	expect_allowed(dev, 1);
	assert_int_equal(fsp_target_is_blockdev(dev), 1);
	uint64_t size = 0;
	unsigned bs = 0;
	assert_int_equal(fsp_target_geometry(dev, &size, &bs), 0);
	assert_int_equal(size, 8 * MIB);
	assert_int_equal(bs, 512); /* a loop device's default */
}

UNIT_TEST_SETUP(test_loop_signatures, setup, teardown)
{
	(void)state;
	make_ext4(ext4_file);
	make_zero(pt_file, 8 * MIB);
	char cmd[200];
	snprintf(cmd, sizeof(cmd),
		 "printf 'label: dos\\nstart=2048, type=83\\n' | sfdisk -q '%s' >/dev/null 2>&1",
		 pt_file);
	run(cmd);
	const char *fs = attach(ext4_file);
	const char *pt = attach(pt_file);
	char want[256];
	snprintf(want, sizeof(want),
		 "%s carries an ext4 file system signature (use --destroy-data to overwrite it)",
		 fs);
	expect_refused(fs, 0, want);
	snprintf(want, sizeof(want),
		 "%s carries a dos partition table (use --destroy-data to overwrite it)", pt);
	expect_refused(pt, 0, want);
	/* destroy_data overrides a signature: it only says there may be data */
	expect_allowed(fs, 1);
	expect_allowed(pt, 1);
}

/* In use is refused even with destroy_data: writing under a live user
 * corrupts it. */
UNIT_TEST_SETUP(test_loop_mounted, setup, teardown)
{
	(void)state;
	make_ext4(ext4_file);
	const char *dev = attach(ext4_file);
	assert_int_equal(mount(dev, mnt, "ext4", 0, NULL), 0);
	mounted = 1;
	char want[300];
	snprintf(want, sizeof(want),
		 "%s is mounted on %s (unmount it first; --destroy-data does not override this)",
		 dev, mnt);
	expect_refused(dev, 0, want);
	expect_refused(dev, 1, want);
	/* compared by device, not by name: a symlink is the same device */
	assert_int_equal(symlink(dev, link_path), 0);
	snprintf(want, sizeof(want),
		 "%s is mounted on %s (unmount it first; --destroy-data does not override this)",
		 link_path, mnt);
	expect_refused(link_path, 1, want);
	assert_int_equal(umount2(mnt, 0), 0);
	mounted = 0;
	/* unmounted, only the signature is left */
	snprintf(want, sizeof(want),
		 "%s carries an ext4 file system signature (use --destroy-data to overwrite it)",
		 link_path);
	expect_refused(link_path, 0, want);
}

UNIT_TEST_SETUP(test_loop_busy, setup, teardown)
{
	(void)state;
	make_zero(zero_file, 8 * MIB);
	const char *dev = attach(zero_file);
	int fd = open(dev, O_RDONLY | O_EXCL | O_CLOEXEC);
	assert_true(fd >= 0);
	char want[300];
	snprintf(want, sizeof(want),
		 "%s is busy (another program or a mount in another namespace has it open "
		 "exclusively)", dev);
	expect_refused(dev, 0, want);
	expect_refused(dev, 1, want);
	close(fd);
	expect_allowed(dev, 0);
}

UNIT_TEST_SETUP(test_loop_backing, setup, teardown)
{
	(void)state;
	make_zero(zero_file, 8 * MIB);
	char lower[64];
	snprintf(lower, sizeof(lower), "%s", attach(zero_file));
	const char *upper = attach(lower);
	char want[300];
	snprintf(want, sizeof(want),
		 "%s is the backing device of %s (detach it first; --destroy-data does not "
		 "override this)", lower, upper);
	expect_refused(lower, 0, want);
	expect_refused(lower, 1, want);
	/* the loop device on top is free to be written */
	expect_allowed(upper, 0);
}

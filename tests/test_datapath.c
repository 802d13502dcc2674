/*
 * test_datapath.c - the FUSE layer's data paths (fs/fuse/datapath.h) called
 * the way the handlers call them, on real files, without a mount: the
 * table that maps a handle's bits to its path, and a handle made by each
 * path's open selecting that path; the buffered path's write, read, lseek,
 * fallocate, fsync, copy_file_range and release; the O_DIRECT path (aio
 * off: synchronous) serving aligned requests from its direct descriptor and
 * sending the others through the handle's buffered twin, each counted in
 * fsp_fs_direct_fallbacks, and closing both descriptors at release; and a
 * copy between the store and a passthrough file refused with EXDEV from
 * either side, as the emulated path's seek refuses what the kernel never
 * sends (both without touching a store).
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
#include <unistd.h>
#include <cmocka.h>
#include "fs/fuse/datapath.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static char dir[64], path[96], path2[96];
static struct fsp_fs *fs;

static int setup(void **state)
{
	(void)state;
	/* on disk: tmpfs may refuse O_DIRECT */
	if (test_dir_make(dir, sizeof(dir), "/var/tmp", "dp"))
		return -1;
	test_dir_path(path, sizeof(path), dir, "a");
	test_dir_path(path2, sizeof(path2), dir, "b");
	struct fsp_fs_opts opts;
	memset(&opts, 0, sizeof(opts));
	char err[256];
	fs = fsp_fs_new(dir, &opts, err, sizeof(err));
	return fs ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	fsp_fs_free(fs);
	fs = NULL;
	unlink(path);
	unlink(path2);
	return rmdir(dir);
}

/* A payload in memory, as libfuse hands over a WRITE's. */
static ssize_t write_mem(const struct fsp_datapath *dp, struct op *o, struct fuse_file_info *fi,
			 const void *data, size_t len, off_t off)
{
	struct fuse_bufvec in = FUSE_BUFVEC_INIT(len);
	in.buf[0].mem = (void *)data;
	size_t size = len;
	ssize_t r = dp->write_buf(o, NULL, NULL, fi, &in, &size, off);
	assert_int_equal(size, len);
	return r;
}

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

UNIT_TEST_SETUP(test_table, setup, teardown)
{
	(void)state;
	assert_ptr_equal(fsp_datapaths[FSP_DP_BUFFERED], &fsp_dp_buffered);
	assert_ptr_equal(fsp_datapaths[FSP_DP_DIRECT], &fsp_dp_direct);
	assert_ptr_equal(fsp_datapaths[FSP_DP_EMU], &fsp_dp_emu);
	const struct fsp_datapath *all[] = { &fsp_dp_buffered, &fsp_dp_direct, &fsp_dp_emu };
	for (size_t i = 0; i < 3; i++) {
		const struct fsp_datapath *dp = all[i];
		assert_non_null(dp->name);
		assert_true(dp->open && dp->read && dp->write_buf && dp->fsync && dp->fallocate &&
			    dp->copy_file_range && dp->lseek && dp->release && dp->abandon);
	}
	/* a handle names its path; its backing fd stays readable beside it */
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	fi.fh = 7;
	assert_ptr_equal(fh_path(&fi), &fsp_dp_buffered);
	fi.fh = 7 | FH_EMU;
	assert_ptr_equal(fh_path(&fi), &fsp_dp_emu);
	assert_int_equal(fh_fd(&fi), 7);
}

UNIT_TEST_SETUP(test_buffered, setup, teardown)
{
	(void)state;
	struct op o = { .fs = fs };
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	assert_int_equal(fsp_dp_buffered.open(&o, NULL, fd, O_RDWR, &fi.fh), 0);
	assert_ptr_equal(fh_path(&fi), &fsp_dp_buffered);
	assert_int_equal(fh_fd(&fi), fd);

	char data[1000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	assert_int_equal(write_mem(&fsp_dp_buffered, &o, &fi, data, sizeof(data), 8192),
			 sizeof(data));
	void *buf = NULL;
	assert_int_equal(fsp_dp_buffered.read(&o, NULL, &fi, sizeof(data), 8192, &buf),
			 sizeof(data));
	assert_memory_equal(buf, data, sizeof(data));
	/* short at the end, and -errno from the backing call */
	assert_int_equal(fsp_dp_buffered.read(&o, NULL, &fi, 4096, 9000, &buf), 192);
	assert_int_equal(fsp_dp_buffered.lseek(&o, &fi, 0, SEEK_DATA) >= 0, 1);
	assert_int_equal(fsp_dp_buffered.lseek(&o, &fi, 1 << 20, SEEK_DATA), -ENXIO);
	assert_int_equal(fsp_dp_buffered.fallocate(&o, NULL, &fi, 0, 0, 65536), 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 65536);
	assert_int_equal(fsp_dp_buffered.fsync(&o, NULL, &fi, 1), 0);

	int fd2 = open(path2, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	assert_true(fd2 >= 0);
	struct fuse_file_info fi2;
	memset(&fi2, 0, sizeof(fi2));
	assert_int_equal(fsp_dp_buffered.open(&o, NULL, fd2, O_RDWR, &fi2.fh), 0);
	assert_int_equal(fsp_dp_buffered.copy_file_range(&o, NULL, &fi, 8192, NULL, &fi2, 0,
							 sizeof(data), 0), sizeof(data));
	assert_int_equal(fsp_dp_buffered.read(&o, NULL, &fi2, sizeof(data), 0, &buf),
			 sizeof(data));
	assert_memory_equal(buf, data, sizeof(data));

	fsp_dp_buffered.release(&o, NULL, &fi2);
	fsp_dp_buffered.release(&o, NULL, &fi);
	assert_false(fd_open(fd));
	assert_false(fd_open(fd2));
	assert_int_equal(fsp_fs_direct_fallbacks(fs), 0);
}

UNIT_TEST_SETUP(test_direct, setup, teardown)
{
	(void)state;
	struct op o = { .fs = fs };
	int wfd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	assert_true(wfd >= 0);
	static char want[65536];
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (char)(i * 13 + (i >> 9));
	assert_int_equal(pwrite(wfd, want, sizeof(want), 0), sizeof(want));
	assert_int_equal(fsync(wfd), 0);
	close(wfd);
	int fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		skip(); /* no O_DIRECT on this file system */
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	assert_int_equal(fsp_dp_direct.open(&o, NULL, fd, O_RDWR | O_DIRECT, &fi.fh), 0);
	assert_ptr_equal(fh_path(&fi), &fsp_dp_direct);
	assert_int_equal(fh_fd(&fi), fd);
	int twin = (int)(fi.fh >> FH_TWIN_SHIFT);
	assert_true(twin != fd && fd_open(twin));
	assert_int_equal(fcntl(twin, F_GETFL) & O_DIRECT, 0);

	/* aligned: the direct descriptor (no aio: synchronously here) */
	void *buf = NULL;
	assert_int_equal(fsp_dp_direct.read(&o, NULL, &fi, 4096, 8192, &buf), 4096);
	assert_memory_equal(buf, want + 8192, 4096);
	assert_int_equal(fsp_fs_direct_fallbacks(fs), 0);
	/* off the alignment: the buffered twin, counted */
	assert_int_equal(fsp_dp_direct.read(&o, NULL, &fi, 100, 4097, &buf), 100);
	assert_memory_equal(buf, want + 4097, 100);
	assert_int_equal(fsp_fs_direct_fallbacks(fs), 1);

	char data[4096];
	memset(data, 0x5a, sizeof(data));
	assert_int_equal(write_mem(&fsp_dp_direct, &o, &fi, data, 4096, 0), 4096);
	assert_int_equal(fsp_fs_direct_fallbacks(fs), 1);
	assert_int_equal(write_mem(&fsp_dp_direct, &o, &fi, data, 1000, 20001), 1000);
	assert_int_equal(fsp_fs_direct_fallbacks(fs), 2);
	memcpy(want, data, 4096);
	memcpy(want + 20001, data, 1000);
	int rfd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(rfd >= 0);
	static char got[65536];
	assert_int_equal(pread(rfd, got, sizeof(got), 0), sizeof(got));
	close(rfd);
	assert_memory_equal(got, want, sizeof(want));

	fsp_dp_direct.release(&o, NULL, &fi);
	assert_false(fd_open(fd));
	assert_false(fd_open(twin));
}

UNIT_TEST_SETUP(test_across_paths, setup, teardown)
{
	(void)state;
	struct op o = { .fs = fs };
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	struct fuse_file_info pt, emu;
	memset(&pt, 0, sizeof(pt));
	memset(&emu, 0, sizeof(emu));
	assert_int_equal(fsp_dp_buffered.open(&o, NULL, fd, O_RDWR, &pt.fh), 0);
	emu.fh = (uint64_t)(uint32_t)fd | FH_EMU; /* no store: only what is refused first */
	assert_int_equal(fsp_dp_buffered.copy_file_range(&o, NULL, &emu, 0, NULL, &pt, 0, 10, 0),
			 -EXDEV);
	assert_int_equal(fsp_dp_direct.copy_file_range(&o, NULL, &emu, 0, NULL, &pt, 0, 10, 0),
			 -EXDEV);
	assert_int_equal(fsp_dp_emu.copy_file_range(&o, NULL, &pt, 0, NULL, &emu, 0, 10, 0),
			 -EXDEV);
	assert_int_equal(fsp_dp_emu.lseek(&o, &emu, 0, SEEK_SET), -EINVAL);
	assert_int_equal(fsp_dp_emu.lseek(&o, &emu, -1, SEEK_DATA), -ENXIO);
	fsp_dp_buffered.release(&o, NULL, &pt);
}

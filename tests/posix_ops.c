/*
 * posix_ops.c - a POSIX-semantics exerciser for comparing file systems.
 *
 * `posix_ops DIR` runs a fixed sequence of operations inside DIR (which
 * must be empty) and prints one deterministic line per operation,
 * "name -> result": "ok", an errno name, or a value that does not depend on
 * inode numbers, device ids or the current time. Run it on a backing
 * directory and on an fsprism mount of an identical one: the outputs must
 * be identical. Needs root (it switches to other user ids in children).
 *
 * `posix_ops --rename2 noreplace|exchange OLD NEW` does one renameat2() and
 * prints "ok" or the errno name (for shell tests).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static int dirfd_g = -1;

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static void out(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void out(const char *name, const char *fmt, ...)
{
	va_list ap;
	printf("%s -> ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Print ok or the errno of a call returning < 0 on failure. */
static long res(const char *name, long r)
{
	if (r < 0)
		out(name, "%s", ename(errno));
	else
		out(name, "ok");
	return r;
}

/* Print the value or the errno. */
static long val(const char *name, long r)
{
	if (r < 0)
		out(name, "%s", ename(errno));
	else
		out(name, "%ld", r);
	return r;
}

/* A misaligned O_DIRECT call: the backing file system refuses it (EINVAL),
 * an fsprism mount serves it through its buffered fallback (docs/fuse.md,
 * "O_DIRECT"; tests/it_datapath.sh checks the data). Either prints alike. */
static long val_misaligned(const char *name, long r, long full)
{
	if ((r < 0 && errno == EINVAL) || r == full)
		out(name, "EINVAL or %ld", full);
	else
		val(name, r);
	return r;
}

static void put_file(const char *path, const char *data, mode_t mode)
{
	int fd = openat(dirfd_g, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, data, strlen(data)) < 0) {
		perror(path);
		exit(2);
	}
	close(fd);
}

/* Create path (O_CREAT | O_WRONLY, mode): print ok or the errno, and close it. */
static void create(const char *name, const char *path, mode_t mode)
{
	int fd = openat(dirfd_g, path, O_CREAT | O_WRONLY, mode);
	res(name, fd);
	close(fd);
}

static void show_stat(const char *name, const char *path)
{
	struct stat st;
	if (fstatat(dirfd_g, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		out(name, "%s", ename(errno));
		return;
	}
	const char *type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir" :
			   S_ISLNK(st.st_mode) ? "symlink" : S_ISFIFO(st.st_mode) ? "fifo" : "other";
	out(name, "%s mode=%04o uid=%u gid=%u size=%lld nlink=%lu", type,
	    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid,
	    S_ISDIR(st.st_mode) ? 0LL : (long long)st.st_size, (unsigned long)st.st_nlink);
}

static void show_content(const char *name, const char *path)
{
	char buf[256];
	int fd = openat(dirfd_g, path, O_RDONLY);
	if (fd < 0) {
		out(name, "%s", ename(errno));
		return;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		out(name, "%s", ename(errno));
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = '0';
	buf[n] = '\0';
	out(name, "'%s'", buf);
}

/* Run fn in a child with the given credentials; wait for it. */
static void as_user(uid_t uid, gid_t gid, int ngroups, const gid_t *groups,
		    void (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups((size_t)ngroups, groups) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0) {
			perror("credentials");
			_exit(2);
		}
		umask(022);
		fn();
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
}

/* ---- root, single process ---- */

static void basic_names(void)
{
	res("create f1 O_EXCL", openat(dirfd_g, "f1", O_CREAT | O_EXCL | O_WRONLY, 0644));
	res("create f1 O_EXCL again", openat(dirfd_g, "f1", O_CREAT | O_EXCL | O_WRONLY, 0644));
	res("open missing", openat(dirfd_g, "missing", O_RDONLY));
	res("open missing/x", openat(dirfd_g, "missing/x", O_RDONLY));
	res("open f1/x", openat(dirfd_g, "f1/x", O_RDONLY));
	res("mkdir d1", mkdirat(dirfd_g, "d1", 0755));
	res("mkdir d1 again", mkdirat(dirfd_g, "d1", 0755));
	put_file("d1/inner", "x", 0644);
	res("rmdir d1 non-empty", unlinkat(dirfd_g, "d1", AT_REMOVEDIR));
	res("unlink d1 (a dir)", unlinkat(dirfd_g, "d1", 0));
	res("rmdir f1 (a file)", unlinkat(dirfd_g, "f1", AT_REMOVEDIR));
	res("mkdir d2", mkdirat(dirfd_g, "d2", 0700));
	res("rename d1 over file f1", renameat(dirfd_g, "d1", dirfd_g, "f1"));
	res("rename f1 over dir d2", renameat(dirfd_g, "f1", dirfd_g, "d2"));
	res("rename d2 over non-empty d1", renameat(dirfd_g, "d2", dirfd_g, "d1"));
	res("rename d1 into itself", renameat(dirfd_g, "d1", dirfd_g, "d1/sub"));
	put_file("f2", "two", 0644);
	res("rename NOREPLACE f1->f2", renameat2(dirfd_g, "f1", dirfd_g, "f2", RENAME_NOREPLACE));
	res("rename NOREPLACE f1->f3", renameat2(dirfd_g, "f1", dirfd_g, "f3", RENAME_NOREPLACE));
	res("rename EXCHANGE f3<->d2", renameat2(dirfd_g, "f3", dirfd_g, "d2", RENAME_EXCHANGE));
	show_stat("stat f3 after exchange", "f3");
	show_stat("stat d2 after exchange", "d2");
	res("rename EXCHANGE with missing", renameat2(dirfd_g, "f3", dirfd_g, "nope", RENAME_EXCHANGE));
	res("rename plain d2->f1", renameat(dirfd_g, "d2", dirfd_g, "f1"));
	res("rename f2 over f1", renameat(dirfd_g, "f2", dirfd_g, "f1"));
	show_content("f1 content", "f1");
	res("stat f2 after rename", faccessat(dirfd_g, "f2", F_OK, 0));
	res("link d1 (a dir)", linkat(dirfd_g, "d1", dirfd_g, "d1link", 0));
	res("link f1 f1link", linkat(dirfd_g, "f1", dirfd_g, "f1link", 0));
	res("link f1 over existing", linkat(dirfd_g, "f1", dirfd_g, "f1link", 0));
	show_stat("stat f1 after link", "f1");
	res("unlink f1link", unlinkat(dirfd_g, "f1link", 0));
	show_stat("stat f1 after unlink link", "f1");
	res("symlink l1->l2", symlinkat("l2", dirfd_g, "l1"));
	res("symlink l2->l1", symlinkat("l1", dirfd_g, "l2"));
	res("open symlink loop", openat(dirfd_g, "l1", O_RDONLY));
	res("open O_NOFOLLOW symlink", openat(dirfd_g, "l1", O_RDONLY | O_NOFOLLOW));
	char buf[64];
	ssize_t n = readlinkat(dirfd_g, "l1", buf, sizeof(buf));
	if (n >= 0)
		out("readlink l1", "'%.*s'", (int)n, buf);
	else
		out("readlink l1", "%s", ename(errno));
	res("readlink f1 (not a link)", readlinkat(dirfd_g, "f1", buf, sizeof(buf)));
	res("symlink dangling", symlinkat("does/not/exist", dirfd_g, "dang"));
	res("open dangling", openat(dirfd_g, "dang", O_RDONLY));
	show_stat("lstat dangling", "dang");
	res("mkfifo", mkfifoat(dirfd_g, "fifo", 0640));
	show_stat("stat fifo", "fifo");
	res("mknod regular", mknodat(dirfd_g, "mkn", S_IFREG | 0600, 0));
	show_stat("stat mknod regular", "mkn");
	res("mkdir name too long", mkdirat(dirfd_g,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0755));
}

static off_t fsize(const char *path)
{
	struct stat st;
	if (fstatat(dirfd_g, path, &st, 0) < 0)
		return -1;
	return st.st_size;
}

static void sizes_and_attrs(void)
{
	put_file("t", "hello", 0644);
	int fd = openat(dirfd_g, "t", O_RDWR);
	res("ftruncate grow 10000", ftruncate(fd, 10000));
	val("size after grow", fsize("t"));
	char c = 'x';
	val("pread hole byte", pread(fd, &c, 1, 5000));
	out("hole byte value", "%d", c);
	res("ftruncate shrink 3", ftruncate(fd, 3));
	close(fd);
	show_content("content after shrink", "t");
	res("truncate path to 2", truncate("t", 2)); /* relative to cwd = DIR */
	show_content("content after truncate", "t");
	res("truncate a dir", truncate("d1", 0));
	res("ftruncate O_RDONLY fd", ({ int f = openat(dirfd_g, "t", O_RDONLY);
		int r = ftruncate(f, 0); int e = errno; close(f); errno = e; r; }));
	res("chmod 0600", fchmodat(dirfd_g, "t", 0600, 0));
	show_stat("stat after chmod", "t");
	res("chmod 04755", fchmodat(dirfd_g, "t", 04755, 0));
	show_stat("stat after chmod suid", "t");
	res("chown 1000:1000", fchownat(dirfd_g, "t", 1000, 1000, 0));
	show_stat("stat after chown (suid cleared?)", "t");
	res("chown -1:1001", fchownat(dirfd_g, "t", (uid_t)-1, 1001, 0));
	show_stat("stat after chgrp", "t");
	res("lchown symlink", fchownat(dirfd_g, "l1", 1002, 1002, AT_SYMLINK_NOFOLLOW));
	show_stat("lstat symlink after lchown", "l1");

	/* times: exact values we set are deterministic; NOW only as relations */
	struct timespec tv[2] = { { 1000000000, 123456789 }, { 1200000000, 987654321 } };
	res("utimensat fixed", utimensat(dirfd_g, "t", tv, 0));
	struct stat st;
	fstatat(dirfd_g, "t", &st, 0);
	out("times after fixed", "atime=%lld.%09ld mtime=%lld.%09ld",
	    (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	struct timespec tv2[2] = { { 0, UTIME_OMIT }, { 1300000000, 0 } };
	res("utimensat OMIT atime", utimensat(dirfd_g, "t", tv2, 0));
	fstatat(dirfd_g, "t", &st, 0);
	out("times after OMIT", "atime=%lld mtime=%lld", (long long)st.st_atim.tv_sec,
	    (long long)st.st_mtim.tv_sec);
	time_t before = time(NULL);
	struct timespec tv3[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	res("utimensat NOW atime", utimensat(dirfd_g, "t", tv3, 0));
	fstatat(dirfd_g, "t", &st, 0);
	out("atime now >= before", "%d", st.st_atim.tv_sec >= before - 1);
	out("mtime kept", "%lld", (long long)st.st_mtim.tv_sec);
	struct timespec ctime_before = st.st_ctim;
	res("utimensat NULL (both now)", utimensat(dirfd_g, "t", NULL, 0));
	fstatat(dirfd_g, "t", &st, 0);
	out("mtime now >= before", "%d", st.st_mtim.tv_sec >= before - 1);
	out("ctime advanced or equal", "%d",
	    st.st_ctim.tv_sec > ctime_before.tv_sec ||
	    (st.st_ctim.tv_sec == ctime_before.tv_sec && st.st_ctim.tv_nsec >= ctime_before.tv_nsec));
	struct timespec tv4[2] = { { 1000, 0 }, { 2000, 0 } };
	res("utimensat symlink nofollow", utimensat(dirfd_g, "l1", tv4, AT_SYMLINK_NOFOLLOW));
	fstatat(dirfd_g, "l1", &st, AT_SYMLINK_NOFOLLOW);
	out("symlink mtime", "%lld", (long long)st.st_mtim.tv_sec);
	res("utimensat invalid nsec", ({ struct timespec b[2] = { { 0, 2000000000 }, { 0, 0 } };
		utimensat(dirfd_g, "t", b, 0); }));
}

static void xattrs(void)
{
	char buf[64];
	put_file("x", "data", 0644);
	res("getxattr missing", getxattr("x", "user.a", buf, sizeof(buf)));
	res("setxattr user.a", setxattr("x", "user.a", "v1", 2, 0));
	res("setxattr CREATE existing", setxattr("x", "user.a", "v2", 2, XATTR_CREATE));
	res("setxattr REPLACE missing", setxattr("x", "user.b", "v2", 2, XATTR_REPLACE));
	res("setxattr REPLACE existing", setxattr("x", "user.a", "value-2", 7, XATTR_REPLACE));
	val("getxattr size query", getxattr("x", "user.a", NULL, 0));
	res("getxattr small buffer", getxattr("x", "user.a", buf, 1));
	ssize_t n = getxattr("x", "user.a", buf, sizeof(buf));
	if (n >= 0)
		out("getxattr value", "'%.*s'", (int)n, buf);
	else
		out("getxattr value", "%s", ename(errno));
	res("setxattr empty value", setxattr("x", "user.empty", "", 0, 0));
	val("getxattr empty", getxattr("x", "user.empty", buf, sizeof(buf)));
	res("setxattr bad namespace", setxattr("x", "bogus.a", "v", 1, 0));
	res("setxattr user. on symlink", setxattr("l1", "user.a", "v", 1, 0)); /* follows loop */
	res("lsetxattr user. on symlink", lsetxattr("dang", "user.a", "v", 1, 0));
	char list[512];
	n = listxattr("x", list, sizeof(list));
	if (n < 0) {
		out("listxattr", "%s", ename(errno));
	} else {
		/* only user.* names; other namespaces (security.*) vary by setup */
		char names[512] = "";
		for (char *p = list; p < list + n; p += strlen(p) + 1)
			if (!strncmp(p, "user.", 5)) {
				strcat(names, p);
				strcat(names, " ");
			}
		out("listxattr user.*", "%s", names);
	}
	res("listxattr small buffer", listxattr("x", list, 1));
	res("removexattr user.a", removexattr("x", "user.a"));
	res("removexattr again", removexattr("x", "user.a"));
	res("getxattr after remove", getxattr("x", "user.a", buf, sizeof(buf)));
	res("setxattr trusted.t", setxattr("x", "trusted.t", "tv", 2, 0));
	val("getxattr trusted.t", getxattr("x", "trusted.t", buf, sizeof(buf)));
	res("setxattr on dir", setxattr("d1", "user.d", "dv", 2, 0));
	val("getxattr on dir", getxattr("d1", "user.d", buf, sizeof(buf)));
}

static void sparse_and_ranges(void)
{
	static char blk[4096];
	memset(blk, 'S', sizeof(blk));
	int fd = openat(dirfd_g, "sparse", O_RDWR | O_CREAT | O_TRUNC, 0644);
	val("pwrite 4k at 0", pwrite(fd, blk, 4096, 0));
	val("pwrite 4k at 1M", pwrite(fd, blk, 4096, 1 << 20));
	fsync(fd);
	val("SEEK_DATA from 4096", lseek(fd, 4096, SEEK_DATA));
	val("SEEK_HOLE from 0", lseek(fd, 0, SEEK_HOLE));
	val("SEEK_HOLE from 1M", lseek(fd, 1 << 20, SEEK_HOLE));
	val("SEEK_DATA past EOF", lseek(fd, (1 << 20) + 8192, SEEK_DATA));
	val("SEEK_END", lseek(fd, 0, SEEK_END));
	res("fallocate 64k at 2M", fallocate(fd, 0, 2 << 20, 65536));
	val("size after fallocate", fsize("sparse"));
	res("fallocate KEEP_SIZE 64k at 4M", fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 << 20, 65536));
	val("size after KEEP_SIZE", fsize("sparse"));
	res("fallocate PUNCH_HOLE|KEEP_SIZE 0..4096",
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
	char c = 'x';
	val("read punched byte", pread(fd, &c, 1, 100));
	out("punched byte value", "%d", c);
	val("size after punch", fsize("sparse"));
	res("fallocate PUNCH_HOLE without KEEP_SIZE", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096));
	res("fallocate ZERO_RANGE", fallocate(fd, FALLOC_FL_ZERO_RANGE, 1 << 20, 4096));
	res("fallocate bad len", fallocate(fd, 0, 0, 0));
	val("SEEK_DATA from 0 after punch", lseek(fd, 0, SEEK_DATA));

	/* copy_file_range */
	int dst = openat(dirfd_g, "copy", O_RDWR | O_CREAT | O_TRUNC, 0644);
	pwrite(fd, blk, 4096, 0);
	loff_t in = 0, outoff = 100;
	val("copy_file_range 4096", copy_file_range(fd, &in, dst, &outoff, 4096, 0));
	out("copy offsets advanced", "in=%lld out=%lld", (long long)in, (long long)outoff);
	val("copy size", fsize("copy"));
	char b2[4096];
	val("copy read back", pread(dst, b2, 4096, 100));
	out("copy content equal", "%d", !memcmp(b2, blk, 4096));
	loff_t in2 = 10 << 20;
	val("copy_file_range past EOF", copy_file_range(fd, &in2, dst, NULL, 4096, 0));
	res("copy_file_range bad flags", copy_file_range(fd, NULL, dst, NULL, 10, 99));
	close(dst);
	close(fd);
}

static void open_flags(void)
{
	put_file("ap", "123", 0644);
	int fd = openat(dirfd_g, "ap", O_WRONLY | O_APPEND);
	val("O_APPEND write", write(fd, "abc", 3));
	val("O_APPEND pwrite at 0", pwrite(fd, "Z", 1, 0)); /* Linux appends anyway */
	close(fd);
	show_content("content after O_APPEND", "ap");
	fd = openat(dirfd_g, "ap", O_WRONLY | O_TRUNC);
	val("size after O_TRUNC", fsize("ap"));
	close(fd);
	res("open dir O_WRONLY", openat(dirfd_g, "d1", O_WRONLY));
	res("open file O_DIRECTORY", openat(dirfd_g, "ap", O_RDONLY | O_DIRECTORY));
	res("open O_CREAT on dir", openat(dirfd_g, "d1", O_CREAT | O_WRONLY, 0644));

	/* O_DIRECT: aligned buffers; misaligned offsets/lengths: refused by the
	 * backing fs, served by the mount */
	void *abuf;
	if (posix_memalign(&abuf, 4096, 65536))
		exit(2);
	memset(abuf, 'D', 65536);
	fd = openat(dirfd_g, "direct", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0) {
		out("open O_DIRECT", "%s", ename(errno));
	} else {
		out("open O_DIRECT", "ok");
		val("O_DIRECT write 4k@0", pwrite(fd, abuf, 4096, 0));
		val("O_DIRECT write 64k@4096", pwrite(fd, abuf, 65536, 4096));
		val("O_DIRECT write 512@8192", pwrite(fd, abuf, 512, 8192));
		val_misaligned("O_DIRECT write 4k@1", pwrite(fd, abuf, 4096, 1), 4096);
		val_misaligned("O_DIRECT write 100@0", pwrite(fd, abuf, 100, 0), 100);
		val("O_DIRECT read 4k@0", pread(fd, abuf, 4096, 0));
		val_misaligned("O_DIRECT read 4k@3", pread(fd, abuf, 4096, 3), 4096);
		val("O_DIRECT read 64k@65536 (short at EOF)", pread(fd, abuf, 65536, 65536));
		val("O_DIRECT read past EOF", pread(fd, abuf, 4096, 1 << 20));
		close(fd);
	}
	val("O_DIRECT file size", fsize("direct"));
	free(abuf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void listing(void)
{
	res("mkdir list", mkdirat(dirfd_g, "list", 0755));
	char name[64];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "list/entry-%03d-with-a-longish-name", i);
		put_file(name, "", 0644);
	}
	int fd = openat(dirfd_g, "list", O_RDONLY | O_DIRECTORY);
	DIR *d = fdopendir(fd);
	char *names[400];
	int n = 0, types_ok = 1;
	struct dirent *e;
	while ((e = readdir(d)) && n < 400) {
		names[n++] = strdup(e->d_name);
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && e->d_type != DT_REG &&
		    e->d_type != DT_UNKNOWN)
			types_ok = 0;
	}
	qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
	out("readdir count", "%d", n);
	out("readdir first", "%s %s %s", names[0], names[1], names[2]);
	out("readdir last", "%s", names[n - 1]);
	out("readdir d_type regular", "%d", types_ok);
	/* rewind and telldir/seekdir */
	rewinddir(d);
	int again = 0;
	while (readdir(d))
		again++;
	out("readdir after rewind", "%d", again);
	for (int i = 0; i < n; i++)
		free(names[i]);
	closedir(d);
	res("rmdir list non-empty", unlinkat(dirfd_g, "list", AT_REMOVEDIR));

	struct statvfs sv;
	res("statvfs", statvfs(".", &sv));
	out("statvfs sane", "bsize>0:%d blocks>=bfree:%d bfree>=bavail:%d namemax=%lu",
	    sv.f_bsize > 0, sv.f_blocks >= sv.f_bfree, sv.f_bfree >= sv.f_bavail,
	    (unsigned long)sv.f_namemax);
}

static void open_files(void)
{
	char buf[16];
	put_file("uo", "still here", 0644);
	int fd = openat(dirfd_g, "uo", O_RDWR);
	res("unlink open file", unlinkat(dirfd_g, "uo", 0));
	struct stat st;
	fstat(fd, &st);
	out("fstat after unlink", "nlink=%lu size=%lld", (unsigned long)st.st_nlink,
	    (long long)st.st_size);
	ssize_t n = pread(fd, buf, 10, 0);
	out("read after unlink", "%zd '%.*s'", n, n > 0 ? (int)n : 0, buf);
	val("write after unlink", pwrite(fd, "X", 1, 0));
	res("ftruncate after unlink", ftruncate(fd, 4));
	fstat(fd, &st);
	out("size after ftruncate of unlinked", "%lld", (long long)st.st_size);
	close(fd);

	put_file("ro1", "old", 0644);
	put_file("ro2", "new", 0644);
	fd = openat(dirfd_g, "ro1", O_RDONLY);
	res("rename over an open file", renameat(dirfd_g, "ro2", dirfd_g, "ro1"));
	n = pread(fd, buf, 3, 0);
	out("open fd still reads the old file", "'%.*s'", n > 0 ? (int)n : 0, buf);
	close(fd);
	show_content("name now has the new file", "ro1");

	fd = openat(dirfd_g, "d1", O_RDONLY | O_DIRECTORY);
	res("fchmod a directory fd", fchmod(fd, 0750));
	struct timespec tv[2] = { { 3000, 0 }, { 4000, 0 } };
	res("futimens a directory fd", futimens(fd, tv));
	res("fsync a directory fd", fsync(fd));
	res("fdatasync a directory fd", fdatasync(fd));
	close(fd);
	fstatat(dirfd_g, "d1", &st, 0);
	out("dir after fchmod/futimens", "mode=%04o mtime=%lld", (unsigned)(st.st_mode & 07777),
	    (long long)st.st_mtim.tv_sec);

	put_file("mm", "0123456789abcdef", 0644);
	fd = openat(dirfd_g, "mm", O_RDWR);
	char *p = mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		out("mmap shared", "%s", ename(errno));
	} else {
		out("mmap shared", "ok");
		memcpy(p, "MMAP", 4);
		res("msync", msync(p, 16, MS_SYNC));
		munmap(p, 16);
	}
	close(fd);
	show_content("content after mmap write", "mm");
}

/* ---- locks between two processes ---- */

static void wait_child(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
}

static void locks(void)
{
	put_file("lk", "0123456789", 0644);
	int p2c[2], c2p[2];
	char tok;
	if (pipe(p2c) < 0 || pipe(c2p) < 0)
		exit(2);

	/* flock: per open file description */
	int fd = openat(dirfd_g, "lk", O_RDWR);
	res("flock EX parent", flock(fd, LOCK_EX));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int cfd = openat(dirfd_g, "lk", O_RDWR);
		res("child flock EX NB (held)", flock(cfd, LOCK_EX | LOCK_NB));
		res("child flock SH NB (held)", flock(cfd, LOCK_SH | LOCK_NB));
		fflush(stdout);
		write(c2p[1], "a", 1);
		read(p2c[0], &tok, 1); /* parent unlocked */
		res("child flock EX NB (free)", flock(cfd, LOCK_EX | LOCK_NB));
		fflush(stdout);
		_exit(0);
	}
	read(c2p[0], &tok, 1);
	res("flock UN parent", flock(fd, LOCK_UN));
	fflush(stdout);
	write(p2c[1], "b", 1);
	wait_child(pid);
	/* The child's flock goes with its last close. Through FUSE the kernel
	 * sends that RELEASE (with the flock unlock) asynchronously after the
	 * process is gone, so allow it up to a second to arrive. */
	int frc = flock(fd, LOCK_SH | LOCK_NB);
	for (int i = 0; i < 100 && frc < 0 && errno == EWOULDBLOCK; i++) {
		usleep(10000);
		frc = flock(fd, LOCK_SH | LOCK_NB);
	}
	res("parent flock SH NB (child exited)", frc);
	flock(fd, LOCK_UN);

	/* fcntl (POSIX) locks: per process; any close releases them */
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	res("parent F_SETLK WR 0..100", fcntl(fd, F_SETLK, &fl));
	int fd2 = openat(dirfd_g, "lk", O_RDWR);
	struct flock fl2 = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 10 };
	res("parent second fd overlapping (same owner)", fcntl(fd2, F_SETLK, &fl2));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int cfd = openat(dirfd_g, "lk", O_RDWR);
		struct flock c = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 10 };
		res("child F_SETLK WR 50..60 (held)", fcntl(cfd, F_SETLK, &c));
		c.l_type = F_RDLCK;
		res("child F_SETLK RD 50..60 (held)", fcntl(cfd, F_SETLK, &c));
		struct flock g = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = 5 };
		res("child F_GETLK 10..15", fcntl(cfd, F_GETLK, &g));
		out("child F_GETLK result", "type=%s start=%lld len=%lld",
		    g.l_type == F_WRLCK ? "WR" : g.l_type == F_RDLCK ? "RD" : "UN",
		    (long long)g.l_start, (long long)g.l_len);
		struct flock f3 = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 10 };
		res("child F_SETLK WR 200..210 (free)", fcntl(cfd, F_SETLK, &f3));
		struct flock g2 = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 1 };
		res("child F_GETLK own range", fcntl(cfd, F_GETLK, &g2));
		out("child F_GETLK own result", "type=%s", g2.l_type == F_UNLCK ? "UN" : "locked");
		fflush(stdout);
		write(c2p[1], "c", 1);
		read(p2c[0], &tok, 1); /* parent closed fd2 */
		c.l_type = F_WRLCK;
		res("child F_SETLK WR 50..60 after parent close", fcntl(cfd, F_SETLK, &c));
		fflush(stdout);
		write(c2p[1], "d", 1);
		read(p2c[0], &tok, 1);
		_exit(0);
	}
	read(c2p[0], &tok, 1);
	struct flock pg = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 5 };
	res("parent F_GETLK 200..205", fcntl(fd, F_GETLK, &pg));
	out("parent F_GETLK result", "type=%s start=%lld len=%lld",
	    pg.l_type == F_WRLCK ? "WR" : pg.l_type == F_RDLCK ? "RD" : "UN",
	    (long long)pg.l_start, (long long)pg.l_len);
	res("close second fd (drops all parent locks)", close(fd2));
	fflush(stdout);
	write(p2c[1], "e", 1);
	read(c2p[0], &tok, 1);
	struct flock pl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 55, .l_len = 1 };
	res("parent F_SETLK 55 (child holds)", fcntl(fd, F_SETLK, &pl));
	fflush(stdout);
	write(p2c[1], "f", 1);
	wait_child(pid);
	res("parent F_SETLK 55 (child exited)", fcntl(fd, F_SETLK, &pl));
	pl.l_type = F_UNLCK;
	res("parent F_UNLCK", fcntl(fd, F_SETLK, &pl));
	int rfd = openat(dirfd_g, "lk", O_RDONLY);
	struct flock wl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	res("F_SETLK WR on O_RDONLY fd", fcntl(rfd, F_SETLK, &wl));
	close(rfd);
	close(fd);
	close(p2c[0]); close(p2c[1]); close(c2p[0]); close(c2p[1]);
}

/*
 * More lockers waiting at once than a mount has worker threads (2 by
 * default): each blocking flock and F_SETLKW waits while the holder keeps
 * the lock, and every one of them gets it once the holder lets go. A server
 * whose workers sat in those waits would have none left for the release.
 */
#define WAITERS 6
static void lock_waiters(void)
{
	put_file("lkw", "0123456789", 0644);
	int fd = openat(dirfd_g, "lkw", O_RDWR);
	struct flock all = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	res("holder flock EX", flock(fd, LOCK_EX));
	res("holder F_SETLK WR", fcntl(fd, F_SETLK, &all));
	pid_t kids[2 * WAITERS];
	for (int i = 0; i < 2 * WAITERS; i++) {
		fflush(stdout);
		kids[i] = fork();
		if (kids[i] == 0) {
			alarm(30); /* a hung server fails the count below */
			int cfd = openat(dirfd_g, "lkw", O_RDWR);
			int r;
			if (i < WAITERS) {
				r = flock(cfd, LOCK_EX);
				if (r == 0)
					r = flock(cfd, LOCK_UN);
			} else {
				struct flock w = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
				r = fcntl(cfd, F_SETLKW, &w);
				w.l_type = F_UNLCK;
				if (r == 0)
					r = fcntl(cfd, F_SETLK, &w);
			}
			_exit(r == 0 ? 0 : 1);
		}
	}
	usleep(300 * 1000); /* most are waiting by now; the rest will */
	int early = 0;
	for (int i = 0; i < 2 * WAITERS; i++)
		early += waitpid(kids[i], NULL, WNOHANG) != 0;
	out("lock waiters done while the lock is held", "%d", early);
	all.l_type = F_UNLCK;
	res("holder F_UNLCK", fcntl(fd, F_SETLK, &all));
	res("holder flock UN", flock(fd, LOCK_UN));
	int got = 0;
	for (int i = 0; i < 2 * WAITERS; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			got++;
	}
	out("lock waiters that got the lock after the release", "%d of %d", got, 2 * WAITERS);
	close(fd);
}

/* ---- other users ---- */

static void setup_users(void)
{
	mkdirat(dirfd_g, "shared", 0755);
	fchownat(dirfd_g, "shared", 1001, 1001, 0);
	put_file("shared/own1001", "data", 0644);
	fchownat(dirfd_g, "shared/own1001", 1001, 1001, 0);
	put_file("shared/priv1001", "secret", 0600);
	fchownat(dirfd_g, "shared/priv1001", 1001, 1001, 0);
	mkdirat(dirfd_g, "mine", 0755);
	fchownat(dirfd_g, "mine", 1000, 1000, 0);
	put_file("mine/f", "mine", 0644);
	fchownat(dirfd_g, "mine/f", 1000, 1000, 0);
	mkdirat(dirfd_g, "sticky", 0777);
	fchmodat(dirfd_g, "sticky", 01777, 0);
	mkdirat(dirfd_g, "sgid", 0775);
	fchownat(dirfd_g, "sgid", 0, 2000, 0);
	fchmodat(dirfd_g, "sgid", 02775, 0);
	mkdirat(dirfd_g, "sgid_open", 0777);
	fchownat(dirfd_g, "sgid_open", 0, 2000, 0);
	fchmodat(dirfd_g, "sgid_open", 02777, 0);
	put_file("grpfile", "group data", 0640);
	fchownat(dirfd_g, "grpfile", 0, 3000, 0);
	put_file("suidf", "suid", 0777);
	fchmodat(dirfd_g, "suidf", 06777, 0);
	show_stat("setup suidf", "suidf");
	show_stat("setup sgid dir", "sgid");
}

static void user_a(void) /* uid 1000, groups {1000} */
{
	res("u1000 create in 0755 dir of 1001", openat(dirfd_g, "shared/x", O_CREAT | O_WRONLY, 0644));
	res("u1000 mkdir in 0755 dir of 1001", mkdirat(dirfd_g, "shared/d", 0755));
	res("u1000 unlink in 0755 dir of 1001", unlinkat(dirfd_g, "shared/own1001", 0));
	res("u1000 rename out of dir of 1001", renameat(dirfd_g, "shared/own1001", dirfd_g, "mine/stolen"));
	res("u1000 chmod file of 1001", fchmodat(dirfd_g, "shared/own1001", 0666, 0));
	res("u1000 chown own file to 1001", fchownat(dirfd_g, "mine/f", 1001, 1000, 0));
	res("u1000 chgrp own file to 2000 (not member)", fchownat(dirfd_g, "mine/f", (uid_t)-1, 2000, 0));
	res("u1000 read 0600 file of 1001", openat(dirfd_g, "shared/priv1001", O_RDONLY));
	res("u1000 write 0644 file of 1001", openat(dirfd_g, "shared/own1001", O_WRONLY));
	res("u1000 truncate 0644 file of 1001", truncate("shared/own1001", 0));
	res("u1000 utimensat NOW file of 1001", utimensat(dirfd_g, "shared/own1001", NULL, 0));
	struct timespec tv[2] = { { 5, 0 }, { 5, 0 } };
	res("u1000 utimensat fixed file of 1001", utimensat(dirfd_g, "shared/own1001", tv, 0));
	res("u1000 setxattr file of 1001", setxattr("shared/own1001", "user.u", "v", 1, 0));
	res("u1000 read group file (not member)", openat(dirfd_g, "grpfile", O_RDONLY));
	create("u1000 create own", "mine/new", 0666);
	show_stat("u1000 new file owner", "mine/new");
	res("u1000 mkdir own", mkdirat(dirfd_g, "mine/nd", 0777));
	show_stat("u1000 new dir owner", "mine/nd");
	res("u1000 symlink own", symlinkat("new", dirfd_g, "mine/sl"));
	show_stat("u1000 new symlink owner", "mine/sl");
	res("u1000 mkfifo own", mkfifoat(dirfd_g, "mine/ff", 0666));
	show_stat("u1000 new fifo owner", "mine/ff");
	res("u1000 mknod char dev", mknodat(dirfd_g, "mine/cdev", S_IFCHR | 0600, makedev(1, 3)));
	res("u1000 link to own", linkat(dirfd_g, "mine/new", dirfd_g, "mine/newlink", 0));
	show_stat("u1000 link nlink", "mine/new");
	res("u1000 chmod own 0600", fchmodat(dirfd_g, "mine/new", 0600, 0));
	res("u1000 utimensat fixed own", utimensat(dirfd_g, "mine/new", tv, 0));
	res("u1000 setxattr own", setxattr("mine/new", "user.u", "v", 1, 0));
	create("u1000 create in sticky dir", "sticky/a1000", 0644);
	create("u1000 create S_ISGID in setgid dir (not member)", "sgid_open/g", 02755);
	show_stat("u1000 file in setgid dir", "sgid_open/g");
	res("u1000 mkdir in setgid dir", mkdirat(dirfd_g, "sgid_open/sub", 0777));
	show_stat("u1000 dir in setgid dir", "sgid_open/sub");
	int fd = openat(dirfd_g, "suidf", O_WRONLY);
	res("u1000 open suid file for write", fd);
	val("u1000 write suid file", write(fd, "x", 1));
	close(fd);
	show_stat("suid/sgid cleared after write", "suidf");
}

static void user_b(void) /* uid 1001 */
{
	res("u1001 unlink other's file in sticky dir", unlinkat(dirfd_g, "sticky/a1000", 0));
	res("u1001 rename other's file in sticky dir", renameat(dirfd_g, "sticky/a1000", dirfd_g, "sticky/b"));
	create("u1001 create in sticky dir", "sticky/b1001", 0644);
	res("u1001 unlink own in sticky dir", unlinkat(dirfd_g, "sticky/b1001", 0));
	res("u1001 chmod own file", fchmodat(dirfd_g, "shared/own1001", 0640, 0));
	res("u1001 read own 0600", openat(dirfd_g, "shared/priv1001", O_RDONLY));
}

static void user_c(void) /* uid 1000, groups {1000, 2000, 3000} */
{
	res("u1000+g3000 read group file", openat(dirfd_g, "grpfile", O_RDONLY));
	res("u1000+g3000 write group file (0640)", openat(dirfd_g, "grpfile", O_WRONLY));
	res("u1000+g2000 chgrp own file to 3000", fchownat(dirfd_g, "mine/f", (uid_t)-1, 3000, 0));
	show_stat("chgrp result", "mine/f");
	create("u1000+g2000 create in setgid dir", "sgid/f", 0664);
	show_stat("file in setgid dir (member)", "sgid/f");
	create("u1000+g2000 create S_ISGID in setgid dir", "sgid/s", 02775);
	show_stat("S_ISGID file in setgid dir (member)", "sgid/s");
	res("u1000+g2000 mkdir in setgid dir", mkdirat(dirfd_g, "sgid/sub", 0775));
	show_stat("dir in setgid dir", "sgid/sub");
	res("u1000+g2000 chmod g+s own file (group 3000 member)", fchmodat(dirfd_g, "mine/f", 02644, 0));
	show_stat("chmod g+s result", "mine/f");
	res("u1000 unlink own in sticky dir", unlinkat(dirfd_g, "sticky/a1000", 0));
}

static void user_d(void) /* uid 1000, groups {1000}: chmod g+s on a file of foreign group */
{
	res("u1000 chmod g+s own file (group 3000, not member)", fchmodat(dirfd_g, "mine/f", 02644, 0));
	show_stat("chmod g+s result (not member)", "mine/f");
}

static void users(void)
{
	setup_users();
	static const gid_t g_a[] = { 1000 };
	static const gid_t g_b[] = { 1001 };
	static const gid_t g_c[] = { 1000, 2000, 3000 };
	as_user(1000, 1000, 1, g_a, user_a);
	as_user(1001, 1001, 1, g_b, user_b);
	as_user(1000, 1000, 3, g_c, user_c);
	as_user(1000, 1000, 1, g_a, user_d);
}

int main(int argc, char **argv)
{
	/* posix_ops --rename2 noreplace|exchange OLD NEW: one renameat2() */
	if (argc == 5 && !strcmp(argv[1], "--rename2")) {
		unsigned flags = !strcmp(argv[2], "exchange") ? RENAME_EXCHANGE : RENAME_NOREPLACE;
		if (renameat2(AT_FDCWD, argv[3], AT_FDCWD, argv[4], flags) < 0) {
			printf("%s\n", ename(errno));
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: posix_ops EMPTY_DIR | --rename2 noreplace|exchange OLD NEW\n");
		return 2;
	}
	if (chdir(argv[1]) < 0) {
		perror(argv[1]);
		return 2;
	}
	dirfd_g = open(".", O_RDONLY | O_DIRECTORY);
	if (dirfd_g < 0) {
		perror(argv[1]);
		return 2;
	}
	umask(022);
	basic_names();
	sizes_and_attrs();
	xattrs();
	sparse_and_ranges();
	open_flags();
	listing();
	open_files();
	locks();
	lock_waiters();
	users();
	return 0;
}

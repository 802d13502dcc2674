/*
 * access.c - what a permission error means for the file it happened on
 * (access.h).
 */
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "src/sys/access.h"

static void owner_names(const struct stat *st, char *user, size_t ulen, char *group,
			size_t glen)
{
	struct passwd *pw = getpwuid(st->st_uid);
	struct group *gr = getgrgid(st->st_gid);
	if (pw)
		snprintf(user, ulen, "%s", pw->pw_name);
	else
		snprintf(user, ulen, "%u", (unsigned)st->st_uid);
	if (gr)
		snprintf(group, glen, "%s", gr->gr_name);
	else
		snprintf(group, glen, "%u", (unsigned)st->st_gid);
}

int fsp_access_explain(const char *path, int err, int need_write, char *buf, size_t len)
{
	if (err != EACCES && err != EPERM)
		return 0;
	struct stat st;
	char dir[4096];
	const char *what = path;
	int creating = 0;
	if (stat(path, &st) != 0) {
		/* not there (or not visible): creating it needs its directory */
		snprintf(dir, sizeof dir, "%s", path);
		what = dirname(dir);
		if (stat(what, &st) != 0) {
			snprintf(buf, len, "%s cannot be reached: a directory on its path "
				 "is not searchable by this user; run as root", path);
			return 1;
		}
		creating = 1;
	}
	char user[64], group[64];
	owner_names(&st, user, sizeof user, group, sizeof group);
	const char *access = creating ? "write and search" :
			     S_ISDIR(st.st_mode) ? "write and search" :
			     need_write ? "read and write" : "read";
	int fuse_dev = S_ISCHR(st.st_mode) && st.st_rdev == makedev(10, 229);
	const char *how;
	char how_buf[160];
	if (fuse_dev) {
		how = "FUSE mounts by users need /dev/fuse at mode 0666 (as the fuse3 "
		      "package sets it) and fusermount3; or run as root";
	} else if (st.st_gid != 0 && (st.st_mode & (need_write ? S_IWGRP : S_IRGRP))) {
		snprintf(how_buf, sizeof how_buf, "run as root or as a member of group %s", group);
		how = how_buf;
	} else {
		how = "run as root, or give this user that access";
	}
	snprintf(buf, len, "%s%s needs %s access%s: it is %s:%s, mode %04o; %s",
		 creating ? "creating it in " : "", what, access,
		 S_ISBLK(st.st_mode) ? " (a block device)" : "", user, group,
		 (unsigned)(st.st_mode & 07777), how);
	(void)err;
	return 1;
}

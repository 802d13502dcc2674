/*
 * mountinfo.h - one reader of /proc/self/mountinfo for everything that asks
 * "what is mounted where": the store (which device holds a backing path),
 * the mount command (is the mountpoint already a mount), compare (is its
 * FUSE mount still up) and the raw-write safety checks (is a device mounted).
 */
#ifndef FSP_MOUNTINFO_H
#define FSP_MOUNTINFO_H

#include <stddef.h>
#include <stdio.h>

/* One mount; the strings are unescaped and live until the next call. */
struct fsp_mount {
	unsigned major, minor;  /* st_dev of the mounted file system */
	const char *root;       /* the subtree of the fs mounted here */
	const char *mount_point;
	const char *fstype;
	const char *source;     /* e.g. /dev/loop3, or "none" */
};

struct fsp_mountinfo {
	FILE *f;
	char *line;
	size_t cap;
};

/* Returns 0, or -1 with errno set if /proc/self/mountinfo cannot be read. */
int fsp_mountinfo_open(struct fsp_mountinfo *mi);
/* The same for the mount namespace of process pid. */
int fsp_mountinfo_open_pid(struct fsp_mountinfo *mi, long pid);
/* The next mount in mount order (the last one at a path is on top): 1, or 0 at the end. */
int fsp_mountinfo_next(struct fsp_mountinfo *mi, struct fsp_mount *m);
void fsp_mountinfo_close(struct fsp_mountinfo *mi);

/* Is path (a realpath) a mount point? 1 with the fs type of the topmost
 * mount there, 0 if nothing is mounted there, -1 if mountinfo is unreadable. */
int fsp_mountinfo_find(const char *path, char *fstype, size_t fstype_len);

/* A process whose mount namespace, not this one, has a mount of the file
 * system major:minor (a copy made by unshare or `ip netns exec` while it was
 * mounted here: this machine's mounts need not propagate an unmount), or 0
 * if there is none. */
long fsp_mountinfo_holder(unsigned major, unsigned minor);

/* Undo the kernel's octal escapes (\040 for a space) in place, as used in
 * /proc/self/mountinfo and /proc/swaps. */
void fsp_unescape_octal(char *s);

#endif

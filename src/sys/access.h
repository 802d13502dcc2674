/*
 * access.h - what a permission error means for the file it happened on.
 *
 * "Permission denied" alone does not tell a user what to change. When an
 * open or ioctl fails with EACCES or EPERM, the command asks this module for
 * the rest of the sentence: what access the file needs, who owns it and its
 * mode, and the usual ways to get that access (root, the file's group, the
 * FUSE device's mode).
 */
#ifndef FSP_SYS_ACCESS_H
#define FSP_SYS_ACCESS_H

#include <stddef.h>

/*
 * If err is EACCES or EPERM, write into buf the explanation for `path`,
 * opened for reading (need_write 0) or reading and writing (1), e.g.
 *   "/dev/loop3 needs read and write access: it is root:disk, mode 0660;
 *    run as root or as a member of group disk"
 * and return 1. Otherwise return 0 and leave buf alone. A path that does
 * not exist is explained by its directory (creating a file in it).
 */
int fsp_access_explain(const char *path, int err, int need_write, char *buf, size_t len);

#endif

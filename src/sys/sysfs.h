/*
 * sysfs.h - reading the small one-line files of /sys that describe block
 * devices (partition starts, sizes, holders), for the safety checks and for
 * the block-layer trace's choice of disks.
 */
#ifndef FSP_SYS_SYSFS_H
#define FSP_SYS_SYSFS_H

#include <stddef.h>

/* The first line of path into buf, newline stripped: 0, or -1 if it
 * cannot be read or is empty. */
int fsp_sysfs_line(const char *path, char *buf, size_t len);

#endif

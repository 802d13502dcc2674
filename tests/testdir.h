/*
 * testdir.h - the unit tests' scratch directory: made fresh by a test's
 * setup, removed with everything in it by its teardown, and the paths of
 * the files inside it. Included once by each test program that needs it
 * (the functions are static inline, so a program may leave some unused).
 */
#ifndef FSP_TESTS_TESTDIR_H
#define FSP_TESTS_TESTDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

/* dir = PARENT/fsprism-test-NAME.XXXXXX, made: 0, or -1. PARENT is /tmp
 * where tmpfs will do, /var/tmp where the test needs a disk file system
 * (O_DIRECT, birth times). */
static inline int test_dir_make(char *dir, size_t len, const char *parent,
				const char *name)
{
	snprintf(dir, len, "%s/fsprism-test-%s.XXXXXX", parent, name);
	return mkdtemp(dir) ? 0 : -1;
}

static inline int test_dir_rm_entry(const char *p, const struct stat *sb, int flag,
				    struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

/* dir and all below it, without following links or crossing into what is
 * mounted there (the caller unmounts first): 0, or -1. */
static inline int test_dir_remove(const char *dir)
{
	return nftw(dir, test_dir_rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* buf = dir/name */
static inline void test_dir_path(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

#endif

/*
 * test_inode.c - the FUSE layer's inode table on real files: one node per
 * backing (st_dev, st_ino), found again by get and find with one lookup
 * added each time, the spare descriptor closed; forget drops lookups and
 * at zero removes the node, closes its descriptors and calls gone() once;
 * the root is never forgotten; a node pins its backing inode so the number
 * is not reused while the kernel knows it, and after the forget a new file
 * with that number gets a fresh node and a new generation (birth time);
 * and several threads looking up and forgetting the same files at once
 * leave exact counts and no descriptor open.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "fs/fuse/inode.h"
#include "tests/testdir.h"
#include "tests/unit.h"

static char dir[64];
static int dirfd_ = -1;
static struct fsp_itable *t;

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Each test: a fresh directory (on a disk file system: it needs birth
 * times) and a table rooted at it. */
static int setup(void **state)
{
	(void)state;
	if (test_dir_make(dir, sizeof(dir), "/var/tmp", "inode"))
		return -1;
	dirfd_ = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (dirfd_ < 0 || root < 0 || fstat(root, &st))
		return -1;
	t = fsp_itable_new(root, &st);
	return t ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	fsp_itable_free(t);
	t = NULL;
	close(dirfd_);
	return test_dir_remove(dir);
}

static void make_file(const char *name)
{
	int fd = openat(dirfd_, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* What a lookup hands the table: an O_PATH descriptor and its stat. */
static int path_fd(const char *name, struct stat *st)
{
	int fd = openat(dirfd_, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, st), 0);
	return fd;
}

static struct fsp_inode *lookup(const char *name)
{
	struct stat st;
	int fd = path_fd(name, &st);
	struct fsp_inode *n = fsp_itable_get(t, fd, &st);
	assert_non_null(n);
	return n;
}

UNIT_TEST_SETUP(test_root, setup, teardown)
{
	(void)state;
	struct fsp_inode *root = fsp_itable_root(t);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(fsp_itable_count(t), 1);
	assert_int_equal(root->type, S_IFDIR);
	assert_int_equal(root->dev, st.st_dev);
	assert_int_equal(root->ino, st.st_ino);
	/* the kernel's node id 1 is the root, and the root's id is 1 */
	assert_ptr_equal(fsp_inode_of(t, FUSE_ROOT_ID), root);
	assert_int_equal(fsp_inode_id(t, root), FUSE_ROOT_ID);
	/* found by its identity like any other node */
	assert_ptr_equal(fsp_itable_find(t, st.st_dev, st.st_ino), root);
	/* a lookup of "." gives the root itself, and the spare fd is closed */
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_ptr_equal(fsp_itable_get(t, fd, &st), root);
	assert_false(fd_open(fd));
	/* never forgotten, however many lookups are dropped */
	fsp_itable_forget(t, root, UINT64_MAX);
	assert_int_equal(fsp_itable_count(t), 1);
	assert_ptr_equal(fsp_itable_find(t, st.st_dev, st.st_ino), root);
	assert_true(fd_open(root->fd));
}

UNIT_TEST_SETUP(test_get_find_forget, setup, teardown)
{
	(void)state;
	make_file("a");
	make_file("b");
	assert_int_equal(mkdirat(dirfd_, "d", 0755), 0);
	assert_int_equal(symlinkat("a", dirfd_, "l"), 0);

	struct stat st;
	int fd1 = path_fd("a", &st);
	struct fsp_inode *a = fsp_itable_get(t, fd1, &st);
	assert_non_null(a);
	assert_int_equal(a->fd, fd1); /* the first descriptor is kept */
	assert_int_equal(a->type, S_IFREG);
	assert_int_equal(a->dev, st.st_dev);
	assert_int_equal(a->ino, st.st_ino);
	assert_int_equal(a->nlookup, 1);
	assert_int_equal(a->opens, 0);
	assert_int_equal(a->gen_known, 0);
	assert_int_equal(a->unlinked, 0);
	assert_null(a->lockfds);
	assert_int_equal(fsp_itable_count(t), 2);
	/* a node's id is its address, and leads back to it */
	assert_int_equal(fsp_inode_id(t, a), (fuse_ino_t)(uintptr_t)a);
	assert_ptr_equal(fsp_inode_of(t, fsp_inode_id(t, a)), a);

	/* the same file again: the same node, one more lookup, the new fd closed */
	int fd2 = path_fd("a", &st);
	assert_ptr_equal(fsp_itable_get(t, fd2, &st), a);
	assert_false(fd_open(fd2));
	assert_true(fd_open(fd1));
	assert_int_equal(a->nlookup, 2);
	assert_int_equal(fsp_itable_count(t), 2);
	/* a hard link is the same backing inode, so the same node */
	assert_int_equal(linkat(dirfd_, "a", dirfd_, "a2", 0), 0);
	assert_ptr_equal(lookup("a2"), a);
	assert_int_equal(a->nlookup, 3);

	/* other files, a directory, a symlink (not followed): nodes of their own */
	struct fsp_inode *b = lookup("b"), *d = lookup("d"), *l = lookup("l");
	assert_true(b != a && d != a && l != a && d != b && l != b && l != d);
	assert_int_equal(d->type, S_IFDIR);
	assert_int_equal(l->type, S_IFLNK);
	assert_int_equal(fsp_itable_count(t), 5);

	/* find adds a lookup; an identity the table does not know is NULL */
	assert_ptr_equal(fsp_itable_find(t, a->dev, a->ino), a);
	assert_int_equal(a->nlookup, 4);
	assert_null(fsp_itable_find(t, a->dev, (ino_t)-1));
	assert_null(fsp_itable_find(t, a->dev + 1, a->ino));

	/* forget below the count keeps the node */
	fsp_itable_forget(t, a, 3);
	assert_int_equal(a->nlookup, 1);
	assert_int_equal(fsp_itable_count(t), 5);
	assert_ptr_equal(fsp_itable_find(t, st.st_dev, st.st_ino), a);
	assert_int_equal(a->nlookup, 2);
	/* forget to zero removes it and closes its descriptor */
	fsp_itable_forget(t, a, 2);
	assert_int_equal(fsp_itable_count(t), 4);
	assert_null(fsp_itable_find(t, st.st_dev, st.st_ino));
	assert_false(fd_open(fd1));
	/* more than it has is the same as all of it */
	int bfd = b->fd;
	fsp_itable_forget(t, b, 1000);
	assert_int_equal(fsp_itable_count(t), 3);
	assert_false(fd_open(bfd));
	fsp_itable_forget(t, d, 1);
	fsp_itable_forget(t, l, 1);
	assert_int_equal(fsp_itable_count(t), 1);
}

/* gone() sees the node out of the table with its descriptor still open. */
struct gone_log {
	int calls;
	struct fsp_inode *node;
	int fd_was_open;
	int still_found;
};

static void gone(void *arg, struct fsp_inode *node)
{
	struct gone_log *g = arg;
	g->calls++;
	g->node = node;
	g->fd_was_open = fd_open(node->fd);
	struct fsp_inode *again = fsp_itable_find(t, node->dev, node->ino);
	g->still_found = again != NULL;
	if (again)
		fsp_itable_forget(t, again, 1);
}

UNIT_TEST_SETUP(test_forget_cb_and_lock_fds, setup, teardown)
{
	(void)state;
	make_file("f");
	struct fsp_inode *n = lookup("f");
	fsp_itable_find(t, n->dev, n->ino); /* 2 lookups */

	/* two POSIX lock owners' descriptors hang off the node */
	int lfd[2];
	for (int i = 0; i < 2; i++) {
		struct fsp_lockfd *l = malloc(sizeof(*l));
		assert_non_null(l);
		lfd[i] = openat(dirfd_, "f", O_RDWR | O_CLOEXEC);
		assert_true(lfd[i] >= 0);
		*l = (struct fsp_lockfd){ .next = n->lockfds, .owner = (uint64_t)i + 7, .fd = lfd[i] };
		n->lockfds = l;
	}
	int nfd = n->fd;
	struct gone_log g = { 0 };
	fsp_itable_forget_cb(t, n, 1, gone, &g);
	assert_int_equal(g.calls, 0); /* one lookup left */
	assert_true(fd_open(lfd[0]) && fd_open(lfd[1]));
	fsp_itable_forget_cb(t, n, 1, gone, &g);
	assert_int_equal(g.calls, 1);
	assert_ptr_equal(g.node, n);
	assert_true(g.fd_was_open);
	assert_false(g.still_found);
	/* freed with everything it held (ASan checks the memory) */
	assert_false(fd_open(nfd));
	assert_false(fd_open(lfd[0]));
	assert_false(fd_open(lfd[1]));
	assert_int_equal(fsp_itable_count(t), 1);

	/* forget_cb of the root: nothing, and gone() is not called */
	fsp_itable_forget_cb(t, fsp_itable_root(t), UINT64_MAX, gone, &g);
	assert_int_equal(g.calls, 1);
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The node's O_PATH descriptor pins the backing inode: while it is in the
 * table, a file made after the unlink cannot get its number. After the
 * forget the number may come back (ext4 hands it out again at once); the
 * table then makes a fresh node, and the birth time -- the emulation's
 * generation -- tells the two files apart.
 */
UNIT_TEST_SETUP(test_pin_and_reuse, setup, teardown)
{
	(void)state;
	uint64_t before = real_ns();
	make_file("x");
	uint64_t gen_x = fsp_birth_ns(dirfd_, "x", 0);
	if (gen_x == 0)
		skip(); /* no birth times on this file system */
	/* the file system's clock is coarse (a tick), so allow 20 ms before */
	assert_true(gen_x + 20000000ull >= before && gen_x <= real_ns());

	struct fsp_inode *x = lookup("x");
	assert_int_equal(fsp_birth_ns(x->fd, "", AT_EMPTY_PATH), gen_x);
	ino_t ino_x = x->ino;
	dev_t dev_x = x->dev;
	x->gen = gen_x; /* as the FUSE layer caches it */
	x->gen_known = 1;
	x->opens = 3;
	x->unlinked = 1;
	assert_int_equal(unlinkat(dirfd_, "x", 0), 0);
	usleep(20000); /* a later tick: a different birth time */

	/* pinned: a new file does not get the number */
	make_file("y");
	struct stat sy;
	assert_int_equal(fstatat(dirfd_, "y", &sy, 0), 0);
	assert_true(sy.st_ino != ino_x);
	assert_ptr_equal(fsp_itable_find(t, dev_x, ino_x), x);
	fsp_itable_forget(t, x, 2);
	assert_null(fsp_itable_find(t, dev_x, ino_x));

	/* unpinned: the next new file may reuse it, and gets a fresh node */
	make_file("z");
	struct fsp_inode *z = lookup("z");
	assert_int_equal(z->nlookup, 1);
	assert_int_equal(z->gen_known, 0);
	assert_int_equal(z->opens, 0);
	assert_int_equal(z->unlinked, 0);
	uint64_t gen_z = fsp_birth_ns(z->fd, "", AT_EMPTY_PATH);
	assert_true(gen_z > gen_x);
	if (z->ino == ino_x)
		print_message("# the number of x was reused by z\n");
	/* no birth time for a name that does not exist */
	assert_int_equal(fsp_birth_ns(dirfd_, "missing", 0), 0);
}

/* The table tears down every node it still has, closing their fds. */
UNIT_TEST_SETUP(test_free_closes, setup, teardown)
{
	(void)state;
	int fds[8];
	for (int i = 0; i < 8; i++) {
		char name[8];
		snprintf(name, sizeof(name), "n%d", i);
		make_file(name);
		fds[i] = lookup(name)->fd;
	}
	int rootfd = fsp_itable_root(t)->fd;
	assert_int_equal(fsp_itable_count(t), 9);
	fsp_itable_free(t);
	t = NULL;
	for (int i = 0; i < 8; i++)
		assert_false(fd_open(fds[i]));
	assert_false(fd_open(rootfd));
}

/*
 * Several threads (the libfuse workers) look up and forget the same files
 * at once: after each round the lookup counts are exact; then they look up
 * and forget freely, so that lookups meet last forgets; at the end only the
 * root is left and every descriptor handed in is closed.
 */
enum { THREADS = 4, FILES = 64, ROUNDS = 20 };
static struct fsp_inode *seen[THREADS][FILES];

struct worker {
	int id;
	int bad;
	pthread_barrier_t *bar;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (int round = 0; round < ROUNDS; round++) {
		/* everyone looks up every file (two lookups each), in its own order */
		for (int k = 0; k < FILES; k++) {
			int i = (k * 7 + w->id * 13) % FILES;
			char name[8];
			snprintf(name, sizeof(name), "f%d", i);
			struct stat st;
			int fd = openat(dirfd_, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			struct fsp_inode *n = NULL;
			if (fd >= 0 && fstat(fd, &st) == 0)
				n = fsp_itable_get(t, fd, &st);
			if (!n || fsp_itable_find(t, st.st_dev, st.st_ino) != n)
				w->bad = 1;
			seen[w->id][i] = n;
		}
		pthread_barrier_wait(w->bar);
		/* the main thread checks the counts between these barriers */
		pthread_barrier_wait(w->bar);
		for (int i = 0; i < FILES; i++)
			if (seen[w->id][i])
				fsp_itable_forget(t, seen[w->id][i], 2);
		pthread_barrier_wait(w->bar);
		/* and again after these */
		pthread_barrier_wait(w->bar);
	}
	/* then free-running: a lookup may meet another thread's last forget */
	for (int k = 0; k < 2000; k++) {
		char name[8];
		snprintf(name, sizeof(name), "f%d", (k * 31 + w->id) % 8);
		struct stat st;
		int fd = openat(dirfd_, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		struct fsp_inode *n = NULL;
		if (fd >= 0 && fstat(fd, &st) == 0)
			n = fsp_itable_get(t, fd, &st);
		if (!n || n->ino != st.st_ino) {
			w->bad = 1;
			continue;
		}
		fsp_itable_forget(t, n, 1);
	}
	return NULL;
}

UNIT_TEST_SETUP(test_threads, setup, teardown)
{
	(void)state;
	for (int i = 0; i < FILES; i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%d", i);
		make_file(name);
	}
	int fds_before = open_fds();
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, THREADS + 1);
	pthread_t th[THREADS];
	struct worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ i, 0, &bar };
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	int wrong = 0;
	for (int round = 0; round < ROUNDS; round++) {
		pthread_barrier_wait(&bar);
		/* one node per file, whoever made it, with every lookup counted */
		if (fsp_itable_count(t) != FILES + 1)
			wrong++;
		for (int i = 0; i < FILES; i++)
			for (int k = 0; k < THREADS; k++)
				if (seen[k][i] != seen[0][i] || seen[k][i]->nlookup != 2 * THREADS)
					wrong++;
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		if (fsp_itable_count(t) != 1)
			wrong++;
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	pthread_barrier_destroy(&bar);
	assert_int_equal(wrong, 0);
	assert_int_equal(fsp_itable_count(t), 1);
	assert_int_equal(open_fds(), fds_before);
}

/* All threads on one node: not one lookup or forget is lost. */
enum { HOT = 20000 };
static struct fsp_inode *hot;

static int hot_wrong;

static void *hot_main(void *arg)
{
	(void)arg;
	for (int k = 0; k < HOT; k++)
		if (fsp_itable_find(t, hot->dev, hot->ino) != hot)
			__atomic_add_fetch(&hot_wrong, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *cold_main(void *arg)
{
	(void)arg;
	for (int k = 0; k < HOT; k++)
		fsp_itable_forget(t, hot, 1);
	return NULL;
}

UNIT_TEST_SETUP(test_threads_one_node, setup, teardown)
{
	(void)state;
	make_file("hot");
	hot = lookup("hot");
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hot_main, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(hot_wrong, 0);
	assert_int_equal(hot->nlookup, 1 + (uint64_t)THREADS * HOT);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, cold_main, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(hot->nlookup, 1);
	assert_int_equal(fsp_itable_count(t), 2);
	fsp_itable_forget(t, hot, 1);
	assert_int_equal(fsp_itable_count(t), 1);
}

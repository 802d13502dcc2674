/*
 * inode.c - the inode table behind the FUSE node ids (see inode.h).
 *
 * A fixed array of 2^17 buckets with 1024 striped mutexes. The table is only
 * touched by lookup-style requests and forget, never on the read/write path
 * (which goes straight from the node id to the node), so a fixed size keeps
 * the code simple; chains stay short up to about a million live inodes.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fs/fuse/inode.h"

#define BUCKET_BITS 17
#define NBUCKETS (1u << BUCKET_BITS)
#define NSTRIPES 1024u

struct fsp_itable {
	struct fsp_inode root;
	struct fsp_inode **buckets;
	pthread_mutex_t stripes[NSTRIPES];
	size_t count; /* live nodes (atomic), for debugging */
};

static unsigned hash_key(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4Full;
	return (unsigned)(h >> (64 - BUCKET_BITS));
}

static pthread_mutex_t *stripe_of(struct fsp_itable *t, unsigned b)
{
	return &t->stripes[b % NSTRIPES];
}

static void node_init(struct fsp_inode *n, int fd, const struct stat *st)
{
	/* every field not named here starts at 0 (NULL) */
	*n = (struct fsp_inode){
		.fd = fd,
		.type = st->st_mode & S_IFMT,
		.dev = st->st_dev,
		.ino = st->st_ino,
		.nlookup = 1,
	};
	pthread_mutex_init(&n->lock, NULL);
}

static void node_close(struct fsp_inode *n)
{
	struct fsp_lockfd *l = n->lockfds;
	while (l) {
		struct fsp_lockfd *next = l->next;
		close(l->fd);
		free(l);
		l = next;
	}
	n->lockfds = NULL;
	pthread_mutex_destroy(&n->lock);
	if (n->fd >= 0)
		close(n->fd);
}

struct fsp_itable *fsp_itable_new(int root_fd, const struct stat *root_st)
{
	struct fsp_itable *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->buckets = calloc(NBUCKETS, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	for (unsigned i = 0; i < NSTRIPES; i++)
		pthread_mutex_init(&t->stripes[i], NULL);
	node_init(&t->root, root_fd, root_st);
	/* The root is never forgotten: the kernel holds it for the mount's life. */
	t->root.nlookup = UINT64_MAX / 2;
	unsigned b = hash_key(root_st->st_dev, root_st->st_ino);
	t->buckets[b] = &t->root;
	t->count = 1;
	return t;
}

struct fsp_inode *fsp_itable_root(struct fsp_itable *t)
{
	return &t->root;
}

size_t fsp_itable_count(struct fsp_itable *t)
{
	return __atomic_load_n(&t->count, __ATOMIC_RELAXED);
}

struct fsp_inode *fsp_itable_get(struct fsp_itable *t, int fd,
				 const struct stat *st)
{
	unsigned b = hash_key(st->st_dev, st->st_ino);
	pthread_mutex_t *lock = stripe_of(t, b);
	pthread_mutex_lock(lock);
	for (struct fsp_inode *n = t->buckets[b]; n; n = n->next) {
		if (n->ino == st->st_ino && n->dev == st->st_dev) {
			n->nlookup++;
			pthread_mutex_unlock(lock);
			close(fd);
			return n;
		}
	}
	struct fsp_inode *n = malloc(sizeof(*n));
	if (!n) {
		pthread_mutex_unlock(lock);
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	node_init(n, fd, st);
	n->next = t->buckets[b];
	t->buckets[b] = n;
	pthread_mutex_unlock(lock);
	__atomic_add_fetch(&t->count, 1, __ATOMIC_RELAXED);
	return n;
}

struct fsp_inode *fsp_itable_find(struct fsp_itable *t, dev_t dev, ino_t ino)
{
	unsigned b = hash_key(dev, ino);
	pthread_mutex_t *lock = stripe_of(t, b);
	pthread_mutex_lock(lock);
	struct fsp_inode *n = t->buckets[b];
	while (n && !(n->ino == ino && n->dev == dev))
		n = n->next;
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(lock);
	return n;
}

void fsp_itable_forget(struct fsp_itable *t, struct fsp_inode *node, uint64_t n)
{
	fsp_itable_forget_cb(t, node, n, NULL, NULL);
}

void fsp_itable_forget_cb(struct fsp_itable *t, struct fsp_inode *node, uint64_t n,
			  void (*gone)(void *arg, struct fsp_inode *node), void *arg)
{
	if (node == &t->root)
		return;
	unsigned b = hash_key(node->dev, node->ino);
	pthread_mutex_t *lock = stripe_of(t, b);
	pthread_mutex_lock(lock);
	if (node->nlookup > n) {
		node->nlookup -= n;
		pthread_mutex_unlock(lock);
		return;
	}
	struct fsp_inode **pp = &t->buckets[b];
	while (*pp && *pp != node)
		pp = &(*pp)->next;
	if (*pp)
		*pp = node->next;
	pthread_mutex_unlock(lock);
	__atomic_sub_fetch(&t->count, 1, __ATOMIC_RELAXED);
	if (gone)
		gone(arg, node);
	node_close(node);
	free(node);
}

void fsp_itable_free(struct fsp_itable *t)
{
	if (!t)
		return;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct fsp_inode *n = t->buckets[b];
		while (n) {
			struct fsp_inode *next = n->next;
			if (n != &t->root) {
				node_close(n);
				free(n);
			}
			n = next;
		}
	}
	node_close(&t->root);
	for (unsigned i = 0; i < NSTRIPES; i++)
		pthread_mutex_destroy(&t->stripes[i]);
	free(t->buckets);
	free(t);
}

uint64_t fsp_birth_ns(int dirfd, const char *path, int flags)
{
	struct statx stx;
	if (statx(dirfd, path, flags | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) < 0 ||
	    !(stx.stx_mask & STATX_BTIME))
		return 0;
	return (uint64_t)stx.stx_btime.tv_sec * 1000000000ull + stx.stx_btime.tv_nsec;
}

/*
 * inode.h - the FUSE layer's inode table.
 *
 * Every backing object the kernel knows about has one struct fsp_inode,
 * found by (st_dev, st_ino) in a hash table with one lock per stripe of
 * buckets. The node holds an O_PATH descriptor (which also pins the backing
 * inode, so its number cannot be reused while the kernel still knows it) and
 * the kernel's lookup count. The FUSE node id is the node's address; node 1
 * is the backing root, which is never forgotten.
 *
 * With the copy-on-write / journaling emulation on, a regular file's node
 * also counts the open handles whose data goes through the emulated store,
 * so that the store object of a file whose last link is gone is removed
 * only when the last of them is released.
 */
#ifndef FSP_FS_INODE_H
#define FSP_FS_INODE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
/*
 * Birth time in ns of path relative to dirfd (flags as for statx, e.g.
 * AT_EMPTY_PATH), or 0 if the file system does not record it or it cannot
 * be read.
 */
uint64_t fsp_birth_ns(int dirfd, const char *path, int flags);

#endif
#include <fuse_lowlevel.h>

/* A backing descriptor used for one POSIX lock owner's OFD locks. */
struct fsp_lockfd {
	struct fsp_lockfd *next;
	uint64_t owner;
	int fd;
};

struct fsp_inode {
	struct fsp_inode *next; /* hash chain */
	int fd;                 /* O_PATH | O_NOFOLLOW */
	mode_t type;            /* S_IFMT bits */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;       /* under the stripe lock */
	pthread_mutex_t lock;   /* guards lockfds and opens */
	struct fsp_lockfd *lockfds;
	/* emulation only */
	uint32_t opens;         /* open handles served by the store (under lock) */
	int gen_known;          /* gen has been read (atomic) */
	uint64_t gen;           /* birth time in ns, the store object's generation */
	int mtime_dirty;        /* data changed since the backing mtime was set (atomic) */
	int unlinked;           /* its last link went through the mount (under lock) */
	/* --inject only (fs/fuse/inject.h): the rules its path matches */
	int inject_known;       /* inject_mask is set (atomic) */
	uint32_t inject_mask;
};

struct fsp_itable;

/* Take ownership of root_fd (O_PATH of the backing dir). NULL on ENOMEM. */
struct fsp_itable *fsp_itable_new(int root_fd, const struct stat *root_st);
void fsp_itable_free(struct fsp_itable *t);
struct fsp_inode *fsp_itable_root(struct fsp_itable *t);
size_t fsp_itable_count(struct fsp_itable *t);

static inline struct fsp_inode *fsp_inode_of(struct fsp_itable *t, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return fsp_itable_root(t);
	return (struct fsp_inode *)(uintptr_t)ino;
}

static inline fuse_ino_t fsp_inode_id(struct fsp_itable *t, struct fsp_inode *n)
{
	return n == fsp_itable_root(t) ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/*
 * Find the node for st (dev, ino) and add one lookup, or insert a new node
 * owning fd. If a node already exists, fd is closed. Returns the node, or
 * NULL (fd closed, errno ENOMEM).
 */
struct fsp_inode *fsp_itable_get(struct fsp_itable *t, int fd,
				 const struct stat *st);

/*
 * The node for (dev, ino) if the kernel knows it, with one lookup added
 * (drop it with fsp_itable_forget(t, node, 1)); NULL if there is none.
 */
struct fsp_inode *fsp_itable_find(struct fsp_itable *t, dev_t dev, ino_t ino);

/* Drop n lookups; the node is freed (fd and lock fds closed) at zero. */
void fsp_itable_forget(struct fsp_itable *t, struct fsp_inode *node, uint64_t n);

/* The same; at zero, gone(arg, node) is called first, once the node is out
 * of the table but its fd still open. */
void fsp_itable_forget_cb(struct fsp_itable *t, struct fsp_inode *node, uint64_t n,
			  void (*gone)(void *arg, struct fsp_inode *node), void *arg);

/*
 * Birth time in ns of path relative to dirfd (flags as for statx, e.g.
 * AT_EMPTY_PATH), or 0 if the file system does not record it or it cannot
 * be read.
 */
uint64_t fsp_birth_ns(int dirfd, const char *path, int flags);

#endif

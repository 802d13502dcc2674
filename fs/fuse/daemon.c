/*
 * daemon.c - the life of an fsprism mount (daemon.h): from validated
 * options to a served mount, and at its end every record stored.
 *
 * Unless -f, it forks: the child opens the database, starts the run and the
 * oplog, mounts, and reports "ok" or its one-line error through a pipe; the
 * parent prints that error or returns once the mount is ready. The daemon
 * holds an flock on a pid file for as long as it runs, including the final
 * flush of records, so `fsprism umount` can unmount and then wait on that
 * lock until the database is complete; a new mount of the same mount point
 * waits on it too (src/cli/mount.c: a plain umount does not wait), so
 * umount + mount in a loop works.
 *
 * With --cow / --journal / --store the data of regular files lives in an
 * emulated store (fs/emu/store.h), whose inputs src/cli/mount.c has checked
 * (raw-write safety for a block device, as for `fsprism run`); the daemon
 * opens it before mounting, so an error still reaches the terminal and
 * leaves nothing mounted. At mount it drops objects whose file is gone
 * from the backing tree; at unmount it closes the store before the oplog
 * (so the last commit's device IO is recorded) and stores the device
 * counters (dev.* run attributes) and every file's extents.
 *
 * It serves /dev/fuse with its own worker loop (serve), which tells each
 * request its kernel `unique` and receive time; from mount to unmount it
 * traces the mount's FUSE transport and its backing device's block layer
 * with eBPF (src/trace/fuse.h, block.h), stored after the operation log.
 */
#include "config.h"
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <semaphore.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include "src/base/cmp.h"
#include "src/base/grow.h"
#include "src/sys/mountinfo.h"
#include "fs/emu/store.h"
#include "fs/fuse/daemon.h"
#include "fs/fuse/fuse_fs.h"
#include "fs/fuse/inject.h"
#include "fs/fuse/inode.h"
#include "fs/fuse/request.h"
#include "src/db/oplog.h"
#include "src/db/store.h"
#include "src/trace/block.h"
#include "src/trace/fuse.h"

void fsp_daemon_pidfile_path(const char *mnt, char *out, size_t len)
{
	char dir[64];
	if (geteuid() == 0)
		snprintf(dir, sizeof(dir), "/run/fsprism");
	else
		snprintf(dir, sizeof(dir), "/tmp/fsprism-%u", (unsigned)geteuid());
	char name[NAME_MAX + 1];
	size_t n = 0;
	for (const char *p = mnt; *p && n + 4 < sizeof(name) - 5; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_')
			name[n++] = (char)c;
		else
			n += (size_t)sprintf(name + n, "%%%02X", c);
	}
	name[n] = '\0';
	if (strlen(mnt) * 3 > sizeof(name) - 10) {
		/* too long to escape: a hash of the path instead */
		uint64_t h = 1469598103934665603ull;
		for (const char *p = mnt; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		snprintf(name, sizeof(name), "long-%016llx", (unsigned long long)h);
	}
	snprintf(out, len, "%s/%s.pid", dir, name);
}

static int pidfile_open_locked(const char *mnt, char *err, size_t errlen)
{
	char path[PATH_MAX];
	fsp_daemon_pidfile_path(mnt, path, sizeof(path));
	char *slash = strrchr(path, '/');
	*slash = '\0';
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	*slash = '/';
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create pid file %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "an fsprism daemon for %s is still running (%s is locked)",
			 mnt, path);
		close(fd);
		return -1;
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || write(fd, pid, (size_t)n) != n) {
		snprintf(err, errlen, "cannot write pid file %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* libfuse's own messages, kept so a failure can be reported on one line. */
static char fuse_last_msg[512];

static void capture_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	if (level > FUSE_LOG_ERR)
		return;
	/* libfuse may build one message out of several calls: append. */
	size_t n = strlen(fuse_last_msg);
	vsnprintf(fuse_last_msg + n, sizeof(fuse_last_msg) - n, fmt, ap);
	for (char *p = fuse_last_msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	n = strlen(fuse_last_msg);
	while (n && fuse_last_msg[n - 1] == ' ')
		fuse_last_msg[--n] = '\0';
}

/* Append s to the option string, escaping ',' and '\' for fuse_opt. */
static void opt_escape(char *out, size_t len, const char *s)
{
	size_t n = strlen(out);
	for (; *s && n + 2 < len; s++) {
		if (*s == ',' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = '\0';
}

/* ---- the daemon ---- */

/* The store's files at unmount, kept from before the store closes until
 * the oplog has closed and the database is ours again. */
struct emu_files {
	struct fsp_emu_file *f;
	size_t n, cap;
};

struct daemon {
	struct mount_opts *o;
	struct fsp_store *store;
	int64_t run;
	struct fsp_oplog *log;
	struct fsp_fs *fs;
	struct fuse_session *se;
	int pid_fd;
	int mounted;
	/* the kernel-side layers, mount to unmount (unless --no-trace) */
	struct fsp_ftrace *ft;
	struct fsp_btrace *bt;
	uint64_t trace_start_ns, trace_end_ns;
	int db_existed;
	/* emulation */
	struct emu_store *emu;
	struct emu_store_info einfo;
	int store_fd;         /* holds the flock: one daemon per store */
	int store_created;    /* this start created the store file */
	struct emu_store_acct acct;
	int have_acct;
	struct emu_files files;
	struct fsp_model *model; /* --device-model */
};

/* ---- the emulated store in the daemon ---- */

/* The regular files of the backing tree (one file system: FTW_MOUNT). */
struct tree_file {
	uint64_t ino;
	uint64_t btime; /* birth time in ns, 0 if unknown (want_btime only) */
	char *path;     /* relative to the backing directory (want_paths only) */
	uint64_t oid;   /* the object its FSP_IDENT_XATTR names (want_ident only) */
	int ident;      /* 1: an id of this store, -1: of another store, 0: none */
};

struct tree {
	struct tree_file *v;
	size_t n, cap;
	size_t skip;    /* strlen of "BACKING/" */
	int want_paths, want_btime;
	int want_ident;
	uint64_t uuid;  /* the store's, for want_ident */
	int incomplete; /* a directory or file could not be read */
};

/* The identity xattr's value: "STORE-UUID:OBJECT-ID", both 16 hex digits. */
static void ident_format(char *buf, size_t len, uint64_t uuid, uint64_t oid)
{
	snprintf(buf, len, "%016llx:%016llx", (unsigned long long)uuid, (unsigned long long)oid);
}

/* 1: an id of store uuid (*oid), -1: of another store, 0: none. */
static int ident_read(const char *path, uint64_t uuid, uint64_t *oid)
{
	char v[64];
	ssize_t n = lgetxattr(path, FSP_IDENT_XATTR, v, sizeof(v) - 1);
	unsigned long long u, o;
	char tail;
	if (n <= 0)
		return 0;
	v[n] = 0;
	if (sscanf(v, "%16llx:%16llx%c", &u, &o, &tail) != 2)
		return -1;
	*oid = o;
	return u == uuid ? 1 : -1;
}

static struct tree *tree_cur; /* nftw passes no context */

static int tree_visit(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	struct tree *t = tree_cur;
	(void)ftw;
	if (type == FTW_DNR || type == FTW_NS) {
		t->incomplete = 1;
		return 0;
	}
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	if (fsp_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v), 1024))
		return -1;
	struct tree_file *f = &t->v[t->n];
	f->ino = sb->st_ino;
	f->btime = t->want_btime ? fsp_birth_ns(AT_FDCWD, fpath, 0) : 0;
	f->path = NULL;
	f->oid = 0;
	f->ident = t->want_ident ? ident_read(fpath, t->uuid, &f->oid) : 0;
	if (t->want_paths && !(f->path = strdup(strlen(fpath) > t->skip ? fpath + t->skip : "")))
		return -1;
	t->n++;
	return 0;
}

static int cmp_tree_file(const void *a, const void *b)
{
	const struct tree_file *x = a, *y = b;
	return FSP_CMP(x->ino, y->ino);
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Walk the backing tree, files sorted by inode; with ident_uuid, read each
 * file's object id. 0, or -1 if it could not be read completely (then
 * nothing may be concluded from a missing file). */
static int tree_walk(const char *backing, struct tree *t, int want_paths, int want_btime,
		     const uint64_t *ident_uuid)
{
	memset(t, 0, sizeof(*t));
	t->skip = strcmp(backing, "/") ? strlen(backing) + 1 : 1;
	t->want_paths = want_paths;
	t->want_btime = want_btime;
	t->want_ident = ident_uuid != NULL;
	t->uuid = ident_uuid ? *ident_uuid : 0;
	tree_cur = t;
	int rc = nftw(backing, tree_visit, 64, FTW_PHYS | FTW_MOUNT);
	tree_cur = NULL;
	if (rc || t->incomplete)
		return -1;
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_tree_file);
	return 0;
}

static struct tree_file *tree_find(const struct tree *t, uint64_t ino)
{
	struct tree_file key = { .ino = ino };
	return t->n ? bsearch(&key, t->v, t->n, sizeof(key), cmp_tree_file) : NULL;
}

struct obj_list {
	uint64_t (*v)[2]; /* id, gen */
	size_t n, cap;
};

static int obj_list_add(void *ctx, uint64_t obj, uint64_t gen, uint64_t size)
{
	struct obj_list *l = ctx;
	(void)size;
	if (fsp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v), 256))
		return -ENOMEM;
	l->v[l->n][0] = obj;
	l->v[l->n][1] = gen;
	l->n++;
	return 0;
}

/* What binding the store's objects to the backing tree found. */
struct bind_report {
	uint64_t objects;   /* in the store */
	uint64_t bound;     /* matched to a file now */
	uint64_t was_bound; /* bound to a file at the last mount */
	uint64_t lost;      /* of those, matched to no file now */
	uint64_t found;     /* orphans matched to a file again */
	uint64_t orphans;   /* unmatched, kept */
	uint64_t dropped;   /* unmatched, deleted (--drop-orphans) */
	uint64_t rekeyed;   /* objects whose inode number changed (a copy) */
	uint64_t dup_ids;   /* files naming an object another file has */
	uint64_t dup_cloned; /* of those, given a clone of that file's data */
	uint64_t ids_failed; /* ids that could not be written to their file */
	int ids_errno;
	int refused;
};

struct oid_idx {
	uint64_t oid;
	size_t i;
};

static int cmp_oid_idx(const void *a, const void *b)
{
	const struct oid_idx *x = a, *y = b;
	return FSP_CMP(x->oid, y->oid);
}

/* BACKING/f->path in buf; 0, or -1 if it does not fit. */
static int tree_path(const char *backing, const struct tree_file *f, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", backing, f->path);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Write f's identity xattr; 0, or -1 with errno set. */
static int ident_write(const char *backing, const struct tree_file *f, uint64_t uuid,
		       uint64_t oid)
{
	char path[PATH_MAX], v[40];
	if (tree_path(backing, f, path, sizeof(path))) {
		errno = ENAMETOOLONG;
		return -1;
	}
	ident_format(v, sizeof(v), uuid, oid);
	return lsetxattr(path, FSP_IDENT_XATTR, v, strlen(v), 0) < 0 ? -1 : 0;
}

/* The most objects of a store mounted with a backing directory whose
 * files name few of them: at least this many, more than half unmatched. */
#define ADOPT_MIN_OBJECTS 4

/*
 * Bind each object of the store to the backing file that carries its id
 * (FSP_IDENT_XATTR; a file without one: the object last bound to its inode
 * number with the same birth time, which covers stores and files from
 * before ids and a daemon killed before writing them). Objects no file
 * names become orphans: kept, never deleted here (but with
 * --drop-orphans). When most objects bound at the last mount match no
 * file, nothing is changed and the mount is refused unless --adopt-store.
 * Returns 0, or -1 if the tree cannot be read completely (the binding of
 * the last mount is kept).
 */
static int bind_objects(struct daemon *d, struct bind_report *r)
{
	struct tree t;
	struct emu_obj_ident *objs = NULL, *bind = NULL;
	struct oid_idx *by_oid = NULL;
	unsigned char *claimed = NULL;
	uint64_t *claim_ino = NULL;
	uint64_t (*dups)[2] = NULL; /* a copy's inode, its original's */
	size_t nobj = 0, nbind = 0, ndup = 0;
	uint64_t uuid = emu_store_uuid(d->emu);
	int rc = -1;
	memset(r, 0, sizeof(*r));
	if (tree_walk(d->o->backing, &t, 1, 1, &uuid) < 0 || emu_store_list(d->emu, &objs, &nobj))
		goto out;
	by_oid = malloc((nobj ? nobj : 1) * sizeof(*by_oid));
	bind = malloc((nobj ? nobj : 1) * sizeof(*bind));
	claimed = calloc(nobj ? nobj : 1, 1);
	claim_ino = calloc(nobj ? nobj : 1, sizeof(*claim_ino));
	dups = malloc((t.n ? t.n : 1) * sizeof(*dups));
	if (!by_oid || !bind || !claimed || !claim_ino || !dups)
		goto out;
	for (size_t i = 0; i < nobj; i++)
		by_oid[i] = (struct oid_idx){ objs[i].oid, i };
	if (nobj)
		qsort(by_oid, nobj, sizeof(*by_oid), cmp_oid_idx);
	/* the files that name an object: first those still at its inode
	 * number (so that a copy of a file inside the directory does not
	 * take the original's object), then the others */
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < t.n; k++) {
			struct tree_file *f = &t.v[k];
			struct oid_idx key = { f->oid, 0 }, *x;
			if (f->ident != 1 || !nobj ||
			    !(x = bsearch(&key, by_oid, nobj, sizeof(key), cmp_oid_idx)))
				continue;
			if ((objs[x->i].key == f->ino) != (pass == 0))
				continue;
			if (claimed[x->i]) {
				if (claim_ino[x->i] != f->ino && pass == 1) {
					/* a copy made in the backing directory: it gets
					 * a clone of the original's data below, and an
					 * id of its own at unmount */
					char path[PATH_MAX];
					if (tree_path(d->o->backing, f, path, sizeof(path)) == 0)
						lremovexattr(path, FSP_IDENT_XATTR);
					f->ident = 0;
					dups[ndup][0] = f->ino;
					dups[ndup++][1] = claim_ino[x->i];
					r->dup_ids++;
				}
				continue;
			}
			claimed[x->i] = 1;
			claim_ino[x->i] = f->ino;
			bind[nbind++] = (struct emu_obj_ident){ f->ino, objs[x->i].oid, f->btime, 0 };
			f->ident = 2; /* bound, its id is right */
		}
	/* files without an id of this store: by inode number and birth time */
	for (size_t k = 0; k < t.n; k++) {
		struct tree_file *f = &t.v[k];
		struct emu_obj_ident *o = f->ident == 1 || f->ident == 2 ? NULL :
			emu_store_list_find(objs, nobj, f->ino);
		if (!o || claimed[o - objs] || (o->gen && f->btime && o->gen != f->btime))
			continue;
		claimed[o - objs] = 1;
		claim_ino[o - objs] = f->ino;
		bind[nbind++] = (struct emu_obj_ident){ f->ino, o->oid, f->btime, 0 };
		f->oid = o->oid;
		f->ident = 3; /* bound, its id to be written */
	}
	r->objects = nobj;
	r->bound = nbind;
	for (size_t i = 0; i < nobj; i++) {
		int orphan = (objs[i].key & EMU_ORPHAN_KEY) != 0;
		r->was_bound += !orphan;
		r->lost += !orphan && !claimed[i];
		r->found += orphan && claimed[i];
		r->orphans += !claimed[i];
		r->rekeyed += !orphan && claimed[i] && claim_ino[i] != objs[i].key;
	}
	if (!d->o->adopt_store && r->was_bound >= ADOPT_MIN_OBJECTS && r->lost * 2 > r->was_bound) {
		r->refused = 1;
		rc = 0;
		goto out;
	}
	int e = emu_store_rebind(d->emu, bind, nbind, NULL);
	if (e < 0) {
		fprintf(stderr, "fsprism mount: cannot bind the objects of store %s to the files "
			"of %s (%s): the binding of the last mount is kept\n", d->o->store,
			d->o->backing, strerror(-e));
		goto out;
	}
	for (size_t k = 0; k < t.n; k++)
		if (t.v[k].ident == 3 && ident_write(d->o->backing, &t.v[k], uuid, t.v[k].oid)) {
			r->ids_failed++;
			r->ids_errno = errno;
		}
	for (size_t k = 0; k < ndup; k++) {
		struct emu_cx cx = { 0 };
		uint64_t size = 0, have;
		if (emu_store_obj_size(d->emu, dups[k][0], &have, NULL) == 0)
			continue; /* a second name of the same copy */
		if (emu_store_obj_size(d->emu, dups[k][1], &size, NULL) == 0 &&
		    emu_store_clone(d->emu, &cx, dups[k][1], 0, dups[k][0], 0,
				    (size_t)size) == (ssize_t)size)
			r->dup_cloned++;
	}
	if (d->o->drop_orphans)
		for (size_t i = 0; i < nobj; i++) {
			struct emu_cx cx = { 0 };
			if (!claimed[i] &&
			    emu_store_obj_remove(d->emu, &cx, objs[i].oid | EMU_ORPHAN_KEY) == 0)
				r->dropped++;
		}
	r->orphans -= r->dropped;
	rc = 0;
out:
	tree_free(&t);
	free(objs);
	free(bind);
	free(by_oid);
	free(claimed);
	free(claim_ino);
	free(dups);
	return rc;
}

/*
 * Give every bound object's file its id (new files of this mount), so that
 * a copy of the directory finds its data. Returns the ids that could not
 * be written.
 */
static uint64_t write_ids(struct daemon *d, struct tree *t)
{
	struct emu_obj_ident *objs = NULL;
	size_t nobj = 0;
	uint64_t failed = 0, uuid = emu_store_uuid(d->emu);
	if (emu_store_list(d->emu, &objs, &nobj))
		return 0;
	for (size_t k = 0; k < t->n; k++) {
		struct tree_file *f = &t->v[k];
		struct emu_obj_ident *o = emu_store_list_find(objs, nobj, f->ino);
		if (o && !(f->ident == 1 && f->oid == o->oid) && f->path &&
		    ident_write(d->o->backing, f, uuid, o->oid) == 0) {
			f->ident = 1; /* hard links: the next name sees it written */
			f->oid = o->oid;
		} else if (o && !(f->ident == 1 && f->oid == o->oid)) {
			failed++;
		}
	}
	free(objs);
	return failed;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The emu.replay.end attribute: how replay ended, or "none". */
static const char *replay_end_attr(const struct emu_store_info *in)
{
	if (!in->replayed && in->clean)
		return "none";
	if (in->replay.end == EMU_REPLAY_IO)
		return "io";
	return emu_replay_end_name(in->replay.end);
}

/* One line on stderr (the user's terminal: the daemon has not detached
 * yet) when the store was not closed cleanly. A journaled mount whose log
 * held nothing to replay says so ("replayed 0 transactions"). */
static void report_unclean(const char *path, const struct emu_store_info *in,
			   enum emu_journal_mode journal)
{
	if (in->formatted || in->clean)
		return;
	char line[PATH_MAX + 512];
	int n;
	if (in->replayed || journal != EMU_JOURNAL_OFF) {
		n = snprintf(line, sizeof(line), "store %s was not closed cleanly: journal replayed "
			     "%llu transaction%s (%llu block%s), stopped at %s", path,
			     (unsigned long long)in->replay.txns_replayed,
			     plural(in->replay.txns_replayed),
			     (unsigned long long)in->replay.blocks_replayed,
			     plural(in->replay.blocks_replayed), replay_end_attr(in));
		if (in->replay.txns_discarded && n > 0 && (size_t)n < sizeof(line))
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " (%llu transaction%s discarded)",
				      (unsigned long long)in->replay.txns_discarded,
				      plural(in->replay.txns_discarded));
	} else {
		n = snprintf(line, sizeof(line), "store %s was not closed cleanly and has no "
			     "journal: changes after the last commit are lost", path);
	}
	if (in->damaged_objects && n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %llu object%s damaged",
			      (unsigned long long)in->damaged_objects, plural(in->damaged_objects));
	if (in->bitmap_mismatches && n > 0 && (size_t)n < sizeof(line))
		snprintf(line + n, sizeof(line) - (size_t)n, "; %llu bitmap block%s rebuilt",
			 (unsigned long long)in->bitmap_mismatches, plural(in->bitmap_mismatches));
	fprintf(stderr, "fsprism mount: %s\n", line);
}

static void set_attr_u64(struct daemon *d, const char *key, uint64_t v)
{
	fsp_store_set_attr_u64(d->store, d->run, key, v);
}

/*
 * Lock and open the store (creating a store file), report what the open
 * found, drop orphaned objects, record the emu.* attributes. The oplog does
 * not exist yet: fsp_fs_devio keeps the open's device IO until it does.
 */
static int emu_begin(struct daemon *d, char *err, size_t errlen)
{
	struct mount_opts *o = d->o;
	struct stat st;
	d->store_created = stat(o->store, &st) < 0;
	d->store_fd = open(o->store, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (d->store_fd < 0) {
		snprintf(err, errlen, "cannot %s store %s: %s", d->store_created ? "create" : "open",
			 o->store, strerror(errno));
		return -1;
	}
	if (flock(d->store_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "store %s is in use by another fsprism mount", o->store);
		return -1;
	}
	/* --format --store-size over a store file: empty it, so that the new
	 * store gets the size asked for */
	if (fstat(d->store_fd, &st) == 0 && S_ISREG(st.st_mode) && o->ecfg.format &&
	    o->store_size_given && st.st_size && truncate(o->store, 0) < 0) {
		snprintf(err, errlen, "cannot resize store %s: %s", o->store, strerror(errno));
		return -1;
	}
	struct emu_store_cfg cfg = o->ecfg;
	cfg.devio = fsp_fs_devio;
	cfg.devio_arg = d->fs;
	char serr[PATH_MAX + 256];
	d->emu = emu_store_open(o->store, o->store_size, &cfg, &d->einfo, serr, sizeof(serr));
	if (!d->emu) {
		snprintf(err, errlen, "%s", serr);
		return -1;
	}
	fsp_fs_set_emu(d->fs, d->emu, o->hide_store);
	report_unclean(o->store, &d->einfo, o->ecfg.journal);
	int size_differs = o->store_size_given &&
		d->einfo.nblocks * d->einfo.block_size != o->store_size;
	int bs_differs = o->block_size_given && d->einfo.block_size != o->ecfg.block_size;
	if (!d->einfo.formatted && (size_differs || o->journal_size_given || bs_differs))
		fprintf(stderr, "fsprism mount: store %s already exists: %s applies only when "
			"a store is formatted (--format)\n", o->store,
			size_differs ? "--store-size" : bs_differs ? "--block-size" : "--journal-size");
	if (d->einfo.header_recovered)
		fprintf(stderr, "fsprism mount: store %s: its header was damaged; recovered from "
			"the backup header of its last clean close%s%s\n", o->store,
			d->einfo.root_recovered ? " (root restored)" : "",
			d->einfo.journal_reformatted ? " (journal recreated)" : "");
	struct bind_report br;
	int have_binding = bind_objects(d, &br) == 0;
	if (!have_binding)
		fprintf(stderr, "fsprism mount: cannot read all of %s: the store's objects keep "
			"the files of the last mount\n", o->backing);
	if (have_binding && br.refused) {
		snprintf(err, errlen, "store %s: %llu of the %llu objects it holds match no file "
			 "of %s: is that the directory this store was used with, and not a copy, "
			 "a restore or another one? No object was changed. --adopt-store mounts them "
			 "together anyway (the unmatched objects are kept as orphans)", o->store,
			 (unsigned long long)br.lost, (unsigned long long)br.was_bound, o->backing);
		return -1;
	}
	if (have_binding && br.found)
		fprintf(stderr, "fsprism mount: store %s: %llu orphaned object%s found %s file%s "
			"again\n", o->store, (unsigned long long)br.found, plural(br.found),
			br.found == 1 ? "its" : "their", plural(br.found));
	if (have_binding && br.orphans)
		fprintf(stderr, "fsprism mount: store %s: %llu object%s match%s no file of %s "
			"and %s kept as %s (mounting with the directory they belong to gets "
			"them back; --drop-orphans deletes them)\n", o->store,
			(unsigned long long)br.orphans, plural(br.orphans),
			br.orphans == 1 ? "es" : "", o->backing, br.orphans == 1 ? "is" : "are",
			br.orphans == 1 ? "an orphan" : "orphans");
	if (have_binding && br.dropped)
		fprintf(stderr, "fsprism mount: store %s: %llu orphaned object%s deleted "
			"(--drop-orphans)\n", o->store, (unsigned long long)br.dropped,
			plural(br.dropped));
	if (have_binding && br.dup_ids)
		fprintf(stderr, "fsprism mount: %llu file%s of %s named the object of another file "
			"(copies made in the backing directory, which copy no data): %llu got a "
			"copy-on-write clone of that file's data as it is now\n",
			(unsigned long long)br.dup_ids, plural(br.dup_ids), o->backing,
			(unsigned long long)br.dup_cloned);
	if (have_binding && br.ids_failed)
		fprintf(stderr, "fsprism mount: cannot keep the object ids with %llu file%s of %s "
			"(extended attribute %s: %s): a copy of the directory will not find "
			"their data\n", (unsigned long long)br.ids_failed, plural(br.ids_failed),
			o->backing, FSP_IDENT_XATTR, strerror(br.ids_errno));

	const struct emu_store_info *in = &d->einfo;
	fsp_store_set_attr(d->store, d->run, "emu.cow", emu_cow_mode_name(o->ecfg.cow));
	fsp_store_set_attr(d->store, d->run, "emu.journal",
			   emu_journal_mode_name(o->ecfg.journal));
	fsp_store_set_attr(d->store, d->run, "emu.alloc", emu_alloc_policy_name(o->ecfg.alloc));
	set_attr_u64(d, "emu.extent_cost_ns", o->ecfg.extent_ns);
	fsp_store_set_attr(d->store, d->run, "emu.store", o->store);
	set_attr_u64(d, "emu.formatted", (uint64_t)in->formatted);
	set_attr_u64(d, "emu.clean", (uint64_t)(in->formatted || in->clean));
	fsp_store_set_attr(d->store, d->run, "emu.replay.end", replay_end_attr(in));
	set_attr_u64(d, "emu.replay.txns", in->replayed ? in->replay.txns_replayed : 0);
	set_attr_u64(d, "emu.replay.blocks", in->replayed ? in->replay.blocks_replayed : 0);
	set_attr_u64(d, "emu.replay.discarded", in->replayed ? in->replay.txns_discarded : 0);
	set_attr_u64(d, "emu.damaged_objects", in->damaged_objects);
	set_attr_u64(d, "emu.bitmap_mismatches", in->bitmap_mismatches);
	set_attr_u64(d, "emu.header_recovered", (uint64_t)in->header_recovered);
	if (have_binding) {
		set_attr_u64(d, "emu.objects", br.objects);
		set_attr_u64(d, "emu.objects_bound", br.bound);
		set_attr_u64(d, "emu.objects_rebound", br.rekeyed);
		set_attr_u64(d, "emu.orphans", br.orphans);
		set_attr_u64(d, "emu.orphans_new", br.lost);
		set_attr_u64(d, "emu.orphans_found", br.found);
		set_attr_u64(d, "emu.orphans_removed", br.dropped);
	}
	return 0;
}

/* Collect one object's extents (emu_store_fiemap callback). */
static int file_add_extent(void *ctx, uint64_t logical, uint64_t physical, uint64_t len)
{
	struct fsp_emu_file *f = ctx;
	if ((f->nextents & (f->nextents - 1)) == 0) {
		/* grow at powers of two */
		size_t cap = f->nextents ? f->nextents * 2 : 4;
		void *v = realloc((void *)f->ext, cap * sizeof(*f->ext));
		if (!v)
			return -ENOMEM;
		f->ext = v;
	}
	((struct fsp_emu_extent *)f->ext)[f->nextents++] =
		(struct fsp_emu_extent){ logical, physical, len };
	return 0;
}

struct files_ctx {
	struct daemon *d;
	struct tree *tree;
};

static int file_add(void *ctx, uint64_t obj, uint64_t gen, uint64_t size)
{
	struct files_ctx *c = ctx;
	struct emu_files *fl = &c->d->files;
	(void)gen;
	if (fsp_grow((void **)&fl->f, &fl->cap, fl->n + 1, sizeof(*fl->f), 256))
		return -ENOMEM;
	struct fsp_emu_file *f = &fl->f[fl->n];
	memset(f, 0, sizeof(*f));
	f->obj = obj;
	f->size = size;
	uint64_t alloc = 0;
	if (emu_store_obj_size(c->d->emu, obj, &f->size, &alloc) == 0)
		f->allocated = alloc;
	struct tree_file *tf = c->tree ? tree_find(c->tree, obj) : NULL;
	f->path = strdup(tf && tf->path ? tf->path : "");
	fl->n++;
	if (!f->path)
		return -ENOMEM;
	int rc = emu_store_fiemap(c->d->emu, obj, file_add_extent, f);
	return rc == -ENOENT ? 0 : rc;
}

static void files_free(struct emu_files *fl)
{
	for (size_t i = 0; i < fl->n; i++) {
		free((void *)fl->f[i].path);
		free((void *)fl->f[i].ext);
	}
	free(fl->f);
	memset(fl, 0, sizeof(*fl));
}

/*
 * Unmount: drop the objects no name leads to any more, commit, note every
 * object's extents and path and the device counters, close the store (while
 * the oplog still takes its device IO). Returns 0 or -1 (reason on stderr).
 */
static int emu_end(struct daemon *d, int served)
{
	int rc = 0;
	if (served) {
		struct emu_cx cx = { 0 };
		struct tree t;
		uint64_t uuid = emu_store_uuid(d->emu);
		int have_tree = tree_walk(d->o->backing, &t, 1, 0, &uuid) == 0;
		if (have_tree) {
			/* files of this mount unlinked while the kernel still held
			 * them, or deleted in the backing directory: their objects
			 * go now (orphans stay) */
			struct obj_list l = { 0 };
			if (emu_store_foreach_obj(d->emu, obj_list_add, &l) == 0)
				for (size_t i = 0; i < l.n; i++)
					if (!(l.v[i][0] & EMU_ORPHAN_KEY) && !tree_find(&t, l.v[i][0]))
						emu_store_obj_remove(d->emu, &cx, l.v[i][0]);
			free(l.v);
			uint64_t failed = write_ids(d, &t);
			if (failed)
				fprintf(stderr, "fsprism mount: cannot keep the object ids with %llu "
					"file%s of %s (extended attribute %s): a copy of the "
					"directory will not find their data\n",
					(unsigned long long)failed, plural(failed), d->o->backing,
					FSP_IDENT_XATTR);
		}
		int c = emu_store_commit(d->emu, &cx);
		if (c < 0) {
			fprintf(stderr, "fsprism mount: commit of store %s failed: %s\n",
				d->o->store, strerror(-c));
			rc = -1;
		}
		struct files_ctx fc = { d, have_tree ? &t : NULL };
		if (emu_store_foreach_obj(d->emu, file_add, &fc) < 0) {
			fprintf(stderr, "fsprism mount: cannot list the files of store %s\n",
				d->o->store);
			files_free(&d->files);
		}
		tree_free(&t);
	}
	/* the counters include the close's own IO (checkpoint, flush, superblock) */
	int c = emu_store_close(d->emu, &d->acct);
	d->have_acct = 1;
	d->emu = NULL;
	if (c < 0) {
		fprintf(stderr, "fsprism mount: closing store %s failed: %s\n", d->o->store,
			strerror(-c));
		rc = -1;
	}
	return rc;
}

/* After the oplog has closed: dev.* attributes and the files' extents. */
static void emu_save(struct daemon *d)
{
	if (d->have_acct) {
		const struct emu_store_acct *a = &d->acct;
		set_attr_u64(d, "dev.ios", a->ios);
		set_attr_u64(d, "dev.seq_ios", a->seq_ios);
		set_attr_u64(d, "dev.streams_x1000", a->streams_x1000);
		set_attr_u64(d, "dev.windows", a->windows);
		set_attr_u64(d, "dev.fsyncs", a->fsyncs);
		set_attr_u64(d, "dev.commits", a->commits);
		set_attr_u64(d, "dev.fua_writes", a->fua_writes);
		set_attr_u64(d, "dev.user_write_bytes", a->user_write_bytes);
		set_attr_u64(d, "dev.user_read_bytes", a->user_read_bytes);
	}
	if (d->files.n)
		fsp_store_save_emu_files(d->store, d->run, d->files.f, d->files.n);
}

/* What the model drive charged, by knob (run attributes model.*). */
static void model_save(struct daemon *d)
{
	struct fsp_model_stats s;
	fsp_model_stats(d->model, &s);
	set_attr_u64(d, "model.ios", s.ios);
	set_attr_u64(d, "model.reads", s.reads);
	set_attr_u64(d, "model.writes", s.writes);
	set_attr_u64(d, "model.flushes", s.flushes);
	set_attr_u64(d, "model.switches", s.switches);
	set_attr_u64(d, "model.raw_hits", s.raw_hits);
	set_attr_u64(d, "model.cache_slow_writes", s.cache_slow);
	set_attr_u64(d, "model.switch_ns", s.switch_ns);
	set_attr_u64(d, "model.raw_ns", s.raw_ns);
	set_attr_u64(d, "model.flush_ns", s.flush_ns);
	set_attr_u64(d, "model.cache_ns", s.cache_ns);
	set_attr_u64(d, "model.base_ns", s.base_ns);
	set_attr_u64(d, "model.jitter_ns", s.jitter_ns);
}

/* The st_dev of the fsprism mount at mnt (the topmost there). 0, or -1. */
static int mount_dev(const char *mnt, dev_t *dev)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	int found = -1;
	if (fsp_mountinfo_open(&mi) < 0)
		return -1;
	while (fsp_mountinfo_next(&mi, &m) == 1)
		if (!strcmp(m.mount_point, mnt) && !strcmp(m.fstype, "fuse.fsprism")) {
			*dev = makedev(m.major, m.minor);
			found = 0;
		}
	fsp_mountinfo_close(&mi);
	return found;
}

/*
 * Once mounted: trace the mount's FUSE connection (its st_dev) and the block
 * layer of the device its data goes to (the backing directory's, or the
 * store's), as `fsprism run` does for its target. What cannot be traced is
 * said in one line and stored; the mount works the same either way.
 */
static void trace_begin(struct daemon *d)
{
	const struct mount_opts *o = d->o;
	char why[PATH_MAX + 512];
	dev_t conn = 0;
	if (o->no_trace) {
		fsp_ftrace_save_untraced(d->store, d->run, "--no-trace");
		fsp_btrace_save_untraced(d->store, d->run, "--no-trace");
		return;
	}
	/* the connection from the mount table: a stat of the mount point
	 * would wait for the workers, which do not run yet */
	if (mount_dev(o->mnt, &conn) != 0) {
		snprintf(why, sizeof(why), "cannot find %s in /proc/self/mountinfo", o->mnt);
	} else {
		d->trace_start_ns = fsp_now_ns();
		d->ft = fsp_ftrace_start(conn, NULL, why, sizeof(why));
	}
	if (!d->ft) {
		/* the same cause keeps the block layer from being traced */
		fprintf(stderr, "fsprism mount: kernel-side layers not traced: %s\n", why);
		fsp_ftrace_save_untraced(d->store, d->run, why);
		fsp_btrace_save_untraced(d->store, d->run, why);
		return;
	}
	struct fsp_btrace_devs devs;
	if (fsp_btrace_devs_for(o->emu ? o->store : o->backing, &devs, why, sizeof(why)) == 0)
		d->bt = fsp_btrace_start(&devs, NULL, why, sizeof(why));
	if (!d->bt) {
		fprintf(stderr, "fsprism mount: block layer not traced: %s\n", why);
		fsp_btrace_save_untraced(d->store, d->run, why);
	}
}

/* After unmount: detach, so that nothing stays attached. */
static void trace_stop(struct daemon *d)
{
	if (d->ft || d->bt)
		d->trace_end_ns = fsp_now_ns();
	fsp_ftrace_stop(d->ft);
	fsp_btrace_stop(d->bt);
}

/* Once the oplog is stored: the rows, in step 0 (the whole mount), and the
 * counts. A loss is printed, never silent. */
static int trace_save(struct daemon *d)
{
	int rc = 0;
	if (d->ft) {
		struct fsp_ftrace_counts c;
		if (fsp_ftrace_save(d->ft, d->store, d->run, 0) != 0)
			rc = -1;
		fsp_ftrace_counts(d->ft, &c);
		if (c.missed)
			fprintf(stderr, "fsprism mount: FUSE trace of %s missed %" PRIu64
				" request%s (fuse.trace_missed)\n", d->o->mnt, c.missed,
				plural(c.missed));
	}
	if (d->bt) {
		struct fsp_bt_window w = { d->trace_start_ns, d->trace_end_ns };
		if (fsp_btrace_save(d->bt, d->store, d->run, &w, 1) != 0)
			rc = -1;
	}
	fsp_ftrace_free(d->ft);
	fsp_btrace_free(d->bt);
	d->ft = NULL;
	d->bt = NULL;
	return rc;
}

/*
 * Everything up to a ready mount. Returns 0, or -1 with err filled. The
 * checks that need no database come first (the -o options are validated by
 * creating the session), so a bad input leaves the database untouched.
 */
static int daemon_start(struct daemon *d, char *err, size_t errlen)
{
	struct mount_opts *o = d->o;
	if (o->model_on && !(d->model = fsp_model_new(&o->model_cfg))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct fsp_fs_opts fo = {
		.attr_timeout = o->attr_timeout,
		.entry_timeout = o->entry_timeout,
		.writeback_cache = o->writeback_cache,
		.splice = o->splice,
		.max_write = o->max_write,
		.max_background = o->max_background,
		.timing = o->record_mode != FSP_RECORD_OFF,
		.track_inflight = o->count_inflight,
		.backing_aio = !o->backing_sync,
		.noatime = o->noatime,
		.nodiratime = o->nodiratime,
		.log = NULL, /* attached below, once the run exists */
		.inject = o->inject,
		.model = d->model,
	};
	d->fs = fsp_fs_new(o->backing, &fo, err, errlen);
	if (!d->fs)
		return -1;

	char opts[PATH_MAX * 2 + 256] = "default_permissions,subtype=fsprism,fsname=";
	opt_escape(opts, sizeof(opts), o->backing);
	if (o->fuse_opts && *o->fuse_opts) {
		strncat(opts, ",", sizeof(opts) - strlen(opts) - 1);
		strncat(opts, o->fuse_opts, sizeof(opts) - strlen(opts) - 1);
	}
	char *fargv[] = { "fsprism", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	fuse_last_msg[0] = '\0';
	d->se = fuse_session_new(&args, &fsp_fs_ops, sizeof(fsp_fs_ops), d->fs);
	fuse_opt_free_args(&args); /* libfuse may have copied and extended them */
	if (!d->se) {
		snprintf(err, errlen, "invalid -o options '%s'%s%s", o->fuse_opts ? o->fuse_opts : "",
			 fuse_last_msg[0] ? ": " : "", fuse_last_msg);
		return -1;
	}

	struct stat st;
	d->db_existed = stat(o->log_path, &st) == 0;
	char serr[PATH_MAX + 512];
	d->store = fsp_store_open(o->log_path, serr, sizeof(serr));
	if (!d->store) {
		snprintf(err, errlen, "%s", serr);
		return -1;
	}
	d->pid_fd = pidfile_open_locked(o->mnt, err, errlen);
	if (d->pid_fd < 0)
		return -1;
	struct fsp_run_info info = {
		.kind = "mount",
		.options = o->cmdline,
		.backing_path = o->backing,
		.record_mode = o->record,
	};
	d->run = fsp_store_begin_run(d->store, &info);
	if (d->run < 0) {
		snprintf(err, errlen, "cannot start a run in database %s", o->log_path);
		return -1;
	}
	/* the effective values, defaults included (the options column holds
	 * only what was typed) */
	set_attr_u64(d, "fuse.threads", o->threads);
	fsp_store_set_attr(d->store, d->run, "fuse.backing_io", o->backing_sync ? "sync" : "aio");
	if (o->inject) {
		char rules[4096];
		fsp_inject_format(o->inject, rules, sizeof(rules));
		fsp_store_set_attr(d->store, d->run, "fuse.inject", rules);
	}
	if (d->model) {
		char spec[512];
		fsp_model_format(&o->model_cfg, spec, sizeof(spec));
		fsp_store_set_attr(d->store, d->run, "fuse.device_model", spec);
	}
	if (o->emu && emu_begin(d, err, errlen) < 0)
		return -1;
	if (o->record_mode != FSP_RECORD_OFF) {
		d->log = fsp_oplog_open(d->store, d->run, o->record_mode, o->sample_n, 0);
		if (!d->log) {
			snprintf(err, errlen, "cannot start the operation log on %s: %s",
				 o->log_path, strerror(errno));
			return -1;
		}
		/* the workers, the aio reaper, the store's commit thread and
		 * this one: their rings are allocated and touched now, not
		 * while measuring */
		fsp_oplog_reserve(d->log, o->threads + 3);
		fsp_fs_set_log(d->fs, d->log);
	}
	if (d->emu) {
		int rc = emu_store_start(d->emu);
		if (rc < 0) {
			snprintf(err, errlen, "cannot start the commit thread of store %s: %s",
				 o->store, strerror(-rc));
			return -1;
		}
	}
	int rc = fsp_fs_start(d->fs);
	if (rc < 0) {
		snprintf(err, errlen, "cannot start asynchronous backing IO (libaio): %s%s",
			 strerror(-rc), rc == -EAGAIN ? " (see /proc/sys/fs/aio-max-nr)" : "");
		return -1;
	}
	if (fuse_set_signal_handlers(d->se) < 0) {
		snprintf(err, errlen, "cannot install signal handlers");
		return -1;
	}
	fuse_last_msg[0] = '\0';
	if (fuse_session_mount(d->se, o->mnt) < 0) {
		snprintf(err, errlen, "cannot mount %s%s%s", o->mnt,
			 fuse_last_msg[0] ? ": " : "", fuse_last_msg);
		return -1;
	}
	d->mounted = 1;
	trace_begin(d);
	return 0;
}

/*
 * A start that failed after the database was touched: remove what it wrote
 * (the whole file if this start created it), so no half-written run stays.
 */
static void forget_failed_run(struct daemon *d)
{
	const char *path = d->o->log_path;
	if (!d->db_existed) {
		char p[PATH_MAX + 8];
		unlink(path);
		snprintf(p, sizeof(p), "%s-wal", path);
		unlink(p);
		snprintf(p, sizeof(p), "%s-shm", path);
		unlink(p);
		return;
	}
	if (d->run <= 0)
		return;
	struct fsp_store *st = fsp_store_open(path, NULL, 0);
	if (!st)
		return;
	fsp_store_forget_run(st, d->run);
	fsp_store_close(st);
}

/* ---- the worker loop ---- */

/*
 * fsprism's own loop over /dev/fuse instead of fuse_session_loop_mt, so
 * that each request's kernel `unique` and receive time reach its record
 * (request.h, fsp_wire). As libfuse's loop does with max idle = max
 * threads: one worker at first, one more whenever a worker takes a
 * request and none is left waiting, up to --threads, none ever ended.
 * Where libfuse takes a mutex twice per request, the count of waiting
 * workers here is one atomic; the stamp is one vDSO clock read and a load
 * of the header already in the buffer. The workers block the signals, so
 * SIGINT/SIGTERM/SIGHUP reach the main thread, whose handler (libfuse's)
 * ends the session; the main thread then cancels the workers, which can
 * be cancelled only while they wait for a request.
 */
__thread struct fsp_wire fsp_wire;

struct worker {
	pthread_t th;
	struct fuse_buf buf; /* libfuse allocates it at the first request */
	struct pool *pool;
};

struct pool {
	struct fuse_session *se;
	int timing;
	unsigned max;
	struct worker *w;      /* max of them */
	unsigned started;      /* written under grow_lock */
	unsigned waiting;      /* workers in fuse_session_receive_buf (atomic) */
	pthread_mutex_t grow_lock;
	sem_t finish;          /* posted by a worker that ends */
	int error;             /* a read of /dev/fuse failed (-errno) */
};

static void *worker_main(void *arg);

/* Start one more worker if there is room. 0, or -1. */
static int pool_grow(struct pool *p)
{
	int rc = 0;
	pthread_mutex_lock(&p->grow_lock);
	if (p->started < p->max) {
		struct worker *w = &p->w[p->started];
		w->pool = p;
		__atomic_add_fetch(&p->waiting, 1, __ATOMIC_RELAXED);
		if (pthread_create(&w->th, NULL, worker_main, w) == 0) {
			__atomic_store_n(&p->started, p->started + 1, __ATOMIC_RELEASE);
		} else {
			__atomic_sub_fetch(&p->waiting, 1, __ATOMIC_RELAXED);
			rc = -1;
		}
	}
	pthread_mutex_unlock(&p->grow_lock);
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->pool;
	struct fuse_session *se = p->se;
	while (!fuse_session_exited(se)) {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		int res = fuse_session_receive_buf(se, &w->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) { /* 0: unmounted (ENODEV), libfuse ended the session */
			if (res < 0) {
				__atomic_store_n(&p->error, res, __ATOMIC_RELAXED);
				fuse_session_exit(se);
			}
			break;
		}
		if (fuse_session_exited(se))
			break;
		const struct fuse_in_header *in = NULL;
		if (!(w->buf.flags & FUSE_BUF_IS_FD) && (size_t)res >= sizeof(*in))
			in = w->buf.mem;
		if (p->timing) {
			/* spliced (--splice): the header is still in the pipe */
			fsp_wire.recv_ns = fsp_now_ns();
			fsp_wire.unique = in ? in->unique : 0;
		}
		/* the last waiting worker took this one: another waits (not for
		 * forgets, which come in bursts and need no reply) */
		if (__atomic_sub_fetch(&p->waiting, 1, __ATOMIC_RELAXED) == 0 &&
		    __atomic_load_n(&p->started, __ATOMIC_ACQUIRE) < p->max &&
		    !(in && (in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET)))
			pool_grow(p);
		fuse_session_process_buf(se, &w->buf);
		__atomic_add_fetch(&p->waiting, 1, __ATOMIC_RELAXED);
	}
	sem_post(&p->finish);
	return NULL;
}

/*
 * Serve until the session ends (unmount, a signal, a read error). -1 if
 * it ended on an error. --clone-fd needs a descriptor per thread, which
 * libfuse's public interface cannot read: there libfuse's own loop serves,
 * and the records carry no unique or receive time (0).
 */
static int serve(struct daemon *d)
{
	if (d->o->clone_fd) {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_max_threads(cfg, d->o->threads);
		/* Keep every thread: creating them per burst costs latency. */
		fuse_loop_cfg_set_idle_threads(cfg, d->o->threads);
		fuse_loop_cfg_set_clone_fd(cfg, 1);
		int res = fuse_session_loop_mt(d->se, cfg);
		fuse_loop_cfg_destroy(cfg);
		return res < 0 ? -1 : 0;
	}
	struct pool p = {
		.se = d->se,
		.timing = d->o->record_mode != FSP_RECORD_OFF,
		.max = d->o->threads ? d->o->threads : 1,
	};
	p.w = calloc(p.max, sizeof(*p.w));
	if (!p.w || sem_init(&p.finish, 0, 0) != 0) {
		fprintf(stderr, "fsprism mount: cannot start the worker threads: out of memory\n");
		free(p.w);
		return -1;
	}
	pthread_mutex_init(&p.grow_lock, NULL);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int rc = pool_grow(&p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		fprintf(stderr, "fsprism mount: cannot start a worker thread: %s\n", strerror(errno));
		fuse_session_exit(d->se);
	}
	/* a signal interrupts the wait (libfuse's handlers do not restart) */
	while (!fuse_session_exited(d->se))
		sem_wait(&p.finish);
	pthread_mutex_lock(&p.grow_lock); /* no worker starts another now */
	unsigned n = p.started;
	pthread_mutex_unlock(&p.grow_lock);
	for (unsigned i = 0; i < n; i++)
		pthread_cancel(p.w[i].th);
	for (unsigned i = 0; i < n; i++) {
		pthread_join(p.w[i].th, NULL);
		free(p.w[i].buf.mem);
	}
	sem_destroy(&p.finish);
	pthread_mutex_destroy(&p.grow_lock);
	free(p.w);
	return p.error < 0 || rc < 0 ? -1 : 0;
}

/* Serve until unmounted or signalled, then store everything and clean up. */
static int daemon_finish(struct daemon *d, int serve_it)
{
	int status = 0;
	if (serve_it) {
		int res = serve(d);
		fsp_fs_stop(d->fs); /* IO still in flight is answered first */
		if (res < 0)
			status = 1;
	}
	trace_stop(d);
	if (d->se) {
		/* Unmount unless someone already did (fsprism umount, fusermount3 -u). */
		char fstype[64];
		if (d->mounted && fsp_mountinfo_find(d->o->mnt, fstype, sizeof(fstype)) == 1 &&
		    !strcmp(fstype, "fuse.fsprism"))
			fuse_session_unmount(d->se);
		fuse_remove_signal_handlers(d->se);
		fuse_session_destroy(d->se);
	}
	/* no request runs now; the store's last IO still goes to the oplog */
	if (d->emu && emu_end(d, serve_it) < 0)
		status = 1;
	if (d->log) {
		if (fsp_oplog_close(d->log) < 0)
			status = 1;
	} else if (d->store && d->run > 0) {
		fsp_store_end_run(d->store, d->run, 0, 0);
	}
	if (d->store && d->run > 0 && d->o->count_inflight)
		set_attr_u64(d, "max_inflight_io", fsp_fs_max_inflight(d->fs));
	uint64_t mapped, huge;
	fsp_fs_buffer_usage(d->fs, &mapped, &huge);
	if (d->store && d->run > 0 && mapped) {
		char v[32];
		snprintf(v, sizeof(v), "%.3f", 100.0 * (double)huge / (double)mapped);
		fsp_store_set_attr(d->store, d->run, "fuse.huge_buffer_pct", v);
	}
	if (d->store && d->run > 0 && !d->o->emu) {
		/* O_DIRECT requests the backing O_DIRECT fd could not serve */
		set_attr_u64(d, "fuse.direct_fallbacks", fsp_fs_direct_fallbacks(d->fs));
	}
	if (d->store && d->run > 0 && serve_it) {
		emu_save(d);
		if (trace_save(d) < 0)
			status = 1;
	}
	if (d->store && d->run > 0 && d->model)
		model_save(d);
	fsp_ftrace_free(d->ft); /* a failed start's */
	fsp_btrace_free(d->bt);
	files_free(&d->files);
	if (d->store) {
		fsp_store_close(d->store);
		d->store = NULL;
		if (!serve_it)
			forget_failed_run(d);
	}
	fsp_fs_free(d->fs);
	fsp_model_free(d->model);
	d->model = NULL;
	if (d->store_fd >= 0) {
		/* a store file this failed start created goes again */
		if (!serve_it && d->store_created)
			unlink(d->o->store);
		close(d->store_fd);
		d->store_fd = -1;
	}
	if (d->pid_fd >= 0) {
		char path[PATH_MAX];
		fsp_daemon_pidfile_path(d->o->mnt, path, sizeof(path));
		unlink(path);
		/* pid_fd stays open: its lock goes with the process, so when
		 * `fsprism umount` stops waiting, the daemon is gone too. */
	}
	return status;
}

void fsp_mount_opts_free(struct mount_opts *o)
{
	free(o->log_path);
	free(o->cmdline);
	free(o->fuse_opts_buf);
	fsp_inject_free(o->inject);
	o->inject = NULL;
	free(o->inject_text);
	o->inject_text = NULL;
}

int fsp_daemon_run(struct mount_opts *opts)
{
	/* what follows works on its own copy, o, and frees it */
	struct mount_opts o = *opts;
	int rc;
	fuse_set_log_func(capture_fuse_log);
	umask(0); /* the kernel already applied the caller's umask */

	struct daemon d = { .o = &o, .pid_fd = -1, .store_fd = -1 };
	char err[2 * PATH_MAX + 512];
	if (o.foreground) {
		if (daemon_start(&d, err, sizeof(err)) < 0) {
			fprintf(stderr, "fsprism mount: %s\n", err);
			daemon_finish(&d, 0);
			fsp_mount_opts_free(&o);
			return 1;
		}
		fuse_set_log_func(NULL);
		rc = daemon_finish(&d, 1);
		fsp_mount_opts_free(&o);
		return rc;
	}

	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "fsprism mount: pipe: %s\n", strerror(errno));
		fsp_mount_opts_free(&o);
		return 1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fsprism mount: fork: %s\n", strerror(errno));
		fsp_mount_opts_free(&o);
		return 1;
	}
	if (pid > 0) {
		close(pfd[1]);
		char msg[2 * PATH_MAX + 512];
		size_t n = 0;
		ssize_t r;
		while (n < sizeof(msg) - 1 &&
		       ((r = read(pfd[0], msg + n, sizeof(msg) - 1 - n)) > 0 ||
			(r < 0 && errno == EINTR)))
			if (r > 0)
				n += (size_t)r;
		msg[n] = '\0';
		close(pfd[0]);
		fsp_mount_opts_free(&o);
		if (!strcmp(msg, "ok"))
			return 0;
		int wst;
		waitpid(pid, &wst, 0);
		if (n)
			fprintf(stderr, "fsprism mount: %s\n", msg);
		else
			fprintf(stderr, "fsprism mount: the daemon exited during start-up\n");
		return 1;
	}

	/* child: the daemon */
	close(pfd[0]);
	setsid();
	if (daemon_start(&d, err, sizeof(err)) < 0) {
		daemon_finish(&d, 0);
		if (write(pfd[1], err, strlen(err)) < 0) {
			/* the parent is gone; nothing else to tell */
		}
		fsp_mount_opts_free(&o);
		exit(1); /* exit, not _exit: sanitizer builds check for leaks */
	}
	/* From now on libfuse reports to stderr: /dev/null, or the file named
	 * by FSPRISM_DAEMON_LOG (for debugging and the tests). */
	fuse_set_log_func(NULL);
	int null = open("/dev/null", O_RDWR);
	const char *dlog = getenv("FSPRISM_DAEMON_LOG");
	int errfd = dlog ? open(dlog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(errfd >= 0 ? errfd : null, 2);
		if (null > 2)
			close(null);
	}
	if (errfd > 2)
		close(errfd);
	if (chdir("/") < 0) {
		/* harmless: every path is absolute */
	}
	if (write(pfd[1], "ok", 2) < 0) {
		/* parent gone: keep serving */
	}
	close(pfd[1]);
	rc = daemon_finish(&d, 1);
	fsp_mount_opts_free(&o);
	exit(rc);
}

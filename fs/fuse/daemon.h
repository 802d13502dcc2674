/*
 * daemon.h - the fsprism mount daemon: from options that src/cli/mount.c
 * has validated to a served mount, and at its end every record stored.
 *
 * The daemon holds an flock on a pid file (fsp_daemon_pidfile_path) for as
 * long as it runs, including the final flush of records: `fsprism umount`
 * unmounts, then waits on that lock until the database is complete.
 */
#ifndef FSP_FUSE_DAEMON_H
#define FSP_FUSE_DAEMON_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "fs/emu/store.h"
#include "fs/model/model.h"
#include "src/db/oplog.h"

struct fsp_inject;

/* The options of one mount, each checked before anything is mounted. */
struct mount_opts {
	int foreground;
	char *fuse_opts;      /* -o, as given; then without the atime options
			       * libfuse does not know (atime_opts) */
	char *fuse_opts_buf;  /* owns fuse_opts once rewritten */
	int noatime, nodiratime; /* -o noatime / nodiratime: O_NOATIME opens */
	char *log_path;       /* absolute */
	const char *record;   /* as given */
	enum fsp_record_mode record_mode;
	unsigned sample_n;
	unsigned threads;
	int clone_fd;
	int writeback_cache;
	int splice;
	int count_inflight;
	int no_trace;          /* --no-trace: no eBPF trace of the transport and device */
	int backing_sync;      /* --backing-io=sync */
	unsigned max_write;
	unsigned max_background;
	double attr_timeout, entry_timeout;
	char backing[PATH_MAX];
	char mnt[PATH_MAX];
	char *cmdline;        /* for the run's options column */
	/* emulation: on when --store is given or --cow / --journal is not off */
	int emu;
	struct emu_store_cfg ecfg;
	char store[PATH_MAX]; /* absolute */
	int store_given;
	int hide_store;       /* the store is BACKING/.fsprism-store */
	uint64_t store_size;  /* a new store file's size */
	int store_size_given;
	int journal_size_given;
	int block_size_given;
	int destroy_data;
	int adopt_store;      /* --adopt-store: mount though most objects have no file */
	int drop_orphans;     /* --drop-orphans: delete the objects no file names */
	int emu_opt_given;    /* an emulation-only option, for "needs --store ..." */
	const char *emu_opt_name;
	char *inject_text;    /* every --inject, joined with ';' */
	struct fsp_inject *inject; /* the rules parsed (fs/fuse/inject.h) */
	int model_on;         /* --device-model given */
	struct fsp_model_cfg model_cfg;
};

/*
 * Mount and serve: with -f (foreground) until unmounted or signalled, else
 * in a forked daemon, returning once the mount is ready or after printing
 * the daemon's one-line error. Takes o over (its strings are freed). Returns
 * the exit status (0, 1); the forked daemon itself exits.
 */
int fsp_daemon_run(struct mount_opts *o);

/* Free what the options own (parsing allocates the paths). */
void fsp_mount_opts_free(struct mount_opts *o);

/* The pid file whose flock says "the daemon of mnt still runs / flushes". */
void fsp_daemon_pidfile_path(const char *mnt, char *out, size_t len);

#endif

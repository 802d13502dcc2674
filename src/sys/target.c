/*
 * target.c - benchmark targets: block devices and regular files, their
 * geometry, and the checks that refuse to write a block device that holds
 * data or is in use.
 *
 * Devices are compared by dev_t, never by name: /dev/sda, /dev/disk/by-id/...
 * and a udev symlink are all the same device, and fio's name comparison
 * misses /dev/sdX1 being mounted when /dev/sdX is the target. A device is
 * checked together with all of its partitions (found in sysfs).
 *
 * Being mounted (also as one device of a multi-device btrfs), held (dm,
 * md, bcache, a loop device on top), used as swap or opened exclusively by
 * someone else is always refused: writing under a live user corrupts it.
 * A signature (file system, RAID member, partition table, an fsprism
 * store on the device or one of its partitions) only says there may be
 * data, so --destroy-data overrides that one check.
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/fs.h>
#include <blkid.h>
#include "src/base/err.h"
#include "fs/emu/store.h"
#include "src/sys/mountinfo.h"
#include "src/sys/target.h"
#include "src/sys/sysfs.h"

/* The device and its partitions: what a write to the device reaches. */
#define MAX_PARTS 300
struct devset {
	int n;
	dev_t dev[MAX_PARTS];
	char name[MAX_PARTS][264]; /* "/dev/loop3p1" */
};

static int devset_find(const struct devset *ds, dev_t d)
{
	for (int i = 0; i < ds->n; i++)
		if (ds->dev[i] == d)
			return i;
	return -1;
}

/* Entry 0 is the device itself (named as the user gave it), then partitions. */
static void devset_build(struct devset *ds, const char *path, dev_t rdev)
{
	char dir[128], p[400], line[64];
	ds->n = 1;
	ds->dev[0] = rdev;
	snprintf(ds->name[0], sizeof ds->name[0], "%s", path);

	snprintf(dir, sizeof dir, "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && ds->n < MAX_PARTS) {
		unsigned maj, min;
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s/partition", dir, e->d_name);
		if (access(p, F_OK))
			continue;
		snprintf(p, sizeof p, "%s/%s/dev", dir, e->d_name);
		if (fsp_sysfs_line(p, line, sizeof line) ||
		    sscanf(line, "%u:%u", &maj, &min) != 2)
			continue;
		ds->dev[ds->n] = makedev(maj, min);
		snprintf(ds->name[ds->n], sizeof ds->name[0], "/dev/%s", e->d_name);
		ds->n++;
	}
	closedir(d);
}

/* Index in ds of the device that a path names, if it is a block device in ds. */
static int devset_find_path(const struct devset *ds, const char *path)
{
	struct stat st;
	if (path[0] != '/' || stat(path, &st) || !S_ISBLK(st.st_mode))
		return -1;
	return devset_find(ds, st.st_rdev);
}

/* Describe device i of ds as the subject of a refusal message. */
static void subject(const struct devset *ds, int i, char *buf, size_t len)
{
	if (i == 0)
		snprintf(buf, len, "%s is", ds->name[0]);
	else
		snprintf(buf, len, "%s has a partition %s that is", ds->name[0],
			 ds->name[i]);
}

/*
 * Mounted? Matches the mountinfo major:minor field, and also the mount
 * source by its dev_t (btrfs reports an anonymous major:minor).
 */
static int check_mounted(const struct devset *ds, char *err, size_t errlen)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	if (fsp_mountinfo_open(&mi) < 0) {
		fsp_set_err(err, errlen, "cannot read /proc/self/mountinfo: %s",
			    strerror(errno));
		return -1;
	}
	int found = 0;
	while (!found && fsp_mountinfo_next(&mi, &m)) {
		int i = devset_find(ds, makedev(m.major, m.minor));
		if (i < 0)
			i = devset_find_path(ds, m.source);
		if (i < 0)
			continue;
		if (i == 0)
			fsp_set_err(err, errlen, "%s is mounted on %s (unmount it first; "
				    "--destroy-data does not override this)",
				    ds->name[0], m.mount_point);
		else
			fsp_set_err(err, errlen, "%s has a mounted partition %s (on %s; "
				    "unmount it first, --destroy-data does not "
				    "override this)", ds->name[0], ds->name[i], m.mount_point);
		found = 1;
	}
	fsp_mountinfo_close(&mi);
	return found ? -1 : 0;
}

/* Held by a stacked driver (device mapper, md, bcache)? */
static int check_holders(const struct devset *ds, char *err, size_t errlen)
{
	for (int i = 0; i < ds->n; i++) {
		char dir[128];
		snprintf(dir, sizeof dir, "/sys/dev/block/%u:%u/holders",
			 major(ds->dev[i]), minor(ds->dev[i]));
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *e;
		char holder[256] = "";
		while ((e = readdir(d))) {
			if (e->d_name[0] != '.') {
				snprintf(holder, sizeof holder, "%s", e->d_name);
				break;
			}
		}
		closedir(d);
		if (holder[0]) {
			char subj[600];
			subject(ds, i, subj, sizeof subj);
			fsp_set_err(err, errlen, "%s in use by /dev/%s (a holder such as "
				    "dm or md; --destroy-data does not override this)",
				    subj, holder);
			return -1;
		}
	}
	return 0;
}

static int check_swap(const struct devset *ds, char *err, size_t errlen)
{
	FILE *f = fopen("/proc/swaps", "re");
	if (!f)
		return 0; /* no swap support: nothing to find */
	char line[4200];
	int found = 0;
	if (!fgets(line, sizeof line, f)) { /* header */
		fclose(f);
		return 0;
	}
	while (!found && fgets(line, sizeof line, f)) {
		char path[4096];
		if (sscanf(line, "%4095s", path) != 1)
			continue;
		fsp_unescape_octal(path);
		int i = devset_find_path(ds, path);
		if (i >= 0) {
			char subj[600];
			subject(ds, i, subj, sizeof subj);
			fsp_set_err(err, errlen, "%s in use as swap (swapoff it first)",
				    subj);
			found = 1;
		}
	}
	fclose(f);
	return found ? -1 : 0;
}

/*
 * The devices of a mounted btrfs, each as dev_t, from
 * /sys/fs/btrfs/FSID/devices (present only while it is mounted). Returns
 * how many were found, at most max.
 */
static int btrfs_members(const char *fsid, dev_t *out, int max)
{
	char dir[300];
	snprintf(dir, sizeof dir, "/sys/fs/btrfs/%s/devices", fsid);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int n = 0;
	while (n < max && (e = readdir(d))) {
		char p[600], line[64];
		unsigned maj, min;
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s/dev", dir, e->d_name);
		if (!fsp_sysfs_line(p, line, sizeof line) &&
		    sscanf(line, "%u:%u", &maj, &min) == 2)
			out[n++] = makedev(maj, min);
	}
	closedir(d);
	return n;
}

/*
 * A device of a mounted multi-device btrfs: the mount table names only one
 * of its devices and sysfs has no holder link, so neither check above sees
 * the others.
 */
static int check_btrfs_member(const struct devset *ds, char *err, size_t errlen)
{
	DIR *top = opendir("/sys/fs/btrfs");
	if (!top)
		return 0; /* no btrfs in this kernel */
	struct dirent *f;
	int found = -1;
	dev_t members[64];
	int n = 0;
	char fsid[256] = "";
	while (found < 0 && (f = readdir(top))) {
		if (f->d_name[0] == '.')
			continue;
		n = btrfs_members(f->d_name, members, 64);
		for (int k = 0; k < n && found < 0; k++)
			found = devset_find(ds, members[k]);
		if (found >= 0)
			snprintf(fsid, sizeof fsid, "%s", f->d_name);
	}
	closedir(top);
	if (found < 0)
		return 0;
	/* where it is mounted: the mount whose source is one of its devices */
	char where[4200] = "";
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	if (fsp_mountinfo_open(&mi) == 0) {
		while (!where[0] && fsp_mountinfo_next(&mi, &m)) {
			struct stat st;
			if (strcmp(m.fstype, "btrfs") || stat(m.source, &st) ||
			    !S_ISBLK(st.st_mode))
				continue;
			for (int k = 0; k < n; k++)
				if (members[k] == st.st_rdev)
					snprintf(where, sizeof where, " on %s",
						 m.mount_point);
		}
		fsp_mountinfo_close(&mi);
	}
	char subj[600];
	subject(ds, found, subj, sizeof subj);
	fsp_set_err(err, errlen, "%s a device of the btrfs %s mounted%s (unmount it "
		    "first; --destroy-data does not override this)", subj, fsid, where);
	return -1;
}

/* A loop device on top of the device does not show up as a holder. */
static int check_loop_backing(const struct devset *ds, char *err, size_t errlen)
{
	DIR *d = opendir("/sys/block");
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d))) {
		char p[400], backing[4096];
		if (strncmp(e->d_name, "loop", 4))
			continue;
		snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", e->d_name);
		if (fsp_sysfs_line(p, backing, sizeof backing))
			continue;
		int i = devset_find_path(ds, backing);
		if (i >= 0) {
			char subj[600];
			subject(ds, i, subj, sizeof subj);
			fsp_set_err(err, errlen, "%s the backing device of /dev/%s "
				    "(detach it first; --destroy-data does not "
				    "override this)", subj, e->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found ? -1 : 0;
}

/*
 * O_EXCL on a block device claims it: the open fails with EBUSY while the
 * kernel or another program (mkfs, a mount in another namespace) holds it.
 */
static int check_exclusive(const struct devset *ds, char *err, size_t errlen)
{
	for (int i = 0; i < ds->n; i++) {
		const char *path = ds->name[i];
		int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno == EBUSY) {
			char subj[600];
			subject(ds, i, subj, sizeof subj);
			fsp_set_err(err, errlen, "%s busy (another program or a mount in "
				    "another namespace has it open exclusively)", subj);
			return -1;
		}
		if (i == 0) {
			fsp_set_err(err, errlen, "cannot open %s: %s", path,
				    strerror(errno));
			return -1;
		}
		/* a partition without a /dev node: the whole-disk open covers it */
	}
	return 0;
}

/* Start of partition i of ds in bytes (sysfs counts 512-byte sectors). */
static int part_start(const struct devset *ds, int i, uint64_t *bytes)
{
	char p[128], line[64];
	snprintf(p, sizeof p, "/sys/dev/block/%u:%u/start", major(ds->dev[i]),
		 minor(ds->dev[i]));
	if (fsp_sysfs_line(p, line, sizeof line))
		return -1;
	*bytes = strtoull(line, NULL, 10) * 512;
	return 0;
}

/*
 * An fsprism store (fs/emu/store.h) is data libblkid does not know: look
 * for its magic at the start of the device and of each partition, read
 * through the whole device so a partition needs no /dev node.
 */
static int check_fsprism_store(const struct devset *ds, char *err, size_t errlen)
{
	int fd = open(ds->name[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fsp_set_err(err, errlen, "cannot open %s: %s", ds->name[0], strerror(errno));
		return -1;
	}
	int found = -1;
	for (int i = 0; i < ds->n && found < 0; i++) {
		unsigned char head[16];
		uint64_t off = 0;
		if (i > 0 && part_start(ds, i, &off))
			continue;
		if (pread(fd, head, sizeof head, (off_t)off) == (ssize_t)sizeof head &&
		    emu_store_has_magic(head, sizeof head))
			found = i;
	}
	close(fd);
	/* a store whose first blocks were overwritten is still recoverable from
	 * its backup header at the end of the device: still the user's data */
	if (found < 0 && emu_store_probe(ds->name[0]) == 2)
		found = 0;
	if (found < 0)
		return 0;
	if (found == 0)
		fsp_set_err(err, errlen, "%s holds an fsprism store (use --destroy-data "
			    "to overwrite it)", ds->name[0]);
	else
		fsp_set_err(err, errlen, "%s has a partition %s that holds an fsprism "
			    "store (use --destroy-data to overwrite it)", ds->name[0],
			    ds->name[found]);
	return -1;
}

/* libblkid: file system, RAID member or partition table on the device? */
static const char *article(const char *word)
{
	return strchr("aeiouAEIOU", word[0]) && word[0] ? "an" : "a";
}

static int check_signature(const char *path, char *err, size_t errlen)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	if (!pr) {
		fsp_set_err(err, errlen, "cannot probe %s for signatures: %s", path,
			    strerror(errno ? errno : EIO));
		return -1;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);

	int rc = blkid_do_safeprobe(pr);
	int ret = 0;
	const char *type = NULL, *usage = NULL, *pttype = NULL;
	if (rc == 0) {
		blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
		blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
		blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
		if (type) {
			const char *what = "file system";
			if (usage && !strcmp(usage, "raid"))
				what = "RAID member";
			else if (usage && !strcmp(usage, "crypto"))
				what = "encrypted volume";
			else if (usage && strcmp(usage, "filesystem"))
				what = usage;
			fsp_set_err(err, errlen, "%s carries %s %s %s signature (use "
				    "--destroy-data to overwrite it)", path,
				    article(type), type, what);
		} else if (pttype) {
			fsp_set_err(err, errlen, "%s carries %s %s partition table (use "
				    "--destroy-data to overwrite it)", path,
				    article(pttype), pttype);
		} else {
			fsp_set_err(err, errlen, "%s carries an unidentified signature "
				    "(use --destroy-data to overwrite it)", path);
		}
		ret = -1;
	} else if (rc == -2) {
		fsp_set_err(err, errlen, "%s carries several conflicting signatures "
			    "(use --destroy-data to overwrite them)", path);
		ret = -1;
	} else if (rc < 0) {
		fsp_set_err(err, errlen, "cannot probe %s for signatures: %s", path,
			    strerror(errno ? errno : EIO));
		ret = -1;
	}
	blkid_free_probe(pr);
	return ret;
}

int fsp_target_check_raw_write(const char *dev, int destroy_data, char *err,
			       size_t errlen)
{
	struct stat st;
	if (stat(dev, &st)) {
		fsp_set_err(err, errlen, "cannot access %s: %s", dev, strerror(errno));
		return -1;
	}
	if (!S_ISBLK(st.st_mode)) {
		fsp_set_err(err, errlen, "%s is not a block device", dev);
		return -1;
	}
	struct devset *ds = malloc(sizeof *ds);
	if (!ds) {
		fsp_set_err(err, errlen, "out of memory");
		return -1;
	}
	devset_build(ds, dev, st.st_rdev);

	/* Most specific first, so the message says why, not just "busy". */
	int rc = check_mounted(ds, err, errlen);
	if (!rc)
		rc = check_holders(ds, err, errlen);
	if (!rc)
		rc = check_btrfs_member(ds, err, errlen);
	if (!rc)
		rc = check_swap(ds, err, errlen);
	if (!rc)
		rc = check_loop_backing(ds, err, errlen);
	if (!rc)
		rc = check_exclusive(ds, err, errlen);
	if (!rc && !destroy_data)
		rc = check_fsprism_store(ds, err, errlen);
	if (!rc && !destroy_data)
		rc = check_signature(dev, err, errlen);
	free(ds);
	return rc;
}

int fsp_target_is_blockdev(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return -1;
	return S_ISBLK(st.st_mode) ? 1 : 0;
}

/* Logical block size of the block device dev_t d, from sysfs; 0 if unknown. */
static unsigned sysfs_logical_bs(dev_t d)
{
	char p[160], line[32];
	/* a partition has no queue/ of its own: its disk's applies */
	const char *rel[] = { "queue/logical_block_size",
			      "../queue/logical_block_size" };
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		snprintf(p, sizeof p, "/sys/dev/block/%u:%u/%s", major(d),
			 minor(d), rel[i]);
		if (!fsp_sysfs_line(p, line, sizeof line)) {
			unsigned v = (unsigned)strtoul(line, NULL, 10);
			if (v >= 512)
				return v;
		}
	}
	return 0;
}

/*
 * A file system with an anonymous st_dev (btrfs, FUSE, overlay) does not
 * lead to its device through sysfs; its mountinfo source may (btrfs's
 * /dev/loop3). Returns 0 if not found.
 */
static unsigned mount_source_logical_bs(dev_t anon)
{
	struct fsp_mountinfo mi;
	struct fsp_mount m;
	unsigned bs = 0;
	if (fsp_mountinfo_open(&mi) < 0)
		return 0;
	while (!bs && fsp_mountinfo_next(&mi, &m)) {
		struct stat st;
		if (makedev(m.major, m.minor) == anon && m.source[0] == '/' &&
		    !stat(m.source, &st) && S_ISBLK(st.st_mode))
			bs = sysfs_logical_bs(st.st_rdev);
	}
	fsp_mountinfo_close(&mi);
	return bs;
}

int fsp_target_geometry(const char *path, uint64_t *size, unsigned *logical_bs)
{
	struct stat st;
	if (stat(path, &st))
		return -1;
	if (S_ISBLK(st.st_mode)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		uint64_t bytes = 0;
		int lbs = 0;
		if (ioctl(fd, BLKGETSIZE64, &bytes) || ioctl(fd, BLKSSZGET, &lbs)) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		close(fd);
		*size = bytes;
		*logical_bs = lbs > 0 ? (unsigned)lbs : 512;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	/*
	 * O_DIRECT on a file must be aligned to the logical block size of the
	 * device underneath the file system. When that device cannot be found
	 * (FUSE, overlay, network file systems), 4096 -- the page size -- is
	 * the alignment every such file system accepts.
	 */
	unsigned bs = major(st.st_dev) ? sysfs_logical_bs(st.st_dev) : 0;
	if (!bs)
		bs = mount_source_logical_bs(st.st_dev);
	*size = (uint64_t)st.st_size;
	*logical_bs = bs ? bs : 4096;
	return 0;
}

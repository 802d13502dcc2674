/*
 * block.c - the block-layer trace, user side (block.h): which devices to
 * follow, the filter and in-flight slots block.bpf.c is loaded with through
 * its generated skeleton, its requests drained into bounded memory (rows.h)
 * during the run (the load, attach and consumer thread are every trace's:
 * ring.h), and storing the rows after it.
 *
 * The BPF side submits with BPF_RB_NO_WAKEUP (the default wakes the
 * consumer whenever it has caught up, which at a high rate is nearly every
 * request): the consumer instead drains every FSP_TRING_POLL_MS, so the traced IO
 * path pays no wakeups. The ring buffer (8 MiB: 116508 records of 64 bytes
 * and an 8-byte header) holds FSP_TRING_POLL_MS of requests at rates far above any
 * device here.
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "src/base/err.h"
#include "src/sys/mountinfo.h"
#include "src/sys/sysfs.h"
#include "src/db/block_ios.h"
#include "src/trace/block.h"
#include "src/trace/ring.h"

#define DEFAULT_RING_BYTES (8u << 20)

/* ---- which devices ------------------------------------------------------------- */

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	if (fsp_sysfs_line(path, buf, sizeof(buf)))
		return -1;
	*v = strtoull(buf, &end, 10);
	return end == buf ? -1 : 0;
}

static int parse_devno(const char *s, unsigned *ma, unsigned *mi)
{
	return sscanf(s, "%u:%u", ma, mi) == 2 ? 0 : -1;
}

static int add_range(struct fsp_btrace_devs *d, uint32_t dev, uint64_t first, uint64_t end)
{
	for (unsigned i = 0; i < d->n; i++)
		if (d->dev[i] == dev) { /* two ranges on one disk: their span */
			if (first < d->first[i])
				d->first[i] = first;
			if (end > d->end[i])
				d->end[i] = end;
			return 0;
		}
	if (d->n == FSP_BTRACE_MAX_DEVS)
		return -1;
	d->dev[d->n] = dev;
	d->first[d->n] = first;
	d->end[d->n] = end;
	d->n++;
	return 0;
}

static uint32_t kdev(unsigned ma, unsigned mi)
{
	return (uint32_t)ma << 20 | mi;
}

static int resolve(unsigned ma, unsigned mi, struct fsp_btrace_devs *d, int depth,
		   char *why, size_t whylen)
{
	char sys[64], p[PATH_MAX + 320], buf[64];
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", ma, mi);
	if (access(sys, F_OK) != 0) {
		fsp_set_err(why, whylen, "device %u:%u is not a block device in /sys/dev/block", ma, mi);
		return -1;
	}
	if (depth > 8) {
		fsp_set_err(why, whylen, "device %u:%u: too deep a stack of devices", ma, mi);
		return -1;
	}
	/* device mapper, md: the requests are on the devices below */
	snprintf(p, sizeof(p), "%s/slaves", sys);
	DIR *dir = opendir(p);
	int below = 0;
	if (dir) {
		struct dirent *e;
		while ((e = readdir(dir))) {
			unsigned sma, smi;
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/slaves/%s/dev", sys, e->d_name);
			if (fsp_sysfs_line(p, buf, sizeof(buf)) || parse_devno(buf, &sma, &smi) ||
			    resolve(sma, smi, d, depth + 1, why, whylen)) {
				closedir(dir);
				if (!*why)
					fsp_set_err(why, whylen, "cannot read %s", p);
				return -1;
			}
			below++;
		}
		closedir(dir);
	}
	if (below)
		return 0;
	/* a partition: its range of the whole disk, where requests are seen */
	snprintf(p, sizeof(p), "%s/partition", sys);
	if (access(p, F_OK) == 0) {
		uint64_t start, size;
		unsigned pma, pmi;
		char pp[128];
		snprintf(p, sizeof(p), "%s/start", sys);
		snprintf(pp, sizeof(pp), "%s/size", sys);
		if (read_u64(p, &start) || read_u64(pp, &size)) {
			fsp_set_err(why, whylen, "cannot read the range of partition %u:%u", ma, mi);
			return -1;
		}
		snprintf(p, sizeof(p), "%s/../dev", sys);
		if (fsp_sysfs_line(p, buf, sizeof(buf)) || parse_devno(buf, &pma, &pmi)) {
			fsp_set_err(why, whylen, "cannot find the disk of partition %u:%u", ma, mi);
			return -1;
		}
		if (add_range(d, kdev(pma, pmi), start, start + size) == 0)
			return 0;
	} else if (add_range(d, kdev(ma, mi), 0, UINT64_MAX) == 0)
		return 0;
	fsp_set_err(why, whylen, "more than %d devices to trace", FSP_BTRACE_MAX_DEVS);
	return -1;
}

/*
 * The block device of a file system whose st_dev is not one: its mount
 * source (btrfs, ...), or for a FUSE mount whose source is a directory (an
 * fsprism mount names its backing directory) the device of that
 * directory's file system, where the daemon's backing IO goes. 0, or -1.
 */
static int source_device(unsigned ma, unsigned mi, unsigned *sma, unsigned *smi,
			 char *fstype, size_t fslen)
{
	struct fsp_mountinfo mi_;
	struct fsp_mount m;
	int found = -1;
	snprintf(fstype, fslen, "unknown");
	if (fsp_mountinfo_open(&mi_) != 0)
		return -1;
	while (fsp_mountinfo_next(&mi_, &m) == 1) {
		struct stat sb;
		if (m.major != ma || m.minor != mi)
			continue;
		snprintf(fstype, fslen, "%s", m.fstype);
		if (m.source[0] != '/' || stat(m.source, &sb) != 0)
			continue;
		if (S_ISBLK(sb.st_mode)) {
			*sma = major(sb.st_rdev);
			*smi = minor(sb.st_rdev);
			found = 0;
		} else if (S_ISDIR(sb.st_mode) && !strncmp(m.fstype, "fuse", 4)) {
			char sys[64];
			snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(sb.st_dev),
				 minor(sb.st_dev));
			if (access(sys, F_OK) == 0) {
				*sma = major(sb.st_dev);
				*smi = minor(sb.st_dev);
				found = 0;
			}
		}
	}
	fsp_mountinfo_close(&mi_);
	return found;
}

int fsp_btrace_devs_for(const char *path, struct fsp_btrace_devs *d, char *why,
			size_t whylen)
{
	struct stat sb;
	char sys[64], fstype[64];
	unsigned ma, mi;
	memset(d, 0, sizeof(*d));
	why[0] = 0;
	if (stat(path, &sb) != 0) {
		fsp_set_err(why, whylen, "cannot stat %s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISBLK(sb.st_mode)) {
		ma = major(sb.st_rdev);
		mi = minor(sb.st_rdev);
	} else {
		ma = major(sb.st_dev);
		mi = minor(sb.st_dev);
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", ma, mi);
		if (access(sys, F_OK) != 0 &&
		    source_device(ma, mi, &ma, &mi, fstype, sizeof(fstype)) != 0) {
			fsp_set_err(why, whylen, "the file system of %s (%s) is not on a block device",
				path, fstype);
			return -1;
		}
	}
	return resolve(ma, mi, d, 0, why, whylen);
}

void fsp_btrace_devs_format(const struct fsp_btrace_devs *d, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < d->n && at < len; i++) {
		int w;
		if (d->first[i] == 0 && d->end[i] == UINT64_MAX)
			w = snprintf(buf + at, len - at, "%s%u:%u", i ? " " : "",
				     d->dev[i] >> 20, d->dev[i] & 0xfffff);
		else
			w = snprintf(buf + at, len - at, "%s%u:%u[%llu,+%llu]", i ? " " : "",
				     d->dev[i] >> 20, d->dev[i] & 0xfffff,
				     (unsigned long long)d->first[i],
				     (unsigned long long)(d->end[i] - d->first[i]));
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

/* ---- storing --------------------------------------------------------------------- */

void fsp_btrace_save_untraced(struct fsp_store *st, int64_t run, const char *why)
{
	fsp_store_set_attr(st, run, "block.traced", "0");
	fsp_store_set_attr(st, run, "block.untraced_reason", why);
}

static int insert_block_ios(struct fsp_store *st, int64_t run, const void *rows, size_t n)
{
	return fsp_block_ios_insert(st, run, rows, n);
}

static int save_rows(struct fsp_trows *rows, struct fsp_store *st, int64_t run,
		     const struct fsp_bt_window *w, size_t nw)
{
	fsp_bt_rows_assign_steps(rows, w, nw);
	return fsp_trows_store(rows, st, run, insert_block_ios);
}

#ifdef HAVE_BPF
/* ---- with eBPF --------------------------------------------------------------------- */
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <linux/types.h>
#include "src/trace/block_event.h"
#include "src/trace/block.skel.h"

_Static_assert(FSP_BT_MAX_DEVS == FSP_BTRACE_MAX_DEVS, "one limit on traced devices");
_Static_assert((int)FSP_BT_OP_READ == (int)FSP_BLOCK_READ &&
	       (int)FSP_BT_OP_WRITE == (int)FSP_BLOCK_WRITE &&
	       (int)FSP_BT_OP_FLUSH == (int)FSP_BLOCK_FLUSH &&
	       (int)FSP_BT_OP_DISCARD == (int)FSP_BLOCK_DISCARD &&
	       (int)FSP_BT_OP_WRITE_ZEROES == (int)FSP_BLOCK_WRITE_ZEROES &&
	       (int)FSP_BT_OP_OTHER == (int)FSP_BLOCK_OTHER,
	       "the BPF program's op codes are block_ios.op's");

struct fsp_btrace {
	struct fsp_block_bpf *skel;
	struct fsp_trace tr;
	struct fsp_btrace_devs devs;
	struct fsp_trows rows;
	uint64_t dropped_ring;
	uint64_t missed_nested, missed_tags, missed_reissued, missed_open;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct fsp_btrace *bt = ctx;
	const struct fsp_bt_event *e = data;
	if (size < sizeof(*e))
		return 0;
	struct fsp_block_io io = {
		.queue_ns = e->queue_ns, .insert_ns = e->insert_ns,
		.issue_ns = e->issue_ns, .complete_ns = e->complete_ns,
		.sector = e->sector, .dev = e->dev, .bytes = e->bytes,
		.tgid = e->tgid, .tid = e->tid, .op = e->op, .flags = e->flags,
		.error = e->error, .step = -1,
	};
	fsp_trows_add(&bt->rows, &io);
	return 0;
}

/* Counter `which` of the per-CPU drops array, summed over the CPUs. */
static uint64_t read_drops(struct fsp_btrace *bt, uint32_t which)
{
	return fsp_trace_percpu_sum(bt->skel->maps.drops, which);
}

static unsigned bits_for(unsigned long n) /* smallest b with 2^b >= n */
{
	unsigned b = 0;
	while ((1ul << b) < n)
		b++;
	return b;
}

/*
 * The in-flight slots the BPF program indexes by (disk, hardware queue,
 * driver tag): from each disk's /sys/dev/block/M:m/mq/Q/nr_tags. Sets the
 * bit widths and returns the number of slots.
 */
static uint32_t slot_layout(const struct fsp_btrace_devs *d, uint32_t *queue_bits,
			    uint32_t *tag_bits)
{
	unsigned long queues = 1, tags = 1;
	for (unsigned i = 0; i < d->n; i++) {
		char p[96];
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/mq", d->dev[i] >> 20,
			 d->dev[i] & 0xfffff);
		DIR *dir = opendir(p);
		unsigned long nq = 0;
		struct dirent *e;
		while (dir && (e = readdir(dir))) {
			char t[400];
			uint64_t nt;
			if (e->d_name[0] == '.')
				continue;
			nq++;
			snprintf(t, sizeof(t), "%s/%s/nr_tags", p, e->d_name);
			if (read_u64(t, &nt) == 0 && nt > tags)
				tags = (unsigned long)nt;
		}
		if (dir)
			closedir(dir);
		if (nq > queues)
			queues = nq;
	}
	if (tags < 1024 && queues == 1 && d->n == 1)
		tags = 1024; /* a deeper queue set later costs nothing here */
	*queue_bits = bits_for(queues);
	*tag_bits = bits_for(tags);
	unsigned total = bits_for(d->n) + *queue_bits + *tag_bits;
	while (total > 20 && *tag_bits > 8) { /* at most 1 Mi slots (48 MiB) */
		(*tag_bits)--;
		total--;
	}
	return 1u << total;
}

struct fsp_btrace *fsp_btrace_start(const struct fsp_btrace_devs *d,
				    const struct fsp_btrace_opts *o, char *why,
				    size_t whylen)
{
	struct fsp_btrace_opts dflt = { 0 };
	if (!o)
		o = &dflt;
	if (!fsp_trace_have_btf(why, whylen))
		return NULL;
	struct fsp_btrace *bt = calloc(1, sizeof(*bt));
	if (!bt) {
		fsp_set_err(why, whylen, "out of memory");
		return NULL;
	}
	bt->devs = *d;
	fsp_trows_init(&bt->rows, sizeof(struct fsp_block_io), fsp_trace_max_rows(o->max_rows));
	fsp_trace_libbpf_quiet();
	bt->skel = fsp_block_bpf__open();
	if (!bt->skel) {
		fsp_trace_open_why("block-layer", why, whylen);
		goto fail;
	}
	/* the filter is read-only data of the program: set before load */
	uint32_t queue_bits, tag_bits;
	uint32_t slots = slot_layout(d, &queue_bits, &tag_bits);
	bt->skel->rodata->queue_bits = queue_bits;
	bt->skel->rodata->tag_bits = tag_bits;
	bt->skel->rodata->ndevs = d->n;
	for (unsigned i = 0; i < d->n; i++) {
		bt->skel->rodata->dev_ids[i] = d->dev[i];
		bt->skel->rodata->dev_ranges[i].first = d->first[i];
		bt->skel->rodata->dev_ranges[i].end = d->end[i];
	}
	struct fsp_trace_spec spec = {
		.program = "block-layer", .tracepoints = "block",
		.events = bt->skel->maps.events,
		.ring_bytes = fsp_trace_size(o->ring_bytes, "FSPRISM_TRACE_RING_BYTES",
					     DEFAULT_RING_BYTES),
		.inflight = bt->skel->maps.inflight, .slots = slots,
		.on_event = on_event, .ctx = bt,
	};
	if (fsp_trace_start(&bt->tr, bt->skel->skeleton, &spec, why, whylen) < 0)
		goto fail;
	return bt;
fail:
	fsp_btrace_free(bt);
	return NULL;
}

void fsp_btrace_stop(struct fsp_btrace *bt)
{
	if (!bt || !fsp_trace_stop(&bt->tr))
		return;
	bt->dropped_ring = read_drops(bt, 0);
	bt->missed_tags = read_drops(bt, 1);
	bt->missed_reissued = read_drops(bt, 2);
	/* issued, their completion never seen: in flight at the end, or a
	 * completion the kernel did not run the program for */
	bt->missed_open = FSP_TRACE_SLOTS_OPEN(bt->skel->maps.inflight, struct fsp_bt_slot);
	bt->missed_nested = fsp_trace_prog_misses(bt->skel->progs.fsp_rq_issue) +
			    fsp_trace_prog_misses(bt->skel->progs.fsp_rq_complete);
}

void fsp_btrace_free(struct fsp_btrace *bt)
{
	if (!bt)
		return;
	fsp_btrace_stop(bt);
	fsp_trace_free(&bt->tr);
	fsp_block_bpf__destroy(bt->skel);
	fsp_trows_free(&bt->rows);
	free(bt);
}

#else
/* ---- built without eBPF -------------------------------------------------------------- */

struct fsp_btrace {
	struct fsp_btrace_devs devs;
	struct fsp_trows rows;
	uint64_t dropped_ring;
	uint64_t missed_nested, missed_tags, missed_reissued, missed_open;
};

struct fsp_btrace *fsp_btrace_start(const struct fsp_btrace_devs *d,
				    const struct fsp_btrace_opts *o, char *why,
				    size_t whylen)
{
	fsp_set_err(why, whylen, "%s", FSP_TRACE_UNBUILT);
	return NULL;
}

void fsp_btrace_stop(struct fsp_btrace *bt)
{
}

void fsp_btrace_free(struct fsp_btrace *bt)
{
	if (bt) {
		fsp_trows_free(&bt->rows);
		free(bt);
	}
}
#endif

void fsp_btrace_counts(const struct fsp_btrace *bt, struct fsp_btrace_counts *c)
{
	c->requests = bt->rows.n;
	c->dropped_ring = bt->dropped_ring;
	c->missed_nested = bt->missed_nested;
	c->missed_tags = bt->missed_tags;
	c->missed_reissued = bt->missed_reissued;
	c->missed_open = bt->missed_open;
	c->missed = c->missed_nested + c->missed_tags + c->missed_reissued + c->missed_open;
	c->dropped_rows = bt->rows.dropped;
}

const struct fsp_trows *fsp_btrace_rows(const struct fsp_btrace *bt)
{
	return &bt->rows;
}

int fsp_btrace_save(struct fsp_btrace *bt, struct fsp_store *st, int64_t run,
		    const struct fsp_bt_window *w, size_t nw)
{
	char devs[256];
	struct fsp_btrace_counts c;
	fsp_btrace_stop(bt);
	int rc = save_rows(&bt->rows, st, run, w, nw);
	fsp_btrace_counts(bt, &c);
	fsp_btrace_devs_format(&bt->devs, devs, sizeof(devs));
	fsp_store_set_attr(st, run, "block.traced", "1");
	fsp_store_set_attr(st, run, "block.devices", devs);
	fsp_store_set_attr_u64(st, run, "block.requests", rc == 0 ? c.requests : 0);
	fsp_store_set_attr_u64(st, run, "block.dropped", c.dropped_ring + c.missed + c.dropped_rows +
		     (rc == 0 ? 0 : c.requests));
	fsp_store_set_attr_u64(st, run, "block.dropped_ring", c.dropped_ring);
	fsp_store_set_attr_u64(st, run, "block.missed", c.missed);
	fsp_store_set_attr_u64(st, run, "block.missed_nested", c.missed_nested);
	fsp_store_set_attr_u64(st, run, "block.missed_tags", c.missed_tags);
	fsp_store_set_attr_u64(st, run, "block.missed_reissued", c.missed_reissued);
	fsp_store_set_attr_u64(st, run, "block.missed_open", c.missed_open);
	return rc;
}

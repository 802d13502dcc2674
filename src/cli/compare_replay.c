/*
 * compare_replay.c - `compare --replay`: the device-level IO sequence that a
 * file-system target produced, replayed on the raw device of the same
 * compare, so that diagnose can tell the drive's response to a pattern
 * from software. The sequence is the fs target's block rows (block_ios:
 * sectors of the whole disk) or the emu target's device rows (dev_* ops: the
 * store is the device, so their offsets are device offsets), step by step,
 * in the order they were issued: each read, write and flush again at the
 * same offset with the same size, one at a time with O_DIRECT (the emulation
 * issues its device IO one at a time; a native file system's concurrent
 * requests are serialised). This is what blktrace + btreplay do by hand.
 *
 * The replay overwrites what the target left on the device: compare runs
 * it after every round, on a device it owns and that passed the raw-write
 * checks (src/sys/target.c) again just before.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "src/base/clock.h"
#include "src/base/ops.h"
#include "src/cli/compare.h"
#include "src/db/block_ios.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/sys/target.h"

#define REPLAY_BUF (8u << 20) /* the largest IO replayed in one piece */

enum { IO_READ, IO_WRITE, IO_FLUSH };

struct replay_io {
	uint64_t offset;
	uint32_t len;
	uint8_t dir;
};

struct replay_list {
	struct replay_io *io;
	size_t n, cap;
	int failed;
};

static void list_add(struct replay_list *l, int dir, uint64_t off, uint64_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		struct replay_io *p = realloc(l->io, cap * sizeof *p);
		if (!p) {
			l->failed = 1;
			return;
		}
		l->io = p;
		l->cap = cap;
	}
	l->io[l->n++] = (struct replay_io){ off, (uint32_t)(len < REPLAY_BUF ? len : REPLAY_BUF),
					    (uint8_t)dir };
}

static int from_block_row(struct replay_list *l, const struct fsp_block_io *io)
{
	if (io->op == FSP_BLOCK_READ || io->op == FSP_BLOCK_WRITE) {
		list_add(l, io->op == FSP_BLOCK_READ ? IO_READ : IO_WRITE, io->sector * 512,
			 io->bytes);
		if (io->op == FSP_BLOCK_WRITE && (io->flags & 4)) /* FUA */
			list_add(l, IO_FLUSH, 0, 0);
	} else if (io->op == FSP_BLOCK_FLUSH) {
		list_add(l, IO_FLUSH, 0, 0);
	}
	return l->failed;
}

static int from_dev_row(void *arg, const struct fsp_op_row *r)
{
	struct replay_list *l = arg;
	if (r->op == FSP_OP_DEV_READ)
		list_add(l, IO_READ, r->offset, r->length);
	else if (r->op >= FSP_OP_DEV_WRITE_DATA && r->op <= FSP_OP_DEV_WRITE_CKPT)
		list_add(l, IO_WRITE, r->offset, r->length);
	else if (r->op == FSP_OP_DEV_FLUSH)
		list_add(l, IO_FLUSH, 0, 0);
	return l->failed;
}

struct steps_copy {
	struct fsp_step_row row[256];
	char label[256][64], access[256][16];
	int n;
};

static int copy_step(void *arg, const struct fsp_step_row *r)
{
	struct steps_copy *s = arg;
	if (s->n == 256)
		return 1;
	s->row[s->n] = *r;
	snprintf(s->label[s->n], sizeof s->label[0], "%s", r->label ? r->label : "");
	snprintf(s->access[s->n], sizeof s->access[0], "%s", r->access ? r->access : "");
	s->row[s->n].label = s->label[s->n];
	s->row[s->n].access = s->access[s->n];
	s->row[s->n].pattern = "replay";
	s->n++;
	return 0;
}

/* One step's sequence on fd; fills the counts and busy time of *out. */
static int replay_step(int fd, const struct replay_list *l, unsigned lbs, void *buf,
		       volatile sig_atomic_t *stop, struct fsp_step_row *out,
		       uint64_t *skipped)
{
	uint64_t t0 = fsp_now_ns();
	out->started_ns = t0;
	for (size_t i = 0; i < l->n && !*stop; i++) {
		const struct replay_io *io = &l->io[i];
		if (io->dir == IO_FLUSH) {
			if (fdatasync(fd))
				return -1;
			continue;
		}
		if (!io->len || io->offset % lbs || io->len % lbs) {
			(*skipped)++;
			continue;
		}
		ssize_t r = io->dir == IO_READ ? pread(fd, buf, io->len, (off_t)io->offset) :
			    pwrite(fd, buf, io->len, (off_t)io->offset);
		if (r < 0 && errno == EINTR) {
			i--;
			continue;
		}
		if (r < 0)
			return -1;
		if (io->dir == IO_READ) {
			out->read_ios++;
			out->read_bytes += (uint64_t)r;
		} else {
			out->write_ios++;
			out->write_bytes += (uint64_t)r;
		}
	}
	out->ended_ns = fsp_now_ns();
	out->busy_ns = out->ended_ns - t0;
	return 0;
}

int compare_replay(struct fsp_store *st, const char *device, int64_t cmp_run, int t,
		   int round, int64_t engine_run, int64_t mount_run,
		   volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	char label[32], opts[128], v[32];
	snprintf(label, sizeof label, "replay-%s", target_label[t]);
	if (t == T_EMU && !mount_run) {
		snprintf(err, errlen, "the emu target's mount run of round %d is missing",
			 round);
		return -1;
	}
	/* nothing mounted or in use: --destroy-data only lets compare's own
	 * file system or store go, never a live user */
	if (fsp_target_check_raw_write(device, 1, err, errlen))
		return -1;
	uint64_t size;
	unsigned lbs;
	if (fsp_target_geometry(device, &size, &lbs) || !lbs)
		lbs = 512;
	struct steps_copy *steps = calloc(1, sizeof *steps);
	void *buf = NULL;
	int fd = -1, rc = -1;
	struct replay_list l = { 0 };
	if (!steps || posix_memalign(&buf, 4096, REPLAY_BUF)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memset(buf, 0x5a, REPLAY_BUF);
	if (fsp_store_each_step(st, engine_run, copy_step, steps)) {
		snprintf(err, errlen, "cannot read the steps of run %" PRId64, engine_run);
		goto out;
	}
	fd = open(device, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", device, strerror(errno));
		goto out;
	}
	snprintf(opts, sizeof opts, "compare --replay of run %" PRId64 "'s device IO",
		 t == T_EMU ? mount_run : engine_run);
	struct fsp_run_info info = { .kind = "run", .options = opts, .backing_path = device,
				     .backing_device = device, .backing_fstype = "block",
				     .record_mode = "off", .parent = cmp_run, .label = label };
	int64_t run = fsp_store_begin_run(st, &info);
	if (run < 0) {
		snprintf(err, errlen, "cannot record the replay run");
		goto out;
	}
	snprintf(v, sizeof v, "%d", round);
	fsp_store_set_attr(st, run, "round", v);
	snprintf(v, sizeof v, "%" PRId64, t == T_EMU ? mount_run : engine_run);
	fsp_store_set_attr(st, run, "replay.of", v);
	fsp_store_set_attr(st, run, "replay.source", t == T_EMU ? "dev rows" : "block_ios");
	uint64_t ios = 0, skipped = 0;
	rc = 0;
	for (int i = 0; i < steps->n && !rc && !*stop; i++) {
		struct fsp_step_row row = steps->row[i];
		l.n = 0;
		int q;
		if (t == T_EMU) {
			q = fsp_store_each_op_in_window(st, mount_run, (int64_t)row.started_ns,
							(int64_t)row.ended_ns, from_dev_row, &l);
		} else {
			struct fsp_block_io *blk;
			size_t nblk;
			char berr[256];
			q = fsp_block_ios_load(st, engine_run, row.step, 0, 0, &blk, &nblk, berr,
					       sizeof berr);
			for (size_t b = 0; !q && b < nblk && !from_block_row(&l, &blk[b]); b++)
				;
			free(blk);
		}
		if (q || l.failed) {
			snprintf(err, errlen, "cannot read the device IO of step %d", row.step);
			rc = -1;
			break;
		}
		row.read_ios = row.write_ios = row.read_bytes = row.write_bytes = 0;
		row.cpu_user_ns = row.cpu_sys_ns = 0;
		if (replay_step(fd, &l, lbs, buf, stop, &row, &skipped)) {
			snprintf(err, errlen, "replay IO on %s failed: %s", device,
				 strerror(errno));
			rc = -1;
			break;
		}
		ios += row.read_ios + row.write_ios;
		if (!l.n)
			continue; /* no device IO to replay: no step */
		fsp_store_add_step(st, run, &row);
	}
	snprintf(v, sizeof v, "%" PRIu64, ios);
	fsp_store_set_attr(st, run, "replay.ios", v);
	snprintf(v, sizeof v, "%" PRIu64, skipped);
	fsp_store_set_attr(st, run, "replay.skipped", v);
	if (*stop)
		fsp_store_set_attr(st, run, "interrupted", "1");
	else if (rc)
		fsp_store_set_attr(st, run, "failed", "1");
	fsp_store_end_run(st, run, 0, 0);
out:
	if (fd >= 0)
		close(fd);
	free(l.io);
	free(buf);
	free(steps);
	return rc;
}

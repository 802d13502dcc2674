/*
 * compare_replay.c - `compare --replay`: the device-level IO sequence that a
 * file-system target produced, replayed on the raw device of the same
 * compare, so that diagnose can tell the drive's response to a pattern
 * from software. The sequence is the fs target's block rows (block_ios:
 * sectors of the whole disk, issue to completion) or the emu target's
 * device rows (dev_* ops: the store is the device, so their offsets are
 * device offsets; start to start + total), step by step: each read, write
 * (FUA kept), and flush again at the same offset with the same size, in
 * the recording's order and at most at its queue depth, without its
 * timing (bench/engine/replay_order.h, run with libaio by
 * bench/engine/replay.c). This is what blktrace + btreplay do by hand.
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
#include "bench/engine/replay.h"
#include "src/base/ops.h"
#include "src/base/units.h"
#include "src/cli/compare.h"
#include "src/db/block_ios.h"
#include "src/db/results.h"
#include "src/db/store.h"
#include "src/sys/target.h"

struct replay_list {
	struct fsp_replay_io *io;
	size_t n, cap;
	int failed;
};

static void list_add(struct replay_list *l, int dir, uint64_t off, uint64_t len,
		     uint64_t issue_ns, uint64_t complete_ns, int fua)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		struct fsp_replay_io *p = realloc(l->io, cap * sizeof *p);
		if (!p) {
			l->failed = 1;
			return;
		}
		l->io = p;
		l->cap = cap;
	}
	l->io[l->n++] = (struct fsp_replay_io){
		.issue_ns = issue_ns, .complete_ns = complete_ns, .offset = off,
		.len = (uint32_t)(len < FSP_REPLAY_MAX_LEN ? len : FSP_REPLAY_MAX_LEN),
		.dir = (uint8_t)dir, .fua = (uint8_t)fua };
}

static int from_block_row(struct replay_list *l, const struct fsp_block_io *io)
{
	/* a request seen only from its insert (or making) on: issued then at the latest */
	uint64_t issue = io->issue_ns ? io->issue_ns : io->insert_ns ? io->insert_ns :
			 io->queue_ns ? io->queue_ns : io->complete_ns;
	if (io->op == FSP_BLOCK_READ || io->op == FSP_BLOCK_WRITE)
		list_add(l, io->op == FSP_BLOCK_READ ? FSP_REPLAY_READ : FSP_REPLAY_WRITE,
			 io->sector * 512, io->bytes, issue, io->complete_ns,
			 io->op == FSP_BLOCK_WRITE && (io->flags & FSP_BLOCK_F_FUA));
	else if (io->op == FSP_BLOCK_FLUSH)
		list_add(l, FSP_REPLAY_FLUSH, 0, 0, issue, io->complete_ns, 0);
	return l->failed;
}

static int from_dev_row(void *arg, const struct fsp_op_row *r)
{
	struct replay_list *l = arg;
	uint64_t done = r->start_ns + r->total_ns;
	if (r->op == FSP_OP_DEV_READ)
		list_add(l, FSP_REPLAY_READ, r->offset, r->length, r->start_ns, done, 0);
	else if (r->op >= FSP_OP_DEV_WRITE_DATA && r->op <= FSP_OP_DEV_WRITE_CKPT)
		list_add(l, FSP_REPLAY_WRITE, r->offset, r->length, r->start_ns, done, 0);
	else if (r->op == FSP_OP_DEV_FLUSH)
		list_add(l, FSP_REPLAY_FLUSH, 0, 0, r->start_ns, done, 0);
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

/* The depth of a whole replay, recorded and replayed: max, and sum over n. */
struct depth {
	uint32_t max;
	uint64_t sum, n;
};

static void depth_add(struct depth *d, uint32_t max, uint64_t sum, uint64_t n)
{
	if (max > d->max)
		d->max = max;
	d->sum += sum;
	d->n += n;
}

static void set_depth(struct fsp_store *st, int64_t run, const char *key, const struct depth *d)
{
	char k[64], v[32];
	snprintf(k, sizeof k, "%s_max", key);
	snprintf(v, sizeof v, "%" PRIu32, d->max);
	fsp_store_set_attr(st, run, k, v);
	snprintf(k, sizeof k, "%s_mean", key);
	snprintf(v, sizeof v, "%.2f", d->n ? (double)d->sum / (double)d->n : 0.0);
	fsp_store_set_attr(st, run, k, v);
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
	struct fsp_replayer *rp = NULL;
	int fd = -1, rc = -1;
	struct replay_list l = { 0 };
	if (!steps) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (fsp_store_each_step(st, engine_run, copy_step, steps)) {
		snprintf(err, errlen, "cannot read the steps of run %" PRId64, engine_run);
		goto out;
	}
	fd = open(device, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", device, strerror(errno));
		goto out;
	}
	/* wait for completions as the recorded run's engine did; a run
	 * recorded before the poll existed slept at once */
	uint64_t poll_ns = 0;
	char *poll = fsp_store_attr(st, engine_run, "param.poll");
	if (poll && fsp_parse_duration(poll, &poll_ns))
		poll_ns = 0;
	free(poll);
	char rerr[256];
	if (!(rp = fsp_replayer_new(fd, lbs, poll_ns, rerr, sizeof rerr))) {
		snprintf(err, errlen, "cannot replay on %s: %s", device, rerr);
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
	uint64_t ios = 0, flushes = 0, skipped = 0;
	struct depth recorded = { 0 }, replayed = { 0 };
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
		if (!l.n)
			continue; /* no device IO to replay: no step */
		struct fsp_replay_order order;
		if (fsp_replay_order_init(&order, l.io, l.n)) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			break;
		}
		depth_add(&recorded, order.depth_max, order.depth_sum, order.n);
		struct fsp_replay_result res = { 0 };
		if (fsp_replay_run(rp, l.io, &order, stop, &res, rerr, sizeof rerr)) {
			snprintf(err, errlen, "replay IO on %s failed: %s", device, rerr);
			rc = -1;
		}
		fsp_replay_order_free(&order);
		depth_add(&replayed, res.depth_max, res.depth_sum, res.submitted);
		skipped += res.skipped;
		if (rc)
			break;
		row.read_ios = res.read_ios;
		row.write_ios = res.write_ios;
		row.read_bytes = res.read_bytes;
		row.write_bytes = res.write_bytes;
		row.cpu_user_ns = row.cpu_sys_ns = 0;
		row.started_ns = res.started_ns;
		row.ended_ns = res.ended_ns;
		row.busy_ns = res.ended_ns - res.started_ns;
		row.qd = res.depth_max; /* the depth the replay reached in this step */
		ios += res.read_ios + res.write_ios;
		flushes += res.flushes;
		fsp_store_add_step(st, run, &row);
	}
	snprintf(v, sizeof v, "%" PRIu64, ios);
	fsp_store_set_attr(st, run, "replay.ios", v);
	snprintf(v, sizeof v, "%" PRIu64, flushes);
	fsp_store_set_attr(st, run, "replay.flushes", v);
	snprintf(v, sizeof v, "%" PRIu64, skipped);
	fsp_store_set_attr(st, run, "replay.skipped", v);
	set_depth(st, run, "replay.recorded_qd", &recorded);
	set_depth(st, run, "replay.qd", &replayed);
	if (*stop)
		fsp_store_set_attr(st, run, "interrupted", "1");
	else if (rc)
		fsp_store_set_attr(st, run, "failed", "1");
	fsp_store_end_run(st, run, 0, 0);
out:
	fsp_replayer_free(rp);
	if (fd >= 0)
		close(fd);
	free(l.io);
	free(steps);
	return rc;
}

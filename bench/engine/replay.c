/*
 * replay.c - a recorded device IO sequence again on a device, with libaio
 * (replay.h): the engine's idioms (O_DIRECT, aligned buffers, one
 * io_submit per batch, fsp_reap's poll then io_getevents), but the next IO is the
 * recording's next, submitted once the recording's happens-before order
 * (replay_order.h) allows it, not whenever a slot is free.
 *
 * The data is not the point: every write sends one buffer and every read
 * lands in another, shared by the IOs in flight.
 */
#include "config.h"
#include <errno.h>
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "bench/engine/reap.h"
#include "bench/engine/replay.h"
#include "src/base/clock.h"

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x2 /* the kernel's value (linux/fs.h), older C libraries lack it */
#endif

struct fsp_replayer {
	int fd;
	unsigned lbs, depth;
	io_context_t ctx;
	struct fsp_reaper reaper; /* how the replay waits on ctx (reap.h) */
	void *read_buf, *write_buf;
	struct iocb *cbs;       /* depth slots */
	struct iocb **free_cbs; /* nfree of them free */
	unsigned nfree;
	struct iocb **batch;
	struct io_event *events;
};

struct fsp_replayer *fsp_replayer_new(int fd, unsigned lbs, uint64_t poll_ns, char *err,
				      size_t errlen)
{
	struct fsp_replayer *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->fd = fd;
	r->lbs = lbs ? lbs : 512;
	/* the largest context the system grants, up to the maximum depth */
	int rc = -EAGAIN;
	for (r->depth = FSP_REPLAY_MAX_DEPTH; r->depth && rc == -EAGAIN; r->depth /= 2)
		if ((rc = io_setup((int)r->depth, &r->ctx)) == 0)
			break;
	if (rc) {
		snprintf(err, errlen, "io_setup failed: %s", strerror(-rc));
		free(r);
		return NULL;
	}
	fsp_reaper_init(&r->reaper, r->ctx, poll_ns);
	r->cbs = calloc(r->depth, sizeof *r->cbs);
	r->free_cbs = calloc(r->depth, sizeof *r->free_cbs);
	r->batch = calloc(r->depth, sizeof *r->batch);
	r->events = calloc(r->depth, sizeof *r->events);
	if (!r->cbs || !r->free_cbs || !r->batch || !r->events ||
	    posix_memalign(&r->read_buf, 4096, FSP_REPLAY_MAX_LEN) ||
	    posix_memalign(&r->write_buf, 4096, FSP_REPLAY_MAX_LEN)) {
		snprintf(err, errlen, "out of memory");
		fsp_replayer_free(r);
		return NULL;
	}
	memset(r->write_buf, 0x5a, FSP_REPLAY_MAX_LEN);
	for (unsigned i = 0; i < r->depth; i++)
		r->free_cbs[r->nfree++] = &r->cbs[i];
	return r;
}

void fsp_replayer_free(struct fsp_replayer *r)
{
	if (!r)
		return;
	io_destroy(r->ctx); /* waits for what is still in flight */
	free(r->read_buf);
	free(r->write_buf);
	free(r->cbs);
	free(r->free_cbs);
	free(r->batch);
	free(r->events);
	free(r);
}

static const char *dir_name(const struct fsp_replay_io *io)
{
	return io->dir == FSP_REPLAY_READ ? "read" : io->dir == FSP_REPLAY_WRITE ? "write" :
	       "flush";
}

static void prep(struct fsp_replayer *r, struct iocb *cb, const struct fsp_replay_io *io,
		 size_t i)
{
	if (io->dir == FSP_REPLAY_FLUSH) {
		io_prep_fdsync(cb, r->fd);
	} else if (io->dir == FSP_REPLAY_READ) {
		io_prep_pread(cb, r->fd, r->read_buf, io->len, (long long)io->offset);
	} else {
		io_prep_pwrite(cb, r->fd, r->write_buf, io->len, (long long)io->offset);
		if (io->fua)
			cb->aio_rw_flags = RWF_DSYNC;
	}
	cb->data = (void *)(uintptr_t)i;
}

int fsp_replay_run(struct fsp_replayer *r, const struct fsp_replay_io *io,
		   struct fsp_replay_order *o, volatile sig_atomic_t *stop,
		   struct fsp_replay_result *res, char *err, size_t errlen)
{
	size_t next = 0;
	unsigned inflight = 0;
	int issuing = 1, rc = 0;
	uint64_t t0 = fsp_now_ns();
	if (!res->started_ns)
		res->started_ns = t0;
	for (;;) {
		unsigned n = 0;
		while (issuing && next < o->n && r->nfree && fsp_replay_ready(o, next)) {
			if (*stop) {
				issuing = 0;
				break;
			}
			const struct fsp_replay_io *e = &io[next];
			if (e->dir != FSP_REPLAY_FLUSH &&
			    (!e->len || e->offset % r->lbs || e->len % r->lbs)) {
				res->skipped++;
				fsp_replay_done(o, next++);
				continue;
			}
			struct iocb *cb = r->free_cbs[--r->nfree];
			prep(r, cb, e, next++);
			r->batch[n++] = cb;
			/* in flight once this batch is in: those before it and itself */
			uint32_t depth = inflight + n;
			if (depth > res->depth_max)
				res->depth_max = depth;
			res->depth_sum += depth;
			res->submitted++;
		}
		unsigned done = 0;
		while (done < n) {
			int got = io_submit(r->ctx, (long)(n - done), r->batch + done);
			if (got == -EINTR || got == -EAGAIN)
				continue;
			if (got <= 0) {
				const struct fsp_replay_io *e =
					&io[(uintptr_t)r->batch[done]->data];
				snprintf(err, errlen, "io_submit of a %s at %llu failed: %s",
					 dir_name(e), (unsigned long long)e->offset,
					 strerror(got ? -got : EIO));
				rc = -1;
				issuing = 0;
				res->submitted -= n - done;
				for (unsigned i = done; i < n; i++)
					r->free_cbs[r->nfree++] = r->batch[i];
				break;
			}
			done += (unsigned)got;
		}
		inflight += done;
		if (!inflight) {
			if (issuing && next < o->n && !*stop) {
				/* cannot be: all before next completed, so it is ready */
				snprintf(err, errlen, "replay order stuck at IO %zu", next);
				rc = -1;
			}
			break;
		}
		int got = fsp_reap(&r->reaper, inflight, (long)r->depth, r->events);
		if (got == -EINTR)
			continue;
		if (got < 0) {
			snprintf(err, errlen, "io_getevents failed: %s", strerror(-got));
			rc = -1;
			break; /* fsp_replayer_free's io_destroy waits for the rest */
		}
		for (int k = 0; k < got; k++) {
			struct iocb *cb = r->events[k].obj;
			size_t i = (uintptr_t)cb->data;
			long ret = (long)r->events[k].res;
			const struct fsp_replay_io *e = &io[i];
			r->free_cbs[r->nfree++] = cb;
			inflight--;
			fsp_replay_done(o, i);
			if (ret < 0) {
				if (!rc)
					snprintf(err, errlen, "%s of %u bytes at %llu: %s",
						 dir_name(e), e->len,
						 (unsigned long long)e->offset, strerror((int)-ret));
				rc = -1;
				issuing = 0;
				continue;
			}
			if (e->dir == FSP_REPLAY_READ) {
				res->read_ios++;
				res->read_bytes += (uint64_t)ret;
			} else if (e->dir == FSP_REPLAY_WRITE) {
				res->write_ios++;
				res->write_bytes += (uint64_t)ret;
			} else {
				res->flushes++;
			}
		}
	}
	res->ended_ns = fsp_now_ns();
	return rc;
}

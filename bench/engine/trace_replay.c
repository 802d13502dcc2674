/*
 * trace_replay.c - a trace replayed at its intended times (trace_replay.h).
 *
 * One loop: submit every IO whose time has come and whose dependencies
 * are done (one io_submit per batch, the clock read just before it: that
 * is the IO's actual issue), collect completions without blocking, and
 * when nothing is due, wait: in io_getevents with a timeout that ends
 * 100 us before the next IO's time (or a sleep when nothing is in flight),
 * then spin on the clock for the rest, so a due IO goes out within a few
 * microseconds of its time when the CPU is free.
 */
#include "config.h"
#include <errno.h>
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench/engine/replay.h"
#include "bench/engine/replay_order.h"
#include "bench/engine/trace_replay.h"
#include "src/base/clock.h"
#include "src/base/quantile.h"
#include "src/base/grow.h"

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x2
#endif

#define SPIN_NS 100000u /* the last 100 us before an IO's time: spun */
#define DEPTH FSP_REPLAY_MAX_DEPTH

struct thr {
	uint32_t id;
	unsigned inflight;
};

struct loop {
	const struct fsp_iotrace *t;
	const struct fsp_treplay_file *files;
	const struct fsp_treplay_opts *o;
	struct fsp_treplay_result *res;
	uint64_t *at;         /* intended, from t0 */
	uint64_t *submit_ns;  /* per IO */
	uint64_t *ready_ns;   /* per IO: when the loop first saw its dependencies done */
	struct fsp_replay_io *rio; /* for the order, with completion times */
	struct fsp_replay_order order;
	struct thr *thr;      /* without completion times */
	size_t nthr;
	uint32_t *thr_of;     /* per IO: its index in thr */
	io_context_t ctx;
	unsigned depth;
	struct iocb *cbs, **free_cbs, **batch;
	unsigned nfree, inflight;
	struct io_event *events;
	void *rbuf, *wbuf;
	uint32_t maxlen;
	uint64_t busy_from;
	uint64_t t0; /* the schedule's 0 */
	int failed;
};

static int ready(struct loop *l, size_t i)
{
	if (l->t->has_complete)
		return fsp_replay_ready(&l->order, i);
	return l->thr[l->thr_of[i]].inflight < l->o->qd;
}

static void done_io(struct loop *l, size_t i)
{
	if (l->t->has_complete)
		fsp_replay_done(&l->order, i);
	else
		l->thr[l->thr_of[i]].inflight--;
}

static int setup(struct loop *l, char *err, size_t errlen)
{
	const struct fsp_iotrace *t = l->t;
	size_t m = t->n ? t->n : 1;
	l->at = malloc(m * sizeof *l->at);
	l->submit_ns = calloc(m, sizeof *l->submit_ns);
	l->ready_ns = calloc(m, sizeof *l->ready_ns);
	l->res->self_lag_ns = malloc(m * sizeof(uint64_t));
	if (!l->ready_ns || !l->res->self_lag_ns)
		goto oom;
	l->res->lag_ns = malloc(m * sizeof(uint64_t));
	l->res->read_lat_ns = malloc(m * sizeof(uint64_t));
	l->res->write_lat_ns = malloc(m * sizeof(uint64_t));
	l->res->sync_lat_ns = malloc(m * sizeof(uint64_t));
	l->res->read_ilat_ns = malloc(m * sizeof(uint64_t));
	l->res->write_ilat_ns = malloc(m * sizeof(uint64_t));
	if (!l->res->read_ilat_ns || !l->res->write_ilat_ns)
		goto oom;
	if (!l->at || !l->submit_ns || !l->res->lag_ns || !l->res->read_lat_ns ||
	    !l->res->write_lat_ns || !l->res->sync_lat_ns)
		goto oom;
	l->res->clipped_ns = fsp_iotrace_schedule(t, l->o->max_idle_ns, l->o->scale, l->at);
	l->res->intended_ns = t->n ? l->at[t->n - 1] : 0;
	if (t->has_complete) {
		l->rio = malloc(m * sizeof *l->rio);
		if (!l->rio)
			goto oom;
		for (size_t i = 0; i < t->n; i++)
			l->rio[i] = (struct fsp_replay_io){ .issue_ns = t->io[i].issue_ns,
							    .complete_ns = t->io[i].complete_ns };
		/* already in issue order: the stable sort keeps it */
		if (fsp_replay_order_init(&l->order, l->rio, t->n))
			goto oom;
		l->res->recorded_depth_max = l->order.depth_max;
	} else {
		l->thr_of = malloc(m * sizeof *l->thr_of);
		size_t cap = 0;
		if (!l->thr_of)
			goto oom;
		for (size_t i = 0; i < t->n; i++) {
			size_t k = 0;
			while (k < l->nthr && l->thr[k].id != t->io[i].thread)
				k++;
			if (k == l->nthr) {
				if (fsp_grow((void **)&l->thr, &cap, l->nthr + 1, sizeof *l->thr, 16))
					goto oom;
				l->thr[l->nthr++] = (struct thr){ .id = t->io[i].thread };
			}
			l->thr_of[i] = (uint32_t)k;
		}
		l->res->recorded_depth_max = 0; /* unknown */
	}
	l->maxlen = 4096;
	for (size_t i = 0; i < t->n; i++)
		if (t->io[i].len > l->maxlen)
			l->maxlen = t->io[i].len;
	if (l->maxlen > FSP_REPLAY_MAX_LEN)
		l->maxlen = FSP_REPLAY_MAX_LEN;
	l->maxlen = (l->maxlen + 4095) & ~4095u;
	int rc = -EAGAIN;
	for (l->depth = DEPTH; l->depth && rc == -EAGAIN; l->depth /= 2)
		if ((rc = io_setup((int)l->depth, &l->ctx)) == 0)
			break;
	if (rc)
		return snprintf(err, errlen, "io_setup failed: %s", strerror(-rc)), -1;
	l->cbs = calloc(l->depth, sizeof *l->cbs);
	l->free_cbs = calloc(l->depth, sizeof *l->free_cbs);
	l->batch = calloc(l->depth, sizeof *l->batch);
	l->events = calloc(l->depth, sizeof *l->events);
	if (!l->cbs || !l->free_cbs || !l->batch || !l->events ||
	    posix_memalign(&l->rbuf, 4096, l->maxlen) || posix_memalign(&l->wbuf, 4096, l->maxlen))
		goto oom;
	/* what every replayed write carries: a recognizable text */
	static const char pat[] = "fsprism replay  ";
	for (uint32_t i = 0; i < l->maxlen; i++)
		((char *)l->wbuf)[i] = pat[i % 16];
	for (unsigned i = 0; i < l->depth; i++)
		l->free_cbs[l->nfree++] = &l->cbs[i];
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void teardown(struct loop *l)
{
	if (l->ctx)
		io_destroy(l->ctx);
	if (l->t->has_complete && l->rio)
		fsp_replay_order_free(&l->order);
	free(l->rio);
	free(l->at);
	free(l->submit_ns);
	free(l->ready_ns);
	free(l->thr);
	free(l->thr_of);
	free(l->cbs);
	free(l->free_cbs);
	free(l->batch);
	free(l->events);
	free(l->rbuf);
	free(l->wbuf);
}

/* 1: IO i was prepared in cb, 0: it is left out */
static int prep(struct loop *l, struct iocb *cb, size_t i)
{
	const struct fsp_iotrace_io *e = &l->t->io[i];
	const struct fsp_treplay_file *f =
		&l->files[e->file == FSP_IOTRACE_DEVICE ? l->t->nfiles : e->file];
	struct fsp_treplay_result *r = l->res;
	if (e->op == FSP_IOTRACE_TRIM ||
	    ((e->op == FSP_IOTRACE_READ || e->op == FSP_IOTRACE_WRITE) && !e->len)) {
		r->skipped++;
		return 0;
	}
	uint32_t len = e->len;
	if (len > l->maxlen) {
		len = l->maxlen;
		r->truncated++;
	}
	uint64_t off = f->base + e->offset;
	int fd = f->fd_direct;
	if (e->op == FSP_IOTRACE_READ || e->op == FSP_IOTRACE_WRITE) {
		if (fd < 0 || !f->align || off % f->align || len % f->align) {
			fd = f->fd_buffered;
			r->buffered++;
		}
	} else if (fd < 0) {
		fd = f->fd_buffered;
	}
	switch (e->op) {
	case FSP_IOTRACE_READ:
		io_prep_pread(cb, fd, l->rbuf, len, (long long)off);
		break;
	case FSP_IOTRACE_WRITE:
		io_prep_pwrite(cb, fd, l->wbuf, len, (long long)off);
		if (e->fua)
			cb->aio_rw_flags = RWF_DSYNC;
		break;
	case FSP_IOTRACE_FSYNC:
		io_prep_fsync(cb, fd);
		break;
	default:
		io_prep_fdsync(cb, fd);
		break;
	}
	cb->data = (void *)(uintptr_t)i;
	return 1;
}

static void busy_end(struct loop *l, uint64_t now)
{
	if (!l->inflight)
		l->res->busy_ns += now - l->busy_from;
}

static void complete(struct loop *l, int got, char *err, size_t errlen)
{
	uint64_t now = fsp_now_ns();
	struct fsp_treplay_result *r = l->res;
	for (int k = 0; k < got; k++) {
		struct iocb *cb = l->events[k].obj;
		size_t i = (uintptr_t)cb->data;
		long ret = (long)l->events[k].res;
		const struct fsp_iotrace_io *e = &l->t->io[i];
		l->free_cbs[l->nfree++] = cb;
		l->inflight--;
		done_io(l, i);
		if (ret < 0) {
			if (!l->failed)
				snprintf(err, errlen, "%s of %u bytes at %llu (trace IO %zu): %s",
					 fsp_iotrace_op_name(e->op), e->len,
					 (unsigned long long)e->offset, i, strerror((int)-ret));
			l->failed = 1;
			continue;
		}
		uint64_t lat = now - l->submit_ns[i];
		uint64_t want = l->t0 + l->at[i];
		uint64_t ilat = now > want ? now - want : 0;
		r->ios[e->op]++;
		if (e->op == FSP_IOTRACE_READ) {
			r->read_bytes += (uint64_t)ret;
			r->read_ilat_ns[r->nread] = ilat;
			r->read_lat_ns[r->nread++] = lat;
		} else if (e->op == FSP_IOTRACE_WRITE) {
			r->write_bytes += (uint64_t)ret;
			r->write_ilat_ns[r->nwrite] = ilat;
			r->write_lat_ns[r->nwrite++] = lat;
		} else {
			r->sync_lat_ns[r->nsync++] = lat;
		}
	}
	busy_end(l, now);
}

static int reap(struct loop *l, long min, uint64_t timeout_ns, char *err, size_t errlen)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u) };
	int got = io_getevents(l->ctx, min, (long)l->depth, l->events,
			       timeout_ns == UINT64_MAX ? NULL : &ts);
	if (got == -EINTR)
		return 0;
	if (got < 0) {
		snprintf(err, errlen, "io_getevents failed: %s", strerror(-got));
		l->failed = 2;
		return -1;
	}
	if (got)
		complete(l, got, err, errlen);
	return got;
}

int fsp_treplay_run(const struct fsp_iotrace *t, const struct fsp_treplay_file *files,
		    const struct fsp_treplay_opts *o, volatile sig_atomic_t *stop,
		    struct fsp_treplay_result *res, char *err, size_t errlen)
{
	struct loop l = { .t = t, .files = files, .o = o, .res = res };
	memset(res, 0, sizeof *res);
	if (setup(&l, err, errlen)) {
		teardown(&l);
		return -1;
	}
	size_t next = 0;
	uint64_t t0 = fsp_now_ns();
	l.t0 = t0;
	res->started_ns = t0;
	while ((next < t->n && !*stop && !l.failed) || l.inflight) {
		if (l.failed == 2)
			break;
		uint64_t now = fsp_now_ns();
		unsigned nb = 0;
		while (next < t->n && !*stop && !l.failed && l.nfree && ready(&l, next)) {
			if (!l.ready_ns[next])
				l.ready_ns[next] = now;
			if (t0 + l.at[next] > now)
				break;
			struct iocb *cb = l.free_cbs[l.nfree - 1];
			if (!prep(&l, cb, next)) {
				done_io(&l, next++);
				continue;
			}
			l.nfree--;
			if (!t->has_complete)
				l.thr[l.thr_of[next]].inflight++;
			l.batch[nb++] = cb;
			next++;
		}
		if (nb) {
			uint64_t sub = fsp_now_ns();
			if (!l.inflight)
				l.busy_from = sub;
			for (unsigned k = 0; k < nb; k++) {
				size_t i = (uintptr_t)l.batch[k]->data;
				l.submit_ns[i] = sub;
				uint64_t want = t0 + l.at[i];
				uint64_t lag = sub > want ? sub - want : 0;
				uint64_t from = want > l.ready_ns[i] ? want : l.ready_ns[i];
				uint64_t self = sub > from ? sub - from : 0;
				res->self_lag_ns[res->nlag] = self;
				res->lag_ns[res->nlag++] = lag;
				if (lag > o->late_ns)
					res->late++;
				if (self > o->late_ns)
					res->late_self++;
				uint32_t d = l.inflight + k + 1;
				if (d > res->depth_max)
					res->depth_max = d;
				res->depth_sum += d;
				res->submitted++;
			}
			unsigned sent = 0;
			while (sent < nb) {
				int got = io_submit(l.ctx, (long)(nb - sent), l.batch + sent);
				if (got == -EINTR || got == -EAGAIN)
					continue;
				if (got <= 0) {
					size_t i = (uintptr_t)l.batch[sent]->data;
					snprintf(err, errlen, "io_submit of a %s at %llu (trace IO %zu) failed: %s",
						 fsp_iotrace_op_name(t->io[i].op),
						 (unsigned long long)t->io[i].offset, i,
						 strerror(got ? -got : EIO));
					l.failed = 1;
					for (unsigned k = sent; k < nb; k++) {
						size_t j = (uintptr_t)l.batch[k]->data;
						l.free_cbs[l.nfree++] = l.batch[k];
						done_io(&l, j);
					}
					break;
				}
				sent += (unsigned)got;
				l.inflight += (unsigned)got;
			}
			if (!l.inflight)
				busy_end(&l, fsp_now_ns());
		}
		int got = l.inflight ? reap(&l, 0, 0, err, errlen) : 0;
		if (got < 0)
			break;
		if (nb || got)
			continue;
		/* nothing went out or came back: wait for the next thing to happen */
		if (next < t->n && !*stop && !l.failed && l.nfree && ready(&l, next)) {
			uint64_t want = t0 + l.at[next];
			now = fsp_now_ns();
			if (want > now + SPIN_NS) {
				uint64_t nap = want - now - SPIN_NS;
				if (l.inflight) {
					if (reap(&l, 1, nap, err, errlen) < 0)
						break;
				} else {
					struct timespec ts = { (time_t)(nap / 1000000000u),
							       (long)(nap % 1000000000u) };
					nanosleep(&ts, NULL);
				}
			}
			/* else: spin, the loop reads the clock again */
		} else if (l.inflight) {
			if (reap(&l, 1, UINT64_MAX, err, errlen) < 0)
				break;
		} else if (next < t->n && !*stop && !l.failed) {
			snprintf(err, errlen, "replay order stuck at IO %zu", next);
			l.failed = 1;
		}
	}
	res->ended_ns = fsp_now_ns();
	int rc = l.failed ? -1 : 0;
	teardown(&l);
	qsort(res->lag_ns, res->nlag, sizeof *res->lag_ns, fsp_cmp_u64);
	qsort(res->self_lag_ns, res->nlag, sizeof(uint64_t), fsp_cmp_u64);
	qsort(res->read_lat_ns, res->nread, sizeof(uint64_t), fsp_cmp_u64);
	qsort(res->write_lat_ns, res->nwrite, sizeof(uint64_t), fsp_cmp_u64);
	qsort(res->sync_lat_ns, res->nsync, sizeof(uint64_t), fsp_cmp_u64);
	qsort(res->read_ilat_ns, res->nread, sizeof(uint64_t), fsp_cmp_u64);
	qsort(res->write_ilat_ns, res->nwrite, sizeof(uint64_t), fsp_cmp_u64);
	return rc;
}

void fsp_treplay_result_free(struct fsp_treplay_result *res)
{
	free(res->lag_ns);
	free(res->read_lat_ns);
	free(res->write_lat_ns);
	free(res->sync_lat_ns);
	free(res->read_ilat_ns);
	free(res->write_ilat_ns);
	free(res->self_lag_ns);
	res->self_lag_ns = NULL;
	res->lag_ns = res->read_lat_ns = res->write_lat_ns = res->sync_lat_ns = NULL;
	res->read_ilat_ns = res->write_ilat_ns = NULL;
}

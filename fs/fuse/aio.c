/*
 * aio.c - asynchronous backing IO for the FUSE layer: the slot pool and the
 * reaper thread (the interface and why it exists: aio.h).
 *
 * The reaper is the only thread that collects completions; it calls each
 * slot's done() in completion order and then returns the slot to the free
 * list. Stopping waits for the IO in flight (which the backing file system
 * always completes), then wakes the reaper with a zero-length read of
 * /dev/null, the one IO that carries no slot.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fs/fuse/aio.h"
#include "src/base/bufpool.h"
#include "src/base/clock.h"

#define BATCH 64

struct fsp_aio {
	io_context_t ctx;
	size_t slot_size;
	int timed;
	pthread_t reaper;
	pthread_mutex_t lock;   /* free list, in-flight count */
	pthread_cond_t idle;    /* in flight fell to 0 */
	struct fsp_aio_io *free_list;
	unsigned inflight;
	struct fsp_aio_io **slots; /* every slot made, for freeing */
	unsigned nslots, slots_cap;
	struct fsp_bufpool *pool;  /* the slots' buffers (huge pages) */
};

static void *reaper_main(void *arg)
{
	struct fsp_aio *a = arg;
	struct io_event ev[BATCH];
	int stop = 0;
	while (!stop) {
		int n = io_getevents(a->ctx, 1, BATCH, ev, NULL);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return NULL; /* the context is gone: nothing more will come */
		uint64_t now = a->timed ? fsp_now_ns() : 0;
		struct fsp_aio_io *done = NULL, *last = NULL;
		unsigned finished = 0;
		for (int i = 0; i < n; i++) {
			struct fsp_aio_io *io = ev[i].data;
			if (!io) {
				stop = 1; /* fsp_aio_stop's wake-up: all done */
				continue;
			}
			io->done(io, (long)ev[i].res, now);
			io->next = done;
			done = io;
			if (!last)
				last = io;
			finished++;
		}
		/* one lock per batch: slots back to the free list, count down */
		pthread_mutex_lock(&a->lock);
		if (last) {
			last->next = a->free_list;
			a->free_list = done;
		}
		a->inflight -= finished;
		if (a->inflight == 0)
			pthread_cond_broadcast(&a->idle);
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

struct fsp_aio *fsp_aio_start(unsigned depth, size_t slot_size, int timed)
{
	struct fsp_aio *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->slot_size = slot_size < sizeof(struct fsp_aio_io) ? sizeof(struct fsp_aio_io)
							       : slot_size;
	a->timed = timed;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->idle, NULL);
	a->pool = fsp_bufpool_new();
	if (!a->pool) {
		free(a);
		return NULL;
	}
	int rc = io_setup((int)depth, &a->ctx);
	if (rc < 0) {
		fsp_bufpool_free(a->pool);
		free(a);
		errno = -rc;
		return NULL;
	}
	rc = pthread_create(&a->reaper, NULL, reaper_main, a);
	if (rc) {
		io_destroy(a->ctx);
		fsp_bufpool_free(a->pool);
		free(a);
		errno = rc;
		return NULL;
	}
	return a;
}

struct fsp_aio_io *fsp_aio_get(struct fsp_aio *a, size_t len)
{
	pthread_mutex_lock(&a->lock);
	struct fsp_aio_io *io = a->free_list;
	if (io)
		a->free_list = io->next;
	pthread_mutex_unlock(&a->lock);
	if (!io) {
		io = calloc(1, a->slot_size);
		if (!io)
			return NULL;
		pthread_mutex_lock(&a->lock);
		if (a->nslots == a->slots_cap) {
			unsigned cap = a->slots_cap ? a->slots_cap * 2 : 64;
			void *p = realloc(a->slots, cap * sizeof(*a->slots));
			if (!p) {
				pthread_mutex_unlock(&a->lock);
				free(io);
				return NULL;
			}
			a->slots = p;
			a->slots_cap = cap;
		}
		a->slots[a->nslots++] = io;
		pthread_mutex_unlock(&a->lock);
	}
	if (io->cap < len) {
		size_t cap;
		void *p = fsp_bufpool_get(a->pool, len, &cap);
		if (!p) {
			fsp_aio_put(a, io);
			return NULL;
		}
		fsp_bufpool_put(a->pool, io->buf, io->cap);
		io->buf = p;
		io->cap = cap;
	}
	return io;
}

void fsp_aio_put(struct fsp_aio *a, struct fsp_aio_io *io)
{
	pthread_mutex_lock(&a->lock);
	io->next = a->free_list;
	a->free_list = io;
	pthread_mutex_unlock(&a->lock);
}

int fsp_aio_submit(struct fsp_aio *a, struct fsp_aio_io *io)
{
	io->cb.data = io;
	struct iocb *cbp = &io->cb;
	/* counted first: the reaper may finish it before io_submit returns */
	pthread_mutex_lock(&a->lock);
	a->inflight++;
	pthread_mutex_unlock(&a->lock);
	int rc = io_submit(a->ctx, 1, &cbp);
	if (rc == 1)
		return 0;
	pthread_mutex_lock(&a->lock);
	if (--a->inflight == 0)
		pthread_cond_broadcast(&a->idle);
	pthread_mutex_unlock(&a->lock);
	return rc < 0 ? rc : -EAGAIN;
}

void fsp_aio_usage(struct fsp_aio *a, uint64_t *mapped, uint64_t *huge)
{
	fsp_bufpool_usage(a->pool, mapped, huge);
}

void fsp_aio_stop(struct fsp_aio *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	while (a->inflight)
		pthread_cond_wait(&a->idle, &a->lock);
	pthread_mutex_unlock(&a->lock);

	/* wake the reaper with an IO that has no slot */
	struct iocb wake;
	struct iocb *cbp = &wake;
	static char dummy;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int woken = 0;
	if (fd >= 0) {
		io_prep_pread(&wake, fd, &dummy, 0, 0);
		wake.data = NULL;
		woken = io_submit(a->ctx, 1, &cbp) == 1;
	}
	if (woken) {
		pthread_join(a->reaper, NULL);
		io_destroy(a->ctx);
	} else {
		/* no wake-up IO: destroying the context ends io_getevents */
		io_destroy(a->ctx);
		pthread_join(a->reaper, NULL);
	}
	if (fd >= 0)
		close(fd);
	for (unsigned i = 0; i < a->nslots; i++)
		free(a->slots[i]);
	free(a->slots);
	fsp_bufpool_free(a->pool); /* the slots' buffers */
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->idle);
	free(a);
}

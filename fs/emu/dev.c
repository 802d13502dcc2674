/*
 * dev.c - the store's device IO: every read, write and flush the store
 * sends to its one descriptor (O_DIRECT when the file system takes it,
 * unaligned buffers through a per-thread bounce buffer), timed and
 * accounted: the counters of struct emu_store_acct, the sequentiality of
 * the IO (streams), the caller's data and other time, the devio callback.
 * The journal reaches the device through the struct emu_io made here, and
 * a fragmented read sends its pieces together through libaio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libaio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "src/base/clock.h"
#include "src/base/ops.h"
#include "fs/emu/io.h"
#include "fs/emu/store_int.h"

__thread uint8_t *dev_bounce;
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_key_init(void)
{
	pthread_key_create(&bounce_key, free);
}

/* The first bounce_buf (store_int.h) of a thread: its buffer of
 * BOUNCE_MAX + one block, freed when the thread ends. */
uint8_t *dev_bounce_alloc(void)
{
	if (!dev_bounce) {
		void *p;
		pthread_once(&bounce_once, bounce_key_init);
		if (posix_memalign(&p, 65536, BOUNCE_MAX + 65536))
			return NULL;
		dev_bounce = p;
		pthread_setspecific(bounce_key, p);
	}
	return dev_bounce;
}

static int aligned(const void *p, size_t len, uint64_t off)
{
	return ((uintptr_t)p % 4096) == 0 && len % 512 == 0 && off % 512 == 0;
}

/* Sequentiality: a device IO continues a stream when it starts where one of
 * the STREAMS most recent streams ended. */
static void account_io(struct emu_store *st, uint64_t off, uint64_t len)
{
	int hit = -1, lru = 0;
	st->acct.ios++;
	st->io_clock++;
	for (int i = 0; i < STREAMS; i++) {
		if (st->stream_used[i] && st->stream_end[i] == off) {
			hit = i;
			break;
		}
		if (st->stream_used[i] < st->stream_used[lru])
			lru = i;
	}
	if (hit >= 0) {
		st->acct.seq_ios++;
	} else {
		hit = lru;
		st->stream_id[hit] = ++st->next_stream;
	}
	st->stream_end[hit] = off + len;
	st->stream_used[hit] = st->io_clock;
	st->window[st->nwindow++] = st->stream_id[hit];
	if (st->nwindow == WINDOW) {
		unsigned distinct = 0;
		for (unsigned i = 0; i < WINDOW; i++) {
			unsigned j = 0;
			while (j < i && st->window[j] != st->window[i])
				j++;
			distinct += j == i;
		}
		st->streams_sum += distinct;
		st->acct.windows++;
		st->nwindow = 0;
	}
}

/* Account one device IO that ran from t0 to t1. user_data: 1 the caller's
 * own data (backing time), 0 the emulation's (emu time), -1 the caller
 * accounts the time itself. */
static void dev_note_at(struct emu_store *st, struct emu_cx *cx, int op, int kind,
			uint64_t off, uint64_t len, uint64_t t0, uint64_t t1, int err,
			int user_data, unsigned flags)
{
	uint64_t ns = t1 - t0;
	if (cx && user_data >= 0) {
		if (user_data)
			cx->data_ns += ns;
		else
			cx->other_ns += ns;
	}
	pthread_mutex_lock(&st->acct_lock);
	if (!err) {
		if (op == FSP_OP_DEV_READ) {
			st->acct.reads++;
			st->acct.read_bytes += len;
		} else {
			st->acct.writes[kind]++;
			st->acct.bytes[kind] += len;
			if (flags & EMU_IO_FUA)
				st->acct.fua_writes++;
		}
		if (op != FSP_OP_DEV_FLUSH)
			account_io(st, off, len);
	}
	pthread_mutex_unlock(&st->acct_lock);
	if (st->cfg.devio)
		st->cfg.devio(st->cfg.devio_arg, cx, op, off, len, t0, ns, err);
}

static void dev_note(struct emu_store *st, struct emu_cx *cx, int op, int kind,
		     uint64_t off, uint64_t len, uint64_t t0, int err, int user_data,
		     unsigned flags)
{
	dev_note_at(st, cx, op, kind, off, len, t0, fsp_now_ns(), err, user_data, flags);
}

static const int write_op[EMU_IO_NKINDS] = {
	[EMU_IO_DATA] = FSP_OP_DEV_WRITE_DATA,
	[EMU_IO_JOURNAL] = FSP_OP_DEV_WRITE_JOURNAL,
	[EMU_IO_METADATA] = FSP_OP_DEV_WRITE_META,
	[EMU_IO_CHECKPOINT] = FSP_OP_DEV_WRITE_CKPT,
	[EMU_IO_FLUSH] = FSP_OP_DEV_FLUSH,
};

/* The whole of [off, off + len) written from or read into buf. O_DIRECT
 * wants aligned buffers: an unaligned one goes through the thread's bounce
 * buffer, BOUNCE_MAX at a time. 1 when there is no bounce buffer to be had
 * (nothing was sent), else 0 or -errno. */
static int fd_io(struct emu_store *st, void *buf, size_t len, uint64_t off, int write)
{
	uint8_t *p = buf;
	int rc = 0;
	if (!st->direct || aligned(buf, len, off))
		return emu_fd_full_io(st->fd, buf, len, off, write);
	uint8_t *b = bounce_buf();
	for (size_t done = 0; !rc && done < len;) {
		size_t n = len - done < BOUNCE_MAX ? len - done : BOUNCE_MAX;
		if (!b)
			return 1;
		if (write)
			memcpy(b, p + done, n);
		rc = emu_fd_full_io(st->fd, b, n, off + done, write);
		if (!rc && !write)
			memcpy(p + done, b, n);
		done += n;
	}
	return rc;
}

int dev_flush(struct emu_store *st, struct emu_cx *cx)
{
	if (!st->cfg.flush)
		return 0;
	uint64_t t0 = fsp_now_ns();
	int rc = fdatasync(st->fd) ? -errno : 0;
	dev_note(st, cx, FSP_OP_DEV_FLUSH, EMU_IO_FLUSH, 0, 0, t0, rc, 0, 0);
	return rc;
}

/*
 * One write to the store. Unaligned buffers go through the bounce buffer
 * (the store is opened O_DIRECT when the file system allows it). A FUA
 * write is sent as the write followed by a cache flush, recorded as such:
 * userspace cannot send REQ_FUA alone (an O_DSYNC write is a FUA write
 * *and* a flush), and write + flush is what the block layer itself sends
 * for FUA to a device without FUA support, so the flush count stays exact.
 */
int dev_write(struct emu_store *st, struct emu_cx *cx, const void *buf, size_t len,
		     uint64_t off, int kind, unsigned flags, int user_data)
{
	uint64_t t0 = fsp_now_ns();
	if (!st->cfg.flush)
		flags &= ~EMU_IO_FUA;
	int rc = fd_io(st, (void *)buf, len, off, 1);
	if (rc > 0)
		return -ENOMEM;
	dev_note(st, cx, write_op[kind], kind, off, len, t0, rc, user_data, flags);
	if (!rc && (flags & EMU_IO_FUA))
		rc = dev_flush(st, cx);
	return rc;
}

int dev_read(struct emu_store *st, struct emu_cx *cx, void *buf, size_t len,
		    uint64_t off, int user_data)
{
	uint64_t t0 = fsp_now_ns();
	int rc = fd_io(st, buf, len, off, 0);
	if (rc > 0)
		return -ENOMEM;
	dev_note(st, cx, FSP_OP_DEV_READ, EMU_IO_DATA, off, len, t0, rc, user_data, 0);
	return rc;
}

/* struct emu_io for the journal module: its IO is accounted to st->jcx. */
static int jio_pwrite(void *ctx, const void *buf, size_t len, uint64_t off,
		      enum emu_io_kind kind, unsigned flags)
{
	struct emu_store *st = ctx;
	return dev_write(st, st->jcx, buf, len, off, kind, flags, 0);
}

static int jio_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct emu_store *st = ctx;
	return dev_read(st, st->jcx, buf, len, off, 0);
}

static int jio_flush(void *ctx)
{
	struct emu_store *st = ctx;
	return dev_flush(st, st->jcx);
}

struct emu_io dev_journal_io(struct emu_store *st)
{
	return (struct emu_io){ jio_pwrite, jio_pread, jio_flush, st };
}

static __thread io_context_t aio_ctx;
static __thread int aio_state; /* 0 unknown, 1 ready, -1 unavailable */
static pthread_key_t aio_key;
static pthread_once_t aio_once = PTHREAD_ONCE_INIT;

static void aio_ctx_free(void *p)
{
	io_destroy((io_context_t)p);
}

static void aio_key_init(void)
{
	pthread_key_create(&aio_key, aio_ctx_free);
}

static io_context_t thread_aio(void)
{
	if (aio_state == 0) {
		pthread_once(&aio_once, aio_key_init);
		aio_state = io_setup(READ_PIECES, &aio_ctx) == 0 ? 1 : -1;
		if (aio_state == 1)
			pthread_setspecific(aio_key, aio_ctx);
	}
	return aio_state == 1 ? aio_ctx : NULL;
}

/* Read the mapped pieces p[0..n) into dst (block i of the range at
 * dst + (p.lblk - first) * bs). 0 or -errno. */
int read_pieces(struct emu_store *st, struct emu_cx *cx, const struct rpiece *p,
		       size_t n, uint64_t first, uint8_t *dst)
{
	size_t mapped = 0;
	for (size_t i = 0; i < n; i++)
		mapped += p[i].mapped;
	io_context_t ctx = mapped > 1 ? thread_aio() : NULL;
	if (!ctx) {
		for (size_t i = 0; i < n; i++) {
			if (!p[i].mapped)
				continue;
			int rc = dev_read(st, cx, dst + (p[i].lblk - first) * st->bs, p[i].n * st->bs,
					  p[i].pblk * st->bs, 1);
			if (rc)
				return rc;
		}
		return 0;
	}
	struct iocb cbs[READ_PIECES], *cbp[READ_PIECES];
	struct io_event ev[READ_PIECES];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!p[i].mapped)
			continue;
		io_prep_pread(&cbs[k], st->fd, dst + (p[i].lblk - first) * st->bs,
			      p[i].n * st->bs, (long long)(p[i].pblk * st->bs));
		cbs[k].data = (void *)&p[i];
		cbp[k] = &cbs[k];
		k++;
	}
	uint64_t t0 = fsp_now_ns();
	int rc = 0;
	size_t submitted = 0, reaped = 0;
	while (submitted < k) {
		int r = io_submit(ctx, (long)(k - submitted), cbp + submitted);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r <= 0) {
			rc = r < 0 ? r : -EIO;
			break;
		}
		submitted += (size_t)r;
	}
	while (reaped < submitted) {
		int r = io_getevents(ctx, 1, (long)(submitted - reaped), ev, NULL);
		if (r == -EINTR)
			continue;
		if (r < 0) {
			rc = rc ? rc : r;
			break; /* cannot happen with a valid context; the pieces leak */
		}
		uint64_t now = fsp_now_ns();
		for (int e = 0; e < r; e++) {
			const struct rpiece *q = ev[e].data;
			long res = (long)ev[e].res;
			int err = res < 0 ? (int)res : (uint64_t)res != q->n * st->bs ? -EIO : 0;
			if (err && !rc)
				rc = err;
			/* each piece is recorded with its own completion time;
			 * the caller's data time is the batch's wall time,
			 * added once below */
			dev_note_at(st, cx, FSP_OP_DEV_READ, EMU_IO_DATA, q->pblk * st->bs,
				    q->n * st->bs, t0, now, err, -1, 0);
		}
		reaped += (size_t)r;
	}
	if (cx)
		cx->data_ns += fsp_now_ns() - t0;
	return rc;
}

void emu_store_get_acct(struct emu_store *st, struct emu_store_acct *out)
{
	pthread_mutex_lock(&st->acct_lock);
	*out = st->acct;
	out->streams_x1000 = st->acct.windows ? st->streams_sum * 1000 / st->acct.windows : 0;
	pthread_mutex_unlock(&st->acct_lock);
}

/*
 * blkparse.c - blktrace's binary per-CPU files as a trace (blkparse.h).
 * The layout and the action bits are the kernel's (include/uapi/linux/
 * blktrace_api.h): action = category bits << 16 | action code.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bench/engine/blkparse.h"
#include "src/base/cmp.h"
#include "src/base/err.h"
#include "src/base/grow.h"

/* categories (the action's high 16 bits) */
#define TC_READ (1u << 0)
#define TC_WRITE (1u << 1)
#define TC_FLUSH (1u << 2)
#define TC_NOTIFY (1u << 10)
#define TC_DISCARD (1u << 13)
#define TC_FUA (1u << 15)
/* actions (the low 16 bits, without the cgroup bit 1 << 8) */
#define TA_QUEUE 1
#define TA_ISSUE 7
#define TA_COMPLETE 8

struct ev {
	uint64_t time, sector;
	uint32_t bytes, action, pid, device;
	uint16_t error;
	uint64_t order; /* position among all events, for a stable sort */
};

struct fsp_blk_capture {
	struct ev *ev;
	size_t n, cap;
};

struct fsp_blk_capture *fsp_blk_capture_new(void)
{
	return calloc(1, sizeof(struct fsp_blk_capture));
}

void fsp_blk_capture_free(struct fsp_blk_capture *c)
{
	if (c)
		free(c->ev);
	free(c);
}

static uint32_t get32(const unsigned char *p, int swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static uint64_t get64(const unsigned char *p, int swap)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return swap ? __builtin_bswap64(v) : v;
}

static uint16_t get16(const unsigned char *p, int swap)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return swap ? __builtin_bswap16(v) : v;
}

/* 0: native order, 1: swapped, -1: not the magic */
static int byte_order(const unsigned char *p)
{
	uint32_t m = get32(p, 0);
	if ((m & 0xffffff00u) == FSP_BLK_MAGIC)
		return 0;
	if ((__builtin_bswap32(m) & 0xffffff00u) == FSP_BLK_MAGIC)
		return 1;
	return -1;
}

int fsp_blk_capture_add(struct fsp_blk_capture *c, const unsigned char *buf, size_t len,
			const char *name, char *err, size_t errlen)
{
	size_t off = 0;
	if (!len)
		return fsp_set_err(err, errlen, "%s: byte 0: empty file: no blktrace events", name);
	int swap = len >= 4 ? byte_order(buf) : -1;
	while (off < len) {
		if (len - off < FSP_BLK_EVENT_SIZE)
			return fsp_set_err(err, errlen,
					   "%s: byte %zu: truncated event (%zu of its %u bytes)",
					   name, off, len - off, FSP_BLK_EVENT_SIZE);
		const unsigned char *p = buf + off;
		int s = byte_order(p);
		if (s < 0 || s != swap)
			return fsp_set_err(err, errlen,
					   "%s: byte %zu: bad magic 0x%08" PRIx32
					   " (not a blktrace event, expected 0x%08x)",
					   name, off, get32(p, 0), FSP_BLK_MAGIC | 7);
		unsigned version = get32(p, swap) & 0xff;
		if (version != 7 && version != 8)
			return fsp_set_err(err, errlen,
					   "%s: byte %zu: blktrace version %u is not supported (7 and 8 are)",
					   name, off, version);
		uint16_t pdu = get16(p + 46, swap);
		if (len - off - FSP_BLK_EVENT_SIZE < pdu)
			return fsp_set_err(err, errlen,
					   "%s: byte %zu: truncated event: its %u bytes of data run past the end",
					   name, off, pdu);
		if (fsp_grow((void **)&c->ev, &c->cap, c->n + 1, sizeof *c->ev, 4096))
			return fsp_set_err(err, errlen, "out of memory");
		c->ev[c->n] = (struct ev){
			.time = get64(p + 8, swap), .sector = get64(p + 16, swap),
			.bytes = get32(p + 24, swap), .action = get32(p + 28, swap),
			.pid = get32(p + 32, swap), .device = get32(p + 36, swap),
			.error = get16(p + 44, swap), .order = c->n };
		c->n++;
		off += FSP_BLK_EVENT_SIZE + pdu;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	return FSP_CMP(x->time, y->time) ?: FSP_CMP(x->order, y->order);
}

static int ev_op(uint32_t cat)
{
	if (cat & TC_DISCARD)
		return FSP_IOTRACE_TRIM;
	if (cat & TC_WRITE)
		return FSP_IOTRACE_WRITE;
	if (cat & TC_READ)
		return FSP_IOTRACE_READ;
	return -1;
}

int fsp_blk_capture_finish(struct fsp_blk_capture *c, struct fsp_iotrace *t, char *err,
			   size_t errlen)
{
	int rc = -1;
	size_t *pending = NULL, npend = 0;
	qsort(c->ev, c->n, sizeof *c->ev, by_time);
	int have_issue = 0, have_dev = 0;
	uint32_t dev = 0;
	for (size_t i = 0; i < c->n; i++) {
		uint32_t cat = c->ev[i].action >> 16, act = c->ev[i].action & 0xff;
		if (cat & TC_NOTIFY)
			continue;
		if (!have_dev) {
			dev = c->ev[i].device;
			have_dev = 1;
		}
		if (c->ev[i].device == dev && act == TA_ISSUE)
			have_issue = 1;
	}
	unsigned start_act = have_issue ? TA_ISSUE : TA_QUEUE;
	pending = malloc((c->n ? c->n : 1) * sizeof *pending);
	if (!pending) {
		fsp_set_err(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct ev *e = &c->ev[i];
		uint32_t cat = e->action >> 16, act = e->action & 0xff;
		if ((cat & TC_NOTIFY) || e->device != dev)
			continue;
		int op = ev_op(cat);
		int flush = (cat & TC_FLUSH) && !e->bytes;
		if (flush)
			op = FSP_IOTRACE_FSYNC;
		if (op < 0)
			continue;
		if (act == start_act) {
			struct fsp_iotrace_io io = {
				.issue_ns = e->time, .offset = e->sector * 512, .len = e->bytes,
				.file = FSP_IOTRACE_DEVICE, .thread = e->pid, .op = (uint8_t)op,
				.fua = (cat & TC_FUA) && op == FSP_IOTRACE_WRITE };
			if (flush)
				io.offset = io.len = 0;
			if (fsp_iotrace_add(t, &io)) {
				fsp_set_err(err, errlen, "out of memory");
				goto out;
			}
			t->io[t->n - 1].complete_ns = 0;
			pending[npend++] = t->n - 1;
		} else if (act == TA_COMPLETE) {
			/* the oldest pending request of that sector and direction */
			for (size_t k = 0; k < npend; k++) {
				struct fsp_iotrace_io *p = &t->io[pending[k]];
				if (p->op == op && (flush || p->offset == e->sector * 512)) {
					p->complete_ns = e->time;
					memmove(pending + k, pending + k + 1,
						(npend - k - 1) * sizeof *pending);
					npend--;
					break;
				}
			}
		}
	}
	if (!t->n) {
		fsp_set_err(err, errlen, "the capture has no read, write or flush request (%zu events)",
			    c->n);
		goto out;
	}
	for (size_t k = 0; k < npend; k++)
		t->io[pending[k]].complete_ns = t->io[pending[k]].issue_ns;
	t->unpaired = npend;
	t->has_complete = 1;
	fsp_iotrace_sort(t);
	rc = 0;
out:
	free(pending);
	fsp_blk_capture_free(c);
	return rc;
}

static int read_whole(const char *path, unsigned char **buf, size_t *len, char *err,
		      size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return fsp_set_err(err, errlen, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = malloc(cap);
	while (b) {
		size_t got = fread(b + n, 1, cap - n, f);
		n += got;
		if (n < cap)
			break;
		unsigned char *nb = realloc(b, cap * 2);
		if (!nb) {
			free(b);
			b = NULL;
			break;
		}
		b = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!b)
		return fsp_set_err(err, errlen, "out of memory");
	if (bad) {
		free(b);
		return fsp_set_err(err, errlen, "%s: read error", path);
	}
	*buf = b;
	*len = n;
	return 0;
}

int fsp_blktrace_is(const char *path)
{
	char p0[4096];
	struct stat sb;
	if (stat(path, &sb) || !S_ISREG(sb.st_mode)) {
		snprintf(p0, sizeof p0, "%s.blktrace.0", path);
		return !stat(p0, &sb) && S_ISREG(sb.st_mode);
	}
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	unsigned char m[4];
	size_t n = fread(m, 1, 4, f);
	fclose(f);
	return n == 4 && byte_order(m) >= 0;
}

int fsp_blktrace_load(const char *path, struct fsp_iotrace *t, char *err, size_t errlen)
{
	struct fsp_blk_capture *c = fsp_blk_capture_new();
	if (!c)
		return fsp_set_err(err, errlen, "out of memory");
	struct stat sb;
	char name[4096];
	int whole = !stat(path, &sb) && S_ISREG(sb.st_mode);
	for (unsigned cpu = 0;; cpu++) {
		if (whole) {
			if (cpu)
				break;
			snprintf(name, sizeof name, "%s", path);
		} else {
			snprintf(name, sizeof name, "%s.blktrace.%u", path, cpu);
			if (stat(name, &sb)) {
				if (!cpu) {
					fsp_blk_capture_free(c);
					return fsp_set_err(err, errlen,
							   "%s: no such file, and no %s.blktrace.0",
							   path, path);
				}
				break;
			}
		}
		unsigned char *buf = NULL;
		size_t len = 0;
		if (read_whole(name, &buf, &len, err, errlen)) {
			fsp_blk_capture_free(c);
			return -1;
		}
		/* a CPU that saw no event leaves an empty file: not a mistake */
		int rc = len || whole ? fsp_blk_capture_add(c, buf, len, name, err, errlen) : 0;
		free(buf);
		if (rc) {
			fsp_blk_capture_free(c);
			return -1;
		}
	}
	return fsp_blk_capture_finish(c, t, err, errlen);
}

/*
 * oplog.c - the per-operation latency log (see oplog.h).
 *
 * Each producer thread gets a context on its first fsp_oplog_add(): a
 * single-producer/single-consumer ring of records and a dropped counter.
 * The hot path copies the record into the ring and publishes it: no lock,
 * no atomic read-modify-write, no system call, and one or two cache lines
 * touched. One writer thread drains the rings, adds every record to the
 * histograms (one set, which stays warm in its cache) and keeps the rows
 * that --record asks for; producers never wait for it.
 *
 * Why the writer and not the producer updates the histograms: a FUSE mount
 * runs dozens of worker threads, and the kernel hands requests to them in
 * turn, so per-thread histograms (four layers, each a header and a bucket
 * line) were cold at every request; on a 2-CPU machine at QD32 that cost
 * more than the rest of the logging together. A producer whose ring is full
 * updates histograms of its own instead, so the statistics stay exact even
 * when rows are dropped; all sets are merged at close.
 *
 * Rows are appended, as they are, to an unlinked spill file beside the
 * database, and fsp_oplog_close() loads that file into SQLite. Inserting
 * into SQLite costs about a microsecond of CPU per row; done while the
 * operations are being measured it competed with them (it was most of
 * logging's cost at 4 KiB QD1). A spill write costs nanoseconds per record.
 *
 * Threads come and go (libfuse ends idle workers), so a thread's exit marks
 * its context orphaned and the next new thread adopts it instead of making
 * another: memory stays bounded by the peak number of live producers.
 * Contexts are freed only by fsp_oplog_close().
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sqlite3.h>
#include <zlib.h>
#include "src/base/clock.h"
#include "src/db/handle.h"
#include "src/db/oplog.h"
#include "src/db/store.h"

#define DEFAULT_RING 16384                    /* 1.5 MiB per producer thread */
#define STEP_PAGE_BITS 8                      /* steps: 256 pages of 256 */
#define STEP_PAGE (1u << STEP_PAGE_BITS)
#define STEP_PAGES (65536u / STEP_PAGE)
#define WRITER_BATCH 4096                     /* records per spill write */
#define COMMIT_ROWS 65536                     /* rows per load transaction */
/*
 * The writer sleeps between passes, adaptively: longer while traffic is light
 * (each wake-up is a context switch, dear on a small or virtual machine, and
 * it competes with the IO being measured), shorter as soon as a pass finds a
 * lot, so that a ring (DEFAULT_RING records) never fills: at the longest
 * sleep a thread would need over a million operations a second to overflow.
 */
#define CHECKPOINT_NS 1000000000ull          /* histograms + fsync: each second */
#define MIN_SLEEP_NS (1 * 1000000L)
#define MAX_SLEEP_NS (10 * 1000000L)
#define TLS_SLOTS 4

/* Histograms and counters of one (step, op) in one context. */
struct opstat {
	struct fsp_hist hist[FSP_LAYER__COUNT];
	uint64_t bytes;
	uint64_t errors;   /* failed replies */
	uint64_t expected; /* the replies of fsp_rec_expected: not failures */
};

/* Per-step table of per-op stats, allocated lazily, two levels deep. */
struct steptab {
	struct opstat *(*pages[STEP_PAGES])[STEP_PAGE][FSP_OP__COUNT];
};

/*
 * In the ring, op carries this flag when the record feeds the histograms
 * but is not to be kept as a row (--record=sample:N or hist). Operations
 * are below FSP_OP__COUNT, far under it.
 */
#define OP_NO_ROW 0x8000u

struct ctx {
	/* producer side */
	_Alignas(64) _Atomic uint64_t head;  /* next slot to fill */
	_Atomic uint64_t dropped;            /* written by the producer only */
	uint64_t tail_seen;                  /* producer's last view of tail */
	uint64_t sample_skip;                /* ops to skip before the next sampled row */
	struct steptab stats;                /* only for records the ring had no room for */
	/* writer side */
	_Alignas(64) _Atomic uint64_t tail;  /* next slot to drain */
	/* shared, fixed */
	_Alignas(64) struct fsp_rec *ring;
	uint64_t mask;
	_Atomic int orphaned;                /* 1: owner thread exited */
	struct ctx *next;                    /* immutable once published */
};

struct fsp_oplog {
	uint64_t id;                /* unique per process, never reused */
	struct fsp_store *store;
	int64_t run;
	enum fsp_record_mode mode;
	unsigned sample_n;
	size_t ring_cap;
	_Atomic(struct ctx *) ctxs; /* newest first */
	_Atomic uint64_t lost;      /* adds that found no context (no memory) */
	_Atomic uint64_t writer_dropped; /* rows the writer could not keep */
	_Atomic uint64_t recorded;  /* rows stored in SQLite (at close) */
	_Atomic int stop;
	struct steptab stats;       /* the writer's histograms */
	int spill_fd;               /* -1 with --record=off */
	char *spill_path;           /* NULL: unlinked (in-memory database) */
	char *ckpt_path;            /* SPILL-hist: the last checkpoint; NULL with spill_path */
	unsigned char head[256];    /* the spill's header (struct spill_head) */
	uint64_t spill_end;         /* end of the last whole frame (writer only) */
	uint64_t frame_seq;         /* frames written (writer only) */
	uint64_t spilled;           /* rows in the spill file (writer only) */
	uint64_t last_ckpt_ns;      /* writer only */
	uint64_t taken, ckpt_taken; /* records drained; at the last checkpoint */
	int writer_started;
	int writer_failed;
	pthread_t writer;
	struct fsp_oplog *live_next;
};

/*
 * Registry of live logs, so that a thread's exit destructor only touches
 * contexts of logs that still exist. The lock is taken when a thread first
 * uses a log and when it exits: never per operation.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fsp_oplog *live_logs;
static uint64_t next_log_id = 1;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

struct tls_slot {
	uint64_t log_id;
	struct ctx *ctx;
};
static __thread struct tls_slot tls_slots[TLS_SLOTS];

int fsp_record_mode_parse(const char *s, enum fsp_record_mode *mode,
			  unsigned *sample_n)
{
	unsigned n = 0;
	if (!s)
		return -1;
	if (!strcmp(s, "full"))
		*mode = FSP_RECORD_FULL;
	else if (!strcmp(s, "hist"))
		*mode = FSP_RECORD_HIST;
	else if (!strcmp(s, "off"))
		*mode = FSP_RECORD_OFF;
	else if (!strncmp(s, "sample:", 7)) {
		const char *num = s + 7;
		char *end;
		if (*num < '1' || *num > '9')
			return -1;
		errno = 0;
		unsigned long v = strtoul(num, &end, 10);
		if (errno || *end || v < 1 || v > 0xffffffffu)
			return -1;
		n = (unsigned)v;
		*mode = FSP_RECORD_SAMPLE;
	} else
		return -1;
	if (sample_n)
		*sample_n = n ? n : 1;
	return 0;
}

/* Thread exit: hand this thread's contexts over to future threads. */
static void thread_exit(void *unused)
{
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < TLS_SLOTS; i++) {
		if (!tls_slots[i].log_id)
			continue;
		for (struct fsp_oplog *l = live_logs; l; l = l->live_next)
			if (l->id == tls_slots[i].log_id)
				atomic_store_explicit(&tls_slots[i].ctx->orphaned, 1,
						      memory_order_release);
		tls_slots[i].log_id = 0;
		tls_slots[i].ctx = NULL;
	}
	pthread_mutex_unlock(&registry_lock);
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

static struct ctx *ctx_new(struct fsp_oplog *log)
{
	struct ctx *c = aligned_alloc(64, sizeof(*c));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	if (log->mode != FSP_RECORD_OFF) {
		c->ring = aligned_alloc(64, log->ring_cap * sizeof(struct fsp_rec));
		if (!c->ring) {
			free(c);
			return NULL;
		}
		c->mask = log->ring_cap - 1;
		/* touch every page now: a first-touch page fault costs
		 * microseconds (more under a hypervisor), and would otherwise
		 * land on the producer during its first lap of the ring */
		memset(c->ring, 0, log->ring_cap * sizeof(struct fsp_rec));
	}
	return c;
}

static void steptab_free(struct steptab *t)
{
	for (unsigned p = 0; p < STEP_PAGES; p++) {
		if (!t->pages[p])
			continue;
		for (unsigned s = 0; s < STEP_PAGE; s++)
			for (unsigned op = 0; op < FSP_OP__COUNT; op++)
				free((*t->pages[p])[s][op]);
		free(t->pages[p]);
	}
}

static void ctx_free(struct ctx *c)
{
	steptab_free(&c->stats);
	free(c->ring);
	free(c);
}

/* Slow path: first use of this log by this thread. */
static struct ctx *ctx_register(struct fsp_oplog *log)
{
	struct ctx *c = NULL;

	pthread_once(&exit_key_once, make_exit_key);
	pthread_mutex_lock(&registry_lock);
	for (struct ctx *o = atomic_load_explicit(&log->ctxs, memory_order_acquire);
	     o; o = o->next) {
		int one = 1;
		if (atomic_compare_exchange_strong_explicit(&o->orphaned, &one, 0,
				memory_order_acquire, memory_order_relaxed)) {
			c = o;
			c->sample_skip = 0; /* sampling is per thread: start afresh */
			break;
		}
	}
	if (!c && (c = ctx_new(log))) {
		c->next = atomic_load_explicit(&log->ctxs, memory_order_relaxed);
		atomic_store_explicit(&log->ctxs, c, memory_order_release);
	}
	if (c) {
		/* evict the oldest slot (only a thread feeding more than TLS_SLOTS
		 * logs at once loses one; its context then stays unadopted) */
		memmove(&tls_slots[1], &tls_slots[0],
			(TLS_SLOTS - 1) * sizeof(tls_slots[0]));
		tls_slots[0].log_id = log->id;
		tls_slots[0].ctx = c;
		pthread_setspecific(exit_key, tls_slots);
	}
	pthread_mutex_unlock(&registry_lock);
	return c;
}

static inline struct ctx *ctx_get(struct fsp_oplog *log)
{
	if (__builtin_expect(tls_slots[0].log_id == log->id, 1))
		return tls_slots[0].ctx;
	for (int i = 1; i < TLS_SLOTS; i++) {
		if (tls_slots[i].log_id == log->id) {
			struct tls_slot hit = tls_slots[i];
			memmove(&tls_slots[1], &tls_slots[0], (size_t)i * sizeof(hit));
			tls_slots[0] = hit;
			return hit.ctx;
		}
	}
	return ctx_register(log);
}

/* The stats of (step, op) in t, allocated on first use. */
static struct opstat *opstat_get(struct steptab *t, unsigned step, unsigned op)
{
	unsigned page = step >> STEP_PAGE_BITS, slot = step & (STEP_PAGE - 1);
	if (__builtin_expect(!t->pages[page], 0)) {
		t->pages[page] = calloc(1, sizeof(*t->pages[page]));
		if (!t->pages[page])
			return NULL;
	}
	struct opstat **sp = &(*t->pages[page])[slot][op];
	if (__builtin_expect(!*sp, 0)) {
		struct opstat *s = malloc(sizeof(*s));
		if (!s)
			return NULL;
		for (int l = 0; l < FSP_LAYER__COUNT; l++)
			fsp_hist_init(&s->hist[l]);
		s->bytes = s->errors = s->expected = 0;
		*sp = s;
	}
	return *sp;
}

/*
 * Each (step, op) of t that has stats, in order (the checkpoint's, the
 * merge's and the save's one walk): fn(arg, step, op, stats). Stops at fn's
 * first non-zero return and returns it; 0 when all were seen.
 */
static int steptab_each(const struct steptab *t,
			int (*fn)(void *arg, unsigned step, unsigned op, const struct opstat *s),
			void *arg)
{
	for (unsigned page = 0; page < STEP_PAGES; page++) {
		if (!t->pages[page])
			continue;
		for (unsigned slot = 0; slot < STEP_PAGE; slot++)
			for (unsigned op = 0; op < FSP_OP__COUNT; op++) {
				const struct opstat *s = (*t->pages[page])[slot][op];
				int rc = s ? fn(arg, page * STEP_PAGE + slot, op, s) : 0;
				if (rc)
					return rc;
			}
	}
	return 0;
}

static inline void count_drop(struct ctx *c)
{
	/* single writer: a plain load+store, no locked instruction */
	atomic_store_explicit(&c->dropped,
		atomic_load_explicit(&c->dropped, memory_order_relaxed) + 1,
		memory_order_relaxed);
}

/* Add rec to the histograms of t; -1 if it has no place (bad op, no memory). */
static int stats_add(struct steptab *t, const struct fsp_rec *rec)
{
	struct opstat *s = rec->op < FSP_OP__COUNT ? opstat_get(t, rec->step, rec->op) : NULL;
	if (__builtin_expect(!s, 0))
		return -1;
	/* device records (FSP_OP_DEV_*) take the same path: their own (step, op) */
	fsp_hist_add(&s->hist[FSP_LAYER_TOTAL], rec->total_ns);
	fsp_hist_add(&s->hist[FSP_LAYER_BACKING], rec->backing_ns);
	fsp_hist_add(&s->hist[FSP_LAYER_EMU], rec->emu_ns);
	fsp_hist_add(&s->hist[FSP_LAYER_LAYER], fsp_rec_layer_ns(rec));
	s->bytes += rec->bytes;
	if (rec->result != 0) {
		if (fsp_rec_expected(rec->op, rec->result))
			s->expected++;
		else
			s->errors++;
	}
	return 0;
}

void fsp_oplog_add(struct fsp_oplog *log, const struct fsp_rec *rec)
{
	if (!log || log->mode == FSP_RECORD_OFF)
		return;
	struct ctx *c = ctx_get(log);
	if (__builtin_expect(!c, 0)) {
		atomic_fetch_add_explicit(&log->lost, 1, memory_order_relaxed);
		return;
	}
	if (__builtin_expect(rec->op >= FSP_OP__COUNT, 0)) {
		count_drop(c); /* invalid op: counted, never silent */
		return;
	}
	int row = log->mode == FSP_RECORD_FULL;
	if (log->mode == FSP_RECORD_SAMPLE) {
		/* keep the 1st, (N+1)th, ... op of each thread: ceil(ops/N) rows */
		row = c->sample_skip == 0;
		c->sample_skip = row ? log->sample_n - 1 : c->sample_skip - 1;
	}

	/* read the writer's tail (a cache line it keeps dirtying) only when
	 * the ring looks full from what we last saw */
	uint64_t head = atomic_load_explicit(&c->head, memory_order_relaxed);
	if (head - c->tail_seen > c->mask) {
		c->tail_seen = atomic_load_explicit(&c->tail, memory_order_acquire);
		if (head - c->tail_seen > c->mask) {
			/* no room: the histograms still count it, here */
			if (stats_add(&c->stats, rec) != 0 || row)
				count_drop(c);
			return;
		}
	}
	struct fsp_rec *slot = &c->ring[head & c->mask];
	*slot = *rec;
	if (!row)
		slot->op |= OP_NO_ROW;
	atomic_store_explicit(&c->head, head + 1, memory_order_release);
}

/* Copy up to max records out of c's ring. */
static size_t ctx_drain(struct ctx *c, struct fsp_rec *out, size_t max)
{
	uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
	size_t n = (size_t)(head - tail);
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = c->ring[(tail + i) & c->mask];
	atomic_store_explicit(&c->tail, tail + n, memory_order_release);
	return n;
}

/*
 * The spill file, beside the database and named after it and the run
 * (DB-fsprism-spill-RUN), so that what a killed process leaves is found
 * again. A header names the run; frames of rows follow, each a struct
 * spill_frame and its payload (fsp_recs as they are). Every frame has a CRC
 * and the log's counters when it was made. Each second the writer
 * fdatasyncs it and replaces SPILL-hist (written aside, synced, renamed
 * over) with the same header and one frame: a checkpoint of its histograms,
 * whose seq is the number of row frames it covers. So the next open of the
 * database (fsp_oplog_recover) can store the rows up to the last whole frame
 * and the histograms of the checkpoint plus the rows after it, and count
 * what was lost; the histograms take a bounded space however long the run.
 * The writer holds an flock on the spill while the run lives.
 */
#define SPILL_SUFFIX "-fsprism-spill-"
#define SPILL_MAGIC "FSPRISM SPILL 1\n"
#define FRAME_MAGIC 0x46525046u /* "FPRF" */
#define FRAME_ROWS 1
#define FRAME_CKPT_V1 2 /* an older build's checkpoint: no expected count */
#define FRAME_CKPT 3
#define FRAME_MAX (64u << 20)   /* a longer length can only be torn */

struct spill_head {
	char magic[16];
	uint32_t head_len;       /* sizeof(struct spill_head) */
	uint32_t rec_len;        /* sizeof(struct fsp_rec); FSP_REC_V1_LEN: an older build's */
	int64_t run;
	int64_t run_started_ns;  /* runs.started_ns: this run, not a reused id */
	uint64_t created_wall_ns;
	char db_name[200];       /* the database's file name, for people */
	uint32_t reserved;
	uint32_t crc;            /* of the header before it */
};
_Static_assert(sizeof(struct spill_head) == 256, "spill header layout");

struct spill_frame {
	uint32_t magic;
	uint16_t type;           /* FRAME_ROWS or FRAME_CKPT */
	uint16_t reserved;
	uint32_t len;            /* payload bytes */
	uint32_t crc;            /* of this header (crc 0) and the payload */
	uint64_t seq;            /* 0, 1, 2, ...: a gap is a bad frame */
	uint64_t seen;           /* operations the log had seen */
	uint64_t dropped;        /* records counted dropped so far */
	uint64_t rows;           /* rows in the file, this frame's included */
	uint64_t mono_ns, wall_ns;
};
_Static_assert(sizeof(struct spill_frame) == 64, "spill frame layout");

/* A checkpoint: per (step, op) a ckpt_entry, then per layer a ckpt_layer
 * followed by its non-empty buckets. An older build's (FRAME_CKPT_V1) has
 * entries without `expected`: read as such, its errors as it counted them. */
struct ckpt_entry { uint32_t step, op; uint64_t bytes, errors, expected; };
struct ckpt_entry_v1 { uint32_t step, op; uint64_t bytes, errors; };
struct ckpt_layer { uint64_t count, sum, min, max; uint32_t nbins, reserved; };
struct ckpt_bin { uint32_t bucket, reserved; uint64_t count; };

static void writer_error(struct fsp_oplog *log, const char *what, int err)
{
	if (!log->writer_failed)
		fprintf(stderr, "fsprism: %s: %s; counting the rows as dropped\n",
			what, strerror(err));
	log->writer_failed = 1;
}

/* Operations the log has seen: taken into a ring, dropped, or lost. */
static uint64_t log_seen(struct fsp_oplog *log)
{
	uint64_t n = atomic_load_explicit(&log->lost, memory_order_relaxed);
	for (struct ctx *c = atomic_load_explicit(&log->ctxs, memory_order_acquire);
	     c; c = c->next)
		n += atomic_load_explicit(&c->head, memory_order_acquire) +
		     atomic_load_explicit(&c->dropped, memory_order_relaxed);
	return n;
}

/* The header of a frame of `rows` rows (0: a checkpoint), CRC included. */
static void frame_fill(struct fsp_oplog *log, struct spill_frame *f, uint16_t type,
		       const void *payload, size_t len, uint64_t rows)
{
	*f = (struct spill_frame){
		.magic = FRAME_MAGIC, .type = type, .len = (uint32_t)len,
		.seq = log->frame_seq, .seen = log_seen(log),
		.dropped = fsp_oplog_dropped(log), .rows = log->spilled + rows,
		.mono_ns = fsp_now_ns(), .wall_ns = fsp_wall_ns(),
	};
	uLong crc = crc32(0L, (const Bytef *)f, sizeof(*f));
	f->crc = (uint32_t)crc32(crc, payload, (uInt)len);
}

/* Append a frame of `rows` rows at the end of the last whole one. 0, or -1
 * and the file is cut back to that end. */
static int frame_append(struct fsp_oplog *log, uint16_t type, const void *payload,
			size_t len, uint64_t rows)
{
	struct spill_frame f;
	frame_fill(log, &f, type, payload, len, rows);
	size_t total = sizeof(f) + len, done = 0;
	while (done < total) {
		struct iovec v[2];
		int nv = 0;
		if (done < sizeof(f))
			v[nv++] = (struct iovec){ (char *)&f + done, sizeof(f) - done };
		size_t pdone = done > sizeof(f) ? done - sizeof(f) : 0;
		if (len > pdone)
			v[nv++] = (struct iovec){ (char *)payload + pdone, len - pdone };
		ssize_t w = pwritev(log->spill_fd, v, nv, (off_t)(log->spill_end + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			writer_error(log, "cannot write the operation rows' spill file",
				     w < 0 ? errno : ENOSPC);
			/* a torn frame would end a recovery there anyway */
			if (ftruncate(log->spill_fd, (off_t)log->spill_end) < 0) {
				/* not a regular file (a test's /dev/full) */
			}
			return -1;
		}
		done += (size_t)w;
	}
	log->spill_end += total;
	log->frame_seq++;
	log->spilled += rows;
	return 0;
}

/* Append n rows; what cannot be written is dropped, and counted. */
static void spill_append(struct fsp_oplog *log, const struct fsp_rec *recs, size_t n)
{
	if (frame_append(log, FRAME_ROWS, recs, n * sizeof(*recs), n) != 0)
		atomic_fetch_add_explicit(&log->writer_dropped, n, memory_order_relaxed);
}

/* Count n drained records in the histograms and spill those kept as rows. */
static void writer_take(struct fsp_oplog *log, struct fsp_rec *recs, size_t n)
{
	size_t rows = 0;
	log->taken += n;
	for (size_t i = 0; i < n; i++) {
		int row = !(recs[i].op & OP_NO_ROW);
		recs[i].op &= (uint16_t)~OP_NO_ROW;
		if (stats_add(&log->stats, &recs[i]) != 0) {
			/* out of memory for a new (step, op): counted */
			atomic_fetch_add_explicit(&log->writer_dropped, 1, memory_order_relaxed);
			continue;
		}
		if (row)
			recs[rows++] = recs[i];
	}
	if (rows && log->spill_fd >= 0)
		spill_append(log, recs, rows);
}

/* A checkpoint being measured (out NULL) or written. */
struct ckpt_out {
	char *out;
	size_t len;
};

/* One (step, op) of the checkpoint: its entry, then each layer's header and bins. */
static int ckpt_put(void *arg, unsigned step, unsigned op, const struct opstat *s)
{
	struct ckpt_out *c = arg;
	struct ckpt_entry e = { step, op, s->bytes, s->errors, s->expected };
	if (c->out)
		memcpy(c->out + c->len, &e, sizeof(e));
	c->len += sizeof(e);
	for (int l = 0; l < FSP_LAYER__COUNT; l++) {
		const struct fsp_hist *h = &s->hist[l];
		struct ckpt_layer cl = { h->count, h->sum, h->min, h->max, 0, 0 };
		size_t at = c->len;
		c->len += sizeof(cl);
		for (unsigned b = 0; b < FSP_HIST_NBUCKETS; b++) {
			if (!h->buckets[b])
				continue;
			if (c->out) {
				struct ckpt_bin bin = { b, 0, h->buckets[b] };
				memcpy(c->out + c->len, &bin, sizeof(bin));
			}
			cl.nbins++;
			c->len += sizeof(struct ckpt_bin);
		}
		if (c->out)
			memcpy(c->out + at, &cl, sizeof(cl));
	}
	return 0;
}

/* Bytes of t's checkpoint, or, with out, write it there. */
static size_t ckpt_build(const struct steptab *t, char *out)
{
	struct ckpt_out c = { out, 0 };
	steptab_each(t, ckpt_put, &c);
	return c.len;
}

/* Replace t by the checkpoint p[0..len) of frame type `type`. 0, or -1 if
 * it does not parse. */
static int ckpt_load(struct steptab *t, uint16_t type, const char *p, size_t len)
{
	size_t at = 0;
	size_t elen = type == FRAME_CKPT_V1 ? sizeof(struct ckpt_entry_v1)
					    : sizeof(struct ckpt_entry);
	steptab_free(t);
	memset(t, 0, sizeof(*t));
	while (at < len) {
		struct ckpt_entry e = { 0 };
		if (len - at < elen)
			return -1;
		memcpy(&e, p + at, elen); /* the v1 entry is the same fields, fewer */
		at += elen;
		struct opstat *s = e.step < 65536 && e.op < FSP_OP__COUNT ?
				   opstat_get(t, e.step, e.op) : NULL;
		if (!s)
			return -1;
		s->bytes = e.bytes;
		s->errors = e.errors;
		s->expected = e.expected;
		for (int l = 0; l < FSP_LAYER__COUNT; l++) {
			struct ckpt_layer cl;
			if (len - at < sizeof(cl))
				return -1;
			memcpy(&cl, p + at, sizeof(cl));
			at += sizeof(cl);
			struct fsp_hist *h = &s->hist[l];
			h->count = cl.count;
			h->sum = cl.sum;
			h->min = cl.min;
			h->max = cl.max;
			if (cl.nbins > FSP_HIST_NBUCKETS ||
			    (len - at) / sizeof(struct ckpt_bin) < cl.nbins)
				return -1;
			for (uint32_t i = 0; i < cl.nbins; i++) {
				struct ckpt_bin bin;
				memcpy(&bin, p + at, sizeof(bin));
				at += sizeof(bin);
				if (bin.bucket >= FSP_HIST_NBUCKETS)
					return -1;
				h->buckets[bin.bucket] = bin.count;
			}
		}
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, (const char *)p + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* Remove a spill's files (once its run is stored). */
static void spill_remove(const char *spill, const char *ckpt)
{
	char tmp[PATH_MAX + NAME_MAX + 16];
	if (ckpt) {
		snprintf(tmp, sizeof(tmp), "%s.new", ckpt);
		unlink(tmp);
		unlink(ckpt);
	}
	if (spill)
		unlink(spill);
}

/*
 * Make the names in path's directory durable: a file created or renamed
 * there is only found after a crash once its directory is synced too.
 */
static void sync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash > path ? (int)(slash - path) : 1, path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (fsync(fd) < 0) {
			/* a directory that cannot sync: the next checkpoint tries again */
		}
		close(fd);
	}
}

/*
 * The rows to the disk, then the writer's histograms into SPILL-hist
 * (aside, synced, renamed over, the directory synced: there is always one
 * whole checkpoint, and the spill file's name survives a crash with it).
 */
static void checkpoint(struct fsp_oplog *log)
{
	log->last_ckpt_ns = fsp_now_ns();
	if (!log->ckpt_path || log->taken == log->ckpt_taken)
		return; /* nothing could recover it (in-memory database), or nothing new */
	size_t len = ckpt_build(&log->stats, NULL);
	char *buf = len <= FRAME_MAX ? malloc(len ? len : 1) : NULL;
	char tmp[PATH_MAX + NAME_MAX + 16];
	if (!buf)
		return; /* the next one tries again; the rows are kept regardless */
	ckpt_build(&log->stats, buf);
	struct spill_frame f;
	frame_fill(log, &f, FRAME_CKPT, buf, len, 0);
	/* rows first: a checkpoint covers only rows that are on the disk */
	if (fdatasync(log->spill_fd) < 0) {
		/* a device that cannot sync: the frames are written anyway */
	}
	snprintf(tmp, sizeof(tmp), "%s.new", log->ckpt_path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ok = fd >= 0 && write_full(fd, log->head, sizeof(log->head)) == 0 &&
		 write_full(fd, &f, sizeof(f)) == 0 && write_full(fd, buf, len) == 0 &&
		 fdatasync(fd) == 0;
	if (fd >= 0)
		close(fd);
	if (ok && rename(tmp, log->ckpt_path) == 0) {
		sync_dir_of(log->ckpt_path);
		log->ckpt_taken = log->taken;
	} else
		unlink(tmp); /* the last one stays; the next one tries again */
	free(buf);
}

static void *writer_main(void *arg)
{
	struct fsp_oplog *log = arg;
	long sleep_ns = MIN_SLEEP_NS;
	struct fsp_rec *batch = malloc(WRITER_BATCH * sizeof(*batch));
	if (!batch) {
		/* cannot happen in practice; producers just fill and drop */
		writer_error(log, "cannot start the log writer", ENOMEM);
		return NULL;
	}
	log->last_ckpt_ns = fsp_now_ns();
	for (;;) {
		/* read stop before the pass: producers stopped before it was set,
		 * so an empty pass after seeing it means everything is kept */
		int stopping = atomic_load_explicit(&log->stop, memory_order_acquire);
		size_t total = 0, n = 0;
		for (struct ctx *c = atomic_load_explicit(&log->ctxs, memory_order_acquire);
		     c; c = c->next) {
			size_t got;
			while ((got = ctx_drain(c, batch + n, WRITER_BATCH - n)) > 0) {
				n += got;
				total += got;
				if (n == WRITER_BATCH) {
					writer_take(log, batch, n);
					n = 0;
				}
			}
		}
		if (n)
			writer_take(log, batch, n);
		if (total == 0 && stopping)
			break;
		if (!stopping && log->ckpt_path &&
		    fsp_now_ns() - log->last_ckpt_ns >= CHECKPOINT_NS)
			checkpoint(log);
		if (stopping)
			continue; /* closing: drain to the end without pausing */
		if (total >= WRITER_BATCH) {
			sleep_ns = MIN_SLEEP_NS;
			continue; /* busy: drain again at once */
		}
		if (total < WRITER_BATCH / 4 && sleep_ns < MAX_SLEEP_NS)
			sleep_ns *= 2;
		else if (total >= WRITER_BATCH / 4 && sleep_ns > MIN_SLEEP_NS)
			sleep_ns /= 2;
		if (sleep_ns > MAX_SLEEP_NS)
			sleep_ns = MAX_SLEEP_NS;
		struct timespec ts = { 0, sleep_ns };
		nanosleep(&ts, NULL);
	}
	free(batch);
	return NULL;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static uint32_t head_crc(const struct spill_head *h)
{
	return (uint32_t)crc32(0L, (const Bytef *)h, offsetof(struct spill_head, crc));
}

/*
 * The spill file: DB-fsprism-spill-RUN beside the database (the user chose
 * that place for the log, so it is off the device under test), locked; or,
 * for an in-memory database, an unlinked file in $TMPDIR.
 */
static int spill_open(struct fsp_oplog *log)
{
	const char *db = fsp_store_filename(log->store);
	int fd;
	if (db && *db) {
		size_t n = strlen(db) + sizeof(SPILL_SUFFIX) + 24;
		if (!(log->spill_path = malloc(n)))
			return -1;
		snprintf(log->spill_path, n, "%s" SPILL_SUFFIX "%lld", db, (long long)log->run);
		if (!(log->ckpt_path = malloc(n + 8))) {
			free(log->spill_path);
			log->spill_path = NULL;
			return -1;
		}
		snprintf(log->ckpt_path, n + 8, "%s-hist", log->spill_path);
		/* a file of this name is stale: the run id is new in this database */
		fd = open(log->spill_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0) {
			int err = errno;
			free(log->spill_path);
			free(log->ckpt_path);
			log->spill_path = log->ckpt_path = NULL;
			errno = err;
			return -1;
		}
		/* a checkpoint left by an earlier holder of this name is stale too */
		spill_remove(NULL, log->ckpt_path);
		/* held for the run's life: a recovery skips a locked spill */
		while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
			;
	} else {
		const char *tmp = getenv("TMPDIR");
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", tmp && *tmp ? tmp : "/tmp");
		fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
			/* a file system without O_TMPFILE: create and unlink at once */
			char path[4096 + 32];
			snprintf(path, sizeof(path), "%s/.fsprism-spill-XXXXXX", dir);
			fd = mkostemp(path, O_CLOEXEC);
			if (fd >= 0)
				unlink(path);
		}
		if (fd < 0)
			return -1;
	}

	struct spill_head h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SPILL_MAGIC, sizeof(h.magic));
	h.head_len = sizeof(h);
	h.rec_len = sizeof(struct fsp_rec);
	h.run = log->run;
	h.created_wall_ns = fsp_wall_ns();
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(log->store->db,
			       "SELECT started_ns FROM runs WHERE id=?", -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(s, 1, log->run);
		if (sqlite3_step(s) == SQLITE_ROW)
			h.run_started_ns = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	const char *base = db && *db ? strrchr(db, '/') : NULL;
	snprintf(h.db_name, sizeof(h.db_name), "%s", base ? base + 1 : db && *db ? db : "");
	h.crc = head_crc(&h);
	_Static_assert(sizeof(h) == sizeof(log->head), "header copy");
	memcpy(log->head, &h, sizeof(h));
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		int err = errno ? errno : ENOSPC;
		close(fd);
		if (log->spill_path) {
			unlink(log->spill_path);
			free(log->spill_path);
			free(log->ckpt_path);
			log->spill_path = log->ckpt_path = NULL;
		}
		errno = err;
		return -1;
	}
	log->spill_end = sizeof(h);
	return fd;
}

/*
 * The next whole frame at *off (below end), its payload in *buf (grown as
 * needed): 1, or 0 at the end or at a torn or damaged frame.
 */
static int frame_read(int fd, uint64_t *off, uint64_t end, int64_t seq, uint32_t rec_len,
		      struct spill_frame *f, char **buf, size_t *cap)
{
	if (*off + sizeof(*f) > end || pread_full(fd, f, sizeof(*f), *off) != 0)
		return 0;
	if (f->magic != FRAME_MAGIC || (seq >= 0 && f->seq != (uint64_t)seq) ||
	    f->len > FRAME_MAX ||
	    (f->type != FRAME_ROWS && f->type != FRAME_CKPT && f->type != FRAME_CKPT_V1) ||
	    (f->type == FRAME_ROWS && f->len % rec_len) ||
	    *off + sizeof(*f) + f->len > end)
		return 0;
	if (f->len > *cap) {
		char *nb = realloc(*buf, f->len);
		if (!nb)
			return 0;
		*buf = nb;
		*cap = f->len;
	}
	if (f->len && pread_full(fd, *buf, f->len, *off + sizeof(*f)) != 0)
		return 0;
	struct spill_frame z = *f;
	z.crc = 0;
	uLong crc = crc32(0L, (const Bytef *)&z, sizeof(z));
	if ((uint32_t)crc32(crc, (const Bytef *)*buf, f->len) != f->crc)
		return 0;
	*off += sizeof(*f) + f->len;
	return 1;
}

/* Load the spilled rows into SQLite, in large transactions. */
static int spill_load(struct fsp_oplog *log)
{
	char *buf = NULL;
	size_t cap = 0;
	int rc = 0;
	uint64_t off = sizeof(struct spill_head), seq = 0, in_tx = 0;
	struct spill_frame f;
	while (frame_read(log->spill_fd, &off, log->spill_end, (int64_t)seq,
			  (uint32_t)sizeof(struct fsp_rec), &f, &buf, &cap)) {
		seq++;
		if (f.type != FRAME_ROWS)
			continue;
		size_t n = f.len / sizeof(struct fsp_rec);
		if (in_tx == 0 && fsp_store_tx_begin(log->store) != 0) {
			rc = -1;
			break;
		}
		if (fsp_store_insert_recs(log->store, log->run, (struct fsp_rec *)buf, n) != 0) {
			fsp_store_tx_rollback(log->store);
			in_tx = 0;
			rc = -1;
			break;
		}
		in_tx += n;
		if (in_tx >= COMMIT_ROWS) {
			if (fsp_store_tx_commit(log->store) != 0) { /* rolled back */
				in_tx = 0;
				rc = -1;
				break;
			}
			atomic_fetch_add_explicit(&log->recorded, in_tx, memory_order_relaxed);
			in_tx = 0;
		}
	}
	if (in_tx) {
		if (fsp_store_tx_commit(log->store) != 0)
			rc = -1;
		else
			atomic_fetch_add_explicit(&log->recorded, in_tx, memory_order_relaxed);
	}
	if (rc == 0 && seq != log->frame_seq) {
		fprintf(stderr, "fsprism: cannot read the operation log's spill file %s: %s\n",
			log->spill_path ? log->spill_path : "(unlinked)",
			errno ? strerror(errno) : "damaged frame");
		rc = -1;
	}
	/* what did not reach the database is dropped, and counted */
	uint64_t stored = atomic_load_explicit(&log->recorded, memory_order_relaxed);
	atomic_fetch_add_explicit(&log->writer_dropped, log->spilled - stored,
				  memory_order_relaxed);
	free(buf);
	return rc;
}

static size_t round_pow2(size_t n)
{
	size_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

struct fsp_oplog *fsp_oplog_open(struct fsp_store *store, int64_t run_id,
				 enum fsp_record_mode mode, unsigned sample_n,
				 size_t ring_records)
{
	if (!store || mode < FSP_RECORD_OFF || mode > FSP_RECORD_FULL ||
	    ring_records > ((size_t)1 << 30)) {
		errno = EINVAL;
		return NULL;
	}
	struct fsp_oplog *log = calloc(1, sizeof(*log));
	if (!log)
		return NULL;
	log->store = store;
	log->run = run_id;
	log->mode = mode;
	log->sample_n = sample_n ? sample_n : 1;
	log->ring_cap = round_pow2(ring_records ? ring_records : DEFAULT_RING);
	if (log->ring_cap < 2)
		log->ring_cap = 2;
	log->spill_fd = -1;
	if (mode != FSP_RECORD_OFF) {
		/* with hist too: its checkpoints outlive a crash */
		log->spill_fd = spill_open(log);
		if (log->spill_fd < 0) {
			int err = errno;
			free(log);
			errno = err;
			return NULL;
		}
	}

	pthread_mutex_lock(&registry_lock);
	log->id = next_log_id++;
	log->live_next = live_logs;
	live_logs = log;
	pthread_mutex_unlock(&registry_lock);

	if (mode != FSP_RECORD_OFF) {
		int err = pthread_create(&log->writer, NULL, writer_main, log);
		if (err) {
			pthread_mutex_lock(&registry_lock);
			for (struct fsp_oplog **p = &live_logs; *p; p = &(*p)->live_next)
				if (*p == log) {
					*p = log->live_next;
					break;
				}
			pthread_mutex_unlock(&registry_lock);
			close(log->spill_fd);
			spill_remove(log->spill_path, log->ckpt_path);
			free(log->spill_path);
			free(log->ckpt_path);
			free(log);
			errno = err;
			return NULL;
		}
		pthread_setname_np(log->writer, "fsprism-writer");
		log->writer_started = 1;
	}
	return log;
}

int fsp_oplog_reserve(struct fsp_oplog *log, unsigned producers)
{
	if (!log || log->mode == FSP_RECORD_OFF)
		return 0;
	pthread_mutex_lock(&registry_lock);
	unsigned have = 0;
	for (struct ctx *c = atomic_load_explicit(&log->ctxs, memory_order_acquire);
	     c; c = c->next)
		have++;
	int rc = 0;
	for (; have < producers; have++) {
		struct ctx *c = ctx_new(log);
		if (!c) {
			rc = -1;
			break;
		}
		atomic_store_explicit(&c->orphaned, 1, memory_order_relaxed);
		c->next = atomic_load_explicit(&log->ctxs, memory_order_relaxed);
		atomic_store_explicit(&log->ctxs, c, memory_order_release);
	}
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

int fsp_oplog_spill_fd(const struct fsp_oplog *log)
{
	return log ? log->spill_fd : -1;
}

uint64_t fsp_oplog_dropped(const struct fsp_oplog *log)
{
	struct fsp_oplog *l = (struct fsp_oplog *)log;
	uint64_t n = atomic_load_explicit(&l->lost, memory_order_relaxed) +
		     atomic_load_explicit(&l->writer_dropped, memory_order_relaxed);
	for (struct ctx *c = atomic_load_explicit(&l->ctxs, memory_order_acquire);
	     c; c = c->next)
		n += atomic_load_explicit(&c->dropped, memory_order_relaxed);
	return n;
}

uint64_t fsp_oplog_recorded(const struct fsp_oplog *log)
{
	struct fsp_oplog *l = (struct fsp_oplog *)log;
	return atomic_load_explicit(&l->recorded, memory_order_relaxed);
}

unsigned fsp_oplog_contexts(const struct fsp_oplog *log)
{
	struct fsp_oplog *l = (struct fsp_oplog *)log;
	unsigned n = 0;
	for (struct ctx *c = atomic_load_explicit(&l->ctxs, memory_order_acquire);
	     c; c = c->next)
		n++;
	return n;
}

/* Add one (step, op) of another table into the table arg. */
static int merge_one(void *arg, unsigned step, unsigned op, const struct opstat *s)
{
	struct opstat *d = opstat_get(arg, step, op);
	if (!d)
		return -1;
	for (int l = 0; l < FSP_LAYER__COUNT; l++)
		fsp_hist_merge(&d->hist[l], &s->hist[l]);
	d->bytes += s->bytes;
	d->errors += s->errors;
	d->expected += s->expected;
	return 0;
}

/* Add the histograms of src into dst (the writer's, once it has stopped). */
static int steptab_merge(struct steptab *dst, const struct steptab *src)
{
	return steptab_each(src, merge_one, dst);
}

/* Where save_hists stores, and the operations it has stored. */
struct hist_save {
	struct fsp_store *store;
	int64_t run;
	uint64_t ops;
};

static int save_one(void *arg, unsigned step, unsigned op, const struct opstat *m)
{
	struct hist_save *h = arg;
	if (!m->hist[0].count)
		return 0;
	h->ops += m->hist[FSP_LAYER_TOTAL].count;
	for (int l = 0; l < FSP_LAYER__COUNT; l++)
		if (fsp_store_save_hist(h->store, h->run, (int)step, (int)op, l, &m->hist[l],
					m->bytes, m->errors, m->expected) != 0)
			return -1;
	return 0;
}

/* Write the histograms of t per (step, op, layer); *ops: their operations. */
static int save_hists(struct fsp_store *store, int64_t run, const struct steptab *t,
		      uint64_t *ops)
{
	struct hist_save h = { store, run, 0 };
	int rc = steptab_each(t, save_one, &h);
	*ops = h.ops;
	return rc;
}

int fsp_oplog_close(struct fsp_oplog *log)
{
	if (!log)
		return 0;
	int rc = 0;

	if (log->writer_started) {
		atomic_store_explicit(&log->stop, 1, memory_order_release);
		pthread_join(log->writer, NULL);
	}
	/* no thread may orphan (touch) our contexts from now on */
	pthread_mutex_lock(&registry_lock);
	for (struct fsp_oplog **p = &live_logs; *p; p = &(*p)->live_next)
		if (*p == log) {
			*p = log->live_next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);

	for (struct ctx *c = atomic_load_explicit(&log->ctxs, memory_order_acquire);
	     c; c = c->next)
		if (steptab_merge(&log->stats, &c->stats) != 0) {
			fprintf(stderr, "fsprism: cannot merge the histograms: out of memory\n");
			rc = -1;
		}
	if (log->spill_fd >= 0 && spill_load(log) != 0)
		rc = -1;
	uint64_t recorded = fsp_oplog_recorded(log);
	uint64_t dropped = fsp_oplog_dropped(log);

	/* the histograms and counts are saved even if some rows were not */
	uint64_t ops;
	int ended = 0;
	if (fsp_store_tx_begin(log->store) != 0)
		rc = -1;
	else if (save_hists(log->store, log->run, &log->stats, &ops) != 0 ||
		 fsp_store_end_run(log->store, log->run, recorded, dropped) != 0) {
		fsp_store_tx_rollback(log->store);
		rc = -1;
	} else if (fsp_store_tx_commit(log->store) != 0)
		rc = -1;
	else
		ended = 1;
	/* the spill goes only once the run is stored; else the next open of
	 * the database recovers the run from it */
	if (log->spill_path && ended)
		spill_remove(log->spill_path, log->ckpt_path);
	if (log->spill_fd >= 0)
		close(log->spill_fd);
	free(log->spill_path);
	free(log->ckpt_path);
	if (fsp_store_build_indexes(log->store) != 0)
		rc = -1;
	if (log->writer_failed)
		rc = -1;

	struct ctx *c = atomic_load_explicit(&log->ctxs, memory_order_acquire);
	while (c) {
		struct ctx *next = c->next;
		ctx_free(c);
		c = next;
	}
	steptab_free(&log->stats);
	free(log);
	return rc;
}

/* ---- recovery of a run whose process died ---- */

/* Run a statement with run bound to ?1; 0 or -1. */
static int exec_run(sqlite3 *db, const char *sql, int64_t run)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

/*
 * The checkpoint beside spill `path` (PATH-hist) into t, if it is whole
 * and of the same spill (header h): 1 and its frame in *ck, else 0.
 */
static int ckpt_read(const char *ckpt, const struct spill_head *h, struct steptab *t,
		     struct spill_frame *ck, char **buf, size_t *cap)
{
	int fd = open(ckpt, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	struct spill_head ch;
	uint64_t off = sizeof(ch);
	int ok = fstat(fd, &sb) == 0 && pread_full(fd, &ch, sizeof(ch), 0) == 0 &&
		 !memcmp(&ch, h, sizeof(ch)) &&
		 frame_read(fd, &off, (uint64_t)sb.st_size, -1, h->rec_len, ck, buf, cap) &&
		 (ck->type == FRAME_CKPT || ck->type == FRAME_CKPT_V1) &&
		 ckpt_load(t, ck->type, *buf, ck->len) == 0;
	close(fd);
	if (!ok) {
		steptab_free(t);
		memset(t, 0, sizeof(*t));
	}
	return ok;
}

/*
 * Store the spill at path (fd, locked) into its run, in one transaction:
 * rows of every whole frame, the last checkpoint's histograms plus the rows
 * after it, the counts, run.end = crashed, records.lost. 1 recovered, 0
 * left alone (not ours), -1 error (the spill stays for another try).
 */
static int recover_spill(struct fsp_store *st, const char *path, int fd)
{
	char ckpt[PATH_MAX + NAME_MAX + 8];
	snprintf(ckpt, sizeof(ckpt), "%s-hist", path);
	sqlite3 *db = st->db;
	struct stat sb;
	struct spill_head h;
	if (fstat(fd, &sb) < 0 || (uint64_t)sb.st_size < sizeof(h))
		return 0; /* being created (its writer locks it next), or empty */
	if (pread_full(fd, &h, sizeof(h), 0) != 0 ||
	    memcmp(h.magic, SPILL_MAGIC, sizeof(h.magic)) || h.head_len != sizeof(h) ||
	    (h.rec_len != sizeof(struct fsp_rec) && h.rec_len != FSP_REC_V1_LEN) ||
	    h.crc != head_crc(&h)) {
		fprintf(stderr, "fsprism: %s is not a spill file this fsprism can read; left alone\n",
			path);
		return 0;
	}
	sqlite3_stmt *s;
	int found = 0, ended = 0;
	int64_t started = 0;
	if (sqlite3_prepare_v2(db, "SELECT started_ns, ended_at IS NOT NULL FROM runs WHERE id=?",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, h.run);
	if (sqlite3_step(s) == SQLITE_ROW) {
		found = 1;
		started = sqlite3_column_int64(s, 0);
		ended = sqlite3_column_int(s, 1);
	}
	sqlite3_finalize(s);
	if (!found || started != h.run_started_ns) {
		fprintf(stderr, "fsprism: %s belongs to no run of this database (run %lld); left alone\n",
			path, (long long)h.run);
		return 0;
	}
	if (ended) {
		/* stored before; the process died between its commit and the unlink */
		spill_remove(path, ckpt);
		return 0;
	}

	struct steptab *t = calloc(1, sizeof(*t));
	char *buf = NULL;
	size_t cap = 0;
	uint64_t off = sizeof(h), seq = 0, rows = 0, ops = 0;
	struct spill_frame f, last = { 0 }, ck;
	struct fsp_rec *old_rows = NULL; /* rows of an older build, widened */
	int rc = -1, have_ck = 0;
	if (!t || fsp_store_tx_begin(st) != 0)
		goto out;
	have_ck = ckpt_read(ckpt, &h, t, &ck, &buf, &cap);
	/* rows a close had begun to store are in the spill as well */
	if (exec_run(db, "DELETE FROM ops WHERE run=?1", h.run) != 0 ||
	    exec_run(db, "DELETE FROM hist WHERE run=?1", h.run) != 0 ||
	    exec_run(db, "DELETE FROM hist_bins WHERE run=?1", h.run) != 0)
		goto fail;
	while (frame_read(fd, &off, (uint64_t)sb.st_size, (int64_t)seq, h.rec_len, &f, &buf,
			  &cap) && f.type == FRAME_ROWS) {
		size_t n = f.len / h.rec_len;
		const struct fsp_rec *r = (const struct fsp_rec *)buf;
		if (h.rec_len != sizeof(struct fsp_rec)) {
			/* an older build's rows: the same fields, without the FUSE
			 * request's identity (stored as 0, unknown) */
			struct fsp_rec *wide = calloc(n ? n : 1, sizeof(*wide));
			if (!wide)
				goto fail;
			for (size_t i = 0; i < n; i++)
				memcpy(&wide[i], buf + i * h.rec_len, h.rec_len);
			free(old_rows);
			old_rows = wide;
			r = wide;
		}
		if (fsp_store_insert_recs(st, h.run, r, n) != 0)
			goto fail;
		if (!have_ck || seq >= ck.seq) /* not in the checkpoint: counted here */
			for (size_t i = 0; i < n; i++)
				stats_add(t, &r[i]);
		rows += n;
		last = f;
		seq++;
	}
	/* the counters and the end of whichever was written last */
	int have_last = seq > 0;
	if (have_ck && (!have_last || ck.mono_ns > last.mono_ns)) {
		last = ck;
		have_last = 1;
	}
	if (save_hists(st, h.run, t, &ops) != 0)
		goto fail;
	/* seen but in neither the histograms nor the dropped count: lost. What
	 * came after the last frame is not known at all. */
	uint64_t lost = have_last && last.seen > ops + last.dropped ? last.seen - ops - last.dropped : 0;
	char v[32];
	if (fsp_store_end_run_at(st, h.run, rows, last.dropped + lost,
				 have_last ? last.wall_ns : h.created_wall_ns,
				 have_last ? last.mono_ns : (uint64_t)h.run_started_ns) != 0 ||
	    fsp_store_set_attr(st, h.run, "run.end", "crashed") != 0)
		goto fail;
	snprintf(v, sizeof(v), "%" PRIu64, lost);
	if (fsp_store_set_attr(st, h.run, "records.lost", lost ? v : "unknown") != 0)
		goto fail;
	if (have_last && fsp_store_set_attr_u64(st, h.run, "records.seen", last.seen) != 0)
		goto fail;
	if (fsp_store_tx_commit(st) != 0)
		goto out;
	fsp_store_build_indexes(st);
	spill_remove(path, ckpt); /* only now: the run is in the database */
	if (lost)
		snprintf(v, sizeof(v), "at least %" PRIu64, lost);
	fprintf(stderr, "fsprism: run %lld had not ended (its process died): stored %" PRIu64
		" rows from %s; records lost: %s\n", (long long)h.run, rows, path,
		lost ? v : "unknown");
	rc = 1;
	goto out;
fail:
	fsp_store_tx_rollback(st);
out:
	if (rc < 0)
		fprintf(stderr, "fsprism: cannot recover run %lld from %s; it is kept for another try\n",
			(long long)h.run, path);
	if (t)
		steptab_free(t);
	free(t);
	free(buf);
	free(old_rows);
	return rc;
}

/* Each spill file beside db_path: fn(path, arg); stops at a non-zero return. */
static int spill_each(const char *db_path, int (*fn)(const char *, void *), void *arg)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(db_path, '/');
	const char *base = slash ? slash + 1 : db_path;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == db_path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - db_path), db_path);
	char prefix[NAME_MAX + sizeof(SPILL_SUFFIX)];
	snprintf(prefix, sizeof(prefix), "%s" SPILL_SUFFIX, base);
	size_t plen = strlen(prefix);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (strncmp(e->d_name, prefix, plen) || !e->d_name[plen] ||
		    strspn(e->d_name + plen, "0123456789") != strlen(e->d_name + plen))
			continue;
		char path[PATH_MAX + NAME_MAX + 2];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rc = fn(path, arg);
	}
	closedir(d);
	return rc;
}

static int found_one(const char *path, void *arg)
{
	(void)path;
	(void)arg;
	return 1;
}

int fsp_oplog_spill_pending(const char *db_path)
{
	return db_path && *db_path && spill_each(db_path, found_one, NULL) > 0;
}

struct recover_ctx {
	struct fsp_store *st;
	int recovered, failed;
};

static int recover_one(const char *path, void *arg)
{
	struct recover_ctx *rc = arg;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* locked: its run is alive (another process is writing it) */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		int r = recover_spill(rc->st, path, fd);
		if (r > 0)
			rc->recovered++;
		else if (r < 0)
			rc->failed = 1;
	}
	close(fd);
	return 0;
}

int fsp_oplog_recover(struct fsp_store *st)
{
	const char *db = fsp_store_filename(st);
	if (!db || !*db)
		return 0;
	struct recover_ctx rc = { st, 0, 0 };
	spill_each(db, recover_one, &rc);
	return rc.failed ? -1 : rc.recovered;
}

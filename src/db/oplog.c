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
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "src/base/clock.h"
#include "src/db/oplog.h"
#include "src/db/store.h"

#define DEFAULT_RING 16384                    /* 1 MiB per producer thread */
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
#define MIN_SLEEP_NS (1 * 1000000L)
#define MAX_SLEEP_NS (10 * 1000000L)
#define TLS_SLOTS 4

/* Histograms and counters of one (step, op) in one context. */
struct opstat {
	struct fsp_hist hist[FSP_LAYER__COUNT];
	uint64_t bytes;
	uint64_t errors;
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
	int spill_fd;               /* -1 unless rows are kept */
	uint64_t spilled;           /* rows in the spill file (writer only) */
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
		s->bytes = s->errors = 0;
		*sp = s;
	}
	return *sp;
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
	if (rec->result != 0)
		s->errors++;
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

static void writer_error(struct fsp_oplog *log, const char *what, int err)
{
	if (!log->writer_failed)
		fprintf(stderr, "fsprism: %s: %s; counting the rows as dropped\n",
			what, strerror(err));
	log->writer_failed = 1;
}

/* Append n records to the spill file; what cannot be written is dropped. */
static void spill_append(struct fsp_oplog *log, const struct fsp_rec *recs, size_t n)
{
	const char *p = (const char *)recs;
	size_t len = n * sizeof(*recs), done = 0;
	while (done < len) {
		ssize_t w = write(log->spill_fd, p + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			writer_error(log, "cannot write the operation rows' spill file",
				     w < 0 ? errno : ENOSPC);
			break;
		}
		done += (size_t)w;
	}
	size_t kept = done / sizeof(*recs);
	if (kept < n) {
		/* a torn record is overwritten by the next append */
		if (lseek(log->spill_fd, (off_t)(log->spilled + kept) * (off_t)sizeof(*recs),
			  SEEK_SET) < 0)
			writer_error(log, "cannot seek in the spill file", errno);
		atomic_fetch_add_explicit(&log->writer_dropped, n - kept,
					  memory_order_relaxed);
	}
	log->spilled += kept;
}

/* Count n drained records in the histograms and spill those kept as rows. */
static void writer_take(struct fsp_oplog *log, struct fsp_rec *recs, size_t n)
{
	size_t rows = 0;
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

/*
 * An unlinked file beside the database (the user chose that place for the
 * log, so it is off the device under test), or in $TMPDIR for an in-memory
 * database. Nothing is left behind, even by kill -9.
 */
static int spill_open(struct fsp_store *store)
{
	const char *db = fsp_store_filename(store);
	char dir[4096];
	if (db && *db) {
		const char *slash = strrchr(db, '/');
		size_t len = slash ? (size_t)(slash - db) : 1;
		if (len == 0)
			len = 1; /* "/x.db" */
		if (len >= sizeof(dir)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(dir, slash ? db : ".", len);
		dir[len] = '\0';
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s", tmp && *tmp ? tmp : "/tmp");
	}
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	/* a file system without O_TMPFILE: create and unlink at once */
	char path[4096 + 32];
	snprintf(path, sizeof(path), "%s/.fsprism-spill-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Load the spill file into SQLite, in large transactions. */
static int spill_load(struct fsp_oplog *log)
{
	struct fsp_rec *buf = malloc(WRITER_BATCH * sizeof(*buf));
	int rc = 0;
	if (!buf) {
		fprintf(stderr, "fsprism: cannot load the operation rows: out of memory\n");
		atomic_fetch_add_explicit(&log->writer_dropped, log->spilled,
					  memory_order_relaxed);
		return -1;
	}
	uint64_t at = 0, in_tx = 0;
	while (at < log->spilled) {
		size_t n = log->spilled - at < WRITER_BATCH ? (size_t)(log->spilled - at)
							    : WRITER_BATCH;
		size_t len = n * sizeof(*buf), got = 0;
		while (got < len) {
			ssize_t r = pread(log->spill_fd, (char *)buf + got, len - got,
					  (off_t)(at * sizeof(*buf) + got));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got < len) {
			fprintf(stderr, "fsprism: cannot read the operation rows' spill file: %s\n",
				strerror(errno ? errno : EIO));
			rc = -1;
			break;
		}
		if (in_tx == 0 && fsp_store_tx_begin(log->store) != 0) {
			rc = -1;
			break;
		}
		if (fsp_store_insert_recs(log->store, log->run, buf, n) != 0) {
			fsp_store_tx_rollback(log->store);
			in_tx = 0;
			rc = -1;
			break;
		}
		in_tx += n;
		at += n;
		if (in_tx >= COMMIT_ROWS || at == log->spilled) {
			if (fsp_store_tx_commit(log->store) != 0) { /* rolled back */
				in_tx = 0;
				rc = -1;
				break;
			}
			atomic_fetch_add_explicit(&log->recorded, in_tx, memory_order_relaxed);
			in_tx = 0;
		}
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
	if (mode == FSP_RECORD_FULL || mode == FSP_RECORD_SAMPLE) {
		log->spill_fd = spill_open(store);
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

/* Add the histograms of src into dst (the writer's, once it has stopped). */
static int steptab_merge(struct steptab *dst, const struct steptab *src)
{
	for (unsigned page = 0; page < STEP_PAGES; page++) {
		if (!src->pages[page])
			continue;
		for (unsigned slot = 0; slot < STEP_PAGE; slot++) {
			for (unsigned op = 0; op < FSP_OP__COUNT; op++) {
				const struct opstat *s = (*src->pages[page])[slot][op];
				if (!s)
					continue;
				struct opstat *d = opstat_get(dst, page * STEP_PAGE + slot, op);
				if (!d)
					return -1;
				for (int l = 0; l < FSP_LAYER__COUNT; l++)
					fsp_hist_merge(&d->hist[l], &s->hist[l]);
				d->bytes += s->bytes;
				d->errors += s->errors;
			}
		}
	}
	return 0;
}

/* Write the histograms per (step, op, layer). */
static int save_hists(struct fsp_oplog *log)
{
	for (unsigned page = 0; page < STEP_PAGES; page++) {
		if (!log->stats.pages[page])
			continue;
		for (unsigned slot = 0; slot < STEP_PAGE; slot++) {
			for (unsigned op = 0; op < FSP_OP__COUNT; op++) {
				const struct opstat *m = (*log->stats.pages[page])[slot][op];
				if (!m || !m->hist[0].count)
					continue;
				int step = (int)(page * STEP_PAGE + slot);
				for (int l = 0; l < FSP_LAYER__COUNT; l++)
					if (fsp_store_save_hist(log->store, log->run, step, (int)op, l,
								&m->hist[l], m->bytes, m->errors) != 0)
						return -1;
			}
		}
	}
	return 0;
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
	if (log->spill_fd >= 0) {
		if (spill_load(log) != 0)
			rc = -1;
		close(log->spill_fd);
	}
	uint64_t recorded = fsp_oplog_recorded(log);
	uint64_t dropped = fsp_oplog_dropped(log);

	/* the histograms and counts are saved even if some rows were not */
	if (fsp_store_tx_begin(log->store) != 0)
		rc = -1;
	else if (save_hists(log) != 0 ||
		 fsp_store_end_run(log->store, log->run, recorded, dropped) != 0) {
		fsp_store_tx_rollback(log->store);
		rc = -1;
	} else if (fsp_store_tx_commit(log->store) != 0)
		rc = -1;
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

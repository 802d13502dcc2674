/*
 * engine.c - the job engine (engine.h): offsets, mix, duty cycle, and the
 * libaio loop that runs one step.
 *
 * The IO loop keeps the queue full: it reaps with fsp_reap (reap.h: a short
 * poll of the completion ring, then io_getevents(min_nr=1)), records each
 * completion, and resubmits every freed slot at once, at most
 * FSP_SUBMIT_MAX per io_submit.
 * Buffers, iocbs, histograms and the segment table are set up before the
 * loop; inside it there is no malloc (the timeline and burst tables may
 * grow, at most once per doubling, on a bucket boundary), no lock and no
 * system call but io_submit, io_getevents, the poll's sched_yield and the
 * vDSO clock (plus a progress line on a terminal, twice a second), and in
 * a rate step (run_rate, rate.h) nanosleep until an IO's intended time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "src/base/bufpool.h"
#include "src/base/clock.h"
#include "bench/engine/engine.h"
#include "bench/engine/reap.h"
#include "src/db/oplog.h"
#include "src/base/ops.h"

/*
 * At most this many IOs per io_submit. The kernel plugs a larger batch
 * (fs/aio.c: more than AIO_PLUG_THRESHOLD, 2, IOs): it holds every request
 * of the call back and dispatches them together when the call returns, so
 * the device waits idle for the whole batch's submission. With the device's
 * work on another CPU (a loop device's workers, an interrupt elsewhere) that
 * cost 4 KiB QD32 random reads 24-31% of their IOPS against batches of two
 * (docs/results/engine-vs-fio.md). Two per call dispatch each request at
 * once, as fio's one IO per call does, with half its system calls.
 */
#define FSP_SUBMIT_MAX 2u

/* ---- offsets ---------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void offgen_rekey(struct fsp_offgen *g)
{
	for (int i = 0; i < 4; i++)
		g->keys[i] = fsp_rand64(&g->rng);
}

void fsp_offgen_init(struct fsp_offgen *g, uint64_t span_off,
		     uint64_t span_size, uint32_t bs, enum fsp_access access,
		     int norepeat, uint64_t seed)
{
	memset(g, 0, sizeof(*g));
	g->span_off = span_off;
	g->bs = bs;
	g->nblocks = span_size / bs;
	if (g->nblocks == 0)
		g->nblocks = 1;
	g->access = access;
	g->norepeat = norepeat;
	g->rng = fsp_rand_seed(seed);
	unsigned bits = 2;
	while (bits < 64 && (1ull << bits) < g->nblocks)
		bits++;
	if (bits & 1)
		bits++;
	g->half_bits = bits / 2;
	offgen_rekey(g);
}

/* One 4-round Feistel permutation of [0, 2^(2*half_bits)). */
static uint64_t feistel(const struct fsp_offgen *g, uint64_t v)
{
	uint64_t mask = (1ull << g->half_bits) - 1;
	uint64_t left = v >> g->half_bits, right = v & mask;
	for (int i = 0; i < 4; i++) {
		uint64_t next = left ^ (mix64(right ^ g->keys[i]) & mask);
		left = right;
		right = next;
	}
	return (left << g->half_bits) | right;
}

uint64_t fsp_offgen_next(struct fsp_offgen *g)
{
	uint64_t block;
	if (g->access == FSP_ACCESS_SEQ) {
		block = g->seq++;
		if (g->seq == g->nblocks)
			g->seq = 0;
	} else if (g->norepeat) {
		/* cycle-walking keeps the permutation inside [0, nblocks) */
		block = feistel(g, g->seq);
		while (block >= g->nblocks)
			block = feistel(g, block);
		if (++g->seq == g->nblocks) {
			g->seq = 0;
			g->pass++;
			offgen_rekey(g);
		}
	} else {
		block = (uint64_t)(((unsigned __int128)fsp_rand64(&g->rng) *
				    g->nblocks) >> 64);
	}
	return g->span_off + block * g->bs;
}

/* ---- mix and duty -------------------------------------------------------- */

void fsp_mix_init(struct fsp_mix *m, unsigned read_pct,
		  enum fsp_interleave interleave, uint64_t seed)
{
	m->read_pct = read_pct > 100 ? 100 : read_pct;
	m->interleave = interleave;
	m->rng = fsp_rand_seed(seed ^ 0x6d69786dull);
	/* start just below the threshold: the first IO is a read unless 0% */
	m->acc = 99;
}

uint64_t fsp_duty_idle_ns(uint64_t busy_ns, unsigned duty_pct)
{
	if (duty_pct == 0 || duty_pct >= 100)
		return 0;
	return (uint64_t)((unsigned __int128)busy_ns * (100 - duty_pct) / duty_pct);
}

void fsp_engine_idle(uint64_t ns, volatile sig_atomic_t *stop)
{
	uint64_t until = fsp_now_ns() + ns;
	for (;;) {
		if (stop && *stop)
			return;
		uint64_t now = fsp_now_ns();
		if (now >= until)
			return;
		uint64_t left = until - now;
		if (left > 100000000ull) /* wake every 100 ms to look at *stop */
			left = 100000000ull;
		struct timespec ts = { (time_t)(left / 1000000000ull),
				       (long)(left % 1000000000ull) };
		nanosleep(&ts, NULL);
	}
}

/* ---- the IO loop ----------------------------------------------------------- */

/*
 * Reads and writes use separate buffers, so a read never changes what a
 * later write sends: write buffers hold the pattern for the whole step.
 * A pattern that is stamped before each write gets a second write buffer
 * per slot: a write goes out from the one stamped ahead, and the other is
 * stamped right after io_submit, while the IO is in flight, so stamping
 * (about 5 us of CPU per 128 KiB write here: cache misses on lines the
 * kernel touched) does not delay the next submission at low queue depth.
 */
struct slot {
	struct iocb cb; /* first: events hand back &cb, which is the slot */
	void *read_buf;  /* NULL in a write-only step */
	void *write_buf; /* NULL in a read-only step */
	void *spare_buf; /* stamped, ready for the next write; NULL if not stamping */
	uint64_t start_ns;    /* the clock read before its io_submit */
	uint64_t intended_ns; /* when it was meant to go: start_ns unless a rate step */
	uint64_t offset;
	int is_read;
};

/* A growable table, grown only on rare boundaries (never per IO). */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	memset((char *)p + *cap * elem, 0, (ncap - *cap) * elem);
	*arr = p;
	*cap = ncap;
	return 0;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

/*
 * CPU time of the whole process, not just the IO thread: the log's writer
 * thread builds the histograms from the IO thread's records, and that is
 * the engine's cost too.
 */
static void process_cpu(uint64_t *user_ns, uint64_t *sys_ns)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user_ns = tv_ns(ru.ru_utime);
	*sys_ns = tv_ns(ru.ru_stime);
}

void fsp_step_result_free(struct fsp_step_result *res)
{
	free(res->read_hist);
	free(res->write_hist);
	free(res->timeline);
	free(res->segments);
	free(res->rate);
	res->rate = NULL;
	res->read_hist = res->write_hist = NULL;
	res->timeline = NULL;
	res->segments = NULL;
	res->ntimeline = res->nsegments = 0;
}

/* Everything the loop touches, in one place. */
struct loop {
	const struct fsp_step_spec *spec;
	struct fsp_step_result *res;
	io_context_t ctx;
	struct fsp_reaper reaper; /* how the loop waits on ctx (reap.h) */
	struct slot *slots;
	struct slot **free_slots;
	unsigned nfree;
	struct iocb **batch;
	struct io_event *events;
	struct fsp_offgen gen[2];      /* [1] used only with per-direction offsets */
	struct fsp_offgen *read_gen, *write_gen;
	struct fsp_mix mix;
	uint64_t rng, stamp;
	uint32_t tid;
	size_t timeline_cap, segments_cap;
	size_t timeline_max, segments_max; /* the spec's caps, defaults applied */
	uint64_t segments_closed; /* fill segments ended, kept or not */
	uint64_t last_burst_ns;   /* busy time of the latest burst (its idle follows) */
	uint64_t issued_bytes;
	uint64_t done_bytes;   /* completed, both directions */
	uint64_t seg_start_ns; /* fill segments: when the current one began */
	struct fsp_bufpool *pool; /* every slot's buffers */
};

/*
 * Every slot's buffers, from a pool of its own (src/base/bufpool.h: huge pages,
 * so the kernel pins one page per IO instead of one per 4 KiB).
 */
static int buffers_setup(struct loop *L)
{
	const struct fsp_step_spec *s = L->spec;
	L->pool = fsp_bufpool_new();
	if (!L->pool)
		return -1;
	for (unsigned i = 0; i < s->qd; i++) {
		struct slot *sl = &L->slots[i];
		size_t cap;
		if (s->read_pct > 0 && !(sl->read_buf = fsp_bufpool_get(L->pool, s->bs, &cap)))
			return -1;
		if (s->read_pct < 100 &&
		    !(sl->write_buf = fsp_bufpool_get(L->pool, s->bs, &cap)))
			return -1;
		if (s->read_pct < 100 && fsp_pattern_stamps(&s->pattern) &&
		    !(sl->spare_buf = fsp_bufpool_get(L->pool, s->bs, &cap)))
			return -1;
	}
	return 0;
}

static int loop_setup(struct loop *L, char *err, size_t errlen)
{
	const struct fsp_step_spec *s = L->spec;
	int rc = io_setup((int)s->qd, &L->ctx);
	if (rc < 0) {
		snprintf(err, errlen, "io_setup(%u) failed: %s", s->qd, strerror(-rc));
		return -1;
	}
	fsp_reaper_init(&L->reaper, L->ctx, s->poll_ns);
	L->slots = calloc(s->qd, sizeof(*L->slots));
	L->free_slots = calloc(s->qd, sizeof(*L->free_slots));
	L->batch = calloc(s->qd, sizeof(*L->batch));
	L->events = calloc(s->qd, sizeof(*L->events));
	L->res->read_hist = malloc(sizeof(struct fsp_hist));
	L->res->write_hist = malloc(sizeof(struct fsp_hist));
	if (!L->slots || !L->free_slots || !L->batch || !L->events ||
	    !L->res->read_hist || !L->res->write_hist) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fsp_hist_init(L->res->read_hist);
	fsp_hist_init(L->res->write_hist);
	if (s->rate > 0) {
		L->res->rate = malloc(sizeof(*L->res->rate));
		if (!L->res->rate) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		fsp_rate_book_init(L->res->rate, s->late_ns ? s->late_ns : FSP_RATE_LATE_NS);
	}
	L->rng = fsp_rand_seed(s->seed ^ 0x5bd1e995u);
	if (buffers_setup(L) != 0)
		goto no_memory;
	for (unsigned i = 0; i < s->qd; i++) {
		struct slot *sl = &L->slots[i];
		/* touched here, so no first-touch page fault lands on a measured IO */
		if (sl->read_buf)
			memset(sl->read_buf, 0, s->bs);
		if (sl->write_buf)
			fsp_pattern_fill(&s->pattern, sl->write_buf, s->bs, &L->rng);
		if (sl->spare_buf) {
			fsp_pattern_fill(&s->pattern, sl->spare_buf, s->bs, &L->rng);
			fsp_pattern_refresh(&s->pattern, sl->spare_buf, s->bs, &L->rng,
					    &L->stamp);
		}
		L->free_slots[L->nfree++] = sl;
	}
	fsp_bufpool_usage(L->pool, &L->res->buffer_bytes, &L->res->huge_buffer_bytes);
	/* size the tables for the expected run, so growth is rare; never past the caps */
	L->timeline_max = s->timeline_max ? s->timeline_max : FSP_TIMELINE_MAX;
	L->segments_max = s->segments_max ? s->segments_max : FSP_SEGMENTS_MAX;
	uint64_t tl = 64, seg = 16;
	if (s->timeline_ns && s->time_ns)
		tl = s->time_ns / s->timeline_ns + 16;
	if (s->burst && s->bytes)
		seg = s->bytes / s->burst + 2;
	else if (s->segment)
		seg = s->span_size / s->segment + 2;
	if (tl > L->timeline_max)
		tl = L->timeline_max;
	if (seg > L->segments_max)
		seg = L->segments_max;
	if ((s->timeline_ns &&
	     grow((void **)&L->res->timeline, &L->timeline_cap, tl,
		  sizeof(*L->res->timeline))) ||
	    grow((void **)&L->res->segments, &L->segments_cap, seg,
		 sizeof(*L->res->segments))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fsp_offgen_init(&L->gen[0], s->span_off, s->span_size, s->bs, s->access,
			s->norepeat, s->seed);
	L->read_gen = L->write_gen = &L->gen[0];
	if (s->offsets == FSP_OFFSETS_PER_DIRECTION) {
		/* a different seed, so random reads and writes do not pick the same blocks */
		fsp_offgen_init(&L->gen[1], s->span_off, s->span_size, s->bs,
				s->access, s->norepeat, ~s->seed);
		L->write_gen = &L->gen[1];
	}
	fsp_mix_init(&L->mix, s->read_pct, s->interleave, s->seed);
	L->tid = (uint32_t)syscall(SYS_gettid);
	return 0;
no_memory:
	snprintf(err, errlen, "out of memory for %u-byte buffers", s->bs);
	return -1;
}

static void loop_teardown(struct loop *L)
{
	if (L->ctx)
		io_destroy(L->ctx);
	fsp_bufpool_free(L->pool); /* the buffers go with it */
	free(L->slots);
	free(L->free_slots);
	free(L->batch);
	free(L->events);
}

static void add_segment(struct loop *L, uint64_t offset, uint64_t bytes,
			uint64_t ns)
{
	struct fsp_step_result *r = L->res;
	if (r->nsegments >= L->segments_max ||
	    grow((void **)&r->segments, &L->segments_cap, r->nsegments + 1,
		 sizeof(*r->segments))) {
		r->segments_dropped++; /* lose the row, keep measuring */
		return;
	}
	r->segments[r->nsegments++] = (struct fsp_segment){ offset, bytes, ns };
}

/* Record one completion. */
static void complete(struct loop *L, struct slot *sl, long result,
		     uint64_t now)
{
	const struct fsp_step_spec *s = L->spec;
	struct fsp_step_result *r = L->res;
	/* from the intended time: a rate step's IO held back waited too */
	uint64_t total_ns = now - sl->intended_ns;
	uint64_t service_ns = now - sl->start_ns;
	uint64_t bytes = result > 0 ? (uint64_t)result : 0;

	if (result < 0) {
		if (!r->errors) {
			r->first_error = (int)-result;
			r->error_offset = sl->offset;
		}
		r->errors++;
	} else if (sl->is_read) {
		r->read_ios++;
		r->read_bytes += bytes;
		fsp_hist_add(r->read_hist, total_ns);
	} else {
		r->write_ios++;
		r->write_bytes += bytes;
		fsp_hist_add(r->write_hist, total_ns);
	}
	L->done_bytes += bytes;
	if (s->log) {
		struct fsp_rec rec = {
			.start_ns = sl->intended_ns,
			.total_ns = total_ns,
			/* all of the service is outside the engine; the lag is its own */
			.backing_ns = service_ns,
			.offset = sl->offset,
			.length = s->bs,
			.pid = L->tid,
			.result = result < 0 ? (int32_t)-result : 0,
			.op = sl->is_read ? FSP_OP_READ : FSP_OP_WRITE,
			.step = s->index,
			.bytes = bytes,
		};
		fsp_oplog_add(s->log, &rec);
	}
	if (s->timeline_ns) {
		size_t b = (size_t)((now - r->started_ns) / s->timeline_ns);
		if (b >= r->ntimeline) { /* a new bucket: rare, not per IO */
			if (b < L->timeline_max &&
			    grow((void **)&r->timeline, &L->timeline_cap, b + 1,
				 sizeof(*r->timeline)) == 0)
				r->ntimeline = b + 1;
			else
				r->timeline_dropped_ios++;
		}
		if (b < r->ntimeline) {
			struct fsp_timeline_bucket *t = &r->timeline[b];
			if (sl->is_read) {
				t->read_ios++;
				t->read_bytes += bytes;
			} else {
				t->write_ios++;
				t->write_bytes += bytes;
			}
		}
	}
	if (s->segment && !s->burst) {
		while (L->done_bytes >= (L->segments_closed + 1) * s->segment) {
			add_segment(L, s->span_off + L->segments_closed * s->segment,
				    s->segment, now - L->seg_start_ns);
			L->segments_closed++;
			L->seg_start_ns = now;
		}
	}
	L->free_slots[L->nfree++] = sl;
}

/* Take a free slot and fill its iocb for the next IO. */
static struct iocb *prepare(struct loop *L)
{
	const struct fsp_step_spec *s = L->spec;
	struct slot *sl = L->free_slots[--L->nfree];
	sl->is_read = fsp_engine_next_io(L->read_gen, L->write_gen, &L->mix,
					 &sl->offset);
	if (sl->is_read) {
		io_prep_pread(&sl->cb, s->fd, sl->read_buf, s->bs, (long long)sl->offset);
	} else {
		if (sl->spare_buf) { /* send the stamped one; restamp the other later */
			void *ready = sl->spare_buf;
			sl->spare_buf = sl->write_buf;
			sl->write_buf = ready;
		}
		io_prep_pwrite(&sl->cb, s->fd, sl->write_buf, s->bs, (long long)sl->offset);
	}
	sl->cb.data = sl;
	L->issued_bytes += s->bs;
	return &sl->cb;
}

/*
 * Submit the n prepared IOs of L->batch, FSP_SUBMIT_MAX per io_submit, the
 * latency clock read just before each call; a rate step notes each IO's
 * lag (rate.h). Returns 0, or -1 with err set (the unsubmitted slots go
 * back to the free list).
 */
static int submit_batch(struct loop *L, unsigned n, unsigned *inflight, char *err,
			size_t errlen)
{
	const struct fsp_step_spec *s = L->spec;
	struct fsp_rate_book *book = L->res->rate;
	unsigned done = 0;
	int rc = 0;
	while (done < n) {
		/* see FSP_SUBMIT_MAX; the latency clock starts before io_submit */
		unsigned k = n - done < FSP_SUBMIT_MAX ? n - done : FSP_SUBMIT_MAX;
		uint64_t t = fsp_now_ns();
		for (unsigned i = done; i < done + k; i++) {
			struct slot *sl = (struct slot *)L->batch[i];
			sl->start_ns = t;
			if (s->rate > 0) {
				if (sl->intended_ns > t) { /* never before its time */
					sl->intended_ns = t;
					book->early++;
				}
			} else
				sl->intended_ns = t;
		}
		int got = io_submit(L->ctx, (long)k, L->batch + done);
		if (got == -EINTR || got == -EAGAIN)
			continue;
		if (got <= 0) {
			snprintf(err, errlen, "io_submit failed: %s", strerror(-got));
			rc = -1;
			/* unsubmitted slots go back to the free list */
			for (unsigned i = done; i < n; i++)
				L->free_slots[L->nfree++] = (struct slot *)L->batch[i];
			break;
		}
		if (book)
			for (unsigned i = done; i < done + (unsigned)got; i++) {
				struct slot *sl = (struct slot *)L->batch[i];
				fsp_rate_book_note(book, sl->intended_ns, sl->start_ns);
			}
		done += (unsigned)got;
	}
	*inflight += done;
	/* with the IOs in flight, stamp the buffers the next writes will send */
	for (unsigned i = 0; i < done; i++) {
		struct slot *sl = (struct slot *)L->batch[i];
		if (!sl->is_read && sl->spare_buf)
			fsp_pattern_refresh(&s->pattern, sl->spare_buf, s->bs, &L->rng, &L->stamp);
	}
	return rc;
}

/*
 * How close to an IO's intended time the rate loop stops sleeping and
 * spins: a sleep overshoots by the timer slack (set to 1 us for the step)
 * plus the wake-up, tens of microseconds on a virtual machine.
 */
#define FSP_RATE_SPIN_NS 100000ull
#if defined(__x86_64__) || defined(__i386__)
#define FSP_CPU_RELAX() __builtin_ia32_pause()
#else
#define FSP_CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif
/* A rate step that fell behind sends what was due in its time for at most this many times its time. */
#define FSP_RATE_GRACE 2u

/*
 * Wait until due, collecting completions meanwhile: returns the events
 * taken (> 0) as soon as there are any, 0 at due, or -errno. With IOs in
 * flight it sleeps in io_getevents with a timeout at due (the step runs
 * with a 1 us timer slack): what completes them (a loop device's worker,
 * a FUSE daemon, on a 2-core machine quite likely this CPU) gets the CPU.
 * With none, it sleeps until FSP_RATE_SPIN_NS before due, then spins on
 * the clock (no system call, no yield: on a machine with more runnable
 * tasks than CPUs a yield or a late wake-up lost milliseconds).
 */
static int wait_due(struct loop *L, unsigned inflight, uint64_t due)
{
	const struct fsp_step_spec *s = L->spec;
	for (;;) {
		if (s->stop && *s->stop)
			return 0;
		uint64_t now = fsp_now_ns();
		if (now >= due)
			return 0;
		uint64_t left = due - now;
		if (inflight > 0) {
			struct timespec ts = { (time_t)(left / 1000000000ull),
					       (long)(left % 1000000000ull) };
			int got = io_getevents(L->ctx, 1, (long)s->qd, L->events, &ts);
			if (got != 0 && got != -EINTR)
				return got;
			continue;
		}
		if (left > FSP_RATE_SPIN_NS) {
			left -= FSP_RATE_SPIN_NS;
			struct timespec ts = { (time_t)(left / 1000000000ull),
					       (long)(left % 1000000000ull) };
			nanosleep(&ts, NULL);
			continue;
		}
		FSP_CPU_RELAX();
	}
}

/* The got completions io_getevents returned into L->events, all at now. */
static void complete_events(struct loop *L, int got, uint64_t now)
{
	for (int i = 0; i < got; i++)
		complete(L, (struct slot *)L->events[i].obj, (long)L->events[i].res, now);
}

/*
 * A rate step (spec->rate > 0, rate.h): each IO goes out at its intended
 * time when a slot is free, else as soon as one is; qd caps the IOs
 * outstanding. Issuing ends when the schedule passes the step's time, at
 * the byte limit, an error or *stop. A step that fell behind goes on
 * sending the IOs due within its time (the late ones are the very latency
 * a load curve is after), for at most FSP_RATE_GRACE times its time: what
 * is still unsent then is counted in res->unissued. The step lasts at
 * least its time, so its rate is IOs over its duration.
 */
static int run_rate(struct loop *L, uint64_t *busy_ns, char *err, size_t errlen)
{
	const struct fsp_step_spec *s = L->spec;
	struct fsp_step_result *r = L->res;
	uint64_t start = fsp_now_ns(), now = start;
	uint64_t end = s->time_ns ? start + s->time_ns : UINT64_MAX;
	uint64_t hard_end = s->time_ns ? start + FSP_RATE_GRACE * s->time_ns : UINT64_MAX;
	uint64_t next_progress = start + s->progress_ns;
	struct fsp_rate_sched sched;
	uint64_t last_sent = start;
	unsigned inflight = 0;
	int issuing = 1, rc = 0;
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
	fsp_rate_init(&sched, s->rate, s->arrivals, s->seed, start);
	for (;;) {
		unsigned n = 0;
		now = fsp_now_ns();
		while (issuing) {
			uint64_t due = fsp_rate_peek(&sched);
			if ((s->stop && *s->stop) || r->errors ||
			    (s->bytes && L->issued_bytes >= s->bytes) || due >= end || now >= hard_end) {
				/* what was due before the end and never went out */
				while (!(s->stop && *s->stop) && !r->errors && fsp_rate_peek(&sched) < end &&
				       !(s->bytes && L->issued_bytes >= s->bytes)) {
					fsp_rate_take(&sched);
					r->unissued++;
				}
				issuing = 0;
				break;
			}
			if (due > now || L->nfree == 0 || n == FSP_SUBMIT_MAX)
				break;
			struct iocb *cb = prepare(L);
			((struct slot *)cb)->intended_ns = fsp_rate_take(&sched);
			L->batch[n++] = cb;
		}
		if (n && submit_batch(L, n, &inflight, err, errlen) != 0) {
			rc = -1;
			issuing = 0;
		}
		/* the clock read before the last io_submit, as its lag is: a send
		 * that ends more than late_ns past the step's time has a late IO */
		if (n)
			last_sent = ((struct slot *)L->batch[n - 1])->start_ns;
		if (!issuing && inflight == 0)
			break;
		int got = 0;
		if (n == FSP_SUBMIT_MAX)
			got = 0; /* more may be due: submit them first */
		else if (issuing && L->nfree > 0)
			got = wait_due(L, inflight, fsp_rate_peek(&sched));
		else if (inflight > 0)
			got = fsp_reap(&L->reaper, inflight, (long)s->qd, L->events);
		if (got == -EINTR)
			continue;
		if (got < 0) {
			snprintf(err, errlen, "io_getevents failed: %s", strerror(-got));
			rc = -1;
			break; /* io_destroy reaps what is left */
		}
		if (got > 0) {
			now = fsp_now_ns();
			complete_events(L, got, now);
			inflight -= (unsigned)got;
		}
		if (s->progress && now >= next_progress) {
			s->progress(s->progress_arg, *busy_ns + (now - start), L->done_bytes);
			next_progress = now + s->progress_ns;
		}
	}
	now = fsp_now_ns();
	if (rc == 0 && !r->errors && end != UINT64_MAX && now < end) {
		fsp_engine_idle(end - now, s->stop); /* the step lasts its time */
		now = fsp_now_ns();
	}
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	*busy_ns += now - start;
	L->last_burst_ns = now - start;
	r->send_ns = last_sent - start > s->time_ns ? last_sent - start : s->time_ns;
	return rc;
}

/*
 * One burst (or the whole step when there are no bursts): keep qd IOs in
 * flight until the burst, byte or time limit, an error, or *stop.
 * Returns 0, or -1 with err set for an io_submit/io_getevents failure.
 */
static int run_burst(struct loop *L, uint64_t *busy_ns, char *err,
		     size_t errlen)
{
	const struct fsp_step_spec *s = L->spec;
	struct fsp_step_result *r = L->res;
	uint64_t burst_start = fsp_now_ns(), now = burst_start;
	uint64_t burst_issued_start = L->issued_bytes;
	uint64_t next_progress = burst_start + s->progress_ns;
	unsigned inflight = 0;
	int issuing = 1, rc = 0;

	if (s->rate > 0)
		return run_rate(L, busy_ns, err, errlen);
	for (;;) {
		unsigned n = 0;
		while (issuing && L->nfree > 0) {
			if ((s->stop && *s->stop) || r->errors ||
			    (s->bytes && L->issued_bytes >= s->bytes) ||
			    (s->burst && L->issued_bytes - burst_issued_start >= s->burst) ||
			    (s->time_ns && *busy_ns + (now - burst_start) >= s->time_ns)) {
				issuing = 0;
				break;
			}
			L->batch[n++] = prepare(L);
		}
		if (n && submit_batch(L, n, &inflight, err, errlen) != 0) {
			rc = -1;
			issuing = 0;
		}
		if (inflight == 0)
			break;
		int got = fsp_reap(&L->reaper, inflight, (long)s->qd, L->events);
		if (got == -EINTR)
			continue;
		if (got < 0) {
			snprintf(err, errlen, "io_getevents failed: %s", strerror(-got));
			rc = -1;
			break; /* io_destroy reaps what is left */
		}
		now = fsp_now_ns();
		complete_events(L, got, now);
		inflight -= (unsigned)got;
		if (s->progress && now >= next_progress) {
			s->progress(s->progress_arg, *busy_ns + (now - burst_start),
				    L->done_bytes);
			next_progress = now + s->progress_ns;
		}
	}
	uint64_t burst_ns = now - burst_start;
	*busy_ns += burst_ns;
	L->last_burst_ns = burst_ns;
	if (s->burst)
		add_segment(L, burst_issued_start, L->issued_bytes - burst_issued_start,
			    burst_ns);
	return rc;
}

/*
 * The ramp (fio's ramp_time): the same IO for ramp_ns, then the queue
 * drains and nothing of it is kept; the offset and mix sequences go on
 * from where it stopped, and the byte and time limits start afterwards.
 * Right after process start a job can run well above its steady rate for
 * a few hundred ms (scheduler placement of a new task); a ramp leaves that
 * out of short measurements.
 */
static int ramp(struct loop *L, char *err, size_t errlen)
{
	const struct fsp_step_spec *spec = L->spec;
	struct fsp_step_spec warm = *spec;
	warm.time_ns = spec->ramp_ns;
	warm.bytes = 0;
	warm.segment = 0;
	warm.timeline_ns = 0;
	warm.log = NULL;
	warm.progress = NULL;
	struct fsp_step_result *res = L->res;
	uint64_t busy_ns = 0;
	L->spec = &warm;
	int rc = run_burst(L, &busy_ns, err, errlen);
	L->spec = spec;
	if (rc == 0 && res->errors) {
		snprintf(err, errlen, "during the ramp: %s at offset %llu",
			 strerror(res->first_error),
			 (unsigned long long)res->error_offset);
		rc = -1;
	}
	/* forget the ramp: counters, histograms, bytes issued */
	res->read_ios = res->write_ios = res->read_bytes = res->write_bytes = 0;
	fsp_hist_init(res->read_hist);
	fsp_hist_init(res->write_hist);
	if (res->rate)
		fsp_rate_book_init(res->rate, res->rate->late_ns);
	res->unissued = 0;
	L->issued_bytes = L->done_bytes = 0;
	return rc;
}

int fsp_engine_step(const struct fsp_step_spec *spec,
		    struct fsp_step_result *res, char *err, size_t errlen)
{
	struct loop L;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	memset(&L, 0, sizeof(L));
	L.spec = spec;
	L.res = res;
	if (spec->qd < 1 || spec->qd > FSP_QD_MAX || spec->bs < FSP_BS_MIN ||
	    spec->bs > FSP_BS_MAX || spec->span_size < spec->bs) {
		snprintf(err, errlen, "bad step (qd %u, bs %u, span %llu)",
			 spec->qd, spec->bs, (unsigned long long)spec->span_size);
		return -1;
	}
	if (loop_setup(&L, err, errlen) != 0) {
		loop_teardown(&L);
		return -1;
	}
	if (spec->ramp_ns && !spec->burst && ramp(&L, err, errlen) != 0) {
		loop_teardown(&L);
		return -1;
	}
	uint64_t user0, sys0, user1, sys1;
	process_cpu(&user0, &sys0);
	const struct fsp_reaper ramp_reaper = L.reaper; /* the ramp's waits are not counted */
	res->started_ns = fsp_now_ns();
	L.seg_start_ns = res->started_ns;

	uint64_t busy_ns = 0;
	for (;;) {
		uint64_t before = L.issued_bytes;
		if (run_burst(&L, &busy_ns, err, errlen) != 0) {
			rc = -1;
			break;
		}
		/* without bursts one pass is the step; with them, stop at a limit */
		if (!spec->burst || L.issued_bytes == before || res->errors ||
		    (spec->stop && *spec->stop) ||
		    (spec->bytes && L.issued_bytes >= spec->bytes) ||
		    (spec->time_ns && busy_ns >= spec->time_ns))
			break;
		fsp_engine_idle(fsp_duty_idle_ns(L.last_burst_ns, spec->duty), spec->stop);
	}
	res->ended_ns = fsp_now_ns();
	res->busy_ns = busy_ns;
	process_cpu(&user1, &sys1);
	res->cpu_user_ns = user1 - user0;
	res->cpu_sys_ns = sys1 - sys0;
	res->interrupted = spec->stop && *spec->stop;
	res->poll_waits = L.reaper.polls - ramp_reaper.polls;
	res->poll_backoffs = L.reaper.backoffs - ramp_reaper.backoffs;
	/* a fill's last, partial segment */
	if (spec->segment && !spec->burst &&
	    L.done_bytes > L.segments_closed * spec->segment) {
		uint64_t off = L.segments_closed * spec->segment;
		add_segment(&L, spec->span_off + off, L.done_bytes - off,
			    res->ended_ns - L.seg_start_ns);
	}
	if (rc == 0 && res->errors) {
		snprintf(err, errlen, "%s error at offset %llu: %s",
			 spec->read_pct == 100 ? "read" :
			 spec->read_pct == 0 ? "write" : "I/O",
			 (unsigned long long)res->error_offset,
			 strerror(res->first_error));
		rc = -1;
	}
	loop_teardown(&L);
	return rc;
}

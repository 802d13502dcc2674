/*
 * engine.h - the job engine: drives one target with libaio + O_DIRECT.
 *
 * A run is a list of steps (one per queue depth, per mix, or one fill). A
 * step issues IOs of one block size at one queue depth over a span of the
 * target, sequentially or at random, reading, writing or a mix of both,
 * until a time or byte limit, optionally in bursts separated by idle time.
 *
 * Timing: an IO's latency runs from the clock read taken just BEFORE the
 * io_submit() that carries it (so time spent inside io_submit counts) to
 * the clock read taken just after io_getevents() returns its completion.
 * Everything after submission is outside the engine, so the engine records
 * backing_ns = total_ns (layer_ns = 0).
 *
 * The small pieces (offset generator, mix sequencer, duty-cycle arithmetic)
 * are exposed so the unit tests can check them exactly.
 */
#ifndef FSP_BENCH_ENGINE_H
#define FSP_BENCH_ENGINE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "src/base/hist.h"
#include "bench/engine/pattern.h"
#include "bench/engine/rate.h"

struct fsp_oplog;

#define FSP_QD_MAX 256u
#define FSP_BS_MIN 512u
#define FSP_BS_MAX (16u << 20)
/*
 * What bounds the engine's memory whatever the parameters: bytes in flight
 * (qd x bs; up to three buffers each), and the timeline buckets (32 bytes)
 * and segment rows (24 bytes) of a whole run. Past a table's cap the IOs or
 * segments are counted as dropped instead of kept.
 */
#define FSP_INFLIGHT_MAX (512ull << 20)
#define FSP_TIMELINE_MAX (1u << 20)
#define FSP_SEGMENTS_MAX (1u << 20)

/* ---- offsets ---------------------------------------------------------- */

enum fsp_access { FSP_ACCESS_SEQ = 0, FSP_ACCESS_RANDOM };

/*
 * Yields block-aligned byte offsets inside [span_off, span_off + nblocks*bs).
 * Sequential wraps to the span start after its last block. Random is
 * uniform and seeded; with norepeat it walks a pseudo-random permutation of
 * the blocks (a 4-round Feistel network over the next even power of two,
 * cycle-walking values >= nblocks), so every block comes exactly once per
 * pass, and each pass uses a new permutation.
 */
struct fsp_offgen {
	uint64_t span_off;
	uint64_t bs;
	uint64_t nblocks;
	enum fsp_access access;
	int norepeat;
	uint64_t seq;       /* sequential: next block index; norepeat: index in pass */
	uint64_t rng;
	uint64_t pass;      /* norepeat: permutation number */
	unsigned half_bits; /* norepeat: Feistel half width */
	uint64_t keys[4];
};

/* span_size is rounded down to whole blocks; it must hold at least one. */
void fsp_offgen_init(struct fsp_offgen *g, uint64_t span_off,
		     uint64_t span_size, uint32_t bs, enum fsp_access access,
		     int norepeat, uint64_t seed);
uint64_t fsp_offgen_next(struct fsp_offgen *g);

/* ---- read/write mix ---------------------------------------------------- */

/*
 * EXACT: deterministic interleaving (Bresenham): over any 100/gcd(100,pct)
 * IOs exactly pct% are reads, e.g. 70/30 gives 7 reads in every 10 IOs,
 * spread out. RANDOM: each IO is a read with probability pct% (seeded), so
 * runs of one direction come and go as with fio's rwmixread.
 */
enum fsp_interleave { FSP_INTERLEAVE_EXACT = 0, FSP_INTERLEAVE_RANDOM };

struct fsp_mix {
	unsigned read_pct;
	unsigned acc;
	enum fsp_interleave interleave;
	uint64_t rng;
};

void fsp_mix_init(struct fsp_mix *m, unsigned read_pct,
		  enum fsp_interleave interleave, uint64_t seed);
static inline int fsp_mix_next_is_read(struct fsp_mix *m)
{
	if (m->interleave == FSP_INTERLEAVE_RANDOM)
		return fsp_rand64(&m->rng) % 100 < m->read_pct;
	m->acc += m->read_pct;
	if (m->acc >= 100) {
		m->acc -= 100;
		return 1;
	}
	return 0;
}

/*
 * Where mixed reads and writes take their offsets. SHARED: from one
 * generator, so mixed sequential IO continues a single sequence whatever
 * the direction (read 0, write 128k, read 256k, ...). PER_DIRECTION: reads
 * and writes each from their own generator, as fio's rw=rw and randrw do
 * (fio keeps last_pos per direction: read 0, write 0, read 128k, write 128k).
 */
enum fsp_offsets { FSP_OFFSETS_SHARED = 0, FSP_OFFSETS_PER_DIRECTION };

/*
 * The next IO of a step: direction from the mix, then the offset from that
 * direction's generator (read_gen and write_gen are the same generator for
 * FSP_OFFSETS_SHARED). Returns 1 for a read.
 */
static inline int fsp_engine_next_io(struct fsp_offgen *read_gen,
				     struct fsp_offgen *write_gen,
				     struct fsp_mix *m, uint64_t *offset)
{
	int is_read = fsp_mix_next_is_read(m);
	*offset = fsp_offgen_next(is_read ? read_gen : write_gen);
	return is_read;
}

/* ---- duty cycle -------------------------------------------------------- */

/*
 * Idle time after busy_ns of work so that busy time is duty_pct% of the
 * total: idle = busy * (100 - duty) / duty. duty_pct 0 or >= 100 gives 0.
 */
uint64_t fsp_duty_idle_ns(uint64_t busy_ns, unsigned duty_pct);

/* ---- one step ----------------------------------------------------------- */

struct fsp_step_spec {
	int fd;                 /* opened O_DIRECT, read/write as needed */
	uint16_t index;         /* step number stored with every record */
	uint32_t bs;
	unsigned qd;
	unsigned read_pct;      /* 100 = read only, 0 = write only */
	enum fsp_access access;
	enum fsp_offsets offsets;
	enum fsp_interleave interleave;
	int norepeat;
	uint64_t seed;
	uint64_t span_off, span_size;
	uint64_t ramp_ns;       /* IO first for this long, not measured (not with bursts) */
	uint64_t poll_ns;       /* poll for a completion this long before sleeping (reap.h) */
	uint64_t time_ns;       /* busy-time limit, 0 = none */
	uint64_t bytes;         /* byte limit, 0 = none */
	uint64_t burst;         /* bytes per burst, 0 = no bursts */
	unsigned duty;          /* with bursts: busy % of total */
	uint64_t segment;       /* record a segment row every this many bytes, 0 = no */
	uint64_t timeline_ns;   /* throughput bucket width, 0 = no timeline */
	size_t timeline_max;    /* buckets kept at most; 0 = FSP_TIMELINE_MAX */
	size_t segments_max;    /* segment rows kept at most; 0 = FSP_SEGMENTS_MAX */
	struct fsp_pattern pattern;
	struct fsp_oplog *log;  /* NULL: no records */
	volatile sig_atomic_t *stop; /* set by a signal handler: finish early */
	/* called about every progress_ns from the IO loop (NULL: never) */
	void (*progress)(void *arg, uint64_t busy_ns, uint64_t bytes);
	void *progress_arg;
	uint64_t progress_ns;
	/*
	 * Open loop (rate.h): rate > 0 issues IOs at their intended times,
	 * rate IOs per second, at most qd outstanding; an IO whose time comes
	 * with no slot free goes as soon as one is. Its latency (the step's
	 * histograms, the record's total_ns) runs from its intended time; the
	 * record's backing_ns is the service time from the actual io_submit,
	 * so its layer time is the lag. Such a step lasts time_ns, longer
	 * when it fell behind: the IOs due within time_ns all go out, for at
	 * most twice time_ns (what is left then is counted, not sent).
	 * rate 0: closed loop, the queue kept full (intended = actual).
	 */
	double rate;
	enum fsp_arrivals arrivals;
	uint64_t late_ns;       /* a lag above this counts as late; 0 = FSP_RATE_LATE_NS */
};

struct fsp_timeline_bucket {
	uint64_t read_bytes, write_bytes, read_ios, write_ios;
};

/* A fill segment or a burst: bytes done in ns of busy time. */
struct fsp_segment {
	uint64_t offset, bytes, ns;
};

struct fsp_step_result {
	uint64_t started_ns, ended_ns, busy_ns;
	uint64_t read_ios, write_ios, read_bytes, write_bytes;
	uint64_t errors;
	int first_error;        /* errno of the first failed IO */
	uint64_t error_offset;
	uint64_t cpu_user_ns, cpu_sys_ns;
	uint64_t buffer_bytes;      /* mapped for the IO buffers (src/base/bufpool.h) */
	uint64_t huge_buffer_bytes; /* of it, backed by huge pages */
	int interrupted;
	struct fsp_hist *read_hist, *write_hist; /* total_ns per IO */
	struct fsp_timeline_bucket *timeline;
	size_t ntimeline;
	struct fsp_segment *segments;  /* fill segments, or bursts */
	size_t nsegments;
	uint64_t timeline_dropped_ios; /* completions past the timeline's last bucket */
	uint64_t segments_dropped;     /* segments or bursts not kept (cap, no memory) */
	/* how the measured IO was waited for (reap.h): waits that polled, and
	 * times the poll was set aside because polls held another task off */
	uint64_t poll_waits, poll_backoffs;
	/* rate steps only (else NULL, 0): the lag of each IO and the late ones,
	 * and the IOs due within the step's time still unsent at twice its time */
	struct fsp_rate_book *rate;
	uint64_t unissued;
	/* rate steps: the time the IOs took to send, from the step's start to
	 * the clock read before the last io_submit, at least the step's time:
	 * the achieved rate is the IOs over it (the last IOs' service after it
	 * is in their latency) */
	uint64_t send_ns;
};

/*
 * Run one step. Returns 0, or -1 with a one-line reason in err (setup
 * failure or IO error; the result still holds what was measured).
 * Free the result's arrays with fsp_step_result_free().
 */
int fsp_engine_step(const struct fsp_step_spec *spec,
		    struct fsp_step_result *res, char *err, size_t errlen);
void fsp_step_result_free(struct fsp_step_result *res);

/* Sleep ns, waking early if *stop becomes set. */
void fsp_engine_idle(uint64_t ns, volatile sig_atomic_t *stop);

#endif

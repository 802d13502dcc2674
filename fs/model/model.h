/*
 * model.h - a model drive: a stateful, deterministic cost model of a
 * storage device, applied to the IO a mount with `--device-model SPEC`
 * receives (docs/inject.md, "The model drive").
 *
 * Each IO's cost is the sum of the knobs that apply to it:
 *   read=T, write=T     a fixed cost of every read / write,
 *   switch=T            an IO that does not continue the last IO's stream
 *                       (a stream: a sequential run of one direction; the
 *                       drive tracks streams=N of them, least recently used
 *                       out),
 *   raw=T@AGE           a read of data written less than AGE ago,
 *   flush=T             a flush (fsync),
 *   cache=SIZE:T        writes beyond SIZE of write cache cost T more (per
 *                       IO), the cache draining at drain=SIZE per second,
 *   jitter=T            a uniform extra of 0..T, from seed=N.
 * The model is pure: no clock, no IO, no lock; time comes in as `now`.
 */
#ifndef FSP_MODEL_H
#define FSP_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum fsp_model_dir { FSP_MODEL_READ, FSP_MODEL_WRITE, FSP_MODEL_FLUSH };

#define FSP_MODEL_MAX_STREAMS 64
#define FSP_MODEL_WRITES 4096 /* recent writes kept for raw= */

struct fsp_model_cfg {
	uint64_t read_ns, write_ns;
	uint64_t switch_ns;
	unsigned streams;            /* tracked streams, 1..64 [8] */
	uint64_t raw_ns, raw_age_ns;
	uint64_t flush_ns;
	uint64_t cache_bytes, cache_ns; /* 0 bytes: no cache knob */
	uint64_t drain_bps;          /* bytes per second the cache drains */
	uint64_t jitter_ns;
	uint64_t seed;
};

/* What each knob cost, summed over the model's life. */
struct fsp_model_stats {
	uint64_t ios, reads, writes, flushes;
	uint64_t switches, raw_hits, cache_slow;
	uint64_t switch_ns, raw_ns, flush_ns, cache_ns, base_ns, jitter_ns;
};

struct fsp_model;

/* SPEC as in the comment above, e.g. "switch=200us,raw=300us@5ms,flush=2ms,
 * cache=64M:80us": 0, or -1 with a one-line reason naming the bad part. */
int fsp_model_parse(const char *spec, struct fsp_model_cfg *cfg, char *err, size_t errlen);

/* The configuration in canonical form (the run attribute fuse.device_model). */
void fsp_model_format(const struct fsp_model_cfg *cfg, char *buf, size_t len);

struct fsp_model *fsp_model_new(const struct fsp_model_cfg *cfg); /* NULL: ENOMEM */
void fsp_model_free(struct fsp_model *m);

/* The cost in ns of one IO arriving at now (ns, any monotonic clock), and
 * the model's state moved on by it. Not thread-safe: the caller serialises. */
uint64_t fsp_model_cost_ns(struct fsp_model *m, enum fsp_model_dir dir, uint64_t offset,
			   uint64_t len, uint64_t now);

void fsp_model_stats(const struct fsp_model *m, struct fsp_model_stats *out);

#endif

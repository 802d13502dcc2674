/*
 * pattern.h - the device-level access pattern of a run, from its block
 * requests (block_ios rows, docs/tracing.md "Access pattern"): per step and
 * direction the sequential share and streams (the definition the
 * emulation's own accounting uses, src/base/seqstream.h), the requests'
 * sizes by power of two, for every device read the time since a write last
 * covered any of its sectors, and the flushes and FUA writes.
 *
 * Pure functions of rows already read: no database, no kernel. Only
 * requests that completed without error are counted (the others are
 * counted in errors).
 */
#ifndef FSP_PRISM_PATTERN_H
#define FSP_PRISM_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include "src/base/seqstream.h"
#include "src/db/block_ios.h"

/* IO sizes: how many, their bytes, and by power of two: bin[k] counts the
 * sizes in [2^k, 2^(k+1)) bytes (bin 0 also holds size 0). */
#define FSP_SIZE_BINS 48
struct fsp_size_hist {
	uint64_t count, bytes;
	uint64_t bin[FSP_SIZE_BINS];
};
int fsp_size_bin(uint64_t bytes);
/* n IOs of size bytes each. */
void fsp_size_hist_add(struct fsp_size_hist *h, uint64_t bytes, uint64_t n);
double fsp_size_hist_mean(const struct fsp_size_hist *h); /* NAN when empty */

/* Read-after-write recency buckets: the time from the completion of the
 * last write that covered any sector of a read to the read's entry into
 * the block layer. */
enum fsp_recency {
	FSP_REC_1MS,    /* < 1 ms */
	FSP_REC_10MS,   /* 1 ms .. < 10 ms */
	FSP_REC_100MS,  /* 10 ms .. < 100 ms */
	FSP_REC_1S,     /* 100 ms .. < 1 s */
	FSP_REC_LONGER, /* >= 1 s */
	FSP_REC_NEVER,  /* no write to any of its sectors completed before it in the trace */
	FSP_REC_NBUCKETS
};
enum fsp_recency fsp_recency_bucket(uint64_t age_ns);
const char *fsp_recency_name(int bucket); /* "lt_1ms", ..., "ge_1s", "never" */

/* Directions of the sequentiality: reads, writes, and both together (the
 * emulation's dev.seq_ios and dev.streams_x1000 count both together). */
enum fsp_pat_dir { FSP_PAT_READ, FSP_PAT_WRITE, FSP_PAT_BOTH, FSP_PAT_NDIRS };
const char *fsp_pat_dir_name(int dir); /* "read", "write", "both" */

/* One step's pattern. */
struct fsp_pattern {
	int step;
	/* in the order the device received them (issue_ns); positions in
	 * sectors, disk by disk */
	struct fsp_seq seq[FSP_PAT_NDIRS];
	struct fsp_size_hist size[2];       /* reads, writes (op read / write) */
	uint64_t recency[FSP_REC_NBUCKETS]; /* the step's reads */
	uint64_t flushes;                   /* op flush requests */
	uint64_t preflushes;                /* other requests with the preflush flag */
	uint64_t fua_writes;                /* writes with the FUA flag */
	uint64_t errors;                    /* requests completed with an error */
};

/*
 * The pattern of every step that has rows (rows with step -1 only serve as
 * the write history of the recency), in ascending step order, into *out
 * (malloc'd, *nout entries; free it). rows in any order. Recency is exact:
 * O(n log n) time, and besides *out at most 72 bytes per row, freed before
 * returning. 0, or -1 when out of memory.
 */
int fsp_pattern_compute(const struct fsp_block_io *rows, size_t n,
			struct fsp_pattern **out, size_t *nout);

/* The moment a request entered the block layer: queue_ns, else insert_ns,
 * else issue_ns. */
uint64_t fsp_block_arrival_ns(const struct fsp_block_io *r);

#endif

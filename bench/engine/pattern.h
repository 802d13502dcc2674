/*
 * pattern.h - the data a benchmark writes.
 *
 * Compressing controllers (SandForce and friends) write zeros several times
 * faster than random data, so a fair result states its pattern:
 *   zeros        every byte 0 (maximally compressible)
 *   random       incompressible; every 512-byte sector of every write is
 *                stamped afresh, so no two written sectors are equal and a
 *                deduplicating or compressing drive gains nothing
 *   compress:N   N% compressible: the first N% of every 512-byte sector is
 *                zeros, the rest random (stamped like `random`)
 * and ",fixed" after random or compress:N: the buffers are filled once and
 * never stamped (fio's scramble_buffers=0); cheaper per write, but a
 * deduplicating drive sees the same sectors again and again.
 */
#ifndef FSP_BENCH_PATTERN_H
#define FSP_BENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

enum fsp_pattern_kind {
	FSP_PATTERN_ZEROS = 0,
	FSP_PATTERN_RANDOM,
	FSP_PATTERN_COMPRESS,
};

struct fsp_pattern {
	enum fsp_pattern_kind kind;
	unsigned compress_pct; /* FSP_PATTERN_COMPRESS: 0..100 */
	int fixed;             /* ",fixed": no stamping before each write */
};

/* Parse "zeros", "random" or "compress:N", the last two optionally with
 * ",fixed". 0, or -1 with a reason in err. */
int fsp_pattern_parse(const char *s, struct fsp_pattern *p, char *err,
		      size_t errlen);
/* "zeros", "random", "compress:50", "random,fixed" */
void fsp_pattern_format(const struct fsp_pattern *p, char *buf, size_t len);

/* xorshift64*: the engine's one PRNG (fast, seedable, never 0). */
static inline uint64_t fsp_rand64(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A seed made usable by fsp_rand64 (any value, 0 included). */
uint64_t fsp_rand_seed(uint64_t seed);

/*
 * Leading zero bytes in every 512-byte sector: 512 for zeros, 0 for random,
 * N% (rounded up to 16 bytes) for compress:N. Zeros inside each sector, not
 * whole zero sectors, so no sector of a write ever repeats.
 */
static inline size_t fsp_pattern_zero_len(const struct fsp_pattern *p)
{
	if (p->kind == FSP_PATTERN_ZEROS)
		return 512;
	if (p->kind == FSP_PATTERN_RANDOM)
		return 0;
	size_t z = ((size_t)512 * p->compress_pct / 100 + 15) & ~(size_t)15;
	return z > 512 ? 512 : z;
}

/*
 * Fill a whole buffer (len a multiple of 512) with the pattern, once, when
 * the buffer is set up. Off the hot path.
 */
void fsp_pattern_fill(const struct fsp_pattern *p, void *buf, size_t len,
		      uint64_t *rng);

/* Does fsp_pattern_refresh change anything for this pattern? */
static inline int fsp_pattern_stamps(const struct fsp_pattern *p)
{
	return !p->fixed && fsp_pattern_zero_len(p) + 16 <= 512;
}

/*
 * Per write (hot path): make the buffer's content unique again by stamping
 * 16 fresh bytes (a counter and a random word) at the start of the random
 * part of every 512-byte sector. Costs one PRNG step and a 16-byte store
 * per 512 bytes; zeros need nothing.
 */
static inline void fsp_pattern_refresh(const struct fsp_pattern *p, void *buf,
				       size_t len, uint64_t *rng,
				       uint64_t *counter)
{
	if (!fsp_pattern_stamps(p))
		return; /* fixed, zeros, or too little random data to stamp */
	size_t at = fsp_pattern_zero_len(p);
	unsigned char *b = buf;
	for (size_t off = 0; off < len; off += 512) {
		uint64_t stamp[2] = { ++*counter, fsp_rand64(rng) };
		__builtin_memcpy(b + off + at, stamp, 16);
	}
}

#endif

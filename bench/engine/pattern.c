/*
 * pattern.c - parsing and filling the benchmark data patterns (pattern.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/engine/pattern.h"

int fsp_pattern_parse(const char *s, struct fsp_pattern *p, char *err,
		      size_t errlen)
{
	size_t len = strlen(s);
	int fixed = len > 6 && !strcmp(s + len - 6, ",fixed");
	char kind[64];
	if (fixed)
		len -= 6;
	if (len >= sizeof(kind))
		goto bad;
	memcpy(kind, s, len);
	kind[len] = 0;
	if (!strcmp(kind, "zeros")) {
		if (fixed) {
			snprintf(err, errlen, "'%s': zeros are never stamped, "
				 "',fixed' applies to random and compress:N", s);
			return -1;
		}
		p->kind = FSP_PATTERN_ZEROS;
		p->compress_pct = 100;
	} else if (!strcmp(kind, "random")) {
		p->kind = FSP_PATTERN_RANDOM;
		p->compress_pct = 0;
	} else if (!strncmp(kind, "compress:", 9)) {
		char *end;
		const char *num = kind + 9;
		unsigned long n = strtoul(num, &end, 10);
		if (*num < '0' || *num > '9' || *end || n > 100) {
			snprintf(err, errlen,
				 "'%s': compress:N needs N from 0 to 100 (percent compressible)",
				 s);
			return -1;
		}
		p->kind = FSP_PATTERN_COMPRESS;
		p->compress_pct = (unsigned)n;
	} else {
		goto bad;
	}
	p->fixed = fixed;
	return 0;
bad:
	snprintf(err, errlen,
		 "'%s' is not a pattern (use zeros, random or compress:N, "
		 "optionally followed by ,fixed)", s);
	return -1;
}

void fsp_pattern_format(const struct fsp_pattern *p, char *buf, size_t len)
{
	const char *fixed = p->fixed ? ",fixed" : "";
	switch (p->kind) {
	case FSP_PATTERN_ZEROS:
		snprintf(buf, len, "zeros");
		break;
	case FSP_PATTERN_RANDOM:
		snprintf(buf, len, "random%s", fixed);
		break;
	default:
		snprintf(buf, len, "compress:%u%s", p->compress_pct, fixed);
		break;
	}
}

uint64_t fsp_rand_seed(uint64_t seed)
{
	/* splitmix64 scrambles small seeds into a full-entropy nonzero state */
	uint64_t z = seed + 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return z ? z : 0x9E3779B97F4A7C15ull;
}

void fsp_pattern_fill(const struct fsp_pattern *p, void *buf, size_t len,
		      uint64_t *rng)
{
	unsigned char *b = buf;
	size_t zero_len = fsp_pattern_zero_len(p);
	if (zero_len >= 512) {
		memset(buf, 0, len);
		return;
	}
	for (size_t off = 0; off < len; off += 8) {
		uint64_t r = fsp_rand64(rng);
		memcpy(b + off, &r, len - off < 8 ? len - off : 8);
	}
	if (zero_len)
		for (size_t sector = 0; sector < len; sector += 512)
			memset(b + sector, 0, zero_len);
}

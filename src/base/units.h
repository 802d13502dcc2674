/*
 * units.h - sizes and durations as people write them, one parser and one
 * formatter of each, for every command and option.
 *
 * Sizes are binary: 4k = 4K = 4KiB = 4096, 1G = 2^30, up to P (2^50) (a storage engineer's
 * "GB" on a command line means GiB here, as in fio). Durations take ns, us,
 * ms, s (the default), m or min, h, and fractions ("1.5s").
 */
#ifndef FSP_BASE_UNITS_H
#define FSP_BASE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define FSP_KiB 1024ull
#define FSP_MiB (1024ull * FSP_KiB)
#define FSP_GiB (1024ull * FSP_MiB)
#define FSP_TiB (1024ull * FSP_GiB)
#define FSP_PiB (1024ull * FSP_TiB)
#define FSP_MS 1000000ull
#define FSP_SEC 1000000000ull
#define FSP_MIN (60 * FSP_SEC)
#define FSP_HOUR (60 * FSP_MIN)

/* "4096", "4k", "4K", "4kb", "4KiB", "1g", "512b": 0, or -1 if not a size
 * (a suffix it does not know, no digits, or more than 2^64-1 bytes). */
int fsp_parse_size(const char *s, uint64_t *out);

/* "10ms", "1.5s", "2m", "100us", "30" (seconds): 0, or -1 if not a
 * duration (negative, unknown unit, or more than 10^18 ns). */
int fsp_parse_duration(const char *s, uint64_t *ns);

/* Exact, in the largest unit that divides v, as fsp_parse_size reads it
 * back: 131072 -> "128k", 1536 -> "1536", 3 GiB -> "3G", 2^50 -> "1P". */
void fsp_format_size(uint64_t v, char *buf, size_t len);

/* Exact, in the largest unit that divides ns, as fsp_parse_duration reads
 * it back: "1h", "2m", "5s", "250ms", "100us" (below 1 us: rounded down). */
void fsp_format_duration(uint64_t ns, char *buf, size_t len);

/* For people, rounded to one decimal in the largest binary unit not above
 * it: "512 B", "3.8 MiB", "1.0 GiB". */
void fsp_format_bytes(uint64_t v, char *buf, size_t len);

#endif

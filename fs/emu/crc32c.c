/*
 * crc32c.c - CRC32C for the emulation's on-store structures (see
 * crc32c.h): the SSE4.2 instruction where the CPU has it, a table otherwise.
 */
#include <string.h>

#include "fs/emu/crc32c.h"

/* the external definition of the inline emu_crc32c in crc32c.h */
extern inline uint32_t emu_crc32c(uint32_t crc, const void *buf, size_t len);

static uint32_t crc32c_table[256];
static int crc32c_ready;

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc32c_table[i] = c;
	}
	__atomic_store_n(&crc32c_ready, 1, __ATOMIC_RELEASE);
}

#if defined(__x86_64__)
/* The SSE4.2 crc32 instruction computes exactly this CRC (Castagnoli,
 * reflected) 8 bytes at a time: an order of magnitude faster than the table,
 * which matters because every commit checksums every node it writes. */
__attribute__((target("sse4.2")))
uint32_t emu_crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = ~crc;
	for (; len && ((uintptr_t)p & 7); len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	for (; len; len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

uint32_t emu_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	/* The table is a pure function of the polynomial, so two threads
	 * racing to build it write identical values. */
	if (!__atomic_load_n(&crc32c_ready, __ATOMIC_ACQUIRE))
		crc32c_init();
	crc = ~crc;
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

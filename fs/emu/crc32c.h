/*
 * crc32c.h - the CRC32C that guards the emulation's on-store structures
 * (journal blocks, allocator checkpoints, the store's superblock and
 * metadata nodes).
 *
 * CRC32C is Castagnoli's polynomial, reflected, as in iSCSI, ext4 and
 * btrfs; crc32c of "123456789" is 0xe3069283. Start with crc = 0 and pass
 * the result back in to continue over more bytes.
 */
#ifndef FSP_FS_EMU_CRC32C_H
#define FSP_FS_EMU_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The table-driven version (what emu_crc32c uses without SSE4.2). */
uint32_t emu_crc32c_portable(uint32_t crc, const void *buf, size_t len);

#if defined(__x86_64__)
/* The SSE4.2 crc32 instruction, 8 bytes at a time; only on a CPU that has
 * it (emu_crc32c checks). */
uint32_t emu_crc32c_hw(uint32_t crc, const uint8_t *p, size_t len);
#endif

/* An inline definition, so that callers pay no call for the CPU check (as
 * the journal did when this lived in journal.c); crc32c.c holds the one
 * external definition. */
inline uint32_t emu_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return emu_crc32c_hw(crc, buf, len);
#endif
	return emu_crc32c_portable(crc, buf, len);
}

#endif

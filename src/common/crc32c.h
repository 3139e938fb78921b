/* CRC-32C (Castagnoli, the iSCSI/ext4/btrfs polynomial 0x1EDC6F41, reflected 0x82F63B78). Uses the SSE4.2
 * crc32 instruction when the CPU has it (checked once), else a slice-by-8 table. Both give identical
 * results; tests/oplog/crc32c_vectors.c checks them against the RFC 3720 vectors. Thread-safe. */
#ifndef DK_COMMON_CRC32C_H
#define DK_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC: dk_crc32c(0, p, n) is the CRC of [p, p+n); dk_crc32c(dk_crc32c(0, a, na), b, nb) is the
 * CRC of a followed by b. */
uint32_t dk_crc32c(uint32_t crc, const void *p, size_t n);

/* The table version and the instruction version, for tests and benchmarks. The _hw one must only be
 * called when dk_crc32c_have_hw() is true. */
uint32_t dk_crc32c_sw(uint32_t crc, const void *p, size_t n);
uint32_t dk_crc32c_hw(uint32_t crc, const void *p, size_t n);
int dk_crc32c_have_hw(void);

#endif

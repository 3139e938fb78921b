/* How bytes become durable. The only module that issues cache-line write-backs, non-temporal stores and
 * fences. Which of these is *needed* depends on the medium (persist/media.h); this module just does them.
 *
 * Ordering contract: dk_copy_nt / dk_copy_flush / dk_flush_range start write-back; nothing is durable
 * (on a dax medium) until the following dk_fence() returns. */
#ifndef DK_PERSIST_PERSIST_H
#define DK_PERSIST_PERSIST_H

#include <stddef.h>
#include <stdint.h>

enum dk_flush_kind { DK_FLUSH_KIND_CLWB, DK_FLUSH_KIND_CLFLUSHOPT, DK_FLUSH_KIND_CLFLUSH };

/* Chooses the flush instruction (clwb > clflushopt > clflush, or `choice` from DAXKIT_FLUSH when the
 * CPU has it) and the widest non-temporal copy the CPU supports. Idempotent. */
void dk_persist_init(int choice /* enum dk_flush_choice */);
enum dk_flush_kind dk_flush_kind(void);
const char *dk_flush_name(void);
/* "avx512", "avx2" or "sse2": the vector width used for non-temporal copies. */
const char *dk_nt_name(void);

/* Writes back every cache line overlapping [p, p+n). No fence. */
void dk_flush_range(const void *p, size_t n);
/* Store fence: orders and completes prior write-backs and non-temporal stores. */
void dk_fence(void);
/* Copies with non-temporal stores; unaligned head and tail lines are stored and written back. No fence. */
void dk_copy_nt(void *dst, const void *src, size_t n);
/* dk_copy_nt for memory made durable otherwise, or not at all (tmpfs, the page cache): the unaligned head and
 * tail lines are stored and not written back (a write-back is ~150 ns a line on this VM; an unaligned copy
 * has up to two). No fence. */
void dk_copy_nt_unflushed(void *dst, const void *src, size_t n);
/* dk_copy_nt that also returns dk_crc32c(crc, <the bytes stored>): computed from the registers stored, so a
 * source changed meanwhile cannot make the two disagree. No fence. (copy_crc.c) */
uint32_t dk_copy_nt_crc32c(void *dst, const void *src, size_t n, uint32_t crc);
/* dk_crc32c(crc, p, n), by the same carry-less-multiply fold for n >= 256 when the CPU has it (4 KiB: a
 * few dozen ns against ~0.5 us for the crc32 instruction's serial chain). (copy_crc.c) */
uint32_t dk_crc32c_wide(uint32_t crc, const void *p, size_t n);
/* Which fold the two above use: "avx512", "pclmul" or "off" (the crc32 instruction or the table). Chosen at
 * the first use from DAXKIT_CRC_FOLD (auto: the best the CPU has); dk_crc_fold_choose sets it again from a
 * enum dk_crc_fold_choice (a choice the CPU lacks falls back to auto's) and returns the name -- for tests
 * and benchmarks, with no other thread using it meanwhile. (copy_crc.c) */
const char *dk_crc_fold_name(void);
const char *dk_crc_fold_choose(int choice);
/* Copies with ordinary stores, then writes back the lines. No fence. */
void dk_copy_flush(void *dst, const void *src, size_t n);
/* Zero-fills with non-temporal stores (head/tail written back). No fence. */
void dk_zero_nt(void *dst, size_t n);
/* The data-path store: non-temporal when n >= nt_min_bytes, else store + write-back. No fence. */
void dk_store_persistent(void *dst, const void *src, size_t n, size_t nt_min_bytes);

/* Test builds: every store range, flush and fence can be reported to a recorder (the crash-state
 * explorer's trace). NULL hooks cost one predictable branch. */
struct dk_persist_trace {
    void (*store)(const void *dst, size_t n, int non_temporal);
    void (*flush)(const void *p, size_t n);
    void (*fence)(void);
};
void dk_persist_set_trace(const struct dk_persist_trace *t);

#endif

/* dk_copy_nt_crc32c: a non-temporal copy that also returns the CRC-32C of the bytes it stored, computed
 * from the very registers it stores (a program that changes the source meanwhile cannot make the copy and
 * its crc disagree). Strict mode puts this crc into a staged write's record, so that one fence makes the
 * staged bytes and the record durable together (recovery replays the record only when the staged bytes
 * match it) instead of a fence between them.
 *
 * Fast path (AVX-512 non-temporal copies and VPCLMULQDQ, a 64-byte aligned destination, >= 256 bytes):
 * the 64-byte lines are folded into four 512-bit accumulators with carry-less multiplies while they are
 * stored (the textbook CRC folding, reflected: a 128-bit lane moves D bits forward as
 * clmul(low qword, x^(D+31) mod P) ^ clmul(high qword, x^(D-33) mod P), constants bit-reflected), then
 * reduced to 128 bits and finished with the crc32 instruction. Without AVX-512 (older or smaller CPUs, and
 * valgrind, whose CPUID hides AVX-512: callgrind's counts of a strict write came from the crc32 chain below
 * until session 27), the same fold by 128-bit PCLMULQDQ, four 16-byte accumulators, one 64-byte line a
 * step. Otherwise the bytes go through a small bounce buffer: copied there once, then checksummed (the
 * crc32 instruction's serial chain, ~3 cycles per 8 bytes) and stored from it. dk_crc32c_wide is the same
 * fold without the copy (the page cache's inline records, recovery's check of staged bytes). Chosen once
 * (CPUID, or DAXKIT_CRC_FOLD for tests); every way gives the same value, bit for bit
 * (tests/persist/crc_fold_diff.c). */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/cpu.h"
#include "common/crc32c.h"
#include "common/dk.h"
#include "common/log.h"
#include "persist/internal.h"
#include "persist/persist.h"

#define CRC32C_POLY 0x1EDC6F41u /* x^32 + ... in normal (not reflected) form */
#define FOLD_GROUP_BYTES 256u   /* four 64-byte accumulators */

struct fold_k { /* one lane's pair: low qword's and high qword's multiplier */
    uint64_t lo, hi;
};
static struct fold_k k2048, k512, k384, k256, k128;
enum fold_level { FOLD_UNKNOWN, FOLD_OFF, FOLD_PCLMUL, FOLD_AVX512 };
static int fold_state; /* enum fold_level: the constants are set before it leaves FOLD_UNKNOWN */

/* x^e mod P, bit-reflected into 32 bits. */
static uint64_t xpow_reflected(unsigned e) {
    uint32_t r = 1;
    for (unsigned i = 0; i < e; i++) r = (r << 1) ^ ((r >> 31) ? CRC32C_POLY : 0u);
    uint32_t v = 0;
    for (int i = 0; i < 32; i++)
        if (r >> i & 1) v |= 1u << (31 - i);
    return v;
}

static struct fold_k fold_by(unsigned bits) { return (struct fold_k){xpow_reflected(bits + 31), xpow_reflected(bits - 33)}; }

/* The best level the CPU has, or `choice` (enum dk_crc_fold_choice) when it has that one. */
static enum fold_level fold_pick(int choice) {
    if (!dk_crc32c_have_hw()) return FOLD_OFF; /* each way finishes with the crc32 instruction */
    bool has512 = dk_cpu_has(DK_CPU_AVX512F) && dk_cpu_has(DK_CPU_VPCLMULQDQ);
    bool has128 = dk_cpu_has(DK_CPU_PCLMULQDQ);
    enum fold_level best = has512 ? FOLD_AVX512 : has128 ? FOLD_PCLMUL : FOLD_OFF;
    switch (choice) {
    case DK_CRC_FOLD_AVX512: return has512 ? FOLD_AVX512 : best;
    case DK_CRC_FOLD_PCLMUL: return has128 ? FOLD_PCLMUL : best;
    case DK_CRC_FOLD_OFF: return FOLD_OFF;
    default: return best;
    }
}

static void fold_constants(void) { /* the same values whichever thread computes them first */
    k2048 = fold_by(2048), k512 = fold_by(512), k384 = fold_by(384), k256 = fold_by(256), k128 = fold_by(128);
}

static void report_choice(const char *msg) { dk_log("%s", msg); }

/* DAXKIT_CRC_FOLD where no dk_cfg was loaded (the daxkit tool's recovery, tests linking the engine): the option
 * table's parse (options.def crc_fold), a bad value reported as the library's start-up reports it. */
static int choice_from_env(void) { return dk_config_env_enum("CRC_FOLD", DK_CRC_FOLD_AUTO, report_choice); }

static enum fold_level fold_level(void) {
    int s = __atomic_load_n(&fold_state, __ATOMIC_ACQUIRE);
    if (DK_LIKELY(s != FOLD_UNKNOWN)) return (enum fold_level)s;
    enum fold_level l = fold_pick(dk_cfg_loaded ? dk_cfg.crc_fold : choice_from_env());
    fold_constants();
    __atomic_store_n(&fold_state, l, __ATOMIC_RELEASE);
    return l;
}

const char *dk_crc_fold_choose(int choice) {
    fold_constants();
    __atomic_store_n(&fold_state, fold_pick(choice), __ATOMIC_RELEASE);
    return dk_crc_fold_name();
}

const char *dk_crc_fold_name(void) {
    static const char *names[] = {"unknown", "off", "pclmul", "avx512"};
    return names[fold_level()];
}

__attribute__((target("avx512f,vpclmulqdq"))) static inline __m512i fold(__m512i z, __m512i k, __m512i next) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00), _mm512_clmulepi64_epi128(z, k, 0x11),
                                     next, 0x96); /* a ^ b ^ c */
}

__attribute__((target("avx512f"))) static inline __m512i k_all(struct fold_k k) {
    return _mm512_set_epi64((long long)k.hi, (long long)k.lo, (long long)k.hi, (long long)k.lo, (long long)k.hi,
                            (long long)k.lo, (long long)k.hi, (long long)k.lo);
}

/* Folds `lines` (>= 4) whole lines at s and returns the raw crc (no inversions) continued from raw crc c;
 * when `store`, also copies them to the 64-byte aligned d with non-temporal stores (specialised inline:
 * the flag is a constant in each caller). */
__attribute__((target("avx512f,vpclmulqdq,sse4.2"), always_inline)) static inline uint64_t
fold_lines(char *d, const char *s, size_t lines, uint32_t c, const bool store) {
    __m512i z[4];
    for (int j = 0; j < 4; j++) {
        z[j] = _mm512_loadu_si512((const void *)(s + 64 * j));
        if (store) _mm512_stream_si512((void *)(d + 64 * j), z[j]);
    }
    z[0] = _mm512_xor_si512(z[0], _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)c)); /* the initial value */
    size_t i = 4;
    __m512i k = k_all(k2048);
    for (; i + 4 <= lines; i += 4) {
        for (int j = 0; j < 4; j++) {
            __m512i a = _mm512_loadu_si512((const void *)(s + 64 * (i + j)));
            if (store) _mm512_stream_si512((void *)(d + 64 * (i + j)), a);
            z[j] = fold(z[j], k, a);
        }
    }
    k = k_all(k512);
    z[1] = fold(z[0], k, z[1]);
    z[2] = fold(z[1], k, z[2]);
    z[3] = fold(z[2], k, z[3]);
    /* The four lanes of z[3] (16 bytes each, in order) move 48, 32 and 16 bytes forward onto the last. */
    __m512i kl = _mm512_set_epi64(0, 0, (long long)k128.hi, (long long)k128.lo, (long long)k256.hi,
                                  (long long)k256.lo, (long long)k384.hi, (long long)k384.lo);
    __m512i t = _mm512_xor_si512(_mm512_clmulepi64_epi128(z[3], kl, 0x00), _mm512_clmulepi64_epi128(z[3], kl, 0x11));
    __m128i x = _mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32(t, 0), _mm512_extracti32x4_epi32(t, 1)),
                              _mm_xor_si128(_mm512_extracti32x4_epi32(t, 2), _mm512_extracti32x4_epi32(z[3], 3)));
    uint64_t r = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
    r = _mm_crc32_u64(r, (uint64_t)_mm_extract_epi64(x, 1));
    for (; i < lines; i++) { /* the last 1-3 lines: stored, then checksummed from what was stored */
        _Alignas(64) uint64_t w[8];
        __m512i a = _mm512_loadu_si512((const void *)(s + 64 * i));
        if (store) _mm512_stream_si512((void *)(d + 64 * i), a);
        _mm512_store_si512((void *)w, a);
        for (int j = 0; j < 8; j++) r = _mm_crc32_u64(r, w[j]);
    }
    return r;
}

__attribute__((target("avx512f,vpclmulqdq,sse4.2"))) static uint64_t copy_fold(char *d, const char *s, size_t lines,
                                                                              uint32_t c) {
    return fold_lines(d, s, lines, c, true);
}

__attribute__((target("avx512f,vpclmulqdq,sse4.2"))) static uint64_t crc_fold(const char *s, size_t lines, uint32_t c) {
    return fold_lines(NULL, s, lines, c, false);
}

/* The same fold by 128-bit PCLMULQDQ: four accumulators, one per 16-byte lane of a line, each moved one
 * line (512 bits) forward a step, then the lanes folded onto the last as above. Any `lines` >= 1. */
__attribute__((target("pclmul,sse4.2"))) static inline __m128i fold128(__m128i x, __m128i k, __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target("pclmul,sse4.2"))) static inline __m128i k_one(struct fold_k k) {
    return _mm_set_epi64x((long long)k.hi, (long long)k.lo);
}

__attribute__((target("pclmul,sse4.2"), always_inline)) static inline uint64_t
fold_lines128(char *d, const char *s, size_t lines, uint32_t c, const bool store) {
    __m128i x[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        x[j] = _mm_loadu_si128((const __m128i *)(s + 16 * j));
        if (store) _mm_stream_si128((__m128i *)(d + 16 * j), x[j]);
    }
    x[0] = _mm_xor_si128(x[0], _mm_cvtsi64_si128((long long)c)); /* the initial value */
    __m128i k = k_one(k512);
    for (size_t i = 1; i < lines; i++) {
#pragma GCC unroll 4 /* the accumulators stay in registers (not unrolled, gcc 12 kept them in memory) */
        for (int j = 0; j < 4; j++) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + 64 * i + 16 * j));
            if (store) _mm_stream_si128((__m128i *)(d + 64 * i + 16 * j), a);
            x[j] = fold128(x[j], k, a);
        }
    }
    __m128i r128 = fold128(x[0], k_one(k384), fold128(x[1], k_one(k256), fold128(x[2], k_one(k128), x[3])));
    uint64_t r = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r128));
    return _mm_crc32_u64(r, (uint64_t)_mm_extract_epi64(r128, 1));
}

__attribute__((target("pclmul,sse4.2"))) static uint64_t copy_fold128(char *d, const char *s, size_t lines, uint32_t c) {
    return fold_lines128(d, s, lines, c, true);
}

__attribute__((target("pclmul,sse4.2"))) static uint64_t crc_fold128(const char *s, size_t lines, uint32_t c) {
    return fold_lines128(NULL, s, lines, c, false);
}

uint32_t dk_crc32c_wide(uint32_t crc, const void *p, size_t n) {
    enum fold_level l = n < FOLD_GROUP_BYTES ? FOLD_OFF : fold_level();
    if (l == FOLD_OFF) return dk_crc32c(crc, p, n);
    size_t body = n & ~(size_t)(DK_CACHELINE_BYTES - 1), lines = body / DK_CACHELINE_BYTES;
    crc = ~(uint32_t)(l == FOLD_AVX512 ? crc_fold(p, lines, ~crc) : crc_fold128(p, lines, ~crc));
    return body < n ? dk_crc32c(crc, (const char *)p + body, n - body) : crc;
}

uint32_t dk_copy_nt_crc32c(void *dst, const void *src, size_t n, uint32_t crc) {
    char *d = dst;
    const char *s = src;
    enum fold_level l = n >= FOLD_GROUP_BYTES && ((uintptr_t)d & (DK_CACHELINE_BYTES - 1)) == 0 ? fold_level() : FOLD_OFF;
    if (l != FOLD_OFF) {
        size_t body = n & ~(size_t)(DK_CACHELINE_BYTES - 1), tail = n - body, lines = body / DK_CACHELINE_BYTES;
        uint32_t r = (uint32_t)(l == FOLD_AVX512 ? copy_fold(d, s, lines, ~crc) : copy_fold128(d, s, lines, ~crc));
        persist_trace_store(d, body, 1);
        crc = ~r;
        if (tail) { /* copied once into a line of our own, then checksummed and stored from it */
            _Alignas(64) char b[DK_CACHELINE_BYTES];
            memcpy(b, s + body, tail);
            crc = dk_crc32c(crc, b, tail);
            dk_copy_flush(d + body, b, tail);
        }
        return crc;
    }
    _Alignas(64) char b[FOLD_GROUP_BYTES];
    for (size_t off = 0; off < n;) {
        size_t k = DK_MIN(n - off, (size_t)FOLD_GROUP_BYTES);
        memcpy(b, s + off, k);
        crc = dk_crc32c(crc, b, k);
        dk_copy_nt(d + off, b, k);
        off += k;
    }
    return crc;
}

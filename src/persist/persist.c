#include "persist/persist.h"

#include <immintrin.h>
#include <string.h>

#include "common/config.h"
#include "common/cpu.h"
#include "common/dk.h"
#include "persist/internal.h"

enum nt_kind { NT_SSE2, NT_AVX2, NT_AVX512 };

static enum dk_flush_kind flush_kind = DK_FLUSH_KIND_CLFLUSH;
static enum nt_kind nt_kind = NT_SSE2;
static const struct dk_persist_trace *trace;

struct cpu_features {
    int clwb, clflushopt, avx2, avx512f;
};

/* Chosen once, at the library's start-up (common/cpu.h: glibc's detection, no cpuid of ours -- the four took ~15
 * us of every daxkit process's start in a virtual machine). */
static struct cpu_features cpu_detect(void) {
    return (struct cpu_features){.clwb = dk_cpu_has(DK_CPU_CLWB),
                                 .clflushopt = dk_cpu_has(DK_CPU_CLFLUSHOPT),
                                 .avx2 = dk_cpu_has(DK_CPU_AVX2),
                                 .avx512f = dk_cpu_has(DK_CPU_AVX512F)};
}

void dk_persist_init(int choice) {
    struct cpu_features f = cpu_detect();
    enum dk_flush_kind best = f.clwb ? DK_FLUSH_KIND_CLWB
                              : f.clflushopt ? DK_FLUSH_KIND_CLFLUSHOPT
                                             : DK_FLUSH_KIND_CLFLUSH;
    switch (choice) {
    case DK_FLUSH_CLWB: flush_kind = f.clwb ? DK_FLUSH_KIND_CLWB : best; break;
    case DK_FLUSH_CLFLUSHOPT: flush_kind = f.clflushopt ? DK_FLUSH_KIND_CLFLUSHOPT : best; break;
    case DK_FLUSH_CLFLUSH: flush_kind = DK_FLUSH_KIND_CLFLUSH; break;
    default: flush_kind = best; break;
    }
    nt_kind = f.avx512f ? NT_AVX512 : f.avx2 ? NT_AVX2 : NT_SSE2;
}

enum dk_flush_kind dk_flush_kind(void) { return flush_kind; }

const char *dk_flush_name(void) {
    static const char *names[] = {"clwb", "clflushopt", "clflush"};
    return names[flush_kind];
}

const char *dk_nt_name(void) {
    static const char *names[] = {"sse2", "avx2", "avx512"};
    return names[nt_kind];
}

void dk_persist_set_trace(const struct dk_persist_trace *t) { __atomic_store_n(&trace, t, __ATOMIC_RELEASE); }

__attribute__((target("clwb"))) static void flush_lines_clwb(uintptr_t p, uintptr_t end) {
    for (; p < end; p += DK_CACHELINE_BYTES) _mm_clwb((void *)p);
}
__attribute__((target("clflushopt"))) static void flush_lines_clflushopt(uintptr_t p, uintptr_t end) {
    for (; p < end; p += DK_CACHELINE_BYTES) _mm_clflushopt((void *)p);
}
static void flush_lines_clflush(uintptr_t p, uintptr_t end) {
    for (; p < end; p += DK_CACHELINE_BYTES) _mm_clflush((void *)p);
}

void dk_flush_range(const void *p, size_t n) {
    if (n == 0) return;
    const struct dk_persist_trace *t = trace;
    if (DK_UNLIKELY(t != NULL)) t->flush(p, n);
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(DK_CACHELINE_BYTES - 1);
    uintptr_t end = (uintptr_t)p + n;
    switch (flush_kind) {
    case DK_FLUSH_KIND_CLWB: flush_lines_clwb(start, end); break;
    case DK_FLUSH_KIND_CLFLUSHOPT: flush_lines_clflushopt(start, end); break;
    case DK_FLUSH_KIND_CLFLUSH: flush_lines_clflush(start, end); break;
    }
}

void dk_fence(void) {
    const struct dk_persist_trace *t = trace;
    if (DK_UNLIKELY(t != NULL)) t->fence();
    _mm_sfence();
}

/* Body copies: dst is 64-byte aligned, n a multiple of 64. */
__attribute__((target("avx512f"))) static void nt_body_avx512(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; i += 64)
        _mm512_stream_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
}
__attribute__((target("avx2"))) static void nt_body_avx2(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
    }
}
static void nt_body_sse2(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
}
__attribute__((target("avx512f"))) static void nt_zero_avx512(char *dst, size_t n) {
    __m512i z = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 64) _mm512_stream_si512((void *)(dst + i), z);
}
static void nt_zero_sse2(char *dst, size_t n) {
    __m128i z = _mm_setzero_si128();
    for (size_t i = 0; i < n; i += 16) _mm_stream_si128((__m128i *)(dst + i), z);
}

static void nt_body(char *dst, const char *src, size_t n) {
    switch (nt_kind) {
    case NT_AVX512: nt_body_avx512(dst, src, n); break;
    case NT_AVX2: nt_body_avx2(dst, src, n); break;
    case NT_SSE2: nt_body_sse2(dst, src, n); break;
    }
}

static void trace_store(const void *dst, size_t n, int nt) {
    const struct dk_persist_trace *t = trace;
    if (DK_UNLIKELY(t != NULL) && n) t->store(dst, n, nt);
}

void persist_trace_store(const void *dst, size_t n, int non_temporal) { trace_store(dst, n, non_temporal); }

void dk_copy_flush(void *dst, const void *src, size_t n) {
    memcpy(dst, src, n);
    trace_store(dst, n, 0);
    dk_flush_range(dst, n);
}

/* Ordinary stores of a partial line, written back where `flush`. */
static inline void copy_ends(void *dst, const void *src, size_t n, bool flush) {
    if (flush) {
        dk_copy_flush(dst, src, n);
    } else {
        memcpy(dst, src, n);
        trace_store(dst, n, 0);
    }
}

/* Non-temporal stores for the whole lines, ordinary ones for the unaligned head and tail (written back where
 * `flush_ends`). No fence. */
static inline void copy_nt(void *dst, const void *src, size_t n, bool flush_ends) {
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & (DK_CACHELINE_BYTES - 1));
    if (head > n) head = n;
    if (head) copy_ends(d, s, head, flush_ends);
    d += head, s += head, n -= head;
    size_t body = n & ~(size_t)(DK_CACHELINE_BYTES - 1);
    if (body) {
        nt_body(d, s, body);
        trace_store(d, body, 1);
    }
    if (n - body) copy_ends(d + body, s + body, n - body, flush_ends);
}

void dk_copy_nt(void *dst, const void *src, size_t n) { copy_nt(dst, src, n, true); }

void dk_copy_nt_unflushed(void *dst, const void *src, size_t n) { copy_nt(dst, src, n, false); }

void dk_zero_nt(void *dst, size_t n) {
    char *d = dst;
    size_t head = (size_t)(-(uintptr_t)d & (DK_CACHELINE_BYTES - 1));
    if (head > n) head = n;
    if (head) {
        memset(d, 0, head);
        trace_store(d, head, 0);
        dk_flush_range(d, head);
    }
    d += head, n -= head;
    size_t body = n & ~(size_t)(DK_CACHELINE_BYTES - 1);
    if (body) {
        if (nt_kind == NT_AVX512) nt_zero_avx512(d, body);
        else nt_zero_sse2(d, body);
        trace_store(d, body, 1);
    }
    if (n - body) {
        memset(d + body, 0, n - body);
        trace_store(d + body, n - body, 0);
        dk_flush_range(d + body, n - body);
    }
}

void dk_store_persistent(void *dst, const void *src, size_t n, size_t nt_min_bytes) {
    if (n >= nt_min_bytes) dk_copy_nt(dst, src, n);
    else dk_copy_flush(dst, src, n);
}

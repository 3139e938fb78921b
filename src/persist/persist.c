#include "persist/persist.h"

#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "common/config.h"
#include "common/dk.h"
#include "persist/internal.h"

enum nt_kind { NT_SSE2, NT_AVX2, NT_AVX512 };

static enum dk_flush_kind flush_kind = DK_FLUSH_KIND_CLFLUSH;
static enum nt_kind nt_kind = NT_SSE2;
static const struct dk_persist_trace *trace;

struct cpu_features {
    int clwb, clflushopt, avx2, avx512f;
};

#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
/* glibc's detection, made once at its start-up ("active": the CPU has it and the kernel enabled its state, as
 * the XGETBV check below): no cpuid of ours -- in a virtual machine each one exits to the hypervisor (3.6 us
 * here; the four below took ~15 us of every daxkit process's start). */
static struct cpu_features cpu_detect(void) {
    return (struct cpu_features){.clwb = CPU_FEATURE_ACTIVE(CLWB) != 0,
                                 .clflushopt = CPU_FEATURE_ACTIVE(CLFLUSHOPT) != 0,
                                 .avx2 = CPU_FEATURE_ACTIVE(AVX2) != 0,
                                 .avx512f = CPU_FEATURE_ACTIVE(AVX512F) != 0};
}
#else
static struct cpu_features cpu_detect(void) {
    struct cpu_features f = {0};
    unsigned a, b, c, d;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f.clwb = (b >> 24) & 1;
        f.clflushopt = (b >> 23) & 1;
        f.avx2 = (b >> 5) & 1;
        f.avx512f = (b >> 16) & 1;
    }
    /* AVX state must be enabled by the OS (XGETBV), or vector stores fault. */
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        if ((lo & 0x6) != 0x6) f.avx2 = f.avx512f = 0;
        if ((lo & 0xe6) != 0xe6) f.avx512f = 0;
    } else {
        f.avx2 = f.avx512f = 0;
    }
    return f;
}
#endif

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

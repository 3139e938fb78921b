/* CPU features the library chooses code by: one question, dk_cpu_has. */
#ifndef DK_COMMON_CPU_H
#define DK_COMMON_CPU_H

#include <cpuid.h>
#include <stdbool.h>

enum dk_cpu_feature {
    DK_CPU_SSE4_2,     /* the crc32 instruction (common/crc32c.c) */
    DK_CPU_PCLMULQDQ,  /* the 128-bit crc fold (persist/copy_crc.c) */
    DK_CPU_AVX2,       /* 256-bit non-temporal copies (persist/persist.c) */
    DK_CPU_AVX512F,    /* 512-bit non-temporal copies and the fused fold */
    DK_CPU_VPCLMULQDQ, /* the 512-bit crc fold, with AVX512F */
    DK_CPU_RTM,        /* the probe page's presence look (upath/upath.c) */
    DK_CPU_CLWB,       /* the cache-line write-backs (persist/persist.c) */
    DK_CPU_CLFLUSHOPT,
    DK_CPU_AVX512BW,   /* byte compares into a mask, with AVX512F (upath/delta.c) */
    DK_CPU_FEATURE_COUNT
};

/* Usable: the CPU has it, the kernel saves the state it needs (XCR0 for AVX2/AVX-512/VPCLMULQDQ), and for RTM
 * no microcode makes every transaction abort (RTM_ALWAYS_ABORT) -- glibc's CPU_FEATURE_ACTIVE rules, by cpuid
 * and xgetbv of our own. The fallback where glibc has no <sys/platform/x86.h>; it does not follow glibc's
 * GLIBC_TUNABLES=glibc.cpu.hwcaps masks nor its list of CPU models whose RTM it turns off (TSX errata), where
 * it can say yes and glibc no. tests/persist/cpu_has.c compares the two answers feature by feature. Each cpuid
 * exits to the hypervisor in a virtual machine (3.6 us here): callers ask once and keep the answer. Inline (a
 * header only): test programs use it without linking the library's objects. */
static inline unsigned dk_cpu_xcr0_(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1)) return 0; /* no OSXSAVE: no xgetbv, no AVX state */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}

static inline bool dk_cpu_has_cpuid(enum dk_cpu_feature f) {
    const unsigned xcr0_avx = 0x6u, xcr0_avx512 = 0xe6u; /* SSE + AVX; + opmask, ZMM0-15 upper, ZMM16-31 */
    unsigned a, b1 = 0, c1 = 0, d1 = 0, b7 = 0, c7 = 0, d7 = 0;
    if (!__get_cpuid(1, &a, &b1, &c1, &d1)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) b7 = c7 = d7 = 0;
    bool avx_state = (dk_cpu_xcr0_() & xcr0_avx) == xcr0_avx && (c1 >> 28 & 1); /* (AVX itself: glibc's rule) */
    switch (f) {
    case DK_CPU_SSE4_2: return c1 >> 20 & 1;
    case DK_CPU_PCLMULQDQ: return c1 >> 1 & 1; /* SSE state only, which every x86-64 kernel saves */
    case DK_CPU_AVX2: return (b7 >> 5 & 1) && avx_state;
    case DK_CPU_AVX512F: return (b7 >> 16 & 1) && (dk_cpu_xcr0_() & xcr0_avx512) == xcr0_avx512;
    case DK_CPU_VPCLMULQDQ: return (c7 >> 10 & 1) && avx_state;
    case DK_CPU_RTM: return (b7 >> 11 & 1) && !(d7 >> 11 & 1); /* (edx 11: RTM_ALWAYS_ABORT) */
    case DK_CPU_CLWB: return b7 >> 24 & 1;
    case DK_CPU_CLFLUSHOPT: return b7 >> 23 & 1;
    case DK_CPU_AVX512BW: return (b7 >> 30 & 1) && (dk_cpu_xcr0_() & xcr0_avx512) == xcr0_avx512;
    case DK_CPU_FEATURE_COUNT: break;
    }
    return false;
}

#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
/* glibc's detection, made once at its start-up: no cpuid of ours (a constant `f` folds to one load and a bit test).
 * Under valgrind, valgrind's CPUID (no AVX-512, no RTM); a kernel with TSX off clears RTM's bit. */
static inline bool dk_cpu_has(enum dk_cpu_feature f) {
    switch (f) {
    case DK_CPU_SSE4_2: return CPU_FEATURE_ACTIVE(SSE4_2) != 0;
    case DK_CPU_PCLMULQDQ: return CPU_FEATURE_ACTIVE(PCLMULQDQ) != 0;
    case DK_CPU_AVX2: return CPU_FEATURE_ACTIVE(AVX2) != 0;
    case DK_CPU_AVX512F: return CPU_FEATURE_ACTIVE(AVX512F) != 0;
    case DK_CPU_VPCLMULQDQ: return CPU_FEATURE_ACTIVE(VPCLMULQDQ) != 0;
    case DK_CPU_RTM: return CPU_FEATURE_ACTIVE(RTM) != 0;
    case DK_CPU_CLWB: return CPU_FEATURE_ACTIVE(CLWB) != 0;
    case DK_CPU_CLFLUSHOPT: return CPU_FEATURE_ACTIVE(CLFLUSHOPT) != 0;
    case DK_CPU_AVX512BW: return CPU_FEATURE_ACTIVE(AVX512BW) != 0;
    case DK_CPU_FEATURE_COUNT: break;
    }
    return false;
}
#else
static inline bool dk_cpu_has(enum dk_cpu_feature f) { return dk_cpu_has_cpuid(f); }
#endif

#endif

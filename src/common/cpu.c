#include "common/cpu.h"

#include <cpuid.h>

/* XCR0's state components: SSE (1), AVX (2), and AVX-512's opmask, ZMM0-15 upper halves, ZMM16-31 (0xe0). */
#define XCR0_AVX 0x6u
#define XCR0_AVX512 0xe6u

static unsigned xcr0(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1)) return 0; /* no OSXSAVE: no xgetbv, no AVX state */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}

bool dk_cpu_has_cpuid(enum dk_cpu_feature f) {
    unsigned a, b1 = 0, c1 = 0, d1 = 0, b7 = 0, c7 = 0, d7 = 0;
    if (!__get_cpuid(1, &a, &b1, &c1, &d1)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) b7 = c7 = d7 = 0;
    bool avx_state = (xcr0() & XCR0_AVX) == XCR0_AVX && (c1 >> 28 & 1); /* (AVX itself: glibc's rule for AVX2) */
    switch (f) {
    case DK_CPU_SSE4_2: return c1 >> 20 & 1;
    case DK_CPU_PCLMULQDQ: return c1 >> 1 & 1; /* SSE state only, which every x86-64 kernel saves */
    case DK_CPU_AVX2: return (b7 >> 5 & 1) && avx_state;
    case DK_CPU_AVX512F: return (b7 >> 16 & 1) && (xcr0() & XCR0_AVX512) == XCR0_AVX512;
    case DK_CPU_VPCLMULQDQ: return (c7 >> 10 & 1) && avx_state;
    case DK_CPU_RTM: return (b7 >> 11 & 1) && !(d7 >> 11 & 1); /* (edx 11: RTM_ALWAYS_ABORT) */
    case DK_CPU_CLWB: return b7 >> 24 & 1;
    case DK_CPU_CLFLUSHOPT: return b7 >> 23 & 1;
    case DK_CPU_FEATURE_COUNT: break;
    }
    return false;
}

/* CPU features the library chooses code by: one question, dk_cpu_has. */
#ifndef DK_COMMON_CPU_H
#define DK_COMMON_CPU_H

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
    DK_CPU_FEATURE_COUNT
};

/* Usable: the CPU has it, the kernel saves the state it needs (XCR0 for AVX2/AVX-512/VPCLMULQDQ), and for RTM
 * no microcode makes every transaction abort (RTM_ALWAYS_ABORT) -- glibc's CPU_FEATURE_ACTIVE, by cpuid and
 * xgetbv of our own. The fallback where glibc has no <sys/platform/x86.h>; tests/persist/cpu_has.c compares the
 * two answers feature by feature. Each cpuid exits to the hypervisor in a virtual machine (3.6 us here). */
bool dk_cpu_has_cpuid(enum dk_cpu_feature f);

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
    case DK_CPU_FEATURE_COUNT: break;
    }
    return false;
}
#else
static inline bool dk_cpu_has(enum dk_cpu_feature f) { return dk_cpu_has_cpuid(f); }
#endif

#endif

/* Description: common/cpu.h's two answers agree. dk_cpu_has (glibc's CPU_FEATURE_ACTIVE, where glibc has
 * <sys/platform/x86.h>) and dk_cpu_has_cpuid (our own cpuid + xgetbv: the fallback where it has not, dead code
 * on a glibc with the header unless this test runs it) must say the same for every feature the library chooses
 * code by -- the crc32c instruction and folds, the non-temporal copies, the flush instruction, RTM. Prints each
 * feature and both answers. Exit 0 pass, 1 fail. */
#include <stdio.h>

#include "common/cpu.h"

int main(void) {
    static const char *names[DK_CPU_FEATURE_COUNT] = {"sse4_2", "pclmulqdq", "avx2", "avx512f",
                                                      "vpclmulqdq", "rtm", "clwb", "clflushopt"};
    int bad = 0;
    for (int f = 0; f < DK_CPU_FEATURE_COUNT; f++) {
        bool glibc = dk_cpu_has((enum dk_cpu_feature)f), own = dk_cpu_has_cpuid((enum dk_cpu_feature)f);
        printf("%-11s dk_cpu_has %d  cpuid %d%s\n", names[f], glibc, own, glibc == own ? "" : "  DIFFERENT");
        bad += glibc != own;
    }
#if !__has_include(<sys/platform/x86.h>)
    printf("(no <sys/platform/x86.h>: dk_cpu_has is the cpuid form, nothing to compare)\n");
#endif
    if (bad) printf("FAIL: %d feature(s) differ between glibc's detection and the cpuid fallback\n", bad);
    return bad ? 1 : 0;
}

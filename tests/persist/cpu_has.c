/* Description: common/cpu.h's two answers agree. dk_cpu_has (glibc's CPU_FEATURE_ACTIVE, where glibc has
 * <sys/platform/x86.h>) and dk_cpu_has_cpuid (our own cpuid + xgetbv: the fallback where it has not, dead code
 * on a glibc with the header unless this test runs it) must say the same for every feature the library chooses
 * code by -- the crc32c instruction and folds, the non-temporal copies, the flush instruction, RTM. Run again
 * without GLIBC_TUNABLES when it is set (its glibc.cpu.hwcaps masks narrow glibc's answer only). One difference
 * is allowed: RTM off by glibc and on by cpuid (glibc's list of CPU models with TSX errata, which the fallback
 * does not copy) -- noted. Prints each feature and both answers. Exit 0 pass, 1 fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cpu.h"

int main(int argc, char **argv) {
    (void)argc;
    if (getenv("GLIBC_TUNABLES")) {
        extern char **environ;
        static char *env[512];
        int n = 0;
        for (char **e = environ; *e && n < 511; e++)
            if (strncmp(*e, "GLIBC_TUNABLES=", 15) != 0) env[n++] = *e;
        printf("GLIBC_TUNABLES set: run again without it\n");
        fflush(stdout);
        execve("/proc/self/exe", argv, env);
        perror("execve /proc/self/exe");
        return 1;
    }
    static const char *names[DK_CPU_FEATURE_COUNT] = {"sse4_2", "pclmulqdq", "avx2", "avx512f",
                                                      "vpclmulqdq", "rtm", "clwb", "clflushopt", "avx512bw"};
    int bad = 0;
    for (int f = 0; f < DK_CPU_FEATURE_COUNT; f++) {
        bool glibc = dk_cpu_has((enum dk_cpu_feature)f), own = dk_cpu_has_cpuid((enum dk_cpu_feature)f);
        bool errata = f == DK_CPU_RTM && !glibc && own;
        printf("%-11s dk_cpu_has %d  cpuid %d%s\n", names[f], glibc, own,
               glibc == own ? "" : errata ? "  (glibc turned RTM off: a TSX errata model?)" : "  DIFFERENT");
        bad += glibc != own && !errata;
    }
#if !__has_include(<sys/platform/x86.h>)
    printf("(no <sys/platform/x86.h>: dk_cpu_has is the cpuid form, nothing to compare)\n");
#endif
    if (bad) printf("FAIL: %d feature(s) differ between glibc's detection and the cpuid fallback\n", bad);
    return bad ? 1 : 0;
}

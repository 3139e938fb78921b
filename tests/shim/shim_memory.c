/* Description: the library's own memory with many large files open: 1,000 sparse files of 128 MiB
 * (ftruncate), each read at one byte, all kept open. Measures the growth of anonymous memory (RssAnon in
 * /proc/self/status: the library's metadata; file pages are RssShmem/RssFile) and of page tables (VmPTE),
 * prints both, and fails when the metadata exceeds 64 MiB (the target). Run with DAXKIT_POPULATE=0.
 * argv[1]: managed directory; argv[2]: file count (default 1000). */
#include <sys/resource.h>

#include "shim_test.h"

static long status_kib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL, "open /proc/self/status");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') v = atol(line + n + 1);
    fclose(f);
    CHECK(v >= 0, "no %s in /proc/self/status", key);
    return v;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    int files = argc > 2 ? atoi(argv[2]) : 1000;
    st_require_library();
    st_watchdog(120);
    const char *pop = getenv("DAXKIT_POPULATE");
    CHECK(pop && !strcmp(pop, "0"), "run with DAXKIT_POPULATE=0 (pre-faulting would measure file pages)");
    struct rlimit rl = {(rlim_t)files + 256, (rlim_t)files + 256};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) SKIP("cannot raise RLIMIT_NOFILE to %d: %s", files + 256, strerror(errno));
    int *fds = calloc((size_t)files, sizeof *fds);
    long anon0 = status_kib("RssAnon"), pte0 = status_kib("VmPTE");
    for (int i = 0; i < files; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/sparse.%04d", dir, i);
        fds[i] = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
        OK(ftruncate(fds[i], 128 << 20));
        char c = 1;
        CHECK(pread(fds[i], &c, 1, (off_t)(i % 64) << 20) == 1 && c == 0, "file %d: one-byte read of a hole", i);
    }
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v), "stats");
    long anon1 = status_kib("RssAnon"), pte1 = status_kib("VmPTE");
    double meta_mib = (anon1 - anon0) / 1024.0, pte_mib = (pte1 - pte0) / 1024.0;
    printf("daxkit memory: %d open files x 128 MiB: anonymous memory +%.1f MiB (%.1f KiB per file), page tables "
           "+%.1f MiB; %llu reads served in user space, %llu MiB of file mappings\n",
           files, meta_mib, (anon1 - anon0) / (double)files, pte_mib, (unsigned long long)v[DK_C_reads],
           (unsigned long long)(v[DK_C_map_bytes] >> 20));
    CHECK(v[DK_C_reads] >= (uint64_t)files, "only %llu of %d reads were served in user space: nothing measured",
          (unsigned long long)v[DK_C_reads], files);
    CHECK(meta_mib <= 64.0, "the library's metadata grew by %.1f MiB: more than 64 MiB for %d files", meta_mib, files);
    for (int i = 0; i < files; i++) OK(close(fds[i]));
    printf("ok: metadata under 64 MiB\n");
    return 0;
}

/* Description: the stage strategy where relink copies (tmpfs) holds an append burst in process memory up
 * to DAXKIT_STAGE_HEAP_BYTES (default 8 MiB; the large case runs with 1 MiB) instead of the staging pool
 * (src/upath/stage.c):
 *   small     files created, appended to in pieces of 1-9 KiB and closed (rsync's and git's pattern): no
 *             staging file is created (counter staging_files stays 0, no <tag>.*.stg of this process in
 *             .daxkit), stage_heap_slots counts the bursts, and another program (shim_check, without the
 *             library) sees each file at size 0 until its close -- never a part of it -- then exactly
 *             the bytes written;
 *   large     a 3.2 MB burst: past a 1 MiB limit it continues in pool slots (staging_files > 0), within the
 *             8 MiB default it stays in process memory, grown by mremap past 256 KiB (no staging file);
 *             either way others see nothing of it until fsync, then every byte (across the seam between
 *             process memory and the pool);
 *   readonly  a process that only reads and overwrites files creates neither a staging file nor a heap slot.
 *   many      16 files open at once, 6 MiB appended to each without a publish point (a logger with many
 *             logs): the process's anonymous memory grows by at most the 64 MiB all heap slots may hold
 *             together (RssAnon; 96 MiB with the earlier 256 MiB bound), the rest goes to pool slots, and
 *             every file is exact after its fsync (review 7, finding 25).
 *   errno     a burst of 64 KiB appends with a small mapping made after every 16 of them (so the slot's
 *             mapping cannot always grow in place): no write that returns its full count changes errno
 *             (review 13, finding 3: the in-place mremap attempt left ENOMEM).
 *   spill     DAXKIT_STAGE_SPILL_BYTES (64 KiB): appends of 16 KiB -- the first four stay staged (another
 *             program sees the size of the last publish point), the fifth would take the burst past 64 KiB
 *             and the kernel file holds all five at once, exactly (counter append_spills); the next four
 *             stage again, the one after spills again; fsync and close: every byte. Through an O_APPEND
 *             descriptor nothing spills (a log other processes may append to): others see nothing before
 *             the fsync. With DAXKIT_STAGE_SPILL_BYTES=0 (argv[3] "nospill"): nothing before the fsync either.
 *             (The crash side -- a spilled burst rolled back by recovery -- is shim_crash_*_spill.)
 * large runs with DAXKIT_STAGE_SPILL_BYTES=0: its point is the burst staged whole.
 * With DAXKIT_STAGE_HEAP_BYTES=0 (argv[3] "pool"): small and large use the pool from the first append.
 * argv[1]: managed directory; argv[2]: case. */
#include <dirent.h>

#include "shim_test.h"

static bool pool_only; /* DAXKIT_STAGE_HEAP_BYTES=0 */

static void counters(uint64_t v[DK_C_COUNT]) { CHECK(st_stats(getpid(), v), "stats"); }

/* Staging files of this process in <dir>/.daxkit (named p<pid>-<stamp>.<n>.stg). */
static int own_staging_files(const char *dir) {
    char area[PATH_MAX], prefix[32];
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    snprintf(prefix, sizeof prefix, "p%d-", (int)getpid());
    DIR *d = opendir(area);
    if (!d) return 0; /* no hidden area at all */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        n += !strncmp(e->d_name, prefix, strlen(prefix)) && len > 4 && !strcmp(e->d_name + len - 4, ".stg");
    }
    closedir(d);
    return n;
}

static void other_sees(const char *path, uint64_t size, uint32_t seed, const char *when) {
    CHECK(st_check("size", (char *)path, st_fmt("%llu", (unsigned long long)size)) == 0,
          "%s: another program sees size %lld of %s, expected %llu", when, st_ksize(path), path,
          (unsigned long long)size);
    if (size)
        CHECK(st_check("pattern", (char *)path, "0", st_fmt("%llu", (unsigned long long)size), st_fmt("%u", seed)) == 0,
              "%s: another program sees other bytes in %s", when, path);
}

static void case_small(const char *dir) {
    enum { FILES = 24, WATCHED = 4 };
    static uint8_t buf[16384];
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    counters(before);
    for (uint32_t i = 0; i < FILES; i++) {
        char path[PATH_MAX];
        st_path(path, sizeof path, dir, st_fmt("small.%u", i));
        int fd = OK(open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
        uint64_t size = 0;
        for (uint32_t piece = 0; piece < 2 + i % 7; piece++) {
            size_t n = 1024 + (i * 977 + piece * 4099) % 8192; /* 1-9 KiB, unaligned */
            st_fill(buf, 100 + i, size, n);
            st_write_all(fd, buf, n);
            size += n;
            if (i < WATCHED) other_sees(path, 0, 100 + i, "appends before close"); /* never a part */
        }
        CHECK(st_fsize(fd) == (off_t)size, "this process sees size %lld, wrote %llu", (long long)st_fsize(fd),
              (unsigned long long)size);
        OK(close(fd));
        other_sees(path, size, 100 + i, "close");
    }
    counters(after);
    uint64_t files = after[DK_C_staging_files] - before[DK_C_staging_files];
    uint64_t heap = after[DK_C_stage_heap_slots] - before[DK_C_stage_heap_slots];
    if (pool_only) {
        CHECK(heap == 0 && files > 0, "DAXKIT_STAGE_HEAP_BYTES=0: %llu heap slots, %llu staging files",
              (unsigned long long)heap, (unsigned long long)files);
    } else {
        CHECK(files == 0 && own_staging_files(dir) == 0, "%llu staging files created (%d in .daxkit) for "
              "appends of at most 60 KiB per file", (unsigned long long)files, own_staging_files(dir));
        CHECK(heap == FILES, "%llu append bursts held in memory, expected one per file (%d)", (unsigned long long)heap,
              FILES);
    }
    printf("ok: %d files written once and closed: %llu staging files, %llu heap slots\n", FILES,
           (unsigned long long)files, (unsigned long long)heap);
}

static void case_large(const char *dir) {
    static uint8_t buf[1 << 20];
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "large");
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    counters(before);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    const size_t pieces[] = {200000, 100000, 5000, 1 << 20, 777777, 3, 1 << 20};
    uint64_t size = 0;
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        st_fill(buf, 7, size, pieces[i]);
        st_write_all(fd, buf, pieces[i]);
        size += pieces[i];
        other_sees(path, 0, 7, "appends before fsync");
    }
    st_fill(buf, 7, 0, 4096); /* the file reads back through this process too */
    uint8_t got[4096];
    CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got && !memcmp(got, buf, sizeof got), "read-back of the head");
    st_fill(buf, 7, 1048572, 8);
    CHECK(pread(fd, got, 8, 1048572) == 8 && !memcmp(got, buf, 8), "read-back across 1 MiB");
    OK(fsync(fd));
    other_sees(path, size, 7, "fsync");
    OK(close(fd));
    counters(after);
    uint64_t files = after[DK_C_staging_files] - before[DK_C_staging_files];
    const char *limit = getenv("DAXKIT_STAGE_HEAP_BYTES");
    if (pool_only || (limit && strcmp(limit, "1M") == 0))
        CHECK(files > 0, "a %llu-byte burst created no staging file", (unsigned long long)size);
    else if (!limit)
        CHECK(files == 0 && after[DK_C_stage_heap_slots] > before[DK_C_stage_heap_slots],
              "a %llu-byte burst within the 8 MiB default: %llu staging files", (unsigned long long)size,
              (unsigned long long)files);
    printf("ok: a %llu-byte burst: %llu staging files, %llu heap slots\n", (unsigned long long)size,
           (unsigned long long)files,
           (unsigned long long)(after[DK_C_stage_heap_slots] - before[DK_C_stage_heap_slots]));
}

/* Appends `pieces` x 16 KiB to path (created; O_APPEND when `o_append`), checking after each what another
 * program sees: the size of the last publish point, or -- when `spill` -- every byte once the appends since
 * it passed 64 KiB (at the 5th and 10th piece). Then fsync: every byte. Returns the spills counted. */
static uint64_t spill_burst(const char *path, bool o_append, bool spill) {
    enum { PIECE = 16384, PIECES = 11 };
    static uint8_t buf[PIECE];
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    counters(before);
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC | (o_append ? O_APPEND : 0), 0644));
    uint64_t size = 0, seen = 0;
    for (uint32_t i = 0; i < PIECES; i++) {
        st_fill(buf, 11, size, PIECE);
        st_write_all(fd, buf, PIECE);
        size += PIECE;
        if (spill && size - seen > 65536) seen = size; /* past 64 KiB since the last spill: all in the kernel file */
        other_sees(path, seen, 11, st_fmt("%s append %u of 16 KiB", o_append ? "O_APPEND" : "plain", i + 1));
    }
    OK(fsync(fd));
    other_sees(path, size, 11, "fsync");
    OK(close(fd));
    counters(after);
    return after[DK_C_append_spills] - before[DK_C_append_spills];
}

static void case_spill(const char *dir, bool nospill) {
    const char *limit = getenv("DAXKIT_STAGE_SPILL_BYTES");
    CHECK(nospill == (limit && !strcmp(limit, "0")), "argv[3] \"nospill\" goes with DAXKIT_STAGE_SPILL_BYTES=0");
    CHECK(!limit || !strcmp(limit, "0"), "the spill case checks the 64 KiB default (or 0)");
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "spill");
    uint64_t spills = spill_burst(path, false, !nospill);
    CHECK(spills == (nospill ? 0 : 2), "%llu spills counted, expected %d", (unsigned long long)spills, nospill ? 0 : 2);
    st_path(path, sizeof path, dir, "spill.log");
    uint64_t log_spills = spill_burst(path, true, false);
    CHECK(log_spills == 0, "%llu spills through an O_APPEND descriptor", (unsigned long long)log_spills);
    printf("ok: 11 appends of 16 KiB: %llu spills past 64 KiB, each seen whole at once; O_APPEND: none\n",
           (unsigned long long)spills);
}

static void case_errno(const char *dir) {
    static uint8_t buf[65536];
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "errno");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    int changed = 0;
    for (int i = 0; i < 200; i++) {
        if (i % 16 == 0) CHECK(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED, "mmap");
        st_fill(buf, 5, (uint64_t)i * sizeof buf, sizeof buf);
        errno = 0;
        ssize_t w = write(fd, buf, sizeof buf);
        CHECK(w == (ssize_t)sizeof buf, "append %d: %zd (%s)", i, w, strerror(errno));
        if (errno != 0 && changed++ < 3) fprintf(stderr, "append %d returned %zd but set errno %d (%s)\n", i, w, errno, strerror(errno));
    }
    OK(fsync(fd));
    other_sees(path, 200 * sizeof buf, 5, "fsync");
    OK(close(fd));
    CHECK(changed == 0, "%d successful appends changed errno", changed);
    printf("ok: 200 appends of 64 KiB, errno untouched\n");
}

static void case_readonly(const char *dir) {
    static uint8_t buf[65536];
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "readonly");
    /* written by raw system calls: not through the library */
    int kfd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(kfd >= 0, "create %s: %s", path, strerror(errno));
    st_fill(buf, 9, 0, sizeof buf);
    CHECK(syscall(SYS_write, kfd, buf, sizeof buf) == (long)sizeof buf, "raw write");
    syscall(SYS_close, kfd);
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    counters(before);
    for (int round = 0; round < 3; round++) {
        int fd = OK(open(path, O_RDWR));
        for (int i = 0; i < 16; i++) { /* past DAXKIT_MAP_AFTER_IOS: the mapped path too */
            uint8_t got[4096];
            CHECK(pread(fd, got, sizeof got, (off_t)i * 4096) == (ssize_t)sizeof got, "pread");
            CHECK(st_mismatch(got, 9, (uint64_t)i * 4096, sizeof got) < 0, "pread %d returned other bytes", i);
            st_pwrite_all(fd, got, sizeof got, (off_t)i * 4096); /* the same bytes, in place */
        }
        OK(close(fd));
    }
    counters(after);
    CHECK(after[DK_C_staging_files] == before[DK_C_staging_files] && own_staging_files(dir) == 0,
          "a process that never appends created staging files");
    CHECK(after[DK_C_stage_heap_slots] == before[DK_C_stage_heap_slots], "a process that never appends took heap slots");
    other_sees(path, sizeof buf, 9, "reads and overwrites");
    printf("ok: reads and overwrites only: no staging file, no heap slot\n");
}

static long rss_anon_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f, "/proc/self/status: %s", strerror(errno));
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %ld kB", &kib) == 1) break;
    fclose(f);
    CHECK(kib >= 0, "no RssAnon in /proc/self/status");
    return kib;
}

static void case_many(const char *dir) {
    enum { FILES = 16, PIECES = 6 };
    static uint8_t buf[1 << 20];
    memset(buf, 1, sizeof buf); /* its pages count before the first measure */
    int fds[FILES];
    char paths[FILES][PATH_MAX];
    long before = rss_anon_kib(), peak = before;
    for (int i = 0; i < FILES; i++) {
        st_path(paths[i], sizeof paths[i], dir, st_fmt("many.%d", i));
        fds[i] = OK(open(paths[i], O_WRONLY | O_CREAT | O_TRUNC, 0644));
    }
    for (int p = 0; p < PIECES; p++)
        for (int i = 0; i < FILES; i++) {
            st_fill(buf, 200 + (uint32_t)i, (uint64_t)p << 20, sizeof buf);
            st_write_all(fds[i], buf, sizeof buf);
            { long now = rss_anon_kib(); if (now > peak) peak = now; }
        }
    long grown_mib = (peak - before) >> 10;
    CHECK(grown_mib <= 64 + 8, "%d files with %d MiB of appends each: anonymous memory grew by %ld MiB (heap slots "
          "of all files are bounded to 64 MiB)", FILES, PIECES, grown_mib);
    for (int i = 0; i < FILES; i++) {
        OK(fsync(fds[i]));
        other_sees(paths[i], (uint64_t)PIECES << 20, 200 + (uint32_t)i, "fsync");
        OK(close(fds[i]));
    }
    printf("ok: %d files x %d MiB unpublished: anonymous memory grew by %ld MiB\n", FILES, PIECES, grown_mib);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(120);
    const char *c = argc > 2 ? argv[2] : "";
    pool_only = argc > 3 && !strcmp(argv[3], "pool");
    bool nospill = argc > 3 && !strcmp(argv[3], "nospill");
    const char *heap = getenv("DAXKIT_STAGE_HEAP_BYTES");
    CHECK(pool_only == (heap && !strcmp(heap, "0")), "argv[3] \"pool\" goes with DAXKIT_STAGE_HEAP_BYTES=0");
    if (!strcmp(c, "small")) case_small(dir);
    else if (!strcmp(c, "large")) case_large(dir);
    else if (!strcmp(c, "readonly")) case_readonly(dir);
    else if (!strcmp(c, "errno")) case_errno(dir);
    else if (!strcmp(c, "many")) case_many(dir);
    else if (!strcmp(c, "spill")) case_spill(dir, nospill);
    else FAIL("usage: shim_stage_heap DIR small|large|readonly|many|errno|spill [pool|nospill]");
    return 0;
}

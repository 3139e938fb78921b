/* Description: what the library did on a medium, read from its own live counters and /proc/self/smaps.
 * Runs under libdaxkit.so (tests/shim/run.sh, or the FS-DAX guest's tests); argv[1]: managed directory.
 *   relink clone|copy   posix mode: 4 MiB appended in 64 KiB writes, then fsync. clone: the staged bytes
 *                       moved into the file by FICLONERANGE and none by copy (XFS, XFS-DAX); copy: by copy
 *                       and never by FICLONERANGE (ext4-DAX, tmpfs).
 *   mapsync yes|no      the file's mapping, made by the library, carries VmFlags "sf" (MAP_SYNC) or not.
 *   sync flush|msync    sync or strict mode (DAXKIT_MODE): 64 overwrites of 4 KiB of a published file, each
 *                       durable when it returns. flush: by cache-line flush + fence (persist_flushes +64),
 *                       no msync and no kernel fsync (dax); msync: by msync (page cache). strict: each
 *                       write also recorded in the operation log.
 * Prints "counters: name=value ..." with what it saw. Exit 0 pass, 1 fail, 77 skip. */
#include "shim_test.h"

#define CHUNK_BYTES (64u << 10)
#define APPEND_BYTES (4u << 20)
#define OVERWRITES 64
#define OVERWRITE_BYTES 4096u

static uint64_t counters[DK_C_COUNT];

static void read_counters(void) { CHECK(st_stats(getpid(), counters), "no stats file for this process"); }
#define COUNT(name) counters[DK_C_##name]

static void print_counters(const char *label) {
    printf("counters (%s): relink_clones=%llu relink_clone_bytes=%llu relink_copies=%llu relink_copy_bytes=%llu "
           "persist_flushes=%llu persist_msyncs=%llu fsyncs=%llu fsyncs_kernel=%llu maps=%llu fallbacks=%llu "
           "passthrough=%llu\n",
           label, (unsigned long long)COUNT(relink_clones), (unsigned long long)COUNT(relink_clone_bytes),
           (unsigned long long)COUNT(relink_copies), (unsigned long long)COUNT(relink_copy_bytes),
           (unsigned long long)COUNT(persist_flushes), (unsigned long long)COUNT(persist_msyncs),
           (unsigned long long)COUNT(fsyncs), (unsigned long long)COUNT(fsyncs_kernel), (unsigned long long)COUNT(maps),
           (unsigned long long)COUNT(fallbacks), (unsigned long long)COUNT(passthrough));
    fflush(stdout);
}

/* Appends APPEND_BYTES in CHUNK_BYTES writes and publishes them with fsync; checks the bytes. */
static int append_and_publish(const char *path) {
    static uint8_t buf[CHUNK_BYTES];
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    for (uint32_t off = 0; off < APPEND_BYTES; off += CHUNK_BYTES) {
        st_fill(buf, 7, off, CHUNK_BYTES);
        st_write_all(fd, buf, CHUNK_BYTES);
    }
    OK(fsync(fd));
    for (uint32_t off = 0; off < APPEND_BYTES; off += CHUNK_BYTES) {
        CHECK(pread(fd, buf, CHUNK_BYTES, off) == (ssize_t)CHUNK_BYTES, "pread at %u", off);
        long bad = st_mismatch(buf, 7, off, CHUNK_BYTES);
        CHECK(bad < 0, "byte %ld after the publish differs from what was appended", (long)off + bad);
    }
    return fd;
}

static int case_relink(const char *path, const char *want) {
    int fd = append_and_publish(path);
    read_counters();
    print_counters("relink");
    CHECK(COUNT(append_bytes) == APPEND_BYTES && COUNT(passthrough) == 0,
          "the appends were not all served in user space (append_bytes %llu)", (unsigned long long)COUNT(append_bytes));
    uint64_t moved = COUNT(relink_clone_bytes) + COUNT(relink_copy_bytes);
    CHECK(moved == APPEND_BYTES, "relinked %llu bytes, appended %u", (unsigned long long)moved, APPEND_BYTES);
    if (!strcmp(want, "clone")) {
        CHECK(COUNT(relink_clones) > 0, "no relink by FICLONERANGE on a file system with block sharing");
        CHECK(COUNT(relink_copy_bytes) == 0, "%llu bytes relinked by copy; expected all by FICLONERANGE",
              (unsigned long long)COUNT(relink_copy_bytes));
    } else {
        CHECK(COUNT(relink_clones) == 0, "%llu relinks by FICLONERANGE; expected copy only",
              (unsigned long long)COUNT(relink_clones));
        CHECK(COUNT(relink_copies) > 0, "no relink by copy");
    }
    OK(close(fd));
    printf("ok: relink by %s\n", want);
    return 0;
}

/* The whole of a /proc file (its size is not known in advance). */
static char *read_proc(const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    for (size_t r; (r = fread(text + len, 1, cap - len - 1, f)) > 0;) {
        len += r;
        if (cap - len < 4096) text = realloc(text, cap *= 2);
        CHECK(text != NULL, "out of memory reading %s", path);
    }
    fclose(f);
    text[len] = 0;
    return text;
}

/* True when a mapping of `path` in /proc/self/smaps has VmFlags "sf" (synchronous faults: MAP_SYNC). */
static bool mapped_sync(const char *path, int *mappings) {
    char *text = read_proc("/proc/self/smaps");
    bool in = false, sync = false;
    *mappings = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t n = strlen(line), p = strlen(path);
        bool header = strchr(line, '-') && strchr(line, '-') < strchr(line, ' ') && line[0] != 'V';
        if (header) {
            in = n >= p && !strcmp(line + n - p, path);
            *mappings += in;
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            sync |= strstr(line, " sf") != NULL;
        }
    }
    free(text);
    return sync;
}

static int case_mapsync(const char *path, const char *want) {
    int fd = append_and_publish(path);
    int mappings = 0;
    bool sync = mapped_sync(path, &mappings);
    read_counters();
    print_counters("mapsync");
    printf("mappings of the file: %d, MAP_SYNC (VmFlags sf): %s\n", mappings, sync ? "yes" : "no");
    CHECK(mappings > 0, "the library keeps no mapping of %s", path);
    CHECK(sync == !strcmp(want, "yes"), "MAP_SYNC %s, expected %s", sync ? "yes" : "no", want);
    OK(close(fd));
    printf("ok: MAP_SYNC %s\n", want);
    return 0;
}

static int case_sync(const char *path, const char *want) {
    const char *mode = getenv("DAXKIT_MODE");
    if (!mode || (strcmp(mode, "sync") && strcmp(mode, "strict"))) FAIL("case sync needs DAXKIT_MODE=sync or strict");
    bool strict = !strcmp(mode, "strict");
    int fd = append_and_publish(path);
    read_counters();
    uint64_t flushes0 = COUNT(persist_flushes), msyncs0 = COUNT(persist_msyncs), kernel0 = COUNT(fsyncs_kernel);
    uint64_t logged0 = COUNT(strict_inline) + COUNT(strict_staged);
    static uint8_t buf[OVERWRITE_BYTES];
    for (uint32_t i = 0; i < OVERWRITES; i++) {
        uint64_t off = (uint64_t)i * 3 * OVERWRITE_BYTES;
        st_fill(buf, 9, off, OVERWRITE_BYTES);
        st_pwrite_all(fd, buf, OVERWRITE_BYTES, (off_t)off);
    }
    read_counters();
    print_counters("sync");
    uint64_t flushes = COUNT(persist_flushes) - flushes0, msyncs = COUNT(persist_msyncs) - msyncs0;
    uint64_t kernel = COUNT(fsyncs_kernel) - kernel0, logged = COUNT(strict_inline) + COUNT(strict_staged) - logged0;
    printf("%s mode, %d overwrites: %llu flush+fence, %llu msync, %llu kernel fsync, %llu logged (strict)\n", mode,
           OVERWRITES, (unsigned long long)flushes, (unsigned long long)msyncs, (unsigned long long)kernel,
           (unsigned long long)logged);
    if (strict) CHECK(logged == OVERWRITES, "strict mode logged %llu of %d writes", (unsigned long long)logged, OVERWRITES);
    if (strict) { /* the record makes each write durable; the applied bytes wait for the checkpoint (close) */
        CHECK(flushes == 0 && msyncs == 0 && kernel == 0, "strict mode persisted applied bytes write by write");
    } else if (!strcmp(want, "flush")) {
        CHECK(flushes == OVERWRITES, "%llu persists by flush + fence, expected %d", (unsigned long long)flushes,
              OVERWRITES);
        CHECK(msyncs == 0 && kernel == 0, "system calls made overwrites durable on a dax medium");
    } else {
        CHECK(msyncs == OVERWRITES, "%llu persists by msync, expected %d", (unsigned long long)msyncs, OVERWRITES);
        CHECK(flushes == 0, "flush + fence counted on a page-cache medium");
    }
    for (uint32_t i = 0; i < OVERWRITES; i++) {
        uint64_t off = (uint64_t)i * 3 * OVERWRITE_BYTES;
        CHECK(pread(fd, buf, OVERWRITE_BYTES, (off_t)off) == (ssize_t)OVERWRITE_BYTES, "pread");
        CHECK(st_mismatch(buf, 9, off, OVERWRITE_BYTES) < 0, "overwrite %u reads back wrong", i);
    }
    OK(close(fd));
    if (strict) { /* the checkpoint at close: one fence, or one fdatasync of the written file (page cache) */
        read_counters();
        uint64_t ck = !strcmp(want, "flush") ? COUNT(persist_flushes) - flushes0
                                             : COUNT(persist_msyncs) - msyncs0 + COUNT(fsyncs_kernel) - kernel0;
        printf("strict mode, checkpoint at close: %llu persist by %s\n", (unsigned long long)ck, want);
        CHECK(ck == 1, "the checkpoint persisted the applied bytes %llu times, expected once", (unsigned long long)ck);
    }
    printf("ok: %s mode persists by %s\n", mode, want);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    if (argc < 4) FAIL("usage: dax_counters DIR relink clone|copy | mapsync yes|no | sync flush|msync");
    st_require_library();
    st_watchdog(240);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, argv[2]);
    if (!strcmp(argv[2], "relink")) return case_relink(path, argv[3]);
    if (!strcmp(argv[2], "mapsync")) return case_mapsync(path, argv[3]);
    if (!strcmp(argv[2], "sync")) return case_sync(path, argv[3]);
    FAIL("unknown case '%s'", argv[2]);
}

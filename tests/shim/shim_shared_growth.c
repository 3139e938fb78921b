/* Several processes growing one file without locks, as the kernel allows (review 11, findings 12, 13):
 *
 *   disjoint  4 processes pwrite 64 KiB chunks k*4+i (process i, k = 0..CHUNKS-1, a short pause between)
 *             into an empty file: parallel range downloaders, a multi-process builder of one output. Each
 *             write starts past the end its process knows; daxkit staged zeros for that gap and published
 *             them over the other processes' chunks (138-203 of 800 kept, every mode, every medium; on ext4
 *             in posix mode the writers died of SIGBUS).
 *   oappend   3 processes append 100-byte records through O_APPEND descriptors (a shared log), fsync every
 *             10th when argv[3] is "fsync": on XFS the appends were relinked at the end the process last
 *             saw instead of the kernel's, so two thirds of the records were overwritten (sync mode too).
 *
 * The children are fork()ed before anything is opened (each has its own view of the file); the file is
 * checked with raw system calls, without the library. argv: DIR CASE [fsync]. */
#include "shim_test.h"

#define CHUNK_BYTES 65536
#define CHUNKS 100
#define RECORD_BYTES 100
#define RECORDS 1000

static void disjoint_child(const char *path, int idx) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) _exit(10);
    static char b[CHUNK_BYTES];
    memset(b, 'a' + idx, sizeof b);
    for (int k = 0; k < CHUNKS; k++) {
        if (pwrite(fd, b, sizeof b, (off_t)(k * 4 + idx) * CHUNK_BYTES) != (ssize_t)sizeof b) _exit(11);
        usleep(300);
    }
    _exit(close(fd) ? 12 : 0);
}

static void oappend_child(const char *path, int idx, bool sync_every_10) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) _exit(10);
    char rec[RECORD_BYTES];
    for (int k = 0; k < RECORDS; k++) {
        memset(rec, 'a' + idx, sizeof rec);
        snprintf(rec, 16, "%c%06d", 'a' + idx, k);
        rec[7] = 'a' + idx; /* snprintf's terminator */
        rec[sizeof rec - 1] = '\n';
        if (write(fd, rec, sizeof rec) != (ssize_t)sizeof rec) _exit(11);
        if (sync_every_10 && k % 10 == 9 && fsync(fd) != 0) _exit(13);
        if (k % 100 == 99) usleep(1000);
    }
    _exit(close(fd) ? 12 : 0);
}

/* The whole file, read without the library. */
static char *read_raw(const char *path, long long *size) {
    *size = st_ksize(path);
    if (*size < 0) FAIL("stat %s: %s", path, strerror(errno));
    char *d = malloc((size_t)*size + 1);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    if (!d || fd < 0) FAIL("open %s without the library: %s", path, strerror(errno));
    long long got = 0;
    while (got < *size) {
        long r = syscall(SYS_pread64, fd, d + got, (size_t)(*size - got), (off_t)got);
        if (r <= 0) FAIL("read %s without the library at %lld: %s", path, got, r < 0 ? strerror(errno) : "EOF");
        got += r;
    }
    syscall(SYS_close, fd);
    return d;
}

static void check_disjoint(const char *path) {
    long long size;
    char *d = read_raw(path, &size);
    if (size != 4LL * CHUNKS * CHUNK_BYTES) FAIL("size %lld, want %lld", size, 4LL * CHUNKS * CHUNK_BYTES);
    int bad = 0, zero = 0, first_bad = -1;
    for (int c = 0; c < 4 * CHUNKS; c++) {
        const char *p = d + (size_t)c * CHUNK_BYTES;
        bool ok = true;
        for (int i = 0; i < CHUNK_BYTES && ok; i++) ok = p[i] == 'a' + c % 4;
        if (!ok) {
            bad++;
            zero += p[0] == 0;
            if (first_bad < 0) first_bad = c;
        }
    }
    if (bad) FAIL("%d of %d chunks not the writer's bytes (%d start with zeros; first: chunk %d)", bad, 4 * CHUNKS, zero,
                  first_bad);
    free(d);
}

static void check_oappend(const char *path) {
    long long size;
    char *d = read_raw(path, &size);
    if (size != 3LL * RECORDS * RECORD_BYTES) FAIL("size %lld, want %lld", size, 3LL * RECORDS * RECORD_BYTES);
    int next[3] = {0, 0, 0};
    for (long long r = 0; r < size / RECORD_BYTES; r++) {
        const char *p = d + r * RECORD_BYTES;
        int w = p[0] - 'a';
        if (w < 0 || w > 2 || p[RECORD_BYTES - 1] != '\n') FAIL("record %lld is not a record (torn or overwritten)", r);
        int k = atoi(p + 1);
        if (k != next[w]) FAIL("record %lld: writer %c's record %d, want %d (lost or out of order)", r, 'a' + w, k, next[w]);
        next[w]++;
    }
    for (int w = 0; w < 3; w++)
        if (next[w] != RECORDS) FAIL("writer %c: %d of %d records in the file", 'a' + w, next[w], RECORDS);
    free(d);
}

int main(int argc, char **argv) {
    st_require_library();
    const char *dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "disjoint";
    bool disjoint = !strcmp(which, "disjoint");
    if (!disjoint && strcmp(which, "oappend")) FAIL("unknown case '%s' (disjoint, oappend)", which);
    bool fsyncs = argc > 3 && !strcmp(argv[3], "fsync");
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, disjoint ? "grown.bin" : "shared.log");
    int n = disjoint ? 4 : 3;
    pid_t pids[4];
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0) FAIL("fork: %s", strerror(errno));
        if (pids[i] == 0) {
            if (disjoint) disjoint_child(path, i);
            oappend_child(path, i, fsyncs);
        }
    }
    for (int i = 0; i < n; i++) {
        int status;
        if (waitpid(pids[i], &status, 0) != pids[i]) FAIL("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            FAIL("writer %d: %s %d", i, WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    if (disjoint) check_disjoint(path);
    else check_oappend(path);
    printf("ok: %s%s, %d writers\n", which, fsyncs ? " (fsync every 10)" : "", n);
    return 0;
}

/* Description: strict mode applies two threads' overlapping writes of one file in log order (review 9,
 * finding 3). Recovery replays records in log order, so the file after both writes returned must show the
 * write whose record comes later -- else a crash before the next checkpoint recovers it to the other one,
 * a state the program never saw after both writes completed. Thread T1 writes 'T' over a range; a
 * crash-point hook (test builds) holds it at strict.write.logged (its record durable, nothing applied) and
 * lets thread T2 write 'M' over the same range, waiting up to 300 ms for T2 to return; then T1 applies.
 * T2's record comes after T1's, so the file must show 'M'. Before the fix T2 applied and returned at once
 * and T1's apply landed last: the file showed 'T'. For an inline (100 B) and a staged (4 KiB) write, with
 * the real strict path of libdkcore (up_pwrite, DAXKIT_PERSIST=flush, DAXKIT_STRICT_APPLY=write) on
 * /dev/shm. Each size twice: T1 the main thread (the file's first writer, session 10: writes look for
 * others only once a second thread has written the file) and T2 a new thread; then the other way round --
 * the held write is the new thread's and the first writer's comes second, so it is the first writer that
 * must notice the other. Exit 0 pass, 1 fail, 77 skip.
 * `truncate DIR` (DIR on a page-cache medium, XFS: there a truncate takes the checkpoint lock's read side and
 * is ordered like a write of [len, end of file space); tests/strict/truncate_order.sh): a write against an
 * ftruncate, both orders (finding 3's truncate half). T1's write of [1000, 1100) held at strict.write.logged
 * while T2 truncates to 500: T2 must wait, the file ends at 500 bytes (before the fix: T1's apply after the
 * truncate left 1,100). T1's ftruncate(500) held at strict.truncate.logged while T2 writes [1000, 1100):
 * T2 must wait, the file ends at 1,100 bytes, zeros from 500 (before the fix: 500 -- the write cut by a
 * truncate logged before it). Recovery, replaying in log order, gives those sizes.
 * `delta` (session 29, docs/strict.md "Delta records"): the 4 KiB writes change few bytes of a zero page (T1: 'T'
 * at bytes 100-115, T2: 'M' at 2000-2015), the shape strict mode logs as a delta record when one thread writes the
 * file: with a second writer in the epoch none is taken, and the file must show T2's page exactly -- with
 * DAXKIT_TEST_STRICT_DELTA_MUTANT=1 (a delta whatever the other writer) T2's segments, compared with the zero page,
 * land over T1's applied page: 'T' bytes stay (the mutant must fail). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crashpoint.h"

struct up_slot;
void up_init(void);
int up_adopt(int fd, int oflags, const char *path);
struct up_slot *up_serving(int fd);
ssize_t up_pwrite(struct up_slot *s, int fd, const void *buf, size_t n, off_t off);
ssize_t up_pread(struct up_slot *s, int fd, void *buf, size_t n, off_t off);
int up_ftruncate(struct up_slot *s, int fd, off_t len);

#define T2_WAIT_MS 300

static __thread bool is_t1;
static bool fired, t2_returned_early;
static sem_t go, t2_done;
static struct up_slot *slot;
static int data_fd;
static size_t len;
static off_t where;
static const char *hold_site = "strict.write.logged"; /* where T1 is held */
static off_t t2_truncate = -1;                          /* >= 0: T2 truncates to it instead of writing */
static bool delta_shape;                                /* few bytes of a zero page (`delta`) */

/* T1's ('T') or T2's ('M') bytes: all of them, or (delta_shape) a zero page with 16 of them. */
static void fill(char *b, char c, size_t n) {
    if (!delta_shape) {
        memset(b, c, n);
        return;
    }
    memset(b, 0, n);
    memset(b + (c == 'T' ? 100 : 2000), c, 16);
}

static void write_m(void) {
    static char m[8192];
    fill(m, 'M', sizeof m);
    sem_wait(&go);
    if (t2_truncate >= 0) {
        if (up_ftruncate(slot, data_fd, t2_truncate) != 0) printf("FAIL: T2's ftruncate\n"), exit(1);
    } else if (up_pwrite(slot, data_fd, m, len, where) != (ssize_t)len) {
        printf("FAIL: T2's write\n"), exit(1);
    }
    sem_post(&t2_done);
}

static ssize_t write_t(void) {
    static char t[8192];
    fill(t, 'T', sizeof t);
    is_t1 = true;
    ssize_t w = up_pwrite(slot, data_fd, t, len, where);
    is_t1 = false;
    if (!fired) sem_post(&go); /* not held: let T2 go anyway */
    return w;
}

static ssize_t t1_result;
static void *t2_main(void *arg) {
    (void)arg;
    write_m();
    return NULL;
}
static void *t1_main(void *arg) {
    (void)arg;
    t1_result = write_t();
    return NULL;
}

static void hook(const char *site) {
    if (!is_t1 || fired || strcmp(site, hold_site) != 0) return;
    fired = true;
    sem_post(&go);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += T2_WAIT_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L, ts.tv_nsec %= 1000000000L;
    int rc;
    while ((rc = sem_timedwait(&t2_done, &ts)) != 0 && errno == EINTR) {}
    t2_returned_early = rc == 0; /* else T2 waits for this write's apply (the fix) */
}

/* reversed: T1 (held) is a new thread, T2 the main thread (the file's first writer). */
static int round_of(size_t n, off_t off, bool reversed) {
    len = n, where = off, fired = false, t2_returned_early = false;
    sem_init(&go, 0, 0);
    sem_init(&t2_done, 0, 0);
    pthread_t other;
    ssize_t w;
    if (!reversed) {
        pthread_create(&other, NULL, t2_main, NULL);
        w = write_t();
        if (!t2_returned_early) sem_wait(&t2_done);
        pthread_join(other, NULL);
    } else {
        pthread_create(&other, NULL, t1_main, NULL);
        write_m(); /* waits for the hook's go */
        pthread_join(other, NULL);
        w = t1_result;
    }
    if (w != (ssize_t)n) return printf("FAIL: T1's write returned %zd\n", w), 1;
    if (!fired) return printf("FAIL: T1 never reached strict.write.logged (not a strict write?)\n"), 1;
    char got[8192];
    if (up_pread(slot, data_fd, got, n, off) != (ssize_t)n) return printf("FAIL: read back\n"), 1;
    size_t ms = 0, ts = 0;
    char want[8192];
    fill(want, 'M', sizeof want);
    for (size_t i = 0; i < n; i++) ms += got[i] == want[i], ts += got[i] == 'T';
    printf("%s%zu-byte writes: T2 %s while T1 was between its record and its apply; the file shows %zu 'M' "
           "(T2, logged second) and %zu 'T' (T1, logged first)\n", reversed ? "reversed, " : "", n,
           t2_returned_early ? "returned" : "waited", ms, ts);
    if (ms != n) {
        if (delta_shape) printf("FAIL: the file is not T2's page (logged second): %zu of its bytes differ\n", n - ms);
        printf("FAIL: after both writes returned the file shows T1's bytes, logged first: recovery, replaying "
               "in log order, would give T2's\n");
        return 1;
    }
    return 0;
}

/* T1 writes [1000, 1100) or truncates to 500 (held at hold_site), T2 does the other: the size after both. */
static int truncate_round(bool t1_truncates) {
    if (up_ftruncate(slot, data_fd, 64 << 10) != 0) return printf("FAIL: resize\n"), 1;
    len = 100, where = 1000, fired = false, t2_returned_early = false;
    hold_site = t1_truncates ? "strict.truncate.logged" : "strict.write.logged";
    t2_truncate = t1_truncates ? -1 : 500;
    sem_init(&go, 0, 0);
    sem_init(&t2_done, 0, 0);
    pthread_t t2;
    pthread_create(&t2, NULL, t2_main, NULL);
    static char t[100];
    memset(t, 'T', sizeof t);
    is_t1 = true;
    int rc = t1_truncates ? up_ftruncate(slot, data_fd, 500) : (up_pwrite(slot, data_fd, t, 100, 1000) == 100 ? 0 : -1);
    is_t1 = false;
    if (!fired) sem_post(&go);
    if (!t2_returned_early) sem_wait(&t2_done);
    pthread_join(t2, NULL);
    if (rc != 0) return printf("FAIL: T1's %s\n", t1_truncates ? "ftruncate" : "write"), 1;
    if (!fired) return printf("FAIL: T1 never reached %s\n", hold_site), 1;
    struct stat st;
    if (fstat(data_fd, &st) != 0) return perror("fstat"), 1;
    off_t want = t1_truncates ? 1100 : 500;
    printf("%s logged first, %s second: T2 %s while T1 was between its record and its apply; the file is %lld "
           "bytes (want %lld, what recovery's replay in log order gives)\n",
           t1_truncates ? "ftruncate(500)" : "write [1000, 1100)", t1_truncates ? "write [1000, 1100)" : "ftruncate(500)",
           t2_returned_early ? "returned" : "waited", (long long)st.st_size, (long long)want);
    if (st.st_size != want) return printf("FAIL: the write and the truncate were applied in the other order than logged\n"), 1;
    if (t1_truncates) {
        char got[600];
        if (up_pread(slot, data_fd, got, sizeof got, 500) != (ssize_t)sizeof got) return printf("FAIL: read back\n"), 1;
        for (size_t i = 0; i < sizeof got; i++)
            if (got[i] != (i < 500 ? 0 : 'M')) return printf("FAIL: byte %zu is %d\n", 500 + i, got[i]), 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    bool trunc = argc > 2 && !strcmp(argv[1], "truncate");
    delta_shape = argc > 1 && !strcmp(argv[1], "delta");
    struct stat sb;
    if (!trunc && stat("/dev/shm", &sb) != 0) return printf("SKIP: no /dev/shm\n"), 77;
    char tmpl[] = "/dev/shm/dk-overlap-order.XXXXXX";
    char *dir = trunc ? argv[2] : tmpl;
    if (!trunc && !mkdtemp(dir)) return perror("mkdtemp"), 1;
    setenv("DAXKIT_DIR", dir, 1);
    setenv("DAXKIT_MODE", "strict", 1);
    if (!trunc) setenv("DAXKIT_PERSIST", "flush", 1); /* else the medium's own: the page cache on XFS */
    setenv("DAXKIT_STATS", "0", 1);
    setenv("DAXKIT_STRICT_APPLY", "write", 1);
    if (delta_shape) setenv("DAXKIT_TEST_STRICT_DELTA_UNLOCKED", "1", 1); /* (no lock call through the shim here) */
    unsetenv("DAXKIT_STRICT_INLINE_BYTES"); /* 1 KiB on a flush medium: the 4 KiB write is staged */
    up_init();
    if (trunc) {
        char path[128];
        snprintf(path, sizeof path, "%s/data", dir);
        data_fd = open(path, O_RDWR | O_CREAT, 0644);
        if (data_fd < 0 || ftruncate(data_fd, 64 << 10) != 0) return perror("data file"), 1;
        if (up_adopt(data_fd, O_RDWR, path) != 0 || !(slot = up_serving(data_fd)))
            return printf("FAIL: the file is not served\n"), 1;
        static char warm[8192];
        if (up_pwrite(slot, data_fd, warm, sizeof warm, 0) != (ssize_t)sizeof warm)
            return printf("FAIL: first write\n"), 1;
        dk_crashpoint_set_hook(hook);
        int fails = truncate_round(false) + truncate_round(true);
        dk_crashpoint_set_hook(NULL);
        return fails ? 1 : 0;
    }
    /* One file for the two rounds in order; one fresh file for each reversed round (a file a second thread
     * has written stays marked for good, so the first writer's own look is tested on a file of its own). */
    static const char *const names[] = {"data", "rev100", "rev4096"};
    int fails = 0;
    for (unsigned i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        data_fd = open(path, O_RDWR | O_CREAT, 0644);
        if (data_fd < 0 || ftruncate(data_fd, 64 << 10) != 0) return perror("data file"), 1;
        if (up_adopt(data_fd, O_RDWR, path) != 0 || !(slot = up_serving(data_fd)))
            return printf("FAIL: the file is not served\n"), 1;
        static char warm[8192]; /* by the main thread: the file's first writer */
        if (up_pwrite(slot, data_fd, warm, sizeof warm, 0) != (ssize_t)sizeof warm)
            return printf("FAIL: first write\n"), 1;
        dk_crashpoint_set_hook(hook);
        if (delta_shape) fails += round_of(4096, 4096, i != 0); /* in the warm bytes: in place, mapped */
        else if (i == 0) fails += round_of(100, 1000, false) + round_of(4096, 16384, false);
        else fails += round_of(i == 1 ? 100 : 4096, i == 1 ? 1000 : 16384, true);
        dk_crashpoint_set_hook(NULL);
    }
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return fails ? 1 : 0;
}

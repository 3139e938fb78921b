/* Description: glibc's own open inside the library's free() takes no number of the program's (session 23).
 * The first time in a process that a thread's malloc arena gives the top of its heap back, glibc opens
 * /proc/sys/vm/overcommit_memory (malloc-sysdep.h: check_may_shrink_heap, by __open_nocancel: no preload sees
 * it), reads a byte and closes it -- at the lowest free number. The library frees its staging heap buffers
 * (upath/stage.c) in the program's threads; a thread between its close(n) and its open then had its calls
 * through n reach that file: shim_fd_lifetime_replace_posix_hugetmpfs read "0\n" (2 bytes) from its 1 MiB data
 * file, fstat said size 0, pread 0 bytes (2-4 of 60 runs with session 22's spill, whose 64 KiB buffers made
 * the appending threads allocate their own). Such a free is a window of the library's own opens now
 * (common/internal_fd.h: dk_ifd_free), which the program's calls on a number it does not serve wait for.
 * Run by heap_free_window.sh under strace, which holds glibc's open of that file for 400 ms after the kernel
 * gave it its number (inject delay_exit), so that the race is provoked every run:
 *   - the main thread makes a file d (its lowest free number n); a second thread opens a log O_APPEND and
 *     appends 4 KiB records until 64 KiB are staged (a heap buffer grown by doubling in that thread's arena,
 *     above a 256 KiB block of the thread's own, freed then); malloc's settings (mallopt here; tcache off by
 *     GLIBC_TUNABLES in the script: a small chunk cached at the top held the trim back to the thread's exit)
 *     make a free of that growth the arena's first trim;
 *   - the main thread closes n; the other thread appends 17 more records: the 64 KiB buffer is freed when
 *     the buffer grows -- the first trim, glibc's open at n;
 *   - the main thread waits (raw readlinkat of /proc/self/fd/n) until n names glibc's file, then calls
 *     fstat(n) -- which must fail with EBADF, as the kernel alone would answer: the number is closed for the
 *     program -- and opens d again, which must get n (the lowest-number rule).
 * Skips (77) when n never names that file (another glibc, or its check already made): nothing to provoke.
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip. */
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>

#include "shim_test.h"

#define REC 4096
#define STAGED_BYTES (64 << 10) /* the log's heap buffer before `go`: 4, 8, ... 64 KiB (stage.c: heap_cap_for) */
static const char glibc_file[] = "/proc/sys/vm/overcommit_memory";

static char log_path[PATH_MAX];
static sem_t staged, go;
static volatile int last_append_done;

/* The second thread (header): 64 KiB staged above the freed 256 KiB block, then after `go` 17 more records --
 * the buffer grows to 128 KiB (carved from that free space) and the 64 KiB one at the top is freed. */
static void *appender(void *arg) {
    (void)arg;
    static char rec[REC];
    memset(rec, 'a', sizeof rec);
    int fd = OK(open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644));
    char *below = malloc(256 << 10);
    CHECK(below != NULL, "malloc");
    memset(below, 'b', 256 << 10);
    for (int i = 0; i < STAGED_BYTES / REC; i++) CHECK(write(fd, rec, REC) == REC, "append %d", i);
    free(below);
    sem_post(&staged);
    sem_wait(&go);
    for (int i = 0; i <= STAGED_BYTES / REC; i++) CHECK(write(fd, rec, REC) == REC, "append %d after go", i);
    __atomic_store_n(&last_append_done, 1, __ATOMIC_RELEASE);
    OK(close(fd));
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: shim_heap_free_window MANAGED_DIR");
    st_watchdog(60);
    /* Blocks up to 1 MiB from the arenas, not mappings of their own (the appender's 256 KiB, the 128 KiB heap
     * buffer), and a heap trimmed as soon as 64 KiB are free at its top, all of them given back (the defaults
     * move with malloc's mmap threshold and keep 128 KiB): the first trim comes at a free of the growth. */
    CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 10) == 1 &&
              mallopt(M_TOP_PAD, 0) == 1,
          "mallopt");
    char d_path[PATH_MAX], target[PATH_MAX];
    st_path(d_path, sizeof d_path, argv[1], "d");
    st_path(log_path, sizeof log_path, argv[1], "log");
    static char block[8192];
    memset(block, 'd', sizeof block);
    int n = OK(open(d_path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_pwrite_all(n, block, sizeof block, 0);
    OK(fsync(n));
    sem_init(&staged, 0, 0);
    sem_init(&go, 0, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, appender, NULL) == 0, "pthread_create");
    sem_wait(&staged);
    OK(close(n));
    sem_post(&go);
    bool seen = false;
    for (int i = 0; i < 20000 && !seen; i++) { /* 20 s at most; glibc holds the number 400 ms */
        st_fd_target(n, target, sizeof target);
        seen = !strcmp(target, glibc_file);
        if (!seen && __atomic_load_n(&last_append_done, __ATOMIC_ACQUIRE)) break;
        if (!seen) usleep(1000);
    }
    if (!seen) {
        pthread_join(t, NULL);
        SKIP("number %d never named %s while the last append freed the log's 64 KiB heap buffer (another "
             "glibc, or its check made before): nothing to provoke",
             n, glibc_file);
    }
    struct stat st;
    errno = 0;
    int r = fstat(n, &st);
    int e = errno;
    int m = open(d_path, O_RDWR);
    pthread_join(t, NULL);
    CHECK(r == -1 && e == EBADF,
          "fstat(%d) of the number the program closed, while glibc's free held it for %s: %d (errno %d, size "
          "%ld) -- the program reached glibc's file",
          n, glibc_file, r, e, r == 0 ? (long)st.st_size : -1L);
    CHECK(m == n, "open after close(%d) returned %d: glibc's file held the lowest number", n, m);
    OK(close(m));
    printf("ok: fstat(%d) while glibc's free held the number: EBADF; the reopen got %d\n", n, m);
    return 0;
}

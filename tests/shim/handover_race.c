/* Description: two per-file handovers that take no lock since session 20 survive their race. A crash-point
 * hook (test builds) holds thread T1 at SITE, with the thing handed over in its hands, while thread T2 stages
 * a file B, publishes and frees it at its close and stages a file C; the hook waits for T2 (10 s at most),
 * then T1 goes on. Afterwards P (staged before), A (T1's), B and C must each hold exactly their own bytes.
 *   spare (SITE stage.heap_alloc.spare_locked, upath/stage.c: heap_alloc, heap_spare_put): T1 has exchanged
 *     the staging heap's spare buffer out for A; T2's B takes a new buffer, gives it back into the slot at
 *     its close, and C takes it again. A handover that reads the slot and clears it in two steps gives T1's
 *     buffer to T2 as well (C then holds A's bytes, or the slot's header); one under a mutex held across the
 *     take (sessions 13-19) makes T2 wait for T1: the hook's wait times out.
 *   sizerec (SITE sizerec.slot_take.locked, upath/sizerec.c: slot_take): T1's close of A (8 KiB staged: the
 *     relink crosses a page and takes a published-size record slot) has set its slot's bit; T2's close of B
 *     takes another slot, relinks and gives it back. Under the records' mutex (sessions 9-19) T2 waited for T1.
 * With the real staging path of libdkcore on /dev/shm, posix mode, DAXKIT_CACHE_FILES=0 (a closed file is
 * freed at once: its buffer goes back at its close). argv[1]: the case. Exit 0 pass, 1 fail, 77 skip. */
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
#include "upath/upath.h"

#define BYTES 8192

static char dir[] = "/dev/shm/dk-handover-race.XXXXXX";
static const char *site_held; /* SITE */
static __thread bool is_t1;
static bool fired, t2_failed;
static bool t2_done_in_time;
static sem_t go, done;
static int c_fd = -1;

static void path_of(char *out, size_t n, char name) { snprintf(out, n, "%s/%c", dir, name); }

/* Opens, adopts and writes BYTES of `name`'s letter; the descriptor stays open. -1 on failure (said). */
static int stage_file(char name) {
    char path[256], buf[BYTES];
    path_of(path, sizeof path, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return perror(path), -1;
    if (up_adopt(fd, O_WRONLY | O_CREAT | O_TRUNC, AT_FDCWD, path) != 0) return printf("FAIL: %s not adopted\n", path), -1;
    struct up_slot *s = up_serving(fd);
    if (!s) return printf("FAIL: %s is not served\n", path), -1;
    memset(buf, name, sizeof buf);
    ssize_t w = up_write(s, fd, buf, sizeof buf);
    up_served_end();
    if (w != BYTES) return printf("FAIL: the write to %c returned %zd\n", name, w), -1;
    return fd;
}

static bool close_file(int fd, char name) {
    if (up_close_managed(fd) == 0) return true;
    printf("FAIL: the close of %c: %s\n", name, strerror(errno));
    return false;
}

static void *t2_main(void *arg) {
    (void)arg;
    while (sem_wait(&go) != 0) {}
    int b = stage_file('B');
    t2_failed = b < 0 || !close_file(b, 'B');
    if (!t2_failed) {
        c_fd = stage_file('C');
        t2_failed = c_fd < 0;
    }
    sem_post(&done);
    return NULL;
}

static void hook(const char *site) {
    if (!is_t1 || fired || strcmp(site, site_held) != 0) return;
    fired = true;
    sem_post(&go);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    int rc;
    while ((rc = sem_timedwait(&done, &until)) != 0 && errno == EINTR) {}
    t2_done_in_time = rc == 0;
}

/* The file holds BYTES of its letter. */
static bool holds_own(char name) {
    char path[256], got[BYTES + 1];
    path_of(path, sizeof path, name);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? pread(fd, got, sizeof got, 0) : -1;
    if (fd >= 0) close(fd);
    if (n != BYTES) return printf("FAIL: %c is %zd bytes, %d due\n", name, n, BYTES), false;
    for (ssize_t i = 0; i < n; i++)
        if (got[i] != name)
            return printf("FAIL: %c's byte %zd is '%c' (another file's staged bytes)\n", name, i, got[i]), false;
    return true;
}

int main(int argc, char **argv) {
    const char *cases[][2] = {{"spare", "stage.heap_alloc.spare_locked"}, {"sizerec", "sizerec.slot_take.locked"}};
    for (unsigned i = 0; argc > 1 && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i][0]) == 0) site_held = cases[i][1];
    if (!site_held) return printf("SKIP: usage: handover_race spare|sizerec\n"), 77;
    struct stat sb;
    if (stat("/dev/shm", &sb) != 0) return printf("SKIP: no /dev/shm\n"), 77;
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    setenv("DAXKIT_DIR", dir, 1);
    setenv("DAXKIT_STATS", "0", 1);
    setenv("DAXKIT_CACHE_FILES", "0", 1);
    up_init();
    sem_init(&go, 0, 0), sem_init(&done, 0, 0);
    int fails = 0;
    int p = stage_file('P'); /* its buffer becomes the spare at its close */
    if (p < 0 || !close_file(p, 'P')) return 1;
    pthread_t t2;
    if (pthread_create(&t2, NULL, t2_main, NULL) != 0) return printf("FAIL: pthread_create\n"), 1;
    dk_crashpoint_set_hook(hook);
    is_t1 = true;
    int a = stage_file('A');
    bool a_closed = a >= 0 && close_file(a, 'A'); /* (its publish takes a record slot) */
    is_t1 = false;
    if (!fired) {
        printf("FAIL: A's staging and close never reached %s\n", site_held);
        fails = 1;
        sem_post(&go);
    }
    if (fired && !t2_done_in_time) {
        printf("FAIL: T2's staging and close waited for T1 at %s (10 s): a lock is held across the take\n", site_held);
        fails = 1;
    }
    pthread_join(t2, NULL); /* (after a time-out T2 finishes once T1 let go) */
    dk_crashpoint_set_hook(NULL);
    if (!a_closed || t2_failed) fails = 1;
    if (c_fd >= 0 && !close_file(c_fd, 'C')) fails = 1;
    for (const char *n = "PABC"; *n; n++)
        if (!holds_own(*n)) fails = 1;
    if (!fails) printf("PASS: A, B, C and P hold their own %d bytes; T2 staged twice while T1 was held at %s\n", BYTES, site_held);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return fails;
}

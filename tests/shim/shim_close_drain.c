/* Description: a close's publish point after its drain publishes what a call inside the descriptor staged
 * meanwhile -- also now that a close with nothing to publish takes no file mutex (upath.c: close_publish,
 * counter close_idle; session 19).
 *
 * drain (test builds, posix mode): two cues, DAXKIT_TEST_CRASH=raise:10:upath.write.begin:1,raise:12:upath.close.closing:1.
 * A thread's write of BYTES to a new file is stopped at its start (inside the call, nothing staged yet: SIGUSR1);
 * its handler lets the main thread close the descriptor and waits until that close has closed the entry
 * (SIGUSR2 on the main thread at upath.close.closing) -- the close's first publish found nothing then. The write
 * then stages its bytes and returns, the close's drain ends, and the close's publish point must put them into
 * the file: right after close() the kernel's file (raw system calls) holds exactly the BYTES written. A close
 * that judged "nothing to publish" before its drain left them staged until exit: size 0 (stage), or the
 * extension step's size (DAXKIT_APPEND=extend).
 * idle: a write, fsync (which publishes), close: the close has nothing to publish and counts close_idle; the
 * kernel's file holds the bytes; a second file written and closed without an fsync holds its bytes right
 * after the close (its first publish step, then an idle second one).
 * record_slots: 20 files of BYTES written and closed one after another (each publish crosses a page boundary:
 * a published-size record around its relink): a closed file gives its record's slot back at its close, so the
 * process's record file (DIR/.daxkit/p<pid>-*.sizes, sparse, a page allocated per slot at its first use) has
 * at most 2 pages allocated -- not one per file still on the closed list (session 19; before, tar xf made 60
 * fallocates of that file).
 * argv[1]: managed directory; argv[2]: drain|idle|record_slots. Exit 0 pass, 1 fail, 77 skip. */
#include <glob.h>
#include <pthread.h>
#include <semaphore.h>

#include "shim_test.h"

enum { BYTES = 6000 }; /* over a page boundary: the stage strategy's relink takes a size record */
static int w_fd;
static sem_t w_stopped, close_closing;
static volatile sig_atomic_t h_write, h_close;
static ssize_t w_ret;
static char buf[BYTES];

static void sem_wait_all(sem_t *s) {
    while (sem_wait(s) != 0) {}
}

/* The writer, stopped at its write's start: the main thread closes meanwhile. */
static void on_write_begin(int sig) {
    (void)sig;
    int e = errno;
    h_write = 1;
    sem_post(&w_stopped);
    sem_wait_all(&close_closing);
    errno = e;
}

/* The main thread's close, its entry closed (its first publish step done): the writer goes on. */
static void on_close_closing(int sig) {
    (void)sig;
    h_close = 1;
    sem_post(&close_closing);
}

static void *writer(void *arg) {
    (void)arg;
    w_ret = write(w_fd, buf, BYTES);
    return NULL;
}

static void on_signal(int signo, void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    CHECK(sigaction(signo, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
}

/* The kernel's file (raw system calls: no library) holds exactly buf. */
static void check_kernel_file(const char *path, const char *when) {
    struct stat st;
    CHECK(syscall(SYS_stat, path, &st) == 0, "stat %s: %s", path, strerror(errno));
    CHECK(st.st_size == BYTES, "%s: the kernel's file holds %lld bytes, not the %d written (a lost publish)", when,
          (long long)st.st_size, BYTES);
    char got[BYTES];
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(fd >= 0 && syscall(SYS_pread64, fd, got, BYTES, 0) == BYTES, "read %s back", path);
    syscall(SYS_close, fd);
    CHECK(st_mismatch(got, 19, 0, BYTES) < 0, "%s: the kernel's file differs from what was written", when);
}

static int drain_case(const char *dir) {
    const char *cue = getenv("DAXKIT_TEST_CRASH");
    const char *want = "raise:10:upath.write.begin:1,raise:12:upath.close.closing:1";
    if (!cue || strcmp(cue, want) != 0) SKIP("needs DAXKIT_TEST_CRASH=%s (a test build)", want);
    const char *mode = getenv("DAXKIT_MODE");
    if (mode && strcmp(mode, "posix") != 0) SKIP("posix mode's (sync and strict publish inside the write)");
    st_watchdog(30);
    sem_init(&w_stopped, 0, 0);
    sem_init(&close_closing, 0, 0);
    on_signal(SIGUSR1, on_write_begin);
    on_signal(SIGUSR2, on_close_closing);
    char path[4096];
    st_path(path, sizeof path, dir, "drained");
    w_fd = OK(open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer, NULL) == 0, "pthread_create");
    sem_wait_all(&w_stopped);
    int rc = close(w_fd); /* waits at its drain for the write */
    int e = errno;
    check_kernel_file(path, "right after close()"); /* (the writer's write has returned: the drain waited) */
    pthread_join(t, NULL);
    printf("drain: the write returned %zd, close %d; cues %d %d\n", w_ret, rc, (int)h_write, (int)h_close);
    CHECK(h_write && h_close, "a cue was not reached (DAXKIT_TEST_CRASH, a test build?)");
    CHECK(rc == 0, "close: %s", strerror(e));
    CHECK(w_ret == BYTES, "the write returned %zd, not %d", w_ret, BYTES);
    printf("OK\n");
    return 0;
}

static int idle_case(const char *dir) {
    char path[4096], path2[4096];
    st_path(path, sizeof path, dir, "idle");
    st_path(path2, sizeof path2, dir, "idle2");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
    st_write_all(fd, buf, BYTES);
    OK(fsync(fd));
    uint64_t idle0 = st_counter(DK_C_close_idle);
    OK(close(fd));
    uint64_t idle = st_counter(DK_C_close_idle) - idle0;
    check_kernel_file(path, "after write, fsync, close");
    fd = OK(open(path2, O_WRONLY | O_CREAT | O_EXCL, 0644));
    st_write_all(fd, buf, BYTES);
    OK(close(fd));
    check_kernel_file(path2, "after write, close");
    printf("idle: close_idle +%llu at the close after the fsync\n", (unsigned long long)idle);
    CHECK(idle == 1, "the close with nothing to publish counted close_idle +%llu, not +1", (unsigned long long)idle);
    printf("OK\n");
    return 0;
}

static int record_slots_case(const char *dir) {
    enum { FILES = 20 };
    for (int i = 0; i < FILES; i++) {
        char path[4096], name[32];
        snprintf(name, sizeof name, "rec%02d", i);
        st_path(path, sizeof path, dir, name);
        int fd = OK(open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
        st_write_all(fd, buf, BYTES);
        OK(close(fd));
        check_kernel_file(path, "after write, close");
    }
    char pat[4200];
    snprintf(pat, sizeof pat, "%s/.daxkit/p%d-*.sizes", dir, (int)getpid());
    glob_t g;
    CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1, "no single record file %s", pat);
    struct stat st;
    CHECK(syscall(SYS_stat, g.gl_pathv[0], &st) == 0, "stat %s: %s", g.gl_pathv[0], strerror(errno));
    long long pages = (long long)st.st_blocks * 512 / 4096;
    printf("record_slots: %d files written and closed; the record file has %lld page(s) allocated\n", FILES, pages);
    globfree(&g);
    CHECK(pages >= 1 && pages <= 2, "the record file has %lld pages allocated after %d files closed one after another, "
          "want 1-2 (a closed file keeps no record slot)", pages, FILES);
    printf("OK\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) SKIP("usage: shim_close_drain DIR drain|idle|record_slots");
    st_fill(buf, 19, 0, BYTES);
    if (!strcmp(argv[2], "drain")) return drain_case(argv[1]);
    if (!strcmp(argv[2], "idle")) return idle_case(argv[1]);
    if (!strcmp(argv[2], "record_slots")) return record_slots_case(argv[1]);
    SKIP("unknown case %s", argv[2]);
}

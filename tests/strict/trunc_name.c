/* Description: strict mode, truncate(path, len) by name racing another thread's strict write of the same file,
 * then a crash (issue 3, item 1: a truncate is a logged metadata operation; session 25's open item 1). Run under
 * LD_PRELOAD="libdaxkit.so libdk_trunc_window.so" by trunc_name.sh, on DIR/f (12,288 bytes of 'a', made without
 * the library). The interposer (trunc_window.c) calls window_hook() inside the library's truncate by name, just
 * before the kernel's truncate, and the hook lets thread W go and waits up to 300 ms for it:
 *   done        W (its descriptor opened before) pwrites 4 KiB of 'W' at 8 KiB, and returns inside the window
 *               when nothing holds it out; then the kernel truncates to 10 bytes. After both returned the
 *               program copies the file as it sees it to EXPECT (outside the managed directory) and kills itself
 *               (SIGKILL): every operation completed, so recovery must give exactly that file. trunc_name.sh runs
 *               it with DAXKIT_STRICT_MARKS=0 -- every record since the last checkpoint replayed, what a power
 *               loss replays (docs/strict.md). Before the fix W's record, logged after the truncate's checkpoint
 *               and before the unlogged kernel truncate, replayed over the truncated file: 12,288 bytes where the
 *               program last saw 10.
 *   done-open   the same, W opening the file inside the window (the process had no descriptor of it when the
 *               truncate began).
 *   append      W appends 100 bytes of 'A' through an O_APPEND descriptor; the library raises SIGUSR1 on W
 *               once the append's record is durable (DAXKIT_TEST_CRASH=raise:10:strict.write.logged:1) and the
 *               handler holds W there for good; the hook returns when W is held (or after 300 ms), the kernel
 *               truncates, and the program kills itself with W's append in flight. Recovery (completion marks
 *               on: only that record replays) may make the append done or not: 10 bytes, or 10 + the 100 'A'
 *               at offset 10 -- never the 'A' at 12,288 behind a hole (before the fix: the record named the end
 *               before the truncate).
 *   fappend     W appends 100 bytes of 'A' through an O_APPEND descriptor while the main thread's ftruncate(10)
 *               is between its record and its kernel call (DAXKIT_TEST_CRASH=raise:10:strict.truncate.logged:1:
 *               the handler is the window), both return, the program copies the file to EXPECT and kills
 *               itself (DAXKIT_STRICT_MARKS=0, as done). Before the fix W chose the end before the kernel's cut
 *               and its record named it (12,288) while its apply went to the end after the cut (10): recovery
 *               12,388 bytes, the program saw 110.
 *   otrunc      as done, but the main thread truncates by an open with O_TRUNC and writes 10 bytes of 'a' through
 *               it (the same window: the interposer's open): before the fix the open was no record either (a
 *               checkpoint first, review 7's finding 9), and W's write was replayed over it.
 *   link, link-open  (session 27; review 26, #1's other half) as done and otrunc, through a symlink outside the
 *               managed directory (EXPECT.link -> DIR/f): the log was found from the link's directory -- none --
 *               so nothing was logged or held, and W's write replayed over the truncated file (12,288 bytes).
 *   swap, swap-open  (session 27; review 26, #9) no W: the main thread truncates f to 10 by name (by an open
 *               with O_TRUNC, writing 10 bytes of 'a'), and at the cue strict.truncate_name.before_hold (DAXKIT_
 *               TEST_CRASH=raise:10:strict.truncate_name.before_hold:1: the library has stat'ed the name and
 *               waits for the hold) the handler exchanges f with DIR/g (5,000 bytes of 'b', made here without the
 *               library) by renameat2(RENAME_EXCHANGE), as another process could: the kernel then cuts the file
 *               that was g. The record named the file stat'ed before (now at g): on tmpfs, without identities,
 *               recovery cut g to 10 bytes (0), a file the program never truncated. The script checks g
 *               (12,288 bytes of 'a') and f (what the program saw).
 * Exit: killed (the script checks), 2 set-up failed. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 300
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static char path[4096], name[4096], gpath[4096]; /* name: what the main thread truncates (f, or a symlink) */
static const char *mode;
static int wfd = -1;
static volatile int go, written, logged;

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static void die(const char *what) {
    dprintf(1, "trunc_name: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void window_hook(const char *p);

/* append: W's append record is durable, nothing applied -- W stays here until the process is killed. fappend:
 * the main thread's ftruncate record is durable, the kernel's ftruncate not made -- the window. */
static void on_usr1(int sig) {
    (void)sig;
    if (!strncmp(mode, "swap", 4)) { /* another process's rename, between the library's stat and its hold */
        int e = errno;
        if (syscall(SYS_renameat2, AT_FDCWD, path, AT_FDCWD, gpath, RENAME_EXCHANGE) != 0) die("renameat2");
        say("trunc_name: f and g exchanged inside the library's truncate\n");
        errno = e;
        return;
    }
    if (!strcmp(mode, "fappend")) {
        window_hook(path);
        return;
    }
    __atomic_store_n(&logged, 1, __ATOMIC_SEQ_CST);
    for (;;) pause();
}

static void *w_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST)) {}
    if (wfd < 0 && (wfd = open(path, O_RDWR)) < 0) die("W: open");
    static char buf[4096];
    if (!strcmp(mode, "append") || !strcmp(mode, "fappend")) {
        memset(buf, 'A', 100);
        if (write(wfd, buf, 100) != 100) die("W: append");
    } else {
        memset(buf, 'W', sizeof buf);
        if (pwrite(wfd, buf, sizeof buf, 8192) != (ssize_t)sizeof buf) die("W: pwrite");
    }
    __atomic_store_n(&written, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static bool append_mode(void) { return !strcmp(mode, "append"); }

static int hooked;
static void window_hook(const char *p) {
    if (strcmp(p, name) != 0 || hooked++) return;
    __atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
    volatile int *cue = append_mode() ? &logged : &written;
    long t0 = now_ms();
    while (!__atomic_load_n(cue, __ATOMIC_SEQ_CST) && now_ms() - t0 < WAIT_MS) sched_yield();
    say(__atomic_load_n(cue, __ATOMIC_SEQ_CST) ? "trunc_name: W's operation got in between the library's start of the "
                                                 "truncate and the kernel's truncate\n"
                                               : "trunc_name: W was held out of the truncate's window\n");
}

int main(int argc, char **argv) {
    if (argc < 4)
        return fprintf(stderr, "usage: trunc_name done|done-open|append|fappend|otrunc|link|link-open|swap|swap-open "
                               "DIR EXPECT\n"), 2;
    mode = argv[1];
    snprintf(path, sizeof path, "%s/f", argv[2]);
    snprintf(name, sizeof name, "%s", path);
    snprintf(gpath, sizeof gpath, "%s/g", argv[2]);
    bool link = !strncmp(mode, "link", 4), swap = !strncmp(mode, "swap", 4);
    if (link) { /* a symlink outside the managed directory, made without the library */
        snprintf(name, sizeof name, "%s.link", argv[3]);
        unlink(name);
        if (syscall(SYS_symlinkat, path, AT_FDCWD, name) != 0) die("symlink");
    }
    if (swap) { /* g: 5,000 bytes of 'b', made without the library */
        static char b[5000];
        memset(b, 'b', sizeof b);
        int g = (int)syscall(SYS_openat, AT_FDCWD, gpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (g < 0 || syscall(SYS_write, g, b, sizeof b) != (long)sizeof b || syscall(SYS_fsync, g) != 0) die("g");
        syscall(SYS_close, g);
        if (!getenv("DAXKIT_TEST_CRASH")) return say("trunc_name: needs DAXKIT_TEST_CRASH\n"), 2;
        /* f read once through the library: the root's medium is probed (tmpfs: records carry no identity) */
        char c;
        int p = open(path, O_RDONLY);
        if (p < 0 || read(p, &c, 1) != 1) die("open f, read");
    }
    const char *op = !strcmp(mode, "link") ? "done" : !strcmp(mode, "link-open") ? "otrunc"
                     : !strcmp(mode, "swap-open")                            ? "otrunc"
                                                                             : mode;
    void (**hookp)(const char *) = dlsym(RTLD_DEFAULT, "dk_trunc_window_hook");
    if (!hookp) return say("trunc_name: no interposer (libdk_trunc_window.so not preloaded)\n"), 2;
    bool append = !strcmp(mode, "append");
    if ((append || !strcmp(mode, "fappend")) && !getenv("DAXKIT_TEST_CRASH")) return say("trunc_name: needs DAXKIT_TEST_CRASH\n"), 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    bool w_appends = append || !strcmp(mode, "fappend");
    if (!swap && strcmp(mode, "done-open") != 0 && (wfd = open(path, w_appends ? O_WRONLY | O_APPEND : O_RDWR)) < 0)
        die("open");
    int mfd = !strcmp(mode, "fappend") ? open(path, O_RDWR) : -1; /* (main's own descriptor, for ftruncate) */
    pthread_t w;
    if (!swap && pthread_create(&w, NULL, w_main, NULL) != 0) return 2;
    if (!swap) __atomic_store_n(hookp, window_hook, __ATOMIC_RELEASE);
    if (mfd >= 0) {
        if (ftruncate(mfd, 10) != 0) die("ftruncate");
    } else if (!strcmp(op, "otrunc")) {
        int t = open(name, O_WRONLY | O_TRUNC); /* (kept open: a close is a checkpoint) */
        if (t < 0 || write(t, "aaaaaaaaaa", 10) != 10) die("open with O_TRUNC, write");
    } else if (truncate(name, 10) != 0) {
        die("truncate");
    }
    __atomic_store_n(hookp, NULL, __ATOMIC_RELEASE);
    say("trunc_name: truncate(f, 10) returned\n");
    if (append) kill(getpid(), SIGKILL); /* W's append in flight */
    if (!swap) pthread_join(w, NULL);
    /* Both returned: the file as the program sees it is what recovery must give. */
    int rfd = open(path, O_RDONLY);
    struct stat st;
    if (rfd < 0 || fstat(rfd, &st) != 0) die("open to read back");
    static char got[1 << 16];
    ssize_t n = pread(rfd, got, sizeof got, 0);
    if (n != st.st_size) die("read back");
    int e = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (e < 0 || write(e, got, (size_t)n) != n || fsync(e) != 0) die("EXPECT");
    dprintf(1, "trunc_name: the program sees %lld bytes, %s at 8 KiB\n", (long long)st.st_size,
            n > 8192 && got[8192] == 'W' ? "W's" : "none");
    kill(getpid(), SIGKILL);
    return 2;
}

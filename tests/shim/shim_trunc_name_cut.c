/* Description: truncate(path, len) by name shrinking a file this process has open, while another thread overwrites
 * it past the new end through a mapped descriptor (session 27, trunc26's note). Between the kernel's truncate and
 * the library's look at the file afterwards (up_truncated) the thread's write still saw the old size and mapping:
 * stored into the mapping past the new end -- SIGBUS on tmpfs and DAX, whose page is gone -- where the kernel
 * extends the file. Now the truncate holds the file as an ftruncate does (its mutex and guard) and takes the new
 * size before it returns.
 *
 *   shim_trunc_name_cut DIR cut|locked|otrunc
 *     cut     thread W's pwrite of 4 KiB of 'W' at 4 KiB runs at the cue shim.truncate_name.cut (the kernel has cut
 *             the file to 10 bytes; the library's truncate is done but for up_truncated). DAXKIT_TEST_CRASH=
 *             raise:10:shim.truncate_name.cut:1
 *     locked  the same at upath.truncate_inode.locked (the file held, before the kernel's cut): W waits until the
 *             truncate is done, then writes. DAXKIT_TEST_CRASH=raise:10:upath.truncate_inode.locked:1
 *     otrunc  the truncate is an open with O_TRUNC, then 10 bytes of 'a' written through it; W writes at the cue
 *             shim.open.adopting (the kernel's open done, before the adoption): DAXKIT_TEST_CRASH=
 *             raise:10:shim.open.adopting:3 (this program's third open). Before: SIGBUS (sync, strict), or W's
 *             write lost (posix: the file 10 bytes).
 *     otrunc_link  the open with O_TRUNC is made through a symbolic link outside the managed directory (beside it on
 *             the medium), no cue: W writes after the open returned. What holds for such an open (docs/guarantees.md,
 *             "Truncating a file open here"): the file is cut, the library's view of it (W's descriptor) takes the
 *             new size at the open's adoption, and strict mode logs the truncate (strict_meta +1: the file's root is
 *             found through the link) and holds its root's strict writes out across the kernel's open. What does
 *             not: the file is not held across the kernel's open -- another thread's write past the new end inside
 *             that window is the SIGBUS or lost write `otrunc` shows (names outside the roots are not looked at).
 * The file (12,288 bytes of 'a', mapped: DAXKIT_MAP_AFTER_IOS=0 read it in place) must end as the kernel makes it
 * of a truncate to 10 and then that write: 8,192 bytes, 'a' x 10, zeros, 'W' x 4,096. Exit 0 pass, 1 fail (a
 * SIGBUS kills the process: the runner reports it), 77 skip (the cue did not fire). */
#include <pthread.h>
#include <time.h>

#include "shim_test.h"

static char path[PATH_MAX];
static int wfd = -1;
static volatile int go, done, cued, inside;
static volatile ssize_t wrc = -9;

static void *w_main(void *arg) {
    (void)arg;
    while (!go) {
    }
    static char b[4096];
    memset(b, 'W', sizeof b);
    wrc = pwrite(wfd, b, sizeof b, 4096);
    done = 1;
    return NULL;
}

/* At the cue, on the truncating thread: W writes, waited for up to 300 ms (held out while the file is held). */
static void on_cue(int sig) {
    (void)sig;
    int e = errno;
    cued = 1;
    go = 1;
    for (int i = 0; i < 300 && !done; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    inside = done;
    errno = e;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: shim_trunc_name_cut DIR cut|locked|otrunc|otrunc_link\n");
        return 2;
    }
    bool link_case = !strcmp(argv[2], "otrunc_link");
    bool otrunc = link_case || !strcmp(argv[2], "otrunc");
    CHECK(otrunc || !strcmp(argv[2], "cut") || !strcmp(argv[2], "locked"), "cut, locked, otrunc or otrunc_link, not %s",
          argv[2]);
    st_path(path, sizeof path, argv[1], "cut_f");
    static char a[12288];
    memset(a, 'a', sizeof a);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, a, sizeof a) == (ssize_t)sizeof a, "set-up");
    wfd = open(path, O_RDWR);
    CHECK(wfd >= 0, "open");
    char c;
    for (int i = 0; i < 4; i++) CHECK(pread(wfd, &c, 1, 4096) == 1, "pread"); /* served from the mapping */
    struct sigaction sa = {.sa_handler = on_cue};
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, w_main, NULL) == 0, "pthread_create");
    char link_path[PATH_MAX + 32];
    uint64_t meta0 = 0;
    bool strict = getenv("DAXKIT_MODE") && !strcmp(getenv("DAXKIT_MODE"), "strict");
    if (link_case) { /* DIR's parent: the medium's root, not managed */
        snprintf(link_path, sizeof link_path, "%s", argv[1]);
        char *slash = strrchr(link_path, '/');
        CHECK(slash && slash != link_path, "DIR %s has no parent", argv[1]);
        snprintf(slash, sizeof link_path - (size_t)(slash - link_path), "/otrunc_link");
        unlink(link_path);
        CHECK(symlink(path, link_path) == 0, "symlink %s: %s", link_path, strerror(errno));
        meta0 = strict ? st_counter(DK_C_strict_meta) : 0;
    }
    if (otrunc) {
        int tf = open(link_case ? link_path : path, O_WRONLY | O_TRUNC); /* (its descriptor kept: a close is a publish point) */
        CHECK(tf >= 0 && write(tf, a, 10) == 10, "open with O_TRUNC, write: %s", strerror(errno));
    } else {
        CHECK(truncate(path, 10) == 0, "truncate: %s", strerror(errno));
    }
    go = 1; /* (no cue: W writes after the truncate) */
    pthread_join(t, NULL);
    if (!cued && !link_case) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    if (link_case && strict) {
        uint64_t meta = st_counter(DK_C_strict_meta) - meta0;
        CHECK(meta >= 1, "strict: the open with O_TRUNC through %s logged no truncate (strict_meta +%llu)", link_path,
              (unsigned long long)meta);
    }
    CHECK(wrc == 4096, "W's pwrite returned %zd (%s)", wrc, strerror(errno));
    struct stat st;
    CHECK(fstat(wfd, &st) == 0 && st.st_size == 8192, "fstat through W's descriptor: %lld bytes, not 8,192",
          (long long)st.st_size);
    static char buf[16384];
    CHECK(pread(wfd, buf, sizeof buf, 0) == 8192, "pread of the whole file through the library");
    int r = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    static char kbuf[16384];
    long n = r >= 0 ? syscall(SYS_read, r, kbuf, sizeof kbuf) : -1;
    CHECK(n == 8192, "the kernel's file is %ld bytes, not 8,192 (a truncate to 10, then 4 KiB at 4 KiB)", n);
    for (long i = 0; i < 8192; i++) {
        char want = i < 10 ? 'a' : i < 4096 ? 0 : 'W';
        CHECK(kbuf[i] == want, "the kernel's byte %ld is 0x%02x, not 0x%02x", i, kbuf[i], want);
        CHECK(buf[i] == want, "the library's byte %ld is 0x%02x, not 0x%02x", i, buf[i], want);
    }
    if (link_case) {
        unlink(link_path);
        printf("otrunc_link: the open with O_TRUNC through a link outside the roots cut the file; W's write after it: "
               "the file is the kernel's 8,192 bytes%s\n", strict ? "; strict logged the truncate" : "");
        return 0;
    }
    printf("%s: W's write past the new end %s the %s: the file is the kernel's 8,192 bytes\n", argv[2],
           inside ? "completed inside" : "waited for", otrunc ? "open with O_TRUNC" : "truncate by name");
    return 0;
}

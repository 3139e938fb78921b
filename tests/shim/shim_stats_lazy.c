/* Description: a process's stats file is made at its first managed file, not at its start (session 16), and
 * no count is lost or mixed up by that:
 *   1. a fork child of a process without a file makes its own at its first managed open (opens = 1); the
 *      parent still has none;
 *   2. counts before the file (the main thread's publish points: flock unlocks of an unmanaged file,
 *      publish_walk_skips) are in it once a second thread opens the first managed file, and the main
 *      thread's later ones too -- its slot, claimed in private memory, counts into the file;
 *   3. a fork child of a process with a file has none until its own first managed file and does not count
 *      into its parent's; then its file holds its own counts only;
 *   4. an exec removes the image's file (the new image has used no managed file);
 *   5. a fork child that only writes a descriptor its parent opened (and closed since) has one (review 16,
 *      finding 6);
 *   6. a process whose exec failed and that goes on writing its managed file has one again;
 *   7. a fork child that holds its parent's managed descriptor but makes no call through it has none (a
 *      fork+exec of a program that keeps a managed file open paid its creation and removal: review 16,
 *      finding 7); its first call through it, still shared with the parent (the kernel's), makes it;
 *   8. so does an exec'd image that inherited one (adopted at its start, the kernel's for its life): none
 *      until its first call through it (this program exec'd again: argv[2] "inherited", argv[3] the
 *      descriptor, argv[4] and argv[5] a pipe's ends to tell and be told).
 * argv[1]: the managed directory. */
#include <pthread.h>
#include <sys/file.h>

#include "shim_test.h"

static const char *dir;

static void stats_path(pid_t pid, char *buf, size_t len) {
    const char *d = getenv("DAXKIT_STATS_DIR");
    snprintf(buf, len, "%s/stats.%d", d && d[0] == '/' && strlen(d) <= 200 ? d : DK_STATS_DIR, (int)pid);
}

/* Without st_stats for this process: it would have the file made (shim_test.h). */
static bool has_stats_file(pid_t pid) {
    char p[300];
    struct stat st;
    stats_path(pid, p, sizeof p);
    return stat(p, &st) == 0;
}

/* A live process holds the lock of its stats file: one of this pid that nobody locks is a dead process's. */
static bool stats_file_locked(pid_t pid) {
    char p[300];
    stats_path(pid, p, sizeof p);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool locked = syscall(SYS_flock, fd, LOCK_EX | LOCK_NB) != 0; /* (raw: no publish point counted) */
    syscall(SYS_close, fd);
    return locked;
}

static uint64_t counter_of(pid_t pid, int c) {
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(pid, v), "no stats file for %d", (int)pid);
    return v[c];
}

/* n publish points that find nothing to publish: n - 1 skipped walks at least (the first may walk). */
static void unlocks(int n) {
    int fd = OK(open("/dev/null", O_RDONLY));
    for (int i = 0; i < n; i++) OK(flock(fd, LOCK_UN));
    OK(close(fd));
}

static void open_managed(const char *name) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int fd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "x", 1);
    OK(close(fd));
}

static void *first_open_thread(void *arg) {
    (void)arg;
    open_managed("by_thread");
    return NULL;
}

static void wait_child(pid_t c, const char *what) {
    int status;
    CHECK(waitpid(c, &status, 0) == c, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child failed (status 0x%x)", what, status);
}

/* 8, the exec'd image: no file after its start; one after a write through the inherited descriptor. */
static int inherited_image(char **argv) {
    st_watchdog(30);
    int fd = atoi(argv[3]), tell = atoi(argv[4]), told = atoi(argv[5]);
    char m = has_stats_file(getpid()) ? 'F' : 'n';
    CHECK(syscall(SYS_write, tell, &m, 1) == 1 && syscall(SYS_read, told, &m, 1) == 1, "pipe");
    CHECK(pwrite(fd, "i", 1, 0) == 1, "pwrite through the inherited descriptor: %s", strerror(errno));
    m = has_stats_file(getpid()) ? 'f' : 'N';
    CHECK(syscall(SYS_write, tell, &m, 1) == 1, "pipe");
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 5 && strcmp(argv[2], "inherited") == 0) return inherited_image(argv);
    dir = st_dir(argc, argv);
    st_watchdog(120);
    pid_t self = getpid();
    CHECK(!stats_file_locked(self), "this process has a stats file before any managed file");
    if (has_stats_file(self)) SKIP("a stats file named after this pid exists, unlocked: a killed process's");

    pid_t c = OK(fork()); /* 1 */
    if (c == 0) {
        CHECK(!has_stats_file(getpid()), "fork child: a stats file before its first managed file");
        open_managed("by_child1");
        CHECK(has_stats_file(getpid()) && counter_of(getpid(), DK_C_opens) == 1, "fork child: opens != 1");
        _exit(0);
    }
    wait_child(c, "1");
    CHECK(!has_stats_file(self), "the parent has a stats file after its child's managed open");
    printf("1: a fork child made its own file at its first managed open; the parent has none\n");

    unlocks(10); /* 2: 9 skipped walks at least, counted in the main thread's private slot */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, first_open_thread, NULL) == 0, "pthread_create");
    CHECK(pthread_join(t, NULL) == 0, "pthread_join");
    CHECK(has_stats_file(self), "no stats file after a thread's managed open");
    uint64_t skips = counter_of(self, DK_C_publish_walk_skips);
    CHECK(skips >= 9 && skips <= 10, "publish_walk_skips %llu right after the file was made, want 9-10 (the main "
          "thread's before it)", (unsigned long long)skips);
    unlocks(10);
    uint64_t later = counter_of(self, DK_C_publish_walk_skips);
    CHECK(later >= skips + 8 && later <= skips + 10, "publish_walk_skips %llu after 10 more unlocks, want %llu-%llu "
          "(the main thread's slot counts into the file)", (unsigned long long)later,
          (unsigned long long)skips + 8, (unsigned long long)skips + 10);
    CHECK(counter_of(self, DK_C_opens) == 1, "opens != 1");
    printf("2: a thread's first managed open made the file: it holds the %llu walks skipped before it and the "
           "main thread's later ones (%llu)\n", (unsigned long long)skips, (unsigned long long)later);

    c = OK(fork()); /* 3 */
    if (c == 0) {
        CHECK(!has_stats_file(getpid()), "fork child of a process with a file: one before its first managed file");
        uint64_t parents = counter_of(self, DK_C_publish_walk_skips); /* (the fork's own publish point counted) */
        unlocks(5);
        CHECK(counter_of(self, DK_C_publish_walk_skips) == parents, "the child's unlocks were counted in its parent's file");
        open_managed("by_child2");
        uint64_t mine = counter_of(getpid(), DK_C_publish_walk_skips);
        CHECK(counter_of(getpid(), DK_C_opens) == 1 && mine >= 4 && mine <= 5,
              "fork child: opens %llu (want 1), publish_walk_skips %llu (want 4-5: its own)",
              (unsigned long long)counter_of(getpid(), DK_C_opens), (unsigned long long)mine);
        _exit(0);
    }
    wait_child(c, "3");
    CHECK(counter_of(self, DK_C_opens) == 1, "the parent's opens changed by its child's");
    printf("3: a fork child counted nothing into its parent's file and made its own\n");

    int made[2];
    OK(pipe(made));
    c = OK(fork()); /* 4 */
    if (c == 0) {
        open_managed("by_child3");
        CHECK(has_stats_file(getpid()), "exec child: no file after its managed open");
        CHECK(write(made[1], "m", 1) == 1, "pipe");
        execl("/bin/sleep", "sleep", "3", (char *)NULL);
        _exit(1);
    }
    char m;
    CHECK(read(made[0], &m, 1) == 1, "the exec child died before its managed open");
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) { /* the exec comes right after the byte */
        usleep(10000);
        gone = !has_stats_file(c) && kill(c, 0) == 0;
    }
    CHECK(gone, "the exec'd image (sleep, no managed file) still has its old image's stats file");
    wait_child(c, "4");
    printf("4: an exec removed the old image's file\n");

    /* 5: a child that only serves a descriptor its parent opened (review 16, finding 6) */
    char p5[PATH_MAX];
    st_path(p5, sizeof p5, dir, "inherited");
    int fd5 = OK(open(p5, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd5, "y", 1);
    int go[2];
    OK(pipe(go));
    c = OK(fork());
    if (c == 0) {
        CHECK(read(go[0], &m, 1) == 1, "pipe");
        static char block[4096];
        for (int i = 0; i < 100; i++) CHECK(pwrite(fd5, block, sizeof block, (off_t)i * 4096) == 4096, "pwrite");
        CHECK(has_stats_file(getpid()), "a fork child that writes an inherited managed descriptor has no stats file");
        _exit(0);
    }
    OK(close(fd5)); /* the child serves it alone from now on */
    CHECK(write(go[1], "g", 1) == 1, "pipe");
    wait_child(c, "5");
    printf("5: a fork child serving only an inherited descriptor is listed\n");

    /* 6: an exec that fails: the image keeps its managed descriptor, and its file */
    c = OK(fork());
    if (c == 0) {
        int fd6 = OK(open(p5, O_RDWR));
        st_write_all(fd6, "z", 1);
        execl("/nonexistent/daxkit-test", "x", (char *)NULL);
        st_write_all(fd6, "z", 1);
        CHECK(has_stats_file(getpid()), "after a failed exec, a process that still writes its managed file has no stats file");
        _exit(0);
    }
    wait_child(c, "6");
    printf("6: after a failed exec the process is listed again\n");

    /* 7: a child that makes no call through the descriptor it holds is not listed until it does */
    int fd7 = OK(open(p5, O_RDWR));
    st_write_all(fd7, "w", 1);
    c = OK(fork());
    if (c == 0) {
        CHECK(!has_stats_file(getpid()), "a fork child that made no managed call has a stats file");
        CHECK(pwrite(fd7, "v", 1, 0) == 1, "pwrite: %s", strerror(errno)); /* shared: the kernel serves it */
        CHECK(has_stats_file(getpid()), "a fork child that wrote a shared managed descriptor has no stats file");
        _exit(0);
    }
    wait_child(c, "7");
    OK(close(fd7));
    printf("7: a fork child is listed from its first managed call, not from the fork\n");

    /* 8: an exec'd image that inherited a managed descriptor is listed from its first call through it */
    int fd8 = OK(open(p5, O_RDWR)), up[2], down[2];
    st_write_all(fd8, "w", 1);
    OK(pipe(up));
    OK(pipe(down));
    c = OK(fork());
    if (c == 0) {
        char a[4][16];
        snprintf(a[0], sizeof a[0], "%d", fd8);
        snprintf(a[1], sizeof a[1], "%d", up[1]);
        snprintf(a[2], sizeof a[2], "%d", down[0]);
        close(up[0]); /* (the parent's ends: its exit is then seen) */
        close(down[1]);
        execl("/proc/self/exe", "shim_stats_lazy", dir, "inherited", a[0], a[1], a[2], (char *)NULL);
        _exit(127);
    }
    OK(close(fd8)); /* the image alone holds it then: still the kernel's (inherited across exec) */
    OK(close(up[1]));
    OK(close(down[0]));
    char m8 = 0;
    CHECK(read(up[0], &m8, 1) == 1 && m8 == 'n', "8: the exec'd image has a stats file after its start (%c)", m8);
    CHECK(write(down[1], "g", 1) == 1 && read(up[0], &m8, 1) == 1, "8: pipe");
    CHECK(m8 == 'f', "8: the exec'd image has no stats file after its write through the inherited descriptor");
    wait_child(c, "8");
    printf("8: an exec'd image is listed from its first call through an inherited descriptor, not from its start\n");
    printf("ok: the stats file is made at the first managed file, with every count\n");
    return 0;
}

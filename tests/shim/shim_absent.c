/* Description: names known absent (DAXKIT_ABSENT_CACHE=1, upath/absent.c; session 28): a stat of a name the kernel
 * said is absent is answered ENOENT from memory -- and never once something made the name appear. Another process
 * (raw system calls, no library) changes the managed directory DIR between this process's stats:
 *   names     DIR/x.db-journal stat'ed twice (the second from memory: absent_hits +1); then made by the other
 *             process as a file, a directory, a symlink (lstat sees it; stat's ENOENT of the dangling link is not
 *             kept: the target made later outside the managed directory, where nothing is watched, is seen), a hard link, a rename onto the name -- each seen by the next
 *             stat, and each removal seen as ENOENT again (then from memory).
 *   ancestor  DIR/sub/x.db-wal kept absent; the other process renames DIR/sub away, makes a new DIR/sub holding
 *             x.db-wal: the stat sees it (the old directory's IN_MOVE_SELF); the same for DIR/up/deep/y.db-wal with
 *             DIR/up renamed away (the parent's watch).
 *   fork      DIR/f.db-journal kept absent; the other process makes it (an event queued); a fork child stats it and
 *             an absent name of the same directory (its own instance: its keeping must not consume the parent's
 *             events), then the parent's stat sees the name made.
 *   off       DAXKIT_ABSENT_CACHE=0 (the option is on by default since session 29): nothing is kept (absent_hits, absent_kept +0).
 * Session 29 (on by default -- defaults29):
 *   limits    fork children in their own user namespace, whose inotify limits the test sets (nothing else on the
 *             machine shares them): (a) the program holds the only instance: the stats are the kernel's, the
 *             cache off and counted (absent_off), nothing on stderr; (b) the library holds the only instance:
 *             the program's inotify_init1 must succeed (ours given back), and a name made afterwards is seen;
 *             (c) the library holds the only watch: the program's inotify_add_watch must succeed; (d) no watch
 *             to be had: off, counted, nothing on stderr; (e) 12 processes at once with 4 instances: every
 *             answer right (each makes and removes its name), nothing on stderr. Skips without user namespaces.
 *   lazy      (a fork child: its own state) stats of a file that exists, in the managed directory, make no inotify
 *             instance (none in /proc/self/fd), nor does the first stat of an absent name; the second of the same
 *             name makes it (session 28: the first stat of any name there did -- every program that stats a
 *             managed file held one of the user's instances; review29 #1: one-off probes hold none).
 *   slots     (DAXKIT_STATS_DIR of the test's own: the user's slot file there) 40 fork children at once each stat
 *             an absent name until kept: at most 32 hold an instance (the rest off, counted), every answer right.
 *   closeall  a kept name survives the program closing every descriptor (close of each, close_range): still
 *             answered from memory, and a name the other process makes is seen; then the program's dup2 onto the
 *             instance's number (found in /proc/self/fd) with a pipe's read end: a name made afterwards must be
 *             seen (the cache off) -- polled, the empty pipe said "nothing queued".
 *   race      (explicit) two threads stat a name another process makes and removes 2,000 times, telling a sequence
 *             word: a stat begun and ended with the word unchanged and odd (the name exists) finds it.
 * Exit 0 pass, 1 fail. */
#include "shim_test.h"

#include <sys/wait.h>

static const char *dir;

/* Another process changing DIR with raw system calls when told (a letter and a name relative to DIR). */
struct other {
    pid_t pid;
    int to[2], back[2];
};

static void other_fork(struct other *o) {
    OK(pipe(o->to));
    OK(pipe(o->back));
    o->pid = OK(fork());
    if (o->pid != 0) return;
    close(o->to[1]);
    close(o->back[0]);
    for (;;) {
        char cmd[600];
        ssize_t n = syscall(SYS_read, o->to[0], cmd, sizeof cmd - 1);
        if (n <= 0) _exit(7);
        cmd[n] = 0;
        char *a = cmd + 2, *b = strchr(a, ' ');
        if (b) *b++ = 0;
        long r = 0;
        char pa[PATH_MAX], pb[PATH_MAX];
        snprintf(pa, sizeof pa, "%s/%s", dir, a);
        if (b) snprintf(pb, sizeof pb, "%s/%s", dir, b);
        switch (cmd[0]) {
        case 'q': _exit(0);
        case 'c': r = syscall(SYS_openat, AT_FDCWD, pa, O_CREAT | O_WRONLY | O_CLOEXEC, 0644); if (r >= 0) syscall(SYS_close, r), r = 0; break;
        case 'u': r = syscall(SYS_unlinkat, AT_FDCWD, pa, 0); break;
        case 'd': r = syscall(SYS_mkdirat, AT_FDCWD, pa, 0755); break;
        case 'r': r = syscall(SYS_unlinkat, AT_FDCWD, pa, AT_REMOVEDIR); break;
        case 's': r = syscall(SYS_symlinkat, b, AT_FDCWD, pa); break; /* s NAME TARGET (relative) */
        case 'l': r = syscall(SYS_linkat, AT_FDCWD, pb, AT_FDCWD, pa, 0); break; /* l NAME EXISTING */
        case 'm': r = syscall(SYS_renameat, AT_FDCWD, pb, AT_FDCWD, pa); break; /* m NAME FROM */
        default: r = -1;
        }
        char ok = r == 0 ? 'd' : 'e';
        if (syscall(SYS_write, o->back[1], &ok, 1) != 1) _exit(6);
    }
}

static void other_do(struct other *o, const char *cmd) {
    OK(write(o->to[1], cmd, strlen(cmd)));
    char c = 0;
    CHECK(read(o->back[0], &c, 1) == 1 && c == 'd', "the other process failed at '%s'", cmd);
}

static void other_end(struct other *o) {
    OK(write(o->to[1], "q", 1));
    int st;
    OK(waitpid(o->pid, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other process: status 0x%x", st);
}

static int st_of(const char *name, bool follow, struct stat *sb) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int r = follow ? stat(p, sb) : lstat(p, sb);
    return r == 0 ? 0 : errno;
}

/* The name absent now, three times: the third answer from memory (a process makes its instance at the second
 * ENOENT of a name -- review29 #1 --, after which the second is from memory too) */
static void absent_twice(const char *name, const char *what) {
    struct stat sb;
    CHECK(st_of(name, true, &sb) == ENOENT, "%s: %s is not absent", what, name);
    CHECK(st_of(name, true, &sb) == ENOENT, "%s: %s is not absent (2)", what, name);
    unsigned long long h0 = st_counter(DK_C_absent_hits);
    CHECK(st_of(name, true, &sb) == ENOENT, "%s: %s is not absent (again)", what, name);
    CHECK(st_counter(DK_C_absent_hits) == h0 + 1, "%s: the second stat of %s was not answered from memory "
          "(absent_hits +%llu)", what, name, st_counter(DK_C_absent_hits) - h0);
}

static void case_names(struct other *o) {
    struct stat sb;
    absent_twice("x.db-journal", "names");
    other_do(o, "c x.db-journal");
    CHECK(st_of("x.db-journal", true, &sb) == 0 && S_ISREG(sb.st_mode), "names: a file another process made is not "
          "seen by stat");
    other_do(o, "u x.db-journal");
    absent_twice("x.db-journal", "names after unlink");
    other_do(o, "d x.db-journal");
    CHECK(st_of("x.db-journal", true, &sb) == 0 && S_ISDIR(sb.st_mode), "names: a directory made is not seen");
    other_do(o, "r x.db-journal");
    absent_twice("x.db-journal", "names after rmdir");
    other_do(o, "s x.db-journal ../absent.target"); /* (outside the managed directory: nothing watched there) */
    CHECK(st_of("x.db-journal", false, &sb) == 0 && S_ISLNK(sb.st_mode), "names: a symlink made is not seen by lstat");
    CHECK(st_of("x.db-journal", true, &sb) == ENOENT, "names: stat of a dangling symlink did not say ENOENT");
    CHECK(st_of("x.db-journal", true, &sb) == ENOENT, "names: stat of a dangling symlink did not say ENOENT (again)");
    other_do(o, "c ../absent.target");
    CHECK(st_of("x.db-journal", true, &sb) == 0 && S_ISREG(sb.st_mode), "names: the symlink's target made later is "
          "not seen by stat (the dangling link's ENOENT was kept)");
    other_do(o, "u ../absent.target");
    other_do(o, "u x.db-journal");
    other_do(o, "c target");
    absent_twice("x.db-journal", "names after the symlink");
    other_do(o, "l x.db-journal target");
    CHECK(st_of("x.db-journal", true, &sb) == 0, "names: a hard link made is not seen");
    other_do(o, "u x.db-journal");
    absent_twice("x.db-journal", "names after the link");
    other_do(o, "m x.db-journal target");
    CHECK(st_of("x.db-journal", true, &sb) == 0, "names: a rename onto the name is not seen");
    other_do(o, "u x.db-journal");
    absent_twice("x.db-journal", "names after the rename");
    printf("ok: names: file, directory, symlink (and its later target), link, rename onto the name all seen\n");
}

static void case_ancestor(struct other *o) {
    struct stat sb;
    other_do(o, "d sub");
    absent_twice("sub/x.db-wal", "ancestor");
    other_do(o, "m sub.old sub");
    other_do(o, "d sub");
    other_do(o, "c sub/x.db-wal");
    CHECK(st_of("sub/x.db-wal", true, &sb) == 0, "ancestor: after the directory was renamed away and made again with "
          "the name in it, stat still says it is absent");
    /* the directory's parent renamed away (the directory itself not moved within it) */
    other_do(o, "d up");
    other_do(o, "d up/deep");
    absent_twice("up/deep/y.db-wal", "ancestor");
    other_do(o, "m up.old up");
    other_do(o, "d up");
    other_do(o, "d up/deep");
    other_do(o, "c up/deep/y.db-wal");
    CHECK(st_of("up/deep/y.db-wal", true, &sb) == 0, "ancestor: after the directory's parent was renamed away and the "
          "path made again with the name in it, stat still says it is absent");
    printf("ok: ancestor: a directory or its parent renamed away and made again is seen\n");
}

static void case_fork(struct other *o) {
    struct stat sb;
    absent_twice("f.db-journal", "fork");
    other_do(o, "c f.db-journal");
    pid_t c = OK(fork());
    if (c == 0) { /* its own stats: the name made, and an absent one (whose keeping reads the queued events) */
        if (st_of("f.db-journal", true, &sb) != 0) _exit(3);
        for (int i = 0; i < 3; i++)
            if (st_of("g.db-journal", true, &sb) != ENOENT) _exit(4);
        _exit(0);
    }
    int status;
    OK(waitpid(c, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork: the child did not see the file (status 0x%x)", status);
    CHECK(st_of("f.db-journal", true, &sb) == 0, "fork: after a child's stat, the parent's says the file another "
          "process made is absent (the child consumed the parent's events)");
    printf("ok: fork: a child's stat leaves the parent's events to it\n");
}

/* Two threads stat a name while another process makes and removes it 2,000 times, telling a sequence word (odd:
 * the name exists -- set after the create returned, made even before the unlink): a stat that began and ended
 * with the word odd and unchanged must find the name (ENOENT kept from before the create must not be answered). */
#include <pthread.h>
#include <sys/mman.h>
static volatile uint64_t *race_seq;
static volatile int race_stop;
static unsigned long long race_checked[2], race_wrong[2];
static void *race_reader(void *arg) {
    int id = (int)(intptr_t)arg;
    struct stat sb;
    while (!race_stop) {
        uint64_t q1 = __atomic_load_n(race_seq, __ATOMIC_SEQ_CST);
        int e = st_of("r.db-journal", true, &sb);
        uint64_t q2 = __atomic_load_n(race_seq, __ATOMIC_SEQ_CST);
        if (q1 != q2 || !(q1 & 1)) continue; /* (even: made or removed any moment) */
        race_checked[id]++;
        if (e != 0) race_wrong[id]++;
        __atomic_add_fetch(race_seq + 1, 1, __ATOMIC_SEQ_CST); /* (the other process waits for one a round) */
    }
    return NULL;
}
static void case_race(void) {
    race_seq = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(race_seq != MAP_FAILED, "race: mmap");
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "r.db-journal");
    pid_t c = OK(fork());
    if (c == 0) {
        for (int i = 0; i < 2000; i++) {
            long fd = syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
            if (fd < 0) _exit(2);
            syscall(SYS_close, fd);
            uint64_t seen = __atomic_load_n(race_seq + 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(race_seq, 1, __ATOMIC_SEQ_CST); /* odd: exists */
            /* until a reader checked a stat inside this round (2 ms at most: a loaded machine) */
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do clock_gettime(CLOCK_MONOTONIC, &t1);
            while (__atomic_load_n(race_seq + 1, __ATOMIC_SEQ_CST) == seen &&
                   (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 2000000L);
            __atomic_add_fetch(race_seq, 1, __ATOMIC_SEQ_CST); /* even: about to go */
            if (syscall(SYS_unlinkat, AT_FDCWD, p, 0) != 0) _exit(3);
            for (volatile int k = 0; k < 20000; k++) {}
        }
        _exit(0);
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) OK(pthread_create(&t[i], NULL, race_reader, (void *)(intptr_t)i));
    int status;
    OK(waitpid(c, &status, 0));
    race_stop = 1;
    for (int i = 0; i < 2; i++) OK(pthread_join(t[i], NULL));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "race: the other process: status 0x%x", status);
    unsigned long long n = race_checked[0] + race_checked[1], w = race_wrong[0] + race_wrong[1];
    CHECK(w == 0, "race: %llu of %llu stats made while the name did not change said the other thing", w, n);
    CHECK(n >= 200, "race: only %llu stats checked in 2,000 rounds", n);
    printf("ok: race: %llu stats made while the name existed all along found it (hits %llu)\n", n,
           (unsigned long long)st_counter(DK_C_absent_hits));
}

#include <dirent.h>
#include <sched.h>
#include <sys/inotify.h>
static int write_file(const char *p, const char *text) {
    int fd = open(p, O_WRONLY);
    if (fd < 0) return -1;
    int r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
    close(fd);
    return r;
}
/* In a fork child: its own user namespace (root mapped to root) whose inotify limits are these (they count this
 * namespace's instances and watches only, besides the machine's). 77: no user namespaces. */
static int ns_limits(int inst, int watches) {
    if (unshare(CLONE_NEWUSER) != 0) return 77;
    char v[32];
    if (write_file("/proc/self/uid_map", "0 0 1") != 0) return 77;
    snprintf(v, sizeof v, "%d", inst);
    if (write_file("/proc/sys/user/max_inotify_instances", v) != 0) return 77;
    snprintf(v, sizeof v, "%d", watches);
    if (write_file("/proc/sys/user/max_inotify_watches", v) != 0) return 77;
    return 0;
}
#define CK(cond, code) do { if (!(cond)) { printf("child: %s (line %d, errno %d)\n", #cond, __LINE__, errno); _exit(code); } } while (0)
static int err_fd;
/* A child in limits (inst, watches) running fn; its stderr to the test's file. Returns the child's status (77
 * passed on). */
static int in_limits(int inst, int watches, void (*fn)(struct other *), struct other *o, const char *what) {
    OK(ftruncate(err_fd, 0));
    pid_t c = OK(fork());
    if (c == 0) {
        int r = ns_limits(inst, watches);
        if (r) _exit(r);
        dup2(err_fd, 2);
        fn(o);
        _exit(0);
    }
    int st;
    CHECK(st_wait_child(c, &st, 30000), "limits %s: the child hung", what);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) return 77;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limits %s: the child failed (status 0x%x)", what, st);
    struct stat sb;
    OK(fstat(err_fd, &sb));
    char text[256] = "";
    if (sb.st_size) CHECK(pread(err_fd, text, sizeof text - 1, 0) >= 0, "read the child's stderr");
    CHECK(sb.st_size == 0, "limits %s: the library wrote on the program's stderr: %s", what, text);
    printf("ok: limits %s\n", what);
    return 0;
}
static unsigned long long ctr(int c) { return st_counter(c); }
static void lim_program_first(struct other *o) {
    (void)o;
    struct stat sb;
    int mine = inotify_init1(IN_CLOEXEC);
    CK(mine >= 0, 10);
    unsigned long long off0 = ctr(DK_C_absent_off), h0 = ctr(DK_C_absent_hits);
    for (int i = 0; i < 3; i++) CK(st_of("la.db-journal", true, &sb) == ENOENT, 11);
    CK(ctr(DK_C_absent_hits) == h0, 12);
    CK(ctr(DK_C_absent_off) == off0 + 1, 13);
    CK(inotify_add_watch(mine, dir, IN_CREATE) >= 0, 14);
}
static void lim_library_first(struct other *o) {
    struct stat sb;
    unsigned long long off0 = ctr(DK_C_absent_off), h0 = ctr(DK_C_absent_hits);
    for (int i = 0; i < 3; i++) CK(st_of("lb.db-journal", true, &sb) == ENOENT, 20);
    CK(ctr(DK_C_absent_hits) >= h0 + 1, 21); /* (the library holds the one instance) */
    int mine = inotify_init1(IN_CLOEXEC);
    CK(mine >= 0, 22); /* ours given back */
    CK(ctr(DK_C_absent_off) == off0 + 1, 23);
    other_do(o, "c lb.db-journal");
    CK(st_of("lb.db-journal", true, &sb) == 0, 24);
    other_do(o, "u lb.db-journal");
    CK(st_of("lb.db-journal", true, &sb) == ENOENT, 25);
    CK(inotify_init1(IN_CLOEXEC) < 0 && errno == EMFILE, 26); /* (the limit is 1: the program's own) */
}
static void lim_watch(struct other *o) {
    (void)o;
    struct stat sb;
    unsigned long long off0 = ctr(DK_C_absent_off), h0 = ctr(DK_C_absent_hits);
    for (int i = 0; i < 3; i++) CK(st_of("lc.db-journal", true, &sb) == ENOENT, 30);
    CK(ctr(DK_C_absent_hits) >= h0 + 1, 31); /* (the library holds the one watch) */
    int mine = inotify_init1(IN_CLOEXEC);
    CK(mine >= 0, 32);
    CK(inotify_add_watch(mine, dir, IN_CREATE) >= 0, 33);
    CK(ctr(DK_C_absent_off) == off0 + 1, 34);
}
static void lim_nowatch(struct other *o) {
    (void)o;
    struct stat sb;
    unsigned long long off0 = ctr(DK_C_absent_off), h0 = ctr(DK_C_absent_hits);
    for (int i = 0; i < 3; i++) CK(st_of("ld.db-journal", true, &sb) == ENOENT, 40);
    CK(ctr(DK_C_absent_hits) == h0, 41);
    CK(ctr(DK_C_absent_off) == off0 + 1, 42);
}
static void lim_many(struct other *o) {
    (void)o;
    enum { N = 12 };
    int go[2];
    CK(pipe(go) == 0, 50);
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        CK(kids[i] >= 0, 51);
        if (kids[i] == 0) {
            close(go[1]);
            char name[64], p[PATH_MAX];
            snprintf(name, sizeof name, "m%d.db-journal", i);
            st_path(p, sizeof p, dir, name);
            struct stat sb;
            for (int k = 0; k < 3; k++) CK(st_of(name, true, &sb) == ENOENT, 52);
            long fd = syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
            CK(fd >= 0, 53);
            syscall(SYS_close, fd);
            CK(st_of(name, true, &sb) == 0, 54);
            CK(syscall(SYS_unlinkat, AT_FDCWD, p, 0) == 0, 55);
            for (int k = 0; k < 3; k++) CK(st_of(name, true, &sb) == ENOENT, 56);
            char x;
            while (read(go[0], &x, 1) > 0) {} /* (all hold their instances at once) */
            _exit(0);
        }
    }
    close(go[0]);
    usleep(200000);
    close(go[1]);
    for (int i = 0; i < N; i++) {
        int st;
        CK(st_wait_child(kids[i], &st, 20000), 57);
        CK(WIFEXITED(st) && WEXITSTATUS(st) == 0, 58);
    }
}
static void case_limits(struct other *o) {
    char errp[PATH_MAX];
    st_path(errp, sizeof errp, dir, "../limits.err");
    err_fd = OK(open(errp, O_RDWR | O_CREAT | O_TRUNC, 0644));
    if (in_limits(1, 100, lim_program_first, o, "program first") == 77) {
        printf("SKIP: limits: no user namespace with its own inotify limits here\n");
        return;
    }
    in_limits(1, 100, lim_library_first, o, "library first");
    in_limits(4, 1, lim_watch, o, "the only watch");
    in_limits(4, 0, lim_nowatch, o, "no watch");
    in_limits(4, 1000, lim_many, o, "12 processes, 4 instances");
    close(err_fd);
}

static int inotify_fd(void) {
    int ifd = -1;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL, "opendir /proc/self/fd");
    for (struct dirent *e; (e = readdir(d));) {
        char l[PATH_MAX], t[64];
        snprintf(l, sizeof l, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(l, t, sizeof t - 1);
        if (n > 0 && (t[n] = 0, !strcmp(t, "anon_inode:inotify"))) ifd = atoi(e->d_name);
    }
    closedir(d);
    return ifd;
}

static void case_lazy(struct other *o) {
    other_do(o, "c lazy.db");
    pid_t c = OK(fork());
    if (c == 0) {
        struct stat sb;
        CK(inotify_fd() < 0, 60);
        for (int i = 0; i < 3; i++) CK(st_of("lazy.db", true, &sb) == 0, 61);
        CK(inotify_fd() < 0, 62); /* (no instance for names that exist) */
        CK(st_of("lazy.db-journal", true, &sb) == ENOENT, 63);
        CK(inotify_fd() < 0, 65); /* (one ENOENT: only noted -- review29 #1) */
        CK(st_of("lazy.db-journal", true, &sb) == ENOENT, 66);
        CK(inotify_fd() >= 0, 64);
        _exit(0);
    }
    int st;
    CHECK(st_wait_child(c, &st, 20000), "lazy: the child hung");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lazy: the child failed (status 0x%x)", st);
    other_do(o, "u lazy.db");
    printf("ok: lazy: no inotify instance until a stat said ENOENT\n");
}

static void case_slots(void) {
    enum { N = 40 };
    int ready[2], go[2];
    OK(pipe(ready));
    OK(pipe(go));
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = OK(fork());
        if (kids[i] == 0) {
            close(ready[0]);
            close(go[1]);
            char name[64];
            snprintf(name, sizeof name, "s%d.db-journal", i);
            struct stat sb;
            for (int k = 0; k < 4; k++) CK(st_of(name, true, &sb) == ENOENT, 70);
            char r = st_counter(DK_C_absent_hits) ? 'h' : st_counter(DK_C_absent_off) ? 'o' : 'n';
            CK(write(ready[1], &r, 1) == 1, 71);
            char x;
            while (read(go[0], &x, 1) > 0) {}
            _exit(0);
        }
    }
    close(ready[1]);
    close(go[0]);
    int hit = 0, off = 0, other = 0;
    for (int i = 0; i < N; i++) {
        char r = 0;
        CHECK(read(ready[0], &r, 1) == 1, "slots: child %d: no answer", i);
        hit += r == 'h', off += r == 'o', other += r == 'n';
    }
    close(go[1]);
    for (int i = 0; i < N; i++) {
        int st;
        CHECK(st_wait_child(kids[i], &st, 20000), "slots: child %d hung", i);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "slots: child %d failed (status 0x%x)", i, st);
    }
    CHECK(hit >= 1 && hit <= 32 && hit + off == N, "slots: %d processes answered from memory, %d off, %d neither "
          "(at most 32 may hold an instance)", hit, off, other);
    printf("ok: slots: %d of %d processes held an instance, %d off (counted)\n", hit, N, off);
}

static void case_closeall(struct other *o) {
    struct stat sb;
    absent_twice("ca.db-journal", "closeall");
    for (int fd = 3; fd < 1024; fd++)
        if (fd != o->to[1] && fd != o->back[0]) close(fd);
    int top = o->to[1] > o->back[0] ? o->to[1] : o->back[0];
    (void)syscall(SYS_close_range, 3, (unsigned)(o->to[1] < o->back[0] ? o->to[1] : o->back[0]) - 1, 0);
    CHECK(close_range(top + 1, ~0U, 0) == 0, "close_range: %s", strerror(errno));
    unsigned long long h0 = st_counter(DK_C_absent_hits);
    CHECK(st_of("ca.db-journal", true, &sb) == ENOENT, "closeall: not absent");
    CHECK(st_counter(DK_C_absent_hits) == h0 + 1, "closeall: not answered from memory after the closes");
    other_do(o, "c ca.db-journal");
    CHECK(st_of("ca.db-journal", true, &sb) == 0, "closeall: a name made after the program closed every descriptor "
          "is not seen");
    other_do(o, "u ca.db-journal");
    absent_twice("cb.db-journal", "closeall (dup2)");
    int ifd = inotify_fd();
    if (ifd < 0) {
        printf("ok: closeall (the instance's number not found in /proc/self/fd: no dup2 case)\n");
        return;
    }
    int p[2];
    OK(pipe(p));
    CHECK(dup2(p[0], ifd) == ifd, "dup2 onto %d: %s", ifd, strerror(errno));
    other_do(o, "c cb.db-journal");
    CHECK(st_of("cb.db-journal", true, &sb) == 0, "closeall: after the program's dup2 onto the instance's number, a "
          "name made is not seen");
    other_do(o, "u cb.db-journal");
    CHECK(st_of("cb.db-journal", true, &sb) == ENOENT, "closeall: not absent after the dup2");
    OK(close(ifd));
    printf("ok: closeall: the instance survives the program's closes; a dup2 onto it turns the cache off\n");
}

static void case_off(void) {
    struct stat sb;
    unsigned long long h0 = st_counter(DK_C_absent_hits), k0 = st_counter(DK_C_absent_kept);
    for (int i = 0; i < 3; i++) CHECK(st_of("o.db-journal", true, &sb) == ENOENT, "off: not absent");
    CHECK(st_counter(DK_C_absent_hits) == h0 && st_counter(DK_C_absent_kept) == k0, "off: names kept with the "
          "option off (hits +%llu)", st_counter(DK_C_absent_hits) - h0);
    printf("ok: off: nothing kept with DAXKIT_ABSENT_CACHE=0\n");
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "all";
    st_require_library();
    st_watchdog(60);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(which, "race")) {
        case_race();
        return 0;
    }
    if (!strcmp(which, "slots")) {
        case_slots();
        return 0;
    }
    if (!strcmp(which, "off")) {
        case_off();
        return 0;
    }
    struct other o;
    other_fork(&o);
    bool all = !strcmp(which, "all");
    if (all || !strcmp(which, "names")) case_names(&o);
    if (all || !strcmp(which, "ancestor")) case_ancestor(&o);
    if (all || !strcmp(which, "fork")) case_fork(&o);
    if (all || !strcmp(which, "lazy")) case_lazy(&o);
    if (all || !strcmp(which, "limits")) case_limits(&o);
    if (all || !strcmp(which, "closeall")) case_closeall(&o);
    other_end(&o);
    return 0;
}

/* The program's POSIX record locks survive everything the library does behind its back. The kernel drops
 * all of a process's locks on a file at the close of any of its descriptors, so the library must never
 * open and close an extra descriptor of a file the program may hold locked (review 7, finding 3: a
 * read-only descriptor's lock vanished at the file's first mapping, an O_APPEND writer's at a publish).
 * Each case takes a lock, makes the library map / publish / prefault / fork, and asks another process
 * (raw system calls, no library) whether the lock is still there; then the program dup2s onto the
 * library's own descriptor and everything must still work. argv[1]: managed directory. argv[2]: the case
 * (rdonly_map, append_publish, extend_prefault, strict_checkpoint, budget: kept descriptors stay within a
 * quarter of RLIMIT_NOFILE, a file mapped read-only for want of one is still written correctly, and an
 * O_APPEND file is relinked by copy through the program's descriptor). append_publish reopens only where the publish clones
 * (XFS): on huge tmpfs it checks that the publish and the fork keep the lock. atomic_detach (DAXKIT_ATOMIC=*):
 * the engine lets the file go while the program keeps its descriptor -- at fork, the program's mmap,
 * SEEK_DATA, fallocate with a mode, copy_file_range -- and its own descriptor must not be closed then
 * (review 7, finding 3d). */
#include <sys/resource.h>

#include "shim_test.h"

/* Whether a process other than us sees our lock on [start, start+len): F_GETLK from a raw child. */
static bool lock_held(const char *path, short type, off_t start, off_t len) {
    pid_t parent = getpid();
    pid_t c = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (c == 0) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        struct flock fl = {.l_type = (short)(type == F_RDLCK ? F_WRLCK : F_WRLCK), .l_whence = SEEK_SET,
                           .l_start = start, .l_len = len};
        if (fd < 0 || syscall(SYS_fcntl, fd, F_GETLK, &fl) != 0) syscall(SYS_exit_group, 2);
        syscall(SYS_exit_group, fl.l_type != F_UNLCK && fl.l_pid == parent ? 0 : 1);
    }
    CHECK(c > 0, "clone: %s", strerror(errno));
    int st;
    CHECK(syscall(SYS_wait4, c, &st, 0, NULL) == c, "wait4");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 2, "the checker could not open %s or ask for the lock", path);
    return WEXITSTATUS(st) == 0;
}

static void take(int fd, short type) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    CHECK(fcntl(fd, F_SETLK, &fl) == 0, "F_SETLK: %s", strerror(errno));
}

static void make(const char *path, size_t n) {
    static uint8_t buf[1 << 20];
    st_fill(buf, 1, 0, n);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, buf, n);
    OK(close(fd));
}

static bool open_at_start[64];
static int program_fds[8], n_program_fds;

static int prog_open(const char *path, int flags) {
    int fd = OK(open(path, flags));
    if (n_program_fds < 8) program_fds[n_program_fds++] = fd;
    return fd;
}

static bool is_program_fd(int n) {
    for (int i = 0; i < n_program_fds; i++)
        if (program_fds[i] == n) return true;
    return n < 64 && open_at_start[n];
}

/* The program dup2s onto every descriptor number below 64 that it did not open (the library's own,
 * invisible to it): the library must move out of the way and keep serving the file, and a write through
 * it must reach the file. */
static void dup2_over_internal(int fd, const char *path, bool append) {
    int victims = 0;
    for (int n = 3; n < 64; n++) {
        if (is_program_fd(n) || syscall(SYS_fcntl, n, F_GETFD) < 0) continue;
        int null = OK(open("/dev/null", O_RDONLY));
        OK(dup2(null, n));
        OK(close(null));
        OK(close(n));
        victims++;
    }
    struct stat st;
    OK(fstat(fd, &st));
    off_t at = append ? st.st_size : 0;
    CHECK(pwrite(fd, "Q", 1, 0) == 1, "pwrite after the program took the library's descriptor numbers: %s",
          strerror(errno));
    OK(fsync(fd));
    char c = 0;
    int r = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(r >= 0 && syscall(SYS_pread64, r, &c, 1, at) == 1 && c == 'Q',
          "the byte written after the dup2s is not in the file (read '%c')", c);
    syscall(SYS_close, r);
    NOTE("%d descriptor number(s) of the library's taken over by dup2; %s still served", victims, path);
}

static uint64_t counter(int which) {
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v), "stats");
    return v[which];
}

/* One detach trigger while the program holds a write lock on a routed file. */
static void atomic_detach_by(const char *path, const char *trigger, int round) {
    static uint8_t buf[8192];
    uint64_t routes = counter(DK_C_atomic_routes);
    int fd = prog_open(path, O_RDWR);
    CHECK(counter(DK_C_atomic_routes) == routes + 1, "%s: the open was not routed to the atomic engine", trigger);
    take(fd, F_WRLCK);
    st_fill(buf, (uint32_t)round + 7, 0, sizeof buf);
    CHECK(pwrite(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf, "pwrite: %s", strerror(errno));
    OK(fsync(fd));
    CHECK(lock_held(path, F_WRLCK, 0, 1), "%s: the lock is gone before the detach (routed write + fsync)", trigger);
    if (!strcmp(trigger, "fork")) {
        pid_t c = fork();
        if (c == 0) _exit(0);
        CHECK(c > 0 && waitpid(c, NULL, 0) == c, "fork/waitpid");
    } else if (!strcmp(trigger, "mmap")) {
        void *m = mmap(NULL, sizeof buf, PROT_READ, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
        CHECK(!memcmp(m, buf, sizeof buf), "the mapping does not show the committed write");
        OK(munmap(m, sizeof buf));
    } else if (!strcmp(trigger, "seek_data")) {
        CHECK(lseek(fd, 0, SEEK_DATA) == 0, "SEEK_DATA: %s", strerror(errno));
    } else if (!strcmp(trigger, "fallocate")) {
        CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 65536) == 0 || errno == EOPNOTSUPP, "fallocate: %s",
              strerror(errno));
    } else if (!strcmp(trigger, "copy_file_range")) {
        char other[PATH_MAX + 8];
        snprintf(other, sizeof other, "%s.copy", path);
        int o = OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0644));
        loff_t from = 0;
        CHECK(copy_file_range(fd, &from, o, NULL, 4096, 0) == 4096, "copy_file_range: %s", strerror(errno));
        OK(close(o));
    }
    CHECK(lock_held(path, F_WRLCK, 0, 1), "the lock is gone after the engine let the file go at %s", trigger);
    uint8_t back[sizeof buf];
    CHECK(pread(fd, back, sizeof back, 0) == (ssize_t)sizeof back && !memcmp(back, buf, sizeof buf),
          "%s: the data read back after the detach differs", trigger);
    if (round < 4) {
        OK(close(fd)); /* drops the lock, and the library's descriptor with it */
        n_program_fds--;
    } else {
        dup2_over_internal(fd, path, false);
    }
}

static uint64_t reopens(void) { return st_counter(DK_C_aux_opens); }

/* Waits until the background thread's prefaults have begun and then made no progress for 50 ms (at most 20 s);
 * returns the bytes prefaulted. */
static uint64_t prefaults_settled(void) {
    uint64_t last = st_counter(DK_C_prefault_bytes);
    for (int ms = 0, still = 0; ms < 20000 && (last == 0 || still < 50); ms += 5) {
        usleep(5000);
        uint64_t now = st_counter(DK_C_prefault_bytes);
        still = now == last ? still + 5 : 0, last = now;
    }
    return last;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    CHECK(argc > 2, "usage: shim_locks_kept DIR rdonly_map|append_publish|extend_prefault|strict_checkpoint|budget|atomic_detach");
    st_watchdog(60);
    for (int n = 0; n < 64; n++) open_at_start[n] = syscall(SYS_fcntl, n, F_GETFD) >= 0;
    const char *what = argv[2];
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "locked");
    uint8_t buf[65536];
    if (!strcmp(what, "rdonly_map")) { /* SQLite's read-only connection: SHARED lock, then reads */
        make(path, 1 << 20);
        int fd = prog_open(path, O_RDONLY);
        take(fd, F_RDLCK);
        for (int i = 0; i < 40; i++) CHECK(pread(fd, buf, 4096, (off_t)i * 4096) == 4096, "pread");
        CHECK(lock_held(path, F_RDLCK, 0, 1), "the read lock is gone after the library mapped the file");
        int w = prog_open(path, O_WRONLY); /* a writable descriptor of the same file: the lock stays ours */
        take(w, F_WRLCK);
        OK(pwrite(w, buf, 4096, 8192));
        CHECK(lock_held(path, F_WRLCK, 0, 1), "the write lock is gone after an overwrite");
        CHECK(reopens() > 0, "the library did not reopen the read-only file to map it: the case tests nothing");
        dup2_over_internal(w, path, false);
    } else if (!strcmp(what, "append_publish")) { /* an O_APPEND writer under its own lock */
        make(path, 0);
        int fd = prog_open(path, O_WRONLY | O_APPEND);
        take(fd, F_WRLCK);
        for (int i = 0; i < 8; i++) st_write_all(fd, buf, 5000);
        OK(fsync(fd));
        CHECK(lock_held(path, F_WRLCK, 0, 1), "the lock is gone after the publish at fsync");
        st_write_all(fd, buf, 60000);
        pid_t c = fork(); /* a publish point */
        if (c == 0) _exit(0);
        CHECK(c > 0 && waitpid(c, NULL, 0) == c, "fork/waitpid");
        CHECK(lock_held(path, F_WRLCK, 0, 1), "the lock is gone after the publish at fork");
        dup2_over_internal(fd, path, true);
    } else if (!strcmp(what, "extend_prefault")) { /* DAXKIT_APPEND=extend, DAXKIT_EXTEND_SYNC=keep */
        make(path, 0);
        int fd = prog_open(path, O_WRONLY);
        take(fd, F_WRLCK);
        for (int i = 0; i < 400; i++) st_write_all(fd, buf, sizeof buf); /* 25 MiB: several steps ahead */
        OK(fsync(fd));
        uint64_t prefaulted = prefaults_settled();
        CHECK(prefaulted > 0, "no prefault ran in 20 s of extension steps: the case tests nothing");
        NOTE("extend_prefault: %llu MiB prefaulted by the background thread", (unsigned long long)(prefaulted >> 20));
        CHECK(lock_held(path, F_WRLCK, 0, 1), "the lock is gone after the extension steps and prefaults");
        CHECK(reopens() > 0, "the library did not reopen the write-only file to map it: the case tests nothing");
        dup2_over_internal(fd, path, false);
    } else if (!strcmp(what, "strict_checkpoint")) { /* SQLite back from EXCLUSIVE to SHARED after a commit */
        make(path, 1 << 16);
        int fd = prog_open(path, O_RDWR);
        struct flock shared = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 100, .l_len = 1};
        struct flock excl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 1};
        OK(fcntl(fd, F_SETLK, &shared));
        for (int round = 0; round < 3; round++) {
            OK(fcntl(fd, F_SETLK, &excl));
            OK(pwrite(fd, buf, 4096, 8192));
            OK(pwrite(fd, buf, 4096, 1 << 16)); /* and an append */
            excl.l_type = F_UNLCK; /* a publish point: the checkpoint fdatasyncs the file */
            OK(fcntl(fd, F_SETLK, &excl));
            excl.l_type = F_WRLCK;
            CHECK(lock_held(path, F_RDLCK, 100, 1), "round %d: the shared lock is gone after the checkpoint", round);
        }
        dup2_over_internal(fd, path, false);
    } else if (!strcmp(what, "atomic_detach")) { /* DAXKIT_ATOMIC=*: the engine's own descriptor */
        make(path, 1 << 16);
        const char *triggers[] = {"fork", "mmap", "seek_data", "fallocate", "copy_file_range"};
        for (int i = 0; i < 5; i++) /* argv[3]: that trigger only */
            if (argc <= 3 || !strcmp(argv[3], triggers[i])) atomic_detach_by(path, triggers[i], argc > 3 ? 4 : i);
        NOTE("atomic_detach: lock held after the detach at %s", argc > 3 ? argv[3] :
             "fork, mmap, SEEK_DATA, fallocate(KEEP_SIZE), copy_file_range");
        return 0;
    } else if (!strcmp(what, "budget")) { /* kept descriptors stay within a quarter of RLIMIT_NOFILE */
        struct rlimit rl;
        OK(getrlimit(RLIMIT_NOFILE, &rl));
        rl.rlim_cur = 96; /* a budget of 24 */
        OK(setrlimit(RLIMIT_NOFILE, &rl));
        int fds[40];
        char name[PATH_MAX + 16];
        for (int i = 0; i < 40; i++) {
            snprintf(name, sizeof name, "%s.%d", path, i);
            make(name, 1 << 16);
            fds[i] = OK(open(name, O_RDONLY));
            for (int k = 0; k < 4; k++) CHECK(pread(fds[i], buf, 4096, 0) == 4096, "pread %s", name);
        }
        uint64_t v[DK_C_COUNT];
        CHECK(st_stats(getpid(), v), "stats");
        CHECK(v[DK_C_aux_opens] == 24 && v[DK_C_aux_refusals] >= 16,
              "%llu reopens kept and %llu refused for 40 read-only files with 96 descriptors allowed (want 24, >= 16)",
              (unsigned long long)v[DK_C_aux_opens], (unsigned long long)v[DK_C_aux_refusals]);
        /* the last file is mapped read-only: a write through a new writable descriptor must still work */
        int w = OK(open(name, O_WRONLY));
        CHECK(pwrite(w, "Z", 1, 0) == 1, "pwrite into a file mapped read-only: %s", strerror(errno));
        CHECK(pread(fds[39], buf, 1, 0) == 1 && buf[0] == 'Z', "the write is not seen through the read-only mapping");
        OK(close(w));
        /* An O_APPEND file on XFS would be relinked by clone through a reopen; none to spare: by copy at
         * the end of the program's own descriptor, and the bytes land in order. */
        snprintf(name, sizeof name, "%s.append", path);
        int a = OK(open(name, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, 0644));
        uint64_t before[DK_C_COUNT];
        CHECK(st_stats(getpid(), before), "stats");
        static uint8_t pat[3 << 18];
        st_fill(pat, 9, 0, sizeof pat);
        for (int k = 0; k < 3; k++) st_write_all(a, pat + k * (1 << 18), 1 << 18);
        OK(fsync(a));
        CHECK(st_stats(getpid(), v), "stats");
        CHECK(v[DK_C_relink_clones] == before[DK_C_relink_clones] && v[DK_C_aux_opens] == 24,
              "the O_APPEND file was relinked by clone through a reopen past the budget");
        CHECK(st_check_image(name, pat, sizeof pat), "the O_APPEND file relinked by copy differs from what was written");
        OK(close(a));
        for (int i = 0; i < 40; i++) OK(close(fds[i]));
        CHECK(st_stats(getpid(), v) && v[DK_C_aux_opens] == 24, "stats");
        NOTE("budget: 24 files reopened, %llu did without (read-only mapping); a write to one of them served",
             (unsigned long long)v[DK_C_aux_refusals]);
        return 0;
    } else {
        FAIL("unknown case %s", what);
    }
    NOTE("%s: lock held throughout; %llu file(s) reopened by the library", what, (unsigned long long)reopens());
    return 0;
}

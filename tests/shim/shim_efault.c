/* Description: with the library on, a call whose struct or name the kernel cannot read returns -1 EFAULT as
 * glibc alone does, instead of dying of SIGSEGV in the library's look before the kernel call (session 27:
 * common/userptr.h). One family per run, each call in a child of its own (a SIGSEGV is that case's failure):
 *   fcntl   fcntl/fcntl64 F_SETLK, F_SETLKW, F_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK with an unreadable
 *           struct flock, on a managed descriptor and on its mapped (untracked) lock file
 *   iov     readv, writev, preadv, pwritev, preadv2, pwritev2 with an unreadable iovec array (served file)
 *   name    rename/renameat/renameat2/link/linkat with an unreadable source name while an append is unpublished
 *           (the publish before a name reads it), utimensat/fchmodat/fchownat AT_EMPTY_PATH with one; under
 *           DAXKIT_MODE=strict also unlink, rename's target, open O_CREAT, creat, mkdir (strict's name records)
 *   rlimit  setrlimit/prlimit RLIMIT_FSIZE with an unreadable struct rlimit
 *   stat    fstat, stat, lstat, fstatat (also AT_EMPTY_PATH), statx, __fxstat, __xstat into an unwritable buffer
 *           with appends staged (the library corrects the size after the kernel's answer: pinned), and
 *           fstatat/fstatat64/statx AT_EMPTY_PATH with an unreadable name (fstatat's look at it for "")
 *   good    the positive control: a struct flock the library reads where the kernel can -- on the main thread's
 *           stack, another thread's, the heap, static data, and a read-only page -- takes the lock (a child
 *           process's F_GETLK sees it): a check that said "unreadable" too often would pass the cases above
 * Unreadable: a PROT_NONE page; fcntl also NULL and a range that ends on it.
 * Negative control: the base library (main ced5f12) dies of SIGSEGV in every fcntl, iov and name case, and the
 * FSIZE rlimit ones; the check mutated to "never readable" fails `good`.
 * Usage: shim_efault DIR FAMILY. Exit 0 pass, 1 fail. */
#include <pthread.h>
#include <sys/resource.h>
#include <sys/uio.h>

#include "shim_test.h"

int fcntl64(int fd, int cmd, ...);

static const char *dir;
static char *bad; /* a PROT_NONE page, above a readable one */
static bool strict;

typedef long (*case_fn)(void);
struct efcase {
    const char *name;
    case_fn fn;
};

static int fd, lfd; /* a served file with content; a lock file the program maps (untracked lock calls) */
static char path[PATH_MAX], path2[PATH_MAX];

static void setup(void) {
    st_path(path, sizeof path, dir, "efault");
    st_path(path2, sizeof path2, dir, "efault.2");
    fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char buf[8192];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 4; i++) st_write_all(fd, buf, sizeof buf);
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) OK(pread(fd, buf, 16, 0)); /* adopted and served */
    char lpath[PATH_MAX];
    st_path(lpath, sizeof lpath, dir, "efault.shm");
    lfd = OK(open(lpath, O_RDWR | O_CREAT | O_TRUNC, 0644));
    OK(ftruncate(lfd, 4096));
    CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0) != MAP_FAILED, "mmap: %s", strerror(errno));
    for (int i = 0; i < 2; i++) OK(st_setlk(lfd, F_WRLCK, 0, 0)), OK(st_setlk(lfd, F_UNLCK, 0, 0));
    char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(two != MAP_FAILED, "mmap: %s", strerror(errno));
    bad = two + 4096; /* a readable page below it: a struct may begin there and end on it */
    OK(mprotect(bad, 4096, PROT_NONE));
}

/* an append left unpublished: the publish before a name looks at the name */
static void unpublished(void) { st_write_all(fd, "tail", 4); }

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))
#define FC(id, call) static long id(void) { return (long)(call); }
FC(f_setlk, fcntl(fd, F_SETLK, bad))
FC(f_setlkw, fcntl(fd, F_SETLKW, bad))
FC(f_getlk, fcntl(fd, F_GETLK, bad))
FC(f_ofd_setlk, fcntl(fd, F_OFD_SETLK, bad))
FC(f_ofd_setlkw, fcntl(fd, F_OFD_SETLKW, bad))
FC(f_ofd_getlk, fcntl(fd, F_OFD_GETLK, bad))
FC(f64_setlk, fcntl64(fd, F_SETLK, bad))
FC(f64_getlk, fcntl64(fd, F_GETLK, bad))
FC(f_setlk_null, fcntl(fd, F_SETLK, NULL))
FC(f_setlk_straddle, fcntl(fd, F_SETLK, bad - 8)) /* the struct's last 24 bytes on the bad page */
FC(f_untracked_setlk, fcntl(lfd, F_SETLK, bad))
FC(f_untracked_setlkw, fcntl64(lfd, F_SETLKW, bad))
FC(f_untracked_getlk, fcntl(lfd, F_GETLK, bad))
static const struct efcase fcntl_cases[] = {
    {"fcntl F_SETLK", f_setlk}, {"fcntl F_SETLKW", f_setlkw}, {"fcntl F_GETLK", f_getlk},
    {"fcntl F_OFD_SETLK", f_ofd_setlk}, {"fcntl F_OFD_SETLKW", f_ofd_setlkw}, {"fcntl F_OFD_GETLK", f_ofd_getlk},
    {"fcntl64 F_SETLK", f64_setlk}, {"fcntl64 F_GETLK", f64_getlk}, {"fcntl F_SETLK NULL", f_setlk_null},
    {"fcntl F_SETLK across a page end", f_setlk_straddle}, {"fcntl F_SETLK (mapped lock file)", f_untracked_setlk},
    {"fcntl64 F_SETLKW (mapped lock file)", f_untracked_setlkw}, {"fcntl F_GETLK (mapped lock file)", f_untracked_getlk},
};

FC(v_readv, readv(fd, (struct iovec *)bad, 2))
FC(v_writev, writev(fd, (struct iovec *)bad, 2))
FC(v_preadv, preadv(fd, (struct iovec *)bad, 2, 0))
FC(v_pwritev, pwritev(fd, (struct iovec *)bad, 2, 0))
FC(v_preadv2, preadv2(fd, (struct iovec *)bad, 2, 0, 0))
FC(v_pwritev2, pwritev2(fd, (struct iovec *)bad, 2, 0, 0))
static const struct efcase iov_cases[] = {
    {"readv", v_readv}, {"writev", v_writev}, {"preadv", v_preadv},
    {"pwritev", v_pwritev}, {"preadv2", v_preadv2}, {"pwritev2", v_pwritev2},
};

#define FN(id, call) static long id(void) { unpublished(); return (long)(call); }
FN(n_rename, rename(bad, path2))
FN(n_renameat, renameat(AT_FDCWD, bad, AT_FDCWD, path2))
FN(n_renameat2, renameat2(AT_FDCWD, bad, AT_FDCWD, path2, 0))
FN(n_link, link(bad, path2))
FN(n_linkat, linkat(AT_FDCWD, bad, AT_FDCWD, path2, 0))
FN(n_linkat_empty, linkat(fd, bad, AT_FDCWD, path2, AT_EMPTY_PATH))
FN(n_utimensat_empty, utimensat(fd, bad, NULL, AT_EMPTY_PATH))
FN(n_fchmodat, fchmodat(AT_FDCWD, bad, 0644, 0)) /* (glibc refuses AT_EMPTY_PATH: EINVAL) */
FN(n_fchownat_empty, fchownat(fd, bad, (uid_t)-1, (gid_t)-1, AT_EMPTY_PATH))
FN(n_unlink, unlink(bad))
FN(n_unlinkat, unlinkat(AT_FDCWD, bad, 0))
FN(n_rename_to, rename(path, bad))
FN(n_open_creat, open(bad, O_RDWR | O_CREAT, 0644))
FN(n_openat_creat, openat(AT_FDCWD, bad, O_RDWR | O_CREAT, 0644))
FN(n_creat, creat(bad, 0644))
FN(n_mkdir, mkdir(bad, 0755))
static const struct efcase name_cases[] = {
    {"rename (source)", n_rename}, {"renameat (source)", n_renameat}, {"renameat2 (source)", n_renameat2},
    {"link (source)", n_link}, {"linkat (source)", n_linkat}, {"linkat AT_EMPTY_PATH", n_linkat_empty},
    {"utimensat AT_EMPTY_PATH", n_utimensat_empty}, {"fchmodat", n_fchmodat},
    {"fchownat AT_EMPTY_PATH", n_fchownat_empty},
    /* strict's name records; the other modes pass them to the kernel at once */
    {"unlink", n_unlink}, {"unlinkat", n_unlinkat}, {"rename (target)", n_rename_to},
    {"open O_CREAT", n_open_creat}, {"openat O_CREAT", n_openat_creat}, {"creat", n_creat}, {"mkdir", n_mkdir},
};

/* the stat family writes its buffer after the kernel filled it (shim/meta.c fix): pinned, with appends staged so
 * that the library has a size to put in */
int __fxstat(int ver, int fd, struct stat *st);
int __xstat(int ver, const char *path, struct stat *st);
FN(s_fstat, fstat(fd, (struct stat *)bad))
FN(s_stat, stat(path, (struct stat *)bad))
FN(s_lstat, lstat(path, (struct stat *)bad))
FN(s_fstatat, fstatat(AT_FDCWD, path, (struct stat *)bad, 0))
FN(s_fstatat_empty, fstatat(fd, "", (struct stat *)bad, AT_EMPTY_PATH))
FN(s_statx, statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, (struct statx *)bad))
static struct stat good_st;
static struct statx good_stx;
FN(s_fstatat_empty_badname, fstatat(fd, bad, &good_st, AT_EMPTY_PATH))
FN(s_fstatat64_empty_badname, fstatat64(fd, bad, (struct stat64 *)&good_st, AT_EMPTY_PATH))
FN(s_statx_empty_badname, statx(fd, bad, AT_EMPTY_PATH, STATX_BASIC_STATS, &good_stx))
FN(s_fxstat, __fxstat(1, fd, (struct stat *)bad))
FN(s_xstat, __xstat(1, path, (struct stat *)bad))
static const struct efcase stat_cases[] = {
    {"fstat", s_fstat}, {"stat", s_stat}, {"lstat", s_lstat}, {"fstatat", s_fstatat},
    {"fstatat AT_EMPTY_PATH", s_fstatat_empty}, {"statx AT_EMPTY_PATH", s_statx}, {"__fxstat", s_fxstat},
    {"__xstat", s_xstat}, {"fstatat AT_EMPTY_PATH, unreadable name", s_fstatat_empty_badname},
    {"fstatat64 AT_EMPTY_PATH, unreadable name", s_fstatat64_empty_badname},
    {"statx AT_EMPTY_PATH, unreadable name", s_statx_empty_badname},
};

FN(r_setrlimit, setrlimit(RLIMIT_FSIZE, (struct rlimit *)bad))
FN(r_prlimit, prlimit(0, RLIMIT_FSIZE, (struct rlimit *)bad, NULL))
FN(r_prlimit_pid, prlimit(getpid(), RLIMIT_FSIZE, (struct rlimit *)bad, NULL))
static const struct efcase rlimit_cases[] = {
    {"setrlimit RLIMIT_FSIZE", r_setrlimit}, {"prlimit(0) RLIMIT_FSIZE", r_prlimit},
    {"prlimit(pid) RLIMIT_FSIZE", r_prlimit_pid},
};

/* Each case in a child of its own: -1 EFAULT, not a signal. */
static void run_cases(const char *family, const struct efcase *c, size_t n) {
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        pid_t pid = OK(fork());
        if (pid == 0) {
            setup(); /* the child's own files: served here (a forked child's inherited ones may not be) */
            errno = 0;
            long r = c[i].fn();
            int e = errno;
            if (r == -1 && e == EFAULT) _exit(0);
            fprintf(stderr, "FAIL: %s: %s returned %ld errno %d (%s), expected -1 EFAULT\n", family, c[i].name, r, e,
                    strerror(e));
            _exit(1);
        }
        int st;
        OK(waitpid(pid, &st, 0));
        if (WIFSIGNALED(st)) {
            fprintf(stderr, "FAIL: %s: %s died of signal %d (%s): the library read what the kernel could not\n",
                    family, c[i].name, WTERMSIG(st), strsignal(WTERMSIG(st)));
            failed++;
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed++;
        }
    }
    CHECK(failed == 0, "%s: %d of %zu cases failed", family, failed, n);
    printf("ok: %s: %zu calls with an unreadable pointer: -1 EFAULT%s\n", family, n, strict ? " (strict)" : "");
}

/* ---- good: readable structs are read (the lock is taken) ---- */

/* Does another process see a write lock on byte `at` of fd's file? (F_GETLK from a child: its own locks would
 * not conflict with ours.) */
static bool held_elsewhere(int at) {
    pid_t pid = OK(fork());
    if (pid == 0) {
        struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};
        if (fcntl(fd, F_GETLK, &q) != 0) _exit(2);
        _exit(q.l_type == F_UNLCK ? 1 : 0);
    }
    int st;
    OK(waitpid(pid, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) <= 1, "F_GETLK child status 0x%x", st);
    return WEXITSTATUS(st) == 0;
}

static off_t kernel_size(void) {
    struct stat st;
    CHECK(syscall(SYS_fstat, fd, &st) == 0, "fstat: %s", strerror(errno));
    return st.st_size;
}

static void lock_through(struct flock *l, int at, const char *where) {
    *l = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};
    CHECK(fcntl(fd, F_SETLK, l) == 0, "good: F_SETLK through a struct flock %s: %s", where, strerror(errno));
    CHECK(held_elsewhere(at), "good: the lock through a struct flock %s is not held", where);
    /* the release is the library's too: it publishes an append (a release passed straight to the kernel, as
     * for an unreadable struct, would not) */
    off_t before = kernel_size();
    st_write_all(fd, "0123456789", 10);
    l->l_type = F_UNLCK;
    CHECK(fcntl(fd, F_SETLK, l) == 0, "good: F_UNLCK %s: %s", where, strerror(errno));
    CHECK(kernel_size() == before + 10, "good: the release through a struct flock %s left the kernel's size at %lld, "
          "not %lld: the library did not publish (it took the struct for unreadable?)", where,
          (long long)kernel_size(), (long long)before + 10);
    CHECK(!held_elsewhere(at), "good: the lock through a struct flock %s is still held after F_UNLCK", where);
}

static void *thread_lock(void *arg) {
    (void)arg;
    struct flock l;
    lock_through(&l, 2, "on another thread's stack");
    return NULL;
}

static void good(void) {
    struct flock on_stack;
    lock_through(&on_stack, 1, "on the main thread's stack");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_lock, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
    struct flock *heap = malloc(sizeof *heap);
    CHECK(heap, "malloc");
    lock_through(heap, 3, "on the heap");
    free(heap);
    static struct flock data;
    lock_through(&data, 4, "in static data");
    /* a read-only page: F_SETLK only reads it (the kernel too) */
    struct flock *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED, "mmap");
    *ro = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1};
    OK(mprotect(ro, 4096, PROT_READ));
    CHECK(fcntl(fd, F_SETLK, ro) == 0, "good: F_SETLK through a read-only struct flock: %s", strerror(errno));
    CHECK(held_elsewhere(5), "good: the lock through a read-only struct flock is not held");
    /* and a vector on the heap is written */
    struct iovec *v = malloc(2 * sizeof *v);
    CHECK(v, "malloc");
    v[0] = (struct iovec){.iov_base = "ab", .iov_len = 2};
    v[1] = (struct iovec){.iov_base = "cd", .iov_len = 2};
    CHECK(pwritev(fd, v, 2, 0) == 4, "good: pwritev through a heap iovec array: %s", strerror(errno));
    char b[4];
    CHECK(pread(fd, b, 4, 0) == 4 && !memcmp(b, "abcd", 4), "good: pwritev through a heap iovec array wrote no abcd");
    free(v);
    printf("ok: good: struct flock on two stacks, heap, static data and a read-only page read; heap iovec read\n");
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    CHECK(argc > 2, "usage: shim_efault DIR fcntl|iov|name|rlimit|stat|good");
    st_require_library();
    st_watchdog(60);
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *m = getenv("DAXKIT_MODE");
    strict = m && !strcmp(m, "strict");
    const char *which = argv[2];
    if (!strcmp(which, "fcntl")) run_cases(which, fcntl_cases, NCASES(fcntl_cases));
    else if (!strcmp(which, "iov")) run_cases(which, iov_cases, NCASES(iov_cases));
    else if (!strcmp(which, "name")) run_cases(which, name_cases, NCASES(name_cases));
    else if (!strcmp(which, "rlimit")) run_cases(which, rlimit_cases, NCASES(rlimit_cases));
    else if (!strcmp(which, "stat")) run_cases(which, stat_cases, NCASES(stat_cases));
    else if (!strcmp(which, "good")) setup(), good();
    else FAIL("unknown family '%s'", which);
    return 0;
}

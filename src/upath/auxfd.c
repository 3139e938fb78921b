/* A file's auxiliary descriptor. Mapping a file read-write needs an O_RDWR descriptor, and a relink by
 * FICLONERANGE one without O_APPEND; the program's may be neither. The kernel drops all of a process's
 * POSIX record locks on a file at the close of *any* of its descriptors, so a reopen closed right after
 * use took the program's locks away (a read-only SQLite connection lost its SHARED lock at its file's
 * first mapping; an O_APPEND writer its lock at a publish). The reopened descriptor is kept instead, and
 * closed only when the program closes a descriptor of the file -- when the kernel drops the locks anyway.
 * A reopen takes the lowest free number, which the program's next open() was to get (POSIX's lowest-number
 * rule: close(1) then open() must give 1 -- review 9, finding 21). So free numbers 0-2 are filled with
 * placeholders (opens of "/" with O_PATH, another file: closing them drops no lock) around the reopen, and
 * the reopened descriptor moves to a high number (dk_ifd_floor) by dup and close of the low one -- unless
 * the process may hold a POSIX record lock (asked for, or inherited across exec: common/internal_fd.h,
 * dk_ifd_move_begin): then the close would drop its locks, and the descriptor stays at the low number
 * (>= 3). A program's
 * dup2 onto a kept descriptor moves it first (up_aux_vacate). The DAXKIT_ATOMIC engine's descriptor (atomic_fd) is kept the same
 * way: the engine lets the file go at fork, the program's mmap, copy_file_range... while the program
 * keeps its descriptors (review 7, finding 3d); the kept descriptor goes at the program's next close, or
 * after the detach at its last. All are close-on-exec, except across an exec that keeps a descriptor of
 * the program's on the file open: the kernel's close of ours would drop the locks the kernel keeps for the
 * new image (review 7, finding 26; up_aux_keep_across_exec). */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/internal_fd.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/atomic_route.h"
#include "upath/internal.h"

/* Kept descriptors count against the program's RLIMIT_NOFILE: at most a quarter of it (16 at least) are
 * ours; past that the callers do without (a read-only mapping, a relink by copy, no prefault). */
static uint32_t kept_count;

static bool fits(int fl, bool need_rdwr) {
    if (fl < 0 || (fl & (O_APPEND | O_DIRECT))) return false; /* O_DIRECT: aligned IO only (publish.c) */
    return need_rdwr ? (fl & O_ACCMODE) == O_RDWR : (fl & O_ACCMODE) != O_RDONLY;
}

static void own(struct up_file *f, int fd, int *field) {
    up_fd_mark_internal(fd, true);
    struct up_fd *e = up_fd_entry(fd);
    if (e) e->aux_of = f;
    *field = fd;
    __atomic_add_fetch(&kept_count, 1, __ATOMIC_RELAXED);
}

static void disown(int *field) {
    struct up_fd *e = up_fd_entry(*field);
    if (e) e->aux_of = NULL;
    up_fd_mark_internal(*field, false);
    DK_ERRNO_SAVE;
    dk_libc()->close(*field);
    DK_ERRNO_RESTORE;
    *field = -1;
    __atomic_sub_fetch(&kept_count, 1, __ATOMIC_RELAXED);
}

static bool within_budget(void) {
    struct rlimit rl;
    uint64_t budget = 128;
    if (dk_libc()->getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        budget = DK_MAX(16, rl.rlim_cur / 4);
    return __atomic_load_n(&kept_count, __ATOMIC_RELAXED) < budget;
}

/* Fills free numbers 0-2 with placeholders; returns how many, their numbers in ph. */
static int fill_low(int ph[3]) {
    const struct dk_libc *c = dk_libc();
    int n = 0;
    for (int i = 0; i < 3; i++) {
        if (c->fcntl(i, F_GETFD) >= 0) continue;
        int p = c->open("/", O_PATH | O_CLOEXEC);
        if (p < 0) break;
        if (p > 2) { /* taken meanwhile by another thread: nothing below 3 is free now */
            c->close(p);
            break;
        }
        ph[n++] = p;
    }
    return n;
}

/* The file reopened read-write, at a number the program's next open would not have taken (header). */
static int reopen_kept(int fd) {
    const struct dk_libc *c = dk_libc();
    int cancel_was = dk_cancel_off(); /* under the file's mutex (a publish, a prefault): open, read and close are
                                       * cancellation points, and a thread cancelled here kept the mutex */
    (void)dk_ifd_locks_maybe_held(); /* (its first look reads /proc/locks: not inside the window) */
    int ph[3];
    /* A window (common/internal_fd.h): the placeholders and the reopen hold low numbers until the move. */
    dk_ifd_begin();
    int n_ph = fill_low(ph);
    int a = up_fd_reopen(fd, O_RDWR);
    int e = errno;
    if (a >= 0 && dk_ifd_move_begin()) {
        int hi = c->fcntl(a, F_DUPFD_CLOEXEC, dk_ifd_floor());
        if (hi >= 0) { /* else (a low RLIMIT_NOFILE, all high numbers taken) the low number stays */
            c->close(a);
            a = hi;
        }
        dk_ifd_move_end();
    }
    for (int i = 0; i < n_ph; i++) c->close(ph[i]);
    dk_ifd_end();
    dk_cancel_restore(cancel_was);
    errno = e;
    return a;
}

int up_aux_fd(struct up_file *f, int fd, bool need_rdwr) {
    if (fits(up_fd_flags(fd), need_rdwr)) return fd;
    return up_aux_fd_own(f, fd);
}

int up_aux_fd_own(struct up_file *f, int fd) {
    if (f->aux_fd >= 0) return f->aux_fd; /* opened O_RDWR: fits both */
    if (!within_budget()) {
        dk_count(DK_C_aux_refusals, 1);
        return -EMFILE;
    }
    DK_ERRNO_SAVE;
    int a = reopen_kept(fd);
    int e = errno;
    DK_ERRNO_RESTORE;
    if (a < 0) return -e;
    own(f, a, &f->aux_fd);
    f->aux_fork_gen = up_fork_gen;
    dk_count(DK_C_aux_opens, 1);
    return a;
}

int up_atomic_fd(struct up_file *f, int fd) {
    if (f->atomic_fd >= 0) return f->atomic_fd;
    DK_ERRNO_SAVE;
    int a = reopen_kept(fd);
    int e = errno;
    DK_ERRNO_RESTORE;
    if (a < 0) return -e;
    own(f, a, &f->atomic_fd);
    return a;
}

void up_aux_close(struct up_file *f) {
    if (f->aux_fd >= 0) disown(&f->aux_fd);
    if (f->atomic_fd >= 0 && !f->atomic) disown(&f->atomic_fd); /* attached: the engine still uses it */
}

void up_aux_vacate(int newfd) {
    struct up_fd *e = up_fd_entry(newfd);
    struct up_file *f = e ? e->aux_of : NULL;
    if (!f) return;
    bool held = up_atomic_hold(); /* the engine that may use atomic_fd stays attached or detached meanwhile */
    up_file_lock(f);
    int *field = f->aux_fd == newfd      ? &f->aux_fd
                 : f->atomic_fd == newfd ? &f->atomic_fd
                                         : NULL;
    if (field) {
        DK_ERRNO_SAVE;
        int moved = dk_libc()->fcntl(newfd, F_DUPFD_CLOEXEC, dk_ifd_floor());
        DK_ERRNO_RESTORE;
        e->aux_of = NULL;
        up_fd_mark_internal(newfd, false); /* the program's dup2 closes it in the kernel next */
        *field = -1;
        __atomic_sub_fetch(&kept_count, 1, __ATOMIC_RELAXED);
        if (moved >= 0) own(f, moved, field);
        if (field == &f->atomic_fd) up_atomic_fd_moved(f, moved);
    }
    dk_mu_unlock(&f->mu);
    up_atomic_release(held);
}

/* ---- exec ----
 * POSIX record locks survive an exec for as long as a descriptor of the file stays open, and the close of
 * *any* descriptor of the file drops them: the kernel's close of a kept close-on-exec descriptor during the
 * exec would take away a lock the program kept on purpose (a daemon's pidfile lock across a re-exec, a
 * wrapper exec'ing the real program). So when one of the program's descriptors of a file survives the
 * exec, the file's kept descriptors survive it too: the new image inherits them (unknown to it, closed at
 * its exit or by a close_range of its own -- the price of the kernel's lock semantics: docs/guarantees.md).
 * OFD locks belong to the program's open file description, which ours never is: nothing to do for them. A
 * failed exec makes them close-on-exec again. */
static int exec_kept[64];
static int exec_kept_count;

static void keep_one(int fd) {
    const struct dk_libc *c = dk_libc();
    int fl = fd >= 0 ? c->fcntl(fd, F_GETFD) : -1;
    if (fl < 0 || !(fl & FD_CLOEXEC) || exec_kept_count == (int)DK_ARRAY_LEN(exec_kept)) return;
    if (c->fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) == 0) {
        exec_kept[exec_kept_count++] = fd;
        dk_count(DK_C_aux_exec_kept, 1);
    }
}

void up_aux_keep_across_exec(struct up_file *f) {
    keep_one(f->aux_fd);
    keep_one(f->atomic_fd);
}

void up_aux_exec_failed(void) {
    const struct dk_libc *c = dk_libc();
    for (int i = 0; i < exec_kept_count; i++) c->fcntl(exec_kept[i], F_SETFD, FD_CLOEXEC);
    exec_kept_count = 0;
}

/* ---- a recovery's descriptor in a process that may hold POSIX locks ----
 * inflight.c replays a dead process's log inside the program's lock call; the replay opens the files its
 * records name, and closing them would drop every POSIX lock the program holds on them -- the lock it just
 * took on the very file, for a program that locks its data file (SQLite). A process that never asked for a
 * POSIX lock closes them; otherwise the descriptor becomes the file's kept auxiliary one (closed at the
 * program's next close of the file, when the kernel drops the locks anyway), or, where the file has one
 * already or is not open here, stays open for the process's life (counted; one per file per dead process). */
static uint64_t parked_count;

void up_aux_adopt_or_close(dev_t dev, ino_t ino, int fd) {
    const struct dk_libc *c = dk_libc();
    DK_ERRNO_SAVE;
    if (!dk_ifd_locks_maybe_held()) {
        c->close(fd);
        DK_ERRNO_RESTORE;
        return;
    }
    bool kept = false;
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(dev, ino);
    if (f) {
        up_file_lock(f);
        if (f->aux_fd < 0 && fits(c->fcntl(fd, F_GETFL), true)) {
            own(f, fd, &f->aux_fd);
            kept = true;
        }
        dk_mu_unlock(&f->mu);
    }
    up_table_unlock();
    if (!kept) {
        up_fd_mark_internal(fd, true); /* out of the program's close and dup2 */
        __atomic_add_fetch(&parked_count, 1, __ATOMIC_RELAXED);
    }
    DK_ERRNO_RESTORE;
}

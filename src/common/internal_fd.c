/* Descriptors the library opens for itself, kept out of the program's numbers (internal_fd.h). */
#include "common/internal_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "shim/libc.h"

uint64_t dk_ifd_starts, dk_ifd_ends;
__thread unsigned dk_ifd_mine __attribute__((tls_model("initial-exec")));

__thread sigset_t dk_ifd_saved_mask;
__thread int dk_ifd_saved_cancel;

int dk_ifd_floor(void) {
    struct rlimit rl;
    bool limited = dk_libc()->getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
    return dk_internal_fd_floor(limited ? (long)rl.rlim_cur : 0, limited);
}

/* fd (below floor) duplicated to floor or above with close-on-exec as `cloexec` says, and closed. errno kept. */
static int move_up_as(int fd, int floor, bool cloexec) {
    const struct dk_libc *c = dk_libc();
    int e = errno;
    int hi = c->fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, floor);
    if (hi >= 0) {
        c->close(fd);
        fd = hi;
    }
    errno = e;
    return fd;
}

/* Inside a window: the descriptor at dk_ifd_floor() or above, with its close-on-exec flag. errno kept. */
int dk_ifd_move_up(int fd) {
    int floor = dk_ifd_floor();
    if (fd < 0 || fd >= floor) return fd;
    int e = errno;
    int fl = dk_libc()->fcntl(fd, F_GETFD);
    errno = e;
    return move_up_as(fd, floor, fl >= 0 && (fl & FD_CLOEXEC));
}

/* The flag is the open's own O_CLOEXEC: no F_GETFD (a system call per internal open, 3 of a process start). */
int dk_ifd_openat(int dirfd, const char *path, int flags, mode_t mode) {
    dk_ifd_begin();
    int fd = dk_libc()->openat(dirfd, path, flags, mode);
    if (fd >= 0) {
        int floor = dk_ifd_floor();
        if (fd < floor) fd = move_up_as(fd, floor, (flags & O_CLOEXEC) != 0);
    }
    dk_ifd_end();
    return fd;
}

DIR *dk_ifd_opendirat(int dirfd, const char *path) {
    int fd = dk_ifd_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        dk_libc()->close(fd);
        errno = e;
    }
    return d;
}

/* Windows that outlasted a wait (IFD_WAIT_MAX_NS): how many were open then (starts - ends). While no more are
 * open than that, nobody waits again; reset once all are closed. */
#define IFD_WAIT_MAX_NS 1000000000ull
static uint64_t stuck_open;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits until no window of another thread is open: system calls only, so each ends soon; on a loaded machine
 * its thread may be off the CPU, hence yields, then short sleeps (raw: libc's nanosleep is a cancellation
 * point, and a program's open cancelled here would leak its new descriptor). A thread's own window (its
 * signal handler interrupted it) is not waited for. A window's system call may itself wait -- a directory
 * lookup on a slow or stuck file system (review 15, finding 5; the strict paths open only directories on
 * managed, local media, but a frozen one stays possible): after 1 s the wait gives up (false, counted) and
 * the caller goes on as if no window had overlapped -- the race a window closes is a few instructions wide,
 * a process-wide stall worse; those windows are not waited for again while no others open. */
static bool wait_windows_at(uint64_t *closed_at) {
    if (dk_ifd_mine) return false;
    dk_count(DK_C_ifd_waits, 1);
    uint64_t since = 0;
    for (unsigned i = 0;; i++) {
        uint64_t s = __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST);
        uint64_t e = __atomic_load_n(&dk_ifd_ends, __ATOMIC_SEQ_CST);
        if (e == s) {
            if (__atomic_load_n(&stuck_open, __ATOMIC_RELAXED)) __atomic_store_n(&stuck_open, 0, __ATOMIC_RELAXED);
            *closed_at = s; /* every window begun up to s had ended */
            return true;
        }
        uint64_t stuck = __atomic_load_n(&stuck_open, __ATOMIC_RELAXED);
        if (stuck && s - e <= stuck) return false;
        if (i < 64) {
            sched_yield();
            continue;
        }
        uint64_t now = mono_ns();
        if (!since) since = now;
        else if (now - since > IFD_WAIT_MAX_NS) {
            __atomic_store_n(&stuck_open, s - e, __ATOMIC_RELAXED);
            dk_count(DK_C_ifd_wait_gaveup, 1);
            return false;
        }
        syscall(SYS_nanosleep, &(struct timespec){0, 20000}, NULL); /* not a cancellation point */
    }
}
static bool wait_windows(void) {
    uint64_t at;
    return wait_windows_at(&at);
}

void dk_ifd_settle_slow(void) {
    int e = errno;
    wait_windows();
    errno = e;
}

/* The program's new descriptor fd was made while a window was open: once the windows are closed, the lowest
 * free number >= floor is what the kernel would have given -- fd itself, or a lower one a window held. Again
 * while a window opened meanwhile (it may hold that number now; a few rounds at most: each window ends). */
static int relower(int fd, int floor) {
    const struct dk_libc *c = dk_libc();
    for (int round = 0; round < 64; round++) {
        uint64_t s;
        if (!wait_windows_at(&s)) break; /* (s read with the look that found them closed: one begun since counts) */
        int fl = c->fcntl(fd, F_GETFD);
        int low = fl < 0 ? -1 : c->fcntl(fd, (fl & FD_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, floor < 0 ? 0 : floor);
        if (low >= 0 && low < fd) {
            c->close(fd);
            dk_count(DK_C_ifd_relowered, 1);
            fd = low;
        } else if (low >= 0) {
            c->close(low);
        }
        if (low < 0 || __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST) == s) break;
    }
    return fd;
}

/* ---- POSIX record locks (internal_fd.h) ----
 * locks_asked: set by the first POSIX lock request of the process, for good. movers: moves between their look
 * at it and their close of the old number (a lock request that sees one waits). mover_depth: this thread's
 * moves in progress (a signal handler's open inside its thread's move nests; its lock call does not wait). */
static bool locks_asked;
static uint32_t movers;
static __thread unsigned mover_depth;

void dk_ifd_lock_gate(void) {
    if (__builtin_expect(__atomic_load_n(&locks_asked, __ATOMIC_RELAXED), 1) && !__atomic_load_n(&movers, __ATOMIC_SEQ_CST))
        return;
    __atomic_store_n(&locks_asked, true, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&movers, __ATOMIC_SEQ_CST) && !mover_depth) sched_yield();
}

/* Locks this process image never asked for: taken before an exec, they survive into it (a wrapper that
 * locks a file and execs the program: review 10, finding 12). Once: /proc/locks lists every POSIX lock with
 * its owner's pid (as this pid namespace sees it; a lock is owned by the process, which keeps its pid
 * across exec). Any line "N: POSIX ... <our pid> ..." that is not a waiter's ("->") counts as a lock asked
 * for; later ones pass the gate. Unreadable: assumed held (no move). errno kept. */
static bool inherited_locks_seen(void) {
    static int state; /* 0 not looked yet, 1 none, 2 some (or unknown) */
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s) return s == 2;
    const struct dk_libc *c = dk_libc();
    int e = errno;
    bool found = false;
    int lfd = dk_ifd_openat(AT_FDCWD, "/proc/locks", O_RDONLY | O_CLOEXEC, 0);
    if (lfd < 0) found = true;
    char buf[8192], line[256], me[24];
    snprintf(me, sizeof me, " %d ", (int)getpid());
    size_t ll = 0;
    ssize_t r;
    while (!found && lfd >= 0 && (r = c->read(lfd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r && !found; i++) {
            if (buf[i] != '\n') {
                if (ll < sizeof line - 1) line[ll++] = buf[i];
                continue;
            }
            line[ll] = 0;
            ll = 0;
            found = strstr(line, ": POSIX ") && !strstr(line, "->") && strstr(line, me);
        }
    }
    if (lfd >= 0) c->close(lfd);
    __atomic_store_n(&state, found ? 2 : 1, __ATOMIC_RELEASE);
    errno = e;
    return found;
}

bool dk_ifd_locks_maybe_held(void) {
    if (__atomic_load_n(&locks_asked, __ATOMIC_SEQ_CST)) return true;
    if (!inherited_locks_seen()) return false;
    __atomic_store_n(&locks_asked, true, __ATOMIC_SEQ_CST);
    return true;
}

bool dk_ifd_move_begin(void) {
    if (dk_ifd_locks_maybe_held()) return false;
    mover_depth++;
    __atomic_add_fetch(&movers, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&locks_asked, __ATOMIC_SEQ_CST)) return true;
    dk_ifd_move_end(); /* a lock request came in between */
    return false;
}

void dk_ifd_move_end(void) {
    __atomic_sub_fetch(&movers, 1, __ATOMIC_SEQ_CST);
    mover_depth--;
}

/* The program's open or dup made while a window held a lower number: moved down, unless the process may hold
 * POSIX locks (the move's close would drop them: review 14, finding 3) -- then the number stays as the kernel
 * gave it (one a window shuffled). errno kept: the program's call succeeded. No cancellation point: the
 * kernel's descriptor exists already, and a thread cancelled in the close (or the first read of /proc/locks)
 * would leave it and its copy open, unknown to the program (review 14, finding 9). */
int dk_ifd_relower_slow(int fd, int floor) {
    int e = errno;
    int cancel_was = dk_cancel_off();
    if (dk_ifd_move_begin()) {
        fd = relower(fd, floor);
        dk_ifd_move_end();
    }
    dk_cancel_restore(cancel_was);
    errno = e;
    return fd;
}

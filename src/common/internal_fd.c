/* Descriptors the library opens for itself, kept out of the program's numbers (internal_fd.h). */
#include "common/internal_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/stats.h"
#include "shim/libc.h"

uint64_t dk_ifd_starts, dk_ifd_ends;
__thread unsigned dk_ifd_mine __attribute__((tls_model("initial-exec")));

static __thread sigset_t ifd_saved_mask;

/* (glibc's pthread_sigmask keeps its own cancellation and set*id signals unblocked, and sets no errno) */
void dk_ifd_signals_block(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &ifd_saved_mask);
}
void dk_ifd_signals_restore(void) { pthread_sigmask(SIG_SETMASK, &ifd_saved_mask, NULL); }

int dk_ifd_floor(void) {
    struct rlimit rl;
    bool limited = dk_libc()->getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
    return dk_internal_fd_floor(limited ? (long)rl.rlim_cur : 0, limited);
}

/* Inside a window: the descriptor at dk_ifd_floor() or above, with its close-on-exec flag. errno kept. */
int dk_ifd_move_up(int fd) {
    const struct dk_libc *c = dk_libc();
    int floor = dk_ifd_floor();
    if (fd < 0 || fd >= floor) return fd;
    int e = errno;
    int fl = c->fcntl(fd, F_GETFD);
    int hi = c->fcntl(fd, fl >= 0 && (fl & FD_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, floor);
    if (hi >= 0) {
        c->close(fd);
        fd = hi;
    }
    errno = e;
    return fd;
}

int dk_ifd_openat(int dirfd, const char *path, int flags, mode_t mode) {
    dk_ifd_begin();
    int fd = dk_libc()->openat(dirfd, path, flags, mode);
    fd = dk_ifd_move_up(fd);
    dk_ifd_end();
    return fd;
}

/* Waits until no window of another thread is open: system calls only, so each ends soon; on a loaded machine
 * its thread may be off the CPU, hence yields, then short sleeps (raw: libc's nanosleep is a cancellation
 * point, and a program's open cancelled here would leak its new descriptor). A thread's own window (its
 * signal handler interrupted it) is not waited for. */
static bool wait_windows_at(uint64_t *closed_at) {
    if (dk_ifd_mine) return false;
    dk_count(DK_C_ifd_waits, 1);
    for (unsigned i = 0;; i++) {
        uint64_t s = __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&dk_ifd_ends, __ATOMIC_SEQ_CST) == s) {
            *closed_at = s; /* every window begun up to s had ended */
            return true;
        }
        if (i < 64) sched_yield();
        else syscall(SYS_nanosleep, &(struct timespec){0, 20000}, NULL); /* not a cancellation point */
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
int dk_ifd_relower_slow(int fd, int floor) {
    const struct dk_libc *c = dk_libc();
    int e = errno;
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
    errno = e;
    return fd;
}

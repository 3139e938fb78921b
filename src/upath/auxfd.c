/* A file's auxiliary descriptor. Mapping a file read-write needs an O_RDWR descriptor, and a relink by
 * FICLONERANGE one without O_APPEND; the program's may be neither. The kernel drops all of a process's
 * POSIX record locks on a file at the close of *any* of its descriptors, so a reopen closed right after
 * use took the program's locks away (a read-only SQLite connection lost its SHARED lock at its file's
 * first mapping; an O_APPEND writer its lock at a publish). The reopened descriptor is kept instead, and
 * closed only when the program closes a descriptor of the file -- when the kernel drops the locks anyway.
 * It is not moved to a high number (closing the low one would drop them too): a program's dup2 onto it
 * moves it first (up_aux_vacate). The DAXKIT_ATOMIC engine's descriptor (atomic_fd) is kept the same
 * way: the engine lets the file go at fork, the program's mmap, copy_file_range... while the program
 * keeps its descriptors (review 7, finding 3d); the kept descriptor goes at the program's next close, or
 * after the detach at its last. All are close-on-exec: an exec still drops the program's locks on such a
 * file. */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>

#include "common/stats.h"
#include "shim/libc.h"
#include "upath/atomic_route.h"
#include "upath/internal.h"

/* Kept descriptors count against the program's RLIMIT_NOFILE: at most a quarter of it (16 at least) are
 * ours; past that the callers do without (a read-only mapping, a relink by copy, no prefault). */
static uint32_t kept_count;

static bool fits(int fl, bool need_rdwr) {
    if (fl < 0 || (fl & O_APPEND)) return false;
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

int up_aux_fd(struct up_file *f, int fd, bool need_rdwr) {
    if (fits(up_fd_flags(fd), need_rdwr)) return fd;
    if (f->aux_fd >= 0) return f->aux_fd; /* opened O_RDWR: fits both */
    if (!within_budget()) {
        dk_count(DK_C_aux_refusals, 1);
        return -EMFILE;
    }
    DK_ERRNO_SAVE;
    int a = up_fd_reopen(fd, O_RDWR);
    int e = errno;
    DK_ERRNO_RESTORE;
    if (a < 0) return -e;
    own(f, a, &f->aux_fd);
    dk_count(DK_C_aux_opens, 1);
    return a;
}

int up_atomic_fd(struct up_file *f, int fd) {
    if (f->atomic_fd >= 0) return f->atomic_fd;
    DK_ERRNO_SAVE;
    int a = up_fd_reopen(fd, O_RDWR);
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
    up_atomic_hold(); /* the engine that may use atomic_fd stays attached or detached meanwhile */
    pthread_mutex_lock(&f->mu);
    int *field = f->aux_fd == newfd      ? &f->aux_fd
                 : f->atomic_fd == newfd ? &f->atomic_fd
                                         : NULL;
    if (field) {
        DK_ERRNO_SAVE;
        int moved = dk_libc()->fcntl(newfd, F_DUPFD_CLOEXEC, up_internal_fd_floor());
        DK_ERRNO_RESTORE;
        e->aux_of = NULL;
        up_fd_mark_internal(newfd, false); /* the program's dup2 closes it in the kernel next */
        *field = -1;
        __atomic_sub_fetch(&kept_count, 1, __ATOMIC_RELAXED);
        if (moved >= 0) own(f, moved, field);
        if (field == &f->atomic_fd) up_atomic_fd_moved(f, moved);
    }
    pthread_mutex_unlock(&f->mu);
    up_atomic_release();
}

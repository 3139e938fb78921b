/* Sync and strict modes' fdatasync after a change the kernel made to a managed file (a pass-through write,
 * truncate, fallocate or in-kernel copy; a write through a vacated number: vacant.c), and its one rule for a
 * descriptor closed meanwhile.
 *
 * The call is named in its thread's call record from before the kernel's call until after this fdatasync
 * (shim.h: dk_pt_begin_change; calls.h), so a close, dup2/dup3 over the number or close_range waits for both:
 * the fdatasync syncs the file the call changed. It still finds the number closed (EBADF) after a close that
 * does not wait: a signal handler's close of the descriptor its own thread is writing through, or one made
 * by a thread inside a library call (calls.h: such closers never wait); a raw close system call; a call
 * nested in signal handlers deeper than the borrowed records. The change happened -- -1/EBADF would make a
 * program that retries on EBADF write its record twice (review 15, finding 9) -- so the call returns its
 * result; the change is not made durable by the library then (there is no descriptor left to sync it
 * through; sync() of the whole machine, session 15's answer, is not a library call's to make), counted
 * pt_sync_closed (docs/guarantees.md). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/internal_fd.h"
#include "shim/libc.h"
#include "common/stats.h"
#include "upath/calls.h"
#include "upath/upath.h"

int up_pt_datasync(int fd) {
    DK_CRASH_POINT("upath.pt_sync.before"); /* tests: another thread closes the number here (shim_pt_sync_ebadf) */
    DK_ERRNO_SAVE;
    /* the raw system call: no cancellation point while the call is named (a closer may wait for it) */
    long rc = syscall(SYS_fdatasync, fd);
    int err = rc ? errno : 0;
    DK_ERRNO_RESTORE;
    if (DK_LIKELY(err == 0)) {
        dk_count(DK_C_pt_synced, 1);
        return 0;
    }
    if (err != EBADF) return err;
    dk_count(DK_C_pt_sync_closed, 1);
    return 0;
}

void up_pt_cancelled(void *named) {
    if (named) up_call_leave(); /* the thread is cancelled inside the kernel's call: its name goes */
}

/* A truncate by name: through a descriptor of the file the process has (fd, checked to be the file's), else
 * through one opened for it -- O_RDONLY (O_WRONLY when reading is not permitted: the truncate needed write
 * permission), inside the fd window (internal_fd.h: no number of the program's), checked to be the file
 * truncated -- and closed. That close would drop every POSIX record lock of the process on the file (auxfd.c),
 * so it is made only while the process holds none (dk_ifd_move_begin: a lock request waits for it). Not synced
 * then, nor when another file is at the name now or it cannot be opened: 0 (the truncate happened; session 25).
 * System calls only: no cancellation point. */
int up_path_datasync(const char *path, dev_t dev, ino_t ino, int fd) {
    DK_ERRNO_SAVE;
    struct stat st;
    int err = 0;
    bool mine = fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
    bool moving = !mine && dk_ifd_move_begin();
    if (moving) {
        int fl = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
        fd = dk_ifd_openat(AT_FDCWD, path, O_RDONLY | fl, 0);
        if (fd < 0 && errno == EACCES) fd = dk_ifd_openat(AT_FDCWD, path, O_WRONLY | fl, 0);
        mine = fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
    }
    if (mine) {
        if (syscall(SYS_fdatasync, fd) != 0) err = errno == EBADF ? 0 : errno; /* (the program's, closed meanwhile) */
        else DK_CRASH_POINT("upath.truncate_name.synced"); /* tests: shim_exit_sync truncate, own truncate */
    }
    if (moving) {
        if (fd >= 0) syscall(SYS_close, fd);
        dk_ifd_move_end();
    }
    DK_ERRNO_RESTORE;
    return err;
}

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
#include <sys/syscall.h>
#include <unistd.h>

#include "common/crashpoint.h"
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

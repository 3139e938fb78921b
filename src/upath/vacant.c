/* A pass-through write through a vacated number: the program closed a managed descriptor, and another of
 * its threads writes through the number meanwhile (a log closed and reopened under its writers). The write
 * looked the number up with no slot; when an open gives the number to a file before the kernel serves the
 * write, the write reaches that file through the kernel -- with neither a strict record nor sync mode's
 * fdatasync (lifetime13). Such a write is named in its thread's record from before its look at the slot
 * to its end, and syncs its file itself; the open waits for it before it adopts the file and returns
 * (fdtab.c: up_fd_opening), so the number still names that file when the write syncs it, and the adoption
 * sees the size the write left. Like any write the kernel serves for a managed file, it is not atomic
 * (docs/guarantees.md). */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/config.h"
#include "common/stats.h"
#include "upath/calls.h"
#include "upath/internal.h"
#include "upath/upath.h"

int up_pt_vacant_enter(int fd, uint32_t *gen) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return 0;
    *gen = __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE);
    return up_call_enter_vacant(e);
}

ssize_t up_pt_vacant_end(int fd, ssize_t r, uint32_t gen) {
    if (r > 0) {
        DK_ERRNO_SAVE;
        dk_count(DK_C_open_race_writes, 1);
        /* the raw system call: no cancellation point while named (an open may wait for the name) */
        long rc = dk_cfg.mode == DK_MODE_POSIX ? 0 : syscall(SYS_fdatasync, fd);
        int err = rc ? errno : 0;
        DK_ERRNO_RESTORE;
        if (rc == 0 && dk_cfg.mode != DK_MODE_POSIX) dk_count(DK_C_pt_synced, 1);
        if (err == EINVAL || err == EROFS) {
            /* a socket, pipe or device took the number (not an open's file): settled, unless closed since */
            struct up_fd *e = up_fd_entry(fd);
            if (e && __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE) == gen)
                __atomic_store_n(&e->vac_clean, gen, __ATOMIC_RELEASE);
        } else if (err) {
            up_call_leave();
            errno = err; /* the write reached a file that could not be synced: as dk_pt_end_changed */
            return -1;
        }
    }
    up_call_leave();
    return r;
}

void up_pt_vacant_cancelled(void *arg) {
    (void)arg;
    up_call_leave(); /* the thread is cancelled inside the kernel's call: its name goes */
}

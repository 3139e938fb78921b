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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/stats.h"
#include "upath/calls.h"
#include "upath/internal.h"
#include "upath/upath.h"

/* The number names something no open of the program's can be binding (a pipe, a socket, a file on no managed
 * device -- not interposed fd-making calls took it): settled, unless closed since. */
static void settle(struct up_fd *e, uint32_t gen) {
    if (__atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE) == gen) __atomic_store_n(&e->vac_clean, gen, __ATOMIC_RELEASE);
}

int up_pt_vacant_enter(int fd, uint32_t *gen) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return 0;
    *gen = __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE);
    /* Named only when the write can reach a managed file: a blocked write to a pipe or socket that took the
     * number must not hold up the next open (review 15, finding 6). Closed (EBADF): an open may be giving it
     * back -- named. A number closed and given to a managed file between this look and the write is the
     * race left (design-upath.md). */
    struct stat st;
    DK_ERRNO_SAVE;
    long rc = syscall(SYS_fstat, fd, &st);
    DK_ERRNO_RESTORE;
    if (rc == 0 && (!S_ISREG(st.st_mode) || !up_dev_is_managed(st.st_dev))) {
        settle(e, *gen);
        return 0;
    }
    DK_CRASH_POINT("upath.vacant.naming"); /* tests: another thread's open gives the number again here */
    return up_call_enter_vacant(e);
}

ssize_t up_pt_vacant_end(int fd, ssize_t r, uint32_t gen) {
    if (r > 0) {
        dk_count(DK_C_open_race_writes, 1);
        int err = dk_cfg.mode == DK_MODE_POSIX ? 0 : up_pt_datasync(fd); /* (EBADF: ptsync.c's one rule) */
        if (err == EINVAL || err == EROFS) {
            /* a socket, pipe or device took the number (not an open's file): settled, unless closed since */
            struct up_fd *e = up_fd_entry(fd);
            if (e) settle(e, gen);
        } else if (err) {
            up_call_leave();
            errno = err; /* the write reached a file that could not be synced: as a managed descriptor's */
            return -1;
        }
    }
    up_call_leave();
    return r;
}

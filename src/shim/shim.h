/* Shared helpers of the preload entry points. Entry points decide "served or passed through" and
 * dispatch; no policy lives in the shim. */
#ifndef DK_SHIM_SHIM_H
#define DK_SHIM_SHIM_H

#include <fcntl.h>
#include <pthread.h>

#include "common/config.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/upath.h"

/* The served path is a cancellation point wherever libc's call is one. */
#define DK_CANCEL_POINT() pthread_testcancel()

/* A managed descriptor that is not served (shared, O_DIRECT, unmappable): publish our appends first so
 * the kernel sees every byte, and count why. Returns true when fd is managed. */
static inline bool dk_pt_begin(int fd) {
    if (!up_enabled) return false;
    struct up_slot *s = up_fd_slot(fd);
    /* (Not named in a call record: another thread's close may free the slot meanwhile -- its file is NULL
     * then. Loaded once: a second look found it freed, and a pread through a number another thread closed
     * and reopened 150,000 times died of SIGSEGV in 1 run of 5, shim_fd_lifetime numbers.) */
    const struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (!f) return false;
    dk_count(DK_C_passthrough, 1);
    if (s->kernel) dk_count((s->flags & O_DIRECT) ? DK_C_pt_odirect : DK_C_pt_exported, 1);
    else if (f->kernel_only) dk_count(DK_C_pt_mapfail, 1);
    else dk_count(DK_C_pt_exported, 1); /* shared with a fork relative */
    DK_ERRNO_SAVE;
    up_publish_fd_before_kernel(fd);
    DK_ERRNO_RESTORE;
    return true;
}

/* After a pass-through call that changed the file's data or size: our view follows the kernel's, and in
 * sync and strict modes the change is made durable before the call returns (those modes' promise holds on
 * a descriptor the kernel serves -- shared with a fork relative, O_DIRECT, a file past 512 GiB -- though
 * such a write is not atomic: docs/guarantees.md). 0, or -1 with the fdatasync's errno. */
static inline int dk_pt_end_wrote(bool managed, int fd, uint64_t off, uint64_t end) {
    if (!managed) return 0;
    DK_ERRNO_SAVE;
    up_kernel_wrote_fd(fd, off, end);
    DK_ERRNO_RESTORE;
    if (dk_cfg.mode == DK_MODE_POSIX) return 0;
    dk_count(DK_C_pt_synced, 1);
    int was = errno;
    if (DK_LIKELY(DK_REAL(fdatasync)(fd) == 0)) return 0;
    if (errno != EBADF) return -1;
    /* Another thread closed the descriptor after the kernel's write: the write happened -- never -1 for it (a
     * program that retries would write the record twice: review 15, finding 9) -- and the promise stands: every
     * file system's dirty data, this file's with it (rare: a close racing the write). errno as the call left it. */
    sync();
    errno = was;
    return 0;
}
/* What changed is not known (a truncate, fallocate): the whole file. */
static inline int dk_pt_end_changed(bool managed, int fd) { return dk_pt_end_wrote(managed, fd, 0, UINT64_MAX); }
/* A write of n bytes at off (>= 0), or at the kernel's offset of the description (off -1: write, writev,
 * RWF_APPEND; and any write through an O_APPEND descriptor, where Linux appends a pwrite too): only a
 * positional write's range is known -- the kernel's offset after the call would name the others' only while
 * no other thread or process moves that shared offset meanwhile, so they drop the whole file's pages. */
static inline int dk_pt_end_written(bool managed, int fd, off_t off, ssize_t n) {
    if (off >= 0 && managed) {
        struct up_slot *s = up_fd_slot(fd);
        if (s && !(__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & O_APPEND))
            return dk_pt_end_wrote(managed, fd, (uint64_t)off, (uint64_t)off + (uint64_t)n);
    }
    return dk_pt_end_changed(managed, fd);
}

/* Adopts a descriptor the kernel just opened; refuses it under DAXKIT_STRICT_CONFIG with bad options. */
int dk_after_open(int fd, int flags, int dirfd, const char *path, uint64_t epoch); /* path: as given, relative to dirfd, or NULL */
/* Mode argument of open: present with O_CREAT or O_TMPFILE. */
#define DK_OPEN_NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

#endif

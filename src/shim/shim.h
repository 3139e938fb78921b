/* Shared helpers of the preload entry points. Entry points decide "served or passed through" and
 * dispatch; no policy lives in the shim. */
#ifndef DK_SHIM_SHIM_H
#define DK_SHIM_SHIM_H

#include <fcntl.h>
#include <pthread.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/upath.h"

/* The served path is a cancellation point wherever libc's call is one. */
#define DK_CANCEL_POINT() pthread_testcancel()

/* The pass-through fast path (session 24): true when e (fd's entry, or NULL: a number the library never held
 * anything on) has no slot, is not pending and -- for a call that changes data (`changes`) -- was not vacated
 * since an open or dup settled it, and no window of the library's own opens is open (common/internal_fd.h).
 * The full path (shim/rw.c SERVE_IF: two up_serving looks with their call-record stores, dk_pt_begin or
 * dk_pt_begin_change, up_fd_vacated, the re-checks) finds the same about such a number and makes libc's call
 * unnamed; the caller makes it at once instead (~155 instructions a call before: a socket's, a pipe's, a file's
 * outside the managed directories). The looks are the ones that path ends with, in an order where every
 * change of state between two of them shows in a later one:
 *   - slot, pending, slot: an adoption binds the slot before it ends the pending state (fdtab.c up_fd_bind);
 *     an open of a vacated number makes it closing, then pending, then ends the closing (up_fd_opening);
 *   - a change: the vacating count, its clean mark, the slot, ..., the count again (internal.h up_fd_vacated:
 *     a close that ended between the looks moved the count first; an open marks a vacated number clean while
 *     it is closing, before it is pending: the slot look after the mark sees one or the other);
 *   - the windows last (dk_ifd_settle's look, which waits); for a change, then the exit's hold (sync and
 *     strict: set before exit turns the library off; the full path's write asks up_exit_hold, lifecycle.c).
 * A number the library never held anything on (internal.h up_fd.held clear: a socket's, a pipe's) skips the
 * entry's looks -- none can find anything -- and makes the windows' and the hold's only (session 29).
 * Anything found: false, and the full path runs as before, its cancellation point first. None here: libc's
 * call is a cancellation point wherever the served path has one, and nothing is named or counted before it. */
static inline bool dk_pt_none_rest(const struct up_fd *e, bool changes); /* (after a first look found no slot) */
static inline bool dk_pt_none(const struct up_fd *e, bool changes) {
    if (e && __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) != NULL) return false; /* (a served call: one look) */
    return dk_pt_none_rest(e, changes);
}
static inline bool dk_pt_none_rest(const struct up_fd *e, bool changes) {
    /* (a number never held: none of the looks below can find anything -- internal.h up_fd.held) */
    if (e && __atomic_load_n(&e->held, __ATOMIC_ACQUIRE)) {
        uint32_t g = 0;
        if (changes) {
            g = __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE);
            if (g != __atomic_load_n(&e->vac_clean, __ATOMIC_ACQUIRE) || __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) != NULL)
                return false;
        }
        if (__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) != UP_PEND_NONE ||
            __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) != NULL)
            return false;
        if (changes && __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE) != g) return false;
    }
    /* a change: no exit holding writes (upath.h up_exit_hold: the full path asks it before a write) */
    return dk_ifd_idle() && (!changes || !__atomic_load_n(&up_exit_hold_flag, __ATOMIC_ACQUIRE));
}

/* Why a managed descriptor that is not served (shared, O_DIRECT, unmappable) passes through, counted. */
static inline void dk_pt_count(const struct up_slot *s, const struct up_file *f) {
    dk_count(DK_C_passthrough, 1);
    if (s->kernel) dk_count((s->flags & O_DIRECT) ? DK_C_pt_odirect : DK_C_pt_exported, 1);
    else if (f->kernel_only) dk_count(DK_C_pt_mapfail, 1);
    else dk_count(DK_C_pt_exported, 1); /* shared with a fork relative */
}

/* Before a pass-through call that only reads: counted, our appends published first so that the kernel sees
 * every byte. True when fd is managed. */
static inline bool dk_pt_begin(int fd) {
    if (!up_enabled) return false;
    struct up_slot *s = up_fd_slot(fd);
    /* (Not named in a call record: another thread's close may free the slot meanwhile -- its file is NULL
     * then. Loaded once: a second look found it freed, and a pread through a number another thread closed
     * and reopened 150,000 times died of SIGSEGV in 1 run of 5, shim_fd_lifetime numbers.) */
    const struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (!f) return false;
    dk_pt_count(s, f);
    DK_ERRNO_SAVE;
    up_publish_fd_before_kernel(fd);
    DK_ERRNO_RESTORE;
    return true;
}

/* A pass-through call that changes a managed file's data or size (the write family, ftruncate, fallocate),
 * from dk_pt_begin_change to dk_pt_end: how it began -- not a managed descriptor's (DK_PT_KERNEL); managed,
 * named in this thread's call record with its slot held (DK_PT_NAMED); managed but not named (DK_PT_UNNAMED:
 * signal handlers nested deeper than the borrowed records, calls.c; in-kernel copies) -- and the slot held. */
enum { DK_PT_KERNEL = 0, DK_PT_UNNAMED = 1, DK_PT_NAMED = 2 };
struct dk_pt {
    int how;
    struct up_slot *s; /* DK_PT_NAMED: fd's slot, which stays (its entry may be closing meanwhile) */
};

/* The naming part of dk_pt_begin_change, for a caller that counts and publishes itself (an in-kernel copy:
 * shim/map.c): DK_PT_NAMED with fd's slot held -- the slot of a file a reopen gave the number to while the call
 * waited for a close too (calls.h: up_call_enter_again); DK_PT_UNNAMED when fd has a slot but no record can
 * take the name (handlers nested deeper than the records; a handler inside its thread's own close of fd);
 * DK_PT_KERNEL when it has none (closed while the call waited: a vacated number is the caller's). */
static inline void dk_pt_name(int fd, struct dk_pt *p) {
    struct up_fd *e = up_enabled ? up_fd_entry(fd) : NULL;
    p->how = DK_PT_KERNEL;
    p->s = NULL;
    /* No slot: not managed -- one look, no record (a socket's or pipe's write: review 16, finding 4; a vacated
     * number is the caller's, upath/vacant.c) */
    if (!e || __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) == NULL) return;
    DK_CRASH_POINT("shim.pt_name.before"); /* tests: another thread's close starts here (shim_pt_sync_ebadf) */
    p->s = up_call_enter(e);
    if (DK_LIKELY(p->s != NULL)) {
        p->how = DK_PT_NAMED;
        return;
    }
    bool closed;
    p->s = up_call_enter_again(e, &closed);
    p->how = p->s ? DK_PT_NAMED : closed ? DK_PT_KERNEL : DK_PT_UNNAMED;
}

/* Named so that a close, dup2/dup3 over the number or close_range waits for the kernel's call and the
 * library's fdatasync after it -- which then syncs the file the call changed, never finds the number closed
 * by the program (review 15, finding 9: closed between the two, the fdatasync failed EBADF). A closing
 * entry: waits until it is closed (DK_PT_KERNEL) or bound again. Then dk_pt_begin's count and publish. Make
 * the kernel's call with DK_PT_CALL. (p: in memory, read after DK_PT_CALL's setjmp.) */
static inline void dk_pt_begin_change(int fd, struct dk_pt *p) {
    dk_pt_name(fd, p);
    if (p->how == DK_PT_KERNEL) return;
    if (DK_UNLIKELY(p->how == DK_PT_UNNAMED)) {
        p->how = dk_pt_begin(fd) ? DK_PT_UNNAMED : DK_PT_KERNEL;
        return;
    }
    dk_pt_count(p->s, p->s->file);
    DK_ERRNO_SAVE;
    up_publish_file_before_kernel(p->s->file, fd);
    DK_ERRNO_RESTORE;
}

/* The kernel's call of a pass-through change (`call`: an assignment) begun as *p: a thread cancelled inside
 * it (a cancellation point) leaves its name. */
#define DK_PT_CALL(p, call)                                                          \
    do {                                                                             \
        pthread_cleanup_push(up_pt_cancelled, (void *)(intptr_t)((p)->how == DK_PT_NAMED)); \
        call;                                                                        \
        pthread_cleanup_pop(0);                                                      \
    } while (0)

/* After the kernel's call of a pass-through change begun as *p (r its result, done: it changed something)
 * and our view's update: in sync and strict modes the change made durable before the call returns (those
 * modes' promise holds on a descriptor the kernel serves -- shared with a fork relative, O_DIRECT, a file
 * past 512 GiB -- though such a write is not atomic: docs/guarantees.md); the name left. r, or -1 with the
 * fdatasync's errno. */
static inline ssize_t dk_pt_finish(const struct dk_pt *p, int fd, bool done, ssize_t r) {
    if (p->how != DK_PT_KERNEL && done && dk_cfg.mode != DK_MODE_POSIX) {
        int err = up_pt_datasync(fd);
        if (DK_UNLIKELY(err)) {
            errno = err;
            r = -1;
        }
    }
    if (p->how == DK_PT_NAMED) up_call_leave();
    return r;
}

/* dk_pt_finish after our view follows the kernel's change of [off, end). */
static inline ssize_t dk_pt_end(const struct dk_pt *p, int fd, bool done, ssize_t r, uint64_t off, uint64_t end) {
    if (p->how != DK_PT_KERNEL && done) {
        DK_ERRNO_SAVE;
        if (p->how == DK_PT_NAMED) up_kernel_wrote_file(p->s->file, fd, off, end);
        else up_kernel_wrote_fd(fd, off, end);
        DK_ERRNO_RESTORE;
    }
    return dk_pt_finish(p, fd, done, r);
}
/* What changed is not known (a truncate, fallocate): the whole file. */
static inline ssize_t dk_pt_end_changed(const struct dk_pt *p, int fd, ssize_t r) {
    return dk_pt_end(p, fd, r == 0, r, 0, UINT64_MAX);
}
/* A write that returned n, at off (>= 0) or at the kernel's offset of the description (off -1: write,
 * writev, RWF_APPEND; and any write through an O_APPEND descriptor, where Linux appends a pwrite too): only a
 * positional write's range is known -- the kernel's offset after the call would name the others' only while
 * no other thread or process moves that shared offset meanwhile, so they drop the whole file's pages. */
static inline ssize_t dk_pt_end_written(const struct dk_pt *p, int fd, off_t off, ssize_t n) {
    if (off >= 0 && n > 0 && p->how != DK_PT_KERNEL) {
        const struct up_slot *s = p->how == DK_PT_NAMED ? p->s : up_fd_slot(fd);
        if (s && !(__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & O_APPEND))
            return dk_pt_end(p, fd, true, n, (uint64_t)off, (uint64_t)off + (uint64_t)n);
    }
    return dk_pt_end(p, fd, n > 0, n, 0, UINT64_MAX);
}

/* Adopts a descriptor the kernel just opened; refuses it under DAXKIT_STRICT_CONFIG with bad options. */
int dk_after_open(int fd, int flags, int dirfd, const char *path, uint64_t epoch); /* path: as given, relative to dirfd, or NULL */
/* Mode argument of open: present with O_CREAT or O_TMPFILE. */
#define DK_OPEN_NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

#endif

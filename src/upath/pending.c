/* Lazy adoption: a descriptor opened by the program is not looked at (fstat) until it is used. Until then
 * it is *pending*: it has no slot, so every call on it reaches the kernel (shim: nothing of ours refers to
 * its file), and it is adopted -- fstat, the file table, a slot at the kernel's offset -- at its first use
 * that needs daxkit's view of the file: the program's own fstat (its result serves, no call of ours),
 * a data call, or any other call on it (dup, fcntl, mmap, lseek, fsync, ...; upath.h: up_resolve). A
 * descriptor opened and closed, or opened, fstat'ed by the program and closed, costs no system call of
 * ours (rsync's reopen of each new file for its fchmod; programs probing files).
 *
 * Passing reads through. A pending descriptor may also pass its first DAXKIT_ADOPT_AFTER_IOS reads to the
 * kernel and never be adopted at all (rsync's sender, tar cf and git add read most files in one or two
 * calls: the adoption's fstat and bookkeeping cost more than the read). That is right only while no file
 * entry of this process can be its file: the kernel does not see a file's staged appends. A descriptor
 * may pass (it has an epoch) when it was opened (a) with O_CREAT|O_EXCL -- a new inode, which no entry can
 * name -- or (b) while no file of the process was active (open, or closed with appends not yet published;
 * file.c). up_adopt_epoch moves before any file becomes active: a pending descriptor whose epoch is not
 * the current one is adopted before its next read. (A read already in the kernel when another thread
 * stages appends to the file is concurrent with them: either order is right.)
 * Writes are never passed through: a write adopts the file at once, so that appends stay staged until a
 * publish point and a series of them appears at once, after a crash too (posix mode's promise; a kernel
 * write would be in the file at once, and a crash before the next fsync would leave part of the series:
 * tests/crash/publish.sh).
 *
 * What else must see pending descriptors: fork and posix_spawn adopt them all first (the relatives would
 * otherwise adopt one open file description twice, each with its own offset); a close of one while the
 * process holds POSIX locks on a managed file looks it up (one fstat) so that reclock.c learns the kernel
 * dropped the locks on that file (the close of any descriptor drops them); an adoption while another
 * thread's read on the descriptor is in the kernel makes a kernel-served slot (the offset is the kernel's,
 * as for a descriptor shared with a fork relative). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/config.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/recover_scope.h"
#include "upath/upath.h"

bool up_locks_ever;

bool up_pending_open(int fd, int oflags, int dirfd, const char *path, uint64_t epoch) {
    if (dk_cfg.adopt_after_ios == 0 || up_refuse_flag || dk_cfg.atomic[0]) return false;
    if (dk_cfg.mode != DK_MODE_POSIX && dk_cfg.mode != DK_MODE_SYNC) return false;
    bool excl = (oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
    /* epoch was read before the kernel's open: an activation since then moved it */
    bool idle = __atomic_load_n(&up_active_files, __ATOMIC_SEQ_CST) == 0;
    bool pass = epoch && (excl || idle);
    /* O_TRUNC cut the file: an active entry of it must forget its contents now (up_adopt) */
    if ((oflags & O_TRUNC) && !excl && !idle) return false;
    uint32_t below = up_roots_by_name(dirfd, path);
    /* The recovery scope of the root the adoption will take (the first its name shows, when the file is on
     * that root's device: up_root_for_fd_mask) is walked now, by the name at hand, as an adoption at the open
     * walks it: at the adoption the name is gone, and its walk read the descriptor's path from /proc (tar xf
     * with DAXKIT_ADOPT_AFTER_IOS=4: 768 readlinks, one per file written; rsync 772). A file on another
     * root's device is walked at its adoption as before. */
    uint32_t walked = below & -below;
    if (walked && !up_recover_below(up_root_at(__builtin_ctz(walked)), fd, dirfd, path)) walked = 0; /* at the adoption */
    if (!up_fd_set_pending(fd, oflags, below, walked, pass ? epoch : 0)) return false;
    dk_stats_publish(); /* a managed file opened: `daxkit stats` lists the process from now on */
    return true;
}

static bool may_pass(const struct up_fd *e) {
    return __atomic_load_n(&e->pending, __ATOMIC_SEQ_CST) == UP_PEND_WAITING && e->pend_epoch &&
           e->pend_epoch == __atomic_load_n(&up_adopt_epoch, __ATOMIC_SEQ_CST);
}

/* lseek, fsync: the kernel's answer is the truth for a descriptor that may pass reads (nothing of the
 * process is staged for its file); any other pending descriptor is adopted first. */
bool up_pending_may_pass(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e || !__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE)) return true; /* not pending: as it is */
    if (may_pass(e)) return true;
    up_pending_adopt(fd, NULL);
    return false;
}

/* The entry whose read this thread is passing to the kernel (and how deep: handlers nest). A signal handler's
 * read of the same descriptor meanwhile passes too, whatever the count: adopting there would find the
 * interrupted read in flight and make the slot kernel-served for good, and every later call on it then
 * publishes under the file's mutex -- which a handler interrupting that publish waits for forever
 * (shim_signal_claim hung in 3 of 3 runs with lazy adoption on; by hand, a child hung in 2 of ~45 runs,
 * 0 of 40 with this rule). A file activated meanwhile (the epoch moved) still adopts it. */
static __thread const struct up_fd *passing_by_me;
static __thread uint32_t passing_depth;

bool up_pending_pass(int fd, struct up_fd *e) {
    __atomic_add_fetch(&e->pend_busy, 1, __ATOMIC_SEQ_CST); /* before the state is read: see adopt */
    bool nested = passing_depth && passing_by_me == e; /* passes while the epoch holds, past the count */
    if (may_pass(e) && (nested || __atomic_add_fetch(&e->pend_ios, 1, __ATOMIC_RELAXED) <= dk_cfg.adopt_after_ios)) {
        if (passing_depth++ == 0) passing_by_me = e;
        dk_count(DK_C_pt_pending, 1);
        return true;
    }
    __atomic_sub_fetch(&e->pend_busy, 1, __ATOMIC_SEQ_CST);
    up_pending_adopt(fd, NULL);
    return false;
}

void up_pending_passed(struct up_fd *e, ssize_t r, bool moves) {
    if (moves && r > 0) __atomic_add_fetch(&e->pend_off, (uint64_t)r, __ATOMIC_RELAXED);
    if (--passing_depth == 0) passing_by_me = NULL;
    __atomic_sub_fetch(&e->pend_busy, 1, __ATOMIC_SEQ_CST);
}

bool up_pending_fstat_begin(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) != UP_PEND_WAITING || may_pass(e)) return false;
    __atomic_add_fetch(&up_adopt_epoch, 1, __ATOMIC_SEQ_CST); /* before the program's fstat: as an adoption's */
    return true;
}

/* The program's fstat of a pending descriptor that may not pass its reads (it was opened while some file of
 * the process was active -- tar cf opens every source file while its archive is staged): the result names
 * the file. When this process has no entry of that inode, or only a closed one with nothing unpublished,
 * the kernel's view of the file is the whole truth for us too, and the descriptor passes its reads from now
 * on, under the epoch read here: a file of this process that becomes active later moves the epoch after it
 * joins the active list, under up_table_mu, which this look holds (file.c: active_add) -- so either the
 * look finds the entry, or the descriptor is adopted before its next read. Otherwise it is adopted from the
 * result (no fstat of ours either way). */
void up_pending_fstat_done(int fd, const struct stat *st) {
    struct up_fd *e = up_fd_entry(fd);
    if (e && S_ISREG(st->st_mode) && up_dev_is_managed(st->st_dev)) {
        dk_mu_lock(&up_table_mu);
        uint64_t epoch = __atomic_load_n(&up_adopt_epoch, __ATOMIC_SEQ_CST);
        const struct up_file *f = up_file_lookup(st->st_dev, st->st_ino);
        bool apart = !f || (f->open_refs == 0 && !up_file_pinned(f));
        up_table_unlock();
        if (apart && __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) == UP_PEND_WAITING) {
            __atomic_store_n(&e->pend_epoch, epoch, __ATOMIC_SEQ_CST);
            dk_count(DK_C_lazy_fstat_passes, 1);
            return;
        }
    }
    up_pending_adopt(fd, st);
}

/* The entry this thread is adopting or dropping (one at a time), so that a signal handler using the same
 * descriptor meanwhile does not wait for its own thread: its call goes to the kernel (the caller finds no
 * slot), as for any descriptor the kernel serves (review 8, finding 12: it spun forever). */
static __thread const struct up_fd *claimed_by_me;

/* Takes the entry from WAITING to ADOPTING; true when this call did (the caller then ends with
 * claimed_by_me = *outer). Otherwise another thread has it: waits until it is done -- unless this very
 * thread has it (a handler nested in the adoption), which returns at once. The mark is set before the
 * compare-and-swap, so a handler arriving right after it sees it. */
static bool pending_claim(struct up_fd *e, const struct up_fd **outer) {
    *outer = claimed_by_me;
    claimed_by_me = e;
    uint32_t expect = UP_PEND_WAITING;
    if (__atomic_compare_exchange_n(&e->pending, &expect, UP_PEND_ADOPTING, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        return true;
    claimed_by_me = *outer;
    if (*outer == e) return false;
    while (__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) == UP_PEND_ADOPTING) sched_yield();
    return false;
}

void up_pending_adopt(int fd, const struct stat *given) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return;
    const struct up_fd *outer;
    if (!pending_claim(e, &outer)) return; /* another thread adopted it (or found it unmanaged), or nested */
    /* Reads passing through now move the offset after we read it: the kernel serves the slot then. */
    bool busy = __atomic_load_n(&e->pend_busy, __ATOMIC_SEQ_CST) != 0;
    DK_ERRNO_SAVE;
    struct stat st;
    if (!given) __atomic_add_fetch(&up_adopt_epoch, 1, __ATOMIC_SEQ_CST); /* before the fstat */
    if (given || DK_REAL(fstat)(fd, &st) == 0) {
        const struct stat *sp = given ? given : &st;
        if (S_ISREG(sp->st_mode) && up_dev_is_managed(sp->st_dev)) {
            uint64_t off = busy ? 0 : __atomic_load_n(&e->pend_off, __ATOMIC_RELAXED);
            /* the kernel applied O_TRUNC at the open; appends staged since by another descriptor stay */
            up_adopt_stat(fd, e->pend_oflags & ~O_TRUNC, sp, e->pend_below, e->pend_walked, off, busy);
            if (fd <= 2) up_std_fd_to_kernel(fd, false);
            dk_count(DK_C_lazy_adoptions, 1);
        }
    }
    if (__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) != UP_PEND_NONE) up_fd_clear_pending(fd, e);
    claimed_by_me = outer;
    DK_ERRNO_RESTORE;
}

void up_pending_drop(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return;
    const struct up_fd *outer;
    if (!pending_claim(e, &outer)) return; /* adopted meanwhile: the caller closes it as a managed descriptor */
    if (__atomic_load_n(&up_locks_ever, __ATOMIC_ACQUIRE)) {
        /* The kernel's close drops the process's POSIX locks on the file: tell its entry (reclock.c). */
        DK_ERRNO_SAVE;
        struct stat st;
        if (DK_REAL(fstat)(fd, &st) == 0 && S_ISREG(st.st_mode) && up_dev_is_managed(st.st_dev)) {
            dk_mu_lock(&up_table_mu);
            struct up_file *f = up_file_lookup(st.st_dev, st.st_ino);
            if (f) {
                up_file_lock(f);
                up_locks_closed(f);
                dk_mu_unlock(&f->mu);
            }
            up_table_unlock();
        }
        DK_ERRNO_RESTORE;
    }
    up_fd_clear_pending(fd, e);
    claimed_by_me = outer;
    dk_count(DK_C_lazy_closes, 1);
}

struct pending_list {
    int *fds;
    size_t n, cap;
};
static void collect_cb(int fd, struct up_fd *e, void *arg) {
    struct pending_list *l = arg;
    if (!__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE)) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        int *p = realloc(l->fds, cap * sizeof *p);
        if (!p) return;
        l->fds = p, l->cap = cap;
    }
    l->fds[l->n++] = fd;
}

void up_pending_adopt_all(void) {
    if (!up_enabled || dk_cfg.adopt_after_ios == 0) return;
    struct pending_list l = {0};
    DK_ERRNO_SAVE;
    dk_mu_lock(&up_table_mu);
    up_fd_foreach(collect_cb, &l);
    up_table_unlock();
    for (size_t i = 0; i < l.n; i++) up_pending_adopt(l.fds[i], NULL);
    free(l.fds);
    DK_ERRNO_RESTORE;
}

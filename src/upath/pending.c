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
 * as for a descriptor shared with a fork relative).
 *
 * A signal handler that interrupted its thread inside a library mutex (common/lockmark.h) must not take it:
 * an adoption takes the file table's lock, then the file's mutex (and its root's, at the root's first
 * file) -- the thread's own, maybe: an unlock's publish walk, an adoption, a close's publish of that file
 * (session 16's locks16; shim_handler_locks close_write with lazy adoption hung 3 of 3). Such an adoption
 * is refused -- up front for the table's lock, under it for the file's and the root's (upath.c
 * adopt_in_root) -- and the call follows table_nested.c's rules: a read passes to the kernel while the
 * descriptor may pass (past the count too: so does any read inside a library mutex), else EDEADLK, as a
 * write; the program's fstat keeps the kernel's answer; any other call goes to the kernel; the descriptor
 * stays pending (its thread adopts it at its next use). A close that must tell reclock.c about the kernel's
 * dropped locks is left to the thread inside the table's lock (table_nested.c: up_close_later, when it lets
 * go of it), and inside the file's own mutex tells the file without taking it. Counted (mu_mine_skips). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crashpoint.h"
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
    /* a directory opened so (tar cf opens each one without O_DIRECTORY, by its name relative to its parent's
     * descriptor, O_NOFOLLOW) needs no readlink of its first file to be walked: managed.c up_dirfd_note_pending */
    bool child = below && dirfd != AT_FDCWD && (oflags & O_NOFOLLOW) && !strchr(path, '/') && strcmp(path, ".") &&
                 strcmp(path, "..") && up_dirfd_walked(dirfd);
    if (!up_fd_set_pending(fd, oflags, below, walked, pass ? epoch : 0, child)) return false;
    /* A managed file opened by name: `daxkit stats` lists the process from now on. Any other file is pending
     * too (it may be a root's file under another name: its adoption tells, and publishes then) -- but a
     * process that opens no managed file has no stats file (session 16): bash running a script made one and
     * unlinked it at its exec, and `daxkit stats` missed a live process whose pid such a chain had used. */
    if (below) dk_stats_publish();
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
    (void)up_pending_adopt(fd, NULL); /* (refused in a handler: the kernel's answer, still pending) */
    return false;
}

/* A signal handler that interrupted its own thread inside the file table's lock (see above). */
static bool in_table_lock(void) {
    if (DK_LIKELY(!dk_mu_mine(&up_table_mu))) return false;
    dk_count(DK_C_mu_mine_skips, 1);
    return true;
}

/* The entry whose read this thread is passing to the kernel (and how deep: handlers nest). A signal handler's
 * read of the same descriptor meanwhile passes too, whatever the count: adopting there would find the
 * interrupted read in flight and make the slot kernel-served for good, and every later call on it then
 * publishes under the file's mutex -- which a handler interrupting that publish waits for forever
 * (shim_signal_claim hung in 3 of 3 runs with lazy adoption on; by hand, a child hung in 2 of ~45 runs,
 * 0 of 40 with this rule). A file activated meanwhile (the epoch moved) still adopts it. */
static __thread const struct up_fd *passing_by_me;
static __thread uint32_t passing_depth;

bool up_pending_pass(struct up_fd *e) {
    __atomic_add_fetch(&e->pend_busy, 1, __ATOMIC_SEQ_CST); /* before the state is read: see adopt */
    /* passes while the epoch holds, past the count: nested in its own pass, or in its thread's table lock */
    bool nested = passing_depth && passing_by_me == e;
    if (may_pass(e) && (nested || __atomic_add_fetch(&e->pend_ios, 1, __ATOMIC_RELAXED) <= dk_cfg.adopt_after_ios ||
                        dk_mu_any_mine())) {
        if (passing_depth++ == 0) passing_by_me = e;
        dk_count(DK_C_pt_pending, 1);
        return true;
    }
    __atomic_sub_fetch(&e->pend_busy, 1, __ATOMIC_SEQ_CST);
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
    if (in_table_lock()) return; /* the epoch moved at the begin: adopted at its next use */
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
    (void)up_pending_adopt(fd, st);
}

/* The program's fstat of a descriptor still pending that may pass its reads found a directory (tar cf opens
 * each one without O_DIRECTORY, then fstats it): its verdict as a directory descriptor from what its name
 * showed at the open (managed.c: up_dirfd_note_pending). No system call; the entry stays as it is. */
void up_pending_fstat_dir(int fd, const struct stat *st) {
    const struct up_fd *e = up_fd_entry(fd);
    if (e && __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) == UP_PEND_WAITING)
        up_dirfd_note_pending(fd, e->pend_below, st, e->pend_child);
}

/* The entry this thread is adopting or dropping (one at a time), so that a signal handler using the same
 * descriptor meanwhile does not wait for its own thread: its call goes to the kernel (the caller finds no
 * slot), as for any descriptor the kernel serves (review 8, finding 12: it spun forever). */
static __thread const struct up_fd *claimed_by_me;

enum claim { CLAIM_DONE, CLAIM_MINE, CLAIM_REFUSED };

/* Takes the entry from WAITING to ADOPTING, with a claim token of its own (*claim): CLAIM_MINE when this
 * call did (the caller then ends with claimed_by_me = *outer). Otherwise another thread has it: waits until
 * it is done (CLAIM_DONE) -- unless
 * this very thread has it (a handler nested in the adoption), which returns at once, or this is a handler
 * inside its thread's table lock, which the adoption waits for (CLAIM_REFUSED). The mark is set before
 * the compare-and-swap, so a handler arriving right after it sees it. */
static uint32_t claims_made;

static enum claim pending_claim(struct up_fd *e, const struct up_fd **outer, uint32_t *claim) {
    *outer = claimed_by_me;
    claimed_by_me = e;
    uint32_t expect = UP_PEND_WAITING;
    *claim = (__atomic_add_fetch(&claims_made, 1, __ATOMIC_RELAXED) << 2) | UP_PEND_ADOPTING; /* internal.h */
    if (__atomic_compare_exchange_n(&e->pending, &expect, *claim, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return CLAIM_MINE;
    claimed_by_me = *outer;
    if (*outer == e) return CLAIM_DONE;
    while ((__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) & UP_PEND_STATE) == UP_PEND_ADOPTING) {
        if (DK_UNLIKELY(dk_mu_any_mine())) { /* the adoption may wait for a mutex of this thread */
            dk_count(DK_C_mu_mine_skips, 1);
            return CLAIM_REFUSED;
        }
        sched_yield();
    }
    return CLAIM_DONE;
}

/* A file this process created and has used for nothing yet (no read passed, the offset where the open left
 * it): its first write adopts it without an fstat (upath.c: up_adopt_keyless). */
static bool created_unused(const struct up_fd *e) {
    return (e->pend_oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) &&
           __atomic_load_n(&e->pend_ios, __ATOMIC_RELAXED) == 0 && __atomic_load_n(&e->pend_off, __ATOMIC_RELAXED) == 0;
}

static int pending_adopt(int fd, const struct stat *given, bool write) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return 0;
    const struct up_fd *outer;
    uint32_t claim;
    if (claimed_by_me != e && __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) == UP_PEND_WAITING && in_table_lock())
        return -EDEADLK;
    enum claim c = pending_claim(e, &outer, &claim);
    if (c != CLAIM_MINE) /* another thread adopted it (or found it unmanaged), or nested */
        return c == CLAIM_REFUSED ? -EDEADLK : 0;
    DK_CRASH_POINT("upath.pending_adopt.claimed"); /* tests: an earlier adoption of the number ends here */
    /* Reads passing through now move the offset after we read it: the kernel serves the slot then. */
    bool busy = __atomic_load_n(&e->pend_busy, __ATOMIC_SEQ_CST) != 0;
    DK_ERRNO_SAVE;
    struct stat st;
    /* keyless: nothing adopted since its open (its epoch is current; checked again under the table's lock).
     * Its adoption does not move the epoch (no fstat: the file joins the active list when it stages) */
    bool keyless = write && !busy && created_unused(e) && e->pend_epoch &&
                   e->pend_epoch == __atomic_load_n(&up_adopt_epoch, __ATOMIC_SEQ_CST);
    int rc = keyless ? up_adopt_keyless(fd, e->pend_oflags & ~O_TRUNC, e->pend_walked, e->pend_epoch) : -1;
    if (rc == 0) {
        dk_count(DK_C_lazy_adoptions, 1);
    } else if (rc != -EDEADLK &&
               (given || (__atomic_add_fetch(&up_adopt_epoch, 1, __ATOMIC_SEQ_CST), DK_REAL(fstat)(fd, &st) == 0))) {
        /* (the epoch moves before the fstat) */
        const struct stat *sp = given ? given : &st;
        if (S_ISDIR(sp->st_mode)) up_dirfd_note_pending(fd, e->pend_below, sp, e->pend_child);
        else if (S_ISREG(sp->st_mode) && up_dev_is_managed(sp->st_dev)) {
            uint64_t off = busy ? 0 : __atomic_load_n(&e->pend_off, __ATOMIC_RELAXED);
            /* the kernel applied O_TRUNC at the open; appends staged since by another descriptor stay */
            rc = up_adopt_stat(fd, e->pend_oflags & ~O_TRUNC, sp, e->pend_below, e->pend_walked, off, busy);
            if (rc != -EDEADLK && fd <= 2) up_std_fd_to_kernel(fd, false);
            if (rc != -EDEADLK) dk_count(DK_C_lazy_adoptions, 1);
        }
    }
    DK_CRASH_POINT("upath.pending_adopt.ended"); /* tests: other threads close and reopen the number here */
    /* (-EDEADLK: a handler inside its thread's hold of the file's or root's mutex -- still pending) */
    up_fd_end_adopting(fd, e, claim, rc == -EDEADLK);
    claimed_by_me = outer;
    DK_ERRNO_RESTORE;
    return rc == -EDEADLK ? rc : 0;
}

int up_pending_adopt(int fd, const struct stat *given) { return pending_adopt(fd, given, false); }
int up_pending_adopt_write(int fd) { return pending_adopt(fd, NULL, true); }

/* A managed regular file, whose close the kernel's dropped POSIX locks must be told to (reclock.c). */
static bool tells_locks(int fd, struct stat *st) {
    if (!__atomic_load_n(&up_locks_ever, __ATOMIC_ACQUIRE)) return false;
    DK_ERRNO_SAVE;
    bool tell = DK_REAL(fstat)(fd, st) == 0 && S_ISREG(st->st_mode) && up_dev_is_managed(st->st_dev);
    DK_ERRNO_RESTORE;
    return tell;
}

bool up_pending_drop(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return true;
    struct stat st;
    bool tell = tells_locks(fd, &st);
    if (tell && in_table_lock()) return false; /* its thread closes it (table_nested.c: up_close_later) */
    const struct up_fd *outer;
    uint32_t claim;
    enum claim c = pending_claim(e, &outer, &claim);
    if (c != CLAIM_MINE) return c == CLAIM_DONE; /* adopted meanwhile: the caller closes it as a managed descriptor */
    up_close_later_settle(fd); /* a handler's close left to the thread: this close carries it out (table_nested.c) */
    if (tell) {
        dk_mu_lock(&up_table_mu);
        struct up_file *f = up_file_lookup(st.st_dev, st.st_ino);
        /* A handler whose thread holds the file's mutex tells it without taking it: no other thread can be
         * in the file's lock set meanwhile, and the interrupted section sees it told before its next look
         * (a deferral could wait long: a thread appending takes the table's lock rarely -- review 17, #02). */
        bool held = f && dk_mu_mine(&f->mu);
        if (f && !held) up_file_lock(f);
        if (f) up_locks_closed(f);
        if (f && !held) dk_mu_unlock(&f->mu);
        if (held) dk_count(DK_C_mu_mine_skips, 1);
        up_table_unlock();
    }
    up_fd_clear_pending(fd, e);
    DK_CRASH_POINT("upath.pending_drop.cleared"); /* tests: another thread writes through the number here */
    claimed_by_me = outer;
    dk_count(DK_C_lazy_closes, 1);
    return true;
}

int up_pending_drop_closing(int fd) {
    bool closing = up_fd_close_unbound(fd);
    if (up_pending_drop(fd)) return closing;
    if (closing) up_fd_close_done(fd);
    return -1;
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
    for (size_t i = 0; i < l.n; i++) (void)up_pending_adopt(l.fds[i], NULL);
    free(l.fds);
    DK_ERRNO_RESTORE;
}

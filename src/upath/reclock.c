/* POSIX record locks this process holds on a managed file, and what a new lock on it means for the
 * file's size. A lock acquisition is where other processes' size changes must become visible (writers
 * publish before they unlock): it moves the refresh generation, and each file re-reads its kernel size
 * (one fstat) at its next served call (upath.c: up_serving). A lock taken on a file while this process has
 * held another lock on it ever since its size was last read does not make *that* file re-read its size:
 * a program whose writers change a file only under a lock that conflicts with every lock its readers hold
 * -- SQLite: EXCLUSIVE covers the SHARED range; its RESERVED, PENDING and EXCLUSIVE locks are all taken
 * while SHARED is held -- cannot have changed it in between. The generation still moves for every other
 * file (the lock may guard them). Operations that depend on the exact end of such a file -- an append, a
 * write past the end, SEEK_END -- re-read the size first (up_size_verify), so a writer that extended the
 * file under a lock this process's locks did not conflict with is still seen; a shrink by such a writer is
 * seen only at the next lock taken with nothing held (docs/guarantees.md).
 *
 * The locks are tracked as a union of byte ranges (their types do not matter: "held" is all that is
 * asked). Whatever cannot be followed exactly makes the set unknown, which counts as not held, until a
 * whole-file unlock empties it (counted: lock_set_unknown): SEEK_CUR- and SEEK_END-relative ranges (another
 * thread may move the offset, or the end, around the kernel call), more than UP_LOCK_RANGES pieces, lock
 * calls of two threads overlapping in time (a thread cancelled inside F_SETLKW ends its call too: the
 * caller's cleanup handler), descriptors served by the kernel, and a close of the file: up_close runs before
 * the kernel's close, which drops the process's locks on the file -- also one another thread takes in
 * between, so the close counts as a lock call in flight until the kernel's close returns (up_locks_close_begin).
 * Open file description locks (F_OFD_*) and flock are not tracked: their acquisitions always move the
 * generation.
 *
 * No file mutex guards the set (session 23; f->mu until then: 73 of ~480 library instructions a lock call and
 * two locked instructions, and a signal handler's lock call inside its thread's hold of f->mu waited for
 * itself). A call's bookkeeping runs inside the call's own count: only a call that finds no other in flight
 * and none started since its own changes the ranges, and if another starts before it ends, the set ends
 * unknown. Every other call only makes it unknown (atomics, as a close does). "Held since the size was
 * read" compares one word, stored at the re-read (up_locks_note_refresh): lapses << 1 | held, lapses read
 * first -- a release's bookkeeping stores the set's new count before it counts the lapse, so a word that
 * says held carries a lapse count from before that release. shim_lock_overlap holds a call at the cues in
 * up_lock_done while another thread's or a signal handler's calls run. */
#include <fcntl.h>
#include <stdint.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/stats.h"
#include "upath/io.h"
#include "upath/upath.h"

/* Lock calls of this process: started (high 32 bits) and in flight (low 32 bits), one atomic word. Two
 * that overlap in time may reach the kernel in either order: the set becomes unknown. The in-flight half
 * never exceeds the number of threads, so it never carries; the started half wraps off the top harmlessly
 * (compared mod 2^32). (The other way round, the started half carried into the in-flight one after 2^32
 * calls and every later lock counted as overlapped: review 7, finding 24.) */
static uint64_t calls;
#define CALL_IN_FLIGHT 1ull
#define CALL_STARTED (1ull << 32)
static uint32_t in_flight(uint64_t v) { return (uint32_t)v; }
static uint32_t started(uint64_t v) { return (uint32_t)(v >> 32); }

/* This thread's share of the in-flight half (its lock calls and closes, a signal handler's inside them too):
 * what a fork child keeps of it (up_locks_after_fork_child). Counted up before the shared count and down after
 * it, so that a handler's fork in between leaves the child one share too many -- every lock call of the child
 * overlapped, the set unknown: conservative -- never one too few. */
static __thread uint32_t mine;
static void mine_add(void) { __atomic_store_n(&mine, mine + 1, __ATOMIC_RELAXED); __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static void mine_sub(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); __atomic_store_n(&mine, mine - 1, __ATOMIC_RELAXED); }

/* `unknown`, `n` and `lapses` are also written by calls that do not run alone and by a close (up_locks_closed):
 * every access to them is atomic; the ranges themselves change only in a call that runs alone. */
static bool is_unknown(const struct up_lockset *ls) { return __atomic_load_n(&ls->unknown, __ATOMIC_ACQUIRE); }
static uint8_t count_of(const struct up_lockset *ls) { return __atomic_load_n(&ls->n, __ATOMIC_RELAXED); }
static void set_count(struct up_lockset *ls, uint8_t n) { __atomic_store_n(&ls->n, n, __ATOMIC_RELAXED); }
static uint64_t lapses_of(const struct up_lockset *ls) { return __atomic_load_n(&ls->lapses, __ATOMIC_ACQUIRE); }
static void lapse(struct up_lockset *ls) { __atomic_add_fetch(&ls->lapses, 1, __ATOMIC_ACQ_REL); }

static void set_unknown(struct up_lockset *ls) {
    if (!__atomic_exchange_n(&ls->unknown, true, __ATOMIC_ACQ_REL)) dk_count(DK_C_lock_set_unknown, 1);
}

/* The set becomes unknown (not held) until the next whole-file unlock, and any "held since the size was read"
 * ends: a close (up_locks_closed), a lock call that did not run alone (up_lock_done). */
static void forget_held(struct up_lockset *ls) {
    if (count_of(ls)) set_unknown(ls);
    else __atomic_store_n(&ls->unknown, true, __ATOMIC_RELEASE);
    lapse(ls);
}

static void set_empty(struct up_lockset *ls) {
    set_count(ls, 0);
    __atomic_store_n(&ls->unknown, false, __ATOMIC_RELEASE);
}

static bool held(const struct up_lockset *ls) { return !is_unknown(ls) && count_of(ls) > 0; }

/* [a, b) joins the set (overlapping and touching ranges merge). */
static void add_range(struct up_lockset *ls, uint64_t a, uint64_t b) {
    if (is_unknown(ls)) return;
    uint8_t k = 0, n = count_of(ls);
    for (uint8_t i = 0; i < n; i++) {
        if (ls->end[i] < a || ls->start[i] > b) { /* apart: keep */
            ls->start[k] = ls->start[i], ls->end[k] = ls->end[i], k++;
            continue;
        }
        a = DK_MIN(a, ls->start[i]), b = DK_MAX(b, ls->end[i]);
    }
    if (k == UP_LOCK_RANGES) {
        set_unknown(ls);
        return;
    }
    ls->start[k] = a, ls->end[k] = b;
    set_count(ls, k + 1);
}

/* [a, b) leaves the set (in place: a range may split in two). */
static void sub_range(struct up_lockset *ls, uint64_t a, uint64_t b) {
    if (is_unknown(ls)) return;
    uint8_t k = 0, n = count_of(ls);
    bool split = false;
    uint64_t split_end = 0;
    for (uint8_t i = 0; i < n; i++) {
        uint64_t s = ls->start[i], e = ls->end[i];
        if (e <= a || s >= b) ls->start[k] = s, ls->end[k] = e, k++;               /* apart */
        else if (s < a && e > b) ls->start[k] = s, ls->end[k] = a, k++, split = true, split_end = e;
        else if (s < a) ls->start[k] = s, ls->end[k] = a, k++;                     /* its head stays */
        else if (e > b) ls->start[k] = b, ls->end[k] = e, k++;                     /* its tail stays */
    }
    if (split) {
        if (k == UP_LOCK_RANGES) {
            set_unknown(ls);
            return;
        }
        ls->start[k] = b, ls->end[k] = split_end, k++;
    }
    set_count(ls, k);
}

/* The byte range of l on the served slot s: false when it cannot be known here. */
static bool lock_range(const struct flock *l, uint64_t *a, uint64_t *b) {
    /* SEEK_CUR: the offset the kernel used is gone by now -- another thread's read or lseek on the
     * descriptor may have moved it between the call and this look (review 7, finding 13a).
     * SEEK_END: the kernel's size at the time of the call. */
    if (l->l_whence != SEEK_SET) return false;
    int64_t start = (int64_t)l->l_start, len = (int64_t)l->l_len;
    if (len < 0) {
        if (__builtin_add_overflow(start, len, &start)) return false;
        len = -len;
    }
    if (start < 0) return false;
    *a = (uint64_t)start;
    *b = len == 0 || (uint64_t)start > UINT64_MAX - (uint64_t)len ? UINT64_MAX : (uint64_t)start + (uint64_t)len;
    return true;
}

/* After a change of the set: a lapse in holding ends "held since the size was read". */
static void after_change(struct up_file *f) {
    if (!held(&f->locks)) lapse(&f->locks);
}

static bool is_posix_setlk(int cmd) { return cmd == F_SETLK || cmd == F_SETLKW; }

/* A file the program maps is not followed: its set would only spare the re-read of a size no served call needs
 * (SQLite maps its -shm and reads and writes it through that mapping, and locks it six times a transaction: ~170
 * instructions a call for the set, session 25). The first call that finds it mapped here makes the set unknown
 * (not held: no refresh is ever skipped on the file again) and marks the file, in that order; the file's later
 * calls find the mark (up_locks_untracked) and take shim/fd.c's served_lock untracked: counted as every lock call, ended
 * by up_lock_untracked_done, no set to change. A call begun before the mark whose bookkeeping comes after it finds
 * the mark here and keeps no range either. False: f's set is followed as before. */
static bool untracked_after(struct up_file *f) {
    if (DK_LIKELY(!__atomic_load_n(&f->locks.untracked, __ATOMIC_SEQ_CST))) {
        if (DK_LIKELY(!__atomic_load_n(&f->program_mapped, __ATOMIC_RELAXED))) return false;
        forget_held(&f->locks);
        __atomic_store_n(&f->locks.untracked, true, __ATOMIC_SEQ_CST);
        dk_count(DK_C_lock_set_untracked, 1);
    }
    return true;
}

struct up_lock_call up_lock_call_begin(void) {
    mine_add();
    uint64_t before = __atomic_fetch_add(&calls, CALL_STARTED | CALL_IN_FLIGHT, __ATOMIC_ACQ_REL);
    return (struct up_lock_call){.seq = started(before), .busy = in_flight(before) != 0};
}

/* No other lock call in flight or started since this one (c) began: v is the count, `in` this call's share of
 * its in-flight half (1 before the call ends, 0 after). */
static bool alone(struct up_lock_call c, uint64_t v, uint32_t in) {
    return !c.busy && in_flight(v) == in && started(v) == (uint32_t)(c.seq + 1);
}
bool up_lock_call_alone(struct up_lock_call c) { return alone(c, __atomic_load_n(&calls, __ATOMIC_ACQUIRE), 1); }

/* The end of a counted call on an untracked file (shim/fd.c served_lock, untracked): up_lock_done's end without a set of
 * its own to change. A call that did not run alone may have reached another file's set -- the number closed or
 * dup2'ed over by another thread between the caller's look and the kernel call (review 25, #2) -- so the file
 * the number names now forgets its set, as up_lock_done's overlapped call does. */
void up_lock_untracked_done(struct up_lock_call c, int fd, bool ok, bool taken) {
    bool overlapped = !alone(c, __atomic_sub_fetch(&calls, CALL_IN_FLIGHT, __ATOMIC_ACQ_REL), 0);
    mine_sub();
    /* ... and one that ran alone did too if the number was closed or dup2'ed over before the count began (after
     * the caller's look, during a release's publish): the number names another file now (review 25, #5). A file
     * rebound again since was closed meanwhile, which forgot its set itself. */
    if (ok && (DK_UNLIKELY(overlapped) || DK_UNLIKELY(!up_locks_untracked(fd)))) {
        struct up_slot *s = up_fd_slot(fd);
        struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
        if (f) forget_held(&f->locks);
    }
    if (!ok || !taken) return;
    if (!__atomic_load_n(&up_locks_ever, __ATOMIC_RELAXED))
        __atomic_store_n(&up_locks_ever, true, __ATOMIC_RELEASE); /* (as up_lock_done: pending.c) */
    __atomic_add_fetch(&up_refresh_gen, 1, __ATOMIC_ACQ_REL); /* every file, this one too */
}

/* The call's change to the set of slot s's file f, in a call that runs alone: true when f keeps the size it read
 * (the call takes a lock while one has been held since that read). */
static bool track(struct up_file *f, const struct up_slot *s, const struct flock *l, uint64_t gen_was) {
    bool unlock = l->l_type == F_UNLCK;
    uint64_t a = 0, b = 0;
    bool known = !s->kernel && __atomic_load_n(&s->procs, __ATOMIC_ACQUIRE) <= 1 && lock_range(l, &a, &b);
    /* Held since the size was read: the file is up to date, and no lapse since that read. */
    uint64_t at = __atomic_load_n(&f->locks.at_refresh, __ATOMIC_ACQUIRE);
    bool exempt = !unlock && known && held(&f->locks) && (at & 1) && lapses_of(&f->locks) == at >> 1 &&
                  __atomic_load_n(&f->refresh_gen, __ATOMIC_RELAXED) == gen_was;
    if (!known) set_unknown(&f->locks);
    else if (unlock && a == 0 && b == UINT64_MAX) set_empty(&f->locks); /* also ends an unknown set */
    else if (unlock) sub_range(&f->locks, a, b);
    else add_range(&f->locks, a, b);
    after_change(f);
    return exempt;
}

void up_lock_done(struct up_lock_call c, int fd, int cmd, const struct flock *l, bool ok) {
    bool unlock = l->l_type == F_UNLCK;
    struct up_slot *s = ok ? up_fd_slot(fd) : NULL;
    struct up_file *f = s ? s->file : NULL;
    bool posix = is_posix_setlk(cmd) && f && !f->atomic; /* strict too: its writes check an unsure end (io.c) */
    bool exempt = false;
    uint64_t gen_was = 0;
    if (!posix) {
        __atomic_sub_fetch(&calls, CALL_IN_FLIGHT, __ATOMIC_ACQ_REL);
        mine_sub();
    } else {
        /* Test builds: a cue between the kernel call and the bookkeeping (shim_lock_overlap: another thread's
         * or a signal handler's lock calls run here) */
        DK_CRASH_POINT("reclock.lock_done.begin");
        gen_was = __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE);
        if (!unlock && !__atomic_load_n(&up_locks_ever, __ATOMIC_RELAXED))
            __atomic_store_n(&up_locks_ever, true, __ATOMIC_RELEASE); /* pending.c: closes must tell */
        bool first = alone(c, __atomic_load_n(&calls, __ATOMIC_ACQUIRE), 1);
        if (DK_LIKELY(!untracked_after(f))) exempt = first && track(f, s, l, gen_was);
        DK_CRASH_POINT("reclock.lock_done.tracked"); /* ... and between the bookkeeping and the call's end */
        bool overlapped = !alone(c, __atomic_sub_fetch(&calls, CALL_IN_FLIGHT, __ATOMIC_ACQ_REL), 0) || !first;
        mine_sub();
        if (overlapped) {
            forget_held(&f->locks); /* another call overlapped this one, its bookkeeping included */
            exempt = false;
        }
    }
    if (!ok || unlock) return;
    uint64_t gen = __atomic_add_fetch(&up_refresh_gen, 1, __ATOMIC_ACQ_REL); /* every other file */
    if (exempt && gen == gen_was + 1) { /* no other lock moved it meanwhile */
        /* This file keeps the size it read; an exact end is checked when next needed. */
        __atomic_store_n(&f->size_unsure, true, __ATOMIC_RELAXED);
        uint64_t expect = gen_was;
        __atomic_compare_exchange_n(&f->refresh_gen, &expect, gen, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        dk_count(DK_C_refresh_skips, 1);
    }
}

/* Before the size is read: lapses first (see the top). Without f->mu. */
uint64_t up_locks_refresh_word(const struct up_file *f) {
    uint64_t lapses = lapses_of(&f->locks);
    return lapses << 1 | held(&f->locks);
}
void up_locks_note_refresh_word(struct up_file *f, uint64_t word) {
    __atomic_store_n(&f->locks.at_refresh, word, __ATOMIC_RELEASE);
}
void up_locks_note_refresh(struct up_file *f) { up_locks_note_refresh_word(f, up_locks_refresh_word(f)); }

void up_lock_cancelled(void *unused) {
    (void)unused;
    __atomic_sub_fetch(&calls, CALL_IN_FLIGHT, __ATOMIC_ACQ_REL); /* its start stays: a call it overlapped sees it */
    mine_sub();
}

/* Without f->mu (a close with nothing to publish takes none: upath.c), inside the close's count
 * (up_locks_close_begin): a lock call of another thread or of a signal handler meanwhile either finds the set
 * unknown already, or is taken as made before the close -- which drops it in the kernel, after this. */
void up_locks_closed(struct up_file *f) {
    /* Unknown, not empty: the kernel's close comes after this, and drops whatever lock another thread
     * takes on the file meanwhile (review 7, finding 13b). The next whole-file unlock that runs alone -- after
     * the close's count ended, so after the kernel's close -- empties it. */
    forget_held(&f->locks);
    if (DK_UNLIKELY(dk_cfg.lock_cache)) up_lc_closed(f); /* lockcache.c: the kernel keeps nothing after the close */
}

/* The close's count: a start and one in flight, as a lock call's (up_lock_call_begin), from before its forget
 * until after the kernel's close. A lock call that begins inside it finds it busy; one begun before whose
 * bookkeeping ends inside it or after it finds a start since its own: neither runs alone, so neither makes the
 * set known (or held) again -- each ends it unknown (up_lock_done). One whose count ended before the close's
 * began is ordered before the forget (the count's read-modify-writes), which makes its set unknown. Until
 * session 24 the close was not counted: a whole-file release and a re-take between the forget and the kernel's
 * close ran alone and left the set held after the kernel dropped every lock (shim_lock_overlap's close cases).
 * Forgetting again after the kernel's close would not do: between the kernel's close and that forget, another
 * thread's size re-read and lock could already have kept a size on the strength of a lock the close dropped. */
void up_locks_close_begin(void) {
    mine_add();
    __atomic_add_fetch(&calls, CALL_STARTED | CALL_IN_FLIGHT, __ATOMIC_ACQ_REL);
}
void up_locks_close_end(void) {
    __atomic_sub_fetch(&calls, CALL_IN_FLIGHT, __ATOMIC_ACQ_REL);
    mine_sub();
}

/* Only the forking thread lives on in the child: the shares of the parent's other threads -- a lock call or a
 * close in flight at the fork -- would keep every lock call of the child overlapped for good (no refresh skip
 * ever; shim_lock_overlap thread fork). The started half stays (this thread's own call, if a handler forked
 * inside it, compares it). The child's sets were forgotten (up_file_reinit_locks_all: it holds none of its
 * parent's locks). */
void up_locks_after_fork_child(void) {
    uint64_t v = __atomic_load_n(&calls, __ATOMIC_RELAXED);
    __atomic_store_n(&calls, (v & ~(uint64_t)UINT32_MAX) | mine, __ATOMIC_RELEASE);
}

void up_size_verify_slow(struct up_file *f, int fd) {
    DK_ERRNO_SAVE;
    up_refresh_if_idle(f, fd);
    DK_ERRNO_RESTORE;
}

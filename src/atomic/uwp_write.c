/* write() of a file mapped in the userfaultfd write-protect mode (uwp.h): the bracket around it
 * (dk_uwp_write_begin/_end), and a write nested in it on the same thread -- a signal handler's, which can
 * interrupt its thread anywhere in a bracket or in an msync (review 11, finding 20: the process hung for good).
 *
 * The bracket: with the shadow, u->writes for reading from before the file write until its bytes are in the
 * shadow (no msync in between: review 10, finding 9) -- only ever tried, a write that cannot have it waits
 * for the msync's end on u->gate_cv, unregistered (a reader blocked in glibc's rdlock is granted the lock when
 * the writer leaves, while its thread may be running a handler); f->rw for writing around the copy into the
 * shadow or into the undo copies. A nested write must never wait for a lock its own thread holds, nor wait for one while
 * its thread holds one (another thread's handler could wait the other way round). So each thread marks what it
 * holds: a pending mark from before a lock is taken until after it is let go (it may be held), a held mark
 * only while it surely is, and a count of both. A write on a thread that holds nothing takes the locks as
 * always (plain); a nested one, by what its thread holds:
 *   - this file's u->writes and nothing else: covered by it, no msync can run; its copy takes f->rw, which
 *     only the fault handler thread and other writes' copies hold, briefly (covered);
 *   - this file's f->rw for a copy: its copy is made under it (borrowed: the interrupted copy and this one
 *     both copy the file's current bytes into the shadow, in either order; or carry their own bytes into the
 *     undo copies, the interrupted carry being between two blocks);
 *   - this file's msync, f->rw being taken for a copy (glibc may grant it to the interrupted thread at any
 *     time), u->writes being let go of (glibc's read unlock may have handed the lock to a waiting msync and
 *     not yet woken it: that msync, and so the lock, waits for the interrupted unlock -- review 12, finding
 *     13), u->writes being tried (its thread's tryrdlock may have had it, the held mark not yet set: a
 *     waiting msync then waits for the interrupted thread, and as the lock prefers writers every other
 *     reader's try fails until the msync is done -- the CI hang of session 24), or a block's mutex of the
 *     undo copies: refused, EDEADLK before anything is written;
 *   - the undo copies (tmpfs) otherwise: f->rw tried for up to UWP_NESTED_WRITES_WAIT_MS before the file
 *     write and held across it (else refused);
 *   - anything else: u->writes tried for up to UWP_NESTED_WRITES_WAIT_MS (mostly its thread waits for it too,
 *     on u->gate_cv behind an msync of the file, which ends; its thread cannot have it unmarked: a try is
 *     marked from before the call to after the held mark), and f->rw for the copy tried for up to
 *     UWP_NESTED_COPY_WAIT_MS; past that the copy is given up and the engine's sticky error set (the next
 *     msync fails with EIO: never a hang, never a silent loss).
 * Marks are restored in the order that never claims a lock held that is not. No wait of a nested write may
 * depend on its own thread: each is bounded, but signals that come faster than the bound (a 200 us timer
 * against 500 ms) are delivered again as each handler returns, and the interrupted thread never resumes --
 * the hang of finding 13 was that, every handler call refused after 500 ms. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "atomic/uwp.h"
#include "atomic/uwp_internal.h"
#include "common/dk.h"
#include "common/log.h"

#define UWP_NESTED_COPY_WAIT_MS 2000  /* a nested write's copy: its thread holds locks (see above) */
#define UWP_NESTED_WRITES_WAIT_MS 500 /* before it writes: mostly an msync of the file its thread waits for too */

enum { HOW_PLAIN = 1, HOW_COVERED, HOW_BORROWED, HOW_TRIED, HOW_TRIED_WRITES, HOW_TRIED_RW };

static __thread struct dk_uwp_marks uwp_self;

#define SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

bool dk_uwp_thread_busy(void) { return uwp_self.locks != 0; }

void uwp_mark_msync(struct dk_uwp *u, struct dk_uwp_marks *saved) {
    *saved = uwp_self;
    uwp_self.locks++;
    SIGNAL_FENCE();
    uwp_self.msync = u;
    SIGNAL_FENCE();
}

/* After the locks taken since `saved` are let go: held marks first, the count last. */
void uwp_marks_restore(const struct dk_uwp_marks *saved) {
    SIGNAL_FENCE();
    uwp_self.rw_held = saved->rw_held, uwp_self.writes_held = saved->writes_held;
    SIGNAL_FENCE();
    uwp_self.rw_pending = saved->rw_pending, uwp_self.writes_pending = saved->writes_pending;
    uwp_self.writes_trying = saved->writes_trying;
    uwp_self.writes_releasing = saved->writes_releasing;
    uwp_self.msync = saved->msync;
    SIGNAL_FENCE();
    uwp_self.locks = saved->locks;
    SIGNAL_FENCE();
}

static void copy_locked(struct dk_uwp *u, uint64_t off, const void *buf, uint64_t n) {
    if (!n) return;
    if (u->shadow) uwp_shadow_file_written(u, off, n);
    else uwp_undo_file_written(u, off, buf, n); /* the mapping sees the bytes already: the undo copies */
}

/* The shadow's u->writes for reading, only ever tried: while an msync has it or waits for it, waits for that
 * msync's end on u->gate_cv (never blocked inside the lock call: see uwp_internal.h). Each try is marked
 * writes_trying (a nested write refuses: the try may have had the lock); had, the mark stays on return and
 * the caller gives it back after marking the lock held. */
static void writes_take_unregistered(struct dk_uwp *u) {
    struct dk_uwp *was = uwp_self.writes_trying;
    for (;;) {
        uwp_self.writes_trying = u;
        SIGNAL_FENCE();
        if (pthread_rwlock_tryrdlock(&u->writes) == 0) return;
        SIGNAL_FENCE();
        uwp_self.writes_trying = was; /* not had: waiting on the gate holds nothing a nested write needs */
        SIGNAL_FENCE();
        pthread_mutex_lock(&u->gate_mu);
        unsigned long long ends = u->msync_ends;
        while (u->msyncs_active && u->msync_ends == ends) pthread_cond_wait(&u->gate_cv, &u->gate_mu);
        pthread_mutex_unlock(&u->gate_mu);
    }
}

/* f->rw, just had for writing (rw_pending u): marked held around the copy, the mark given back before the
 * unlock (rw_pending stays: a nested write refuses while f->rw is being let go of). */
static void copy_with_rw_held(struct dk_uwp *u, uint64_t off, const void *buf, uint64_t n) {
    struct dk_uwp *was = uwp_self.rw_held;
    uwp_self.rw_held = u;
    SIGNAL_FENCE();
    copy_locked(u, off, buf, n);
    SIGNAL_FENCE();
    uwp_self.rw_held = was;
    SIGNAL_FENCE();
    pthread_rwlock_unlock(&u->f->rw);
}

/* f->rw for writing around the copy, waited for (a nested write refuses while it is pending, not held). */
static void copy(struct dk_uwp *u, uint64_t off, const void *buf, uint64_t n) {
    uwp_self.locks++;
    uwp_self.rw_pending = u;
    SIGNAL_FENCE();
    pthread_rwlock_wrlock(&u->f->rw);
    copy_with_rw_held(u, off, buf, n);
    SIGNAL_FENCE();
    uwp_self.rw_pending = NULL; /* (the count stays up until the bracket's end: a superset) */
}

/* A nested write's lock, tried every 100 us for up to ms milliseconds (its thread holds or waits for locks: it
 * must not wait for good). false: not had. */
static bool try_for_a_while(pthread_rwlock_t *l, bool write, int ms) {
    for (int i = 0; i <= ms * 10; i++) {
        if ((write ? pthread_rwlock_trywrlock(l) : pthread_rwlock_tryrdlock(l)) == 0) return true;
        struct timespec ts = {0, 100000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

int dk_uwp_write_begin(struct dk_uwp *u, struct dk_uwp_write *w) {
    struct dk_uwp_marks *t = &uwp_self;
    *w = (struct dk_uwp_write){.u = u, .saved = *t};
    if (!t->locks) { /* nothing held: wait as needed */
        w->how = HOW_PLAIN;
        if (!u->shadow) return 0;
        t->locks++;
        t->writes_pending = u;
        SIGNAL_FENCE();
        writes_take_unregistered(u);
        t->writes_held = u;
        SIGNAL_FENCE();
        t->writes_trying = w->saved.writes_trying;
        SIGNAL_FENCE();
        return 0;
    }
    /* its msync of the file; f->rw being taken for a copy (its thread may be granted it any time); u->writes
     * being let go of (an msync may have been handed it, and wait for the interrupted unlock to wake it) or
     * being tried (the try may have had it: a waiting msync waits for the interrupted thread, and every other
     * reader's try fails behind that msync) */
    if (t->msync == u || (t->rw_pending == u && t->rw_held != u) || t->writes_releasing == u ||
        t->writes_trying == u)
        return -EDEADLK;
    if (t->rw_held == u) { /* this file's copy, interrupted (with the shadow u->writes is held too) */
        if (!u->shadow && uwp_undo_in_block(u)) return -EDEADLK; /* inside a block's mutex */
        w->how = HOW_BORROWED;
        return 0;
    }
    t->locks++; /* from here on what this write takes or waits for (a write nested in it sees it) */
    SIGNAL_FENCE();
    if (u->shadow && t->writes_held == u && w->saved.locks == 1) {
        w->how = HOW_COVERED;
        return 0;
    }
    w->how = HOW_TRIED;
    if (!u->shadow) { /* f->rw up front, held across the file write (no fault there needs it: the file's own
                       * mapping only has write faults, and reading the write's buffer is none) */
        t->rw_pending = u;
        SIGNAL_FENCE();
        if (!try_for_a_while(&u->f->rw, true, UWP_NESTED_WRITES_WAIT_MS)) {
            uwp_marks_restore(&w->saved);
            return -EDEADLK;
        }
        t->rw_held = u;
        SIGNAL_FENCE();
        w->how = HOW_TRIED_RW;
        return 0;
    }
    if (t->writes_held != u) {
        t->writes_pending = u;
        t->writes_trying = u; /* a write nested in this one refuses: a try below may have had the lock */
        SIGNAL_FENCE();
        if (!try_for_a_while(&u->writes, false, UWP_NESTED_WRITES_WAIT_MS)) {
            uwp_marks_restore(&w->saved);
            return -EDEADLK;
        }
        t->writes_held = u;
        SIGNAL_FENCE();
        t->writes_trying = w->saved.writes_trying;
        SIGNAL_FENCE();
        w->how = HOW_TRIED_WRITES;
    }
    return 0;
}

void dk_uwp_write_end(struct dk_uwp_write *w, uint64_t off, const void *buf, uint64_t n) {
    DK_ERRNO_SAVE;
    struct dk_uwp *u = w->u;
    switch (w->how) {
    case HOW_BORROWED:
        copy_locked(u, off, buf, n);
        break;
    case HOW_PLAIN:
    case HOW_COVERED:
        copy(u, off, buf, n);
        break;
    case HOW_TRIED_RW:
        copy_locked(u, off, buf, n);
        SIGNAL_FENCE();
        uwp_self.rw_held = w->saved.rw_held;
        SIGNAL_FENCE();
        pthread_rwlock_unlock(&u->f->rw);
        break;
    default: /* tried */
        uwp_self.rw_pending = u;
        SIGNAL_FENCE();
        if (try_for_a_while(&u->f->rw, true, UWP_NESTED_COPY_WAIT_MS)) {
            copy_with_rw_held(u, off, buf, n);
        } else if (n) { /* the copy is lost: no msync of this mapping may succeed from here on */
            __atomic_store_n(&u->error, -EIO, __ATOMIC_RELEASE);
            dk_log("DAXKIT_ATOMIC_MMAP: a signal handler's write could not be copied into the mapping's log in %d "
                   "ms: every later msync of the mapping fails with EIO", UWP_NESTED_COPY_WAIT_MS);
        }
        break;
    }
    if (w->how == HOW_PLAIN ? u->shadow : w->how == HOW_TRIED_WRITES) {
        SIGNAL_FENCE();
        uwp_self.writes_releasing = u; /* the whole unlock call: a handler refuses (review 12, finding 13) */
        SIGNAL_FENCE();
        uwp_self.writes_held = w->saved.writes_held;
        SIGNAL_FENCE();
        pthread_rwlock_unlock(&u->writes);
        SIGNAL_FENCE();
        uwp_self.writes_releasing = w->saved.writes_releasing;
    }
    uwp_marks_restore(&w->saved);
    DK_ERRNO_RESTORE;
}

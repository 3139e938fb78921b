/* DAXKIT_LOCK_CACHE: a POSIX record lock the program releases on a managed file stays held in the kernel
 * ("cached") until another process asks (or waits) for it, or for at most DAXKIT_LOCK_CACHE_US from when the file
 * began to keep it (its age: a busy program's locks are dropped too); an acquisition
 * the kernel-held locks already cover makes no system call. SQLite's rollback-mode lock round (9 fcntl calls a
 * transaction) then costs none once warm. Design, races and what each party sees: docs/design-lockcache.md.
 *
 * Per file (struct up_lc, under its spin lock `owner`): the program's locks p and a lower bound k of the kernel's,
 * per byte range (levels 0 none, 1 read, 2 write; p <= kernel always), and [lo, hi), an upper bound of every byte
 * the kernel may hold for the process. A drop sets the kernel to exactly p over [lo, hi): unlocks where p holds
 * nothing, a read lock where p reads (a downgrade, or nothing), nothing where p writes. None of those can fail
 * for a conflict: the kernel holds at least p. Drops leave the ranges of the file's acquisitions in the kernel
 * alone (fl), run under the lock, with signals blocked (a program thread's) or on the library's thread.
 *
 * Acquisitions that go to the kernel lower k to min(k, t) first and set it to t after -- unless another lock
 * call or close of the process overlapped (reclock.c: up_lock_call_alone), then 0: two calls of one process
 * reach the kernel in either order. A signal handler's call inside its own thread's hold goes to the kernel and
 * is recorded (def), applied by the holder before it lets go (p exact, k 0 there). Any close of the file resets
 * everything before the kernel's close (up_lc_closed: the kernel drops every lock of the process on it); a fork
 * child starts with nothing; an exec drops the cached locks first (the new image keeps the kernel's).
 *
 * Other daxkit processes: a board, <root>/.daxkit/lockboard.<uid> (MAP_SHARED), one slot a process (claimed by an
 * OFD lock on its byte: the slot of a dead process is free), each listing the files it caches (dev, ino, whether
 * anything is cached now, a request count) and a futex word its library thread waits on. A process whose kernel
 * acquisition fails for a conflict (or before it blocks in F_SETLKW) asks every process caching the file, waits
 * up to LC_WAIT_NS for them to drop, retrying, then returns what the kernel says. The asked thread drops the
 * file's cached locks and keeps releases going to the kernel for LC_COLD_NS (two processes taking turns do not
 * ping-pong through wake-ups); one blocking in F_SETLKW after that is counted in their entries (waiters): their
 * releases of the file go to the kernel meanwhile. Processes without daxkit (and F_GETLK) see a cached lock as
 * held until the age drop. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/log.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "common/thread.h"
#include "shim/libc.h"
#include "upath/internal.h"
#include "upath/upath.h"

#define LC_WAIT_NS 200000ull   /* a requester waits this long at most for cachers to drop */
#define LC_STEP_NS 20000ull    /* ... looking again this often */
#define LC_COLD_NS 20000000ull /* after a request: the file's releases go to the kernel for 20 ms */

/* A requester blocked in F_SETLKW, counted in other processes' board entries (board_wait). */
struct lb_wait {
    uint32_t *w[8];
    unsigned n;
};
/* An acquisition in the kernel: on its thread's stack, listed in its file's `fl` under the lock from before the
 * kernel call until its result is recorded (or its thread is cancelled there). Every one is listed -- review27b
 * #3: with 4 places, a 5th acquisition of one file in the kernel stopped every drop of the file until fewer were
 * in flight, a wait the kernel path does not have (EDEADLK for a process that held what they waited for). */
struct up_lc_flight {
    struct up_lc_flight *next;
    struct up_lc *c;
    uint64_t a, b;
    struct lb_wait wt;
};

/* ---- the per-file lock ---- */

static __thread char lc_token; /* its address names the thread */
static uintptr_t me(void) { return (uintptr_t)&lc_token; }

/* 0: taken; 1: this thread holds it already (a signal handler inside its thread's hold). */
static int lc_take(struct up_lc *c) {
    uintptr_t self = me();
    for (unsigned i = 0;; i++) {
        uintptr_t was = 0;
        if (__atomic_compare_exchange_n(&c->owner, &was, self, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return 0;
        if (was == self) return 1;
        if (i < 100) __builtin_ia32_pause();
        else sched_yield();
    }
}

static void apply_deferred(struct up_lc *c);
static void lc_give(struct up_lc *c) {
    for (;;) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        apply_deferred(c);
        __atomic_store_n(&c->owner, 0, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        /* a handler that came after the look above and before the store recorded its call: take it again */
        if (DK_LIKELY(!__atomic_load_n(&c->nd, __ATOMIC_RELAXED) && !__atomic_load_n(&c->dclose, __ATOMIC_RELAXED)))
            return;
        if (lc_take(c)) return; /* (cannot be: the handler is gone) */
    }
}

/* ---- the range map ---- */

static uint8_t level(short type) { return type == F_RDLCK ? 1 : type == F_WRLCK ? 2 : 0; }

/* 1: [a, b) (b UINT64_MAX: to the end, as the kernel's OFFSET_MAX); 0: not followed (SEEK_CUR, SEEK_END: the
 * file turns off); -1: a range the kernel refuses (EINVAL, EOVERFLOW, fs/locks.c flock64_to_posix_lock) -- the
 * call goes to the kernel and nothing changes (review26b #11). */
static int range_of(const struct flock *l, uint64_t *a, uint64_t *b) {
    if (l->l_whence != SEEK_SET) return 0;
    int64_t start = (int64_t)l->l_start, len = (int64_t)l->l_len;
    if (start < 0) return -1;
    if (len < 0) {
        if (start + len < 0) return -1; /* (start >= 0, len < 0: no overflow) */
        *a = (uint64_t)(start + len), *b = (uint64_t)start;
        return 1;
    }
    *a = (uint64_t)start;
    if (len == 0) {
        *b = UINT64_MAX;
        return 1;
    }
    if ((uint64_t)len - 1 > (uint64_t)(INT64_MAX - start)) return -1; /* the kernel: EOVERFLOW */
    *b = (uint64_t)start + (uint64_t)len; /* <= 2^63: the kernel's end + 1 */
    if (*b == 1ull << 63) *b = UINT64_MAX;
    return 1;
}

enum { KEEP = 255, KMIN = 254 };

/* Over [a, b): p := np (KEEP: unchanged), k := nk (KEEP, or KMIN: min(k, np's level given in kmin)). False (and
 * nothing changed) when the result needs more than UP_LC_SEGS segments. */
static bool paint(struct up_lc *c, uint64_t a, uint64_t b, uint8_t np, uint8_t nk, uint8_t kmin) {
    /* In place, the common cases (SQLite's: its lock bytes are the same few ranges every time) -- a change of p
     * alone over the whole file, or over exactly one segment. Adjacent segments may then be equal: every reader
     * takes them as one. */
    if (nk == KEEP && a == 0 && b == UINT64_MAX && np == 0) {
        unsigned k = 0;
        for (unsigned i = 0; i < c->n; i++)
            if (c->seg[i].k) c->seg[k] = c->seg[i], c->seg[k++].p = 0;
        c->n = (uint8_t)k;
        return true;
    }
    if (nk == KEEP || nk != KMIN) {
        for (unsigned i = 0; i < c->n && c->seg[i].a <= a; i++) {
            struct up_lc_seg *s = &c->seg[i];
            if (s->a != a || s->b != b) continue;
            if (np != KEEP) s->p = np;
            if (nk != KEEP) s->k = nk;
            if (!s->p && !s->k) {
                memmove(s, s + 1, (c->n - i - 1) * sizeof *s);
                c->n--;
            }
            return true;
        }
    }
    struct up_lc_seg out[3 * UP_LC_SEGS + 4]; /* (each old segment: a gap, head, middle and tail at most) */
    unsigned n = 0;
    uint64_t cur = a; /* the next byte of [a, b) not yet emitted */
#define EMIT(A, B, P, K)                                                                            \
    do {                                                                                            \
        uint64_t a_ = (A), b_ = (B);                                                                \
        uint8_t p_ = (P), k_ = (K);                                                                 \
        if (a_ < b_ && (p_ || k_)) out[n++] = (struct up_lc_seg){a_, b_, p_, k_};                   \
    } while (0)
#define NEWP(P) (np == KEEP ? (P) : np)
#define NEWK(K) (nk == KEEP ? (K) : nk == KMIN ? DK_MIN((K), kmin) : nk)
    for (unsigned i = 0; i < c->n; i++) {
        struct up_lc_seg s = c->seg[i];
        if (s.b <= a || s.a >= b) { /* apart */
            if (s.a >= b && cur < b) { EMIT(cur, b, NEWP(0), NEWK(0)); cur = b; }
            EMIT(s.a, s.b, s.p, s.k);
            continue;
        }
        if (s.a > cur) EMIT(cur, s.a, NEWP(0), NEWK(0)); /* a gap inside [a, b) */
        if (s.a < a) EMIT(s.a, a, s.p, s.k);             /* its head stays */
        uint64_t ia = DK_MAX(s.a, a), ib = DK_MIN(s.b, b);
        EMIT(ia, ib, NEWP(s.p), NEWK(s.k));
        cur = ib;
        if (s.b > b) EMIT(b, s.b, s.p, s.k); /* its tail stays */
    }
    if (cur < b) EMIT(cur, b, NEWP(0), NEWK(0));
#undef EMIT
#undef NEWP
#undef NEWK
    if (n > UP_LC_SEGS) { /* equal neighbours merged (kept apart otherwise: the in-place cases above find them) */
        unsigned m = 0;
        for (unsigned i = 0; i < n; i++) {
            if (m && out[m - 1].b == out[i].a && out[m - 1].p == out[i].p && out[m - 1].k == out[i].k) out[m - 1].b = out[i].b;
            else out[m++] = out[i];
        }
        n = m;
    }
    if (n > UP_LC_SEGS) return false;
    memcpy(c->seg, out, n * sizeof out[0]);
    c->n = (uint8_t)n;
    return true;
}

/* 0: some byte of [a, b) has k < t; 1: every byte k == t; 2: every byte k >= t, some more (a downgrade: the
 * kernel keeps more than the program then holds -- cached). */
static int covered(const struct up_lc *c, uint64_t a, uint64_t b, uint8_t t) {
    uint64_t cur = a;
    int more = 0;
    for (unsigned i = 0; i < c->n && cur < b; i++) {
        const struct up_lc_seg *s = &c->seg[i];
        if (s->b <= cur) continue;
        if (s->a > cur || s->k < t) return 0;
        more |= s->k > t;
        cur = s->b;
    }
    return cur >= b ? 1 + more : 0;
}

/* Some byte of [a, b) the program holds more of than k says the kernel does (an acquisition that overlapped
 * another call of the process, a handler's recorded call): a release there must reach the kernel -- kept, it
 * would be neither "cached" (k > p) nor ever dropped (review26b #3). */
static bool unsure(const struct up_lc *c, uint64_t a, uint64_t b) {
    for (unsigned i = 0; i < c->n; i++)
        if (c->seg[i].a < b && c->seg[i].b > a && c->seg[i].p > c->seg[i].k) return true;
    return false;
}

static void extend(struct up_lc *c, uint64_t a, uint64_t b) {
    if (c->lo == c->hi) c->lo = a, c->hi = b;
    else c->lo = DK_MIN(c->lo, a), c->hi = DK_MAX(c->hi, b);
}

static bool has_cached(const struct up_lc *c) {
    for (unsigned i = 0; i < c->n; i++)
        if (c->seg[i].k > c->seg[i].p) return true;
    return false;
}

/* Nothing held, nothing cached, followed again: the kernel holds nothing for the process on the file. */
static void reset(struct up_lc *c) {
    c->n = 0, c->off = 0, c->lost = 0, c->lo = c->hi = 0, c->cached_since = 0, c->due = 0;
    __atomic_store_n(&c->fd1, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->fdr1, 0, __ATOMIC_RELAXED);
}

static void board_cached(struct up_lc *c, bool cached);

/* A handler's calls, recorded inside its thread's hold: p exact, k 0 there (where the kernel stands against
 * the holder's own call is not known), and a close: everything goes. */
static void apply_deferred(struct up_lc *c) {
    uint8_t nd = __atomic_load_n(&c->nd, __ATOMIC_RELAXED);
    for (uint8_t i = 0; i < nd; i++) {
        uint64_t a = c->def[i].a, b = c->def[i].b;
        uint8_t t = c->def[i].t;
        if (t == 0 && a == 0 && b == UINT64_MAX) {
            int fd1 = c->fd1, fdr1 = c->fdr1;
            reset(c);
            c->fd1 = fd1, c->fdr1 = fdr1;
            continue;
        }
        extend(c, a, b);
        if (!c->off && !paint(c, a, b, t, 0, 0)) c->off = c->lost = 1;
    }
    if (nd) __atomic_store_n(&c->nd, 0, __ATOMIC_RELAXED);
    if (__atomic_load_n(&c->dclose, __ATOMIC_RELAXED)) {
        reset(c);
        __atomic_store_n(&c->dclose, 0, __ATOMIC_RELAXED);
    }
    (void)board_cached;
}

/* ---- drops ---- */

static unsigned drops_failed;
static bool lc_forking, lc_fork_calls; /* a fork child before up_fork_child's end (up_lc_init) */
static uint32_t lc_exec; /* an exec is under way (up_lc_before_exec until up_lc_exec_failed): nothing is kept */

/* A drop's calls, made as they are planned (no plan to overflow, however many acquisitions are in flight). */
struct dropper {
    int fd, fdr;
    bool failed;
};
static void drop_call(struct dropper *d, short t, uint64_t a, uint64_t b) {
    struct flock l = {.l_type = t, .l_whence = SEEK_SET, .l_start = (off_t)a, .l_len = b == UINT64_MAX ? 0 : (off_t)(b - a)};
    if (DK_REAL(fcntl)(t == F_RDLCK ? d->fdr : d->fd, F_SETLK, &l) != 0) {
        __atomic_add_fetch(&drops_failed, 1, __ATOMIC_RELAXED);
        d->failed = true;
    }
}
/* [a, b) set to type t in the kernel, minus the ranges of acquisitions in the kernel now (theirs to set): those
 * from `from` on in the list. */
static void plan_add(struct dropper *d, const struct up_lc_flight *from, short t, uint64_t a, uint64_t b) {
    for (const struct up_lc_flight *x = from; x && a < b; x = x->next) {
        if (x->b <= a || x->a >= b) continue;
        if (x->a > a) plan_add(d, x->next, t, a, x->a);
        a = x->b;
    }
    if (a < b) drop_call(d, t, a, b);
}
static bool in_flight_overlaps(const struct up_lc *c, uint64_t a, uint64_t b) {
    for (const struct up_lc_flight *x = c->fl; x; x = x->next)
        if (x->a < b && x->b > a) return true;
    return false;
}

/* The kernel set to exactly p over [lo, hi) -- except where an acquisition is in the kernel now -- through the
 * program's descriptors fd1 (unlocks) and fdr1 (read-lock downgrades). Under the lock, fd1 set; no
 * signal can run a lock call of the program on this thread meanwhile. A call that fails (no readable
 * descriptor: review26b #8) leaves the kernel's state unknown there: the file turns off (lost). */
static void drop_locked(struct up_lc *c) {
    if (c->lo == c->hi) return;
    struct dropper d = {.fd = c->fd1 - 1, .fdr = c->fdr1 ? c->fdr1 - 1 : c->fd1 - 1, .failed = false};
    uint64_t cur = c->lo;
    DK_ERRNO_SAVE;
#define PLAN(T, A, B) plan_add(&d, c->fl, (T), (A), (B))
    for (unsigned i = 0; i < c->n; i++) {
        const struct up_lc_seg *s = &c->seg[i];
        if (!s->p || s->b <= c->lo || s->a >= c->hi) continue;
        uint64_t a = DK_MAX(s->a, c->lo), b = DK_MIN(s->b, c->hi);
        if (a > cur) PLAN(F_UNLCK, cur, a);
        if (s->p == 1) PLAN(F_RDLCK, a, b); /* k is a lower bound: the kernel may write-lock it still */
        cur = b;
    }
    if (cur < c->hi) PLAN(F_UNLCK, cur, c->hi);
#undef PLAN
    DK_ERRNO_RESTORE;
    bool failed = d.failed;
    /* k := p; [lo, hi) := p's extent -- except over the ranges of acquisitions in the kernel now: there the plan
     * changed nothing, k stays and the range stays in the extent (that acquisition's end sets it). A segment is
     * cut at those ranges' bounds first: one only partly in flight gets k := p outside (review26b #5). */
    struct up_lc_seg out[UP_LC_SEGS]; /* (small: a handler's lock call on a small alternate stack may drop) */
    unsigned k = 0;
    bool fits = true;
    uint64_t lo = 0, hi = 0;
    for (unsigned i = 0; i < c->n; i++) {
        struct up_lc_seg s = c->seg[i];
        while (s.a < s.b) {
            struct up_lc_seg piece = s;
            for (const struct up_lc_flight *x = c->fl; x; x = x->next) { /* the piece ends at the first in-flight bound inside it */
                if (x->a > piece.a && x->a < piece.b) piece.b = x->a;
                if (x->b > piece.a && x->b < piece.b) piece.b = x->b;
            }
            s.a = piece.b;
            if (!in_flight_overlaps(c, piece.a, piece.b)) piece.k = piece.p;
            if (!piece.p && !piece.k) continue;
            if (k && out[k - 1].b == piece.a && out[k - 1].p == piece.p && out[k - 1].k == piece.k &&
                !in_flight_overlaps(c, piece.a, piece.b) && !in_flight_overlaps(c, out[k - 1].a, out[k - 1].b))
                out[k - 1].b = piece.b;
            else if (k < UP_LC_SEGS) out[k++] = piece;
            else fits = false;
            if (lo == hi) lo = piece.a, hi = piece.b;
            else lo = DK_MIN(lo, piece.a), hi = DK_MAX(hi, piece.b);
        }
    }
    for (const struct up_lc_flight *x = c->fl; x; x = x->next) { /* (their bytes may be held once they end) */
        if (lo == hi) lo = x->a, hi = x->b;
        else lo = DK_MIN(lo, x->a), hi = DK_MAX(hi, x->b);
    }
    if (failed || !fits) { /* (the plan's kernel state not known, or not representable): off */
        c->off = 1, c->lost = 1;
    } else {
        memcpy(c->seg, out, k * sizeof out[0]);
        c->n = (uint8_t)k, c->lo = lo, c->hi = hi;
    }
    bool cached = has_cached(c) && !c->off;
    c->cached_since = cached ? dk_now_ns() : 0; /* (what an acquisition in flight overlaps: aged from now) */
    board_cached(c, cached);
    dk_count(DK_C_lock_cache_drops, 1);
}

/* A program thread's drop: signals blocked around the calls (a handler's lock call on the file meanwhile would
 * be undone by the plan). Under the lock. */
static void drop_from_program(struct up_lc *c) {
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &was);
    c->dropping = 1;
    drop_locked(c);
    c->dropping = 0;
    pthread_sigmask(SIG_SETMASK, &was, NULL);
}

/* ---- the board ---- */

#define LB_PROCS 128
#define LB_FILES 60
struct lb_file {
    uint64_t dev, ino; /* ino 0: free */
    uint32_t req;      /* requests from other processes (atomic) */
    uint32_t cached;   /* the owner caches a lock on it now (atomic) */
    uint32_t waiters;  /* other processes' threads blocked in F_SETLKW on the file: releases go to the kernel
                        * (atomic; theirs to count up and down, never below 0: a dead waiter's stays -- the file
                        * is then not cached by this entry's owner, never wrongly cached) */
    uint32_t pad;
};
struct lb_proc {
    uint32_t word;     /* the owner's thread waits on it (futex) */
    int32_t pid;
    uint32_t sleeping; /* the thread waits without a timeout: wake it when something is cached */
    uint32_t pad;
    struct lb_file file[LB_FILES];
    char fill[2048 - 16 - LB_FILES * sizeof(struct lb_file)];
};
_Static_assert(sizeof(struct lb_proc) == 2048, "board slot");
#define LB_BYTES ((size_t)LB_PROCS * sizeof(struct lb_proc))

static struct {
    uint32_t state;     /* 0 not tried, 1 ready, 2 failed, 3 being made (atomic) */
    const struct up_root *root;
    int fd;
    struct lb_proc *map;
    int slot;
    pid_t pid;
    struct up_file *files[LB_FILES]; /* the registry: which file each of our entries is (atomic) */
    struct up_file *busy;            /* the thread's file right now: file_free waits while it is its */
    pthread_t thread;
    uint32_t thread_started;
} lb;

static long futex(uint32_t *w, int op, uint32_t v, const struct timespec *ts) {
    return syscall(SYS_futex, w, op, v, ts, NULL, 0);
}

static void *lc_thread(void *arg);

/* The board of root r opened, mapped and a slot claimed; the thread started. Once per process (a fork child
 * again). False: no caching in this process (files of other roots: none either). */
static bool board_ready(const struct up_root *r) {
    uint32_t st = __atomic_load_n(&lb.state, __ATOMIC_ACQUIRE);
    if (DK_LIKELY(st == 1)) return lb.root == r;
    if (st != 0) return false;
    uint32_t zero = 0;
    if (!__atomic_compare_exchange_n(&lb.state, &zero, 3, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return false;
    int area_fd;
    const char *tag;
    uint32_t result = 2;
    int cancel_was = dk_cancel_off();
    DK_ERRNO_SAVE;
    if (up_stage_owner((struct up_root *)r, &area_fd, &tag) == 0) {
        char name[64];
        snprintf(name, sizeof name, "lockboard2.%u", (unsigned)geteuid()); /* (2: with waiters) */
        int fd = dk_ifd_openat(area_fd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        struct stat sb;
        void *m = MAP_FAILED;
        if (fd >= 0 && DK_REAL(fstat)(fd, &sb) == 0 &&
            ((size_t)sb.st_size >= LB_BYTES || DK_REAL(ftruncate)(fd, (off_t)LB_BYTES) == 0))
            m = DK_REAL(mmap)(NULL, LB_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int slot = -1;
        for (int i = 0; m != MAP_FAILED && i < LB_PROCS; i++) {
            struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
            if (DK_REAL(fcntl)(fd, F_OFD_SETLK, &l) == 0) {
                slot = i;
                break;
            }
        }
        if (slot >= 0) {
            struct lb_proc *p = &((struct lb_proc *)m)[slot];
            memset(p->file, 0, sizeof p->file);
            __atomic_store_n(&p->sleeping, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&p->pid, (int32_t)DK_REAL(getpid)(), __ATOMIC_RELEASE);
            lb.fd = up_internal_fd(fd), lb.map = m, lb.slot = slot, lb.root = r, lb.pid = DK_REAL(getpid)();
            result = 1; /* (the thread: at the first kept release, lc_thread_ready) */
        }
        if (result != 1) {
            /* (not on the program's stderr: the cache is on by default -- 128 processes hold every slot) */
            dk_count(DK_C_lock_cache_off, 1);
            dk_log_verbose("DAXKIT_LOCK_CACHE: no lock board in %s/.daxkit (%s): locks are not cached", r->path,
                           slot < 0 && m != MAP_FAILED ? "every slot taken" : dk_strerror(errno));
            if (m != MAP_FAILED) DK_REAL(munmap)(m, LB_BYTES);
            if (fd >= 0) DK_REAL(close)(fd);
        }
    }
    DK_ERRNO_RESTORE;
    dk_cancel_restore(cancel_was);
    __atomic_store_n(&lb.state, result, __ATOMIC_RELEASE);
    return result == 1 && lb.root == r;
}

static struct lb_proc *my_slot(void) { return &lb.map[lb.slot]; }

/* The library's thread runs (the board is ready): started at the process's first kept release, not at its first
 * lock call -- a program that locks but never releases a kept lock (or only in the kernel) gets no thread, and
 * one that never locks none either (glibc's single-thread paths, unshare(CLONE_NEWUSER)). Not started: nothing is
 * kept (the release goes to the kernel). Made once (a fork child again); a thread that loses the race to start
 * it sends its release to the kernel. Not from inside a file's spin lock (pthread_create takes glibc's locks). */
static bool lc_thread_ready(void) {
    uint32_t st = __atomic_load_n(&lb.thread_started, __ATOMIC_ACQUIRE);
    if (DK_LIKELY(st == 1)) return true;
    if (st != 0) return false; /* 2: failed, 3: being started by another thread */
    uint32_t zero = 0;
    if (!__atomic_compare_exchange_n(&lb.thread_started, &zero, 3, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return false;
    int cancel_was = dk_cancel_off();
    DK_ERRNO_SAVE;
    uint32_t result = 2;
    if (dk_thread_start(&lb.thread, NULL, lc_thread, NULL) == 0) {
        pthread_detach(lb.thread);
        result = 1;
        dk_count(DK_C_lock_cache_threads, 1);
    } else {
        dk_count(DK_C_lock_cache_off, 1);
        dk_log_verbose("DAXKIT_LOCK_CACHE: no thread (%s): locks are not cached", dk_strerror(errno));
    }
    DK_ERRNO_RESTORE;
    dk_cancel_restore(cancel_was);
    __atomic_store_n(&lb.thread_started, result, __ATOMIC_RELEASE);
    return result == 1;
}

/* f's entry in our slot (registered on first use): false when the slot is full. Lock-free. */
static __attribute__((noinline)) bool board_register(struct up_file *f) { /* (noinline: -Wclobbered in up_lc_setlk) */
    if (DK_LIKELY(__atomic_load_n(&f->lc.bidx1, __ATOMIC_ACQUIRE))) return true;
    /* under the file's lock: two threads' first calls on the file register it once (review27b #4) */
    if (lc_take(&f->lc)) return false; /* (a handler inside its thread's hold: not now) */
    bool ok = f->lc.bidx1 != 0;
    struct lb_proc *p = my_slot();
    for (int i = 0; !ok && i < LB_FILES; i++) {
        struct up_file *none = NULL;
        if (!__atomic_compare_exchange_n(&lb.files[i], &none, f, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) continue;
        __atomic_store_n(&p->file[i].req, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&p->file[i].cached, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&p->file[i].dev, (uint64_t)f->dev, __ATOMIC_RELAXED);
        __atomic_store_n(&p->file[i].ino, (uint64_t)f->ino, __ATOMIC_RELEASE);
        f->lc.req_seen = 0;
        __atomic_store_n(&f->lc.bidx1, i + 1, __ATOMIC_RELEASE);
        ok = true;
    }
    lc_give(&f->lc);
    return ok;
}

/* Our entry for f says whether anything is cached: requesters wait only for a process that caches. The first
 * cache after the thread went to sleep without a timeout wakes it (the age drop needs it). */
static void board_cached(struct up_lc *c, bool cached) {
    if (!c->bidx1) return;
    struct lb_proc *p = my_slot();
    struct lb_file *e = &p->file[c->bidx1 - 1];
    if (__atomic_load_n(&e->cached, __ATOMIC_RELAXED) == (uint32_t)cached) return;
    __atomic_store_n(&e->cached, cached, __ATOMIC_SEQ_CST);
    if (cached && __atomic_load_n(&p->sleeping, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&p->sleeping, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&p->word, 1, __ATOMIC_SEQ_CST);
        DK_ERRNO_SAVE;
        futex(&p->word, FUTEX_WAKE, 1, NULL);
        DK_ERRNO_RESTORE;
    }
}

/* Asks every other process that caches a lock on f to drop it; true when one was asked. */
static bool board_ask(const struct up_file *f) {
    if (!board_ready(f->root)) return false; /* (a process that never cached opens it at its first conflict) */
    bool asked = false;
    for (int i = 0; i < LB_PROCS; i++) {
        struct lb_proc *p = &lb.map[i];
        if (i == lb.slot || !__atomic_load_n(&p->pid, __ATOMIC_ACQUIRE)) continue;
        for (int j = 0; j < LB_FILES; j++) {
            struct lb_file *e = &p->file[j];
            if (__atomic_load_n(&e->ino, __ATOMIC_ACQUIRE) != (uint64_t)f->ino ||
                __atomic_load_n(&e->dev, __ATOMIC_RELAXED) != (uint64_t)f->dev ||
                !__atomic_load_n(&e->cached, __ATOMIC_ACQUIRE))
                continue;
            /* alive? the slot's OFD lock is held by its owner */
            struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
            int32_t pid = __atomic_load_n(&p->pid, __ATOMIC_ACQUIRE);
            if (DK_REAL(fcntl)(lb.fd, F_OFD_GETLK, &l) == 0 && l.l_type == F_UNLCK) {
                /* a dead process's slot: nothing to ask -- unless a new owner claimed it since (review26b #7) */
                __atomic_compare_exchange_n(&p->pid, &pid, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
                break;
            }
            __atomic_add_fetch(&e->req, 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&p->word, 1, __ATOMIC_SEQ_CST);
            futex(&p->word, FUTEX_WAKE, 1, NULL);
            dk_count(DK_C_lock_cache_asks, 1);
            asked = true;
        }
    }
    return asked;
}

/* A requester about to block in the kernel's F_SETLKW: counted in every other process's entry for f (cached now
 * or not -- the owner's program may hold the lock itself), whose thread is woken to drop what it caches; the
 * owner's releases of f then go to the kernel until the count is back to 0. Up to DK_ARRAY_LEN(w) entries. */
static void board_wait(const struct up_file *f, struct lb_wait *wt) {
    wt->n = 0;
    if (__atomic_load_n(&lb.state, __ATOMIC_ACQUIRE) != 1 || lb.root != f->root) return;
    for (int i = 0; i < LB_PROCS && wt->n < DK_ARRAY_LEN(wt->w); i++) {
        struct lb_proc *p = &lb.map[i];
        if (i == lb.slot || !__atomic_load_n(&p->pid, __ATOMIC_ACQUIRE)) continue;
        for (int j = 0; j < LB_FILES && wt->n < DK_ARRAY_LEN(wt->w); j++) {
            struct lb_file *e = &p->file[j];
            if (__atomic_load_n(&e->ino, __ATOMIC_ACQUIRE) != (uint64_t)f->ino ||
                __atomic_load_n(&e->dev, __ATOMIC_RELAXED) != (uint64_t)f->dev)
                continue;
            __atomic_add_fetch(&e->waiters, 1, __ATOMIC_SEQ_CST);
            wt->w[wt->n++] = &e->waiters;
            if (__atomic_load_n(&e->cached, __ATOMIC_SEQ_CST)) {
                __atomic_add_fetch(&p->word, 1, __ATOMIC_SEQ_CST);
                futex(&p->word, FUTEX_WAKE, 1, NULL);
            }
        }
    }
}
static void board_unwait(struct lb_wait *wt) {
    for (unsigned i = 0; i < wt->n; i++) {
        uint32_t v = __atomic_load_n(wt->w[i], __ATOMIC_RELAXED);
        while (v && !__atomic_compare_exchange_n(wt->w[i], &v, v - 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}
    }
    wt->n = 0;
}

static bool anyone_caches(const struct up_file *f) {
    for (int i = 0; i < LB_PROCS; i++) {
        struct lb_proc *p = &lb.map[i];
        if (i == lb.slot || !__atomic_load_n(&p->pid, __ATOMIC_ACQUIRE)) continue;
        for (int j = 0; j < LB_FILES; j++) {
            struct lb_file *e = &p->file[j];
            if (__atomic_load_n(&e->ino, __ATOMIC_ACQUIRE) == (uint64_t)f->ino &&
                __atomic_load_n(&e->dev, __ATOMIC_RELAXED) == (uint64_t)f->dev &&
                __atomic_load_n(&e->cached, __ATOMIC_ACQUIRE))
                return true;
        }
    }
    return false;
}

static void nap(uint64_t ns) {
    struct timespec ts = {0, (long)ns};
    syscall(SYS_nanosleep, &ts, NULL); /* (not a cancellation point of glibc's here: the raw call) */
}

/* The library's thread: drops what another process asks for (or waits for in the kernel), and every cached lock
 * DAXKIT_LOCK_CACHE_US after the file began to keep one (its age, not the file's idleness: a busy program's
 * releases would otherwise stay kept for good -- review26b #1). */
static void *lc_thread(void *arg) {
    (void)arg;
    struct lb_proc *p = my_slot();
    uint64_t age_ns = (uint64_t)dk_cfg.lock_cache_us * 1000;
    for (;;) {
        uint32_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
        bool any = false, wait = false;
        uint64_t now = dk_now_ns(), next = UINT64_MAX; /* the earliest age drop still due */
        for (int i = 0; i < LB_FILES; i++) {
            struct up_file *f = __atomic_load_n(&lb.files[i], __ATOMIC_ACQUIRE);
            if (!f) continue;
            __atomic_store_n(&lb.busy, f, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&lb.files[i], __ATOMIC_SEQ_CST) != f) { /* forgotten meanwhile */
                __atomic_store_n(&lb.busy, NULL, __ATOMIC_SEQ_CST);
                continue;
            }
            struct up_lc *c = &f->lc;
            uint32_t req = __atomic_load_n(&p->file[i].req, __ATOMIC_ACQUIRE);
            bool waiters = __atomic_load_n(&p->file[i].waiters, __ATOMIC_ACQUIRE) != 0;
            (void)lc_take(c);
            bool asked = req != c->req_seen || waiters;
            bool cached = has_cached(c) && !c->off;
            bool old = cached && (int64_t)(now - c->cached_since) >= (int64_t)age_ns;
            bool waits = false;
            if ((asked || old) && cached) {
                if (!c->fd1) waits = wait = true; /* (cannot be: a cached lock was released through one) */
                else drop_locked(c);
                cached = has_cached(c) && !c->off;
            }
            if (asked && !waits) {
                c->req_seen = req;
                c->cold_until = now + LC_COLD_NS;
            }
            if (cached && c->cached_since + age_ns < next) next = c->cached_since + age_ns;
            if (!cached) {
                /* the age came while the program held again what it had kept (review27b #2): the next release
                 * goes to the kernel, so that a blocked outsider gets the kernel's chance there */
                if (c->cached_since && (int64_t)(now - c->cached_since) >= (int64_t)age_ns) c->due = 1;
                c->cached_since = 0;
                __atomic_store_n(&p->file[i].cached, 0, __ATOMIC_SEQ_CST);
            } else {
                any = true;
            }
            lc_give(c);
            __atomic_store_n(&lb.busy, NULL, __ATOMIC_SEQ_CST);
        }
        /* the next age drop (a file cached after this walk: within its age again, ~2x at most); a drop that could
         * not run: looked at again within 1 ms */
        uint64_t t_ns = next == UINT64_MAX ? age_ns : next > now ? DK_MIN(next - now, age_ns) : 0;
        if (wait) t_ns = DK_MIN(t_ns, 1000000ull);
        t_ns = DK_MAX(t_ns, 10000ull);
        any = any || wait;
        struct timespec ts = {(time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull)};
        if (!any) __atomic_store_n(&p->sleeping, 1, __ATOMIC_SEQ_CST);
        /* a file cached after the walk set its flag before it looked at `sleeping`: look once more */
        if (!any) {
            for (int i = 0; i < LB_FILES && !any; i++)
                any = __atomic_load_n(&lb.files[i], __ATOMIC_ACQUIRE) && __atomic_load_n(&p->file[i].cached, __ATOMIC_SEQ_CST);
            if (any) __atomic_store_n(&p->sleeping, 0, __ATOMIC_SEQ_CST);
        }
        futex(&p->word, FUTEX_WAIT, w, any ? &ts : NULL);
        __atomic_store_n(&p->sleeping, 0, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* ---- the program's calls ---- */

/* An acquisition's end: its range no longer in flight. Under the lock. */
static void kin_end(struct up_lc *c, struct up_lc_flight *fl) {
    for (struct up_lc_flight **x = &c->fl; *x; x = &(*x)->next)
        if (*x == fl) {
            *x = fl->next;
            c->kin--;
            return;
        }
    /* (not listed: a fork child's handler came back into its parent's call -- the child's lists start empty) */
}
static void lc_cancelled(void *arg) {
    struct up_lc_flight *fl = arg;
    board_unwait(&fl->wt);
    (void)lc_take(fl->c);
    kin_end(fl->c, fl);
    lc_give(fl->c);
    up_lock_cancelled(NULL);
}

/* The kernel's acquisition, with the handoff: a conflict asks the cachers of f and retries for up to
 * LC_WAIT_NS; F_SETLKW blocks only after that, counted as a waiter on the board meanwhile (fl->wt). errno as
 * the program's one call would leave it: unchanged by a success (review26b #2). OFD acquisitions the same way
 * (F_OFD_SETLK, F_OFD_SETLKW: the cached POSIX locks of other processes conflict with them too). */
static int acquire_in_kernel(int (*real)(int, int, ...), int fd, int cmd, struct flock *l, struct up_file *f,
                             struct up_lc_flight *fl) {
    int e0 = errno;
    bool ofd = cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
    int try_cmd = ofd ? F_OFD_SETLK : F_SETLK;
    int r = real(fd, try_cmd, l);
    if (r == 0 || (errno != EAGAIN && errno != EACCES)) return r;
    int e = errno;
    if (board_ask(f)) {
        for (uint64_t waited = 0; waited < LC_WAIT_NS; waited += LC_STEP_NS) {
            nap(LC_STEP_NS);
            if (!anyone_caches(f) || waited + LC_STEP_NS >= LC_WAIT_NS) {
                r = real(fd, try_cmd, l);
                if (r == 0) {
                    dk_count(DK_C_lock_cache_handoffs, 1);
                    errno = e0;
                    return 0;
                }
                e = errno;
                if (!anyone_caches(f)) break;
            }
        }
    }
    if (cmd != F_SETLKW && cmd != F_OFD_SETLKW) {
        errno = e;
        return -1;
    }
    board_wait(f, &fl->wt); /* (the owner's program holds it, or re-cached it: its releases reach the kernel) */
    errno = e0;
    r = real(fd, cmd, l); /* a cancellation point: lc_cancelled (ofd_cancelled) is pushed by the caller */
    board_unwait(&fl->wt);
    return r;
}

/* The kernel's call as the program made it: F_SETLKW is a cancellation point (glibc: also for an unlock), where a
 * cancelled thread still ends its counted call. */
static int kcall(int (*real)(int, int, ...), int fd, int cmd, struct flock *l) {
    int r;
    if (cmd == F_SETLKW || cmd == F_OFD_SETLKW) {
        pthread_cleanup_push(up_lock_cancelled, NULL);
        r = real(fd, cmd, l);
        pthread_cleanup_pop(0);
    } else {
        r = real(fd, cmd, l);
    }
    return r;
}

/* A handler inside its thread's hold of f's lock: to the kernel, recorded for the holder. */
static int in_handler(struct up_lc *c, int (*real)(int, int, ...), int fd, int cmd, struct flock *l, bool known,
                      uint64_t a, uint64_t b) {
    int r = kcall(real, fd, cmd, l);
    if (r == 0) {
        uint8_t nd = c->nd;
        if (!known || nd >= DK_ARRAY_LEN(c->def)) c->lost = 1, c->off = 1; /* (the holder's view ends off) */
        else {
            c->def[nd].a = a, c->def[nd].b = b, c->def[nd].t = level(l->l_type);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            __atomic_store_n(&c->nd, nd + 1, __ATOMIC_RELAXED);
        }
    }
    return r;
}

/* The release path may keep the lock: no other process asked lately or waits in the kernel for the file, no
 * exec is under way, no OFD acquisition of the program's is in the kernel (it would conflict with what is kept:
 * review28 #3), the kernel is known to hold what the program releases. Under the lock. */
static bool may_keep(struct up_lc *c, uint64_t now, uint64_t a, uint64_t b) {
    if (c->due || c->ofd || now < c->cold_until || __atomic_load_n(&lc_exec, __ATOMIC_SEQ_CST) || unsure(c, a, b)) return false;
    return !__atomic_load_n(&my_slot()->file[c->bidx1 - 1].waiters, __ATOMIC_RELAXED);
}

int up_lc_setlk(struct up_lock_call call, int (*real)(int, int, ...), int fd, int cmd, struct flock *l) {
    if (DK_UNLIKELY(lc_forking)) { /* a fork child before the library's reset: the kernel's, nothing recorded */
        lc_fork_calls = true;
        return kcall(real, fd, cmd, l);
    }
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? s->file : NULL;
    if (!f || (l->l_type != F_UNLCK && l->l_type != F_RDLCK && l->l_type != F_WRLCK)) return kcall(real, fd, cmd, l);
    struct up_lc *c = &f->lc;
    uint64_t a = 0, b = 0;
    int known = range_of(l, &a, &b);
    if (DK_UNLIKELY(known < 0)) return kcall(real, fd, cmd, l); /* EINVAL, EOVERFLOW: nothing changes */
    uint8_t t = level(l->l_type);
    uint32_t acc = __atomic_load_n(&s->flags, __ATOMIC_RELAXED) & O_ACCMODE;
    if ((t == 1 && acc == O_WRONLY) || (t == 2 && acc == O_RDONLY)) return kcall(real, fd, cmd, l); /* EBADF */
    /* the file on this process's board (the first call makes the board): a requester blocked in the kernel
     * finds its entry even while the program holds the lock itself */
    bool board = known && board_ready(f->root) && board_register(f);
    if (cmd == F_SETLKW) { /* a cancellation point (as glibc's), before anything changes: a cached acquisition too */
        pthread_cleanup_push(up_lock_cancelled, NULL);
        pthread_testcancel();
        pthread_cleanup_pop(0);
    }
    if (t == 0) DK_CRASH_POINT("lockcache.release"); /* tests: an exec begins while a release is on its way */
    if (t == 0 && board && !lc_thread_ready()) board = false; /* (no thread: nothing kept) */
    if (DK_UNLIKELY(lc_take(c))) return in_handler(c, real, fd, cmd, l, known, a, b);
    if (DK_UNLIKELY(!known || c->off)) {
        /* not followed: the kernel set to what the program holds (while p is still known), then every call goes
         * to the kernel until a whole-file unlock */
        if (!c->off) {
            if (c->fd1) drop_from_program(c);
            else if (c->lo != c->hi) c->lost = 1;
            c->off = 1;
        }
        lc_give(c);
        int r = kcall(real, fd, cmd, l);
        if (r == 0 && known && t == 0 && a == 0 && b == UINT64_MAX) {
            (void)lc_take(c);
            if (!c->kin) reset(c); /* (an acquisition in the kernel now: stays off, its end may hold) */
            lc_give(c);
        }
        return r;
    }
    /* the descriptors drops go through: the latest one, and the latest one open for reading (a drop's read-lock
     * downgrade needs read access, its unlocks none) */
    if (c->fd1 != fd + 1) __atomic_store_n(&c->fd1, fd + 1, __ATOMIC_RELAXED);
    if (acc != O_WRONLY && c->fdr1 != fd + 1) __atomic_store_n(&c->fdr1, fd + 1, __ATOMIC_RELAXED);
    if (t == 0) {
        /* A release: the kernel keeps the lock (cached) -- unless may_keep says otherwise, or this process has
         * no board for the file. */
        uint64_t now = dk_now_ns();
        if (board && may_keep(c, now, a, b) && paint(c, a, b, 0, KEEP, 0)) {
            if (has_cached(c)) { /* (the board's flag each time: an acquisition's end may have cleared it) */
                if (!c->cached_since) c->cached_since = now;
                board_cached(c, true);
            }
            lc_give(c);
            dk_count(DK_C_lock_cache_kept, 1);
            return 0;
        }
        bool fits = paint(c, a, b, 0, 0, 0);
        c->due = 0;
        if (!has_cached(c)) {
            c->cached_since = 0;
            board_cached(c, false);
        }
        lc_give(c);
        int r = kcall(real, fd, cmd, l);
        if (!fits) { /* (cannot fit: the release splits more than UP_LC_SEGS pieces) not followed from here on */
            (void)lc_take(c);
            if (c->lo != c->hi) c->lost = 1;
            c->off = 1;
            if (a == 0 && b == UINT64_MAX && !c->kin) reset(c);
            lc_give(c);
        }
        return r;
    }
    /* Covered: the kernel keeps what the call asks for already. A downgrade (the kernel keeps more) only where
     * the board can have it dropped (review26b #6): it is cached from here on. */
    int cov = covered(c, a, b, t);
    if (cov && (cov == 1 || (board && __atomic_load_n(&lb.thread_started, __ATOMIC_ACQUIRE) == 1 && !c->ofd &&
                             !__atomic_load_n(&lc_exec, __ATOMIC_RELAXED))) &&
        paint(c, a, b, t, KEEP, 0)) {
        if (cov == 2) {
            if (!c->cached_since) c->cached_since = dk_now_ns();
            board_cached(c, true);
        }
        lc_give(c);
        dk_count(DK_C_lock_cache_hits, 1);
        return 0;
    }
    if (!paint(c, a, b, KEEP, KMIN, t)) { /* not followed from here on */
        if (c->fd1) drop_from_program(c);
        else if (c->lo != c->hi) c->lost = 1;
        c->off = 1;
        lc_give(c);
        return kcall(real, fd, cmd, l);
    }
    extend(c, a, b);
    struct up_lc_flight flight = {c->fl, c, a, b, {.n = 0}};
    c->fl = &flight, c->kin++;
    lc_give(c);
    int r;
    /* (F_SETLK too: a thread that ends inside -- pthread_exit from a handler during the handoff's naps -- unlinks
     * its node: review28 #4) */
    pthread_cleanup_push(lc_cancelled, &flight);
    r = acquire_in_kernel(real, fd, cmd, l, f, &flight);
    pthread_cleanup_pop(0);
    int e = errno;
    if (r == 0) DK_CRASH_POINT("lockcache.acquired"); /* tests: another process asks before the grant is recorded */
    (void)lc_take(c);
    kin_end(c, &flight);
    if (r == 0 && !paint(c, a, b, t, up_lock_call_alone(call) ? t : 0, 0)) c->off = 1, c->lost = 1;
    lc_give(c);
    errno = e;
    return r;
}

/* Some byte of [a, b) cached: the kernel keeps more than the program holds. */
static bool cached_in(const struct up_lc *c, uint64_t a, uint64_t b) {
    for (unsigned i = 0; i < c->n; i++)
        if (c->seg[i].a < b && c->seg[i].b > a && c->seg[i].k > c->seg[i].p) return true;
    return false;
}

static void ofd_end(struct up_lc *c) {
    if (!c) return;
    (void)lc_take(c);
    if (c->ofd) c->ofd--; /* (0: a fork child's handler came back into its parent's call) */
    lc_give(c);
}
static void ofd_cancelled(void *arg) {
    struct up_lc_flight *fl = arg;
    board_unwait(&fl->wt);
    ofd_end(fl->c);
    up_lock_cancelled(NULL);
}

/* The program's OFD lock call on a managed file (F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK; shim/fd.c, inside
 * reclock.c's count). In the kernel, OFD locks conflict with the POSIX locks of the same process (an OFD lock's
 * owner is the open file description): a cached POSIX lock over the range would refuse the program's own
 * F_OFD_SETLK (EAGAIN), keep its F_OFD_SETLKW waiting for the age drop and show in its F_OFD_GETLK, where the
 * kernel path finds nothing (review27b #8). So the file's cached locks are dropped first; and an acquisition
 * that conflicts asks the other daxkit processes that cache the file, as a POSIX one does (acquire_in_kernel).
 * (flock(2) locks and record locks are apart on every medium the library serves: nothing to do for those.) */
int up_lc_ofd(int (*real)(int, int, ...), int fd, int cmd, struct flock *l) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? s->file : NULL;
    if (!f || lc_forking || ((cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) && l->l_type == F_UNLCK))
        return kcall(real, fd, cmd, l);
    struct up_lc *c = &f->lc;
    uint64_t a = 0, b = UINT64_MAX;
    if (range_of(l, &a, &b) != 1) a = 0, b = UINT64_MAX; /* (SEEK_CUR, SEEK_END, a bad range: the whole file) */
    bool acq = cmd != F_OFD_GETLK && (l->l_type == F_RDLCK || l->l_type == F_WRLCK);
    struct up_lc_flight fl = {.wt = {.n = 0}}; /* (fl.c: the file whose `ofd` count this acquisition holds) */
    if ((acq || __atomic_load_n(&c->n, __ATOMIC_RELAXED)) && !lc_take(c)) { /* (a handler inside its thread's hold: as is) */
        /* an acquisition: releases are not kept until its end (another thread's release kept between this drop
         * and the kernel's call would refuse it, or keep F_OFD_SETLKW waiting for the age: review28 #3) */
        if (acq) c->ofd++, fl.c = c;
        if (!c->off && c->fd1 && cached_in(c, a, b)) drop_from_program(c);
        lc_give(c);
    }
    if (!acq) return real(fd, cmd, l);
    int r;
    pthread_cleanup_push(ofd_cancelled, &fl);
    r = acquire_in_kernel(real, fd, cmd, l, f, &fl);
    pthread_cleanup_pop(0);
    int e = errno;
    ofd_end(fl.c);
    errno = e;
    return r;
}

/* The program's dup2/dup3 onto the board's number (shim/fd.c, before the kernel's call closes it): the board's
 * descriptor moves to another internal number first -- the same open file description, so the slot's OFD lock
 * (held by the description) stays ours. Closed with it, the slot looked dead to every other process: they
 * cleared its pid and asked nothing of us (their F_SETLKW waited for the age drop), and a new process could claim
 * the slot we still use. A thread of ours inside a board call on the old number meanwhile asks the program's
 * file (F_OFD_GETLK): at worst a slot taken for dead, its owner's locks then dropped at their age. */
void up_lc_vacate(int fd) {
    if (__atomic_load_n(&lb.state, __ATOMIC_ACQUIRE) != 1 || lb.fd != fd) return;
    DK_ERRNO_SAVE;
    int moved = DK_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, dk_ifd_floor());
    if (moved >= 0) {
        up_fd_mark_internal(moved, true);
        __atomic_store_n(&lb.fd, moved, __ATOMIC_RELEASE);
    }
    up_fd_mark_internal(fd, false); /* the program's dup2 closes it in the kernel next */
    DK_ERRNO_RESTORE;
}

/* ---- the kernel's rules ---- */

/* Any close of the file, before the kernel's close (which drops every lock of the process on it); a fork
 * child's files (it holds none). Lock-free callers: a handler inside its thread's hold defers. */
void up_lc_closed(struct up_file *f) {
    struct up_lc *c = &f->lc;
    if (DK_LIKELY(!__atomic_load_n(&c->n, __ATOMIC_RELAXED) && !__atomic_load_n(&c->off, __ATOMIC_RELAXED) &&
                  !__atomic_load_n(&c->fd1, __ATOMIC_RELAXED) && !__atomic_load_n(&c->owner, __ATOMIC_RELAXED)))
        return;
    if (lc_take(c)) {
        __atomic_store_n(&c->dclose, 1, __ATOMIC_RELAXED);
        return;
    }
    reset(c);
    lc_give(c);
}

/* The entry goes (no descriptor of it is open: its cache was reset at the last close) -- at the last close
 * (file.c up_file_put) and at file_free (a second call finds none). */
void up_lc_forget(struct up_file *f) {
    int i = f->lc.bidx1 - 1;
    if (i < 0 || __atomic_load_n(&lb.state, __ATOMIC_ACQUIRE) != 1) return;
    struct lb_proc *p = my_slot();
    __atomic_store_n(&p->file[i].ino, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&p->file[i].cached, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&lb.files[i], NULL, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&lb.busy, __ATOMIC_SEQ_CST) == f) sched_yield();
    f->lc.bidx1 = 0;
}

static void exec_drop_one(struct up_file *f, void *arg) {
    (void)arg;
    struct up_lc *c = &f->lc;
    if (lc_take(c)) return; /* an exec from a handler inside this thread's hold: its locks stay cached */
    if (!c->off && c->fd1 && has_cached(c)) drop_from_program(c);
    lc_give(c);
}

/* Before an exec, with the file table's lock held (no entry comes or goes: review26b #4): the new image keeps the
 * kernel's record locks -- only those the program holds. Releases from here on reach the kernel (lc_exec). */
void up_lc_before_exec(void) {
    if (!dk_cfg.lock_cache) return;
    /* a vfork child shares the parent's memory, not its locks: the parent's cache is not the child's to drop */
    if (lb.pid && (pid_t)syscall(SYS_getpid) != lb.pid) return;
    __atomic_store_n(&lc_exec, 1, __ATOMIC_SEQ_CST);
    up_file_foreach(exec_drop_one, NULL);
    DK_CRASH_POINT("lockcache.before_exec"); /* tests: another thread's release between the drop and the execve */
}

/* The exec failed: this image goes on, releases may be kept again. */
void up_lc_exec_failed(void) {
    if (!dk_cfg.lock_cache) return;
    if (lb.pid && (pid_t)syscall(SYS_getpid) != lb.pid) return;
    __atomic_store_n(&lc_exec, 0, __ATOMIC_SEQ_CST);
}

static void child_one(struct up_file *f, void *arg) {
    (void)arg;
    f->lc.owner = 0;
    f->lc.nd = f->lc.dclose = f->lc.kin = 0;
    f->lc.fl = NULL, f->lc.ofd = 0; /* (the other threads' acquisitions are the parent's) */
    f->lc.bidx1 = 0;
    reset(&f->lc);
}

/* A fork child from glibc's fork until up_fork_child's end (review27b #6): the program's pthread_atfork child
 * handlers (and signal handlers) run before the library's reset -- their lock calls go to the kernel and touch
 * no state (the parent's is not the child's; a reset after a call would forget what the kernel holds, and a
 * board made there would be unmapped under its thread), and the files are marked unknown after the reset.
 * Registered first thing (up_init): before the program's own handlers. */
static void lc_atfork_child(void) {
    lc_forking = true;
    lc_fork_calls = false;
}
void up_lc_init(void) {
    if (dk_cfg.lock_cache) pthread_atfork(NULL, NULL, lc_atfork_child);
}
static void unknown_one(struct up_file *f, void *arg) {
    (void)arg;
    f->lc.off = 1, f->lc.lost = 1, f->lc.lo = 0, f->lc.hi = UINT64_MAX; /* every call to the kernel until a whole-file unlock */
}
void up_lc_fork_child_done(void) {
    if (!dk_cfg.lock_cache) return;
    if (lc_fork_calls) up_file_foreach(unknown_one, NULL);
    lc_forking = lc_fork_calls = false;
}

/* A fork child: no locks, no board slot (the parent's OFD lock is the parent's), no thread. */
void up_lc_after_fork_child(void) {
    if (!dk_cfg.lock_cache) return;
    up_file_foreach(child_one, NULL);
    if (__atomic_load_n(&lb.state, __ATOMIC_ACQUIRE) == 1) {
        DK_REAL(munmap)(lb.map, LB_BYTES);
        up_internal_close(lb.fd); /* the description stays the parent's, and its slot's OFD lock with it */
    }
    memset(&lb, 0, sizeof lb);
    lc_exec = 0;
}

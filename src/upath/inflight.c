/* Strict mode: the operation in flight at a process's death (review 13, finding 1, addendum b).
 *
 * A strict process killed in the middle of a write or truncate leaves it half applied or not applied, with
 * its record in the log; recovery completes it. Recovery used to run only at the next start of a daxkit
 * program on the directory: a survivor that took the dead process's lock meanwhile saw the op half done and
 * wrote on, and the late replay then completed the op over the survivor's newer bytes. Now a survivor
 * recovers the dead process's log when its own lock call returns, before it serves anything under that lock.
 *
 * The "did anybody die" test is a per-user registry in the area, <root>/.daxkit/inflight.<uid>.reg: one
 * 256-byte slot per thread that has done a strict operation on that root, each holding a robust,
 * process-shared pthread mutex the thread locks at its first operation and unlocks when it ends (a key
 * destructor). When a thread dies holding it -- its process killed, or exec -- the kernel marks the futex word
 * FUTEX_OWNER_DIED while it tears the thread's memory down (exit_mm / exec's mm release), which is before
 * exit_files drops the process's flocks and POSIX record locks. So a survivor whose lock call returns after
 * the death finds the mark with plain loads: the lock hook loads the used slots' futex words (one load per
 * slot, no system call). A slot with the mark names the dead thread's log (name and inode); the survivor
 * takes the slot's byte of the registry with an open file description lock (F_OFD_SETLKW: several survivors
 * -- one recovers, the others wait, then find the mark gone), waits for the log's flock (the dead process's
 * descriptors are released by the deferred fput after exit_files: microseconds; a live holder -- a child
 * forked by the raw system call keeps the descriptor -- is waited for 10 s at most, then left to the next
 * start), replays the log (strict.c's recover_log: idempotent; a recoverer that dies mid-replay leaves the
 * mark and the next survivor replays again), and clears the slot (pthread_mutex_consistent + unlock).
 *
 * False alarms: a thread that ends while its process lives unlocks its slot first (no mark); a process that
 * exits normally or execs leaves marks, but its log is gone (exit) or has nothing left to replay (exec
 * checkpoints; the log's descriptor is close-on-exec): the survivor's slow path finds that in a few system
 * calls, once per dead thread. Design and limits: docs/strict.md, "The operation in flight at a death". */
#include "upath/inflight.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/area.h"
#include "common/boot_id.h"
#include "common/config.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/pwrite_all.h"
#include "oplog/oplog.h"
#include "shim/libc.h"
#include "upath/internal.h"

#define REG_MAGIC 0x6466696c676e4b44ull /* "DKngligfd" */
#define REG_VERSION 1u
#define REG_SLOTS 1024u
#define REG_SLOT_BYTES 256u
#define REG_HEADER_BYTES 256u
#define REG_BYTES (REG_HEADER_BYTES + REG_SLOTS * REG_SLOT_BYTES)
#define REG_ROOTS_MAX 16 /* managed.c's UP_ROOTS_MAX */
#define REG_WAIT_LOG_NS (10ull * 1000000000ull) /* a live holder of a dead thread's log: given up after 10 s */
#define REG_GAVEUP_RETRY_NS 1000000000ull      /* then its log looked at again (no wait) at most once a second */
#define REG_NOAREA_RETRY_NS 1000000ull         /* a root without an area: looked for again after 1 ms (review 14/2) */
#define REG_RETIRED_MAX 16 /* registries this process saw removed (kept mapped: threads may still read them) */

enum slot_state { SLOT_UNINIT = 0, SLOT_CLAIMING = 1, SLOT_USED = 2, SLOT_FREE = 3 };

struct reg_slot {
    pthread_mutex_t mu; /* robust, process-shared: held by the slot's thread from its first strict op to its end */
    uint32_t state;     /* enum slot_state */
    uint32_t pid;       /* the holder's (diagnostics) */
    uint64_t log_dev, log_ino; /* the holder's log (its process's, of this root) */
    char log[128];      /* its name in the area */
    char pad[REG_SLOT_BYTES - sizeof(pthread_mutex_t) - 8 - 16 - 128];
};
_Static_assert(sizeof(struct reg_slot) == REG_SLOT_BYTES, "slot size");
/* The futex word glibc's robust mutexes use is the first int of pthread_mutex_t (__data.__lock). */
_Static_assert(offsetof(pthread_mutex_t, __data.__lock) == 0, "futex word first");

struct reg_header {
    uint64_t magic;
    uint32_t version, slots;
    uint32_t hw;      /* slots [0, hw) may be used: the lock hook loads their futex words (lowered as top slots free) */
    uint32_t removed; /* set (through the file) by the process that removes the area, before the unlink */
    uint8_t boot[16]; /* the boot that made the slots: another boot's are reset (no kernel marked them) */
    char pad[REG_HEADER_BYTES - 40];
};
_Static_assert(sizeof(struct reg_header) == REG_HEADER_BYTES, "header size");

struct reg {
    struct reg_header *hdr;
    struct reg_slot *slots;
    int fd; /* the library's; its OFD locks order the survivors of one slot */
};

/* regs[i]: root i's registry as attached now. A registry removed with its area (area_release.c: `rm -rf ROOT;
 * mkdir ROOT`) is flagged `removed` first; every process that maps it sees the flag at its next lock call or
 * strict operation and attaches the new one (review 14, finding 1: it watched the unlinked file for good and
 * recovered no later death). The old one stays mapped -- a thread may be reading it, a thread's robust list
 * may link its slot -- so each registry of the process has its own record in reg_store, never reused. */
static struct reg *regs[REG_ROOTS_MAX];
static struct reg reg_store[REG_ROOTS_MAX + REG_RETIRED_MAX];
static unsigned reg_store_used; /* under attach_mu */
static pthread_mutex_t attach_mu = PTHREAD_MUTEX_INITIALIZER;

static const uint32_t never_removed;
__thread const struct up_root *up_inflight_held_root;
__thread const uint32_t *up_inflight_held_gone = &never_removed;
static __thread uint32_t held_roots; /* bit i: this thread holds its slot of root i, or gave up there */
static __thread uint16_t held_slot[REG_ROOTS_MAX]; /* slot + 1; 0: none (a registry that could not be had) */
static __thread struct reg *held_reg[REG_ROOTS_MAX]; /* the registry of held_slot[i] */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static struct up_inflight_stats stats;
/* This thread is inside the registry's code (attach, claim, a recovery): a signal handler's lock call or first
 * strict write that interrupted it skips the registry -- it would wait for attach_mu or the log's lock its own
 * thread holds (review 14, finding 5); the thread's next lock call looks again. More than attach_mu's mark
 * (common/lockmark.h): the registry's OFD lock and the log's flock are held inside too. */
static __thread bool inside;
static uint64_t mono_ns(void);
static void recover_dead(int i, struct reg *g, uint32_t hw, bool replay);

static inline uint32_t futex_word(const struct reg_slot *s) { return __atomic_load_n((const uint32_t *)&s->mu, __ATOMIC_ACQUIRE); }

static int root_index(const struct up_root *r) {
    int i = up_root_index(r);
    return i >= 0 && i < REG_ROOTS_MAX ? i : -1;
}

static void reg_name(char *out, size_t cap) { snprintf(out, cap, "inflight.%u.reg", (unsigned)geteuid()); }

static inline bool reg_removed(const struct reg *g) { return __atomic_load_n(&g->hdr->removed, __ATOMIC_ACQUIRE) != 0; }

/* Opens (creating) and maps root i's registry for this user. Under attach_mu. */
static struct reg *attach_locked(int i) {
    if (regs[i] && !reg_removed(regs[i])) return regs[i];
    __atomic_store_n(&regs[i], NULL, __ATOMIC_RELEASE); /* removed: kept mapped (header), never looked at again */
    if (reg_store_used == DK_ARRAY_LEN(reg_store)) {
        dk_log_once("strict mode: %d in-flight registries removed with their areas while this process ran: no more "
                    "attached (an operation in flight at a death is completed at the next start)", REG_RETIRED_MAX);
        errno = EMFILE;
        return NULL;
    }
    const struct dk_libc *c = dk_libc();
    const struct up_root *r = up_root_at(i);
    char area[4200], name[64];
    snprintf(area, sizeof area, "%s/.daxkit", r->path[1] ? r->path : "");
    reg_name(name, sizeof name);
    int afd = dk_ifd_openat(AT_FDCWD, area, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (afd < 0) return NULL;
    int fd = dk_ifd_openat(afd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    c->close(afd);
    if (fd < 0) return NULL;
    struct stat st;
    void *a = MAP_FAILED;
    if (c->fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && c->flock(fd, LOCK_EX) == 0) {
        /* Allocated before it is mapped: a store into a hole of a full medium would be a SIGBUS inside the
         * program's lock call (review 14, finding 10); without room, no registry (said once by the caller). */
        if (c->fallocate(fd, 0, 0, REG_BYTES) == 0 || (errno == EOPNOTSUPP && c->ftruncate(fd, REG_BYTES) == 0))
            a = DK_REAL(mmap)(NULL, REG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (a != MAP_FAILED) {
            struct reg_header *h = a;
            uint8_t boot[16] = {0};
            dk_boot_id(boot);
            /* Another boot's slots (or a new file): no kernel marks them any more; start empty. Every
             * process of this boot attaches under this flock, so none uses a slot being reset. */
            if (h->magic != REG_MAGIC || h->version != REG_VERSION || h->slots != REG_SLOTS ||
                memcmp(h->boot, boot, sizeof boot) != 0) {
                memset(a, 0, REG_BYTES);
                h->version = REG_VERSION;
                h->slots = REG_SLOTS;
                memcpy(h->boot, boot, sizeof boot);
                __atomic_store_n(&h->magic, REG_MAGIC, __ATOMIC_RELEASE);
            }
        }
        c->flock(fd, LOCK_UN);
    }
    if (a != MAP_FAILED && __atomic_load_n(&((struct reg_header *)a)->removed, __ATOMIC_ACQUIRE)) {
        DK_REAL(munmap)(a, REG_BYTES); /* opened just before its remover unlinked it: the area is going */
        a = MAP_FAILED;
        errno = ENOENT;
    }
    if (a == MAP_FAILED) {
        int e = errno;
        c->close(fd);
        errno = e;
        return NULL;
    }
    struct reg *g = &reg_store[reg_store_used++];
    g->hdr = a;
    g->slots = (struct reg_slot *)((char *)a + REG_HEADER_BYTES);
    g->fd = up_internal_fd(fd);
    __atomic_store_n(&regs[i], g, __ATOMIC_RELEASE);
    return g;
}

/* errno: the failure's (ENOENT: no area) */
static struct reg *attach(int i) {
    struct reg *g = __atomic_load_n(&regs[i], __ATOMIC_ACQUIRE);
    if (g && !reg_removed(g)) return g;
    int cancel_was = dk_cancel_off();
    dk_mu_lock(&attach_mu);
    errno = 0;
    g = attach_locked(i);
    int e = g ? 0 : errno ? errno : EIO;
    dk_mu_unlock(&attach_mu);
    dk_cancel_restore(cancel_was);
    errno = e;
    return g;
}

/* ---- the holder's side ---- */

/* Slot k was just freed: while the top used slot is free, the scan width comes down (review 14, finding 8: a
 * burst of 1,000 threads left every later lock call loading 1,000 futex words, +0.7 us each, for good). A
 * claimer of the slot just below the new top raises hw again after it marks the slot USED; the look at the
 * slot after the lowering catches one that marked it between (both sides sequentially consistent). */
static void lower_hw(struct reg *g) {
    uint32_t hw = __atomic_load_n(&g->hdr->hw, __ATOMIC_SEQ_CST);
    while (hw > 0) {
        struct reg_slot *top = &g->slots[hw - 1];
        uint32_t st = __atomic_load_n(&top->state, __ATOMIC_SEQ_CST);
        if (st != SLOT_FREE && st != SLOT_UNINIT) return;
        if (!__atomic_compare_exchange_n(&g->hdr->hw, &hw, hw - 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) continue;
        st = __atomic_load_n(&top->state, __ATOMIC_SEQ_CST);
        if (st != SLOT_FREE && st != SLOT_UNINIT) { /* claimed meanwhile: its slot stays in the scan */
            uint32_t h = __atomic_load_n(&g->hdr->hw, __ATOMIC_SEQ_CST);
            while (h < hw && !__atomic_compare_exchange_n(&g->hdr->hw, &h, hw, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
            return;
        }
        hw--;
    }
}

static void free_slot(struct reg *g, struct reg_slot *s) {
    __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_SEQ_CST);
    lower_hw(g);
}

/* This thread's slot of root i goes back unmarked. */
static void release_held(int i) {
    struct reg *g = held_reg[i];
    struct reg_slot *s = &g->slots[held_slot[i] - 1];
    held_slot[i] = 0;
    held_reg[i] = NULL;
    pthread_mutex_unlock(&s->mu);
    free_slot(g, s);
}

/* At the thread's end: its operations are over, its slots go back unmarked. */
static void thread_ends(void *unused) {
    (void)unused;
    for (int i = 0; i < REG_ROOTS_MAX; i++)
        if (held_slot[i]) release_held(i);
    held_roots = 0;
    up_inflight_held_root = NULL;
    up_inflight_held_gone = &never_removed;
}

void up_inflight_exit(void) { thread_ends(NULL); }

static void make_exit_key(void) {
    if (pthread_key_create(&exit_key, thread_ends) != 0) exit_key = (pthread_key_t)-1;
}

static bool init_mutex(pthread_mutex_t *mu) {
    pthread_mutexattr_t at;
    if (pthread_mutexattr_init(&at) != 0) return false;
    bool ok = pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED) == 0 &&
              pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(mu, &at) == 0;
    pthread_mutexattr_destroy(&at);
    return ok;
}

/* Claims a free slot, locked by this thread, naming the log; its index, or -1. */
static int claim(struct reg *g, const char *log_name, const struct stat *ls) {
    for (uint32_t k = 0; k < REG_SLOTS; k++) {
        struct reg_slot *s = &g->slots[k];
        uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if (st != SLOT_UNINIT && st != SLOT_FREE) continue;
        if (!__atomic_compare_exchange_n(&s->state, &st, SLOT_CLAIMING, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) continue;
        if (st == SLOT_UNINIT && !init_mutex(&s->mu)) continue; /* stays CLAIMING: never used */
        int e = pthread_mutex_trylock(&s->mu);
        if (e == EOWNERDEAD) e = pthread_mutex_consistent(&s->mu); /* a clear cut short: ours now */
        if (e != 0) continue; /* held by a thread of another boot's image (a medium put back): left alone */
        s->pid = (uint32_t)getpid();
        s->log_dev = (uint64_t)ls->st_dev;
        s->log_ino = (uint64_t)ls->st_ino;
        snprintf(s->log, sizeof s->log, "%s", log_name);
        __atomic_store_n(&s->state, SLOT_USED, __ATOMIC_SEQ_CST); /* before the look at hw (lower_hw) */
        uint32_t hw = __atomic_load_n(&g->hdr->hw, __ATOMIC_SEQ_CST);
        while (hw < k + 1 && !__atomic_compare_exchange_n(&g->hdr->hw, &hw, k + 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
        return (int)k;
    }
    return -1;
}

void up_inflight_hold_slow(struct up_root *r, const struct dk_oplog *log) {
    int i = root_index(r);
    if (i < 0) return;
    if (held_roots >> i & 1u) {
        if (!held_reg[i] || !reg_removed(held_reg[i])) {
            up_inflight_held_root = r;
            up_inflight_held_gone = held_reg[i] ? &held_reg[i]->hdr->removed : &never_removed;
            return;
        }
        if (inside) return; /* (a handler's write: its thread moves to the new registry itself) */
        release_held(i); /* the registry was removed (area_release.c): a slot in the one there now */
        held_roots &= ~(1u << i);
    }
    if (inside) return; /* a handler's write that interrupted this thread's registry code: not held */
    const char *log_path = dk_oplog_path(log);
    DK_ERRNO_SAVE;
    int cancel_was = dk_cancel_off();
    inside = true;
    pthread_once(&exit_key_once, make_exit_key);
    struct reg *g = attach(i);
    struct stat ls;
    const char *base = strrchr(log_path, '/');
    base = base ? base + 1 : log_path;
    int k = -1;
    if (g) { /* slots of dead threads are recovered and freed first: processes that never lock reuse them too */
        uint32_t hw = __atomic_load_n(&g->hdr->hw, __ATOMIC_ACQUIRE), any = 0;
        for (uint32_t j = 0; j < hw; j++) any |= futex_word(&g->slots[j]);
        if (any & FUTEX_OWNER_DIED) recover_dead(i, g, hw, false);
    }
    if (g && exit_key != (pthread_key_t)-1 && DK_REAL(stat)(log_path, &ls) == 0 && strlen(base) < sizeof g->slots[0].log) {
        k = claim(g, base, &ls);
        if (k < 0) {
            __atomic_add_fetch(&stats.slots_full, 1, __ATOMIC_RELAXED);
            dk_log_once("strict mode: the in-flight registry of %s is full (%u threads): a thread's operation in flight "
                        "at its death is completed at the next start, not at the next lock call (docs/strict.md)",
                        r->path, REG_SLOTS);
        } else {
            held_slot[i] = (uint16_t)(k + 1);
            held_reg[i] = g;
            pthread_setspecific(exit_key, (void *)1);
        }
    } else if (!g) {
        dk_log_once("strict mode: no in-flight registry in %s/.daxkit: an operation in flight at a death is completed at "
                    "the next start, not at the next lock call (docs/strict.md)", r->path);
    }
    held_roots |= 1u << i; /* held, or given up: the fast path stays two loads */
    up_inflight_held_root = r;
    up_inflight_held_gone = held_reg[i] ? &held_reg[i]->hdr->removed : &never_removed;
    inside = false;
    dk_cancel_restore(cancel_was);
    DK_ERRNO_RESTORE;
}

void up_inflight_after_fork_child(void) {
    /* glibc empties the child's robust list: the parent's slots stay the parent's threads'. The registry's
     * descriptor is reopened: an OFD lock belongs to the open file description the parent shares. */
    dk_mu_reinit(&attach_mu); /* another thread's attach (system calls) may have held it at the fork */
    held_roots = 0;
    up_inflight_held_root = NULL;
    up_inflight_held_gone = &never_removed;
    memset(held_slot, 0, sizeof held_slot);
    memset(held_reg, 0, sizeof held_reg);
    for (int i = 0; i < REG_ROOTS_MAX; i++) {
        struct reg *g = regs[i];
        if (!g || reg_removed(g)) continue; /* (the path names another file now, or none: attached again) */
        char path[4300], name[64];
        reg_name(name, sizeof name);
        snprintf(path, sizeof path, "%s/.daxkit/%s", up_root_at(i)->path, name);
        int fd = dk_ifd_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
        up_internal_close(g->fd);
        g->fd = fd >= 0 ? up_internal_fd(fd) : -1;
    }
}

/* ---- the survivor's side ---- */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Dead slots whose log a live process still holds (a descriptor inherited by a raw fork's child): the 10 s wait
 * was given up, the slot keeps its mark (review 14, finding 5 b: it was cleared, and the log was then
 * recovered only at the next start -- after this process read and wrote over the op in flight). Looked at
 * again without waiting, at most once a second per slot, until its log is free. Keyed by root, slot and the
 * log's inode (a slot recovered by another process and used again is a new death: waited for as usual). A
 * few at a time; past that, every wait is the full one. Races between threads cost a wait or a look only. */
#define GAVEUP_MAX 8
static struct {
    uint64_t key, ino, retry_ns; /* key: (root << 16 | slot) + 1; 0 free */
} gaveup[GAVEUP_MAX];

static int gaveup_find(int i, uint32_t k, uint64_t ino) {
    uint64_t key = ((uint64_t)i << 16 | k) + 1;
    for (int j = 0; j < GAVEUP_MAX; j++)
        if (__atomic_load_n(&gaveup[j].key, __ATOMIC_ACQUIRE) == key && __atomic_load_n(&gaveup[j].ino, __ATOMIC_RELAXED) == ino)
            return j;
    return -1;
}

/* Slot k of root i was given up on, and its next look is not due: left marked, no system call. */
static bool gaveup_not_due(int i, uint32_t k, uint64_t ino) {
    int j = gaveup_find(i, k, ino);
    return j >= 0 && mono_ns() < __atomic_load_n(&gaveup[j].retry_ns, __ATOMIC_RELAXED);
}

static void gaveup_note(int i, uint32_t k, uint64_t ino) {
    int j = gaveup_find(i, k, ino);
    uint64_t zero = 0, key = ((uint64_t)i << 16 | k) + 1;
    for (int n = 0; j < 0 && n < GAVEUP_MAX; n++)
        if (__atomic_compare_exchange_n(&gaveup[n].key, &zero, key, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) j = n;
        else zero = 0;
    if (j < 0) return;
    __atomic_store_n(&gaveup[j].ino, ino, __ATOMIC_RELAXED);
    __atomic_store_n(&gaveup[j].retry_ns, mono_ns() + REG_GAVEUP_RETRY_NS, __ATOMIC_RELAXED);
}

static void gaveup_forget(int i, uint32_t k, uint64_t ino) {
    int j = gaveup_find(i, k, ino);
    if (j >= 0) __atomic_store_n(&gaveup[j].key, 0, __ATOMIC_RELEASE);
}

/* Waits for the dead thread's log's flock (released by its process's last fput, just after the lock this
 * process took; or held by a recoverer, which finishes) for wait_ns at most. true when held. */
static bool wait_log_lock(int lfd, uint64_t wait_ns) {
    const struct dk_libc *c = dk_libc();
    uint64_t deadline = mono_ns() + wait_ns;
    long sleep_ns = 50000;
    for (;;) {
        if (c->flock(lfd, LOCK_EX | LOCK_NB) == 0) return true;
        if (errno != EWOULDBLOCK && errno != EINTR) return false;
        if (mono_ns() > deadline) return false;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 5000000) sleep_ns *= 2;
    }
}

/* Recovers the log slot k (s) of root i names, when it is still there (replay false: only looks whether it
 * is). true when the slot may be cleared: the log is gone or recovered now. */
static bool recover_named(int i, uint32_t k, const struct up_root *r, const struct reg_slot *s, bool replay) {
    const struct dk_libc *c = dk_libc();
    char area[4200], name[sizeof s->log], path[4400];
    memcpy(name, s->log, sizeof name);
    name[sizeof name - 1] = 0;
    uint64_t dev = s->log_dev, ino = s->log_ino;
    snprintf(area, sizeof area, "%s/.daxkit", r->path[1] ? r->path : "");
    int afd = dk_ifd_openat(AT_FDCWD, area, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    int lfd = afd >= 0 ? dk_ifd_openat(afd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0) : -1;
    struct stat a, b;
    bool clear = true;
    if (lfd < 0 || c->fstat(lfd, &a) != 0 || (uint64_t)a.st_dev != dev || (uint64_t)a.st_ino != ino ||
        !S_ISREG(a.st_mode) || !dk_area_may_recover(&a)) { /* (another user's: never this process's to replay) */
        __atomic_add_fetch(&stats.logs_gone, 1, __ATOMIC_RELAXED); /* exited cleanly, or recovered already */
    } else if (!replay) {
        clear = false; /* left to a lock call's recovery, or the next start's */
    } else if (!wait_log_lock(lfd, gaveup_find(i, k, ino) >= 0 ? 0 : REG_WAIT_LOG_NS)) {
        clear = false; /* the mark stays: looked at again once that process is gone */
        if (gaveup_find(i, k, ino) < 0) {
            __atomic_add_fetch(&stats.waits_timed_out, 1, __ATOMIC_RELAXED);
            dk_log("%s: %s belongs to a strict thread that died in an operation, and its log's lock is still held "
                   "after %llu s (a descriptor inherited by a live process): recovered at a lock call once that "
                   "process is gone", r->path, name, (unsigned long long)(REG_WAIT_LOG_NS / 1000000000ull));
        }
        gaveup_note(i, k, ino);
    } else if (c->fstatat(afd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || b.st_ino != a.st_ino || b.st_dev != a.st_dev) {
        __atomic_add_fetch(&stats.logs_gone, 1, __ATOMIC_RELAXED); /* another recoverer replayed and removed it */
    } else {
        struct up_strict_report rep = {0};
        snprintf(path, sizeof path, "%s/%s", area, name);
        up_strict_recover_log(r->path, afd, path, &rep);
        __atomic_add_fetch(&stats.logs_recovered, 1, __ATOMIC_RELAXED);
        dk_log_verbose("%s: recovered %s of a process that died in a strict operation (%llu record(s) replayed) "
                       "before serving the lock just taken", r->path, name, (unsigned long long)rep.replayed);
    }
    if (clear) gaveup_forget(i, k, ino);
    if (lfd >= 0) c->close(lfd); /* after the replay: the log's lock goes last */
    if (afd >= 0) c->close(afd);
    return clear;
}

static void recover_slot(int i, const struct up_root *r, struct reg *g, uint32_t k, bool replay) {
    struct reg_slot *s = &g->slots[k];
    if (gaveup_not_due(i, k, __atomic_load_n(&s->log_ino, __ATOMIC_RELAXED))) return;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
                       .l_start = (off_t)(REG_HEADER_BYTES + k * REG_SLOT_BYTES), .l_len = 1};
    const struct dk_libc *c = dk_libc();
    bool ordered = g->fd >= 0;
    while (ordered && c->fcntl(g->fd, F_OFD_SETLKW, &fl) != 0)
        if (errno != EINTR) ordered = false; /* no OFD locks (Linux < 3.15): recoveries may overlap, idempotent */
    if (futex_word(s) & FUTEX_OWNER_DIED) { /* not cleared by a survivor before us */
        bool clear = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_USED || recover_named(i, k, r, s, replay);
        if (clear) __atomic_add_fetch(&stats.dead_slots, 1, __ATOMIC_RELAXED);
        int e = clear ? pthread_mutex_trylock(&s->mu) : EBUSY;
        if (e == EOWNERDEAD) {
            pthread_mutex_consistent(&s->mu);
            e = 0;
        }
        if (e == 0) {
            pthread_mutex_unlock(&s->mu);
            free_slot(g, s);
        }
    }
    if (ordered) {
        fl.l_type = F_UNLCK;
        c->fcntl(g->fd, F_OFD_SETLK, &fl);
    }
}

/* replay false: in a strict operation (a thread's first, up_inflight_hold_slow), where a replay could meet
 * this thread's own locks: dead slots whose log is gone are freed, the others left. */
static __attribute__((noinline, cold)) void recover_dead(int i, struct reg *g, uint32_t hw, bool replay) {
    DK_ERRNO_SAVE;
    int cancel_was = dk_cancel_off();
    const struct up_root *r = up_root_at(i);
    for (uint32_t k = 0; k < hw; k++)
        if (futex_word(&g->slots[k]) & FUTEX_OWNER_DIED) recover_slot(i, r, g, k, replay);
    dk_cancel_restore(cancel_was);
    DK_ERRNO_RESTORE;
}

/* attach, from a lock call: while the area is missing (a failing openat: the next strict process there makes
 * it) at most once a millisecond -- an openat under attach_mu at every lock call cost a system call each and
 * serialised the program's threads (review 14, finding 2); at most once a second after any other failure (a
 * full medium, an area another user made). The millisecond is a limit of the guarantee: a writer that makes
 * the area, registers and dies within a millisecond of this process's last look is recovered at its first
 * lock call after that millisecond (docs/strict.md). */
static uint64_t attach_retry_ns[REG_ROOTS_MAX];
static struct reg *attach_from_lock(int i) {
    uint64_t now = 0;
    if (__atomic_load_n(&attach_retry_ns[i], __ATOMIC_RELAXED) && (now = mono_ns()) < attach_retry_ns[i]) return NULL;
    DK_ERRNO_SAVE;
    struct reg *g = attach(i);
    int e = errno;
    DK_ERRNO_RESTORE;
    if (!g) __atomic_store_n(&attach_retry_ns[i], (now ? now : mono_ns()) + (e == ENOENT ? REG_NOAREA_RETRY_NS : 1000000000ull), __ATOMIC_RELAXED);
    return g;
}

/* up_inflight_after_lock's every step from root `from` on, inside the registry's code: an attach or a recovery
 * may take locks and make lock calls of its own. */
static __attribute__((noinline)) void after_lock_from(int from, int n) {
    inside = true;
    for (int i = from; i < n; i++) {
        struct reg *g = __atomic_load_n(&regs[i], __ATOMIC_ACQUIRE);
        /* (no area yet: no strict log there either; a removed registry: the one there now) */
        if (DK_UNLIKELY(!g || reg_removed(g)) && !(g = attach_from_lock(i))) continue;
        uint32_t hw = __atomic_load_n(&g->hdr->hw, __ATOMIC_ACQUIRE), any = 0;
        for (uint32_t k = 0; k < hw; k++) any |= futex_word(&g->slots[k]);
        /* (not from a signal handler that interrupted a library call of this thread: the replay takes file
         * mutexes and the file table's lock that call may hold -- any library mutex marked, common/lockmark.h:
         * review 14, finding 5's adoption case; the next lock call recovers) */
        if (DK_UNLIKELY(any & FUTEX_OWNER_DIED) && !up_thread_in_call() && !dk_mu_any_mine())
            recover_dead(i, g, hw, true);
    }
    inside = false;
}

/* Each acquisition's look for an operation of a dead process (a slot's futex says its owner died): the common
 * case -- every root's registry attached and no owner dead -- reads the words and calls nothing; the first root
 * that needs more (an attach, a recovery) hands the rest to after_lock_from (session 27: ~15 of the look's ~64
 * instructions an acquisition were the frame and the thread-local mark the slow steps need). */
void up_inflight_after_lock(void) {
    if (dk_cfg.mode != DK_MODE_STRICT || DK_UNLIKELY(inside)) return;
    int n = up_roots_count();
    if (n > REG_ROOTS_MAX) n = REG_ROOTS_MAX;
    for (int i = 0; i < n; i++) {
        struct reg *g = __atomic_load_n(&regs[i], __ATOMIC_ACQUIRE);
        if (DK_UNLIKELY(!g || reg_removed(g))) {
            after_lock_from(i, n);
            return;
        }
        uint32_t hw = __atomic_load_n(&g->hdr->hw, __ATOMIC_ACQUIRE), any = 0;
        for (uint32_t k = 0; k < hw; k++) any |= futex_word(&g->slots[k]);
        if (DK_UNLIKELY(any & FUTEX_OWNER_DIED)) {
            after_lock_from(i, n);
            return;
        }
    }
}

/* The area is being removed with the registry `name` in it (area_release.c): flagged through the file, so every
 * process that maps it attaches the next one instead (header). Before the unlink. */
void up_inflight_registry_removing(int afd, const char *name) {
    const struct dk_libc *c = dk_libc();
    int fd = dk_ifd_openat(afd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return; /* another user's (0600): its processes keep theirs (docs/strict.md) */
    uint32_t one = 1;
    struct stat st;
    if (c->fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)REG_HEADER_BYTES)
        (void)!c->pwrite(fd, &one, sizeof one, offsetof(struct reg_header, removed));
    c->close(fd);
}

void up_inflight_stats(struct up_inflight_stats *out) {
    out->dead_slots = __atomic_load_n(&stats.dead_slots, __ATOMIC_RELAXED);
    out->logs_recovered = __atomic_load_n(&stats.logs_recovered, __ATOMIC_RELAXED);
    out->logs_gone = __atomic_load_n(&stats.logs_gone, __ATOMIC_RELAXED);
    out->waits_timed_out = __atomic_load_n(&stats.waits_timed_out, __ATOMIC_RELAXED);
    out->slots_full = __atomic_load_n(&stats.slots_full, __ATOMIC_RELAXED);
}

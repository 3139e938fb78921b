/* Descriptor table (private) and open-file-description slots (shared with fork relatives). */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/calls.h"
#include "upath/guard.h"
#include "upath/internal.h"

_Static_assert(sizeof(struct up_slot) == 64, "one slot per cache line");

struct up_fd *up_fd_leaf[UP_FD_LEAVES];

/* Slots live in one shared anonymous region, allocated by a shared bitmap, so that a descriptor
 * inherited by fork keeps one offset in both processes (as the kernel's file description does). */
struct slot_region {
    uint64_t used[UP_SLOTS_MAX / 64]; /* allocation bitmap (atomic) */
    uint32_t hint;
    struct up_slot slot[UP_SLOTS_MAX];
};
static struct slot_region *region;
/* This process's descriptor count per slot (private: copied by fork, like the descriptors). */
static uint32_t local_refs[UP_SLOTS_MAX];
/* A slot was ever bound by this image or a fork ancestor (copied by fork): until then the exit has no slot
 * to release (up_fdtab_release_idle). */
static bool slots_bound;

int up_fdtab_init(void) {
    void *p = dk_libc()->mmap(NULL, sizeof(struct slot_region), PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return -errno;
    region = p;
    return 0;
}

static uint32_t slot_index(const struct up_slot *s) { return (uint32_t)(s - region->slot); }

uint32_t up_slot_local_refs(const struct up_slot *s) { return local_refs[slot_index(s)]; }

uint32_t up_slots_follow_appends(const struct up_file *f, uint64_t above, uint64_t upto, uint64_t by) {
    uint32_t moved = 0;
    for (uint32_t w = 0; region && w < UP_SLOTS_MAX / 64; w++) {
        uint64_t bits = __atomic_load_n(&region->used[w], __ATOMIC_ACQUIRE);
        for (; bits; bits &= bits - 1) {
            uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
            struct up_slot *s = &region->slot[i];
            /* (not its O_APPEND flag now: one F_SETFL took off since its append leaves the kernel's offset after
             * the record all the same -- its next write lands there, not inside the record) */
            if (!local_refs[i] || __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) != f) continue;
            uint64_t off = __atomic_load_n(&s->offset, __ATOMIC_ACQUIRE);
            if (off <= above || off > upto || __atomic_load_n(&s->pad[UP_SLOT_APPEND_END], __ATOMIC_ACQUIRE) != off)
                continue; /* not past its own append since the last publish */
            /* (a CAS: a read through the descriptor that moved it meanwhile keeps its own answer) */
            if (__atomic_compare_exchange_n(&s->offset, &off, off + by, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                __atomic_store_n(&s->pad[UP_SLOT_APPEND_END], off + by, __ATOMIC_RELEASE);
                moved++;
            }
        }
    }
    return moved;
}

struct up_slot *up_slot_new(struct up_file *f, uint32_t flags, uint64_t offset) {
    if (!region) return NULL;
    uint32_t start = __atomic_load_n(&region->hint, __ATOMIC_RELAXED) % (UP_SLOTS_MAX / 64);
    for (uint32_t k = 0; k < UP_SLOTS_MAX / 64; k++) {
        uint32_t w = (start + k) % (UP_SLOTS_MAX / 64);
        uint64_t bits = __atomic_load_n(&region->used[w], __ATOMIC_RELAXED);
        while (~bits) {
            int b = __builtin_ctzll(~bits);
            if (__atomic_compare_exchange_n(&region->used[w], &bits, bits | (1ull << b), false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                struct up_slot *s = &region->slot[w * 64 + (uint32_t)b];
                uint32_t gen = s->gen + 1;
                memset(s, 0, sizeof *s);
                s->gen = gen;
                s->offset = offset;
                s->flags = flags;
                s->file = f;
                __atomic_store_n(&s->procs, 1, __ATOMIC_RELEASE);
                __atomic_store_n(&region->hint, w, __ATOMIC_RELAXED);
                return s;
            }
        }
    }
    return NULL; /* full: the caller passes the descriptor through */
}

static void slot_free(struct up_slot *s) {
    uint32_t i = slot_index(s);
    s->file = NULL;
    __atomic_fetch_and(&region->used[i / 64], ~(1ull << (i % 64)), __ATOMIC_RELEASE);
}

/* Drops this process's share of a slot. */
static void slot_release_proc(struct up_slot *s) {
    if (__atomic_sub_fetch(&s->procs, 1, __ATOMIC_ACQ_REL) == 0) slot_free(s);
}

/* Entries in use (slot or internal) as bitmaps, per leaf and of leaves, so that walking the table (every
 * lock acquisition refreshes every open file) costs what is used: a few words, not 1,024 entries per leaf
 * (internal descriptors live at 512 and up, so a range would span them all). */
#define UP_FD_WORDS (UP_FD_LEAF / 64)
static uint64_t used_bits[UP_FD_LEAVES][UP_FD_WORDS];
static uint64_t leaf_bits[UP_FD_LEAVES / 64]; /* leaves that ever had an entry in use */

static void entry_note(int fd, bool was_used, bool now_used) {
    unsigned l = (unsigned)fd / UP_FD_LEAF, i = (unsigned)fd % UP_FD_LEAF;
    if (was_used == now_used) return;
    uint64_t bit = 1ull << (i % 64);
    if (now_used) {
        __atomic_fetch_or(&used_bits[l][i / 64], bit, __ATOMIC_RELEASE);
        if (!(__atomic_load_n(&leaf_bits[l / 64], __ATOMIC_RELAXED) & (1ull << (l % 64))))
            __atomic_fetch_or(&leaf_bits[l / 64], 1ull << (l % 64), __ATOMIC_RELEASE);
    } else {
        __atomic_fetch_and(&used_bits[l][i / 64], ~bit, __ATOMIC_RELEASE);
    }
}

static struct up_fd *entry_alloc(int fd) {
    if ((unsigned)fd >= UP_FD_LEAF * UP_FD_LEAVES) return NULL;
    struct up_fd **leafp = &up_fd_leaf[(unsigned)fd / UP_FD_LEAF];
    struct up_fd *leaf = __atomic_load_n(leafp, __ATOMIC_ACQUIRE);
    if (!leaf) {
        /* Anonymous zero pages, made as entries are touched: a calloc of the 1,024 entries (~115 KB, from
         * the heap's top) zeroed them all -- ~100,000 instructions and ~28 page faults of every process's
         * start, which touches descriptors 0-2 and the stats file's (near 960). */
        const size_t bytes = UP_FD_LEAF * sizeof *leaf;
        DK_ERRNO_SAVE;
        void *m = dk_libc()->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        DK_ERRNO_RESTORE;
        if (m == MAP_FAILED) return NULL;
        leaf = m;
        struct up_fd *expected = NULL;
        if (!__atomic_compare_exchange_n(leafp, &expected, leaf, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            dk_libc()->munmap(m, bytes);
            leaf = expected;
        }
    }
    struct up_fd *e = &leaf[(unsigned)fd % UP_FD_LEAF];
    /* held from now on, before any state of the entry's is stored (internal.h: up_fd.held) */
    if (!__atomic_load_n(&e->held, __ATOMIC_ACQUIRE)) __atomic_store_n(&e->held, 1, __ATOMIC_SEQ_CST);
    return e;
}

/* Calls waiting for a closing entry (calls.c: wait_closing) go on. After the entry's slot changed. */
static void wake_waiters(struct up_fd *e) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&e->call_waiters, __ATOMIC_RELAXED))
        syscall(SYS_futex, (uint32_t *)&e->slot, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* A handler's close left pending is void now; one its thread is carrying out stays its (table_nested.c). */
static void clear_close_later(struct up_fd *e) {
    uint32_t pending = UP_LATER_PENDING;
    __atomic_compare_exchange_n(&e->close_later, &pending, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

int up_fd_bind(int fd, struct up_slot *s) {
    struct up_fd *e = entry_alloc(fd);
    if (!e) return -ENOMEM;
    struct up_slot *was = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
    dk_assert(was == NULL || was == UP_SLOT_CLOSING); /* closing: a dup2 over it binds the new slot */
    local_refs[slot_index(s)]++;
    __atomic_store_n(&slots_bound, true, __ATOMIC_RELEASE);
    e->stale = 0;
    entry_note(fd, was != NULL || e->internal || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE), true);
    /* No call is inside the entry (it had no slot, or its closer drained them): a new set of users. */
    __atomic_store_n(&e->call_owner, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&e->call_shared, 0, __ATOMIC_RELAXED);
    e->released = NULL;
    e->internal = 0;
    e->aux_of = NULL;
    clear_close_later(e); /* another file on the number now */
    /* The slot before the pending state ends: another thread's call on a descriptor being adopted looks
     * for a slot, then (none) at the pending state, and waits while it is ADOPTING -- with the state
     * cleared first it found neither in between and sent its write to the kernel, under a file entry that
     * had just read the size (lazy adoption's open race, shim_threads map_race: one first write of four
     * lost in ~1 run of 45; every run with a sleep between the two stores). */
    __atomic_store_n(&e->slot, s, __ATOMIC_RELEASE);
    __atomic_store_n(&e->pending, UP_PEND_NONE, __ATOMIC_RELEASE);
    if (was == UP_SLOT_CLOSING) wake_waiters(e); /* a dup2 over a busy descriptor: the new slot */
    return 0;
}

/* (The entry stays in use -- its bit set -- until the close is done: close_done.) */
static struct up_slot *unbind_closing(struct up_fd *e) {
    struct up_slot *s = up_entry_slot(e);
    if (!s) return NULL;
    __atomic_store_n(&e->slot, UP_SLOT_CLOSING, __ATOMIC_RELEASE);
    clear_close_later(e); /* closed now: a handler's close left for later is done */
    e->stale = 0;
    uint32_t i = slot_index(s);
    dk_assert(local_refs[i] > 0);
    if (--local_refs[i] > 0) return NULL;
    return s;
}

struct up_slot *up_fd_unbind_closing(int fd, struct up_fd **ep) {
    struct up_fd *e = up_fd_entry(fd);
    *ep = e;
    if (!e || !up_entry_slot(e)) return NULL;
    __atomic_store_n(&e->closer, up_call_me(), __ATOMIC_RELAXED); /* before the closing state is seen */
    return unbind_closing(e);
}

static void close_done(int fd, struct up_fd *e) {
    struct up_slot *closing = UP_SLOT_CLOSING;
    /* (A dup2's bind replaced it already; another thread's open may have bound the number again.) */
    if (__atomic_compare_exchange_n(&e->slot, &closing, NULL, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        entry_note(fd, true, e->internal || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE));
        wake_waiters(e);
    }
}

bool up_fd_close_unbound(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e || __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) != NULL) return false;
    __atomic_store_n(&e->closer, up_call_me(), __ATOMIC_RELAXED); /* before the closing state is seen */
    struct up_slot *none = NULL;
    return __atomic_compare_exchange_n(&e->slot, &none, UP_SLOT_CLOSING, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

void up_fd_close_done(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (e) close_done(fd, e);
}

/* ---- a vacated number given again (internal.h: up_fd_opening) ---- */

bool up_program_threads;

void up_fd_vacate(int fd) {
    /* Only when another thread may write through the number: a single-threaded program's close + open pays
     * nothing (review 15, finding 10: +245 instructions per open+read+close). Another thread is one that
     * holds a call record -- or any, once the program made one (shim/proc.c: up_program_threads; not the
     * library's own threads, which never write through the program's descriptors): a thread whose first call
     * ever was a write through a number just closed and given again reached the new file with neither a
     * record nor an fdatasync (session 18, shim_pt_sync_window_first_write_*). */
    struct up_fd *e = up_fd_entry(fd);
    if (e && (__atomic_load_n(&up_program_threads, __ATOMIC_SEQ_CST) || up_guard_others()))
        __atomic_add_fetch(&e->vac_gen, 1, __ATOMIC_SEQ_CST);
}

void up_program_threads_begin(void) {
    if (__atomic_exchange_n(&up_program_threads, true, __ATOMIC_SEQ_CST)) return;
    for (unsigned w = 0; w < DK_ARRAY_LEN(leaf_bits); w++) {
        uint64_t leaves = __atomic_load_n(&leaf_bits[w], __ATOMIC_ACQUIRE);
        for (; leaves; leaves &= leaves - 1) {
            struct up_fd *leaf = __atomic_load_n(&up_fd_leaf[w * 64 + (unsigned)__builtin_ctzll(leaves)], __ATOMIC_ACQUIRE);
            for (unsigned i = 0; leaf && i < UP_FD_LEAF; i++)
                if (!__atomic_load_n(&leaf[i].slot, __ATOMIC_ACQUIRE) && !leaf[i].internal &&
                    !__atomic_load_n(&leaf[i].pending, __ATOMIC_ACQUIRE))
                    __atomic_add_fetch(&leaf[i].vac_gen, 1, __ATOMIC_SEQ_CST);
        }
    }
}

struct up_fd *up_fd_opening(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return NULL;
    uint32_t gen = __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE);
    if (gen == __atomic_load_n(&e->vac_clean, __ATOMIC_ACQUIRE)) return NULL;
    /* held before the closing state (a number never held that up_program_threads_begin vacated: a pass-through
     * write that looks at it from now on takes the vacated way and is waited for -- internal.h up_fd.held) */
    if (!__atomic_load_n(&e->held, __ATOMIC_ACQUIRE)) __atomic_store_n(&e->held, 1, __ATOMIC_SEQ_CST);
    DK_ERRNO_SAVE; /* (futex waits, membarrier) */
    for (;;) {
        struct up_slot *s = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
        if (s == UP_SLOT_CLOSING) { /* the close that vacated it, between the kernel's close and its end */
            if (__atomic_load_n(&e->closer, __ATOMIC_RELAXED) == up_call_me()) {
                DK_ERRNO_RESTORE;
                return NULL; /* (a handler's open inside its thread's close) */
            }
            up_call_wait_settled(e);
            continue;
        }
        if (s != NULL) {
            DK_ERRNO_RESTORE;
            return NULL; /* bound (a dup2 raced): nothing vacated to settle */
        }
        /* this thread's own calls on it (a signal handler's) go to the kernel, as a closer's (calls.c) */
        __atomic_store_n(&e->closer, up_call_me(), __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(&e->slot, &s, UP_SLOT_CLOSING, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            break;
    }
    entry_note(fd, e->internal || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE), true);
    /* The writes named in e (up_pt_vacant_enter) end -- each synced its file if it reached one -- before the
     * adoption reads the file's size. A thread inside a call itself (a signal handler's open) looks once. */
    if (up_calls_drain(e, !up_thread_in_call() && up_call_depth == 0) == UP_DRAIN_BUSY)
        dk_count(DK_C_open_race_busy, 1);
    __atomic_store_n(&e->vac_clean, gen, __ATOMIC_RELEASE);
    DK_ERRNO_RESTORE;
    return e;
}

void up_fd_opened(int fd, struct up_fd *e) {
    if (!e) return;
    DK_ERRNO_SAVE;
    close_done(fd, e); /* unless the adoption bound a slot: the kernel's number */
    DK_ERRNO_RESTORE;
}

/* Called by the owner of the file reference once the process's last descriptor on `s` is gone. */
void up_slot_drop_local(struct up_slot *s);
void up_slot_drop_local(struct up_slot *s) { slot_release_proc(s); }

int up_fd_flags(int fd) {
    const struct up_slot *s = up_fd_slot(fd);
    return s ? (int)__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) : DK_REAL(fcntl)(fd, F_GETFL);
}

void up_fd_mark_internal(int fd, bool internal) {
    struct up_fd *e = entry_alloc(fd);
    if (!e) return;
    bool pend = __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) != UP_PEND_NONE;
    entry_note(fd, e->slot || e->internal || pend, e->slot || internal);
    __atomic_store_n(&e->pending, UP_PEND_NONE, __ATOMIC_RELEASE); /* the number is ours now */
    e->internal = internal;
}

bool up_fd_set_pending(int fd, int oflags, uint32_t below, uint32_t walked, uint64_t epoch, bool child) {
    struct up_fd *e = entry_alloc(fd);
    if (!e || up_entry_slot(e) || e->internal) return false; /* (closing: the open's, up_fd_opening) */
    e->pend_child = child;
    e->pend_oflags = oflags;
    e->pend_below = below;
    e->pend_walked = walked;
    e->pend_ios = 0;
    e->pend_off = 0;
    e->pend_epoch = epoch;
    clear_close_later(e); /* another file on the number now (as up_fd_bind) */
    entry_note(fd, __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) != UP_PEND_NONE, true);
    __atomic_store_n(&e->pending, UP_PEND_WAITING, __ATOMIC_RELEASE);
    return true;
}

void up_fd_clear_pending(int fd, struct up_fd *e) {
    __atomic_store_n(&e->pending, UP_PEND_NONE, __ATOMIC_RELEASE);
    entry_note(fd, true, e->slot || e->internal);
}

void up_fd_end_adopting(int fd, struct up_fd *e, uint32_t claim, bool still_pending) {
    uint32_t to = still_pending ? UP_PEND_WAITING : UP_PEND_NONE;
    if (__atomic_compare_exchange_n(&e->pending, &claim, to, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) && !still_pending)
        entry_note(fd, true, e->slot || e->internal);
}

/* Visits the entries in use -- not those closing (their slot is UP_SLOT_CLOSING), unless `closing`, which
 * visits only those. */
static void leaf_foreach(unsigned l, void (*fn)(int fd, struct up_fd *e, void *arg), void *arg, bool closing) {
    struct up_fd *leaf = __atomic_load_n(&up_fd_leaf[l], __ATOMIC_ACQUIRE);
    if (!leaf) return;
    for (unsigned w = 0; w < UP_FD_WORDS; w++) {
        uint64_t bits = __atomic_load_n(&used_bits[l][w], __ATOMIC_ACQUIRE);
        while (bits) {
            unsigned i = w * 64 + (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            struct up_slot *s = __atomic_load_n(&leaf[i].slot, __ATOMIC_ACQUIRE);
            if (closing ? s == UP_SLOT_CLOSING
                        : (s && s != UP_SLOT_CLOSING) || leaf[i].internal || __atomic_load_n(&leaf[i].pending, __ATOMIC_ACQUIRE))
                fn((int)(l * UP_FD_LEAF + i), &leaf[i], arg);
        }
    }
}

static void foreach_entry(void (*fn)(int fd, struct up_fd *e, void *arg), void *arg, bool closing) {
    for (unsigned w = 0; w < DK_ARRAY_LEN(leaf_bits); w++) {
        uint64_t leaves = __atomic_load_n(&leaf_bits[w], __ATOMIC_ACQUIRE);
        while (leaves) {
            leaf_foreach(w * 64 + (unsigned)__builtin_ctzll(leaves), fn, arg, closing);
            leaves &= leaves - 1;
        }
    }
}

void up_fd_foreach(void (*fn)(int fd, struct up_fd *e, void *arg), void *arg) { foreach_entry(fn, arg, false); }

struct done_range { unsigned first, last; };
static void done_in_range(int fd, struct up_fd *e, void *arg) {
    const struct done_range *r = arg;
    if ((unsigned)fd >= r->first && (unsigned)fd <= r->last) close_done(fd, e);
}
void up_fd_close_done_range(unsigned first, unsigned last) {
    struct done_range r = {first, last};
    foreach_entry(done_in_range, &r, true);
}

/* Calls fn for every slot this process refers to: the shared allocation bitmap names the slots any
 * relative uses (a few words in use), local_refs says which are ours -- not a walk of all UP_SLOTS_MAX
 * counters (256 KiB, 0.4 M instructions at every fork and exit of every process). */
static void local_slots_foreach(void (*fn)(uint32_t i)) {
    for (uint32_t w = 0; w < UP_SLOTS_MAX / 64; w++) {
        uint64_t bits = __atomic_load_n(&region->used[w], __ATOMIC_ACQUIRE);
        while (bits) {
            uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (local_refs[i]) fn(i);
        }
    }
}

static void share_with_child(uint32_t i) { __atomic_fetch_add(&region->slot[i].procs, 1, __ATOMIC_ACQ_REL); }
static void unshare_failed_child(uint32_t i) { slot_release_proc(&region->slot[i]); }
static void release_local(uint32_t i) {
    local_refs[i] = 0;
    slot_release_proc(&region->slot[i]);
}

/* Before fork: the child will share every slot this process uses. */
void up_fdtab_fork_prepare(void) {
    if (region) local_slots_foreach(share_with_child);
}

void up_fdtab_fork_failed(void) {
    if (region) local_slots_foreach(unshare_failed_child);
}

/* ---- exit and exec: give up the slots no call is inside ---- */

static uint64_t busy_bits[UP_SLOTS_MAX / 64]; /* slots a record's call is inside (under up_table_mu) */

static void unbind_released(int fd, struct up_fd *e, void *arg) {
    (void)arg;
    struct up_slot *s = up_entry_slot(e);
    if (!s) return;
    e->released = s;
    __atomic_store_n(&e->slot, NULL, __ATOMIC_RELEASE);
    entry_note(fd, true, e->internal || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE));
}

static bool note_busy(const struct up_reader *r, void *ctx) {
    (void)ctx;
    const struct up_fd *e = __atomic_load_n(&r->in[UP_ASYM_CALL], __ATOMIC_ACQUIRE);
    if (e && e != (const void *)UP_SLOT_CLOSING) {
        const struct up_slot *s = e->released;
        if (s && s >= region->slot && s < region->slot + UP_SLOTS_MAX) {
            uint32_t i = slot_index(s);
            busy_bits[i / 64] |= 1ull << (i % 64);
        }
    }
    return false;
}

static void release_if_idle(uint32_t i) {
    if (busy_bits[i / 64] & (1ull << (i % 64))) {
        dk_count(DK_C_release_busy_kept, 1);
        return; /* never freed: a call is inside; the image ends with it */
    }
    release_local(i);
}

/* A process that never bound a slot (one that opened no managed file: a shell, a compiler's driver) has
 * nothing to release, and skips the walk's ~10,600 instructions, a membarrier and the 4 page faults of
 * reading tables it never wrote (session 16). */
void up_fdtab_release_idle(void) {
    if (!region || !__atomic_load_n(&slots_bound, __ATOMIC_ACQUIRE)) return;
    memset(busy_bits, 0, sizeof busy_bits);
    foreach_entry(unbind_released, NULL, false);
    /* Every call that loads an entry's slot after this sees none; one that loaded it before is named in
     * its record (calls.h). Calls of entries being closed are their closers' (which hold their slots). */
    up_guard_barrier();
    up_readers_each(note_busy, NULL);
    local_slots_foreach(release_if_idle);
}

static void closing_closed(int fd, struct up_fd *e, void *arg) {
    (void)arg;
    close_done(fd, e);
}
void up_fdtab_after_fork_child(void) { foreach_entry(closing_closed, NULL, true); }

/* Calls in progress on a descriptor: the slow sides of calls.h (nested calls, a descriptor's second user, a
 * closing entry) and the closer's grace period. */
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/stats.h"
#include "upath/calls.h"

#define NEST_MAX 8u

__thread uint32_t up_call_depth;
/* The borrowed records of this thread's nested calls, innermost last. A signal handler runs to its end
 * before the code it interrupted goes on: pushes and pops stay in order if the depth moves first on a push
 * and last on a pop. */
static __thread struct up_reader *nest[NEST_MAX];

/* r (naming e) is a user of e: the entry learns it unless it knows already. The fence orders the note
 * before the load of the slot (a closer stores the slot, fences, then reads the note). */
static void note_user(struct up_fd *e, const struct up_reader *r) {
    const void *o = __atomic_load_n(&e->call_owner, __ATOMIC_RELAXED);
    if (o == r && __atomic_load_n(&up_guard_asym, __ATOMIC_RELAXED)) return;
    if (o == NULL && __atomic_load_n(&up_guard_asym, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&e->call_owner, &o, (const void *)r, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return; /* a locked instruction: a full fence */
    /* Without membarrier the closers cannot stop this thread's CPU: every call fences (no owner is taken,
     * so a call never skips here). */
    if (!__atomic_load_n(&e->call_shared, __ATOMIC_RELAXED)) __atomic_store_n(&e->call_shared, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The entry is closing (another thread's close or dup2 waits for the calls inside): wait until it is closed
 * or bound again, without naming it (the closer waits for the records that do). On a futex on the slot's
 * low half (UP_SLOT_CLOSING's is 1; a slot's, 64-byte aligned, never is): a closer may wait a scheduling
 * quantum for a preempted call, and yielding waiters would take the CPU that call needs. The raw system
 * call: no cancellation point. */
static void wait_closing(struct up_fd *e) {
    __atomic_add_fetch(&e->call_waiters, 1, __ATOMIC_SEQ_CST); /* before the look (up_fd_woken: Dekker) */
    while (__atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) == UP_SLOT_CLOSING)
        syscall(SYS_futex, (uint32_t *)&e->slot, FUTEX_WAIT_PRIVATE, 1u, NULL, NULL, 0);
    __atomic_sub_fetch(&e->call_waiters, 1, __ATOMIC_RELAXED);
}

void up_call_wait_settled(struct up_fd *e) {
    if (__atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) == UP_SLOT_CLOSING &&
        __atomic_load_n(&e->closer, __ATOMIC_RELAXED) != up_call_me())
        wait_closing(e);
}

/* Names e in rec for a pass-through write (up_call_enter_vacant): kept named when e has no slot. The user is
 * always noted: the opener's drain skips its barrier when no other thread's call was noted (up_calls_drain). */
static int vacant_in(struct up_fd *e, struct up_reader *rec) {
    for (;;) {
        __atomic_store_n(&rec->in[UP_ASYM_CALL], e, __ATOMIC_RELAXED);
        __asm__ __volatile__("" ::: "memory");
        note_user(e, rec);
        struct up_slot *s = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
        /* No slot and not pending: still vacated, or given to a file whose open waits for this write. Pending:
         * an open gave the number to a file and ended (it marks a number pending before its end, the closing
         * state's, which this load follows) -- its close would not wait for a write named here, so the write
         * is the pending descriptor's (its adoption serves or names it: rw.c). */
        if (s == NULL && __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) == UP_PEND_NONE) return 1;
        __atomic_store_n(&rec->in[UP_ASYM_CALL], NULL, __ATOMIC_RELEASE);
        if (s != UP_SLOT_CLOSING) return -1; /* bound or pending meanwhile: looked up again */
        if (__atomic_load_n(&e->closer, __ATOMIC_RELAXED) == up_call_me()) return 0; /* this thread's own open */
        wait_closing(e);
    }
}

int up_call_enter_vacant(struct up_fd *e) {
    struct up_reader *r = up_reader_self;
    if (r == NULL) r = up_reader_claim(); /* (none while nested: guard.c) */
    if (r != NULL && up_call_depth == 0 && __atomic_load_n(&r->in[UP_ASYM_CALL], __ATOMIC_RELAXED) == NULL)
        return vacant_in(e, r);
    uint32_t d = up_call_depth;
    if (d >= NEST_MAX) return 0;
    struct up_reader *b = up_reader_borrow();
    __atomic_store_n(&up_call_depth, d + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    nest[d] = b;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int k = vacant_in(e, b);
    if (k != 1) up_call_leave_slow();
    return k;
}

/* Names e in rec, notes the user, loads the slot; NULL with rec cleared when there is none. */
static struct up_slot *enter_in(struct up_fd *e, struct up_reader *rec) {
    for (bool waited = false;; waited = true) {
        __atomic_store_n(&rec->in[UP_ASYM_CALL], e, __ATOMIC_RELAXED);
        __asm__ __volatile__("" ::: "memory");
        if (__atomic_load_n(&e->call_owner, __ATOMIC_RELAXED) != rec ||
            !__atomic_load_n(&up_guard_asym, __ATOMIC_RELAXED))
            note_user(e, rec);
        struct up_slot *s = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
        /* A bind resets the note (fdtab.c) before it stores the slot: seen with the slot, note again. */
        if (s != NULL && s != UP_SLOT_CLOSING && __atomic_load_n(&e->call_owner, __ATOMIC_RELAXED) != rec &&
            !__atomic_load_n(&e->call_shared, __ATOMIC_RELAXED))
            continue;
        if (s != UP_SLOT_CLOSING && s != NULL) return s;
        __atomic_store_n(&rec->in[UP_ASYM_CALL], NULL, __ATOMIC_RELEASE);
        /* tests: another thread's open gives the number again here (shim_pt_sync_ebadf window closed_reopen) */
        if (s == NULL && waited) DK_CRASH_POINT("upath.call.closed_waiting");
        if (s == NULL || __atomic_load_n(&e->closer, __ATOMIC_RELAXED) == up_call_me())
            return NULL; /* closed, or this thread's own close (a handler): the kernel's */
        wait_closing(e);
    }
}

struct up_slot *up_call_enter_slow(struct up_fd *e, struct up_reader *r) {
    if (r != NULL) return enter_in(e, r); /* the fast path's record: a second user, or the entry closing */
    /* Not served: no record claimed (a thread doing only the kernel's IO must not count in the guard's
     * `claimed`: its single-thread shortcut). */
    if (!__atomic_load_n(&e->slot, __ATOMIC_ACQUIRE)) return NULL;
    r = up_reader_self;
    if (r == NULL) r = up_reader_claim(); /* (none while nested: guard.c) */
    if (r != NULL && up_call_depth == 0 && __atomic_load_n(&r->in[UP_ASYM_CALL], __ATOMIC_RELAXED) == NULL)
        return enter_in(e, r);
    /* Nested in a call of this thread (a signal handler), or no record of its own: a borrowed one. */
    uint32_t d = up_call_depth;
    if (d >= NEST_MAX) return NULL; /* handlers nested that deep: the kernel serves the call */
    struct up_reader *b = up_reader_borrow();
    __atomic_store_n(&up_call_depth, d + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    nest[d] = b;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    struct up_slot *s = enter_in(e, b);
    if (s == NULL) up_call_leave_slow();
    return s;
}

struct up_slot *up_call_enter_again(struct up_fd *e, bool *closed) {
    for (;;) {
        struct up_slot *now = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
        *closed = now == NULL;
        if (now == NULL) return NULL;
        /* no record can name it (handlers nested too deep), or this thread's own close (a handler inside it) */
        if (up_call_depth >= NEST_MAX ||
            (now == UP_SLOT_CLOSING && __atomic_load_n(&e->closer, __ATOMIC_RELAXED) == up_call_me()))
            return NULL;
        /* bound again (a reopen gave the number to a file) or closing again since: named as any call */
        struct up_slot *s = up_call_enter(e);
        if (s) return s;
    }
}

void up_call_leave_slow(void) {
    uint32_t d = up_call_depth;
    struct up_reader *b = nest[d - 1];
    __atomic_store_n(&b->in[UP_ASYM_CALL], NULL, __ATOMIC_RELEASE);
    up_reader_give_back(b);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&up_call_depth, d - 1, __ATOMIC_RELAXED);
}

/* This thread is inside a call on e (a signal handler closing what its thread's call uses). */
static bool mine(const struct up_fd *e) {
    const struct up_reader *r = up_reader_self;
    if (r && __atomic_load_n(&r->in[UP_ASYM_CALL], __ATOMIC_RELAXED) == e) return true;
    for (uint32_t i = 0; i < up_call_depth && i < NEST_MAX; i++)
        if (__atomic_load_n(&nest[i]->in[UP_ASYM_CALL], __ATOMIC_RELAXED) == e) return true;
    return false;
}

enum up_drain up_calls_drain(struct up_fd *e, bool may_wait) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the closing store before the looks below (Dekker) */
    if (mine(e)) return UP_DRAIN_BUSY;
    const struct up_reader *self = up_reader_self;
    const void *owner = __atomic_load_n(&e->call_owner, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&e->call_shared, __ATOMIC_RELAXED) && (owner == NULL || owner == self))
        return UP_DRAIN_IDLE; /* no other thread's call since the bind */
    up_guard_barrier();
    if (!up_guard_named(UP_ASYM_CALL, e)) return UP_DRAIN_IDLE;
    if (!may_wait) return UP_DRAIN_BUSY;
    dk_count(DK_C_close_waits, 1);
    /* Calls are short, but a page-cache pwrite or an fsync inside one can block on the device: yield, then
     * sleep (the raw system call: libc's nanosleep is a cancellation point). */
    for (unsigned spins = 0; up_guard_named(UP_ASYM_CALL, e); spins++) {
        if (spins < 64) sched_yield();
        else syscall(SYS_nanosleep, &(struct timespec){0, 50000}, NULL);
    }
    return UP_DRAIN_WAITED;
}

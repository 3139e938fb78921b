/* Calls in progress on a descriptor, against close, dup2/dup3 over it, exec and exit (review 11, findings 16
 * and 10): what keeps a descriptor's slot, its file and its number alive while a served call uses them.
 *
 * The kernel holds a reference to the open file for the length of a call: a call racing close() completes
 * on the old file, and new calls after close returns get EBADF; dup2 over a busy descriptor replaces it
 * atomically. Here a served call takes no reference (a locked instruction per call would cost what the
 * file guard saved, guard.h): it names the descriptor's entry in its thread's reader record (a plain store,
 * UP_ASYM_CALL), then loads the entry's slot. A closer makes the entry closing (UP_SLOT_CLOSING instead of
 * the slot), runs a barrier on every CPU (membarrier) and waits until no record names the entry -- a grace
 * period, as with hazard pointers -- before it frees the slot, drops the file and lets the kernel close the
 * number: calls already in complete on the old slot, file and number. A call arriving meanwhile waits until
 * the entry is closed (it then goes to the kernel: EBADF) or bound again (dup2: the new slot).
 *
 * No barrier when no other thread can be inside: the entry remembers the record of its one user since it
 * was bound (call_owner; a record reused by a later thread is that thread's: the earlier one has ended) and
 * whether another came (call_shared, set with a fence by a second user: the pair of fences of Dekker's
 * algorithm). A program closing the files its own thread used pays a fence.
 *
 * A call nested in another (a signal handler's, whose thread is inside a call) names its entry in a borrowed
 * record (a short per-thread stack of them); a closer that is itself inside calls (a handler, or holding a
 * file's mutex) never waits -- it looks once and, when a call is inside, leaves the slot and the file for
 * ever (counted: close_busy_kept). Exit and exec never wait: they give up only the slots no call is inside
 * (fdtab.c: up_fdtab_release_idle). */
#ifndef DK_UPATH_CALLS_H
#define DK_UPATH_CALLS_H

#include "upath/guard.h"

/* The nested calls of this thread hold borrowed records (calls.c). */
extern __thread uint32_t up_call_depth;

struct up_slot *up_call_enter_slow(struct up_fd *e, struct up_reader *r);

/* up_call_enter's common case, inline and calling nothing: e's slot (e named in this thread's record), NULL
 * (no slot: the record left as it was), or UP_CALL_SLOW -- up_call_enter_slow(e, *rp) decides (this thread's
 * record is in use or missing: *rp NULL; the entry is closing or has had another user). A caller that wants no
 * frame of its own tail-calls whatever makes calls (upath.c: serving; session 26). */
#define UP_CALL_SLOW ((struct up_slot *)2)
static inline struct up_slot *up_call_enter_fast(struct up_fd *e, struct up_reader **rp) {
    struct up_reader *r = up_reader_self;
    *rp = NULL;
    if (__builtin_expect(r == NULL || __atomic_load_n(&r->in[UP_ASYM_CALL], __ATOMIC_RELAXED) != NULL, 0))
        return UP_CALL_SLOW;
    __atomic_store_n(&r->in[UP_ASYM_CALL], e, __ATOMIC_RELAXED);
    __asm__ __volatile__("" ::: "memory"); /* membarrier supplies the CPU barrier (guard.h) */
    struct up_slot *s = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
    if (__builtin_expect(s == NULL, 0)) { /* not served (the kernel's descriptors: sockets, pipes, ...) */
        __atomic_store_n(&r->in[UP_ASYM_CALL], NULL, __ATOMIC_RELAXED);
        return NULL;
    }
    /* The entry's one user since its bind is this thread: no fence (a closer runs membarrier). */
    *rp = r;
    if (__builtin_expect(s == UP_SLOT_CLOSING || __atomic_load_n(&e->call_owner, __ATOMIC_RELAXED) != r, 0))
        return UP_CALL_SLOW;
    return s;
}

/* Names e in this thread's record and returns e's slot, or NULL (the record left as it was: no call). A
 * thread whose calls nest in borrowed records claims no record of its own meanwhile (guard.c), so a record
 * naming nothing means no call of the thread is in progress. */
static inline struct up_slot *up_call_enter(struct up_fd *e) {
    struct up_reader *r;
    struct up_slot *s = up_call_enter_fast(e, &r);
    return __builtin_expect(s == UP_CALL_SLOW, 0) ? up_call_enter_slow(e, r) : s;
}

/* After up_call_enter(e) returned NULL for a call that changes the file (shim.h: dk_pt_name): e's slot
 * named, when the number was closed while the call waited and is bound (or closing) again since -- a change
 * the kernel makes to the reopened file must be named, or the next close would not wait for its fdatasync
 * (which then found the number closed: session 17's strict/sync hole). NULL with *closed when e has no slot
 * (the kernel's number: a vacated one's writes go through upath/vacant.c); NULL, not closed, when no record
 * can name it (handlers nested too deep; this thread's own close, a handler inside it). */
struct up_slot *up_call_enter_again(struct up_fd *e, bool *closed);

void up_call_leave_slow(void);

/* Ends the call up_call_enter began (it returned a slot). */
static inline void up_call_leave(void) {
    if (__builtin_expect(up_call_depth != 0, 0)) {
        up_call_leave_slow();
        return;
    }
    __atomic_store_n(&up_reader_self->in[UP_ASYM_CALL], NULL, __ATOMIC_RELEASE);
}

/* Waits while e is closing (or being opened: fdtab.c, up_fd_opening) by another thread. */
void up_call_wait_settled(struct up_fd *e);

/* A pass-through write through a vacated number (internal.h: up_fd_vacated): 1 when it is named in this
 * thread's record with no slot -- make the kernel's call, then up_call_leave; an open giving the number to
 * a new file meanwhile waits for it (up_fd_opening). -1: bound or pending meanwhile (look it up again). 0: not
 * named (this thread's own open, a signal handler's; handlers nested too deep): the kernel's, as before. */
int up_call_enter_vacant(struct up_fd *e);

/* After e was made closing (up_fd_unbind_closing): how the calls inside it went. */
enum up_drain { UP_DRAIN_IDLE, UP_DRAIN_WAITED, UP_DRAIN_BUSY };
/* Waits until no call is inside e (may_wait false: one look). BUSY: a call is (this thread's own, when its
 * signal handler closes what it interrupted, or another's when may_wait is false); the slot and the file
 * must then stay. WAITED: some call was inside and is done (its appends may want a publish). */
enum up_drain up_calls_drain(struct up_fd *e, bool may_wait);

/* This thread's identity as a closer (fdtab.c stores it in a closing entry): its own calls on that entry (a
 * signal handler's, interrupting the close) go to the kernel -- the number is open until the close ends --
 * rather than wait for themselves. */
static inline const void *up_call_me(void) { return &up_call_depth; }

#endif

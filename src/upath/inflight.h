/* Strict mode: the operation in flight at a process's death, recovered before a survivor goes on (review 13,
 * finding 1, addendum b). Design, what is covered and the limits: docs/strict.md, "The operation in flight
 * at a death". Test: tests/strict/inflight_registry.c, diff_twoproc_crash_site_late_*. */
#ifndef DK_UPATH_INFLIGHT_H
#define DK_UPATH_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

struct up_root;
struct up_strict;

/* Before a strict operation of this thread on root r logs anything (log_path: the process's log there):
 * the thread holds its registry slot from its first operation until it ends (or until the registry is
 * removed with its area: a slot in the next one). Two loads and compares once the slot is held. Not from a
 * signal handler that interrupted this thread (nested): its operation goes without a slot when the thread
 * had none. */
struct dk_oplog;
void up_inflight_hold_slow(struct up_root *r, const struct dk_oplog *log);
extern __thread const struct up_root *up_inflight_held_root; /* the root of this thread's last hold */
extern __thread const uint32_t *up_inflight_held_gone;       /* its registry's "removed" word */
static inline void up_inflight_hold(struct up_root *r, const struct dk_oplog *log) {
    if (__builtin_expect(up_inflight_held_root != r || *up_inflight_held_gone, 0)) up_inflight_hold_slow(r, log);
}

/* After this process acquired a lock (flock, fcntl F_SETLK(W), F_OFD_SETLK(W), lockf) -- managed file or not:
 * any registered strict thread of this user that died in the middle of an operation has its log recovered
 * before this returns (its op in flight then done all or nothing, never completed later over what this
 * process writes next). Plain loads when nobody died. Keeps errno; cancellation off inside. */
void up_inflight_after_lock(void);

/* At the process's exit (up_fini, after strict's logs went): this thread's slots go back unmarked, so
 * survivors have no dead slot to look at for it. */
void up_inflight_exit(void);

/* Fork child: the parent's slots are the parent's (glibc gives the child an empty robust list). */
void up_inflight_after_fork_child(void);

/* The program removes a root's area (area_release.c), the registry `name` (of any user) in it, opened at afd:
 * flagged first, so every process that maps it attaches the next one (review 14, finding 1). */
void up_inflight_registry_removing(int afd, const char *name);

/* Tests and diagnostics: dead slots found and logs recovered by this process so far. */
struct up_inflight_stats {
    uint64_t dead_slots, logs_recovered, logs_gone, waits_timed_out, slots_full;
};
void up_inflight_stats(struct up_inflight_stats *out);

#endif

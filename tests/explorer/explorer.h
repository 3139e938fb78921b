/* The crash-state explorer (test builds only): records what a workload stores, writes back and fences in
 * a memory region (a mapped file), then replays that trace onto the region's pre-workload image and
 * materialises the states a power failure could leave on media, running a checker on each.
 *
 *   dk_explorer_begin(map, bytes);          // snapshot the image, hook dk_persist_set_trace
 *   ... workload: dk_oplog_append(...); dk_explorer_mark(ACKED | i); ...
 *   dk_explorer_end();
 *   dk_explorer_run(&opts, check, ctx, &result);   // check(image, marks) on every crash state
 *
 * Persistence model (x86 ADR, one 64-byte line is the unit that reaches media whole):
 *  - a line stored (reported by dk_copy_*, dk_zero_nt, dk_store_persistent) or written back (dk_flush_range:
 *    its contents at that moment are the candidate; plain stores the trace does not report are seen only
 *    there) is *uncertain*: from then on the media may hold the old contents or the candidate;
 *  - a write-back or non-temporal store by thread T becomes *certain* at T's next dk_fence (other threads'
 *    fences do not order it); a line stored again afterwards is uncertain again;
 *  - lines never reported do not exist for the explorer (their media contents stay as before).
 * Crash points: before every fence, before any store that replaces an uncertain line's candidate, and at the
 * end of the trace. At each crash point every subset of the uncertain lines is materialised (each chosen line
 * holds its latest candidate, the others their certain contents) when there are at most
 * exhaustive_lines_max of them; otherwise none, all, each one alone, all but each one, and
 * samples_per_point seeded random subsets. The checker sees the marks made before the crash point: what the
 * workload had acknowledged. Every candidate of every line appears at some crash point, but not every
 * combination (line A's older candidate with line B's later one). With torn_samples_per_point, extra seeded
 * states also tear lines at 8-byte granularity (some words old, some new). With threads, each thread's fences are attributed correctly but the interleaving is the one
 * recorded (force others with dk_crashpoint_set_hook). */
#ifndef DK_TESTS_EXPLORER_H
#define DK_TESTS_EXPLORER_H

#include <stddef.h>
#include <stdint.h>

/* Starts recording stores, write-backs and fences into [base, base + bytes) (fences from anywhere). The
 * region's current contents are the pre-workload image. One recording at a time. Returns 0 or -errno. */
int dk_explorer_begin(void *base, size_t bytes);
/* The same over several regions (at most 8, e.g. a log, a staging file and a data file mapped apart): the
 * image the checker sees is their concatenation, in this order (region i at the sum of the earlier sizes,
 * each rounded down to whole lines). */
struct dk_explorer_region {
    void *base;
    size_t bytes;
};
int dk_explorer_begin_regions(const struct dk_explorer_region *regions, size_t n);
/* Records a plain store the workload made itself, which no persistence call reports (a program's store into
 * a mapping, as in tests/atomic/uwp_explore.c): the lines of [p, p + n) are uncertain from here on, holding
 * their contents now as the candidate, until written back and fenced. Thread-safe. */
void dk_explorer_store(const void *p, size_t n);
/* Records a marker at this point of the trace (e.g. "record 17 acknowledged"). Thread-safe. */
void dk_explorer_mark(uint64_t value);
/* Stops recording (the trace is kept for dk_explorer_run). */
void dk_explorer_end(void);
/* Frees the trace. */
void dk_explorer_free(void);

struct dk_explorer_options {
    uint64_t seed;                 /* sampling seed (0: chosen from the clock; printed in the result) */
    unsigned exhaustive_lines_max; /* default 10: up to 1,024 states per crash point */
    unsigned samples_per_point;    /* default 64 random subsets when there are more uncertain lines */
    uint64_t states_max;           /* stop after this many states (default 5,000,000) */
    unsigned failures_max;         /* stop after this many failing states (default 1) */
    unsigned singles_max;          /* default 0 (all): a sampled point's "each line alone" and "all but each" states
                                      for at most this many of its uncertain lines (seeded choice; a point with
                                      megabytes in flight has tens of thousands) */
    unsigned torn_samples_per_point; /* default 0: extra seeded states per crash point in which uncertain
                                        lines may also be torn at 8-byte granularity (x86 guarantees no more) */
};

/* The checker: `image` is one crash state of the region (read only), `marks` the marks recorded before the
 * crash point. Return 0 when the state satisfies the invariants, else nonzero with a reason in `why`. */
typedef int (*dk_explorer_check_fn)(const void *image, size_t bytes, const uint64_t *marks, size_t marks_count,
                                    char *why, size_t why_bytes, void *ctx);

struct dk_explorer_result {
    uint64_t seed;
    uint64_t events, fences, marks;   /* the trace */
    uint64_t crash_points, states, failures;
    uint64_t uncertain_lines_max;     /* the most uncertain lines at one crash point */
    uint64_t sampled_points;          /* crash points with too many lines for exhaustive enumeration */
    uint64_t torn_states;             /* states with at least one line torn at 8-byte granularity */
    double seconds;                   /* exploring (materialising + checking), wall clock */
    double cpu_seconds;               /* the same in CPU time of the exploring thread (load-independent) */
    char first_failure[768];          /* reason, crash point, subset and seed of the first failure */
};

/* Replays the trace and checks every crash state. Returns 0 when every state passed, 1 when some failed,
 * -errno when there was no usable trace (e.g. the recorder ran out of memory). */
int dk_explorer_run(const struct dk_explorer_options *opts, dk_explorer_check_fn check, void *ctx,
                    struct dk_explorer_result *result);

#endif

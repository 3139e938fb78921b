/* Live counters in a small per-process mapped file (/dev/shm/daxkit/stats.PID, locked by its owner with
 * flock while it lives), read by `daxkit stats`; made when the process first uses a managed file (until then
 * the counters are private: a process that never does is not listed). Files of killed processes are swept by `daxkit stats` and by
 * daxkit start-ups, at most one a second.
 * Each thread counts into a slot of its own (plain stores, no atomics on the data path); the reader sums
 * slots. Threads beyond the slot count share the last slot with atomic adds. */
#ifndef DK_COMMON_STATS_H
#define DK_COMMON_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum dk_counter {
#define C(name, doc) DK_C_##name,
#include "common/stats.def"
#undef C
    DK_C_COUNT
};

#define DK_STATS_MAGIC 0x444b535441545331ull /* "DKSTATS1" */
#define DK_STATS_SLOTS 64
#define DK_STATS_DIR "/dev/shm/daxkit" /* DAXKIT_STATS_DIR's default */

/* The directory of the counter files: DAXKIT_STATS_DIR (the loaded configuration in the library, the
 * environment in the tools), DK_STATS_DIR when unset, empty, relative or longer than DK_PATH_OPT_MAX. */
const char *dk_stats_dir(void);

struct dk_stats_slot {
    uint64_t v[DK_C_COUNT];
} __attribute__((aligned(64)));

struct dk_stats_file {
    uint64_t magic;
    uint32_t counters; /* DK_C_COUNT of the writer */
    uint32_t slots;
    int32_t pid;
    uint32_t slots_used;
    uint64_t start_ns_realtime;
    char mode[16];
    char dirs[256];
    char note[128]; /* e.g. "persistence emulated (DAXKIT_PERSIST=flush)" */
    struct dk_stats_slot slot[DK_STATS_SLOTS];
};

extern __thread struct dk_stats_slot *dk_stats_tls;
extern __thread int dk_stats_tls_shared;
struct dk_stats_slot *dk_stats_claim_slot(void);

static inline void dk_count(enum dk_counter c, uint64_t n) {
    struct dk_stats_slot *s = dk_stats_tls;
    if (__builtin_expect(s == 0, 0)) s = dk_stats_claim_slot();
    if (__builtin_expect(dk_stats_tls_shared, 0)) __atomic_fetch_add(&s->v[c], n, __ATOMIC_RELAXED);
    else s->v[c] += n;
}

/* Two counters at once (a call and its bytes): the thread's slot looked up once, inline (the served write's fast
 * path counted through two out-of-line dk_count calls, ~26 instructions: session 27). */
static inline __attribute__((always_inline)) void dk_count2(enum dk_counter c, uint64_t n, enum dk_counter c2,
                                                            uint64_t n2) {
    struct dk_stats_slot *s = dk_stats_tls;
    if (__builtin_expect(s == 0, 0)) s = dk_stats_claim_slot();
    if (__builtin_expect(dk_stats_tls_shared, 0)) {
        __atomic_fetch_add(&s->v[c], n, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->v[c2], n2, __ATOMIC_RELAXED);
    } else {
        s->v[c] += n;
        s->v[c2] += n2;
    }
}

/* Starts this process's counters -- in private memory: the stats file is made at the first managed file
 * (dk_stats_publish) when `enabled`. Call once at start, and in a forked child (which starts from zero and
 * from no file). */
void dk_stats_open(int enabled, const char *mode, const char *dirs, const char *note);
/* The process uses a managed file: its stats file is made now (once; the counters so far move into it) and
 * `daxkit stats` finds the process from then on. One load and branch, inline, when done already (it sits in
 * the kernel-served branch of every call through a managed descriptor: upath.c up_serving). */
#define DK_STATS_PRIVATE 1 /* dk_stats_state while the counters are in private memory and the file is due */
extern int dk_stats_state __attribute__((visibility("hidden")));
void dk_stats_publish_slow(void);
static inline void dk_stats_publish(void) {
    if (__builtin_expect(__atomic_load_n(&dk_stats_state, __ATOMIC_ACQUIRE) == DK_STATS_PRIVATE, 0))
        dk_stats_publish_slow();
}
/* An exec is about to replace this image: its stats file goes (left, `daxkit stats` would list the old
 * image's counters under the live pid; the new image makes its own at its first managed file). When the exec
 * fails, the counters go on in the unlinked file's pages and the next managed file makes it again. */
void dk_stats_before_exec(void);
/* The stats file exists and holds the counters. */
bool dk_stats_mapped(void);
/* How the stats file's descriptor (held with its lock) is moved out of the program's way and closed (the
 * preload's internal descriptors); without hooks it stays where open put it. Call before dk_stats_open. */
void dk_stats_set_fd_hooks(int (*move)(int), void (*close_fd)(int));
/* Removes a stats file named after this process's pid (left by a killed process with the same pid) unless
 * a live owner (another pid namespace) holds its lock. */
void dk_stats_remove_stale(void);
/* Removes the stats files of processes that are gone (killed: SIGKILL, a crash, an OOM kill leave them):
 * a file whose pid no process here has and whose lock nobody holds. Returns how many. */
int dk_stats_sweep(void);
/* dk_stats_sweep at a process's start-up: at most once a second per directory (stats.c). */
void dk_stats_sweep_at_start(void);
/* Removes this process's stats file (at exit). */
void dk_stats_close(void);
/* Reader side: counter names and docs. */
const char *dk_stats_name(int idx);
const char *dk_stats_doc(int idx);
/* Sums the slots of a mapped stats file into out[DK_C_COUNT]. */
void dk_stats_sum(const struct dk_stats_file *f, uint64_t *out);

#endif

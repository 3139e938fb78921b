/* Description: the hybrid policy switches in both directions. The rule (alog_policy_next): redo for the
 * next epoch when writes >= 40% of this epoch's accesses, else undo -- but a file in redo goes back only
 * below 30% (hysteresis: a mix at the threshold would flip at every window), in integers (Libnvmio's
 * integer division never switched). Through the API: a write-heavy epoch moves a file from undo to redo at sync,
 * a read-heavy one moves it back, each switch checkpoints everything (no entries left), the data stays
 * right across switches, the fixed policies never switch, and short epochs accumulate their counts
 * until 256 accesses back a decision (no flip-flopping on noise when a program syncs every few ops). The
 * default is DAXKIT_ATOMIC_REDO_NEVER (session 20: undo costs no more than redo at any mix, 100% writes
 * included, docs/atomic.md "Hybrid policy"): 75%, 90% and 100% write mixes stay undo, no switch. At 100%
 * (session 19's default) 75% and 90% stay undo, writes alone move the file to redo, and it stays down to 90%;
 * with session 18's 60% the 75% mix switched to redo. Usage: atomic_policy [DIR] */
#include "atomic/alog.h"
#include "atomic_test.h"

#define FILE_BYTES (1u << 20)

static void rule(void) {
    AT_CHECK(alog_policy_next(ALOG_UNDO, DAXKIT_ATOMIC_HYBRID, 40, 60, 40) == ALOG_REDO, "40%% writes: redo");
    AT_CHECK(alog_policy_next(ALOG_UNDO, DAXKIT_ATOMIC_HYBRID, 40, 61, 39) == ALOG_UNDO, "39%% writes: undo");
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_HYBRID, 40, 3, 2) == ALOG_REDO, "2 of 5 writes: redo");
    /* hysteresis: from redo, back to undo only below 40 - 10 = 30% writes (no flapping at the threshold) */
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_HYBRID, 40, 61, 39) == ALOG_REDO, "redo, 39%%: stays");
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_HYBRID, 40, 70, 30) == ALOG_REDO, "redo, 30%%: stays");
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_HYBRID, 40, 71, 29) == ALOG_UNDO, "redo, 29%%: undo");
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_HYBRID, 5, 100, 0) == ALOG_UNDO, "threshold 5%%, 0%%: undo");
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_HYBRID, 40, 0, 0) == ALOG_REDO, "idle epoch keeps redo");
    AT_CHECK(alog_policy_next(ALOG_UNDO, DAXKIT_ATOMIC_HYBRID, 40, 0, 0) == ALOG_UNDO, "idle epoch keeps undo");
    AT_CHECK(alog_policy_next(ALOG_UNDO, DAXKIT_ATOMIC_UNDO, 40, 0, 100) == ALOG_UNDO, "fixed undo");
    AT_CHECK(alog_policy_next(ALOG_REDO, DAXKIT_ATOMIC_REDO, 40, 100, 0) == ALOG_REDO, "fixed redo");
    AT_CHECK(alog_policy_next(ALOG_UNDO, DAXKIT_ATOMIC_HYBRID, 100, 1, 1000000) == ALOG_UNDO, "100%%: 1 read stops it");
    AT_CHECK(alog_policy_next(ALOG_UNDO, DAXKIT_ATOMIC_HYBRID, DAXKIT_ATOMIC_REDO_NEVER, 0, 1000000) == ALOG_UNDO,
             "never: writes alone stay undo");
}

static char model[FILE_BYTES];

static void epoch(struct daxkit_atomic *a, uint32_t writes, uint32_t reads, uint64_t *rs) {
    char buf[512];
    for (uint32_t i = 0; i < writes + reads; i++) {
        uint64_t off = at_rand(rs) % (FILE_BYTES - sizeof buf);
        if (i < writes) {
            for (size_t j = 0; j < sizeof buf; j++) buf[j] = (char)at_rand(rs);
            AT_OK(daxkit_atomic_copy(a, off, buf, sizeof buf));
            memcpy(model + off, buf, sizeof buf);
        } else {
            AT_OK(daxkit_atomic_read(a, off, buf, sizeof buf));
            AT_CHECK(memcmp(buf, model + off, sizeof buf) == 0, "read at %llu differs", (unsigned long long)off);
        }
    }
    AT_OK(daxkit_atomic_sync(a));
}

static void expect_policy(struct daxkit_atomic *a, uint32_t policy, uint64_t switches, const char *what) {
    struct daxkit_atomic_stats s = at_stats(a);
    AT_CHECK(s.policy == policy, "%s: policy %s", what, s.policy == DAXKIT_ATOMIC_REDO ? "redo" : "undo");
    AT_CHECK(s.policy_switches == switches, "%s: %llu switches, want %llu", what,
             (unsigned long long)s.policy_switches, (unsigned long long)switches);
    printf("%-40s -> %s (switches %llu, entries live %llu)\n", what, policy == DAXKIT_ATOMIC_REDO ? "redo" : "undo",
           (unsigned long long)s.policy_switches, (unsigned long long)s.entries_live);
}

static void hybrid(const char *path) {
    at_make_model_file(path, FILE_BYTES, 7, model);
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_HYBRID, 0);
    o.redo_write_pct = 40; /* the threshold (the default never redoes) */
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    if (at_stats(a).persist_medium == 1) at_skip("pagecache medium: the engine uses redo only there");
    uint64_t rs = 12345;
    expect_policy(a, DAXKIT_ATOMIC_UNDO, 0, "fresh map");
    epoch(a, 300, 0, &rs);
    expect_policy(a, DAXKIT_ATOMIC_REDO, 1, "epoch of 300 writes, 0 reads");
    AT_CHECK(at_stats(a).entries_live == 0, "a switch leaves no entries");
    epoch(a, 120, 180, &rs);
    expect_policy(a, DAXKIT_ATOMIC_REDO, 1, "120 writes, 180 reads (exactly 40%)");
    epoch(a, 117, 183, &rs);
    expect_policy(a, DAXKIT_ATOMIC_REDO, 1, "117 writes, 183 reads (39%: redo stays down to 30%)");
    epoch(a, 90, 210, &rs);
    expect_policy(a, DAXKIT_ATOMIC_REDO, 1, "90 writes, 210 reads (exactly 30%)");
    epoch(a, 87, 213, &rs);
    expect_policy(a, DAXKIT_ATOMIC_UNDO, 2, "87 writes, 213 reads (29%)");
    AT_CHECK(at_stats(a).entries_live == 0, "a switch leaves no entries");
    epoch(a, 15, 285, &rs);
    expect_policy(a, DAXKIT_ATOMIC_UNDO, 2, "15 writes, 285 reads");
    epoch(a, 270, 30, &rs);
    expect_policy(a, DAXKIT_ATOMIC_REDO, 3, "270 writes, 30 reads");
    epoch(a, 0, 0, &rs);
    expect_policy(a, DAXKIT_ATOMIC_REDO, 3, "idle epoch");
    for (int i = 0; i < 9; i++) epoch(a, 2, 18, &rs); /* short epochs: 180 accesses, no decision yet */
    expect_policy(a, DAXKIT_ATOMIC_REDO, 3, "9 short read-heavy epochs (180 accesses)");
    for (int i = 0; i < 4; i++) epoch(a, 2, 18, &rs); /* 260 accesses since the last decision */
    expect_policy(a, DAXKIT_ATOMIC_UNDO, 4, "4 more (260 accesses, 10% writes)");
    AT_OK(daxkit_atomic_unmap(a));
    static char file[FILE_BYTES];
    at_read_file(path, file, FILE_BYTES);
    AT_CHECK(memcmp(file, model, FILE_BYTES) == 0, "file after the switches differs from the model");
}

static void fixed(const char *path, uint32_t policy) {
    struct daxkit_atomic_options o = at_opts(policy, 0);
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    uint64_t rs = 99;
    at_read_file(path, model, FILE_BYTES);
    epoch(a, 100, 0, &rs);
    epoch(a, 0, 100, &rs);
    expect_policy(a, policy, 0, policy == DAXKIT_ATOMIC_REDO ? "fixed redo, both mixes" : "fixed undo, both mixes");
    AT_OK(daxkit_atomic_unmap(a));
}

struct step {
    uint32_t epochs, writes, reads, policy;
    uint64_t switches;
    const char *what;
};

/* Each step: `epochs` epochs of that mix, then the policy and the switches so far, at threshold `pct`. */
static void steps_at(const char *path, uint32_t pct, const struct step *steps, size_t n) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_HYBRID, 0);
    o.redo_write_pct = pct;
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    at_read_file(path, model, FILE_BYTES);
    uint64_t rs = 4242;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t e = 0; e < steps[i].epochs; e++) epoch(a, steps[i].writes, steps[i].reads, &rs);
        expect_policy(a, steps[i].policy, steps[i].switches, steps[i].what);
    }
    AT_OK(daxkit_atomic_unmap(a));
}

/* The default (no redo_write_pct set): never redo -- 75%, 90% and writes alone stay undo. */
static void default_threshold(const char *path) {
    static const struct step steps[] = {
        {10, 225, 75, DAXKIT_ATOMIC_UNDO, 0, "default, 10 epochs of 75% writes"},
        {10, 270, 30, DAXKIT_ATOMIC_UNDO, 0, "default, 10 epochs of 90% writes"},
        {10, 300, 0, DAXKIT_ATOMIC_UNDO, 0, "default, 10 epochs of writes alone"},
    };
    struct daxkit_atomic_options d;
    daxkit_atomic_options_init(&d);
    AT_CHECK(d.redo_write_pct == DAXKIT_ATOMIC_REDO_NEVER, "default threshold %u, want DAXKIT_ATOMIC_REDO_NEVER (%u)",
             d.redo_write_pct, DAXKIT_ATOMIC_REDO_NEVER);
    steps_at(path, d.redo_write_pct, steps, sizeof steps / sizeof steps[0]);
}

/* 100% (session 19's default): 75% and 90% writes stay undo, windows of writes alone go to redo, and redo
 * stays down to 90% (hysteresis). */
static void threshold_100(const char *path) {
    static const struct step steps[] = {
        {10, 225, 75, DAXKIT_ATOMIC_UNDO, 0, "100%, 10 epochs of 75% writes"},
        {10, 270, 30, DAXKIT_ATOMIC_UNDO, 0, "100%, 10 epochs of 90% writes"},
        {1, 300, 0, DAXKIT_ATOMIC_REDO, 1, "100%, 300 writes, 0 reads"},
        {1, 270, 30, DAXKIT_ATOMIC_REDO, 1, "100%, 90% writes (redo stays down to 90%)"},
        {1, 267, 33, DAXKIT_ATOMIC_UNDO, 2, "100%, 89% writes"},
    };
    steps_at(path, 100, steps, sizeof steps / sizeof steps[0]);
}

int main(int argc, char **argv) {
    rule();
    at_setup_dir(argc, argv);
    char path[700];
    at_path(path, sizeof path, "policy.bin");
    hybrid(path);
    default_threshold(path);
    threshold_100(path);
    fixed(path, DAXKIT_ATOMIC_UNDO);
    fixed(path, DAXKIT_ATOMIC_REDO);
    printf("PASS\n");
    return 0;
}

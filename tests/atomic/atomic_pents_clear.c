/* Description: the close's skip of the recovery's entry scans (183faf1, alog_recover: `pents_clear`, set by a
 * recovery that emptied the log, cleared by alog_entry_publish) is safe, and this test can tell when it is not
 * (review 18 #08). Under undo, redo and hybrid (checkpoint thread off, pacing as configured), a seeded series
 * of map / copies / [sync / copies] / unmap cycles on one file: after each unmap the file must hold exactly the
 * last sync's bytes (undo: the unsynced copies rolled back by the close; redo: the synced entries applied).
 * `sticky`: the broken variant ALOG_BROKEN_PENTS_CLEAR_STICKY (a publish leaves the flag set, so each close
 * skips its scans) must be caught -- exit 0 only if some unmap leaves a file that differs from the last sync.
 * Usage: atomic_pents_clear [correct|sticky] [DIR]; SEED=n reproduces a run. */
#include "atomic/alog.h"
#include "atomic_test.h"

#define FILE_BYTES (1u << 20)
#define ROUNDS 8u
#define COPIES 24u

static char committed[FILE_BYTES], current[FILE_BYTES], got[FILE_BYTES];

static void random_copies(struct daxkit_atomic *a, uint64_t *rs) {
    char buf[512];
    for (uint32_t i = 0; i < COPIES; i++) {
        uint32_t n = 1 + (uint32_t)(at_rand(rs) % sizeof buf);
        uint64_t off = at_rand(rs) % (FILE_BYTES - n + 1);
        for (uint32_t k = 0; k < n; k++) buf[k] = (char)at_rand(rs);
        AT_OK(daxkit_atomic_copy(a, off, buf, n));
        memcpy(current + off, buf, n);
    }
}

/* One policy's cycles; returns how many unmaps left a file that differs from the last sync. */
static uint32_t cycles(const char *path, uint32_t policy, uint64_t seed) {
    at_make_file(path, FILE_BYTES, (uint8_t)seed);
    at_read_file(path, committed, FILE_BYTES);
    memcpy(current, committed, FILE_BYTES);
    struct daxkit_atomic_options o = at_opts(policy, 0);
    uint64_t rs = seed;
    uint32_t differ = 0;
    for (uint32_t r = 0; r < ROUNDS; r++) {
        struct daxkit_atomic *a;
        AT_OK(daxkit_atomic_map(path, &o, &a)); /* its recovery empties the log: the flag is set */
        random_copies(a, &rs);
        if (r % 2) {
            AT_OK(daxkit_atomic_sync(a));
            memcpy(committed, current, FILE_BYTES);
            random_copies(a, &rs);
        }
        AT_OK(daxkit_atomic_unmap(a)); /* no sync: back to the last one */
        at_read_file(path, got, FILE_BYTES);
        if (memcmp(got, committed, FILE_BYTES)) differ++;
        memcpy(current, committed, FILE_BYTES);
    }
    return differ;
}

int main(int argc, char **argv) {
    bool sticky = argc > 1 && !strcmp(argv[1], "sticky");
    if (argc > 1 && !sticky && strcmp(argv[1], "correct")) at_skip("usage: atomic_pents_clear [correct|sticky] [DIR]");
    at_setup_dir(argc - 1, argv + 1);
    at_seed = at_seed_from_env();
    printf("seed=%llu\n", (unsigned long long)at_seed);
    alog_test_broken = sticky ? ALOG_BROKEN_PENTS_CLEAR_STICKY : ALOG_BROKEN_NONE;
    char path[600];
    at_path(path, sizeof path, "pents.bin");
    const char *names[] = {"undo", "redo", "hybrid"};
    uint32_t total = 0;
    for (uint32_t i = 0; i < 3; i++) {
        uint32_t differ = cycles(path, at_policy(names[i]), at_seed + i);
        printf("%s: %u of %u unmaps left a file that differs from the last sync\n", names[i], differ, ROUNDS);
        total += differ;
    }
    if (sticky) {
        AT_CHECK(total > 0, "the broken variant pents-clear-sticky was not caught: every close left the synced bytes");
        printf("ok: the broken variant was caught (%u unmaps)\nPASS\n", total);
        return 0;
    }
    AT_CHECK(total == 0, "%u unmaps left a file that differs from the last sync", total);
    printf("PASS\n");
    return 0;
}

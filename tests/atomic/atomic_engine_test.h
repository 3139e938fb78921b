/* Helpers for tests/atomic programs that drive the engine's internal API (atomic/alog.h) directly. */
#ifndef DK_TESTS_ATOMIC_ENGINE_TEST_H
#define DK_TESTS_ATOMIC_ENGINE_TEST_H

#include "atomic/alog.h"
#include "atomic_test.h"

/* Reads the file's first `blocks` 4 KiB blocks through the engine and fails, naming `when` and the first block
 * that differs, unless they equal `model`. */
static inline void at_check_blocks(struct alog_file *f, const char *model, uint64_t blocks, const char *when) {
    char *got = malloc(blocks * 4096);
    if (!got) AT_FAIL("%s: out of memory for %llu blocks", when, (unsigned long long)blocks);
    AT_OK(alog_read(f, 0, got, blocks * 4096));
    for (uint64_t b = 0; b < blocks; b++)
        AT_CHECK(memcmp(got + b * 4096, model + b * 4096, 4096) == 0, "%s: block %llu differs from the model", when,
                 (unsigned long long)b);
    free(got);
}

/* The engine on `path` with `policy`, a log of log_bytes and no checkpoint thread; NULL with *rc (-errno) when
 * the open fails (for tests of a refused open). */
static inline struct alog_file *at_engine_try_open(const char *path, uint32_t policy, uint64_t log_bytes, int *rc) {
    struct daxkit_atomic_options o, r;
    daxkit_atomic_options_init(&o);
    o.policy = policy, o.log_bytes = log_bytes, o.checkpoint_interval_us = 0;
    AT_OK(alog_options_resolve(&o, &r));
    struct alog_file *f = NULL;
    *rc = alog_open(path, &r, &f);
    return *rc ? NULL : f;
}

/* The same, failing the test when the open fails. */
static inline struct alog_file *at_engine_open(const char *path, uint32_t policy, uint64_t log_bytes) {
    int rc;
    struct alog_file *f = at_engine_try_open(path, policy, log_bytes, &rc);
    AT_OK(rc);
    return f;
}

#endif

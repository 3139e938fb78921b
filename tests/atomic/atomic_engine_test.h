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

/* The engine on `path` with `policy`, a log of log_bytes and a checkpoint thread every interval_us (0: none);
 * NULL with *rc (-errno) when the open fails (for tests of a refused open). */
static inline struct alog_file *at_engine_try_open_every(const char *path, uint32_t policy, uint64_t log_bytes,
                                                         uint32_t interval_us, int *rc) {
    struct daxkit_atomic_options o, r;
    daxkit_atomic_options_init(&o);
    o.policy = policy, o.log_bytes = log_bytes, o.checkpoint_interval_us = interval_us;
    AT_OK(alog_options_resolve(&o, &r));
    struct alog_file *f = NULL;
    *rc = alog_open(path, &r, &f);
    return *rc ? NULL : f;
}

/* The same without a checkpoint thread. */
static inline struct alog_file *at_engine_try_open(const char *path, uint32_t policy, uint64_t log_bytes, int *rc) {
    return at_engine_try_open_every(path, policy, log_bytes, 0, rc);
}

/* The same, failing the test when the open fails. */
static inline struct alog_file *at_engine_open(const char *path, uint32_t policy, uint64_t log_bytes) {
    int rc;
    struct alog_file *f = at_engine_try_open(path, policy, log_bytes, &rc);
    AT_OK(rc);
    return f;
}

/* A copy through the engine (alog_copy) or the C API (daxkit_atomic_copy) on the handle `h`. */
typedef int (*at_copy_fn)(void *h, uint64_t off, const void *buf, size_t n);
static inline int at_alog_copy(void *h, uint64_t off, const void *buf, size_t n) { return alog_copy(h, off, buf, n); }

/* `blocks` copies of `bs` bytes (at most 4 KiB) into distinct 4 KiB blocks from block `first` -- at 512 into each
 * block when shorter than one -- copy i made of at_fill(tag + i) and stored into `model` as well. */
static inline void at_copy_blocks(at_copy_fn copy, void *h, char *model, uint64_t first, uint32_t blocks, uint32_t bs,
                                  uint64_t tag) {
    static char buf[4096];
    AT_CHECK(bs <= sizeof buf, "at_copy_blocks: %u bytes is more than a block", bs);
    for (uint32_t i = 0; i < blocks; i++) {
        uint64_t off = (first + i) * 4096 + (bs < 4096 ? 512 : 0);
        at_fill(buf, bs, tag + i);
        memcpy(model + off, buf, bs);
        AT_OK(copy(h, off, buf, bs));
    }
}

/* The first journal position in [from, to), by 64 B line, whose line `back` (one byte per line of an area of
 * area_bytes, nonzero: written back) does not mark; UINT64_MAX when every line is marked. */
static inline uint64_t at_line_not_back(const uint8_t *back, uint64_t area_bytes, uint64_t from, uint64_t to) {
    for (uint64_t p = from / 64 * 64; p < to; p += 64)
        if (!back[p % area_bytes / 64]) return p;
    return UINT64_MAX;
}

#endif

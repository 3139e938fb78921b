/* The process's file-size limit (RLIMIT_FSIZE) as the write path must honour it. */
#ifndef DK_UPATH_FSIZE_H
#define DK_UPATH_FSIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RLIMIT_FSIZE's soft limit in bytes; UINT64_MAX when unlimited (almost always). */
extern uint64_t up_fsize_limit_bytes __attribute__((visibility("hidden")));

/* Reads the limit again (library start-up; after the program's setrlimit/prlimit). */
void up_fsize_refresh(void);

static inline bool up_fsize_limited(void) {
    return __builtin_expect(__atomic_load_n(&up_fsize_limit_bytes, __ATOMIC_RELAXED) != UINT64_MAX, 0);
}

/* A write of *n bytes at `off` under a finite limit, as the kernel treats it: at or past the limit,
 * SIGXFSZ to the calling thread and -EFBIG; crossing it, *n cut to end at the limit. 0 or -EFBIG. */
int up_fsize_clamp(uint64_t off, size_t *n);

#endif

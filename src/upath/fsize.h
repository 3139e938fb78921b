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

/* A truncate from `size` to `len` as the kernel treats it under the limit (inode_newsize_ok: growth past it is
 * refused, a shrink passes): 0, or SIGXFSZ and -EFBIG. For the modes that log a truncate before the kernel runs
 * it -- the refusal must come first (recovery would apply it). */
static inline int up_fsize_refuse_growth(uint64_t len, uint64_t size) {
    size_t none = 0;
    return len > size && up_fsize_limited() ? up_fsize_clamp(len, &none) : 0;
}

#endif

/* Common definitions for every daxkit module: attributes, sizes, assertions, errno-safe helpers. */
#ifndef DK_COMMON_DK_H
#define DK_COMMON_DK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define DK_EXPORT __attribute__((visibility("default")))
/* On the declaration of a global that lives in the library itself: read RIP-relative in one instruction (the
 * default visibility of an extern declaration reads its address from the GOT first, a second instruction at
 * every use -- the pass-through and served entry points read several; session 26). */
#define DK_HIDDEN __attribute__((visibility("hidden")))
#define DK_LIKELY(x) __builtin_expect(!!(x), 1)
#define DK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define DK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DK_MAX(a, b) ((a) > (b) ? (a) : (b))

#define DK_CACHELINE_BYTES 64u
#define DK_PAGE_BYTES 4096u
#define DK_HUGE_BYTES (2u << 20) /* 2 MiB: the mapping and alignment unit */
#define DK_HUGE_SHIFT 21

static inline uint64_t dk_round_down(uint64_t x, uint64_t a) { return x & ~(a - 1); }
static inline uint64_t dk_round_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Linux caps one read/write at MAX_RW_COUNT bytes; replacements must do the same. */
#define DK_MAX_RW_BYTES ((size_t)0x7ffff000)

/* An invariant violation inside someone else's process: report it with file and line. In a test build
 * abort so the test sees it; in a release build report once and carry on (never exit the host). */
void dk_assert_failed(const char *expr, const char *file, int line);
#define dk_assert(e) (DK_LIKELY(e) ? (void)0 : dk_assert_failed(#e, __FILE__, __LINE__))

/* Keep errno as the host program left it across internal calls on a success path. */
#define DK_ERRNO_SAVE int dk_saved_errno_ = errno
#define DK_ERRNO_RESTORE (errno = dk_saved_errno_)

/* Monotonic time in nanoseconds. */
uint64_t dk_now_ns(void);

#endif

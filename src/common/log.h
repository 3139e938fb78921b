/* Diagnostics to the host's stderr, written with the real write(2) (never through stdio buffers). */
#ifndef DK_COMMON_LOG_H
#define DK_COMMON_LOG_H

#include <stdarg.h>

/* "daxkit: <message>\n". Message names what went wrong and what to do next. */
void dk_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only when DAXKIT_VERBOSE=1. */
void dk_log_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Once per call site: for warnings that a hot path might repeat. */
#define dk_log_once(...)                                                                     \
    do {                                                                                     \
        static int dk_logged_once_;                                                          \
        if (!__atomic_exchange_n(&dk_logged_once_, 1, __ATOMIC_RELAXED)) dk_log(__VA_ARGS__); \
    } while (0)

#endif

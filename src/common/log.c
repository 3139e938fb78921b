#include "common/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "shim/libc.h"

static void log_v(const char *fmt, va_list ap) {
    DK_ERRNO_SAVE;
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "daxkit[%d]: ", (int)dk_libc()->getpid());
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    if (m < 0) m = 0;
    size_t len = DK_MIN((size_t)n + (size_t)m, sizeof buf - 2);
    buf[len++] = '\n';
    (void)!dk_libc()->write(2, buf, len);
    DK_ERRNO_RESTORE;
}

void dk_log(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_v(fmt, ap);
    va_end(ap);
}

void dk_log_verbose(const char *fmt, ...) {
    if (!dk_cfg.verbose) return;
    va_list ap;
    va_start(ap, fmt);
    log_v(fmt, ap);
    va_end(ap);
}

void dk_assert_failed(const char *expr, const char *file, int line) {
#ifdef DAXKIT_TEST_BUILD
    dk_log("internal assertion failed: %s at %s:%d (test build: aborting)", expr, file, line);
    __builtin_trap();
#else
    static int reported;
    if (!__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
        dk_log("internal assertion failed: %s at %s:%d; please report this with DAXKIT_VERBOSE=1 output",
               expr, file, line);
#endif
}

uint64_t dk_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *dk_strerror(int e) {
    dk_ifd_begin();
    const char *m = strerror(e);
    dk_ifd_end();
    return m;
}

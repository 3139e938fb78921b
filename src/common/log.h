/* Diagnostics to the host's stderr, written with the real write(2) (never through stdio buffers). */
#ifndef DK_COMMON_LOG_H
#define DK_COMMON_LOG_H

#include <stdarg.h>

/* "daxkit: <message>\n". Message names what went wrong and what to do next. */
void dk_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only when DAXKIT_VERBOSE=1. */
void dk_log_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* strerror(e) for the library's messages, made in a window of the library's own opens (common/internal_fd.h):
 * glibc translates it when the program set a locale whose messages it has (setlocale(LC_ALL, "") under
 * LC_ALL=C.UTF-8 with LANGUAGE=fr, say), and its first translated message loads libc.mo -- opened at the lowest
 * free number, mapped, closed (__open_nocancel: no preload sees it). Made in a program thread while another
 * was between its close(n) and its open, that thread's calls through n reached the catalog and its reopen got
 * another number (session 24; shim_strerror_window provokes it under strace). */
const char *dk_strerror(int e);
/* Once per call site: for warnings that a hot path might repeat. */
#define dk_log_once(...)                                                                     \
    do {                                                                                     \
        static int dk_logged_once_;                                                          \
        if (!__atomic_exchange_n(&dk_logged_once_, 1, __ATOMIC_RELAXED)) dk_log(__VA_ARGS__); \
    } while (0)

#endif

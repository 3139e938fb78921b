/* May the library read the program's bytes [p, p + n)? A call the kernel would fail with EFAULT (a struct flock,
 * an iovec array, an rlimit, a path the program passed into an unmapped or PROT_NONE page) must not die of SIGSEGV
 * in the library's look before the kernel call: glibc alone returns -1 EFAULT. No signal handler (the program
 * owns its signals): a pointer into the calling thread's stack above the library's frame is readable (the fast
 * way -- SQLite's struct flock is a local -- a few compares); anything else is probed by the kernel, a
 * FUTEX_WAIT with a zero timeout on one word a page (userptr.c), which returns EFAULT where a read would fault.
 *
 * The stack: a glibc thread's stack ends below its descriptor (the thread pointer, x86-64; aarch64's is above
 * the descriptor, also mapped), also a stack the program gave pthread_create; the main thread's at
 * __libc_stack_end (argv, environment above it). A thread off its stack (a coroutine's, sigaltstack) within
 * DK_USERPTR_SPAN_BYTES below its top may see a hole between: a bad pointer into it is read (SIGSEGV, as
 * before this check). Memory the program unmaps in another thread between the probe and the read is its own
 * race. */
#ifndef DK_COMMON_USERPTR_H
#define DK_COMMON_USERPTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dk.h"

/* A stack pointer at most this far below the thread's stack top takes the fast way. The main thread's: the
 * kernel puts mmap_base at least 128 MiB below the stack (mm/util.c mmap_base's MIN_GAP), so no other mapping
 * lies within 64 MiB under its top; a thread's default stack is 8 MiB (RLIMIT_STACK). Deeper: probed. */
#define DK_USERPTR_SPAN_BYTES ((uintptr_t)64 << 20)

/* This thread's stack top (0: not known yet -- dk_user_readable_slow finds it): __libc_stack_end for the
 * process's first thread (its stack pointer within the span below it), the thread pointer for any other. */
extern __thread uintptr_t dk_userptr_top __attribute__((tls_model("initial-exec")));

DK_HIDDEN bool dk_user_readable_slow(const void *p, size_t n);

static inline uintptr_t dk_userptr_sp(void) {
#if defined(__x86_64__)
    uintptr_t sp;
    __asm__("mov %%rsp, %0" : "=r"(sp));
    return sp;
#else
    return (uintptr_t)__builtin_frame_address(0);
#endif
}

/* true: the library may read [p, p + n); false: the kernel would fail the call with EFAULT (pass it on).
 * The fast way: p between the stack pointer and the stack's top, the stack pointer near that top (a top of
 * 0 fails the last test: top - sp wraps). */
static inline bool dk_user_readable(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p, sp = dk_userptr_sp(), top = dk_userptr_top;
    if (DK_LIKELY(a >= sp && a <= top - n && top - sp <= DK_USERPTR_SPAN_BYTES)) return true;
    return dk_user_readable_slow(p, n);
}

/* true: the library may read the NUL-terminated string s (each page it spans up to its NUL is readable). */
DK_HIDDEN bool dk_user_str_readable(const char *s);

#endif

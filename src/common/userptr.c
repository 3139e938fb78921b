/* The kernel's probe of the program's memory (userptr.h). */
#include "common/userptr.h"

#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PROBE_PAGE_BYTES 4096u /* the smallest page: one word of each is read (a larger page holds several) */

__thread uintptr_t dk_userptr_top __attribute__((tls_model("initial-exec")));

extern void *__libc_stack_end;

/* One aligned word of each 4 KiB page of [p, p + n) read by the kernel: false only when it says EFAULT. The
 * read is FUTEX_WAIT's (a private futex, a zero timeout): it loads the word first -- EFAULT where a load
 * would fault -- then returns at once (EAGAIN: another value; ETIMEDOUT: the same; EINTR). futex, not
 * process_vm_readv: no seccomp filter a threaded program runs under refuses it (one that kills on an
 * unexpected call would have killed the program for a lock struct on its heap). */
static bool probe(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p, end = a + n;
    if (n == 0) return true;
    if (end < a) return false; /* wraps: no such range (the kernel's access_ok) */
    DK_ERRNO_SAVE;
    bool ok = true;
    const struct timespec zero = {0, 0};
    for (a &= ~(uintptr_t)3; ok && a < end; a = (a | (PROBE_PAGE_BYTES - 1)) + 1) /* the next page's first word */
        ok = syscall(SYS_futex, (void *)a, FUTEX_WAIT_PRIVATE, 0x5ca1ab1e, &zero, NULL, 0) == 0 || errno != EFAULT;
    DK_ERRNO_RESTORE;
    return ok;
}

/* The thread's stack top, found once a thread (two system calls): a fork's child keeps its thread's. */
bool dk_user_readable_slow(const void *p, size_t n) {
    if (DK_UNLIKELY(dk_userptr_top == 0)) {
        DK_ERRNO_SAVE;
        bool first = syscall(SYS_gettid) == syscall(SYS_getpid);
        DK_ERRNO_RESTORE;
        uintptr_t top = first ? (uintptr_t)__libc_stack_end : (uintptr_t)__builtin_thread_pointer();
        dk_userptr_top = top ? top : 1; /* (1: none; the fast way's test fails) */
        uintptr_t a = (uintptr_t)p, sp = dk_userptr_sp();
        if (a >= sp && a <= top - n && top - sp <= DK_USERPTR_SPAN_BYTES) return true;
    }
    return probe(p, n);
}

bool dk_user_str_readable(const char *s) {
    for (uintptr_t a = (uintptr_t)s;;) {
        if (!dk_user_readable((const void *)a, 1)) return false;
        uintptr_t page_end = (a | (PROBE_PAGE_BYTES - 1)) + 1;
        if (memchr((const void *)a, 0, page_end - a)) return true;
        a = page_end;
    }
}

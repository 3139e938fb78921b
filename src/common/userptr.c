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
/* The last KNOWN_PAGES 4 KiB pages this thread's probes found readable, each + 1 (0: none), replaced in turn:
 * the same struct or iovec array on the heap or in static data, a string literal ("" of fstatat's
 * AT_EMPTY_PATH) probed once, not at every call -- each page of a range on its own, so an array across a page
 * boundary is two known pages (a loop of fstatat "" and a heap struct flock's lock and unlock: 2 probes, not
 * 200). A page the program unmaps or protects afterwards and then passes a bad pointer into is read (SIGSEGV,
 * as before the check): a use after unmap of its own. */
#define KNOWN_PAGES 8
static __thread uintptr_t known_page[KNOWN_PAGES] __attribute__((tls_model("initial-exec")));
static __thread unsigned known_next __attribute__((tls_model("initial-exec")));

extern void *__libc_stack_end;

/* One aligned word of the 4 KiB page at `page` read by the kernel: false only when it says EFAULT. The read is
 * FUTEX_WAIT's (a private futex, a zero timeout): it loads the word first -- EFAULT where a load would fault --
 * then returns at once (EAGAIN: another value; ETIMEDOUT: the same; EINTR). futex, not process_vm_readv: no
 * seccomp filter a threaded program runs under refuses it (one that kills on an unexpected call would have
 * killed the program for a lock struct on its heap), and one system call, not two (review 27 #2). */
static bool probe_page(uintptr_t page) {
    DK_ERRNO_SAVE;
    const struct timespec zero = {0, 0};
    bool ok = syscall(SYS_futex, (void *)page, FUTEX_WAIT_PRIVATE, 0x5ca1ab1e, &zero, NULL, 0) == 0 || errno != EFAULT;
    DK_ERRNO_RESTORE;
    return ok;
}

static bool known(uintptr_t page) {
    for (unsigned i = 0; i < KNOWN_PAGES; i++)
        if (known_page[i] == page + 1) return true;
    return false;
}

/* The thread's stack top, found once a thread without a system call: __libc_stack_end when the stack pointer
 * lies within the span below it (the process's first thread: no other mapping is that close, userptr.h),
 * else the thread pointer (a glibc thread's descriptor, above its stack -- also in a fork child of such a
 * thread, whose tid is the pid: review 27 #2's LOW). */
bool dk_user_readable_slow(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p, end = a + n, sp = dk_userptr_sp();
    if (DK_UNLIKELY(dk_userptr_top == 0)) {
        uintptr_t main_top = (uintptr_t)__libc_stack_end;
        uintptr_t top = sp < main_top && main_top - sp <= DK_USERPTR_SPAN_BYTES
                            ? main_top : (uintptr_t)__builtin_thread_pointer();
        dk_userptr_top = top ? top : 1; /* (1: none; the fast way's test fails) */
        if (a >= sp && a <= top - n && top - sp <= DK_USERPTR_SPAN_BYTES) return true;
    }
    if (n == 0) return true;
    if (end < a) return false; /* wraps: no such range (the kernel's access_ok) */
    for (uintptr_t page = a & ~(uintptr_t)(PROBE_PAGE_BYTES - 1); page < end; page += PROBE_PAGE_BYTES) {
        if (known(page)) continue;
        if (!probe_page(page)) return false;
        known_page[known_next++ % KNOWN_PAGES] = page + 1;
    }
    return true;
}

bool dk_user_str_readable(const char *s) {
    for (uintptr_t a = (uintptr_t)s;;) {
        if (!dk_user_readable((const void *)a, 1)) return false;
        uintptr_t page_end = (a | (PROBE_PAGE_BYTES - 1)) + 1;
        if (memchr((const void *)a, 0, page_end - a)) return true;
        a = page_end;
    }
}

/* RLIMIT_FSIZE. The kernel cuts a write that crosses the limit to a short count and refuses one that
 * starts at or past it with EFBIG and SIGXFSZ -- even an overwrite inside the file's size. Bytes the
 * library accepted past the limit could never be published (the relink or the extension would be
 * refused), so with a finite limit posix and sync modes hand every write to the kernel (io.c) and strict
 * and atomic writes are cut here first. */
#include "upath/fsize.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include "shim/libc.h"

uint64_t up_fsize_limit_bytes = UINT64_MAX;

void up_fsize_refresh(void) {
    struct rlimit rl;
    if (DK_REAL(getrlimit)(RLIMIT_FSIZE, &rl) != 0) return;
    uint64_t lim = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    __atomic_store_n(&up_fsize_limit_bytes, lim, __ATOMIC_RELAXED);
}

int up_fsize_clamp(uint64_t off, size_t *n) {
    uint64_t lim = __atomic_load_n(&up_fsize_limit_bytes, __ATOMIC_RELAXED);
    if (off + *n <= lim) return 0;
    if (off >= lim) { /* *n == 0 (a truncate to off): past the limit */
        pthread_kill(pthread_self(), SIGXFSZ); /* as the kernel's send_sig(SIGXFSZ, current) */
        return -EFBIG;
    }
    *n = (size_t)(lim - off);
    return 0;
}

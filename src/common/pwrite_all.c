/* pwrite until done (see pwrite_all.h). */
#include "common/pwrite_all.h"

#include <errno.h>
#include <pthread.h>
#include <sys/uio.h>

#include "common/dk.h"
#include "shim/libc.h"

/* One system call for at most n bytes. */
static ssize_t pwrite_once(int fd, const char *p, size_t n, uint64_t off, int rwf_flags) {
    if (rwf_flags == 0) return DK_REAL(pwrite)(fd, p, n, (off_t)off);
    struct iovec v = {(void *)p, n};
    if (rwf_flags & DK_PWRITE_AT_POS) return DK_REAL(pwritev2)(fd, &v, 1, -1, rwf_flags & ~DK_PWRITE_AT_POS);
    return DK_REAL(pwritev2)(fd, &v, 1, (off_t)off, rwf_flags);
}

/* Callers hold locks (a file's mutex or guard, the log's): libc's pwrite is a cancellation point, and a
 * thread cancelled inside would leave them held for good. Cancellation is off for the loop and back as it
 * was after it (the program's own call stays a cancellation point at its entry). The libc table is still
 * called, so fault injection reaches these writes. */
int dk_pwrite_all_done(int fd, const void *src, size_t n, uint64_t off, int rwf_flags,
                       const struct dk_pwrite_pieces *pieces, size_t *done) {
    DK_ERRNO_SAVE;
    size_t total = n;
    int cancel_was = dk_cancel_off();
    const char *p = src;
    int rc = 0;
    size_t len = pieces && n ? (size_t)pieces->next(pieces->ctx, off, n, 1) : n;
    while (n) {
        ssize_t w = pwrite_once(fd, p, len, off, rwf_flags);
        if (w < 0 && errno == EINTR) continue; /* the same piece again */
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        p += w, n -= (size_t)w, off += (uint64_t)w;
        len = pieces && n ? (size_t)pieces->next(pieces->ctx, off, n, 0) : n;
    }
    dk_cancel_restore(cancel_was);
    DK_ERRNO_RESTORE;
    if (done) *done = total - n;
    return rc;
}

int dk_pwrite_all(int fd, const void *src, size_t n, uint64_t off, int rwf_flags,
                  const struct dk_pwrite_pieces *pieces) {
    return dk_pwrite_all_done(fd, src, n, off, rwf_flags, pieces, NULL);
}

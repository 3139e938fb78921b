/* pwrite until every byte is written: the one loop behind strict mode's apply, the operation log's
 * record writes and the relink's copy (issue 3 review). EINTR is retried (it is not the program's call
 * that was interrupted); a short write continues where it stopped; a write of 0 bytes is -EIO. Goes to
 * the real libc (never through the shim). errno is left as it was found. */
#ifndef DK_COMMON_PWRITE_ALL_H
#define DK_COMMON_PWRITE_ALL_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Optional pieces: before the first call and after each call that wrote something while bytes are left,
 * `next(ctx, off, left, first)` says how many of the `left` bytes still to write at `off` the next calls
 * may take (0 < result <= left; an EINTR retries the same piece); `first` is nonzero the first time. Test
 * builds use it to cut the relink's copy at page boundaries with a crash point between the pieces. */
struct dk_pwrite_pieces {
    uint64_t (*next)(void *ctx, uint64_t off, uint64_t left, int first);
    void *ctx;
};

/* Writes n bytes of src at file offset off of fd: pwrite when rwf_flags is 0, pwritev2(rwf_flags)
 * otherwise (e.g. RWF_DSYNC). pieces may be NULL (one call when the kernel takes everything). Returns 0 or
 * -errno (-EIO for a write of 0 bytes). */
/* In rwf_flags: write at the descriptor's offset (pwritev2's offset -1, which moves it) instead of `off`, which
 * then only names the pieces' place (with RWF_APPEND: where the caller expects the bytes). */
#define DK_PWRITE_AT_POS 0x40000000
int dk_pwrite_all(int fd, const void *src, size_t n, uint64_t off, int rwf_flags,
                  const struct dk_pwrite_pieces *pieces);
/* The same, and *done (when not NULL) the bytes the kernel took before a failure (all n on success): a
 * failure can follow short writes that landed -- a medium filling during the copy -- and a caller that
 * retries must start after them (through an O_APPEND descriptor the kernel would append them again). */
int dk_pwrite_all_done(int fd, const void *src, size_t n, uint64_t off, int rwf_flags,
                       const struct dk_pwrite_pieces *pieces, size_t *done);

/* Cancellation off around a system call the library makes under its own locks (libc's read/write family
 * are cancellation points: a thread cancelled inside would leave the locks held). dk_cancel_off returns the
 * state to hand back to dk_cancel_restore, which keeps errno. */
static inline int dk_cancel_off(void) {
    int was;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
    return was;
}
static inline void dk_cancel_restore(int was) {
    int e = errno;
    pthread_setcancelstate(was, NULL);
    errno = e;
}

#endif

/* read/write family. Served descriptors go to the user-space path; managed-but-unserved ones publish
 * first and pass through; everything else passes straight through. */
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim/shim.h"

/* moves: the call moves the descriptor's offset by what it returns (read, readv, ...). at: a positional
 * write's offset, else -1 (the range a pass-through write tells the library: shim.h dk_pt_end_written). A
 * pending descriptor (opened, not adopted yet: upath/pending.c) passes its first reads through; a write, or
 * a read past those, adopts it here and is served. */
#define SERVE(fd, served_call, real_call, changes, moves, at) SERVE_IF(fd, true, served_call, real_call, changes, moves, at)
/* A change whose number was closed and given again under it this many times goes to the kernel unnamed. */
#define DK_PT_AGAIN_MAX 4
/* A pending descriptor adopted for the call (a write may adopt a file it created without an fstat:
 * upath.c up_adopt_keyless); -1 with errno when refused, in a handler inside a mutex of its thread the
 * adoption takes (upath/pending.c). */
#define ADOPT_OR_FAIL(fd, changes)                                                                  \
    do {                                                                                            \
        int a_ = (changes) ? up_pending_adopt_write(fd) : up_pending_adopt(fd, NULL);               \
        if (DK_UNLIKELY(a_ != 0)) {                                                                 \
            errno = -a_;                                                                            \
            return -1;                                                                              \
        }                                                                                           \
    } while (0)
/* The cancellation point comes before the slot is held: a thread cancelled there names no call (calls.h). */
#define SERVE_IF(fd, cond, served_call, real_call, changes, moves, at) \
    do {                                                 \
        struct up_slot *s_;                              \
        if (DK_LIKELY(up_enabled)) {                     \
            DK_CANCEL_POINT();                           \
            if ((cond) && (s_ = up_serving(fd)) != NULL) { \
            served_:;                                    \
                struct up_slot *s = s_;                  \
                ssize_t sr_ = served_call;               \
                up_served_end();                         \
                return sr_;                              \
            }                                            \
            struct up_fd *p_ = up_fd_pending_entry(fd);  \
            if (DK_UNLIKELY(p_ != NULL)) {               \
                if ((cond) && !(changes) && up_pending_pass(p_)) { \
                    ssize_t r_ = real_call;              \
                    up_pending_passed(p_, r_, moves);    \
                    return r_;                           \
                }                                        \
                ADOPT_OR_FAIL(fd, changes);              \
                if ((cond) && (s_ = up_serving(fd)) != NULL) goto served_; \
            } else if ((cond) && (s_ = up_serving(fd)) != NULL) { \
                goto served_; /* another thread adopted it between the two looks */ \
            }                                            \
            /* a number the library held meanwhile (common/internal_fd.h): the program's again, or closed */ \
            if (DK_UNLIKELY(dk_ifd_settle()) && (cond) && (s_ = up_serving(fd)) != NULL) goto served_; \
            /* a change: named until its fdatasync (shim.h dk_pt_begin_change) */ \
            struct dk_pt pt_ = {DK_PT_KERNEL, NULL};    \
            int again_ = 0;                              \
            if (changes) dk_pt_begin_change(fd, &pt_);   \
            else pt_.how = dk_pt_begin(fd);              \
            /* a write through a vacated number: named, an open giving it waits (upath/vacant.c) */ \
        vacant_:;                                        \
            while ((changes) && !pt_.how && DK_UNLIKELY(up_fd_vacated(fd))) { \
                uint32_t g_;                             \
                int k_ = up_pt_vacant_enter(fd, &g_);    \
                if (k_ > 0) {                            \
                    ssize_t v_;                          \
                    pt_.how = DK_PT_NAMED; /* (for DK_PT_CALL: named, no slot) */ \
                    DK_PT_CALL(&pt_, v_ = real_call);    \
                    return up_pt_vacant_end(fd, v_, g_); \
                }                                        \
                if (k_ == 0) break;                      \
                if ((cond) && (s_ = up_serving(fd)) != NULL) goto served_; \
                dk_pt_begin_change(fd, &pt_);            \
            }                                            \
            /* A reopen made the number pending (lazy adoption) -- or another thread adopted it -- after the \
             * looks above: a managed file now, served or named, never written unsynced (its open marks the \
             * number clean after it is pending, before it is bound: upath/pending.c) */ \
            if ((changes) && !pt_.how && DK_UNLIKELY(up_fd_pending_entry(fd) != NULL || up_fd_slot(fd) != NULL)) { \
                if (up_fd_pending_entry(fd)) ADOPT_OR_FAIL(fd, true); \
                if ((cond) && (s_ = up_serving(fd)) != NULL) goto served_; \
                dk_pt_begin_change(fd, &pt_);            \
                /* closed again meanwhile: vacated, or given again (pending, bound) -- looked at again, a \
                 * few times */                          \
                if (!pt_.how && (up_fd_vacated(fd) || up_fd_pending_entry(fd) != NULL || up_fd_slot(fd) != NULL)) { \
                    if (++again_ < DK_PT_AGAIN_MAX) goto vacant_; \
                    dk_count(DK_C_pt_churn_unnamed, 1);  \
                }                                        \
            }                                            \
            if ((changes) && pt_.how) {                  \
                ssize_t w_;                              \
                DK_PT_CALL(&pt_, w_ = real_call);        \
                return dk_pt_end_written(&pt_, fd, (at), w_); \
            }                                            \
            /* the library went off (exit) since the look above: as below */ \
            if (changes) up_exit_hold(fd);               \
            /* a pread a window overlapped: made again (the window may have held the number) */ \
            return !(changes) && !(moves) ? DK_IFD_RETRY(real_call) : real_call; \
        }                                                \
        /* the library off at exit: another thread's write of a managed file waits (sync, strict) */ \
        if (changes) up_exit_hold(fd);                   \
        return real_call;                                \
    } while (0)

DK_EXPORT ssize_t read(int fd, void *buf, size_t n) {
    SERVE(fd, up_read(s, fd, buf, n), DK_REAL(read)(fd, buf, n), false, true, -1);
}
DK_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    SERVE(fd, up_pread(s, fd, buf, n, off), DK_REAL(pread)(fd, buf, n, off), false, false, -1);
}
DK_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off) {
    SERVE(fd, up_pread(s, fd, buf, n, off), DK_REAL(pread64)(fd, buf, n, off), false, false, -1);
}
DK_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
    if (n > buflen) return DK_REAL(__read_chk)(fd, buf, n, buflen); /* libc reports the overflow */
    SERVE(fd, up_read(s, fd, buf, n), DK_REAL(__read_chk)(fd, buf, n, buflen), false, true, -1);
}
DK_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
    if (n > buflen) return DK_REAL(__pread_chk)(fd, buf, n, off, buflen);
    SERVE(fd, up_pread(s, fd, buf, n, off), DK_REAL(__pread_chk)(fd, buf, n, off, buflen), false, false, -1);
}
DK_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
    if (n > buflen) return DK_REAL(__pread64_chk)(fd, buf, n, off, buflen);
    SERVE(fd, up_pread(s, fd, buf, n, off), DK_REAL(__pread64_chk)(fd, buf, n, off, buflen), false, false, -1);
}
DK_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
    SERVE(fd, up_readv(s, fd, iov, cnt, 0, 0, false), DK_REAL(readv)(fd, iov, cnt), false, true, -1);
}
DK_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    SERVE(fd, up_readv(s, fd, iov, cnt, off, 0, true), DK_REAL(preadv)(fd, iov, cnt, off), false, false, -1);
}
DK_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off) {
    SERVE(fd, up_readv(s, fd, iov, cnt, off, 0, true), DK_REAL(preadv64)(fd, iov, cnt, off), false, false, -1);
}
DK_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
    SERVE_IF(fd, up_rwf_served(fl), up_readv(s, fd, iov, cnt, off, fl, off != -1), DK_REAL(preadv2)(fd, iov, cnt, off, fl), false, off == -1, -1);
}
DK_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
    SERVE_IF(fd, up_rwf_served(fl), up_readv(s, fd, iov, cnt, off, fl, off != -1), DK_REAL(preadv64v2)(fd, iov, cnt, off, fl), false, off == -1, -1);
}

DK_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    SERVE(fd, up_write(s, fd, buf, n), DK_REAL(write)(fd, buf, n), true, true, -1);
}
DK_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    SERVE(fd, up_pwrite(s, fd, buf, n, off), DK_REAL(pwrite)(fd, buf, n, off), true, false, off);
}
DK_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    SERVE(fd, up_pwrite(s, fd, buf, n, off), DK_REAL(pwrite64)(fd, buf, n, off), true, false, off);
}
DK_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    SERVE(fd, up_writev(s, fd, iov, cnt, 0, 0, false), DK_REAL(writev)(fd, iov, cnt), true, true, -1);
}
DK_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    SERVE(fd, up_writev(s, fd, iov, cnt, off, 0, true), DK_REAL(pwritev)(fd, iov, cnt, off), true, false, off);
}
DK_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off) {
    SERVE(fd, up_writev(s, fd, iov, cnt, off, 0, true), DK_REAL(pwritev64)(fd, iov, cnt, off), true, false, off);
}
DK_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
    SERVE_IF(fd, up_rwf_served(fl), up_writev(s, fd, iov, cnt, off, fl, off != -1), DK_REAL(pwritev2)(fd, iov, cnt, off, fl), true, off == -1, (fl & RWF_APPEND) ? -1 : off);
}
DK_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
    SERVE_IF(fd, up_rwf_served(fl), up_writev(s, fd, iov, cnt, off, fl, off != -1), DK_REAL(pwritev64v2)(fd, iov, cnt, off, fl), true, off == -1, (fl & RWF_APPEND) ? -1 : off);
}

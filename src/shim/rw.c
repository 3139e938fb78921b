/* read/write family. Served descriptors go to the user-space path; managed-but-unserved ones publish
 * first and pass through; everything else passes straight through. */
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim/shim.h"

/* A change made after exit turned the library off that up_exit_hold let through (the exiting thread's own, the
 * stdio cookie's): the kernel's call, then made durable (lifecycle.c up_exit_synced). */
#define EXIT_SYNCED(fd, real_call)                       \
    do {                                                 \
        ssize_t x_ = real_call;                          \
        return up_exit_synced(fd, x_, x_ > 0);           \
    } while (0)

/* moves: the call moves the descriptor's offset by what it returns (read, readv, ...). at: a positional
 * write's offset, else -1 (the range a pass-through write tells the library: shim.h dk_pt_end_written). A
 * pending descriptor (opened, not adopted yet: upath/pending.c) passes its first reads through; a write, or
 * a read past those, adopts it here and is served. */
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
/* The cancellation point comes before the slot is held: a thread cancelled there names no call (calls.h). The
 * full path of an entry point (DK_RW: e_, fd's entry or NULL; looked_: NAME_served's look at the slot found it
 * not served -- the kernel's -- so the first look here is not made again: review 24, #9). */
#define SERVE_IF(fd, cond, served_call, real_call, changes, moves, at) \
    do {                                                 \
        struct up_slot *s_;                              \
        if (DK_LIKELY(up_enabled)) {                     \
            if (!looked_) DK_CANCEL_POINT(); /* (else NAME_served's was it) */ \
            if ((cond) && !looked_ && (s_ = up_serving_at(e_, fd)) != NULL) { \
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
            if ((changes) && up_exit_hold(fd)) EXIT_SYNCED(fd, real_call); \
            /* a pread a window overlapped: made again (the window may have held the number) */ \
            return !(changes) && !(moves) ? DK_IFD_RETRY(real_call) : real_call; \
        }                                                \
        /* the library off at exit: another thread's write of a managed file waits (sync, strict); the \
         * exiting thread's own and the stdio cookie's are synced after */ \
        if ((changes) && up_exit_hold(fd)) EXIT_SYNCED(fd, real_call); \
        return real_call;                                \
    } while (0)

#define DK_STRIP(...) __VA_ARGS__
/* An entry point NAME(params) and its full path NAME_full: SERVE_IF with the number's entry e_ (NULL: none).
 * direct: libc's call at once (the _chk variants' overflow, which libc reports). The library off (not
 * initialised, a vfork child, exit): NAME_full, whose SERVE_IF says what then. A number with none of the
 * library's state goes to libc's call at once too -- itself the cancellation point; nothing named or counted
 * before it (shim.h dk_pt_none). A number with a slot is served by NAME_served when it may be, as SERVE_IF's
 * first look does. Anything else -- and a slot that is not served (the kernel's: shared, O_DIRECT, ...; closed
 * while the call waited), past SERVE_IF's first look (looked_: NAME_served made it) -- goes to NAME_full.
 * Separate functions: the full path makes kernel calls under a cleanup handler (a setjmp), and such a function
 * keeps its arguments in memory and saves five registers -- ~20 instructions of every call when they were one;
 * the entry point calls nothing but tail calls, so it saves none. */
#define DK_RW(...) DK_RW_LOOK(up_serving_at(e_, fd), __VA_ARGS__)
/* `look`: NAME_served's look at the slot (a pwrite's may put a lock's size re-read off: upath.c put_off) */
#define DK_RW_LOOK(look, ret, name, params, args, direct, cond, served_call, changes, moves, at)          \
    static __attribute__((noinline)) ret name##_full(DK_STRIP params, struct up_fd *e_, bool looked_) {    \
        SERVE_IF(fd, cond, served_call, DK_REAL(name) args, changes, moves, at);                          \
    }                                                                                                     \
    static __attribute__((noinline)) ret name##_served(DK_STRIP params, struct up_fd *e_) {                \
        if (cond) {                                                                                       \
            DK_CANCEL_POINT();                                                                            \
            struct up_slot *s = look;                                                                     \
            if (s) {                                                                                      \
                ret sr_ = served_call;                                                                    \
                up_served_end();                                                                          \
                return sr_;                                                                               \
            }                                                                                             \
        }                                                                                                 \
        return name##_full(DK_STRIP args, e_, (cond));                                                    \
    }                                                                                                     \
    /* (a call that may be made twice, made again while a window overlapped it: out of the entry point, whose \
     * frame its loop would make every call pay) */                                                      \
    static __attribute__((noinline, unused)) ret name##_retry params { return DK_IFD_RETRY(DK_REAL(name) args); } \
    DK_EXPORT ret name params {                                                                           \
        if (direct) return DK_REAL(name) args;                                                            \
        if (DK_UNLIKELY(!up_enabled)) return name##_full(DK_STRIP args, NULL, false); /* (off: SERVE_IF's way) */ \
        struct up_fd *e_ = up_fd_entry(fd);                                                               \
        if (e_ && __atomic_load_n(&e_->slot, __ATOMIC_ACQUIRE) != NULL) return name##_served(DK_STRIP args, e_); \
        if (dk_pt_none_rest(e_, (changes))) /* (the look above was the first: shim.h) */                  \
            return !(changes) && !(moves) ? name##_retry args : DK_REAL_ON(name) args;                    \
        return name##_full(DK_STRIP args, e_, false);                                                     \
    }

#define DK_RD (int fd, void *buf, size_t n)
#define DK_PRD (int fd, void *buf, size_t n, off_t off)
#define DK_RDV (int fd, const struct iovec *iov, int cnt)
#define DK_PRDV (int fd, const struct iovec *iov, int cnt, off_t off)
#define DK_PRDV2 (int fd, const struct iovec *iov, int cnt, off_t off, int fl)
/* (ret, name, params, args, direct, cond, served_call, changes, moves, at) */
DK_RW(ssize_t, read, DK_RD, (fd, buf, n), false, true, up_read(s, fd, buf, n), false, true, -1)
/* (a pread's look may put a lock's size re-read off: upath.c read_put_off) */
DK_RW_LOOK(up_serving_pread_at(e_, fd, off, n), ssize_t, pread, DK_PRD, (fd, buf, n, off), false, true,
           up_pread(s, fd, buf, n, off), false, false, -1)
DK_RW_LOOK(up_serving_pread_at(e_, fd, off, n), ssize_t, pread64, DK_PRD, (fd, buf, n, off), false, true,
           up_pread(s, fd, buf, n, off), false, false, -1)
DK_RW(ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen), n > buflen, true,
      up_read(s, fd, buf, n), false, true, -1)
DK_RW_LOOK(up_serving_pread_at(e_, fd, off, n), ssize_t, __pread_chk, (int fd, void *buf, size_t n, off_t off,
           size_t buflen), (fd, buf, n, off, buflen), n > buflen, true, up_pread(s, fd, buf, n, off), false, false, -1)
DK_RW_LOOK(up_serving_pread_at(e_, fd, off, n), ssize_t, __pread64_chk, (int fd, void *buf, size_t n, off_t off,
           size_t buflen), (fd, buf, n, off, buflen), n > buflen, true, up_pread(s, fd, buf, n, off), false, false, -1)
DK_RW(ssize_t, readv, DK_RDV, (fd, iov, cnt), false, true, up_readv(s, fd, iov, cnt, 0, 0, false), false, true, -1)
DK_RW(ssize_t, preadv, DK_PRDV, (fd, iov, cnt, off), false, true, up_readv(s, fd, iov, cnt, off, 0, true), false, false, -1)
DK_RW(ssize_t, preadv64, DK_PRDV, (fd, iov, cnt, off), false, true, up_readv(s, fd, iov, cnt, off, 0, true), false, false, -1)
DK_RW(ssize_t, preadv2, DK_PRDV2, (fd, iov, cnt, off, fl), false, up_rwf_served(fl),
      up_readv(s, fd, iov, cnt, off, fl, off != -1), false, off == -1, -1)
DK_RW(ssize_t, preadv64v2, DK_PRDV2, (fd, iov, cnt, off, fl), false, up_rwf_served(fl),
      up_readv(s, fd, iov, cnt, off, fl, off != -1), false, off == -1, -1)

#define DK_WR (int fd, const void *buf, size_t n)
#define DK_PWR (int fd, const void *buf, size_t n, off_t off)
#define DK_WRV (int fd, const struct iovec *iov, int cnt)
#define DK_PWRV (int fd, const struct iovec *iov, int cnt, off_t off)
#define DK_PWRV2 (int fd, const struct iovec *iov, int cnt, off_t off, int fl)
/* (write's look: an O_APPEND descriptor's append may go on with the end an fsync put off: upath.c end_put_off) */
DK_RW_LOOK(up_serving_write_at(e_, fd), ssize_t, write, DK_WR, (fd, buf, n), false, true, up_write(s, fd, buf, n), true,
           true, -1)
DK_RW_LOOK(up_serving_pwrite_at(e_, fd, off, n), ssize_t, pwrite, DK_PWR, (fd, buf, n, off), false, true,
           up_pwrite(s, fd, buf, n, off), true, false, off)
DK_RW_LOOK(up_serving_pwrite_at(e_, fd, off, n), ssize_t, pwrite64, DK_PWR, (fd, buf, n, off), false, true,
           up_pwrite(s, fd, buf, n, off), true, false, off)
DK_RW_LOOK(up_serving_write_at(e_, fd), ssize_t, writev, DK_WRV, (fd, iov, cnt), false, true,
           up_writev(s, fd, iov, cnt, 0, 0, false), true, true, -1)
DK_RW(ssize_t, pwritev, DK_PWRV, (fd, iov, cnt, off), false, true, up_writev(s, fd, iov, cnt, off, 0, true), true, false, off)
DK_RW(ssize_t, pwritev64, DK_PWRV, (fd, iov, cnt, off), false, true, up_writev(s, fd, iov, cnt, off, 0, true), true, false, off)
DK_RW(ssize_t, pwritev2, DK_PWRV2, (fd, iov, cnt, off, fl), false, up_rwf_served(fl),
      up_writev(s, fd, iov, cnt, off, fl, off != -1), true, off == -1, (fl & RWF_APPEND) ? -1 : off)
DK_RW(ssize_t, pwritev64v2, DK_PWRV2, (fd, iov, cnt, off, fl), false, up_rwf_served(fl),
      up_writev(s, fd, iov, cnt, off, fl, off != -1), true, off == -1, (fl & RWF_APPEND) ? -1 : off)

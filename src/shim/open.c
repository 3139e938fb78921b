/* open, openat, creat (+64) and the fortify variants. The kernel always opens (it is the authority for
 * names and permissions); a managed regular file is then adopted by the user-space path. */
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>

#include "common/config.h"
#include "common/userptr.h"
#include "oplog/oplog.h"
#include "shim/shim.h"
#include "upath/atomic_route.h"

/* DAXKIT_ATOMIC: O_TRUNC of a file this process has routed is done by the route after the open (the
 * kernel must not cut the file under the engine's mapping). */
#define DK_ATOMIC_KFLAGS(dirfd, path, flags) \
    (DK_UNLIKELY((flags) & O_TRUNC) && up_enabled ? up_atomic_open_flags(dirfd, path, flags) : (flags))

int dk_after_open(int fd, int flags, int dirfd, const char *path, uint64_t epoch) {
    if (fd < 0 || !up_enabled) return fd;
    up_dirfd_forget(fd); /* the number names a new file now */
    /* A vacated number: the writes in flight through it end first, and calls through it wait for the
     * adoption (upath/fdtab.c: up_fd_opening) */
    struct up_fd *opening = up_fd_opening(fd);
    DK_CRASH_POINT("shim.open.adopting"); /* tests: another thread writes through the number here */
    int rc = up_adopt_epoch_open(fd, flags, dirfd, path, epoch);
    up_fd_opened(fd, opening);
    if (rc) {
        if (opening) up_fd_vacate(fd); /* still vacated for the next open */
        DK_REAL(close)(fd);
        errno = -rc;
        return -1;
    }
    return fd;
}

/* Strict mode: a create is logged before the kernel call and durable (directory fsync) when it returns;
 * an open that truncates checkpoints the file's directory first, so that no record older than the
 * truncate can replay over it after a crash (review 7, finding 9), and (session 26) logs the truncate,
 * holding the strict writes of its root out until the kernel's open is done (up_strict_truncating_open_begin:
 * another thread's write between the checkpoint and the open was replayed over the truncated file). `call`
 * opens with kflags_: the flags for the kernel, decided before that hold (DK_ATOMIC_KFLAGS may look the file
 * table up). */
static bool strict_create(int flags) { return dk_cfg.mode == DK_MODE_STRICT && up_enabled && (flags & O_CREAT); }
static bool strict_trunc(int flags) { return dk_cfg.mode == DK_MODE_STRICT && up_enabled && (flags & O_TRUNC); }
/* The hold makes the kernel's open no cancellation point: a cancellation pending at the call acts here first,
 * as it would at libc's open (one that arrives while the open blocks acts at the next cancellation point). */
static inline void truncating_open_cancel_point(void) { DK_CANCEL_POINT(); }
/* Any mode: an O_TRUNC open of a file open here holds it across the kernel's open as a truncate by name does
 * (upath.c up_truncating_open_enter: another thread's write past the new end saw the old size until the
 * adoption). A name the kernel cannot read is no truncate of ours: the kernel's EFAULT (common/userptr.h). */
#define STRICT_OPEN(dirfd, path, flags, call)                                                       \
    ({                                                                                             \
        int fd_ = -1, cut_rc_ = 0;                                                                 \
        struct up_strict_name cut_ = {0};                                                          \
        struct up_trunc_hold held_ = {0};                                                          \
        bool name_ok_ = !((flags) & O_TRUNC) || !up_enabled || dk_user_str_readable(path);         \
        bool sync_trunc_ = name_ok_ && strict_trunc(flags) && up_strict_before_truncating_open(dirfd, path, &cut_); \
        int kflags_ = DK_ATOMIC_KFLAGS(dirfd, path, flags);                                        \
        bool held_on_ = DK_UNLIKELY((kflags_ & O_TRUNC) != 0) && up_enabled && name_ok_ &&          \
                        (truncating_open_cancel_point(), up_truncating_open_enter(dirfd, path, kflags_, &held_)); \
        if (strict_create(flags) && up_strict_meta_begin(DK_OPLOG_CREATE, dirfd, path, dirfd, NULL)) \
            errno = EIO;                                                                           \
        else if (name_ok_ && strict_trunc(kflags_) && (truncating_open_cancel_point(),             \
                                           cut_rc_ = up_strict_truncating_open_begin(dirfd, path, kflags_, &cut_))) \
            errno = -cut_rc_;                                                                      \
        else {                                                                                     \
            if (held_on_) up_truncate_inode_lock(&held_, cut_.st ? cut_.dev : held_.dev,           \
                                                 cut_.st ? cut_.ino : held_.ino, 0);               \
            fd_ = (call);                                                                          \
            if (held_on_) up_truncating_open_done(&held_, fd_), held_on_ = false; /* (keeps errno) */ \
            if (cut_.st) up_strict_truncate_name_end(&cut_, fd_ >= 0); /* (keeps errno) */        \
            if (fd_ >= 0 && sync_trunc_) up_strict_after_truncating_open(fd_);                     \
            if (fd_ >= 0 && strict_create(flags)) up_strict_meta_end(dirfd, path, dirfd, NULL);    \
        }                                                                                          \
        if (held_on_) up_truncate_inode_done(&held_, false, 0); /* (a refusal before the kernel's open) */ \
        fd_;                                                                                       \
    })

/* The adoption epoch is read before the kernel's open (upath/pending.c). A descriptor the library opened for
 * itself meanwhile may have held the number the kernel would have given: moved down to it (internal_fd.h). */
#define OPENED(call, flags, dirfd, path)                                     \
    ({                                                                       \
        int ofd_ = -1;                                                       \
        if (DK_LIKELY(!up_open_refused_nested(dirfd, path, flags))) {        \
            uint64_t ep_ = up_enabled ? up_epoch_now() : 0;                  \
            uint64_t ifd_ = dk_ifd_before();                                 \
            ofd_ = dk_after_open(dk_ifd_relower((call), ifd_, 0), flags, dirfd, path, ep_); \
        }                                                                    \
        ofd_;                                                                \
    })

#define OPEN_MODE(flags)                      \
    mode_t mode = 0;                          \
    if (DK_OPEN_NEEDS_MODE(flags)) {          \
        va_list ap;                           \
        va_start(ap, flags);                  \
        mode = (mode_t)va_arg(ap, int);       \
        va_end(ap);                           \
    }

DK_EXPORT int open(const char *path, int flags, ...) {
    OPEN_MODE(flags);
    return OPENED(STRICT_OPEN(AT_FDCWD, path, flags, DK_REAL(open)(path, kflags_, mode)), flags, AT_FDCWD, path);
}
DK_EXPORT int open64(const char *path, int flags, ...) {
    OPEN_MODE(flags);
    return OPENED(STRICT_OPEN(AT_FDCWD, path, flags, DK_REAL(open64)(path, kflags_, mode)), flags, AT_FDCWD, path);
}
DK_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags);
    return OPENED(STRICT_OPEN(dirfd, path, flags, DK_REAL(openat)(dirfd, path, kflags_, mode)), flags, dirfd, path);
}
DK_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags);
    return OPENED(STRICT_OPEN(dirfd, path, flags, DK_REAL(openat64)(dirfd, path, kflags_, mode)), flags, dirfd, path);
}
DK_EXPORT int creat(const char *path, mode_t mode) {
    return OPENED(STRICT_OPEN(AT_FDCWD, path, O_CREAT | O_TRUNC, ((kflags_ & O_TRUNC) ? DK_REAL(creat)(path, mode) : DK_REAL(open)(path, O_CREAT | O_WRONLY, mode))), O_CREAT | O_WRONLY | O_TRUNC, AT_FDCWD, path);
}
DK_EXPORT int creat64(const char *path, mode_t mode) {
    return OPENED(STRICT_OPEN(AT_FDCWD, path, O_CREAT | O_TRUNC, ((kflags_ & O_TRUNC) ? DK_REAL(creat64)(path, mode) : DK_REAL(open64)(path, O_CREAT | O_WRONLY, mode))), O_CREAT | O_WRONLY | O_TRUNC, AT_FDCWD, path);
}
DK_EXPORT int __open_2(const char *path, int flags) {
    return OPENED(STRICT_OPEN(AT_FDCWD, path, flags, DK_REAL(__open_2)(path, kflags_)), flags, AT_FDCWD, path);
}
DK_EXPORT int __open64_2(const char *path, int flags) {
    return OPENED(STRICT_OPEN(AT_FDCWD, path, flags, DK_REAL(__open64_2)(path, kflags_)), flags, AT_FDCWD, path);
}
DK_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    return OPENED(STRICT_OPEN(dirfd, path, flags, DK_REAL(__openat_2)(dirfd, path, kflags_)), flags, dirfd, path);
}
DK_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    return OPENED(STRICT_OPEN(dirfd, path, flags, DK_REAL(__openat64_2)(dirfd, path, kflags_)), flags, dirfd, path);
}

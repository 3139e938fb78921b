/* Attribute calls -- times, mode, owner, extended attributes -- on managed files: the file's unpublished
 * appends go in first. Through the kernel a program's write is in the file before its futimens; under daxkit
 * it may still be staged, and the publish at close (a pwrite, or the cut of an extension) would set mtime
 * again after the program set it (tar xf: every extracted file dated now), clear a set-user-ID bit fchmod
 * had just set, and remove a file capability (security.capability) fsetxattr had just set (every write
 * drops it, also for root: review 9, finding 6). The call itself always goes to the kernel. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <utime.h>

#include "common/userptr.h"
#include "shim/shim.h"

static inline void before_fd(int fd) {
    if (up_enabled) up_publish_before_attr_fd(fd); /* a pending descriptor (lazy adoption) holds no appends */
}
static inline void before_path(int dirfd, const char *path, int atflags) {
    if (up_enabled) up_publish_before_attr_path(dirfd, path, atflags);
}
/* utimensat(fd, NULL, ...) is futimens (a Linux extension); AT_EMPTY_PATH with "" names dirfd itself. The
 * path's first byte is read only with AT_EMPTY_PATH, and then only if the kernel could (common/userptr.h: a bad
 * pointer is the kernel's EFAULT, not a SIGSEGV here); otherwise the kernel reads it (before_path's fstatat). */
static inline void before_at(int dirfd, const char *path, int fl) {
    if (!path || ((fl & AT_EMPTY_PATH) && dk_user_str_readable(path) && !path[0])) before_fd(dirfd);
    else before_path(dirfd, path, fl);
}

DK_EXPORT int futimens(int fd, const struct timespec t[2]) {
    before_fd(fd);
    return DK_REAL(futimens)(fd, t);
}
DK_EXPORT int utimensat(int dirfd, const char *path, const struct timespec t[2], int fl) {
    before_at(dirfd, path, fl);
    return DK_REAL(utimensat)(dirfd, path, t, fl);
}
DK_EXPORT int futimes(int fd, const struct timeval tv[2]) {
    before_fd(fd);
    return DK_REAL(futimes)(fd, tv);
}
DK_EXPORT int futimesat(int dirfd, const char *path, const struct timeval tv[2]) {
    before_at(dirfd, path, 0);
    return DK_REAL(futimesat)(dirfd, path, tv);
}
DK_EXPORT int utimes(const char *path, const struct timeval tv[2]) {
    before_path(AT_FDCWD, path, 0);
    return DK_REAL(utimes)(path, tv);
}
DK_EXPORT int lutimes(const char *path, const struct timeval tv[2]) {
    before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
    return DK_REAL(lutimes)(path, tv);
}
DK_EXPORT int utime(const char *path, const struct utimbuf *t) {
    before_path(AT_FDCWD, path, 0);
    return DK_REAL(utime)(path, t);
}

DK_EXPORT int fchmod(int fd, mode_t mode) {
    before_fd(fd);
    return DK_REAL(fchmod)(fd, mode);
}
DK_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int fl) {
    before_at(dirfd, path, fl);
    return DK_REAL(fchmodat)(dirfd, path, mode, fl);
}
DK_EXPORT int chmod(const char *path, mode_t mode) {
    before_path(AT_FDCWD, path, 0);
    return DK_REAL(chmod)(path, mode);
}
DK_EXPORT int fchown(int fd, uid_t uid, gid_t gid) {
    before_fd(fd);
    return DK_REAL(fchown)(fd, uid, gid);
}
DK_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int fl) {
    before_at(dirfd, path, fl);
    return DK_REAL(fchownat)(dirfd, path, uid, gid, fl);
}
DK_EXPORT int chown(const char *path, uid_t uid, gid_t gid) {
    before_path(AT_FDCWD, path, 0);
    return DK_REAL(chown)(path, uid, gid);
}
DK_EXPORT int lchown(const char *path, uid_t uid, gid_t gid) {
    before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
    return DK_REAL(lchown)(path, uid, gid);
}

/* Extended attributes, every name (a write removes security.capability; publishing first keeps any
 * attribute set after the data as through the kernel). */
DK_EXPORT int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags) {
    before_fd(fd);
    return DK_REAL(fsetxattr)(fd, name, value, size, flags);
}
DK_EXPORT int setxattr(const char *path, const char *name, const void *value, size_t size, int flags) {
    before_path(AT_FDCWD, path, 0);
    return DK_REAL(setxattr)(path, name, value, size, flags);
}
DK_EXPORT int lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags) {
    before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
    return DK_REAL(lsetxattr)(path, name, value, size, flags);
}
DK_EXPORT int fremovexattr(int fd, const char *name) {
    before_fd(fd);
    return DK_REAL(fremovexattr)(fd, name);
}
DK_EXPORT int removexattr(const char *path, const char *name) {
    before_path(AT_FDCWD, path, 0);
    return DK_REAL(removexattr)(path, name);
}
DK_EXPORT int lremovexattr(const char *path, const char *name) {
    before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
    return DK_REAL(lremovexattr)(path, name);
}

#include "common/area.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/internal_fd.h"
#include "shim/libc.h"

bool dk_area_trusted(const struct stat *a, const struct stat *parent) {
    bool owner_ok = a->st_uid == geteuid() || a->st_uid == 0 || a->st_uid == parent->st_uid;
    bool removals_ok = !(a->st_mode & (S_IWGRP | S_IWOTH)) || (a->st_mode & S_ISVTX);
    return S_ISDIR(a->st_mode) && owner_ok && removals_ok;
}

int dk_area_mkdir(int parent_fd, const char *name) {
    const struct dk_libc *c = dk_libc();
    struct stat ps, as;
    if (c->fstat(parent_fd, &ps) != 0) return -errno;
    mode_t want = (ps.st_mode & S_IWOTH) ? 01777 : (ps.st_mode & S_IWGRP) ? 01770 : 0700;
    if (c->mkdirat(parent_fd, name, want) != 0 && errno != EEXIST) return -errno;
    int afd = dk_ifd_openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (afd < 0) return 0; /* the caller's open says why */
    int rc = 0;
    if (c->fstat(afd, &as) == 0) {
        /* mkdir applied the umask; an older area may be 0700: set the mode (and the directory's group) on ours */
        if (want != 0700 && as.st_uid == geteuid()) {
            if (want == 01770 && as.st_gid != ps.st_gid) c->fchown(afd, (uid_t)-1, ps.st_gid);
            if ((as.st_mode & 07777) != want && c->fchmod(afd, want) == 0) as.st_mode = (as.st_mode & ~07777u) | want;
        }
        if (!dk_area_trusted(&as, &ps)) rc = -EPERM;
    }
    c->close(afd);
    return rc;
}

bool dk_area_privileged(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) != 0) return geteuid() == 0;
    unsigned need = (1u << CAP_DAC_OVERRIDE) | (1u << CAP_FOWNER); /* both below 32 */
    return (d[0].effective & need) == need;
}

bool dk_area_user_may_write(int fd, const struct stat *st, const struct stat *by) {
    if (!S_ISREG(st->st_mode)) return false;
    bool w = (st->st_uid == by->st_uid && (st->st_mode & S_IWUSR)) || (st->st_mode & S_IWOTH) ||
             (st->st_gid == by->st_gid && (st->st_mode & S_IWGRP));
    if (!w) return false;
    /* named ACL entries may deny that user what the mode bits show */
    return fgetxattr(fd, "system.posix_acl_access", NULL, 0) < 0 && (errno == ENODATA || errno == ENOTSUP);
}

/* One line of /proc/locks ("1: FLOCK  ADVISORY  WRITE 552 00:2e:1234 0 EOF"; a waiter's has "->" after
 * the number): a holder's lock marks its file held. */
static void locks_line(const char *line, const dev_t *dev, const ino_t *ino, int n, bool *held) {
    char kind[8];
    unsigned maj, min;
    unsigned long long i;
    if (sscanf(line, "%*d: %7s", kind) != 1 || !strcmp(kind, "->")) return;
    if (sscanf(line, "%*d: %*s %*s %*s %*s %x:%x:%llu", &maj, &min, &i) != 3) return;
    for (int k = 0; k < n; k++)
        if (ino[k] == (ino_t)i && major(dev[k]) == maj && minor(dev[k]) == min) held[k] = true;
}

bool dk_area_locked(const dev_t *dev, const ino_t *ino, int n, bool *held) {
    const struct dk_libc *c = dk_libc();
    for (int k = 0; k < n; k++) held[k] = false;
    int fd = dk_ifd_openat(AT_FDCWD, "/proc/locks", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return false;
    char buf[8192];
    size_t have = 0;
    bool ok = true;
    for (;;) {
        ssize_t got = c->read(fd, buf + have, sizeof buf - 1 - have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) ok = false;
        if (got <= 0) break;
        have += (size_t)got;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            locks_line(line, dev, ino, n, held);
            line = nl + 1;
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) have = 0; /* no line is that long */
    }
    c->close(fd);
    return ok;
}

#include "common/area.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "shim/libc.h"

int dk_area_mkdir(int parent_fd, const char *name) {
    const struct dk_libc *c = dk_libc();
    struct stat ps, as;
    if (c->fstat(parent_fd, &ps) != 0) return -errno;
    mode_t want = (ps.st_mode & S_IWOTH) ? 01777 : (ps.st_mode & S_IWGRP) ? 01770 : 0700;
    if (c->mkdirat(parent_fd, name, want) != 0 && errno != EEXIST) return -errno;
    if (want == 0700) return 0;
    /* mkdir applied the umask; an older area may be 0700: set the mode (and the directory's group) on ours */
    int afd = c->openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (afd < 0) return 0; /* the caller's open says why */
    if (c->fstat(afd, &as) == 0 && as.st_uid == geteuid()) {
        if (want == 01770 && as.st_gid != ps.st_gid) c->fchown(afd, (uid_t)-1, ps.st_gid);
        if ((as.st_mode & 07777) != want) c->fchmod(afd, want);
    }
    c->close(afd);
    return 0;
}

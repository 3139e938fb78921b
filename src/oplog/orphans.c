/* Finding logs whose owner is gone: the owner holds flock(LOCK_EX) for the life of its log, so a log whose
 * lock we can take has no owner. Never a pid guess (pids are reused). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/area.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "oplog/oplog.h"
#include "shim/libc.h"

enum name_kind { NAME_OTHER, NAME_LOG, NAME_TMP, NAME_MARKS };

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static enum name_kind classify(const char *name, const char *tag) {
    if (tag) {
        size_t t = strlen(tag);
        if (strncmp(name, tag, t) != 0 || name[t] != '.') return NAME_OTHER;
    }
    return ends_with(name, ".log") ? NAME_LOG : ends_with(name, ".tmp") ? NAME_TMP : ends_with(name, ".done") ? NAME_MARKS
                                                                                                  : NAME_OTHER;
}

/* Opens and locks `name` without blocking; returns the fd when the lock was free and the name still refers
 * to the file we locked (a recoverer that finished first may have unlinked it), else -1. */
static int lock_if_orphan(int dirfd, const char *name) {
    const struct dk_libc *c = dk_libc();
    struct stat a, b;
    /* Another user's log is that user's to replay, or a privileged process's (common/area.h: a shared
     * directory's area holds every user's; the replay checks that user's rights on each file); looked at
     * before the open, which would block on a FIFO planted there. */
    if (c->fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(b.st_mode) || !dk_area_may_recover(&b))
        return -1;
    int fd = dk_ifd_openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (c->flock(fd, LOCK_EX | LOCK_NB) != 0 || c->fstat(fd, &a) != 0 ||
        c->fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev ||
        !S_ISREG(a.st_mode)) {
        c->close(fd);
        return -1;
    }
    return fd;
}

/* Unlinks <name>.done when <name>.log does not exist. An owner makes its marks after its log's name and
 * removes them after it, so a live log's marks always have their log. */
static void remove_stray_marks(int dirfd, const char *name) {
    const struct dk_libc *c = dk_libc();
    char log[NAME_MAX + 1];
    struct stat st;
    size_t n = strlen(name) - 5; /* ".done" */
    if (n + 5 > NAME_MAX) return;
    snprintf(log, sizeof log, "%.*s.log", (int)n, name);
    if (c->fstatat(dirfd, log, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) return;
    if (c->fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && dk_area_file_ours(&st))
        c->unlinkat(dirfd, name, 0);
}

int dk_oplog_find_orphans(const char *dir, const char *tag, dk_oplog_orphan_fn cb, void *ctx) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    int dirfd = dk_ifd_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dirfd < 0) {
        int rc = -errno;
        DK_ERRNO_RESTORE;
        return rc;
    }
    int scanfd = c->fcntl(dirfd, F_DUPFD_CLOEXEC, dk_ifd_floor()); /* fdopendir owns this one */
    DIR *d = scanfd >= 0 ? fdopendir(scanfd) : NULL;
    if (!d) {
        int rc = -errno;
        if (scanfd >= 0) c->close(scanfd);
        c->close(dirfd);
        DK_ERRNO_RESTORE;
        return rc;
    }
    int found = 0, rc = 0;
    struct dirent *e;
    while (rc >= 0 && (e = c->readdir(d)) != NULL) {
        enum name_kind k = classify(e->d_name, tag);
        if (k == NAME_OTHER) continue;
        if ((k == NAME_LOG || k == NAME_TMP) && dk_oplog_parked_name(e->d_name)) continue; /* no record: for reuse */
        if (k == NAME_MARKS) { /* completion marks whose log is gone (a removal cut short): no one's */
            remove_stray_marks(dirfd, e->d_name);
            continue;
        }
        int fd = lock_if_orphan(dirfd, e->d_name);
        if (fd < 0) continue;
        if (k == NAME_TMP) {
            DK_CRASH_POINT("oplog.orphans.tmp_locked");
            c->unlinkat(dirfd, e->d_name, 0); /* never published: it holds no record */
        } else {
            char path[PATH_MAX];
            DK_CRASH_POINT("oplog.orphans.locked");
            if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) {
                int r = cb ? cb(path, ctx) : 0;
                if (r < 0) rc = r;
                else found++;
            }
        }
        c->close(fd); /* releases the lock, after the callback finished with the log */
    }
    closedir(d);
    c->close(dirfd);
    DK_ERRNO_RESTORE;
    return rc < 0 ? rc : found;
}

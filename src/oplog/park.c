/* Parked logs: a cleanly finished owner's log, kept for a later process instead of removed (oplog.h,
 * dk_oplog_park / dk_oplog_adopt; the argument: docs/oplog.md "Parked logs").
 *
 * A new log costs its creation and the first touch of its first 2 MiB -- on a huge-page tmpfs one huge page
 * cleared by the kernel, ~0.5-0.7 ms of a short process's CPU (session 29). A parked log has its blocks and
 * pages already. What makes the reuse safe is what makes a checkpoint's reuse safe: the generation. A parked
 * log holds no valid record (its owner's last generation was started after everything was applied, and no
 * record was written under it), every line in the file carries a generation no higher than the header's in
 * force (headers only grow, and a line is written only under a persisted header of its generation), and the
 * adopter persists generation + 1 before its first record: no line written before the adoption is ever valid
 * again -- the zeros of a fresh file are replaced by "an older generation", as they are at every reset. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/mapflags.h"
#include "oplog/internal.h"
#include "shim/libc.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

#ifdef DAXKIT_TEST_BUILD
/* Tests: the adopter starts at generation 1, as for a new (zeroed) file -- the bug under test: the header in force
 * stays the parked one's (or an old generation's lines become valid) and the adopter's records are not recovered.
 * Also DAXKIT_TEST_ADOPT_RESTART=1 in the environment (shell tests' negative control). */
int dk_oplog_test_adopt_restart;
#endif

bool dk_oplog_parked_name(const char *name) {
    return strncmp(name, DK_OPLOG_PARKED_PREFIX, sizeof DK_OPLOG_PARKED_PREFIX - 1) == 0;
}

/* The directory of `path` opened (an internal descriptor), its base name in *base; -1 (errno) on failure. */
static int dir_of(const char *path, const char **base) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof dir) {
        errno = EINVAL;
        return -1;
    }
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = 0;
    *base = slash + 1;
    return dk_ifd_openat(AT_FDCWD, slash == path ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

int dk_oplog_park(struct dk_oplog *log, const char *parked_name) {
    if (log->persist != OPLOG_PERSIST_FLUSH || log->generation >= UINT32_MAX - 1 || !dk_oplog_parked_name(parked_name) ||
        strchr(parked_name, '/'))
        return -EOPNOTSUPP;
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    /* No valid record from here on: the generation in force has none (a reset persists before it returns). */
    int rc = dk_oplog_lines_used(log) ? dk_oplog_reset(log) : 0;
    /* A parked log is never recovered: refuse one a record could still be in (an append racing the caller). */
    if (rc == 0 && dk_oplog_lines_used(log) != 0) rc = -EBUSY;
    /* Kept: the first allocation step, what a short process uses; the rest of the file's memory goes back (a parked
     * log holds no record: nothing past it is ever read). Best effort. */
    if (rc == 0 && log->map_bytes > DK_HUGE_BYTES)
        (void)c->fallocate(log->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, DK_HUGE_BYTES,
                           (off_t)(log->map_bytes - DK_HUGE_BYTES));
    const char *base;
    int dirfd = rc == 0 ? dir_of(log->path, &base) : -1;
    if (rc == 0 && dirfd < 0) rc = -errno;
    DK_CRASH_POINT("oplog.park.before_rename");
    if (rc == 0 && c->renameat2(dirfd, base, dirfd, parked_name, RENAME_NOREPLACE) != 0) rc = -errno;
    if (rc == 0) {
        /* The marks go (a later owner makes its own: their words are of this log's generations, which only the
         * log's header bounds, and a fresh marks file costs little -- marks.c); the log keeps its flock until
         * the caller closes it or the process ends. */
        char mpath[PATH_MAX + 8];
        if (log->marks && dk_oplog_marks_path(log->path, mpath, sizeof mpath)) c->unlink(mpath);
        char *slash = strrchr(log->path, '/');
        snprintf(slash + 1, sizeof log->path - (size_t)(slash + 1 - log->path), "%s", parked_name);
        DK_CRASH_POINT("oplog.park.renamed");
    }
    if (dirfd >= 0) c->close(dirfd);
    DK_ERRNO_RESTORE;
    return rc;
}

/* Opens and locks the parked log `name` in dirfd: its descriptor, or -errno (-ENOENT none, -EBUSY locked or not
 * one this process may take, -ESTALE not adoptable: removed). *st gets its stat. */
static int take(int dirfd, const char *name, size_t bytes, struct stat *st) {
    const struct dk_libc *c = dk_libc();
    int fd = dk_ifd_openat(dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return errno == ENOENT ? -ENOENT : -EBUSY;
    struct stat b;
    if (c->flock(fd, LOCK_EX | LOCK_NB) != 0 || c->fstat(fd, st) != 0 || !S_ISREG(st->st_mode) ||
        st->st_uid != geteuid() || c->fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || b.st_ino != st->st_ino ||
        b.st_dev != st->st_dev) {
        c->close(fd);
        return -EBUSY; /* in use (its parker is still ending, or another adopter has it), or not ours */
    }
    if ((size_t)st->st_size != bytes) { /* another size of log (DAXKIT_STRICT_LOG_BYTES): no record, removed */
        c->unlinkat(dirfd, name, 0);
        c->close(fd);
        return -ESTALE;
    }
    return fd;
}

int dk_oplog_adopt(const char *dir, const char *parked_name, const char *tag, size_t bytes,
                   int (*before_rename)(const char *log_name, void *ctx), void *ctx, struct dk_oplog **log_out) {
    bytes = dk_round_down(bytes, DK_OPLOG_LINE_BYTES);
    if (!log_out || !oplog_args_ok(dir, tag, bytes) || !dk_oplog_parked_name(parked_name)) return -EINVAL;
    *log_out = NULL;
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    uint64_t capacity = bytes / DK_OPLOG_LINE_BYTES - DK_OPLOG_HEADER_LINES;
    int dirfd = dk_ifd_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dirfd < 0) {
        int rc = -errno;
        DK_ERRNO_RESTORE;
        return rc;
    }
    struct dk_oplog *log = NULL;
    void *m = MAP_FAILED;
    int map_sync, fd = -1, rc = 0;
    char name[64];
    struct stat st;
    /* A page-cache log's records are pwrites and its allocation zero-writes: not parked, not adopted. */
    if (oplog_persist_for(dirfd, &map_sync) != OPLOG_PERSIST_FLUSH) rc = -EOPNOTSUPP;
    if (rc == 0) rc = fd = take(dirfd, parked_name, bytes, &st);
    if (rc >= 0) {
        rc = 0;
        if (map_sync) m = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
        if (m == MAP_FAILED) m = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) rc = -errno;
    }
    uint64_t cap = 0, area_dev = 0;
    uint32_t gen = 0;
    if (rc == 0) {
        gen = oplog_image_generation(m, bytes, &cap, &area_dev);
        if (gen == 0 || cap != capacity || gen >= UINT32_MAX - 1) { /* not one this code parked: no record of ours */
            c->unlinkat(dirfd, parked_name, 0);
            rc = -ESTALE;
        }
    }
    if (rc == 0) rc = oplog_free_name(dirfd, tag, (int)c->getpid(), name, sizeof name);
    if (rc == 0 && before_rename) rc = before_rename(name, ctx);
    DK_CRASH_POINT("oplog.adopt.before_rename");
    if (rc == 0 && c->renameat2(dirfd, parked_name, dirfd, name, RENAME_NOREPLACE) != 0) rc = -errno;
    /* The name durable before any record of ours (as dk_oplog_open's publish): a parked name is never recovered,
     * so a record under it after a power loss would be lost. */
    if (rc == 0 && c->fsync(dirfd) != 0) rc = -errno;
    DK_CRASH_POINT("oplog.adopt.renamed");
    if (rc == 0 && !(log = oplog_new(capacity))) rc = -ENOMEM;
    if (rc == 0) {
        log->persist = OPLOG_PERSIST_FLUSH;
        log->creator_pid = (int)c->getpid();
        log->fd = fd;
        log->area_dev = (uint64_t)st.st_dev;
        log->map_bytes = bytes;
        log->headers = m;
        log->records = (struct oplog_line *)((char *)m + DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES);
        snprintf(log->path, sizeof log->path, "%s/%s", dir, name);
        /* The first step's blocks and pages are there: fallocate and populate find them (no clearing). */
        rc = oplog_allocate(log, DK_MIN(log->capacity_lines, OPLOG_ALLOCATE_LINES - DK_OPLOG_HEADER_LINES));
    }
    uint32_t next = gen + 1;
#ifdef DAXKIT_TEST_BUILD
    if (dk_oplog_test_adopt_restart || getenv("DAXKIT_TEST_ADOPT_RESTART")) next = 1;
#endif
    /* Every line in the file is of generation <= gen: from here on none of them is valid. */
    if (rc == 0) rc = oplog_write_header(log, next, tag);
    if (rc == 0) {
        log->generation = next;
        __atomic_store_n(&log->tail_lines, log->first_slot, __ATOMIC_RELEASE);
        DK_CRASH_POINT("oplog.adopt.done");
        *log_out = log;
    } else {
        if (log) {
            pthread_mutex_destroy(&log->grow_mu);
            free(log);
        }
        if (m != MAP_FAILED) c->munmap(m, bytes);
        if (fd >= 0) c->close(fd); /* (renamed already: an orphan without a record, removed by the next recovery) */
    }
    c->close(dirfd);
    DK_ERRNO_RESTORE;
    return rc;
}

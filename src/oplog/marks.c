/* Completion marks of an operation log (oplog.h: dk_oplog_mark_done; docs/oplog.md "Completion marks").
 *
 * <name>.done next to <name>.log: a header line (format.h: struct oplog_marks_header) binding it to the log,
 * this boot and, where the kernel can name it for good, the log's mount; then one 32-bit word per record
 * slot. A caller marks a record after its operation is applied by one plain store of the record's
 * generation into the slot's word: no flush, no fence, no system call. The marks are for a recoverer of
 * the same boot and mount, for which a process's death loses no store -- its stores are in memory or the
 * page cache, as the applied operations are. A power loss or a remount can lose applied bytes and keep
 * marks (or the reverse): a recoverer of another boot or mount ignores every mark. So a log on the page
 * cache keeps marks only where the mount has a unique id (statx STATX_MNT_ID_UNIQUE, Linux 6.8: mount
 * ids of older kernels are reused after an unmount); on a flush medium (DAX, tmpfs) the boot alone decides
 * (a DAX store survives an unmount; tmpfs loses the log with the mount). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/boot_id.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "oplog/internal.h"
#include "shim/libc.h"

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U /* Linux 6.8: stx_mnt_id is the mount's 64-bit id, never reused */
#endif

bool dk_oplog_marks_path(const char *log_path, char *out, size_t cap) {
    size_t n = strlen(log_path);
    if (n < 4 || strcmp(log_path + n - 4, ".log") != 0 || n + 1 >= cap) return false;
    memcpy(out, log_path, n - 4);
    memcpy(out + n - 4, ".done", 6);
    return true;
}

/* The log's mount id if the kernel gives one never reused (*kind UNIQUE), else *kind NONE. */
static uint64_t mount_id_of(int fd, uint16_t *kind) {
    struct statx sx;
    *kind = OPLOG_MARKS_MOUNT_NONE;
    if (dk_libc()->statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE, &sx) != 0 || !(sx.stx_mask & STATX_MNT_ID_UNIQUE))
        return 0;
    *kind = OPLOG_MARKS_MOUNT_UNIQUE;
    return sx.stx_mnt_id;
}

/* Allocates [lo, hi) of the marks file (mapped at base) so a store there cannot fault with SIGBUS on a full
 * medium: MADV_POPULATE_WRITE (Linux 5.14; an error, not a signal, when there is no room), else fallocate and a
 * best-effort populate. */
static bool marks_populate(const struct dk_oplog *log, int fd, void *base, uint64_t lo, uint64_t hi) {
    (void)log;
    const struct dk_libc *c = dk_libc();
    uintptr_t a = dk_round_down((uintptr_t)base + lo, DK_PAGE_BYTES), b = dk_round_up((uintptr_t)base + hi, DK_PAGE_BYTES);
    if (c->madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0) return true;
    if (errno != EINVAL) return false;
    if (c->fallocate(fd, 0, (off_t)lo, (off_t)(hi - lo)) != 0) return false;
    return true;
}

void oplog_marks_open(struct dk_oplog *log, int dirfd, const char *name) {
    const struct dk_libc *c = dk_libc();
    struct oplog_marks_header h = {.magic = OPLOG_MARKS_MAGIC, .version = OPLOG_MARKS_VERSION};
    char mname[80];
    struct stat st;
    if (!dk_boot_id(h.boot_id) || c->fstat(log->fd, &st) != 0) return;
    h.mount_id = mount_id_of(log->fd, &h.mount_kind);
    if (h.mount_kind == OPLOG_MARKS_MOUNT_NONE && log->persist == OPLOG_PERSIST_PWRITE) return;
    if (!dk_oplog_marks_path(name, mname, sizeof mname)) return;
    h.log_dev = (uint64_t)st.st_dev, h.log_ino = (uint64_t)st.st_ino;
    h.crc = oplog_marks_header_crc(&h);
    DK_ERRNO_SAVE;
    size_t bytes = OPLOG_MARKS_OFFSET + (size_t)log->capacity_lines * sizeof(uint32_t);
    c->unlinkat(dirfd, mname, 0); /* a file left by a recovery cut short: a fresh one */
    int fd = dk_ifd_openat(dirfd, mname, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    void *m = MAP_FAILED;
    if (fd >= 0 && c->ftruncate(fd, (off_t)bytes) == 0)
        m = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    /* The header's page and the marks as they are allocated are 4 KiB pages, written through the mapping: a
     * pwrite of the header (or a fallocate) on a huge-page tmpfs took a 2 MiB page for the file's first 132
     * KiB and cleared it, ~0.4-0.7 ms of every strict process's CPU (session 29; MADV_NOHUGEPAGE keeps faults
     * and populates of this mapping to small pages, as sizerec.c's). */
    if (m != MAP_FAILED) {
        (void)c->madvise(m, bytes, MADV_NOHUGEPAGE);
        if (!marks_populate(log, fd, m, 0, DK_PAGE_BYTES)) {
            c->munmap(m, bytes);
            m = MAP_FAILED;
        }
    }
    if (m == MAP_FAILED) {
        if (fd >= 0) {
            c->unlinkat(dirfd, mname, 0);
            c->close(fd);
        }
        DK_ERRNO_RESTORE;
        return;
    }
    memcpy(m, &h, sizeof h); /* (the rest of the line: zero) */
    log->marks = (uint32_t *)((char *)m + OPLOG_MARKS_OFFSET);
    log->marks_map_bytes = bytes - OPLOG_MARKS_OFFSET;
    log->marks_fd = fd;
    log->marks_lines = 0;
    oplog_marks_allocate(log, log->allocated_lines);
    DK_ERRNO_RESTORE;
}

void dk_oplog_start_marks(struct dk_oplog *log) {
    if (log->marks) return;
    DK_ERRNO_SAVE;
    char dir[PATH_MAX];
    const char *slash = strrchr(log->path, '/');
    int dirfd = -1;
    if (slash && (size_t)(slash - log->path) < sizeof dir) {
        memcpy(dir, log->path, (size_t)(slash - log->path));
        dir[slash - log->path] = 0;
        dirfd = dk_ifd_openat(AT_FDCWD, slash == log->path ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    }
    if (dirfd >= 0) {
        pthread_mutex_lock(&log->grow_mu); /* oplog_marks_allocate's callers hold it */
        oplog_marks_open(log, dirfd, slash + 1);
        pthread_mutex_unlock(&log->grow_mu);
        dk_libc()->close(dirfd);
    }
    DK_ERRNO_RESTORE;
}

void oplog_marks_allocate(struct dk_oplog *log, uint64_t end_lines) {
    if (!log->marks) return;
    uint64_t from = __atomic_load_n(&log->marks_lines, __ATOMIC_RELAXED);
    if (end_lines <= from) return;
    const struct dk_libc *c = dk_libc();
    DK_ERRNO_SAVE;
    /* Allocated before a store can reach them: a store into a hole of a full medium would be SIGBUS. */
    uint64_t lo = from * sizeof(uint32_t), hi = end_lines * sizeof(uint32_t);
    char *base = (char *)log->marks - OPLOG_MARKS_OFFSET;
    if (marks_populate(log, log->marks_fd, base, OPLOG_MARKS_OFFSET + lo, OPLOG_MARKS_OFFSET + hi))
        __atomic_store_n(&log->marks_lines, end_lines, __ATOMIC_RELEASE);
    (void)c;
    DK_ERRNO_RESTORE;
}

void dk_oplog_mark_done(struct dk_oplog *log, uint64_t seq) {
    uint64_t slot = (uint32_t)seq;
    if (log->marks && slot < __atomic_load_n(&log->marks_lines, __ATOMIC_ACQUIRE))
        __atomic_store_n(&log->marks[slot], (uint32_t)(seq >> 32), __ATOMIC_RELAXED);
}

bool dk_oplog_has_marks(const struct dk_oplog *log) { return log->marks != NULL; }

void oplog_marks_close(struct dk_oplog *log) {
    if (!log->marks) return;
    dk_libc()->munmap((char *)log->marks - OPLOG_MARKS_OFFSET, log->marks_map_bytes + OPLOG_MARKS_OFFSET);
    if (log->close_fd) log->close_fd(log->marks_fd);
    else dk_libc()->close(log->marks_fd);
    log->marks = NULL, log->marks_fd = -1;
}

int dk_oplog_unlink(const struct dk_oplog *log) {
    DK_ERRNO_SAVE;
    char mpath[PATH_MAX + 8];
    int rc = dk_libc()->unlink(log->path) == 0 ? 0 : -errno;
    if (log->marks && dk_oplog_marks_path(log->path, mpath, sizeof mpath)) dk_libc()->unlink(mpath);
    DK_ERRNO_RESTORE;
    return rc;
}

int oplog_marks_load(const char *path, int log_fd, uint64_t capacity, uint32_t **out) {
    const struct dk_libc *c = dk_libc();
    *out = NULL;
    char mpath[PATH_MAX + 8];
    if (!dk_oplog_marks_path(path, mpath, sizeof mpath)) return 0;
    DK_ERRNO_SAVE;
    int fd = dk_ifd_openat(AT_FDCWD, mpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    struct stat ms = {0}, ls;
    struct oplog_marks_header h;
    unsigned char line[DK_OPLOG_LINE_BYTES];
    uint8_t boot[16];
    uint16_t kind;
    /* The log's user's (a privileged recovery replays other users' logs: common/area.h). */
    bool ok = fd >= 0 && c->fstat(fd, &ms) == 0 && S_ISREG(ms.st_mode) && c->fstat(log_fd, &ls) == 0 &&
              ms.st_uid == ls.st_uid && c->pread(fd, line, sizeof line, 0) == (ssize_t)sizeof line;
    if (ok) {
        memcpy(&h, line, sizeof h);
        ok = h.magic == OPLOG_MARKS_MAGIC && h.version == OPLOG_MARKS_VERSION && h.crc == oplog_marks_header_crc(&h) &&
             h.log_dev == (uint64_t)ls.st_dev && h.log_ino == (uint64_t)ls.st_ino && dk_boot_id(boot) &&
             memcmp(boot, h.boot_id, sizeof boot) == 0;
    }
    if (ok && h.mount_kind != OPLOG_MARKS_MOUNT_NONE)
        ok = h.mount_kind == OPLOG_MARKS_MOUNT_UNIQUE && mount_id_of(log_fd, &kind) == h.mount_id &&
             kind == OPLOG_MARKS_MOUNT_UNIQUE;
    uint32_t *marks = ok ? calloc(capacity ? capacity : 1, sizeof *marks) : NULL;
    /* Read, not mapped: a read fault in a hole of a tmpfs mapping would allocate it. */
    uint64_t want = ms.st_size > (off_t)OPLOG_MARKS_OFFSET ? (uint64_t)ms.st_size - OPLOG_MARKS_OFFSET : 0;
    want = DK_MIN(want, capacity * sizeof *marks);
    for (uint64_t got = 0; marks && got < want;) {
        ssize_t r = c->pread(fd, (char *)marks + got, (size_t)(want - got), (off_t)(OPLOG_MARKS_OFFSET + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { /* unreadable: no mark counts */
            free(marks), marks = NULL;
            break;
        }
        got += (uint64_t)r;
    }
    if (fd >= 0) c->close(fd);
    *out = marks; /* no memory for them: none (every record replayed) */
    DK_ERRNO_RESTORE;
    return 0;
}

/* Creating, opening and closing an operation log (see oplog.h). */
#include "oplog/oplog.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "oplog/internal.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "common/mapflags.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

#define OPLOG_NAME_TRIES_MAX 1000 /* <tag>.<pid>.<n>: n from 0; a pid reused 1,000 times over is absurd */

#ifdef DAXKIT_TEST_BUILD
int dk_oplog_test_broken;
#endif

static int tag_ok(const char *tag) {
    size_t n = strlen(tag);
    if (n == 0 || n >= sizeof(((struct oplog_header *)0)->tag)) return 0;
    for (const char *p = tag; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_'))
            return 0;
    return 1;
}

int oplog_write_header(struct dk_oplog *log, uint32_t generation, const char *tag) {
    struct oplog_header h = {0};
    h.magic = OPLOG_MAGIC;
    h.version = OPLOG_VERSION;
    h.line_bytes = DK_OPLOG_LINE_BYTES;
    h.generation = generation;
    h.capacity_lines = log->capacity_lines;
    if (tag) { /* the log's creation: a reset (tag NULL) writes what it wrote */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        log->created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        memset(log->tag, 0, sizeof log->tag);
        strncpy(log->tag, tag, sizeof log->tag - 1);
    }
    h.created_ns = log->created_ns;
    h.area_dev = log->area_dev;
    h.creator_pid = (uint32_t)log->creator_pid; /* not getpid() at every reset: a checkpoint is hot */
    memcpy(h.tag, log->tag, sizeof h.tag);
    h.crc = oplog_header_crc(&h);
    struct oplog_header *slot = &log->headers[generation & 1];
    if (log->persist == OPLOG_PERSIST_PWRITE) return oplog_write_durable(log, log->fd, &h, sizeof h, (generation & 1) * sizeof h);
#ifdef DAXKIT_TEST_BUILD
    if (dk_oplog_test_broken == DK_OPLOG_BROKEN_RESET_NO_FENCE && tag == NULL) {
        memcpy(slot, &h, sizeof h); /* plain stores, never written back: the bug under test */
        return 0;
    }
#endif
    dk_store_persistent(slot, &h, sizeof h, DK_OPLOG_LINE_BYTES);
    dk_fence();
    return 0;
}

/* Page cache: writes zeros over [lo, hi) and makes them durable, so the blocks are allocated *and written*.
 * posix_fallocate would leave unwritten extents on XFS and ext4: the first write-back of each converts it
 * (a journal transaction), and every record's durable write would then have to force the journal. Returns
 * 0 or an errno value (posix_fallocate's convention). */
static int zero_fill_durable(int fd, uint64_t lo, uint64_t hi) {
    static const char zeros[64 << 10];
    const struct dk_libc *c = dk_libc();
    for (uint64_t off = lo; off < hi;) {
        ssize_t w = c->pwrite(fd, zeros, (size_t)DK_MIN(hi - off, (uint64_t)sizeof zeros), (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        off += (uint64_t)w;
    }
    return c->fdatasync(fd) == 0 ? 0 : errno;
}

/* Reserves the file's blocks (posix_fallocate: no SIGBUS or ENOSPC on a later store) and write-faults the
 * pages (best effort: MADV_POPULATE_WRITE, Linux 5.14) of record slots [allocated_lines, end_lines). Called
 * with grow_mu held, or before the log is shared. Returns 0 or -errno (-ENOSPC: the medium is full). */
int oplog_allocate(struct dk_oplog *log, uint64_t end_lines) {
    const struct dk_libc *c = dk_libc();
    uint64_t from = log->allocated_lines;
    if (end_lines <= from) return 0;
    /* File offsets: the header lines come with the first records; the end is rounded up to a 2 MiB boundary
     * (one huge page on huge-page tmpfs), capped at the file's end. */
    uint64_t lo = from == 0 ? 0 : (DK_OPLOG_HEADER_LINES + from) * DK_OPLOG_LINE_BYTES;
    uint64_t hi = dk_round_up((DK_OPLOG_HEADER_LINES + end_lines) * DK_OPLOG_LINE_BYTES, DK_HUGE_BYTES);
    if (hi > log->map_bytes) hi = log->map_bytes;
    end_lines = hi / DK_OPLOG_LINE_BYTES - DK_OPLOG_HEADER_LINES;
    DK_ERRNO_SAVE;
    int e = log->persist != OPLOG_PERSIST_PWRITE ? c->posix_fallocate(log->fd, (off_t)lo, (off_t)(hi - lo))
            : oplog_zero_direct(log, lo, hi) == 0 ? 0
                                                  : zero_fill_durable(log->fd, lo, hi);
    if (e == 0 || e == EOPNOTSUPP || e == EINVAL) {
        uintptr_t page_lo = dk_round_down((uintptr_t)log->headers + lo, DK_PAGE_BYTES);
        uintptr_t page_hi = dk_round_up((uintptr_t)log->headers + hi, DK_PAGE_BYTES);
        /* Page cache: the mapping is only read (records go by pwrite); write faults would dirty it. */
        if (log->persist != OPLOG_PERSIST_PWRITE)
            c->madvise((void *)page_lo, page_hi - page_lo, MADV_POPULATE_WRITE);
        __atomic_store_n(&log->allocated_lines, end_lines, __ATOMIC_RELEASE);
        oplog_marks_allocate(log, end_lines);
        e = 0;
    }
    DK_ERRNO_RESTORE;
    return -e;
}

enum oplog_persist oplog_persist_for(int dirfd, int *map_sync_out) {
    struct dk_medium_info mi;
    *map_sync_out = 0;
    if (dk_medium_probe(dirfd, DK_PROBE_BASIC, &mi) != 0) return OPLOG_PERSIST_PWRITE; /* the safe choice */
    *map_sync_out = mi.medium == DK_MEDIUM_DAX && mi.map_sync;
    if (mi.medium == DK_MEDIUM_PAGECACHE && dk_cfg.persist != DK_PERSIST_FLUSH) return OPLOG_PERSIST_PWRITE;
    return OPLOG_PERSIST_FLUSH;
}

/* Creates, locks, sizes and maps <name>.tmp; fills log->fd/headers/records. Returns 0 or -errno. */
static int build_tmp(struct dk_oplog *log, int dirfd, const char *tmp, size_t bytes, int map_sync) {
    const struct dk_libc *c = dk_libc();
    int fd = dk_ifd_openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -errno;
    log->fd = fd;
    /* Unlocked until the flock: a recoverer starting now takes the name for a dead creator's (open_at). */
    DK_CRASH_POINT("oplog.open.tmp_unlocked");
    if (c->flock(fd, LOCK_EX | LOCK_NB) != 0) return errno == EWOULDBLOCK ? -ETXTBSY : -errno;
    if (c->ftruncate(fd, (off_t)bytes) != 0) return -errno;
    struct stat st;
    if (c->fstat(fd, &st) != 0) return -errno;
    log->area_dev = (uint64_t)st.st_dev;
    void *m = MAP_FAILED;
    if (map_sync) m = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (m == MAP_FAILED) m = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return -errno;
    log->map_bytes = bytes;
    log->headers = m;
    log->records = (struct oplog_line *)((char *)m + DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES);
    /* The first step ends at file offset 2 MiB, the next ones at each following 2 MiB boundary. */
    uint64_t first_lines = OPLOG_ALLOCATE_LINES - DK_OPLOG_HEADER_LINES;
    return oplog_allocate(log, DK_MIN(log->capacity_lines, first_lines));
}

/* Publishes a fully built log under `name` (never replacing another). Returns 0, -EEXIST or -errno. */
static int publish(struct dk_oplog *log, int dirfd, const char *tmp, const char *name) {
    const struct dk_libc *c = dk_libc();
    if (c->fsync(log->fd) != 0) return -errno; /* size, extents and header durable before the name */
    DK_CRASH_POINT("oplog.open.before_publish");
    if (c->renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) != 0) return errno == ENOENT ? -ETXTBSY : -errno;
    if (c->fsync(dirfd) != 0) return -errno;
    return 0;
}

static void discard(struct dk_oplog *log, int dirfd, const char *tmp) {
    const struct dk_libc *c = dk_libc();
    if (log->headers) c->munmap(log->headers, log->map_bytes);
    if (log->fd >= 0) {
        c->unlinkat(dirfd, tmp, 0);
        c->close(log->fd);
    }
    log->headers = NULL, log->records = NULL, log->fd = -1;
}

static int open_at(struct dk_oplog *log, const char *dir, int dirfd, const char *tag, size_t bytes) {
    int map_sync;
    log->persist = oplog_persist_for(dirfd, &map_sync);
    int pid = (int)dk_libc()->getpid();
    log->creator_pid = pid;
    for (int n = 0; n < OPLOG_NAME_TRIES_MAX; n++) {
        char name[64], tmp[68];
        snprintf(name, sizeof name, "%s.%d.%d.log", tag, pid, n);
        snprintf(tmp, sizeof tmp, "%s.%d.%d.tmp", tag, pid, n);
        if (dk_libc()->fstatat(dirfd, name, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0) continue;
        int rc = build_tmp(log, dirfd, tmp, bytes, map_sync);
        if (rc == 0) rc = oplog_write_header(log, 1, tag);
        if (rc == 0) rc = publish(log, dirfd, tmp, name);
        if (rc == 0) {
            oplog_open_direct(log, dirfd, name);
            log->generation = 1;
            snprintf(log->path, sizeof log->path, "%s/%s", dir, name);
            return 0;
        }
        discard(log, dirfd, tmp);
        /* -ETXTBSY: a recoverer took the .tmp between its creation and its flock -- every process's start-up
         * removes a .tmp whose lock is free, and it holds the lock (our flock fails) or has unlinked the name
         * (our rename fails with ENOENT). The next name, as for one in use (review 11, finding 1: the
         * program's first strict write failed with EIO). */
        if (rc != -EEXIST && rc != -ETXTBSY) return rc;
    }
    return -EEXIST;
}

struct dk_oplog *oplog_new(uint64_t capacity) {
    struct dk_oplog *log = NULL;
    if (posix_memalign((void **)&log, DK_CACHELINE_BYTES, sizeof *log) != 0) return NULL;
    memset(log, 0, sizeof *log);
    log->fd = -1;
    log->direct_fd = -1;
    log->marks_fd = -1;
    log->direct_align_lines = 1;
    pthread_mutex_init(&log->grow_mu, NULL);
    log->capacity_lines = capacity;
    log->usable_lines = capacity; /* no spare until dk_oplog_set_spare */
    return log;
}

bool oplog_args_ok(const char *dir, const char *tag, size_t bytes) {
    uint64_t capacity = bytes / DK_OPLOG_LINE_BYTES - DK_OPLOG_HEADER_LINES;
    return dir && tag && tag_ok(tag) && bytes >= DK_OPLOG_BYTES_MIN && capacity <= OPLOG_CAPACITY_LINES_MAX;
}

int oplog_free_name(int dirfd, const char *tag, int pid, char *name, size_t cap) {
    for (int n = 0; n < OPLOG_NAME_TRIES_MAX; n++) {
        snprintf(name, cap, "%s.%d.%d.log", tag, pid, n);
        if (dk_libc()->fstatat(dirfd, name, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) return 0;
    }
    return -EEXIST;
}

int dk_oplog_open(const char *dir, const char *tag, size_t bytes, struct dk_oplog **log_out) {
    DK_ERRNO_SAVE;
    bytes = dk_round_down(bytes, DK_OPLOG_LINE_BYTES);
    uint64_t capacity = bytes / DK_OPLOG_LINE_BYTES - DK_OPLOG_HEADER_LINES;
    if (!log_out || !oplog_args_ok(dir, tag, bytes)) return -EINVAL;
    struct dk_oplog *log = oplog_new(capacity);
    if (!log) return -ENOMEM;
    int dirfd = dk_ifd_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    int rc = dirfd < 0 ? -errno : open_at(log, dir, dirfd, tag, bytes);
    if (dirfd >= 0) dk_libc()->close(dirfd);
    if (rc != 0) {
        pthread_mutex_destroy(&log->grow_mu);
        free(log);
        log = NULL;
    }
    *log_out = log;
    DK_ERRNO_RESTORE;
    return rc;
}

static void plain_close(int fd) { dk_libc()->close(fd); }

void dk_oplog_move_fds(struct dk_oplog *log, int (*move_fd)(int fd), void (*close_fd)(int fd)) {
    log->fd = move_fd(log->fd);
    if (log->direct_fd >= 0) log->direct_fd = move_fd(log->direct_fd);
    if (log->marks_fd >= 0) log->marks_fd = move_fd(log->marks_fd);
    log->close_fd = close_fd;
}

int dk_oplog_close(struct dk_oplog *log, int remove) {
    if (!log) return 0;
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    int rc = 0;
    /* Unlink while the lock is still held: a recoverer can never take a log being removed for a live one. */
    if (remove) rc = dk_oplog_unlink(log);
    oplog_marks_close(log);
    c->munmap(log->headers, log->map_bytes);
    void (*close_fd)(int) = log->close_fd ? log->close_fd : plain_close;
    close_fd(log->fd);
    if (log->direct_fd >= 0) close_fd(log->direct_fd);
    pthread_mutex_destroy(&log->grow_mu);
    free(log);
    DK_ERRNO_RESTORE;
    return rc;
}

void dk_oplog_drop_inherited(struct dk_oplog *log) {
    if (!log) return;
    DK_ERRNO_SAVE;
    oplog_marks_close(log); /* the child's mapping and descriptor only: the file stays the parent's */
    dk_libc()->munmap(log->headers, log->map_bytes);
    void (*close_fd)(int) = log->close_fd ? log->close_fd : plain_close;
    close_fd(log->fd); /* the child's copy only: the lock is the open file description's, the parent's */
    if (log->direct_fd >= 0) close_fd(log->direct_fd);
    free(log); /* grow_mu is not destroyed: another thread of the parent may have held it at fork */
    DK_ERRNO_RESTORE;
}

const char *dk_oplog_path(const struct dk_oplog *log) { return log->path; }
void *dk_oplog_mapping(const struct dk_oplog *log, size_t *bytes_out) {
    if (bytes_out) *bytes_out = log->map_bytes;
    return log->headers;
}
uint64_t dk_oplog_generation(const struct dk_oplog *log) { return log->generation; }
uint64_t dk_oplog_lines_used(const struct dk_oplog *log) {
    uint64_t t = __atomic_load_n(&log->tail_lines, __ATOMIC_RELAXED);
    return (t < log->capacity_lines ? t : log->capacity_lines) - log->first_slot;
}
uint64_t dk_oplog_lines_capacity(const struct dk_oplog *log) { return log->capacity_lines; }
uint32_t dk_oplog_record_lines(const struct dk_oplog *log, size_t data_len) {
    return (uint32_t)dk_round_up(oplog_lines_for(data_len), log->direct_align_lines);
}
uint64_t dk_oplog_first_slot(const struct dk_oplog *log) { return log->first_slot; }
enum dk_oplog_records_by dk_oplog_records_by(const struct dk_oplog *log) {
    if (log->persist != OPLOG_PERSIST_PWRITE) return DK_OPLOG_RECORDS_FLUSHED;
    int direct = log->direct_fd >= 0 && !__atomic_load_n(&log->direct_refused, __ATOMIC_RELAXED);
    return direct ? DK_OPLOG_RECORDS_DIRECT : DK_OPLOG_RECORDS_BUFFERED;
}

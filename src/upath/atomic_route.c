/* DAXKIT_ATOMIC routing (issue 4, part 3): the data calls of a matching managed file go to the
 * failure-atomic engine, opened with the file size tracked as part of the committed state
 * (src/atomic/alog_size.c). The plain path's file object keeps the logical size in f->size (so stat,
 * lseek SEEK_END and friends see it); the kernel file is larger (the engine's capacity) while routed and
 * is cut back to the committed size when the route closes.
 *
 * Locks: route->rw (read: reads and writes inside the size; write: size changes and commits) > the
 * engine's own locks. A commit holds route->rw for writing so that the size it records and the data it
 * commits belong together.
 *
 * Several processes: the engine maps a file for one process at a time (an flock on its log). A second
 * process opening a routed file waits until the first closes it (polling every millisecond, at most
 * DAXKIT_ATOMIC_WAIT_MS), then gets the committed file; past the limit its open fails with EBUSY. A
 * fork or exec detaches every route first (commit, close: the kernel file is exact), so relatives share
 * the file through the kernel path. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "common/config.h"
#include "common/crashpoint.h"
#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/atomic_mmap.h"
#include "upath/atomic_route.h"
#include "upath/guard.h"
#include "upath/internal.h"
#include "upath/io.h"
#include "upath/upath.h"
#include "upath/policy.h"
#include "upath/route_lock.h"

struct up_atomic {
    struct alog_file *eng; /* NULL once detached */
    struct up_route_lock rw; /* route_lock.h: one locked instruction each way, where glibc's rwlock took more */
    uint64_t zero_from; /* kernel-file bytes at and past this offset are zeros (never written) */
    /* Since the last commit nothing was copied (dirty false) and the size is committed_size: a commit would
     * record the state the last one did, so it is skipped (a SQLite transaction reaches 4-8 publish points
     * -- its lock releases -- after the one fsync that has something to commit). */
    bool dirty;
    uint64_t committed_size;
};

/* A detached route is never freed: a thread that loaded f->atomic just before the detach still takes its
 * lock, finds eng == NULL and goes the plain way. (A few hundred bytes per detach; routes detach at the
 * last close, fork, exec, exit and kernel access.) */
static pthread_mutex_t detach_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned routes_live; /* attached routes (atomic): opens with O_TRUNC look only when there are some */

/* ---- which files ---- */

bool up_atomic_wanted(const char *path) { return up_glob_list_match(dk_cfg.atomic, path); }

bool up_atomic_commit_each_write(void) {
    if (dk_cfg.atomic_commit == DK_ATOMIC_COMMIT_AUTO) return dk_cfg.mode != DK_MODE_POSIX;
    return dk_cfg.atomic_commit == DK_ATOMIC_COMMIT_WRITE;
}

/* ---- engine calls ---- */

/* `owned`: the caller holds a->rw for writing, which keeps every other user of a journal out (copies and
 * reads run under a->rw; the checkpoint thread takes only the journal's apply lock), so a journal copy needs
 * not take the journal's mutex. */
static int eng_copy(struct up_atomic *a, uint64_t off, const void *buf, size_t n, bool owned) {
    /* The journal needs no engine lock here: everything that takes it for writing (commit, checkpoint,
     * close) runs under a->rw held for writing, which excludes this call (and orders the flag with it). */
    if (!__atomic_load_n(&a->dirty, __ATOMIC_RELAXED)) __atomic_store_n(&a->dirty, true, __ATOMIC_RELAXED);
    if (a->eng->journal) return owned ? alog_copy_owned(a->eng, off, buf, n) : alog_copy(a->eng, off, buf, n);
    pthread_rwlock_rdlock(&a->eng->rw);
    int rc = alog_copy(a->eng, off, buf, n);
    pthread_rwlock_unlock(&a->eng->rw);
    return rc;
}

/* The file whose route this thread's write, commit, truncate or detach is in (its locks, the engine's), or
 * NULL. A signal handler's call on that file would wait for a lock its own thread holds: its _exit, exit,
 * exec and fork do not commit it (publish_one; review 9, finding 30), its data calls fail with EDEADLK
 * before anything is logged (nested_in_write). */
static __thread const struct up_file *write_file;
const struct up_file *up_atomic_held_file(void) { return write_file; }

/* The route's lock for writing, with this thread marked as in f's route from before the lock call, so that a
 * signal handler's call on f inside it is refused (nested_in_write) instead of waiting for the lock its thread
 * holds. Returns the mark it replaced, for write_unlock. */
static const struct up_file *write_lock(struct up_file *f) {
    const struct up_file *outer = write_file;
    write_file = f;
    up_route_wrlock(&f->atomic->rw);
    return outer;
}

static void write_unlock(struct up_file *f, const struct up_file *outer) {
    up_route_unlock(&f->atomic->rw);
    write_file = outer;
}

/* The one commit of the route (fsync, publish points, early commits), counted. Under a->rw for writing. */
static int commit_locked(struct up_file *f, struct up_atomic *a) {
    if (!a->eng) return 0; /* detached: committed then */
    uint64_t size = up_file_size(f);
    if (!a->dirty && size == a->committed_size) return 0; /* the last commit's state: nothing to make whole */
    a->eng->size_pending = size;
    int rc = alog_sync(a->eng);
    if (rc) return rc;
    dk_count(DK_C_atomic_commits, 1);
    __atomic_store_n(&a->committed_size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&a->dirty, false, __ATOMIC_RELEASE); /* after the commit is durable: see nothing_new */
    return 0;
}

/* Without the lock: nothing written since the last commit, which is durable. A write or size change still
 * in flight in another thread need not be in this commit (it has not returned); one that returned before
 * the caller's call is ordered before it by the program's own synchronization, and its dirty flag or size
 * with it. Saves the lock round trip at the publish points that find nothing new -- SQLite's three lock
 * releases per transaction, each a commit of this file twice (its own descriptor, then every file). */
static bool nothing_new(struct up_file *f, struct up_atomic *a) {
    return !__atomic_load_n(&a->dirty, __ATOMIC_ACQUIRE) &&
           up_file_size(f) == __atomic_load_n(&a->committed_size, __ATOMIC_RELAXED);
}

/* A copy under a->rw held for writing. The log full of this epoch's data (a transaction larger than
 * DAXKIT_ATOMIC_LOG_BYTES): the journal grows (doubles, up to 64 GiB: alog_jrnl_grow), so the next commit
 * still makes the whole group atomic (review 8, finding 8: a SQLite transaction of 24 MiB was committed in
 * 14 pieces, and a crash left part of it). Where it cannot (the medium is full, the limit, the hybrid,
 * undo and redo policies): commit what is there, free it, and go on -- the kernel would not fail the
 * write, so the program gets an early commit instead (counted, said once). */
static int copy_or_commit(struct up_file *f, struct up_atomic *a, uint64_t off, const void *buf, size_t n) {
    int rc = eng_copy(a, off, buf, n, true);
    while (rc == -ENOSPC && a->eng->journal && alog_jrnl_grow(a->eng) == 0) {
        dk_count(DK_C_atomic_log_grows, 1);
        dk_log_verbose("DAXKIT_ATOMIC: more written between two fsyncs than the log held: grown to %llu bytes",
                       (unsigned long long)a->eng->area_bytes);
        rc = eng_copy(a, off, buf, n, true);
    }
    if (rc != -ENOSPC) return rc;
    dk_count(DK_C_atomic_log_full, 1);
    dk_log_once("DAXKIT_ATOMIC: more written between two fsyncs than the log holds (DAXKIT_ATOMIC_LOG_BYTES): "
                "committed early (counted as atomic_log_full)");
    rc = commit_locked(f, a);
    if (!rc) rc = (int)DK_MIN(0, alog_checkpoint_committed(a->eng));
    return rc ? rc : eng_copy(a, off, buf, n, true);
}

/* Zeros for [from, to) where the kernel file may hold old bytes (below zero_from): logged like any write,
 * so a rollback restores them too. Under a->rw for writing. */
static int zero_fill(struct up_file *f, struct up_atomic *a, uint64_t from, uint64_t to) {
    static const char zeros[64 << 10];
    to = DK_MIN(to, a->zero_from);
    for (uint64_t off = from; off < to;) {
        size_t n = (size_t)DK_MIN(to - off, (uint64_t)sizeof zeros);
        int rc = copy_or_commit(f, a, off, zeros, n);
        if (rc) return rc;
        off += n;
    }
    return 0;
}

/* The logical size changed (under a->rw for writing). */
static void set_size(struct up_file *f, uint64_t size) {
    up_file_lock(f);
    up_file_set_size(f, size);
    __atomic_store_n(&f->pub_size, size, __ATOMIC_RELEASE);
    f->ksize = __atomic_load_n(&f->atomic->eng->data_len, __ATOMIC_ACQUIRE);
    dk_mu_unlock(&f->mu);
}

static int commit(struct up_file *f) {
    struct up_atomic *a = f->atomic;
    if (!a || nothing_new(f, a)) return 0;
    const struct up_file *outer = write_lock(f);
    int rc = commit_locked(f, a);
    write_unlock(f, outer);
    return rc;
}

static int fail(int rc) {
    errno = -rc;
    dk_count(DK_C_errors, 1);
    return -1;
}

/* ---- data calls ---- */

/* A signal handler's write, read, fsync or ftruncate of the file whose route its thread is in (write_file:
 * a write, commit, ftruncate or detach): refused before any lock. The thread may hold the route's lock for
 * writing (every journal write since session 16, appends, commits, truncates and detaches before) and the
 * engine's, which the handler would wait for forever (the route's lock is not recursive for a writer:
 * route_lock.h). */
static bool nested_in_write(const struct up_file *f) {
    if (DK_LIKELY(write_file != f)) return false;
    dk_count(DK_C_atomic_nested_refused, 1);
    dk_log_once("DAXKIT_ATOMIC: a signal handler's call on a file refused with EDEADLK (counted as "
                "atomic_nested_refused): its thread was inside a write, commit, truncate or detach of that file");
    return true;
}

ssize_t up_atomic_read(struct up_file *f, int fd, void *buf, size_t n, uint64_t off) {
    struct up_atomic *a = f->atomic;
    if (DK_UNLIKELY(nested_in_write(f))) return fail(-EDEADLK);
    n = DK_MIN(n, DK_MAX_RW_BYTES);
    up_route_rdlock(&a->rw);
    if (!a->eng) {
        up_route_unlock(&a->rw);
        return up_io_read(f, fd, buf, n, off);
    }
    uint64_t size = up_file_size(f);
    int rc = 0;
    if (off >= size) n = 0;
    else n = (size_t)DK_MIN((uint64_t)n, size - off);
    if (n && a->eng->journal) {
        rc = alog_read(a->eng, off, buf, n); /* as in eng_copy */
    } else if (n) {
        pthread_rwlock_rdlock(&a->eng->rw);
        rc = alog_read(a->eng, off, buf, n);
        pthread_rwlock_unlock(&a->eng->rw);
    }
    up_route_unlock(&a->rw);
    if (rc) return fail(rc);
    dk_count(DK_C_reads, 1);
    dk_count(DK_C_read_bytes, n);
    return (ssize_t)n;
}

/* Writes that change the size (appends, writes past the end). Under a->rw for writing. */
static int write_extending(struct up_file *f, const void *buf, size_t n, uint64_t *off, bool append) {
    struct up_atomic *a = f->atomic;
    uint64_t size = up_file_size(f);
    if (append) *off = size;
    uint64_t end = *off + n;
    if (end < *off) return -EFBIG;
    int rc = alog_grow(a->eng, end);
    if (!rc && *off > size) rc = zero_fill(f, a, size, *off);
    if (!rc) rc = copy_or_commit(f, a, *off, buf, n);
    if (rc) return rc;
    if (end > size) set_size(f, end);
    a->zero_from = DK_MAX(a->zero_from, end);
    return 0;
}

static ssize_t atomic_write(struct up_file *f, int fd, const void *buf, size_t n, uint64_t off, bool append, bool sync);

ssize_t up_atomic_write(struct up_file *f, int fd, const void *buf, size_t n, uint64_t off, bool append, bool sync) {
    if (DK_UNLIKELY(nested_in_write(f))) return fail(-EDEADLK);
    const struct up_file *outer = write_file;
    write_file = f;
    ssize_t r = atomic_write(f, fd, buf, n, off, append, sync);
    write_file = outer;
    return r;
}

static ssize_t atomic_write(struct up_file *f, int fd, const void *buf, size_t n, uint64_t off, bool append, bool sync) {
    struct up_atomic *a = f->atomic;
    if (n == 0) return 0;
    n = DK_MIN(n, DK_MAX_RW_BYTES);
    int rc = -EAGAIN;
    bool gone = false;
    /* The journal lines the copy completes, written back after the unlock (alog_journal.c, "Owed lines") */
    struct alog_jowed owed;
    alog_jrnl_owed_begin(&owed);
    if (!append) { /* the common case: inside the size, many threads at once */
        /* A journal's copies take the lock for writing, and with it the journal to themselves: one lock pair
         * per write instead of two (the journal's mutex, which its copies and reads took in turn anyway).
         * Session 16: 128 B writes with an fsync every 10 took ~16% of their CPU in the four locked
         * instructions (perf). A route detached meanwhile (eng NULL) is found under the lock, as before. */
        struct alog_file *e = __atomic_load_n(&a->eng, __ATOMIC_ACQUIRE);
        bool owned = e && e->journal;
        if (owned) up_route_wrlock(&a->rw);
        else up_route_rdlock(&a->rw);
        gone = !a->eng;
        if (!gone && off + n >= off && off + n <= up_file_size(f)) rc = eng_copy(a, off, buf, n, owned);
        up_route_unlock(&a->rw);
        if (rc == -ENOSPC) rc = -EAGAIN; /* again under the write lock, which may commit early */
    }
    if (rc == -EAGAIN && !gone) {
        up_route_wrlock(&a->rw);
        gone = !a->eng;
        if (!gone) rc = write_extending(f, buf, n, &off, append);
        up_route_unlock(&a->rw);
    }
    alog_jrnl_owed_end(&owed);
    if (gone) /* the plain path of the mode (io.c's write_op) */
        return dk_cfg.mode == DK_MODE_STRICT ? up_strict_write(f, fd, buf, n, off, append)
                                             : up_io_write(f, fd, buf, n, off, append, sync || dk_cfg.mode != DK_MODE_POSIX);
    if (rc) return fail(rc);
    up_io_last_offset = off;
    dk_count(DK_C_atomic_writes, 1);
    dk_count(DK_C_write_bytes, n);
    if (sync && (rc = commit(f))) return fail(rc);
    return (ssize_t)n;
}

int up_atomic_fsync(struct up_file *f, int fd, bool datasync) {
    struct up_atomic *a = f->atomic;
    if (DK_UNLIKELY(nested_in_write(f))) return fail(-EDEADLK);
    if (!a || !__atomic_load_n(&a->eng, __ATOMIC_ACQUIRE)) { /* detached meanwhile */
        int rc = up_sync_file(f, fd, datasync);
        return rc ? fail(rc) : 0;
    }
    dk_count(DK_C_fsyncs, 1);
    int rc = commit(f);
    return rc ? fail(rc) : 0;
}

static int truncate_locked(struct up_file *f, uint64_t len) {
    struct up_atomic *a = f->atomic;
    uint64_t size = up_file_size(f);
    if (len > size) {
        int rc = alog_grow(a->eng, len);
        if (!rc) rc = zero_fill(f, a, size, len);
        if (rc) return rc;
        a->zero_from = DK_MAX(a->zero_from, len); /* invariant: zero_from >= size (overwrites dirty below it) */
    }
    set_size(f, len); /* shrinking: the bytes past len stay in the kernel file, below zero_from */
    return 0;
}

/* ftruncate through the route: committed at once where every write is (up_atomic_commit_each_write), else
 * part of the group the next commit makes whole (a SQLite commit may cut the file before its fsync). Under
 * a->rw for writing. */
static int ftruncate_locked(struct up_file *f, struct up_atomic *a, uint64_t len) {
    int rc = truncate_locked(f, len);
    if (!rc && up_atomic_commit_each_write()) rc = commit_locked(f, a);
    return rc;
}

/* The kernel does it on the exact file (the route is detached): as the plain path's pass-through does. */
static int by_kernel(int fd, int r) {
    int e = errno;
    if (r == 0) up_kernel_changed_fd(fd);
    errno = e;
    return r;
}

int up_atomic_ftruncate(struct up_file *f, int fd, off_t len) {
    if (len < 0) return fail(-EINVAL);
    if (DK_UNLIKELY(nested_in_write(f))) return fail(-EDEADLK);
    struct up_atomic *a = f->atomic;
    const struct up_file *outer = write_lock(f);
    int rc = a->eng ? ftruncate_locked(f, a, (uint64_t)len) : 1;
    write_unlock(f, outer);
    if (rc == 1) return by_kernel(fd, DK_REAL(ftruncate)(fd, len)); /* detached meanwhile */
    return rc ? fail(rc) : 0;
}

int up_atomic_fallocate(struct up_file *f, int fd, int mode, off_t off, off_t len) {
    struct up_atomic *a = f->atomic;
    int fl = DK_REAL(fcntl)(fd, F_GETFL);
    if (mode == 0 && off >= 0 && len > 0 && fl >= 0 && (fl & O_ACCMODE) != O_RDONLY) { /* plain allocation: at most a size change */
        if (DK_UNLIKELY(nested_in_write(f))) return fail(-EDEADLK); /* as ftruncate */
        uint64_t end = (uint64_t)off + (uint64_t)len;
        const struct up_file *outer = write_lock(f);
        int rc = 0;
        bool gone = !a->eng;
        if (!gone && end > up_file_size(f)) rc = truncate_locked(f, end);
        if (!gone && !rc && up_atomic_commit_each_write()) rc = commit_locked(f, a); /* as ftruncate */
        write_unlock(f, outer);
        if (!gone) return rc ? fail(rc) : 0;
    }
    /* Holes, ranges, KEEP_SIZE, bad arguments: the kernel, on the exact file (its errors are the answer). */
    up_atomic_detach_fd(fd);
    return by_kernel(fd, DK_REAL(fallocate)(fd, mode, off, len));
}

/* A publish point's commit (close, lock release, exec) from a signal handler inside its thread's write of the
 * file is left to that thread's next commit: the thread holds the route's lock, so committing now would wait
 * for ever (nothing is promised durable before an fsync; an fsync from there is refused with EDEADLK). Only a
 * handler gets here with its thread marked in f's route: the thread's own calls under the mark (a sync write's
 * commit) do not come through a publish point. */
int up_atomic_publish(struct up_file *f) { return DK_UNLIKELY(nested_in_write(f)) ? 0 : commit(f); }

/* ---- routes open and close ---- */

static void sleep_ms(unsigned ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Opens the engine on path (its log named by the file, in the root's area), waiting for another process to
 * let go of it. */
static int open_engine(const char *path, const struct alog_where *w, struct alog_file **eng) {
    struct daxkit_atomic_options o;
    daxkit_atomic_options_init(&o);
    o.policy = (uint32_t)dk_cfg.atomic_policy;
    o.log_bytes = dk_round_up(dk_cfg.atomic_log_bytes, ALOG_CHUNK_BYTES);
    uint64_t waited_ms = 0;
    for (;;) {
        int rc = alog_open_tracked_at(path, w, &o, eng);
        if (rc != -EBUSY || waited_ms >= dk_cfg.atomic_wait_ms) return rc;
        if (waited_ms == 0) {
            dk_count(DK_C_atomic_waits, 1);
            dk_log_verbose("%s is open failure-atomically in another process: waiting up to %llu ms for it to close it",
                           path, (unsigned long long)dk_cfg.atomic_wait_ms);
        }
        sleep_ms(1);
        waited_ms++;
    }
}

/* Forks prepared (up_atomic_fork_prepare). A fork prepared while an adoption opened its engine made the file's
 * descriptors shared, served by the kernel, and detached the routes it found -- not this one, not attached yet:
 * a route attached after it sized the file by the engine at the close and cut what the kernel's writes had
 * added (session 19: a handler's fork inside the engine's open, shim_handler_fork_atomic_open: 6 of 10 runs
 * lost the file's 8 KiB; another thread's fork in that window lost an fsync'ed 4 KiB, 3 of 3:
 * shim_fork_held_locks_adopt). */
static uint64_t forks_prepared;

static bool fork_since(uint64_t forks_seen) { return __atomic_load_n(&forks_prepared, __ATOMIC_ACQUIRE) != forks_seen; }

/* Attaches eng to f, unless a fork was prepared since forks_seen (then f stays plain, counted). */
static void attach(struct up_file *f, struct alog_file *eng, uint64_t forks_seen) {
    struct up_atomic *a = calloc(1, sizeof *a);
    if (!a) {
        alog_close_sized(eng, NULL);
        return;
    }
    a->eng = eng;
    a->zero_from = eng->size_pending;
    a->committed_size = eng->size_pending; /* alog_size_prepare: the size recovery keeps */
    /* a->rw zeroed: unlocked (route_lock.h; writers preferred, so fsync and appends do not starve behind a
     * stream of overwrites from other threads) */
    bool held = up_atomic_hold(); /* no fork between the route and its file: up_atomic_fork_prepare */
    if (fork_since(forks_seen)) { /* one prepared while this waited for detach_mu */
        up_atomic_release(held);
        free(a);
        alog_close_sized(eng, NULL);
        dk_count(DK_C_atomic_plain, 1);
        return;
    }
    up_file_lock(f);
    up_guard_write_lock(f);
    up_file_set_size(f, eng->size_pending);
    f->pub_size = eng->size_pending;
    f->ksize = eng->data_len;
    __atomic_store_n(&f->atomic, a, __ATOMIC_RELEASE);
    up_guard_write_unlock(f);
    dk_mu_unlock(&f->mu);
    __atomic_add_fetch(&routes_live, 1, __ATOMIC_RELEASE);
    up_atomic_release(held);
    dk_count(DK_C_atomic_routes, 1);
}

int up_atomic_open_flags(int dirfd, const char *path, int flags) {
    if (!(flags & O_TRUNC) || !__atomic_load_n(&routes_live, __ATOMIC_ACQUIRE) || !path) return flags;
    DK_ERRNO_SAVE;
    struct stat st;
    bool routed = false;
    if (DK_REAL(fstatat)(dirfd, path, &st, 0) == 0 && S_ISREG(st.st_mode)) {
        dk_mu_lock(&up_table_mu);
        struct up_file *f = up_file_lookup(st.st_dev, st.st_ino);
        routed = f && f->atomic && f->atomic->eng;
        up_table_unlock();
    }
    DK_ERRNO_RESTORE;
    return routed ? flags & ~O_TRUNC : flags;
}

/* O_TRUNC of a routed file: the open left the file alone (up_atomic_open_flags); truncate through the route
 * and commit (an O_TRUNC is immediate, as in the kernel). A kernel that cut the file anyway (an open that
 * raced with the route's creation) gets the capacity back first. */
static void truncate_at_open(struct up_file *f) {
    struct up_atomic *a = f->atomic;
    const struct up_file *outer = write_lock(f);
    int rc = !a->eng ? 0 : DK_REAL(ftruncate)(a->eng->data_fd, (off_t)a->eng->data_len) == 0 ? 0 : -errno;
    if (!rc && a->eng) rc = truncate_locked(f, 0);
    if (!rc && a->eng) rc = commit_locked(f, a);
    write_unlock(f, outer);
    if (rc) dk_log("O_TRUNC of a DAXKIT_ATOMIC file could not be committed (%s)", dk_strerror(-rc));
}

int up_atomic_adopt(struct up_file *f, int fd, int oflags) {
    if (!dk_cfg.atomic[0] || (oflags & (O_PATH | O_DIRECT))) return 0;
    if (__atomic_load_n(&f->atomic, __ATOMIC_ACQUIRE)) {
        /* A handler's O_TRUNC open of the file its thread is writing: refused as its ftruncate is (the open
         * made without O_TRUNC is closed again, the file left whole), not a wait for ever on the route's lock. */
        if (oflags & O_TRUNC) {
            if (DK_UNLIKELY(nested_in_write(f))) return -EDEADLK;
            truncate_at_open(f);
        }
        return 0;
    }
    char path[PATH_MAX];
    if (!up_fd_path(fd, path, sizeof path)) return 0;
    if (!up_atomic_wanted(path) || up_atomic_mmap_wanted(path)) return 0; /* mmap globs win */
    if (f->open_refs != 1 || up_file_pinned(f)) {
        /* Opened before through the plain path (or routed once and detached at fork): stays plain. */
        dk_count(DK_C_atomic_plain, 1);
        dk_log_verbose("%s: already open through the plain path in this process; not failure-atomic", path);
        return 0;
    }
    /* Strict mode: records of the file from an earlier, plain open in this process (a checkpoint that
     * could not finish at its close) must not be replayed over the route's commits after a crash; while
     * routed, strict mode logs none of the file's data (io.c's write_op, upath.c's ftruncate). */
    if (dk_cfg.mode == DK_MODE_STRICT) up_strict_checkpoint(f->root);
    /* The log is named by the file, not the path: it follows renames, and a new file under an old name
     * gets its own (src/atomic/alog_named.c). */
    char log_name[512];
    int rc = alog_named_log_name(fd, log_name, sizeof log_name);
    /* The engine's descriptor of the file is ours, kept until the program closes one of its own: closing it
     * at a detach while the program keeps the file open would drop the program's POSIX locks (auxfd.c). */
    up_file_lock(f);
    int dfd = rc ? rc : up_atomic_fd(f, fd);
    dk_mu_unlock(&f->mu);
    if (dfd < 0) rc = dfd;
    struct alog_where w = {.root = f->root->path, .log_name = log_name, .data_fd_plus1 = dfd + 1};
    struct alog_file *eng = NULL;
    uint64_t forks_seen = __atomic_load_n(&forks_prepared, __ATOMIC_ACQUIRE);
    if (!rc) rc = open_engine(path, &w, &eng);
    if (!rc) DK_CRASH_POINT("atomic_route.adopt.engine_open"); /* shim_fork_held_locks_adopt's cue */
    if (rc == -EBUSY) {
        dk_log("%s stayed open failure-atomically in another process for DAXKIT_ATOMIC_WAIT_MS=%llu ms: open fails "
               "with EBUSY", path, (unsigned long long)dk_cfg.atomic_wait_ms);
        return -EBUSY;
    }
    /* A log only a newer daxkit reads (said by the engine): served plain, the program's writes would go under
     * the log's committed ones, which that version's recovery then puts back over them. */
    if (rc == -EPROTONOSUPPORT) return rc;
    if (rc) {
        dk_count(DK_C_atomic_plain, 1);
        dk_log("%s matches DAXKIT_ATOMIC but the atomic engine cannot map it (%s): served without failure-atomic "
               "fsync", path, dk_strerror(-rc));
        return 0;
    }
    attach(f, eng, forks_seen);
    if (f->atomic && (oflags & O_TRUNC) && eng->size_pending) truncate_at_open(f);
    return 0;
}

/* Commits and closes f's route, if it has one. Under detach_mu. */
static void detach_locked(struct up_file *f) {
    struct up_atomic *a = f->atomic;
    if (!a) return;
    const struct up_file *outer = write_file;
    write_file = f;
    up_route_wrlock(&a->rw);
    int rc = commit_locked(f, a);
    uint64_t size = up_file_size(f);
    int crc = alog_close_sized(a->eng, &size);
    if (rc || crc)
        dk_log("closing a DAXKIT_ATOMIC file failed (%s): its last commit is what a recovery keeps",
               dk_strerror(-(rc ? rc : crc)));
    up_file_lock(f);
    up_guard_write_lock(f);
    __atomic_store_n(&f->atomic, NULL, __ATOMIC_RELEASE);
    up_file_set_size(f, size);
    f->pub_size = f->ksize = size;
    up_holes_clamp(f, 0); /* the engine sized the file its own way: probed again (holes.c) */
    up_guard_write_unlock(f);
    dk_mu_unlock(&f->mu);
    __atomic_store_n(&a->eng, NULL, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&routes_live, 1, __ATOMIC_RELEASE);
    /* shim_fork_held_locks' cue: a fork here found no route (f->atomic is NULL) but detach_mu held */
    DK_CRASH_POINT("atomic_route.detach.unrouted");
    up_route_unlock(&a->rw);
    write_file = outer;
}

void up_atomic_detach(struct up_file *f) {
    /* A signal handler's close whose thread is inside a detach or a hold (review 15, finding 2): the file
     * stays attached, as a handler's close of a file its thread's call is using keeps it. */
    if (dk_mu_refuse(&detach_mu)) {
        return;
    }
    /* Likewise a handler's close of the file its thread is writing: after its unlock that write may still be
     * writing back journal lines of the log (alog_jrnl_owed_end), which the detach would unmap. */
    if (f == write_file) return;
    dk_mu_lock(&detach_mu);
    detach_locked(f);
    dk_mu_unlock(&detach_mu);
}

static void detach_cb(struct up_file *f, void *arg) {
    (void)arg;
    if (f->atomic) up_atomic_detach(f);
}

static void detach_cb_locked(struct up_file *f, void *arg) {
    (void)arg;
    if (f != write_file) detach_locked(f); /* (a signal handler's fork: its thread's write holds the route) */
}

/* A signal handler whose thread holds detach_mu already: no other thread detaches meanwhile either. */
bool up_atomic_hold(void) {
    if (DK_UNLIKELY(dk_mu_mine(&detach_mu))) return false;
    dk_mu_lock(&detach_mu);
    return true;
}

void up_atomic_release(bool held) {
    if (held) dk_mu_unlock(&detach_mu);
}

/* ---- fork ----
 * detach_mu is held for milliseconds (a route's commit and close) by a thread without the file table's lock
 * (a SEEK_DATA, copy_file_range or mmap of a routed file: up_atomic_detach_fd; a dup2 onto a kept
 * descriptor: up_aux_vacate), and a route may be attached meanwhile (attach: no table lock either). A fork
 * child inherited it held by a thread it does not have, and its first DAXKIT_ATOMIC close or dup2 onto a
 * kept descriptor waited for ever (session 16, shim_fork_held_locks_detach_*). So the fork takes it, after
 * the file table's lock and before the files' (up_table_mu > detach_mu > f->mu), and detaches every route
 * under it: the child gets no route half attached or half detached, and a new mutex. */
static bool fork_held; /* up_atomic_fork_prepare took detach_mu (not a handler's fork inside its thread's) */

void up_atomic_fork_prepare(void) {
    fork_held = up_atomic_hold();
    __atomic_add_fetch(&forks_prepared, 1, __ATOMIC_ACQ_REL); /* an adoption in mid-open attaches nothing */
    if (fork_held && dk_cfg.atomic[0]) up_file_foreach(detach_cb_locked, NULL);
}

void up_atomic_fork_parent(void) {
    up_atomic_release(fork_held);
    fork_held = false;
}

void up_atomic_fork_child(void) {
    if (fork_held) dk_mu_reinit(&detach_mu); /* this thread's: its mark goes too */
    fork_held = false;
}

void up_atomic_fd_moved(struct up_file *f, int to) {
    struct up_atomic *a = f->atomic;
    if (a && a->eng) __atomic_store_n(&a->eng->data_fd, to, __ATOMIC_RELEASE);
}

void up_atomic_detach_fd(int fd) {
    struct up_slot *s = up_enabled ? up_fd_slot(fd) : NULL;
    if (!s || !__atomic_load_n(&s->file->atomic, __ATOMIC_ACQUIRE)) return;
    DK_ERRNO_SAVE;
    up_atomic_detach(s->file);
    DK_ERRNO_RESTORE;
}

void up_atomic_recover_roots(void) {
    if (!dk_cfg.atomic_recover_start) return;
    DK_ERRNO_SAVE;
    for (int i = 0; i < up_roots_count(); i++) {
        struct alog_dir_report rep = {0};
        if (up_root_at(i)->area_absent) continue; /* no .daxkit, so no .daxkit/atomic (recover_scope.c) */
        if (alog_recover_named(up_root_at(i)->path, &rep) == 0 && rep.recovered)
            dk_log_verbose("%s: %llu DAXKIT_ATOMIC file(s) left by dead processes recovered to their last commit",
                           up_root_at(i)->path, (unsigned long long)rep.recovered);
    }
    DK_ERRNO_RESTORE;
}

void up_atomic_detach_all(void) {
    if (!dk_cfg.atomic[0]) return;
    dk_mu_lock(&up_table_mu);
    up_file_foreach(detach_cb, NULL);
    up_table_unlock();
}

bool up_atomic_truncate_inode(dev_t dev, ino_t ino, off_t len, int *rc) {
    if (!dk_cfg.atomic[0] || len < 0) return false;
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(dev, ino);
    struct up_atomic *a = f ? f->atomic : NULL;
    bool routed = false;
    if (a && DK_UNLIKELY(nested_in_write(f))) { /* a handler's truncate of the file its thread is writing */
        *rc = fail(-EDEADLK);
        routed = true;
    } else if (a) {
        const struct up_file *outer = write_lock(f);
        routed = a->eng != NULL;
        int r = routed ? ftruncate_locked(f, a, (uint64_t)len) : 0;
        write_unlock(f, outer);
        if (routed) *rc = r ? fail(r) : 0;
    }
    up_table_unlock();
    return routed;
}

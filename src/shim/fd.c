/* Descriptor calls: close, close_range, closefrom, dup family, fcntl, flock, lseek, ioctl (FIONREAD). */
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/pwrite_all.h"
#include "common/userptr.h"
#include "shim/shim.h"
#include "upath/inflight.h"

/* A pending descriptor (never used): nothing to do but its pending state -- with the number closing until the
 * kernel's close, so that a write through it meanwhile waits (upath/calls.h) -- but in a handler inside its
 * thread's table lock, maybe later. */
static int close_pending(int fd) {
    up_locks_close_begin(); /* the drop's forget of the lock set: a lock call in flight until the kernel's close */
    int c = up_pending_drop_closing(fd);
    if (DK_UNLIKELY(c < 0)) {
        up_locks_close_end();
        return up_close_later(fd);
    }
    up_fd_vacate(fd); /* (upath/fdtab.c: up_fd_opening) */
    if (up_fd_slot(fd)) { /* adopted meanwhile */
        int r = up_close_managed(fd);
        up_locks_close_end();
        return r;
    }
    /* not a cancellation point here: close's is first; the state back only after the count and the close-done
     * (asynchronous cancellation acts at the restore: review 24, #01 and #08) */
    int was = dk_cancel_off();
    int r = DK_REAL(close)(fd);
    up_locks_close_end();
    if (c > 0) {
        DK_ERRNO_SAVE;
        up_fd_close_done(fd);
        DK_ERRNO_RESTORE;
    }
    dk_cancel_restore(was);
    return r;
}

DK_EXPORT int close(int fd) {
    if (DK_LIKELY(up_enabled)) {
        up_dirfd_forget(fd);
        if (DK_UNLIKELY(up_fd_is_internal(fd))) {
            errno = EBADF; /* the program never opened it */
            return -1;
        }
        /* libc's close is a cancellation point before it closes anything: the library's too, before it
         * touches a managed number's state; its kernel close is then not one (review 24) */
        if (DK_UNLIKELY(up_fd_pending_entry(fd) != NULL)) {
            DK_CANCEL_POINT();
            return close_pending(fd);
        }
        if (up_fd_slot(fd)) {
            DK_CANCEL_POINT();
            return up_close_managed(fd);
        }
    }
    return DK_REAL(close)(fd);
}

struct range_arg {
    unsigned first, last;
    int kept[64]; /* the numbers the kernel's close_range skips: the library's own, and those left to the thread */
    int n_kept;
};
static void range_cb(int fd, struct up_fd *e, void *arg) {
    struct range_arg *a = arg;
    if ((unsigned)fd < a->first || (unsigned)fd > a->last) return;
    if (e->internal || up_close_range_later(fd, e)) { /* (a handler inside its thread's table lock: table_nested.c) */
        if (a->n_kept < 64) a->kept[a->n_kept++] = fd;
        return;
    }
    if (__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE)) {
        (void)up_pending_drop_closing(fd); /* the number closing until up_fd_close_done_range */
        up_fd_vacate(fd);
    }
    if (up_entry_slot(e)) { /* (not the closing marker a pending drop above left) */
        up_close(fd);
        up_fd_vacate(fd);
    }
}

DK_EXPORT int close_range(unsigned int first, unsigned int last, int flags) {
    if (!up_enabled || (flags & CLOSE_RANGE_CLOEXEC) || first > last) return DK_REAL(close_range)(first, last, flags);
    if (DK_UNLIKELY(!up_close_range_fits(first, last))) return -1; /* EDEADLK (table_nested.c) */
    up_dirfd_forget_range(first, last);
    struct range_arg a = {.first = first, .last = last};
    up_locks_close_begin(); /* the closes' forgets of lock sets: a lock call in flight until the kernel's close */
    up_fd_foreach(range_cb, &a);
    /* Close around the numbers kept (sorted ascending by the walk). */
    unsigned lo = first;
    int r = 0;
    for (int i = 0; i < a.n_kept && r == 0; i++) {
        unsigned fd = (unsigned)a.kept[i];
        if (fd > lo) r = DK_REAL(close_range)(lo, fd - 1, flags);
        lo = fd + 1;
    }
    if (r == 0 && lo <= last && lo >= first) r = DK_REAL(close_range)(lo, last, flags);
    up_locks_close_end();
    DK_ERRNO_SAVE;
    up_fd_close_done_range(first, last);
    DK_ERRNO_RESTORE;
    return r;
}

/* glibc's closefrom (2.34+) reaches the close_range system call through glibc's internal wrapper, which no
 * preload sees: it closed daxkit's own descriptors (the strict log, staging files, kept read-write
 * descriptors, the stats file's lock), and a strict process on a page-cache medium then failed every write
 * with EIO (review 11, finding 7). As glibc's: close_range(lowfd, ~0U, 0) -- the library's, which closes
 * around ours -- and where that fails, each open descriptor from /proc/self/fd through close. */
DK_EXPORT void closefrom(int lowfd) {
    unsigned first = lowfd < 0 ? 0u : (unsigned)lowfd;
    if (close_range(first, ~0U, 0) == 0) return;
    DK_ERRNO_SAVE;
    DIR *d = dk_ifd_opendirat(AT_FDCWD, "/proc/self/fd");
    if (!d) {
        DK_ERRNO_RESTORE;
        return;
    }
    struct dirent *e;
    while ((e = DK_REAL(readdir)(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || fd < (long)first || fd == dirfd(d)) continue;
        close((int)fd); /* ours answer EBADF and stay */
    }
    closedir(d);
    DK_ERRNO_RESTORE;
}

DK_EXPORT int dup(int fd) {
    if (up_enabled && DK_UNLIKELY(up_dup_refused_nested(fd, -1))) return -1; /* EDEADLK (table_nested.c) */
    if (up_enabled) up_resolve(fd); /* two descriptors, one description: one slot */
    uint64_t ifd = dk_ifd_before();
    int r = dk_ifd_relower(DK_REAL(dup)(fd), ifd, 0); /* the lowest number, as without daxkit (internal_fd.h) */
    if (r >= 0 && up_enabled) {
        struct up_fd *o = up_fd_opening(r); /* a vacated number: its writes in flight end first */
        if (up_fd_slot(fd)) up_dup(fd, r);
        up_fd_opened(r, o);
    }
    return r;
}

static int dup_to(int oldfd, int newfd, int flags, bool three) {
    if (up_enabled && DK_UNLIKELY(up_dup_refused_nested(oldfd, newfd))) return -1; /* EDEADLK (table_nested.c) */
    if (up_enabled && oldfd != newfd) up_close_later_settle(newfd); /* a handler's close left to its thread */
    if (up_enabled) up_dirfd_forget(newfd);
    if (up_enabled && oldfd != newfd && DK_UNLIKELY(up_fd_is_internal(newfd))) {
        up_aux_vacate(newfd);
        if (DK_REAL(fcntl)(oldfd, F_GETFD) >= 0) { /* (a dup2 that fails for oldfd closes nothing) */
            up_absent_vacate(newfd); /* (the absent names' inotify instance: the cache off) */
            up_lc_vacate(newfd);     /* (the lock board's: moved, its slot's OFD lock kept) */
        }
    }
    if (up_enabled && oldfd != newfd) up_resolve(oldfd);
    /* A close of newfd's file (pending or managed) forgets its lock set: a lock call in flight from there
     * until the kernel's dup2 closed it (reclock.c). Whatever newfd is: another thread may bind it meanwhile. */
    bool counted = up_enabled && oldfd != newfd;
    if (counted) up_locks_close_begin();
    /* a pending newfd: closing until the kernel's dup2 replaced it */
    int pclosing = up_enabled && oldfd != newfd && up_fd_pending_entry(newfd) && DK_REAL(fcntl)(oldfd, F_GETFD) >= 0
                       ? up_pending_drop_closing(newfd) : 0;
    if (DK_UNLIKELY(pclosing < 0)) {
        up_locks_close_end();
        errno = EDEADLK; /* a handler inside its thread's table lock: newfd's close cannot be told now */
        return -1;
    }
    /* Calls on newfd meanwhile wait until it names the new file (calls.h): dup2 replaces atomically. */
    bool closing = up_enabled && oldfd != newfd && up_fd_slot(newfd) && DK_REAL(fcntl)(oldfd, F_GETFD) >= 0;
    if (closing) up_close(newfd);
    int r = three ? DK_REAL(dup3)(oldfd, newfd, flags) : DK_REAL(dup2)(oldfd, newfd);
    if (counted) up_locks_close_end();
    struct up_fd *o = r >= 0 && up_enabled && oldfd != newfd && !closing ? up_fd_opening(newfd) : NULL;
    if (r >= 0 && up_enabled && oldfd != newfd && up_fd_slot(oldfd)) up_dup(oldfd, newfd);
    up_fd_opened(newfd, o);
    if (closing || pclosing > 0) {
        DK_ERRNO_SAVE;
        up_fd_close_done(newfd);
        DK_ERRNO_RESTORE;
    }
    return r;
}
DK_EXPORT int dup2(int oldfd, int newfd) { return dup_to(oldfd, newfd, 0, false); }
DK_EXPORT int dup3(int oldfd, int newfd, int flags) { return dup_to(oldfd, newfd, flags, true); }

static int is_setlk(int cmd) {
    return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

/* r = the kernel's lock call, inside reclock.c's count. F_SETLKW is a cancellation point (in glibc also for an
 * unlock): a thread cancelled in it must still end its call. A macro: pthread_cleanup_push's setjmp keeps a
 * function from being inlined, and a call of its own cost the untracked way ~15 instructions a lock call. */
#define KERNEL_LOCK(r, real, fd, cmd, l)                     \
    do {                                                     \
        if ((cmd) == F_SETLKW || (cmd) == F_OFD_SETLKW) {    \
            pthread_cleanup_push(up_lock_cancelled, NULL);   \
            r = (real)(fd, cmd, l);                          \
            pthread_cleanup_pop(0);                          \
        } else {                                             \
            r = (real)(fd, cmd, l);                          \
        }                                                    \
    } while (0)

/* A lock release is a publish point for every file of the process: a lock often guards other files than its
 * own (SQLite's WAL is guarded by locks on the -shm file). 0, or -1 with errno. */
static inline int release_publishes(int fd) {
    int rc = up_publish_release(fd);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* A lock call on a managed descriptor, begun and done in reclock.c's count. */
static int counted_lock(int (*real)(int, int, ...), int fd, int cmd, struct flock *l) {
    struct up_lock_call c = up_lock_call_begin();
    int r;
    if (DK_UNLIKELY(dk_cfg.lock_cache) && (cmd == F_SETLK || cmd == F_SETLKW)) r = up_lc_setlk(c, real, fd, cmd, l);
    else if (DK_UNLIKELY(dk_cfg.lock_cache)) r = up_lc_ofd(real, fd, cmd, l); /* (OFD: cached POSIX locks first) */
    else KERNEL_LOCK(r, real, fd, cmd, l);
    up_lock_done(c, fd, cmd, l, r == 0);
    if (r == 0 && l && l->l_type != F_UNLCK) up_inflight_after_lock(); /* a dead strict op: recovered first */
    return r;
}

/* F_DUPFD(_CLOEXEC): the lowest free number >= arg, as without daxkit (common/internal_fd.h). */
static int dupfd(int (*real)(int, int, ...), int fd, int cmd, void *arg) {
    uint64_t ifd = dk_ifd_before();
    return dk_ifd_relower(real(fd, cmd, arg), ifd, (int)(intptr_t)arg);
}

/* A POSIX lock call (F_SETLK/F_SETLKW, not SEEK_CUR-relative) on a number with a slot -- every lock call SQLite
 * makes, on its database and on its -shm -- what fcntl_full's general path does for it, without its looks and
 * frame (session 25 for a file the program maps; session 27 for every served file: fcntl_full's own part was ~80
 * instructions of a strict transaction's ~580 a lock call). The number has a slot: not pending, nothing to adopt;
 * not SEEK_CUR: no offset to hand to the kernel. A release publishes as any; an acquisition passes the descriptor
 * window's gate. `untracked`: the file's lock set is no longer followed (the program maps it: upath/reclock.c) --
 * the call is counted all the same (review 25, #2): another thread's close or dup2 of the number between the look
 * and the kernel call makes it another file's, whose set this call then changes -- its end forgets that set
 * (up_lock_untracked_done), and a call of that file overlapping this one does not run alone. A followed set's
 * call ends in up_lock_done, which looks the number up again after the kernel call. */
static __attribute__((noinline)) int served_lock(int (*real)(int, int, ...), int fd, int cmd, struct flock *l,
                                                 bool untracked) {
    if (untracked) DK_CRASH_POINT("shim.untracked_lock.looked"); /* tests: the number closed or dup2'ed over after the look */
    bool unlock = l->l_type == F_UNLCK;
    if (unlock) {
        if (release_publishes(fd)) return -1;
    } else {
        dk_ifd_lock_gate();
    }
    struct up_lock_call c = up_lock_call_begin();
    int r;
    if (DK_UNLIKELY(dk_cfg.lock_cache)) r = up_lc_setlk(c, real, fd, cmd, l); /* (lockcache.c) */
    else KERNEL_LOCK(r, real, fd, cmd, l);
    if (untracked) up_lock_untracked_done(c, fd, r == 0, !unlock);
    else up_lock_done(c, fd, cmd, l, r == 0);
    /* a strict process that died in an operation: recovered first (the mode looked at here: no call in posix) */
    if (r == 0 && !unlock && dk_cfg.mode == DK_MODE_STRICT) up_inflight_after_lock();
    return r;
}

static __attribute__((noinline)) int fcntl_full(int fd, int cmd, void *arg, bool is64) {
    int (*real)(int, int, ...) = is64 ? DK_REAL(fcntl64) : DK_REAL(fcntl);
    if (!up_enabled) {
        /* after exit too (review 25, #6): an exit's truncate by name may open and close the file in the descriptor
         * window (ptsync.c up_path_datasync), which would drop a first lock taken now. Any F_SETLK(W): the caller's
         * struct flock is not read while the library is off (an unlock gated too moves nothing later: harmless). */
        if (cmd == F_SETLK || cmd == F_SETLKW) dk_ifd_lock_gate();
        return real(fd, cmd, arg);
    }
    /* F_SETLK(W)'s pointer was looked at in fcntl_common */
    if ((cmd == F_GETLK || cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) &&
        DK_UNLIKELY(!dk_user_readable(arg, sizeof(struct flock))))
        return real(fd, cmd, arg); /* EFAULT, as without the library (common/userptr.h) */
    if ((cmd == F_SETLK || cmd == F_SETLKW) && arg && ((struct flock *)arg)->l_type != F_UNLCK) dk_ifd_lock_gate();
    if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && DK_UNLIKELY(up_dup_refused_nested(fd, -1))) return -1; /* EDEADLK */
    if (cmd != F_GETFD && cmd != F_SETFD && cmd != F_GETFL) up_resolve(fd);
    if (!up_fd_slot(fd)) {
        if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
            int r = dupfd(real, fd, cmd, arg);
            if (r >= 0) up_fd_opened(r, up_fd_opening(r)); /* settled: the number names fd's file */
            return r;
        }
        /* A lock on any file may guard managed ones: its release publishes them. */
        if (is_setlk(cmd) && arg && ((struct flock *)arg)->l_type == F_UNLCK) up_publish_all();
        int r = real(fd, cmd, arg);
        if (r == 0 && is_setlk(cmd) && arg && ((struct flock *)arg)->l_type != F_UNLCK) {
            up_inflight_after_lock(); /* a strict process that died in an operation: recovered first */
            up_refresh_all();
        }
        return r;
    }
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
        int r = dupfd(real, fd, cmd, arg);
        if (r >= 0) {
            struct up_fd *o = up_fd_opening(r); /* a vacated number: its writes in flight end first */
            up_dup(fd, r);
            up_fd_opened(r, o);
        }
        return r;
    }
    if (cmd == F_SETFL) {
        int r = real(fd, cmd, arg);
        struct up_slot *s = up_fd_slot(fd);
        if (r == 0 && s) {
            int fl = DK_REAL(fcntl)(fd, F_GETFL);
            if (fl >= 0) {
                uint32_t keep = s->flags & ~(uint32_t)(O_APPEND | O_DIRECT);
                __atomic_store_n(&s->flags, keep | ((uint32_t)fl & (O_APPEND | O_DIRECT)), __ATOMIC_RELEASE);
                if (fl & O_DIRECT) __atomic_store_n(&s->kernel, 1, __ATOMIC_RELEASE);
            }
        }
        return r;
    }
    if ((is_setlk(cmd) || cmd == F_GETLK || cmd == F_OFD_GETLK) && arg &&
        ((struct flock *)arg)->l_whence == SEEK_CUR) {
        /* relative to the offset: the library's, which served reads and writes did not give the kernel */
        DK_ERRNO_SAVE;
        up_offset_to_kernel(fd);
        DK_ERRNO_RESTORE;
    }
    if (is_setlk(cmd) && arg) {
        struct flock *l = arg;
        if (l->l_type == F_UNLCK && release_publishes(fd)) return -1;
        /* keeps count of the locks held; after an acquisition sizes are re-read: another process may have
         * published while we waited (upath/reclock.c) */
        return counted_lock(real, fd, cmd, l);
    }
    /* DAXKIT_LOCK_CACHE: the process's cached POSIX locks would show to its own F_OFD_GETLK (lockcache.c) */
    if (cmd == F_OFD_GETLK && arg && DK_UNLIKELY(dk_cfg.lock_cache)) return up_lc_ofd(real, fd, cmd, arg);
    return real(fd, cmd, arg);
}

/* The served lock call's way, before fcntl_full's frame (its six saved registers: ~20 instructions a call). */
static inline int fcntl_common(int fd, int cmd, void *arg, bool is64) {
    /* up_enabled first: a library that is off reads nothing of the caller's (a bad pointer is the kernel's EFAULT);
     * on, a struct flock the kernel could not read is not read here either: -1 EFAULT, not SIGSEGV (userptr.h) */
    if (up_enabled && (cmd == F_SETLK || cmd == F_SETLKW)) {
        if (DK_UNLIKELY(!dk_user_readable(arg, sizeof(struct flock))))
            return (is64 ? DK_REAL(fcntl64) : DK_REAL(fcntl))(fd, cmd, arg);
        if (((struct flock *)arg)->l_whence != SEEK_CUR) {
            int way = up_lock_way(fd);
            if (way != UP_LOCK_NOT_SERVED)
                return served_lock(is64 ? DK_REAL(fcntl64) : DK_REAL(fcntl), fd, cmd, arg, way == UP_LOCK_UNTRACKED);
        }
    }
    return fcntl_full(fd, cmd, arg, is64);
}

DK_EXPORT int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(fd, cmd, arg, false);
}
DK_EXPORT int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(fd, cmd, arg, true);
}

/* lockf(3) as glibc implements it (io/lockf64.c): a POSIX record lock from the current offset, len bytes
 * (0: to the end of the file and beyond; negative: the len bytes before the offset) -- but through the
 * shim's fcntl, so that F_ULOCK publishes and F_LOCK/F_TLOCK refresh sizes as fcntl's F_SETLK(W) do. glibc's
 * own lockf calls its internal fcntl, which a preload never sees: appends made under lockf were invisible
 * to the next holder of the lock (review 9, finding 10). A managed descriptor's offset is the library's (the
 * kernel's may be behind a served read or write): its range is made absolute here (which also lets
 * upath/reclock.c follow it; SEEK_CUR ranges make its set unknown). F_LOCK is F_SETLKW: a cancellation
 * point, as in glibc. */
static int lockf_common(int fd, int cmd, off_t len, bool is64) {
    struct flock l = {.l_whence = SEEK_CUR, .l_start = 0, .l_len = len};
    if (up_enabled && (cmd == F_TEST || cmd == F_ULOCK || cmd == F_LOCK || cmd == F_TLOCK)) {
        up_resolve(fd);
        if (up_fd_slot(fd)) {
            DK_ERRNO_SAVE;
            off_t cur = lseek(fd, 0, SEEK_CUR); /* the shim's: a served descriptor's own offset */
            DK_ERRNO_RESTORE;
            if (cur >= 0) l.l_whence = SEEK_SET, l.l_start = cur;
        }
    }
    switch (cmd) {
    case F_TEST: /* 0 when unlocked or locked by this process, EACCES when another holds it */
        l.l_type = F_RDLCK;
        if (fcntl_full(fd, F_GETLK, &l, is64) < 0) return -1;
        if (l.l_type == F_UNLCK || l.l_pid == DK_REAL(getpid)()) return 0;
        errno = EACCES;
        return -1;
    case F_ULOCK:
        l.l_type = F_UNLCK;
        return fcntl_common(fd, F_SETLK, &l, is64);
    case F_LOCK:
        l.l_type = F_WRLCK;
        return fcntl_common(fd, F_SETLKW, &l, is64);
    case F_TLOCK:
        l.l_type = F_WRLCK;
        return fcntl_common(fd, F_SETLK, &l, is64);
    }
    errno = EINVAL;
    return -1;
}
/* The library off (at exit): glibc's lockf, gated as fcntl's F_SETLK(W) is (review 25, #6). */
static bool lockf_off(int cmd) {
    if (up_enabled) return false;
    if (cmd == F_LOCK || cmd == F_TLOCK) dk_ifd_lock_gate();
    return true;
}
DK_EXPORT int lockf(int fd, int cmd, off_t len) {
    if (lockf_off(cmd)) return DK_REAL(lockf)(fd, cmd, len);
    return lockf_common(fd, cmd, len, false);
}
DK_EXPORT int lockf64(int fd, int cmd, off64_t len) {
    if (lockf_off(cmd)) return DK_REAL(lockf64)(fd, cmd, len);
    return lockf_common(fd, cmd, (off_t)len, true);
}

DK_EXPORT int flock(int fd, int op) {
    if (!up_enabled) return DK_REAL(flock)(fd, op);
    if (!up_fd_slot(fd)) {
        if (op & LOCK_UN) up_publish_all(); /* the lock may guard managed files */
        int r = DK_REAL(flock)(fd, op);
        if (r == 0 && !(op & LOCK_UN)) {
            up_inflight_after_lock(); /* a strict process that died in an operation: recovered first */
            up_refresh_all();
        }
        return r;
    }
    if (op & LOCK_UN) {
        int rc = up_publish_fd(fd);
        up_publish_all(); /* as for fcntl unlock: the lock may guard other files */
        if (rc) {
            errno = -rc;
            return -1;
        }
        return DK_REAL(flock)(fd, op);
    }
    int r = DK_REAL(flock)(fd, op);
    if (r == 0) {
        up_inflight_after_lock(); /* a strict process that died in an operation: recovered first */
        up_refresh_all();
    }
    return r;
}

/* A pending descriptor that may pass reads through seeks in the kernel (its offset is the kernel's
 * until adopted); any other is adopted first (SEEK_END must see the file's staged appends). */
static off_t pending_seek(int fd, off_t r) {
    struct up_fd *e = up_fd_pending_entry(fd);
    if (e && r >= 0) __atomic_store_n(&e->pend_off, (uint64_t)r, __ATOMIC_RELAXED);
    return r;
}
static off_t served_seek(struct up_slot *s, int fd, off_t off, int whence) {
    off_t r = up_lseek(s, fd, off, whence);
    up_served_end();
    return r;
}
/* The kernel's lseek of a managed descriptor it serves (shared with a fork relative): SEEK_END, SEEK_DATA and
 * SEEK_HOLE look at the file's end and data, so this process's staged appends go to the kernel first, as
 * before its read or write (review 12, finding 4). */
static off_t seek_by_kernel(int fd, off_t off, int whence, off_t (*real)(int, off_t, int)) {
    if (whence != SEEK_SET && whence != SEEK_CUR && up_enabled) (void)dk_pt_begin(fd);
    return real(fd, off, whence);
}
DK_EXPORT off_t lseek(int fd, off_t off, int whence) {
    struct up_slot *s;
    struct up_fd *e = up_enabled ? up_fd_entry(fd) : NULL;
    if (up_enabled && dk_pt_none(e, false)) return DK_REAL_ON(lseek)(fd, off, whence); /* none of ours (shim.h) */
    if (up_enabled && (s = up_serving_at(e, fd))) return served_seek(s, fd, off, whence);
    if (up_enabled && DK_UNLIKELY(up_fd_pending_entry(fd) != NULL)) {
        if (up_pending_may_pass(fd)) return pending_seek(fd, DK_REAL(lseek)(fd, off, whence));
        if ((s = up_serving(fd))) return served_seek(s, fd, off, whence);
    } else if (up_enabled && (s = up_serving(fd))) { /* another thread adopted it between the two looks */
        return served_seek(s, fd, off, whence);
    }
    if (up_enabled && DK_UNLIKELY(dk_ifd_settle()) && (s = up_serving(fd))) return served_seek(s, fd, off, whence);
    return seek_by_kernel(fd, off, whence, DK_REAL(lseek));
}
DK_EXPORT off_t lseek64(int fd, off_t off, int whence) {
    struct up_slot *s;
    struct up_fd *e = up_enabled ? up_fd_entry(fd) : NULL;
    if (up_enabled && dk_pt_none(e, false)) return DK_REAL_ON(lseek64)(fd, off, whence); /* none of ours (shim.h) */
    if (up_enabled && (s = up_serving_at(e, fd))) return served_seek(s, fd, off, whence);
    if (up_enabled && DK_UNLIKELY(up_fd_pending_entry(fd) != NULL)) {
        if (up_pending_may_pass(fd)) return pending_seek(fd, DK_REAL(lseek64)(fd, off, whence));
        if ((s = up_serving(fd))) return served_seek(s, fd, off, whence);
    } else if (up_enabled && (s = up_serving(fd))) { /* another thread adopted it between the two looks */
        return served_seek(s, fd, off, whence);
    }
    if (up_enabled && DK_UNLIKELY(dk_ifd_settle()) && (s = up_serving(fd))) return served_seek(s, fd, off, whence);
    return seek_by_kernel(fd, off, whence, DK_REAL(lseek64));
}

/* glibc's closedir closes its descriptor without the interposed close: a directory descriptor's verdict
 * (upath/managed.c) must be forgotten here, or a number reused by the next opendir would inherit it; so
 * must a pending descriptor (a directory the program opened with open() and handed to fdopendir). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull-compare" /* declared nonnull, yet glibc answers NULL with EINVAL */
DK_EXPORT int closedir(DIR *d) {
    if (up_enabled && d) {
        up_dirfd_forget(dirfd(d));
        if (DK_UNLIKELY(up_fd_pending_entry(dirfd(d)) != NULL)) (void)up_pending_drop(dirfd(d)); /* (a directory: done) */
    }
    return DK_REAL(closedir)(d);
}
#pragma GCC diagnostic pop

/* ioctl: FIONREAD on a regular file is the kernel's i_size - f_pos (fs/ioctl.c, stored as an int), and on a
 * served descriptor both lag -- appends staged, the offset moved by served calls: a program sizing its read
 * with it read nothing (review 11, finding 17: 0 where the kernel answers 4,000). The kernel is asked first
 * (its checks and errors -- EBADF, EFAULT -- stay its own), then a served descriptor's answer is replaced
 * with daxkit's size minus the descriptor's offset, computed the kernel's way. A descriptor the kernel
 * serves (shared, O_DIRECT) has the file's appends published first. Every other request passes through. */
DK_EXPORT int ioctl(int fd, unsigned long req, ...) {
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (DK_LIKELY(req != FIONREAD) || !up_enabled) return DK_REAL(ioctl)(fd, req, arg);
    struct up_slot *s = NULL;
    if (!up_pending_may_pass(fd) || up_fd_slot(fd)) {
        s = up_serving(fd);
        if (!s) dk_pt_begin(fd);
    }
    int r = DK_REAL(ioctl)(fd, req, arg);
    if (r == 0 && s) {
        int64_t left = (int64_t)(up_file_size(s->file) - __atomic_load_n(&s->offset, __ATOMIC_ACQUIRE));
        *(int *)arg = (int)left;
    }
    /* The call's record named the descriptor until here: left named, another thread's close of it waited
     * for ever (session 13; shim_fd_lifetime_fionread_*). */
    if (s) up_served_end();
    return r;
}

/* Durability, size and metadata calls: fsync family, truncate, fallocate, stat family, names. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/config.h"
#include "common/userptr.h"
#include "oplog/oplog.h"
#include "shim/shim.h"
#include "upath/atomic_route.h"

/* fsync and fdatasync: the number's entry looked up once; one with a slot is not pending (an adoption binds
 * the slot before it ends the pending state: the read/write family's entry points serve it at once, shim/rw.c
 * DK_RW) -- only a number without one may be a pending descriptor, adopted when it may not pass (~25
 * instructions of every synced record before, session 26: the pending look, a second look-up). */
static inline int sync_entry(int fd, bool datasync) {
    struct up_slot *s;
    if (DK_LIKELY(up_enabled)) {
        struct up_fd *e = up_fd_entry(fd);
        if (!e || __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) == NULL) {
            up_pending_may_pass(fd); /* a pending fd that may not pass is adopted */
            e = up_fd_entry(fd);
        }
        DK_CANCEL_POINT(); /* before the slot is held (calls.h) */
        if ((s = up_serving_sync_at(e, fd)) != NULL) { /* (a lock's size re-read may wait: upath.c put_off) */
            int r = up_fsync(s, fd, datasync);
            up_served_end();
            return r;
        }
        if (up_fd_slot(fd)) up_publish_fd(fd);
    }
    return datasync ? DK_REAL(fdatasync)(fd) : DK_REAL(fsync)(fd);
}
DK_EXPORT int fsync(int fd) { return sync_entry(fd, false); }
DK_EXPORT int fdatasync(int fd) { return sync_entry(fd, true); }
DK_EXPORT int sync_file_range(int fd, off_t off, off_t n, unsigned int fl) {
    /* Starts write-back of a range: publish so the range is in the file, then let the kernel do it. */
    if (up_enabled) up_pending_may_pass(fd);
    if (up_enabled && up_fd_slot(fd)) up_publish_fd(fd);
    return DK_REAL(sync_file_range)(fd, off, n, fl);
}

/* sync and syncfs write back what is in the kernel's files: the process's unpublished appends go in first
 * (every file: syncfs's file system may hold any of them), so that they are durable when the call returns
 * as they would be through the kernel. */
DK_EXPORT void sync(void) {
    if (up_enabled) up_publish_all();
    DK_REAL(sync)();
}
DK_EXPORT int syncfs(int fd) {
    if (up_enabled) up_publish_all();
    return DK_REAL(syncfs)(fd);
}

/* A call that changes fd's file (0, or -1 with errno): served_call with the slot s_ when the library serves fd;
 * otherwise real_call, named until its fdatasync (shim.h dk_pt_begin_change) -- and after exit turned the
 * library off, synced as a write is (rw.c SERVE_IF). Returns from the function. */
#define SERVE_OR_CHANGE(fd, served_call, real_call)                                                \
    do {                                                                                           \
        struct up_slot *s_;                                                                        \
        if (up_enabled) up_resolve(fd);                                                            \
        if (up_enabled && (s_ = up_serving(fd))) {                                                 \
            int sr_ = (served_call);                                                               \
            up_served_end();                                                                       \
            return sr_;                                                                            \
        }                                                                                          \
        struct dk_pt p_;                                                                           \
        dk_pt_begin_change(fd, &p_);                                                               \
        bool synced_ = p_.how == DK_PT_KERNEL && up_exit_hold(fd); /* the library off at exit */   \
        int r_;                                                                                    \
        DK_PT_CALL(&p_, r_ = (real_call));                                                         \
        if (synced_) return (int)up_exit_synced(fd, r_, r_ == 0);                                  \
        return (int)dk_pt_end_changed(&p_, fd, r_);                                                \
    } while (0)

DK_EXPORT int ftruncate(int fd, off_t len) {
    SERVE_OR_CHANGE(fd, up_ftruncate(s_, fd, len), DK_REAL(ftruncate)(fd, len));
}
DK_EXPORT int ftruncate64(int fd, off_t len) { return ftruncate(fd, len); }

/* After exit turned the library off (sync, strict: files held, lifecycle.c): a truncate by name of a file managed
 * at that moment waits, as an ftruncate (another thread's), or is synced after (the exiting thread's own). */
static int truncate_after_exit(const char *path, off_t len, int (*real)(const char *, off_t)) {
    struct stat st;
    DK_ERRNO_SAVE;
    int fd = -1;
    bool synced = DK_REAL(stat)(path, &st) == 0 && S_ISREG(st.st_mode) && up_exit_hold_inode(st.st_dev, st.st_ino, &fd);
    DK_ERRNO_RESTORE;
    int r = real(path, len);
    int err;
    if (r == 0 && synced && (err = up_path_datasync(path, st.st_dev, st.st_ino, fd)) != 0) {
        errno = err;
        r = -1;
    }
    return r;
}

static int truncate_path(const char *path, off_t len, bool is64) {
    int (*real)(const char *, off_t) = is64 ? DK_REAL(truncate64) : DK_REAL(truncate);
    if (!up_enabled) {
        if (DK_LIKELY(!__atomic_load_n(&up_exit_hold_flag, __ATOMIC_ACQUIRE))) return real(path, len);
        return truncate_after_exit(path, len, real);
    }
    struct stat st;
    DK_ERRNO_SAVE;
    bool known = DK_REAL(stat)(path, &st) == 0 && S_ISREG(st.st_mode) && up_dev_is_managed(st.st_dev);
    DK_ERRNO_RESTORE;
    /* a signal handler inside its thread's hold of the file table's lock: EDEADLK, nothing changed (it waited for
     * its own thread for ever: session 28) */
    if (known && DK_UNLIKELY(up_truncate_refused_nested())) return -1;
    int arc;
    if (known && up_atomic_truncate_inode(st.st_dev, st.st_ino, len, &arc)) return arc; /* DAXKIT_ATOMIC */
    struct up_strict_name logged = {0};
    struct up_trunc_hold held = {0};
    if (known) {
        up_truncating_by_name();
        up_publish_inode(st.st_dev, st.st_ino);
        if (len >= 0) up_truncate_inode_enter(st.st_dev, st.st_ino, &held); /* (a descriptor's call, before the hold) */
        /* strict: a record in log order, the root's strict writes held out until the kernel's truncate is done */
        int lr = dk_cfg.mode == DK_MODE_STRICT && len >= 0
                     ? up_strict_truncate_name_begin(AT_FDCWD, path, st.st_dev, st.st_ino, (uint64_t)len, &logged)
                     : 0;
        if (lr) {
            up_truncate_inode_done(&held, false, 0);
            errno = -lr;
            return -1;
        }
        /* the file the record names: the one the name named under the hold (a rename since the stat above) */
        if (logged.st) st.st_dev = logged.dev, st.st_ino = logged.ino;
        /* a shrink of a file open here: other threads' writes wait for the new size, as for an ftruncate */
        if (len >= 0) up_truncate_inode_lock(&held, st.st_dev, st.st_ino, (uint64_t)len);
    }
    int r = real(path, len);
    up_truncate_inode_done(&held, r == 0, (uint64_t)len); /* (keeps errno) */
    if (logged.st) up_strict_truncate_name_end(&logged, r == 0); /* (keeps errno) */
    if (r == 0 && known) DK_CRASH_POINT("shim.truncate_name.cut"); /* tests: another thread's write from here */
    if (r == 0 && known) {
        int fd = up_truncated(st.st_dev, st.st_ino, len);
        DK_ERRNO_RESTORE; /* success: errno as the program left it */
        /* sync, strict: durable when it returns, as an ftruncate passed to the kernel (session 25: it was not) */
        int err = dk_cfg.mode != DK_MODE_POSIX ? up_path_datasync(path, st.st_dev, st.st_ino, fd) : 0;
        if (err) {
            errno = err;
            r = -1;
        }
    }
    return r;
}
DK_EXPORT int truncate(const char *path, off_t len) { return truncate_path(path, len, false); }
DK_EXPORT int truncate64(const char *path, off_t len) { return truncate_path(path, len, true); }

DK_EXPORT int fallocate(int fd, int mode, off_t off, off_t len) {
    SERVE_OR_CHANGE(fd, up_fallocate(s_, fd, mode, off, len), DK_REAL(fallocate)(fd, mode, off, len));
}
DK_EXPORT int fallocate64(int fd, int mode, off_t off, off_t len) { return fallocate(fd, mode, off, len); }

static int posix_fallocate_common(int fd, off_t off, off_t len, bool is64) {
    int (*real)(int, off_t, off_t) = is64 ? DK_REAL(posix_fallocate64) : DK_REAL(posix_fallocate);
    if (up_enabled) up_resolve(fd);
    if (!up_enabled || !up_fd_slot(fd)) {
        if (!up_exit_hold(fd)) return real(fd, off, len); /* the library off at exit: as a write (rw.c SERVE_IF) */
        int r = real(fd, off, len); /* an error number, errno untouched */
        DK_ERRNO_SAVE;
        if (r == 0 && up_exit_synced(fd, 0, true) != 0) r = errno;
        DK_ERRNO_RESTORE;
        return r;
    }
    DK_ERRNO_SAVE;
    up_hand_to_kernel(fd);
    /* Named from here until after its fdatasync (shim.h: dk_pt_begin_change), as fallocate: a close, dup2 or
     * reopen of the number meanwhile waits, and the fdatasync syncs the file it changed (review 16, finding
     * 8: a reopen in between had the new file synced). Sync and strict: the size and blocks durable when
     * the call returns (review 11, finding 9). */
    struct dk_pt p;
    dk_pt_begin_change(fd, &p);
    bool synced = p.how == DK_PT_KERNEL && up_exit_hold(fd); /* the library went off since the look above */
    int r;
    DK_PT_CALL(&p, r = real(fd, off, len)); /* returns an error number, errno untouched */
    if (synced ? r == 0 && up_exit_synced(fd, 0, true) != 0 : dk_pt_end_changed(&p, fd, r) != 0 && r == 0) r = errno;
    DK_ERRNO_RESTORE;
    return r;
}
DK_EXPORT int posix_fallocate(int fd, off_t off, off_t len) { return posix_fallocate_common(fd, off, len, false); }
DK_EXPORT int posix_fallocate64(int fd, off_t off, off_t len) { return posix_fallocate_common(fd, off, len, true); }

/* ---- stat family: a file with appends not yet published reports its logical size ---- */

/* A size that cannot be looked up (a signal handler inside its thread's table lock: upath.h up_fix_stat) */
static inline int refused(int rc) {
    errno = -rc;
    return -1;
}

static inline int fix(int r, struct stat *st) {
    if (r == 0 && up_enabled && S_ISREG(st->st_mode)) {
        DK_ERRNO_SAVE;
        int rc = up_fix_stat(st->st_dev, st->st_ino, &st->st_size);
        DK_ERRNO_RESTORE;
        if (DK_UNLIKELY(rc)) return refused(rc);
    }
    return r;
}
#define FIX64(r, st) fix((r), (struct stat *)(st)) /* struct stat64 == struct stat on x86-64 */

/* The program's fstat of a pending descriptor (upath/pending.c) adopts it from the result: no fstat of ours. */
/* A number the library held for a moment (common/internal_fd.h) is waited for first. */
static inline bool pend_begin(int fd) {
    if (!up_enabled) return false;
    (void)dk_ifd_settle();
    return up_pending_fstat_begin(fd);
}
static inline int fixfd_pend(int r, int fd, struct stat *st, bool pend, struct up_fstat_look *k) {
    if (k->s) { /* a served descriptor, its call record taken before the kernel's call (up_fstat_begin) */
        DK_ERRNO_SAVE;
        bool reg = r == 0 && S_ISREG(st->st_mode);
        up_fstat_end(fd, k, reg ? 0 : -1, &st->st_size);
        DK_ERRNO_RESTORE;
        return r;
    }
    if (DK_UNLIKELY(pend) && r == 0) {
        DK_ERRNO_SAVE;
        up_pending_fstat_done(fd, st);
        DK_ERRNO_RESTORE;
    } else if (r == 0 && up_enabled && S_ISDIR(st->st_mode)) {
        up_pending_fstat_dir(fd, st); /* tar cf's directories: upath/pending.c */
    }
    if (r == 0 && up_enabled && S_ISREG(st->st_mode)) {
        DK_ERRNO_SAVE;
        int rc = 0;
        if (up_fd_slot(fd)) up_fix_fstat(fd, &st->st_size);
        else rc = up_fix_stat(st->st_dev, st->st_ino, &st->st_size);
        DK_ERRNO_RESTORE;
        if (DK_UNLIKELY(rc)) return refused(rc);
    }
    return r;
}

/* A name the kernel said is absent, answered ENOENT while nothing could have made it appear (DAXKIT_ABSENT_CACHE,
 * on by default: upath/absent.c); else the call, whose ENOENT may be kept. The name is read before the call only
 * by up_absent_known, in a process that keeps names (after checking the kernel could read it); after the call
 * only when the kernel said ENOENT -- it read the name. A process that keeps none (tar, rsync) pays two loads and
 * a call a stat: no readability probe (a futex system call a new heap page: defaults29's tar +0.4% instructions). */
#define ABSENT_OR(p, call)                                                                    \
    ({                                                                                        \
        int ar_;                                                                              \
        if (DK_LIKELY(!dk_cfg.absent_cache) || !up_enabled) {                                 \
            ar_ = (call);                                                                     \
        } else if (up_absent_known(p)) {                                                      \
            errno = ENOENT;                                                                   \
            ar_ = -1;                                                                         \
        } else {                                                                              \
            uint64_t at_ = up_absent_begin(p);                                                \
            ar_ = (call);                                                                     \
            if (ar_ != 0 && at_ && errno == ENOENT) up_absent_end((p), at_, ar_, errno);      \
        }                                                                                     \
        ar_;                                                                                  \
    })
/* The program's own inotify: the absent names' instance and watches count against the same per-user limits
 * (fs.inotify.max_user_instances, 128 by default; max_user_watches) -- a call refused for them is made again
 * after the library gave its own back (the cache then off in this process, counted: upath/absent.c). */
DK_EXPORT int inotify_init(void) {
    int r = DK_REAL(inotify_init)();
    if (DK_UNLIKELY(r < 0) && errno == EMFILE && up_enabled && up_absent_give_up()) r = DK_REAL(inotify_init)();
    return r;
}
DK_EXPORT int inotify_init1(int flags) {
    int r = DK_REAL(inotify_init1)(flags);
    if (DK_UNLIKELY(r < 0) && errno == EMFILE && up_enabled && up_absent_give_up()) r = DK_REAL(inotify_init1)(flags);
    return r;
}
DK_EXPORT int inotify_add_watch(int fd, const char *name, uint32_t mask) {
    int r = DK_REAL(inotify_add_watch)(fd, name, mask);
    if (DK_UNLIKELY(r < 0) && errno == ENOSPC && up_enabled && up_absent_give_up()) r = DK_REAL(inotify_add_watch)(fd, name, mask);
    return r;
}
DK_EXPORT int stat(const char *p, struct stat *st) { return fix(ABSENT_OR(p, DK_REAL(stat)(p, st)), st); }
DK_EXPORT int stat64(const char *p, struct stat64 *st) { return FIX64(ABSENT_OR(p, DK_REAL(stat64)(p, st)), st); }
DK_EXPORT int lstat(const char *p, struct stat *st) { return fix(ABSENT_OR(p, DK_REAL(lstat)(p, st)), st); }
DK_EXPORT int lstat64(const char *p, struct stat64 *st) { return FIX64(ABSENT_OR(p, DK_REAL(lstat64)(p, st)), st); }
/* (made again when a window of the library's own opens overlapped it: common/internal_fd.h) */
/* A served descriptor's: its answer may be the lock's size re-read (upath.h up_fstat_begin). */
#define FIXFD(fd, call, st)                           \
    ({                                                \
        bool pend_ = pend_begin(fd);                  \
        struct up_fstat_look k_ = {NULL, 0, 0};       \
        if (up_enabled && !pend_) {                   \
            DK_ERRNO_SAVE;                            \
            (void)up_fstat_begin((fd), &k_);          \
            DK_ERRNO_RESTORE;                         \
        }                                             \
        int fr_ = up_enabled ? DK_IFD_RETRY(call) : (call); \
        fixfd_pend(fr_, (fd), (struct stat *)(st), pend_, &k_); \
    })
/* fstatat(fd, "", AT_EMPTY_PATH): glibc's own fstat since 2.33, and what programs call for it too. The name is
 * read only if the kernel could (an unreadable one: its EFAULT by the other way, not a SIGSEGV here). */
static inline bool by_fd(const char *p, int fl) { return (fl & AT_EMPTY_PATH) && p && dk_user_str_readable(p) && !p[0]; }
DK_EXPORT int fstat(int fd, struct stat *st) { return FIXFD(fd, DK_REAL(fstat)(fd, st), st); }
DK_EXPORT int fstat64(int fd, struct stat64 *st) { return FIXFD(fd, DK_REAL(fstat64)(fd, st), st); }
DK_EXPORT int fstatat(int d, const char *p, struct stat *st, int fl) {
    if (by_fd(p, fl)) return FIXFD(d, DK_REAL(fstatat)(d, p, st, fl), st);
    if (fl & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)) return fix(DK_REAL(fstatat)(d, p, st, fl), st); /* (EINVAL: the kernel's) */
    return fix(ABSENT_OR(p, DK_REAL(fstatat)(d, p, st, fl)), st);
}
DK_EXPORT int fstatat64(int d, const char *p, struct stat64 *st, int fl) {
    if (by_fd(p, fl)) return FIXFD(d, DK_REAL(fstatat64)(d, p, st, fl), st);
    if (fl & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)) return FIX64(DK_REAL(fstatat64)(d, p, st, fl), st);
    return FIX64(ABSENT_OR(p, DK_REAL(fstatat64)(d, p, st, fl)), st);
}
DK_EXPORT int __xstat(int v, const char *p, struct stat *st) { return fix(DK_REAL(__xstat)(v, p, st), st); }
DK_EXPORT int __xstat64(int v, const char *p, struct stat64 *st) { return FIX64(DK_REAL(__xstat64)(v, p, st), st); }
DK_EXPORT int __lxstat(int v, const char *p, struct stat *st) { return fix(DK_REAL(__lxstat)(v, p, st), st); }
DK_EXPORT int __lxstat64(int v, const char *p, struct stat64 *st) { return FIX64(DK_REAL(__lxstat64)(v, p, st), st); }
DK_EXPORT int __fxstat(int v, int fd, struct stat *st) { return FIXFD(fd, DK_REAL(__fxstat)(v, fd, st), st); }
DK_EXPORT int __fxstat64(int v, int fd, struct stat64 *st) { return FIXFD(fd, DK_REAL(__fxstat64)(v, fd, st), st); }
DK_EXPORT int __fxstatat(int v, int d, const char *p, struct stat *st, int fl) {
    return fix(DK_REAL(__fxstatat)(v, d, p, st, fl), st);
}
DK_EXPORT int __fxstatat64(int v, int d, const char *p, struct stat64 *st, int fl) {
    return FIX64(DK_REAL(__fxstatat64)(v, d, p, st, fl), st);
}

DK_EXPORT int statx(int d, const char *p, int fl, unsigned int mask, struct statx *st) {
    int r = DK_REAL(statx)(d, p, fl, mask, st);
    if (r == 0 && up_enabled && (st->stx_mask & STATX_SIZE) && S_ISREG(st->stx_mode)) {
        off_t size = (off_t)st->stx_size;
        DK_ERRNO_SAVE;
        int rc = up_fix_stat(makedev(st->stx_dev_major, st->stx_dev_minor), st->stx_ino, &size);
        DK_ERRNO_RESTORE;
        if (DK_UNLIKELY(rc)) return refused(rc);
        st->stx_size = (uint64_t)size;
    }
    return r;
}

/* ---- names: a file whose last name goes away is dropped from the mapping cache ---- */

/* The inode `path` names now, if it is a managed regular file. */
static bool victim(int dirfd, const char *path, struct stat *st) {
    if (!up_victim_matters()) return false;
    DK_ERRNO_SAVE;
    bool ok = DK_REAL(fstatat)(dirfd, path, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) &&
              up_dev_is_managed(st->st_dev);
    DK_ERRNO_RESTORE;
    return ok;
}

static int after_remove(int r, bool known, const struct stat *st) {
    if (r == 0 && known) {
        DK_ERRNO_SAVE;
        up_name_removed(st->st_dev, st->st_ino);
        DK_ERRNO_RESTORE;
    }
    return r;
}

/* Strict mode: the name change is logged first and durable when the call returns. */
#define STRICT_META(type, d1, p1, d2, p2, call)                               \
    ({                                                                        \
        int lr_ = up_enabled ? up_strict_meta_begin(type, d1, p1, d2, p2) : 0; \
        int r_ = -1;                                                          \
        if (lr_) errno = EIO;                                                 \
        else {                                                                \
            r_ = (call);                                                      \
            if (r_ == 0 && up_enabled) up_strict_meta_end(d1, p1, d2, p2);    \
        }                                                                     \
        r_;                                                                   \
    })

DK_EXPORT int unlink(const char *path) {
    struct stat st;
    bool known = up_enabled && victim(AT_FDCWD, path, &st);
    return after_remove(STRICT_META(DK_OPLOG_UNLINK, AT_FDCWD, path, AT_FDCWD, NULL, DK_REAL(unlink)(path)), known,
                        &st);
}
/* The managed root named dirfd/path (a directory), or NULL. */
static struct up_root *root_named(int dirfd, const char *path) {
    struct stat st, rs;
    if (DK_REAL(fstatat)(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return NULL;
    for (int i = 0; i < up_roots_count(); i++) {
        struct up_root *r = up_root_at(i);
        if (r->dev == st.st_dev && DK_REAL(stat)(r->path, &rs) == 0 && rs.st_ino == st.st_ino && rs.st_dev == st.st_dev)
            return r;
    }
    return NULL;
}

/* The rmdir of a managed root answered "not empty": readdir never lists the root's .daxkit area (below), so
 * `rm -rf ROOT` had removed everything it saw and failed there (review 11, finding 6). When the area holds
 * nothing but this process's own files it goes (upath/area_release.c) and the kernel is asked again;
 * otherwise -- another process's files, or anything else left in the root -- the kernel's answer stands. */
#define RMDIR_ROOT(dirfd, path, call)                                                            \
    ({                                                                                           \
        int rr_ = (call);                                                                         \
        if (rr_ != 0 && (errno == ENOTEMPTY || errno == EEXIST) && up_enabled) {                   \
            int e_ = errno;                                                                      \
            struct up_root *root_ = root_named(dirfd, path);                                     \
            if (root_ && up_area_release(root_)) rr_ = (call);                                    \
            else errno = e_;                                                                     \
        }                                                                                        \
        rr_;                                                                                      \
    })

/* A directory's name went (rmdir), a directory got a name (a rename) or names now lead elsewhere (a mount):
 * when the call r succeeded, the recovery scope's directories, remembered by name, are looked at again -- a
 * directory moved to a name looked at before may hold an area with a dead process's records
 * (upath/recover_scope.c). */
static int names_moved_if(int r) {
    if (r == 0 && up_enabled) {
        DK_ERRNO_SAVE;
        up_recover_names_moved();
        DK_ERRNO_RESTORE;
    }
    return r;
}
/* After a rename (flags fl): one stat of the new name -- a file's rename (rsync's, one per file) moves no
 * directory; a symbolic link's may lead a name to another directory; an exchange moves two names, each maybe
 * a directory's. (A link removed and made again by unlink + symlink is not seen: review 18 #06.) */
static int after_rename(int r, int d2, const char *to, unsigned int fl) {
    if (r != 0 || !up_enabled) return r;
    struct stat st;
    DK_ERRNO_SAVE;
    if ((fl & RENAME_EXCHANGE) || DK_REAL(fstatat)(d2, to, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode) ||
        S_ISLNK(st.st_mode))
        up_recover_names_moved();
    DK_ERRNO_RESTORE;
    return r;
}

DK_EXPORT int unlinkat(int dirfd, const char *path, int fl) {
    struct stat st;
    bool known = up_enabled && !(fl & AT_REMOVEDIR) && victim(dirfd, path, &st);
    int r = after_remove(STRICT_META(DK_OPLOG_UNLINK, dirfd, path, dirfd, NULL,
                                     (fl & AT_REMOVEDIR) ? RMDIR_ROOT(dirfd, path, DK_REAL(unlinkat)(dirfd, path, fl))
                                                         : DK_REAL(unlinkat)(dirfd, path, fl)),
                         known, &st);
    return (fl & AT_REMOVEDIR) ? names_moved_if(r) : r;
}
DK_EXPORT int mount(const char *src, const char *target, const char *fstype, unsigned long fl, const void *data) {
    return names_moved_if(DK_REAL(mount)(src, target, fstype, fl, data));
}
DK_EXPORT int umount(const char *target) { return names_moved_if(DK_REAL(umount)(target)); }
DK_EXPORT int umount2(const char *target, int fl) { return names_moved_if(DK_REAL(umount2)(target, fl)); }
DK_EXPORT int rmdir(const char *path) { return names_moved_if(RMDIR_ROOT(AT_FDCWD, path, DK_REAL(rmdir)(path))); }

/* remove(3): glibc's calls its internal unlink and rmdir, which the preload never sees -- in strict mode the
 * removal was neither logged nor durable at return, and a removed file's entry stayed in the file table's
 * victim bookkeeping (review 9, finding 19). As glibc does it: unlink (this library's), and on EISDIR the
 * kernel's rmdir (directories are not logged: as rmdir). errno as glibc leaves it. */
DK_EXPORT int remove(const char *path) {
    if (unlink(path) == 0) return 0;
    if (errno != EISDIR) return -1;
    return rmdir(path);
}

/* rename over an existing file replaces (drops) that inode, unless both names are one inode. */
static bool rename_victim(int d1, const char *from, int d2, const char *to, struct stat *st) {
    if (!up_enabled || !victim(d2, to, st)) return false;
    struct stat src;
    DK_ERRNO_SAVE;
    bool same = DK_REAL(fstatat)(d1, from, &src, AT_SYMLINK_NOFOLLOW) == 0 && src.st_dev == st->st_dev &&
                src.st_ino == st->st_ino;
    DK_ERRNO_RESTORE;
    return !same;
}

/* A name given to a file still open here -- rename of a temporary name, linkat of an O_TMPFILE descriptor
 * (AT_EMPTY_PATH, or its /proc/self/fd/N) -- is how programs publish a *complete* file atomically: its staged
 * appends go in first, or another process finds the name on an empty or short file (review 9, finding 26).
 * By descriptor when the source names one (a slot lookup); by name otherwise, with a stat only while some
 * file of this process has something to publish (upath.c). Errors are kept for the next publish point. */
static int proc_self_fd(const char *path) {
    static const char pre[] = "/proc/self/fd/";
    if (strncmp(path, pre, sizeof pre - 1) != 0) return -1;
    const char *p = path + sizeof pre - 1;
    int fd = 0;
    if (!*p) return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || fd > 100000000) return -1;
        fd = fd * 10 + (*p - '0');
    }
    return fd;
}
static void publish_before_name(int dirfd, const char *from, int atflags) {
    if (!up_enabled || !from) return;
    /* The name is read only when something could be published, and only if the kernel could read it (a bad
     * pointer is the kernel's EFAULT, not a SIGSEGV here: common/userptr.h) -- a rename's cost stays one walk. */
    if (!up_publish_any_pending() || !dk_user_str_readable(from)) return;
    int fd;
    if (!from[0] && (atflags & AT_EMPTY_PATH)) up_publish_before_attr_fd(dirfd);
    else if ((fd = proc_self_fd(from)) >= 0) up_publish_before_attr_fd(fd);
    else up_publish_before_attr_path_pending(dirfd, from, atflags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW); /* (walked above) */
}

/* Strict mode: a new name is durable when the call returns (the directory fsync of up_strict_name_made), as a
 * create's, unlink's or rename's is (review 11, finding 11: link, mkdir and symlink were gone after a power
 * loss). */
#define NAME_MADE(d, p, call)                                      \
    ({                                                             \
        int r_ = (call);                                           \
        if (r_ == 0 && up_enabled) up_strict_name_made(d, p);      \
        r_;                                                        \
    })

DK_EXPORT int link(const char *from, const char *to) {
    publish_before_name(AT_FDCWD, from, 0);
    return NAME_MADE(AT_FDCWD, to, DK_REAL(link)(from, to));
}
DK_EXPORT int linkat(int d1, const char *from, int d2, const char *to, int fl) {
    publish_before_name(d1, from, fl);
    return NAME_MADE(d2, to, DK_REAL(linkat)(d1, from, d2, to, fl));
}
DK_EXPORT int mkdir(const char *path, mode_t mode) { return NAME_MADE(AT_FDCWD, path, DK_REAL(mkdir)(path, mode)); }
DK_EXPORT int mkdirat(int d, const char *path, mode_t mode) { return NAME_MADE(d, path, DK_REAL(mkdirat)(d, path, mode)); }
DK_EXPORT int symlink(const char *target, const char *path) {
    return NAME_MADE(AT_FDCWD, path, DK_REAL(symlink)(target, path));
}
DK_EXPORT int symlinkat(const char *target, int d, const char *path) {
    return NAME_MADE(d, path, DK_REAL(symlinkat)(target, d, path));
}
DK_EXPORT int mknod(const char *path, mode_t mode, dev_t dev) {
    return NAME_MADE(AT_FDCWD, path, DK_REAL(mknod)(path, mode, dev));
}
DK_EXPORT int mknodat(int d, const char *path, mode_t mode, dev_t dev) {
    return NAME_MADE(d, path, DK_REAL(mknodat)(d, path, mode, dev));
}

/* Most renames give a file a name nobody holds (rsync, git, editors: a temporary file moved into place):
 * RENAME_NOREPLACE does that in one call with no victim to look up first (rsync: one stat per file less).
 * EEXIST -- a name is replaced -- or any other failure (a file system without the flag, a missing source)
 * takes the full path: the victim's identity, then the rename as asked, whose result the program gets.
 * Strict mode logs the rename before the call: the full path only. True when the rename is done. */
static bool rename_new_name(int d1, const char *from, int d2, const char *to, unsigned int fl) {
    if (!up_enabled || dk_cfg.mode == DK_MODE_STRICT || (fl & (RENAME_EXCHANGE | RENAME_WHITEOUT))) return false;
    DK_ERRNO_SAVE;
    if (DK_REAL(renameat2)(d1, from, d2, to, fl | RENAME_NOREPLACE) == 0) return true;
    if (fl & RENAME_NOREPLACE) return false; /* the program's own flag: the full path gives its errno */
    DK_ERRNO_RESTORE;
    return false;
}
/* The working directory: relative names are judged by it (upath/managed.c), once per change. */
DK_EXPORT int chdir(const char *path) {
    int r = DK_REAL(chdir)(path);
    if (r == 0) up_cwd_changed();
    return r;
}
DK_EXPORT int fchdir(int fd) {
    int r = DK_REAL(fchdir)(fd);
    if (r == 0) up_cwd_changed();
    return r;
}

DK_EXPORT int rename(const char *from, const char *to) {
    publish_before_name(AT_FDCWD, from, 0);
    if (rename_new_name(AT_FDCWD, from, AT_FDCWD, to, 0)) return after_rename(0, AT_FDCWD, to, 0);
    struct stat st;
    bool known = rename_victim(AT_FDCWD, from, AT_FDCWD, to, &st);
    return after_rename(after_remove(STRICT_META(DK_OPLOG_RENAME, AT_FDCWD, from, AT_FDCWD, to,
                                                 DK_REAL(rename)(from, to)),
                                     known, &st),
                        AT_FDCWD, to, 0);
}
DK_EXPORT int renameat(int d1, const char *from, int d2, const char *to) {
    publish_before_name(d1, from, 0);
    if (rename_new_name(d1, from, d2, to, 0)) return after_rename(0, d2, to, 0);
    struct stat st;
    bool known = rename_victim(d1, from, d2, to, &st);
    return after_rename(after_remove(STRICT_META(DK_OPLOG_RENAME, d1, from, d2, to,
                                                 DK_REAL(renameat)(d1, from, d2, to)),
                                     known, &st),
                        d2, to, 0);
}
DK_EXPORT int renameat2(int d1, const char *from, int d2, const char *to, unsigned int fl) {
    publish_before_name(d1, from, 0);
    if (fl & RENAME_EXCHANGE) publish_before_name(d2, to, 0); /* both files get a new name */
    if (rename_new_name(d1, from, d2, to, fl)) return after_rename(0, d2, to, fl);
    struct stat st; /* RENAME_NOREPLACE never replaces: no victim to look up */
    bool known = !(fl & (RENAME_EXCHANGE | RENAME_NOREPLACE)) && rename_victim(d1, from, d2, to, &st);
    return after_rename(after_remove(STRICT_META(DK_OPLOG_RENAME, d1, from, d2, to,
                                                 DK_REAL(renameat2)(d1, from, d2, to, fl)),
                                     known, &st),
                        d2, to, fl);
}

/* ---- the hidden area: <root>/.daxkit is not listed in the managed directory ---- */

static bool hide_entry(DIR *d, const char *name) {
    if (!up_enabled || strcmp(name, ".daxkit") != 0) return false;
    struct stat st;
    DK_ERRNO_SAVE;
    bool hide = false;
    if (DK_REAL(fstat)(dirfd(d), &st) == 0) {
        for (int i = 0; i < up_roots_count() && !hide; i++) {
            struct stat rs;
            struct up_root *r = up_root_at(i);
            hide = r->dev == st.st_dev && DK_REAL(stat)(r->path, &rs) == 0 && rs.st_ino == st.st_ino;
        }
    }
    DK_ERRNO_RESTORE;
    return hide;
}

DK_EXPORT struct dirent *readdir(DIR *d) {
    struct dirent *e;
    do e = DK_REAL(readdir)(d);
    while (e && hide_entry(d, e->d_name));
    return e;
}
DK_EXPORT struct dirent64 *readdir64(DIR *d) {
    struct dirent64 *e;
    do e = DK_REAL(readdir64)(d);
    while (e && hide_entry(d, e->d_name));
    return e;
}

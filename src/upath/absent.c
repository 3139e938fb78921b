/* Names known absent (DAXKIT_ABSENT_CACHE, opt-in; session 28; docs/design-upath.md, "Names known absent").
 *
 * SQLite in rollback mode (strict mode's journal_mode=OFF row, issue 3) stats two names that do not exist at
 * the start of every transaction -- <db>-journal (a hot journal?) and <db>-wal -- and on tmpfs each such
 * lookup allocates and frees a dentry (tmpfs keeps no negative dentries): the two cost more CPU than the rest
 * of the transaction's system calls together. This answers a stat of such a name ENOENT from memory when
 * nothing that could make the name appear has happened since the kernel last said it was absent.
 *
 * What could: a name appearing in its directory D (create, mkdir, mknod, symlink, link, a rename onto it) --
 * inotify IN_CREATE | IN_MOVED_TO on D, queued inside the creating system call after the name became visible;
 * D or any of its ancestors up to its managed root moved, removed or changed in its attributes (its permissions)
 * -- IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB on each of them (a name replaced by a rename removes or moves the
 * old inode, which is the one watched); the root's own path the library takes as stable everywhere (managed.c).
 * So one inotify instance of the process watches D and those ancestors, set up before the
 * lookup that decides the keep (a name made between the watch and the lookup is found by the lookup; one made
 * after it is an event). An answer from memory is given iff no event is queued now (a poll of the inotify
 * descriptor with no wait: one system call, ~4x cheaper than a failed lookup on tmpfs) and the cache's epoch did
 * not move around that poll: whoever consumes events moves the epoch first (invalidating every name) and then
 * reads them, so a reader either sees the event queued or sees the epoch moved. A name is kept at the epoch of a
 * keeping made under the cache's mutex (no drain meanwhile): the queued events consumed, the directory still
 * watched, then the name looked up again (lstat) -- after the program's own stat said ENOENT.
 *
 * Limits (docs/design-upath.md): only absolute names whose directory is a managed root or a canonical
 * directory below one (no symlink, ".", ".." on the way: realpath), not inside .daxkit; mounts made over D or an
 * ancestor, a rename of the root or its ancestors, chroot, and changes of the process's own credentials are not
 * watched (a cached ENOENT may then differ
 * from the kernel's answer -- EACCES, or a file on the new mount); one inotify instance per process, made at its
 * first ENOENT of such a name (a program that never stats an absent name gets none), its watches per directory
 * and ancestor. The cache turns itself off for the process's life -- counted (absent_off), said only with
 * DAXKIT_VERBOSE (on by default: never on the program's stderr) -- when no instance can be had (the per-user limit,
 * fs.inotify.max_user_instances, 128 by default: the 129th process simply does without), when a watch is refused
 * for the per-user watch limit (ENOSPC), and when the program's own inotify_init or inotify_add_watch fails for
 * those limits (shim/meta.c: ours is given back and the program's call made again), or the program dup2s onto
 * the instance's number. A fork child makes its own (the description is shared: events one consumes the other
 * would miss). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/config.h"
#include "common/internal_fd.h"
#include "common/lockmark.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/userptr.h"
#include "shim/libc.h"
#include "upath/internal.h"
#include "upath/upath.h"

#define AB_NAMES 8     /* names kept (round robin) */
#define AB_DIRS 4      /* directories watched, each with its ancestors */
#define AB_WDS 64      /* watch descriptors recorded (directories and ancestors) */
#define AB_PATH 512    /* longest name kept */
#define AB_SLOTS 32    /* processes of a user that hold an instance for the cache at once (a quarter of the default
                        * per-user limit, 128: review29 #1 -- the limit is the whole user's, other programs need theirs) */
#define AB_DIR_EVENTS (IN_CREATE | IN_MOVED_TO | IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB | IN_ONLYDIR | IN_MASK_ADD)
#define AB_UP_EVENTS (IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB | IN_ONLYDIR | IN_MASK_ADD)
#define AB_GONE (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW)

struct ab_name {
    uint32_t ver;   /* odd while the slot is rewritten (a reader compares around its look) */
    uint64_t epoch; /* the epoch it was kept at: valid while the cache's epoch is still that */
    char path[AB_PATH];
};

static struct {
    uint32_t state;  /* 0 not set up, 1 ready, 2 off in this process (atomic; set under ab_mu) */
    int ifd;         /* the inotify instance (an internal descriptor) */
    uint64_t epoch;  /* moved before any event is consumed (atomic; starts at 1) */
    struct ab_name names[AB_NAMES];
    unsigned next;   /* the slot the next kept name takes (under ab_mu) */
    char dirs[AB_DIRS][AB_PATH]; /* directories watched with their ancestors (written under ab_mu) */
    unsigned ndirs;  /* (atomic: a lock-free look reads the first ndirs) */
    uint32_t wgen;   /* moved before the watches are dropped (atomic) */
    int wds[AB_WDS]; /* their watch descriptors (under ab_mu) */
    unsigned nwds;
    int slot_fd;     /* <stats dir>/absent-slots.<euid>, one byte OFD-locked: our share of the user's instances */
    char seen[AB_NAMES][AB_PATH]; /* names a stat found absent before the instance was made (under ab_mu) */
    unsigned nseen;
} ab = {.epoch = 1, .slot_fd = -1};
static pthread_mutex_t ab_mu = PTHREAD_MUTEX_INITIALIZER;

/* Under ab_mu: off for the process's life. The epoch moves before the instance goes: a reader that looked at
 * the state before polls a closed (or reused) number, then finds the epoch moved -- no hit; one that loads the
 * epoch after finds no name kept at it (keeps are made under ab_mu, in state 1 only). `close_it` false: the
 * program's dup2 closes the number itself. */
static void off_locked(const char *why, int err, bool close_it) {
    uint32_t st = __atomic_load_n(&ab.state, __ATOMIC_ACQUIRE);
    if (st == 2) return;
    __atomic_store_n(&ab.state, 2, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&ab.epoch, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&ab.wgen, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&ab.ndirs, 0, __ATOMIC_RELEASE);
    ab.nwds = 0;
    if (st == 1) {
        if (close_it) up_internal_close(ab.ifd); /* (its watches go with it: the user's counts back) */
        else up_fd_mark_internal(ab.ifd, false);
    }
    if (ab.slot_fd >= 0) up_internal_close(ab.slot_fd), ab.slot_fd = -1; /* (the slot free for another process) */
    dk_count(DK_C_absent_off, 1);
    dk_log_verbose("DAXKIT_ABSENT_CACHE: off in this process (%s: %s): stats of absent names go to the kernel", why,
                   err ? dk_strerror(err) : "-");
}

static long raw_poll(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return syscall(SYS_poll, &p, 1, 0); /* (the raw call: no cancellation point, as stat is none) */
}

/* The directory part of an absolute name: its length (0: not cacheable -- relative, too long, ending in '/',
 * a last component "." or ".."). */
static size_t dir_len(const char *path) {
    if (path[0] != '/') return 0;
    size_t n = strnlen(path, AB_PATH);
    if (n >= AB_PATH || n < 2 || path[n - 1] == '/') return 0;
    const char *slash = strrchr(path, '/');
    const char *name = slash + 1;
    if (!strcmp(name, ".") || !strcmp(name, "..")) return 0;
    return slash == path ? 1 : (size_t)(slash - path);
}

/* D (len bytes of path) is a managed root or below one, not in its .daxkit area: the root's path length (0: not
 * managed) */
static size_t dir_managed(const char *path, size_t len) {
    for (int i = 0; i < up_roots_count(); i++) {
        const struct up_root *r = up_root_at(i);
        size_t rl = r->path_len;
        if (len < rl || memcmp(path, r->path, rl) != 0) continue;
        if (len == rl) return rl;
        if (path[rl] != '/' && rl != 1) continue;
        const char *rest = path + (rl == 1 ? 0 : rl);
        size_t restn = len - (size_t)(rest - path);
        if (restn >= 8 && !memcmp(rest, "/.daxkit", 8) && (restn == 8 || rest[8] == '/')) return 0;
        return rl;
    }
    return 0;
}

/* Under ab_mu: every name invalid (the epoch moved first), then every queued event read; a watch gone (its
 * directory moved or removed, an overflow) drops every watch -- set up again by the next look. */
static void drain_locked(void) {
    __atomic_add_fetch(&ab.epoch, 1, __ATOMIC_SEQ_CST);
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool gone = false;
    for (;;) {
        ssize_t n = syscall(SYS_read, ab.ifd, buf, sizeof buf);
        if (n <= 0) break;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->mask & AB_GONE) {
                for (unsigned i = 0; i < ab.nwds && !gone; i++) gone = ab.wds[i] == ev->wd;
                if (ev->mask & IN_Q_OVERFLOW) gone = true;
            }
            p += sizeof *ev + ev->len;
        }
    }
    dk_count(DK_C_absent_drains, 1);
    if (!gone) return;
    __atomic_add_fetch(&ab.wgen, 1, __ATOMIC_SEQ_CST);
    for (unsigned i = 0; i < ab.nwds; i++) (void)syscall(SYS_inotify_rm_watch, ab.ifd, ab.wds[i]);
    ab.nwds = 0;
    /* the removals' own IN_IGNORED events (queued by inotify_rm_watch; no watch is left to queue others): read
     * now, or the next answer's poll would find them and every look until the next drain would be a miss */
    while (syscall(SYS_read, ab.ifd, buf, sizeof buf) > 0) {}
    __atomic_store_n(&ab.ndirs, 0, __ATOMIC_RELEASE);
}

/* Under ab_mu: D watched with its ancestors up to its managed root (rl: the root's path length) -- the root's own
 * path is taken as stable, as everywhere in the library (managed.c path_below); a watch of "/" or /tmp would
 * flag every dentry under it for the kernel's fsnotify (fsnotify_set_children_dentry_flags: 2 % of a 20,000-
 * transaction run's samples, and every process's events there then look for watchers). False: it cannot be
 * (not canonical, no room, the kernel refused). */
static bool watch_locked(const char *path, size_t len, size_t rl) {
    for (unsigned i = 0; i < ab.ndirs; i++)
        if (strlen(ab.dirs[i]) == len && !memcmp(ab.dirs[i], path, len)) return true;
    if (ab.ndirs == AB_DIRS) return false;
    char d[AB_PATH], real[PATH_MAX];
    memcpy(d, path, len);
    d[len] = 0;
    if (!realpath(d, real) || strcmp(real, d) != 0) return false; /* a symlink, ".", ".." on the way */
    unsigned nw = ab.nwds;
    if (nw == AB_WDS) return false;
    int wd = (int)syscall(SYS_inotify_add_watch, ab.ifd, d, AB_DIR_EVENTS);
    if (wd < 0) {
        if (errno == ENOSPC || errno == ENOMEM) off_locked("no inotify watch", errno, true); /* the user's limit */
        return false;
    }
    ab.wds[nw++] = wd;
    for (size_t k = len; k > rl;) { /* each ancestor down to the root */
        size_t j = k - 1;
        while (j > 0 && d[j] != '/') j--;
        size_t alen = j > 0 ? j : 1; /* "/a/b" -> "/a" -> "/" */
        char c = d[alen];
        d[alen] = 0;
        wd = nw == AB_WDS ? -1 : (int)syscall(SYS_inotify_add_watch, ab.ifd, d, AB_UP_EVENTS);
        int e = errno;
        d[alen] = c;
        if (wd < 0) {
            ab.nwds = nw;
            if (nw < AB_WDS && (e == ENOSPC || e == ENOMEM)) off_locked("no inotify watch", e, true);
            return false;
        }
        ab.wds[nw++] = wd;
        if (j == 0) break;
        k = alen;
    }
    ab.nwds = nw;
    unsigned nd = ab.ndirs;
    memcpy(ab.dirs[nd], path, len);
    ab.dirs[nd][len] = 0;
    __atomic_store_n(&ab.ndirs, nd + 1, __ATOMIC_RELEASE);
    return true;
}

/* Under ab_mu: one of the AB_SLOTS slots of the user's file in the stats directory (an OFD lock on its byte: a
 * dead process's is free again, as the lock board's). The per-user inotify limit is shared by every program of the
 * user, those outside daxkit too: the cache takes at most a quarter of the default for itself (review29 #1). */
static bool slot_take_locked(void) {
    char p[DK_PATH_OPT_MAX + 64];
    snprintf(p, sizeof p, "%s/absent-slots.%u", dk_stats_dir(), (unsigned)geteuid());
    int fd = dk_ifd_openat(AT_FDCWD, p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return false;
    for (int i = 0; i < AB_SLOTS; i++) {
        struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
        if (DK_REAL(fcntl)(fd, F_OFD_SETLK, &l) == 0) {
            ab.slot_fd = up_internal_fd(fd);
            return true;
        }
    }
    DK_REAL(close)(fd);
    errno = EUSERS;
    return false;
}

/* Under ab_mu: the instance (state 1), made once a slot is ours; false: none (state 2: off, counted). */
static bool setup_locked(void) {
    uint32_t st = __atomic_load_n(&ab.state, __ATOMIC_ACQUIRE);
    if (st != 0) return st == 1;
    DK_ERRNO_SAVE;
    if (!slot_take_locked()) {
        off_locked("no slot of the user's 32 for the cache", errno, false);
        DK_ERRNO_RESTORE;
        return false;
    }
    dk_ifd_begin();
    int fd = (int)syscall(SYS_inotify_init1, IN_NONBLOCK | IN_CLOEXEC);
    if (fd >= 0) fd = up_internal_fd(fd);
    dk_ifd_end();
    if (fd < 0) {
        off_locked("no inotify instance", errno, false); /* (EMFILE: the per-user limit or the process's) */
    } else {
        ab.ifd = fd;
        __atomic_store_n(&ab.state, 1, __ATOMIC_RELEASE);
    }
    DK_ERRNO_RESTORE;
    return fd >= 0;
}

/* (shim/meta.c ABSENT_OR, before the kernel's stat: the name is read only in a process that keeps names, and only
 * once the kernel could read it -- else the kernel's EFAULT) */
bool up_absent_known(const char *path) {
    if (__atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) != 1 || !dk_cfg.absent_cache) return false;
    if (!dk_user_str_readable(path) || path[0] != '/') return false;
    uint64_t e = __atomic_load_n(&ab.epoch, __ATOMIC_SEQ_CST);
    const struct ab_name *hit = NULL;
    uint32_t v = 0;
    for (unsigned i = 0; i < AB_NAMES && !hit; i++) {
        const struct ab_name *s = &ab.names[i];
        v = __atomic_load_n(&s->ver, __ATOMIC_ACQUIRE);
        if ((v & 1) || __atomic_load_n(&s->epoch, __ATOMIC_RELAXED) != e || strncmp(s->path, path, AB_PATH) != 0)
            continue;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&s->ver, __ATOMIC_RELAXED) == v) hit = s;
    }
    if (!hit) return false;
    DK_ERRNO_SAVE;
    long r = raw_poll(ab.ifd);
    DK_ERRNO_RESTORE;
    /* nothing queued, and no drain began since the look (it moves the epoch before it reads) */
    if (r != 0 || __atomic_load_n(&ab.epoch, __ATOMIC_SEQ_CST) != e || __atomic_load_n(&hit->ver, __ATOMIC_ACQUIRE) != v)
        return false;
    dk_count(DK_C_absent_hits, 1);
    return true;
}

/* Before the program's stat: nothing but a look at the state -- the instance and the watches are made after a
 * stat said ENOENT (up_absent_end), before the lookup that decides the keep: a stat of a name that exists costs
 * no system call, and a program that never stats an absent name gets no inotify instance. */
uint64_t up_absent_begin(const char *path) {
    (void)path;
    return dk_cfg.absent_cache && up_enabled && __atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) != 2;
}

/* (after the kernel's stat said ENOENT: it could read the name) */
void up_absent_end(const char *path, uint64_t ticket, int r, int err) {
    if (!ticket || r == 0 || err != ENOENT || path[0] != '/') return;
    size_t len = dir_len(path), rl = len ? dir_managed(path, len) : 0;
    if (!rl || dk_mu_refuse(&ab_mu)) return; /* (refused: a signal handler inside its thread's hold) */
    DK_ERRNO_SAVE;
    dk_mu_lock(&ab_mu);
    /* Under the mutex (no drain can move the epoch meanwhile): the instance made, the events queued so far
     * consumed, the directory and its ancestors watched, then the name looked up again -- the name itself (lstat:
     * not a dangling symlink, whose target may appear where nothing is watched). A name made before that lookup
     * is found by it; one made after it is an event, which a reader's poll sees. */
    bool watched = false, known = false;
    if (__atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) == 0) {
        /* No instance yet: made at the second ENOENT of one name (SQLite's probes repeat every transaction; a
         * program's one-off probes never make one -- the user's inotify instances are every program's:
         * review29 #1). The first only noted (no system call). */
        bool again = false;
        for (unsigned i = 0; i < AB_NAMES && !again; i++) again = !strncmp(ab.seen[i], path, AB_PATH);
        if (!again) {
            strncpy(ab.seen[ab.nseen++ % AB_NAMES], path, AB_PATH - 1);
            dk_mu_unlock(&ab_mu);
            DK_ERRNO_RESTORE;
            return;
        }
    }
    for (unsigned i = 0; i < ab.ndirs && !known; i++) known = strlen(ab.dirs[i]) == len && !memcmp(ab.dirs[i], path, len);
    /* (every directory slot taken by others: nothing to keep, no system call -- a program probing absent names in
     * many directories pays the mutex only) */
    if (known || ab.ndirs < AB_DIRS) watched = setup_locked();
    if (watched) {
        if (raw_poll(ab.ifd) != 0) drain_locked(); /* (watches gone: set up again below) */
        watched = __atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) == 1 && watch_locked(path, len, rl);
    }
    struct stat sb;
    if (watched && DK_REAL(fstatat)(AT_FDCWD, path, &sb, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
        uint64_t e = __atomic_load_n(&ab.epoch, __ATOMIC_SEQ_CST);
        struct ab_name *s = &ab.names[ab.next++ % AB_NAMES];
        __atomic_add_fetch(&s->ver, 1, __ATOMIC_SEQ_CST); /* odd */
        strncpy(s->path, path, AB_PATH - 1);
        s->path[AB_PATH - 1] = 0;
        __atomic_store_n(&s->epoch, e, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->ver, 1, __ATOMIC_SEQ_CST); /* even: valid at e */
        dk_count(DK_C_absent_kept, 1);
    }
    dk_mu_unlock(&ab_mu);
    DK_ERRNO_RESTORE;
}

/* The program's own inotify_init(1) failed with EMFILE, or its inotify_add_watch with ENOSPC (shim/meta.c): the
 * per-user limits, which our instance and watches count against -- ours goes (the cache off for the process's
 * life, counted) and true says the program's call may be made again. */
bool up_absent_give_up(void) {
    if (__atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) != 1 || dk_mu_refuse(&ab_mu)) return false;
    DK_ERRNO_SAVE;
    dk_mu_lock(&ab_mu);
    bool had = __atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) == 1;
    if (had) off_locked("the program's inotify needs the user's instance or watches", 0, true);
    dk_mu_unlock(&ab_mu);
    DK_ERRNO_RESTORE;
    return had;
}

/* The program's dup2/dup3 onto our instance's number (shim/fd.c, before the kernel's call closes it): off. */
void up_absent_vacate(int fd) {
    if (__atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) != 1 || (ab.ifd != fd && ab.slot_fd != fd) || dk_mu_refuse(&ab_mu))
        return;
    DK_ERRNO_SAVE;
    dk_mu_lock(&ab_mu);
    if (__atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) == 1 && ab.ifd == fd) off_locked("the program's dup2 onto it", 0, false);
    if (ab.slot_fd == fd) { /* the slot file's: moved (the same description keeps the slot's OFD lock) */
        int moved = DK_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, dk_ifd_floor());
        up_fd_mark_internal(fd, false);
        ab.slot_fd = moved;
        if (moved >= 0) up_fd_mark_internal(moved, true);
    }
    dk_mu_unlock(&ab_mu);
    DK_ERRNO_RESTORE;
}

/* A fork child: the instance's description is the parent's too -- its own is made at its first look. */
void up_absent_after_fork_child(void) {
    dk_mu_reinit(&ab_mu);
    __atomic_add_fetch(&ab.epoch, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ab.state, __ATOMIC_ACQUIRE) == 1) up_internal_close(ab.ifd);
    if (ab.slot_fd >= 0) up_internal_close(ab.slot_fd); /* (the description is the parent's, and its slot) */
    ab.slot_fd = -1;
    ab.nseen = 0;
    memset(ab.seen, 0, sizeof ab.seen);
    ab.nwds = 0;
    __atomic_store_n(&ab.ndirs, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ab.state, 0, __ATOMIC_RELEASE);
}

#include "common/internal_fd.h"
#include "common/stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/dk.h"
#include "shim/libc.h"

__thread struct dk_stats_slot *dk_stats_tls __attribute__((tls_model("initial-exec")));
__thread int dk_stats_tls_shared __attribute__((tls_model("initial-exec")));

/* The counters, in whole pages of their own: private memory from the start (a process that never uses a
 * managed file makes no file: a shell, a compiler's driver, a fork child that execs), then -- at the first
 * managed file (dk_stats_publish) -- the stats file mapped over these very pages, so that the slot every
 * thread already holds (dk_stats_tls) counts into the file from then on. */
#define STATS_MAP_BYTES ((sizeof(struct dk_stats_file) + DK_PAGE_BYTES - 1) / DK_PAGE_BYTES * DK_PAGE_BYTES)
static union {
    struct dk_stats_file f;
    char bytes[STATS_MAP_BYTES];
} counters_mem __attribute__((aligned(DK_PAGE_BYTES)));
#define stats (&counters_mem.f)
_Static_assert(sizeof counters_mem % DK_PAGE_BYTES == 0, "mapped over: whole pages of their own");

enum { STATS_OFF, STATS_PRIVATE = DK_STATS_PRIVATE, STATS_MAKING, STATS_MAPPED };
int dk_stats_state = STATS_OFF; /* STATS_OFF: before dk_stats_open, DAXKIT_STATS=0, or the file failed */
static bool stats_started;          /* dk_stats_open ran in this image or a fork ancestor (fork copies it) */
static char stats_path[256];
static pid_t stats_pid;
/* The stats file stays open with an flock (LOCK_EX) on it for the process's life: its owner is alive while
 * the lock is held, whatever pid namespace it is in and whoever reuses its pid later (dk_stats_sweep). */
static int stats_fd = -1;
static int (*stats_fd_move)(int);
static void (*stats_fd_close)(int);

void dk_stats_set_fd_hooks(int (*move)(int), void (*close_fd)(int)) {
    stats_fd_move = move;
    stats_fd_close = close_fd;
}

struct dk_stats_slot *dk_stats_claim_slot(void) {
    struct dk_stats_file *f = stats;
    uint32_t idx = __atomic_fetch_add(&f->slots_used, 1, __ATOMIC_RELAXED);
    if (idx >= DK_STATS_SLOTS - 1) {
        idx = DK_STATS_SLOTS - 1;
        dk_stats_tls_shared = 1;
    }
    dk_stats_tls = &f->slot[idx];
    return dk_stats_tls;
}

const char *dk_stats_dir(void) {
    const char *d = dk_cfg_loaded ? dk_cfg.stats_dir : getenv("DAXKIT_STATS_DIR");
    return d && d[0] == '/' && strlen(d) <= DK_PATH_OPT_MAX ? d : DK_STATS_DIR;
}

/* Opens path and takes its lock: -1 when a live owner keeps it locked (a process of another pid namespace
 * with our pid number), or it cannot be made. A sweep may hold the lock of the file for an instant, and
 * remove it between our open and our lock: then the file is opened again. */
static int lock_stats_file(const char *path) {
    const struct dk_libc *c = dk_libc();
    for (int tries = 0; tries < 4; tries++) {
        int fd = dk_ifd_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) return -1;
        struct stat a, b;
        if (c->flock(fd, LOCK_EX | LOCK_NB) == 0) {
            if (c->fstat(fd, &a) == 0 && c->stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
                return fd;
        } else {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        c->close(fd);
    }
    return -1;
}

/* The directory, made when missing with mode 01777 exactly, as /tmp is: mkdir applies the process's umask
 * (022 gave drwxr-xr-t, and the processes of every other user then had no stats file there: review 11,
 * finding 19), and the umask is the program's to keep -- so the mode is set after the mkdir, on the
 * directory this process just made (opened without following a link, checked to be a directory of ours). */
static void make_stats_dir(const struct dk_libc *c) {
    if (c->mkdirat(AT_FDCWD, dk_stats_dir(), 01777) != 0) return; /* there already (or cannot be made) */
    int dfd = dk_ifd_openat(AT_FDCWD, dk_stats_dir(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (dfd < 0) return;
    struct stat st;
    if (c->fstat(dfd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 07777) != 01777)
        c->fchmod(dfd, 01777);
    c->close(dfd);
}

/* The common case, made and locked while it is empty: this open made it (O_EXCL), so no killed process's
 * counters are in it and it needs no truncation; and an empty file is no stats file to a sweep
 * (is_stats_file), so none removes it before the lock is ours, and the identity check of lock_stats_file is
 * not needed either -- 3 system calls of every start. The directory is made only when the open says it is
 * missing (a mkdir per start before). -1: the name exists (a killed process with our pid left it, or
 * another pid namespace's process has it) or a sweep holds the new file's lock for an instant --
 * lock_stats_file decides then. */
static int create_stats_file(const struct dk_libc *c, const char *path) {
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
    int fd = dk_ifd_openat(AT_FDCWD, path, flags, 0644);
    if (fd < 0 && errno == ENOENT) {
        make_stats_dir(c);
        fd = dk_ifd_openat(AT_FDCWD, path, flags, 0644);
    }
    if (fd >= 0 && c->flock(fd, LOCK_EX | LOCK_NB) != 0) {
        c->close(fd);
        fd = -1;
    }
    return fd;
}

/* Creates and locks this process's stats file and maps it at a place of its own: MAP_FAILED, the file
 * unlinked again, when it cannot be made. */
static void *make_stats_file(const struct dk_libc *c, pid_t pid) {
    snprintf(stats_path, sizeof stats_path, "%s/stats.%d", dk_stats_dir(), (int)pid);
    int fd = create_stats_file(c, stats_path);
    bool fresh = fd >= 0;
    if (!fresh) fd = lock_stats_file(stats_path);
    if (fd < 0) {
        stats_path[0] = 0; /* never unlink a file we do not own */
        return MAP_FAILED;
    }
    void *p = MAP_FAILED;
    /* An old file is truncated to nothing first: the sized file reads as zeros. Mapped through a second open
     * file description: a mapping keeps its description (and so an flock on it) alive, and a fork child
     * inherits the mapping until it drops it (dk_stats_open) -- the lock must go with this process's
     * descriptor alone. The mapping covers whole pages (the last one holds the file's end: no SIGBUS). */
    if ((fresh || c->ftruncate(fd, 0) == 0) && c->ftruncate(fd, sizeof(struct dk_stats_file)) == 0) {
        /* Opened, mapped and closed in one window: its number is never the program's to see, so it is not
         * moved up (3 system calls fewer). Locked by us: not swept meanwhile. */
        dk_ifd_begin();
        int mfd = c->openat(AT_FDCWD, stats_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
        if (mfd >= 0) {
            p = c->mmap(NULL, STATS_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
            c->close(mfd);
        }
        dk_ifd_end();
    }
    if (p == MAP_FAILED) {
        c->unlink(stats_path);
        c->close(fd);
        stats_path[0] = 0;
        return MAP_FAILED;
    }
    stats_fd = stats_fd_move ? stats_fd_move(fd) : fd; /* kept, with its lock, for the process's life */
    return p;
}

/* The private counters into the new file -- the header and the slots claimed, not the zeros (writing them
 * would allocate every page of the file: 9 page faults, ~50 us of CPU) -- the magic last; then the file's
 * mapping takes the counters' place (mremap: atomic for every thread). An increment another thread makes
 * between its slot's copy and the mremap is lost: a window of one system call, once per process. */
static bool move_into(const struct dk_libc *c, struct dk_stats_file *file) {
    memcpy(file, stats, offsetof(struct dk_stats_file, slot));
    file->magic = 0;
    uint32_t used = DK_MIN(__atomic_load_n(&stats->slots_used, __ATOMIC_ACQUIRE), (uint32_t)DK_STATS_SLOTS);
    for (uint32_t i = 0; i < used; i++) file->slot[i] = stats->slot[i];
    __atomic_store_n(&file->magic, DK_STATS_MAGIC, __ATOMIC_RELEASE);
    return c->mremap(file, STATS_MAP_BYTES, STATS_MAP_BYTES, MREMAP_MAYMOVE | MREMAP_FIXED, &counters_mem) !=
           MAP_FAILED;
}

void dk_stats_publish_slow(void) {
    int expect = STATS_PRIVATE;
    if (!__atomic_compare_exchange_n(&dk_stats_state, &expect, STATS_MAKING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return; /* another thread makes it (or this thread, interrupted by this handler): counted in place */
    DK_ERRNO_SAVE;
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel); /* inside the program's open: no cancellation point */
    const struct dk_libc *c = dk_libc();
    void *file = make_stats_file(c, stats_pid);
    bool mapped = file != MAP_FAILED && move_into(c, file);
    if (file != MAP_FAILED && !mapped) {
        c->munmap(file, STATS_MAP_BYTES);
        c->unlink(stats_path);
        stats_path[0] = 0;
        if (stats_fd_close) stats_fd_close(stats_fd);
        else c->close(stats_fd);
        stats_fd = -1;
    }
    pthread_setcancelstate(cancel, NULL);
    __atomic_store_n(&dk_stats_state, mapped ? STATS_MAPPED : STATS_OFF, __ATOMIC_RELEASE);
    DK_ERRNO_RESTORE;
}

void dk_stats_before_exec(void) {
    if (__atomic_load_n(&dk_stats_state, __ATOMIC_ACQUIRE) != STATS_MAPPED) return;
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    c->unlink(stats_path);
    stats_path[0] = 0;
    if (stats_fd_close) stats_fd_close(stats_fd);
    else c->close(stats_fd);
    stats_fd = -1;
    __atomic_store_n(&dk_stats_state, STATS_PRIVATE, __ATOMIC_RELEASE);
    DK_ERRNO_RESTORE;
}

bool dk_stats_mapped(void) { return __atomic_load_n(&dk_stats_state, __ATOMIC_ACQUIRE) == STATS_MAPPED; }

void dk_stats_open(int enabled, const char *mode, const char *dirs, const char *note) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    pid_t pid = c->getpid();
    if (stats_fd >= 0) { /* a fork child: the parent's descriptor (closing our copy leaves its lock) */
        if (stats_fd_close) stats_fd_close(stats_fd);
        else c->close(stats_fd);
        stats_fd = -1;
    }
    stats_path[0] = 0;
    /* A fork child starts from zeros: fresh pages in place of the parent's counters -- its private copy, or
     * its file's mapping, which the child drops here (it must not count into the parent's file). */
    if (stats_started &&
        c->mmap(&counters_mem, STATS_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                0) == MAP_FAILED)
        memset(&counters_mem, 0, sizeof counters_mem); /* (a private copy: ENOMEM leaves it mapped) */
    stats_started = true;
    struct dk_stats_file *f = stats;
    f->counters = DK_C_COUNT;
    f->slots = DK_STATS_SLOTS;
    f->pid = pid;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->start_ns_realtime = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    snprintf(f->mode, sizeof f->mode, "%s", mode);
    snprintf(f->dirs, sizeof f->dirs, "%s", dirs);
    snprintf(f->note, sizeof f->note, "%s", note);
    __atomic_store_n(&f->magic, DK_STATS_MAGIC, __ATOMIC_RELEASE);
    stats_pid = pid;
    dk_stats_tls = NULL; /* the calling thread re-claims; other threads died in fork */
    dk_stats_tls_shared = 0;
    __atomic_store_n(&dk_stats_state, enabled ? STATS_PRIVATE : STATS_OFF, __ATOMIC_RELEASE);
    DK_ERRNO_RESTORE;
}

/* True when fd is a daxkit stats file: its magic, or the zeros of one whose owner died between sizing and
 * mapping it. Anything else named stats.N in the directory (DAXKIT_STATS_DIR may be a shared one) is not ours. */
static bool is_stats_file(int fd) {
    struct stat st;
    uint64_t magic = 0;
    if (dk_libc()->fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (dk_libc()->pread(fd, &magic, sizeof magic, 0) != (ssize_t)sizeof magic) return false;
    return magic == DK_STATS_MAGIC || (magic == 0 && st.st_size == (off_t)sizeof(struct dk_stats_file));
}

/* Removes path if it is a stats file and no live process holds its lock. true if removed. */
static bool remove_if_unlocked(const char *path) {
    const struct dk_libc *c = dk_libc();
    int fd = dk_ifd_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return false;
    bool gone = c->flock(fd, LOCK_EX | LOCK_NB) == 0 && is_stats_file(fd) && c->unlink(path) == 0;
    c->close(fd);
    return gone;
}

void dk_stats_remove_stale(void) {
    DK_ERRNO_SAVE;
    char path[256];
    snprintf(path, sizeof path, "%s/stats.%d", dk_stats_dir(), (int)dk_libc()->getpid());
    remove_if_unlocked(path);
    DK_ERRNO_RESTORE;
}

int dk_stats_sweep(void) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    DIR *d = dk_ifd_opendirat(AT_FDCWD, dk_stats_dir());
    if (!d) {
        DK_ERRNO_RESTORE;
        return 0;
    }
    pid_t self = c->getpid();
    int removed = 0;
    for (struct dirent *e; (e = c->readdir(d));) {
        if (strncmp(e->d_name, "stats.", 6) != 0) continue;
        char *end;
        long pid = strtol(e->d_name + 6, &end, 10);
        if (*end || pid <= 0 || pid == self) continue;
        /* A process with that pid here: taken for the owner (one system call); the file is swept when that
         * pid is gone. No such process: the owner may still live in another pid namespace -- its lock says. */
        if (kill((pid_t)pid, 0) == 0 || errno == EPERM) continue;
        char path[480];
        snprintf(path, sizeof path, "%s/%s", dk_stats_dir(), e->d_name);
        if (remove_if_unlocked(path)) removed++;
    }
    c->closedir(d);
    DK_ERRNO_RESTORE;
    return removed;
}

/* A start-up's sweep reads the directory and looks at each file's owner: ~13 system calls and a kill(pid, 0)
 * per file, a quarter of a managed start's calls -- and rsync, git and make start processes by the dozen.
 * So start-ups sweep at most once a second per directory, the last one's time kept as the modification time
 * of DIR/.sweep (made world-writable, as the directory is: every user's processes touch it); `daxkit stats`
 * sweeps every time. A killed process's file stays until then: a second at most while processes start. */
#define SWEEP_INTERVAL_NS 1000000000ll

/* The stamp is never followed: the directory is everyone's (1777), and its owner could make .sweep a link to
 * another user's file, whose times every start-up of that user would then set (review 16, finding 3). A
 * stamp that is not a regular file is no stamp: every start-up sweeps. */
static bool sweep_due(const struct dk_libc *c, const char *stamp) {
    struct stat st;
    if (c->lstat(stamp, &st) != 0 || !S_ISREG(st.st_mode)) return true;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t age_ns = ((int64_t)now.tv_sec - (int64_t)st.st_mtim.tv_sec) * 1000000000ll +
                     ((int64_t)now.tv_nsec - (int64_t)st.st_mtim.tv_nsec);
    return age_ns < 0 || age_ns >= SWEEP_INTERVAL_NS; /* (a clock set back: due) */
}

/* Before the sweep: the processes starting meanwhile skip theirs. */
static void sweep_stamp(const struct dk_libc *c, const char *stamp) {
    if (c->utimensat(AT_FDCWD, stamp, NULL, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) return;
    int fd = dk_ifd_openat(AT_FDCWD, stamp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return;
    c->fchmod(fd, 0666); /* the umask took bits away; the program's umask is the program's */
    c->close(fd);
}

void dk_stats_sweep_at_start(void) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    char stamp[DK_PATH_OPT_MAX + 16];
    snprintf(stamp, sizeof stamp, "%s/.sweep", dk_stats_dir());
    if (sweep_due(c, stamp)) {
        sweep_stamp(c, stamp);
        dk_stats_sweep();
    }
    DK_ERRNO_RESTORE;
}

void dk_stats_close(void) {
    DK_ERRNO_SAVE;
    if (stats_path[0] && stats_pid == dk_libc()->getpid()) dk_libc()->unlink(stats_path);
    stats_path[0] = 0;
    DK_ERRNO_RESTORE;
}

static const char *names[] = {
#define C(name, doc) #name,
#include "common/stats.def"
#undef C
};
static const char *docs[] = {
#define C(name, doc) doc,
#include "common/stats.def"
#undef C
};

const char *dk_stats_name(int idx) { return idx >= 0 && idx < DK_C_COUNT ? names[idx] : "?"; }
const char *dk_stats_doc(int idx) { return idx >= 0 && idx < DK_C_COUNT ? docs[idx] : "?"; }

void dk_stats_sum(const struct dk_stats_file *f, uint64_t *out) {
    memset(out, 0, sizeof(uint64_t) * DK_C_COUNT);
    uint32_t n = DK_MIN(f->counters, (uint32_t)DK_C_COUNT);
    for (uint32_t s = 0; s < DK_STATS_SLOTS; s++)
        for (uint32_t i = 0; i < n; i++) out[i] += __atomic_load_n(&f->slot[s].v[i], __ATOMIC_RELAXED);
}

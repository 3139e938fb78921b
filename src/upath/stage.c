/* Staging pool (SplitFS): pre-allocated, pre-mapped staging files in <root>/.daxkit/, handed out in
 * 2 MiB slots to hold appends until a publish point relinks them into the target file. A background
 * thread keeps enough free slots ready and refreshes slots whose blocks were cloned away (so the next
 * append into them does not pay a copy-on-write fault).
 *
 * Ownership: each process holds an flock on <root>/.daxkit/<tag>.lock for its whole life; its staging
 * files are <tag>.<n>.stg. A later process that can take the lock knows the owner is gone and removes
 * its staging files (posix and sync modes never leave acknowledged data only in staging: see publish.c). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/area.h"
#include "common/config.h"
#include "common/crashpoint.h"
#include "common/internal_fd.h"
#include "common/pwrite_all.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/thread.h"
#include "shim/libc.h"
#include "oplog/oplog.h"
#include "upath/foreign.h"
#include "upath/internal.h"
#include "common/mapflags.h"


#define UP_POOL_FILES_MAX 256
#define UP_AREA ".daxkit"

struct up_stg_file {
    int fd;
    uint32_t id;           /* file name <tag>.<id>.stg */
    char *addr;
    uint64_t bytes;
    uint32_t slots;
    uint32_t free_count;
    uint64_t *free_bits;   /* 1 = free and ready */
    uint64_t *stale_bits;  /* 1 = returned after a clone: refresh before reuse */
    uint32_t stale_count;
};

/* A range of a file to fault in ahead of the extend strategy's appends: a mapping of its own, made by
 * the appender (no descriptor: closing one would drop the program's POSIX locks), unmapped when done. */
struct up_prefault {
    void *addr;
    uint64_t len;
};
#define UP_PREFAULT_JOBS 8

struct up_pool {
    struct up_root *root;
    int area_fd;
    int lock_fd;
    char tag[48];
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct up_stg_file *files[UP_POOL_FILES_MAX];
    uint32_t file_count;
    uint32_t next_file_id;
    bool thread_started;
    bool slots_taken; /* a pool slot was ever asked for: only then is the pool topped up */
    bool stopping;
    struct up_prefault jobs[UP_PREFAULT_JOBS];
    uint32_t job_count;
};

static struct up_pool *pools[16];
static uint32_t pool_count;
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;

/* This thread is inside an entry of the staging code (up_stage_*): from before any of its locks is asked for
 * (pools_mu, a pool's mu) or its allocator called (malloc's locks), until after they are let go of. A signal
 * handler that interrupted it -- its _exit, exit or exec publish point, a fork, an append of its own to
 * another file -- must not ask for them again: a normal mutex waits for its own thread for ever
 * (shim_exit_in_handler_close_loop hung about 1 run in 10-15 under load: _exit's publish of another file
 * gave its heap slot back into the spare's mutex, which the interrupted take held; lock-free since session
 * 20). Nested, an entry takes nothing: no slot (the append goes to the kernel: -ENOSPC), no growth, no
 * prefault, no shutdown; what is given back is let go of without a lock -- a heap buffer onto heap_deferred
 * (freed by the next entry that is not nested), a pool slot left taken (2 MiB of a staging file, until the
 * process ends). Counted (stage_nested). Not replaced by the mutexes' marks (common/lockmark.h; the mutexes
 * here are marked too): it also covers the allocator's calls (malloc's own locks) and the stretches between
 * the locks. */
static __thread unsigned stage_busy;
#define STAGE_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)
static bool stage_enter(void) {
    if (DK_UNLIKELY(stage_busy)) {
        dk_count(DK_C_stage_nested, 1);
        return false;
    }
    stage_busy = 1;
    STAGE_FENCE();
    return true;
}
static void stage_leave(void) {
    STAGE_FENCE();
    stage_busy = 0;
}
bool up_stage_busy(void) { return stage_busy != 0; }

int up_stage_fd(const struct up_stg_file *sf) { return sf->fd; }

/* Opened by dk_ifd_openat, the descriptor is there already (common/internal_fd.h). */
int up_internal_fd(int fd) {
    fd = dk_ifd_move_up(fd);
    up_fd_mark_internal(fd, true);
    return fd;
}

void up_internal_close(int fd) {
    up_fd_mark_internal(fd, false);
    dk_libc()->close(fd);
}

/* Staging files grow with use: the n-th is 4 MiB << n, up to DAXKIT_STAGING_BYTES. A short-lived program
 * that appends a little pays for 4 MiB of staging, not 2 x 64 MiB (zeroing that took ~100 ms). */
static uint64_t stg_file_bytes(uint32_t n) {
    uint64_t max = dk_round_up(dk_cfg.staging_bytes, UP_SLOT_BYTES);
    uint64_t grown = (uint64_t)2 * UP_SLOT_BYTES << DK_MIN(n, 16u);
    return DK_MIN(max, grown);
}

static struct up_stg_file *stg_create(struct up_pool *p) {
    const struct dk_libc *c = dk_libc();
    char name[96];
    uint32_t id = p->next_file_id++;
    snprintf(name, sizeof name, "%s.%u.stg", p->tag, id);
    int fd = dk_ifd_openat(p->area_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return NULL;
    fd = up_internal_fd(fd);
    uint64_t bytes = stg_file_bytes(id);
    struct up_stg_file *sf = calloc(1, sizeof *sf);
    uint32_t slots = (uint32_t)(bytes / UP_SLOT_BYTES);
    uint32_t words = (slots + 63) / 64;
    if (sf) {
        sf->free_bits = calloc(words, 8);
        sf->stale_bits = calloc(words, 8);
    }
    int rc = (sf && sf->free_bits && sf->stale_bits) ? c->fallocate(fd, 0, 0, (off_t)bytes) : -1;
    /* Sparse only on a file system without fallocate: a staging file the medium cannot back (ENOSPC, EDQUOT)
     * would make the appends' copies into it stores into holes -- SIGBUS, where the kernel's write returns
     * ENOSPC (review 11, finding 8). Without it the slot request fails and the write goes to the kernel. */
    if (rc != 0 && sf && sf->free_bits && errno == EOPNOTSUPP) rc = c->ftruncate(fd, (off_t)bytes);
    bool dax = p->root->medium.medium == DK_MEDIUM_DAX;
    void *a = MAP_FAILED;
    if (rc == 0) {
        a = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, dax ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED, fd, 0);
        if (a == MAP_FAILED && dax) a = c->mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (a == MAP_FAILED) {
        dk_log_once("cannot create staging file in %s/" UP_AREA " (%s); appends go to the kernel", p->root->path,
                    dk_strerror(errno));
        c->unlinkat(p->area_fd, name, 0);
        up_internal_close(fd);
        if (sf) free(sf->free_bits), free(sf->stale_bits), free(sf);
        return NULL;
    }
    if (dk_cfg.populate) c->madvise(a, bytes, MADV_POPULATE_WRITE);
    sf->fd = fd;
    sf->id = id;
    sf->addr = a;
    sf->bytes = bytes;
    sf->slots = slots;
    sf->free_count = slots;
    for (uint32_t s = 0; s < slots; s++) sf->free_bits[s / 64] |= 1ull << (s % 64);
    dk_count(DK_C_staging_files, 1);
    return sf;
}

static void stg_unlink(struct up_pool *p, const struct up_stg_file *sf) {
    char name[96];
    snprintf(name, sizeof name, "%s.%u.stg", p->tag, sf->id);
    dk_libc()->unlinkat(p->area_fd, name, 0);
}

/* Punches and re-allocates a slot whose blocks were shared with a target file by FICLONERANGE. False when
 * the re-allocation failed (a full medium): the slot is a hole then and must not be handed out (a store
 * into it is a SIGBUS: review 11, finding 8). */
static bool stg_refresh_slot(struct up_stg_file *sf, uint32_t s) {
    const struct dk_libc *c = dk_libc();
    off_t off = (off_t)s * UP_SLOT_BYTES;
    c->fallocate(sf->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, UP_SLOT_BYTES);
    if (c->fallocate(sf->fd, 0, off, UP_SLOT_BYTES) != 0) return false;
    if (dk_cfg.populate) c->madvise(sf->addr + off, UP_SLOT_BYTES, MADV_POPULATE_WRITE);
    return true;
}

static uint32_t pool_free_slots(const struct up_pool *p) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->file_count; i++) n += p->files[i]->free_count;
    return n;
}

/* Free slots the background thread keeps ready: half of what the pool holds (it grows as appends use
 * it), at least 2, at most half of DAXKIT_STAGING_FILES full-size files. */
static uint32_t pool_target_slots(const struct up_pool *p) {
    uint32_t max = (uint32_t)(dk_cfg.staging_files * (dk_round_up(dk_cfg.staging_bytes, UP_SLOT_BYTES) / UP_SLOT_BYTES) / 2);
    uint32_t total = 0;
    for (uint32_t i = 0; i < p->file_count; i++) total += p->files[i]->slots;
    return DK_MIN(max, DK_MAX(2u, total / 2));
}

/* Faults the job's range in through its own mapping (the program's mappings may change meanwhile; a
 * range past a size cut since is refused by the kernel, harmlessly), then unmaps it. On DAX the mapping
 * is MAP_SYNC, so the blocks its faults allocate are durable metadata before they are used (an fsync
 * after the step's first one would not know of them); without MAP_SYNC, no prefault. */
/* One huge page per call: the populate holds the process's mmap lock for reading, and the appender's
 * next step maps its own job range (an mmap, which takes that lock for writing): one call over a whole
 * 8 MiB step made the appender wait for all of it at every step (~360 us per 2,048 appends of 4 KiB
 * seen by strace -T), one per 2 MiB lets it in between two pages. */
static void prefault_run(const struct up_prefault *j) {
    for (uint64_t off = 0; off < j->len; off += DK_HUGE_BYTES) {
        uint64_t len = DK_MIN(j->len - off, (uint64_t)DK_HUGE_BYTES);
        if (madvise((char *)j->addr + off, len, MADV_POPULATE_WRITE) != 0) break;
        dk_count(DK_C_prefault_bytes, len);
    }
    dk_libc()->munmap(j->addr, j->len);
}

/* Background work, under p->mu: prefault jobs, refresh stale slots, then top up. Drops the lock around
 * system calls. */
static void pool_maintain(struct up_pool *p) {
    while (p->job_count && !p->stopping) {
        struct up_prefault j = p->jobs[--p->job_count];
        dk_mu_unlock(&p->mu);
        prefault_run(&j);
        dk_mu_lock(&p->mu);
    }
    for (uint32_t i = 0; i < p->file_count; i++) {
        struct up_stg_file *sf = p->files[i];
        for (uint32_t s = 0; sf->stale_count && s < sf->slots; s++) {
            if (!(sf->stale_bits[s / 64] & (1ull << (s % 64)))) continue;
            sf->stale_bits[s / 64] &= ~(1ull << (s % 64));
            sf->stale_count--;
            dk_mu_unlock(&p->mu);
            bool ready = stg_refresh_slot(sf, s);
            dk_mu_lock(&p->mu);
            if (!ready) { /* stale again: retried at the next round, once space is back */
                sf->stale_bits[s / 64] |= 1ull << (s % 64);
                sf->stale_count++;
                break;
            }
            sf->free_bits[s / 64] |= 1ull << (s % 64);
            sf->free_count++;
        }
    }
    /* A thread started for prefault jobs alone (extend-strategy appends) makes no staging files: they
     * would zero pages on this core while the appender stores into the step it prefaulted. */
    while (!p->stopping && p->slots_taken && p->file_count < UP_POOL_FILES_MAX &&
           pool_free_slots(p) < pool_target_slots(p)) {
        dk_mu_unlock(&p->mu);
        struct up_stg_file *sf = stg_create(p);
        dk_mu_lock(&p->mu);
        if (!sf) break;
        p->files[p->file_count++] = sf;
        if (p->stopping) stg_unlink(p, sf); /* shutdown ran while we were creating it */
    }
}

static void *pool_thread(void *arg) {
    struct up_pool *p = arg; /* started with every signal blocked (dk_thread_start): the host's are not ours */
    DK_CRASH_POINT("stage.thread.start"); /* shim_thread_signals' raise: a signal sent to it as it starts */
    dk_mu_lock(&p->mu);
    while (!p->stopping) {
        pool_maintain(p);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&p->wake, &p->mu, &ts);
    }
    dk_mu_unlock(&p->mu);
    return NULL;
}

/* Locks `name` (an owner's .lock) without blocking: the descriptor when its owner is gone and the name
 * still refers to the file locked -- a recoverer that finished with this owner unlinks the name before it
 * lets the lock go, so a late opener of the old file never handles the owner a second time. Else -1. */
static int lock_dead_owner(int area_fd, const char *name) {
    const struct dk_libc *c = dk_libc();
    struct stat a, b;
    /* another user's owner is that user's to recover, or a privileged process's (common/area.h); looked at
     * before the open, which would block on a FIFO planted in a shared area */
    if (c->fstatat(area_fd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(b.st_mode) || !dk_area_may_recover(&b))
        return -1;
    int lfd = dk_ifd_openat(area_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (lfd < 0) return -1;
    if (c->flock(lfd, LOCK_EX | LOCK_NB) != 0 || c->fstat(lfd, &a) != 0 ||
        c->fstatat(area_fd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
        c->close(lfd);
        return -1;
    }
    return lfd;
}

static bool name_ends(const char *name, const char *suffix) {
    size_t n = strlen(name), m = strlen(suffix);
    return n > m && strcmp(name + n - m, suffix) == 0;
}
/* An operation log, or one being built (dk_oplog_open's <tag>.<pid>.<n>.log / .tmp). */
static bool oplog_file(const char *name) { return name_ends(name, ".log") || name_ends(name, ".tmp"); }
/* Strict mode's staging file (<tag>.strict.stg): its records' bytes, removed with the log's replay. */
static bool strict_staging_file(const char *name) { return name_ends(name, ".strict.stg"); }

/* Another user's owner lock or operation log, which this process may not recover (common/area.h): whether
 * its owner lives is read from /proc/locks afterwards (foreign_count). */
struct foreign_files {
    dev_t dev[16];
    ino_t ino[16];
    uid_t uid[16];
    char name[16][64];
    int n;
    bool overflow;
};

static void foreign_note(struct foreign_files *ff, int area_fd, const char *name) {
    struct stat st;
    if (dk_libc()->fstatat(area_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        dk_area_may_recover(&st))
        return;
    if (ff->n == 16) {
        ff->overflow = true;
        return;
    }
    if (strlen(name) >= sizeof ff->name[0]) return; /* not a name this library makes */
    strcpy(ff->name[ff->n], name);
    ff->dev[ff->n] = st.st_dev, ff->ino[ff->n] = st.st_ino, ff->uid[ff->n++] = st.st_uid;
}

/* The noted files no process holds a lock on: their owners are gone, and their records wait for their user
 * (or a privileged process). Unknown (/proc/locks unreadable, too many): counted as left, the safe side. */
static void foreign_count(const struct foreign_files *ff, int area_fd, struct up_recover_report *rep) {
    if (!ff->n) return;
    bool held[16];
    bool known = dk_area_locked(ff->dev, ff->ino, ff->n, held);
    for (int k = 0; k < ff->n; k++) {
        if (known && held[k]) continue;
        /* An owner ending cleanly removes its files while it holds their locks: one that let its lock go
         * since it was noted has no name here any more. */
        struct stat st;
        if (dk_libc()->fstatat(area_fd, ff->name[k], &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != ff->ino[k])
            continue;
        rep->foreign_left++;
        rep->foreign_uid = (uint32_t)ff->uid[k];
    }
    if (ff->overflow && !rep->foreign_left) rep->foreign_left++, rep->foreign_uid = (uint32_t)ff->uid[0];
}

/* Removes staging files and locks whose owner is gone (its flock can be taken), after rolling back the
 * owner's published-size records. Each dead owner's lock stays held until its records are done and its
 * files and lock name removed (as dk_oplog_find_orphans holds a log's): a second recoverer running at the
 * same time (every daxkit process recovers its directories at start; `daxkit recover`) cannot take it and
 * skips that owner, instead of replaying its records over what the first one and live programs did since
 * (review 9, finding 2: a record replayed late truncated a live program's fsynced append). */
void up_stage_reclaim(const char *root_path, int area_fd, struct up_recover_report *rep) {
    struct up_recover_report ignored;
    if (!rep) rep = memset(&ignored, 0, sizeof ignored);
    const struct dk_libc *c = dk_libc();
    DIR *d = dk_ifd_opendirat(area_fd, ".");
    if (!d) return;
    struct dirent *e;
    char dead[64][48];
    int dead_fd[64];
    int ndead = 0;
    struct foreign_files foreign = {0};
    while ((e = c->readdir(d)) && ndead < 64) {
        size_t n = strlen(e->d_name);
        if (n < 6 || n >= 48 + 5 || strcmp(e->d_name + n - 5, ".lock") != 0) continue;
        int lfd = lock_dead_owner(area_fd, e->d_name);
        if (lfd < 0) {
            foreign_note(&foreign, area_fd, e->d_name);
            continue;
        }
        snprintf(dead[ndead], sizeof dead[ndead], "%.*s", (int)(n - 5), e->d_name);
        dead_fd[ndead++] = lfd; /* held until this owner is finished (below) */
        rep->owners_gone++;
    }
    /* Operation logs have their own owner lock: every orphan is replayed (and removed) first. */
    uint64_t refused = rep->strict.foreign_refused;
    if (up_strict_recover(root_path, area_fd, NULL, &rep->strict) != 0) rep->errors++;
    if (rep->strict.foreign_refused > refused) {
        rep->foreign_left += rep->strict.foreign_refused - refused;
        rep->foreign_uid = rep->strict.foreign_uid;
    }
    for (int i = 0; i < ndead; i++) {
        char sname[80];
        snprintf(sname, sizeof sname, "%.47s.sizes", dead[i]);
        uint64_t before = rep->sizes.rolled_back;
        if (up_sizerec_recover(area_fd, sname, &rep->sizes) != 0) rep->errors++;
        if (rep->sizes.rolled_back > before)
            dk_log_verbose("%s: %llu file(s) rolled back to their published size after a crash", root_path,
                           (unsigned long long)(rep->sizes.rolled_back - before));
    }
    /* Operation logs are removed by their own recovery alone, after their replay: a log still there has an
     * owner lock someone holds (a descriptor inherited by a process alive now), or a replay that failed; it
     * stays, with its staging file, for a later recovery (review 9, finding 11: this loop removed a dead
     * owner's log -- and the staged bytes its records point to -- unreplayed). */
    char logged[64][48]; /* tags with a log still here (more than 64: every strict staging file is kept) */
    int nlogged = 0;
    bool logged_overflow = false;
    rewinddir(d);
    while ((e = c->readdir(d))) {
        const char *dot = strchr(e->d_name, '.');
        if (!dot || !oplog_file(e->d_name) || dot - e->d_name >= 48) continue;
        /* another user's (a parked log holds no record: docs/oplog.md) */
        if (name_ends(e->d_name, ".log") && !dk_oplog_parked_name(e->d_name)) foreign_note(&foreign, area_fd, e->d_name);
        if (nlogged == 64) logged_overflow = true;
        else snprintf(logged[nlogged++], sizeof logged[0], "%.*s", (int)(dot - e->d_name), e->d_name);
    }
    rewinddir(d);
    while ((e = c->readdir(d))) {
        bool gone = false;
        if (oplog_file(e->d_name) || name_ends(e->d_name, ".done")) continue; /* dk_oplog_find_orphans's (above):
                                                                                   logs and their completion marks */
        const char *dot = strchr(e->d_name, '.');
        if (strict_staging_file(e->d_name)) { /* kept while its tag has a log */
            bool keep = logged_overflow;
            for (int i = 0; i < nlogged && !keep; i++)
                keep = strlen(logged[i]) == (size_t)(dot - e->d_name) && !strncmp(logged[i], e->d_name, dot - e->d_name);
            if (keep) continue;
        }
        for (int i = 0; i < ndead && !gone; i++) {
            size_t n = strlen(dead[i]);
            gone = strncmp(e->d_name, dead[i], n) == 0 && e->d_name[n] == '.';
        }
        /* An owner's lock exists (locked) before its first staging file: a staging file whose lock is
         * missing was left by an owner that is gone. */
        size_t n = strlen(e->d_name);
        if (!gone && dot && n > 4 && !strcmp(e->d_name + n - 4, ".stg")) {
            char lname[64];
            snprintf(lname, sizeof lname, "%.*s.lock", (int)(dot - e->d_name), e->d_name);
            struct stat st;
            gone = c->fstatat(area_fd, lname, &st, 0) != 0 && errno == ENOENT;
        }
        struct stat fst; /* another user's files stay (common/area.h), but for a privileged process */
        if (gone && (c->fstatat(area_fd, e->d_name, &fst, AT_SYMLINK_NOFOLLOW) != 0 || !dk_area_may_recover(&fst)))
            gone = false;
        if (gone && c->unlinkat(area_fd, e->d_name, 0) == 0) {
            rep->files_removed++;
            dk_log_verbose("%s: removed %s left by a process that is gone", root_path, e->d_name);
        }
    }
    /* The dead owners' locks go last, so a crash here leaves them to be found again; each name is removed
     * while its lock is still held (lock_dead_owner's check), then the lock is let go. */
    for (int i = 0; i < ndead; i++) {
        char lname[80];
        snprintf(lname, sizeof lname, "%.47s.lock", dead[i]);
        c->unlinkat(area_fd, lname, 0);
        c->close(dead_fd[i]);
    }
    closedir(d);
    foreign_count(&foreign, area_fd, rep);
}

/* The root's area, made when missing (common/area.c: shared by every user who may write the root); its
 * descriptor, or -1 (errno set). */
static int area_open(const struct up_root *r) {
    const struct dk_libc *c = dk_libc();
    int rfd = dk_ifd_openat(AT_FDCWD, r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (rfd < 0) return -1;
    int mk = dk_area_mkdir(rfd, UP_AREA);
    int afd = mk == -EPERM ? (errno = EPERM, -1) /* another user's: files here are not kept safe */
                           : dk_ifd_openat(rfd, UP_AREA, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    int e = errno;
    c->close(rfd);
    errno = e;
    return afd;
}

static struct up_pool *pool_create(struct up_root *r) {
    const struct dk_libc *c = dk_libc();
    char area[4200];
    snprintf(area, sizeof area, "%s/" UP_AREA, r->path);
    int afd = area_open(r);
    if (afd < 0) {
        struct stat as; /* another user's area, made since the start: the files opened from now on are the kernel's */
        if (errno == EPERM && c->lstat(area, &as) == 0) up_foreign_note_untrusted(r->path, (uint32_t)as.st_uid);
        else dk_log_once("cannot use %s (%s); appends under %s go to the kernel", area, dk_strerror(errno), r->path);
        return NULL;
    }
    afd = up_internal_fd(afd);
    up_stage_reclaim(r->path, afd, NULL);
    struct up_pool *p = calloc(1, sizeof *p);
    if (!p) {
        up_internal_close(afd);
        return NULL;
    }
    p->root = r;
    p->area_fd = afd;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(p->tag, sizeof p->tag, "p%d-%lx", (int)c->getpid(), (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
    /* Locked under a temporary name, then renamed: nobody ever sees our lock file unlocked. */
    char lname[64], tmp[64];
    snprintf(lname, sizeof lname, "%s.lock", p->tag);
    snprintf(tmp, sizeof tmp, "%s.lock-new", p->tag);
    int lfd = dk_ifd_openat(afd, tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd >= 0 && c->flock(lfd, LOCK_EX | LOCK_NB) == 0 && c->renameat(afd, tmp, afd, lname) == 0) {
        p->lock_fd = up_internal_fd(lfd);
    } else {
        if (lfd >= 0) c->close(lfd);
        c->unlinkat(afd, tmp, 0);
        p->lock_fd = -1;
    }
    return p;
}

/* The pool's set-up (openat, the reclaim's opens and fsyncs, close: cancellation points in glibc) runs with
 * cancellation off: it is reached under a file's mutex (a first staged append, a publish's size record), and
 * a thread cancelled inside died holding that mutex and pools_mu -- every later call on the file hung. The
 * library tests cancellation at its entry (shim_cancel_first_append_*). */
static struct up_pool *pool_for(struct up_root *r) {
    if (__atomic_load_n(&r->pool, __ATOMIC_ACQUIRE)) return r->pool;
    int cancel_was = dk_cancel_off();
    dk_mu_lock(&pools_mu);
    if (!r->pool && pool_count < DK_ARRAY_LEN(pools)) {
        /* Reached from served calls (a write, an fsync): the area's mkdirat (EEXIST on every run after the
         * first), the reclaim's probes of live owners' locks and a failed creation must not show in the
         * program's errno (review 9, finding 9). */
        DK_ERRNO_SAVE;
        struct up_pool *p = pool_create(r);
        DK_ERRNO_RESTORE;
        if (p) {
            pools[pool_count++] = p;
            __atomic_store_n(&r->pool, p, __ATOMIC_RELEASE);
        }
    }
    dk_mu_unlock(&pools_mu);
    dk_cancel_restore(cancel_was);
    return r->pool;
}

int up_stage_owner(struct up_root *r, int *area_fd, const char **tag) {
    struct up_pool *p;
    if (stage_enter()) {
        p = pool_for(r);
        stage_leave();
    } else { /* nested: only a pool made already (pool_for's making holds pools_mu) */
        p = __atomic_load_n(&r->pool, __ATOMIC_ACQUIRE);
    }
    if (!p || p->lock_fd < 0) return -ENOENT; /* without an owner lock a record could not be told from a dead one */
    *area_fd = p->area_fd;
    *tag = p->tag;
    return 0;
}

static bool take_from(struct up_stg_file *sf, uint32_t *slot) {
    if (!sf->free_count) return false;
    for (uint32_t w = 0; w < (sf->slots + 63) / 64; w++) {
        if (!sf->free_bits[w]) continue;
        uint32_t s = w * 64 + (uint32_t)__builtin_ctzll(sf->free_bits[w]);
        sf->free_bits[w] &= ~(1ull << (s % 64));
        sf->free_count--;
        *slot = s;
        return true;
    }
    return false;
}

static void start_thread_locked(struct up_pool *p) {
    if (p->thread_started) return;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 << 10);
    if (dk_thread_start(&t, &a, pool_thread, p) == 0) p->thread_started = true;
    pthread_attr_destroy(&a);
}

/* ---- heap slots: appends held in process memory where relink copies anyway ----
 *
 * On a medium without block sharing a relink is a pwrite of the staged bytes, wherever they are: a staging
 * file adds only its creation -- the hidden area, an owner lock, fallocate and populate of 4 MiB, a
 * background thread -- paid by every process that appends at all (rsync, git: ~15% of their CPU time on
 * tmpfs). The first slot of an append burst is therefore process memory, grown as the appends need up to
 * DAXKIT_STAGE_HEAP_BYTES; beyond that the burst continues in pool slots. Nothing else changes: the bytes
 * are invisible to other processes until the publish copies them (publish.c), and the staging pool was
 * never read by recovery (posix and sync modes publish before acknowledging what must survive). */

#define UP_HEAP_FIRST_BYTES 4096u
/* All heap slots of the process together: anonymous memory that is not reclaimable as the pool's page cache
 * is, so bounded well below what 8 MiB per file would add up to (a logger with 32 logs: 256 MiB). 64 MiB
 * holds a whole DAXKIT_STAGE_HEAP_BYTES (its maximum too) for one burst and the small bursts of many files;
 * past it appends continue in pool slots (review 7, finding 25). */
#define UP_HEAP_TOTAL_BYTES_MAX (64ull << 20)
static uint64_t heap_bytes_total; /* atomic */

static bool heap_reserve(uint64_t bytes) {
    uint64_t now = __atomic_add_fetch(&heap_bytes_total, bytes, __ATOMIC_RELAXED);
    if (now <= UP_HEAP_TOTAL_BYTES_MAX) return true;
    __atomic_sub_fetch(&heap_bytes_total, bytes, __ATOMIC_RELAXED);
    return false;
}

static void heap_release(uint64_t bytes) { __atomic_sub_fetch(&heap_bytes_total, bytes, __ATOMIC_RELAXED); }

/* The largest heap buffer given back, kept for the next burst: malloc hands buffers of 128 KiB and more out
 * as fresh mappings (and trims the heap's top), so without it each such burst page-faulted all its pages
 * anew (rsync of /usr/include/linux: ~500 page faults more than the kernel path). At most
 * DAXKIT_STAGE_HEAP_BYTES is kept, not counted in heap_bytes_total.
 * Handed over without a lock (session 20: a marked mutex's lock and unlock on each side were ~210
 * instructions of every file tar xf creates): one pointer, moved only by atomic exchange, so a buffer is
 * owned either by the slot or by the one thread that exchanged it out -- two threads taking and giving back
 * at once never both hold one buffer, and none is lost. While in the slot a buffer's first bytes (unused
 * then) hold its capacity, read only by the thread that exchanged it out. Under such a race a smaller buffer
 * may sit in the slot for a while (a take too small for it puts it back and allocates): a cost, never a
 * wrong buffer. */
struct heap_spare_head {
    uint64_t cap;
};
static char *heap_spare; /* atomic: NULL, or a buffer headed by its heap_spare_head */

/* A page-aligned buffer: appends copy into it at the offset their bytes have in the file's block, as they
 * do into a pool slot. malloc's alignment (16 bytes past a page for a large chunk) put each 4 KiB copy 16
 * bytes off a page-aligned source, and rep movsb on this AMD CPU crawled at that distance: 1.5-2.3 us
 * per 4 KiB append against 150-220 ns. From UP_HEAP_MAP_BYTES on a buffer is a mapping of its own, which
 * mremap grows without copying what it holds (tar cf of /usr/include/linux, one 6.5 MB burst: 3.5 M
 * instructions of growth copies). Which kind a buffer is follows from its capacity. */
#define UP_HEAP_MAP_BYTES (256u << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A mapped buffer's pages [addr, addr + len) are made now, in one call: the appends filling them would take
 * a page fault per 4 KiB (tar cf of /usr/include/linux, one 6.5 MB burst: 1,690 page faults against the
 * kernel path's 206, 399 populated; CPU 17.5 -> 16.2 ms, kernel 12). The capacity is at most twice what
 * the burst holds. Before Linux 5.14: EINVAL, the faults as before.
 * A mapped buffer is one mapping advised MADV_HUGEPAGE (used where transparent huge pages are "always" or
 * "madvise", this machine's setting), starting on a 2 MiB boundary and grown in 2 MiB steps past 2 MiB
 * (heap_map, heap_remap, heap_cap_for), so that each 2 MiB unit populated whole is one huge page: 4 KiB pages
 * cost ~0.4 ms per MiB populated here, most of it per-page work (a fault, a memcg charge, a page-table entry
 * each), and tar cf's 5.3 MB archive burst spent more in this madvise than in the pwrite that publishes it;
 * a 2 MiB huge page took 0.19 ms. The first 2 MiB, populated in pieces as the burst grows, stay 4 KiB pages.
 * Where huge pages are off or none is free the advice changes nothing: 4 KiB pages as before. */
static void heap_populate(char *addr, uint64_t len) {
    DK_ERRNO_SAVE;
    madvise(addr, len, MADV_POPULATE_WRITE);
    DK_ERRNO_RESTORE;
}

/* An anonymous mapping of cap bytes starting on a 2 MiB boundary (the slack around it is unmapped), so that
 * its 2 MiB units can be huge pages. errno is kept: a failure here is not the program's (review 13, 3). */
static void *heap_map(uint64_t cap) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    char *w = c->mmap(NULL, cap + DK_HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *a = MAP_FAILED;
    if (w != MAP_FAILED) {
        a = (char *)dk_round_up((uintptr_t)w, DK_HUGE_BYTES);
        if (a > w) c->munmap(w, (size_t)(a - w));
        c->munmap(a + cap, (size_t)(w + DK_HUGE_BYTES - a));
        madvise(a, cap, MADV_HUGEPAGE); /* the whole mapping: a part would split it, and mremap moves one whole */
    }
    DK_ERRNO_RESTORE;
    return a;
}

/* A mapped buffer grown to cap bytes: in place when the addresses after it are free, else moved (its pages
 * with it, nothing copied) to a new 2 MiB-aligned place. NULL when neither works (the old one stays). errno
 * is kept: the in-place attempt fails with ENOMEM whenever a mapping follows (review 13, finding 3). */
static char *heap_remap(char *addr, uint64_t old_cap, uint64_t cap) {
    DK_ERRNO_SAVE;
    void *m = mremap(addr, old_cap, cap, 0);
    if (m == MAP_FAILED) {
        void *to = heap_map(cap);
        if (to != MAP_FAILED) {
            m = mremap(addr, old_cap, cap, MREMAP_MAYMOVE | MREMAP_FIXED, to);
            if (m == MAP_FAILED) dk_libc()->munmap(to, cap);
        }
    }
    DK_ERRNO_RESTORE;
    return m == MAP_FAILED ? NULL : m;
}

static char *heap_buffer(uint64_t cap) {
    if (cap >= UP_HEAP_MAP_BYTES) {
        void *m = heap_map(cap);
        if (m == MAP_FAILED) return NULL;
        heap_populate(m, cap);
        return m;
    }
    void *p = NULL;
    return posix_memalign(&p, DK_PAGE_BYTES, cap) == 0 ? p : NULL;
}

static void heap_buffer_free(char *buf, uint64_t cap) {
    if (!buf) return;
    if (cap >= UP_HEAP_MAP_BYTES) dk_libc()->munmap(buf, cap);
    else dk_ifd_free(buf); /* glibc's free may open a file at the lowest free number (internal_fd.h) */
}

/* Into the spare slot, keeping the larger of buf and what the slot holds; the other is freed. Each round
 * owns one buffer and the capacity it carries grows, so it ends (at the latest when the slot is empty). */
static void heap_spare_put(char *buf, uint64_t cap) {
    while (buf) {
        ((struct heap_spare_head *)(void *)buf)->cap = cap;
        char *old = __atomic_exchange_n(&heap_spare, buf, __ATOMIC_ACQ_REL);
        if (!old) return;
        uint64_t old_cap = ((const struct heap_spare_head *)(const void *)old)->cap;
        if (old_cap <= cap) {
            heap_buffer_free(old, old_cap);
            return;
        }
        buf = old, cap = old_cap; /* the slot held a larger one (a racing give): back it goes */
    }
}

/* A buffer of at least *cap bytes: the spare when large enough (*cap becomes its size), else a new one. */
static char *heap_alloc(uint64_t *cap) {
    char *buf = __atomic_exchange_n(&heap_spare, NULL, __ATOMIC_ACQ_REL);
    /* (the name is the tests' cue from when a mutex was held here: a handler or a hook with the spare taken) */
    DK_CRASH_POINT("stage.heap_alloc.spare_locked");
    if (buf) {
        uint64_t spare_cap = ((const struct heap_spare_head *)(const void *)buf)->cap;
        if (spare_cap >= *cap) {
            *cap = spare_cap;
            return buf;
        }
        heap_spare_put(buf, spare_cap); /* too small for this burst: kept for a smaller one */
    }
    return heap_buffer(*cap);
}

static void heap_free(char *buf, uint64_t cap) {
    if (cap >= sizeof(struct heap_spare_head) && cap <= dk_cfg.stage_heap_bytes) heap_spare_put(buf, cap);
    else heap_buffer_free(buf, cap);
}

/* Heap buffers given back by a nested entry (stage_busy), pushed without a lock (the buffer holds the link),
 * freed by the next entry that is not nested. */
struct heap_deferred_buf {
    struct heap_deferred_buf *next;
    uint64_t cap;
};
static struct heap_deferred_buf *heap_deferred; /* atomic */

static void heap_defer(char *buf, uint64_t cap) {
    struct heap_deferred_buf *d = (struct heap_deferred_buf *)(void *)buf;
    d->cap = cap;
    d->next = __atomic_load_n(&heap_deferred, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&heap_deferred, &d->next, d, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {}
}

static void heap_free_deferred(void) {
    if (DK_LIKELY(!__atomic_load_n(&heap_deferred, __ATOMIC_RELAXED))) return;
    struct heap_deferred_buf *d = __atomic_exchange_n(&heap_deferred, NULL, __ATOMIC_ACQUIRE);
    while (d) {
        struct heap_deferred_buf *next = d->next;
        heap_free((char *)d, d->cap);
        d = next;
    }
}

/* The capacity of a heap slot now holding cap bytes, to cover [base, end): doubling, page-rounded, at most
 * DAXKIT_STAGE_HEAP_BYTES (the rest of the range then goes to pool slots). Past 2 MiB in 2 MiB steps: a
 * mapping moved by mremap keeps its pages, so growing by steps copies nothing, and each step is one huge
 * page (heap_populate) where doubling populated up to twice what the burst holds. */
static uint64_t heap_cap_for(uint64_t base, uint64_t end, uint64_t cap) {
    uint64_t need = dk_round_up(end - base, DK_PAGE_BYTES);
    uint64_t grown = cap >= DK_HUGE_BYTES ? cap + DK_HUGE_BYTES : DK_MIN(cap * 2, (uint64_t)DK_HUGE_BYTES);
    uint64_t want = DK_MAX(DK_MAX(grown, (uint64_t)UP_HEAP_FIRST_BYTES), need);
    if (want > DK_HUGE_BYTES) want = dk_round_up(want, DK_HUGE_BYTES);
    return DK_MIN(dk_cfg.stage_heap_bytes, want);
}

/* A heap slot for [base, end), when the root's relink copies and the first write fits (a larger one goes
 * to the pool at once). */
static bool heap_take(const struct up_root *r, uint64_t base, uint64_t end, struct up_staged *out) {
    if (r->clone_min_bytes != UINT64_MAX || end - base > dk_cfg.stage_heap_bytes) return false;
    uint64_t cap = heap_cap_for(base, DK_MAX(end, base + 1), 0);
    char *buf = heap_alloc(&cap);
    if (buf && !heap_reserve(cap)) {
        heap_free(buf, cap);
        buf = NULL;
    }
    if (!buf) return false;
    *out = (struct up_staged){.sf = NULL, .slot = 0, .base = base, .cap = cap, .addr = buf, .sf_off = 0};
    dk_count(DK_C_stage_heap_slots, 1);
    return true;
}

static bool heap_grow(struct up_staged *s, uint64_t end) {
    uint64_t cap = heap_cap_for(s->base, end, s->cap);
    if (cap <= s->cap || !heap_reserve(cap - s->cap)) return false;
    char *buf;
    if (s->cap >= UP_HEAP_MAP_BYTES) { /* a mapping already: moved by the page tables, not copied */
        buf = heap_remap(s->addr, s->cap, cap);
        if (buf) heap_populate(buf + s->cap, cap - s->cap);
    } else {
        buf = heap_buffer(cap); /* realloc would not keep the page alignment */
        if (buf) {
            memcpy(buf, s->addr, s->cap);
            heap_buffer_free(s->addr, s->cap);
        }
    }
    if (!buf) {
        heap_release(cap - s->cap);
        return false;
    }
    s->addr = buf;
    s->cap = cap;
    return true;
}

bool up_stage_grow(struct up_staged *s, uint64_t end) {
    if (!up_staged_on_heap(s) || end <= s->base + s->cap || !stage_enter()) return false;
    bool grown = heap_grow(s, end);
    stage_leave();
    return grown;
}

/* ---- slots ---- */

/* A pool slot: under the caller's file mutex and p->mu, a staging file may be made here (stg_create: openat,
 * close, fallocate -- cancellation points), so cancellation is off (see pool_for). */
static int stage_take(struct up_root *r, uint64_t base, uint64_t end, bool heap_ok, struct up_staged *out) {
    if (heap_ok && heap_take(r, base, end, out)) return 0;
    struct up_pool *p = pool_for(r);
    if (!p) return -ENOSPC;
    int cancel_was = dk_cancel_off();
    dk_mu_lock(&p->mu);
    p->slots_taken = true;
    start_thread_locked(p);
    uint32_t slot = 0;
    struct up_stg_file *sf = NULL;
    for (uint32_t i = 0; i < p->file_count && !sf; i++)
        if (take_from(p->files[i], &slot)) sf = p->files[i];
    if (!sf && p->file_count < UP_POOL_FILES_MAX) {
        /* The background thread fell behind: create one here (counted as a fallback; a failure is -ENOSPC
         * for the caller, which goes to the kernel: its errno is not the program's). */
        DK_ERRNO_SAVE;
        struct up_stg_file *n = stg_create(p);
        DK_ERRNO_RESTORE;
        if (n) {
            p->files[p->file_count++] = n;
            dk_count(DK_C_fallbacks, 1);
            if (take_from(n, &slot)) sf = n;
        }
    }
    if (sf && pool_free_slots(p) < pool_target_slots(p)) pthread_cond_signal(&p->wake);
    dk_mu_unlock(&p->mu);
    dk_cancel_restore(cancel_was);
    if (!sf) return -ENOSPC;
    /* Same offset within a block as the target, so whole blocks can be cloned. */
    uint64_t in_block = base % DK_PAGE_BYTES;
    out->sf = sf;
    out->slot = slot;
    out->base = base;
    out->cap = UP_SLOT_BYTES - in_block;
    out->sf_off = (uint64_t)slot * UP_SLOT_BYTES + in_block;
    out->addr = sf->addr + out->sf_off;
    return 0;
}

int up_stage_take(struct up_root *r, uint64_t base, uint64_t end, bool heap_ok, struct up_staged *out) {
    if (!stage_enter()) return -ENOSPC; /* nested: the caller hands the append to the kernel */
    heap_free_deferred();
    int rc = stage_take(r, base, end, heap_ok, out);
    stage_leave();
    return rc;
}

static bool stage_prefault(struct up_file *f, int fd, uint64_t off, uint64_t len) {
    struct up_pool *p = pool_for(f->root);
    if (!p || !len) return false;
    int mfd = up_aux_fd(f, fd, true); /* cancellation off in its open (auxfd.c) */
    if (mfd < 0) return false;
    const struct dk_libc *c = dk_libc();
    int flags = f->root->medium.medium == DK_MEDIUM_DAX ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    DK_ERRNO_SAVE; /* a failed mapping only means no prefault: the extending write succeeded */
    void *a = c->mmap(NULL, len, PROT_READ | PROT_WRITE, flags, mfd, (off_t)off);
    DK_ERRNO_RESTORE;
    if (a == MAP_FAILED) return false;
    dk_mu_lock(&p->mu);
    bool queued = !p->stopping && p->job_count < UP_PREFAULT_JOBS;
    if (queued) {
        p->jobs[p->job_count++] = (struct up_prefault){a, len};
        start_thread_locked(p);
        pthread_cond_signal(&p->wake);
    }
    dk_mu_unlock(&p->mu);
    if (!queued) c->munmap(a, len);
    return queued;
}

/* A heap slot given back at a publish and taken again by the next append (a record written and fsynced at a
 * time: RocksDB's WAL with sync=1, an AOF, a journal) cost ~240 library instructions of the ~1,800 of a
 * 100-byte write + fdatasync (heap_alloc and heap_free, each under a mutex until session 20, and the reservation's two
 * atomics). A buffer up to this size stays with its file instead, still counted in heap_bytes_total, until
 * the file's next burst takes it or the file is freed (at most DAXKIT_CACHE_FILES closed files keep one). */
#define UP_HEAP_KEEP_BYTES (64u << 10)

void up_stage_give_back_to(struct up_file *f, struct up_staged *s, bool cloned) {
    if (up_staged_on_heap(s) && !f->heap_kept && s->cap <= UP_HEAP_KEEP_BYTES) {
        f->heap_kept = s->addr, f->heap_kept_cap = s->cap;
        s->addr = NULL;
        return;
    }
    up_stage_give_back(f->root, s, cloned);
}

bool up_stage_take_kept(struct up_file *f, uint64_t base, struct up_staged *out) {
    if (!f->heap_kept) return false;
    *out = (struct up_staged){.sf = NULL, .slot = 0, .base = base, .cap = f->heap_kept_cap, .addr = f->heap_kept, .sf_off = 0};
    f->heap_kept = NULL;
    dk_count(DK_C_stage_heap_slots, 1);
    return true;
}

void up_stage_kept_free(struct up_file *f) {
    if (!f->heap_kept) return;
    if (stage_enter()) {
        heap_free(f->heap_kept, f->heap_kept_cap);
        stage_leave();
    } else { /* nested (a handler's close inside its thread's staging): no lock, no allocator call */
        heap_defer(f->heap_kept, f->heap_kept_cap);
    }
    heap_release(f->heap_kept_cap);
    f->heap_kept = NULL;
}

bool up_stage_prefault(struct up_file *f, int fd, uint64_t off, uint64_t len) {
    if (!stage_enter()) return false;
    bool queued = stage_prefault(f, fd, off, len);
    stage_leave();
    return queued;
}

static void stage_give_back(struct up_root *r, struct up_staged *s, bool cloned) {
    if (up_staged_on_heap(s)) {
        dk_assert(!cloned);
        heap_free(s->addr, s->cap);
        heap_release(s->cap);
        s->addr = NULL;
        return;
    }
    struct up_pool *p = r->pool;
    dk_assert(p != NULL);
    struct up_stg_file *sf = s->sf;
    /* A cloned slot's blocks are shared with the target file until punched here: while they are, every
     * overwrite of the file there is a copy-on-write in the file system (XFS: 4 KiB random overwrites
     * with fsync every 10 ran 5.1-6.2 us against the kernel's 2.5-3.2 until the background refresh got
     * to them). The re-allocation waits for the background thread. */
    if (cloned) {
        DK_ERRNO_SAVE; /* a failed punch (only a slower overwrite later) must not show in the program's errno */
        int cancel_was = dk_cancel_off(); /* under the file's mutex (a publish): fallocate is a cancellation point */
        dk_libc()->fallocate(sf->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)s->slot * UP_SLOT_BYTES,
                             UP_SLOT_BYTES);
        dk_cancel_restore(cancel_was);
        DK_ERRNO_RESTORE;
    }
    dk_mu_lock(&p->mu);
    if (cloned) {
        sf->stale_bits[s->slot / 64] |= 1ull << (s->slot % 64);
        sf->stale_count++;
        pthread_cond_signal(&p->wake);
    } else {
        sf->free_bits[s->slot / 64] |= 1ull << (s->slot % 64);
        sf->free_count++;
    }
    dk_mu_unlock(&p->mu);
    s->sf = NULL;
}

void up_stage_give_back(struct up_root *r, struct up_staged *s, bool cloned) {
    if (DK_UNLIKELY(!stage_enter())) { /* nested: no lock, no allocator call (see stage_busy) */
        if (up_staged_on_heap(s)) {
            heap_defer(s->addr, s->cap);
            heap_release(s->cap);
            s->addr = NULL;
        }
        s->sf = NULL; /* a pool slot stays taken */
        return;
    }
    heap_free_deferred();
    stage_give_back(r, s, cloned);
    stage_leave();
}

/* In a forked child: the parent's staging files, lock and thread are the parent's. Unmap and close
 * them here (the parent published every staged append before fork, so nothing is lost). */
void up_stage_after_fork_child(void) {
    const struct dk_libc *c = dk_libc();
    for (uint32_t i = 0; i < pool_count; i++) {
        struct up_pool *p = pools[i];
        for (uint32_t k = 0; k < p->file_count; k++) {
            struct up_stg_file *sf = p->files[k];
            c->munmap(sf->addr, sf->bytes);
            up_internal_close(sf->fd);
            free(sf->free_bits), free(sf->stale_bits), free(sf);
        }
        for (uint32_t k = 0; k < p->job_count; k++) dk_libc()->munmap(p->jobs[k].addr, p->jobs[k].len);
        if (p->lock_fd >= 0) up_internal_close(p->lock_fd);
        up_internal_close(p->area_fd);
        p->root->pool = NULL;
        free(p);
    }
    pool_count = 0;
    dk_mu_reinit(&pools_mu);
}

const char *up_stage_tag(struct up_root *r) {
    struct up_pool *p = __atomic_load_n(&r->pool, __ATOMIC_ACQUIRE);
    return p ? p->tag : NULL;
}

bool up_stage_release_root(struct up_root *r) {
    if (!stage_enter()) return false; /* nested: in use */
    dk_mu_lock(&pools_mu);
    struct up_pool *p = r->pool;
    bool idle = true;
    if (p) {
        dk_mu_lock(&p->mu);
        idle = p->file_count == 0 && !p->slots_taken && !p->thread_started &&
               !__atomic_load_n(&r->sizes, __ATOMIC_ACQUIRE); /* (published-size records: in use) */
        if (idle) {
            char lname[64];
            snprintf(lname, sizeof lname, "%s.lock", p->tag);
            dk_libc()->unlinkat(p->area_fd, lname, 0);
            p->stopping = true;
            __atomic_store_n(&r->pool, NULL, __ATOMIC_RELEASE);
        }
        dk_mu_unlock(&p->mu);
    }
    dk_mu_unlock(&pools_mu);
    stage_leave();
    return idle;
}

/* At exit: remove our staging files and lock (everything was published by the caller). */
void up_stage_shutdown(void) {
    const struct dk_libc *c = dk_libc();
    if (!stage_enter()) return; /* nested: left for the next start's reclaim, as at a crash */
    for (uint32_t i = 0; i < pool_count; i++) {
        struct up_pool *p = pools[i];
        dk_mu_lock(&p->mu);
        p->stopping = true;
        for (uint32_t k = 0; k < p->file_count; k++) stg_unlink(p, p->files[k]);
        up_sizerec_shutdown(p->root, p->area_fd, p->tag);
        char lname[64];
        snprintf(lname, sizeof lname, "%s.lock", p->tag);
        c->unlinkat(p->area_fd, lname, 0);
        dk_mu_unlock(&p->mu);
    }
    stage_leave();
}

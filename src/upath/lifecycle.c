/* Process lifecycle: start-up (configuration, roots, inherited descriptors), fork, exec, exit. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/stats.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "upath/fsize.h"
#include "upath/guard.h"
#include "upath/inflight.h"
#include "upath/io.h"
#include "upath/policy.h"
#include "upath/foreign.h"
#include "upath/recover_scope.h"
#include "upath/atomic_mmap.h"
#include "upath/atomic_route.h"
#include "upath/upath.h"

void up_slot_drop_local(struct up_slot *s);
extern bool up_refuse_flag;

static int config_errors;
static void report_config(const char *msg) {
    config_errors++;
    dk_log("%s", msg);
}

/* Validates what the option table cannot: combinations and structured values. */
static int validate_more(void) {
    char why[256];
    int bad = 0;
    if (up_policy_validate(dk_cfg.append, why, sizeof why) != 0) {
        dk_log("DAXKIT_APPEND='%s' is not valid: %s", dk_cfg.append, why);
        bad++;
    }
#ifdef DAXKIT_TEST_BUILD
    if (dk_cfg.test_fail[0] && dk_libc_fail_parse(dk_cfg.test_fail) != 0) {
        dk_log("DAXKIT_TEST_FAIL='%s' is not valid: expected call:nth:errno[:sticky]", dk_cfg.test_fail);
        bad++;
    }
#endif
    return bad;
}

static void banner(void) {
    if (!dk_cfg.verbose) return;
    char buf[2048];
    int n = dk_config_write_nondefault(&dk_cfg, buf, sizeof buf, " ");
    dk_log("daxkit %s (%s build) loaded: %s%s; flush %s, non-temporal %s, crc32c fold %s", DAXKIT_VERSION,
           dk_build_kind(), n ? buf : "all defaults",
           dk_cfg.persist == DK_PERSIST_FLUSH ? " (persistence EMULATED: flush treated as durable)" : "",
           dk_flush_name(), dk_nt_name(), dk_crc_fold_name());
}

/* Descriptors inherited across exec may be shared with the program that opened them: the kernel's
 * offset stays the truth for them (passed through, counted as pt_exported). */
bool up_adopting_inherited;

static void adopt_inherited(void) {
    /* In a window, at a high number: glibc's opendir took the lowest free one (common/internal_fd.h). */
    DIR *d = dk_ifd_opendirat(AT_FDCWD, "/proc/self/fd");
    if (!d) return;
    up_adopting_inherited = true; /* (at start: one thread) */
    int self = dirfd(d);
    DK_CRASH_POINT("upath.adopt_inherited.scanning"); /* tests: shim_adopt_scan_window lists the descriptors here */
    struct dirent *e;
    while ((e = DK_REAL(readdir)(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || fd == self || fd < 0) continue;
        const struct up_fd *own = up_fd_entry((int)fd);
        if (own && own->internal) continue; /* ours (the stats file's): no fcntl, fstat and readlink of it */
        /* Only a managed regular file is adopted: the others (a terminal, a pipe, /dev/null) cost one fstat
         * each, not an fcntl as well (up_adopt's own fstat then looks at a managed one again). */
        struct stat st;
        if (DK_REAL(fstat)((int)fd, &st) != 0 || !S_ISREG(st.st_mode) || !up_dev_is_managed(st.st_dev)) continue;
        int fl = DK_REAL(fcntl)((int)fd, F_GETFL);
        if (fl < 0) continue;
        up_adopt((int)fd, fl, AT_FDCWD, NULL);
        struct up_slot *s = up_fd_slot((int)fd);
        if (s) s->kernel = 1;
    }
    up_adopting_inherited = false;
    closedir(d);
}

void up_init(void) {
    DK_ERRNO_SAVE;
    dk_libc();
    config_errors = 0;
    dk_config_load(&dk_cfg, NULL, report_config);
    config_errors += validate_more();
    dk_persist_init(dk_cfg.flush);
    up_fsize_refresh(); /* before any file of ours is made: they could cross it (SIGXFSZ) */
    if (!dk_cfg.disable && up_fsize_limited()) {
        dk_log("RLIMIT_FSIZE is %llu bytes: daxkit's own files (staging, logs, stats) could cross it and the "
               "kernel would kill the program with SIGXFSZ; running without acceleration (raise `ulimit -f`)",
               (unsigned long long)up_fsize_limit_bytes);
        dk_cfg.disable = true;
    }
    if (config_errors) {
        if (dk_cfg.strict_config) {
            dk_log("DAXKIT_STRICT_CONFIG=1: opening managed files fails with EINVAL until the options are fixed");
            up_refuse_flag = true;
        } else {
            dk_log("running without acceleration because of the option error(s) above "
                   "(set DAXKIT_STRICT_CONFIG=1 to make them an error)");
            dk_cfg.disable = true;
        }
    }
    if (dk_cfg.disable || up_fdtab_init() != 0 || up_roots_init(dk_cfg.dir) == 0) {
        if (!dk_cfg.disable && !dk_cfg.dir[0]) dk_log_verbose("DAXKIT_DIR is empty: nothing is managed");
        dk_stats_remove_stale(); /* a killed process with our pid may have left one: we are not serving */
        DK_ERRNO_RESTORE;
        return;
    }
    const char *note = dk_cfg.persist == DK_PERSIST_FLUSH ? "persistence emulated (DAXKIT_PERSIST=flush)" : "";
    dk_stats_set_fd_hooks(up_internal_fd, up_internal_close);
    dk_stats_open(dk_cfg.stats, dk_config_enum_name("MODE", dk_cfg.mode), dk_cfg.dir, note);
    if (dk_cfg.stats) dk_stats_sweep_at_start(); /* killed processes' files (review 9, finding 12) */
    banner();
    /* What a crashed process left (extended tails, staging files) is dealt with before the program
     * sees any managed file. */
    for (int i = 0; i < up_roots_count(); i++) up_recover_root_area(up_root_at(i));
    up_atomic_recover_roots();
    up_recover_ancestor_areas(); /* a dead process run with a wider root left its records there (review 10, 18) */ /* DAXKIT_ATOMIC files of dead processes: their last commit, before main */
    up_guard_init();
    up_lc_init(); /* (lockcache.c: its fork child handler before the program's) */
    up_enabled_flag = true;
    adopt_inherited();
    DK_ERRNO_RESTORE;
}

static void sync_offset_cb(int fd, struct up_fd *e, void *arg) {
    (void)arg;
    struct up_slot *s = e->slot;
    /* Stale: the kernel served the descriptor while it was shared (up_serving) and its offset is the truth;
     * the slot's, older, set back the kernel's -- a pre-forking server's worker that wrote through an
     * inherited descriptor, then forked a helper, wrote its next record over its first (review 12,
     * finding 10). The next served call takes the kernel's (resync). */
    if (!s || s->kernel || s->procs > 1 || e->stale) return;
    DK_REAL(lseek)(fd, (off_t)__atomic_load_n(&s->offset, __ATOMIC_ACQUIRE), SEEK_SET);
}

/* ---- other threads' writes after exit turned the library off (sync and strict modes) ----
 * From up_fini's `up_enabled_flag = false` on, every call passes straight to the kernel -- also another
 * thread's write to a managed file while the exit's shutdown still runs (the staging area's; strict's
 * up_strict_shutdown, which waits for the writes in flight, a log record's RWF_DSYNC write among them, then
 * fdatasyncs and unlinks the log, runs before the library goes off since session 26).
 * Such a write was acknowledged unsynced and unlogged -- outside the mode's promise -- and a thread appending
 * without pause kept appending through the kernel for as long as the shutdown took: under load (a log
 * record's write stalled behind the loop device) it filled the medium, and the kernel's write that met the
 * full medium part way through a block returned a short count, errno 0 (shim_fd_lifetime_end_strict_xfs:
 * 28 of 100 bytes; with 8 MiB left free on the medium, strace shows a worker's 14,000 plain write(2)s after
 * the exit began and the last one returning 40). In sync and strict modes such a write now waits for the end
 * of the process, as one that arrived in the library does (strict's checkpoint lock, the files' locks):
 * never returned, as a kernel write cut by the end of the image. Not a vfork or fork child's; posix mode's
 * pass-through writes are the kernel's, whole and in place, as before. The exiting thread's own (stdio's flush
 * at exit, a destructor or handler after the library's) and the library's stdio cookie's (glibc's stream list
 * lock, which the exit takes, may be held around it: review 24, #12) are never parked -- the thread may hold
 * a lock of libc's the exit needs -- but made durable before they return: the kernel's call, then an
 * fdatasync of its descriptor (up_exit_synced; session 24 passed them unsynced). Durable, not atomic: strict's
 * log is gone (made void first: none of its records replays over them after a crash or a power loss; an exit
 * nested in a library call keeps it, as at a crash: up_fini). The descriptors are those managed when the
 * library went off, each checked against its file (a number closed and given to another file since passes,
 * unsynced). */
struct exit_held {
    int fd;
    dev_t dev;
    ino_t ino;
};
#define EXIT_HELD_INLINE 256
static struct exit_held exit_held_inline[EXIT_HELD_INLINE];
static struct exit_held *exit_held = exit_held_inline;
static uint32_t exit_held_count, exit_held_cap = EXIT_HELD_INLINE;
static pid_t exit_pid;
static __thread bool exit_thread;
bool up_exit_hold_flag;
__thread bool up_exit_hold_stdio __attribute__((tls_model("initial-exec")));

static bool exit_held_candidate(const struct up_fd *e, const struct up_file **f) {
    const struct up_slot *s = up_entry_slot(e);
    *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    return !e->internal && (*f || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE));
}

static void exit_held_count_cb(int fd, struct up_fd *e, void *arg) {
    (void)fd;
    const struct up_file *f;
    if (exit_held_candidate(e, &f)) ++*(uint32_t *)arg;
}

static void exit_held_note(int fd, struct up_fd *e, void *arg) {
    (void)arg;
    const struct up_file *f;
    if (!exit_held_candidate(e, &f) || exit_held_count == exit_held_cap) return;
    struct stat st;
    if (f) st.st_dev = f->dev, st.st_ino = f->ino;
    else if (DK_REAL(fstat)(fd, &st) != 0) return; /* pending (opened, not adopted yet): the kernel names its file */
    exit_held[exit_held_count++] = (struct exit_held){fd, st.st_dev, st.st_ino};
}

/* Under up_table_mu, before the library goes off. */
static void exit_hold_begin(void) {
    if (dk_cfg.mode == DK_MODE_POSIX || up_vfork_child) return;
    DK_ERRNO_SAVE;
    /* No malloc: the exit may come from a signal handler that interrupted its thread inside malloc. */
    uint32_t want = 0;
    up_fd_foreach(exit_held_count_cb, &want);
    if (want > EXIT_HELD_INLINE) {
        void *m = DK_REAL(mmap)(NULL, want * sizeof *exit_held, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) exit_held = m, exit_held_cap = want; /* (else the first 256 are held) */
    }
    exit_held_count = 0;
    up_fd_foreach(exit_held_note, NULL);
    exit_pid = (pid_t)syscall(SYS_getpid);
    exit_thread = true;
    if (exit_held_count) __atomic_store_n(&up_exit_hold_flag, true, __ATOMIC_RELEASE);
    DK_ERRNO_RESTORE;
}

/* A change of a file held at exit (the caller checked the process and the file): another thread's waits for the
 * end of the process; true for the exiting thread's own and the stdio cookie's, which are synced after. */
static bool exit_hold_change(void) {
    /* The exiting thread's own call (a destructor or handler after the library's, stdio's flush at exit) and a
     * write of the library's stdio cookie are never parked -- glibc's locks the exit takes may be held around
     * them -- but synced after: up_exit_synced (session 25) */
    if (exit_thread || up_exit_hold_stdio) return true;
    DK_CRASH_POINT("upath.exit.write_held"); /* tests: this thread's write waits from here */
    /* Not a cancellation point: ftruncate, fallocate and the in-kernel copies are none (a write is one,
     * but no program code runs after up_fini to cancel it: destructors ran before) -- hold24's note */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    for (;;) pause();
}

bool up_exit_hold_slow(int fd) {
    if (up_vfork_child || (pid_t)syscall(SYS_getpid) != exit_pid) return false;
    bool sync = false;
    DK_ERRNO_SAVE;
    for (uint32_t i = 0; i < exit_held_count; i++) {
        if (exit_held[i].fd != fd) continue;
        struct stat st;
        if (DK_REAL(fstat)(fd, &st) == 0 && st.st_dev == exit_held[i].dev && st.st_ino == exit_held[i].ino)
            sync = exit_hold_change();
        break;
    }
    DK_ERRNO_RESTORE;
    return sync;
}

bool up_exit_hold_inode(dev_t dev, ino_t ino, int *fd) {
    if (up_vfork_child || (pid_t)syscall(SYS_getpid) != exit_pid) return false;
    for (uint32_t i = 0; i < exit_held_count; i++) {
        if (exit_held[i].dev != dev || exit_held[i].ino != ino) continue;
        *fd = exit_held[i].fd; /* (up_path_datasync checks it is still the file's) */
        return exit_hold_change();
    }
    return false;
}

ssize_t up_exit_synced(int fd, ssize_t r, bool done) {
    if (!done) return r;
    DK_ERRNO_SAVE;
    /* the raw system call: no cancellation point (the change is made; a cancel here would leave it unsynced) */
    long rc = syscall(SYS_fdatasync, fd);
    int err = rc ? errno : 0;
    DK_ERRNO_RESTORE;
    if (DK_LIKELY(err == 0)) {
        DK_CRASH_POINT("upath.exit.synced"); /* tests: the exit's own write was made durable (shim_exit_sync) */
        return r;
    }
    if (err == EBADF) return r; /* closed meanwhile (a handler's close): the change happened (ptsync.c's rule) */
    errno = err;
    return -1;
}

/* _exit or exit in a signal handler that interrupted a call of its thread holding a file's mutex (review 9,
 * finding 30): nothing may wait for what that call holds -- its file's mutex, perhaps the staging pool's,
 * strict's checkpoint. Every other file is published (posix and sync modes; the interrupted one too when
 * its mutex is free: publish_one), and the image ends as at a crash otherwise: strict's log and the
 * staging area stay for the recovery at the next start, which replays or reclaims them. A call holding a
 * file's mutex without that mark (a close's publish) is told by the mutex's mark (dk_mu_mine: from before
 * glibc's lock to after its unlock, common/lockmark.h); one inside the file table's lock leaves nothing to
 * walk: only the stats file is closed. */
void up_fini(void) {
    if (!up_enabled) return;
    DK_ERRNO_SAVE;
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        dk_count(DK_C_publish_held_skips, 1);
        up_enabled_flag = false;
        dk_stats_close();
        DK_ERRNO_RESTORE;
        return;
    }
    bool nested = up_thread_in_call();
    up_publish_all();
    DK_CRASH_POINT("upath.fini.published"); /* tests: another thread's strict write after the exit's checkpoint */
    nested = nested || up_exit_skipped;
    if (!nested) {
        up_atomic_detach_all();
        up_atomic_mmap_release_all();
        /* Strict: the log goes while the library is on, and no strict operation completes after it (its checkpoint
         * lock stays held): a change the kernel makes once the library is off -- this thread's, a handler's here
         * or a destructor's after this -- is then never followed by the shutdown's apply of an older waiting
         * overwrite of the same bytes, nor by a recovery's replay of an older record (a crash before the log's
         * unlink; session 26, exit25's note). Not under up_table_mu: a strict operation in flight may need it, and
         * nothing takes the checkpoint lock under up_table_mu (upath.c publish_pinned: review 26, #3). */
        up_strict_shutdown();
        DK_CRASH_POINT("upath.fini.strict_down"); /* tests: another thread's first strict operation from here */
    }
    /* After this, every call passes through (stdio flushes at exit still arrive): the kernel's offsets
     * must be ours. */
    dk_mu_lock(&up_table_mu);
    /* Other threads' appends since the publish above are published, and no later one is acknowledged: the
     * files stay locked until the process is gone (review 9, finding 14; its threads die with it). Not in
     * strict mode, whose appends are published when written, and whose shutdown above waited for strict
     * operations in flight and holds off any later one. */
    if (dk_cfg.mode != DK_MODE_STRICT) {
        up_file_lock_all();
        up_publish_all_held();
    }
    up_fd_foreach(sync_offset_cb, NULL);
    exit_hold_begin();
    up_enabled_flag = false;
    /* Other threads go on until exit_group: a call of theirs already inside keeps its slot and file (never
     * freed; review 11, finding 10 -- they were, and the call crashed), the others are given up. */
    if (!nested) up_fdtab_release_idle();
    dk_mu_unlock(&up_table_mu); /* (plain: the library is off; what a handler left closes at exit) */
    DK_CRASH_POINT("upath.fini.library_off"); /* tests: another thread's write from here on (exit_hold_begin) */
    if (!nested) {
        up_inflight_exit(); /* this thread's registry slots: no dead mark left for survivors to look at */
        up_stage_shutdown();
    }
    dk_stats_close();
    DK_ERRNO_RESTORE;
}

/* ---- fork ----
 * Only the forking thread exists in the child: a library mutex another thread held at the fork stays held
 * there for ever unless the fork takes it first or the child makes it new (and its state whole). Every
 * process-wide lock the library holds across calls, and what the fork does with it (session 16's audit):
 *   up_table_mu, each file's mu and rw    taken by up_fork_prepare (up_file_lock_all), new in the child
 *   each file's strict_mu                 new in the child (file.c reinit_one); the child's strict state is new
 *   detach_mu (atomic_route.c)            taken by up_atomic_fork_prepare, every route detached under it; new
 *   each route's rw                       no route is left in the child (detached under detach_mu)
 *   each root's mu, dirfd_mu              new in the child (managed.c: the probe redone, the cache emptied)
 *   attach_mu (inflight.c)                new in the child; robust slot mutexes: the parent's threads' own
 *   below_mu, foreign_mu                  new in the child (recover_scope.c, foreign.c)
 *   pools_mu, pool mu                     new in the child; the pools are the parent's (stage.c)
 *   size records' mu, strict's ck (rw),  freed with their state: the child makes its own at first use
 *     stg_mu, dirty_mu, the log's grow_mu   (sizerec.c, strict.c, oplog: dk_oplog_drop_inherited)
 *   amap_mu (atomic_mmap.c)               new in the child (its atfork handler); the views are forgotten
 *   uwp gate_mu and writes (rw)           with their uwp, forgotten by the child (never used there)
 *   alog open_mu                          taken across the fork by the engine's atfork handlers (not by a
 *                                           handler's fork inside its own thread's: skipped, session 19)
 *   alog per-engine locks (leaf mu,       the child's inherited engines are dropped (alog_open.c
 *     apply_mu, j->mu, alloc_mu, ckpt_mu,   drop_inherited): every call but close fails with EBADF there,
 *     rw)                                   and close takes none of them
 *   stdio's table of cookie streams       no lock since session 16 (shim/stdio.c: cookies never freed)
 * Tested by shim_fork_held_locks_* (each mutex held on cue at the fork) where a case is practical. A fork in a
 * signal handler inside such a mutex of its own thread (but up_table_mu: below) skips the file its thread is in
 * the middle of (lock_one); that file is the kernel's in the child, which leaves its staged appends to the
 * parent (file.c reinit_one), and the thread's holds of strict's checkpoint lock stay the parent's
 * (up_strict_after_fork_child): shim_handler_fork_*. The engine's locks of a routed file whose write, sync or
 * close the handler interrupted (its block's mutex, alloc_mu, ckpt_mu, the journal's apply): the fork does not
 * detach that route (atomic_route.c write_file): shim_handler_fork_atomic_* (without that skip 4 of 6 hang). */

static void mark_stale_cb(int fd, struct up_fd *e, void *arg) {
    (void)fd, (void)arg;
    if (e->slot) e->stale = 1;
}

/* A fork from a signal handler whose thread holds the file table's lock (its interrupted call is changing the
 * table: an open's adoption, a close, a publish walk) waited in the preparation for that lock for ever (session
 * 16). Nothing may wait for it, and the table may be half changed: the fork is made without the preparation
 * (nothing published, no lock taken, descriptors not handed to the kernel -- the parent keeps serving them
 * itself), and its child runs without the library: every call goes to the kernel, it publishes nothing (its
 * parent's staged appends are the parent's) and sees the files as the kernel has them -- as after a crash of
 * the parent, without its unpublished appends. Such a child should exec or _exit from the handler (a threaded
 * program's fork child may only make async-signal-safe calls); an exec starts the library anew. One that
 * returns from the handler finishes the interrupted call on its copy of the tables: that call publishes
 * nothing and applies no strict log there (up_fork_orphan: the parent does both -- a child's publish walk
 * wrote the parent's staged appends a second time: review 17, finding 5). Counted (fork_nested). Returns
 * whether the fork is such a one, for up_fork_parent and up_fork_child. */
bool up_fork_orphan;

bool up_fork_prepare(void) {
    if (!up_enabled) return false;
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        dk_count(DK_C_fork_nested, 1);
        return true;
    }
    DK_ERRNO_SAVE;
    up_pending_adopt_all(); /* or parent and child would each adopt the shared description */
    up_publish_all();
    dk_mu_lock(&up_table_mu);
    up_atomic_fork_prepare(); /* relatives share routed files through the kernel path; detach_mu held */
    up_file_key_all(); /* a relative closing its copy of a keyless file's descriptor leaves the other's valid */
    /* Another thread's append since the publish above: the child must not get it (it would publish it
     * again). Before the descriptors become shared: a write through one then goes to the kernel's end at
     * once, past anything still staged (review 9, finding 13). */
    up_file_lock_all();
    up_publish_all_held();
    /* Shared descriptors are served by the kernel while both processes hold them. */
    up_fd_foreach(sync_offset_cb, NULL);
    up_fd_foreach(mark_stale_cb, NULL);
    up_fdtab_fork_prepare();
    DK_ERRNO_RESTORE;
    return false;
}

void up_fork_parent(int failed, bool nested) {
    if (!up_enabled || nested) return;
    up_file_unlock_all();
    up_atomic_fork_parent();
    if (failed) up_fdtab_fork_failed();
    up_table_unlock();
}

uint32_t up_fork_gen;

void up_fork_child(bool nested) {
    if (!up_enabled) return;
    if (DK_UNLIKELY(nested)) { /* up_fork_prepare: the library off; counted apart from the parent's file */
        up_fork_orphan = true;
        up_enabled_flag = false;
        dk_stats_open(dk_cfg.stats, dk_config_enum_name("MODE", dk_cfg.mode), dk_cfg.dir, "");
        return;
    }
    up_fork_gen++;
    up_lc_after_fork_child(); /* first: the reinit's up_locks_closed finds each file's cache free */
    up_file_reinit_locks_all();
    up_locks_after_fork_child();
    up_lc_fork_child_done(); /* after the resets: files a child handler's lock call touched are unknown */
    up_guard_after_fork_child();
    up_fdtab_after_fork_child();
    dk_mu_reinit(&up_table_mu); /* held by up_fork_prepare: its mark goes too */
    up_atomic_fork_child();
    up_roots_after_fork_child();
    up_stage_after_fork_child();
    up_sizerec_after_fork_child();
    up_strict_after_fork_child();
    up_recover_scope_after_fork_child();
    up_foreign_after_fork_child();
    up_absent_after_fork_child();
    const char *note = dk_cfg.persist == DK_PERSIST_FLUSH ? "persistence emulated (DAXKIT_PERSIST=flush)" : "";
    /* No stats file yet: a child that serves a descriptor of its parent's makes it at that descriptor's
     * first served call (upath.c: resync), one that opens its own at that open. Made here for every child
     * holding one (review 16, finding 6's first fix), it cost each fork+exec of a program that keeps a managed
     * file open (make, a shell's `>> log`) the file's creation and removal (review 16, finding 7). */
    dk_stats_open(dk_cfg.stats, dk_config_enum_name("MODE", dk_cfg.mode), dk_cfg.dir, note);
}

/* ---- exec and spawn ---- */

static int exec_saved_fds[1024];
static int exec_saved_count;
static bool exec_holds_files; /* up_table_mu and every file's locks are held across the execve */

static void exec_hand_over_cb(int fd, struct up_fd *e, void *arg) {
    bool spawn = *(bool *)arg;
    struct up_slot *s = e->slot;
    if (!s) return;
    if (!s->kernel && s->procs <= 1)
        DK_REAL(lseek)(fd, (off_t)__atomic_load_n(&s->offset, __ATOMIC_ACQUIRE), SEEK_SET);
    int fdfl = DK_REAL(fcntl)(fd, F_GETFD);
    /* A descriptor the new program inherits is shared with it from now on: the kernel serves it. */
    if (fdfl >= 0 && !(fdfl & FD_CLOEXEC)) __atomic_store_n(&s->kernel, 1, __ATOMIC_RELEASE);
    /* ... and its POSIX locks stay: so do our descriptors of the file, whose close would drop them (auxfd.c;
     * every file is locked here) */
    if (!spawn && fdfl >= 0 && !(fdfl & FD_CLOEXEC)) up_aux_keep_across_exec(s->file);
    if (!spawn && exec_saved_count < (int)DK_ARRAY_LEN(exec_saved_fds)) exec_saved_fds[exec_saved_count++] = fd;
}

/* An exec from a signal handler that interrupted a call of its thread inside the library (review 9, finding
 * 30's exec half): the thread's interrupted call may hold the file table's lock (an open's adoption), a
 * file's mutex (a close's publish), or a checkpoint lock. As at exit (up_fini), the mutexes' marks
 * (dk_mu_mine, common/lockmark.h) answer for those mutexes: a file
 * whose mutex it holds is neither published nor locked (publish_one, up_file_lock_all), strict checkpoints
 * are skipped (up_publish_all), and with the table's lock held nothing is walked at all -- the new image
 * starts from the files as a crash would leave them (the next start's recovery) and from the kernel's
 * offsets. Cleared again if the execve fails. */
static bool exec_table_skipped; /* the table's lock was this thread's: up_exec_failed has nothing to undo */

void up_exec_prepare(bool spawn) {
    if (!up_enabled) return;
    if (!spawn) dk_stats_before_exec(); /* system calls only: also from a handler inside the table's lock */
    DK_ERRNO_SAVE;
    exec_table_skipped = false;
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        dk_count(DK_C_publish_held_skips, 1);
        exec_table_skipped = true;
        exec_saved_count = 0;
        DK_ERRNO_RESTORE;
        return;
    }
    bool nested = up_thread_in_call();
    if (spawn && !nested) up_pending_adopt_all(); /* the child shares them: handed to the kernel below */
    up_publish_all();
    if (!nested) up_atomic_detach_all();
    dk_mu_lock(&up_table_mu);
    if (!spawn) {
        up_lc_before_exec(); /* the new image keeps the kernel's locks: the program's only (the table held) */
        /* Other threads' appends since the publish above, then none until the image is gone: an append
         * acknowledged now would die with it (review 9, finding 14). Before the descriptors are handed
         * over: a write through a handed-over one goes to the kernel's end at once, past anything still
         * staged. Held until execve fails. */
        up_file_lock_all();
        up_publish_all_held();
        exec_holds_files = true;
    }
    exec_saved_count = 0;
    up_fd_foreach(exec_hand_over_cb, &spawn);
    if (!spawn) {
        /* This image is going away: fork relatives stop counting us -- except for a slot another thread's
         * call is still inside until the execve ends it (calls.h). */
        up_fdtab_release_idle();
        DK_ERRNO_RESTORE;
        return;
    }
    up_table_unlock();
    DK_ERRNO_RESTORE;
}

void up_exec_failed(void) {
    if (!up_enabled) return;
    if (exec_table_skipped) {
        exec_table_skipped = false;
        return;
    }
    DK_ERRNO_SAVE;
    up_aux_exec_failed();
    if (exec_holds_files) {
        exec_holds_files = false;
        up_lc_exec_failed(); /* (lockcache.c: releases may be kept again) */
        up_file_unlock_all();
        up_table_unlock();
    }
    for (int i = 0; i < exec_saved_count; i++) {
        int fd = exec_saved_fds[i];
        int fl = DK_REAL(fcntl)(fd, F_GETFL);
        if (fl < 0) continue;
        up_adopt(fd, fl & ~O_TRUNC, AT_FDCWD, NULL);
        struct up_slot *s = up_fd_slot(fd);
        if (s) s->kernel = 1;
    }
    exec_saved_count = 0;
    DK_ERRNO_RESTORE;
}

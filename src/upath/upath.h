/* The user-space data path as the shim sees it: decide per descriptor, serve, or say "pass through".
 * Every function that serves a call returns what the libc call would (value, errno). */
#ifndef DK_UPATH_UPATH_H
#define DK_UPATH_UPATH_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "upath/calls.h"
#include "upath/internal.h"

/* false until initialised with at least one managed directory, or when disabled: pass everything. */
extern bool up_enabled_flag __attribute__((visibility("hidden")));
/* Set in the thread that calls vfork() for the life of the vfork child, which runs on that thread's stack
 * and thread-local storage in the parent's memory: every interposed call of the child passes straight to
 * libc, touching nothing the parent owns (shim/proc.c). */
extern __thread bool up_vfork_child __attribute__((tls_model("initial-exec")));
#define up_enabled (up_enabled_flag && !up_vfork_child)

/* Library start-up: configuration, managed roots, descriptors inherited across exec. */
void up_init(void);
/* Library shutdown (exit): publish everything, give up slots, remove staging files. */
void up_fini(void);
/* Set by up_fini in sync and strict modes: a write passing through (the library off) asks up_exit_hold,
 * which makes another thread's write to a descriptor managed at the exit wait for the end of the process
 * (lifecycle.c). The exiting thread's own such call, and a write of the library's stdio cookie, are not held:
 * up_exit_hold answers true, and the caller makes its kernel call, then up_exit_synced. */
extern bool up_exit_hold_flag __attribute__((visibility("hidden")));
/* Set by the library's stdio cookie around its write (shim/stdio.c ck_write): such a write is never held --
 * glibc may hold its stream list's lock around it (fflush(NULL)), which exit's _IO_cleanup takes after up_fini:
 * held, the process never ended (review 24, #12). It passes to the kernel, then is synced (up_exit_synced). */
extern __thread bool up_exit_hold_stdio __attribute__((tls_model("initial-exec")));
bool up_exit_hold_slow(int fd);
static inline bool up_exit_hold(int fd) {
    return __builtin_expect(__atomic_load_n(&up_exit_hold_flag, __ATOMIC_ACQUIRE), 0) && up_exit_hold_slow(fd);
}
/* After the kernel's call that up_exit_hold answered true for (r its result, done: it changed the file): the
 * change made durable, an fdatasync of fd (the raw system call: no cancellation point). r -- errno as it was --
 * or -1 with the fdatasync's errno (as a pass-through change's: shim.h dk_pt_finish); EBADF (closed meanwhile)
 * answers r. */
ssize_t up_exit_synced(int fd, ssize_t r, bool done);
/* up_exit_hold for a truncate by name (shim/meta.c) of the file dev/ino: any descriptor managed at the exit on it.
 * True: the caller truncates, then up_path_datasync (*fd: such a descriptor). */
bool up_exit_hold_inode(dev_t dev, ino_t ino, int *fd);

/* The slot of a descriptor served in user space, or NULL (pass the call through). A descriptor whose
 * slot is shared with another process (after fork) or another program image is not served. */
struct up_slot *up_serving(int fd);
struct up_slot *up_serving_at(struct up_fd *e, int fd); /* the same, e being fd's entry (NULL: none) */
/* The same for a call that may be served with a lock's size re-read put off (upath.c put_off): an fsync, a
 * positional write of n bytes at `off` (a pwrite); e being fd's entry. */
#define UP_SERVE_ANY (-1)
#define UP_SERVE_SYNC (-2)
#define UP_SERVE_READ (1ull << 63) /* in the length: the call reads (upath.c refresh_for) */
#define UP_SERVE_WRITE (-3) /* a write at the descriptor's offset: through an O_APPEND one, an append */
struct up_slot *up_serving_sync_at(struct up_fd *e, int fd);
struct up_slot *up_serving_write_at(struct up_fd *e, int fd);
struct up_slot *up_serving_pwrite_at(struct up_fd *e, int fd, off_t off, size_t n);
/* ... a positional read of n bytes at `off` (a pread: upath.c read_put_off, session 28) */
struct up_slot *up_serving_pread_at(struct up_fd *e, int fd, off_t off, size_t n);
/* Ends the call on the slot up_serving gave (which stays valid until then, against another thread's close,
 * dup2, exec or exit: calls.h). Every non-NULL up_serving is followed by exactly one. */
static inline void up_served_end(void) { up_call_leave(); }

/* A pass-through write through a vacated number (internal.h: up_fd_vacated; vacant.c): 1 when named -- make
 * the kernel's call under a cleanup handler up_pt_cancelled (arg non-NULL), then up_pt_vacant_end(fd,
 * result, *gen) (synced when it reached a file; -1 with the fdatasync's errno); -1: look the number up again
 * (bound meanwhile); 0: pass it through as before. */
int up_pt_vacant_enter(int fd, uint32_t *gen);
/* The program made a thread (shim/proc.c: its pthread_create): closes vacate their numbers (fdtab.c). */
extern bool up_program_threads __attribute__((visibility("hidden")));
/* The program makes a thread (shim/proc.c): up_program_threads set -- and, the first time, every number
 * with no file of ours on it now is vacated, as its close would have been had a thread existed then: the new
 * thread's first call may be a write through a number closed before it was made, while an open gives the
 * number again (review 18, #10b). Once per process: one walk of the descriptor table (an unmanaged
 * descriptor at such a number costs its first pass-through write one fstat: upath/vacant.c settles it). */
void up_program_threads_begin(void);
ssize_t up_pt_vacant_end(int fd, ssize_t r, uint32_t gen);

/* Sync and strict modes' fdatasync after a change the kernel made to a managed file, the pass-through call
 * still named in this thread's call record (ptsync.c): 0, or the error number (errno as it was). A number
 * closed meanwhile (EBADF) answers 0 -- the change happened (ptsync.c: the one rule). */
int up_pt_datasync(int fd);
/* Sync and strict modes' fdatasync after a truncate by name of the managed file dev/ino at path (ptsync.c), through
 * fd when it is a descriptor of that file (-1: none known): 0, or the fdatasync's error number (errno as it was). */
int up_path_datasync(const char *path, dev_t dev, ino_t ino, int fd);
/* Cleanup handler of a pass-through call's kernel call: a thread cancelled inside it leaves its name (when
 * `named` is non-NULL). */
void up_pt_cancelled(void *named);

/* After a successful kernel open(): adopt the descriptor when it names a managed regular file. */
/* path: the name the program opened, relative to dirfd (AT_FDCWD: the working directory), or NULL -- a
 * hint that spares the readlink of /proc/self/fd when the name alone shows the file below a managed
 * directory (managed.c). 0, or -EINVAL when refusing (strict config). */
int up_adopt(int fd, int oflags, int dirfd, const char *path);
/* The same, with lazy adoption (pending.c): epoch is up_epoch_now() read before the kernel's open. */
int up_adopt_epoch_open(int fd, int oflags, int dirfd, const char *path, uint64_t epoch);
static inline uint64_t up_epoch_now(void) { return __atomic_load_n(&up_adopt_epoch, __ATOMIC_SEQ_CST); }

/* ---- lazy adoption (pending.c) ---- */
extern bool up_refuse_flag;
/* At the open: made pending (true) or to be adopted now. */
bool up_pending_open(int fd, int oflags, int dirfd, const char *path, uint64_t epoch);
/* The entry of a pending descriptor, or NULL. Lock-free. */
static inline struct up_fd *up_fd_pending_entry(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    return e && DK_UNLIKELY(__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) != UP_PEND_NONE) ? e : NULL;
}
/* Adopts a pending descriptor now: from the program's fstat result `st`, or (NULL) by its own fstat. A
 * descriptor that is not a managed regular file just stops being pending. 0, or -EDEADLK in a signal
 * handler whose thread holds a mutex the adoption takes: nothing done, still pending (pending.c). */
int up_pending_adopt(int fd, const struct stat *st);
/* The same at a write: a file the process created and used for nothing yet is adopted without an fstat. */
int up_pending_adopt_write(int fd);
/* Before a call that needs daxkit's view of fd's file (dup, fcntl, mmap, ...): a pending fd is adopted. */
static inline void up_resolve(int fd) {
    if (DK_UNLIKELY(up_fd_pending_entry(fd) != NULL)) (void)up_pending_adopt(fd, NULL); /* (refused: the kernel's) */
}
/* A call that the kernel may serve for a descriptor that passes data calls through (lseek, fsync): true
 * when fd is not pending or may pass; else it is adopted now and false is returned. */
bool up_pending_may_pass(int fd);
/* A read on pending e: true when it passes through (then call up_pending_passed with its result), false
 * when it does not -- adopt it (up_pending_adopt) and look it up again. Writes adopt (up_pending_adopt_write). */
bool up_pending_pass(struct up_fd *e);
/* moves: the read moved the offset by r. */
void up_pending_passed(struct up_fd *e, ssize_t r, bool moves);
/* The program's fstat of fd: true when fd is pending and is to be adopted from the result -- then, after a
 * successful fstat, call up_pending_fstat_done with it. */
bool up_pending_fstat_begin(int fd);
/* After up_pending_fstat_begin: adopts fd from the program's fstat result `st`, or lets it pass its reads
 * when no file of this process can differ from the kernel's view of st's inode. */
void up_pending_fstat_done(int fd, const struct stat *st);
/* The program's fstat of a descriptor not taken by up_pending_fstat_begin showed a directory: a pending one
 * gets a directory descriptor's verdict from its name (no system call). */
void up_pending_fstat_dir(int fd, const struct stat *st);
/* Before the kernel closes fd (or dup2 closes it): a pending fd is forgotten (true). False in a signal
 * handler whose thread holds the file table's lock when the close must be told to the file's locks:
 * nothing done -- its thread is to close it (up_close_later). */
bool up_pending_drop(int fd);
/* up_pending_drop with the number closing meanwhile (up_fd_close_unbound), so that a write through it waits
 * for the kernel's close instead of reaching the file named nowhere between the pending state's end and that
 * close (session 18: its fdatasync was skipped). 1: dropped, the number closing -- after the kernel's close
 * (or dup2), up_fd_close_done(fd); 0: dropped (the number bound meanwhile: adopted, or not ours to close);
 * -1: refused, as up_pending_drop's false (nothing changed). */
int up_pending_drop_closing(int fd);
/* fork and posix_spawn: every pending descriptor is adopted first. */
void up_pending_adopt_all(void);

/* The working directory changed (chdir, fchdir): relative names are judged again. */
void up_cwd_changed(void);
/* A name may now name another directory than before (a rename moved a directory, an rmdir removed one): the
 * directories below the roots are looked at again for areas by name (recover_scope.c). */
void up_recover_names_moved(void);
/* The descriptor number fd (or every number in [first, last]) was closed or now names another file: its
 * verdict as a directory descriptor is forgotten (managed.c). */
void up_dirfd_forget(int fd);
void up_dirfd_forget_range(unsigned first, unsigned last);
/* Before the kernel closes fd: publish, drop the descriptor. Returns 0 or -errno of a failed publish. */
int up_close(int fd);
/* The program's close of a descriptor with a slot: up_close, the kernel's close; close's return and errno.
 * From a signal handler whose thread holds the file table's lock: left to that thread (table_nested.c). */
int up_close_managed(int fd);
/* The same, left to this thread (a signal handler's close that must not look its file up: table_nested.c). */
int up_close_later(int fd);
/* A signal handler's open of a name below a root while its thread holds the file table's lock: refused
 * (true, errno EDEADLK, counted) before the kernel opens anything (table_nested.c). */
bool up_open_refused_nested(int dirfd, const char *path, int flags);
/* A signal handler's truncate by name of a managed file while its thread holds the file table's lock: refused
 * (true, errno EDEADLK, counted) before anything is changed -- its publish, hold and strict record need that
 * lock or wait under it (table_nested.c). */
bool up_truncate_refused_nested(void);
/* A signal handler's dup, dup2/dup3 or F_DUPFD from a managed or pending number, or onto a managed one, while
 * its thread holds the file table's lock: refused (true, errno EDEADLK, counted) before the kernel duplicates
 * anything -- binding, adopting or unbinding the number takes that lock (table_nested.c). newfd -1: a dup to a
 * number the kernel picks. */
bool up_dup_refused_nested(int oldfd, int newfd);
/* close_range's view of a number in its range (table_nested.c): true when it is a managed one the program's
 * handler cannot close now (its thread holds the file table's lock) -- then left to that thread
 * (up_close_later) and to be skipped by the kernel's close_range. */
bool up_close_range_later(int fd, struct up_fd *e);
/* Whether a close_range over [first, last] may leave every managed number in it to the thread (true outside
 * such a handler); false: errno EDEADLK, nothing to be closed (more than the thread's list holds). */
bool up_close_range_fits(unsigned first, unsigned last);
/* After the kernel duplicated oldfd to newfd (dup/dup2/dup3/F_DUPFD*). newfd was closed first. */
void up_dup(int oldfd, int newfd);

ssize_t up_read(struct up_slot *s, int fd, void *buf, size_t n);
ssize_t up_pread(struct up_slot *s, int fd, void *buf, size_t n, off_t off);
/* preadv2/pwritev2 flags served in user space; others (and unknown ones) go to the kernel. */
#define UP_RWF_KNOWN (RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND)
bool up_rwf_served(int flags);
ssize_t up_readv(struct up_slot *s, int fd, const struct iovec *iov, int cnt, off_t off, int flags, bool use_off);
ssize_t up_write(struct up_slot *s, int fd, const void *buf, size_t n);
ssize_t up_pwrite(struct up_slot *s, int fd, const void *buf, size_t n, off_t off);
/* The same with a call's own flags (O_DSYNC, O_APPEND from pwritev2's RWF_*) added for this write only. */
ssize_t up_write_flags(struct up_slot *s, int fd, const void *buf, size_t n, uint32_t call_fl);
ssize_t up_pwrite_flags(struct up_slot *s, int fd, const void *buf, size_t n, off_t off, uint32_t call_fl);
ssize_t up_writev(struct up_slot *s, int fd, const struct iovec *iov, int cnt, off_t off, int flags, bool use_off);
off_t up_lseek(struct up_slot *s, int fd, off_t off, int whence);
int up_fsync(struct up_slot *s, int fd, bool datasync);
int up_ftruncate(struct up_slot *s, int fd, off_t len);
int up_fallocate(struct up_slot *s, int fd, int mode, off_t off, off_t len);

/* Publish point on a descriptor (lock release, app mmap, pass-through of an unserved call). */
int up_publish_fd(int fd);
/* Before a call the kernel serves on managed fd: its file's publish, skipped without taking the file's
 * mutex when nothing of this process waits to reach the kernel file. */
void up_publish_fd_before_kernel(int fd);
/* The same for f, the file of fd's slot, when the caller holds the slot (a pass-through change named in its
 * thread's call record: the entry may be closing meanwhile, and a look up by number then finds no slot). */
void up_publish_file_before_kernel(struct up_file *f, int fd);
/* Strict mode: the program maps the managed file open as fd -- its waiting staged overwrites are applied
 * now and its later writes at once (the mapping must show them). Call before the mapping is made. */
void up_strict_program_maps(int fd);
/* The program maps the managed file open as fd: up_strict_program_maps, and its pages stay the medium's from
 * now on (a new small file's first publish would give it 4 KiB pages: small_pages.c). Before the mapping. */
void up_program_maps(int fd);
/* The kernel is about to act on the file's bytes itself (the program's mmap, copy_file_range, sendfile,
 * splice, posix_fallocate): a DAXKIT_ATOMIC file leaves the engine, then the descriptor's file is
 * published, so the kernel sees the exact file. 0 or -errno of the publish. */
int up_hand_to_kernel(int fd);
/* fd (0, 1 or 2) has just become a descriptor of a managed file: the kernel serves that file from now on
 * (upath.c). offset_from_slot: fd's slot has the offset (a dup), not the kernel (an adoption). No-op for
 * other numbers and unmanaged descriptors. */
void up_std_fd_to_kernel(int fd, bool offset_from_slot);
/* After a lock was acquired or the kernel changed the file: forget our view of its size. */
void up_refresh_fd(int fd);
/* After any lock was acquired: the same for every managed file the process has open (a lock often
 * guards other files than its own: SQLite's WAL is guarded by locks in the -shm file). */
void up_refresh_all(void);
/* fcntl F_SETLK/F_SETLKW/F_OFD_SETLK(W) on a managed descriptor: begin before the kernel call, done after
 * it (ok: it succeeded). An acquisition moves the refresh generation (as up_refresh_all), except for a file
 * the process held a POSIX lock on ever since its size was last read (reclock.c). */
struct up_lock_call {
    uint64_t seq;
    bool busy;
};
struct up_lock_call up_lock_call_begin(void);
struct flock;
void up_lock_done(struct up_lock_call c, int fd, int cmd, const struct flock *l, bool ok);
/* The cleanup handler of a lock call that may block (F_SETLKW): a thread cancelled inside the kernel call
 * ends its call here, or every later lock call of the process would count as overlapped. */
void up_lock_cancelled(void *unused);
/* Inside call c (before its done): no other lock call or close of the process overlapped it so far. */
bool up_lock_call_alone(struct up_lock_call c);
/* DAXKIT_LOCK_CACHE: F_SETLK/F_SETLKW on a managed descriptor, in place of the kernel's call inside the count
 * (lockcache.c). */
int up_lc_setlk(struct up_lock_call c, int (*real)(int, int, ...), int fd, int cmd, struct flock *l);
int up_lc_ofd(int (*real)(int, int, ...), int fd, int cmd, struct flock *l); /* F_OFD_SETLK(W), F_OFD_GETLK */
/* A POSIX lock call on fd whose file's lock set is no longer followed (the program maps the file: SQLite's -shm):
 * counted (up_lock_call_begin), ended by up_lock_untracked_done -- no set to change; an acquisition (taken) moves
 * the refresh generation for every file. reclock.c. */
static inline bool up_locks_untracked(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    return f && __atomic_load_n(&f->locks.untracked, __ATOMIC_SEQ_CST);
}
void up_lock_untracked_done(struct up_lock_call c, int fd, bool ok, bool taken);
/* The way of a POSIX lock call on fd (shim/fd.c served_lock): no slot, or its file gone -- fcntl's general path;
 * a file whose lock set is followed (up_lock_done); one whose set is not (up_locks_untracked). */
enum { UP_LOCK_NOT_SERVED, UP_LOCK_TRACKED, UP_LOCK_UNTRACKED };
static inline int up_lock_way(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (!f) return UP_LOCK_NOT_SERVED;
    return __atomic_load_n(&f->locks.untracked, __ATOMIC_SEQ_CST) ? UP_LOCK_UNTRACKED : UP_LOCK_TRACKED;
}
/* A close of a managed (or pending) descriptor counts as a lock call in flight from before its forget of the
 * file's lock set (up_close, up_pending_drop) until after the kernel's close (close, close_range, dup2/dup3):
 * another thread's or a signal handler's lock call meanwhile does not run alone, so it cannot make the set
 * known and held again before the kernel drops every lock of the process on the file (reclock.c). Balanced;
 * nests. */
void up_locks_close_begin(void);
void up_locks_close_end(void);
/* Before a kernel call that uses the file offset of fd (sendfile etc.): make the kernel's offset ours,
 * and afterwards take it back. */
void up_offset_to_kernel(int fd);
void up_offset_from_kernel(int fd);
/* A kernel call changed data or size of the file under fd (copy_file_range into it, ...). */
void up_kernel_changed_fd(int fd);
/* The same for a kernel write of the bytes [off, end) (a pass-through pwrite): only those pages of a DAX
 * mapping are dropped (review 14, finding 11: a 4 KiB write dropped the whole file's). */
void up_kernel_wrote_fd(int fd, uint64_t off, uint64_t end);
/* The same for f, the file of fd's slot, held by the caller (as up_publish_file_before_kernel). */
void up_kernel_wrote_file(struct up_file *f, int fd, uint64_t off, uint64_t end);

/* Patches st_size (and blocks) of a stat result for a file with unpublished appends. 0, or -EDEADLK in a
 * signal handler whose thread holds the file table's lock while some file of the process is active (its
 * size cannot be looked up). */
int up_fix_stat(dev_t dev, ino_t ino, off_t *size);
/* The same for fstat of a descriptor (finds files whose name is gone). */
void up_fix_fstat(int fd, off_t *size);
/* The program's fstat of a served descriptor, whose answer may be the file's lock re-read (session 28):
 * up_fstat_begin before the kernel's call (0 when fd has no slot: then up_fix_fstat as before; 1: the call's
 * record taken), up_fstat_end after it (r: the kernel's result; size: st_size, patched) -- exactly once after a
 * begin that returned 1. */
struct up_fstat_look {
    struct up_slot *s;
    uint64_t gen, word; /* up_refresh_gen and the lock set's word before the call; gen 0: not taken */
};
int up_fstat_begin(int fd, struct up_fstat_look *k);
void up_fstat_end(int fd, struct up_fstat_look *k, int r, off_t *size);
/* Names known absent (DAXKIT_ABSENT_CACHE, upath/absent.c): true when a stat of `path` may answer ENOENT without
 * the kernel; else up_absent_begin before the kernel's stat (a ticket, 0: not kept) and up_absent_end after it
 * (r, errno: its result). */
bool up_absent_known(const char *path);
uint64_t up_absent_begin(const char *path);
void up_absent_end(const char *path, uint64_t ticket, int r, int err);
void up_absent_after_fork_child(void);
bool up_absent_give_up(void);   /* the program's inotify call failed for the per-user limits: ours goes (true) */
void up_absent_vacate(int fd);  /* the program's dup2 onto an internal number: the cache off if it is ours */
void up_lc_vacate(int fd);      /* ... the lock board's descriptor moved (lockcache.c) */
/* Before unlink/rename-over: whether the victim must be looked up (lstat) and given to up_name_removed --
 * false while no file is mapped (counted; upath.c). */
bool up_victim_matters(void);
/* Name-space operations: before unlink/rename-over, the victim's (dev, ino) from lstat. From a signal handler
 * whose thread holds the file table's lock: forgotten by that thread right after it (table_nested.c). */
void up_name_removed(dev_t dev, ino_t ino);
/* Before a truncate of a managed file by name: no descriptor is adopted keyless after it (see upath.c). */
void up_truncating_by_name(void);
/* truncate(path) after the kernel did it. */
int up_truncated(dev_t dev, ino_t ino, off_t len); /* a descriptor of the file the table has, or -1 */
/* truncate(path, len) by name of a file this process has open, shrinking it: its served state follows the kernel's
 * cut as an ftruncate's does (upath.c). up_truncate_inode_enter before strict's hold (a call on a descriptor of the
 * file: no close frees it meanwhile), up_truncate_inode_lock after it (the file's mutex and its guard's write side,
 * for the file the truncate names), up_truncate_inode_done after the kernel's truncate. */
struct up_file;
struct up_trunc_hold {
    struct up_file *f; /* NULL: nothing held (not open here, not a shrink, a handler inside its thread's call) */
    bool locked;
    dev_t dev;         /* an open's: the file the name named before the kernel's open */
    ino_t ino;
    bool cancel_off;   /* an open's: cancellation turned off from the enter to the done (cancel_was) */
    int cancel_was;
};
void up_truncate_inode_enter(dev_t dev, ino_t ino, struct up_trunc_hold *h);
void up_truncate_inode_lock(struct up_trunc_hold *h, dev_t dev, ino_t ino, uint64_t len);
void up_truncate_inode_done(struct up_trunc_hold *h, bool truncated, uint64_t len);
/* The same for an open with O_TRUNC (kflags: the kernel's flags) of a file open here: enter before strict's hold
 * (true: a file entered, h->dev/ino), up_truncate_inode_lock after it, up_truncating_open_done after the kernel's
 * open (fd: its result; the new size taken when fd is that file). */
bool up_truncating_open_enter(int dirfd, const char *path, int kflags, struct up_trunc_hold *h);
void up_truncating_open_done(struct up_trunc_hold *h, int fd);
/* Publishes the file with (dev, ino) if this process has unpublished appends for it (truncate(path)). */
int up_publish_inode(dev_t dev, ino_t ino);
/* Before the kernel sets a file's times, mode or owner (futimens, fchmod, fchown, utimensat, chmod...):
 * the file's unpublished appends go in first, as they would have through the kernel -- a publish after the
 * call (a pwrite, an extension cut) would set mtime again over the program's futimens (tar xf) and
 * clear a set-user-ID bit its fchmod had just set. By descriptor; by name (dirfd, path, AT_* flags) only
 * while the process has unpublished appends (one stat then). DAXKIT_ATOMIC files keep their groups. */
void up_publish_before_attr_fd(int fd);
void up_publish_before_attr_path(int dirfd, const char *path, int atflags);
/* The same after the caller's up_publish_any_pending() answered true: no second walk (meta.c publish_before_name). */
void up_publish_before_attr_path_pending(int dirfd, const char *path, int atflags);
/* Has any open file of this process something to publish (a walk under the table lock)? true also when it
 * cannot look: a signal handler inside its thread's table lock. */
bool up_publish_any_pending(void);

/* Strict mode's metadata operations (oplog record types CREATE/UNLINK/RENAME): logged before the kernel
 * call (0, or -errno: the call must fail), made durable after it. No-ops in other modes or off-tree. */
int up_strict_meta_begin(unsigned type, int dirfd, const char *path, int dirfd2, const char *path2);
/* Strict mode's truncate(path, len) by name of the managed regular file (dev, ino) (the caller's stat): its
 * record, in log order, with every strict write of the file's root held out (the checkpoint lock's write side)
 * until up_strict_truncate_name_end, which the caller calls after the kernel's truncate (`truncated`: it
 * succeeded; else the record is taken back). 0, or -errno: the call must fail. No-ops in other modes. */
struct up_strict;
struct up_strict_name {
    struct up_strict *st; /* NULL: nothing logged, nothing held */
    uint64_t seq;
    struct up_root *root; /* an open's: the file up_strict_before_truncating_open found (NULL: none) */
    dev_t dev;
    ino_t ino;
};
int up_strict_truncate_name_begin(int dirfd, const char *path, dev_t dev, ino_t ino, uint64_t len,
                                  struct up_strict_name *t);
/* The same before the kernel's open of `path` with O_TRUNC in kflags (the flags the kernel gets): a truncate to 0
 * of the existing regular file up_strict_before_truncating_open found (in *t); up_strict_truncate_name_end after
 * the open (`truncated`: it opened). */
int up_strict_truncating_open_begin(int dirfd, const char *path, int kflags, struct up_strict_name *t);
void up_strict_truncate_name_end(struct up_strict_name *t, bool truncated);
/* Strict mode, before an open with O_TRUNC of `path`: a checkpoint of its managed directory, so that no
 * record older than the truncate can replay over the file after a crash. */
bool up_strict_before_truncating_open(int dirfd, const char *path, struct up_strict_name *t);
/* After such an open (when the call above returned true): the truncate made durable (fdatasync). */
void up_strict_after_truncating_open(int fd);
void up_strict_meta_end(int dirfd, const char *path, int dirfd2, const char *path2);
/* Strict mode, after the kernel made the name `path` (link, linkat, mkdir, mkdirat, symlink, symlinkat, mknod,
 * mknodat) in a managed directory: the directory fsync'ed, so the name is durable when the call returns, as a
 * create's is. No record: names are never replayed. No-op in other modes or off-tree; errno kept. */
void up_strict_name_made(int dirfd, const char *path);

/* Process events. */
/* up_fork_prepare's answer: the fork is one from a signal handler inside its thread's table change, made
 * without the library's preparation (lifecycle.c); given to the other two. */
bool up_fork_prepare(void);
void up_fork_parent(int failed, bool nested);
void up_fork_child(bool nested);
/* Before exec/spawn: publish, hand descriptors that stay open to the kernel. Returns 0. */
void up_exec_prepare(bool spawn);
void up_exec_failed(void);
/* At exit/_exit: publish everything. */
void up_publish_all(void);
/* A lock release's publish point: up_publish_fd(fd) then up_publish_all(), strict mode's checkpoints once. 0 or
 * -errno (fd's file's publish). */
int up_publish_release(int fd);
/* Under up_table_mu with every file's locks held (up_file_lock_all): publishes what other threads appended
 * after an up_publish_all -- before fork, exec and exit, which would copy those appends into a child (that
 * publishes them again) or end the image with them (review 9, findings 13 and 14). */
void up_publish_all_held(void);

#endif

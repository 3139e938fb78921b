/* Descriptors the library opens for itself, kept out of the program's numbers.
 *
 * The kernel gives every open the lowest free number. A descriptor daxkit opens for itself (a staging file,
 * the published-size records, strict mode's log, an auxiliary reopen, a probe's scratch file) took that
 * number until it was moved to a high one (up_internal_fd): while another thread of the program was between
 * its close(n) and its open, the library's file sat at n -- the program's open got another number (its
 * descriptors shuffled: close(0) + open("/dev/null") no longer gives 0), and its calls through n that raced
 * the close reached daxkit's file: reads of zeros, an fstat of size 0, a write into a staging or size-record
 * file (shim_fd_lifetime_replace_sync_xfs: the size records were opened, ftruncated and mapped at the data
 * file's number while the main thread closed and reopened it).
 *
 * So every such open is a *window* (dk_ifd_begin/end): the file is opened and moved to a high number at once
 * (dk_ifd_openat), or opened, read and closed (a /proc file). A window makes system calls and takes no lock of
 * the library's, so waiting for one ends, unless a system call waits for a file system (a lookup on a stuck
 * one): so a window opens no path on a file system the library was not given -- the managed roots and what
 * start-up recovers around them (an ancestor's area, alog_named.c's walk), /proc, /sys, the stats directory;
 * strict.c open_parent looks first -- and a wait gives up after 1 s (review 15, finding 5). Two windows call
 * into glibc and may wait for its locks: dk_ifd_free (free: its arena's lock) and dk_strerror (common/log.c: a
 * translated message takes glibc's gettext lock, and the first one mallocs and maps the catalog). No call the
 * library interposes runs under those locks (glibc calls its own functions directly), so a thread holding one
 * never waits for a window; were one to, the 1 s wait would end it (review 24, #11). The program's side:
 *   - its opens and dups (shim/open.c, shim/fd.c) look whether a window overlapped the kernel's call; if so
 *     they wait for the windows to close and move the new descriptor down to the lowest free number
 *     (dk_ifd_relower): the number the kernel would have given without daxkit;
 *   - its calls on a number daxkit does not serve (the pass-through path: read/write family, fstat, lseek)
 *     wait while a window is open (dk_ifd_settle), so a call through a number the program just closed finds
 *     it closed, or reopened by the program -- not daxkit's file; the calls that may be made twice (pread,
 *     preadv, fstat) are made again when a window opened while they ran (dk_ifd_overlapped).
 * Left: another pass-through call (read, write, lseek, ...) that looked before a window opened and reaches
 * the kernel while it holds the number (a few instructions wide, unless the thread is preempted right
 * there), and the program's fd-making calls daxkit does not interpose (socket,
 * pipe, accept, epoll_create, fopen's own open) -- they may still get a higher number than the kernel alone
 * would give while a window is open. A thread's own signal handler never waits for its thread's window. */
#ifndef DK_COMMON_INTERNAL_FD_H
#define DK_COMMON_INTERNAL_FD_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "common/signals.h"

extern uint64_t dk_ifd_starts __attribute__((visibility("hidden"))), dk_ifd_ends __attribute__((visibility("hidden"))); /* windows opened, closed (monotonic) */
extern __thread unsigned dk_ifd_mine __attribute__((tls_model("initial-exec"))); /* windows this thread has open */

/* A window runs with every signal blocked (the thread's mask restored at its end): a handler that parks its
 * thread -- a stop-the-world collector's -- would otherwise hold a window open, and every other thread's
 * pass-through call would wait for it for ever (review 14, finding 4). Two system calls per window; windows
 * are the library's own opens. And with cancellation disabled (no system call in glibc 2.34+): a thread
 * cancelled at the window's openat or close unwound with the window open, and every other thread's
 * pass-through call then waited for ever; the program's rename or unlink became a cancellation point
 * (review 15, finding 1). The outermost window of a thread saves both, its end restores them. */
extern __thread sigset_t dk_ifd_saved_mask;
extern __thread int dk_ifd_saved_cancel;
static inline void dk_ifd_begin(void) {
    if (dk_ifd_mine == 0) {
        dk_signals_block_all(&dk_ifd_saved_mask);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &dk_ifd_saved_cancel);
    }
    dk_ifd_mine++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_add_fetch(&dk_ifd_starts, 1, __ATOMIC_SEQ_CST);
}
static inline void dk_ifd_end(void) {
    __atomic_add_fetch(&dk_ifd_ends, 1, __ATOMIC_SEQ_CST);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (--dk_ifd_mine == 0) {
        pthread_setcancelstate(dk_ifd_saved_cancel, NULL);
        dk_signals_restore(&dk_ifd_saved_mask);
    }
}

/* In a fork's child: the windows other threads had open stay open for ever -- closed (none is: only the
 * forking thread runs, and it was in a call of the program's). */
static inline void dk_ifd_after_fork_child(void) {
    __atomic_store_n(&dk_ifd_ends, __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
}

/* The lowest number an internal descriptor may keep (config.h: dk_internal_fd_floor of RLIMIT_NOFILE). */
int dk_ifd_floor(void);
/* openat in a window, the descriptor moved to dk_ifd_floor() or above before the window closes (kept low
 * only when no high number is free). -1 with errno as openat's. */
int dk_ifd_openat(int dirfd, const char *path, int flags, mode_t mode);
/* A descriptor made otherwise (memfd_create, fdopendir's dup) inside a window the caller opened: moved up. */
int dk_ifd_move_up(int fd);
/* A directory stream of path (relative to dirfd) whose descriptor is taken in a window (dk_ifd_openat) and then
 * handed to fdopendir (which makes none): glibc's opendir opens at the lowest free number outside any window
 * (__open_nocancel, which no preload sees). NULL with errno as openat's or fdopendir's; closedir closes it. */
DIR *dk_ifd_opendirat(int dirfd, const char *path);
/* free() of a large buffer of the library's (staging heap buffers) in a window. glibc's free opens a file
 * itself: the first time in a process that a thread's arena gives the top of its heap back, it opens
 * /proc/sys/vm/overcommit_memory (malloc-sysdep.h: check_may_shrink_heap, by __open_nocancel, which no
 * preload sees), reads a byte and closes it -- at the lowest free number. Such a free made in a program
 * thread while another was between its close(n) and its open let that thread's calls through n reach the
 * file: shim_fd_lifetime_replace read "0\n" (2 bytes) from its 1 MiB data file, fstat said size 0, pread 0
 * bytes (session 23; shim_heap_free_window provokes it under strace). Two system calls, at a buffer's free. */
static inline void dk_ifd_free(void *p) {
    dk_ifd_begin();
    free(p);
    dk_ifd_end();
}

/* ---- the program's side ---- */

#define DK_IFD_OPEN_BUSY UINT64_MAX
/* Before the program's fd-making call: what dk_ifd_relower compares against. */
static inline uint64_t dk_ifd_before(void) {
    uint64_t s = __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&dk_ifd_ends, __ATOMIC_SEQ_CST) == s ? s : DK_IFD_OPEN_BUSY;
}
int dk_ifd_relower_slow(int fd, int floor);
/* After it: fd (>= 0), or the lowest free number >= floor that a window overlapping the call held -- unless
 * the process may hold POSIX record locks (below): then fd as the kernel gave it. */
static inline int dk_ifd_relower(int fd, uint64_t before, int floor) {
    if (__builtin_expect(fd < 0 || before == __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST), 1)) return fd;
    return dk_ifd_relower_slow(fd, floor);
}
/* A window opened or was open while the call ran (before: dk_ifd_before's). */
static inline bool dk_ifd_overlapped(uint64_t before) {
    return __builtin_expect(before != __atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST), 0);
}
void dk_ifd_settle_slow(void);
/* No window is open now (dk_ifd_settle's look, without its wait). */
static inline bool dk_ifd_idle(void) {
    return __builtin_expect(__atomic_load_n(&dk_ifd_starts, __ATOMIC_SEQ_CST) ==
                                __atomic_load_n(&dk_ifd_ends, __ATOMIC_SEQ_CST), 1);
}
/* Before a call the kernel serves on a number daxkit does not: waits while another thread's window is open.
 * True when it waited (the number may name a file the program opened meanwhile: look again). */
static inline bool dk_ifd_settle(void) {
    if (dk_ifd_idle()) return false;
    dk_ifd_settle_slow();
    return true;
}
/* The program's call on a number daxkit does not serve, made again (16 times at most) while a library window
 * overlapped it: the window may have held the number. Only for calls that may be made twice (pread, preadv,
 * fstat: no offset moved, nothing changed). Its value. */
#define DK_IFD_RETRY(call)                                                                       \
    ({                                                                                           \
        uint64_t dk_ifd_b_ = dk_ifd_before();                                                    \
        __typeof__(call) dk_ifd_r_ = (call);                                                     \
        for (int dk_ifd_k_ = 0; dk_ifd_k_ < 16 && dk_ifd_overlapped(dk_ifd_b_); dk_ifd_k_++) {   \
            dk_ifd_settle();                                                                     \
            dk_ifd_b_ = dk_ifd_before();                                                         \
            dk_ifd_r_ = (call);                                                                  \
        }                                                                                        \
        dk_ifd_r_;                                                                               \
    })

/* ---- POSIX record locks: when a descriptor may not be moved ----
 * A move is a dup to the new number and a close of the old one, and the kernel drops every POSIX record lock
 * of the process on a file at the close of *any* of its descriptors of that file. So once the process may
 * hold one -- it asked for one (F_SETLK/F_SETLKW, lockf: dk_ifd_lock_gate), or inherited one across the
 * exec of this image (/proc/locks, read once, before the first move) -- descriptors of the program's files
 * stay where the kernel put them: the program's relowered open or dup (review 14, finding 3: SQLite's second
 * connection lost its lock), the auxiliary reopen (upath/auxfd.c), a recovery's descriptor (inflight.c's
 * replay; sizerec.c's open_program_file, session 26). A lock request that races a move waits for the move's close (Dekker's handshake on the movers
 * count, both sides sequentially consistent); a thread's own move is never waited for (its signal handler's
 * lock call). The library's own files (staging, size records, logs) are never locked by the program: their
 * moves (dk_ifd_move_up) take no part. */
/* Before any POSIX record lock request of the process (not an unlock), managed file or not. */
void dk_ifd_lock_gate(void);
/* The process asked for a POSIX lock, or holds one it inherited (reads /proc/locks the first time: call
 * outside a window when it can be helped). */
bool dk_ifd_locks_maybe_held(void);
/* Before a move of a descriptor of a program's file: true when it may be made now (no POSIX lock asked for),
 * then dk_ifd_move_end() once the old number is closed. */
bool dk_ifd_move_begin(void);
void dk_ifd_move_end(void);

#endif

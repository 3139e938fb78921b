/* A signal handler's open or close of a managed file while its own thread holds the file table's lock (the
 * handler interrupted an open's adoption, a close, an unlock's publish walk: review 15, finding 4). Both
 * change the file and descriptor tables that thread is changing, and waited for it for ever.
 *
 * Close: passed to the kernel alone it would leave a table entry for a number the kernel hands out again.
 * So the kernel keeps the descriptor open (its number is not handed out meanwhile), the handler's close
 * returns 0, and the thread itself closes it -- publish point, tables, kernel -- as soon as it lets go of
 * the table's lock holding no other library mutex (up_table_unlock), before the interrupted call returns.
 * The number's mark (up_fd.close_later) says who closes it, claimed by compare-and-swap: LATER_PENDING
 * (the handler left it), LATER_CLOSING (its thread is closing it now). A program that puts another file on
 * the number meanwhile (dup2, dup3 in another thread: up_close_later_settle) or closes it claims a pending
 * mark first -- its own replacement or close carries the handler's close out and the thread leaves the
 * number alone -- or, when the thread is closing it already, waits until the kernel closed it, then
 * goes on. Without that, a dup2 waiting for the table's lock while the thread took the mark ran beside the
 * thread's close: both closed the old file (two up_close of one slot), and the thread's kernel close could
 * come after the dup2 -- the program's new descriptor was closed (session 17). The handler claims an entry
 * of the thread's list by compare-and-swap (handlers nest); the thread takes entries by exchange. While the
 * close waits the kernel keeps the number: an open in between gets another one (the lowest free number is
 * not the closed one). So is a pending descriptor's close that must be told to its file's locks (pending.c:
 * up_pending_drop): its pending state is dropped then. Counted (close_later; close_later_taken: the
 * program's dup2 or close took it over).
 *
 * Open: refused with EDEADLK before the kernel's open when the name is below a root (nothing created or
 * truncated), after it -- the descriptor closed again -- when the kernel's answer is a managed file under
 * another name (an O_TRUNC or O_CREAT has happened then). Counted (open_nested_refused).
 *
 * close_range: each managed number in the range is left to the thread as a close is, and the kernel's
 * close_range closes around it (as around the library's own descriptors); the others are closed at once.
 * More managed numbers than the thread's list has room for: EDEADLK, nothing closed. dup, dup2/dup3 and
 * F_DUPFD from or onto a managed number (from a pending one: its adoption) bind or unbind it under the table's
 * lock, and a dup2 cannot be left for later (the program's number must name the new file when it returns):
 * EDEADLK before the kernel's call. Both waited for the thread for ever before (session 18). Counted
 * (mu_mine_skips).
 *
 * Names (session 28, misc27's note): an unlink or a rename over a file is made (strict's record and directory
 * fsync need no library lock), and the removed file's entry, which the table's lock guards, is forgotten by the
 * thread at its up_table_unlock (forget_later). A truncate by name of a managed file is refused with EDEADLK
 * before anything changes, as an open is: it publishes the file and updates its entry under the table's lock,
 * and strict's record takes the checkpoint lock's write side, never taken under it (review 26, #3). */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/internal.h"
#include "upath/upath.h"

bool up_open_refused_nested(int dirfd, const char *path, int flags) {
    if (!up_enabled || DK_LIKELY(!dk_mu_mine(&up_table_mu))) return false;
    if ((flags & (O_PATH | O_DIRECTORY)) || !up_roots_by_name(dirfd, path)) return false; /* (adoption: below) */
    dk_count(DK_C_open_nested_refused, 1);
    errno = EDEADLK;
    return true;
}

/* The refusal of a call that cannot wait for the thread: counted, errno EDEADLK, true. */
static bool refused(void) {
    dk_count(DK_C_mu_mine_skips, 1);
    errno = EDEADLK;
    return true;
}

/* Truncate by name: refused as an open is, when the name is a managed regular file (the caller's stat). Its
 * publish of the file (up_publish_inode), a shrink's hold and the entry's update after it take the table's lock,
 * and strict's record takes the checkpoint lock's write side, never taken under it (review 26, #3) -- the
 * truncate waited for its own thread for ever (session 28). An O_TRUNC open is refused the same way. */
bool up_truncate_refused_nested(void) {
    if (!up_enabled || DK_LIKELY(!dk_mu_mine(&up_table_mu))) return false;
    dk_count(DK_C_truncate_nested_refused, 1);
    errno = EDEADLK;
    return true;
}

bool up_dup_refused_nested(int oldfd, int newfd) {
    if (DK_LIKELY(!dk_mu_mine(&up_table_mu))) return false;
    /* A pending oldfd too: its adoption is refused here, and the copy would be a plain kernel descriptor of a
     * managed file for good (review 18, finding 4) */
    bool old_managed = up_fd_slot(oldfd) || up_fd_pending_entry(oldfd);
    if (!old_managed && (newfd < 0 || newfd == oldfd || !up_fd_slot(newfd))) return false;
    return refused();
}

#define CLOSE_LATER_MAX 8 /* per thread: a handler closing more at once gets EDEADLK (the descriptor stays open) */
#define CLAIMED (-2)

static __thread int later[CLOSE_LATER_MAX] = {[0 ... CLOSE_LATER_MAX - 1] = -1}; /* -1 free, CLAIMED, or the fd */
__thread bool up_close_later_due;

static __thread const struct up_fd *closing_later; /* the entry this thread is closing for a handler now */

/* Names removed by a signal handler (unlink, rename over a file) while this thread held the table's lock: the
 * removed inode's entry, forgotten by the thread at its up_table_unlock (session 28: up_name_removed waited for
 * that lock for ever). Until then -- and for good when the list is full -- the unlink counts as one whose victim
 * was not looked up (up_victims_unseen): an adoption of the inode number starts afresh, a mapped entry's last
 * close looks at its link count (upath.c last_close_of_mapped). */
#define FORGET_LATER_MAX 8
struct forget_later {
    dev_t dev;
    ino_t ino;
    int state; /* 0 free, 1 claimed (being filled), 2 full */
};
static __thread struct forget_later forgets[FORGET_LATER_MAX];

void up_forget_later(dev_t dev, ino_t ino) {
    __atomic_add_fetch(&up_victims_unseen, 1, __ATOMIC_ACQ_REL);
    dk_count(DK_C_forget_later, 1);
    for (unsigned i = 0; i < FORGET_LATER_MAX; i++) {
        int free_state = 0; /* (a handler nested in this one claims another entry) */
        if (!__atomic_compare_exchange_n(&forgets[i].state, &free_state, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        forgets[i].dev = dev, forgets[i].ino = ino;
        __atomic_store_n(&forgets[i].state, 2, __ATOMIC_RELEASE);
        __atomic_store_n(&up_close_later_due, true, __ATOMIC_RELEASE);
        return;
    }
}

static void forget_later_run(void) {
    for (unsigned i = 0; i < FORGET_LATER_MAX; i++) {
        if (__atomic_load_n(&forgets[i].state, __ATOMIC_ACQUIRE) != 2) continue;
        dev_t dev = forgets[i].dev;
        ino_t ino = forgets[i].ino;
        __atomic_store_n(&forgets[i].state, 0, __ATOMIC_RELEASE);
        dk_mu_lock(&up_table_mu);
        up_file_forget(dev, ino);
        dk_mu_unlock(&up_table_mu); /* (plain: this runs from up_table_unlock) */
    }
}

static int close_later(int fd);
static int close_now_counted(int fd);

int up_close_later(int fd) { return close_later(fd); }

int up_close_managed(int fd) {
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) return close_later(fd); /* a handler in its thread's table change */
    up_close_later_settle(fd);
    up_locks_close_begin(); /* the close is a lock call in flight until after the kernel's (reclock.c) */
    return close_now_counted(fd);
}

/* Inside the close's count (up_locks_close_begin: from its forget of the lock set until after the kernel's). */
static int close_now_counted(int fd) {
    int rc = up_close(fd);
    up_fd_vacate(fd); /* writes through the number from now wait for a reopen's adoption (up_fd_opening) */
    /* Not a cancellation point (shim/fd.c close: the program's is, before anything is touched): a thread
     * cancelled here would leave the close's count, the vacated number and its close-done behind (review 24);
     * the state back after both (asynchronous cancellation acts at the restore: review 24, #08). */
    int was = dk_cancel_off();
    int r = DK_REAL(close)(fd);
    up_locks_close_end(); /* (errno kept) */
    up_fd_close_done(fd); /* calls waiting for the close go on: to the kernel (EBADF) */
    dk_cancel_restore(was); /* (errno kept) */
    if (r == 0 && rc) {
        errno = -rc; /* the descriptor is closed; the program learns the appends did not land */
        return -1;
    }
    return r;
}

/* 0, or -1 with EDEADLK when too many are left at once (the descriptor stays open). */
static int close_later(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    for (unsigned i = 0; e && i < CLOSE_LATER_MAX; i++) {
        int free_fd = -1;
        if (!__atomic_compare_exchange_n(&later[i], &free_fd, CLAIMED, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        __atomic_store_n(&e->close_later, UP_LATER_PENDING, __ATOMIC_RELEASE);
        __atomic_store_n(&later[i], fd, __ATOMIC_RELEASE);
        __atomic_store_n(&up_close_later_due, true, __ATOMIC_RELEASE);
        dk_count(DK_C_close_later, 1);
        return 0;
    }
    errno = EDEADLK;
    return -1;
}

static unsigned later_room(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < CLOSE_LATER_MAX; i++) n += __atomic_load_n(&later[i], __ATOMIC_ACQUIRE) == -1;
    return n;
}

struct range_count {
    unsigned first, last, managed;
};
static void count_managed(int fd, struct up_fd *e, void *arg) {
    struct range_count *c = arg;
    if ((unsigned)fd < c->first || (unsigned)fd > c->last || e->internal) return;
    if (e->slot || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE)) c->managed++; /* (a pending one may not need it) */
}

bool up_close_range_fits(unsigned first, unsigned last) {
    if (DK_LIKELY(!dk_mu_mine(&up_table_mu))) return true;
    struct range_count c = {first, last, 0};
    up_fd_foreach(count_managed, &c);
    if (c.managed <= later_room()) return true;
    refused();
    return false;
}

bool up_close_range_later(int fd, struct up_fd *e) {
    if (DK_LIKELY(!dk_mu_mine(&up_table_mu))) return false;
    if (__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE) && up_pending_drop_closing(fd) >= 0) {
        up_fd_vacate(fd); /* forgotten, the number closing: the kernel's close_range closes it */
        return false;
    }
    return (up_fd_slot(fd) || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE)) && close_later(fd) == 0;
}

void up_close_later_run(void) {
    __atomic_store_n(&up_close_later_due, false, __ATOMIC_RELEASE); /* a handler from here on sets it again */
    DK_ERRNO_SAVE;
    forget_later_run();
    for (unsigned i = 0; i < CLOSE_LATER_MAX; i++) {
        if (__atomic_load_n(&later[i], __ATOMIC_ACQUIRE) < 0) continue;
        int fd = __atomic_exchange_n(&later[i], -1, __ATOMIC_ACQ_REL);
        struct up_fd *e = fd >= 0 ? up_fd_entry(fd) : NULL;
        uint32_t pending = UP_LATER_PENDING;
        /* Not when the number was closed or bound again since (a dup2 onto it): the program's file now */
        if (!e || !__atomic_compare_exchange_n(&e->close_later, &pending, UP_LATER_CLOSING, false, __ATOMIC_ACQ_REL,
                                               __ATOMIC_RELAXED))
            continue;
        DK_CRASH_POINT("upath.close_later.claimed"); /* tests: another thread's dup2 onto fd starts here */
        closing_later = e;
        /* never adopted (pending.c): closing until close_now_counted's end; its forget of the lock set inside the
         * close's count */
        up_locks_close_begin();
        if (up_fd_pending_entry(fd) && up_pending_drop_closing(fd) >= 0) up_fd_vacate(fd);
        close_now_counted(fd);
        closing_later = NULL;
        __atomic_store_n(&e->close_later, 0, __ATOMIC_RELEASE);
        syscall(SYS_futex, &e->close_later, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0); /* settle's waiters */
    }
    DK_ERRNO_RESTORE;
}

void up_close_later_settle_slow(struct up_fd *e) {
    for (;;) {
        uint32_t v = __atomic_load_n(&e->close_later, __ATOMIC_ACQUIRE);
        if (v == UP_LATER_PENDING) {
            if (!__atomic_compare_exchange_n(&e->close_later, &v, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) continue;
            dk_count(DK_C_close_later_taken, 1);
            return;
        }
        /* Not a handler on the closing thread itself, nor one whose thread holds a mutex or is inside a call
         * that close may wait for: they go on as before (the close may then end after theirs). */
        if (v != UP_LATER_CLOSING || closing_later == e || dk_mu_any_mine() || up_thread_in_call()) return;
        DK_ERRNO_SAVE;
        syscall(SYS_futex, &e->close_later, FUTEX_WAIT_PRIVATE, UP_LATER_CLOSING, NULL, NULL, 0);
        DK_ERRNO_RESTORE;
    }
}

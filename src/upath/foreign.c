/* The recovery rule across users (review 12, finding 12).
 *
 * A program replays every area that may hold records of a file before it first serves that file
 * (recover_scope.c). In a directory several users write, an area holds every user's strict logs and size
 * records, and a process recovers its own user's dead processes only -- their records are that user's
 * bytes, replayed with that user's rights -- unless it is privileged (root: common/area.h), which replays
 * another user's log onto files that user may write. What it may not replay stays for that user's next
 * daxkit program there, and that replay writes the dead process's acknowledged bytes over whatever was
 * written since: a process that served such a file itself would have its own acknowledged writes
 * replaced by older ones (before: root's pwrite, acknowledged, overwritten by nobody's next `true`).
 *
 * So the directory of such an area joins a per-process set, and a file below it (on its file system) is
 * not served by the library: the kernel serves it, counted (foreign_pending), and the process says once
 * per directory whose records wait and how to replay them. The area's records may cover any file below
 * its directory (a log names files by inode, and this process may not read it). Files the process served
 * before stay served (their areas had nothing then). The set lasts for the process: a file served by the
 * kernel stays so while the process has it cached. The same for a root whose area is another user's who
 * may remove this user's files there (review 12, finding 11: dk_area_trusted). */
#include "upath/foreign.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/internal.h"

#define FOREIGN_MAX 32 /* directories; past that every file is the kernel's */

static pthread_mutex_t foreign_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    dev_t dev;
    size_t len;
    char *path;
    uint32_t uid;    /* whose records wait (untrusted: the area's owner) */
    bool untrusted;  /* the area is another user's who may remove ours (not a dead process's records) */
    bool said;       /* the log line was written (at the first file served by the kernel for it) */
} foreign[FOREIGN_MAX];
static int foreign_n;      /* under foreign_mu */
static bool foreign_all;   /* the set overflowed: every file (under foreign_mu) */
static bool foreign_any;   /* the set is not empty: read without the mutex (atomic) */

/* Adds dir; true when it is new. */
static bool add(const char *dir, uint32_t uid, bool untrusted) {
    struct stat st;
    if (DK_REAL(stat)(dir, &st) != 0) st.st_dev = 0; /* any file system */
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    if (dk_mu_refuse(&foreign_mu)) { /* a signal handler inside its thread's add or look: the safe side */
        __atomic_store_n(&foreign_all, true, __ATOMIC_RELEASE); /* every file served by the kernel from now on */
        __atomic_store_n(&foreign_any, true, __ATOMIC_RELEASE);
        return true;
    }
    dk_mu_lock(&foreign_mu);
    bool known = foreign_all;
    for (int i = 0; i < foreign_n && !known; i++) known = foreign[i].len == len && !memcmp(foreign[i].path, dir, len);
    if (!known) {
        char *p = foreign_n < FOREIGN_MAX ? strndup(dir, len) : NULL;
        if (p) {
            foreign[foreign_n].dev = st.st_dev, foreign[foreign_n].len = len, foreign[foreign_n].path = p;
            foreign[foreign_n].uid = uid, foreign[foreign_n].untrusted = untrusted;
            foreign_n++;
        } else {
            foreign_all = true;
        }
        __atomic_store_n(&foreign_any, true, __ATOMIC_RELEASE);
    }
    dk_mu_unlock(&foreign_mu);
    return !known;
}

void up_foreign_note(const char *dir, const struct up_recover_report *rep) {
    if (rep->foreign_left) add(dir, rep->foreign_uid, false);
}

void up_foreign_note_untrusted(const char *dir, uint32_t owner) { add(dir, owner, true); }

/* Said once per directory, at its first file served by the kernel. Under foreign_mu. */
static void say(int i) {
    if (foreign[i].said) return;
    foreign[i].said = true;
    const char *d = foreign[i].path;
    if (foreign[i].untrusted)
        dk_log("%s: its .daxkit area belongs to uid %u, who could rename or remove this user's files there: files "
               "below it are served by the kernel (counter foreign_pending) -- have root or the directory's owner "
               "make the area (docs/guarantees.md, \"A directory written by several users\")",
               d, (unsigned)foreign[i].uid);
    else
        dk_log("%s: recovery pending for uid %u: its dead process left records in %s/.daxkit that this process may "
               "not replay; files below it are served by the kernel (counter foreign_pending) -- run `daxkit recover "
               "%s` as that user or as root",
               d, (unsigned)foreign[i].uid, d, d);
}

bool up_foreign_any(void) { return __atomic_load_n(&foreign_any, __ATOMIC_ACQUIRE); }

bool up_foreign_covers(int fd, const struct stat *st) {
    if (__builtin_expect(!__atomic_load_n(&foreign_any, __ATOMIC_ACQUIRE), 1)) return false;
    char p[4096];
    size_t len = up_fd_path(fd, p, sizeof p);
    if (dk_mu_refuse(&foreign_mu)) { /* a signal handler inside its thread's look or add: the safe side */
        dk_count(DK_C_foreign_pending, 1);
        return true;
    }
    dk_mu_lock(&foreign_mu);
    bool hit = foreign_all || !len; /* unknown: the safe side */
    for (int i = 0; i < foreign_n && !hit; i++) {
        size_t n = foreign[i].len;
        bool below = n == 1 ? p[0] == '/' : len > n && p[n] == '/' && !memcmp(p, foreign[i].path, n);
        hit = below && (!foreign[i].dev || foreign[i].dev == st->st_dev);
        if (hit) say(i);
    }
    if (hit && (foreign_all || !len))
        dk_log_once("files served by the kernel (counter foreign_pending): other users' dead processes left records "
                    "in more than %d directories, or a file's path could not be read", FOREIGN_MAX);
    dk_mu_unlock(&foreign_mu);
    if (hit) dk_count(DK_C_foreign_pending, 1);
    return hit;
}

void up_foreign_after_fork_child(void) { dk_mu_reinit(&foreign_mu); }

/* Which .daxkit areas a start recovers besides its roots' own (review 10, finding 18).
 *
 * A process keeps the records of a file (strict operation logs, published-size records, DAXKIT_ATOMIC logs)
 * in the area of the root that holds the file: <root>/.daxkit. A file is below every root that holds it,
 * so the roots of two programs sharing a file are one the ancestor of the other. When the dead writer's
 * root was the wider one, its records sit in an area above the starting program's roots, which a start
 * that looked at its roots' areas alone never replayed: the narrower program wrote the file, and the next
 * start with the wider root replayed the dead records over those acknowledged writes.
 *
 * So a start also recovers the area of every ancestor directory of each of its roots, up to the top of the
 * root's file system (a root's area holds records of files on the root's device only): what a start with
 * that ancestor as its root would have recovered, in the same way (an area whose owner lives is left
 * alone). It costs one stat per ancestor level at start-up.
 *
 * The other direction: the dead writer's root was the narrower one (/data/sub), below the starting
 * program's (/data). A start cannot walk every directory below its roots; instead, before the process first
 * serves a file below one of its roots, the areas of the directories between the root and the file's
 * directory are recovered (up_recover_below): each directory is looked at once per process (a set of path
 * hashes), so a file's first open costs hash look-ups and two stats per directory never seen before (the
 * name is taken as given, after the working directory cached per chdir; a name relative to another
 * directory descriptor costs that descriptor's path read once, its directories being remembered by the
 * descriptor's verdict and the relative name; the file's own path is read only when a symbolic link, "."
 * or ".." is on the way). A file below such a directory is first served after that directory's area was
 * recovered, so no record there is replayed over what this process writes. Directories are remembered by
 * name: the program's own rename of a directory, rmdir, mount or umount makes every one be looked at
 * again (up_recover_names_moved); another process's rename or mount is not seen. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "common/area.h"
#include "common/config.h"
#include "common/stats.h"
#include "common/log.h"
#include "common/seqlock.h"
#include "shim/libc.h"
#include "upath/foreign.h"
#include "upath/internal.h"
#include "upath/recover_scope.h"
#include "upath/upath.h"

#define ANCESTORS_MAX 64 /* distinct ancestor areas recovered at one start */

static bool is_root(const char *p) {
    for (int i = 0; i < up_roots_count(); i++)
        if (!strcmp(up_root_at(i)->path, p)) return true;
    return false;
}

/* Cuts p to its parent directory; false at "/". */
static bool to_parent(char *p) {
    char *slash = strrchr(p, '/');
    if (!slash || (slash == p && !p[1])) return false;
    if (slash == p) p[1] = 0;
    else *slash = 0;
    return true;
}

static uint64_t path_hash(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h | 1; /* 0: an empty slot */
}

void up_recover_root_area(struct up_root *r) {
    const char *dir = r->path;
    char a[4200];
    struct stat as, ds;
    snprintf(a, sizeof a, "%s/.daxkit", dir[1] ? dir : "");
    int rc = DK_REAL(lstat)(a, &as);
    /* No area: nothing a dead process left to recover, neither here nor in its atomic/ subdirectory
     * (up_atomic_recover_roots) -- two opens that failed with ENOENT, 8 system calls with their signal
     * windows, per process start (session 15). An area made after this look belongs to a live process. */
    r->area_absent = rc != 0 && errno == ENOENT;
    if (r->area_absent) return;
    if (rc == 0 && DK_REAL(stat)(dir, &ds) == 0 && !dk_area_trusted(&as, &ds))
        up_foreign_note_untrusted(dir, (uint32_t)as.st_uid);
    struct up_recover_report rep = {0};
    up_recover_dir(dir, &rep);
    up_foreign_note(dir, &rep);
}

static void recover_area_of(const char *dir) {
    struct up_recover_report rep = {0};
    up_recover_dir(dir, &rep);
    up_foreign_note(dir, &rep); /* another user's dead process left what this one may not replay */
    struct alog_dir_report arep = {0};
    if (dk_cfg.atomic_recover_start) alog_recover_named(dir, &arep);
    if (rep.strict.replayed || rep.sizes.rolled_back || arep.recovered)
        dk_log_verbose("%s: recovered what dead processes left in its area (an ancestor of a managed directory, or a "
                       "directory below one)", dir);
}

void up_recover_ancestor_areas(void) {
    DK_ERRNO_SAVE;
    uint64_t done[ANCESTORS_MAX]; /* hashes of the ancestors recovered */
    int ndone = 0;
    for (int i = 0; i < up_roots_count(); i++) {
        const struct up_root *r = up_root_at(i);
        if (r->mount_root) continue;
        char p[sizeof r->path];
        snprintf(p, sizeof p, "%s", r->path);
        while (to_parent(p)) {
            struct stat st, area;
            if (DK_REAL(stat)(p, &st) != 0 || st.st_dev != r->dev) break; /* another file system: not ours */
            uint64_t h = path_hash(p, strlen(p));
            bool seen = is_root(p);
            for (int k = 0; k < ndone && !seen; k++) seen = done[k] == h;
            char a[sizeof r->path + 16];
            snprintf(a, sizeof a, "%s/.daxkit", p[1] ? p : "");
            if (!seen && ndone < ANCESTORS_MAX && DK_REAL(lstat)(a, &area) == 0 && S_ISDIR(area.st_mode)) {
                done[ndone++] = h;
                recover_area_of(p);
            }
        }
    }
    DK_ERRNO_RESTORE;
}

/* ---- directories below a root, at a file's first open ---- */

#define BELOW_SLOTS 4096u /* directories remembered (hashes); when 3/4 full the set starts afresh */

static pthread_mutex_t below_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t below_seen[BELOW_SLOTS];
static unsigned below_used;
/* The set remembers directories by name: a name this process gave to another directory since (a rename
 * that moved a directory, an rmdir, a mount: up_recover_names_moved) may now hold an area no one looked at,
 * so every name is looked at again after such a change -- the set starts afresh when names_gen moved. */
static uint64_t names_gen = 1; /* atomic */
static uint64_t below_gen = 1; /* names_gen the set was filled at; under below_mu */


/* The slot holding h, or the empty slot where it would go. Under below_mu. */
static unsigned slot_of(uint64_t h) {
    unsigned i = (unsigned)(h % BELOW_SLOTS);
    while (below_seen[i] && below_seen[i] != h) i = (i + 1) % BELOW_SLOTS;
    return i;
}

static bool seen(uint64_t h) { return below_seen[slot_of(h)] == h; }

/* Adds h (not in the set). Under below_mu. */
static void add(uint64_t h) {
    if (below_used >= BELOW_SLOTS / 4 * 3) { /* full: forget, and look again (a stat each) */
        memset(below_seen, 0, sizeof below_seen);
        below_used = 0;
    }
    below_seen[slot_of(h)] = h;
    below_used++;
}

/* Takes below_mu, the set emptied when a name moved since it was filled. */
static void below_lock(void) {
    dk_mu_lock(&below_mu);
    uint64_t gen = __atomic_load_n(&names_gen, __ATOMIC_ACQUIRE);
    if (DK_UNLIKELY(below_gen != gen)) {
        memset(below_seen, 0, sizeof below_seen);
        below_used = 0;
        below_gen = gen;
    }
}

/* true when h was in the set; adds it otherwise. Under below_mu. */
static bool seen_or_add(uint64_t h) {
    if (seen(h)) return true;
    add(h);
    return false;
}

/* Recovers the area of p[0..n) when it has one. */
static void look_at(char *p, size_t n) {
    char a[4200];
    struct stat st;
    if (snprintf(a, sizeof a, "%.*s/.daxkit", (int)n, p) >= (int)sizeof a) return;
    if (DK_REAL(lstat)(a, &st) != 0 || !S_ISDIR(st.st_mode)) return;
    char save = p[n];
    p[n] = 0;
    recover_area_of(p);
    p[n] = save;
}

static char cwd_path[4096]; /* the working directory (getcwd: no symbolic links), under below_mu */
static size_t cwd_len;
static uint64_t cwd_gen_seen;

/* The file's name as a path from "/": an absolute name as given, a name relative to the working directory
 * after the cached working directory, else (another directory descriptor, no name) the descriptor's path
 * as the kernel resolved it. 0 when unknown. Under below_mu. */
static size_t name_path(int fd, int dirfd, const char *path, char *p, size_t cap) {
    /* memcpy, not snprintf: ~560 instructions per first open (session 12) */
    if (path && path[0] == '/') {
        size_t n = strnlen(path, cap);
        if (n == cap) return cap; /* too long: below_root refuses it */
        memcpy(p, path, n + 1);
        return n;
    }
    if (path && dirfd == AT_FDCWD) {
        uint64_t gen = up_cwd_generation();
        if (cwd_gen_seen != gen) {
            cwd_len = getcwd(cwd_path, sizeof cwd_path) ? strlen(cwd_path) : 0;
            cwd_gen_seen = cwd_len ? gen : 0;
        }
        if (cwd_len) {
            size_t c = cwd_len > 1 ? cwd_len : 0, n = strnlen(path, cap);
            if (c + 1 + n >= cap) return cap; /* too long: below_root refuses it */
            memcpy(p, cwd_path, c);
            p[c] = '/';
            memcpy(p + c + 1, path, n + 1);
            return c + 1 + n;
        }
    }
    return up_fd_path(fd, p, cap);
}

/* p[0..dir_len) below the root (p[rl] is its first '/'): each directory from the root down not seen yet
 * has its area recovered. false: a symbolic link on the way (its target's own parents are not on this
 * path: the caller takes the kernel's path instead). */
static bool walk_down(char *p, size_t rl, size_t dir_len) {
    for (size_t k = rl + 1; k <= dir_len; k++) {
        if (k < dir_len && p[k] != '/') continue;
        if (k < dir_len && seen_or_add(path_hash(p, k))) continue;
        char save = p[k];
        p[k] = 0;
        struct stat st;
        bool link = DK_REAL(lstat)(p, &st) == 0 && S_ISLNK(st.st_mode);
        p[k] = save;
        if (link) return false;
        look_at(p, k);
    }
    return true;
}

static bool below_root(const struct up_root *r, const char *p, size_t len, size_t rl) {
    return len && len < 4096 && strncmp(p, r->path, r->path_len) == 0 && p[rl] == '/';
}

/* The hash of directory name[0..n) relative to the directory descriptor whose verdict is `id`: apart from
 * every path from "/" (those start with '/', these do not, and the id is mixed in first). */
static uint64_t relative_hash(uint64_t id, const char *name, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 8; i++) h = (h ^ (unsigned char)(id >> (8 * i))) * 0x100000001b3ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
    return h | 1;
}

/* name[0..n) is a chain of directory names: no empty, "." or ".." part (the relative walk's names are then
 * exactly the directories the kernel passed through, unless one is a symbolic link: looked at). */
static bool plain_chain(const char *name, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && name[e] != '/') e++;
        size_t len = e - i;
        if (!len || (name[i] == '.' && (len == 1 || (len == 2 && name[i + 1] == '.')))) return false;
        i = e + 1;
    }
    return true;
}

/* The directories of name[0..dir_len) (a plain chain) relative to directory descriptor dirfd, whose verdict
 * `id` is walked: each looked at by its name relative to dirfd (two stats, the first time) and remembered by
 * id and the relative name. false: not a directory there, or a symbolic link on the way. Under below_mu. */
static bool walk_chain(uint64_t id, int dirfd, const char *name, size_t dir_len) {
    if (seen(relative_hash(id, name, dir_len))) return true; /* this directory, seen through dirfd */
    char d[4096], a[4096 + 16];
    memcpy(d, name, dir_len);
    for (size_t k = 1; k <= dir_len; k++) {
        if (k < dir_len && name[k] != '/') continue;
        uint64_t h = relative_hash(id, name, k);
        if (k < dir_len && seen(h)) continue;
        d[k] = 0;
        struct stat st;
        if (DK_REAL(fstatat)(dirfd, d, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return false;
        snprintf(a, sizeof a, "%s/.daxkit", d);
        if (DK_REAL(fstatat)(dirfd, a, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            char p[4096];
            size_t len = up_fd_path(dirfd, p, sizeof p);
            if (len && len + 1 + k < sizeof p) {
                p[len] = '/';
                memcpy(p + len + 1, d, k + 1);
                recover_area_of(len == 1 ? p + 1 : p); /* dirfd "/" */
            }
        }
        add(h); /* looked at, and a directory: remembered */
        if (k < dir_len) d[k] = '/';
    }
    return true;
}

/* The directory of the last file opened by a name with a '/' relative to a walked directory descriptor: tar
 * xf opens every file of a directory one after the other ("t/dir/a.h", "t/dir/b.h", ...), and each open's
 * walk by name cost ~530 instructions (two lock pairs, the name hashed with the descriptor's id, its parts
 * checked) to find the directory in the set; the same directory again is now a compare of the name. Written
 * under below_mu; read without it, as a seqlock (odd while written: a signal handler that interrupted the
 * writer, or a reader that raced it, walks as before). Valid while names_gen is the one it was filled at. */
#define LAST_DIR_BYTES 256
static struct {
    unsigned seq;   /* odd while written */
    uint64_t id;    /* the directory descriptor's verdict (up_dirfd_walked) */
    uint64_t gen;   /* names_gen when filled */
    size_t len;     /* of name */
    char name[LAST_DIR_BYTES];
} last_dir;

/* name[0..n) relative to dirfd is the last directory walked, by the same descriptor verdict, since no name
 * moved. */
static bool last_dir_is(int dirfd, const char *name, size_t n) {
    if (n >= LAST_DIR_BYTES) return false;
    unsigned seq = dk_seq_read_begin(&last_dir.seq);
    /* (a racing writer's bytes may be compared: dk_seq_read_retry throws such an answer away) */
    bool same = __atomic_load_n(&last_dir.len, __ATOMIC_RELAXED) == n && !memcmp(last_dir.name, name, n) &&
                __atomic_load_n(&last_dir.gen, __ATOMIC_RELAXED) == __atomic_load_n(&names_gen, __ATOMIC_ACQUIRE);
    uint64_t id = __atomic_load_n(&last_dir.id, __ATOMIC_RELAXED);
    if (!same || dk_seq_read_retry(&last_dir.seq, seq)) return false;
    return id == up_dirfd_walked(dirfd); /* the descriptor's number still names that directory */
}

/* Remembers name[0..n), walked relative to the verdict id. Under below_mu. */
static void last_dir_set(uint64_t id, const char *name, size_t n) {
    if (n >= LAST_DIR_BYTES) return;
    dk_seq_write_begin(&last_dir.seq);
    __atomic_store_n(&last_dir.id, id, __ATOMIC_RELAXED);
    __atomic_store_n(&last_dir.gen, below_gen, __ATOMIC_RELAXED);
    __atomic_store_n(&last_dir.len, n, __ATOMIC_RELAXED);
    memcpy(last_dir.name, name, n);
    dk_seq_write_end(&last_dir.seq);
}

/* A name with a '/' relative to directory descriptor dirfd below r (tar xf opens "t/dir/file" relative to its
 * -C directory's descriptor): the descriptor's own directory is walked once (its path read from the kernel
 * once per descriptor), then each directory of the name is looked at by its name relative to the
 * descriptor (two stats, the first time) and remembered by the descriptor's verdict and the relative name
 * -- no readlink per file. false: the caller walks the file's path as the kernel resolved it -- the name has
 * an empty, "." or ".." part or a symbolic link on the way, the descriptor's directory is not at or below
 * r, or its verdict is not cached. Under below_mu. */
static bool walk_relative(const struct up_root *r, size_t rl, int dirfd, const char *name, size_t dir_len) {
    if (dir_len >= 4096 - 16 || !plain_chain(name, dir_len)) return false;
    uint64_t id = up_dirfd_walked(dirfd);
    if (!id) {
        char p[4096];
        size_t len = up_fd_path(dirfd, p, sizeof p);
        bool at_root = len == r->path_len && memcmp(p, r->path, len) == 0;
        if (!at_root && !below_root(r, p, len, rl)) return false;
        /* The kernel's path has no symbolic link on the way: walk_down goes through. */
        if (!at_root && !seen_or_add(path_hash(p, len))) walk_down(p, rl, len);
        up_dirfd_set_walked(dirfd);
        if (!(id = up_dirfd_walked(dirfd))) return false;
    }
    if (!walk_chain(id, dirfd, name, dir_len)) return false;
    last_dir_set(id, name, dir_len);
    return true;
}

bool up_recover_dir_named(const char *name) {
    size_t n = strlen(name);
    while (n > 1 && name[n - 1] == '/') n--;
    if (name[0] != '/' || n >= 4096 - 16) return false;
    for (int i = 0; i < up_roots_count(); i++) {
        const struct up_root *r = up_root_at(i);
        size_t rl = r->path_len == 1 ? 0 : r->path_len; /* root "/": every component is below it */
        if (n == r->path_len && !memcmp(name, r->path, n)) return true; /* the root: its area at start-up */
        if (n <= rl + 1 || memcmp(name, r->path, rl) || name[rl] != '/' || !plain_chain(name + rl + 1, n - rl - 1))
            continue;
        if (dk_mu_refuse(&below_mu)) return false; /* a signal handler inside its thread's walk: not walked */
        char p[4096];
        memcpy(p, name, n);
        p[n] = 0;
        DK_ERRNO_SAVE;
        below_lock();
        uint64_t h = path_hash(p, n);
        bool walked = seen(h);
        if (!walked && (walked = walk_down(p, rl, n))) add(h);
        dk_mu_unlock(&below_mu);
        DK_ERRNO_RESTORE;
        return walked;
    }
    return false;
}

bool up_recover_dir_chain(int dirfd, const char *name) {
    size_t n = strlen(name);
    if (!n || n >= 4096 - 16 || name[0] == '/' || !plain_chain(name, n)) return false;
    if (dk_mu_refuse(&below_mu)) { /* a signal handler inside its thread's walk: not walked */
        return false;
    }
    DK_ERRNO_SAVE;
    below_lock();
    uint64_t id = up_dirfd_walked(dirfd);
    bool walked = id && walk_chain(id, dirfd, name, n);
    dk_mu_unlock(&below_mu);
    DK_ERRNO_RESTORE;
    return walked;
}

bool up_recover_below(const struct up_root *r, int fd, int dirfd, const char *path) {
    bool in_dirfd = path && path[0] && path[0] != '/' && dirfd != AT_FDCWD;
    const char *slash = in_dirfd ? strrchr(path, '/') : NULL;
    if (in_dirfd && !slash && up_dirfd_walked(dirfd)) return true; /* its directory's areas: looked at already */
    if (slash && last_dir_is(dirfd, path, (size_t)(slash - path))) return true; /* the last file's directory */
    /* A signal handler's open (async-signal-safe) that interrupted its thread's walk: the walk's state is
     * half-changed and its mutex the thread's (review 15, finding 2) -- not looked at. */
    if (dk_mu_refuse(&below_mu)) {
        return false;
    }
    char p[4096];
    size_t rl = r->path_len == 1 ? 0 : r->path_len; /* root "/": every component is below it */
    DK_ERRNO_SAVE;
    below_lock();
    if (slash && walk_relative(r, rl, dirfd, path, (size_t)(slash - path))) {
        dk_mu_unlock(&below_mu);
        DK_ERRNO_RESTORE;
        return true;
    }
    size_t len = name_path(fd, dirfd, path, p, sizeof p);
    bool kernel = !path || (path[0] != '/' && dirfd != AT_FDCWD); /* p is the kernel's path already */
    if (!below_root(r, p, len, rl) && !kernel) /* another name of it (a link on the way): the kernel's */
        len = up_fd_path(fd, p, sizeof p), kernel = true;
    char *last = below_root(r, p, len, rl) ? strrchr(p, '/') : NULL;
    size_t dir_len = last ? (size_t)(last - p) : 0;
    /* A directory seen before costs nothing more; one in the root itself was recovered at start-up. */
    if (dir_len > rl && !seen_or_add(path_hash(p, dir_len)) && !walk_down(p, rl, dir_len) && !kernel) {
        len = up_fd_path(fd, p, sizeof p);
        last = below_root(r, p, len, rl) ? strrchr(p, '/') : NULL;
        dir_len = last ? (size_t)(last - p) : 0;
        if (dir_len > rl && !seen_or_add(path_hash(p, dir_len))) walk_down(p, rl, dir_len);
    }
    dk_mu_unlock(&below_mu);
    if (in_dirfd && !slash && dir_len > 0) up_dirfd_set_walked(dirfd); /* every directory down to it was looked at */
    DK_ERRNO_RESTORE;
    return true;
}

void up_recover_names_moved(void) {
    __atomic_add_fetch(&names_gen, 1, __ATOMIC_ACQ_REL);
    up_dirfd_forget_walks(); /* a descriptor's directory may now be below directories not looked at */
    up_cwd_changed();        /* the working directory's path may have changed with it */
}

void up_recover_scope_after_fork_child(void) {
    dk_mu_reinit(&below_mu);
    if (last_dir.seq & 1) last_dir.gen = 0; /* written by another thread at the fork: half of it */
    dk_seq_after_fork(&last_dir.seq);
}

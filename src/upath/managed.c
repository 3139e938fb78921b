/* Managed directories: only regular files below them are served in user space. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "common/stats.h"
#include "common/config.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/seqlock.h"
#include "shim/libc.h"
#include "upath/internal.h"
#include "upath/recover_scope.h"

#define UP_ROOTS_MAX 16

static struct up_root roots[UP_ROOTS_MAX];
static int root_count;

int up_roots_count(void) { return root_count; }

size_t up_fd_path(int fd, char *buf, size_t cap) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = cap ? readlink(link, buf, cap - 1) : -1;
    dk_count(DK_C_fd_path_reads, 1);
    if (n <= 0) {
        if (cap) buf[0] = 0;
        return 0;
    }
    buf[n] = 0;
    return (size_t)n;
}

int up_fd_reopen(int fd, int flags) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    return dk_libc()->open(link, flags | O_CLOEXEC);
}
int up_root_index(const struct up_root *r) { return (int)(r - roots); }
struct up_root *up_root_at(int idx) { return idx >= 0 && idx < root_count ? &roots[idx] : NULL; }

static int root_add(const char *dir) {
    const struct dk_libc *c = dk_libc();
    if (root_count == UP_ROOTS_MAX) {
        dk_log("DAXKIT_DIR lists more than %d directories; '%s' and later ones are not managed",
               UP_ROOTS_MAX, dir);
        return -1;
    }
    struct up_root *r = &roots[root_count];
    if (!realpath(dir, r->path)) {
        dk_log("DAXKIT_DIR entry '%s' cannot be used (%s); create it or fix DAXKIT_DIR", dir, dk_strerror(errno));
        return -1;
    }
    struct stat st, parent;
    if (c->stat(r->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        dk_log("DAXKIT_DIR entry '%s' is not a directory; fix DAXKIT_DIR", dir);
        return -1;
    }
    char up[4200];
    snprintf(up, sizeof up, "%s/..", r->path);
    r->mount_root = c->stat(up, &parent) != 0 || parent.st_dev != st.st_dev || parent.st_ino == st.st_ino;
    r->path_len = strlen(r->path);
    r->dev = st.st_dev;
    pthread_mutex_init(&r->mu, NULL);
    root_count++;
    return 0;
}

int up_roots_init(const char *dirs) {
    DK_ERRNO_SAVE;
    root_count = 0;
    char *copy = strdup(dirs ? dirs : "");
    if (!copy) return 0;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
        if (*d) root_add(d);
    free(copy);
    DK_ERRNO_RESTORE;
    return root_count;
}

bool up_dev_is_managed(dev_t dev) {
    for (int i = 0; i < root_count; i++)
        if (roots[i].dev == dev) return true;
    return false;
}

/* True when `path` is `root` or below it, and not inside its hidden .daxkit area. */
static bool path_below(const struct up_root *r, const char *path) {
    if (strncmp(path, r->path, r->path_len) != 0) return false;
    const char *rest = path + r->path_len;
    if (r->path_len == 1) rest = path; /* root "/" */
    if (*rest != '/' && *rest != 0) return false;
    return strncmp(rest, "/.daxkit/", 9) != 0 && strcmp(rest, "/.daxkit") != 0;
}

/* A name with no ".daxkit" component (never entering the library's own area) and, unless may_climb, no
 * ".." one (never climbing out of where it starts). */
static bool name_components_ok(const char *name, bool may_climb) {
    /* Most names hold neither ".daxkit" nor "..": both begin with a dot, so one vectorised search for dots
     * (a file name has one or two) and a look after each, instead of a walk per byte (~300 instructions per
     * first open of a 40-byte name, session 12) or two strstr (~125, session 20). */
    bool suspect = false;
    for (const char *d = strchr(name, '.'); d && !suspect; d = strchr(d + 1, '.'))
        suspect = (!may_climb && d[1] == '.') || (d[1] == 'd' && strncmp(d + 1, "daxkit", 6) == 0);
    if (!suspect) return true;
    for (const char *p = name; *p;) {
        while (*p == '/') p++;
        const char *e = p;
        while (*e && *e != '/') e++;
        size_t n = (size_t)(e - p);
        if ((!may_climb && n == 2 && p[0] == '.' && p[1] == '.') || (n == 7 && !strncmp(p, ".daxkit", 7)))
            return false;
        p = e;
    }
    return true;
}

static uint64_t up_cwd_gen = 1; /* moved by chdir/fchdir (up_cwd_changed) */

void up_cwd_changed(void) { __atomic_add_fetch(&up_cwd_gen, 1, __ATOMIC_ACQ_REL); }
uint64_t up_cwd_generation(void) { return __atomic_load_n(&up_cwd_gen, __ATOMIC_ACQUIRE); }

/* Whether the working directory is at or below r, found by getcwd once per chdir. A verdict found while
 * a chdir ran is stored under the generation read before it, so the next call finds it stale. */
static bool cwd_below(struct up_root *r) {
    uint64_t gen = __atomic_load_n(&up_cwd_gen, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&r->cwd_gen_seen, __ATOMIC_ACQUIRE) == gen) return __atomic_load_n(&r->cwd_below, __ATOMIC_RELAXED);
    char cwd[PATH_MAX];
    bool below = getcwd(cwd, sizeof cwd) && path_below(r, cwd);
    __atomic_store_n(&r->cwd_below, below, __ATOMIC_RELAXED);
    __atomic_store_n(&r->cwd_gen_seen, gen, __ATOMIC_RELEASE);
    return below;
}

/* Directory descriptors programs open names relative to (rsync, find, git): which roots each directory
 * is at or below, found by one readlink per directory and kept by descriptor number until the number is
 * closed or made to name another file: close, close_range, dup2/dup3 onto it, closedir (interposed for
 * this: glibc's opendir/closedir open and close without the interposed calls) and every open returning
 * it forget the number's verdict (up_dirfd_forget). Checking the directory's identity with an fstat at
 * each use instead cost rsync one system call per file. Not seen: a number closed by a raw system call
 * and reused for another directory keeps the old verdict; a directory renamed out of a root keeps its
 * verdict while its descriptor stays open. A verdict found while its number was forgotten (a close racing
 * the readlink) is not stored: dirfd_gen moves at every forget. */
#define UP_DIRFD_SLOTS 64
struct dirfd_verdict {
    int fd;         /* -1: empty */
    uint32_t below; /* bit i: at or below roots[i] */
    bool walked;    /* up_recover_below looked at every area from the root down to this directory */
    uint64_t id;    /* this verdict, unique in the process: names relative to it are remembered by it */
};
static struct dirfd_verdict dirfd_cache[UP_DIRFD_SLOTS] = {[0 ... UP_DIRFD_SLOTS - 1] = {.fd = -1}};
static pthread_mutex_t dirfd_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dirfd_gen; /* atomic */
static uint64_t dirfd_ids; /* under dirfd_mu */
/* A signal handler whose thread is inside dirfd_mu (common/lockmark.h; review 15, finding 2: its open or close
 * of a directory waited for it for ever) takes no verdict from the cache and stores none; a number it forgets
 * (a close, a dup2 over it) sets this, and the next taker of the mutex empties the whole cache (atomic). */
static bool dirfd_flush;
/* Odd while dirfd_mu is held: every open looks its directory descriptor's verdict up (dirfd_peek) without the
 * mutex -- its lock and unlock were ~260 of the ~530 instructions tar xf's open of a file spent there -- and
 * takes the answer when the count was even and the same before and after the reads (a seqlock). */
static unsigned dirfd_seq;

/* The verdict's fields that dirfd_peek reads without the mutex, stored under it. */
static void verdict_put(struct dirfd_verdict *v, int fd, uint32_t below, bool walked, uint64_t id) {
    __atomic_store_n(&v->below, below, __ATOMIC_RELAXED);
    __atomic_store_n(&v->walked, walked, __ATOMIC_RELAXED);
    __atomic_store_n(&v->id, id, __ATOMIC_RELAXED);
    __atomic_store_n(&v->fd, fd, __ATOMIC_RELAXED);
}
static void verdict_clear(struct dirfd_verdict *v) { __atomic_store_n(&v->fd, -1, __ATOMIC_RELAXED); }

/* dirfd_mu, unless it is this thread's (then false: the cache is left alone, counted). */
static bool dirfd_lock(void) {
    if (dk_mu_refuse(&dirfd_mu)) return false;
    dk_mu_lock(&dirfd_mu);
    dk_seq_write_begin(&dirfd_seq); /* odd: readers without the mutex look again */
    if (DK_UNLIKELY(__atomic_load_n(&dirfd_flush, __ATOMIC_ACQUIRE))) {
        for (unsigned i = 0; i < UP_DIRFD_SLOTS; i++) verdict_clear(&dirfd_cache[i]);
        __atomic_store_n(&dirfd_flush, false, __ATOMIC_RELEASE);
    }
    return true;
}
static void dirfd_unlock(void) {
    dk_seq_write_end(&dirfd_seq);
    dk_mu_unlock(&dirfd_mu);
}

/* dirfd's slot as it was at one moment, without the mutex; false: it was changing (or a signal handler
 * forgot a number without the mutex: dirfd_flush) -- the caller looks under the mutex. Async-signal-safe: a
 * handler that interrupted its thread inside dirfd_mu finds the count odd. */
static bool dirfd_peek(int dirfd, struct dirfd_verdict *out) {
    const struct dirfd_verdict *v = &dirfd_cache[dirfd % UP_DIRFD_SLOTS];
    unsigned seq = dk_seq_read_begin(&dirfd_seq);
    out->fd = __atomic_load_n(&v->fd, __ATOMIC_RELAXED);
    out->below = __atomic_load_n(&v->below, __ATOMIC_RELAXED);
    out->walked = __atomic_load_n(&v->walked, __ATOMIC_RELAXED);
    out->id = __atomic_load_n(&v->id, __ATOMIC_RELAXED);
    return !dk_seq_read_retry(&dirfd_seq, seq) && !__atomic_load_n(&dirfd_flush, __ATOMIC_RELAXED);
}

static uint32_t roots_below(const char *path) {
    uint32_t m = 0;
    for (int i = 0; i < root_count; i++)
        if (path_below(&roots[i], path)) m |= 1u << i;
    return m;
}

static bool dirfd_below(const struct up_root *r, int dirfd) {
    if (dirfd < 0) return false;
    uint32_t bit = 1u << (r - roots);
    struct dirfd_verdict *v = &dirfd_cache[dirfd % UP_DIRFD_SLOTS], seen;
    if (dirfd_peek(dirfd, &seen) && seen.fd == dirfd) return seen.below & bit;
    bool locked = dirfd_lock(), hit = false;
    uint32_t below = 0;
    if (locked) {
        hit = v->fd == dirfd;
        below = v->below;
        dirfd_unlock();
    }
    if (hit) return below & bit;
    uint64_t gen = __atomic_load_n(&dirfd_gen, __ATOMIC_ACQUIRE);
    char path[PATH_MAX];
    if (!up_fd_path(dirfd, path, sizeof path)) return false; /* the open succeeded: dirfd is a directory */
    below = roots_below(path);
    if (locked && dirfd_lock()) {
        if (__atomic_load_n(&dirfd_gen, __ATOMIC_ACQUIRE) == gen) verdict_put(v, dirfd, below, false, ++dirfd_ids);
        dirfd_unlock();
    }
    return below & bit;
}

void up_dirfd_forget_range(unsigned first, unsigned last) {
    __atomic_add_fetch(&dirfd_gen, 1, __ATOMIC_ACQ_REL);
    bool any = false;
    for (unsigned i = 0; i < UP_DIRFD_SLOTS && !any; i++) {
        int fd = __atomic_load_n(&dirfd_cache[i].fd, __ATOMIC_RELAXED);
        any = fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last;
    }
    if (!any) return;
    if (!dirfd_lock()) {
        __atomic_store_n(&dirfd_flush, true, __ATOMIC_RELEASE);
        return;
    }
    for (unsigned i = 0; i < UP_DIRFD_SLOTS; i++) {
        int fd = dirfd_cache[i].fd;
        if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last) verdict_clear(&dirfd_cache[i]);
    }
    dirfd_unlock();
}

void up_dirfd_forget(int fd) {
    if (fd < 0) return;
    __atomic_add_fetch(&dirfd_gen, 1, __ATOMIC_ACQ_REL);
    struct dirfd_verdict *v = &dirfd_cache[fd % UP_DIRFD_SLOTS];
    if (__atomic_load_n(&v->fd, __ATOMIC_RELAXED) != fd) return;
    if (!dirfd_lock()) {
        __atomic_store_n(&dirfd_flush, true, __ATOMIC_RELEASE);
        return;
    }
    if (v->fd == fd) verdict_clear(v);
    dirfd_unlock();
}

/* The name the program opened shows the file below r without a readlink of the file: an absolute name
 * below r's real path, or a name relative to a working directory or a directory descriptor below r, that
 * neither climbs ("..") nor enters .daxkit. The file is on r's device (the caller checked). A symbolic
 * link below r that points elsewhere on that device makes its target managed too -- reached by a name
 * below the directory, as a program sees it. */
static bool name_below(struct up_root *r, int dirfd, const char *hint) {
    if (!hint || !hint[0] || !name_components_ok(hint, false)) return false;
    if (hint[0] == '/') return path_below(r, hint);
    return dirfd == AT_FDCWD ? cwd_below(r) : dirfd_below(r, dirfd);
}

/* A name relative to a directory descriptor whose areas were looked at: for a name with no '/' nothing more to
 * look at, for one with a '/' only the directories of the name below it (tar and rsync open every file
 * relative to a directory's descriptor; reading each one's path from the kernel cost tar 22% more CPU,
 * session 11). Returns the verdict's id (names relative to the descriptor are remembered by it), 0 when not
 * walked. The mark goes with the descriptor's verdict when its number is forgotten (closed, reused). */
uint64_t up_dirfd_walked(int dirfd) {
    if (dirfd < 0) return 0;
    struct dirfd_verdict *v = &dirfd_cache[dirfd % UP_DIRFD_SLOTS], seen;
    if (dirfd_peek(dirfd, &seen)) return seen.fd == dirfd && seen.walked ? seen.id : 0;
    if (!dirfd_lock()) return 0; /* not walked: the caller walks */
    uint64_t id = v->fd == dirfd && v->walked ? v->id : 0;
    dirfd_unlock();
    return id;
}

/* A name moved (recover_scope.c: up_recover_names_moved): no descriptor's directory counts as walked. */
void up_dirfd_forget_walks(void) {
    if (!dirfd_lock()) { /* a signal handler inside its thread's use of the cache: every verdict goes */
        __atomic_store_n(&dirfd_flush, true, __ATOMIC_RELEASE);
        return;
    }
    for (unsigned i = 0; i < UP_DIRFD_SLOTS; i++) __atomic_store_n(&dirfd_cache[i].walked, false, __ATOMIC_RELAXED);
    dirfd_unlock();
}

/* Marks dirfd's directory walked when its verdict is cached (a verdict forgotten since was for another file). */
void up_dirfd_set_walked(int dirfd) {
    if (dirfd < 0) return;
    struct dirfd_verdict *v = &dirfd_cache[dirfd % UP_DIRFD_SLOTS];
    if (!dirfd_lock()) return;
    if (v->fd == dirfd) __atomic_store_n(&v->walked, true, __ATOMIC_RELAXED);
    dirfd_unlock();
}

void up_dirfd_note_open(int fd, int dirfd, const char *name) {
    uint32_t below = 0;
    for (int i = 0; i < root_count; i++)
        if (name_below(&roots[i], dirfd, name)) below |= 1u << i;
    if (!below || fd < 0) return; /* not below by its name: the kernel's path decides at first use */
    /* Relative to a walked descriptor: walked too once the name's directories were looked at. By an absolute
     * name: the root itself, or below it once the name's directories were looked at (tar -C DIR) -- the names
     * opened relative to it then need no readlink of the first one (a fresh process's first /proc access:
     * ~20 us of CPU, session 28). */
    bool walked = name[0] == '/' ? up_recover_dir_named(name) : dirfd != AT_FDCWD && up_recover_dir_chain(dirfd, name);
    if (!dirfd_lock()) return; /* no verdict: the kernel's path decides at its first use */
    DK_CRASH_POINT("managed.dirfd_note_open.locked");
    verdict_put(&dirfd_cache[fd % UP_DIRFD_SLOTS], fd, below, walked, ++dirfd_ids);
    dirfd_unlock();
}

/* tar cf opens each directory without O_DIRECTORY and fstats it: with lazy adoption the open made it pending
 * (it could be a file) and its verdict was never stored, so under a root that is a mount root -- where the
 * name alone shows the files below it -- each file opened relative to it had its own path read to walk its
 * areas (up_recover_below: 794 readlinks for /usr/include/linux's 763 files; 62 with the root a directory
 * below its mount, whose descriptors get a verdict by their own readlink). Now the first file's walk marks
 * the directory walked and the rest need none. */
void up_dirfd_note_pending(int fd, uint32_t below, const struct stat *st, bool child) {
    for (int i = 0; i < root_count; i++)
        if (roots[i].dev != st->st_dev) below &= ~(1u << i);
    if (!below || fd < 0) return; /* no verdict: the kernel's path decides at its first use */
    /* A plain child of a walked directory (no link: O_NOFOLLOW) is walked when it holds no area of its own: the
     * areas from the root down to it were all looked at -- no readlink of the first file opened in it (tar cf:
     * each directory's; a fresh process's first /proc access costs ~20 us more, session 29). An area there: the
     * first file's walk recovers it, by the kernel's path. */
    bool walked = false;
    if (child) {
        DK_ERRNO_SAVE;
        struct stat a;
        walked = DK_REAL(fstatat)(fd, ".daxkit", &a, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
        DK_ERRNO_RESTORE;
    }
    if (!dirfd_lock()) return;
    verdict_put(&dirfd_cache[fd % UP_DIRFD_SLOTS], fd, below, walked, ++dirfd_ids);
    dirfd_unlock();
}

/* The file system below a mount root holds nothing else: a name that does not pass through a .daxkit area
 * needs no readlink (a name reached through another mount of the same file system is the same file, and
 * managed alike). Relative names count too -- rsync and git open relative to a directory they changed
 * into; only a program working inside .daxkit itself, by a relative name, would have its file served. */
static bool hint_below_mount_root(const struct up_root *r, const char *hint) {
    return r->mount_root && hint && hint[0] && name_components_ok(hint, true);
}

/* Lazy adoption: what the name alone shows at the open, before the file is looked at -- the roots whose
 * directory the name is at or below by text (or whose mount root the name stays within). A name relative
 * to a directory descriptor costs that directory's one readlink (kept per descriptor number, as for an
 * adoption at the open: by the adoption the number may name another directory); the file's own
 * readlink decides at its adoption where the name showed nothing. */
uint32_t up_roots_by_name(int dirfd, const char *path) {
    uint32_t m = 0;
    if (!path || !path[0]) return 0;
    for (int i = 0; i < root_count; i++) {
        struct up_root *r = &roots[i];
        bool below = hint_below_mount_root(r, path);
        if (!below && name_components_ok(path, false))
            below = path[0] == '/' ? path_below(r, path)
                    : dirfd == AT_FDCWD ? cwd_below(r)
                                        : dirfd_below(r, dirfd);
        if (below) m |= 1u << i;
    }
    return m;
}

/* The adoption of a descriptor opened earlier (up_roots_by_name gave `below`): a root on the file's device
 * that its name showed, else the path the kernel reports. */
struct up_root *up_root_for_fd_mask(int fd, const struct stat *st, uint32_t below) {
    char path[4096];
    bool have_path = false;
    for (int i = 0; i < root_count; i++) {
        struct up_root *r = &roots[i];
        if (r->dev != st->st_dev) continue;
        if (below & (1u << i)) return r;
        if (!have_path) {
            if (!up_fd_path(fd, path, sizeof path)) return r->mount_root ? r : NULL;
            have_path = true;
        }
        if (path_below(r, path)) return r;
    }
    return NULL;
}

struct up_root *up_root_for_fd(int fd, const struct stat *st, int dirfd, const char *path_hint) {
    char path[4096];
    bool have_path = false;
    for (int i = 0; i < root_count; i++) {
        struct up_root *r = &roots[i];
        if (r->dev != st->st_dev) continue;
        if (hint_below_mount_root(r, path_hint) || name_below(r, dirfd, path_hint)) return r;
        if (!have_path) {
            if (!up_fd_path(fd, path, sizeof path)) return r->mount_root ? r : NULL;
            have_path = true;
        }
        if (path_below(r, path)) return r;
    }
    return NULL;
}

void up_roots_after_fork_child(void) {
    for (int i = 0; i < root_count; i++) dk_mu_reinit(&roots[i].mu); /* (a half-made probe left probed false) */
    if (pthread_mutex_trylock(&dirfd_mu) == 0) { /* not held at the fork: the cache is whole */
        pthread_mutex_unlock(&dirfd_mu);
        return;
    }
    dk_mu_reinit(&dirfd_mu); /* (marked since session 15: a mark of the forking thread goes too) */
    __atomic_add_fetch(&dirfd_gen, 1, __ATOMIC_ACQ_REL);
    for (unsigned i = 0; i < UP_DIRFD_SLOTS; i++) verdict_clear(&dirfd_cache[i]);
    dk_seq_after_fork(&dirfd_seq); /* even: held at the fork, odd then */
}

void up_root_probe(struct up_root *r) {
    if (__atomic_load_n(&r->probed, __ATOMIC_ACQUIRE)) return;
    dk_mu_lock(&r->mu);
    if (!r->probed) {
        DK_CRASH_POINT("managed.root_probe.locked"); /* shim_fork_held_locks' cue */
        int dfd = dk_ifd_openat(AT_FDCWD, r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        int rc = dfd >= 0 ? dk_medium_probe(dfd, DK_PROBE_BASIC, &r->medium) : -errno;
        if (dfd >= 0) dk_libc()->close(dfd);
        if (rc != 0) {
            dk_log("cannot probe the medium of %s (%s); treating it as a page-cache file system", r->path,
                   dk_strerror(-rc));
            r->medium.medium = DK_MEDIUM_PAGECACHE;
        }
        r->persist_as = dk_cfg.persist == DK_PERSIST_FLUSH ? DK_MEDIUM_DAX : r->medium.medium;
        r->clone_min_bytes = dk_cfg.clone_min_bytes ? dk_cfg.clone_min_bytes
                                                    : dk_medium_clone_min_bytes(&r->medium);
        /* Where the kernel loses zeroing of shared blocks, only an explicit DAXKIT_CLONE_MIN_BYTES clones. */
        bool unsafe = r->medium.clone_zero_lost && !dk_cfg.clone_min_bytes;
        if (!r->medium.reflink || unsafe) r->clone_min_bytes = UINT64_MAX;
        /* Strict mode on the page cache publishes its appends by copy unless DAXKIT_CLONE_MIN_BYTES says
         * otherwise: its log makes them durable, and their apply is a pwrite into the page cache as an
         * overwrite's is (strict.c). A clone wrote the staged range back synchronously inside the append
         * (FICLONERANGE writes its source back first), left the file's pages out of the page cache -- each
         * later overwrite then allocated its page -- and the file marked reflinked. Measured on XFS over a
         * RAM loop (docs/benchmarks.md, "Strict mode, session 10"): 1 MiB appends with fdatasync every 1,
         * CPU per append 1.60-1.73 ms by clone, 0.73-0.80 ms by copy; 4 KiB overwrites of a file so made,
         * fsync every 1, 26.8 -> 25.9-26.0 us per write, CPU 17.1-18.8 -> 14.6-16.0 us (the kernel's
         * 26.6-26.8 us, CPU 13.9-14.4). */
        if (dk_cfg.mode == DK_MODE_STRICT && r->persist_as == DK_MEDIUM_PAGECACHE && !dk_cfg.clone_min_bytes)
            r->clone_min_bytes = UINT64_MAX;
        dk_log_verbose("%s: medium %s (%s)%s, reflink %s, clone from %llu bytes", r->path,
                       dk_medium_name(r->medium.medium), r->medium.fs_name,
                       dk_cfg.persist == DK_PERSIST_FLUSH ? ", persistence emulated as dax" : "",
                       r->medium.reflink ? "yes" : "no", (unsigned long long)r->clone_min_bytes);
        __atomic_store_n(&r->probed, true, __ATOMIC_RELEASE);
    }
    dk_mu_unlock(&r->mu);
}

/* The program removes a managed root (review 11, finding 6): `rm -rf ROOT` under daxkit listed ROOT without
 * its hidden area (shim/meta.c: readdir), removed what it saw, and its rmdir(ROOT) failed with ENOTEMPTY --
 * the area stayed, left empty by earlier processes, or holding the strict log and pool lock this very
 * process made for its own logged unlinks. When the kernel answers ENOTEMPTY for a root whose area holds
 * nothing but this process's files (names "<tag>.", the pool's tag) and empty directories (another
 * process's files, or a file of the root left, keep the kernel's answer), the process lets its log and pool
 * of that root go (strict: applied and durable first) and the area is removed; the shim then asks the
 * kernel again. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/log.h"
#include "common/internal_fd.h"
#include "oplog/oplog.h"
#include "shim/libc.h"
#include "upath/inflight.h"
#include "upath/internal.h"

#define AREA ".daxkit"

/* A user's in-flight registry (inflight.c): slots of threads, no data. It goes with the area when everything
 * else there is this process's; flagged removed first, so the processes that map it (this one too) attach
 * the one made next instead of watching the unlinked file (review 14, finding 1). */
static bool registry(const char *name) {
    size_t n = strlen(name);
    return !strncmp(name, "inflight.", 9) && n > 13 && !strcmp(name + n - 4, ".reg");
}

static void remove_registries(int afd) {
    const struct dk_libc *c = dk_libc();
    DIR *d = dk_ifd_opendirat(afd, ".");
    if (!d) return;
    for (struct dirent *e; (e = c->readdir(d));) {
        if (!registry(e->d_name)) continue;
        up_inflight_registry_removing(afd, e->d_name);
        c->unlinkat(afd, e->d_name, 0);
    }
    c->closedir(d);
}

/* A parked log or staging file (docs/oplog.md "Parked logs": a clean exit's, for the next process) holds no
 * record: it goes now, a log unless a process holds it (its parker still ending, an adopter taking it); a
 * parked staging file whatever happens to its log (an adopter without one makes one). True when gone. */
static bool parked_removed(int afd, const char *name) {
    const struct dk_libc *c = dk_libc();
    if (!dk_oplog_parked_name(name)) return false;
    size_t n = strlen(name);
    if (n <= 4 || strcmp(name + n - 4, ".log") != 0) return c->unlinkat(afd, name, 0) == 0 || errno == ENOENT;
    int fd = dk_ifd_openat(afd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return errno == ENOENT;
    bool gone = c->flock(fd, LOCK_EX | LOCK_NB) == 0 && c->unlinkat(afd, name, 0) == 0; /* removed under its lock */
    c->close(fd);
    return gone;
}

/* Every entry of the area is ours (tag), a parked file (removed here) or an empty directory (atomic: removed
 * here). */
static bool area_only_ours(int afd, const char *tag) {
    const struct dk_libc *c = dk_libc();
    DIR *d = dk_ifd_opendirat(afd, ".");
    if (!d) return false;
    size_t tn = tag ? strlen(tag) : 0;
    bool ours = true;
    for (struct dirent *e; ours && (e = c->readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (tag && !strncmp(e->d_name, tag, tn) && e->d_name[tn] == '.') continue;
        if (registry(e->d_name)) continue; /* removed with the area (below) */
        if (parked_removed(afd, e->d_name)) continue;
        ours = c->unlinkat(afd, e->d_name, AT_REMOVEDIR) == 0; /* an empty directory goes; anything else stays */
    }
    c->closedir(d);
    return ours;
}

bool up_area_release(struct up_root *r) {
    const struct dk_libc *c = dk_libc();
    int rfd = dk_ifd_openat(AT_FDCWD, r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (rfd < 0) return false;
    int afd = dk_ifd_openat(rfd, AREA, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    bool gone = false;
    if (afd >= 0 && area_only_ours(afd, up_stage_tag(r)) && up_strict_release_root(r) && up_stage_release_root(r)) {
        remove_registries(afd);
        gone = c->unlinkat(rfd, AREA, AT_REMOVEDIR) == 0;
        if (gone) dk_log_verbose("%s: removed with its %s area (the program removes the directory)", r->path, AREA);
    }
    if (afd >= 0) c->close(afd);
    c->close(rfd);
    return gone;
}

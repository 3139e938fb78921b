/* Logs named by their file (DAXKIT_ATOMIC files): <root>/.daxkit/atomic/<key>.alog, where the key is the
 * file's handle from name_to_handle_at (inode and generation: a file created later on a reused inode
 * number gets another key), or "i<dev>-<ino>" where the file system gives no handles. The log follows the
 * file through renames; a new file under an old name gets a log of its own. The header keeps the key and
 * the last path as a hint; recovery (start-up, `daxkit recover`) opens the file by the hint when its key
 * still matches, else walks the root for it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "common/area.h"
#include "common/dk.h"
#include "common/fhandle.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "persist/persist.h"
#include "shim/libc.h"

#define NAMED_WALK_DEPTH_MAX 8

static int key_of_fd(int fd, char *key, size_t key_bytes) {
    struct dk_fhandle fh;
    if (dk_fhandle_of_fd(fd, &fh) == 0) {
        const struct file_handle *h = &fh.u.h;
        size_t used = (size_t)snprintf(key, key_bytes, "h%x-", (unsigned)h->handle_type);
        for (unsigned i = 0; i < h->handle_bytes && used + 3 < key_bytes; i++)
            used += (size_t)snprintf(key + used, key_bytes - used, "%02x", (unsigned char)h->f_handle[i]);
        return 0;
    }
    struct stat st;
    if (DK_REAL(fstat)(fd, &st) != 0) return -errno;
    snprintf(key, key_bytes, "i%llx-%llx", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    return 0;
}

int alog_file_key(int fd, char *key, size_t key_bytes) {
    DK_ERRNO_SAVE;
    int rc = key_of_fd(fd, key, key_bytes);
    DK_ERRNO_RESTORE;
    return rc;
}

int alog_named_log_name(int fd, char *name, size_t name_bytes) {
    char key[400];
    DK_ERRNO_SAVE;
    int rc = key_of_fd(fd, key, sizeof key);
    DK_ERRNO_RESTORE;
    if (rc) return rc;
    return snprintf(name, name_bytes, "%s.alog", key) < (int)name_bytes ? 0 : -ENAMETOOLONG;
}

int alog_named_area_open(const char *root, int *dirfd) {
    int rfd = dk_ifd_openat(AT_FDCWD, root, O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0);
    if (rfd < 0) return -errno;
    int rc = 0;
    rc = dk_area_mkdir(rfd, ".daxkit"); /* every user's who may write root (common/area.h) */
    if (!rc) rc = dk_area_mkdir(rfd, ALOG_NAMED_AREA);
    if (!rc && (*dirfd = dk_ifd_openat(rfd, ALOG_NAMED_AREA, O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0)) < 0) rc = -errno;
    DK_REAL(close)(rfd);
    return rc;
}

int alog_named_set_hint(struct alog_file *f, const char *path, const char *log_name) {
    char *h = (char *)f->hdr;
    size_t pn = strlen(path) + 1, kn = strlen(log_name) + 1;
    if (kn <= ALOG_HDR_KEY_BYTES) dk_copy_flush(h + ALOG_HDR_KEY_OFF, log_name, kn);
    if (pn <= ALOG_HDR_HINT_BYTES) dk_copy_flush(h + ALOG_HDR_HINT_OFF, path, pn);
    else dk_copy_flush(h + ALOG_HDR_HINT_OFF, "", 1); /* too long: recovery walks the root */
    return alog_durable_log_all(f);
}

/* true when `path` is a regular file whose log name is `log_name`. */
static bool path_has_log(const char *path, const char *log_name) {
    int fd = dk_ifd_openat(AT_FDCWD, path, O_PATH | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0) return false;
    struct stat st;
    char name[512];
    bool same = DK_REAL(fstat)(fd, &st) == 0 && S_ISREG(st.st_mode) && alog_named_log_name(fd, name, sizeof name) == 0 &&
                strcmp(name, log_name) == 0;
    DK_REAL(close)(fd);
    return same;
}

/* Depth-first search of dir for the file with inode (dev, ino) and log name log_name; skips .daxkit. Each
 * directory's descriptor is the library's (dk_ifd_opendirat): library start-up runs this walk in the program's
 * process, where glibc's opendir took the lowest free number outside any window (review 24). */
static bool walk_for(const char *dir, int depth, uint64_t dev, uint64_t ino, const char *log_name, char *out,
                     size_t out_bytes) {
    DIR *d = dk_ifd_opendirat(AT_FDCWD, dir);
    if (!d) return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".daxkit")) continue;
        char p[4400];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        struct stat st;
        if (DK_REAL(fstatat)(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_ino == ino && (uint64_t)st.st_dev == dev &&
            path_has_log(p, log_name)) {
            found = snprintf(out, out_bytes, "%s", p) < (int)out_bytes;
        } else if (S_ISDIR(st.st_mode) && depth < NAMED_WALK_DEPTH_MAX) {
            found = walk_for(p, depth + 1, dev, ino, log_name, out, out_bytes);
        }
    }
    closedir(d);
    return found;
}

/* The file of log `name` in area afd: by the header's hint, else by a walk of root. */
static bool find_file(int afd, const char *name, const char *root, char *path, size_t path_bytes) {
    int fd = dk_ifd_openat(afd, name, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return false;
    struct alog_phdr h;
    char hint[ALOG_HDR_HINT_BYTES];
    bool ok = DK_REAL(pread)(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
              DK_REAL(pread)(fd, hint, sizeof hint, ALOG_HDR_HINT_OFF) == (ssize_t)sizeof hint;
    DK_REAL(close)(fd);
    if (!ok) return false;
    hint[sizeof hint - 1] = 0;
    if (hint[0] && path_has_log(hint, name)) return snprintf(path, path_bytes, "%s", hint) < (int)path_bytes;
    return walk_for(root, 0, h.data_dev, h.data_ino, name, path, path_bytes);
}

int alog_recover_named(const char *root, struct alog_dir_report *rep) {
    DIR *d = alog_area_open(root, ALOG_NAMED_AREA);
    if (!d) return errno == ENOENT ? 0 : -errno;
    struct dirent *e;
    size_t n;
    bool tracked; /* always tracked here: opened with alog_open_tracked_at */
    char area[4200];
    snprintf(area, sizeof area, "%s/" ALOG_NAMED_AREA, root);
    while ((e = alog_area_next(d, area, rep, &n, &tracked))) {
        char path[4400];
        if (!find_file(dirfd(d), e->d_name, root, path, sizeof path)) {
            /* Removed, or moved out of the root: kept as <key>.orphan (for a person to look at), so that
             * later start-ups do not walk the root for it again. */
            char orphan[300];
            snprintf(orphan, sizeof orphan, "%.*s.orphan", (int)n, e->d_name);
            DK_REAL(renameat)(dirfd(d), e->d_name, dirfd(d), orphan);
            dk_log("%s/" ALOG_NAMED_AREA "/%s: its file is not in %s any more (removed, or moved out): log kept as %s",
                   root, e->d_name, root, orphan);
            rep->files_gone++;
            continue;
        }
        struct daxkit_atomic_options o;
        daxkit_atomic_options_init(&o);
        o.checkpoint_interval_us = 0;
        o.policy = DAXKIT_ATOMIC_JOURNAL; /* no thread; recovery applies whatever the log holds */
        struct alog_where w = {.root = root, .log_name = e->d_name};
        struct alog_file *f;
        int rc = alog_open_tracked_at(path, &w, &o, &f);
        if (!rc) rc = alog_close_sized(f, NULL);
        if (rc) {
            rep->failed++;
            dk_log("DAXKIT_ATOMIC recovery of %s failed: %s", path, dk_strerror(-rc));
        } else {
            rep->recovered++;
        }
    }
    closedir(d);
    return 0;
}

/* `daxkit recover DIR`: finishes what DAXKIT_ATOMIC processes that died left in DIR and its subdirectories:
 * each <d>/.daxkit/<name>.alog whose lock is free and that still has work (a tracked size, or valid entries)
 * is opened through the engine -- which recovers <d>/<name> -- and closed cleanly (the file cut to its
 * committed size, the log removed). Logs in use (locked) and idle ones are left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "common/area.h"
#include "common/internal_fd.h"
#include "shim/libc.h"

#define ALOG_RECOVER_DEPTH_MAX 8

/* 1: the log needs recovery (a tracked size, a committed journal, or a valid entry); 0: idle or in use; -errno
 * (-EPROTONOSUPPORT: a version this library does not read). */
int alog_log_needs_work(int area_fd, const char *area_path, const char *log_name, bool *tracked) {
    struct stat st; /* another user's log is that user's to recover (common/area.h): left as in use */
    if (DK_REAL(fstatat)(area_fd, log_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !dk_area_file_ours(&st)) return 0;
    int fd = dk_ifd_openat(area_fd, log_name, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int rc = 0;
    struct alog_phdr h;
    bool log = DK_REAL(flock)(fd, LOCK_EX | LOCK_NB) == 0 && DK_REAL(pread)(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
               h.magic == ALOG_MAGIC; /* not in use, and a log */
    if (log && !alog_version_known(h.version)) {
        char what[4600];
        snprintf(what, sizeof what, "%s/%s", area_path, log_name);
        rc = alog_version_refuse(&h, what); /* what its entries mean is unknown here: not read */
    } else if (log) {
        *tracked = h.size_mode == ALOG_SIZE_TRACKED;
        rc = *tracked || alog_jrnl_unapplied(&h) != 0; /* a committed journal not replayed yet */
        struct alog_pent p;
        for (uint64_t i = 0; !rc && i < h.entry_count; i++) {
            if (DK_REAL(pread)(fd, &p, sizeof p, (off_t)(ALOG_HEADER_BYTES + i * ALOG_ENTRY_BYTES)) != (ssize_t)sizeof p)
                break;
            rc = alog_pent_pending(&h, &p);
        }
    }
    DK_REAL(close)(fd); /* drops our lock: the engine takes it again */
    return rc;
}

DIR *alog_area_open(const char *dir, const char *area) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, area);
    return dk_ifd_opendirat(AT_FDCWD, path);
}

struct dirent *alog_area_next(DIR *d, const char *area_path, struct alog_dir_report *rep, size_t *key_len,
                              bool *tracked) {
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".alog") != 0) continue;
        rep->logs++;
        *tracked = false;
        int work = alog_log_needs_work(dirfd(d), area_path, e->d_name, tracked);
        if (work == -EPROTONOSUPPORT) rep->failed++, rep->refused++;
        if (work <= 0) continue;
        *key_len = n - 5;
        return e;
    }
    return NULL;
}

static void recover_area(const char *dir, struct alog_dir_report *rep) {
    DIR *d = alog_area_open(dir, ".daxkit");
    if (!d) return;
    struct dirent *e;
    size_t n;
    bool tracked;
    char area[4200];
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    while ((e = alog_area_next(d, area, rep, &n, &tracked))) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)n, e->d_name);
        struct stat st;
        if (DK_REAL(stat)(path, &st) != 0) {
            rep->files_gone++; /* renamed or removed since: the log stays (docs/atomic.md) */
            continue;
        }
        struct daxkit_atomic_options o;
        daxkit_atomic_options_init(&o);
        o.checkpoint_interval_us = 0;
        struct alog_file *f;
        int rc = tracked ? alog_open_tracked(path, &o, &f) : alog_open(path, &o, &f);
        if (!rc) rc = alog_close_sized(f, NULL);
        if (rc) {
            rep->failed++;
            fprintf(stderr, "daxkit recover: %s: %s\n", path, strerror(-rc));
        } else {
            rep->recovered++;
        }
    }
    closedir(d);
}

static void walk(const char *dir, int depth, struct alog_dir_report *rep) {
    recover_area(dir, rep);
    if (depth >= ALOG_RECOVER_DEPTH_MAX) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        walk(sub, depth + 1, rep);
    }
    closedir(d);
}

int alog_recover_dir(const char *dir, struct alog_dir_report *rep) {
    *rep = (struct alog_dir_report){0};
    DIR *d = opendir(dir);
    if (!d) return -errno;
    closedir(d);
    walk(dir, 0, rep);
    return alog_recover_named(dir, rep); /* DAXKIT_ATOMIC logs when dir is a managed root */
}

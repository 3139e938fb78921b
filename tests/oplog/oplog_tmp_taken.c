/* Description: a recoverer that finds a log's `.tmp` in the instant between its creation and its creator's
 * flock takes it for a dead creator's (review 11, finding 1): it either still holds the lock when the creator
 * asks for it (the creator's flock fails) or has unlinked the name already (the creator's rename fails with
 * ENOENT). Every daxkit process's start-up recovers the area, so this happened whenever a process started
 * while another made its strict log: dk_oplog_open failed and the program's first strict write with EIO.
 * Here the window is held open by the crash-point hook at "oplog.open.tmp_unlocked", in which this process
 * plays the recoverer through its own descriptor (flock belongs to the open file description):
 *   held      the recoverer locks the .tmp and keeps the lock until the open has returned;
 *   unlinked  the recoverer runs dk_oplog_find_orphans, which locks and unlinks the .tmp and lets go.
 * Each case: dk_oplog_open must succeed, its log must hold a record written after it, and a second
 * find_orphans must leave the live log alone. Exit 0 pass, 1 fail. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "oplog/oplog.h"
#include "records.h"

static char dir[64];
static int mode; /* 0 held, 1 unlinked */
static int hits, held_fd = -1;

/* The .tmp in dir, opened, or -1. */
static int open_tmp(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int fd = -1;
    while (d && fd < 0 && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 4 && strcmp(e->d_name + n - 4, ".tmp") == 0) {
            char p[400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            fd = open(p, O_RDONLY | O_CLOEXEC);
        }
    }
    if (d) closedir(d);
    return fd;
}

static void hook(const char *site) {
    if (strcmp(site, "oplog.open.tmp_unlocked") != 0 || hits++ > 0) return; /* the first open's window only */
    if (mode == 0) {
        held_fd = open_tmp();
        if (held_fd >= 0 && flock(held_fd, LOCK_EX | LOCK_NB) != 0) close(held_fd), held_fd = -1;
    } else {
        dk_oplog_find_orphans(dir, NULL, NULL, NULL);
    }
}

static int count_cb(const struct dk_oplog_record *r, void *ctx) {
    uint32_t w, i;
    *(int *)ctx += rec_intact(r, &w, &i) ? 1 : 1000;
    return 0;
}

static int one(int m) {
    static const char *const names[] = {"held", "unlinked"};
    mode = m, hits = 0, held_fd = -1;
    dk_crashpoint_set_hook(hook);
    struct dk_oplog *log = NULL;
    int rc = dk_oplog_open(dir, "taken", DK_OPLOG_BYTES_MIN, &log);
    dk_crashpoint_set_hook(NULL);
    int window = m == 0 ? held_fd >= 0 : hits > 0; /* the recoverer acted inside the window */
    if (held_fd >= 0) close(held_fd);
    if (!window) return printf("FAIL %s: the window was not reached (hook hits %d)\n", names[m], hits), 1;
    if (rc != 0) return printf("FAIL %s: dk_oplog_open -> %s\n", names[m], strerror(-rc)), 1;
    int bad = 0;
    if (rec_append(log, 0, 7, 100, NULL) != 0) bad = printf("FAIL %s: append after the open\n", names[m]);
    int records = 0;
    if (!bad && (dk_oplog_scan(dk_oplog_path(log), count_cb, &records, NULL) < 0 || records != 1))
        bad = printf("FAIL %s: the log holds %d intact records, expected 1\n", names[m], records);
    if (!bad && dk_oplog_find_orphans(dir, NULL, NULL, NULL) != 0)
        bad = printf("FAIL %s: a later recoverer took the live log\n", names[m]);
    if (!bad && access(dk_oplog_path(log), F_OK) != 0) bad = printf("FAIL %s: the live log is gone\n", names[m]);
    if (!bad) printf("ok %s: the open took the next name (%s)\n", names[m], strrchr(dk_oplog_path(log), '/') + 1);
    dk_oplog_close(log, 1);
    return bad != 0;
}

int main(void) {
    snprintf(dir, sizeof dir, "/dev/shm/dk-oplog-taken.XXXXXX");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    int bad = one(0) | one(1);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) { /* nothing may be left: no log, no .tmp */
        if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) continue;
        bad |= printf("FAIL: left behind: %s\n", e->d_name) > 0;
        char p[400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    return bad ? 1 : 0;
}

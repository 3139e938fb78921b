/* Description: dk_oplog_find_orphans is safe when recoverers race: 24 logs are left by children that exit
 * without closing, 2 more stay owned by a live process; then 4 processes run find_orphans on the directory at
 * once, each callback scanning, recording the log's name in a shared O_APPEND file and unlinking it. Every
 * orphan must be handled exactly once, every record of it recovered, and the live logs never touched.
 * Exit 0 pass, 1 fail. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oplog/oplog.h"
#include "records.h"

#define ORPHANS 24
#define RECOVERERS 4
#define RECORDS 20

static char dir[64], handled_path[128];

static int count_cb(const struct dk_oplog_record *r, void *ctx) {
    uint32_t w, i;
    *(int *)ctx += rec_intact(r, &w, &i) ? 1 : 1000;
    return 0;
}

static int recover_cb(const char *path, void *ctx) {
    int records = 0;
    dk_oplog_scan(path, count_cb, &records, NULL);
    char line[600];
    int n = snprintf(line, sizeof line, "%s %d\n", strrchr(path, '/') + 1, records);
    int fd = open(handled_path, O_WRONLY | O_APPEND);
    if (write(fd, line, (size_t)n) != n) return -5;
    close(fd);
    usleep(2000); /* widen the window in which the others see the name */
    return unlink(path) == 0 ? 0 : -1;
}

int main(void) {
    snprintf(dir, sizeof dir, "/dev/shm/dk-oplog-race.XXXXXX");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(handled_path, sizeof handled_path, "%s/handled", dir);
    close(open(handled_path, O_CREAT | O_WRONLY, 0644));
    for (int c = 0; c < ORPHANS; c++)
        if (fork() == 0) {
            struct dk_oplog *log;
            if (dk_oplog_open(dir, "race", DK_OPLOG_BYTES_MIN, &log) != 0) _exit(1);
            for (uint32_t i = 0; i < RECORDS; i++) rec_append(log, 0, i, 100, NULL);
            _exit(0);
        }
    while (wait(NULL) > 0) {}
    struct dk_oplog *live[2];
    for (int i = 0; i < 2; i++) dk_oplog_open(dir, "race", DK_OPLOG_BYTES_MIN, &live[i]);
    for (int r = 0; r < RECOVERERS; r++)
        if (fork() == 0) _exit(dk_oplog_find_orphans(dir, "race", recover_cb, NULL) < 0);
    int status, bad = 0;
    while (wait(&status) > 0) bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    FILE *f = fopen(handled_path, "r");
    char name[512];
    int records, handled = 0, wrong = 0;
    while (fscanf(f, "%511s %d", name, &records) == 2) handled++, wrong += records != RECORDS;
    fclose(f);
    for (int i = 0; i < 2; i++) bad |= access(dk_oplog_path(live[i]), F_OK) != 0;
    printf("%d orphans handled by %d racing recoverers (%d expected), %d with wrong records, live logs %s\n",
           handled, RECOVERERS, ORPHANS, wrong, bad ? "DISTURBED or a recoverer failed" : "intact");
    for (int i = 0; i < 2; i++) dk_oplog_close(live[i], 1);
    unlink(handled_path);
    rmdir(dir);
    return handled == ORPHANS && wrong == 0 && !bad ? 0 : 1;
}

/* Strict recovery places a record by (st_dev, st_ino); after a reboot that renumbered the log's file
 * system it finds the file by inode number -- only for records of the device the log's header recorded for
 * its directory (review finding: a record of any other device went into whatever file had its inode
 * number, and the search also walked into .daxkit). A log in <dir>/.daxkit whose header says the directory
 * was on device OLD (rewritten here: "the file system was renumbered") holds three inline writes:
 *   1. device OTHER (neither OLD nor the directory's now), inode of `victim`: not replayed, counted other_fs;
 *   2. device OLD, inode of `victim`: replayed into victim (the renumbering case);
 *   3. device OLD, inode of `.daxkit/decoy`: not found (the area is never searched), counted files_gone.
 * Then the same with a header that records no device (a log from before): record 2 is not translated.
 * Exit 0 pass, 1 fail. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oplog/format.h"
#include "oplog/oplog.h"
#include "upath/internal.h"

#define DEV_OLD 0x7e5700001ull   /* not any device here */
#define DEV_OTHER 0x7e5700002ull

#include "../harness/check.h"

static void write_file(const char *path, char fill, size_t n) {
    char buf[4096];
    memset(buf, fill, sizeof buf);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, buf, n) != (ssize_t)n || close(fd) != 0) perror(path), exit(1);
}

static uint64_t ino_of(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) perror(path), exit(1);
    return st.st_ino;
}

/* The byte at `off` of the file (-1 when it cannot be read). */
static int byte_at(const char *path, off_t off) {
    unsigned char c;
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? pread(fd, &c, 1, off) : -1;
    if (fd >= 0) close(fd);
    return n == 1 ? c : -1;
}

static void append_write(struct dk_oplog *log, uint64_t dev, uint64_t ino, uint64_t off, char fill) {
    char data[16];
    memset(data, fill, sizeof data);
    struct dk_oplog_op op = {.dev = dev, .ino = ino, .file_offset = off, .length = sizeof data};
    int rc = dk_oplog_append(log, DK_OPLOG_WRITE_INLINE, &op, data, sizeof data, NULL);
    if (rc != 0) printf("append: %d\n", rc), exit(1);
}

/* Rewrites area_dev in every valid header slot of the (closed) log file. */
static void set_area_dev(const char *log_path, uint64_t area_dev) {
    struct oplog_header h[DK_OPLOG_HEADER_LINES];
    int fd = open(log_path, O_RDWR);
    if (fd < 0 || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) perror(log_path), exit(1);
    for (unsigned i = 0; i < DK_OPLOG_HEADER_LINES; i++) {
        if (h[i].magic != OPLOG_MAGIC || h[i].crc != oplog_header_crc(&h[i])) continue;
        h[i].area_dev = area_dev;
        h[i].crc = oplog_header_crc(&h[i]);
    }
    if (pwrite(fd, h, sizeof h, 0) != (ssize_t)sizeof h || fsync(fd) != 0 || close(fd) != 0) perror(log_path), exit(1);
}

/* One log with the three records, its header's area_dev set to `header_area_dev`, recovered. */
static struct up_strict_report run(const char *dir, uint64_t header_area_dev) {
    char area[512], victim[600], decoy[600];
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(decoy, sizeof decoy, "%s/decoy", area);
    write_file(victim, 'a', 4096);
    write_file(decoy, 'd', 4096);
    struct dk_oplog *log;
    int rc = dk_oplog_open(area, "strict", DK_OPLOG_BYTES_MIN, &log);
    if (rc != 0) printf("dk_oplog_open: %d\n", rc), exit(1);
    append_write(log, DEV_OTHER, ino_of(victim), 0, 'X');
    append_write(log, DEV_OLD, ino_of(victim), 100, 'R');
    append_write(log, DEV_OLD, ino_of(decoy), 0, 'Z');
    char path[4200];
    snprintf(path, sizeof path, "%s", dk_oplog_path(log));
    dk_oplog_close(log, 0); /* its lock is free: a dead owner's log */
    set_area_dev(path, header_area_dev);
    int area_fd = open(area, O_RDONLY | O_DIRECTORY);
    struct up_strict_report rep = {0};
    CHECK(up_strict_recover(dir, area_fd, "strict", &rep) == 0, "up_strict_recover");
    close(area_fd);
    CHECK(access(path, F_OK) != 0, "the log is still there after recovery");
    CHECK(byte_at(victim, 0) == 'a', "a record of another device was replayed into a same-inode file: %c",
          byte_at(victim, 0));
    int renumbered = byte_at(victim, 100) == 'R';
    CHECK(renumbered == (header_area_dev == DEV_OLD), "the record of the renumbered device was%s replayed",
          renumbered ? "" : " not");
    CHECK(byte_at(decoy, 0) == 'd', "a record was replayed into a file inside .daxkit: %c", byte_at(decoy, 0));
    CHECK(rep.logs == 1 && rep.records == 3, "%lu logs, %lu records", (unsigned long)rep.logs,
          (unsigned long)rep.records);
    printf("header area_dev %#llx: replayed %lu, other file system %lu, gone %lu, failed %lu; victim[100] '%c'\n",
           (unsigned long long)header_area_dev, (unsigned long)rep.replayed, (unsigned long)rep.other_fs,
           (unsigned long)rep.files_gone, (unsigned long)rep.failed, byte_at(victim, 100));
    unlink(victim);
    unlink(decoy);
    return rep;
}

/* A log holding a record of a type this version does not know (a newer daxkit's) beside a write it knows:
 * nothing is replayed and the log is kept (review 8, finding 17: the known write was replayed and the log
 * kept, so a later recovery by the newer version would redo it over whatever was written in between). */
static void run_unknown_type(const char *dir) {
    char area[512], victim[600];
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_file(victim, 'a', 4096);
    struct stat st;
    if (stat(victim, &st) != 0) perror(victim), exit(1);
    struct dk_oplog *log;
    int rc = dk_oplog_open(area, "strict", DK_OPLOG_BYTES_MIN, &log);
    if (rc != 0) printf("dk_oplog_open: %d\n", rc), exit(1);
    append_write(log, st.st_dev, st.st_ino, 0, 'K');
    struct dk_oplog_op op = {.dev = st.st_dev, .ino = st.st_ino};
    CHECK(dk_oplog_append(log, DK_OPLOG_WRITE_DELTA + 1, &op, NULL, 0, NULL) == 0, "append of a new type");
    char path[4200];
    snprintf(path, sizeof path, "%s", dk_oplog_path(log));
    dk_oplog_close(log, 0);
    int area_fd = open(area, O_RDONLY | O_DIRECTORY);
    struct up_strict_report rep = {0};
    CHECK(up_strict_recover(dir, area_fd, "strict", &rep) == 0, "up_strict_recover");
    close(area_fd);
    CHECK(access(path, F_OK) == 0, "a log with a record type this version does not know was removed");
    CHECK(byte_at(victim, 0) == 'a', "a log with an unknown record type was replayed in part: victim[0] '%c'",
          byte_at(victim, 0));
    CHECK(rep.failed >= 1, "recovery of a log it cannot read counted no failure");
    printf("unknown record type: log kept, nothing replayed (victim[0] '%c'), failed %lu\n", byte_at(victim, 0),
           (unsigned long)rep.failed);
    unlink(path);
    unlink(victim);
}

int main(void) {
    char dir[] = "/dev/shm/dk-strict-recover-dev.XXXXXX", area[64];
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    if (mkdir(area, 0700) != 0) return perror(area), 1;

    /* The log's file system renumbered (OLD -> the directory's device now). */
    struct up_strict_report r = run(dir, DEV_OLD);
    CHECK(r.replayed == 1 && r.other_fs == 1 && r.files_gone == 1 && r.failed == 0,
          "renumbered: replayed %lu (1), other_fs %lu (1), gone %lu (1)", (unsigned long)r.replayed,
          (unsigned long)r.other_fs, (unsigned long)r.files_gone);
    /* A log that recorded no device: nothing is translated (records 1 and 2 of devices not here). */
    r = run(dir, 0);
    CHECK(r.replayed == 0 && r.other_fs == 3 && r.files_gone == 0,
          "no recorded device: replayed %lu (0), other_fs %lu (3), gone %lu (0)", (unsigned long)r.replayed,
          (unsigned long)r.other_fs, (unsigned long)r.files_gone);

    run_unknown_type(dir);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: %s failed\n", cmd);
    printf("%s: %lu failures\n", dir, dk_check_failures);
    return dk_check_failures ? 1 : 0;
}

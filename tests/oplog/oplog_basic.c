/* Description: the operation log's API end to end on one directory (argv[1], default a fresh directory in
 * /dev/shm): crc32c against the RFC 3720 vectors (table and SSE4.2 versions agree); records of every shape
 * (0..12,240 data bytes) scan back intact and in order; the log fills to -ENOSPC exactly at capacity; reset
 * hides every earlier record and the log is reused; every reset's header line names the log's tag and its
 * creation time (kept in DRAM since session 21, not read back from the other header line); a corrupted byte makes a record torn (reported, not
 * delivered) while records after it survive; a log whose owner died (a forked child that exits without
 * closing) is found by dk_oplog_find_orphans, a live one is not, an abandoned .tmp is removed; four threads
 * appending at once lose nothing; a 16 MiB log is allocated 2 MiB at a time as it fills, and scanning a fresh
 * one allocates nothing. Exit 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "oplog/format.h"
#include "oplog/oplog.h"
#include "records.h"

#include "../harness/check.h"

static void check_crc32c(void) {
    static const struct { const char *s; size_t n; int fill; uint32_t crc; } v[] = {
        {"123456789", 9, -1, 0xe3069283u}, {NULL, 32, 0x00, 0x8a9136aau}, {NULL, 32, 0xff, 0x62a8ab43u}};
    unsigned char buf[4096];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const void *p = v[i].s;
        if (!p) memset(buf, v[i].fill, v[i].n), p = buf;
        CHECK(dk_crc32c_sw(0, p, v[i].n) == v[i].crc, "sw vector %zu: %08x", i, dk_crc32c_sw(0, p, v[i].n));
        if (dk_crc32c_have_hw())
            CHECK(dk_crc32c_hw(0, p, v[i].n) == v[i].crc, "hw vector %zu: %08x", i, dk_crc32c_hw(0, p, v[i].n));
    }
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t n = 0; n < 300; n++) {
        uint32_t whole = dk_crc32c_sw(0, buf, n), split = dk_crc32c_sw(dk_crc32c_sw(0, buf, n / 3), buf + n / 3, n - n / 3);
        CHECK(whole == split, "sw chaining at n=%zu", n);
        if (dk_crc32c_have_hw()) CHECK(dk_crc32c_hw(0, buf, n) == whole, "hw != sw at n=%zu", n);
    }
}

struct collect {
    uint64_t count, bad, next_index, out_of_order;
    uint32_t writer_seen_max[8];
    uint64_t per_writer[8];
};

static int collect_cb(const struct dk_oplog_record *r, void *ctx) {
    struct collect *c = ctx;
    uint32_t w, i;
    if (!rec_intact(r, &w, &i) || w >= 8) {
        c->bad++;
        return 0;
    }
    if (c->per_writer[w] != i) c->out_of_order++; /* each writer's records appear in its own order */
    c->per_writer[w] = i + 1;
    c->count++;
    return 0;
}

static struct collect scan(const char *path, struct dk_oplog_scan_stats *st) {
    struct collect c = {0};
    int rc = dk_oplog_scan(path, collect_cb, &c, st);
    CHECK(rc == 0, "scan %s: %d", path, rc);
    return c;
}

static void check_shapes_fill_reset(const char *dir) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "basic", DK_OPLOG_BYTES_MIN, &log);
    CHECK(rc == 0, "open: %d", rc);
    if (rc) return;
    uint64_t cap = dk_oplog_lines_capacity(log);
    CHECK(cap == DK_OPLOG_BYTES_MIN / 64 - 2, "capacity %lu", (unsigned long)cap);
    uint32_t n = 0;
    uint64_t seq = 0;
    while ((rc = rec_append(log, 0, n, DK_OPLOG_DATA_BYTES_MAX, &seq)) == 0) {
        CHECK(seq >> 32 == 1, "seq %lx: generation 1 expected", (unsigned long)seq);
        n++;
    }
    CHECK(rc == -ENOSPC, "append past the end: %d", rc);
    CHECK(cap - dk_oplog_lines_used(log) < dk_oplog_record_lines(log, 85 * 48), "ENOSPC with %lu lines free", (unsigned long)(cap - dk_oplog_lines_used(log)));
    struct dk_oplog_scan_stats st;
    struct collect c = scan(dk_oplog_path(log), &st);
    CHECK(c.count == n && c.bad == 0 && c.out_of_order == 0, "scan: %lu of %u, %lu bad, %lu out of order",
          (unsigned long)c.count, n, (unsigned long)c.bad, (unsigned long)c.out_of_order);
    CHECK(st.records_torn == 0 && st.holes == 0 && st.generation == 1, "stats torn %lu holes %lu gen %lu",
          (unsigned long)st.records_torn, (unsigned long)st.holes, (unsigned long)st.generation);
    /* A record of every data length fits, one at a time after a reset. */
    unsigned char fixed[48] = {1}, data[DK_OPLOG_DATA_BYTES_MAX];
    memset(data, 0x5c, sizeof data);
    CHECK(dk_oplog_append(log, 0, fixed, NULL, 0, NULL) == -EINVAL, "type 0 accepted");
    CHECK(dk_oplog_append(log, 1, fixed, data, DK_OPLOG_DATA_BYTES_MAX + 1, NULL) == -EINVAL, "too long accepted");
    rc = dk_oplog_reset(log);
    CHECK(rc == 0 && dk_oplog_generation(log) == 2 && dk_oplog_lines_used(log) == 0, "reset: %d", rc);
    c = scan(dk_oplog_path(log), &st);
    CHECK(c.count == 0 && st.generation == 2, "after reset: %lu records, generation %lu", (unsigned long)c.count,
          (unsigned long)st.generation);
    for (uint32_t i = 0; i < 40; i++) CHECK(rec_append(log, 1, i, DK_OPLOG_DATA_BYTES_MAX, NULL) == 0, "append %u", i);
    c = scan(dk_oplog_path(log), &st);
    CHECK(c.count == 40 && c.bad == 0 && st.generation == 2 && st.records_torn == 0, "reuse: %lu records, %lu bad",
          (unsigned long)c.count, (unsigned long)c.bad);
    rc = dk_oplog_append(log, 7, fixed, data, DK_OPLOG_DATA_BYTES_MAX, &seq);
    CHECK(rc == 0, "longest record: %d", rc);
    /* A flipped byte in record 5's head makes it torn; the records after it still count. */
    int fd = open(dk_oplog_path(log), O_RDWR);
    uint64_t slot = dk_oplog_first_slot(log);
    for (uint32_t i = 0; i < 5; i++) slot += dk_oplog_record_lines(log, rec_data_len(1, i, DK_OPLOG_DATA_BYTES_MAX));
    off_t at = (off_t)((2 + slot) * 64 + 40);
    unsigned char b;
    CHECK(pread(fd, &b, 1, at) == 1, "pread");
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, at) == 1, "pwrite");
    close(fd);
    c = scan(dk_oplog_path(log), &st);
    /* 40 pattern records minus the torn one; the longest record is not a pattern record ("bad" here). */
    CHECK(c.count == 39 && c.bad == 1 && st.records_torn == 1 && st.holes == 1,
          "torn: %lu records, %lu other, %lu torn, %lu holes", (unsigned long)c.count, (unsigned long)c.bad,
          (unsigned long)st.records_torn, (unsigned long)st.holes);
    CHECK(dk_oplog_close(log, 1) == 0, "close+remove");
}

static void check_orphan_replay(const char *dir);

static void check_orphans(const char *dir) {
    struct dk_oplog *live;
    CHECK(dk_oplog_open(dir, "orph", DK_OPLOG_BYTES_MIN, &live) == 0, "open live");
    pid_t pid = fork();
    if (pid == 0) {
        struct dk_oplog *log;
        if (dk_oplog_open(dir, "orph", DK_OPLOG_BYTES_MIN, &log) != 0) _exit(2);
        for (uint32_t i = 0; i < 10; i++)
            if (rec_append(log, 3, i, DK_OPLOG_DATA_BYTES_MAX, NULL) != 0) _exit(3);
        _exit(0); /* dies owning the log: no close */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/orph.999999.0.tmp", dir);
    int fd = open(tmp, O_CREAT | O_WRONLY, 0600);
    close(fd);
    int n = dk_oplog_find_orphans(dir, "orph", NULL, NULL); /* the live log is not an orphan */
    CHECK(n == 1, "orphans: %d (1 expected: the dead child's)", n);
    CHECK(access(tmp, F_OK) != 0, "abandoned .tmp not removed");
    check_orphan_replay(dir);
    dk_oplog_close(live, 1);
}

static int orphan_cb(const char *path, void *ctx) {
    struct collect *c = ctx;
    struct collect got = scan(path, NULL);
    c->count += got.count, c->bad += got.bad;
    unlink(path);
    return 0;
}

static void check_orphan_replay(const char *dir) {
    struct collect c = {0};
    int n = dk_oplog_find_orphans(dir, "orph", orphan_cb, &c);
    CHECK(n == 1 && c.count == 10 && c.bad == 0, "orphan replay: %d logs, %lu records, %lu bad", n,
          (unsigned long)c.count, (unsigned long)c.bad);
    n = dk_oplog_find_orphans(dir, "orph", orphan_cb, &c);
    CHECK(n == 0, "after removal: %d orphans", n);
}

static long long allocated_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_blocks * 512 : -1;
}

/* A 16 MiB log is allocated 2 MiB at a time as the tail advances; a scan does not allocate the rest. */
static void check_growth(const char *dir) {
    struct dk_oplog *log;
    CHECK(dk_oplog_open(dir, "grow", 16u << 20, &log) == 0, "open 16 MiB");
    const char *path = dk_oplog_path(log);
    long long at_open = allocated_bytes(path);
    struct collect c = scan(path, NULL);
    long long after_scan = allocated_bytes(path);
    CHECK(c.count == 0, "fresh log has %lu records", (unsigned long)c.count);
    uint32_t n = 80000 / dk_oplog_record_lines(log, 0); /* 80,000 lines: the third 2 MiB step */
    for (uint32_t i = 0; i < n; i++) {
        int rc = rec_append(log, 2, i, 0, NULL);
        if (rc != 0) {
            CHECK(rc == 0, "append %u: %d", i, rc);
            break;
        }
    }
    long long grown = allocated_bytes(path);
    struct dk_oplog_scan_stats st;
    c = scan(path, &st);
    CHECK(c.count == n && c.bad == 0 && st.holes == 0, "grown log: %lu of %u records", (unsigned long)c.count, n);
    printf("16 MiB log: %lld KiB allocated at open, %lld after a scan, %lld after %u appends\n", at_open >> 10,
           after_scan >> 10, grown >> 10, n);
    /* Where the file system reports allocation (tmpfs, xfs, ext4 do), open and scan stay small. */
    if (at_open > 0) {
        CHECK(at_open <= (3ll << 20), "%lld bytes allocated at open", at_open);
        CHECK(after_scan <= (3ll << 20), "%lld bytes allocated after scanning a fresh log", after_scan);
        CHECK(grown >= (80000ll * 64) && grown <= (8ll << 20), "%lld bytes allocated after growth", grown);
    }
    dk_oplog_close(log, 1);
}

/* Extents of [0, end) of path flagged unwritten (FIEMAP), or -1 when the file system does not say. */
static int unwritten_extents(const char *path, uint64_t end) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    struct {
        struct fiemap fm;
        struct fiemap_extent ext[256];
    } q = {.fm = {.fm_start = 0, .fm_length = end, .fm_flags = FIEMAP_FLAG_SYNC, .fm_extent_count = 256}};
    int rc = ioctl(fd, FS_IOC_FIEMAP, &q);
    close(fd);
    if (rc != 0) return -1;
    int n = 0;
    for (unsigned i = 0; i < q.fm.fm_mapped_extents; i++) n += (q.ext[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN) != 0;
    return n;
}

/* A log with direct records (page cache): the allocation steps after the first are zero-written through
 * the O_DIRECT descriptor with RWF_DSYNC (counted by the test build), and the extents they leave are written
 * ones (none unwritten for a record's sync to convert). Buffered, each 2 MiB step was copied into the page
 * cache, written back and synced, and its large folios then invalidated by the first direct record landing
 * in them. */
static void check_direct_steps(const char *dir) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "dsteps", 16u << 20, &log);
    CHECK(rc == 0, "open 16 MiB for the direct steps: %d", rc);
    if (rc != 0) return;
    if (dk_oplog_records_by(log) != DK_OPLOG_RECORDS_DIRECT) {
        printf("skipped check_direct_steps: %s gives this log no O_DIRECT descriptor (records flushed, or no "
               "STATX_DIOALIGN); oplog_media_xfs and oplog_media_ext4 run it\n", dir);
        dk_oplog_close(log, 1);
        return;
    }
    unsigned long direct0 = dk_oplog_test_zero_direct_steps;
    uint32_t n = 0; /* records until the tail is past 5 MiB: the steps ending at 4 and 6 MiB are allocated */
    while (dk_oplog_lines_used(log) * DK_OPLOG_LINE_BYTES < (5u << 20))
        if (rec_append(log, 5, n++, DK_OPLOG_DATA_BYTES_MAX, NULL) != 0) {
            CHECK(0, "append %u", n - 1);
            break;
        }
    unsigned long direct = dk_oplog_test_zero_direct_steps - direct0;
    CHECK(direct == 2, "%lu of the 2 allocation steps after the first were zero-written directly", direct);
    int unwritten = unwritten_extents(dk_oplog_path(log), 6u << 20);
    CHECK(unwritten <= 0, "%d unwritten extents in the log's first 6 MiB", unwritten);
    struct collect c = scan(dk_oplog_path(log), NULL);
    CHECK(c.count == n && c.bad == 0, "direct steps: %lu of %u records, %lu bad", (unsigned long)c.count, n,
          (unsigned long)c.bad);
    printf("direct allocation steps: %u records past 5 MiB, %lu steps zero-written directly, %d unwritten "
           "extents (-1: no FIEMAP)\n", n, direct, unwritten);
    dk_oplog_close(log, 1);
}

struct thread_arg {
    struct dk_oplog *log;
    uint32_t writer, appended;
};

static void *writer_main(void *p) {
    struct thread_arg *a = p;
    while (a->appended < 2000 && rec_append(a->log, a->writer, a->appended, 200, NULL) == 0) a->appended++;
    return NULL;
}

static void check_threads(const char *dir) {
    struct dk_oplog *log;
    CHECK(dk_oplog_open(dir, "threads", 1u << 20, &log) == 0, "open");
    pthread_t t[4];
    struct thread_arg a[4];
    for (uint32_t i = 0; i < 4; i++) {
        a[i] = (struct thread_arg){log, i, 0};
        pthread_create(&t[i], NULL, writer_main, &a[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL), total += a[i].appended;
    struct dk_oplog_scan_stats st;
    struct collect c = scan(dk_oplog_path(log), &st);
    CHECK(c.count == total && c.bad == 0 && c.out_of_order == 0 && st.records_torn == 0 && st.holes == 0,
          "threads: %lu of %lu, %lu bad, %lu out of order", (unsigned long)c.count, (unsigned long)total,
          (unsigned long)c.bad, (unsigned long)c.out_of_order);
    for (int i = 0; i < 4; i++) CHECK(c.per_writer[i] == a[i].appended, "writer %d: %lu of %u", i,
                                      (unsigned long)c.per_writer[i], a[i].appended);
    printf("4 threads appended %lu records (%lu lines)\n", (unsigned long)total, (unsigned long)dk_oplog_lines_used(log));
    dk_oplog_close(log, 1);
}

/* A kernel without RWF_DSYNC (played by the test build): the page-cache log asks exactly once (its
 * first header write), then writes records with pwrite + fdatasync; the records are all there. A log whose
 * records are flushed (tmpfs, DAX) never writes by pwrite: the check says so and is left to
 * oplog_media_xfs/ext4, which run this program on the page cache. */
static void check_no_rwf_dsync(const char *dir) {
    dk_oplog_test_refuse_rwf_dsync = 1;
    unsigned long tries0 = dk_oplog_test_rwf_dsync_tries;
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "nodsync", DK_OPLOG_BYTES_MIN, &log);
    CHECK(rc == 0, "open without RWF_DSYNC: %d", rc);
    if (rc == 0 && dk_oplog_records_by(log) == DK_OPLOG_RECORDS_FLUSHED) {
        printf("skipped check_no_rwf_dsync: %s is not a page-cache medium (records are flushed, never written "
               "by pwrite); oplog_media_xfs and oplog_media_ext4 run it\n", dir);
        dk_oplog_close(log, 1);
    } else if (rc == 0) {
        for (uint32_t i = 0; i < 20; i++) CHECK(rec_append(log, 3, i, DK_OPLOG_DATA_BYTES_MAX, NULL) == 0, "append %u", i);
        CHECK(dk_oplog_reset(log) == 0, "reset");
        for (uint32_t i = 0; i < 20; i++) CHECK(rec_append(log, 3, i, DK_OPLOG_DATA_BYTES_MAX, NULL) == 0, "append %u", i);
        struct collect c = scan(dk_oplog_path(log), NULL);
        CHECK(c.count == 20 && c.bad == 0, "without RWF_DSYNC: %lu of 20 records", (unsigned long)c.count);
        unsigned long tries = dk_oplog_test_rwf_dsync_tries - tries0;
        CHECK(tries == 1, "RWF_DSYNC asked %lu times for one log (exactly once expected on a page-cache medium)", tries);
        printf("kernel without RWF_DSYNC: asked %lu time(s), then pwrite + fdatasync; 20 of 20 records\n", tries);
        dk_oplog_close(log, 1);
    }
    dk_oplog_test_refuse_rwf_dsync = 0;
}

/* An O_DIRECT descriptor that refuses every write with EINVAL (played by the test build): the log goes on
 * through its buffered descriptor (the old code took the EINVAL for "no RWF_DSYNC", tried pwrite on the same
 * descriptor, and every append failed from then on). Page cache with direct records only. */
static void check_direct_einval(const char *dir) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "directeinval", DK_OPLOG_BYTES_MIN, &log);
    CHECK(rc == 0, "open for the direct EINVAL check: %d", rc);
    if (rc != 0) return;
    if (dk_oplog_records_by(log) != DK_OPLOG_RECORDS_DIRECT) {
        printf("skipped check_direct_einval: %s gives this log no O_DIRECT descriptor (records flushed, or no "
               "STATX_DIOALIGN); oplog_media_xfs and oplog_media_ext4 run it\n", dir);
        dk_oplog_close(log, 1);
        return;
    }
    CHECK(rec_append(log, 3, 0, 100, NULL) == 0, "direct append before the refusal");
    dk_oplog_test_direct_einval = 1;
    for (uint32_t i = 1; i < 20; i++) CHECK(rec_append(log, 3, i, 100 * i, NULL) == 0, "append %u after EINVAL", i);
    dk_oplog_test_direct_einval = 0;
    CHECK(dk_oplog_records_by(log) == DK_OPLOG_RECORDS_BUFFERED, "records still by the direct descriptor");
    struct collect c = scan(dk_oplog_path(log), NULL);
    CHECK(c.count == 20 && c.bad == 0, "direct EINVAL: %lu of 20 records, %lu bad", (unsigned long)c.count,
          (unsigned long)c.bad);
    printf("O_DIRECT descriptor refusing writes (EINVAL): records went on through the page cache; %lu of 20\n",
           (unsigned long)c.count);
    dk_oplog_close(log, 1);
}

/* Log versions: a log whose headers say an older version (1) scans as usual; one whose headers say a newer
 * version is refused with -EPROTONOSUPPORT (recovery keeps it: its records may be of types this version
 * does not know, and skipping them would drop acknowledged writes -- review 8, finding 17). */
static void set_version(const char *path, uint16_t version) {
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    if (fd < 0) return;
    for (unsigned i = 0; i < DK_OPLOG_HEADER_LINES; i++) {
        struct oplog_header h;
        CHECK(pread(fd, &h, sizeof h, (off_t)(i * sizeof h)) == (ssize_t)sizeof h, "read header %u", i);
        if (h.magic != OPLOG_MAGIC) continue; /* a slot not written yet */
        h.version = version;
        h.crc = oplog_header_crc(&h);
        CHECK(pwrite(fd, &h, sizeof h, (off_t)(i * sizeof h)) == (ssize_t)sizeof h, "write header %u", i);
    }
    close(fd);
}

static void check_versions(const char *dir) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "versions", DK_OPLOG_BYTES_MIN, &log);
    CHECK(rc == 0, "open for the version check: %d", rc);
    if (rc) return;
    for (uint32_t i = 0; i < 3; i++) CHECK(rec_append(log, 5, i, 100, NULL) == 0, "append %u", i);
    char path[512];
    snprintf(path, sizeof path, "%s", dk_oplog_path(log));
    set_version(path, 1);
    struct collect c = scan(path, NULL);
    CHECK(c.count == 3 && c.bad == 0, "a version-1 log: %lu of 3 records", (unsigned long)c.count);
    set_version(path, OPLOG_VERSION + 1);
    struct collect none = {0};
    rc = dk_oplog_scan(path, collect_cb, &none, NULL);
    CHECK(rc == -EPROTONOSUPPORT && none.count == 0,
          "a log of a newer version: scan returned %d with %lu records (expected -EPROTONOSUPPORT, none)", rc,
          (unsigned long)none.count);
    printf("log versions: version 1 scanned (3 records), version %u refused (%d)\n", OPLOG_VERSION + 1, rc);
    dk_oplog_close(log, 1);
}

/* The header line each reset writes: valid, with the next generation, the log's tag and the creation time of
 * generation 1 (the log's, kept in DRAM -- before session 21 each reset wrote its own time and copied the
 * tag from the other header line, an uncached load per checkpoint). */
static void check_reset_header(const char *dir) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "hdrtag", DK_OPLOG_BYTES_MIN, &log);
    CHECK(rc == 0, "open: %d", rc);
    if (rc) return;
    int fd = open(dk_oplog_path(log), O_RDONLY);
    struct oplog_header first, h;
    CHECK(fd >= 0 && pread(fd, &first, sizeof first, 64) == (ssize_t)sizeof first, "read header 1");
    CHECK(first.generation == 1 && first.crc == oplog_header_crc(&first) && strcmp(first.tag, "hdrtag") == 0,
          "header 1: generation %u, tag '%.19s'", first.generation, first.tag);
    for (uint32_t g = 2; g <= 4; g++) {
        usleep(2000); /* a reset's own clock would differ from the creation time now */
        CHECK(dk_oplog_reset(log) == 0, "reset to %u", g);
        CHECK(pread(fd, &h, sizeof h, (off_t)(g & 1) * 64) == (ssize_t)sizeof h, "read header %u", g);
        CHECK(h.generation == g && h.crc == oplog_header_crc(&h) && h.magic == first.magic, "header %u: generation %u, crc %s",
              g, h.generation, h.crc == oplog_header_crc(&h) ? "ok" : "bad");
        CHECK(strcmp(h.tag, "hdrtag") == 0 && h.created_ns == first.created_ns && h.area_dev == first.area_dev &&
                  h.creator_pid == first.creator_pid,
              "header %u: tag '%.19s', created %llu (log created %llu)", g, h.tag, (unsigned long long)h.created_ns,
              (unsigned long long)first.created_ns);
    }
    if (fd >= 0) close(fd);
    dk_oplog_close(log, 1);
}

int main(int argc, char **argv) {
    char dir[256];
    int made = 0;
    if (argc > 1) snprintf(dir, sizeof dir, "%s", argv[1]);
    else {
        snprintf(dir, sizeof dir, "/dev/shm/dk-oplog-basic.XXXXXX");
        if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
        made = 1;
    }
    check_crc32c();
    check_shapes_fill_reset(dir);
    check_reset_header(dir);
    check_orphans(dir);
    check_threads(dir);
    check_growth(dir);
    check_no_rwf_dsync(dir);
    check_direct_einval(dir);
    check_direct_steps(dir);
    check_versions(dir);
    if (made) rmdir(dir);
    printf("%s: %lu failures (crc32c %s)\n", dir, dk_check_failures, dk_crc32c_have_hw() ? "sse4.2" : "table");
    return dk_check_failures ? 1 : 0;
}

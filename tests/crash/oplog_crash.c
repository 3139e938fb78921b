/* Description: workload, recovery and checker of the operation log for the process-crash driver
 * (tests/crash/drive.py). Not a test by itself.
 *
 *   oplog_crash workload DIR THREADS RECORDS [RESET_EVERY]
 *       THREADS threads append RECORDS pattern records each (tests/oplog/records.h) to one log in DIR; after
 *       each append returns, the thread appends "A index" to DIR/acks.<thread> (write(2): survives SIGKILL).
 *       OPLOG_CRASH_ACK_EARLY=1 acknowledges before appending: a broken workload the driver must catch.
 *       RESET_EVERY (one thread only): every that many records, "r index" is written, the log is reset (the
 *       "checkpoint"), then "R index". The log is closed without removing it, so recovery finds it.
 *   oplog_crash recover DIR
 *       finds orphan logs (dk_oplog_find_orphans), scans each twice (both scans must agree), writes "w i" per
 *       intact record and "torn N", "foreign N" to DIR/recovered.<log name> (via a fsynced .tmp and a
 *       rename), then removes the log: safe to interrupt anywhere and run again (drive.py
 *       --recovery-crashes checks that). OPLOG_CRASH_UNLINK_FIRST=1 removes the log before the results are
 *       safe: a recovery that is not safe to interrupt, which the driver must catch.
 *   oplog_crash verify DIR
 *       every acknowledged record of the current epoch was recovered, nothing else except a writer's one
 *       in-flight record, no duplicates, no foreign (corrupt but accepted) record, no files left but the
 *       acks; during an interrupted reset the old epoch is present entirely or not at all.
 * Exit 0 ok, 1 failure (reason printed). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../oplog/records.h"
#include "common/crashpoint.h"
#include "oplog/oplog.h"

#define WRITERS_MAX 16
#define RECORDS_MAX 100000
#define LOG_BYTES (1u << 20)

static const char *dir;
static struct dk_oplog *the_log;
static unsigned records_per_writer, reset_every;
static int ack_early; /* OPLOG_CRASH_ACK_EARLY=1: acknowledge before appending (must be caught) */

static void ack(int fd, char kind, uint32_t index) {
    char line[32];
    int n = snprintf(line, sizeof line, "%c %u\n", kind, index);
    if (write(fd, line, (size_t)n) != n) {
        perror("ack write");
        _exit(1);
    }
}

static void *writer_main(void *p) {
    uint32_t w = (uint32_t)(uintptr_t)p;
    char path[512];
    snprintf(path, sizeof path, "%s/acks.%u", dir, w);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return perror("acks"), (void *)1;
    for (uint32_t i = 0; i < records_per_writer; i++) {
        if (reset_every && i > 0 && i % reset_every == 0) {
            ack(fd, 'r', i);
            if (dk_oplog_reset(the_log) != 0) return (void *)1;
            ack(fd, 'R', i);
        }
        if (ack_early) ack(fd, 'A', i); /* the driver's self-test: a workload that lies */
        int rc = rec_append(the_log, w, i, 1000, NULL);
        if (rc != 0) return fprintf(stderr, "append %u/%u: %d\n", w, i, rc), (void *)1;
        if (!ack_early) ack(fd, 'A', i);
    }
    close(fd);
    return NULL;
}

static int workload(int argc, char **argv) {
    if (argc < 5) return 2;
    unsigned threads = (unsigned)atoi(argv[3]);
    records_per_writer = (unsigned)atoi(argv[4]);
    reset_every = argc > 5 ? (unsigned)atoi(argv[5]) : 0;
    ack_early = getenv("OPLOG_CRASH_ACK_EARLY") != NULL;
    if (threads < 1 || threads > WRITERS_MAX || records_per_writer > RECORDS_MAX || (reset_every && threads != 1))
        return fprintf(stderr, "bad arguments\n"), 2;
    int rc = dk_oplog_open(dir, "crash", LOG_BYTES, &the_log);
    if (rc != 0) return fprintf(stderr, "open: %d\n", rc), 1;
    pthread_t t[WRITERS_MAX];
    for (unsigned i = 0; i < threads; i++) pthread_create(&t[i], NULL, writer_main, (void *)(uintptr_t)i);
    int bad = 0;
    for (unsigned i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    dk_oplog_close(the_log, 0);
    return bad;
}

/* ---- recovery ---- */

struct seen {
    FILE *out;
    unsigned long records, foreign;
    uint64_t hash; /* order-sensitive digest of what the scan delivered (idempotency check) */
};

static int record_cb(const struct dk_oplog_record *r, void *ctx) {
    struct seen *s = ctx;
    uint32_t w, i;
    s->hash = (s->hash ^ r->seq) * 0x100000001b3ull;
    if (!rec_intact(r, &w, &i)) {
        s->foreign++;
        return 0;
    }
    s->hash = (s->hash ^ ((uint64_t)w << 32 | i)) * 0x100000001b3ull;
    s->records++;
    if (s->out) fprintf(s->out, "%u %u\n", w, i);
    return 0;
}

/* Writes DIR/recovered.<log name> (through a .tmp, fsynced, renamed) before the log is removed: a recovery
 * interrupted anywhere can run again and produce the same files. */
static int orphan_cb(const char *path, void *ctx) {
    struct seen first = {0}, second = {0};
    struct dk_oplog_scan_stats st;
    int rc = dk_oplog_scan(path, record_cb, &first, &st);
    char tmp[512], final[1024];
    snprintf(tmp, sizeof tmp, "%s/recovered.tmp", dir);
    snprintf(final, sizeof final, "%s/recovered.%s", dir, strrchr(path, '/') + 1);
    second.out = fopen(tmp, "w");
    if (!second.out) return -errno;
    int rc2 = dk_oplog_scan(path, record_cb, &second, NULL);
    if (rc != 0 || rc2 != rc || first.hash != second.hash) {
        fprintf(stderr, "FAIL: scan of %s: %d then %d; digests %s\n", path, rc, rc2,
                first.hash == second.hash ? "agree" : "differ");
        fclose(second.out);
        return -EIO;
    }
    fprintf(second.out, "torn %lu\nforeign %lu\n", (unsigned long)st.records_torn, second.foreign);
    if (fflush(second.out) != 0 || fsync(fileno(second.out)) != 0) return -errno;
    fclose(second.out);
    if (getenv("OPLOG_CRASH_UNLINK_FIRST")) unlink(path); /* the driver's self-test: results not yet final */
    DK_CRASH_POINT("oplog_crash.recover.written");
    if (rename(tmp, final) != 0) return -errno;
    DK_CRASH_POINT("oplog_crash.recover.renamed");
    return unlink(path) == 0 || getenv("OPLOG_CRASH_UNLINK_FIRST") ? 0 : -errno;
}

static int recover(void) {
    int n = dk_oplog_find_orphans(dir, "crash", orphan_cb, NULL);
    if (n < 0) return fprintf(stderr, "FAIL: find_orphans: %d\n", n), 1;
    if (n > 1) return fprintf(stderr, "FAIL: %d orphan logs (one expected)\n", n), 1;
    return 0;
}

/* ---- checking ---- */

struct writer_state {
    unsigned char acked[RECORDS_MAX], recovered[RECORDS_MAX];
    uint32_t epoch_start;          /* first index after the last completed reset */
    int reset_in_flight;           /* "r k" without its "R k" */
    uint32_t reset_at;             /* k of that reset */
    long last_acked;               /* -1: none */
    int present;
};
static struct writer_state writers[WRITERS_MAX];

static int read_acks(void) {
    for (unsigned w = 0; w < WRITERS_MAX; w++) {
        char path[512];
        snprintf(path, sizeof path, "%s/acks.%u", dir, w);
        FILE *f = fopen(path, "r");
        struct writer_state *s = &writers[w];
        s->last_acked = -1;
        if (!f) continue;
        s->present = 1;
        char kind;
        uint32_t i;
        while (fscanf(f, " %c %u", &kind, &i) == 2 && i < RECORDS_MAX) {
            if (kind == 'A') s->acked[i] = 1, s->last_acked = i;
            else if (kind == 'r') s->reset_in_flight = 1, s->reset_at = i;
            else if (kind == 'R') s->reset_in_flight = 0, s->epoch_start = i;
        }
        fclose(f);
    }
    return 0;
}

static int read_recovered_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "FAIL: %s: %s\n", path, strerror(errno)), 1;
    char word[16];
    unsigned long a, b;
    int bad = 0;
    while (fscanf(f, " %15s %lu", word, &a) == 2) {
        if (!strcmp(word, "torn")) continue; /* torn records are reported, and allowed */
        if (!strcmp(word, "foreign")) {
            if (a) bad = fprintf(stderr, "FAIL: %lu corrupt records accepted by the scan\n", a);
            continue;
        }
        b = strtoul(word, NULL, 10);
        uint32_t w = (uint32_t)b, i = (uint32_t)a;
        if (w >= WRITERS_MAX || i >= RECORDS_MAX) return fprintf(stderr, "FAIL: record %lu/%lu\n", b, a), 1;
        if (writers[w].recovered[i]++) bad = fprintf(stderr, "FAIL: record %u/%u recovered twice\n", w, i);
    }
    fclose(f);
    return bad != 0;
}

/* Every DIR/recovered.<log> file (one per recovered log; none when no log was left). */
static int read_recovered(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int bad = 0;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, "recovered.", 10) && strcmp(e->d_name, "recovered.tmp")) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            bad |= read_recovered_file(path);
        }
    if (d) closedir(d);
    return bad;
}

/* The index range a writer's recovered records must come from, and must cover when acknowledged. */
static int check_writer(unsigned w) {
    struct writer_state *s = &writers[w];
    int bad = 0;
    uint32_t lo = s->epoch_start, hi = (uint32_t)(s->last_acked + 1); /* hi: the in-flight record */
    long old_epoch_present = 0, old_epoch_acked = 0;
    for (uint32_t i = 0; i < RECORDS_MAX; i++) {
        int in_old = s->reset_in_flight && i >= lo && i < s->reset_at;
        if (in_old) old_epoch_present += s->recovered[i], old_epoch_acked += s->acked[i];
        if (s->recovered[i] && (i < lo || i > hi))
            bad = fprintf(stderr, "FAIL: writer %u record %u recovered but outside [%u, %u]\n", w, i, lo, hi);
        if (!in_old && i >= lo && s->acked[i] && !s->recovered[i])
            bad = fprintf(stderr, "FAIL: writer %u record %u acknowledged but not recovered\n", w, i);
    }
    if (s->reset_in_flight && old_epoch_present && old_epoch_present != old_epoch_acked)
        bad = fprintf(stderr, "FAIL: writer %u: interrupted reset left %ld of %ld old-epoch records\n", w,
                      old_epoch_present, old_epoch_acked);
    return bad != 0;
}

static int no_leftovers(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int bad = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && strncmp(e->d_name, "acks.", 5) &&
            (strncmp(e->d_name, "recovered.", 10) || !strcmp(e->d_name, "recovered.tmp")))
            bad = fprintf(stderr, "FAIL: %s/%s left behind after recovery\n", dir, e->d_name);
    if (d) closedir(d);
    return bad != 0;
}

static int verify(void) {
    if (read_acks() || read_recovered()) return 1;
    int bad = no_leftovers();
    for (unsigned w = 0; w < WRITERS_MAX; w++) bad |= check_writer(w);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s workload|recover|verify DIR ...\n", argv[0]);
        return 2;
    }
    dir = argv[2];
    if (!strcmp(argv[1], "workload")) return workload(argc, argv);
    if (!strcmp(argv[1], "recover")) return recover();
    if (!strcmp(argv[1], "verify")) return verify();
    return 2;
}

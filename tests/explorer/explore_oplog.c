/* Description: the operation log under the crash-state explorer. One writer appends records of 0..1,000
 * data bytes (1..22 lines) with a reset (checkpoint) every 40 records; every crash state the explorer
 * materialises must recover to: every acknowledged record of the current epoch present and intact, nothing
 * outside [epoch start, last acknowledged + 1], no corrupt record accepted, an interrupted reset leaving the
 * old epoch entirely or not at all.
 * argv[1], the protocol and workload:
 *   correct              the real protocol, one writer: every state must pass
 *   correct-threads      the real protocol, two writers interleaved so that one finishes a record while the
 *                        other is between its stores and its fence (valid records after holes): must pass
 *   adopt                the real protocol, one writer, on a log adopted from a parked one (dk_oplog_adopt) whose
 *                        image holds a first owner's records of every earlier generation: must pass
 *   adopt-restart        the same with an adopter that starts at generation 1 as a new file would
 *                        (dk_oplog_test_adopt_restart): must be REPORTED
 *   crc-head-only, no-fence, reset-no-fence (one writer), scan-stops-at-hole (two writers): deliberately
 *                        broken variants (dk_oplog_test_broken, test builds only) that the explorer must
 *                        REPORT -- the test fails if it does not
 * argv[2]: seed (0 or absent: from the clock; always printed). argv[3]: records of the one-writer workload
 * (default 240; the two-writer workload appends 60 each). Prints states explored and states per second.
 * Exit 0 pass, 1 fail. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../oplog/records.h"
#include "common/crashpoint.h"
#include "explorer.h"
#include "oplog/oplog.h"

#define RECORDS_MAX 4000u
static unsigned records = 240; /* argv[3] */
#define RESET_EVERY 40u
#define DATA_MAX 1000u
#define WRITERS_MAX 2u
enum mark_kind { MARK_ACK = 1, MARK_RESET_BEGIN = 2, MARK_RESET_DONE = 3 };
#define MARK(kind, w, i) ((uint64_t)(kind) << 56 | (uint64_t)(w) << 32 | (i))

struct expect {
    unsigned char acked[RECORDS_MAX], recovered[RECORDS_MAX];
    uint32_t epoch_start, reset_at;
    long last_acked;
    int reset_in_flight;
};

static void expect_from_marks(struct expect *ew, const uint64_t *marks, size_t n) {
    for (unsigned w = 0; w < WRITERS_MAX; w++) { /* only what this run can use: states are checked by the 100,000 */
        memset(ew[w].acked, 0, records), memset(ew[w].recovered, 0, records);
        ew[w].epoch_start = ew[w].reset_at = 0, ew[w].reset_in_flight = 0;
    }
    for (unsigned w = 0; w < WRITERS_MAX; w++) ew[w].last_acked = -1;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = (uint32_t)marks[k];
        struct expect *e = &ew[(marks[k] >> 32) & 0xff];
        switch (marks[k] >> 56) {
        case MARK_ACK: e->acked[i] = 1, e->last_acked = i; break;
        case MARK_RESET_BEGIN: e->reset_in_flight = 1, e->reset_at = i; break;
        case MARK_RESET_DONE: e->reset_in_flight = 0, e->epoch_start = i; break;
        }
    }
}

static unsigned long states_with_holes, states_with_torn; /* the cases the states exercised */

struct scan_ctx {
    struct expect *e;
    char *why;
    size_t why_bytes;
    int bad;
};

static int record_cb(const struct dk_oplog_record *r, void *p) {
    struct scan_ctx *c = p;
    uint32_t w, i;
    if (!rec_intact(r, &w, &i) || w >= WRITERS_MAX || i >= records) {
        snprintf(c->why, c->why_bytes, "a corrupt record was accepted (seq %lx, %zu data bytes)",
                 (unsigned long)r->seq, r->data_len);
        return c->bad = 1;
    }
    if (c->e[w].recovered[i]++) {
        snprintf(c->why, c->why_bytes, "writer %u record %u recovered twice", w, i);
        return c->bad = 1;
    }
    return 0;
}

static int check_ranges(unsigned w, const struct expect *e, char *why, size_t why_bytes) {
    uint32_t lo = e->epoch_start, hi = (uint32_t)(e->last_acked + 1);
    unsigned old_present = 0, old_acked = 0;
    for (uint32_t i = 0; i < records; i++) {
        int in_old = e->reset_in_flight && i >= lo && i < e->reset_at;
        old_present += in_old && e->recovered[i], old_acked += in_old && e->acked[i];
        if (e->recovered[i] && (i < lo || i > hi))
            return snprintf(why, why_bytes, "writer %u record %u recovered, outside [%u, %u] (an old epoch came back?)",
                            w, i, lo, hi);
        if (!in_old && i >= lo && e->acked[i] && !e->recovered[i])
            return snprintf(why, why_bytes, "writer %u record %u acknowledged but not recovered", w, i);
    }
    if (old_present && old_present != old_acked)
        return snprintf(why, why_bytes, "interrupted reset: %u of %u old-epoch records", old_present, old_acked);
    return 0;
}

static int check(const void *image, size_t bytes, const uint64_t *marks, size_t n, char *why, size_t why_bytes,
                 void *unused) {
    struct expect e[WRITERS_MAX];
    expect_from_marks(e, marks, n);
    struct scan_ctx c = {e, why, why_bytes, 0};
    struct dk_oplog_scan_stats st;
    int rc = dk_oplog_scan_image(image, bytes, record_cb, &c, &st);
    states_with_holes += st.holes > 0, states_with_torn += st.records_torn > 0;
    if (c.bad) return 1;
    if (rc != 0) return snprintf(why, why_bytes, "scan failed: %d (no valid header)", rc);
    for (unsigned w = 0; w < WRITERS_MAX; w++)
        if (check_ranges(w, &e[w], why, why_bytes)) return 1;
    return 0;
}

struct writer {
    struct dk_oplog *log;
    uint32_t w, records, reset_every;
    int rc;
};

/* Two writers, interleaved on purpose: writer 0, between its stores and its fence (crash point
 * "oplog.append.before_fence"), lets writer 1 append a whole record. Writer 1's record is durable while
 * writer 0's, in an earlier slot, is not: crash states with a valid record after a hole. */
static sem_t go, done;
static __thread int am_writer0;
static unsigned writer1_left, hook_calls;

static void interleave_hook(const char *site) {
    if (!am_writer0 || strcmp(site, "oplog.append.before_fence") != 0 || writer1_left == 0) return;
    if (hook_calls++ % 2) return;
    writer1_left--;
    sem_post(&go);
    sem_wait(&done);
}

static void *writer_main(void *p) {
    struct writer *a = p;
    am_writer0 = a->w == 0;
    for (uint32_t i = 0; i < a->records && a->rc == 0; i++) {
        if (a->w == 1) sem_wait(&go);
        if (a->reset_every && i > 0 && i % a->reset_every == 0) {
            dk_explorer_mark(MARK(MARK_RESET_BEGIN, a->w, i));
            if ((a->rc = dk_oplog_reset(a->log)) != 0) break;
            dk_explorer_mark(MARK(MARK_RESET_DONE, a->w, i));
        }
        a->rc = rec_append(a->log, a->w, i, DATA_MAX, NULL);
        if (a->rc == 0) dk_explorer_mark(MARK(MARK_ACK, a->w, i));
        if (a->w == 1) sem_post(&done);
    }
    if (a->w == 0) /* release writer 1's remaining records */
        for (; writer1_left; writer1_left--) sem_post(&go), sem_wait(&done);
    return NULL;
}

/* One writer with resets, or two interleaved writers without. */
static int workload(struct dk_oplog *log, unsigned writers) {
    struct writer a[WRITERS_MAX];
    pthread_t t[WRITERS_MAX];
    sem_init(&go, 0, 0), sem_init(&done, 0, 0);
    writer1_left = writers > 1 ? 60 : 0;
    if (writers > 1) dk_crashpoint_set_hook(interleave_hook);
    for (unsigned w = 0; w < writers; w++) {
        a[w] = (struct writer){log, w, writers == 1 ? records : 60, writers == 1 ? RESET_EVERY : 0, 0};
        pthread_create(&t[w], NULL, writer_main, &a[w]);
    }
    int rc = 0;
    for (unsigned w = 0; w < writers; w++) {
        pthread_join(t[w], NULL);
        if (a[w].rc) rc = fprintf(stderr, "writer %u: %d\n", w, a[w].rc);
    }
    dk_crashpoint_set_hook(NULL);
    return rc;
}

static int variant_of(const char *name) {
    static const char *names[] = {"correct", "crc-head-only", "no-fence", "reset-no-fence", "scan-stops-at-hole"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(name, names[i])) return i;
    if (!strcmp(name, "adopt-restart")) return 100; /* a broken adopter (dk_oplog_test_adopt_restart) */
    return strcmp(name, "correct-threads") == 0 || strcmp(name, "adopt") == 0 ? 0 : -1;
}

/* The adopt variants: a first owner logs `records` records of writer 1 (resets every 40) and parks the log; the
 * workload then runs on the log adopted from it (docs/oplog.md "Parked logs"), whose image holds the first
 * owner's lines of every earlier generation. None of them may ever be recovered (writer 1 has no acknowledged
 * record in the explored run). Returns the adopted log, or NULL. */
static struct dk_oplog *adopted_log(const char *dir, int restart) {
    struct dk_oplog *first;
    int rc = dk_oplog_open(dir, "explore", DK_OPLOG_BYTES_MIN, &first);
    for (uint32_t i = 0; rc == 0 && i < records; i++) {
        if (i > 0 && i % RESET_EVERY == 0) rc = dk_oplog_reset(first);
        if (rc == 0) rc = rec_append(first, 1, i, DATA_MAX, NULL);
    }
    if (rc == 0) rc = dk_oplog_park(first, "parked-explore.log");
    if (rc != 0) {
        fprintf(stderr, "first owner: %d\n", rc);
        return NULL;
    }
    printf("first owner: %u records of writer 1, parked at generation %lu\n", records,
           (unsigned long)dk_oplog_generation(first));
    dk_oplog_close(first, 0); /* its lock goes: the parked log may be taken */
    dk_oplog_test_adopt_restart = restart;
    struct dk_oplog *log;
    rc = dk_oplog_adopt(dir, "parked-explore.log", "explore", DK_OPLOG_BYTES_MIN, NULL, NULL, &log);
    dk_oplog_test_adopt_restart = 0;
    if (rc != 0) {
        fprintf(stderr, "adopt: %d\n", rc);
        return NULL;
    }
    printf("adopted at generation %lu\n", (unsigned long)dk_oplog_generation(log));
    return log;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "correct";
    if (argc > 3) records = (unsigned)strtoul(argv[3], NULL, 0);
    if (records < 1 || records > RECORDS_MAX) return fprintf(stderr, "records: 1..%u\n", RECORDS_MAX), 1;
    int variant = variant_of(name);
    if (variant < 0) return fprintf(stderr, "unknown variant %s\n", name), 1;
    char dir[] = "/dev/shm/dk-explore-oplog.XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    struct dk_oplog *log;
    int rc = 0;
    if (!strncmp(name, "adopt", 5)) {
        if (!(log = adopted_log(dir, variant == 100))) return 1;
    } else {
        rc = dk_oplog_open(dir, "explore", DK_OPLOG_BYTES_MIN, &log);
    }
    if (rc != 0) return fprintf(stderr, "open: %d\n", rc), 1;
    size_t bytes;
    void *map = dk_oplog_mapping(log, &bytes);
    dk_oplog_test_broken = variant == 100 ? 0 : variant;
    dk_explorer_begin(map, bytes);
    int threads = !strcmp(name, "correct-threads") || !strcmp(name, "scan-stops-at-hole");
    rc = workload(log, threads ? WRITERS_MAX : 1);
    dk_explorer_end();
    dk_oplog_close(log, 1);
    rmdir(dir);
    if (rc) return 1;

    struct dk_explorer_options o = {.seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0,
                                    .exhaustive_lines_max = 12, .samples_per_point = 256,
                                    .torn_samples_per_point = 16};
    struct dk_explorer_result r;
    rc = dk_explorer_run(&o, check, NULL, &r); /* the broken variant's reader (scan) stays in force */
    dk_oplog_test_broken = 0;
    printf("%s: %lu events, %lu fences, %lu crash points (%lu sampled, up to %lu uncertain lines), %lu states (%lu with "
           "lines torn in 8-byte words) in %.3f s = %.0f states/s (CPU time %.3f s = %.0f states/s), %lu failing, "
           "seed=%lu\n", name, (unsigned long)r.events,
           (unsigned long)r.fences, (unsigned long)r.crash_points, (unsigned long)r.sampled_points,
           (unsigned long)r.uncertain_lines_max, (unsigned long)r.states, (unsigned long)r.torn_states, r.seconds,
           r.seconds > 0 ? (double)r.states / r.seconds : 0.0, r.cpu_seconds,
           r.cpu_seconds > 0 ? (double)r.states / r.cpu_seconds : 0.0, (unsigned long)r.failures, (unsigned long)r.seed);
    printf("states with a torn record: %lu; with a valid record after a hole: %lu\n", states_with_torn,
           states_with_holes);
    if (rc < 0) return fprintf(stderr, "FAIL: explorer: %d\n", rc), 1;
    if (variant == 0) { /* correct, correct-threads */
        if (rc != 0) printf("FAIL: %s\n", r.first_failure);
        return rc != 0;
    }
    if (rc == 0) {
        printf("FAIL: the explorer did not find the bug of variant %s\n", name);
        return 1;
    }
    printf("ok: bug found: %s\n", r.first_failure);
    return 0;
}

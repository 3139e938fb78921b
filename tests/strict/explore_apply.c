/* Description: strict mode's write ordering under the crash-state explorer (power failure, not process
 * crash): each write is recorded (inline record: the bytes in the log, ONE fence), then applied to the file
 * with write-backs and NO fence, and acknowledged; a checkpoint makes the applied bytes durable (one fence)
 * before the log's reset (new generation header + fence) makes the records invisible. This is the order of
 * src/upath/strict.c (log_write, apply_write with UP_IO_LOGGED, checkpoint_locked) on a flush medium, run
 * with the real oplog and persist code on one region that holds the log and a 16 KiB "file" side by side.
 * For every crash state, recovery (scan the log image, replay its records onto the file image, as
 * up_strict_recover does) must give the file after the acknowledged writes, or after one more (the write in
 * flight). A power failure between an apply and the checkpoint must recover from the records.
 * argv[1]: correct (must pass) | checkpoint-no-fence (the checkpoint resets the log without fencing the
 * applied bytes first: the explorer must report a lost write). argv[2]: seed (0: clock; printed).
 * Exit 0 pass, 1 fail, 77 skip (the two mappings cannot be placed side by side). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "explorer.h"
#include "oplog/oplog.h"
#include "persist/persist.h"

#define DATA_BYTES (16u << 10)
#define WRITES 300u
#define CHECKPOINT_EVERY 25u
#define LEN_MAX 300u
enum mark_kind { MARK_ACK = 1 };

struct write_op {
    uint32_t off, len;
    unsigned char bytes[LEN_MAX];
};
static struct write_op ops[WRITES];
static size_t data_at; /* offset of the file inside the explored region */
static size_t log_at, log_bytes;

/* The file after writes [0, k). */
static void model_after(unsigned char *file, unsigned k) {
    memset(file, 0, DATA_BYTES);
    for (unsigned i = 0; i < k; i++) memcpy(file + ops[i].off, ops[i].bytes, ops[i].len);
}

static int replay_cb(const struct dk_oplog_record *r, void *ctx) {
    unsigned char *file = ctx;
    struct dk_oplog_op op;
    memcpy(&op, r->fixed48, sizeof op);
    if (r->type != DK_OPLOG_WRITE_INLINE || op.file_offset + r->data_len > DATA_BYTES || r->data_len != op.length)
        return 1;
    memcpy(file + op.file_offset, r->data, r->data_len);
    return 0;
}

static int check(const void *image, size_t bytes, const uint64_t *marks, size_t n, char *why, size_t why_bytes,
                 void *unused) {
    (void)unused;
    long acked = -1;
    for (size_t k = 0; k < n; k++)
        if (marks[k] >> 56 == MARK_ACK) acked = (long)(uint32_t)marks[k];
    static unsigned char file[DATA_BYTES], want[DATA_BYTES];
    memcpy(file, (const char *)image + data_at, DATA_BYTES);
    (void)bytes;
    int rc = dk_oplog_scan_image((const char *)image + log_at, log_bytes, replay_cb, file, NULL);
    if (rc != 0) return snprintf(why, why_bytes, "recovery scan failed or met a bad record: %d", rc);
    for (long k = acked + 1; k <= acked + 2 && k <= (long)WRITES; k++) {
        model_after(want, (unsigned)k);
        if (!memcmp(file, want, DATA_BYTES)) return 0;
    }
    model_after(want, (unsigned)(acked + 1));
    size_t b = 0;
    while (b < DATA_BYTES && file[b] == want[b]) b++;
    return snprintf(why, why_bytes, "after recovery the file differs from the %ld acknowledged writes (and one more) "
                    "at byte %zu", acked + 1, b);
}

/* Places an anonymous shared 16 KiB "file" right below or right above the log mapping. */
static unsigned char *place_file(unsigned char *log_map, size_t log_len) {
    unsigned char *tries[2] = {log_map - DATA_BYTES, log_map + log_len};
    for (int i = 0; i < 2; i++) {
        void *p = mmap(tries[i], DATA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
        if (p == tries[i]) return p;
        if (p != MAP_FAILED) munmap(p, DATA_BYTES);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *variant = argc > 1 ? argv[1] : "correct";
    int broken = !strcmp(variant, "checkpoint-no-fence");
    if (!broken && strcmp(variant, "correct")) return fprintf(stderr, "unknown variant %s\n", variant), 1;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
    if (!seed) seed = (uint64_t)time(NULL);
    srandom((unsigned)seed);
    for (unsigned i = 0; i < WRITES; i++) {
        ops[i].len = 1 + (uint32_t)(random() % LEN_MAX);
        ops[i].off = (uint32_t)(random() % (DATA_BYTES - ops[i].len + 1));
        for (uint32_t b = 0; b < ops[i].len; b++) ops[i].bytes[b] = (unsigned char)(random() | 1);
    }
    char dir[] = "/dev/shm/dk-explore-apply.XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    struct dk_oplog *log;
    int rc = dk_oplog_open(dir, "apply", DK_OPLOG_BYTES_MIN, &log);
    if (rc != 0) return fprintf(stderr, "open: %d\n", rc), 1;
    unsigned char *log_map = dk_oplog_mapping(log, &log_bytes);
    unsigned char *file = place_file(log_map, log_bytes);
    if (!file) {
        dk_oplog_close(log, 1), rmdir(dir);
        printf("SKIP: the file mapping cannot be placed next to the log's (the explorer records one region)\n");
        return 77;
    }
    unsigned char *lo = file < log_map ? file : log_map;
    data_at = (size_t)(file - lo), log_at = (size_t)(log_map - lo);
    dk_explorer_begin(lo, log_bytes + DATA_BYTES);
    for (unsigned i = 0; i < WRITES && rc == 0; i++) {
        if (i > 0 && i % CHECKPOINT_EVERY == 0) {
            if (!broken) dk_fence(); /* the checkpoint: applied bytes durable before the records go */
            rc = dk_oplog_reset(log);
        }
        struct dk_oplog_op op = {.ino = 1, .file_offset = ops[i].off, .length = ops[i].len};
        if (rc == 0) rc = dk_oplog_append(log, DK_OPLOG_WRITE_INLINE, &op, ops[i].bytes, ops[i].len, NULL);
        dk_store_persistent(file + ops[i].off, ops[i].bytes, ops[i].len, 256); /* the apply: no fence */
        dk_explorer_mark((uint64_t)MARK_ACK << 56 | i);
    }
    dk_explorer_end();
    dk_oplog_close(log, 1);
    rmdir(dir);
    if (rc) return fprintf(stderr, "workload: %d\n", rc), 1;

    struct dk_explorer_options o = {.seed = seed, .exhaustive_lines_max = 10, .samples_per_point = 128};
    struct dk_explorer_result r;
    rc = dk_explorer_run(&o, check, NULL, &r);
    printf("%s: %lu events, %lu fences, %lu crash points, %lu states in %.3f s, %lu failing, seed=%lu\n", variant,
           (unsigned long)r.events, (unsigned long)r.fences, (unsigned long)r.crash_points, (unsigned long)r.states,
           r.seconds, (unsigned long)r.failures, (unsigned long)r.seed);
    dk_explorer_free();
    munmap(file, DATA_BYTES);
    if (rc < 0) return printf("FAIL: explorer: %d\n", rc), 1;
    if (!broken) {
        if (rc) printf("FAIL: %s\n", r.first_failure);
        return rc != 0;
    }
    if (!rc) return printf("FAIL: the explorer did not catch a checkpoint that resets the log before the applied "
                           "bytes are fenced\n"), 1;
    printf("ok: bug found: %s\n", r.first_failure);
    return 0;
}

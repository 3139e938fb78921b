/* Description: strict mode's write ordering under the crash-state explorer (power failure, not process
 * crash), driving the REAL strict path: libdkcore's up_pwrite on a tmpfs directory with DAXKIT_PERSIST=flush
 * and DAXKIT_MODE=strict, so the persist trace hooks record what src/upath/strict.c and src/oplog actually
 * store, write back and fence -- the record (inline bytes in the log, or staged bytes in the strict staging
 * file and a one-line record), the apply into the file's mapping (no fence), and the checkpoints (a full
 * 64 KiB log, DAXKIT_STRICT_LOG_BYTES, and up_strict_checkpoint_all every CHECKPOINT_EVERY writes, the call
 * every publish point makes): the applied bytes fenced, then the log reset. Three regions are explored
 * together: the operation log, the first MiB of the staging file and the 16 KiB data file (found in
 * /proc/self/maps after a warm-up write). For every crash state, recovery -- the real scan
 * (dk_oplog_scan_image) and the replay of its inline and staged records onto the file image, as
 * up_strict_recover does -- must give the file after the acknowledged writes, or after one more.
 * A staged overwrite (more than 1 KiB here) is not applied at the write: its bytes wait in the staging file
 * until the checkpoint (or the next write applied at once to the file) stores them into the file, in log
 * order. The default mix (70 % 1-300 B, 20 % up to 1 KiB inline, 10 % up to 4 KiB staged) mostly applies
 * them at the next inline write; the `-staged` mix (25 % 1-300 B, 75 % 1-4 KiB, most staged) keeps many
 * waiting until the checkpoint.
 * argv[1]: correct, correct-staged (must pass) | checkpoint-no-fence (test build: strict.c's checkpoint
 * resets the log without fencing the applied bytes first) | staged-no-fence (a staged write's record is
 * made durable by the same fence as its staged bytes, as strict.c did until this test drove the real
 * path, and carries no crc of them: since session 8 the correct path does the same with the crc, and
 * recovery ignores a record whose staged bytes miss it) | staged-crc-unchecked (the correct path, but the
 * checker's recovery replays staged records without checking their crc: the torn ones garble the file) | apply-after-reset (staged mix: the checkpoint resets the log, then applies the waiting
 * overwrites) -- for the broken variants the explorer must report the state that loses or garbles a write.
 * correct-delta (must pass; session 29): 4 KiB pages rewritten with a few bytes changed (70 %, logged as delta
 * records: the changed segments inline, only they stored into the file), small inline writes and whole random pages,
 * every write applied at once (DAXKIT_STRICT_APPLY=write); the checker replays a delta record as up_strict_recover
 * does -- the file's bytes with the segments over them, only when they have the record's crc32c.
 * delta-crc-after-powerloss (session 29): the same, with a checker whose recovery replays a delta only when the file's
 * bytes with its segments have its crc, as recovery after a process crash does: after a power loss the media may hold
 * later records' applied bytes, and that check drops acknowledged writes -- the explorer must report it.
 * argv[2]: seed (0: clock).
 * Exit 0 pass, 1 fail, 77 skip (no /dev/shm). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "explorer.h"
#include "oplog/oplog.h"
#include "persist/persist.h"
#include "upath/delta.h"

/* The user-space path's entry points (src/upath/upath.h, internal.h), declared here. */
struct up_slot;
void up_init(void);
void up_fini(void);
int up_adopt(int fd, int oflags, const char *path);
struct up_slot *up_serving(int fd);
ssize_t up_pwrite(struct up_slot *s, int fd, const void *buf, size_t n, off_t off);
int up_close(int fd);
void up_strict_checkpoint_all(void);
extern int up_strict_test_broken;
bool up_strict_staged_intact(unsigned type, const struct dk_oplog_op *op, const void *staged);

#define DATA_BYTES (16u << 10)
#define STAGING_EXPLORED (1u << 20)
#define WRITES 300u
#define CHECKPOINT_EVERY 40u
#define LEN_MAX 4096u
enum { R_LOG, R_STAGING, R_FILE, R_COUNT };
enum mark_kind { MARK_ACK = 1 };

struct write_op {
    uint32_t off, len;
    unsigned char bytes[LEN_MAX];
};
static struct write_op ops[WRITES];
static struct dk_explorer_region regions[R_COUNT];
static size_t region_at[R_COUNT]; /* offset of each region in the explored image */
static unsigned char file0[DATA_BYTES]; /* the file before the workload */
static uint64_t data_ino;
static unsigned long states_staged_torn; /* crash states with a staged record whose staged bytes miss its crc */
static bool recovery_skips_crc; /* variant staged-crc-unchecked: the checker's recovery replays them anyway */
static unsigned long states_delta, states_delta_stale; /* crash states whose log holds delta records; stale ones */
static bool delta_checks_crc; /* variant delta-crc-after-powerloss: the checker's recovery checks a delta's crc */

/* The file after writes [0, k). */
static void model_after(unsigned char *file, unsigned k) {
    memcpy(file, file0, DATA_BYTES);
    for (unsigned i = 0; i < k; i++) memcpy(file + ops[i].off, ops[i].bytes, ops[i].len);
}

struct replay {
    unsigned char *file;
    const unsigned char *staging;
    int bad;
    unsigned long staged_torn;
    unsigned long deltas, delta_stale;
};

static int replay_cb(const struct dk_oplog_record *r, void *ctx) {
    struct replay *rp = ctx;
    struct dk_oplog_op op;
    memcpy(&op, r->fixed48, sizeof op);
    if (op.ino != data_ino || op.file_offset + op.length > DATA_BYTES) return rp->bad = 1;
    if (r->type == DK_OPLOG_WRITE_DELTA) { /* as strict.c's replay_delta */
        static unsigned char b[DATA_BYTES];
        rp->deltas++;
        if (op.length == 0) return 0; /* a no-op record */
        memcpy(b, rp->file + op.file_offset, op.length);
        if (!dk_delta_apply_buf((char *)b, op.length, r->data, r->data_len)) return rp->bad = 1;
        /* an image has no completion marks (a power loss): laid without the crc check, as replay_delta does --
         * the media may hold later records' bytes; counted when the check would have refused it */
        if (dk_crc32c_wide(0, b, op.length) != (uint32_t)op.aux) rp->delta_stale++;
        if (!delta_checks_crc || dk_crc32c_wide(0, b, op.length) == (uint32_t)op.aux)
            memcpy(rp->file + op.file_offset, b, op.length);
    } else if (r->type == DK_OPLOG_WRITE_INLINE && r->data_len == op.length)
        memcpy(rp->file + op.file_offset, r->data, op.length);
    else if ((r->type == DK_OPLOG_WRITE_STAGED || r->type == DK_OPLOG_WRITE_STAGED_CRC) &&
             op.staging_offset + op.length <= STAGING_EXPLORED) {
        /* as up_strict_recover: a staged record whose staged bytes miss its crc is torn (not replayed) */
        if (recovery_skips_crc || up_strict_staged_intact(r->type, &op, rp->staging + op.staging_offset))
            memcpy(rp->file + op.file_offset, rp->staging + op.staging_offset, op.length);
        else
            rp->staged_torn++;
    }
    else
        return rp->bad = 1;
    return 0;
}

static int check(const void *image, size_t bytes, const uint64_t *marks, size_t n, char *why, size_t why_bytes,
                 void *unused) {
    (void)unused, (void)bytes;
    long acked = -1;
    for (size_t k = 0; k < n; k++)
        if (marks[k] >> 56 == MARK_ACK) acked = (long)(uint32_t)marks[k];
    static unsigned char file[DATA_BYTES], want[DATA_BYTES];
    const unsigned char *img = image;
    memcpy(file, img + region_at[R_FILE], DATA_BYTES);
    struct replay rp = {file, img + region_at[R_STAGING], 0, 0, 0, 0};
    int rc = dk_oplog_scan_image(img + region_at[R_LOG], regions[R_LOG].bytes, replay_cb, &rp, NULL);
    if (rp.staged_torn) states_staged_torn++;
    if (rp.deltas) states_delta++;
    if (rp.delta_stale) states_delta_stale++;
    if (rc != 0) return snprintf(why, why_bytes, "recovery scan failed or met a record it cannot replay: %d", rc);
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

/* The mapping (file offset 0) whose /proc/self/maps path ends in `suffix`: its base and size. */
static int find_mapping(const char *suffix, struct dk_explorer_region *out) {
    FILE *m = fopen("/proc/self/maps", "r");
    char line[4608];
    int found = 0;
    while (!found && m && fgets(line, sizeof line, m)) {
        unsigned long lo, hi, off;
        if (sscanf(line, "%lx-%lx %*4s %lx", &lo, &hi, &off) != 3 || off != 0) continue;
        size_t k = strcspn(line, "\n"), s = strlen(suffix);
        line[k] = 0;
        if (k > s && !strcmp(line + k - s, suffix)) *out = (struct dk_explorer_region){(void *)lo, hi - lo}, found = 1;
    }
    if (m) fclose(m);
    return found;
}

static void make_ops(uint64_t seed, bool staged_mix) {
    srandom((unsigned)seed);
    for (unsigned i = 0; i < WRITES; i++) {
        long kind = random() % 20;
        uint32_t max;
        if (staged_mix) max = kind < 5 ? 300 : LEN_MAX; /* 5: 1-300 B inline, 15: 1 B-4 KiB (3/4 of them staged) */
        else max = kind < 14 ? 300 : kind < 18 ? 1024 : LEN_MAX; /* 14: 1-300 B, 4: up to 1 KiB, 2: up to 4 KiB */
        ops[i].len = 1 + (uint32_t)(random() % max);
        ops[i].off = (uint32_t)(random() % (DATA_BYTES - ops[i].len + 1));
        for (uint32_t b = 0; b < ops[i].len; b++) ops[i].bytes[b] = (unsigned char)(random() | 1);
    }
}

/* correct-delta: page rewrites of the model's bytes (file0 known: after the warm-up). */
static void make_ops_delta(uint64_t seed) {
    static unsigned char cur[DATA_BYTES];
    memcpy(cur, file0, DATA_BYTES);
    srandom((unsigned)seed);
    for (unsigned i = 0; i < WRITES; i++) {
        long kind = random() % 20;
        struct write_op *o = &ops[i];
        if (kind < 14) { /* a page, a few bytes changed */
            o->off = (uint32_t)(random() % (DATA_BYTES / LEN_MAX)) * LEN_MAX, o->len = LEN_MAX;
            memcpy(o->bytes, cur + o->off, LEN_MAX);
            for (long r = 0, runs = 1 + random() % 3; r < runs; r++) {
                uint32_t at = (uint32_t)(random() % LEN_MAX), n = 1 + (uint32_t)(random() % 100);
                for (uint32_t b = at; b < at + n && b < LEN_MAX; b++) o->bytes[b] ^= (unsigned char)(1 + random() % 255);
            }
        } else {
            o->len = kind < 18 ? 1 + (uint32_t)(random() % 300) : LEN_MAX; /* small inline, or a whole new page */
            o->off = (uint32_t)(random() % (DATA_BYTES - o->len + 1));
            for (uint32_t b = 0; b < o->len; b++) o->bytes[b] = (unsigned char)(random() | 1);
        }
        memcpy(cur + o->off, o->bytes, o->len);
    }
}

int main(int argc, char **argv) {
    const char *variant = argc > 1 ? argv[1] : "correct";
    delta_checks_crc = !strcmp(variant, "delta-crc-after-powerloss");
    bool delta_mix = !strcmp(variant, "correct-delta") || delta_checks_crc;
    int broken = !strcmp(variant, "checkpoint-no-fence") ? 1 : !strcmp(variant, "staged-no-fence") ? 2
                 : !strcmp(variant, "apply-after-reset") ? 3 : !strcmp(variant, "staged-crc-unchecked") ? 4 : 0;
    recovery_skips_crc = broken == 4; /* the library is correct; the recovery in check() is not */
    bool staged_mix = broken == 3 || !strcmp(variant, "correct-staged");
    if (delta_checks_crc) broken = 5; /* the library is correct; the recovery in check() is not */
    if (!broken && strcmp(variant, "correct") && strcmp(variant, "correct-staged") && !delta_mix)
        return fprintf(stderr, "unknown variant %s\n", variant), 1;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
    if (!seed) seed = (uint64_t)time(NULL);
    make_ops(seed, staged_mix);
    struct stat sb;
    if (stat("/dev/shm", &sb) != 0) return printf("SKIP: no /dev/shm\n"), 77;
    char dir[] = "/dev/shm/dk-explore-apply.XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    setenv("DAXKIT_DIR", dir, 1);
    setenv("DAXKIT_MODE", "strict", 1);
    setenv("DAXKIT_PERSIST", "flush", 1);
    setenv("DAXKIT_STATS", "0", 1);
    setenv("DAXKIT_STRICT_LOG_BYTES", "64K", 1);
    unsetenv("DAXKIT_STRICT_INLINE_BYTES"); /* 1 KiB on a flush medium: larger writes are staged */
    /* The staged mix: every staged overwrite waits (auto would apply them at once after the first applies,
     * which coalesce little here); the default mix runs as programs do (auto). */
    setenv("DAXKIT_STRICT_APPLY", staged_mix ? "checkpoint" : delta_mix ? "write" : "auto", 1);
    if (delta_mix) setenv("DAXKIT_TEST_STRICT_DELTA_UNLOCKED", "1", 1); /* (no lock call through the shim here) */
    up_init();
    char path[128];
    snprintf(path, sizeof path, "%s/data0", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, DATA_BYTES) != 0 || fstat(fd, &sb) != 0) return perror("data file"), 1;
    data_ino = (uint64_t)sb.st_ino;
    if (up_adopt(fd, O_RDWR, path) != 0 || !up_serving(fd)) return printf("FAIL: the file is not served\n"), 1;
    struct up_slot *s = up_serving(fd);
    /* First use maps the file and creates the log and the staging file; then a checkpoint empties the log. */
    static unsigned char warm[LEN_MAX];
    memset(warm, 0x11, sizeof warm);
    if (up_pwrite(s, fd, warm, LEN_MAX, 0) != LEN_MAX || up_pwrite(s, fd, warm, 100, 8192) != 100)
        return printf("FAIL: first writes\n"), 1;
    up_strict_checkpoint_all();
    if (!find_mapping(".log", &regions[R_LOG]) || !find_mapping(".strict.stg", &regions[R_STAGING]) ||
        !find_mapping("/data0", &regions[R_FILE]))
        return printf("FAIL: the log, staging or data mapping is not in /proc/self/maps\n"), 1;
    if (regions[R_STAGING].bytes > STAGING_EXPLORED) regions[R_STAGING].bytes = STAGING_EXPLORED;
    if (regions[R_FILE].bytes < DATA_BYTES) return printf("FAIL: data mapping too small\n"), 1;
    regions[R_FILE].bytes = DATA_BYTES;
    for (int r = 1; r < R_COUNT; r++) region_at[r] = region_at[r - 1] + regions[r - 1].bytes;
    memcpy(file0, regions[R_FILE].base, DATA_BYTES);
    if (delta_mix) make_ops_delta(seed);
    printf("regions: log %zu KiB, staging %zu KiB (explored), file %u KiB\n", regions[R_LOG].bytes >> 10,
           regions[R_STAGING].bytes >> 10, DATA_BYTES >> 10);

    up_strict_test_broken = broken >= 4 ? 0 : broken; /* enum up_strict_broken: 1 checkpoint, 2 staged write without its fence,
                                     * 3 waiting overwrites applied after the log reset */
    if (dk_explorer_begin_regions(regions, R_COUNT) != 0) return printf("FAIL: explorer begin\n"), 1;
    int failed = 0;
    for (unsigned i = 0; i < WRITES && !failed; i++) {
        if (i > 0 && i % CHECKPOINT_EVERY == 0) up_strict_checkpoint_all();
        failed = up_pwrite(s, fd, ops[i].bytes, ops[i].len, ops[i].off) != (ssize_t)ops[i].len;
        dk_explorer_mark((uint64_t)MARK_ACK << 56 | i);
    }
    dk_explorer_end();
    up_strict_test_broken = 0;
    up_close(fd);
    close(fd);
    up_fini();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    if (failed) return printf("FAIL: a strict write failed\n"), 1;

    struct dk_explorer_options o = {.seed = seed, .exhaustive_lines_max = 10, .samples_per_point = 128};
    struct dk_explorer_result r;
    int rc = dk_explorer_run(&o, check, NULL, &r);
    printf("%s: %lu events, %lu fences, %lu crash points, %lu states in %.3f s (CPU %.3f s = %.0f states/s), "
           "%lu failing, seed=%lu\n", variant, (unsigned long)r.events, (unsigned long)r.fences,
           (unsigned long)r.crash_points, (unsigned long)r.states, r.seconds, r.cpu_seconds,
           r.cpu_seconds > 0 ? (double)r.states / r.cpu_seconds : 0.0, (unsigned long)r.failures,
           (unsigned long)r.seed);
    printf("%lu states hold a staged record whose staged bytes are not all on media (ignored as torn)\n",
           states_staged_torn);
    if (delta_mix)
        printf("%lu states hold delta records, %lu a delta whose crc the media's bytes with its segments miss (%s)\n",
               states_delta, states_delta_stale, delta_checks_crc ? "not replayed" : "replayed: later records redo the rest");
    dk_explorer_free();
    if (rc < 0) return printf("FAIL: explorer: %d\n", rc), 1;
    if (!broken) {
        if (rc) printf("FAIL: %s\n", r.first_failure);
        else if (delta_mix && !states_delta) printf("FAIL: no crash state held a delta record\n");
        else if (!delta_mix && !states_staged_torn) printf("FAIL: no crash state had a staged record without all its bytes\n");
        return rc != 0 || (delta_mix ? !states_delta : !states_staged_torn);
    }
    if (!rc) return printf("FAIL: the explorer did not catch the broken ordering (%s)\n", variant), 1;
    printf("ok: bug found: %s\n", r.first_failure);
    return 0;
}

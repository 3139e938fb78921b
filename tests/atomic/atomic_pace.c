/* Description: journal pacing (alog_journal.c): each copy applies committed records (up to twice its own
 * size) and the next commit makes them durable and moves the head, so the journal stays about two epochs
 * long and no checkpoint pass runs.
 * With no checkpoint thread and a 2 MiB log, 1,000 epochs of one 4 KiB copy + sync:
 *   - after sync k the head (DRAM and the durable jhead) is exactly the end of epoch k-1's record, and the
 *     file holds epoch k-1's bytes (the one before the last commit), not yet epoch k's;
 *   - no checkpoint pass applied anything (without pacing the sync applies half the journal at once);
 * then one epoch of 150 records: the following copies apply two records each (twice their own size), never
 * a burst, and catch up in ~150 epochs; then one 256 KiB record, applied in parts of ~8 KiB by ~32 copies
 * while the durable head stays at it;
 * (first: unset, pacing is on -- the default since session 9); then DAXKIT_ATOMIC_PACE=0: the head stays put for 100 epochs (the switch the benchmarks compare with);
 * last, the file after unmap equals the model. Usage: atomic_pace [DIR] */
#include "atomic_engine_test.h"
#include "common/config.h"

#define FILE_BYTES (16u << 20)
#define BLOCKS (FILE_BYTES / 4096u)
#define REC_BYTES (4096u + 16u) /* a 4 KiB record: 16-byte header + bytes, 16-byte aligned */

static char model[FILE_BYTES];

static struct alog_file *open_engine(const char *path) {
    int rc;
    struct alog_file *f = at_engine_try_open_every(path, DAXKIT_ATOMIC_JOURNAL, 2u << 20, 0, &rc);
    AT_OK(rc);
    return f;
}

static uint64_t head(struct alog_file *f) { return __atomic_load_n(&f->j.head, __ATOMIC_ACQUIRE); }

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    /* the mode under test, on by default (session 9) and spelled as a BOOL option (1/yes/true/on) */
    char path0[600];
    at_path(path0, sizeof path0, "default.bin");
    at_make_file(path0, 1u << 20, 4);
    unsetenv("DAXKIT_ATOMIC_PACE");
    struct alog_file *f0 = open_engine(path0);
    AT_CHECK(f0->jpace, "DAXKIT_ATOMIC_PACE unset: pacing is off on %s (medium %d)", at_dir, (int)f0->persist_as);
    AT_OK(alog_close(f0));
    setenv("DAXKIT_ATOMIC_PACE", "true", 1);
    /* the journal's window off (test builds): the positions below assume only end-of-area pads; pacing with
     * the window is atomic_jwindow's */
    setenv("DAXKIT_TEST_ATOMIC_JWINDOW", "0", 1);
    char path[600];
    at_path(path, sizeof path, "paced.bin");
    at_make_file(path, FILE_BYTES, 3);
    int fd = open(path, O_RDONLY);
    AT_CHECK(fd >= 0 && pread(fd, model, FILE_BYTES, 0) == FILE_BYTES, "read the file");
    close(fd);

    struct alog_file *f = open_engine(path);
    AT_CHECK(f->jpace, "DAXKIT_ATOMIC_PACE=true: pacing is off on %s (medium %d)", at_dir, (int)f->persist_as);
    static char buf[4096];
    uint64_t ends[1001] = {head(f)}; /* ends[k]: journal position after epoch k's record */
    for (uint32_t k = 1; k <= 1000; k++) {
        uint64_t blk = (uint64_t)k * 7 % BLOCKS; /* 1,000 distinct blocks */
        at_fill(buf, 4096, k);
        memcpy(model + blk * 4096, buf, 4096);
        AT_OK(alog_copy(f, blk * 4096, buf, 4096));
        AT_OK(alog_sync(f));
        ends[k] = __atomic_load_n(&f->j.committed, __ATOMIC_ACQUIRE); /* + a pad record at the end of the area */
        AT_CHECK(ends[k] - ends[k - 1] >= REC_BYTES && ends[k] - ends[k - 1] < REC_BYTES + 2 * REC_BYTES,
                 "epoch %u: %llu journal bytes", k, (unsigned long long)(ends[k] - ends[k - 1]));
        AT_CHECK(head(f) == ends[k - 1], "sync %u: head %llu, want %llu (the end of epoch %u)", k,
                 (unsigned long long)head(f), (unsigned long long)ends[k - 1], k - 1);
        AT_CHECK(f->hdr->jhead == head(f), "sync %u: durable jhead %llu != head %llu", k,
                 (unsigned long long)f->hdr->jhead, (unsigned long long)head(f));
        if (k >= 2) {
            uint64_t prev = (uint64_t)(k - 1) * 7 % BLOCKS;
            AT_CHECK(memcmp(f->data + prev * 4096, model + prev * 4096, 4096) == 0, "sync %u: epoch %u not in the file",
                     k, k - 1);
        }
        AT_CHECK(memcmp(f->data + blk * 4096, buf, 4096) != 0, "sync %u: the last epoch applied already", k);
    }
    AT_CHECK(f->ctr.checkpointed_entries == 0, "a checkpoint pass ran (%llu records): pacing did not keep up",
             (unsigned long long)f->ctr.checkpointed_entries);
    AT_CHECK(f->ctr.paced_entries == 999, "%llu records applied by copies, want 999",
             (unsigned long long)f->ctr.paced_entries);

    /* one large epoch (150 records of 4 KiB), then small ones: each applies twice its own epoch (two
     * records), so the head gains one record per sync until it is one epoch behind again */
    for (uint32_t i = 0; i < 150; i++) {
        uint64_t blk = 1500 + i;
        at_fill(buf, 4096, 5000 + i);
        memcpy(model + blk * 4096, buf, 4096);
        AT_OK(alog_copy(f, blk * 4096, buf, 4096));
    }
    AT_OK(alog_sync(f));
    uint32_t syncs = 0;
    for (; head(f) < __atomic_load_n(&f->j.committed, __ATOMIC_ACQUIRE) - REC_BYTES && syncs < 200; syncs++) {
        uint64_t before = head(f), blk = 3000 + syncs;
        at_fill(buf, 4096, 9000 + syncs);
        memcpy(model + blk * 4096, buf, 4096);
        AT_OK(alog_copy(f, blk * 4096, buf, 4096));
        AT_OK(alog_sync(f));
        AT_CHECK(head(f) - before <= 3 * REC_BYTES, "catch-up sync %u applied %llu bytes: a burst", syncs,
                 (unsigned long long)(head(f) - before));
    }
    AT_CHECK(syncs >= 140 && syncs <= 155, "%u syncs to catch up after a 150-record epoch (want ~150)", syncs);

    /* one 256 KiB record: applied in parts of ~8 KiB by the next copies (the durable head stays at it) */
    static char big[256u << 10];
    at_fill(big, sizeof big, 777);
    memcpy(model + 8 * (1u << 20), big, sizeof big);
    AT_OK(alog_copy(f, 8 * (1u << 20), big, sizeof big));
    AT_OK(alog_sync(f));
    uint64_t big_at = head(f) + REC_BYTES; /* after the 4 KiB record of the epoch before */
    uint64_t partial0 = f->ctr.paced_partial;
    uint32_t parts = 0;
    for (; head(f) <= big_at && parts < 300; parts++) {
        uint64_t blk = 3500 + parts;
        at_fill(buf, 4096, 30000 + parts);
        memcpy(model + blk * 4096, buf, 4096);
        AT_OK(alog_copy(f, blk * 4096, buf, 4096));
        AT_OK(alog_sync(f));
        if (head(f) <= big_at) AT_CHECK(f->hdr->jhead <= big_at, "the durable head passed a record applied in part");
    }
    AT_CHECK(parts >= 30 && parts <= 34 && f->ctr.paced_partial - partial0 >= 30,
             "a 256 KiB record took %u commits (%llu partial applies), want ~32", parts,
             (unsigned long long)(f->ctr.paced_partial - partial0));
    AT_OK(alog_close(f));

    /* DAXKIT_ATOMIC_PACE=0: no copy applies (the thread-less sync applies once half full: not reached) */
    setenv("DAXKIT_ATOMIC_PACE", "0", 1);
    f = open_engine(path);
    AT_CHECK(!f->jpace, "DAXKIT_ATOMIC_PACE=0 left pacing on");
    uint64_t h0 = head(f);
    for (uint32_t k = 1; k <= 100; k++) {
        uint64_t blk = 2000 + k;
        at_fill(buf, 4096, 20000 + k);
        memcpy(model + blk * 4096, buf, 4096);
        AT_OK(alog_copy(f, blk * 4096, buf, 4096));
        AT_OK(alog_sync(f));
    }
    AT_CHECK(head(f) == h0 && f->ctr.paced_entries == 0, "pacing off, yet the head moved");
    AT_OK(alog_close(f));

    /* where the library loaded its options (the shim), the engine reads dk_cfg: DAXKIT_ATOMIC_PACE=on at load,
     * whatever the environment says afterwards (the value DAXKIT_STRICT_CONFIG checked and `daxkit config` shows) */
    setenv("DAXKIT_ATOMIC_PACE", "on", 1);
    dk_config_load(&dk_cfg, NULL, NULL);
    AT_CHECK(dk_cfg.atomic_pace, "DAXKIT_ATOMIC_PACE=on not loaded");
    setenv("DAXKIT_ATOMIC_PACE", "0", 1);
    f = open_engine(path);
    AT_CHECK(f->jpace, "dk_cfg.atomic_pace is on, yet the engine left pacing off");
    AT_OK(alog_close(f));
    unsetenv("DAXKIT_ATOMIC_PACE");

    static char got[FILE_BYTES];
    fd = open(path, O_RDONLY);
    AT_CHECK(fd >= 0 && pread(fd, got, FILE_BYTES, 0) == FILE_BYTES, "read back");
    close(fd);
    AT_CHECK(memcmp(got, model, FILE_BYTES) == 0, "the file after close differs from the model");
    printf("PASS: 1,000 paced epochs (head one epoch behind); a 150-record epoch caught up in %u syncs; a 256 KiB "
           "record applied over %u epochs\n", syncs, parts);
    return 0;
}

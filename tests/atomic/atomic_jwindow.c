/* Description: the journal's window (alog_journal.c window_wrap): a commit that finds the journal's tail past
 * the window (2 MiB of a 16 MiB area here) and the head far enough into the same lap ends the lap with a pad
 * record, so that the next records go to the area's start again.
 *   1. pacing, with the checkpoint thread started: 3,000 epochs of one 4 KiB copy + sync -- after every sync
 *      the tail's area offset stays under the window + one record, a window pad every ~510 epochs, and the
 *      thread never applied anything (a pad the head has not passed is not work: without that rule every
 *      pad made the journal look 7/8 full and kicked the thread); reads overlay the right bytes across pads;
 *   2. right after a window pad, one epoch of 12 MiB (3,072 copies of 4 KiB, then one sync): every copy
 *      succeeds -- the pad is committed, so the appliers pass it and the window costs no epoch capacity;
 *   3. pacing off, the thread: 6,000 epochs (24 MiB of records) still equal the model;
 * last, the file after unmap equals the model. Usage: atomic_jwindow [DIR] */
#include "atomic_engine_test.h"

#define FILE_BYTES (16u << 20)
#define BLOCKS (FILE_BYTES / 4096u)
#define REC_BYTES (4096u + 16u) /* a 4 KiB record: 16-byte header + bytes, 16-byte aligned */
#define WINDOW_BYTES (2u << 20)

static char model[FILE_BYTES];

static struct alog_file *open_engine(const char *path) {
    int rc;
    struct alog_file *f = at_engine_try_open_every(path, DAXKIT_ATOMIC_JOURNAL, 16u << 20, 1000, &rc);
    AT_OK(rc);
    return f;
}

static void copy(struct alog_file *f, uint64_t blk, uint64_t tag) {
    static char buf[4096];
    at_fill(buf, 4096, tag);
    memcpy(model + blk * 4096, buf, 4096);
    AT_OK(alog_copy(f, blk * 4096, buf, 4096));
}

static void check_read(struct alog_file *f, uint64_t blk, uint64_t k) {
    static char got[4096];
    AT_OK(alog_read(f, blk * 4096, got, 4096));
    AT_CHECK(memcmp(got, model + blk * 4096, 4096) == 0, "epoch %llu: block %llu reads wrong",
             (unsigned long long)k, (unsigned long long)blk);
}

static void close_and_compare(struct alog_file *f, const char *path, const char *part) {
    AT_OK(alog_close(f));
    static char file[FILE_BYTES];
    at_read_file(path, file, FILE_BYTES);
    AT_CHECK(memcmp(file, model, FILE_BYTES) == 0, "%s: the file after unmap differs from the model", part);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    unsetenv("DAXKIT_TEST_ATOMIC_JWINDOW"); /* the production window */
    setenv("DAXKIT_ATOMIC_PACE", "1", 1);
    char path[600];
    at_path(path, sizeof path, "window.bin");
    at_make_model_file(path, FILE_BYTES, 5, model);

    /* 1: pacing, thread started */
    struct alog_file *f = open_engine(path);
    AT_CHECK(f->jpace, "pacing is off on %s (medium %d)", at_dir, (int)f->persist_as);
    AT_CHECK(f->jwindow == WINDOW_BYTES, "window %llu, not 2 MiB", (unsigned long long)f->jwindow);
    uint64_t max_off = 0;
    for (uint32_t k = 1; k <= 3000; k++) {
        copy(f, (uint64_t)k * 7 % BLOCKS, k);
        AT_OK(alog_sync(f));
        uint64_t off = f->j.tail % f->area_bytes;
        if (off > max_off) max_off = off;
        AT_CHECK(off < WINDOW_BYTES + REC_BYTES, "epoch %u: the tail is at area offset %llu, past the window", k,
                 (unsigned long long)off);
        if (k % 97 == 0) check_read(f, (uint64_t)(k - 1) * 7 % BLOCKS, k), check_read(f, (uint64_t)k * 7 % BLOCKS, k);
    }
    uint64_t wraps = f->ctr.jwraps_early, ckpt = __atomic_load_n(&f->ctr.checkpointed_entries, __ATOMIC_RELAXED);
    printf("part 1: 3,000 epochs, %llu window pads, tail offsets up to %llu, %llu records applied by the thread, "
           "%llu by copies\n", (unsigned long long)wraps, (unsigned long long)max_off, (unsigned long long)ckpt,
           (unsigned long long)f->ctr.paced_entries);
    AT_CHECK(wraps >= 3000ull * REC_BYTES / WINDOW_BYTES - 1, "only %llu window pads", (unsigned long long)wraps);
    AT_CHECK(ckpt == 0, "the checkpoint thread applied %llu records: a window pad made the journal look due",
             (unsigned long long)ckpt);

    /* 2: right after a window pad, an epoch of 12 MiB */
    uint32_t k = 3001;
    for (uint64_t w = f->ctr.jwraps_early; f->ctr.jwraps_early == w; k++) {
        copy(f, (uint64_t)k * 7 % BLOCKS, k);
        AT_OK(alog_sync(f));
    }
    AT_CHECK(f->j.tail % f->area_bytes == 0, "no pad at the last sync");
    for (uint32_t i = 0; i < 3072; i++) copy(f, (uint64_t)i * 5 % BLOCKS, 100000 + i); /* AT_OK: no -ENOSPC */
    AT_OK(alog_sync(f));
    check_read(f, 5, k), check_read(f, 3071ull * 5 % BLOCKS, k);
    printf("part 2: a 12 MiB epoch right after a window pad: committed\n");
    close_and_compare(f, path, "parts 1-2");

    /* 3: pacing off, the thread applies */
    setenv("DAXKIT_ATOMIC_PACE", "0", 1);
    f = open_engine(path);
    AT_CHECK(!f->jpace, "pacing on with DAXKIT_ATOMIC_PACE=0");
    for (uint32_t e = 1; e <= 6000; e++) {
        copy(f, (uint64_t)e * 11 % BLOCKS, 200000 + e);
        AT_OK(alog_sync(f));
        if (e % 499 == 0) check_read(f, (uint64_t)e * 11 % BLOCKS, e);
    }
    printf("part 3: 6,000 epochs with the thread, %llu window pads\n", (unsigned long long)f->ctr.jwraps_early);
    close_and_compare(f, path, "part 3");
    printf("PASS\n");
    return 0;
}

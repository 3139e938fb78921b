/* Description: the journal is circular. With a 2 MiB log, a seeded run of copies (1 B .. 100 KiB), reads
 * checked byte for byte against a model and syncs goes round the journal many times: the checkpoint
 * thread applies committed records from the head (every 50 us), writers short of room apply steps
 * themselves, pad records fill the end of the area, readers skip pieces below the head. Then the file
 * after unmap must equal the model at the last sync. Once with the thread, once without (the sync
 * applies). A reader thread reads (and checks committed-only ranges) while the main thread writes.
 * Usage: atomic_jwrap [DIR]   SEED=n reproduces. */
#include <pthread.h>

#include "atomic_test.h"

#define FILE_BYTES (3u << 20)
#define STABLE_BYTES (64u << 10) /* [0, STABLE_BYTES): written once, before the reader starts */

static char model[FILE_BYTES], synced[FILE_BYTES], got[FILE_BYTES];
static struct daxkit_atomic *a;
static volatile int stop;
static uint64_t reader_reads;

static void *reader_main(void *arg) {
    (void)arg;
    static char buf[STABLE_BYTES];
    uint64_t rs = at_seed ^ 77;
    while (!stop) {
        uint32_t n = 1 + (uint32_t)(at_rand(&rs) % (STABLE_BYTES - 1));
        uint64_t off = at_rand(&rs) % (STABLE_BYTES - n + 1);
        AT_OK(daxkit_atomic_read(a, off, buf, n));
        AT_CHECK(!memcmp(buf, synced + off, n), "reader: [%llu, +%u) differs from what was written there",
                 (unsigned long long)off, n);
        reader_reads++;
    }
    return NULL;
}

static void run(const char *path, uint32_t interval_us) {
    at_make_model_file(path, FILE_BYTES, 5, model);
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_JOURNAL, interval_us);
    o.log_bytes = 2u << 20;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    uint64_t rs = at_seed ^ interval_us;
    static char buf[100 << 10];
    for (uint32_t i = 0; i < STABLE_BYTES; i++) buf[i] = (char)(at_rand(&rs) >> 9);
    AT_OK(daxkit_atomic_copy(a, 0, buf, STABLE_BYTES));
    memcpy(model, buf, STABLE_BYTES);
    AT_OK(daxkit_atomic_sync(a));
    memcpy(synced, model, FILE_BYTES);
    pthread_t t;
    stop = 0;
    pthread_create(&t, NULL, reader_main, NULL);
    for (uint32_t epoch = 0; epoch < 600; epoch++) {
        uint32_t ops = 1 + (uint32_t)(at_rand(&rs) % 12);
        for (uint32_t i = 0; i < ops; i++) {
            uint64_t r = at_rand(&rs);
            uint32_t n = 1 + (uint32_t)(at_rand(&rs) % (r % 3 == 0 ? 200 : r % 3 == 1 ? 6000 : sizeof buf));
            uint64_t off = STABLE_BYTES + at_rand(&rs) % (FILE_BYTES - STABLE_BYTES - n + 1);
            if (r % 4 == 3) { /* a read, checked */
                AT_OK(daxkit_atomic_read(a, off, buf, n));
                AT_CHECK(!memcmp(buf, model + off, n), "epoch %u: read [%llu, +%u) differs from the model", epoch,
                         (unsigned long long)off, n);
                continue;
            }
            for (uint32_t j = 0; j < n; j++) buf[j] = (char)(at_rand(&rs) >> 11);
            AT_OK(daxkit_atomic_copy(a, off, buf, n));
            memcpy(model + off, buf, n);
        }
        AT_OK(daxkit_atomic_sync(a));
    }
    stop = 1;
    pthread_join(t, NULL);
    struct daxkit_atomic_stats s = at_stats(a);
    /* one more epoch, never synced: unmap drops it */
    memset(buf, 'x', 4096);
    AT_OK(daxkit_atomic_copy(a, STABLE_BYTES, buf, 4096));
    AT_OK(daxkit_atomic_unmap(a));
    at_read_file(path, got, FILE_BYTES);
    AT_CHECK(!memcmp(got, model, FILE_BYTES), "after unmap the file differs from the model at the last sync");
    uint64_t laps = s.log_data_bytes / (2u << 20);
    printf("jwrap interval %u us: %llu journal bytes = %llu laps of the 2 MiB log, %llu records applied by "
           "checkpoints, %llu reads by the reader thread\n", interval_us, (unsigned long long)s.log_data_bytes,
           (unsigned long long)laps, (unsigned long long)s.checkpointed_entries, (unsigned long long)reader_reads);
    AT_CHECK(laps >= 10, "the journal went round only %llu times: the test proves little", (unsigned long long)laps);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    at_seed = at_seed_from_env();
    printf("atomic_jwrap seed=%llu dir=%s\n", (unsigned long long)at_seed, at_dir);
    char path[700];
    at_path(path, sizeof path, "jwrap.bin");
    run(path, 50);
    run(path, 0);
    at_rm_dir();
    printf("ok\n");
    return 0;
}

/* Description: one handle, several threads. Four writer threads copy into their own interleaved byte
 * ranges (so they share blocks, 2 MiB regions and log chunks) and read their own bytes back at once; a
 * fifth thread syncs every ~100 us; the checkpoint thread runs every 50 us. Each writer's bytes are checked
 * after every read, and the file after the final sync + unmap, under undo, redo and hybrid.
 * Usage: atomic_threads [DIR]; SEED=n reproduces. */
#include <pthread.h>

#include "atomic_test.h"

#define FILE_BYTES (4u << 20)
#define WRITERS 4u
#define STRIPE 192u /* a writer owns bytes [w*STRIPE, (w+1)*STRIPE) of every WRITERS*STRIPE-byte stripe */
#define ROUNDS 20000u

static struct daxkit_atomic *A;
static volatile int stop_syncer;
static char *model;

struct wargs {
    uint32_t w;
    uint64_t seed;
};

static uint64_t stripe_off(uint64_t stripe, uint32_t w) { return stripe * WRITERS * STRIPE + (uint64_t)w * STRIPE; }

static void *writer(void *p) {
    struct wargs *a = p;
    uint64_t rs = a->seed, stripes = FILE_BYTES / (WRITERS * STRIPE);
    char buf[STRIPE], got[STRIPE];
    for (uint32_t i = 0; i < ROUNDS; i++) {
        uint64_t off = stripe_off(at_rand(&rs) % stripes, a->w);
        uint32_t n = 1 + (uint32_t)(at_rand(&rs) % STRIPE);
        off += STRIPE - n;
        for (uint32_t j = 0; j < n; j++) buf[j] = (char)at_rand(&rs);
        AT_OK(daxkit_atomic_copy(A, off, buf, n));
        memcpy(model + off, buf, n);
        AT_OK(daxkit_atomic_read(A, off, got, n));
        if (memcmp(got, buf, n)) AT_FAIL("writer %u: read-back of its own copy at %llu differs", a->w, (unsigned long long)off);
    }
    return NULL;
}

static void *syncer(void *p) {
    (void)p;
    while (!__atomic_load_n(&stop_syncer, __ATOMIC_RELAXED)) {
        AT_OK(daxkit_atomic_sync(A));
        usleep(100);
    }
    return NULL;
}

static void run(const char *path, uint32_t policy) {
    at_make_model_file(path, FILE_BYTES, 4, model);
    struct daxkit_atomic_options o = at_opts(policy, 50);
    AT_OK(daxkit_atomic_map(path, &o, &A));
    pthread_t t[WRITERS + 1];
    struct wargs args[WRITERS];
    __atomic_store_n(&stop_syncer, 0, __ATOMIC_RELAXED);
    pthread_create(&t[WRITERS], NULL, syncer, NULL);
    for (uint32_t w = 0; w < WRITERS; w++) {
        args[w] = (struct wargs){w, at_seed + w * 7919u + policy};
        pthread_create(&t[w], NULL, writer, &args[w]);
    }
    for (uint32_t w = 0; w < WRITERS; w++) pthread_join(t[w], NULL);
    __atomic_store_n(&stop_syncer, 1, __ATOMIC_RELAXED);
    pthread_join(t[WRITERS], NULL);
    struct daxkit_atomic_stats s = at_stats(A);
    AT_OK(daxkit_atomic_sync(A));
    AT_OK(daxkit_atomic_unmap(A));
    static char file[FILE_BYTES];
    at_read_file(path, file, FILE_BYTES);
    for (uint32_t i = 0; i < FILE_BYTES; i++)
        if (file[i] != model[i]) AT_FAIL("policy %u: file byte %u is %d, want %d", policy, i, file[i], model[i]);
    printf("policy %u: %llu copies, %llu reads, %llu syncs, %llu checkpointed, %llu write-time checkpoints, %llu "
           "switches\n", policy, (unsigned long long)s.copies, (unsigned long long)s.reads, (unsigned long long)s.syncs,
           (unsigned long long)s.checkpointed_entries, (unsigned long long)s.sync_checkpoints,
           (unsigned long long)s.policy_switches);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    at_seed = at_seed_from_env();
    printf("seed=%llu\n", (unsigned long long)at_seed);
    model = malloc(FILE_BYTES);
    char path[700];
    at_path(path, sizeof path, "threads.bin");
    run(path, DAXKIT_ATOMIC_UNDO);
    run(path, DAXKIT_ATOMIC_REDO);
    run(path, DAXKIT_ATOMIC_HYBRID);
    run(path, DAXKIT_ATOMIC_JOURNAL);
    printf("PASS\n");
    return 0;
}

/* Description: the daxkit_atomic_* C API against a model. Argument and error cases (-EFBIG, -EINVAL,
 * -EBUSY, -ENOENT, -ENOSPC and recovery from it, errno left alone), then a seeded random mix of copies
 * (1 B .. 300 KiB), reads checked byte for byte, syncs, and unmap/map cycles without a sync (which must
 * roll back to the last sync) under each policy (undo, redo, hybrid, journal) with and without the checkpoint
 * thread. Usage: atomic_api [DIR]; SEED=n reproduces a run. */
#include "atomic_test.h"

#define FILE_BYTES ((4u << 20) + 123u)
#define OPS 3000

static char *committed, *current, *readbuf;

static void check_file_equals(const char *path, const char *want, const char *what) {
    char *got = malloc(FILE_BYTES);
    at_read_file(path, got, FILE_BYTES);
    for (uint32_t i = 0; i < FILE_BYTES; i++)
        if (got[i] != want[i]) AT_FAIL("%s: file byte %u is %d, want %d", what, i, got[i], want[i]);
    free(got);
}

static void error_cases(const char *path) {
    struct daxkit_atomic *a, *b;
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_HYBRID, 0);
    errno = 4242;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    AT_CHECK(errno == 4242, "map changed errno to %d", errno);
    AT_CHECK(daxkit_atomic_length(a) == FILE_BYTES, "length %llu", (unsigned long long)daxkit_atomic_length(a));
    char c = 1;
    AT_CHECK(daxkit_atomic_copy(a, FILE_BYTES, &c, 1) == -EFBIG, "copy past the end");
    AT_CHECK(daxkit_atomic_copy(a, FILE_BYTES - 1, "ab", 2) == -EFBIG, "copy across the end");
    AT_CHECK(daxkit_atomic_copy(a, UINT64_MAX, &c, 1) == -EFBIG, "copy at UINT64_MAX");
    AT_CHECK(daxkit_atomic_read(a, FILE_BYTES - 1, &c, 2) == -EINVAL, "read across the end");
    AT_CHECK(daxkit_atomic_copy(NULL, 0, &c, 1) == -EINVAL, "NULL handle");
    AT_CHECK(daxkit_atomic_copy(a, 0, NULL, 1) == -EINVAL, "NULL buffer");
    AT_CHECK(daxkit_atomic_copy(a, 0, NULL, 0) == 0, "empty copy");
    AT_CHECK(daxkit_atomic_map(path, &o, &b) == -EBUSY, "second map of one file must be -EBUSY");
    AT_OK(daxkit_atomic_unmap(a));
    char missing[600];
    at_path(missing, sizeof missing, "no-such-file");
    AT_CHECK(daxkit_atomic_map(missing, &o, &a) == -ENOENT, "missing file");
    AT_CHECK(daxkit_atomic_map(at_dir, &o, &a) == -EINVAL || daxkit_atomic_map(at_dir, &o, &a) == -EISDIR,
             "a directory");
    struct daxkit_atomic_options bad = o;
    bad.version = 99;
    AT_CHECK(daxkit_atomic_map(path, &bad, &a) == -EINVAL, "bad version");
    bad = o, bad.log_bytes = 3u << 20;
    AT_CHECK(daxkit_atomic_map(path, &bad, &a) == -EINVAL, "log_bytes not a multiple of 2 MiB");
    bad = o, bad.policy = 7;
    AT_CHECK(daxkit_atomic_map(path, &bad, &a) == -EINVAL, "bad policy");
}

/* A log of one 2 MiB chunk (512 entries of 4 KiB) fills up; a sync makes the space reusable. */
static void log_full_case(const char *path) {
    char log_path[700];
    snprintf(log_path, sizeof log_path, "%s/.daxkit/full.alog", at_dir);
    at_make_file(path, FILE_BYTES, 9);
    struct daxkit_atomic *a;
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_REDO, 0);
    o.log_bytes = 2u << 20;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    char blk[100];
    memset(blk, 0x5a, sizeof blk);
    int rc = 0;
    uint32_t i;
    for (i = 0; i < 1000 && rc == 0; i++) rc = daxkit_atomic_copy(a, (uint64_t)i * 4096, blk, sizeof blk);
    AT_CHECK(rc == -ENOSPC, "filling the log: rc %d after %u copies", rc, i);
    AT_CHECK(i == 513, "a 2 MiB log holds 512 blocks, failed at copy %u", i);
    AT_OK(daxkit_atomic_sync(a));
    AT_OK(daxkit_atomic_copy(a, 600u * 4096, blk, sizeof blk)); /* reclaims committed entries */
    AT_OK(daxkit_atomic_sync(a));
    AT_OK(daxkit_atomic_unmap(a));
    (void)log_path;
}

static void random_copy(struct daxkit_atomic *a, uint64_t *rs) {
    uint64_t r = at_rand(rs);
    uint32_t n = r % 3 == 0 ? 1 + (uint32_t)(at_rand(rs) % 200)
               : r % 3 == 1 ? 1 + (uint32_t)(at_rand(rs) % 8192)
                            : 1 + (uint32_t)(at_rand(rs) % (300u << 10));
    uint64_t off = at_rand(rs) % (FILE_BYTES - n + 1);
    if (at_rand(rs) % 4 == 0) off &= ~4095ull; /* aligned ones too */
    if (off + n > FILE_BYTES) n = (uint32_t)(FILE_BYTES - off);
    char *src = malloc(n);
    for (uint32_t i = 0; i < n; i++) src[i] = (char)at_rand(rs);
    AT_OK(daxkit_atomic_copy(a, off, src, n));
    memcpy(current + off, src, n);
    free(src);
}

static void random_read(struct daxkit_atomic *a, uint64_t *rs) {
    uint32_t n = 1 + (uint32_t)(at_rand(rs) % (at_rand(rs) % 2 ? 4096 : (512u << 10)));
    uint64_t off = at_rand(rs) % (FILE_BYTES - n + 1);
    AT_OK(daxkit_atomic_read(a, off, readbuf, n));
    for (uint32_t i = 0; i < n; i++)
        if (readbuf[i] != current[off + i])
            AT_FAIL("read at %llu+%u: got %d want %d", (unsigned long long)off, i, readbuf[i], current[off + i]);
}

static void model_run(const char *path, uint32_t policy, uint32_t interval_us, uint64_t seed) {
    at_make_file(path, FILE_BYTES, (uint8_t)seed);
    at_read_file(path, committed, FILE_BYTES);
    memcpy(current, committed, FILE_BYTES);
    struct daxkit_atomic_options o = at_opts(policy, interval_us);
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    uint64_t rs = seed;
    for (uint32_t op = 0; op < OPS; op++) {
        uint64_t r = at_rand(&rs) % 100;
        if (r < 55) random_copy(a, &rs);
        else if (r < 92) random_read(a, &rs);
        else if (r < 99) {
            AT_OK(daxkit_atomic_sync(a));
            memcpy(committed, current, FILE_BYTES);
        } else {
            AT_OK(daxkit_atomic_unmap(a)); /* no sync: back to the last one */
            check_file_equals(path, committed, "after unmap without sync");
            memcpy(current, committed, FILE_BYTES);
            AT_OK(daxkit_atomic_map(path, &o, &a));
        }
    }
    struct daxkit_atomic_stats s = at_stats(a);
    AT_OK(daxkit_atomic_sync(a));
    AT_OK(daxkit_atomic_unmap(a));
    check_file_equals(path, current, "after final sync + unmap");
    printf("policy %u interval %u us: %llu copies %llu reads %llu syncs, log data %llu B, %llu checkpointed, "
           "%llu write-time checkpoints, %llu policy switches\n",
           policy, interval_us, (unsigned long long)s.copies, (unsigned long long)s.reads, (unsigned long long)s.syncs,
           (unsigned long long)s.log_data_bytes, (unsigned long long)s.checkpointed_entries,
           (unsigned long long)s.sync_checkpoints, (unsigned long long)s.policy_switches);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    at_seed = at_seed_from_env();
    printf("seed=%llu\n", (unsigned long long)at_seed);
    char path[700];
    at_path(path, sizeof path, "data.bin");
    at_make_file(path, FILE_BYTES, 1);
    error_cases(path);
    char full[700];
    at_path(full, sizeof full, "full");
    log_full_case(full);
    committed = malloc(FILE_BYTES), current = malloc(FILE_BYTES), readbuf = malloc(512u << 10);
    uint32_t policies[] = {DAXKIT_ATOMIC_UNDO, DAXKIT_ATOMIC_REDO, DAXKIT_ATOMIC_HYBRID, DAXKIT_ATOMIC_JOURNAL};
    for (int p = 0; p < 4; p++) {
        model_run(path, policies[p], 0, at_seed + (uint64_t)p);
        model_run(path, policies[p], 200, at_seed + 10 + (uint64_t)p);
    }
    printf("PASS\n");
    return 0;
}

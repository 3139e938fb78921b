/* Description: workload, recovery and checker of the atomic engine for the process-crash driver
 * (tests/crash/drive.py crashes the workload at every DK_CRASH_POINT "atomic.*" x occurrence). Not a test
 * by itself.
 *   atomic_cp workload DIR POLICY   creates DIR/f.bin, maps it (checkpoint thread every 50 us), runs
 *       EPOCHS seeded batches of copies and reads and syncs each; after each sync returns it appends
 *       "S k" to DIR/acks (write(2): survives SIGKILL). Halfway it makes an unsynced batch and unmaps and
 *       remaps (unmap rolls it back through the recovery code). Read-heavy and write-heavy batches alternate
 *       so the hybrid policy switches. POLICY: undo|redo|hybrid|journal, or uwp: the batches are stores straight
 *       into a mapping made failure-atomic by userfaultfd write-protection (src/atomic/uwp.h), committed by
 *       dk_uwp_msync (skips with 77 where that is unavailable); uwp-shadow: the same through
 *       the shmem shadow that XFS/ext4 files get (uwp_shadow.c; diffs journaled and applied at msync).
 *   atomic_cp recover DIR   maps and unmaps DIR/f.bin (recovery), twice.
 *   atomic_cp verify DIR    DIR/f.bin equals the state after the last acknowledged sync k or after k+1.
 * Exit 0 ok, 1 failure (reason printed). */
#include "atomic/uwp.h"
#include "atomic_test.h"

#define FILE_BYTES (256u << 10)
#define EPOCHS 12u
#define ROLLBACK_BATCH 1000u

static char path[700];

/* Batch k: applied to the shadow `state` (a == NULL) or through the API. */
static void batch(uint64_t k, char *state, struct daxkit_atomic *a) {
    uint64_t rs = 0x5eedull * (k + 1) | 1;
    at_rand(&rs);
    uint32_t writes = k % 2 ? 8 : 2, reads = k % 2 ? 0 : 10;
    static char buf[20000];
    for (uint32_t i = 0; i < writes + reads; i++) {
        uint32_t n = 1 + (uint32_t)(at_rand(&rs) % (i % 3 ? 300 : sizeof buf));
        uint64_t off = at_rand(&rs) % (FILE_BYTES - n + 1);
        if (i < writes)
            for (uint32_t j = 0; j < n; j++) buf[j] = (char)(at_rand(&rs) >> 5);
        if (!a) {
            if (i < writes) memcpy(state + off, buf, n);
            continue;
        }
        int rc = i < writes ? daxkit_atomic_copy(a, off, buf, n) : daxkit_atomic_read(a, off, buf, n);
        if (rc) AT_FAIL("batch %llu op %u: rc %d", (unsigned long long)k, i, rc);
    }
}

static struct daxkit_atomic *map_it(uint32_t policy, uint32_t interval_us) {
    struct daxkit_atomic_options o = at_opts(policy, interval_us);
    o.log_bytes = 4u << 20;
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    return a;
}

static int uwp_map(bool shadow, struct daxkit_atomic_options *o, struct dk_uwp **u, void **addr, size_t *len) {
    return shadow ? dk_uwp_map_shadow(path, o, u, addr, len) : dk_uwp_map(path, o, u, addr, len);
}

static int workload_uwp(int ack_fd, bool shadow) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_UNDO, 50);
    o.log_bytes = 4u << 20;
    struct dk_uwp *u;
    void *addr;
    size_t len;
    int rc = uwp_map(shadow, &o, &u, &addr, &len);
    if (rc == -EOPNOTSUPP || rc == -EPERM || rc == -ENOSYS) at_skip("userfaultfd write-protection unavailable here");
    AT_OK(rc);
    for (uint64_t k = 1; k <= EPOCHS; k++) {
        if (k == EPOCHS / 2) {
            batch(ROLLBACK_BATCH, addr, NULL); /* never msynced: unmap rolls it back */
            AT_OK(dk_uwp_unmap(u));
            AT_OK(uwp_map(shadow, &o, &u, &addr, &len));
        }
        batch(k, addr, NULL); /* stores straight into the mapping */
        AT_OK(dk_uwp_msync(u));
        char line[32];
        int n = snprintf(line, sizeof line, "S %llu\n", (unsigned long long)k);
        AT_CHECK(write(ack_fd, line, (size_t)n) == n, "ack write");
    }
    AT_OK(dk_uwp_unmap(u));
    return 0;
}

static int workload(const char *dir, const char *pol) {
    uint32_t policy = at_policy(pol);
    at_make_file(path, FILE_BYTES, 1);
    char acks[700];
    snprintf(acks, sizeof acks, "%s/acks", dir);
    int fd = open(acks, O_WRONLY | O_CREAT | O_APPEND, 0644);
    AT_CHECK(fd >= 0, "open acks");
    if (!strncmp(pol, "uwp", 3)) return workload_uwp(fd, !strcmp(pol, "uwp-shadow"));
    struct daxkit_atomic *a = map_it(policy, 50);
    for (uint64_t k = 1; k <= EPOCHS; k++) {
        if (k == EPOCHS / 2) {
            batch(ROLLBACK_BATCH, NULL, a); /* never synced: unmap rolls it back */
            AT_OK(daxkit_atomic_unmap(a));
            a = map_it(policy, 50);
        }
        batch(k, NULL, a);
        AT_OK(daxkit_atomic_sync(a));
        char line[32];
        int n = snprintf(line, sizeof line, "S %llu\n", (unsigned long long)k);
        AT_CHECK(write(fd, line, (size_t)n) == n, "ack write");
    }
    AT_OK(daxkit_atomic_unmap(a));
    return 0;
}

static int verify(const char *dir) {
    char acks[700], line[64];
    snprintf(acks, sizeof acks, "%s/acks", dir);
    uint64_t last = 0;
    FILE *f = fopen(acks, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long k;
        if (sscanf(line, "S %llu", &k) == 1) last = k;
    }
    if (f) fclose(f);
    static char state[FILE_BYTES], file[FILE_BYTES];
    char base[700];
    snprintf(base, sizeof base, "%s/base", dir);
    at_make_file(base, FILE_BYTES, 1);
    at_read_file(base, state, FILE_BYTES);
    unlink(base);
    for (uint64_t k = 1; k <= last; k++) batch(k, state, NULL);
    at_read_file(path, file, FILE_BYTES);
    if (memcmp(state, file, FILE_BYTES) == 0) return 0;
    if (last < EPOCHS) batch(last + 1, state, NULL);
    if (memcmp(state, file, FILE_BYTES) == 0) return 0;
    AT_FAIL("the file is neither the state of sync %llu (acknowledged) nor of sync %llu", (unsigned long long)last,
            (unsigned long long)last + 1);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: atomic_cp workload DIR POLICY | recover DIR | verify DIR\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/f.bin", argv[2]);
    if (!strcmp(argv[1], "workload")) return workload(argv[2], argc > 3 ? argv[3] : "hybrid");
    if (!strcmp(argv[1], "recover")) {
        if (access(path, F_OK) != 0) return 0; /* crashed before the file existed */
        for (int i = 0; i < 2; i++) AT_OK(daxkit_atomic_unmap(map_it(DAXKIT_ATOMIC_HYBRID, 0)));
        return 0;
    }
    if (!strcmp(argv[1], "verify")) {
        if (access(path, F_OK) != 0) return 0;
        return verify(argv[2]);
    }
    return 2;
}

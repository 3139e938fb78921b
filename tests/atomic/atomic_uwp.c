/* Description: failure-atomic msync for a program that stores into its mapping (src/atomic/uwp.h,
 * userfaultfd write-protect mode). First in-process: stores fault once per page per epoch, msync commits,
 * unmap without msync rolls back. Then crashes: a child maps a file, and in a loop stores seeded bytes
 * straight into the mapping (memcpy, as an unmodified program would) and calls dk_uwp_msync, reporting each
 * completed one on a pipe; the parent SIGKILLs it at random points, recovers (daxkit_atomic_map/unmap), and
 * the file must equal the state of the last reported msync or of the one in flight. Skips (77) where
 * userfaultfd write-protection is not available for the directory's memory (only tmpfs/hugetlbfs on 6.x).
 * Usage: atomic_uwp [DIR]; SEED=n reproduces, ROUNDS=n (default 60). */
#include <signal.h>
#include <sys/wait.h>

#include "atomic/uwp.h"
#include "atomic_test.h"

#define FILE_BYTES (512u << 10)

static char path[700];

static void epoch_stores(uint64_t round, uint64_t k, char *dst) {
    uint64_t rs = at_seed ^ round * 0x9e3779b97f4a7c15ull ^ k * 0xbf58476d1ce4e5b9ull;
    at_rand(&rs);
    uint32_t stores = 1 + (uint32_t)(at_rand(&rs) % 10);
    static char buf[9000];
    for (uint32_t i = 0; i < stores; i++) {
        uint32_t n = 1 + (uint32_t)(at_rand(&rs) % (i % 2 ? 64 : sizeof buf));
        uint64_t off = at_rand(&rs) % (FILE_BYTES - n + 1);
        for (uint32_t j = 0; j < n; j++) buf[j] = (char)(at_rand(&rs) >> 9);
        memcpy(dst + off, buf, n);
    }
}

static bool shadow; /* UWP_SHADOW=1: the shmem shadow (uwp_shadow.c) even on tmpfs; XFS/ext4 take it anyway */

static int map(struct daxkit_atomic_options *o, struct dk_uwp **u, void **addr, size_t *len) {
    return shadow ? dk_uwp_map_shadow(path, o, u, addr, len) : dk_uwp_map(path, o, u, addr, len);
}

static struct daxkit_atomic_options opts(void) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_UNDO, 100);
    o.log_bytes = 8u << 20;
    return o;
}

static void basic(void) {
    struct daxkit_atomic_options o = opts();
    struct dk_uwp *u;
    void *addr;
    size_t len;
    int rc = map(&o, &u, &addr, &len);
    if (rc == -EOPNOTSUPP || rc == -EPERM || rc == -ENOSYS) {
        fprintf(stderr, "SKIP: userfaultfd write-protection unavailable for %s (%s)\n", at_dir, strerror(-rc));
        exit(77);
    }
    AT_OK(rc);
    printf("mode: %s\n", dk_uwp_shadowed(u) ? "shmem shadow of the file" : "the file's mapping write-protected");
    AT_CHECK(len == FILE_BYTES, "length");
    char *m = addr;
    static char want[FILE_BYTES], got[FILE_BYTES];
    memcpy(want, m, FILE_BYTES);
    m[10] = 'a', m[20] = 'b', m[5000] = 'c';
    AT_CHECK(dk_uwp_faults(u) == 2, "2 pages stored into: %llu faults", dk_uwp_faults(u));
    AT_OK(dk_uwp_msync(u));
    want[10] = 'a', want[20] = 'b', want[5000] = 'c';
    m[30] = 'd';
    AT_CHECK(dk_uwp_faults(u) == 3, "a page is protected again after msync: %llu faults", dk_uwp_faults(u));
    AT_OK(dk_uwp_unmap(u)); /* no msync: 'd' rolls back */
    at_read_file(path, got, FILE_BYTES);
    AT_CHECK(memcmp(got, want, FILE_BYTES) == 0, "unmap without msync must roll back to the last msync");
}

static void send_u64(int fd, uint64_t v) {
    if (write(fd, &v, sizeof v) != sizeof v) _exit(4);
}

static __attribute__((noreturn)) void child(uint64_t round, int fd) {
    struct daxkit_atomic_options o = opts();
    struct dk_uwp *u;
    void *addr;
    size_t len;
    if (map(&o, &u, &addr, &len)) _exit(2);
    send_u64(fd, at_hash(addr, FILE_BYTES));
    for (uint64_t k = 1;; k++) {
        epoch_stores(round, k, addr);
        if (dk_uwp_msync(u)) _exit(3);
        send_u64(fd, k);
    }
}

static uint64_t recovered_hash(void) {
    struct daxkit_atomic_options o = opts();
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    AT_OK(daxkit_atomic_unmap(a));
    static char buf[FILE_BYTES];
    at_read_file(path, buf, FILE_BYTES);
    return at_hash(buf, FILE_BYTES);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    at_seed = at_seed_from_env();
    shadow = getenv("UWP_SHADOW") && atoi(getenv("UWP_SHADOW"));
    uint32_t rounds = getenv("ROUNDS") ? (uint32_t)atoi(getenv("ROUNDS")) : 60;
    printf("atomic_uwp seed=%llu rounds=%u dir=%s\n", (unsigned long long)at_seed, rounds, at_dir);
    at_path(path, sizeof path, "mapped.bin");
    at_make_file(path, FILE_BYTES, 2);
    basic();
    static char base[FILE_BYTES], next[FILE_BYTES];
    at_read_file(path, base, FILE_BYTES);
    uint64_t rs = at_seed, msyncs = 0;
    for (uint32_t round = 1; round <= rounds; round++) {
        int p[2];
        AT_CHECK(pipe(p) == 0, "pipe");
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            child(round, p[1]);
        }
        close(p[1]);
        struct timespec ts = {0, (long)(at_rand(&rs) % 30000) * 1000};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        AT_CHECK(WIFSIGNALED(st), "round %u: child exited by itself (0x%x)", round, st);
        uint64_t v, h0 = 0, last = 0;
        bool got_h0 = false;
        while (read(p[0], &v, sizeof v) == sizeof v) {
            if (!got_h0) h0 = v, got_h0 = true;
            else last = v;
        }
        close(p[0]);
        if (got_h0) AT_CHECK(h0 == at_hash(base, FILE_BYTES), "round %u: the child mapped an unexpected state", round);
        for (uint64_t k = 1; got_h0 && k <= last; k++) epoch_stores(round, k, base);
        memcpy(next, base, FILE_BYTES);
        if (got_h0) epoch_stores(round, last + 1, next);
        uint64_t h = recovered_hash();
        if (h == at_hash(next, FILE_BYTES)) memcpy(base, next, FILE_BYTES);
        else AT_CHECK(h == at_hash(base, FILE_BYTES), "round %u: after recovery the file is neither msync %llu nor %llu",
                      round, (unsigned long long)last, (unsigned long long)last + 1);
        msyncs += last;
    }
    printf("PASS: %u rounds, %llu msyncs seen\n", rounds, (unsigned long long)msyncs);
    return 0;
}

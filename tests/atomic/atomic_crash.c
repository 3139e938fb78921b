/* Description: process crashes. A child maps a file through daxkit_atomic_*, and in a loop makes a seeded
 * batch of copies (1 B .. 70 KiB) and reads, syncs, and reports each completed sync on a pipe; the parent
 * SIGKILLs it after a random delay (sometimes while it is still mapping, i.e. during recovery). The parent
 * keeps a shadow of the file and the content hash of every sync's state: after recovery the file must equal
 * the state of the last reported sync or of the one in flight -- never a mix. Every third round the parent
 * leaves recovery to the next child (which reports the hash it recovered to before doing anything else).
 * Usage: atomic_crash POLICY [DIR]   POLICY: undo|redo|hybrid; SEED=n reproduces, ROUNDS=n (default 120). */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "atomic_test.h"

#define FILE_BYTES ((1u << 20) + 77u)
#define PENDING_MAX 2

static uint32_t policy;
static char path[700];

/* The batch of epoch k of round r: applies it to `state` (the shadow) or to the mapped file `a`. */
static void epoch_ops(uint32_t round, uint64_t k, char *state, struct daxkit_atomic *a) {
    uint64_t rs = at_seed ^ (round * 0x9e3779b97f4a7c15ull) ^ (k * 0xbf58476d1ce4e5b9ull);
    at_rand(&rs);
    uint32_t writes = 1 + (uint32_t)(at_rand(&rs) % 12), reads = (uint32_t)(at_rand(&rs) % 20);
    static char buf[70000];
    for (uint32_t i = 0; i < writes + reads; i++) {
        uint64_t r = at_rand(&rs);
        uint32_t n = 1 + (uint32_t)(at_rand(&rs) % (r % 3 == 0 ? 150 : r % 3 == 1 ? 5000 : sizeof buf));
        uint64_t off = at_rand(&rs) % (FILE_BYTES - n + 1);
        bool is_write = i < writes;
        if (is_write)
            for (uint32_t j = 0; j < n; j++) buf[j] = (char)(at_rand(&rs) >> 7);
        if (!a) {
            if (is_write) memcpy(state + off, buf, n);
            continue;
        }
        int rc = is_write ? daxkit_atomic_copy(a, off, buf, n) : daxkit_atomic_read(a, off, buf, n);
        if (rc) {
            fprintf(stderr, "child: %s rc %d\n", is_write ? "copy" : "read", rc);
            _exit(3);
        }
    }
}

static void send_u64(int fd, uint64_t v) {
    if (write(fd, &v, sizeof v) != sizeof v) _exit(4);
}

static __attribute__((noreturn)) void child_main(uint32_t round, int fd) {
    struct daxkit_atomic_options o = at_opts(policy, 100);
    o.log_bytes = policy == DAXKIT_ATOMIC_JOURNAL ? 2u << 20 : 8u << 20; /* the journal goes round */
    struct daxkit_atomic *a;
    int rc = daxkit_atomic_map(path, &o, &a);
    if (rc) {
        fprintf(stderr, "child: map rc %d\n", rc);
        _exit(2);
    }
    static char start[FILE_BYTES];
    if (daxkit_atomic_read(a, 0, start, FILE_BYTES)) _exit(5);
    send_u64(fd, at_hash(start, FILE_BYTES));
    for (uint64_t k = 1;; k++) {
        epoch_ops(round, k, NULL, a);
        if (daxkit_atomic_sync(a)) _exit(6);
        send_u64(fd, k);
    }
}

struct candidates {
    char *state[PENDING_MAX];
    uint32_t n;
};

/* Which candidate has this hash; fails the test when none. */
static uint32_t match(const struct candidates *c, uint64_t h, const char *what, uint32_t round) {
    for (uint32_t i = 0; i < c->n; i++)
        if (at_hash(c->state[i], FILE_BYTES) == h) return i;
    AT_FAIL("round %u: %s: the file matches none of the %u sync states it may hold", round, what, c->n);
}

static uint64_t file_hash_after_recovery(void) {
    struct daxkit_atomic_options o = at_opts(policy, 0);
    o.log_bytes = policy == DAXKIT_ATOMIC_JOURNAL ? 2u << 20 : 8u << 20; /* the journal goes round */
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    AT_OK(daxkit_atomic_unmap(a));
    static char buf[FILE_BYTES];
    at_read_file(path, buf, FILE_BYTES);
    return at_hash(buf, FILE_BYTES);
}

/* Runs a child for a random while; returns the last sync it reported (0: none), *h0 its start hash. */
static uint64_t run_child(uint32_t round, uint64_t *rs, bool *got_h0, uint64_t *h0) {
    int p[2];
    if (pipe(p) != 0) AT_FAIL("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) AT_FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        close(p[0]);
        child_main(round, p[1]);
    }
    close(p[1]);
    uint64_t delay_us = at_rand(rs) % 4 == 0 ? at_rand(rs) % 3000 : at_rand(rs) % 40000;
    struct timespec ts = {0, (long)delay_us * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status)) AT_FAIL("round %u: child ended by itself (status 0x%x)", round, status);
    uint64_t v, last = 0;
    *got_h0 = false;
    while (read(p[0], &v, sizeof v) == sizeof v) {
        if (!*got_h0) *h0 = v, *got_h0 = true;
        else last = v;
    }
    close(p[0]);
    return last;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: atomic_crash undo|redo|hybrid|journal [DIR]\n");
        return 2;
    }
    policy = at_policy(argv[1]);
    at_setup_dir(argc - 1, argv + 1);
    at_seed = at_seed_from_env();
    uint32_t rounds = getenv("ROUNDS") ? (uint32_t)atoi(getenv("ROUNDS")) : 120;
    printf("atomic_crash %s seed=%llu rounds=%u dir=%s\n", argv[1], (unsigned long long)at_seed, rounds, at_dir);
    at_path(path, sizeof path, "crash.bin");
    at_make_file(path, FILE_BYTES, 3);
    struct candidates c = {.n = 1};
    for (uint32_t i = 0; i < PENDING_MAX; i++) c.state[i] = malloc(FILE_BYTES);
    char *base = malloc(FILE_BYTES);
    at_read_file(path, c.state[0], FILE_BYTES);
    uint64_t rs = at_seed, syncs_total = 0, kills_before_report = 0;
    for (uint32_t round = 1; round <= rounds; round++) {
        bool parent_recovers = round % 3 != 0;
        if (parent_recovers) {
            uint32_t i = match(&c, file_hash_after_recovery(), "after recovery", round);
            memcpy(c.state[0], c.state[i], FILE_BYTES), c.n = 1;
        }
        bool got_h0;
        uint64_t h0 = 0;
        uint64_t last = run_child(round, &rs, &got_h0, &h0);
        if (!got_h0) {
            kills_before_report++;
            continue; /* killed while mapping/recovering: the candidates stand */
        }
        memcpy(base, c.state[match(&c, h0, "as the child recovered it", round)], FILE_BYTES);
        for (uint64_t k = 1; k <= last; k++) epoch_ops(round, k, base, NULL);
        memcpy(c.state[0], base, FILE_BYTES);
        memcpy(c.state[1], base, FILE_BYTES);
        epoch_ops(round, last + 1, c.state[1], NULL); /* the sync in flight may have completed */
        c.n = 2;
        syncs_total += last;
    }
    match(&c, file_hash_after_recovery(), "at the end", rounds);
    printf("PASS: %u rounds, %llu syncs seen, %llu kills before the child had recovered\n", rounds,
           (unsigned long long)syncs_total, (unsigned long long)kills_before_report);
    return 0;
}

/* Description: extend-strategy appends against the kernel, seeded (session 26, for 772b0b9's append_store:
 * below 16 KiB, on a medium that does not persist by flushing, an extend append is stored with memcpy in a loop
 * of its own over the mapping's 2 MiB chunks; 16 KiB and up, and every append on a flush medium, through
 * up_io_overwrite's non-temporal copy, 751423f's dk_copy_nt_unflushed).
 *
 * One sequence of appends, drawn from the seed, is made twice: by the kernel into a file outside the managed
 * directory (raw system calls: the reference), and under the library into a managed file with
 * DAXKIT_APPEND=extend. Sizes 1 B .. 64 KiB: small records, 16381-16387 (both sides of the threshold), powers
 * of two and their neighbours, and near each 2 MiB multiple a record that ends just before it, on it, or
 * crosses it by up to 8000 bytes (a step's end, a mapping extent's end: append_store's loop makes two chunks,
 * the second in another mapping). Offsets are unaligned. Each append is a write(2) on an O_APPEND descriptor
 * or a pwrite at the end on another descriptor of the file, as the seed says. At random points (and after
 * many boundary crossings) an fdatasync through either descriptor, then a reader in another process without
 * the library (shim_check synced) runs while the appends go on: the bytes up to the synced size must equal
 * the reference, every byte past them 0 or the reference's (the extension's zeros, stores in progress). The
 * writer's own view is checked at each sync (fstat's size, a pread of the last record). At the end the whole
 * file is read back through the library, the descriptors closed, and shim_check image compares the kernel
 * file with the reference (size too: the extension cut at the close).
 *
 * Negative controls (session 26, each with the library rebuilt): append_store's chunk never split (chunk = n),
 * and split one byte late (+ 1): see the commit message and docs/testing-shim.md.
 * Run with DAXKIT_APPEND=extend, DAXKIT_EXTEND_SYNC=cut or keep. Usage: shim_append_store DIR [SEED]. */
#include <time.h>

#include "shim_test.h"

#define TOTAL_BYTES (10ull << 20) /* 5 multiples of 2 MiB: steps at 2, 4, 8 MiB, mapping extents */
#define OPS_MAX 20000
#define HUGE_BYTES (2ull << 20)
#define CACHED_BYTES 16384 /* io.c: UP_APPEND_CACHED_BYTES */

struct op {
    uint64_t off;
    uint32_t n;
    uint8_t by_pwrite, sync;
};
static struct op ops[OPS_MAX];
static unsigned nops;

static uint64_t rng;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t pick_size(uint64_t size) {
    uint64_t to_boundary = (size / HUGE_BYTES + 1) * HUGE_BYTES - size; /* 1 .. 2 MiB */
    if (to_boundary > 12000 && to_boundary <= 65536 && rnd() % 8) /* to within 12000 bytes of it */
        return (uint32_t)(to_boundary - 1 - rnd() % 12000);
    if (to_boundary <= 12000 && rnd() % 8) { /* ends before, on, or past the next 2 MiB multiple */
        int64_t n = (int64_t)to_boundary + (rnd() % 3 == 0 ? (int64_t)(rnd() % 5) - 2 : (int64_t)(rnd() % 8000));
        if (n >= 1 && n < CACHED_BYTES) return (uint32_t)n;
    }
    static const uint32_t odd[] = {63, 64, 65, 255, 256, 257, 4095, 4096, 4097, 8191, 8193, 16383, 16384, 16385, 32769, 65536};
    switch (rnd() % 8) {
    case 0:
    case 1:
    case 2: return 1 + (uint32_t)(rnd() % 600);
    case 3:
    case 4: return CACHED_BYTES - 3 + (uint32_t)(rnd() % 7);
    case 5: return odd[rnd() % (sizeof odd / sizeof odd[0])];
    default: return 1 + (uint32_t)(rnd() % 65536);
    }
}

static void generate(void) {
    uint64_t size = 0;
    while (size < TOTAL_BYTES) {
        CHECK(nops < OPS_MAX, "more than %u appends", OPS_MAX);
        struct op *o = &ops[nops++];
        o->off = size, o->n = pick_size(size), o->by_pwrite = rnd() % 2;
        bool crosses = size / HUGE_BYTES != (size + o->n - 1) / HUGE_BYTES;
        o->sync = rnd() % 40 == 0 || (crosses && rnd() % 2);
        size += o->n;
    }
}

/* The kernel's run: the same appends, raw system calls. */
static void reference(const char *path, uint32_t seed, char *buf) {
    int fa = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    int fp = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
    CHECK(fa >= 0 && fp >= 0, "reference %s: %s", path, strerror(errno));
    for (unsigned i = 0; i < nops; i++) {
        st_fill(buf, seed, ops[i].off, ops[i].n);
        long w = ops[i].by_pwrite ? syscall(SYS_pwrite64, fp, buf, ops[i].n, ops[i].off) : syscall(SYS_write, fa, buf, ops[i].n);
        CHECK(w == (long)ops[i].n, "reference append %u: %ld", i, w);
    }
    syscall(SYS_close, fa);
    syscall(SYS_close, fp);
}

/* A reader in another process without the library (st_check_v's way), not waited for here. */
static long reader_start(const char *data, const char *ref, uint64_t synced) {
    static char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)synced);
    static char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    char *argv[] = {(char *)st_check_bin(), "synced", (char *)data, (char *)ref, num, NULL};
    long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        syscall(SYS_execve, argv[0], argv, envp);
        syscall(SYS_exit_group, 126);
    }
    CHECK(pid > 0, "clone for shim_check: %s", strerror(errno));
    return pid;
}
static void reader_wait(long *pid, uint64_t synced, uint64_t seed) {
    if (*pid <= 0) return;
    int status = 0;
    while (syscall(SYS_wait4, *pid, &status, 0, NULL) < 0)
        CHECK(errno == EINTR, "wait4: %s", strerror(errno));
    *pid = 0;
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "a reader in another process after the fdatasync at %llu saw other bytes (status %#x); seed=%llu",
          (unsigned long long)synced, status, (unsigned long long)seed);
}

int main(int argc, char **argv) {
    if (argc < 2) FAIL("usage: shim_append_store DIR [SEED]");
    const char *strategy = getenv("DAXKIT_APPEND");
    if (!strategy || strcmp(strategy, "extend") != 0) SKIP("run with DAXKIT_APPEND=extend");
    st_watchdog(240);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)ts.tv_nsec * 1000003u ^ (uint64_t)getpid();
    const char *sync_env = getenv("DAXKIT_EXTEND_SYNC");
    printf("seed=%llu (reproduce: run.sh MEDIUM --env DAXKIT_APPEND=extend --env DAXKIT_EXTEND_SYNC=%s "
           "shim_append_store %llu)\n",
           (unsigned long long)seed, sync_env ? sync_env : "cut", (unsigned long long)seed);
    fflush(stdout);
    rng = seed;
    uint32_t pat = (uint32_t)(seed ^ (seed >> 32));
    /* what the sequence is for: the chunk loop's two chunks, both sides of the threshold -- drawn again (the same
     * seed, the generator's next numbers) until it covers them, so that no seed fails for its draw */
    unsigned crossing_small = 0, threshold = 0, syncs = 0, draws = 0;
    while (crossing_small < 3 || threshold < 4 || syncs < 4) {
        CHECK(draws++ < 1000, "seed=%llu: 1000 draws without 3 small appends across a 2 MiB multiple, 4 of "
              "16383-16385 bytes and 4 syncs", (unsigned long long)seed);
        nops = 0;
        generate();
        crossing_small = threshold = syncs = 0;
        for (unsigned i = 0; i < nops; i++) {
            const struct op *o = &ops[i];
            if (o->n < CACHED_BYTES && o->off / HUGE_BYTES != (o->off + o->n - 1) / HUGE_BYTES) crossing_small++;
            if (o->n >= CACHED_BYTES - 1 && o->n <= CACHED_BYTES + 1) threshold++;
            syncs += o->sync;
        }
    }
    uint64_t total = ops[nops - 1].off + ops[nops - 1].n;

    char data[PATH_MAX], ref[PATH_MAX];
    st_path(data, sizeof data, argv[1], "append-store");
    snprintf(ref, sizeof ref, "%s/../append-store-ref", argv[1]);
    char *buf = malloc(65536 + 8);
    CHECK(buf, "malloc");
    reference(ref, pat, buf);

    uint64_t extends0 = st_counter(DK_C_extends);
    int fa = OK(open(data, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644));
    int fp = OK(open(data, O_WRONLY));
    int fr = OK(open(data, O_RDONLY));
    long reader = 0;
    uint64_t reader_synced = 0;
    for (unsigned i = 0; i < nops; i++) {
        const struct op *o = &ops[i];
        st_fill(buf, pat, o->off, o->n);
        ssize_t w = o->by_pwrite ? pwrite(fp, buf, o->n, (off_t)o->off) : write(fa, buf, o->n);
        CHECK(w == (ssize_t)o->n, "append %u (%u bytes at %llu, %s) returned %zd errno %d; seed=%llu", i, o->n,
              (unsigned long long)o->off, o->by_pwrite ? "pwrite" : "O_APPEND write", w, errno,
              (unsigned long long)seed);
        if (!o->sync) continue;
        uint64_t end = o->off + o->n;
        OK(fdatasync(rnd() % 2 ? fa : fp));
        CHECK(st_fsize(fr) == (off_t)end, "seed=%llu: fstat after append %u says %lld, expected %llu",
              (unsigned long long)seed, i, (long long)st_fsize(fr), (unsigned long long)end);
        char *back = buf; /* the record just written, read back through the library */
        memset(back, 0, o->n);
        CHECK(pread(fr, back, o->n, (off_t)o->off) == (ssize_t)o->n, "pread of append %u", i);
        long m = st_mismatch(back, pat, o->off, o->n);
        CHECK(m < 0, "seed=%llu: append %u (%u bytes at %llu): byte %ld reads 0x%02x through the library",
              (unsigned long long)seed, i, o->n, (unsigned long long)o->off, m, (uint8_t)back[m]);
        reader_wait(&reader, reader_synced, seed);
        reader = reader_start(data, ref, end), reader_synced = end;
    }
    reader_wait(&reader, reader_synced, seed);
    CHECK(st_counter(DK_C_extends) > extends0, "no extend-strategy step counted: not the extend strategy?");

    /* the library's view of the whole file, then the kernel's after the close */
    CHECK(st_fsize(fr) == (off_t)total, "size %lld, expected %llu", (long long)st_fsize(fr), (unsigned long long)total);
    char *all = malloc(total);
    CHECK(all, "malloc");
    CHECK(pread(fr, all, total, 0) == (ssize_t)total, "pread of the whole file");
    long m = st_mismatch(all, pat, 0, total);
    CHECK(m < 0, "seed=%llu: byte %ld reads 0x%02x through the library, expected 0x%02x", (unsigned long long)seed,
          m, (uint8_t)all[m], st_pat(pat, (uint64_t)m));
    OK(close(fa));
    OK(close(fp));
    OK(close(fr));
    CHECK(st_check("image", data, ref) == 0, "seed=%llu: the file differs from the kernel's (shim_check above)",
          (unsigned long long)seed);
    printf("ok: %u appends (%u small across a 2 MiB multiple, %u of 16383-16385 bytes, %u fdatasyncs, each with a "
           "reader), %llu bytes as the kernel's\n",
           nops, crossing_small, threshold, syncs, (unsigned long long)total);
    unlink(data);
    unlink(ref);
    return 0;
}

/* Description: strict mode's logging cost per operation, counted (not estimated) through the persist trace
 * hooks while the real strict path (libdkcore: up_init, up_pwrite, up_fsync, up_close) serves writes on a
 * tmpfs directory with DAXKIT_PERSIST=flush. Every store is attributed to the mapping it lands in
 * (/proc/self/maps: the operation log, the strict staging file, or the data file). Asserted per operation:
 *   4 KiB overwrite (staged)   1 record = ONE 64-byte log line, 4 KiB staged, nothing applied (the bytes wait
 *                              in the staging file for the checkpoint), ONE fence (the record carries the
 *                              crc32c of the staged bytes, so one fence covers both: explore_apply.c; two
 *                              until session 8)
 *   the next read              applies the waiting overwrites (4 KiB each into the file), no log line, no fence
 *   100 B overwrite (inline)   1 record = one head line + 3 data lines (the bytes), 100 B applied, ONE fence
 *   40 B overwrite (inline)    1 record = one head line + 1 data line, 40 B applied, ONE fence
 *   one block written 1,000 times: the next read applies it once (4 KiB into the file), the newest bytes
 *   DAXKIT_STRICT_APPLY=write  a 4 KiB overwrite applied at once: 4 KiB staged, 4 KiB applied, one fence;
 *                              12 MiB of such writes take exactly one checkpoint (the staging file is
 *                              reused after 8 MiB, not at its 64 MiB end)
 *   auto, after applies that coalesced nothing: applied at once as well
 *   fsync                      the waiting overwrites applied (4 KiB each: other processes read them after
 *                              fsync), no log line, no fence, no checkpoint (every write is durable already)
 *   close (checkpoint)         nothing left to apply, two fences (the applied bytes, then the new
 *                              generation's header line); the kernel file then holds them
 * and the bytes read back. Exit 0 pass, 1 fail, 77 skip (no /dev/shm). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/config.h"
#include "persist/persist.h"

/* The user-space path's entry points (src/upath/upath.h), declared here so this test does not depend on
 * the header's other declarations. */
struct up_slot;
void up_init(void);
void up_fini(void);
int up_adopt(int fd, int oflags, const char *path);
struct up_slot *up_serving(int fd);
ssize_t up_pwrite(struct up_slot *s, int fd, const void *buf, size_t n, off_t off);
ssize_t up_pread(struct up_slot *s, int fd, void *buf, size_t n, off_t off);
int up_fsync(struct up_slot *s, int fd, bool datasync);
int up_close(int fd);
void up_strict_checkpoint_all(void);

#define OPS 1000u
#define FILE_BYTES (8u << 20)
#define EVENTS_MAX (OPS * 8u)

enum where { W_LOG, W_STAGING, W_FILE, W_OTHER, W_COUNT };
static const char *where_name[W_COUNT] = {"log", "staging", "file", "other"};

struct event {
    uintptr_t p;
    size_t n;
    char kind; /* 's' store, 'f' write-back, 'F' fence */
};
static struct event events[EVENTS_MAX];
static unsigned event_count, event_overflow;
static unsigned long failures;

static void push(char kind, const void *p, size_t n) {
    if (event_count == EVENTS_MAX) {
        event_overflow++;
        return;
    }
    events[event_count++] = (struct event){(uintptr_t)p, n, kind};
}
static void on_store(const void *p, size_t n, int nt) { (void)nt, push('s', p, n); }
static void on_flush(const void *p, size_t n) { push('f', p, n); }
static void on_fence(void) { push('F', NULL, 0); }
static const struct dk_persist_trace counter = {on_store, on_flush, on_fence};

/* Which mapping holds p: by the path of its /proc/self/maps line. */
static enum where where_of(uintptr_t p) {
    FILE *m = fopen("/proc/self/maps", "r");
    char line[4608];
    enum where w = W_OTHER;
    while (m && fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || p < lo || p >= hi) continue;
        size_t k = strcspn(line, "\n");
        line[k] = 0;
        if (k > 4 && !strcmp(line + k - 4, ".log")) w = W_LOG;
        else if (k > 4 && !strcmp(line + k - 4, ".stg")) w = W_STAGING;
        else if (k > 6 && !strcmp(line + k - 6, "/data0")) w = W_FILE;
        break;
    }
    if (m) fclose(m);
    return w;
}

struct tally {
    unsigned long store_bytes[W_COUNT], stores[W_COUNT], fences;
};

/* Attributes the recorded events (addresses are looked up once per 2 MiB chunk). */
static struct tally tally_events(void) {
    struct tally t = {0};
    uintptr_t cache_chunk[16] = {0};
    enum where cache_where[16];
    for (unsigned i = 0; i < event_count; i++) {
        const struct event *e = &events[i];
        if (e->kind == 'F') {
            t.fences++;
            continue;
        }
        if (e->kind != 's') continue;
        uintptr_t chunk = e->p >> 21;
        unsigned slot = (unsigned)(chunk % 16);
        if (cache_chunk[slot] != chunk + 1) cache_chunk[slot] = chunk + 1, cache_where[slot] = where_of(e->p);
        t.stores[cache_where[slot]]++;
        t.store_bytes[cache_where[slot]] += e->n;
    }
    event_count = 0;
    return t;
}

static void expect(const char *what, unsigned long ops, unsigned long log_bytes, unsigned long staged_bytes,
                   unsigned long file_bytes, unsigned long fences) {
    struct tally t = tally_events();
    int ok = !event_overflow && t.store_bytes[W_LOG] == ops * log_bytes && t.store_bytes[W_STAGING] == ops * staged_bytes &&
             t.store_bytes[W_FILE] == ops * file_bytes && t.store_bytes[W_OTHER] == 0 && t.fences == ops * fences;
    printf("%-26s %5lu ops: per op %5.1f log lines, %6.0f B staged, %6.0f B applied, %4.2f fences (other %lu B) -> %s\n",
           what, ops, (double)t.store_bytes[W_LOG] / 64.0 / (double)ops, (double)t.store_bytes[W_STAGING] / (double)ops,
           (double)t.store_bytes[W_FILE] / (double)ops, (double)t.fences / (double)ops, t.store_bytes[W_OTHER],
           ok ? "ok" : "FAIL");
    if (!ok)
        printf("  expected per op: %lu log lines, %lu B staged, %lu B applied, %lu fences%s\n", log_bytes / 64,
               staged_bytes, file_bytes, fences, event_overflow ? " (event buffer overflowed)" : "");
    failures += !ok;
    event_overflow = 0;
    (void)where_name;
}

static void fill(unsigned char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed * 131 + i * 7 + 1);
}

/* n-byte overwrites at `stride` apart: counted, then read back (unless what follows is counted first). */
static void overwrites(struct up_slot *s, int fd, size_t n, uint64_t stride, unsigned seed, bool read_back) {
    _Static_assert(OPS * 4096ull <= FILE_BYTES, "writes of one pass never overlap");
    static unsigned char buf[4096], back[4096];
    dk_persist_set_trace(&counter);
    for (unsigned i = 0; i < OPS; i++) {
        fill(buf, n, seed + i);
        if (up_pwrite(s, fd, buf, n, (off_t)((i * stride) % FILE_BYTES)) != (ssize_t)n) failures++;
    }
    dk_persist_set_trace(NULL);
    for (unsigned i = 0; i < OPS && read_back; i++) {
        fill(buf, n, seed + i);
        uint64_t off = (i * stride) % FILE_BYTES;
        if (up_pread(s, fd, back, n, (off_t)off) != (ssize_t)n || memcmp(buf, back, n)) {
            if (failures++ < 10) printf("FAIL: %zu-byte write %u reads back wrong\n", n, i);
        }
    }
}

int main(void) {
    struct stat sb;
    if (stat("/dev/shm", &sb) != 0) return printf("SKIP: no /dev/shm\n"), 77;
    char dir[] = "/dev/shm/dk-strict-cost.XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    setenv("DAXKIT_DIR", dir, 1);
    setenv("DAXKIT_MODE", "strict", 1);
    setenv("DAXKIT_PERSIST", "flush", 1);
    setenv("DAXKIT_STATS", "0", 1);
    unsetenv("DAXKIT_STRICT_INLINE_BYTES");
    setenv("DAXKIT_STRICT_APPLY", "checkpoint", 1); /* not auto: the counts below would switch it off */
    up_init();
    char path[128];
    snprintf(path, sizeof path, "%s/data0", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    /* Allocated, not a hole: overwrites of holes are the kernel's (src/upath/holes.c). */
    if (fd < 0 || fallocate(fd, 0, 0, FILE_BYTES) != 0) return perror("data file"), 1;
    if (up_adopt(fd, O_RDWR, path) != 0 || !up_serving(fd)) return printf("FAIL: the file is not served\n"), 1;
    struct up_slot *s = up_serving(fd);
    static unsigned char warm[4096];
    /* First use: maps the file, creates the log and the staging file (not counted). */
    if (up_pwrite(s, fd, warm, 4096, 0) != 4096 || up_pwrite(s, fd, warm, 100, 8192) != 100)
        return printf("FAIL: first writes\n"), 1;

    overwrites(s, fd, 4096, 4096, 1, false);
    expect("4 KiB overwrite (staged)", OPS, 64, 4096, 0, 1);
    static unsigned char one;
    dk_persist_set_trace(&counter);
    if (up_pread(s, fd, &one, 1, 0) != 1) failures++;
    dk_persist_set_trace(NULL);
    expect("next read (applies them)", 1, 0, 0, OPS * 4096ul, 0);
    overwrites(s, fd, 4096, 4096, 1, true); /* the same bytes again, read back */
    event_count = 0;
    overwrites(s, fd, 100, 4096, 2, true);
    expect("100 B overwrite (inline)", OPS, 4 * 64, 0, 100, 1);
    overwrites(s, fd, 40, 512, 3, true);
    expect("40 B overwrite (inline)", OPS, 2 * 64, 0, 40, 1);
    /* One block overwritten OPS times: the apply stores only the newest. */
    overwrites(s, fd, 4096, 0, 7, false);
    expect("4 KiB overwrite of 1 block", OPS, 64, 4096, 0, 1);
    static unsigned char want1[4096], got1[4096];
    dk_persist_set_trace(&counter);
    if (up_pread(s, fd, got1, 4096, 0) != 4096) failures++;
    dk_persist_set_trace(NULL);
    expect("next read (coalesced)", 1, 0, 0, 4096, 0);
    fill(want1, 4096, 7 + OPS - 1);
    if (memcmp(want1, got1, 4096)) failures++, printf("FAIL: the coalesced block is not the newest write\n");
    dk_cfg.strict_apply = 1; /* DAXKIT_STRICT_APPLY=write */
    up_strict_checkpoint_all(); /* the staging file from its start: the next 4 MiB stay below the reuse mark */
    overwrites(s, fd, 4096, 4096, 5, true);
    expect("4 KiB overwrite, apply=write", OPS, 64, 4096, 4096, 1);
    /* apply=write reuses the staging file after 8 MiB (a checkpoint: one header line, two fences) instead of
     * at its 64 MiB end: 3,000 more 4 KiB writes (12 MiB staged in all) take exactly one checkpoint. */
    struct tally sum = {0};
    for (unsigned pass = 0; pass < 3; pass++) {
        overwrites(s, fd, 4096, 4096, 10 + pass, false);
        struct tally t = tally_events();
        for (int w = 0; w < W_COUNT; w++) sum.store_bytes[w] += t.store_bytes[w];
        sum.fences += t.fences;
    }
    bool reuse_ok = !event_overflow && sum.store_bytes[W_LOG] == (3ul * OPS + 1) * 64 &&
                    sum.store_bytes[W_STAGING] == 3ul * OPS * 4096 && sum.fences == 3ul * OPS + 2;
    printf("%-26s %5u ops: %lu log lines, %lu fences (one checkpoint: %lu lines, %lu fences) -> %s\n",
           "apply=write, 12 MiB staged", 3 * OPS, sum.store_bytes[W_LOG] / 64, sum.fences, 3ul * OPS + 1,
           3ul * OPS + 2, reuse_ok ? "ok" : "FAIL");
    failures += !reuse_ok;
    event_overflow = 0;
    /* auto: the last applies of distinct blocks coalesced nothing, so writes are applied at once for now. */
    dk_cfg.strict_apply = 0;
    overwrites(s, fd, 4096, 4096, 8, true);
    expect("4 KiB overwrite, auto", OPS, 64, 4096, 4096, 1);
    dk_cfg.strict_apply = 2; /* checkpoint */
    overwrites(s, fd, 4096, 4096, 6, false);
    expect("4 KiB overwrite (staged)", OPS, 64, 4096, 0, 1);

    dk_persist_set_trace(&counter);
    if (up_fsync(s, fd, false) != 0) failures++;
    dk_persist_set_trace(NULL);
    expect("fsync", 1, 0, 0, OPS * 4096ul, 0);

    dk_persist_set_trace(&counter);
    if (up_close(fd) != 0) failures++;
    dk_persist_set_trace(NULL);
    close(fd);
    expect("close (checkpoint)", 1, 64, 0, 0, 2);
    /* What the checkpoint applied is in the kernel file. */
    fd = open(path, O_RDONLY);
    static unsigned char want[4096], got[4096];
    for (unsigned i = 0; fd >= 0 && i < OPS; i++) {
        fill(want, 4096, 6 + i);
        if (pread(fd, got, 4096, (off_t)i * 4096) != 4096 || memcmp(want, got, 4096)) {
            if (failures++ < 10) printf("FAIL: 4 KiB write %u not in the file after the checkpoint\n", i);
        }
    }
    if (fd >= 0) close(fd);

    up_fini();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    if (failures) return printf("FAIL: %lu check(s) failed\n", failures), 1;
    printf("ok: one record per strict write, one fence per write, inline or staged (the record "
           "carries the staged bytes' crc); a staged overwrite applied at the next read, fsync or checkpoint; fsync logs and fences nothing; a "
           "checkpoint costs two fences\n");
    return 0;
}

/* Description: posix-mode appends cut by a process crash during their publish (the relink's copy or clone).
 *
 *   publish_crash workload DIR SEED   (run under the library: LD_PRELOAD, DAXKIT_MODE=posix)
 *   publish_crash check DIR SEED      (run without it)
 *
 * workload: a seeded series of appends to DIR/pub.dat (1 B to 40 KiB, and one over 2 MiB so that its publish
 * relinks two staging slots), with an fsync after every 1-4 of them, then close. The file's byte at offset o
 * depends only on (SEED, o), so the checker needs no record of how the bytes were cut into writes.
 * check: the file, read with plain system calls, must hold exactly the bytes of one publish point (its size
 * is one of the sizes the workload had at an fsync or at the start, and every byte matches): appends are all
 * or nothing at a publish point in posix mode (docs/guarantees.md). A torn publish -- the kernel cut the
 * relink's pwrite at a page boundary, or a crash between two calls of one relink -- leaves a size that is
 * no publish point, unless recovery rolled the file back. DK_PUBLISH_APPEND=1 (both): an O_APPEND log with an
 * fsync after every append, published at the write once it is one (session 28). Exit 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STEPS 48
#define BIG_BYTES ((2u << 20) + 300000u) /* over one 2 MiB staging slot */

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint8_t byte_at(uint64_t seed, uint64_t off) { return (uint8_t)(mix(seed ^ (off >> 3) * 0x100000001b3ull) >> (8 * (off & 7))); }

/* The plan: step i appends len[i] bytes; sync[i] says an fsync follows it. */
struct plan {
    uint32_t len[STEPS];
    int sync[STEPS];
};

/* DK_PUBLISH_APPEND=1: an O_APPEND log fsynced after every append (redis's AOF with appendfsync always): from
 * the 9th fsync on (DAXKIT_AUTO_KEEP_AFTER) its appends are published at the write (publish.c
 * up_write_through_locked), each all or nothing. */
static int append_log;

static void make_plan(uint64_t seed, struct plan *p) {
    uint64_t r = seed;
    int until_sync = 0;
    for (int i = 0; i < STEPS; i++) {
        r = mix(r);
        uint32_t kind = (uint32_t)(r % 100), v = (uint32_t)(r >> 32);
        if (i == STEPS / 2) p->len[i] = BIG_BYTES + v % 9000;
        else if (kind < 35) p->len[i] = 1 + v % 300;
        else if (kind < 80) p->len[i] = 300 + v % 9000;
        else p->len[i] = 9000 + v % 32000;
        if (until_sync == 0) until_sync = 1 + (int)((r >> 8) % 4);
        p->sync[i] = --until_sync == 0;
        if (append_log) p->sync[i] = 1; /* (one append per fsync: the log state, session 28) */
    }
    p->sync[STEPS - 1] = 1; /* the close at the end is a publish point too */
}

static int usage(void) {
    fprintf(stderr, "usage: publish_crash workload|check DIR SEED\n");
    return 2;
}

static int workload(const char *path, uint64_t seed) {
    struct plan p;
    make_plan(seed, &p);
    /* DK_PUBLISH_EXCL=1: created as tar xf and rsync create (a new inode: adopted without an fstat) */
    const char *excl = getenv("DK_PUBLISH_EXCL");
    int fd = open(path, O_WRONLY | O_CREAT | (excl && !strcmp(excl, "1") ? O_EXCL : O_TRUNC) | (append_log ? O_APPEND : 0),
                  0644);
    if (fd < 0) return perror("open"), 1;
    uint8_t *buf = malloc(BIG_BYTES + 9000);
    if (!buf) return 1;
    uint64_t off = 0;
    for (int i = 0; i < STEPS; i++) {
        for (uint32_t k = 0; k < p.len[i]; k++) buf[k] = byte_at(seed, off + k);
        if (write(fd, buf, p.len[i]) != (ssize_t)p.len[i]) return perror("write"), 1;
        off += p.len[i];
        if (p.sync[i] && fsync(fd) != 0) return perror("fsync"), 1;
    }
    if (close(fd) != 0) return perror("close"), 1;
    free(buf);
    printf("workload: %d appends, %llu bytes\n", STEPS, (unsigned long long)off);
    return 0;
}

static int check(const char *path, uint64_t seed) {
    struct plan p;
    make_plan(seed, &p);
    int fd = open(path, O_RDONLY);
    if (fd < 0 && errno == ENOENT) {
        printf("ok: the file was not created yet\n");
        return 0;
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return perror(path), 1;
    uint64_t size = (uint64_t)st.st_size, off = 0, prev = 0;
    int point = size == 0 ? 0 : -1;
    for (int i = 0; i < STEPS && point < 0; i++) {
        off += p.len[i];
        if (!p.sync[i]) continue;
        if (off == size) point = i + 1;
        else if (off > size) break;
        prev = off;
    }
    if (point < 0) {
        printf("FAIL: size %llu is no publish point (the nearest below: %llu, the next publish ends at %llu): a "
               "torn append\n", (unsigned long long)size, (unsigned long long)prev, (unsigned long long)off);
        return 1;
    }
    uint8_t buf[65536];
    for (uint64_t at = 0; at < size;) {
        ssize_t n = pread(fd, buf, sizeof buf, (off_t)at);
        if (n <= 0) return perror("pread"), 1;
        for (ssize_t k = 0; k < n; k++)
            if (buf[k] != byte_at(seed, at + (uint64_t)k)) {
                printf("FAIL: byte %llu is 0x%02x, expected 0x%02x (file size %llu)\n",
                       (unsigned long long)(at + (uint64_t)k), buf[k], byte_at(seed, at + (uint64_t)k),
                       (unsigned long long)size);
                return 1;
            }
        at += (uint64_t)n;
    }
    close(fd);
    printf("ok: %llu bytes, the publish point after step %d\n", (unsigned long long)size, point);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) return usage();
    char path[4096];
    snprintf(path, sizeof path, "%s/pub.dat", argv[2]);
    uint64_t seed = strtoull(argv[3], NULL, 0);
    const char *ap = getenv("DK_PUBLISH_APPEND");
    append_log = ap && !strcmp(ap, "1");
    if (!strcmp(argv[1], "workload")) return workload(path, seed);
    if (!strcmp(argv[1], "check")) return check(path, seed);
    return usage();
}

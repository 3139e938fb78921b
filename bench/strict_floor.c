/* The floor of a strict 4 KiB overwrite on a flush medium, in persist primitives only (no daxkit path, no
 * locks): what sync mode's write costs (one non-temporal 4 KiB copy into the file, one fence) against
 * strict mode's protocols -- session 7's (staged copy, fence, record line, fence, apply copy) and session
 * 8's (staged copy with its crc32c folded in, record line, one fence, apply copy), the same with the apply
 * drained before the next write (what the real path does: the file guard's exit fences the apply's
 * non-temporal stores, so a truncate never runs under them; session 9) -- plus the pieces:
 * the crc-fused copy against the plain copy, and the crc32 instruction's serial crc of 4 KiB.
 * The file (32 MiB, random 4 KiB blocks), the staging area (64 MiB, sequential) and the log (16 MiB,
 * sequential lines) are shared mappings of files in DIR (a huge-page tmpfs: the emulated DAX medium of
 * bench/strict.sh). Variants are interleaved round by round; min / first quartile / median ns per op of
 * ROUNDS rounds of OPS each are printed, one CSV row per variant:
 *   variant,ops,rounds,min_ns,q1_ns,median_ns
 *
 *   strict_floor DIR [OPS=20000] [ROUNDS=25]
 * Exit 0, 1 a call failed, 2 usage. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#include "common/crc32c.h"
#include "persist/persist.h"

#define FILE_BYTES (32u << 20)
#define STAGING_BYTES (64u << 20)
#define LOG_BYTES (16u << 20)
#define BLOCK 4096u
#define ROUNDS_MAX 101

enum { V_SYNC, V_STRICT7, V_STRICT8, V_STRICT8_DRAINED, V_STRICT8_NOCRC, V_COPY_CRC, V_COPY, V_CRC_SERIAL, V_COUNT };
static const char *names[V_COUNT] = {"sync: copy + fence",
                                     "strict session 7: stage + fence + line + fence + apply",
                                     "strict session 8: stage with crc + line + fence + apply",
                                     "the same + fence after the apply (the real path drains it)",
                                     "(one fence without the crc: not correct)",
                                     "staged copy with crc, no fence",
                                     "staged copy, no fence",
                                     "crc32 instruction, 4 KiB"};

static char *map_file(const char *dir, const char *name, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) return NULL;
    char *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    unlink(path);
    if (a == MAP_FAILED) return NULL;
    memset(a, 1, bytes); /* every page present before the timing */
    return a;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: strict_floor DIR [OPS] [ROUNDS]\n");
        return 2;
    }
    int ops = argc > 2 ? atoi(argv[2]) : 20000, rounds = argc > 3 ? atoi(argv[3]) : 25;
    if (ops < 1 || rounds < 1 || rounds > ROUNDS_MAX) return 2;
    dk_persist_init(0);
    char *file = map_file(argv[1], "floor.file", FILE_BYTES), *stg = map_file(argv[1], "floor.stg", STAGING_BYTES);
    char *log = map_file(argv[1], "floor.log", LOG_BYTES);
    char *buf = aligned_alloc(BLOCK, BLOCK);
    _Alignas(64) char line[64];
    if (!file || !stg || !log || !buf) return 1;
    memset(buf, 7, BLOCK), memset(line, 3, sizeof line);
    static double res[V_COUNT][ROUNDS_MAX];
    uint64_t rng = 88172645463325252ull;
    volatile uint32_t sink = 0;
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < V_COUNT; v++) {
            size_t so = 0, lo = 0;
            uint64_t t0 = now_ns();
            for (int i = 0; i < ops; i++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                char *d = file + (rng % (FILE_BYTES / BLOCK)) * BLOCK, *s = stg + so, *l = log + lo;
                so = (so + BLOCK) % STAGING_BYTES, lo = (lo + 64) % LOG_BYTES;
                buf[i % BLOCK] = (char)i;
                switch (v) {
                case V_SYNC: dk_copy_nt(d, buf, BLOCK), dk_fence(); break;
                case V_STRICT7:
                    dk_copy_nt(s, buf, BLOCK), dk_fence(), dk_copy_nt(l, line, 64), dk_fence(), dk_copy_nt(d, buf, BLOCK);
                    break;
                case V_STRICT8:
                    sink += dk_copy_nt_crc32c(s, buf, BLOCK, 0);
                    dk_copy_nt(l, line, 64), dk_fence(), dk_copy_nt(d, buf, BLOCK);
                    break;
                case V_STRICT8_DRAINED: /* the file guard's exit drains the apply before the write returns */
                    sink += dk_copy_nt_crc32c(s, buf, BLOCK, 0);
                    dk_copy_nt(l, line, 64), dk_fence(), dk_copy_nt(d, buf, BLOCK), dk_fence();
                    break;
                case V_STRICT8_NOCRC: dk_copy_nt(s, buf, BLOCK), dk_copy_nt(l, line, 64), dk_fence(), dk_copy_nt(d, buf, BLOCK); break;
                case V_COPY_CRC: sink += dk_copy_nt_crc32c(s, buf, BLOCK, 0); break;
                case V_COPY: dk_copy_nt(s, buf, BLOCK); break;
                case V_CRC_SERIAL: sink += dk_crc32c(0, buf, BLOCK); break;
                }
            }
            dk_fence();
            res[v][r] = (double)(now_ns() - t0) / ops;
        }
    for (int v = 0; v < V_COUNT; v++) {
        qsort(res[v], (size_t)rounds, sizeof res[v][0], cmp);
        printf("%s,%d,%d,%.0f,%.0f,%.0f\n", names[v], ops, rounds, res[v][0], res[v][rounds / 4], res[v][rounds / 2]);
    }
    return 0;
}

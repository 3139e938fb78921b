/* Description: differential test of the crc32c folds (persist/copy_crc.c). For every fold this CPU has
 * (avx512: VPCLMULQDQ; pclmul: 128-bit PCLMULQDQ; off: the crc32 instruction), dk_copy_nt_crc32c and
 * dk_crc32c_wide must return, bit for bit, the slice-by-8 table's crc32c (dk_crc32c_sw, continued from a
 * random seed) over seeded random lengths 0..64 KiB and source/destination alignments 0..63, and the copy
 * must store exactly the source's bytes and nothing outside them. A source and a destination that end (or
 * start) at an inaccessible page are read and written within their range only. Recovery reads logs
 * written by any of them: one value, whichever the writer's CPU used.
 * Usage: crc_fold_diff [SEED [ROUNDS]] (SEED 0 or absent: from the clock; printed either way).
 * Exit 0 pass, 1 fail. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crc32c.h"
#include "persist/persist.h"

#define MAX_BYTES (64u << 10)
#define LINE 64u
#define GUARD 128u
#define FAILURES_SHOWN 10

static unsigned long failures, checks;
static uint64_t seed;

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fail(const char *fold, const char *what, size_t n, size_t da, size_t sa, uint32_t seed_crc) {
    failures++;
    if (failures <= FAILURES_SHOWN)
        printf("FAIL fold=%s %s: n=%zu dst%%64=%zu src%%64=%zu crc seed 0x%08x (reproduce: crc_fold_diff %llu)\n", fold,
               what, n, da, sa, seed_crc, (unsigned long long)seed);
}

/* A length drawn to cover every shape: small, around the fold thresholds (256 B, whole groups of 4 lines),
 * page sizes and their neighbours, and anything up to 64 KiB. */
static size_t draw_len(void) {
    switch (rnd() % 6) {
    case 0: return rnd() % 600;
    case 1: return 256 * (1 + rnd() % 8) + (rnd() % 3) - 1;
    case 2: return 4096 * (1 + rnd() % 16) + (rnd() % 130) - 65;
    case 3: return 64 * (1 + rnd() % 1024);
    default: return rnd() % (MAX_BYTES + 1);
    }
}

static int one_fold(const char *fold, uint8_t *src, uint8_t *dst, uint8_t *image, unsigned rounds) {
    for (unsigned r = 0; r < rounds; r++) {
        size_t n = draw_len();
        if (n > MAX_BYTES) n = MAX_BYTES;
        /* Staged copies have 64-byte aligned destinations (the fused path); others take the bounce path. */
        size_t da = rnd() % 4 ? 0 : rnd() % LINE, sa = rnd() % LINE;
        uint32_t c0 = rnd() % 4 ? 0 : (uint32_t)rnd();
        for (size_t i = 0; i < n; i++) src[sa + i] = (uint8_t)rnd();
        uint32_t want = dk_crc32c_sw(c0, src + sa, n);
        memset(dst, 0xa5, GUARD + LINE + MAX_BYTES + GUARD);
        uint32_t got = dk_copy_nt_crc32c(dst + GUARD + da, src + sa, n, c0);
        dk_fence();
        checks++;
        if (got != want) fail(fold, "dk_copy_nt_crc32c's crc differs from the table's", n, da, sa, c0);
        else if (memcmp(dst + GUARD + da, src + sa, n) != 0) fail(fold, "dk_copy_nt_crc32c stored a wrong byte", n, da, sa, c0);
        else if (memcmp(dst, image, GUARD + da) != 0 ||
                 memcmp(dst + GUARD + da + n, image, GUARD + LINE + MAX_BYTES + GUARD - (GUARD + da + n)) != 0)
            fail(fold, "dk_copy_nt_crc32c stored outside its range", n, da, sa, c0);
        if (dk_crc32c_wide(c0, src + sa, n) != want) fail(fold, "dk_crc32c_wide differs from the table's", n, da, sa, c0);
        if (dk_crc32c(c0, src + sa, n) != want) fail(fold, "dk_crc32c differs from the table's", n, da, sa, c0);
    }
    return 0;
}

/* Ranges that end where a page without access begins, and start where one ends. */
static int page_edges(const char *fold) {
    long page = sysconf(_SC_PAGESIZE);
    size_t span = 20 * (size_t)page;
    char *d = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *s = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED || s == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    mprotect(d, (size_t)page, PROT_NONE), mprotect(d + span - page, (size_t)page, PROT_NONE);
    mprotect(s, (size_t)page, PROT_NONE), mprotect(s + span - page, (size_t)page, PROT_NONE);
    static const size_t lens[] = {0, 1, 63, 64, 255, 256, 257, 320, 4095, 4096, 4097, 4160, 8192 + 64 * 3, 65536};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t n = lens[i];
        char *s_end = s + span - page - n, *d_end = d + span - page - n, *s_start = s + page, *d_start = d + page;
        for (size_t j = 0; j < n; j++) s_end[j] = (char)rnd(), s_start[j] = (char)rnd();
        checks += 2;
        if (dk_copy_nt_crc32c(d_end, s_end, n, 0) != dk_crc32c_sw(0, s_end, n) || memcmp(d_end, s_end, n))
            fail(fold, "wrong at the end of a page", n, (uintptr_t)d_end % LINE, (uintptr_t)s_end % LINE, 0);
        if (dk_copy_nt_crc32c(d_start, s_start, n, 0) != dk_crc32c_sw(0, s_start, n) || memcmp(d_start, s_start, n))
            fail(fold, "wrong at the start of a page", n, 0, 0, 0);
        if (dk_crc32c_wide(0, s_end, n) != dk_crc32c_sw(0, s_end, n)) fail(fold, "wide: wrong at a page end", n, 0, 0, 0);
        dk_fence();
    }
    munmap(d, span), munmap(s, span);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
    unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 3000;
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }
    printf("seed %llu, %u rounds a fold\n", (unsigned long long)seed, rounds);
    dk_persist_init(DK_FLUSH_AUTO);
    uint8_t *src = aligned_alloc(LINE, LINE + MAX_BYTES), *dst = aligned_alloc(LINE, GUARD + LINE + MAX_BYTES + GUARD),
            *image = malloc(GUARD + LINE + MAX_BYTES + GUARD);
    if (!src || !dst || !image) return 1;
    memset(image, 0xa5, GUARD + LINE + MAX_BYTES + GUARD);
    static const struct {
        int choice;
        const char *name;
    } folds[] = {{DK_CRC_FOLD_AVX512, "avx512"}, {DK_CRC_FOLD_PCLMUL, "pclmul"}, {DK_CRC_FOLD_OFF, "off"}};
    int tested = 0;
    for (size_t f = 0; f < sizeof folds / sizeof folds[0]; f++) {
        const char *got = dk_crc_fold_choose(folds[f].choice);
        if (strcmp(got, folds[f].name) != 0) {
            printf("fold %s: not on this CPU (gets %s) -- not tested\n", folds[f].name, got);
            continue;
        }
        rng_state = seed + f;
        unsigned long before = failures;
        one_fold(got, src, dst, image, rounds);
        if (page_edges(got) != 0) return 1;
        printf("fold %s: %s\n", got, failures == before ? "ok" : "FAILED");
        tested++;
    }
    dk_crc_fold_choose(DK_CRC_FOLD_AUTO);
    printf("%lu cases checked, %lu failures, %d folds tested (auto: %s)\n", checks, failures, tested, dk_crc_fold_name());
    free(src), free(dst), free(image);
    return failures ? 1 : 0;
}

/* Description: dk_copy_nt, dk_copy_nt_crc32c, dk_copy_flush, dk_zero_nt and dk_store_persistent write exactly the right bytes
 * for every size 0..1100 at every destination alignment within a cache line (and many source alignments),
 * leave every byte outside the destination and the whole source untouched, and do not read or write past
 * a page that ends at the buffer's end -- with the flush instruction chosen by DAXKIT_FLUSH=ARGV[1]
 * (auto|clwb|clflushopt|clflush), parsed through the option table as the library does. dk_copy_nt_crc32c
 * must also return dk_crc32c of the bytes (continued from a seed), there and for sizes up to 1 MiB, and so
 * must dk_crc32c_wide for those large sizes.
 * Exit 0 pass, 1 fail. */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crc32c.h"
#include "persist/persist.h"

#define SIZE_MAX_TESTED 1100u
#define GUARD_BYTES 256u /* checked on each side of the destination */
#define LINE 64u
#define FAILURES_SHOWN 10

enum fn { FN_COPY_NT, FN_COPY_FLUSH, FN_ZERO_NT, FN_STORE_256, FN_STORE_1, FN_COPY_NT_CRC, FN_COUNT };
static const char *fn_name[FN_COUNT] = {"dk_copy_nt", "dk_copy_flush", "dk_zero_nt",
                                        "dk_store_persistent(nt_min=256)", "dk_store_persistent(nt_min=1)",
                                        "dk_copy_nt_crc32c"};
#define CRC_SEED 0x1234abcdu
static bool crc_wrong; /* the last FN_COPY_NT_CRC returned something else than dk_crc32c of the source */
static const char *choice_arg = "auto";
static unsigned long failures, checks;

static void run_fn(enum fn f, char *dst, const char *src, size_t n) {
    switch (f) {
    case FN_COPY_NT: dk_copy_nt(dst, src, n); break;
    case FN_COPY_FLUSH: dk_copy_flush(dst, src, n); break;
    case FN_ZERO_NT: dk_zero_nt(dst, n); break;
    case FN_STORE_256: dk_store_persistent(dst, src, n, 256); break;
    case FN_STORE_1: dk_store_persistent(dst, src, n, 1); break;
    case FN_COPY_NT_CRC: crc_wrong = dk_copy_nt_crc32c(dst, src, n, CRC_SEED) != dk_crc32c(CRC_SEED, src, n); break;
    case FN_COUNT: break;
    }
    dk_fence();
}

static uint8_t guard_byte(size_t i) { return (uint8_t)(i * 7u + 0x5b); }
static uint8_t src_byte(size_t i, unsigned salt) { return (uint8_t)((i * 2654435761u) >> 13 ^ salt); }

static void fail(enum fn f, size_t n, size_t dalign, size_t salign, const char *what, ssize_t at) {
    failures++;
    if (failures > FAILURES_SHOWN) return;
    printf("FAIL %s n=%zu dst%%64=%zu src%%64=%zu: %s at byte %zd (reproduce with: persist_copy_%s %s)\n",
           fn_name[f], n, dalign, salign, what, at, choice_arg, choice_arg);
}

/* Reference images: the guard pattern the arena is reset to, and the pristine source bytes. */
static uint8_t guard_image[2 * GUARD_BYTES + LINE + SIZE_MAX_TESTED];
static uint8_t src_image[SIZE_MAX_TESTED + 3 * LINE];
static const uint8_t zeros[SIZE_MAX_TESTED];

static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* One case inside the arena: [arena + GUARD_BYTES + dalign, +n) is the destination; src_arena holds
 * src_image. */
static void check_case(enum fn f, uint8_t *arena, uint8_t *src_arena, size_t n, size_t dalign, size_t salign) {
    size_t arena_bytes = sizeof guard_image, lo = GUARD_BYTES + dalign, hi = lo + n;
    memcpy(arena, guard_image, arena_bytes);
    run_fn(f, (char *)arena + lo, (const char *)src_arena + salign, n);
    checks++;
    if (f == FN_COPY_NT_CRC && crc_wrong) fail(f, n, dalign, salign, "crc differs from dk_crc32c's", 0);
    const uint8_t *want = f == FN_ZERO_NT ? zeros : src_image + salign;
    if (memcmp(arena, guard_image, lo) != 0)
        fail(f, n, dalign, salign, "byte before the destination changed",
             (ssize_t)first_diff(arena, guard_image, lo) - (ssize_t)lo);
    else if (memcmp(arena + lo, want, n) != 0)
        fail(f, n, dalign, salign, "wrong byte", (ssize_t)first_diff(arena + lo, want, n));
    else if (memcmp(arena + hi, guard_image + hi, arena_bytes - hi) != 0)
        fail(f, n, dalign, salign, "byte after the destination changed",
             (ssize_t)(n + first_diff(arena + hi, guard_image + hi, arena_bytes - hi)));
    else if (memcmp(src_arena, src_image, sizeof src_image) != 0)
        fail(f, n, dalign, salign, "source changed", (ssize_t)first_diff(src_arena, src_image, sizeof src_image));
}

/* Destination and source both end exactly where an inaccessible page begins (and, in a second pass,
 * start exactly where one ends): any access beyond the range faults. */
static int check_page_edges(void) {
    long page = sysconf(_SC_PAGESIZE);
    size_t span = 4 * (size_t)page;
    char *d = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *s = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED || s == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    /* Layout: [no access][page][page][no access]; the usable middle is 2 pages. */
    mprotect(d, (size_t)page, PROT_NONE), mprotect(d + 3 * page, (size_t)page, PROT_NONE);
    mprotect(s, (size_t)page, PROT_NONE), mprotect(s + 3 * page, (size_t)page, PROT_NONE);
    char *d_end = d + 3 * page, *s_end = s + 3 * page, *d_start = d + page, *s_start = s + page;
    for (int f = 0; f < FN_COUNT; f++)
        for (size_t n = 0; n <= SIZE_MAX_TESTED; n++) {
            for (size_t i = 0; i < n; i++) s_end[-(ssize_t)n + (ssize_t)i] = (char)src_byte(i, 9);
            run_fn((enum fn)f, d_end - n, s_end - n, n);
            for (size_t i = 0; i < n; i++) s_start[i] = (char)src_byte(i, 5);
            run_fn((enum fn)f, d_start, s_start, n);
            if (f == FN_COPY_NT_CRC && crc_wrong) fail((enum fn)f, n, 0, 0, "crc differs at a page edge", 0);
            for (size_t i = 0; i < n; i++) {
                uint8_t want_end = f == FN_ZERO_NT ? 0 : src_byte(i, 9);
                uint8_t want_start = f == FN_ZERO_NT ? 0 : src_byte(i, 5);
                if ((uint8_t)(d_end - n)[i] != want_end || (uint8_t)d_start[i] != want_start) {
                    fail((enum fn)f, n, (size_t)((uintptr_t)(d_end - n) % LINE), 0, "wrong byte at a page edge", (ssize_t)i);
                    break;
                }
            }
            checks += 2;
        }
    munmap(d, span), munmap(s, span);
    return 0;
}

/* What dk_persist_init must pick for `choice` on this CPU. */
static const char *expected_flush(int choice) {
    unsigned a, b, c, d;
    int clwb = 0, opt = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) clwb = (b >> 24) & 1, opt = (b >> 23) & 1;
    const char *best = clwb ? "clwb" : opt ? "clflushopt" : "clflush";
    switch (choice) {
    case DK_FLUSH_CLWB: return clwb ? "clwb" : best;
    case DK_FLUSH_CLFLUSHOPT: return opt ? "clflushopt" : best;
    case DK_FLUSH_CLFLUSH: return "clflush";
    default: return best;
    }
}

static void config_report(const char *msg) { printf("config: %s\n", msg); }

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a fault at a page edge must not lose the report */
    if (argc > 1) choice_arg = argv[1];
    setenv("DAXKIT_FLUSH", choice_arg, 1);
    struct dk_config cfg;
    if (dk_config_load(&cfg, NULL, config_report) != 0) {
        printf("FAIL: DAXKIT_FLUSH=%s was not accepted by the option table\n", choice_arg);
        return 1;
    }
    dk_persist_init(cfg.flush);
    const char *want = expected_flush(cfg.flush);
    printf("DAXKIT_FLUSH=%s -> flush %s, non-temporal %s\n", choice_arg, dk_flush_name(), dk_nt_name());
    if (strcmp(dk_flush_name(), want) != 0) {
        printf("FAIL: expected flush instruction %s, got %s\n", want, dk_flush_name());
        return 1;
    }
    static const size_t salign[] = {0, 1, 3, 8, 17, 32, 63};
    for (size_t i = 0; i < sizeof guard_image; i++) guard_image[i] = guard_byte(i);
    for (size_t i = 0; i < sizeof src_image; i++) src_image[i] = src_byte(i, 0x3c);
    /* Both 64-byte aligned, so dalign and salign are the offsets within a cache line. */
    uint8_t *arena = aligned_alloc(LINE, sizeof guard_image), *src_arena = aligned_alloc(LINE, sizeof src_image);
    if (!arena || !src_arena) return 1;
    memcpy(src_arena, src_image, sizeof src_image);
    for (int f = 0; f < FN_COUNT; f++)
        for (size_t n = 0; n <= SIZE_MAX_TESTED; n++)
            for (size_t da = 0; da < LINE; da++)
                for (size_t si = 0; si < sizeof salign / sizeof salign[0]; si++)
                    check_case((enum fn)f, arena, src_arena, n, da, salign[si]);
    if (check_page_edges() != 0) return 1;
    /* dk_copy_nt_crc32c on large sizes (many 256-byte fold groups, every tail shape), 64-byte aligned. */
    size_t big = (1u << 20) + 256;
    char *bd = aligned_alloc(LINE, big), *bs = aligned_alloc(LINE, big);
    if (!bd || !bs) return 1;
    for (size_t i = 0; i < big; i++) bs[i] = (char)src_byte(i, 0x77);
    static const size_t sizes[] = {256, 320, 448, 512, 4096, 4097, 4159, 4160, 4352, 12288, 65536 + 17, 1u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t sa = 0; sa < 3; sa++) {
            size_t n = sizes[i];
            memset(bd, 0, big);
            run_fn(FN_COPY_NT_CRC, bd, bs + sa * 7, n);
            checks++;
            if (crc_wrong) fail(FN_COPY_NT_CRC, n, 0, sa * 7, "crc differs from dk_crc32c's (large)", 0);
            else if (memcmp(bd, bs + sa * 7, n) != 0) fail(FN_COPY_NT_CRC, n, 0, sa * 7, "wrong byte (large)", 0);
            else if (dk_crc32c_wide(CRC_SEED, bs + sa * 7, n) != dk_crc32c(CRC_SEED, bs + sa * 7, n))
                fail(FN_COPY_NT_CRC, n, 0, sa * 7, "dk_crc32c_wide differs from dk_crc32c", 0);
        }
    free(bd), free(bs);
    free(arena), free(src_arena);
    printf("%lu cases checked, %lu failures\n", checks, failures);
    return failures ? 1 : 0;
}

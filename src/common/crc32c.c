#include "common/crc32c.h"

#include <stdbool.h>
#include <nmmintrin.h>
#include <string.h>

#include "common/cpu.h"

#define CRC32C_POLY_REFLECTED 0x82F63B78u

/* Slice-by-8 tables: table[k][b] is the CRC contribution of byte b followed by k zero bytes. */
static uint32_t table[8][256];
static int table_ready; /* 0 none, 1 being built, 2 ready */
static int hw_state;    /* 0 unknown, 1 no, 2 yes */

static void table_build(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++) c = (c >> 1) ^ (CRC32C_POLY_REFLECTED & (0u - (c & 1u)));
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++) table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

static void table_ensure(void) {
    if (__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE) == 2) return;
    int expected = 0;
    if (__atomic_compare_exchange_n(&table_ready, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        table_build();
        __atomic_store_n(&table_ready, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE) != 2) __builtin_ia32_pause();
}

uint32_t dk_crc32c_sw(uint32_t crc, const void *p, size_t n) {
    table_ensure();
    const unsigned char *s = p;
    crc = ~crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        s += 8, n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *s++) & 0xff];
    return ~crc;
}

__attribute__((target("sse4.2"))) uint32_t dk_crc32c_hw(uint32_t crc, const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t c = ~crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        c = _mm_crc32_u64(c, w);
        s += 8, n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = _mm_crc32_u8(c32, *s++);
    return ~c32;
}

int dk_crc32c_have_hw(void) {
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (s == 0) {
        s = dk_cpu_has(DK_CPU_SSE4_2) ? 2 : 1;
        __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
    }
    return s == 2;
}

uint32_t dk_crc32c(uint32_t crc, const void *p, size_t n) {
    return dk_crc32c_have_hw() ? dk_crc32c_hw(crc, p, n) : dk_crc32c_sw(crc, p, n);
}

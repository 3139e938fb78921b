/* Delta records' encoding (delta.h; docs/strict.md "Delta records"). */
#include "upath/delta.h"

#include <immintrin.h>
#include <string.h>

#include "common/cpu.h"
#include "common/dk.h"

struct enc {
    const char *buf;
    unsigned char *out;
    size_t cap, used;
    size_t s, e; /* the open segment [s, e) of the write; e == 0: none */
    bool open;
};

/* Closes the open segment into out: false when it does not fit. */
static inline bool enc_emit(struct enc *x) {
    size_t len = x->e - x->s;
    if (x->used + DK_DELTA_SEG_HDR + len > x->cap) return false;
    uint32_t h[2] = {(uint32_t)x->s, (uint32_t)len};
    memcpy(x->out + x->used, h, sizeof h);
    memcpy(x->out + x->used + DK_DELTA_SEG_HDR, x->buf + x->s, len);
    x->used += DK_DELTA_SEG_HDR + len;
    x->open = false;
    return true;
}

/* Bytes [a, b) of the write differ: joined to the open segment when the gap is under a header. */
static inline bool enc_add(struct enc *x, size_t a, size_t b) {
    if (x->open && a <= x->e + DK_DELTA_SEG_HDR) {
        x->e = b;
    } else {
        if (x->open && !enc_emit(x)) return false;
        x->s = a, x->e = b, x->open = true;
    }
    /* what the open segment will take once emitted must fit too: stop early */
    return x->used + DK_DELTA_SEG_HDR + (x->e - x->s) <= x->cap;
}

static ssize_t enc_end(struct enc *x) {
    if (x->open && !enc_emit(x)) return -1;
    return (ssize_t)x->used;
}

/* The generic way: 8-byte words. */
static ssize_t encode_words(struct enc *x, const char *old, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t w[8], o[8], any = 0;
        memcpy(w, x->buf + i, 64);
        memcpy(o, old + i, 64);
        for (int k = 0; k < 8; k++) any |= w[k] ^ o[k];
        if (!any) continue;
        int lo = 0, hi = 7;
        while ((w[lo] ^ o[lo]) == 0) lo++;
        while ((w[hi] ^ o[hi]) == 0) hi--;
        size_t a = i + 8u * (unsigned)lo + (unsigned)__builtin_ctzll(w[lo] ^ o[lo]) / 8u;
        size_t b = i + 8u * (unsigned)hi + 8u - (unsigned)__builtin_clzll(w[hi] ^ o[hi]) / 8u;
        if (!enc_add(x, a, b)) return -1;
    }
    for (; i < n; i++)
        if (x->buf[i] != old[i] && !enc_add(x, i, i + 1)) return -1;
    return enc_end(x);
}

/* AVX-512BW: one compare a line, the changed bytes' mask gives the run's ends. */
__attribute__((target("avx512f,avx512bw"))) static ssize_t encode_avx512(struct enc *x, const char *old, size_t n) {
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 m = n - i >= 64 ? ~0ull : (1ull << (n - i)) - 1;
        __m512i a = _mm512_maskz_loadu_epi8(m, x->buf + i), b = _mm512_maskz_loadu_epi8(m, old + i);
        uint64_t d = _mm512_cmpneq_epi8_mask(a, b);
        if (!d) continue;
        if (!enc_add(x, i + (unsigned)__builtin_ctzll(d), i + 64u - (unsigned)__builtin_clzll(d))) return -1;
    }
    return enc_end(x);
}

static int use_avx512 = -1; /* asked once (without glibc's detection a cpuid exits to the hypervisor in a VM) */
#ifdef DAXKIT_TEST_BUILD
int dk_delta_test_generic; /* tests: the 8-byte-word way on any CPU */
#endif

ssize_t dk_delta_encode(const char *buf, const char *old, size_t n, unsigned char *out, size_t cap) {
    struct enc x = {.buf = buf, .out = out, .cap = cap};
    int v = __atomic_load_n(&use_avx512, __ATOMIC_RELAXED);
    if (DK_UNLIKELY(v < 0)) {
        v = dk_cpu_has(DK_CPU_AVX512F) && dk_cpu_has(DK_CPU_AVX512BW);
        __atomic_store_n(&use_avx512, v, __ATOMIC_RELAXED);
    }
#ifdef DAXKIT_TEST_BUILD
    if (dk_delta_test_generic) v = 0;
#endif
    return v ? encode_avx512(&x, old, n) : encode_words(&x, old, n);
}

bool dk_delta_walk(const unsigned char *d, size_t len, size_t n,
                   void (*fn)(void *ctx, size_t off, const unsigned char *bytes, size_t seg_len), void *ctx) {
    for (int pass = 0; pass < 2; pass++) { /* the first pass checks the shape, the second calls fn */
        size_t p = 0, end = 0;
        while (p < len) {
            uint32_t h[2];
            if (len - p < DK_DELTA_SEG_HDR) return false;
            memcpy(h, d + p, sizeof h);
            p += DK_DELTA_SEG_HDR;
            if (h[1] > len - p || (size_t)h[0] < end || (size_t)h[0] > n || (size_t)h[1] > n - h[0]) return false;
            if (pass) fn(ctx, h[0], d + p, h[1]);
            end = (size_t)h[0] + h[1];
            p += h[1];
        }
    }
    return true;
}

static void lay(void *ctx, size_t off, const unsigned char *bytes, size_t seg_len) {
    memcpy((char *)ctx + off, bytes, seg_len);
}

bool dk_delta_apply_buf(char *dst, size_t n, const unsigned char *d, size_t len) {
    return dk_delta_walk(d, len, n, lay, dst);
}

/* Index slots and log space. Log space is cut into 2 MiB chunks; a chunk serves one block size (4 KiB ..
 * 2 MiB) while any block in it is in use, and returns to the common pool when it empties. Allocation
 * happens once per block per epoch (later writes to the block merge into its entry), so one mutex is
 * enough here; the data path proper never takes it. */
#include <errno.h>
#include <stdlib.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"

int alog_alloc_init(struct alog_file *f) {
    uint64_t words = (f->entry_count + 63) / 64;
    f->chunk_count = (uint32_t)(f->area_bytes / ALOG_CHUNK_BYTES);
    f->slot_used_bits = calloc(words, sizeof(uint64_t));
    f->chunks = calloc(f->chunk_count, sizeof *f->chunks);
    if (!f->slot_used_bits || !f->chunks) return -ENOMEM;
    pthread_mutex_init(&f->alloc_mu, NULL);
    pthread_mutex_init(&f->brel_mu, NULL);
    pthread_mutex_init(&f->fifo_mu, NULL);
    pthread_mutex_init(&f->rapply_mu, NULL);
    return 0;
}

void alog_alloc_fini(struct alog_file *f) {
    free(f->slot_used_bits);
    free(f->chunks);
    f->slot_used_bits = NULL, f->chunks = NULL;
}

static int64_t slot_take(struct alog_file *f) {
    uint64_t words = (f->entry_count + 63) / 64;
    for (uint64_t k = 0; k < words; k++) {
        uint64_t w = (f->slot_hint + k) % words;
        uint64_t bits = f->slot_used_bits[w];
        if (w == words - 1 && f->entry_count % 64) bits |= ~0ull << (f->entry_count % 64);
        if (bits == ~0ull) continue;
        unsigned b = (unsigned)__builtin_ctzll(~bits);
        f->slot_used_bits[w] |= 1ull << b;
        f->slot_hint = w;
        return (int64_t)(w * 64 + b);
    }
    return -ENOSPC;
}

/* A free block of 1 << shift bytes in chunk c (which serves that size). */
static int64_t chunk_take(struct alog_chunk *c, uint32_t shift) {
    uint32_t per = 1u << (ALOG_BLOCK_SHIFT_MAX - shift);
    for (uint32_t w = 0; w * 64 < per; w++) {
        uint64_t used = c->used_bits[w] | (per - w * 64 < 64 ? ~0ull << (per - w * 64) : 0);
        if (used == ~0ull) continue;
        uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(~used);
        c->used_bits[w] |= 1ull << (i % 64);
        c->free_count--;
        return (int64_t)i << shift;
    }
    dk_assert(!"chunk free_count out of step with its bits");
    return -ENOSPC;
}

static int64_t area_take(struct alog_file *f, uint32_t shift) {
    struct alog_chunk *fresh = NULL;
    for (uint32_t i = 0; i < f->chunk_count; i++) {
        struct alog_chunk *c = &f->chunks[i];
        if (c->shift == shift && c->free_count) return (int64_t)i * (int64_t)ALOG_CHUNK_BYTES + chunk_take(c, shift);
        if (!c->shift && !fresh) fresh = c;
    }
    if (!fresh) return -ENOSPC;
    fresh->shift = shift;
    fresh->free_count = 1u << (ALOG_BLOCK_SHIFT_MAX - shift);
    return (int64_t)(fresh - f->chunks) * (int64_t)ALOG_CHUNK_BYTES + chunk_take(fresh, shift);
}

int64_t alog_alloc_entry(struct alog_file *f, uint32_t shift, uint64_t *log_off) {
    dk_assert(shift >= ALOG_BLOCK_SHIFT_MIN && shift <= ALOG_BLOCK_SHIFT_MAX);
    pthread_mutex_lock(&f->alloc_mu);
    DK_CRASH_POINT("atomic.alloc.entry_locked"); /* shim_handler_fork_atomic_alloc's cue */
    int64_t idx = slot_take(f);
    int64_t off = idx >= 0 ? area_take(f, shift) : -ENOSPC;
    if (idx >= 0 && off < 0) f->slot_used_bits[idx / 64] &= ~(1ull << (idx % 64));
    if (off >= 0) __atomic_add_fetch(&f->area_used_bytes, 1ull << shift, __ATOMIC_RELAXED); /* stats read it */
    pthread_mutex_unlock(&f->alloc_mu);
    if (off < 0) return -ENOSPC;
    *log_off = (uint64_t)off;
    return idx;
}

void alog_free_entry(struct alog_file *f, uint64_t idx, uint64_t log_off, uint32_t shift) {
    pthread_mutex_lock(&f->alloc_mu);
    DK_CRASH_POINT("atomic.alloc.free_locked"); /* shim_handler_fork_atomic_free's cue */
    dk_assert(f->slot_used_bits[idx / 64] & (1ull << (idx % 64)));
    f->slot_used_bits[idx / 64] &= ~(1ull << (idx % 64));
    struct alog_chunk *c = &f->chunks[log_off / ALOG_CHUNK_BYTES];
    uint32_t i = (uint32_t)((log_off % ALOG_CHUNK_BYTES) >> shift);
    dk_assert(c->shift == shift);
    dk_assert(c->used_bits[i / 64] & (1ull << (i % 64)));
    c->used_bits[i / 64] &= ~(1ull << (i % 64));
    if (++c->free_count == 1u << (ALOG_BLOCK_SHIFT_MAX - shift)) c->shift = 0;
    __atomic_sub_fetch(&f->area_used_bytes, 1ull << shift, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&f->alloc_mu);
}

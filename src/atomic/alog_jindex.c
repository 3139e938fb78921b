/* The journal's DRAM index: for each 4 KiB block of the file that journal records touch, the list of
 * their pieces inside the block, oldest first (a hash table of blocks, open addressing, and an array of
 * pieces). Reads copy the file, then each piece over it in order. A new piece unlinks the older pieces of
 * its block that it covers whole, so a block rewritten again and again keeps a short list. Nothing here
 * is persistent: it is empty at open and cleared when everything indexed is applied. Pieces of records
 * already applied stay until then, skipped by reads. All under j.mu. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "atomic/alog.h"
#include "common/dk.h"

#define JIDX_BLOCK_SHIFT 12u
#define JIDX_NONE UINT32_MAX
#define JIDX_SLOTS_MIN 1024u
#define JIDX_PIECES_MIN 1024u

static uint32_t hash_block(uint64_t block, uint32_t mask) {
    return (uint32_t)((block * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

static int table_alloc(struct alog_journal *j, uint32_t slots) {
    struct alog_jslot *t = calloc(slots, sizeof *t);
    if (!t) return -ENOMEM;
    j->slots = t;
    j->slot_mask = slots - 1;
    j->slots_used = 0;
    return 0;
}

int alog_jindex_init(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    j->pieces = malloc(JIDX_PIECES_MIN * sizeof *j->pieces);
    j->pieces_cap = j->pieces ? JIDX_PIECES_MIN : 0;
    j->pieces_used = j->pieces_live = 0;
    return j->pieces ? table_alloc(j, JIDX_SLOTS_MIN) : -ENOMEM;
}

void alog_jindex_fini(struct alog_file *f) {
    free(f->j.pieces);
    free(f->j.slots);
    f->j.pieces = NULL, f->j.slots = NULL;
}

void alog_jindex_clear(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (j->slots_used) memset(j->slots, 0, ((size_t)j->slot_mask + 1) * sizeof *j->slots);
    j->slots_used = j->pieces_used = 0;
    __atomic_store_n(&j->pieces_live, 0, __ATOMIC_RELEASE);
}

/* The slot of `block`, or the empty slot where it would go. */
static struct alog_jslot *find(struct alog_journal *j, uint64_t block) {
    for (uint32_t i = hash_block(block, j->slot_mask);; i = (i + 1) & j->slot_mask) {
        struct alog_jslot *s = &j->slots[i];
        if (s->key == block + 1 || s->key == 0) return s;
    }
}

static int grow_table(struct alog_journal *j) {
    struct alog_jslot *old = j->slots;
    uint32_t n = j->slot_mask + 1;
    int rc = table_alloc(j, n * 2);
    if (rc) return rc;
    for (uint32_t i = 0; i < n; i++) {
        if (!old[i].key) continue;
        *find(j, old[i].key - 1) = old[i];
        j->slots_used++;
    }
    free(old);
    return 0;
}

static int grow_pieces(struct alog_journal *j) {
    if (j->pieces_cap >= UINT32_MAX / 2) return -ENOMEM;
    struct alog_jpiece *p = realloc(j->pieces, (size_t)j->pieces_cap * 2 * sizeof *p);
    if (!p) return -ENOMEM;
    j->pieces = p;
    j->pieces_cap *= 2;
    return 0;
}

/* Unlinks the pieces of s's list that [off, off+len) covers whole. */
static void drop_covered(struct alog_journal *j, struct alog_jslot *s, uint64_t off, uint32_t len) {
    uint32_t prev = JIDX_NONE;
    for (uint32_t i = s->head; i != JIDX_NONE;) {
        struct alog_jpiece *p = &j->pieces[i];
        uint32_t next = p->next;
        if (p->off >= off && p->off + p->len <= off + len) {
            if (prev == JIDX_NONE) s->head = next;
            else j->pieces[prev].next = next;
            if (s->tail == i) s->tail = prev;
            __atomic_store_n(&j->pieces_live, j->pieces_live - 1, __ATOMIC_RELEASE);
        } else {
            prev = i;
        }
        i = next;
    }
}

/* One piece (inside one block) of a record whose data is at journal offset src. */
static int add_piece(struct alog_journal *j, uint64_t off, uint32_t len, uint64_t src) {
    if (j->pieces_used == j->pieces_cap && grow_pieces(j)) return -ENOMEM;
    if ((j->slots_used + 1) * 2 > j->slot_mask + 1 && grow_table(j)) return -ENOMEM;
    struct alog_jslot *s = find(j, off >> JIDX_BLOCK_SHIFT);
    if (!s->key) {
        s->key = (off >> JIDX_BLOCK_SHIFT) + 1;
        s->head = s->tail = JIDX_NONE;
        j->slots_used++;
    } else {
        drop_covered(j, s, off, len);
    }
    uint32_t i = j->pieces_used++;
    j->pieces[i] = (struct alog_jpiece){.off = off, .src = src, .len = len, .next = JIDX_NONE};
    if (s->tail == JIDX_NONE) s->head = i;
    else j->pieces[s->tail].next = i;
    s->tail = i;
    __atomic_store_n(&j->pieces_live, j->pieces_live + 1, __ATOMIC_RELEASE);
    return 0;
}

int alog_jindex_add(struct alog_file *f, uint64_t off, uint32_t len, uint64_t src) {
    while (len) {
        uint32_t piece = (uint32_t)DK_MIN((uint64_t)len, dk_round_down(off, 1ull << JIDX_BLOCK_SHIFT) +
                                                              (1ull << JIDX_BLOCK_SHIFT) - off);
        int rc = add_piece(&f->j, off, piece, src);
        if (rc) return rc;
        off += piece, src += piece, len -= piece;
    }
    return 0;
}

void alog_jindex_overlay(struct alog_file *f, uint64_t off, char *dst, uint64_t n, uint64_t from) {
    struct alog_journal *j = &f->j;
    uint64_t end = off + n;
    for (uint64_t b = off >> JIDX_BLOCK_SHIFT; b <= (end - 1) >> JIDX_BLOCK_SHIFT; b++) {
        struct alog_jslot *s = find(j, b);
        if (!s->key) continue;
        for (uint32_t i = s->head; i != JIDX_NONE; i = j->pieces[i].next) {
            const struct alog_jpiece *p = &j->pieces[i];
            uint64_t lo = DK_MAX(off, p->off), hi = DK_MIN(end, p->off + p->len);
            if (lo < hi && p->src >= from)
                memcpy(dst + (lo - off), f->area + p->src % f->area_bytes + (lo - p->off), hi - lo);
        }
    }
}

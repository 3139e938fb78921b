/* Fixed-depth radix index over file offsets, in DRAM only: three levels of 512 pointers (9 bits each,
 * offset bits 47..21) lead to a leaf for one 2 MiB region, whose 512 slots point at index entries by the
 * 4 KiB index of a block's first byte. A missing node is installed with one compare-and-swap; the loser
 * frees its copy. Nodes are never removed while the file is mapped, so readers need no lock to walk. */
#include <errno.h>
#include <stdlib.h>

#include "atomic/alog.h"
#include "common/dk.h"

#define ALOG_RADIX_LEVELS 3u

static_assert(ALOG_RADIX_LEVELS * ALOG_RADIX_BITS + ALOG_LEAF_SHIFT == 48, "radix covers 256 TiB");

int alog_radix_init(struct alog_file *f) {
    f->root = calloc(1, sizeof *f->root);
    return f->root ? 0 : -ENOMEM;
}

static void free_level(void *node, unsigned level) {
    if (!node) return;
    if (level == ALOG_RADIX_LEVELS) {
        struct alog_leaf *leaf = node;
        pthread_mutex_destroy(&leaf->mu);
        free(leaf);
        return;
    }
    struct alog_node *n = node;
    for (unsigned i = 0; i < ALOG_RADIX_FANOUT; i++) free_level(n->child[i], level + 1);
    free(n);
}

void alog_radix_fini(struct alog_file *f) {
    free_level(f->root, 0);
    f->root = NULL;
}

static void *new_child(unsigned level) {
    if (level + 1 < ALOG_RADIX_LEVELS) return calloc(1, sizeof(struct alog_node));
    struct alog_leaf *leaf = calloc(1, sizeof *leaf);
    if (leaf) pthread_mutex_init(&leaf->mu, NULL);
    return leaf;
}

static void free_child(void *c, unsigned level) {
    if (level + 1 == ALOG_RADIX_LEVELS) pthread_mutex_destroy(&((struct alog_leaf *)c)->mu);
    free(c);
}

/* The leaves (and the nodes above them) of [0, bytes), made now and their pages touched, so that no copy
 * into that range allocates or first-touches one (a leaf is ~4 KiB: 2 MiB of DRAM per GiB of file; the
 * caller bounds `bytes`, ALOG_RADIX_PREALLOC_BYTES_MAX). 0 or -ENOMEM. */
int alog_radix_prealloc(struct alog_file *f, uint64_t bytes) {
    for (uint64_t off = 0; off < bytes; off += 1ull << ALOG_LEAF_SHIFT) {
        struct alog_leaf *leaf = alog_radix_leaf(f, off, true);
        if (!leaf) return -ENOMEM;
        volatile char *b = (volatile char *)leaf;
        for (size_t i = 0; i < sizeof *leaf; i += DK_PAGE_BYTES) b[i] = b[i];
        b[sizeof *leaf - 1] = b[sizeof *leaf - 1];
    }
    return 0;
}

struct alog_leaf *alog_radix_leaf(struct alog_file *f, uint64_t off, bool create) {
    dk_assert(off < ALOG_FILE_BYTES_MAX);
    struct alog_node *n = f->root;
    for (unsigned level = 0; level < ALOG_RADIX_LEVELS; level++) {
        unsigned shift = ALOG_LEAF_SHIFT + ALOG_RADIX_BITS * (ALOG_RADIX_LEVELS - 1 - level);
        void **slot = &n->child[(off >> shift) & (ALOG_RADIX_FANOUT - 1)];
        void *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (!c) {
            if (!create) return NULL;
            void *fresh = new_child(level);
            if (!fresh) return NULL;
            void *expected = NULL;
            if (__atomic_compare_exchange_n(slot, &expected, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                c = fresh;
            } else {
                free_child(fresh, level);
                c = expected;
            }
        }
        if (level + 1 == ALOG_RADIX_LEVELS) return c;
        n = c;
    }
    return NULL;
}

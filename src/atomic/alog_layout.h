/* Persistent format of an atomic-update log (<dir>/.daxkit/<name>.alog). Only this layout reaches the
 * medium: the radix index and every other DRAM structure are rebuilt (empty) at map time.
 *
 *   [0, 4 KiB)                header: geometry in line 0, the commit word (epoch) alone in line 1
 *   [4 KiB, 4 KiB + 64*N)     N index entries of one cache line each
 *   [data_off, +data_bytes)   log data: blocks of 4 KiB..2 MiB (2 MiB chunks, one size class each)
 *
 * An index entry is live when `word` has ALOG_WORD_VALID and `check` matches (a torn or half-reused
 * entry never matches). Recovery rule, with H = header epoch and A = the redo applied word (redo_applied):
 *   redo entry, A <= epoch < H: committed, not known applied -> copy log[extent] to file[dest + extent]
 *   undo entry, epoch == H: uncommitted -> copy log[extent] (the old data) to file[dest + extent]
 *   otherwise: nothing (uncommitted redo never reached the file; a redo entry below A is in the file durably,
 *   and its slot and log block may have been reused; committed undo is obsolete). */
#ifndef DK_ATOMIC_ALOG_LAYOUT_H
#define DK_ATOMIC_ALOG_LAYOUT_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#define ALOG_MAGIC 0x31676f6c61786164ull /* "daxalog1" */
/* The format version (header `version`, written with the geometry, before the magic). A library reads the
 * versions from ALOG_VERSION_PLAIN to ALOG_VERSION and refuses any other one (alog_open.c: -EPROTONOSUPPORT,
 * the log left untouched), never formats it anew: a newer log may hold committed work only a newer library
 * can read. A log carries the lowest version that describes it, so that older libraries keep reading the
 * logs they can (journal and undo logs, redo without pacing: every log before its first A):
 *   1 (ALOG_VERSION_PLAIN; every log before session 20, and a log as formatted): no A. The word at
 *     `redo_applied` is the policy, for information only -- 0 as formatted, ALOG_UNDO (1) or ALOG_REDO (2)
 *     stored at each open and policy switch until session 19 -- untagged, so it reads as A = 0: every
 *     committed redo entry is replayed, as the v1 library did. Session 19's library (1172dd9 .. 6e64a03)
 *     stored the tagged A without changing the version: a v1 log whose word carries the tag is that
 *     library's, and its A is honoured.
 *   2 (ALOG_VERSION_APPLIED, session 20): the log has carried A. The first commit that stores A stores 2
 *     too, durable with it, before any copy can release an entry below A (alog_redo_fifo.c,
 *     alog_redo_applied_store). */
#define ALOG_VERSION_PLAIN 1u
#define ALOG_VERSION_APPLIED 2u
#define ALOG_VERSION ALOG_VERSION_APPLIED /* the newest this library reads */
#define ALOG_HEADER_BYTES 4096u
#define ALOG_ENTRY_BYTES 64u
#define ALOG_BLOCK_SHIFT_MIN 12u /* 4 KiB */
#define ALOG_BLOCK_SHIFT_MAX 21u /* 2 MiB */
#define ALOG_CHUNK_BYTES (1ull << ALOG_BLOCK_SHIFT_MAX)
#define ALOG_SLOTS_PER_CHUNK (ALOG_CHUNK_BYTES >> ALOG_BLOCK_SHIFT_MIN) /* 512 */

#define ALOG_WORD_VALID 1ull
#define ALOG_WORD_REDO 2ull
#define ALOG_WORD_EPOCH_SHIFT 8
#define ALOG_SIZE_TRACKED 0x657a6973ull /* "size": the header's size slots are valid */

struct alog_phdr {
    uint64_t magic;        /* written last when the log is created */
    uint32_t version;
    uint32_t header_bytes;
    uint64_t data_ino;     /* the data file this log belongs to */
    uint64_t data_dev;
    uint64_t entry_count;  /* index entry slots */
    uint64_t data_off;     /* log data area: file offset (2 MiB aligned) */
    uint64_t data_bytes;   /* and size (multiple of 2 MiB) */
    uint64_t pad0;
    /* line 1: the commit word. Advancing it commits every entry of the previous epoch. */
    uint64_t epoch;
    /* Redo with pacing (session 19, alog_redo_fifo.c): A, tagged (alog_applied_word): every redo entry of an
     * epoch below A is applied to the file durably, so recovery replays none of them and their slots and log
     * blocks are reused without an invalidation. A commit stores it after its first fence (which made the
     * bytes the copies applied durable), in this line: durable with the epoch word. A log that has carried
     * A is version 2; in a version 1 log this word may hold the policy (0-2: no tag, read as A = 0; see
     * ALOG_VERSION_PLAIN). */
    uint64_t redo_applied;
    /* The file size as part of the committed state (logs of DAXKIT_ATOMIC files, src/upath/atomic_route.c):
     * when size_mode == ALOG_SIZE_TRACKED, size_slot[H & 1] is the size committed with header epoch H. A
     * commit stores size_slot[(H + 1) & 1] before the epoch word, in the same line, ordered by the commit's
     * fence, so the epoch store selects data and size at once. */
    uint64_t size_slot[2];
    uint64_t size_mode;
    /* The journal (policy DAXKIT_ATOMIC_JOURNAL, alog_journal.c), circular, in logical positions (area
     * offset = position % data_bytes): jend_slot[H & 1] is the end of the journal committed with header
     * epoch H; records in [jhead, jend) are replayed in order. A commit stores jend_slot[(H + 1) & 1]
     * before the epoch word, like the size slot; jhead advances only after the records below it are
     * durable in the file. Older logs: jhead 0, and jend 0 once checkpointed. */
    uint64_t jend_slot[2];
    uint64_t jhead;
};
static_assert(sizeof(struct alog_phdr) == 128, "header lines");
/* Logs named by their file (DAXKIT_ATOMIC, alog_named.c): the key (the log's name) and the path the file was
 * last opened by, NUL-terminated, in the header's free space. Hints only: recovery checks them. */
#define ALOG_HDR_KEY_OFF 512u
#define ALOG_HDR_KEY_BYTES 512u
#define ALOG_HDR_HINT_OFF 1024u
#define ALOG_HDR_HINT_BYTES 3072u
static_assert(__builtin_offsetof(struct alog_phdr, epoch) == 64, "epoch alone in its cache line");

struct alog_pent {
    uint64_t word;     /* VALID | REDO | epoch << 8: stored last, one 8-byte store */
    uint64_t dest_off; /* file offset of the block (aligned to its size) */
    uint64_t log_off;  /* offset of the log block inside the data area */
    uint32_t shift;    /* block size 1 << shift, 12..21 */
    uint32_t pad;
    uint64_t extent;   /* the delta held: start in the block (low 32 bits) | length (high 32 bits) */
    uint64_t check;    /* alog_pent_check(word, dest_off, log_off, shift) */
    uint64_t pad2[2];
};
static_assert(sizeof(struct alog_pent) == ALOG_ENTRY_BYTES, "one entry per cache line");

/* A journal record: this header, then `len` bytes for file offset `off`, padded to ALOG_JREC_ALIGN. A record
 * never wraps: the space left before the end of the area is then filled by a pad record (off ALOG_JPAD). */
#define ALOG_JPAD UINT64_MAX
struct alog_jrec {
    uint64_t off;
    uint32_t len;
    uint32_t check; /* alog_jrec_check(position, off, len): a record that is not what a commit wrote stops replay */
};
#define ALOG_JREC_ALIGN 16u
static_assert(sizeof(struct alog_jrec) == ALOG_JREC_ALIGN, "record header");

static inline uint64_t alog_mix64(uint64_t x) {
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static inline uint64_t alog_pent_check(uint64_t word, uint64_t dest, uint64_t log_off, uint32_t shift) {
    return alog_mix64(word ^ alog_mix64(dest ^ alog_mix64(log_off ^ alog_mix64((uint64_t)shift + ALOG_MAGIC))));
}
static inline uint32_t alog_jrec_check(uint64_t pos, uint64_t off, uint32_t len) {
    return (uint32_t)alog_mix64(pos ^ alog_mix64(off ^ ((uint64_t)len << 48) ^ ALOG_MAGIC));
}
static inline bool alog_version_known(uint32_t version) {
    return version >= ALOG_VERSION_PLAIN && version <= ALOG_VERSION;
}
#define ALOG_APPLIED_TAG 0xa9ull
static inline uint64_t alog_applied_word(uint64_t a) { return a << 8 | ALOG_APPLIED_TAG; }
static inline uint64_t alog_applied_of(uint64_t word) { return (word & 0xff) == ALOG_APPLIED_TAG ? word >> 8 : 0; }
/* A valid entry that recovery may act on: not a redo entry below A (applied durably; its slot may be reused). */
static inline bool alog_pent_pending(const struct alog_phdr *h, const struct alog_pent *p) {
    uint64_t word = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    if (!(word & ALOG_WORD_VALID)) return false;
    return !(word & ALOG_WORD_REDO) || word >> ALOG_WORD_EPOCH_SHIFT >= alog_applied_of(h->redo_applied);
}
static inline uint64_t alog_extent(uint32_t start, uint32_t len) { return (uint64_t)len << 32 | start; }
static inline uint32_t alog_extent_start(uint64_t x) { return (uint32_t)x; }
static inline uint32_t alog_extent_len(uint64_t x) { return (uint32_t)(x >> 32); }

#endif

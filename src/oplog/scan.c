/* Recovery's view of a log: which records are valid (see oplog.h and docs/oplog.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/mapflags.h"
#include "oplog/format.h"
#include "oplog/internal.h"
#include "shim/libc.h"

static int header_valid(const struct oplog_header *h) {
    return h->magic == OPLOG_MAGIC && h->version >= 1 && h->version <= OPLOG_VERSION &&
           h->line_bytes == DK_OPLOG_LINE_BYTES && h->generation != 0 && h->crc == oplog_header_crc(h);
}

/* A header slot of a log written by a newer daxkit (its records may be of types this one does not know). */
static bool header_newer(const struct oplog_header *h) {
    return h->magic == OPLOG_MAGIC && h->version > OPLOG_VERSION && h->crc == oplog_header_crc(h);
}

uint32_t oplog_image_generation(const void *image, size_t bytes, uint64_t *capacity_out, uint64_t *area_dev_out) {
    if (bytes < DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES) return 0;
    const struct oplog_header *h = image;
    uint64_t file_capacity = bytes / DK_OPLOG_LINE_BYTES - DK_OPLOG_HEADER_LINES;
    const struct oplog_header *best = NULL;
    for (unsigned i = 0; i < DK_OPLOG_HEADER_LINES; i++) {
        /* A slot must hold its own parity of generation: a line copied into the wrong slot is not trusted. */
        if (!header_valid(&h[i]) || (h[i].generation & 1) != i || h[i].capacity_lines > file_capacity) continue;
        if (!best || h[i].generation > best->generation) best = &h[i];
    }
    if (!best) return 0;
    *capacity_out = best->capacity_lines;
    *area_dev_out = oplog_header_area_dev(best);
    return best->generation;
}

/* Is the record whose head is lines[0] valid (shape and crc), given `avail` slots from it to the end? */
static int record_valid(const struct oplog_line *lines, uint64_t avail, uint32_t generation) {
    const struct oplog_line_hdr *h = &lines[0].h;
    if (h->lines == 0 || h->lines > DK_OPLOG_RECORD_LINES_MAX || h->lines > avail || h->type == 0) return 0;
    if (h->data_bytes > DK_OPLOG_DATA_BYTES_MAX || oplog_lines_for(h->data_bytes) > h->lines) return 0;
    uint32_t crc = dk_crc32c(0, (const char *)&lines[0] + 4, DK_OPLOG_LINE_BYTES - 4);
#ifdef DAXKIT_TEST_BUILD
    if (dk_oplog_test_broken == DK_OPLOG_BROKEN_CRC_HEAD_ONLY) return crc == h->crc; /* reader of the bug */
#endif
    for (uint32_t i = 1; i < h->lines; i++) {
        const struct oplog_line_hdr *d = &lines[i].h;
        if (d->kind != OPLOG_KIND_DATA || d->generation != generation || d->lines != i) return 0;
        crc = dk_crc32c(crc, &lines[i], DK_OPLOG_LINE_BYTES);
    }
    return crc == h->crc;
}

static void gather(const struct oplog_line *lines, unsigned char *buf) {
    const struct oplog_line_hdr *h = &lines[0].h;
    dk_assert(h->data_bytes <= DK_OPLOG_DATA_BYTES_MAX); /* record_valid checked it */
    size_t left = h->data_bytes;
    for (uint32_t i = 1; i < h->lines; i++) {
        size_t n = DK_MIN(left, (size_t)DK_OPLOG_PAYLOAD_BYTES);
        memcpy(buf, lines[i].payload, n);
        buf += n, left -= n;
    }
}

static int deliver(const struct oplog_line *lines, uint64_t slot, uint32_t generation, uint64_t area_dev, bool done,
                   bool marks, unsigned char *buf, dk_oplog_record_fn cb, void *ctx) {
    const struct oplog_line_hdr *h = &lines[0].h;
    struct dk_oplog_record rec = {.seq = (uint64_t)generation << 32 | slot, .type = h->type,
                                  .fixed48 = lines[0].payload, .data_len = h->data_bytes, .area_dev = area_dev,
                                  .done = done, .marks = marks};
    if (h->data_bytes) {
        gather(lines, buf);
        rec.data = buf;
    }
    return cb ? cb(&rec, ctx) : 0;
}


/* A byte range of the image that may be read; everything outside every segment is zero (a hole). */
struct segment {
    uint64_t lo, hi;
};

struct scan_state {
    const struct oplog_line *recs;
    uint32_t gen;
    uint64_t area_dev; /* the header's */
    int in_gap;
    unsigned char *buf;
    const uint32_t *marks; /* this boot's and mount's completion marks, `capacity` words (NULL: none) */
    dk_oplog_record_fn cb;
    void *ctx;
    struct dk_oplog_scan_stats st;
};

/* Scans record slots [first, end), all readable. Returns 0 or the callback's value. */
static int scan_slots(struct scan_state *s, uint64_t first, uint64_t end) {
    for (uint64_t slot = first; slot < end;) {
        const struct oplog_line_hdr *h = &s->recs[slot].h;
        s->st.lines_scanned++;
#ifdef DAXKIT_TEST_BUILD
        if (dk_oplog_test_broken == DK_OPLOG_BROKEN_SCAN_STOPS_AT_HOLE && s->in_gap) return 0;
#endif
        if (h->generation != s->gen || h->kind == 0) { /* empty (zero) or from an earlier generation */
            /* Empty slots before the first record are no hole (a direct log starts at its first sector). */
            s->in_gap |= s->st.records_valid > 0, slot++;
            continue;
        }
        if (h->kind == OPLOG_KIND_HEAD && record_valid(&s->recs[slot], end - slot, s->gen)) {
            s->st.holes += s->in_gap; /* an interrupted record (or an empty slot) before this valid one */
            s->in_gap = 0;
            s->st.records_valid++;
            bool done = s->marks && s->marks[slot] == s->gen;
            s->st.records_done += done;
            int rc = deliver(&s->recs[slot], slot, s->gen, s->area_dev, done, s->marks != NULL, s->buf, s->cb, s->ctx);
            slot += h->lines;
            s->st.last_slot_used = slot;
            if (rc) return rc;
            continue;
        }
        if (h->kind == OPLOG_KIND_HEAD) s->st.records_torn++;
        else s->st.lines_orphaned++;
        s->in_gap = 1, slot++;
    }
    return 0;
}

/* The whole capacity is scanned: concurrent appenders finish out of order, so a valid record may follow an
 * empty or torn slot. Empty and stale slots cost one compare each; holes of the file are not touched. */
static int scan_segments(const void *image, size_t bytes, const struct segment *segs, size_t nsegs,
                         const uint32_t *marks, dk_oplog_record_fn cb, void *ctx, struct dk_oplog_scan_stats *stats) {
    struct scan_state s = {.cb = cb, .ctx = ctx, .marks = marks};
    const uint64_t header_bytes = DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES;
    uint64_t t0 = dk_now_ns(), capacity = 0;
    if (nsegs > 0 && segs[0].lo == 0 && segs[0].hi >= header_bytes)
        s.st.generation = oplog_image_generation(image, bytes, &capacity, &s.area_dev);
    int rc = s.st.generation ? 0 : -EINVAL;
    for (unsigned i = 0; rc && bytes >= header_bytes && i < DK_OPLOG_HEADER_LINES; i++)
        if (header_newer((const struct oplog_header *)image + i)) rc = -EPROTONOSUPPORT;
    if (rc == 0 && !(s.buf = malloc(DK_OPLOG_DATA_BYTES_MAX))) rc = -ENOMEM;
    s.recs = (const struct oplog_line *)((const char *)image + header_bytes);
    s.gen = (uint32_t)s.st.generation;
    uint64_t next = 0; /* the first slot not yet scanned or skipped */
    for (size_t i = 0; rc == 0 && i < nsegs; i++) {
        uint64_t lo = segs[i].lo > header_bytes ? segs[i].lo - header_bytes : 0;
        uint64_t first = (lo + DK_OPLOG_LINE_BYTES - 1) / DK_OPLOG_LINE_BYTES;
        uint64_t end = segs[i].hi > header_bytes ? (segs[i].hi - header_bytes) / DK_OPLOG_LINE_BYTES : 0;
        if (end > capacity) end = capacity;
        if (first >= end) continue;
        if (first > next) s.in_gap = 1; /* slots in a hole of the file: empty */
        rc = scan_slots(&s, first, end);
        next = end;
    }
    free(s.buf);
    s.st.scan_ns = dk_now_ns() - t0;
    if (stats) *stats = s.st;
    return rc;
}

int dk_oplog_scan_image(const void *image, size_t bytes, dk_oplog_record_fn cb, void *ctx,
                        struct dk_oplog_scan_stats *stats) {
    struct segment all = {0, bytes};
    return scan_segments(image, bytes, &all, 1, NULL, cb, ctx, stats);
}

/* The file's data segments (SEEK_DATA/SEEK_HOLE; one segment [0, size) where unsupported). Unallocated
 * parts of a log are never touched: on tmpfs a read fault in a mapping would allocate them. */
static int data_segments(int fd, off_t size, struct segment **out, size_t *count) {
    const struct dk_libc *c = dk_libc();
    size_t n = 0, cap = 0;
    struct segment *segs = NULL;
    for (off_t pos = 0; pos < size;) {
        off_t data = c->lseek(fd, pos, SEEK_DATA);
        if (data < 0 && errno != ENXIO) data = pos, errno = 0; /* no SEEK_DATA: all data */
        if (data < 0 || data >= size) break;                  /* ENXIO: nothing after pos */
        off_t hole = c->lseek(fd, data, SEEK_HOLE);
        if (hole < 0 || hole > size) hole = size;
        if (n == cap) {
            struct segment *g = realloc(segs, (cap = cap ? 2 * cap : 8) * sizeof *segs);
            if (!g) return free(segs), -ENOMEM;
            segs = g;
        }
        segs[n++] = (struct segment){(uint64_t)data, (uint64_t)hole};
        pos = hole;
    }
    *out = segs, *count = n;
    return 0;
}

int dk_oplog_scan(const char *path, dk_oplog_record_fn cb, void *ctx, struct dk_oplog_scan_stats *stats) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    int rc = 0, fd = dk_ifd_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    struct stat st;
    void *m = MAP_FAILED;
    struct segment *segs = NULL;
    size_t nsegs = 0;
    if (fd < 0 || c->fstat(fd, &st) != 0) rc = -errno;
    else if (st.st_size < (off_t)(DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES)) rc = -EINVAL;
    else if ((m = c->mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) rc = -errno;
    if (rc == 0) rc = data_segments(fd, st.st_size, &segs, &nsegs);
    for (size_t i = 0; rc == 0 && i < nsegs; i++) /* one call instead of a fault per page; best effort */
        c->madvise((char *)m + segs[i].lo, segs[i].hi - segs[i].lo, MADV_POPULATE_READ);
    /* The completion marks, when this boot and mount may trust them (marks.c). Their words are per slot of
     * the capacity of the generation in force, which scan_segments takes too (a capacity past the file is
     * no valid header: then no record is delivered). */
    uint32_t *marks = NULL;
    uint64_t capacity = 0, area_dev;
    if (rc == 0 && nsegs > 0 && segs[0].lo == 0 && segs[0].hi >= DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES &&
        oplog_image_generation(m, (size_t)st.st_size, &capacity, &area_dev))
        oplog_marks_load(path, fd, capacity, &marks);
    if (rc == 0) rc = scan_segments(m, (size_t)st.st_size, segs, nsegs, marks, cb, ctx, stats);
    else if (stats) memset(stats, 0, sizeof *stats);
    free(marks);
    free(segs);
    if (m != MAP_FAILED) c->munmap(m, (size_t)st.st_size);
    if (fd >= 0) c->close(fd);
    DK_ERRNO_RESTORE;
    return rc;
}

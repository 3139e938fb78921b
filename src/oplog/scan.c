/* Recovery's view of a log: which records are valid (see oplog.h and docs/oplog.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dk.h"
#include "oplog/format.h"
#include "shim/libc.h"

static int header_valid(const struct oplog_header *h) {
    return h->magic == OPLOG_MAGIC && h->version == OPLOG_VERSION && h->line_bytes == DK_OPLOG_LINE_BYTES &&
           h->generation != 0 && h->crc == oplog_header_crc(h);
}

uint32_t oplog_image_generation(const void *image, size_t bytes, uint64_t *capacity_out) {
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
    return best->generation;
}

/* Is the record whose head is lines[0] valid (shape and crc), given `avail` slots from it to the end? */
static int record_valid(const struct oplog_line *lines, uint64_t avail, uint32_t generation) {
    const struct oplog_line_hdr *h = &lines[0].h;
    if (h->lines == 0 || h->lines > DK_OPLOG_RECORD_LINES_MAX || h->lines > avail || h->type == 0) return 0;
    if (h->data_bytes > DK_OPLOG_DATA_BYTES_MAX || oplog_lines_for(h->data_bytes) != h->lines) return 0;
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
    size_t left = h->data_bytes;
    for (uint32_t i = 1; i < h->lines; i++) {
        size_t n = DK_MIN(left, (size_t)DK_OPLOG_PAYLOAD_BYTES);
        memcpy(buf, lines[i].payload, n);
        buf += n, left -= n;
    }
}

static int deliver(const struct oplog_line *lines, uint64_t slot, uint32_t generation, unsigned char *buf,
                   dk_oplog_record_fn cb, void *ctx) {
    const struct oplog_line_hdr *h = &lines[0].h;
    struct dk_oplog_record rec = {.seq = (uint64_t)generation << 32 | slot, .type = h->type,
                                  .fixed48 = lines[0].payload, .data_len = h->data_bytes};
    if (h->data_bytes) {
        gather(lines, buf);
        rec.data = buf;
    }
    return cb ? cb(&rec, ctx) : 0;
}

int dk_oplog_scan_image(const void *image, size_t bytes, dk_oplog_record_fn cb, void *ctx,
                        struct dk_oplog_scan_stats *stats) {
    struct dk_oplog_scan_stats st = {0};
    uint64_t t0 = dk_now_ns(), capacity = 0;
    st.generation = oplog_image_generation(image, bytes, &capacity);
    int rc = st.generation ? 0 : -EINVAL;
    unsigned char *buf = NULL;
    if (rc == 0 && !(buf = malloc(DK_OPLOG_DATA_BYTES_MAX))) rc = -ENOMEM;
    const struct oplog_line *recs =
        (const struct oplog_line *)((const char *)image + DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES);
    uint32_t gen = (uint32_t)st.generation;
    int in_gap = 0;
    /* The whole capacity is scanned: concurrent appenders finish out of order, so a valid record may follow
     * an empty or torn slot. Empty and stale slots cost one compare each. */
    for (uint64_t slot = 0; rc == 0 && slot < capacity;) {
        const struct oplog_line_hdr *h = &recs[slot].h;
        st.lines_scanned++;
#ifdef DAXKIT_TEST_BUILD
        if (dk_oplog_test_broken == DK_OPLOG_BROKEN_SCAN_STOPS_AT_HOLE && in_gap) break;
#endif
        if (h->generation != gen || h->kind == 0) { /* empty (zero) or from an earlier generation */
            in_gap = 1, slot++;
            continue;
        }
        if (h->kind == OPLOG_KIND_HEAD && record_valid(&recs[slot], capacity - slot, gen)) {
            st.holes += in_gap; /* an interrupted record (or an empty slot) before this valid one */
            in_gap = 0;
            st.records_valid++;
            rc = deliver(&recs[slot], slot, gen, buf, cb, ctx);
            slot += h->lines;
            st.last_slot_used = slot;
            continue;
        }
        if (h->kind == OPLOG_KIND_HEAD) st.records_torn++;
        else st.lines_orphaned++;
        in_gap = 1, slot++;
    }
    free(buf);
    st.scan_ns = dk_now_ns() - t0;
    if (stats) *stats = st;
    return rc;
}

int dk_oplog_scan(const char *path, dk_oplog_record_fn cb, void *ctx, struct dk_oplog_scan_stats *stats) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    int rc = 0, fd = c->openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    void *m = MAP_FAILED;
    if (fd < 0 || c->fstat(fd, &st) != 0) rc = -errno;
    else if (st.st_size < (off_t)(DK_OPLOG_HEADER_LINES * DK_OPLOG_LINE_BYTES)) rc = -EINVAL;
    else if ((m = c->mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0)) == MAP_FAILED)
        rc = -errno;
    if (rc == 0) rc = dk_oplog_scan_image(m, (size_t)st.st_size, cb, ctx, stats);
    else if (stats) memset(stats, 0, sizeof *stats);
    if (m != MAP_FAILED) c->munmap(m, (size_t)st.st_size);
    if (fd >= 0) c->close(fd);
    DK_ERRNO_RESTORE;
    return rc;
}

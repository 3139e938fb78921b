/* The on-media format of an operation log (internal to src/oplog; documented in docs/oplog.md).
 *
 *   file  = header slot 0 | header slot 1 | record slot 0 | record slot 1 | ...   (64-byte lines)
 *   header slot g % 2 holds generation g; recovery uses the valid slot with the higher generation, so a
 *   torn header write leaves the previous generation in force.
 *   record = head line + data lines, consecutive slots, every line tagged with kind and generation. */
#ifndef DK_OPLOG_FORMAT_H
#define DK_OPLOG_FORMAT_H

#include <stdint.h>
#include <string.h>

#include "common/crc32c.h"
#include "oplog/oplog.h"

#define OPLOG_MAGIC 0x4c4f4b44u /* "DKOL" */
/* 2: record type DK_OPLOG_WRITE_STAGED_CRC (session 8). A reader accepts its own version and older ones and
 * refuses a newer log (dk_oplog_scan: -EPROTONOSUPPORT), which recovery then keeps: a reader that does not
 * know a record type must not drop the log's acknowledged writes. */
#define OPLOG_VERSION 2u
#define OPLOG_KIND_HEAD 0xa5u
#define OPLOG_KIND_DATA 0x5au

struct oplog_line_hdr {
    uint32_t crc;        /* head: crc32c of head bytes 4..63 then every data line; data line: 0 */
    uint8_t kind;        /* OPLOG_KIND_HEAD / OPLOG_KIND_DATA; 0 in an empty (zeroed) slot */
    uint8_t type;        /* enum dk_oplog_type (data lines repeat the head's) */
    uint16_t lines;      /* head: lines in the record (1..DK_OPLOG_RECORD_LINES_MAX); data: index 1.. */
    uint32_t generation; /* the header generation this line was written under */
    uint32_t data_bytes; /* the record's total data bytes (head and data lines alike) */
};

struct oplog_line {
    struct oplog_line_hdr h;
    unsigned char payload[DK_OPLOG_PAYLOAD_BYTES];
};
_Static_assert(sizeof(struct oplog_line_hdr) == 16, "line header is 16 bytes");
_Static_assert(sizeof(struct oplog_line) == DK_OPLOG_LINE_BYTES, "a line is one cache line");

struct oplog_header {
    uint32_t crc;            /* crc32c of bytes 4..63 */
    uint32_t magic;
    uint16_t version;
    uint16_t line_bytes;
    uint32_t generation;     /* >= 1 */
    uint64_t capacity_lines; /* record slots after the two header lines */
    uint64_t created_ns;     /* CLOCK_REALTIME at creation (diagnostics) */
    uint32_t creator_pid;    /* diagnostics only: ownership is the flock, never the pid */
    char tag[20];            /* NUL-terminated (tags of at most 19 characters) */
    uint64_t area_dev;       /* st_dev of the log's directory at creation, so recovery can tell that file
                                system renumbered after a reboot; 0: unknown. Logs written before it had
                                char tag[28] here: zero padding after a short tag (read as 0), and a tag of
                                20 or more characters fills tag[19] (oplog_header_area_dev says unknown) */
};
_Static_assert(sizeof(struct oplog_header) == DK_OPLOG_LINE_BYTES, "a header is one cache line");
_Static_assert(DK_OPLOG_RECORD_LINES_MAX <= UINT16_MAX, "a record's line count fits the 16-bit lines field");
_Static_assert(DK_OPLOG_DATA_BYTES_MAX == (DK_OPLOG_RECORD_LINES_MAX - 1) * DK_OPLOG_PAYLOAD_BYTES,
               "data lines carry 48 bytes each");
/* seq = generation << 32 | slot: slots must fit in 32 bits. */
#define OPLOG_CAPACITY_LINES_MAX 0xffffffffull

static inline uint32_t oplog_header_crc(const struct oplog_header *h) {
    return dk_crc32c(0, (const char *)h + 4, sizeof *h - 4);
}

static inline uint32_t oplog_lines_for(size_t data_len) {
    return 1u + (uint32_t)((data_len + DK_OPLOG_PAYLOAD_BYTES - 1) / DK_OPLOG_PAYLOAD_BYTES);
}

static inline uint64_t oplog_header_area_dev(const struct oplog_header *h) {
    return h->tag[sizeof h->tag - 1] == 0 ? h->area_dev : 0;
}

/* The completion marks of a log <name>.log live in <name>.done (marks.c, docs/oplog.md "Completion marks"):
 * this header in its first line, then from OPLOG_MARKS_OFFSET one 32-bit word per record slot, which holds
 * the generation of the slot's record once its operation is applied (0: not marked). The marks say
 * something only to a recoverer of the same boot and, where the log records it, of the same mount of the
 * log's file system (what an applied operation is sure to be in: memory, the page cache), and only for
 * the log the header names (its st_dev and st_ino). */
#define OPLOG_MARKS_MAGIC 0x4e444b44u /* "DKDN" */
#define OPLOG_MARKS_VERSION 1u
#define OPLOG_MARKS_OFFSET 4096u
#define OPLOG_MARKS_MOUNT_NONE 0u   /* no mount id recorded: the boot decides (flush media only) */
#define OPLOG_MARKS_MOUNT_UNIQUE 1u /* statx STATX_MNT_ID_UNIQUE of the log (Linux 6.8): never reused */
struct oplog_marks_header {
    uint32_t crc;            /* crc32c of bytes 4..63 */
    uint32_t magic;
    uint16_t version;
    uint16_t mount_kind;     /* OPLOG_MARKS_MOUNT_* */
    uint32_t pad0;
    uint8_t boot_id[16];     /* /proc/sys/kernel/random/boot_id when the log was made */
    uint64_t mount_id;       /* mount_kind UNIQUE: the log's mount */
    uint64_t log_dev, log_ino; /* the log these marks belong to */
};
_Static_assert(sizeof(struct oplog_marks_header) <= DK_OPLOG_LINE_BYTES, "the marks header fits a line");

static inline uint32_t oplog_marks_header_crc(const struct oplog_marks_header *h) {
    unsigned char line[DK_OPLOG_LINE_BYTES] = {0};
    memcpy(line, h, sizeof *h);
    return dk_crc32c(0, line + 4, sizeof line - 4);
}

/* The generation in force in an image (0: neither slot valid); *capacity_out gets its capacity and
 * *area_dev_out its oplog_header_area_dev. */
uint32_t oplog_image_generation(const void *image, size_t bytes, uint64_t *capacity_out, uint64_t *area_dev_out);

#endif

/* Records with contents derived from (writer, index), so a checker can tell an intact record from a torn
 * or foreign one without keeping a copy. Shared by the oplog unit tests, the crash workload and the
 * explorer tests. */
#ifndef DK_TESTS_OPLOG_RECORDS_H
#define DK_TESTS_OPLOG_RECORDS_H

#include <stdint.h>
#include <string.h>

#include "oplog/oplog.h"

/* The data length of record `index` of `writer`: cycles through one-line, two-line and long records. */
static inline size_t rec_data_len(uint32_t writer, uint32_t index, size_t data_max) {
    static const size_t lens[] = {0, 1, 47, 48, 49, 100, 0, 200, 0, 1000, 17, 4096};
    size_t n = lens[(index + writer) % (sizeof lens / sizeof lens[0])];
    return n < data_max ? n : data_max;
}

static inline uint8_t rec_byte(uint32_t writer, uint32_t index, size_t pos) {
    uint64_t x = ((uint64_t)writer << 40) ^ ((uint64_t)index << 16) ^ pos;
    x *= 0x9e3779b97f4a7c15ull;
    return (uint8_t)(x >> 56);
}

/* The 48 fixed bytes: writer, index, data length, then pattern bytes. */
static inline void rec_fixed(uint32_t writer, uint32_t index, size_t data_len, unsigned char out[48]) {
    uint64_t dl = data_len;
    memcpy(out, &writer, 4);
    memcpy(out + 4, &index, 4);
    memcpy(out + 8, &dl, 8);
    for (size_t i = 16; i < 48; i++) out[i] = rec_byte(writer, index, 100000 + i);
}

static inline void rec_data(uint32_t writer, uint32_t index, size_t data_len, unsigned char *out) {
    for (size_t i = 0; i < data_len; i++) out[i] = rec_byte(writer, index, i);
}

static inline unsigned rec_type(uint32_t writer, uint32_t index) {
    return DK_OPLOG_TYPE_USER + (writer * 7 + index) % 100;
}

/* Appends record (writer, index) with data at most data_max bytes. Returns dk_oplog_append's value. */
static inline int rec_append(struct dk_oplog *log, uint32_t writer, uint32_t index, size_t data_max,
                             uint64_t *seq_out) {
    unsigned char fixed[48], data[DK_OPLOG_DATA_BYTES_MAX];
    size_t n = rec_data_len(writer, index, data_max);
    rec_fixed(writer, index, n, fixed);
    rec_data(writer, index, n, data);
    return dk_oplog_append(log, rec_type(writer, index), fixed, n ? data : NULL, n, seq_out);
}

/* Checks a scanned record is exactly what rec_append wrote; fills writer/index. Returns 1 when intact. */
static inline int rec_intact(const struct dk_oplog_record *r, uint32_t *writer, uint32_t *index) {
    const unsigned char *f = r->fixed48;
    uint64_t dl;
    memcpy(writer, f, 4);
    memcpy(index, f + 4, 4);
    memcpy(&dl, f + 8, 8);
    unsigned char want[48];
    rec_fixed(*writer, *index, (size_t)dl, want);
    if (memcmp(want, f, 48) != 0 || dl != r->data_len || r->type != rec_type(*writer, *index)) return 0;
    const unsigned char *d = r->data;
    for (size_t i = 0; i < r->data_len; i++)
        if (d[i] != rec_byte(*writer, *index, i)) return 0;
    return 1;
}

#endif

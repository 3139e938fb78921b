/* Delta records (strict mode, session 29; docs/strict.md "Delta records"): an overwrite encoded by the bytes in
 * which it differs from what the file holds. The encoding, a record's data: segments, each a header
 * {uint32 offset in the write, uint32 length} (little endian, unaligned) and `length` bytes; segments in
 * increasing order, not overlapping. Pure functions: no file, no lock (strict.c and io.c bring those). */
#ifndef DK_UPATH_DELTA_H
#define DK_UPATH_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DK_DELTA_SEG_HDR 8u

/* The segments in which `buf` (the write, n bytes) differs from `old` (the file's bytes there), into `out`.
 * Returns their encoded length (0: nothing differs) or -1 as soon as it would pass `cap` (then `out` holds
 * garbage): a write that changes most bytes reads about cap / 64 lines of `old`, not all of them. Two changed
 * runs closer than a segment header are one segment. */
ssize_t dk_delta_encode(const char *buf, const char *old, size_t n, unsigned char *out, size_t cap);

/* Calls fn(ctx, offset, bytes, length) for each segment of an encoded delta of a write of n bytes, in order;
 * false (having called fn for none) when the encoding is malformed: a short header, a segment past n or
 * before the end of the previous one. */
bool dk_delta_walk(const unsigned char *d, size_t len, size_t n,
                   void (*fn)(void *ctx, size_t off, const unsigned char *bytes, size_t seg_len), void *ctx);

/* Lays the segments over dst (the n bytes of the range): false when malformed (dst untouched). */
bool dk_delta_apply_buf(char *dst, size_t n, const unsigned char *d, size_t len);

#endif

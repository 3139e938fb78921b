/* Appending records and starting a new generation (see oplog.h and docs/oplog.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/pwrite_all.h"
#include "oplog/internal.h"
#include "persist/persist.h"
#include "shim/libc.h"

/* Reserves `lines` consecutive slots by CAS on the DRAM tail. Returns the first slot, or UINT64_MAX when
 * they do not fit (the tail is left alone, so smaller records may still fit). Acquire-release (oplog.h: the
 * same locked instruction on x86; the order is for the compiler and the model). */
static inline uint64_t reserve(struct dk_oplog *log, uint32_t lines, bool spare) {
    uint64_t limit = spare ? log->capacity_lines : log->usable_lines;
    uint64_t cur = __atomic_load_n(&log->tail_lines, __ATOMIC_RELAXED);
    do {
        if (cur + lines > limit) return UINT64_MAX;
    } while (!__atomic_compare_exchange_n(&log->tail_lines, &cur, cur + lines, 1, __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));
    return cur;
}

/* This thread holds grow_mu (counted from before the lock to after the unlock): a signal handler's spare
 * reservation then does not wait for it. */
static __thread int grow_held;

/* The slow path once per OPLOG_ALLOCATE_LINES: allocates the next step(s) of the file, and the spare past
 * them (so that a spare reservation rarely allocates). -EAGAIN: `spare` and this thread holds grow_mu. */
static int allocate_through(struct dk_oplog *log, uint64_t end_lines, bool spare) {
    if (spare && grow_held) return -EAGAIN;
    end_lines = DK_MIN(end_lines + __atomic_load_n(&log->spare_lines, __ATOMIC_RELAXED), log->capacity_lines);
    int cancel_was = dk_cancel_off(); /* grow_mu held across a zero fill's pwrite + fdatasync (review 11, 2) */
    grow_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pthread_mutex_lock(&log->grow_mu);
    DK_CRASH_POINT("oplog.grow.locked"); /* shim_handler_fork_grow's cue */
    int rc = 0;
    while (rc == 0 && log->allocated_lines < end_lines)
        rc = oplog_allocate(log, DK_MIN(log->capacity_lines, log->allocated_lines + OPLOG_ALLOCATE_LINES));
    pthread_mutex_unlock(&log->grow_mu);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    grow_held--;
    dk_cancel_restore(cancel_was);
    return rc;
}

void dk_oplog_set_spare(struct dk_oplog *log, uint64_t lines) {
    lines = DK_MIN(lines, log->capacity_lines / 4);
    __atomic_store_n(&log->spare_lines, lines, __ATOMIC_RELAXED);
    __atomic_store_n(&log->usable_lines, log->capacity_lines - lines, __ATOMIC_RELAXED);
}

/* Stores one whole line non-temporally into the mapping (the trace sees a 64-byte NT store). No fence.
 * Flush media only: on the page cache the lines are built in a buffer that goes to the file by pwrite. */
static void store_line(struct oplog_line *dst, const struct oplog_line *src) {
    dk_store_persistent(dst, src, sizeof *src, DK_OPLOG_LINE_BYTES);
}

#ifdef DAXKIT_TEST_BUILD
int dk_oplog_test_refuse_rwf_dsync;
unsigned long dk_oplog_test_rwf_dsync_tries;
int dk_oplog_test_direct_einval;
#endif

/* pwritev2 (rwf_flags) of all n bytes. Test builds can play a kernel that refuses RWF_DSYNC, and an O_DIRECT
 * descriptor that refuses every write with EINVAL. */
static int write_all(struct dk_oplog *log, int fd, const void *src, size_t n, uint64_t file_offset, int rwf_flags) {
#ifdef DAXKIT_TEST_BUILD
    if (rwf_flags) __atomic_add_fetch(&dk_oplog_test_rwf_dsync_tries, 1, __ATOMIC_RELAXED);
    if (rwf_flags && dk_oplog_test_refuse_rwf_dsync) return -EOPNOTSUPP;
    if (fd == log->direct_fd && dk_oplog_test_direct_einval) return -EINVAL;
#else
    (void)log;
#endif
    return dk_pwrite_all(fd, src, n, file_offset, rwf_flags, NULL);
}

int oplog_write_durable(struct dk_oplog *log, int fd, const void *src, size_t n, uint64_t file_offset) {
    DK_ERRNO_SAVE;
    /* RWF_DSYNC: one system call, and the kernel syncs just this range (measured a few us less than
     * pwrite + fdatasync); a kernel without it (Linux < 4.7: EOPNOTSUPP, or EINVAL for an unknown flag) is
     * asked once per log, not at every record. An EINVAL from the O_DIRECT descriptor says nothing about
     * the flag (the direct write itself was refused): it goes back to the caller (oplog_write_record). */
    int rc = -EOPNOTSUPP;
    if (!__atomic_load_n(&log->no_rwf_dsync, __ATOMIC_RELAXED)) {
        rc = write_all(log, fd, src, n, file_offset, RWF_DSYNC);
        if (rc == -EINVAL && fd == log->direct_fd) goto out;
        if (rc == -EOPNOTSUPP || rc == -EINVAL) __atomic_store_n(&log->no_rwf_dsync, 1, __ATOMIC_RELAXED);
    }
    if (rc == -EOPNOTSUPP || rc == -EINVAL) {
        rc = write_all(log, fd, src, n, file_offset, 0);
        int cancel_was = dk_cancel_off(); /* callers hold locks (a checkpoint's, grow_mu): review 11, finding 2 */
        if (rc == 0 && dk_libc()->fdatasync(fd) != 0) rc = -errno;
        dk_cancel_restore(cancel_was);
    }
out:
    DK_ERRNO_RESTORE;
    return rc;
}

/* A page-cache record made durable: through the O_DIRECT descriptor until it refuses a write with EINVAL
 * (a file system or device that takes no direct write of this shape), then through the buffered descriptor
 * for good (said once per log). The direct descriptor stays open until dk_oplog_close: another appender
 * may be writing through it right now, and a closed number can be reused by the program at once. */
static int oplog_write_record(struct dk_oplog *log, const void *src, size_t n, uint64_t file_offset) {
    if (log->direct_fd >= 0 && !__atomic_load_n(&log->direct_refused, __ATOMIC_RELAXED)) {
        int rc = oplog_write_durable(log, log->direct_fd, src, n, file_offset);
        if (rc != -EINVAL) return rc;
        if (!__atomic_exchange_n(&log->direct_refused, 1, __ATOMIC_RELAXED)) {
            dk_log("%s: the O_DIRECT descriptor refused a record write (EINVAL): records go through the page "
                   "cache from now on", log->path);
            dk_count(DK_C_fallbacks, 1);
        }
    }
    return oplog_write_durable(log, log->fd, src, n, file_offset);
}

/* Writes the data lines of a record starting at `dst` and returns the crc continued over them. */
static uint32_t write_data_lines(struct oplog_line *dst, const struct oplog_line_hdr *head, const void *data,
                                 size_t data_len, uint32_t crc) {
    const unsigned char *src = data;
    for (uint16_t i = 1; data_len > 0; i++) {
        struct oplog_line line = {.h = *head};
        line.h.crc = 0;
        line.h.kind = OPLOG_KIND_DATA;
        line.h.lines = i;
        size_t n = DK_MIN(data_len, (size_t)DK_OPLOG_PAYLOAD_BYTES);
        memcpy(line.payload, src, n);
        crc = dk_crc32c(crc, &line, sizeof line);
        store_line(&dst[i - 1], &line);
        src += n, data_len -= n;
    }
    return crc;
}

/* Page cache: the same data lines (byte for byte) built in place in the record's buffer, and their crc
 * in one pass over them -- not line by line through a copy (an 87-line 4 KiB record: the per-line copies
 * and crc calls were a visible part of a strict write's CPU time). `count` data lines: the bytes, then
 * zero padding lines up to a direct record's sector end. Whole lines first with fixed-size copies (a
 * 16-byte header and 48 payload bytes: a few moves each), then the partial and padding lines: 6,344 ->
 * 1,775 instructions per 4 KiB record in dk_oplog_commit (callgrind, session 11; the variable-length copy
 * and the header's field stores per line were most of them). Returns the crc continued over them. */
static uint32_t build_data_lines(struct oplog_line *dst, const struct oplog_line_hdr *head, const void *data,
                                 size_t data_len, uint32_t count, uint32_t crc) {
    const unsigned char *src = data;
    struct oplog_line_hdr h = *head;
    h.crc = 0;
    h.kind = OPLOG_KIND_DATA;
    uint32_t full = (uint32_t)DK_MIN(data_len / DK_OPLOG_PAYLOAD_BYTES, (size_t)count), i = 0;
    for (; i < full; i++, src += DK_OPLOG_PAYLOAD_BYTES) {
        h.lines = (uint16_t)(i + 1);
        dst[i].h = h;
        memcpy(dst[i].payload, src, DK_OPLOG_PAYLOAD_BYTES);
    }
    data_len -= (size_t)full * DK_OPLOG_PAYLOAD_BYTES;
    for (; i < count; i++) {
        h.lines = (uint16_t)(i + 1);
        dst[i].h = h;
        size_t n = DK_MIN(data_len, (size_t)DK_OPLOG_PAYLOAD_BYTES);
        if (n) memcpy(dst[i].payload, src, n);
        if (n < DK_OPLOG_PAYLOAD_BYTES) memset(dst[i].payload + n, 0, DK_OPLOG_PAYLOAD_BYTES - n);
        src += n, data_len -= n;
    }
    return dk_crc32c_wide(crc, dst, (size_t)count * DK_OPLOG_LINE_BYTES); /* one fold pass: ~0.1 us for 5.5 KiB */
}

static inline __attribute__((always_inline)) int reserve_lines(struct dk_oplog *log, size_t data_len, bool spare,
                                                                struct dk_oplog_reservation *res) {
    if (data_len > DK_OPLOG_DATA_BYTES_MAX) return -EINVAL;
    int sticky = __atomic_load_n(&log->sticky_error, __ATOMIC_RELAXED);
    if (sticky) return sticky;
    /* A direct record fills whole sectors (its padding lines are zero data lines the crc covers). */
    uint32_t lines = dk_oplog_record_lines(log, data_len);
    dk_assert(lines <= DK_OPLOG_RECORD_LINES_MAX);
    uint64_t slot = reserve(log, lines, spare);
    if (slot == UINT64_MAX) return -ENOSPC;
    if (DK_UNLIKELY(slot + lines > __atomic_load_n(&log->allocated_lines, __ATOMIC_ACQUIRE))) {
        int rc = allocate_through(log, slot + lines, spare);
        if (rc != 0) return rc; /* the reserved slots stay empty: recovery skips them */
    }
    *res = (struct dk_oplog_reservation){slot, lines, data_len, (uint64_t)log->generation << 32 | slot, spare};
    DK_CRASH_POINT("oplog.append.reserved");
    return 0;
}

int dk_oplog_reserve(struct dk_oplog *log, size_t data_len, struct dk_oplog_reservation *res) {
    return reserve_lines(log, data_len, false, res);
}

int dk_oplog_reserve_spare(struct dk_oplog *log, size_t data_len, struct dk_oplog_reservation *res) {
    return reserve_lines(log, data_len, true, res);
}

int dk_oplog_commit(struct dk_oplog *log, const struct dk_oplog_reservation *res, unsigned type, const void *fixed48,
                    const void *data, uint64_t *seq_out) {
    size_t data_len = res->data_len;
    uint64_t slot = res->slot;
    uint32_t lines = res->lines;
    if (type == 0 || type > 255 || (data_len && !data)) return -EINVAL; /* the slots stay empty */
    struct oplog_line head = {.h = {.kind = OPLOG_KIND_HEAD, .type = (uint8_t)type, .lines = (uint16_t)lines,
                                    .generation = log->generation, .data_bytes = (uint32_t)data_len}};
    if (fixed48) memcpy(head.payload, fixed48, DK_OPLOG_PAYLOAD_BYTES);
    uint32_t crc = dk_crc32c(0, (const char *)&head + 4, sizeof head - 4);
    /* Page cache: the record is built in a buffer and written by pwrite + fdatasync. Stores through the
     * mapping would fault and dirty whole (large) folios, which msync then writes back entirely: measured
     * 140-380 us per record against 45-55 us for pwrite + fdatasync (XFS on a RAM loop, Linux 6.18). */
    _Alignas(DK_PAGE_BYTES) struct oplog_line small[16]; /* aligned for a direct write */
    struct oplog_line *buf = &log->records[slot];
    size_t mapped = 0; /* a signal-safe commit's buffer: mmap'ed (malloc is not async-signal-safe) */
    if (log->persist == OPLOG_PERSIST_PWRITE) {
        buf = small;
        if (lines > DK_ARRAY_LEN(small) && res->signal_safe) {
            mapped = (size_t)lines * sizeof *buf;
            buf = dk_libc()->mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (buf == MAP_FAILED) return -ENOMEM; /* the reserved slots stay empty: recovery skips them */
        } else if (lines > DK_ARRAY_LEN(small) &&
                   posix_memalign((void **)&buf, DK_PAGE_BYTES, (size_t)lines * sizeof *buf)) {
            return -ENOMEM;
        }
    }
    /* Data lines first: a process that dies in between leaves lines no valid head claims. */
    uint32_t crc_all = log->persist == OPLOG_PERSIST_PWRITE ? build_data_lines(&buf[1], &head.h, data, data_len, lines - 1, crc)
                                                          : write_data_lines(&buf[1], &head.h, data, data_len, crc);
    if (lines > 1) DK_CRASH_POINT("oplog.append.data_written");
    dk_assert(slot + lines <= __atomic_load_n(&log->allocated_lines, __ATOMIC_ACQUIRE));
    head.h.crc = crc_all;
#ifdef DAXKIT_TEST_BUILD
    if (dk_oplog_test_broken == DK_OPLOG_BROKEN_CRC_HEAD_ONLY) head.h.crc = crc;
#endif
    if (log->persist == OPLOG_PERSIST_PWRITE) buf[0] = head;
    else store_line(&buf[0], &head);
    DK_CRASH_POINT("oplog.append.before_fence");
    int rc = 0;
    if (log->persist == OPLOG_PERSIST_PWRITE) {
        rc = oplog_write_record(log, buf, (size_t)lines * DK_OPLOG_LINE_BYTES,
                                (DK_OPLOG_HEADER_LINES + slot) * DK_OPLOG_LINE_BYTES);
        if (mapped) dk_libc()->munmap(buf, mapped);
        else if (buf != small) free(buf);
    } else {
#ifdef DAXKIT_TEST_BUILD
        if (dk_oplog_test_broken != DK_OPLOG_BROKEN_NO_FENCE)
#endif
            dk_fence(); /* the one fence: every line of the record is on media after it */
    }
    if (rc != 0) {
        int expected = 0;
        __atomic_compare_exchange_n(&log->sticky_error, &expected, -EIO, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        return -EIO;
    }
    DK_CRASH_POINT("oplog.append.durable");
    if (seq_out) *seq_out = (uint64_t)log->generation << 32 | slot;
    return 0;
}

int dk_oplog_append(struct dk_oplog *log, unsigned type, const void *fixed48, const void *data, size_t data_len,
                    uint64_t *seq_out) {
    if (type == 0 || type > 255 || data_len > DK_OPLOG_DATA_BYTES_MAX || (data_len && !data)) return -EINVAL;
    struct dk_oplog_reservation res;
    int rc = dk_oplog_reserve(log, data_len, &res);
    return rc ? rc : dk_oplog_commit(log, &res, type, fixed48, data, seq_out);
}

int dk_oplog_retract(struct dk_oplog *log, uint64_t seq) {
    uint64_t slot = seq & UINT32_MAX;
    if (seq >> 32 != log->generation) return 0; /* reset since: the record is no longer valid anyway */
    /* The head line first: the scan takes a line of kind 0 for an empty slot and goes on. A direct record
     * fills whole sectors: its first sector (the head line and, with data, its first data lines) is its own,
     * and zeroed the data lines after it are orphans the scan skips (review 15, finding 11: an inline
     * record on XFS could not be taken back). A mapped record's data lines (an inline write's) go after the
     * head is durable: a crash between leaves orphan lines, never a record. */
    uint32_t lines = dk_oplog_record_lines(log, 0), data_lines = 0;
    if (log->persist != OPLOG_PERSIST_PWRITE) {
        const struct oplog_line_hdr *h = &log->records[slot].h;
        if (h->kind != OPLOG_KIND_HEAD) return -EINVAL;
        data_lines = h->data_bytes ? h->lines - 1u : 0;
    }
    int rc = 0;
    if (log->persist == OPLOG_PERSIST_PWRITE) {
        /* A direct record fills its sector: up to a page of lines (direct.c accepts alignments to a page). */
        static _Alignas(DK_PAGE_BYTES) const struct oplog_line zero[DK_PAGE_BYTES / DK_OPLOG_LINE_BYTES];
        if (lines > DK_ARRAY_LEN(zero)) return -EINVAL;
        rc = oplog_write_record(log, zero, (size_t)lines * DK_OPLOG_LINE_BYTES,
                                (DK_OPLOG_HEADER_LINES + slot) * DK_OPLOG_LINE_BYTES);
    } else {
        static const struct oplog_line zero;
        store_line(&log->records[slot], &zero);
        dk_fence();
        for (uint32_t i = 1; i <= data_lines; i++) store_line(&log->records[slot + i], &zero);
        if (data_lines) dk_fence();
    }
    return rc ? -EIO : 0;
}

int dk_oplog_reset(struct dk_oplog *log) {
    if (log->generation == UINT32_MAX) return -EOVERFLOW;
    DK_ERRNO_SAVE;
    uint32_t next = log->generation + 1;
    DK_CRASH_POINT("oplog.reset.before_header");
    /* The instant this line persists, every record of the old generation stops being valid. */
    int rc = oplog_write_header(log, next, NULL);
    if (rc == 0) {
        DK_CRASH_POINT("oplog.reset.after_header");
        log->generation = next;
        __atomic_store_n(&log->tail_lines, log->first_slot, __ATOMIC_RELEASE);
    }
    DK_ERRNO_RESTORE;
    return rc;
}

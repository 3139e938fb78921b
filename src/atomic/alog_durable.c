/* How the engine makes its stores durable, per medium (docs/media.md):
 *   dax (or DAXKIT_PERSIST=flush emulation) and volatile: stores are written back as they are made
 *     (non-temporal or store + clwb), and a fence is the ordering and durability point;
 *   pagecache: the kernel writes pages back in any order, so the ordering points are msync / fdatasync.
 * Every store goes through persist/persist.h so the crash-state explorer sees it. */
#include <errno.h>
#include <sys/mman.h>

#include "atomic/alog.h"
#include "common/dk.h"
#include "persist/persist.h"
#include "shim/libc.h"

void alog_store(struct alog_file *f, void *dst, const void *src, size_t n) {
    (void)f;
    dk_store_persistent(dst, src, n, ALOG_NT_MIN_BYTES);
}

/* An aligned 8-byte value stored, traced and written back. Failure-atomic: glibc copies 8 bytes with
 * full-width 8-byte moves, so every store to the word writes all of it (x86 stores of an aligned 8-byte
 * word are atomic); a word is never seen half old, half new. */
void alog_store_word(uint64_t *dst, uint64_t v) {
    dk_assert(((uintptr_t)dst & 7) == 0);
    dk_copy_flush(dst, &v, sizeof v);
}

#ifdef DAXKIT_TEST_BUILD
__thread bool alog_test_unfenced;
#define TEST_UNFENCED() (alog_test_broken == ALOG_BROKEN_UWP_SAVE_UNFENCED && alog_test_unfenced)
#else
#define TEST_UNFENCED() false
#endif

static int sync_fail(struct alog_file *f, int e) {
    __atomic_store_n(&f->broken, -e, __ATOMIC_RELEASE);
    return -e;
}

static int msync_range(struct alog_file *f, const void *p, size_t n) {
    uintptr_t start = dk_round_down((uintptr_t)p, DK_PAGE_BYTES);
    uintptr_t end = dk_round_up((uintptr_t)p + n, DK_PAGE_BYTES);
    dk_fence();
    if (DK_REAL(msync)((void *)start, end - start, MS_SYNC) != 0) return sync_fail(f, errno);
    return 0;
}

int alog_durable_data_range(struct alog_file *f, uint64_t off, uint64_t n) {
    if (f->persist_as != DK_MEDIUM_PAGECACHE) {
        dk_fence();
        return 0;
    }
    return msync_range(f, f->data + off, n);
}

int alog_durable_data_all(struct alog_file *f) {
    dk_fence();
    if (f->persist_as != DK_MEDIUM_PAGECACHE) return 0;
    if (DK_REAL(fdatasync)(f->data_fd) != 0) return sync_fail(f, errno);
    return 0;
}

int alog_durable_log_range(struct alog_file *f, const void *p, size_t n) {
    if (f->persist_as != DK_MEDIUM_PAGECACHE) {
        if (!TEST_UNFENCED()) dk_fence();
        return 0;
    }
    return msync_range(f, p, n);
}

int alog_durable_log_all(struct alog_file *f) {
    if (!TEST_UNFENCED()) dk_fence();
    if (f->persist_as != DK_MEDIUM_PAGECACHE) return 0;
    if (DK_REAL(fdatasync)(f->log_fd) != 0) return sync_fail(f, errno);
    return 0;
}

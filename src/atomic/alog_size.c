/* The file size as part of the atomic state (logs opened with a tracked size: DAXKIT_ATOMIC files under
 * `daxkit run`, src/upath/atomic_route.c).
 *
 * The engine stores into a mapping, so the file is kept physically larger than its logical size: a
 * capacity in 2 MiB steps, mapped inside an address range reserved once at open (growth maps the new part
 * behind the old one at a fixed address: nothing moves under the checkpoint thread, which takes no lock).
 * The logical size is committed with the epoch (alog_layout.h: size_slot[H & 1], stored before the epoch
 * word). The rules:
 *   - a size is recorded (slot of the current epoch, then size_mode) before the physical size first moves;
 *   - after recovery the file is cut to the committed size and regrown to its capacity: bytes past the
 *     committed size read as zeros again (a crashed epoch's appends vanish with it);
 *   - a clean close cuts the file to the committed size, makes that durable, then clears size_mode.
 * A log that still records a size when the C API maps the file (the program crashed) is settled the same
 * way, and the API then maps the committed size. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "shim/libc.h"
#include "common/mapflags.h"


#define ALOG_RESERVE_BYTES_MIN (64ull << 30) /* address space per tracked file (not memory) */
#define ALOG_GROW_STEP_MAX (64ull << 20)
#define ALOG_POPULATE_GROW_MAX (64ull << 20)

static int fail_errno(void) { return errno ? -errno : -EIO; }

uint64_t alog_capacity_for(uint64_t size, uint64_t current) {
    uint64_t step = DK_MIN(ALOG_GROW_STEP_MAX, DK_MAX((uint64_t)DK_HUGE_BYTES, current));
    uint64_t want = size > current ? DK_MAX(size, current + step) : current;
    return DK_MAX((uint64_t)DK_HUGE_BYTES, dk_round_up(want, DK_HUGE_BYTES));
}

/* Maps file range [from, to) at f->data + from (fixed, inside the reservation). */
static int map_fixed(struct alog_file *f, uint64_t from, uint64_t to) {
    bool dax = f->persist_as == DK_MEDIUM_DAX && !f->emulated;
    int populate = to - from <= ALOG_POPULATE_GROW_MAX ? MAP_POPULATE : 0;
    void *want = f->data + from, *a = MAP_FAILED;
    if (dax)
        a = DK_REAL(mmap)(want, to - from, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC | MAP_FIXED | populate,
                          f->data_fd, (off_t)from);
    if (a == MAP_FAILED)
        a = DK_REAL(mmap)(want, to - from, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | populate, f->data_fd,
                          (off_t)from);
    if (a == MAP_FAILED) return fail_errno();
    return 0;
}

int alog_map_reserved(struct alog_file *f) {
    uint64_t reserve = DK_MAX(ALOG_RESERVE_BYTES_MIN, dk_round_up(2 * f->data_len, DK_HUGE_BYTES));
    uint64_t floor = dk_round_up(f->data_len, DK_HUGE_BYTES) + ALOG_GROW_STEP_MAX;
    void *r;
    /* A smaller reservation where the address space is limited (valgrind, RLIMIT_AS): growth past it is EFBIG */
    while ((r = DK_REAL(mmap)(NULL, reserve + DK_HUGE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                              -1, 0)) == MAP_FAILED &&
           reserve / 2 >= floor)
        reserve /= 2;
    if (r == MAP_FAILED) return fail_errno();
    f->reserve_base = r;
    f->reserve_bytes = reserve + DK_HUGE_BYTES;
    f->data = (char *)dk_round_up((uintptr_t)r, DK_HUGE_BYTES); /* huge pages need 2 MiB-aligned addresses */
    f->data_mapped = 0;
    if (!f->data_len) return 0;
    int rc = map_fixed(f, 0, f->data_len);
    if (!rc) f->data_mapped = f->data_len;
    return rc;
}

/* The file sized to `to` bytes, [from, to) allocated (where the file system can). */
static int size_allocated(struct alog_file *f, uint64_t from, uint64_t to) {
    int r = DK_REAL(fallocate)(f->data_fd, 0, (off_t)from, (off_t)(to - from));
    if (r != 0 && errno == EOPNOTSUPP) r = DK_REAL(ftruncate)(f->data_fd, (off_t)to);
    return r == 0 ? 0 : fail_errno();
}

int alog_grow(struct alog_file *f, uint64_t need) {
    if (need <= f->data_len) return 0;
    uint64_t cap = alog_capacity_for(need, f->data_len);
    if (cap > (uint64_t)(f->reserve_base + f->reserve_bytes - f->data) || cap >= ALOG_FILE_BYTES_MAX) return -EFBIG;
    /* No durability needed: the committed size, not the physical one, is what recovery keeps. Allocated
     * (not just sized): a full file system is ENOSPC here, not a SIGBUS at a store into the mapping. */
    int rc = size_allocated(f, f->data_len, cap);
    if (rc) return rc;
    if (cap > f->data_mapped) {
        rc = map_fixed(f, f->data_mapped, cap);
        if (rc) return rc;
        f->data_mapped = cap;
    }
    __atomic_store_n(&f->data_len, cap, __ATOMIC_RELEASE);
    return 0;
}

/* Records `size` as the committed size of the current epoch, durably, before anything else. */
static int record_size(struct alog_file *f, uint64_t size) {
    alog_store_word(&f->hdr->size_slot[f->hdr->epoch & 1], size);
    int rc = alog_durable_log_all(f);
    if (rc) return rc;
    alog_store_word(&f->hdr->size_mode, ALOG_SIZE_TRACKED);
    return alog_durable_log_all(f);
}

bool alog_size_recorded(const struct alog_file *f, uint64_t *size) {
    if (f->hdr->size_mode != ALOG_SIZE_TRACKED) return false;
    *size = f->hdr->size_slot[f->hdr->epoch & 1];
    return true;
}

int alog_size_prepare(struct alog_file *f) {
    uint64_t committed;
    if (!alog_size_recorded(f, &committed)) {
        int rc = record_size(f, f->data_len);
        if (rc) return rc;
        committed = f->data_len;
    }
    f->size_phys_at_open = f->data_len;
    f->size_pending = committed;
    /* Recovery may touch any byte below the physical size: keep it until then, and grow to a capacity. */
    uint64_t cap = DK_MAX(f->data_len, alog_capacity_for(committed, 0));
    if (cap > f->data_len) {
        int rc = size_allocated(f, f->data_len, cap);
        if (rc) return rc;
    }
    f->data_len = cap;
    return 0;
}

/* After recovery: bytes past the committed size (a crashed epoch's appends) become zeros again. */
int alog_size_settle(struct alog_file *f) {
    uint64_t committed = f->size_pending;
    if (f->size_phys_at_open <= committed) return 0; /* the tail was zero-extended by prepare */
    uint64_t cap = alog_capacity_for(committed, 0);
    DK_CRASH_POINT("atomic.size.before_settle");
    if (DK_REAL(ftruncate)(f->data_fd, (off_t)committed) != 0) return fail_errno();
    int rc = size_allocated(f, committed, cap);
    if (rc) return rc;
    f->data_len = cap; /* mapped beyond stays reserved; growth maps it again */
    return 0;
}

/* Cuts the file to its committed size, durably, then forgets the size (clean close; a crashed tracked
 * log met by the C API). The caller recovered the file first. Sets *size. */
int alog_size_release(struct alog_file *f, uint64_t *size) {
    uint64_t committed;
    if (!alog_size_recorded(f, &committed)) return 0;
    DK_CRASH_POINT("atomic.size.before_release");
    if (DK_REAL(ftruncate)(f->data_fd, (off_t)committed) != 0 || DK_REAL(fsync)(f->data_fd) != 0) return fail_errno();
    alog_store_word(&f->hdr->size_mode, 0);
    if (size) *size = committed;
    return alog_durable_log_all(f);
}

void alog_size_stage_commit(struct alog_file *f) {
    if (!f->track_size) return;
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_SIZE_SAME_SLOT) { /* a crash before the epoch word: old data, new size */
        alog_store_word(&f->hdr->size_slot[f->epoch & 1], f->size_pending);
        return;
    }
#endif
    /* A plain 8-byte store into the commit line: alog_commit.c writes the line back once for every slot */
    __atomic_store_n(&f->hdr->size_slot[(f->epoch + 1) & 1], f->size_pending, __ATOMIC_RELAXED);
}

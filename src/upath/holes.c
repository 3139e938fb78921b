/* Holes. A load or a store through a shared mapping of a hole makes the medium allocate the page (tmpfs
 * allocates even for a load), and where it cannot -- a full tmpfs, a memory cgroup's limit, a full DAX or
 * page-cache file system -- the program dies of SIGBUS, where the kernel's read returns zeros and its
 * write ENOSPC (review 8, finding 10). The first mapping's populate also allocated every hole below the
 * kernel size: a sparse file on tmpfs became as large as its size in memory at its first read. So mapped
 * loads and stores stay below f->backed_end, under which every byte has storage:
 *  - the first mapped access finds the first hole (tmpfs: st_blocks, else mincore of the mapping; extent
 *    file systems: FIEMAP; else SEEK_HOLE), and only what lies below it is populated;
 *  - a size grown by anything but writes (ftruncate, another process, a write far past the end, an
 *    fallocate that punches or moves ranges) lowers it to where the new holes may begin (up_holes_clamp);
 *  - a publish raises it over the appends it moved in, when they join it;
 *  - a store at its front allocates ahead first (fallocate, up to the next 2 MiB boundary: the fill of a
 *    file sized by ftruncate), and a probe moves it over what the kernel filled since;
 *  - every other access past it is the kernel's: reads (zeros, nothing allocated), writes (exactly the
 *    pages written, or ENOSPC) -- counted as hole_kernel_ios.
 * A hole another process punches into a file this process has mapped is not seen (as a truncation by
 * another process is not: docs/guarantees.md). */
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pwrite_all.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/guard.h"
#include "upath/internal.h"

/* A program's file with holes is probed again after this many accesses past backed_end (the kernel may
 * have filled them): one lseek per that many kernel reads or writes. */
#define HOLES_REPROBE_IOS 16u

/* Under f->mu. */
void up_holes_clamp(struct up_file *f, uint64_t to) {
    if (to < f->backed_end) __atomic_store_n(&f->backed_end, to, __ATOMIC_RELEASE);
    f->hole_ios = 0; /* the next access past it probes */
}

void up_holes_clamp_guarded(struct up_file *f, uint64_t to) {
    up_guard_write_lock(f);
    up_holes_clamp(f, to);
    up_guard_write_unlock(f);
}

/* The first byte at or after `from` with no storage (SEEK_HOLE): `from` when unknown. A descriptor
 * this process serves: its kernel offset, which SEEK_HOLE moves, is not the program's (that lives in the
 * slot and is given back to the kernel before anyone else can use it). tmpfs and XFS report ranges
 * allocated by fallocate but never written as holes -- safe, only slower. */
static uint64_t seek_hole(int fd, uint64_t from) {
    off_t h = DK_REAL(lseek)(fd, (off_t)from, SEEK_HOLE);
    return h > (off_t)from ? (uint64_t)h : from;
}

/* The end of the extents that follow `from` without a gap (FIEMAP: unwritten and delayed extents have
 * storage, unlike what SEEK_HOLE says of them), up to `to`; `from` when unknown (no FIEMAP: tmpfs). */
static uint64_t fiemap_end(int fd, uint64_t from, uint64_t to) {
    enum { N = 32 };
    union {
        struct fiemap fm;
        char bytes[sizeof(struct fiemap) + N * sizeof(struct fiemap_extent)];
    } u;
    uint64_t pos = from;
    while (pos < to) {
        u.fm = (struct fiemap){.fm_start = pos, .fm_length = to - pos, .fm_extent_count = N};
        if (DK_REAL(ioctl)(fd, FS_IOC_FIEMAP, &u.fm) != 0 || u.fm.fm_mapped_extents == 0) return pos;
        for (unsigned i = 0; i < u.fm.fm_mapped_extents; i++) {
            const struct fiemap_extent *e = &u.fm.fm_extents[i];
            if (e->fe_logical > pos) return pos; /* a gap */
            if (e->fe_logical + e->fe_length > pos) pos = e->fe_logical + e->fe_length;
            if (e->fe_flags & FIEMAP_EXTENT_LAST) return pos;
        }
    }
    return pos;
}

/* The end of the pages that follow `from` without a gap, up to `to`, by mincore on the file's mapping
 * (tmpfs: a page exists, allocated by a write or by fallocate, or it is a hole -- SEEK_HOLE calls a
 * fallocated page a hole, st_blocks also counts pages past the end); a swapped-out page counts as a gap
 * (the kernel then serves it: slower, never wrong). Stops where the mapping does. */
static uint64_t mincore_end(const struct up_file *f, uint64_t from, uint64_t to) {
    unsigned char vec[DK_HUGE_BYTES / DK_PAGE_BYTES];
    uint64_t pos = dk_round_down(from, DK_PAGE_BYTES);
    to = DK_MIN(to, __atomic_load_n(&f->map.mapped_bytes, __ATOMIC_ACQUIRE));
    while (pos < to) {
        uint64_t chunk_end = DK_MIN(dk_round_down(pos, DK_HUGE_BYTES) + DK_HUGE_BYTES, to);
        char *addr = up_map_addr(&f->map, pos);
        size_t len = (size_t)(chunk_end - pos);
        if (!addr || mincore(addr, dk_round_up(len, DK_PAGE_BYTES), vec) != 0) break;
        for (size_t i = 0; i < dk_round_up(len, DK_PAGE_BYTES) / DK_PAGE_BYTES; i++)
            if (!(vec[i] & 1)) return DK_MAX(from, pos + i * DK_PAGE_BYTES);
        pos = chunk_end;
    }
    return DK_MAX(from, DK_MIN(pos, to));
}

/* Whether a tmpfs file has storage for every page of its size, by st_blocks (which counts pages made by
 * fallocate -- mincore and SEEK_HOLE call those holes): exactly its size in pages, or in huge pages. Pages
 * past the end (fallocate with KEEP_SIZE) as many as the holes would fool it; before any allocation of
 * ours it is asked once, at the first probe, and that coincidence is left (docs/guarantees.md). */
static bool tmpfs_full(int fd, uint64_t k) {
    struct stat st;
    if (DK_REAL(fstat)(fd, &st) != 0) return false;
    uint64_t b = (uint64_t)st.st_blocks * 512;
    return b == dk_round_up(k, DK_PAGE_BYTES) || b == dk_round_up(k, DK_HUGE_BYTES);
}

/* Moves backed_end over the storage that follows it, up to the kernel size: tmpfs pages by st_blocks at
 * the first probe, else by mincore; extents by FIEMAP (unwritten extents have storage); else SEEK_HOLE.
 * Under f->mu. */
static void probe(struct up_file *f, int fd, bool first) {
    uint64_t from = f->backed_end, k = f->ksize, to = from;
    f->hole_ios = 0;
    if (from >= k) return;
    int e = errno;
    if (f->root->medium.medium == DK_MEDIUM_VOLATILE) to = first && tmpfs_full(fd, k) ? k : mincore_end(f, from, k);
    else to = fiemap_end(fd, from, k);
    if (to < k) to = DK_MAX(to, seek_hole(fd, to));
    errno = e;
    dk_count(DK_C_hole_probes, 1);
    if (to > from) __atomic_store_n(&f->backed_end, DK_MIN(to, k), __ATOMIC_RELEASE);
}

void up_holes_recheck_below(struct up_file *f, int fd, uint64_t below) {
    /* A cut's hole below `below` takes the whole page before the one `below` is in: one SEEK_HOLE there (it
     * stops at the first hole past it -- the bytes published since, at most). Its start is not known: the next
     * mapped access probes from 0. */
    uint64_t x = dk_round_down(below, DK_PAGE_BYTES);
    if (x == 0) return;
    x -= 1;
    int e = errno;
    off_t h = DK_REAL(lseek)(fd, (off_t)x, SEEK_HOLE); /* (a served descriptor's kernel offset: seek_hole) */
    errno = e;
    dk_count(DK_C_hole_probes, 1);
    if (h >= 0 && (uint64_t)h == x) up_holes_clamp_guarded(f, 0); /* (as a cut) */
}

void up_holes_probe_first(struct up_file *f, int fd) {
    if (f->holes_probed) return;
    f->holes_probed = true;
    probe(f, fd, true);
}

/* Whether [0, end) has storage, probing again now and then. Under f->mu. */
static bool covered(struct up_file *f, int fd, uint64_t end) {
    up_holes_probe_first(f, fd);
    if (end <= f->backed_end) return true;
    if (f->hole_ios++ % HOLES_REPROBE_IOS == 0) probe(f, fd, false);
    return end <= f->backed_end;
}

bool up_holes_covered(struct up_file *f, int fd, uint64_t end) {
    if (covered(f, fd, end)) return true;
    dk_count(DK_C_hole_kernel_ios, 1);
    return false;
}

/* Gives [off, end) storage before the caller stores there: nothing when it has some; an allocation from
 * backed_end when the range starts at or below it (2 MiB at most past `end`); -ENOSPC -- the write is
 * then the kernel's, which allocates exactly the pages it writes or fails as the program expects -- for
 * a range beyond a hole, or when the allocation fails. Under f->mu, fd writable. 0 or -ENOSPC. */
int up_holes_back(struct up_file *f, int fd, uint64_t off, uint64_t end) {
    if (covered(f, fd, end)) return 0;
    uint64_t lo = f->backed_end, k = f->ksize;
    if (off > lo || end > k) {
        dk_count(DK_C_hole_kernel_ios, 1);
        return -ENOSPC;
    }
    uint64_t hi = DK_MIN(dk_round_up(end, DK_HUGE_BYTES), k);
    int e = errno;
    int cancel_was = dk_cancel_off(); /* under f->mu: fallocate is a cancellation point */
    int rc = DK_REAL(fallocate)(fd, FALLOC_FL_KEEP_SIZE, (off_t)lo, (off_t)(hi - lo));
    dk_cancel_restore(cancel_was);
    errno = e;
    if (rc != 0) {
        dk_count(DK_C_hole_kernel_ios, 1);
        return -ENOSPC;
    }
    dk_count(DK_C_hole_backs, 1);
    __atomic_store_n(&f->backed_end, hi, __ATOMIC_RELEASE);
    if (hi < k) probe(f, fd, false); /* data may follow: a file filled from both ends */
    return 0;
}

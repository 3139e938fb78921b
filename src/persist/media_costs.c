/* The slow half of the medium probe: whether 2 MiB mappings are really PMD-mapped (DK_PROBE_HUGE) and
 * what relink's building blocks cost here (DK_PROBE_COSTS). `daxkit doctor` asks for both; the library
 * asks only when it has to choose a relink threshold and none is configured.
 *
 * Every kernel call goes through the pass-through table (dk_libc()): inside the preload library the
 * plain names are daxkit's own replacements. errno is left as the caller had it on success. */
#include "persist/media.h"

#include <assert.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/dk.h"
#include "common/internal_fd.h"
#include "shim/libc.h"

/* ---------------------------------------------------------------------------------------------
 * Huge mappings: map 2 MiB at a 2 MiB-aligned address, touch it, ask smaps.
 * ------------------------------------------------------------------------------------------- */

/* smaps is read in chunks; a line longer than this is skipped (the fields we need are short; only a
 * mapping's path can be long, and we identify our mapping by its address). */
#define SMAPS_LINE_BYTES_MAX 512u
#define SMAPS_CHUNK_BYTES 16384u

struct smaps_scan {
    uintptr_t start; /* the mapping we look for */
    bool inside;     /* the current section is that mapping */
    bool found;
    int64_t pmd_kb;
};

static bool is_section_header(const char *line, size_t len) {
    size_t i = 0;
    while (i < len && ((line[i] >= '0' && line[i] <= '9') || (line[i] >= 'a' && line[i] <= 'f'))) i++;
    return i > 0 && i < len && line[i] == '-';
}

/* "Name:   123 kB" -> 123 when the line starts with `name`, else -1. */
static int64_t field_kb(const char *line, size_t len, const char *name) {
    size_t n = strlen(name);
    if (len <= n || memcmp(line, name, n) != 0 || line[n] != ':') return -1;
    int64_t v = 0;
    size_t i = n + 1;
    while (i < len && line[i] == ' ') i++;
    if (i == len || line[i] < '0' || line[i] > '9') return -1;
    for (; i < len && line[i] >= '0' && line[i] <= '9'; i++) v = v * 10 + (line[i] - '0');
    return v;
}

static void smaps_line(struct smaps_scan *s, const char *line, size_t len) {
    if (is_section_header(line, len)) {
        s->inside = strtoull(line, NULL, 16) == (unsigned long long)s->start;
        if (s->inside) s->found = true;
        return;
    }
    if (!s->inside) return;
    int64_t kb = field_kb(line, len, "FilePmdMapped");
    if (kb < 0) kb = field_kb(line, len, "ShmemPmdMapped");
    if (kb > 0) s->pmd_kb += kb;
}

int64_t dk_smaps_pmd_kb(const char *text, uintptr_t start) {
    struct smaps_scan s = {.start = start};
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        smaps_line(&s, p, len);
        p += len + (nl != NULL);
    }
    return s.found ? s.pmd_kb : -1;
}

/* Streams /proc/self/smaps through smaps_line. Returns the PMD-mapped kB, -1 if not found, or -errno. */
static int64_t smaps_read_pmd_kb(uintptr_t start) {
    const struct dk_libc *c = dk_libc();
    int fd = dk_ifd_openat(AT_FDCWD, "/proc/self/smaps", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return -errno;
    static_assert(SMAPS_LINE_BYTES_MAX < SMAPS_CHUNK_BYTES, "a line must fit in a chunk with room to read");
    char buf[SMAPS_CHUNK_BYTES];
    struct smaps_scan s = {.start = start};
    size_t have = 0;
    bool skipping = false; /* inside an over-long line */
    for (;;) {
        ssize_t r = c->read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            c->close(fd);
            return -e;
        }
        if (r == 0) break;
        have += (size_t)r;
        size_t used = 0;
        for (;;) {
            char *nl = memchr(buf + used, '\n', have - used);
            if (!nl) break;
            size_t len = (size_t)(nl - (buf + used));
            if (!skipping) smaps_line(&s, buf + used, len);
            skipping = false;
            used += len + 1;
        }
        memmove(buf, buf + used, have - used);
        have -= used;
        if (have > SMAPS_LINE_BYTES_MAX) { /* a mapping path longer than any field: drop it */
            skipping = true;
            have = 0;
        }
    }
    c->close(fd);
    return s.found ? s.pmd_kb : -1;
}

/* DAX pages are device memory, which smaps deliberately leaves out of FilePmdMapped. On a DAX medium the
 * kernel maps a PMD when the file's extent is 2 MiB-aligned on the device, so ask FIEMAP instead. */
static bool dax_extent_is_pmd_aligned(int fd) {
    const struct dk_libc *c = dk_libc();
    struct {
        struct fiemap map;
        struct fiemap_extent extent[1];
    } req;
    memset(&req, 0, sizeof req);
    req.map.fm_start = 0;
    req.map.fm_length = DK_HUGE_BYTES;
    req.map.fm_flags = FIEMAP_FLAG_SYNC;
    req.map.fm_extent_count = 1;
    if (c->ioctl(fd, FS_IOC_FIEMAP, &req.map) != 0 || req.map.fm_mapped_extents < 1) return false;
    const struct fiemap_extent *e = &req.map.fm_extents[0];
    return e->fe_logical == 0 && e->fe_length >= DK_HUGE_BYTES && e->fe_physical % DK_HUGE_BYTES == 0;
}

/* Maps the first 2 MiB of fd at a 2 MiB-aligned address inside a reserved 4 MiB window.
 * Returns the mapping (and the window to unmap in *window) or NULL with errno set. */
static char *map_aligned_2m(int fd, void **window) {
    const struct dk_libc *c = dk_libc();
    size_t window_bytes = 2 * (size_t)DK_HUGE_BYTES;
    void *w = c->mmap(NULL, window_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (w == MAP_FAILED) return NULL;
    uintptr_t aligned = (uintptr_t)dk_round_up((uintptr_t)w, DK_HUGE_BYTES);
    void *p = c->mmap((void *)aligned, DK_HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        c->munmap(w, window_bytes);
        errno = e;
        return NULL;
    }
    dk_assert((uintptr_t)p == aligned);
    *window = w;
    return p;
}

int dk_medium_probe_huge(int dirfd, struct dk_medium_info *out) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    out->huge_pages = false;
    out->huge_pmd_kb = 0;
    int fd = dk_medium_scratch_open(dirfd, "huge");
    if (fd < 0) {
        out->huge_pages_why = "no scratch file could be created";
        return fd;
    }
    int ret = 0;
    void *window = NULL;
    char *p = NULL;
    if (c->ftruncate(fd, DK_HUGE_BYTES) != 0 || (p = map_aligned_2m(fd, &window)) == NULL) {
        ret = -errno;
        out->huge_pages_why = "a 2 MiB shared mapping of a file failed";
        goto done;
    }
    /* Writing every 4 KiB page faults the whole range in: with huge pages the first fault maps 2 MiB. */
    for (size_t off = 0; off < DK_HUGE_BYTES; off += DK_PAGE_BYTES) ((volatile char *)p)[off] = 1;
    int64_t kb = smaps_read_pmd_kb((uintptr_t)p);
    if (kb < 0) {
        ret = kb == -1 ? -ENOENT : (int)kb;
        out->huge_pages_why = "/proc/self/smaps could not be read";
        goto done;
    }
    out->huge_pmd_kb = (uint64_t)kb;
    if (kb > 0) {
        out->huge_pages = true;
        out->huge_pages_why = "smaps shows the 2 MiB mapping PMD-mapped";
    } else if (out->map_sync && dax_extent_is_pmd_aligned(fd)) {
        out->huge_pages = true;
        out->huge_pages_why = "DAX extent is 2 MiB-aligned (smaps does not count DAX pages)";
    } else {
        out->huge_pages_why = out->map_sync ? "DAX extent is not 2 MiB-aligned on the device"
                                            : "smaps shows 4 KiB pages only for a 2 MiB mapping";
    }
done:
    if (window) c->munmap(window, 2 * (size_t)DK_HUGE_BYTES);
    c->close(fd);
    if (ret == 0) DK_ERRNO_RESTORE;
    return ret;
}

/* ---------------------------------------------------------------------------------------------
 * Costs: medians of the operations relink is built from.
 * ------------------------------------------------------------------------------------------- */

/* Samples per figure. Odd, so the median is one measurement. The slowest figures here are a 2 MiB copy
 * on 4 KiB-page tmpfs (~1.2 ms) and fsync on a loop device (0.1-0.9 ms): 5 figures x 16 runs took 5-50 ms
 * in all on every medium here, far under the budget below. */
#define COST_SAMPLES 15u
/* A medium this slow (e.g. fsync on a rotating disk) gets fewer samples rather than a long probe. */
#define COST_BUDGET_NS (2000ull * 1000 * 1000)
#define COST_SAMPLES_MIN 3u
static_assert(COST_SAMPLES % 2 == 1 && COST_SAMPLES_MIN % 2 == 1, "medians of odd counts");
static_assert(COST_SAMPLES_MIN <= COST_SAMPLES, "the minimum is a minimum");

/* The source file holds 2 MiB plus one block, so a copy can start one 512-byte sector in (see copy). */
#define COST_SRC_BYTES ((size_t)DK_HUGE_BYTES + 2 * DK_PAGE_BYTES)
#define COST_COPY_SKEW_BYTES 512u

/* -errno of the call that just failed; EIO when it failed without saying why (a short write). */
static int neg_errno(void) { return errno > 0 ? -errno : -EIO; }

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t median_ns(uint64_t *v, unsigned n) {
    dk_assert(n > 0);
    qsort(v, n, sizeof v[0], cmp_u64);
    return v[n / 2];
}

enum cost_op { COST_CLONE, COST_COPY, COST_FSYNC };

/* Timed operations write at successive offsets of the destination, as appends do, so a medium that
 * allocates in large units (huge tmpfs: 2 MiB pages) pays that allocation as often as an append would.
 * The destination is emptied (untimed) when it would pass its cap: at most this, and at most a quarter
 * of the free space (but room for one 2 MiB sample), so the probe never fills a user's medium. */
#define COST_DST_BYTES_MAX (16ull << 20)
static_assert(COST_DST_BYTES_MAX >= 4 * DK_HUGE_BYTES, "several 2 MiB samples before a wrap");

struct cost_files {
    int src, dst;
    uint64_t dst_off;
    uint64_t dst_bytes_max; /* DK_HUGE_BYTES .. COST_DST_BYTES_MAX, a multiple of DK_HUGE_BYTES */
    uint64_t deadline_ns;
};

static uint64_t dst_cap_bytes(int dirfd) {
    struct statfs sfs;
    if (fstatfs(dirfd, &sfs) != 0) return DK_HUGE_BYTES;
    uint64_t quarter = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize / 4;
    uint64_t cap = dk_round_down(DK_MIN(quarter, COST_DST_BYTES_MAX), DK_HUGE_BYTES);
    return DK_MAX(cap, (uint64_t)DK_HUGE_BYTES);
}

/* One timed operation of `bytes` at the next destination offset. Returns the time, or 0 with errno set. */
static uint64_t cost_once(struct cost_files *f, enum cost_op op, size_t bytes) {
    const struct dk_libc *c = dk_libc();
    if (f->dst_off + bytes > f->dst_bytes_max) {
        if (c->ftruncate(f->dst, 0) != 0) return 0;
        f->dst_off = 0;
    }
    off_t at = (off_t)f->dst_off;
    f->dst_off += bytes;
    if (op == COST_FSYNC) {
        static const char block[DK_PAGE_BYTES];
        if (c->pwrite(f->dst, block, sizeof block, at) != (ssize_t)sizeof block) {
            if (errno == 0) errno = EIO;
            return 0;
        }
        uint64_t t0 = dk_now_ns();
        if (c->fsync(f->dst) != 0) return 0;
        return DK_MAX(dk_now_ns() - t0, 1);
    }
    uint64_t t0 = dk_now_ns();
    if (op == COST_CLONE) {
        struct file_clone_range r = {.src_fd = f->src, .src_offset = 0, .src_length = bytes,
                                     .dest_offset = (uint64_t)at};
        if (c->ioctl(f->dst, FICLONERANGE, &r) != 0) return 0;
    } else {
        /* A copy that starts one sector into the source: a file system that shares blocks (XFS) would
         * otherwise turn an aligned copy_file_range into a clone, and this figure must be a real copy. */
        off_t in = COST_COPY_SKEW_BYTES;
        size_t left = bytes;
        while (left > 0) {
            ssize_t r = c->copy_file_range(f->src, &in, f->dst, &at, left, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                if (r == 0) errno = EIO; /* the source is long enough: a short copy is an error */
                return 0;
            }
            left -= (size_t)r;
        }
    }
    return DK_MAX(dk_now_ns() - t0, 1);
}

/* Median of up to COST_SAMPLES runs (fewer once the budget is spent). Returns 0 with errno set. */
static uint64_t cost_median(struct cost_files *f, enum cost_op op, size_t bytes, unsigned *samples) {
    uint64_t t[COST_SAMPLES];
    unsigned n = 0;
    /* One untimed run first: it warms the caches and metadata that only the first call would pay. */
    if (cost_once(f, op, bytes) == 0) return 0;
    while (n < COST_SAMPLES) {
        if ((t[n] = cost_once(f, op, bytes)) == 0) return 0;
        n++;
        if (n >= COST_SAMPLES_MIN && n % 2 == 1 && dk_now_ns() > f->deadline_ns) break;
    }
    *samples = DK_MIN(*samples, n);
    return median_ns(t, n);
}

static int fill_source(int fd) {
    const struct dk_libc *c = dk_libc();
    static char block[64 << 10];
    for (size_t i = 0; i < sizeof block; i++) block[i] = (char)(i * 131 + 7);
    for (size_t off = 0; off < COST_SRC_BYTES; off += sizeof block) {
        size_t n = DK_MIN(sizeof block, COST_SRC_BYTES - off);
        errno = 0;
        if (c->pwrite(fd, block, n, (off_t)off) != (ssize_t)n) return neg_errno();
    }
    /* Steady state of a relink source: its data is already written back (clone flushes dirty source
     * pages first, which is the data's own write-back, not the clone's cost). */
    return c->fsync(fd) == 0 ? 0 : neg_errno();
}

int dk_medium_probe_costs(int dirfd, struct dk_medium_info *out) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    uint64_t t_start = dk_now_ns();
    out->costs_measured = false;
    out->costs_error = 0;
    out->cost_samples = 0;
    out->clone_4k_ns = out->clone_2m_ns = out->copy_4k_ns = out->copy_2m_ns = out->fsync_ns = 0;
    struct cost_files f = {.src = dk_medium_scratch_open(dirfd, "cs"), .dst = dk_medium_scratch_open(dirfd, "cd"),
                           .dst_bytes_max = dst_cap_bytes(dirfd), .deadline_ns = t_start + COST_BUDGET_NS};
    unsigned samples = COST_SAMPLES;
    int ret = f.src < 0 ? f.src : f.dst < 0 ? f.dst : fill_source(f.src);
    if (ret == 0 && out->reflink) {
        if ((out->clone_4k_ns = cost_median(&f, COST_CLONE, DK_PAGE_BYTES, &samples)) == 0 ||
            (out->clone_2m_ns = cost_median(&f, COST_CLONE, DK_HUGE_BYTES, &samples)) == 0)
            ret = neg_errno();
    }
    if (ret == 0 && ((out->copy_4k_ns = cost_median(&f, COST_COPY, DK_PAGE_BYTES, &samples)) == 0 ||
                     (out->copy_2m_ns = cost_median(&f, COST_COPY, DK_HUGE_BYTES, &samples)) == 0 ||
                     (out->fsync_ns = cost_median(&f, COST_FSYNC, DK_PAGE_BYTES, &samples)) == 0))
        ret = neg_errno();
    if (ret == 0 && out->reflink) dk_assert(out->clone_4k_ns > 0 && out->clone_2m_ns > 0);
    if (f.src >= 0) c->close(f.src);
    if (f.dst >= 0) c->close(f.dst);
    out->costs_total_ns = dk_now_ns() - t_start;
    if (ret != 0) { /* partial figures would mislead a threshold: report none */
        out->clone_4k_ns = out->clone_2m_ns = out->copy_4k_ns = out->copy_2m_ns = out->fsync_ns = 0;
        out->costs_error = -ret;
        return ret;
    }
    dk_assert(out->copy_2m_ns > 0 && out->fsync_ns > 0);
    out->cost_samples = samples;
    out->costs_measured = true;
    DK_ERRNO_RESTORE;
    return 0;
}

/* A new small file's pages on a medium that gives every new file a 2 MiB page (a huge-page tmpfs). The
 * kernel's write into an empty file there takes a 2 MiB page and clears all of it: 2-7 ms of CPU on this VM
 * for a 1-byte write when the memory comes fresh from the host, half of a SQLite rollback-journal run's CPU,
 * kernel and daxkit alike (each transaction writes a new -journal; docs/benchmarks.md, sessions 22-23). A
 * small file needs no huge page (WineFS): when a file that is empty in the kernel is first published with at
 * most DAXKIT_SMALL_PAGES_BYTES, its first page is made a 4 KiB one through a MADV_NOHUGEPAGE mapping (the
 * kernel takes a huge page for a range only where none of its pages exists yet), and the publish's copy then
 * fills 4 KiB pages. The file's first 2 MiB keep them; past 2 MiB it takes huge pages as before. Not for a
 * file the program mapped (its mapping keeps PMD-sized pages: docs/design-upath.md).
 *
 * Whether the medium gives new files huge pages is learnt per root from the first such publish made the usual
 * way (its blocks: one fstat), so plain tmpfs pays one fstat a process and nothing more. */
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/log.h"
#include "common/mapflags.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/internal.h"

enum { VERDICT_UNKNOWN, VERDICT_HUGE, VERDICT_SMALL }; /* up_root.small_pages */

enum up_small up_small_pages_plan(const struct up_file *f, uint64_t size, bool by_append) {
    /* posix and sync mode (strict's log replays a cut relink; a seed would add a step it does not log) */
    if (!dk_cfg.small_pages_bytes || size > dk_cfg.small_pages_bytes || size >= DK_HUGE_BYTES ||
        dk_cfg.mode == DK_MODE_STRICT)
        return UP_SMALL_NO;
    if (f->ksize || f->pub_size || by_append || f->atomic || f->root->medium.medium != DK_MEDIUM_VOLATILE ||
        __atomic_load_n(&f->program_mapped, __ATOMIC_RELAXED))
        return UP_SMALL_NO;
    switch (__atomic_load_n(&f->root->small_pages, __ATOMIC_RELAXED)) {
    case VERDICT_HUGE: return UP_SMALL_SEED;
    case VERDICT_UNKNOWN: return UP_SMALL_LEARN;
    default: return UP_SMALL_NO;
    }
}

/* One 4 KiB page at offset 0 of the file `wfd`, allocated by a write fault through a mapping the kernel may not
 * back with a huge page; the file must be at least that long. */
static bool fault_first_page(int wfd) {
    const struct dk_libc *c = dk_libc();
    char *p = c->mmap(NULL, DK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
    if (p == MAP_FAILED) return false;
    bool ok = c->madvise(p, DK_PAGE_BYTES, MADV_NOHUGEPAGE) == 0 &&
              c->madvise(p, DK_PAGE_BYTES, MADV_POPULATE_WRITE) == 0; /* (Linux 5.14; before: EINVAL) */
    c->munmap(p, DK_PAGE_BYTES);
    return ok;
}

bool up_small_pages_seed(struct up_file *f, int fd, uint64_t size) {
    DK_ERRNO_SAVE;
    struct stat st;
    /* A descriptor that can be mapped (a write-only one cannot: the file's auxiliary one then). The file must
     * be empty as this process knows it -- and still, in the kernel: the truncate must not cut what another
     * process wrote since (extend_publish's rule; as there, a write between the two calls is not seen). */
    int mfd = up_aux_fd(f, fd, true);
    bool ok = mfd >= 0 && DK_REAL(fstat)(mfd, &st) == 0 && st.st_size == 0 && DK_REAL(ftruncate)(mfd, (off_t)size) == 0;
    if (ok && !fault_first_page(mfd)) {
        (void)DK_REAL(ftruncate)(mfd, 0); /* back to what it was; the copy takes the medium's pages */
        ok = false;
    }
    if (ok) {
        DK_CRASH_POINT("publish.small_pages.seeded"); /* the size record rolls the zeros back */
        f->ksize = size;
        dk_count(DK_C_small_page_seeds, 1);
    } else dk_count(DK_C_small_page_declines, 1);
    DK_ERRNO_RESTORE;
    return ok;
}

void up_small_pages_unseed(struct up_file *f, int wfd) {
    if (f->ksize <= f->pub_size) return;
    DK_ERRNO_SAVE;
    if (DK_REAL(ftruncate)(wfd, (off_t)f->pub_size) == 0) f->ksize = f->pub_size;
    DK_ERRNO_RESTORE;
}

void up_small_pages_learn(struct up_file *f, int wfd, uint64_t size) {
    DK_ERRNO_SAVE;
    struct stat st;
    /* The file as this publish left it (another process's write meanwhile would make the blocks theirs) */
    if (DK_REAL(fstat)(wfd, &st) == 0 && (uint64_t)st.st_size == size) {
        bool huge = (uint64_t)st.st_blocks * 512 >= DK_HUGE_BYTES;
        __atomic_store_n(&f->root->small_pages, huge ? VERDICT_HUGE : VERDICT_SMALL, __ATOMIC_RELAXED);
        dk_log_verbose("%s: a new %llu-byte file took %llu bytes: %s", f->root->path, (unsigned long long)size,
               (unsigned long long)st.st_blocks * 512, huge ? "new small files get 4 KiB pages" : "pages left as they are");
    }
    DK_ERRNO_RESTORE;
}

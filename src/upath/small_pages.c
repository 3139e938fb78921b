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
 * Whether the medium gives new files huge pages is read per root from the kernel's settings at the first such
 * publish: the system-wide /sys/kernel/mm/transparent_hugepage/shmem_enabled (`force`: every tmpfs mount takes
 * huge pages, `deny`: none does) and, for the others, the tmpfs mount's own `huge=` option in
 * /proc/self/mountinfo (the mount of the root's device): `always` gives a new file a 2 MiB page at its first
 * write; `within_size` (only where the size covers the 2 MiB range), `advise` (only mappings that ask),
 * `never` (no option) give a small file none -- measured on 6.18 (1, 4,120 and 65,536 bytes written into a
 * new file: 2 MiB allocated under always, 4/8/64 KiB under the other three). No `huge=` is `never` also where a
 * mount's policy comes from the kernel rather than its options (since 6.14 the boot option
 * `transparent_hugepage_tmpfs=`, and a build-time default): shmem_fill_super stores that default in the
 * super-block as if given, and shmem_show_options prints every policy but `never` (`huge=never` given
 * explicitly is not printed either: mountinfo on 6.18 for no option, never, advise, within_size, always; the
 * boot option itself is read from the kernel's source, not tried). ramfs has no huge pages. Until session 24
 * the first such publish of each process was made the usual way to learn it (its blocks: one
 * fstat): on huge tmpfs that file took a 2 MiB page cleared whole -- every SQLite process's first -journal.
 * Where the settings cannot be read (no sysfs, no procfs, a value unknown here) it still learns that way
 * (counter small_page_learns). Since session 28 the first new small file's own fstat answers first
 * (settings_verdict): a block size below 2 MiB says small pages with no settings read; the settings' two window
 * opens (common/internal_fd.h) are made, once per root and process, only where it says 2 MiB. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/mapflags.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/internal.h"

enum { VERDICT_UNKNOWN, VERDICT_HUGE, VERDICT_SMALL, VERDICT_LEARN }; /* up_root.small_pages */

/* The bracketed word of shmem_enabled ("always within_size advise [never] deny force"), or "" unreadable. */
static void shmem_enabled_word(char *word, size_t len) {
    char text[128] = {0};
    int fd = dk_ifd_openat(AT_FDCWD, "/sys/kernel/mm/transparent_hugepage/shmem_enabled", O_RDONLY | O_CLOEXEC, 0);
    ssize_t n = fd >= 0 ? dk_libc()->read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) dk_libc()->close(fd);
    word[0] = 0;
    const char *a = n > 0 ? strchr(text, '[') : NULL, *b = a ? strchr(a, ']') : NULL;
    if (b && (size_t)(b - a - 1) < len) {
        memcpy(word, a + 1, (size_t)(b - a - 1));
        word[b - a - 1] = 0;
    }
}

/* Whether mountinfo line [p, e) ("ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS") is
 * a tmpfs mount of device `want` ("MAJ:MIN"): its super-block options into opts then (paths escape their
 * spaces as \040, so " - " is the separator). */
static bool tmpfs_line(const char *p, const char *e, const char *want, char *opts, size_t len) {
    const char *f = p;
    for (int i = 0; i < 2 && f; i++) f = memchr(f, ' ', (size_t)(e - f)), f = f ? f + 1 : NULL;
    size_t wn = strlen(want);
    if (!f || (size_t)(e - f) <= wn || memcmp(f, want, wn) || f[wn] != ' ') return false;
    const char *sep = memmem(f, (size_t)(e - f), " - ", 3);
    if (!sep || (size_t)(e - sep) < 9 || memcmp(sep + 3, "tmpfs ", 6)) return false;
    const char *o = memchr(sep + 9, ' ', (size_t)(e - (sep + 9))); /* past the source */
    if (!o || (size_t)(e - o - 1) >= len) return false;
    memcpy(opts, o + 1, (size_t)(e - o - 1));
    opts[e - o - 1] = 0;
    return true;
}

/* The super-block options of the tmpfs mount of device `dev` from /proc/self/mountinfo, into opts: true when
 * found. Read in 4 KiB pieces, whole lines looked at (memchr: a few thousand instructions a process, where a
 * loop over each byte took 40,000); a line longer than the buffer is skipped. */
static bool tmpfs_mount_options(dev_t dev, char *opts, size_t len) {
    char want[32], buf[4096];
    snprintf(want, sizeof want, "%u:%u", major(dev), minor(dev));
    int fd = dk_ifd_openat(AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return false;
    bool found = false, skip = false;
    size_t have = 0;
    ssize_t r;
    while (!found && (r = dk_libc()->read(fd, buf + have, sizeof buf - have)) > 0) {
        const char *p = buf, *end = buf + have + (size_t)r, *nl;
        while (!found && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            found = !skip && tmpfs_line(p, nl, want, opts, len);
            skip = false;
            p = nl + 1;
        }
        have = (size_t)(end - p);
        if (have == sizeof buf) skip = true, have = 0; /* a line longer than the buffer: the rest of it skipped */
        else memmove(buf, p, have);
    }
    dk_libc()->close(fd);
    return found;
}

/* What the kernel says a new small file of root r gets: VERDICT_HUGE, VERDICT_SMALL, or VERDICT_LEARN (not known:
 * learn from the first publish). wfd: a descriptor of the file planned (empty in the kernel as this process
 * knows it).
 * The file's own fstat first (session 28): tmpfs reports a block size of 2 MiB for a file whose next write at
 * offset 0 takes a huge page, the page size otherwise -- shmem_getattr sets st_blksize by
 * shmem_huge_global_enabled(inode, index 0), the test a write's folio allocation makes for a file nobody maps:
 * shmem_enabled's force and deny, the mount's huge= (always: 2 MiB; within_size for a file below 2 MiB, advise,
 * never: the page size; measured on 6.18 for each, and the same line since huge tmpfs came, 4.8). Less than
 * 2 MiB: small pages, and no settings read -- on a plain tmpfs they cost each process ~20 us of system calls,
 * most of it the kernel formatting /proc/self/mountinfo (tar: two processes a round; docs/benchmarks.md, session
 * 28). 2 MiB, no answer, or a file on another device than the root's (a mount below it: the verdict is the
 * root's): the settings, as before. */
static int settings_verdict(const struct up_root *r, int wfd) {
    if (r->medium.fs_magic == RAMFS_MAGIC) return VERDICT_SMALL;
    if (r->medium.fs_magic != TMPFS_MAGIC) return VERDICT_LEARN;
    DK_ERRNO_SAVE;
    struct stat st;
    if (wfd >= 0 && DK_REAL(fstat)(wfd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == r->dev &&
        st.st_blksize > 0 && (uint64_t)st.st_blksize < DK_HUGE_BYTES) {
        DK_ERRNO_RESTORE;
        dk_log_verbose("%s: new small files left as they are (a new file's block size %ld)", r->path,
                       (long)st.st_blksize);
        return VERDICT_SMALL;
    }
    char word[32], opts[512];
    shmem_enabled_word(word, sizeof word);
    int v = VERDICT_LEARN;
    if (!strcmp(word, "force")) v = VERDICT_HUGE;
    else if (!strcmp(word, "deny")) v = VERDICT_SMALL;
    else if (word[0] && tmpfs_mount_options(r->dev, opts, sizeof opts)) {
        const char *h = NULL;
        for (const char *p = opts; (p = strstr(p, "huge=")) != NULL; p++)
            if (p == opts || p[-1] == ',') h = p + 5; /* the last one (the kernel prints one) */
        size_t hn = h ? strcspn(h, ",") : 0;
        if (!h || (hn == 5 && !strncmp(h, "never", 5)) || (hn == 6 && !strncmp(h, "advise", 6)) ||
            (hn == 11 && !strncmp(h, "within_size", 11)))
            v = VERDICT_SMALL;
        else if (hn == 6 && !strncmp(h, "always", 6))
            v = VERDICT_HUGE;
    }
    DK_ERRNO_RESTORE;
    dk_log_verbose("%s: new small files %s (kernel settings: shmem_enabled [%s]%s)", r->path,
                   v == VERDICT_HUGE ? "get 4 KiB pages" : v == VERDICT_SMALL ? "left as they are" : "learnt from the first",
                   word, v == VERDICT_LEARN ? ", mount not read" : "");
    return v;
}

enum up_small up_small_pages_plan(const struct up_file *f, int wfd, uint64_t size, bool by_append) {
    /* posix and sync mode (strict's log replays a cut relink; a seed would add a step it does not log) */
    if (!dk_cfg.small_pages_bytes || size > dk_cfg.small_pages_bytes || size >= DK_HUGE_BYTES ||
        dk_cfg.mode == DK_MODE_STRICT)
        return UP_SMALL_NO;
    if (f->ksize || f->pub_size || by_append || f->atomic || f->root->medium.medium != DK_MEDIUM_VOLATILE ||
        __atomic_load_n(&f->program_mapped, __ATOMIC_RELAXED))
        return UP_SMALL_NO;
    int v = __atomic_load_n(&f->root->small_pages, __ATOMIC_RELAXED);
    if (v == VERDICT_UNKNOWN) {
        v = settings_verdict(f->root, wfd); /* (two threads may both read: the same answer) */
        __atomic_store_n(&f->root->small_pages, (uint8_t)v, __ATOMIC_RELAXED);
    }
    switch (v) {
    case VERDICT_HUGE: return UP_SMALL_SEED;
    case VERDICT_LEARN: return UP_SMALL_LEARN;
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
        dk_count(DK_C_small_page_learns, 1);
        __atomic_store_n(&f->root->small_pages, huge ? VERDICT_HUGE : VERDICT_SMALL, __ATOMIC_RELAXED);
        dk_log_verbose("%s: a new %llu-byte file took %llu bytes: %s", f->root->path, (unsigned long long)size,
               (unsigned long long)st.st_blocks * 512, huge ? "new small files get 4 KiB pages" : "pages left as they are");
    }
    DK_ERRNO_RESTORE;
}

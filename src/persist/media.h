/* What a file system can promise: probed once per directory, reported by `daxkit doctor`, consulted by
 * the data path to decide how to map (MAP_SYNC) and how to persist (flush or msync or nothing). */
#ifndef DK_PERSIST_MEDIA_H
#define DK_PERSIST_MEDIA_H

#include <stdbool.h>
#include <stdint.h>

enum dk_medium {
    DK_MEDIUM_DAX,       /* MAP_SYNC accepted: cache-line flush + fence is durable */
    DK_MEDIUM_PAGECACHE, /* msync / fsync is what makes data durable */
    DK_MEDIUM_VOLATILE,  /* tmpfs/ramfs: nothing survives power loss; data survives a process crash */
};

struct dk_medium_info {
    enum dk_medium medium;
    char fs_name[16];      /* "tmpfs", "xfs", "ext4", ... */
    uint64_t fs_magic;
    uint32_t block_bytes;  /* st_blksize of the directory's file system */
    bool map_sync;         /* MAP_SHARED_VALIDATE|MAP_SYNC accepted */
    bool huge_pages;       /* a 2 MiB-aligned shared mapping of a file there is PMD-mapped */
    bool reflink;          /* FICLONERANGE between two files there works */
    bool costs_measured;
    uint64_t clone_4k_ns;  /* FICLONERANGE of one 4 KiB block (median) */
    uint64_t clone_2m_ns;  /* FICLONERANGE of 2 MiB */
    uint64_t copy_4k_ns;   /* copy_file_range of 4 KiB */
    uint64_t copy_2m_ns;   /* copy_file_range of 2 MiB */
    uint64_t fsync_ns;     /* fsync after a 4 KiB write */
    /* Added after the first version; zero-initialised by the probe like every field above. */
    const char *huge_pages_why; /* how huge_pages was decided (static text), NULL without DK_PROBE_HUGE */
    uint64_t huge_pmd_kb;       /* FilePmdMapped + ShmemPmdMapped of the probe mapping, from smaps */
    int costs_error;            /* errno that stopped the cost measurement (0: none); costs_measured false */
    uint32_t cost_samples;      /* operations timed per figure (the median of these is reported) */
    uint64_t costs_total_ns;    /* wall time the cost measurement took */
    /* DAX with block sharing: zeroing one byte of a block shared by FICLONERANGE (fallocate ZERO_RANGE)
     * left the byte unchanged. Linux 6.1's fsdax loses such zeroing (docs/dax-guest.md): relink copies. */
    bool clone_zero_lost;
};

enum dk_probe_flags {
    DK_PROBE_BASIC = 0,      /* statfs, MAP_SYNC, FICLONERANGE: a few system calls, for library use */
    DK_PROBE_HUGE = 1,       /* also map 2 MiB and read smaps for PMD mappings */
    DK_PROBE_COSTS = 2,      /* also measure clone/copy/fsync costs (milliseconds) */
};

/* Probes the file system holding directory `dirfd` by creating (and removing) scratch files there.
 * Returns 0, or -errno (e.g. -EACCES when the directory is not writable). */
int dk_medium_probe(int dirfd, int flags, struct dk_medium_info *out);
const char *dk_medium_name(enum dk_medium m);
/* Bytes from which relink should clone instead of copy, from measured costs (UINT64_MAX: never clone). */
uint64_t dk_medium_clone_min_bytes(const struct dk_medium_info *m);

/* How one file of a directory persists (review 11, finding 3). The directory's medium comes from a scratch
 * file made there; on a DAX mount with per-inode DAX (XFS and ext4 since Linux 5.8 mount dax=inode unless told
 * otherwise: FS_XFLAG_DAX, inherited from the directory) a file created before the flag was set, moved in, or
 * whose flag was cleared is not DAX: the kernel maps it through the page cache (MAP_SYNC refused), and only
 * msync/fdatasync make its data durable. root_persist_as: the directory's (DK_MEDIUM_DAX also when emulated);
 * emulated: DAXKIT_PERSIST=flush (flushing is what was asked for); file_dax: statx's STATX_ATTR_DAX of the file
 * (1 set, 0 clear, -1 not reported); map_sync: whether a MAP_SYNC mapping of the file was granted (1, 0
 * refused, -1 not tried). A file that is not DAX by either persists as DK_MEDIUM_PAGECACHE. */
static inline enum dk_medium dk_file_persist_as(enum dk_medium root_persist_as, bool emulated, int file_dax,
                                                int map_sync) {
    if (root_persist_as != DK_MEDIUM_DAX || emulated) return root_persist_as;
    return file_dax == 0 || map_sync == 0 ? DK_MEDIUM_PAGECACHE : DK_MEDIUM_DAX;
}
/* statx's STATX_ATTR_DAX of the open file fd: 1 set, 0 clear, -1 when the kernel does not report it (before
 * Linux 5.8, or a file system without per-file DAX) or statx fails. By system call: the library's own statx
 * is interposed. */
int dk_file_dax_attr(int fd);

/* ---- probe internals (media.c, media_costs.c); exposed for tests ---- */

/* Creates an anonymous scratch file in dirfd (O_TMPFILE, else a unique name unlinked at once).
 * Returns fd or -errno. */
int dk_medium_scratch_open(int dirfd, const char *tag);
/* DK_PROBE_HUGE: maps 2 MiB of a scratch file at a 2 MiB-aligned address, touches every page and reads
 * /proc/self/smaps to see whether the kernel mapped it with a PMD. Sets huge_pages, huge_pmd_kb,
 * huge_pages_why. Returns 0 or -errno (huge_pages stays false). */
int dk_medium_probe_huge(int dirfd, struct dk_medium_info *out);
/* DK_PROBE_COSTS: medians of FICLONERANGE (if out->reflink), copy_file_range and fsync. Sets the cost
 * fields and costs_measured, or costs_error. Returns 0 or -errno. */
int dk_medium_probe_costs(int dirfd, struct dk_medium_info *out);
/* Parses smaps text: sums FilePmdMapped and ShmemPmdMapped (kB) of the mapping that starts at `start`.
 * `text` is NUL-terminated. Returns the sum, or -1 when no mapping starts there. */
int64_t dk_smaps_pmd_kb(const char *text, uintptr_t start);

#endif

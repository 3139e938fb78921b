#include "persist/media.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/dk.h"
#include "common/internal_fd.h"
#include "shim/libc.h"
#include "common/mapflags.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

const char *dk_medium_name(enum dk_medium m) {
    switch (m) {
    case DK_MEDIUM_DAX: return "dax";
    case DK_MEDIUM_PAGECACHE: return "pagecache";
    case DK_MEDIUM_VOLATILE: return "volatile";
    }
    return "?";
}

static const char *fs_name(uint64_t magic) {
    switch (magic) {
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case XFS_SUPER_MAGIC: return "xfs";
    case EXT4_SUPER_MAGIC: return "ext4";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    default: return "other";
    }
}

/* Scratch files never become visible to other processes when O_TMPFILE works (tmpfs, xfs, ext4, btrfs);
 * elsewhere a unique name (pid, thread, counter) is unlinked right after creation. */
int dk_medium_scratch_open(int dirfd, const char *tag) {
    const struct dk_libc *c = dk_libc();
    int fd = dk_ifd_openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    if (errno == EACCES || errno == EROFS || errno == ENOSPC || errno == EDQUOT) return -errno;
    static unsigned counter;
    char name[96];
    snprintf(name, sizeof name, ".daxkit-probe-%d-%ld-%u-%s", (int)c->getpid(), (long)syscall(SYS_gettid),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), tag);
    fd = dk_ifd_openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    c->unlinkat(dirfd, name, 0);
    return fd;
}

static bool probe_map_sync(int fd) {
    const struct dk_libc *c = dk_libc();
    if (c->ftruncate(fd, DK_PAGE_BYTES) != 0) return false;
    void *p = c->mmap(NULL, DK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (p == MAP_FAILED) return false;
    c->munmap(p, DK_PAGE_BYTES);
    return true;
}

/* On DAX, after a clone: does zeroing one byte of the shared block change it? (Linux 6.1: no.) */
static bool probe_clone_zero_lost(int fd) {
    const struct dk_libc *c = dk_libc();
    char byte = 1;
    if (c->fallocate(fd, FALLOC_FL_ZERO_RANGE, 100, 1) != 0) return false; /* cannot tell: not refused */
    return c->pread(fd, &byte, 1, 100) == 1 && byte != 0;
}

static bool probe_reflink(int dirfd, bool dax, bool *zero_lost) {
    const struct dk_libc *c = dk_libc();
    int a = dk_medium_scratch_open(dirfd, "ra"), b = dk_medium_scratch_open(dirfd, "rb");
    bool ok = false;
    if (a >= 0 && b >= 0) {
        static char block[65536];
        memset(block, 0x5a, sizeof block);
        if (c->pwrite(a, block, sizeof block, 0) == (ssize_t)sizeof block) {
            struct file_clone_range r = {.src_fd = a, .src_offset = 0, .src_length = sizeof block,
                                         .dest_offset = 0};
            ok = c->ioctl(b, FICLONERANGE, &r) == 0;
            if (ok && dax) *zero_lost = probe_clone_zero_lost(b);
        }
    }
    if (a >= 0) c->close(a);
    if (b >= 0) c->close(b);
    return ok;
}

int dk_medium_probe(int dirfd, int flags, struct dk_medium_info *out) {
    DK_ERRNO_SAVE;
    const struct dk_libc *c = dk_libc();
    memset(out, 0, sizeof *out);
    struct statfs sfs;
    if (fstatfs(dirfd, &sfs) != 0) return -errno;
    out->fs_magic = (uint64_t)sfs.f_type;
    snprintf(out->fs_name, sizeof out->fs_name, "%s", fs_name(out->fs_magic));
    out->block_bytes = (uint32_t)sfs.f_bsize;
    /* tmpfs and ramfs have neither DAX nor block sharing: no scratch files to find that out (three
     * inodes and a 64 KiB write per process that touches a managed file -- on huge tmpfs a 2 MiB page). */
    bool memory_fs = out->fs_magic == TMPFS_MAGIC || out->fs_magic == RAMFS_MAGIC;
    int fd = memory_fs ? -1 : dk_medium_scratch_open(dirfd, "ms");
    if (fd < 0 && !memory_fs) {
        DK_ERRNO_RESTORE;
        return fd;
    }
    if (!memory_fs) {
        out->map_sync = probe_map_sync(fd);
        c->close(fd);
        out->reflink = probe_reflink(dirfd, out->map_sync, &out->clone_zero_lost);
    }
    if (out->map_sync) out->medium = DK_MEDIUM_DAX;
    else if (out->fs_magic == TMPFS_MAGIC || out->fs_magic == RAMFS_MAGIC) out->medium = DK_MEDIUM_VOLATILE;
    else out->medium = DK_MEDIUM_PAGECACHE;
    /* Failures of the optional probes leave their fields false/zero and are explained in the info
     * (huge_pages_why, costs_error): the basic answer above stays valid. */
    if (flags & DK_PROBE_HUGE) (void)dk_medium_probe_huge(dirfd, out);
    if (flags & DK_PROBE_COSTS) (void)dk_medium_probe_costs(dirfd, out);
    DK_ERRNO_RESTORE;
    return 0;
}

uint64_t dk_medium_clone_min_bytes(const struct dk_medium_info *m) {
    if (!m->reflink || m->clone_zero_lost) return UINT64_MAX;
    if (!m->costs_measured || m->copy_2m_ns == 0) return 256u << 10; /* unmeasured: clone large ranges only */
    /* Copy cost grows with bytes, clone cost barely: clone where copying would cost more. */
    double copy_ns_per_byte = (double)m->copy_2m_ns / (double)(2u << 20);
    double clone_ns = (double)(m->clone_4k_ns > m->clone_2m_ns ? m->clone_4k_ns : m->clone_2m_ns);
    uint64_t bytes = (uint64_t)(clone_ns / (copy_ns_per_byte > 0 ? copy_ns_per_byte : 1e-9));
    return dk_round_up(DK_MAX(bytes, (uint64_t)m->block_bytes), m->block_bytes ? m->block_bytes : 4096);
}

/* A file's identity beyond (st_dev, st_ino): recovery must not take a file that reused a dead file's inode
 * number for that file (review 9, finding 4). XFS and ext4 hand a freed inode number to the next file
 * created; a strict record or a published-size record of a file unlinked while open, whose writer then
 * died, would otherwise be replayed or rolled back into whatever file got the number.
 *
 * The identity is a 32-bit hash of the file's handle (name_to_handle_at: inode number and generation on
 * XFS, ext4, tmpfs, btrfs -- the key the DAXKIT_ATOMIC engine names its logs by, src/atomic/alog_named.c).
 * A new file on a reused number has another generation, so another handle: its identity differs except
 * for a 1 in 2^32 hash collision. 0 means "unknown" (a file system without handles): records then carry
 * none, and recovery behaves as before. Computed once per file entry (one system call at its first logged
 * operation after an open), never per write. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>

#include "common/dk.h"
#include "common/fhandle.h"
#include "upath/internal.h"

#define IDENT_KNOWN (1ull << 32) /* f->ident: bit 32 set once computed; bits 31..0 the identity (0: none) */

static uint32_t ident_of(const struct file_handle *hd) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(uint32_t)hd->handle_type; /* FNV-1a, 64 bits */
    for (unsigned i = 0; i < hd->handle_bytes; i++) h = (h ^ (unsigned char)hd->f_handle[i]) * 0x100000001b3ull;
    uint32_t id = (uint32_t)(h ^ (h >> 32));
    return id ? id : 1; /* 0 is "unknown" */
}

uint32_t up_fd_ident(int fd) {
    struct dk_fhandle fh;
    return dk_fhandle_of_fd(fd, &fh) == 0 ? ident_of(&fh.u.h) : 0;
}

uint32_t up_path_ident(const struct up_root *r, int dirfd, const char *path) {
    if (r->medium.fs_magic == TMPFS_MAGIC) return 0; /* as numbers_reused, below */
    struct dk_fhandle fh;
    int saved = errno, mount_id;
    fh.u.h.handle_bytes = MAX_HANDLE_SZ;
    int rc = name_to_handle_at(dirfd, path, &fh.u.h, &mount_id, AT_SYMLINK_FOLLOW); /* (as truncate and open) */
    errno = saved;
    return rc == 0 && fh.u.h.handle_bytes <= MAX_HANDLE_SZ ? ident_of(&fh.u.h) : 0;
}

_Static_assert(IDENT_KNOWN >> 32 == 1, "up_file_ident tests bit 32 alone (internal.h)");

/* tmpfs gives inode numbers from a per-mount counter (shmem_reserve_inode): a number comes back only after
 * 2^32 files were created on the mount (the kernel warns then), never to the next file as XFS and ext4 do,
 * so its files carry no identity and their first record costs no system call -- there name_to_handle_at
 * also hashes the inode into the kernel's inode table (~1.7 us per file: tar xf of /usr/include/linux
 * published 261 files past 4 KiB, each with a record around its relink, session 14). */
static bool numbers_reused(const struct up_file *f) {
    return f->root->medium.fs_magic != TMPFS_MAGIC;
}

uint32_t up_file_ident_slow(struct up_file *f, int fd) {
    uint32_t id = numbers_reused(f) ? up_fd_ident(fd) : 0;
    __atomic_store_n(&f->ident, IDENT_KNOWN | id, __ATOMIC_RELAXED); /* racing threads store the same */
    return id;
}

void up_file_ident_forget(struct up_file *f) { __atomic_store_n(&f->ident, 0, __ATOMIC_RELAXED); }

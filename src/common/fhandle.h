/* A file's handle (name_to_handle_at: on XFS, ext4, tmpfs, btrfs its inode number and generation), the one
 * identity that tells a file from a later one on a reused inode number. Used by the DAXKIT_ATOMIC engine to
 * name its logs and by recovery to recognise a file (upath/ident.c). */
#ifndef DK_COMMON_FHANDLE_H
#define DK_COMMON_FHANDLE_H

#include <fcntl.h>

struct dk_fhandle {
    union {
        struct file_handle h;
        char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    } u;
};

/* The handle of the file open on fd. 0, or -1 (no handle: a file system without them); errno kept. */
int dk_fhandle_of_fd(int fd, struct dk_fhandle *out);

#endif

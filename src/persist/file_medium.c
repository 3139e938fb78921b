/* Per-file DAX (media.h dk_file_persist_as; review 11, finding 3): what statx says of one file. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "persist/media.h"

#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX 0x00200000 /* Linux 5.8 */
#endif

int dk_file_dax_attr(int fd) {
    struct statx sx;
    int e = errno;
    long rc = syscall(SYS_statx, fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, 0, &sx);
    errno = e;
    if (rc != 0 || !(sx.stx_attributes_mask & STATX_ATTR_DAX)) return -1;
    return (sx.stx_attributes & STATX_ATTR_DAX) ? 1 : 0;
}

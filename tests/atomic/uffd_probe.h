/* The probe the DAXKIT_ATOMIC_MMAP test programs skip by (mmap_edges.c, mmap_views.c, mmap_signal.c): can this
 * process write-protect a shared memory (memfd) page with userfaultfd -- what the engine needs for a tmpfs file
 * and for the shmem shadow of an XFS/ext4 file? Header-only: each program is one file. */
#ifndef DK_TESTS_ATOMIC_UFFD_PROBE_H
#define DK_TESTS_ATOMIC_UFFD_PROBE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/uffd_compat.h"

/* A userfaultfd as an unprivileged process gets one: the system call (user-mode faults), else /dev/userfaultfd. */
static inline int uffd_probe_open(void) {
    int ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (ufd >= 0) return ufd;
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) return -1;
    ufd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    close(dev);
    return ufd;
}

/* NULL when this process can write-protect a shared memory page with userfaultfd, else what failed (and
 * prints it with the error: "probe: WHAT failed: ERROR"). */
static inline const char *uffd_wp_shmem_missing(void) {
    const size_t page = 4096;
    const char *why = NULL;
    int mfd = (int)syscall(SYS_memfd_create, "daxkit_uffd_probe", 0), ufd = -1;
    void *p = MAP_FAILED;
    if (mfd < 0 || ftruncate(mfd, (off_t)page) != 0) why = "memfd_create/ftruncate";
    if (!why && (p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED)
        why = "mmap of a memfd";
    if (!why && (ufd = uffd_probe_open()) < 0) why = "userfaultfd (system call and /dev/userfaultfd)";
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM};
    if (!why && ioctl(ufd, UFFDIO_API, &api) != 0) why = "UFFDIO_API with the write-protect features for shmem";
    struct uffdio_register reg = {.range = {(uintptr_t)p, page}, .mode = UFFDIO_REGISTER_MODE_WP};
    if (!why && ioctl(ufd, UFFDIO_REGISTER, &reg) != 0) why = "UFFDIO_REGISTER_MODE_WP on shared memory";
    struct uffdio_writeprotect wp = {.range = {(uintptr_t)p, page}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
    if (!why && ioctl(ufd, UFFDIO_WRITEPROTECT, &wp) != 0) why = "UFFDIO_WRITEPROTECT on shared memory";
    int e = errno;
    if (ufd >= 0) close(ufd);
    if (p != MAP_FAILED) munmap(p, page);
    if (mfd >= 0) close(mfd);
    if (why) printf("probe: %s failed: %s\n", why, strerror(e));
    return why;
}

#endif

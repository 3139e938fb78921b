/* userfaultfd definitions that older kernel headers lack (the values are the kernel's ABI): one copy for the
 * engine (src/atomic/uwp.c, uwp_shadow.c) and the tests that probe for it (tests/atomic/uffd_probe.h). */
#ifndef DK_COMMON_UFFD_COMPAT_H
#define DK_COMMON_UFFD_COMPAT_H

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1 /* userfaultfd(2) flag: faults from user mode only (Linux 5.11) */
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12) /* write-protect shmem and hugetlbfs (Linux 5.19) */
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00) /* /dev/userfaultfd's ioctl (Linux 6.1) */
#endif

#endif

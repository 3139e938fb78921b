/* Description: the medium probe under failing system calls (through the pass-through table's fault
 * injection): a failing copy_file_range, fsync, mmap or smaps read costs only the answer it was for -- the
 * probe still returns 0 with the basic answer, says why (costs_error, huge_pages_why), reports no partial
 * cost figures, and leaves errno as the caller had it; after the faults are cleared it measures again.
 * Runs in a scratch directory under /dev/shm (or the build directory). Exit 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "persist/media.h"
#include "shim/libc.h"

static int failures;
#define EXPECT(cond, ...)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            failures++;                                                          \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);               \
            printf(__VA_ARGS__);                                                 \
            printf("\n");                                                        \
        }                                                                        \
    } while (0)

static int probe(int dirfd, int flags, struct dk_medium_info *m) {
    errno = 4242;
    int r = dk_medium_probe(dirfd, flags, m);
    EXPECT(r != 0 || errno == 4242, "errno changed to %d on success", errno);
    return r;
}

static void expect_no_costs(const struct dk_medium_info *m, int err, const char *what) {
    EXPECT(!m->costs_measured, "%s: costs reported as measured", what);
    EXPECT(m->costs_error == err, "%s: costs_error %d, want %d", what, m->costs_error, err);
    EXPECT(m->clone_4k_ns == 0 && m->clone_2m_ns == 0 && m->copy_4k_ns == 0 && m->copy_2m_ns == 0 &&
               m->fsync_ns == 0,
           "%s: partial figures reported", what);
}

int main(void) {
    char dir[] = "/dev/shm/daxkit-media-faults.XXXXXX", dir2[] = "daxkit-media-faults.XXXXXX";
    const char *d = mkdtemp(dir) ? dir : mkdtemp(dir2);
    if (!d) {
        perror("mkdtemp");
        return 1;
    }
    int dirfd = open(d, O_RDONLY | O_DIRECTORY);
    struct dk_medium_info m, base;
    if (dirfd < 0 || probe(dirfd, DK_PROBE_BASIC, &base) != 0) {
        printf("FAIL: basic probe of %s\n", d);
        return 1;
    }
    printf("probing %s: %s on %s\n", d, dk_medium_name(base.medium), base.fs_name);

    dk_libc_fail_nth("copy_file_range", 3, EIO, 0);
    EXPECT(probe(dirfd, DK_PROBE_COSTS, &m) == 0, "copy_file_range EIO: probe failed");
    expect_no_costs(&m, EIO, "copy_file_range EIO");
    EXPECT(m.medium == base.medium && m.reflink == base.reflink, "copy_file_range EIO: basic answer changed");
    dk_libc_fail_reset();

    dk_libc_fail_nth("fsync", 1, ENOSPC, 1);
    EXPECT(probe(dirfd, DK_PROBE_COSTS, &m) == 0, "fsync ENOSPC: probe failed");
    expect_no_costs(&m, ENOSPC, "fsync ENOSPC");
    dk_libc_fail_reset();

    dk_libc_fail_nth("pwrite", 2, EIO, 0); /* the first is the reflink probe's; the second fills the source */
    EXPECT(probe(dirfd, DK_PROBE_COSTS, &m) == 0, "pwrite EIO: probe failed");
    expect_no_costs(&m, EIO, "pwrite EIO");
    dk_libc_fail_reset();

    dk_libc_fail_nth("mmap", 1, ENOMEM, 1);
    EXPECT(probe(dirfd, DK_PROBE_HUGE, &m) == 0, "mmap ENOMEM: probe failed");
    EXPECT(!m.huge_pages && m.huge_pages_why && strstr(m.huge_pages_why, "mapping"),
           "mmap ENOMEM: huge_pages=%d why=%s", m.huge_pages, m.huge_pages_why ? m.huge_pages_why : "(null)");
    EXPECT(!m.map_sync && m.medium == base.medium, "mmap ENOMEM: medium %s", dk_medium_name(m.medium));
    dk_libc_fail_reset();

    dk_libc_fail_nth("read", 1, EIO, 1);
    EXPECT(probe(dirfd, DK_PROBE_HUGE, &m) == 0, "smaps read EIO: probe failed");
    EXPECT(!m.huge_pages && m.huge_pages_why && strstr(m.huge_pages_why, "smaps"),
           "smaps read EIO: why=%s", m.huge_pages_why ? m.huge_pages_why : "(null)");
    dk_libc_fail_reset();

    dk_libc_fail_nth("ftruncate", 1, EIO, 1);
    EXPECT(probe(dirfd, DK_PROBE_HUGE | DK_PROBE_COSTS, &m) == 0, "ftruncate EIO: probe failed");
    EXPECT(!m.map_sync && !m.huge_pages && !m.costs_measured, "ftruncate EIO: something claimed to work");
    dk_libc_fail_reset();

    EXPECT(probe(dirfd, DK_PROBE_HUGE | DK_PROBE_COSTS, &m) == 0 && m.costs_measured && m.costs_error == 0,
           "after the faults: costs_measured=%d costs_error=%d", m.costs_measured, m.costs_error);
    EXPECT(m.copy_2m_ns > 0 && m.fsync_ns > 0 && m.cost_samples > 0, "after the faults: no figures");
    close(dirfd);
    if (rmdir(d) != 0) printf("FAIL: rmdir %s: %s (the probe left files)\n", d, strerror(errno)), failures++;
    printf("%s\n", failures ? "FAILED" : "PASS");
    return failures ? 1 : 0;
}

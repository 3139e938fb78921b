/* dk-probe: prints dk_medium_probe's answer for a directory as key=value lines, for the medium tests.
 * Usage: dk-probe DIR [basic|huge|costs|all]   (default all). Exit 0, or 1 when the probe fails. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "persist/media.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: dk-probe DIR [basic|huge|costs|all]\n");
        return 2;
    }
    const char *what = argc > 2 ? argv[2] : "all";
    int flags = !strcmp(what, "basic")   ? DK_PROBE_BASIC
                : !strcmp(what, "huge")  ? DK_PROBE_HUGE
                : !strcmp(what, "costs") ? DK_PROBE_COSTS
                                         : DK_PROBE_HUGE | DK_PROBE_COSTS;
    int dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        fprintf(stderr, "dk-probe: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    struct dk_medium_info m;
    errno = 12345; /* the probe must leave errno alone on success */
    int r = dk_medium_probe(dirfd, flags, &m);
    if (r != 0) {
        fprintf(stderr, "dk-probe: dk_medium_probe(%s): %s\n", argv[1], strerror(-r));
        return 1;
    }
    printf("errno_kept=%d\n", errno == 12345);
    printf("medium=%s\nfs=%s\nfs_magic=0x%llx\nblock_bytes=%u\n", dk_medium_name(m.medium), m.fs_name,
           (unsigned long long)m.fs_magic, m.block_bytes);
    printf("map_sync=%d\nhuge_pages=%d\nhuge_pmd_kb=%llu\nhuge_pages_why=%s\nreflink=%d\n", m.map_sync,
           m.huge_pages, (unsigned long long)m.huge_pmd_kb, m.huge_pages_why ? m.huge_pages_why : "",
           m.reflink);
    printf("costs_measured=%d\ncosts_error=%d\ncost_samples=%u\ncosts_total_ns=%llu\n", m.costs_measured,
           m.costs_error, m.cost_samples, (unsigned long long)m.costs_total_ns);
    printf("clone_4k_ns=%llu\nclone_2m_ns=%llu\ncopy_4k_ns=%llu\ncopy_2m_ns=%llu\nfsync_ns=%llu\n",
           (unsigned long long)m.clone_4k_ns, (unsigned long long)m.clone_2m_ns,
           (unsigned long long)m.copy_4k_ns, (unsigned long long)m.copy_2m_ns, (unsigned long long)m.fsync_ns);
    unsigned long long t = dk_medium_clone_min_bytes(&m);
    if (t == (unsigned long long)UINT64_MAX) printf("clone_min_bytes=never\n");
    else printf("clone_min_bytes=%llu\n", t);
    close(dirfd);
    return 0;
}

/* Description: the huge-page probe's smaps parser finds the section of the mapping that starts at a given
 * address (not one that merely contains it, not a later one), sums FilePmdMapped and ShmemPmdMapped there
 * only, survives paths with spaces and a missing final newline, and says "not found" (-1) otherwise; and
 * the live probe of a directory reports huge_pages with a reason. Exit 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "persist/media.h"

static const char smaps[] =
    "7f0000000000-7f0000200000 rw-s 00000000 00:2d 12 /mnt/a file with spaces (deleted)\n"
    "Size:               2048 kB\n"
    "FilePmdMapped:         0 kB\n"
    "ShmemPmdMapped:     2048 kB\n"
    "VmFlags: rd wr sh mr mw me ms sd\n"
    "7f0000200000-7f0000600000 rw-s 00000000 08:01 13 /x\n"
    "FilePmdMapped:      4096 kB\n"
    "ShmemPmdMapped:        0 kB\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"
    "FilePmdMapped:         0 kB";

static int failures;
static void expect(uintptr_t start, int64_t want) {
    int64_t got = dk_smaps_pmd_kb(smaps, start);
    if (got != want) {
        printf("FAIL: start 0x%lx: got %lld kB, want %lld\n", (unsigned long)start, (long long)got, (long long)want);
        failures++;
    }
}

int main(void) {
    expect(0x7f0000000000ul, 2048);
    expect(0x7f0000200000ul, 4096);
    expect(0xffffffffff600000ul, 0);
    expect(0x7f0000100000ul, -1); /* inside the first mapping, not its start */
    expect(0x1000ul, -1);
    if (dk_smaps_pmd_kb("", 0x1000) != -1) printf("FAIL: empty text\n"), failures++;
    /* The live probe on the build's own file system: whatever it finds, it must say why. */
    int dirfd = open(".", O_RDONLY | O_DIRECTORY);
    struct dk_medium_info m;
    errno = 77;
    int r = dirfd < 0 ? -errno : dk_medium_probe(dirfd, DK_PROBE_HUGE, &m);
    if (r != 0) {
        printf("FAIL: dk_medium_probe(.) = %s\n", strerror(-r));
        failures++;
    } else {
        printf("probe of .: %s on %s, huge_pages=%d (%s)\n", dk_medium_name(m.medium), m.fs_name, m.huge_pages,
               m.huge_pages_why ? m.huge_pages_why : "(none)");
        if (!m.huge_pages_why) printf("FAIL: huge_pages_why not set\n"), failures++;
        if (errno != 77) printf("FAIL: the probe changed errno to %d on success\n", errno), failures++;
        if (m.costs_measured) printf("FAIL: costs measured without DK_PROBE_COSTS\n"), failures++;
    }
    return failures ? 1 : 0;
}

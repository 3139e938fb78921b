/* Description: per-file DAX (review 11, finding 3): dk_file_persist_as decides how one file of a directory
 * persists from the directory's medium and what the file itself showed -- statx's STATX_ATTR_DAX and whether
 * a MAP_SYNC mapping of it was granted (a fake probe: every combination); a file of a DAX directory that is
 * not DAX by either persists as page cache (msync/fdatasync), emulation (DAXKIT_PERSIST=flush) and the other
 * media are left as they are. Then dk_file_dax_attr on a real file here (no DAX on this machine): not 1, and
 * errno kept. Exit 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "persist/media.h"

static int failures;

static void expect(enum dk_medium root, int emulated, int file_dax, int map_sync, enum dk_medium want) {
    enum dk_medium got = dk_file_persist_as(root, emulated, file_dax, map_sync);
    if (got != want) {
        printf("FAIL: root %s, emulated %d, statx DAX %d, MAP_SYNC %d: %s, want %s\n", dk_medium_name(root), emulated,
               file_dax, map_sync, dk_medium_name(got), dk_medium_name(want));
        failures++;
    }
}

int main(void) {
    const int states[] = {1, 0, -1};
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++) {
            int d = states[a], m = states[b];
            expect(DK_MEDIUM_PAGECACHE, 0, d, m, DK_MEDIUM_PAGECACHE);
            expect(DK_MEDIUM_VOLATILE, 0, d, m, DK_MEDIUM_VOLATILE);
            expect(DK_MEDIUM_DAX, 1, d, m, DK_MEDIUM_DAX); /* emulation flushes whatever the file is */
            /* a real DAX directory: DAX unless the file showed it is not (statx clear, MAP_SYNC refused) */
            expect(DK_MEDIUM_DAX, 0, d, m, d == 0 || m == 0 ? DK_MEDIUM_PAGECACHE : DK_MEDIUM_DAX);
        }
    }
    char path[] = "/tmp/dk_file_medium.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return perror("mkstemp"), 1;
    unlink(path);
    errno = 1234;
    int d = dk_file_dax_attr(fd);
    if (d == 1) printf("FAIL: a /tmp file reported DAX\n"), failures++;
    if (errno != 1234) printf("FAIL: dk_file_dax_attr changed errno to %d\n", errno), failures++;
    close(fd);
    if (dk_file_dax_attr(fd) != -1) printf("FAIL: a closed descriptor did not give -1\n"), failures++;
    printf("%s: statx DAX attribute of a /tmp file: %d (1 set, 0 clear, -1 not reported)\n",
           failures ? "FAIL" : "ok", d);
    return failures ? 1 : 0;
}

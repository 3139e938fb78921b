/* Description: two recoveries of one dead owner's published-size records at once (review 9, finding 2).
 * Usage: recover_race DIR FILE, where DIR's .daxkit holds the records of a dead DAXKIT_APPEND=extend process
 * and FILE is its file (published 1,000 bytes, the kernel size a step ahead). This process is recoverer R1
 * (`daxkit recover`); a crash-point hook holds it at sizerec.recover.file_open -- inside its handling of
 * FILE's record, where a search of the tree for a renamed file takes its time -- and meanwhile runs
 * recoverer R2 (a daxkit program starting up) and then a live program's append of 100 bytes + fsync to FILE.
 * R1 then resumes. The fsynced append must survive: R2 must skip the owner R1 is handling (its lock is
 * held) instead of finishing it, so that R1's late truncate cannot cut the append. Before the fix R1 let
 * the owner's lock go right after its scan: R2 rolled FILE back to 1,000 bytes, the live append made it
 * 1,100, and R1 truncated it to 1,000. Exit 0 pass, 1 fail. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "upath/internal.h"

#define LIVE_APPEND_BYTES 100

static const char *dir, *file;
static int fired;
static struct up_recover_report rep2;
static off_t size_after_live;

static void live_append(void) {
    char buf[LIVE_APPEND_BYTES];
    memset(buf, 'A', sizeof buf);
    int fd = open(file, O_WRONLY | O_APPEND);
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || fsync(fd) != 0) perror(file), exit(1);
    struct stat st;
    fstat(fd, &st);
    size_after_live = st.st_size;
    close(fd);
}

static void hook(const char *site) {
    if (strcmp(site, "sizerec.recover.file_open") != 0 || fired) return;
    fired = 1;
    if (up_recover_dir(dir, &rep2) != 0) printf("FAIL: R2's recovery of %s failed\n", dir), exit(1);
    live_append();
}

int main(int argc, char **argv) {
    if (argc != 3) return fprintf(stderr, "usage: recover_race DIR FILE\n"), 1;
    dir = argv[1], file = argv[2];
    dk_crashpoint_set_hook(hook);
    struct up_recover_report rep1 = {0};
    if (up_recover_dir(dir, &rep1) != 0) return printf("FAIL: R1's recovery of %s failed\n", dir), 1;
    dk_crashpoint_set_hook(NULL);
    if (!fired) return printf("FAIL: R1 never reached sizerec.recover.file_open (no record of a dead owner?)\n"), 1;
    printf("R1: owners gone %llu, rolled back %llu, untouched %llu; R2 (while R1 held the owner): owners gone %llu, "
           "rolled back %llu; after the live append + fsync: %lld bytes\n",
           (unsigned long long)rep1.owners_gone, (unsigned long long)rep1.sizes.rolled_back,
           (unsigned long long)rep1.sizes.untouched, (unsigned long long)rep2.owners_gone,
           (unsigned long long)rep2.sizes.rolled_back, (long long)size_after_live);
    struct stat st;
    char tail[LIVE_APPEND_BYTES];
    int fd = open(file, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) return perror(file), 1;
    ssize_t got = st.st_size >= LIVE_APPEND_BYTES ? pread(fd, tail, sizeof tail, st.st_size - LIVE_APPEND_BYTES) : 0;
    close(fd);
    int ok = got == LIVE_APPEND_BYTES && st.st_size == size_after_live;
    for (int i = 0; ok && i < LIVE_APPEND_BYTES; i++) ok = tail[i] == 'A';
    if (!ok || rep2.owners_gone != 0) {
        printf("FAIL: final size %lld (after the live program's fsynced append: %lld), the append %s; R2 %s the "
               "owner R1 was handling\n", (long long)st.st_size, (long long)size_after_live,
               ok ? "intact" : "cut", rep2.owners_gone ? "handled" : "skipped");
        return 1;
    }
    printf("ok: R2 skipped the owner R1 held; the live program's fsynced append survived R1's late record\n");
    return 0;
}

/* Description: a strict O_APPEND append whose end moves between its record and its apply lands at the end,
 * not in place (the knownbug shim_fd_lifetime_replace_strict_xfs: "writer 1: record 450 where 449 was due").
 * Strict mode decides an O_APPEND append's offset under the file's append lock (the kernel's end, re-read)
 * and logs it; the apply comes after. Meanwhile a write of this process that the kernel serves -- through a
 * descriptor number a close + open just bound again, which the call looked up before the bind and
 * dk_pt_begin after it -- appends at the kernel's end, and up_kernel_changed_fd takes that end as the
 * published size. The apply then found its offset below the published size and stored the append in place,
 * over the kernel's record: an acknowledged write lost, no error. Here a crash-point hook (test builds)
 * holds the append T1 at strict.write.logged while the hook itself writes 100 bytes through a second
 * descriptor of the log by the kernel (the raw system call) and calls up_kernel_changed_fd on it, as the
 * pass-through path does; then T1 applies. The log must hold R0, K, R1 (300 bytes), and the descriptor's
 * offset must follow T1's bytes. Before the fix: 200 bytes, R0 then R1 -- K overwritten. With the real strict
 * path of libdkcore on /dev/shm (DAXKIT_PERSIST=flush: the in-place store went through the mapping) and, with
 * DIR, on the page cache (tests/strict/append_end_moved.sh: XFS). Exit 0 pass, 1 fail, 77 skip. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/crashpoint.h"
#include "upath/upath.h"

#define REC 100

static bool is_t1, fired;
static int kernel_fd;
static char k_rec[REC];

static void hook(const char *site) {
    if (!is_t1 || fired || strcmp(site, "strict.write.logged") != 0) return;
    fired = true;
    if (syscall(SYS_write, kernel_fd, k_rec, REC) != REC) printf("FAIL: the kernel's write\n"), exit(1);
    up_kernel_changed_fd(kernel_fd); /* what dk_pt_end_changed does after a pass-through write */
}

static int open_adopted(const char *path, int flags) {
    int fd = open(path, flags, 0644);
    if (fd < 0) return perror(path), -1;
    if (up_adopt(fd, flags, AT_FDCWD, path) != 0) return printf("FAIL: %s is not adopted\n", path), -1;
    return fd;
}

int main(int argc, char **argv) {
    struct stat sb;
    bool given = argc > 1;
    if (!given && stat("/dev/shm", &sb) != 0) return printf("SKIP: no /dev/shm\n"), 77;
    char tmpl[] = "/dev/shm/dk-append-end.XXXXXX";
    char *dir = given ? argv[1] : tmpl;
    if (!given && !mkdtemp(dir)) return perror("mkdtemp"), 1;
    setenv("DAXKIT_DIR", dir, 1);
    setenv("DAXKIT_MODE", "strict", 1);
    if (!given) setenv("DAXKIT_PERSIST", "flush", 1); /* else the medium's own: the page cache on XFS */
    setenv("DAXKIT_STATS", "0", 1);
    up_init();
    char path[256];
    snprintf(path, sizeof path, "%s/log", dir);
    unlink(path);
    int a = open_adopted(path, O_WRONLY | O_CREAT | O_APPEND);
    kernel_fd = open_adopted(path, O_WRONLY | O_APPEND);
    if (a < 0 || kernel_fd < 0) return 1;
    struct up_slot *sa = up_serving(a);
    if (!sa) return printf("FAIL: the log is not served\n"), 1;
    up_served_end(); /* (the descriptor stays open: the slot too) */
    char r0[REC], r1[REC];
    memset(r0, '0', REC), memset(k_rec, 'K', REC), memset(r1, '1', REC);
    if (up_write(sa, a, r0, REC) != REC) return printf("FAIL: the first append\n"), 1;
    dk_crashpoint_set_hook(hook);
    is_t1 = true;
    ssize_t w = up_write(sa, a, r1, REC);
    is_t1 = false;
    dk_crashpoint_set_hook(NULL);
    if (w != REC) return printf("FAIL: T1's append returned %zd\n", w), 1;
    if (!fired) return printf("FAIL: T1 never reached strict.write.logged (not a strict write?)\n"), 1;
    off_t pos = up_lseek(sa, a, 0, SEEK_CUR); /* daxkit's offset of the descriptor: past T1's bytes */
    char got[4 * REC];
    int rd = open(path, O_RDONLY);
    ssize_t n = rd >= 0 ? pread(rd, got, sizeof got, 0) : -1;
    if (rd >= 0) close(rd);
    const char *want = "R0, K, R1";
    int fails = 0;
    if (n != 3 * REC) {
        printf("FAIL: the log is %zd bytes, %d due (%s)\n", n, 3 * REC, want);
        fails = 1;
    }
    static const char order[3] = {'0', 'K', '1'};
    for (ssize_t i = 0; i + REC <= n && i < 3 * REC; i += REC)
        if (got[i] != order[i / REC]) {
            printf("FAIL: record %zd is '%c', '%c' due (%s)\n", i / REC, got[i], order[i / REC], want);
            fails = 1;
        }
    if (pos != 3 * REC) {
        printf("FAIL: the descriptor's offset is %lld after T1's append, %d due\n", (long long)pos, 3 * REC);
        fails = 1;
    }
    printf("the log holds");
    for (ssize_t i = 0; i + REC <= n; i += REC) printf(" %c", got[i]);
    printf(" (%zd bytes)%s\n", n, fails ? ": T1's append was stored in place, over the kernel's record" : "");
    if (!given) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return fails;
}

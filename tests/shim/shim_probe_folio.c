/* Description: the probe page's huge-tmpfs exception is not reached through the library (review 27 #1;
 * docs/design-upath.md, "The probe page"). A put-off in-place pwrite trusts "the probe page P's entry is present,
 * so the kernel size is past P". On huge tmpfs a cut inside a 2 MiB folio whose split fails (another process holds
 * a reference: here a vmsplice'd page of it) leaves the folio whole, and a fault *below* the cut in that folio maps
 * the whole folio again, P included, with the size at or below P -- a write put off then stores past the end,
 * where the kernel's pwrite would have extended the file. The library must make no such fault between a lock
 * acquisition and its probe. The program (the reviewer's lost3.c): a 4 MiB file, a lock, a 5-byte pwrite at 64
 * (the re-read; P = 4 MiB - 4 KiB touched), a read at 2 MiB (the second folio mapped); another process (raw system
 * calls) maps the file, pins the page at 2 MiB (PIN: vmsplice into a pipe; else not), cuts the file to 2 MiB +
 * 8 KiB; this process then makes its BETWEEN call below the cut (none; pread or pwrite of 4 KiB at 2 MiB -- a
 * fault below the cut in the folio, before the lock), takes the lock, writes 16 bytes at 3 MiB, releases it. As
 * the kernel's pwrite: the file is 3 MiB + 16 bytes, the 16 bytes at 3 MiB, zeros from the cut to them. Prints
 * the counters refresh_put_off and probe_page_aborts of the 16-byte write.
 * With a 4th argument "read" (session 28, review28 #8), the lock's call is instead a pread of 16 bytes at 3 MiB --
 * past the cut, below P: put off on a present probe it would return the folio's zeros; the kernel's pread returns 0.
 * Usage: shim_probe_folio DIR pin|nopin none|pread|pwrite [read]. Exit 0 pass, 1 fail, 77 skip (not huge tmpfs). */
#include <sys/uio.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "common/cpu.h"
#include "shim_test.h"

#define MIB (1ull << 20)
#define CUT (2 * MIB + 8192)
#define AT (3 * MIB)

static void lk(int fd, short type) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET};
    OK(fcntl(fd, F_SETLK, &l));
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: shim_probe_folio DIR pin|nopin none|pread|pwrite\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    st_watchdog(60);
    const char *dir = argv[1], *between = argv[3];
    bool pin = !strcmp(argv[2], "pin");
    CHECK(pin || !strcmp(argv[2], "nopin"), "PIN: pin or nopin, not %s", argv[2]);
    CHECK(!strcmp(between, "none") || !strcmp(between, "pread") || !strcmp(between, "pwrite"),
          "BETWEEN: none, pread or pwrite, not %s", between);
    struct statfs sf;
    OK(statfs(dir, &sf));
    if (sf.f_type != TMPFS_MAGIC) SKIP("tmpfs (huge=) only: the exception is shmem's huge folios");
    if (!dk_cpu_has(DK_CPU_RTM)) SKIP("no RTM (as the library asks it): no probe page, nothing put off");
    char path[PATH_MAX], lpath[PATH_MAX];
    st_path(path, sizeof path, dir, "db");
    st_path(lpath, sizeof lpath, dir, "db.lock");
    static char a[4 * MIB];
    memset(a, 'a', sizeof a);
    int raw = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_TRUNC, 0644); /* without the library */
    CHECK(raw >= 0 && syscall(SYS_write, raw, a, sizeof a) == (long)sizeof a, "set-up of %s", path);
    syscall(SYS_close, raw);

    int go[2], done[2];
    OK(pipe(go));
    OK(pipe(done));
    pid_t b = fork();
    CHECK(b >= 0, "fork");
    if (b == 0) { /* another process, made before this one opens the file (a fork shares its descriptors: the
                   * library hands a shared one to the kernel); raw system calls only */
        syscall(SYS_close, go[1]); /* (a parent that ends: EOF) */
        syscall(SYS_close, done[0]);
        int f = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        char c;
        if (syscall(SYS_read, go[0], &c, 1) != 1) syscall(SYS_exit_group, 0); /* the cut's cue */
        char *m = (char *)syscall(SYS_mmap, 0, 4 * MIB, PROT_READ, MAP_SHARED, f, 0);
        int p[2];
        syscall(SYS_pipe2, p, 0);
        struct iovec v = {m + 2 * MIB, 4096};
        if (pin) syscall(SYS_vmsplice, p[1], &v, 1, 0); /* a reference: the folio's split fails */
        long r = syscall(SYS_ftruncate, f, CUT);
        c = r == 0 ? 'c' : 'e';
        syscall(SYS_write, done[1], &c, 1);
        syscall(SYS_read, go[0], &c, 1);
        syscall(SYS_exit_group, 0);
    }
    OK(close(go[0]));
    OK(close(done[1]));
    int fd = OK(open(path, O_RDWR)), lfd = OK(open(lpath, O_RDWR | O_CREAT, 0644));
    static char tmp[4096];
    for (int i = 0; i < 16; i++) /* mapped after a few calls (DAXKIT_MAP_AFTER_IOS, 8) */
        CHECK(pread(fd, tmp, sizeof tmp, (off_t)i * 4096) == (ssize_t)sizeof tmp, "warm-up pread");
    lk(lfd, F_WRLCK);
    lk(lfd, F_UNLCK);
    CHECK(pwrite(fd, "hello", 5, 64) == 5, "pwrite at 64"); /* the re-read; the probe page touched */
    CHECK(pread(fd, tmp, sizeof tmp, 2 * MIB) == (ssize_t)sizeof tmp, "pread at 2 MiB"); /* the second folio mapped */

    OK(write(go[1], "t", 1));
    char c = 0;
    CHECK(read(done[0], &c, 1) == 1 && c == 'c', "the other process's cut failed (%c)", c);
    if (!strcmp(between, "pread")) CHECK(pread(fd, tmp, sizeof tmp, 2 * MIB) == (ssize_t)sizeof tmp, "pread below");
    if (!strcmp(between, "pwrite")) CHECK(pwrite(fd, tmp, sizeof tmp, 2 * MIB) == (ssize_t)sizeof tmp, "pwrite below");

    uint64_t c0[DK_C_COUNT], c1[DK_C_COUNT];
    CHECK(st_stats(getpid(), c0), "no stats file");
    if (argc > 4 && !strcmp(argv[4], "read")) { /* the lock's first call a read past the cut (session 28, review28 #8) */
        lk(lfd, F_RDLCK);
        char rb[16];
        ssize_t r = pread(fd, rb, sizeof rb, AT); /* inside the old end, below P: a read put off on a present probe */
        lk(lfd, F_UNLCK);
        CHECK(st_stats(getpid(), c1), "no stats file");
        OK(write(go[1], "g", 1));
        waitpid(b, NULL, 0);
        OK(close(fd));
        long rput = (long)(c1[DK_C_refresh_read_put_off] - c0[DK_C_refresh_read_put_off]);
        long raborts = (long)(c1[DK_C_probe_page_aborts] - c0[DK_C_probe_page_aborts]);
        printf("%s, %s, read: the read at 3 MiB returned %zd (kernel path: 0): refresh_read_put_off +%ld, "
               "probe_page_aborts +%ld\n", argv[2], between, r, rput, raborts);
        CHECK(rput + raborts == 1, "the read at 3 MiB neither put its re-read off nor had its probe abort: the probe "
              "page was not looked at, the case proves nothing");
        CHECK(r == 0, "%s, %s, read: a read of 16 at 3 MiB after another process's cut to %llu returned %zd, not 0: put "
              "off on a probe page present past the cut", argv[2], between, (unsigned long long)CUT, r);
        printf("ok: the read past the cut returned the kernel's 0\n");
        return 0;
    }
    lk(lfd, F_WRLCK);
    ssize_t w = pwrite(fd, "XXXXXXXXXXXXXXXX", 16, AT); /* inside the old end, below P */
    lk(lfd, F_UNLCK);
    CHECK(st_stats(getpid(), c1), "no stats file");
    OK(write(go[1], "g", 1));
    waitpid(b, NULL, 0);
    OK(close(fd));
    CHECK(w == 16, "the pwrite at 3 MiB returned %zd (%s)", w, strerror(errno));
    long put_off = (long)(c1[DK_C_refresh_put_off] - c0[DK_C_refresh_put_off]);
    long aborts = (long)(c1[DK_C_probe_page_aborts] - c0[DK_C_probe_page_aborts]);
    struct stat st;
    OK(syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0));
    printf("%s, %s: the write at 3 MiB: refresh_put_off +%ld, probe_page_aborts +%ld; kernel size %lld (kernel "
           "path: %llu)\n", argv[2], between, put_off, aborts, (long long)st.st_size, AT + 16);
    CHECK(put_off + aborts == 1, "the write at 3 MiB neither put its re-read off nor had its probe abort: the probe page "
          "was not looked at, the case proves nothing (not mapped? no probe page kept?)");
    CHECK((uint64_t)st.st_size == AT + 16, "%s, %s: the file is %lld bytes after the write of 16 at 3 MiB, not %llu: "
          "the write was put off on a probe page present past the cut (its bytes stored past the end, lost)",
          argv[2], between, (long long)st.st_size, AT + 16);
    raw = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    static char back[AT + 16 - CUT];
    CHECK(syscall(SYS_pread64, raw, back, sizeof back, CUT) == (long)sizeof back, "read back");
    syscall(SYS_close, raw);
    for (size_t i = 0; i < sizeof back - 16; i++)
        CHECK(back[i] == 0, "byte %llu (between the cut and the write) is 0x%02x, not 0", (unsigned long long)(CUT + i),
              (unsigned char)back[i]);
    CHECK(!memcmp(back + sizeof back - 16, "XXXXXXXXXXXXXXXX", 16), "the 16 bytes at 3 MiB are not the write's");
    printf("ok: the write landed as the kernel's pwrite would have\n");
    return 0;
}

/* Edge cases of DAXKIT_ATOMIC_MMAP (review 10, findings 20, 2, 9, 8, 7, 6, 17), as an unmodified mmap + msync
 * program run under `daxkit run --atomic-mmap` by mmap_edges.sh. Each case checks what the kernel's mmap
 * would do plus the failure-atomic promise (a crash keeps the state of the last completed msync).
 *
 *   mmap_edges FILE tail             FILE: 5000 bytes (not a page multiple). Stores into the first and the
 *                                    last, partial page, each msync'ed: every msync succeeds (was EFBIG for
 *                                    good after the first store into the last page)
 *   mmap_edges FILE big MIB          MIB MiB of stores in one epoch (more than the engine's default log):
 *                                    the msync succeeds, and so does a later one
 *   mmap_edges FILE crash OFF LEN C  maps the whole file, stores LEN bytes C at OFF, no msync, SIGKILLs
 *                                    itself (the script then checks with expect)
 *   mmap_edges FILE expect OFF LEN C maps and unmaps the file (recovery), then [OFF, OFF+LEN) must be C
 *                                    (C: a character, or 0 for a zero byte)
 *
 * Exit 0 pass, 1 fail, 77 skip (no userfaultfd write-protection for shared memory here: the mapping goes to
 * the kernel and nothing here is failure-atomic). */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096u

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); return 1; } \
    } while (0)

static int fd;
static size_t file_bytes;

static unsigned char *map_file(void) {
    unsigned char *p = mmap(NULL, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) perror("mmap"), exit(1);
    return p;
}

static unsigned char byte_at(off_t off) {
    unsigned char c;
    if (pread(fd, &c, 1, off) != 1) perror("pread"), exit(1);
    return c;
}

/* 0 or -1 with errno, as msync(2). */
static int sync_all(unsigned char *p) { return msync(p, file_bytes, MS_SYNC); }

static int uffd_open(void) {
    int ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (ufd >= 0) return ufd;
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) return -1;
    ufd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    close(dev);
    return ufd;
}

/* Skips (77) when this process cannot write-protect a shared memory page with userfaultfd. */
static void require_uffd_wp_shmem(void) {
    const char *why = NULL;
    int mfd = (int)syscall(SYS_memfd_create, "mmap_edges_probe", 0), ufd = -1;
    void *p = MAP_FAILED;
    if (mfd < 0 || ftruncate(mfd, PAGE) != 0) why = "memfd_create/ftruncate";
    if (!why && (p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) why = "mmap";
    if (!why && (ufd = uffd_open()) < 0) why = "userfaultfd";
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM};
    if (!why && ioctl(ufd, UFFDIO_API, &api) != 0) why = "UFFDIO_API";
    struct uffdio_register reg = {.range = {(uintptr_t)p, PAGE}, .mode = UFFDIO_REGISTER_MODE_WP};
    if (!why && ioctl(ufd, UFFDIO_REGISTER, &reg) != 0) why = "UFFDIO_REGISTER_MODE_WP on shared memory";
    int e = errno;
    if (ufd >= 0) close(ufd);
    if (p != MAP_FAILED) munmap(p, PAGE);
    if (mfd >= 0) close(mfd);
    if (why) printf("SKIP: no userfaultfd write-protection for shared memory here (%s: %s)\n", why, strerror(e)), exit(77);
}

/* Every store is followed by an msync that must succeed: the last page is partial (the file is 5000 bytes). */
static int tail(void) {
    CHECK(file_bytes > PAGE && file_bytes % PAGE, "the file must be longer than a page and not a page multiple");
    unsigned char *p = map_file();
    size_t last = file_bytes - 400;
    p[100] = 'a';
    CHECK(sync_all(p) == 0, "msync after a store into the first page: %s", strerror(errno));
    p[last] = 'b';
    CHECK(sync_all(p) == 0, "msync after a store into the last, partial page: %s", strerror(errno));
    p[200] = 'c';
    CHECK(sync_all(p) == 0, "a later msync: %s", strerror(errno));
    CHECK(byte_at(100) == 'a' && byte_at((off_t)last) == 'b' && byte_at(200) == 'c', "file: %c %c %c, want a b c",
          byte_at(100), byte_at((off_t)last), byte_at(200));
    p[file_bytes - 1] = 'z'; /* the file's last byte: never msync'ed, rolled back by the munmap */
    CHECK(munmap(p, file_bytes) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at((off_t)file_bytes - 1) == 0, "a store into the last page survived munmap without msync");
    printf("tail: stores into a %zu-byte file's last, partial page are logged and committed\n", file_bytes);
    return 0;
}

/* `mib` MiB of stores in one epoch, then one byte: both msyncs succeed. */
static int big(unsigned long mib) {
    CHECK((mib << 20) <= file_bytes, "the file is smaller than %lu MiB", mib);
    unsigned char *p = map_file();
    for (size_t off = 0; off < (mib << 20); off += PAGE) memset(p + off, 'B', PAGE);
    CHECK(sync_all(p) == 0, "msync of %lu MiB of stores: %s", mib, strerror(errno));
    p[1] = 'C';
    CHECK(sync_all(p) == 0, "the next msync (one byte): %s", strerror(errno));
    CHECK(byte_at(0) == 'B' && byte_at(1) == 'C' && byte_at((off_t)(mib << 20) - 1) == 'B', "file: %c %c %c",
          byte_at(0), byte_at(1), byte_at((off_t)(mib << 20) - 1));
    CHECK(munmap(p, file_bytes) == 0, "munmap: %s", strerror(errno));
    printf("big: an epoch of %lu MiB of stores in a %zu MiB file committed, and the next one too\n", mib, file_bytes >> 20);
    return 0;
}

static int crash(size_t off, size_t len, int c) {
    unsigned char *p = map_file();
    memset(p + off, c, len);
    kill(getpid(), SIGKILL);
    return 1;
}

static int expect(size_t off, size_t len, int c) {
    unsigned char *p = map_file(); /* the next mapping recovers */
    CHECK(munmap(p, file_bytes) == 0, "munmap: %s", strerror(errno));
    unsigned char *buf = malloc(len);
    CHECK(buf && pread(fd, buf, len, (off_t)off) == (ssize_t)len, "pread: %s", strerror(errno));
    size_t bad = 0, first = len;
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (unsigned char)c && !bad++) first = i;
    CHECK(!bad, "%zu of %zu bytes at %zu are not %d after recovery (first at %zu: %d)", bad, len, off, c, off + first,
          buf[first]);
    printf("expect: the %zu bytes at %zu hold %d\n", len, off, c);
    free(buf);
    return 0;
}

static int char_arg(const char *s) { return !strcmp(s, "0") ? 0 : (unsigned char)s[0]; }

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: mmap_edges FILE tail|big MIB|crash OFF LEN C|expect OFF LEN C\n"), 2;
    fd = open(argv[1], O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return perror(argv[1]), 1;
    file_bytes = (size_t)st.st_size;
    require_uffd_wp_shmem();
    const char *m = argv[2];
    if (!strcmp(m, "tail")) return tail();
    if (!strcmp(m, "big") && argc > 3) return big(strtoul(argv[3], NULL, 0));
    if (!strcmp(m, "crash") && argc > 5) return crash(strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0), char_arg(argv[5]));
    if (!strcmp(m, "expect") && argc > 5) return expect(strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0), char_arg(argv[5]));
    return fprintf(stderr, "mmap_edges: unknown case or missing arguments\n"), 2;
}

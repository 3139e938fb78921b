/* Edge cases of DAXKIT_ATOMIC_MMAP (review 10, findings 20, 2, 9, 8, 7, 6, 17; mprotect), as an unmodified mmap + msync
 * program run under `daxkit run --atomic-mmap` by mmap_edges.sh. Each case checks what the kernel's mmap
 * would do plus the failure-atomic promise (a crash keeps the state of the last completed msync).
 *
 *   mmap_edges FILE tail             FILE: 5000 bytes (not a page multiple). Stores into the first and the
 *                                    last, partial page, each msync'ed: every msync succeeds (was EFBIG for
 *                                    good after the first store into the last page)
 *   mmap_edges FILE big MIB          MIB MiB of stores in one epoch (more than the engine's default log):
 *                                    the msync succeeds, and so does a later one
 *   mmap_edges FILE race [ROUNDS]   a pwrite into a page racing an msync of it (another thread's stores):
 *                                    the file keeps the last pwrite (finding 9)
 *   mmap_edges FILE pwrite-rollback [crash]  a pwrite + fsync into a page stored into since the last msync
 *                                    survives the epoch's rollback (munmap, or SIGKILL: then expect) (8)
 *   mmap_edges FILE read-into UNMANAGED  read(2) from a pipe and readv(2) from UNMANAGED (a file of 'U's
 *                                    daxkit does not manage) into protected pages of the view (7)
 *   mmap_edges FILE read-efault      run without permission for kernel userfaultfd faults: read(2) from a
 *                                    pipe into a protected page fails with EFAULT, after a store it works
 *                                    (the documented limit of 7)
 *   mmap_edges FILE mremap           FILE: two pages. A one-page view grown by mremap (MAYMOVE) is refused
 *                                    with ENOMEM or made atomic; shrunk in place it works; then an unsynced
 *                                    store + SIGKILL (expect checks it rolled back) (6)
 *   mmap_edges FILE noreplace        MAP_FIXED_NOREPLACE maps at the address asked for, or fails with EEXIST (17)
 *   mmap_edges FILE mprotect         FILE: two pages. A view made read-only and writable again stays tracked,
 *                                    msync works read-only, PROT_NONE is refused (EACCES); ends with unsynced
 *                                    stores + SIGKILL (expect checks they rolled back)
 *   mmap_edges FILE grown            FILE: one page, grown while mapped: a larger second mapping is refused
 *                                    (ENOMEM), after the first view goes it is failure-atomic; ends with SIGKILL
 *                                    (6's addendum)
 *   mmap_edges FILE crash OFF LEN C  maps the whole file, stores LEN bytes C at OFF, no msync, SIGKILLs
 *                                    itself (the script then checks with expect)
 *   mmap_edges FILE expect OFF LEN C maps and unmaps the file (recovery), then [OFF, OFF+LEN) must be C
 *                                    (C: a character, or 0 for a zero byte)
 *
 * Exit 0 pass, 1 fail, 77 skip (no userfaultfd write-protection for shared memory here: the mapping goes to
 * the kernel and nothing here is failure-atomic). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap, MAP_FIXED_NOREPLACE */
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
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
#include <sys/uio.h>
#include <unistd.h>

#include "uffd_probe.h"

#define PAGE 4096u

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

/* Skips (77) when this process cannot write-protect a shared memory page with userfaultfd. */
static void require_uffd_wp_shmem(void) {
    const char *why = uffd_wp_shmem_missing();
    if (why) printf("SKIP: no userfaultfd write-protection for shared memory here (%s)\n", why), exit(77);
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

/* Thread A pwrites a counter into bytes [0, 64) of page 0 while thread B stores into byte 2048 of that page
 * and msyncs, in a loop; then A stops and one more msync: the file's first 64 bytes must be A's last value
 * (with the kernel always; the shadow's msync journalled its stale copy of them over the file: finding 9).
 * B msyncs until A has written a few times too: at load A may not run at all during B's 1,000 msyncs -- round
 * 0 then expected A's "last value" 0 as 20 '0' digits in a file of zero bytes (session 28's one failure at load
 * 24, "the last pwrite wrote 00000000000000000000, the file holds "), and a later round raced nothing. */
static unsigned char *race_map;
static _Atomic int race_stop;
static _Atomic unsigned long race_last;

static void *race_writer(void *arg) {
    (void)arg;
    char buf[64];
    for (unsigned long i = 1; !race_stop; i++) {
        memset(buf, 0, sizeof buf);
        snprintf(buf, sizeof buf, "%020lu", i);
        if (pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) perror("pwrite"), exit(1);
        race_last = i;
    }
    return NULL;
}

static int race(int rounds) {
    CHECK(file_bytes >= 2 * PAGE, "the file must hold two pages");
    race_map = map_file();
    int lost = 0;
    for (int r = 0; r < rounds; r++) {
        race_stop = 0;
        race_last = 0;
        pthread_t t;
        CHECK(pthread_create(&t, NULL, race_writer, NULL) == 0, "pthread_create");
        int i = 0;
        for (; (i < 1000 || race_last < 10) && i < 200000; i++) {
            race_map[2048] = (unsigned char)i;
            CHECK(sync_all(race_map) == 0, "msync: %s", strerror(errno));
        }
        race_stop = 1;
        CHECK(race_last >= 10, "round %d: the pwriting thread wrote %lu times during %d msyncs", r, race_last, i);
        pthread_join(t, NULL);
        race_map[2049] = (unsigned char)r;
        CHECK(sync_all(race_map) == 0, "msync: %s", strerror(errno));
        char got[64], want[64] = {0};
        snprintf(want, sizeof want, "%020lu", race_last);
        CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got, "pread: %s", strerror(errno));
        if (memcmp(got, want, sizeof got) != 0 && !lost++)
            printf("round %d: the last pwrite wrote %.20s, the file holds %.20s, the mapping shows %.20s\n", r, want,
                   got, (const char *)race_map);
    }
    CHECK(!lost, "%d of %d rounds lost the last pwrite to an msync", lost, rounds);
    printf("race: %d rounds of pwrite racing msync in the same page, no pwrite lost\n", rounds);
    return 0;
}

/* A pwrite + fsync into a page stored into since the last msync survives the epoch's rollback: munmap
 * without msync ("unmap"), or SIGKILL and the next mapping ("crash", checked by expect): finding 8. */
static int pwrite_rollback(bool crash_after) {
    unsigned char *p = map_file();
    memset(p, 'A', PAGE);
    CHECK(sync_all(p) == 0, "msync: %s", strerror(errno));
    p[100] = 'X'; /* a store of this epoch, never msync'ed: the page is logged */
    CHECK(pwrite(fd, "W", 1, 0) == 1 && fsync(fd) == 0, "pwrite + fsync: %s", strerror(errno));
    CHECK(p[0] == 'W', "the mapping does not show the pwrite: %c", p[0]);
    if (crash_after) kill(getpid(), SIGKILL);
    CHECK(munmap(p, file_bytes) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at(0) == 'W' && byte_at(100) == 'A', "after munmap without msync the file holds %c at 0 (want W: "
          "pwrite + fsync returned), %c at 100 (want A: never msync'ed)", byte_at(0), byte_at(100));
    printf("pwrite-rollback: the rollback of the epoch kept a pwrite + fsync into its page\n");
    return 0;
}

/* read(2)/readv(2) by the kernel into a protected page of the view (a pipe, an unmanaged file): as with the
 * kernel's mapping, the bytes arrive (was EFAULT on tmpfs: finding 7); msync commits them, and a store of
 * that kind not msync'ed is rolled back at munmap like any other. */
static int read_into(const char *unmanaged) {
    unsigned char *p = map_file();
    memset(p, 'A', 2 * PAGE);
    CHECK(sync_all(p) == 0, "msync: %s", strerror(errno)); /* protected again */
    int pfd[2];
    CHECK(pipe(pfd) == 0 && write(pfd[1], "pipe-bytes", 10) == 10, "pipe: %s", strerror(errno));
    ssize_t r = read(pfd[0], p + 10, 10);
    CHECK(r == 10, "read from a pipe into the mapping: %zd (%s)", r, r < 0 ? strerror(errno) : "short");
    int ufd = open(unmanaged, O_RDONLY);
    CHECK(ufd >= 0, "open %s: %s", unmanaged, strerror(errno));
    struct iovec iov = {p + PAGE, 100};
    r = readv(ufd, &iov, 1);
    CHECK(r == 100, "readv from an unmanaged file into the mapping: %zd (%s)", r, r < 0 ? strerror(errno) : "short");
    close(ufd);
    CHECK(sync_all(p) == 0, "msync: %s", strerror(errno));
    CHECK(byte_at(10) == 'p' && byte_at(PAGE) == 'U', "file after msync: %c %c, want p U", byte_at(10), byte_at(PAGE));
    CHECK(write(pfd[1], "zzzzz", 5) == 5 && read(pfd[0], p + 20, 5) == 5, "read from a pipe again: %s", strerror(errno));
    close(pfd[0]), close(pfd[1]);
    CHECK(munmap(p, file_bytes) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at(20) == 'A', "a read() into the mapping not msync'ed survived munmap: %c", byte_at(20));
    printf("read-into: read(2) from a pipe and an unmanaged file into protected pages worked and were logged\n");
    return 0;
}

/* The documented limit without permission for kernel faults (no CAP_SYS_PTRACE, vm.unprivileged_userfaultfd
 * 0; mmap_edges.sh runs this as nobody): a read(2) by the kernel into a page not stored into since the last
 * msync fails with EFAULT; after a store into the page it works. */
static int read_efault(void) {
    unsigned char *p = map_file();
    memset(p, 'A', PAGE);
    CHECK(sync_all(p) == 0, "msync: %s", strerror(errno)); /* protected again */
    int pfd[2];
    CHECK(pipe(pfd) == 0 && write(pfd[1], "pipe-bytes", 10) == 10, "pipe: %s", strerror(errno));
    ssize_t r = read(pfd[0], p + 10, 10);
    CHECK(r < 0 && errno == EFAULT, "read from a pipe into a protected page: %zd (%s), want EFAULT (the "
          "documented limit with user-mode-only userfaultfd)", r, r < 0 ? strerror(errno) : "it worked");
    p[10] = 's'; /* a store first: the page is writable for the rest of the epoch */
    r = read(pfd[0], p + 10, 10);
    CHECK(r == 10, "read into a page stored into this epoch: %zd (%s)", r, r < 0 ? strerror(errno) : "short");
    CHECK(sync_all(p) == 0 && byte_at(10) == 'p', "msync: %s, file %c", strerror(errno), byte_at(10));
    close(pfd[0]), close(pfd[1]);
    printf("read-efault: user-mode-only userfaultfd: EFAULT into a protected page, fine after a store\n");
    return 0;
}

/* mremap of a view (python's mmap.resize: ftruncate, then mremap MAYMOVE): growing or moving it fails as the
 * kernel's may (ENOMEM), and the view stays where it was, protected and logged; shrinking it in place
 * works, the tail unmapped (finding 6). Then a store not msync'ed and SIGKILL: expect finds it rolled back. */
static int remap(void) {
    CHECK(file_bytes == 2 * PAGE, "the file must be two pages");
    unsigned char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
    p[0] = 'A';
    CHECK(msync(p, PAGE, MS_SYNC) == 0, "msync: %s", strerror(errno));
    void *q = mremap(p, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
    if (q != MAP_FAILED) { /* handled: the new mapping must be failure-atomic too */
        p = q;
        CHECK(p[0] == 'A', "the grown mapping shows %c at 0", p[0]);
        p[PAGE] = 'a';
        CHECK(msync(p, 2 * PAGE, MS_SYNC) == 0, "msync of the grown mapping: %s", strerror(errno));
        printf("mremap: grew the view to %p\n", (void *)p);
    } else {
        CHECK(errno == ENOMEM, "mremap refused with %s, want ENOMEM (as the kernel's when it cannot resize)",
              strerror(errno));
        printf("mremap: growing the view refused with ENOMEM; the view stays\n");
        unsigned char *r = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); /* the program's fallback */
        CHECK(r != MAP_FAILED, "mmap of both pages: %s", strerror(errno));
        CHECK(munmap(p, PAGE) == 0, "munmap of the old view: %s", strerror(errno));
        p = r;
    }
    q = mremap(p, 2 * PAGE, PAGE, 0); /* shrink in place */
    CHECK(q == p, "mremap shrinking in place returned %p (%s), want %p", q, q == MAP_FAILED ? strerror(errno) : "",
          (void *)p);
    p[1] = 'B';
    CHECK(msync(p, PAGE, MS_SYNC) == 0, "msync after the shrink: %s", strerror(errno));
    CHECK(byte_at(1) == 'B', "msync after the shrink did not commit the store: %c", byte_at(1));
    p[2] = 'C'; /* never msync'ed: a crash must take it back */
    kill(getpid(), SIGKILL);
    return 1;
}

/* mmap with MAP_FIXED_NOREPLACE: at exactly the address asked for, or failing with EEXIST (finding 17). An
 * address returned must be failure-atomic: a store not msync'ed is rolled back by munmap. */
static int noreplace(void) {
    void *want = (void *)0x600000000000ull;
    unsigned char *p = mmap(want, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED) {
        CHECK(errno == EEXIST, "MAP_FIXED_NOREPLACE failed with %s, want EEXIST", strerror(errno));
        printf("noreplace: refused with EEXIST\n");
        return 0;
    }
    CHECK(p == want, "MAP_FIXED_NOREPLACE at %p returned %p", want, (void *)p);
    p[0] = 'N';
    CHECK(munmap(p, PAGE) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at(0) == 0, "a store not msync'ed through the MAP_FIXED_NOREPLACE mapping survived munmap");
    printf("noreplace: mapped at the address asked for, failure-atomic\n");
    return 0;
}

/* mprotect of a view (FILE: two pages): made read-only and writable again, its pages are still tracked (a store
 * not msync'ed is rolled back: by munmap here, by the crash after it, checked by expect 0 1 A); msync works while
 * it is read-only; PROT_NONE is refused with EACCES; munmap of a read-only view rolls back without a fault. */
static int protect(void) {
    CHECK(file_bytes >= 2 * PAGE, "the file must hold two pages");
    unsigned char *p = map_file();
    p[0] = 'A', p[PAGE] = 'A';
    CHECK(sync_all(p) == 0, "msync: %s", strerror(errno));
    p[200] = 'X'; /* unsynced, then the view made read-only: munmap must still roll it back */
    CHECK(mprotect(p, file_bytes, PROT_READ) == 0, "mprotect PROT_READ: %s", strerror(errno));
    CHECK(munmap(p, file_bytes) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at(200) == 0, "a store not msync'ed survived munmap of the read-only view: %d", byte_at(200));
    p = map_file();
    p[300] = 'M';
    CHECK(mprotect(p, file_bytes, PROT_READ) == 0, "mprotect PROT_READ: %s", strerror(errno));
    CHECK(sync_all(p) == 0, "msync of a read-only view: %s", strerror(errno));
    CHECK(byte_at(300) == 'M', "the store msync'ed while the view was read-only is not in the file");
    CHECK(mprotect(p, PAGE, PROT_NONE) == -1 && errno == EACCES, "mprotect PROT_NONE: want EACCES, got %s",
          strerror(errno));
    CHECK(mprotect(p, file_bytes, PROT_READ | PROT_WRITE) == 0, "mprotect back to RW: %s", strerror(errno));
    p[0] = 'B';    /* write-protected since the msync: must be logged although the view was read-only meanwhile */
    p[PAGE] = 'B'; /* the same, the second page */
    printf("protect: mprotect PROT_READ and back kept the pages tracked (checked after the crash), PROT_NONE "
           "refused with EACCES\n");
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 1;
}

/* A file grown while mapped (FILE: one page): a second, larger mapping would alias the failure-atomic one and is
 * refused with ENOMEM (review 10, finding 6's addendum: a store + msync through it was undone by the other's
 * rollback); once the first view is gone, the larger mapping is failure-atomic (a store not msync'ed into its
 * second page + SIGKILL: expect 5000 1 0; the msync'ed one kept: expect 4096 1 K). */
static int grown(void) {
    CHECK(file_bytes == PAGE, "the file must be one page");
    unsigned char *p = map_file();
    p[0] = 'A';
    CHECK(sync_all(p) == 0, "msync: %s", strerror(errno));
    CHECK(ftruncate(fd, 2 * PAGE) == 0, "ftruncate: %s", strerror(errno));
    unsigned char *q = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(q == MAP_FAILED && errno == ENOMEM, "a larger mapping beside the failure-atomic one: want ENOMEM, got %s",
          q == MAP_FAILED ? strerror(errno) : "a mapping");
    p[100] = 'X'; /* unsynced: rolled back by the munmap */
    CHECK(munmap(p, PAGE) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at(0) == 'A' && byte_at(100) == 0, "file: %c %d, want A 0", byte_at(0), byte_at(100));
    q = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(q != MAP_FAILED, "the larger mapping after the first view went: %s", strerror(errno));
    q[PAGE] = 'K';
    CHECK(msync(q, 2 * PAGE, MS_SYNC) == 0, "msync: %s", strerror(errno));
    q[5000] = 'Y'; /* unsynced, then SIGKILL */
    printf("grown: the larger mapping refused with ENOMEM while the first view lived, failure-atomic after\n");
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 1;
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
    if (!strcmp(m, "mremap")) return remap();
    if (!strcmp(m, "noreplace")) return noreplace();
    if (!strcmp(m, "mprotect")) return protect();
    if (!strcmp(m, "grown")) return grown();
    if (!strcmp(m, "race")) return race(argc > 3 ? atoi(argv[3]) : 10);
    if (!strcmp(m, "pwrite-rollback")) return pwrite_rollback(argc > 3 && !strcmp(argv[3], "crash"));
    if (!strcmp(m, "read-into") && argc > 3) return read_into(argv[3]);
    if (!strcmp(m, "read-efault")) return read_efault();
    if (!strcmp(m, "crash") && argc > 5) return crash(strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0), char_arg(argv[5]));
    if (!strcmp(m, "expect") && argc > 5) return expect(strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0), char_arg(argv[5]));
    return fprintf(stderr, "mmap_edges: unknown case or missing arguments\n"), 2;
}

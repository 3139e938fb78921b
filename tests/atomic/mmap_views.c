/* An unmodified mmap + msync program for DAXKIT_ATOMIC_MMAP views (run under `daxkit run --atomic-mmap`,
 * by mmap_views.sh). The FILE must exist, 1 MiB of zeros.
 *
 *   mmap_views FILE split      munmap of part of a view keeps the rest protected and tracked: stores into
 *                              the rest are committed by msync, rolled back when the last piece goes
 *   mmap_views FILE race SECS  one thread maps and unmaps the file in a loop while another msyncs the
 *                              mapping it saw last (a munmap of the last view during an msync)
 *   mmap_views FILE coherence  what read() and pwrite() of the file see while it is mapped: the mapping
 *                              sees pwrite's bytes (pages stored into, pages only read, pages not touched)
 *                              and msync keeps them; read() sees stores at once (the file's own mapping,
 *                              tmpfs) or at the next msync (the shmem shadow: XFS, ext4, or forced by
 *                              DAXKIT_ATOMIC_MMAP_SHADOW=always)
 *
 * Exit 0 pass, 1 fail, 77 skip. The skip is decided up front by a probe of userfaultfd write-protection on
 * shared memory (what DAXKIT_ATOMIC_MMAP needs for a tmpfs file); where the probe succeeds, a store that the
 * last munmap did not roll back fails the test (DAXKIT_ATOMIC_MMAP off, or the mapping went to the kernel). */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uffd_probe.h"

#define FILE_BYTES (1u << 20)
#define PAGE 4096u

static int fd;

static unsigned char *map_file(void) {
    unsigned char *p = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) perror("mmap"), exit(1);
    return p;
}

static unsigned char byte_at(off_t off) {
    unsigned char c;
    if (pread(fd, &c, 1, off) != 1) perror("pread"), exit(1);
    return c;
}

/* Where the probe says the mapping can be failure-atomic, a store not msync'ed must be rolled back by the
 * munmap of the last view (DAXKIT_ATOMIC_MMAP); otherwise the test skips, saying why. */
static void require_atomic_mapping(void) {
    const char *missing = uffd_wp_shmem_missing();
    if (missing) {
        printf("SKIP: no userfaultfd write-protection for shared memory here (%s): DAXKIT_ATOMIC_MMAP passes the "
               "mapping to the kernel\n", missing);
        exit(77);
    }
    unsigned char *p = map_file();
    p[0] = 'x';
    munmap(p, FILE_BYTES);
    if (byte_at(0) != 0) {
        printf("FAIL: userfaultfd write-protects shared memory here, yet a store not msync'ed survived the last "
               "munmap: DAXKIT_ATOMIC_MMAP is off or mapped the file by the kernel (see atomic_mmap_kernel)\n");
        exit(1);
    }
}

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); return 1; } \
    } while (0)

/* The program stores into a shmem shadow of the file, not into the file's own mapping. */
static bool shadowed(void) {
    const char *sh = getenv("DAXKIT_ATOMIC_MMAP_SHADOW");
    struct statfs st;
    if (sh && !strcmp(sh, "always")) return true;
    return fstatfs(fd, &st) == 0 && st.f_type != TMPFS_MAGIC && st.f_type != HUGETLBFS_MAGIC;
}

static int split(void) {
    unsigned char *p = map_file();
    p[0] = 'a';
    CHECK(msync(p, FILE_BYTES, MS_SYNC) == 0, "msync: %s", strerror(errno));
    CHECK(munmap(p + FILE_BYTES / 2, FILE_BYTES / 2) == 0, "munmap of the upper half: %s", strerror(errno));
    p[PAGE] = 'b'; /* the lower half is still mapped, protected and logged */
    CHECK(msync(p, FILE_BYTES / 2, MS_SYNC) == 0, "msync of the lower half: %s", strerror(errno));
    CHECK(munmap(p + PAGE, PAGE) == 0, "munmap of page 1: %s", strerror(errno)); /* a hole: two pieces */
    p[0] = 'd', p[2 * PAGE] = 'c';
    CHECK(msync(p + 2 * PAGE, PAGE, MS_SYNC) == 0, "msync of the upper piece: %s", strerror(errno));
    p[2 * PAGE] = 'e'; /* never msync'ed */
    CHECK(munmap(p, PAGE) == 0, "munmap of page 0: %s", strerror(errno));
    /* The file's own mapping (tmpfs): the store is in the file already. The shadow (XFS, ext4, or forced by
     * DAXKIT_ATOMIC_MMAP_SHADOW=always): read() sees the file at its last msync until the next one. */
    bool shadow = shadowed();
    CHECK(byte_at(2 * PAGE) == (shadow ? 'c' : 'e'), "read() of a page stored into (%s): %c", shadow ? "shadow" : "no shadow",
          byte_at(2 * PAGE));
    CHECK(munmap(p + 2 * PAGE, FILE_BYTES / 2 - 2 * PAGE) == 0, "munmap of the last piece: %s", strerror(errno));
    CHECK(byte_at(0) == 'd' && byte_at(PAGE) == 'b' && byte_at(2 * PAGE) == 'c',
          "file holds %c %c %c at pages 0-2; want d b c (the last msync'ed state)", byte_at(0), byte_at(PAGE),
          byte_at(2 * PAGE));
    printf("split: trimmed and split views stayed tracked; the last munmap rolled back the unsynced store\n");
    return 0;
}

static int put(off_t off, char c) { return pwrite(fd, &c, 1, off) == 1 ? 0 : -1; }

static int coherence(void) {
    bool shadow = shadowed();
    unsigned char *p = map_file();
    unsigned char seen = p[0];              /* page 0: read only (filled, protected) */
    p[PAGE] = 's';                          /* page 1: stored into */
    CHECK(byte_at(PAGE) == (shadow ? 0 : 's'), "read() of a stored page before msync: %c", byte_at(PAGE));
    CHECK(put(1, 'V') == 0 && put(PAGE + 1, 'W') == 0 && put(2 * PAGE, 'U') == 0, "pwrite: %s", strerror(errno));
    CHECK(p[1] == 'V', "a page only read does not show pwrite's byte: %d", p[1]);
    CHECK(p[PAGE + 1] == 'W' && p[PAGE] == 's', "a stored page: pwrite's byte %d, the store %d", p[PAGE + 1], p[PAGE]);
    CHECK(p[2 * PAGE] == 'U', "an untouched page does not show pwrite's byte: %d", p[2 * PAGE]);
    p[PAGE + 2] = 't';
    CHECK(msync(p, FILE_BYTES, MS_SYNC) == 0, "msync: %s", strerror(errno));
    CHECK(byte_at(PAGE) == 's' && byte_at(PAGE + 1) == 'W' && byte_at(PAGE + 2) == 't' && byte_at(1) == 'V' &&
          byte_at(2 * PAGE) == 'U', "after msync the file holds %c %c %c %c %c; want s W t V U", byte_at(PAGE),
          byte_at(PAGE + 1), byte_at(PAGE + 2), byte_at(1), byte_at(2 * PAGE));
    p[3 * PAGE] = 'x'; /* never msync'ed */
    CHECK(munmap(p, FILE_BYTES) == 0, "munmap: %s", strerror(errno));
    CHECK(byte_at(3 * PAGE) == 0 && byte_at(PAGE + 1) == 'W', "after munmap: %d %c", byte_at(3 * PAGE), byte_at(PAGE + 1));
    printf("coherence (%s): pwrite's bytes seen by the mapping and kept by msync; read() saw a store %s\n",
           shadow ? "shadow" : "the file's mapping", shadow ? "at msync" : "at once");
    (void)seen;
    return 0;
}

/* The mapping thread dirties every page (so an msync has work to do), publishes the mapping, waits until the
 * msync thread is about to call msync on it (again and again, until the mapping is gone), then unmaps it after
 * a varying delay: the munmap of the last view lands during an msync. */
static unsigned char *_Atomic seen;
static _Atomic long published, acked; /* rounds: mapping published, msync about to be called on it */
static _Atomic int stop;
static _Atomic long msyncs_ours;

static void *msync_loop(void *arg) {
    (void)arg;
    while (!stop) {
        long r = published;
        if (r == acked) continue;
        unsigned char *p = seen;
        acked = r;
        for (int i = 0; i < 2000 && msync(p, FILE_BYTES, MS_SYNC) == 0; i++) msyncs_ours++; /* until ENOMEM */
    }
    return NULL;
}

static int race(double secs) {
    pthread_t t;
    pthread_create(&t, NULL, msync_loop, NULL);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long rounds = 0;
    do {
        unsigned char *p = map_file();
        for (unsigned pg = 0; pg < FILE_BYTES / PAGE; pg++) p[pg * PAGE] = (unsigned char)rounds;
        seen = p;
        published = rounds + 1;
        while (acked != rounds + 1) {}
        for (volatile int spin = 0; spin < (int)(rounds % 8) * 40; spin++) {}
        if (munmap(p, FILE_BYTES) != 0) perror("munmap"), exit(1);
        rounds++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    stop = 1;
    pthread_join(t, NULL);
    printf("race: %ld map/munmap rounds, each unmapping during a burst of msyncs (%ld msyncs), no crash\n",
           rounds, (long)msyncs_ours);
    return rounds > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: mmap_views FILE split|race [SECS]|coherence\n"), 2;
    fd = open(argv[1], O_RDWR);
    if (fd < 0) return perror("open"), 1;
    require_atomic_mapping();
    if (!strcmp(argv[2], "split")) return split();
    if (!strcmp(argv[2], "coherence")) return coherence();
    if (!strcmp(argv[2], "race")) return race(argc > 3 ? atof(argv[3]) : 3);
    return 2;
}

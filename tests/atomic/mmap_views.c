/* An unmodified mmap + msync program for DAXKIT_ATOMIC_MMAP views (run under `daxkit run --atomic-mmap`,
 * by mmap_views.sh). The FILE must exist, 1 MiB of zeros.
 *
 *   mmap_views FILE split      munmap of part of a view keeps the rest protected and tracked: stores into
 *                              the rest are committed by msync, rolled back when the last piece goes
 *   mmap_views FILE race SECS  one thread maps and unmaps the file in a loop while another msyncs the
 *                              mapping it saw last (a munmap of the last view during an msync)
 *
 * Exit 0 pass, 1 fail, 77 skip (the mapping is not failure-atomic here: no userfaultfd write-protection). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

/* A store not msync'ed is rolled back by the munmap of the last view only under DAXKIT_ATOMIC_MMAP. */
static void skip_unless_atomic(void) {
    unsigned char *p = map_file();
    p[0] = 'x';
    munmap(p, FILE_BYTES);
    if (byte_at(0) != 0) {
        printf("SKIP: the mapping is not failure-atomic here (no userfaultfd write-protection for this file)\n");
        exit(77);
    }
}

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); return 1; } \
    } while (0)

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
    CHECK(byte_at(2 * PAGE) == 'e', "a store into a view still mapped is visible to read()");
    CHECK(munmap(p + 2 * PAGE, FILE_BYTES / 2 - 2 * PAGE) == 0, "munmap of the last piece: %s", strerror(errno));
    CHECK(byte_at(0) == 'd' && byte_at(PAGE) == 'b' && byte_at(2 * PAGE) == 'c',
          "file holds %c %c %c at pages 0-2; want d b c (the last msync'ed state)", byte_at(0), byte_at(PAGE),
          byte_at(2 * PAGE));
    printf("split: trimmed and split views stayed tracked; the last munmap rolled back the unsynced store\n");
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
    if (argc < 3) return fprintf(stderr, "usage: mmap_views FILE split|race [SECS]\n"), 2;
    fd = open(argv[1], O_RDWR);
    if (fd < 0) return perror("open"), 1;
    skip_unless_atomic();
    if (!strcmp(argv[2], "split")) return split();
    if (!strcmp(argv[2], "race")) return race(argc > 3 ? atof(argv[3]) : 3);
    return 2;
}

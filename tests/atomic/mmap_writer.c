/* An unmodified mmap + msync program for the DAXKIT_ATOMIC_MMAP tests (no daxkit API): it maps its file
 * MAP_SHARED, stores random bytes at random places (some across page boundaries) and calls msync(MS_SYNC)
 * every few stores.
 *
 *   mmap_writer FILE SEED OPS [MSYNC_EVERY]
 *
 * On stdout (one write per line): "start HASH SIZE" for the content found once mapped (after the engine's
 * recovery), "pending HASH SIZE" before each msync, "synced HASH SIZE" after it. MMAP_WRITER_QUIET=1: nothing
 * (bench/atomic_posix.sh times it). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rng;
static uint64_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static int quiet; /* MMAP_WRITER_QUIET=1: no hashes (benchmarks) */

static void say(const char *what, const unsigned char *p, uint64_t size) {
    if (quiet) return;
    uint64_t h = 14695981039346656037ull;
    for (uint64_t i = 0; i < size; i++) h = (h ^ p[i]) * 1099511628211ull;
    char line[96];
    int n = snprintf(line, sizeof line, "%s %016llx %llu\n", what, (unsigned long long)h, (unsigned long long)size);
    if (write(1, line, (size_t)n) != n) exit(2);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: mmap_writer FILE SEED OPS [MSYNC_EVERY]\n");
        return 2;
    }
    rng = strtoull(argv[2], NULL, 0) * 2654435761u + 1;
    long ops = atol(argv[3]);
    int every = argc > 4 ? atoi(argv[4]) : 5;
    quiet = getenv("MMAP_WRITER_QUIET") != NULL;
    int fd = open(argv[1], O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror("open");
        return 1;
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    say("start", p, size);
    for (long i = 1; i <= ops; i++) {
        uint64_t n = 1 + next_rand() % 300, off = next_rand() % (size - n);
        unsigned char c = (unsigned char)('a' + next_rand() % 26);
        memset(p + off, c, n);
        if (i % every == 0 || i == ops) {
            say("pending", p, size);
            if (msync(p, size, MS_SYNC) != 0) {
                perror("msync");
                return 1;
            }
            say("synced", p, size);
        }
    }
    if (munmap(p, size) != 0 || close(fd) != 0) return 1;
    return 0;
}

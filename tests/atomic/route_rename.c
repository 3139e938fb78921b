/* DAXKIT_ATOMIC: a routed file renamed while open keeps its log (named by the file, not the path), and a
 * process killed mid-transaction is recovered at the next library start-up, before the program runs.
 *
 *   route_rename write A B   (under daxkit run --atomic): writes A, fsync, renames A to B, overwrites part
 *                            of B and appends, fsync (the committed state), then overwrites and appends more
 *                            without fsync, prints "ready" and waits to be killed
 *   route_rename check B [A] stat + read B (ROUTE_RENAME_OPEN_FIRST: open, then fstat): exit 0 when it is exactly the committed state, 1 otherwise
 *                            (prints what differs); also 1 when A exists again
 * The bytes are a function of their offset and the step, so both sides know the committed state. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BASE_BYTES (300u << 10)
#define OVER_OFF 5000u
#define OVER_BYTES 70000u
#define COMMITTED_BYTES (BASE_BYTES + 9000u)

static char byte_at(uint64_t off, int step) { return (char)('a' + (off * 7 + (uint64_t)step * 13) % 26); }

static void fill(char *buf, uint64_t off, size_t n, int step) {
    for (size_t i = 0; i < n; i++) buf[i] = byte_at(off + i, step);
}

static int put(int fd, uint64_t off, size_t n, int step) {
    char *b = malloc(n);
    fill(b, off, n, step);
    int ok = b && pwrite(fd, b, n, (off_t)off) == (ssize_t)n;
    free(b);
    return ok ? 0 : -1;
}

/* The committed state's byte at off. */
static char committed_at(uint64_t off) {
    if (off >= OVER_OFF && off < OVER_OFF + OVER_BYTES) return byte_at(off, 2);
    if (off >= BASE_BYTES) return byte_at(off, 3);
    return byte_at(off, 1);
}

static int do_write(const char *a, const char *b) {
    int fd = open(a, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || put(fd, 0, BASE_BYTES, 1) || fsync(fd)) return perror("write A"), 2;
    if (rename(a, b)) return perror("rename"), 2;
    if (put(fd, OVER_OFF, OVER_BYTES, 2) || put(fd, BASE_BYTES, COMMITTED_BYTES - BASE_BYTES, 3) || fdatasync(fd))
        return perror("write B"), 2;
    /* not committed: must vanish */
    if (put(fd, 100, 60000, 4) || put(fd, COMMITTED_BYTES, 123456, 5)) return perror("write B again"), 2;
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
}

static int do_check(const char *a, const char *b) {
    struct stat st;
    if ((getenv("ROUTE_RENAME_OPEN_FIRST") ? 0 : stat(b, &st)) != 0) return perror("stat B"), 1;
    if (a && access(a, F_OK) == 0) return printf("check: %s exists again\n", a), 1;
    int fd = open(b, O_RDONLY); /* with ROUTE_RENAME_OPEN_FIRST the open recovers (the route), then fstat */
    if (fd < 0 || fstat(fd, &st) != 0) return perror("open B"), 1;
    if ((uint64_t)st.st_size != COMMITTED_BYTES) {
        printf("check: %s has size %lld, the committed size is %u\n", b, (long long)st.st_size, COMMITTED_BYTES);
        return 1;
    }
    char *buf = malloc(COMMITTED_BYTES + 1);
    ssize_t r = fd < 0 || !buf ? -1 : pread(fd, buf, COMMITTED_BYTES + 1, 0);
    if (r != (ssize_t)COMMITTED_BYTES) return printf("check: read %zd bytes of %s\n", r, b), 1;
    for (uint64_t i = 0; i < COMMITTED_BYTES; i++)
        if (buf[i] != committed_at(i)) {
            printf("check: %s byte %llu is '%c', committed '%c'\n", b, (unsigned long long)i, buf[i], committed_at(i));
            return 1;
        }
    printf("check: %s is the committed state (%u bytes)\n", b, COMMITTED_BYTES);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "write")) return do_write(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "check")) return do_check(argc > 3 ? argv[3] : NULL, argv[2]);
    fprintf(stderr, "usage: route_rename write A B | check B [A]\n");
    return 2;
}

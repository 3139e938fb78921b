/* An unmodified POSIX program for the DAXKIT_ATOMIC tests (no daxkit API): it keeps a model of its file in
 * memory and, from a seed, overwrites, appends, writes past the end (holes), truncates (also by a second
 * open with O_TRUNC) and reads back
 * (every read is compared with the model: a mismatch exits 1), with an fsync every few operations.
 *
 *   route_writer FILE SEED OPS [SYNC_EVERY]
 *
 * On stdout (one write per line, so a SIGKILL never cuts one): "start HASH SIZE" for the content found at
 * open (after the engine's recovery), "pending HASH SIZE" before each fsync and "synced HASH SIZE" after it.
 * The model starts from the file as found, so a driver can kill it and start it again on the same file.
 * ROUTE_WRITER_HOLD_UNTIL=PATH: keep the file open before closing it until PATH exists (at most 30 s): the
 * driver of the multi-process test says when.
 * ROUTE_WRITER_NO_REOPEN: no O_TRUNC reopens (each is a commit point): the fsyncs alone end the groups. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rng;
static uint64_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static char *model;
static uint64_t size, cap;

static void model_reserve(uint64_t n) {
    if (n <= cap) return;
    uint64_t c = cap ? cap : 4096;
    while (c < n) c *= 2;
    model = realloc(model, c);
    if (!model) exit(2);
    memset(model + cap, 0, c - cap);
    cap = c;
}

static uint64_t hash_model(void) {
    uint64_t h = 14695981039346656037ull;
    for (uint64_t i = 0; i < size; i++) h = (h ^ (unsigned char)model[i]) * 1099511628211ull;
    return h;
}

static void say(const char *what) {
    char line[96];
    int n = snprintf(line, sizeof line, "%s %016llx %llu\n", what, (unsigned long long)hash_model(),
                     (unsigned long long)size);
    if (write(1, line, (size_t)n) != n) exit(2);
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void check_read(int fd, uint64_t off, uint64_t n) {
    char *buf = malloc(n + 1);
    ssize_t r = pread(fd, buf, n + 1, (off_t)off);
    uint64_t want = off >= size ? 0 : (size - off < n + 1 ? size - off : n + 1);
    if (r < 0) die("pread");
    if ((uint64_t)r != want || memcmp(buf, model + off, want) != 0) {
        uint64_t d = 0, e;
        while (d < want && (uint64_t)r == want && buf[d] == model[off + d]) d++;
        for (e = d; e < want && buf[e] != model[off + e]; e++) {
        }
        fprintf(stderr, "route_writer: read at %llu of %llu: got %zd bytes, want %llu (size %llu); first difference "
                "at file offset %llu, %llu bytes: got %02x want %02x\n", (unsigned long long)off,
                (unsigned long long)n + 1, r, (unsigned long long)want, (unsigned long long)size,
                (unsigned long long)(off + d), (unsigned long long)(e - d), (unsigned char)buf[d],
                (unsigned char)model[off + d]);
        exit(1);
    }
    free(buf);
}

static void load(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) die("fstat");
    size = (uint64_t)st.st_size;
    model_reserve(size + 1);
    for (uint64_t done = 0; done < size;) {
        ssize_t r = read(fd, model + done, size - done);
        if (r <= 0) die("read at start");
        done += (uint64_t)r;
    }
    char extra;
    if (read(fd, &extra, 1) != 0) {
        fprintf(stderr, "route_writer: bytes past the size fstat reported\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: route_writer FILE SEED OPS [SYNC_EVERY]\n");
        return 2;
    }
    rng = strtoull(argv[2], NULL, 0) * 2654435761u + 1;
    long ops = atol(argv[3]);
    int every = argc > 4 ? atoi(argv[4]) : 5;
    int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
    if (fd < 0) die("open");
    load(fd);
    say("start");
    char buf[8192];
    for (long i = 1; i <= ops; i++) {
        uint64_t r = next_rand() % 100;
        for (size_t k = 0; k < sizeof buf; k++) buf[k] = (char)('a' + (next_rand() % 26));
        if (getenv("ROUTE_WRITER_TRACE")) fprintf(stderr, "op %ld r %llu size %llu\n", i, (unsigned long long)r, (unsigned long long)size);
        if (r < 45) { /* overwrite, or write past the end (a hole) */
            uint64_t off = next_rand() % (size + 6000), n = 1 + next_rand() % 600;
            if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) die("pwrite");
            model_reserve(off + n);
            if (off > size) memset(model + size, 0, off - size);
            memcpy(model + off, buf, n);
            if (off + n > size) size = off + n;
        } else if (r < 70) { /* append through the file offset */
            uint64_t n = 1 + next_rand() % 3000;
            if (lseek(fd, 0, SEEK_END) != (off_t)size) die("lseek END disagrees with the model");
            if (write(fd, buf, n) != (ssize_t)n) die("write");
            model_reserve(size + n);
            memcpy(model + size, buf, n);
            size += n;
        } else if (r < 76) { /* truncate, shorter or longer */
            uint64_t to = next_rand() % (size + size / 4 + 4096);
            if (ftruncate(fd, (off_t)to) != 0) die("ftruncate");
            model_reserve(to);
            if (to > size) memset(model + size, 0, to - size);
            size = to;
        } else if (r < 78 && !getenv("ROUTE_WRITER_NO_REOPEN")) { /* open it again with O_TRUNC (a commit point, like the close that follows) */
            size = 0;
            say("pending");
            int t = open(argv[1], O_RDWR | O_TRUNC);
            if (t < 0) die("open O_TRUNC");
            struct stat st;
            if (fstat(fd, &st) != 0 || st.st_size != 0) {
                fprintf(stderr, "route_writer: size %lld after O_TRUNC\n", (long long)st.st_size);
                return 1;
            }
            if (close(t) != 0) die("close");
            say("synced");
        } else { /* read back */
            uint64_t off = size ? next_rand() % (size + 100) : 0;
            check_read(fd, off, 1 + next_rand() % 5000);
            struct stat st;
            if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != size) {
                fprintf(stderr, "route_writer: fstat size %lld, model %llu\n", (long long)st.st_size,
                        (unsigned long long)size);
                return 1;
            }
        }
        if (i % every == 0 || i == ops) {
            say("pending");
            if ((i / every) % 3 == 0 ? fdatasync(fd) : fsync(fd)) die("fsync");
            say("synced");
        }
    }
    check_read(fd, 0, size);
    const char *until = getenv("ROUTE_WRITER_HOLD_UNTIL");
    struct stat st;
    for (int ms = 0; until && ms < 30000 && stat(until, &st) != 0; ms += 5) usleep(5000);
    if (close(fd) != 0) die("close");
    return 0;
}

/* Small appends with an fdatasync every N -- the shape of a write-ahead log or AOF written by a program
 * that syncs every operation (redis appendfsync always, db_bench fillsync, a WAL commit) -- through whatever
 * the process resolves (the kernel, or daxkit when preloaded), measured over the pass only: wall time and
 * process CPU time (all threads), one CSV row:
 *   variant,bs,ops,sync_every,ops_per_s,cpu_ns_per_op,wall_s
 *
 *   dk_bench_append_sync DIR VARIANT BS OPS SYNC_EVERY [append|plain]
 * `append` (default) opens the file O_APPEND (redis); `plain` writes at the descriptor's offset (RocksDB's
 * WAL). The file is created empty; afterwards its size and a sample of records are checked (exit 1 when
 * wrong). Exit 0, 1 a call failed or the content is wrong, 2 usage. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"


int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: dk_bench_append_sync DIR VARIANT BS OPS SYNC_EVERY [append|plain]\n");
        return 2;
    }
    size_t bs = strtoul(argv[3], NULL, 0);
    uint32_t ops = (uint32_t)strtoul(argv[4], NULL, 0), every = (uint32_t)strtoul(argv[5], NULL, 0);
    int oflags = O_WRONLY | O_CREAT | O_TRUNC | (argc > 6 && !strcmp(argv[6], "plain") ? 0 : O_APPEND);
    if (bs < 8 || bs > (1u << 20) || !ops || !every) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/append_sync.log", argv[1]);
    int fd = open(path, oflags, 0644);
    char *buf = malloc(bs);
    if (fd < 0 || !buf) return 1;
    memset(buf, 'r', bs);
    uint64_t t0 = now_ns(), c0 = cpu_ns();
    for (uint32_t i = 0; i < ops; i++) {
        memcpy(buf, &i, sizeof i);
        if (write(fd, buf, bs) != (ssize_t)bs) return 1;
        if ((i + 1) % every == 0 && fdatasync(fd) != 0) return 1;
    }
    uint64_t wall = now_ns() - t0, cpu = cpu_ns() - c0;
    if (fdatasync(fd) != 0 || close(fd) != 0) return 1;
    /* The content, read back by a fresh descriptor: size, and every 97th record's number. */
    struct stat st;
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size != (uint64_t)ops * bs) {
        fprintf(stderr, "dk_bench_append_sync: %s: wrong size\n", path);
        return 1;
    }
    for (uint32_t i = 0; i < ops; i += 97) {
        uint32_t got;
        if (pread(fd, &got, sizeof got, (off_t)((uint64_t)i * bs)) != sizeof got || got != i) {
            fprintf(stderr, "dk_bench_append_sync: %s: record %u wrong\n", path, i);
            return 1;
        }
    }
    close(fd);
    unlink(path);
    printf("%s,%zu,%u,%u,%.0f,%.0f,%.4f\n", argv[2], bs, ops, every, ops / (wall / 1e9), (double)cpu / ops, wall / 1e9);
    return 0;
}

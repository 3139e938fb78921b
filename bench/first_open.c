/* A file's first open in a process (session 11: what recovery by directory costs it, docs/benchmarks.md):
 * opens and closes DIR/d<i % 16>/s/f<i> for i < N, each once, by absolute name or (rel) by a name relative
 * to DIR as the working directory. `first_open DIR N make` creates the files first (run once, without daxkit).
 * Time it with `perf stat -e task-clock` under LD_PRELOAD=libdaxkit.so DAXKIT_DIR=DIR. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: first_open DIR N [abs|rel|make]\n");
        return 2;
    }
    const char *dir = argv[1], *how = argc > 3 ? argv[3] : "abs";
    int n = atoi(argv[2]);
    bool rel = !strcmp(how, "rel"), make = !strcmp(how, "make");
    char p[4096];
    if (make)
        for (int d = 0; d < 16; d++) {
            snprintf(p, sizeof p, "%s/d%d", dir, d);
            mkdir(p, 0755);
            snprintf(p, sizeof p, "%s/d%d/s", dir, d);
            mkdir(p, 0755);
        }
    if (rel && chdir(dir) != 0) return 2;
    for (int i = 0; i < n; i++) {
        if (rel) snprintf(p, sizeof p, "d%d/s/f%d", i % 16, i);
        else snprintf(p, sizeof p, "%s/d%d/s/f%d", dir, i % 16, i);
        int fd = open(p, make ? O_RDWR | O_CREAT : O_RDWR, 0644);
        if (fd < 0) {
            perror(p);
            return 1;
        }
        close(fd);
    }
    return 0;
}

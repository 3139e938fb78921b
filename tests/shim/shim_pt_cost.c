/* shim_pt_cost ITERS [threads] -- the pass-through calls on descriptors the library does not manage, for
 * pt_cost.sh to count under callgrind: each iteration makes 9 calls -- read, pread, readv and lseek of
 * /dev/zero, write, pwrite and writev to /dev/null, a write and a read over a socket pair. "threads": a thread
 * is made (and joined) first, so the program's first pthread_create has vacated every number with no file of
 * the library's on it (upath/fdtab.c: up_program_threads_begin) -- their first writes take the vacant path
 * once, then settle. Exit 0, or 1 when a call fails. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define CALLS_PER_ITER 9

static void *nothing(void *arg) { return arg; }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shim_pt_cost ITERS [threads]\n");
        return 1;
    }
    long n = atol(argv[1]);
    int z = open("/dev/zero", O_RDONLY), nul = open("/dev/null", O_WRONLY), sp[2];
    if (z < 0 || nul < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) {
        perror("shim_pt_cost: setup");
        return 1;
    }
    if (argc > 2 && strcmp(argv[2], "threads") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
    }
    char b[64];
    struct iovec v[2] = {{b, 32}, {b + 32, 32}};
    for (long i = 0; i < n; i++) {
        if (read(z, b, sizeof b) != 64 || pread(z, b, sizeof b, 0) != 64 || readv(z, v, 2) != 64 ||
            lseek(z, 0, SEEK_SET) < 0 || write(nul, b, sizeof b) != 64 || pwrite(nul, b, sizeof b, 0) != 64 ||
            writev(nul, v, 2) != 64 || write(sp[0], b, sizeof b) != 64 || read(sp[1], b, sizeof b) != 64) {
            perror("shim_pt_cost: a call failed");
            return 1;
        }
    }
    printf("%ld iterations of %d calls\n", n, CALLS_PER_ITER);
    return 0;
}

/* An open must not wait for another thread's blocked write through a number that a closed managed file left
 * (review 15, finding 6, on the vacated-number fix of session 15: upath/vacant.c, fdtab.c up_fd_opening).
 * A second thread writes two managed files (served: it holds a reader record, so their closes vacate the
 * numbers); main closes them; pipe() takes both numbers; the thread writes 256 KiB into the pipe and blocks
 * (nobody reads yet); main keeps a dup of the write end, closes it, and opens /dev/null -- which gets the
 * number -- under a 5 s alarm, then reads the pipe so the writer ends. With the write named for its whole
 * kernel call the open waited for it for ever (the alarm: exit 1); the kernel's open never waits for another
 * thread's write. Standalone (no shim_test.h): also built by hand against another library. argv: DIR. */
#ifndef _GNU_SOURCE /* (the build defines it; by hand, this does) */
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wait_in_syscall.h"

static int wfd = -1, fa = -1, fb = -1;
static volatile int phase;

static void on_alrm(int s) {
    (void)s;
    static const char m[] = "FAIL: open(/dev/null) waited 5 s for another thread's blocked pipe write through a vacated number\n";
    syscall(SYS_write, 1, m, sizeof m - 1);
    _exit(1);
}

static pid_t writer_tid;

static void *writer(void *u) {
    (void)u;
    __atomic_store_n(&writer_tid, gettid(), __ATOMIC_RELEASE);
    if (write(fa, "x", 1) != 1 || write(fb, "y", 1) != 1) _exit(2); /* served: this thread claims a record */
    __atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 2) usleep(100);
    static char buf[256 << 10];
    memset(buf, 'w', sizeof buf);
    ssize_t r = write(wfd, buf, sizeof buf); /* blocks when the pipe is full: nobody reads yet */
    (void)r;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/vp_a", argv[1]), snprintf(b, sizeof b, "%s/vp_b", argv[1]);
    fa = open(a, O_RDWR | O_CREAT, 0644), fb = open(b, O_RDWR | O_CREAT, 0644);
    if (fa < 0 || fb < 0) { printf("FAIL: open the files\n"); return 1; }
    pthread_t t;
    if (pthread_create(&t, NULL, writer, NULL) != 0) return 2;
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 1) usleep(100);
    int na = fa, nb = fb;
    close(fa), close(fb); /* vacated: another thread holds a record */
    int p[2];
    if (pipe(p) != 0) { printf("FAIL: pipe\n"); return 1; }
    printf("managed files were %d, %d; the pipe is %d, %d\n", na, nb, p[0], p[1]);
    if (p[1] != na && p[1] != nb) { printf("SKIP: the pipe did not take the files' numbers\n"); return 77; }
    wfd = p[1];
    __atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
    if (!wait_in_syscall(writer_tid, SYS_write, 20000)) { /* the writer is blocked in its write now */
        printf("FAIL: the writer was not blocked in its pipe write within 20 s\n");
        return 1;
    }
    signal(SIGALRM, on_alrm);
    alarm(5);
    int dupw = dup(p[1]); /* the pipe's write end stays open: the writer stays blocked until main reads */
    close(p[1]);
    int n = open("/dev/null", O_RDONLY); /* takes p[1]'s number */
    alarm(0);
    static char sink[64 << 10];
    for (size_t got = 0; got < (256 << 10);) {
        ssize_t r = read(p[0], sink, sizeof sink);
        if (r <= 0) break;
        got += (size_t)r;
    }
    pthread_join(t, NULL);
    printf("ok: open returned %d without waiting for the blocked writer\n", n);
    (void)dupw;
    return 0;
}

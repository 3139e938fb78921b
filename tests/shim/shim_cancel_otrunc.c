/* Description: a thread cancelled at its open with O_TRUNC of a file this process has open (review 27, #5). An O_TRUNC
 * open of such a file holds it -- its mutex, its guard's write side, a call on one of its descriptors -- across the
 * kernel's open (upath.c up_truncating_open_enter), and glibc's open is a cancellation point: in posix and sync
 * modes a pending cancel unwound the thread inside it with all of that held, and every later write, fdatasync and
 * close of the file, and the exit, waited for ever. Now a pending cancel acts before anything is held and the open
 * under the hold is no cancellation point. A child writes the file (mapped), starts a worker, cancels it before it
 * opens the file with O_RDWR|O_TRUNC (deferred: it acts at the open), joins it, then writes, fdatasyncs and closes
 * the file; the parent gives it 30 s. Exit 0 pass, 1 fail (hung: the child is killed). Any mode. */
#include <pthread.h>

#include "shim_test.h"

static char path[PATH_MAX];
static volatile int go;
static volatile int *opened;

static void *worker(void *arg) {
    (void)arg;
    while (!go) { /* no cancellation point: the cancel stays pending */
    }
    int fd = open(path, O_RDWR | O_TRUNC); /* acts on the pending cancel */
    *opened = fd >= 0 ? 1 : 2;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shim_cancel_otrunc DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    st_path(path, sizeof path, argv[1], "cancel_otrunc");
    volatile int *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED, "mmap");
    opened = &sh[1];
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        static char buf[8192];
        memset(buf, 'a', sizeof buf);
        for (int i = 0; i < 20; i++)
            if (pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) _exit(2); /* mapped by now */
        if (fdatasync(fd) != 0) _exit(3);
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) _exit(4);
        pthread_cancel(t);
        go = 1;
        void *ret;
        pthread_join(t, &ret);
        sh[2] = ret == PTHREAD_CANCELED;
        if (pwrite(fd, buf, 100, 0) != 100 || fdatasync(fd) != 0 || close(fd) != 0) _exit(5);
        sh[0] = 1;
        _exit(0);
    }
    int st = 0;
    if (!st_wait_child(c, &st, 30000)) {
        FAIL("the process hung after its worker was cancelled at an O_TRUNC open of a file open here (worker %s): "
             "the open's hold of the file was never let go", sh[2] ? "cancelled" : "not cancelled");
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && sh[0], "the child ended with status 0x%x", st);
    printf("the worker was %s at its O_TRUNC open; the file's write, fdatasync and close after it returned\n",
           sh[2] ? "cancelled" : "not cancelled (it opened)");
    return 0;
}

/* Description: the move of the program's new descriptor down (common/internal_fd.c dk_ifd_relower_slow) is
 * no cancellation point (review 14, finding 9). It runs inside the program's open/dup after the kernel made
 * the descriptor; its close of the kernel's number (and its first read of /proc/locks) used to be libc's
 * cancellable calls: a thread with a deferred cancel pending was unwound there with the kernel's descriptor
 * and its copy both open -- leaked, one at a low number. Made deterministic: a thread with a cancel pending
 * (cancellation disabled while it sets up) opens two descriptors, closes the lower, enables cancellation with
 * no cancellation point, and asks the relower to move the higher one down. The call must return the lower
 * number with the higher closed; the cancel then acts at the thread's own pthread_testcancel.
 * Exit 0 pass, 1 fail. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "common/internal_fd.h"

static int lo = -1, hi = -1;
static volatile int returned = -1;

static void *mover(void *arg) {
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_cancel(pthread_self()); /* pending from now on */
    lo = open("/dev/null", O_RDONLY);
    hi = open("/dev/null", O_RDONLY);
    close(lo);                     /* not acted on: cancellation disabled */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL); /* not a cancellation point */
    returned = dk_ifd_relower_slow(hi, 0);
    pthread_testcancel();
    return NULL;
}

static int is_open(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) >= 0; }

int main(void) {
    pthread_t t;
    void *res;
    if (pthread_create(&t, NULL, mover, NULL) != 0 || pthread_join(t, &res) != 0) return perror("thread"), 2;
    if (res != PTHREAD_CANCELED) return fprintf(stderr, "FAIL: the thread was not cancelled\n"), 1;
    if (lo < 0 || hi <= lo) return fprintf(stderr, "setup: descriptors %d %d\n", lo, hi), 2;
    if (returned < 0) {
        fprintf(stderr, "FAIL: the relower was cancelled inside the program's open (descriptor %d %s, %d %s: leaked)\n",
                lo, is_open(lo) ? "open" : "closed", hi, is_open(hi) ? "open" : "closed");
        return 1;
    }
    if (returned != lo || !is_open(lo) || is_open(hi)) {
        fprintf(stderr, "FAIL: relower returned %d (want %d); %d %s, %d %s\n", returned, lo, lo,
                is_open(lo) ? "open" : "closed", hi, is_open(hi) ? "open" : "closed");
        return 1;
    }
    printf("ok: moved %d -> %d with a cancel pending; the cancel acted after the call\n", hi, lo);
    return 0;
}

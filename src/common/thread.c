/* Library threads start with every signal blocked (see thread.h). */
#include "common/thread.h"

#include <errno.h>
#include <signal.h>

int dk_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    int e = errno;
    sigset_t all, old;
    sigfillset(&all); /* glibc keeps its own cancellation and setxid signals out of any mask */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return rc;
}

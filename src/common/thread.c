/* Library threads start with every signal blocked (see thread.h). */
#include "common/thread.h"

#include <errno.h>

#include "common/signals.h"
#include "shim/libc.h"

int dk_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    int e = errno;
    sigset_t old;
    dk_signals_block_all(&old);
    int rc = DK_REAL(pthread_create)(t, attr, fn, arg); /* not the program's (shim/proc.c) */
    dk_signals_restore(&old);
    errno = e;
    return rc;
}

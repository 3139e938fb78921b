/* Blocking every signal for a moment (signals.h). */
#include "common/signals.h"

#include <pthread.h>

void dk_signals_block_all(sigset_t *old) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

void dk_signals_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

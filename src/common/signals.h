/* Blocking every signal around a few system calls of the library's, and giving the thread its mask back.
 * Two users: a library thread's start (common/thread.c: the new thread inherits the blocked mask, so the
 * program's handler never runs on it) and a descriptor window (common/internal_fd.h: a handler that parks
 * its thread -- a stop-the-world collector's -- must not hold a window open). */
#ifndef DK_COMMON_SIGNALS_H
#define DK_COMMON_SIGNALS_H

#include <signal.h>

/* Every signal blocked in this thread (glibc keeps its own cancellation and set*id signals out of any mask);
 * the mask it had in *old. One system call; errno untouched (pthread_sigmask sets none). */
void dk_signals_block_all(sigset_t *old);
/* The mask saved by dk_signals_block_all back (a signal that arrived meanwhile stays pending, then is
 * delivered as usual). One system call. */
void dk_signals_restore(const sigset_t *old);

#endif

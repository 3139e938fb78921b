/* The library's own threads (the staging pool's, DAXKIT_ATOMIC's checkpoint, userfault and recovery
 * threads) start with every signal blocked: a process-directed signal is delivered to any thread that does
 * not block it, and the program's handler must never run on one of ours (session 14: the staging thread
 * blocked them only once it ran, so a signal sent while it started could run the program's handler there). */
#ifndef DK_COMMON_THREAD_H
#define DK_COMMON_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the creating thread for the call (the new thread inherits
 * that mask); the caller's mask is back exactly as it was afterwards (a signal arriving meanwhile stays
 * pending, then is delivered as usual), errno too. Returns pthread_create's result (0 or an error number). */
int dk_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif

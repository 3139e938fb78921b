/* Waiting until another thread of this process is blocked in a system call, instead of a fixed sleep that
 * stands for "it is in its call now" (stop21: a fixed sleep failed a CI run under load). Header-only. */
#ifndef DK_TESTS_SHIM_WAIT_IN_SYSCALL_H
#define DK_TESTS_SHIM_WAIT_IN_SYSCALL_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

/* The system call thread `tid` of this process is in (/proc/self/task/TID/syscall), or -1 when it runs or the
 * file cannot be read. */
static inline long wis_current(pid_t tid) {
    char p[64];
    snprintf(p, sizeof p, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(p, "r");
    long nr = -1;
    if (f && fscanf(f, "%ld", &nr) != 1) nr = -1;
    if (f) fclose(f);
    return nr;
}

/* Waits up to timeout_ms until thread `tid` is in system call `nr` -- or, with nr -1, in one system call on
 * two looks 50 ms apart (blocked, not passing through). Returns whether it was. */
static inline bool wait_in_syscall(pid_t tid, long nr, int timeout_ms) {
    for (int ms = 0; ms < timeout_ms; ms += 5) {
        long now = wis_current(tid);
        if (now >= 0 && nr >= 0 && now == nr) return true;
        if (now >= 0 && nr < 0) {
            usleep(50000), ms += 50;
            if (wis_current(tid) == now) return true;
        }
        usleep(5000);
    }
    return false;
}

#endif

/* Description: a signal handler's lock call while its thread is inside the in-flight registry's code (review 14,
 * finding 5): the main loop takes a flock on a file outside the strict root, whose area does not exist yet (each
 * lock call then tries to attach the registry, under its mutex); a 200 us timer's handler takes a POSIX lock on
 * another file. Before the fix the handler waited for the mutex its own thread held: a hang. Exit 0 when the
 * loop ran for SECONDS; the script's timeout calls a hang a failure. Usage: inflight_handler_lock LOCKDIR SECONDS */
#ifndef _GNU_SOURCE /* (the build defines it) */
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int handler_fd;
static volatile sig_atomic_t handler_locks;

static void on_alarm(int sig) {
    (void)sig;
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    if (fcntl(handler_fd, F_SETLK, &l) == 0) handler_locks++;
}

static int open_in(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    if (fd < 0) perror(p), exit(2);
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 3) return fprintf(stderr, "usage: %s LOCKDIR SECONDS\n", argv[0]), 2;
    int loop_fd = open_in(argv[1], "loop.lock");
    handler_fd = open_in(argv[1], "handler.lock");
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    time_t end = time(NULL) + atoi(argv[2]);
    long n = 0;
    while (time(NULL) < end) {
        if (flock(loop_fd, LOCK_EX) != 0) return perror("flock"), 1;
        n++;
    }
    printf("ok: %ld lock calls, %ld handler lock calls\n", n, (long)handler_locks);
    return handler_locks > 0 ? 0 : 1;
}

/* Description: a worker's fflush(NULL) while the process exits must not keep the process from ending (review 24,
 * finding 12). Since session 24, in sync and strict modes, another thread's write to a managed file after exit
 * turned the library off waits for the end of the process (upath/lifecycle.c up_exit_hold). glibc's fflush(NULL)
 * holds its stream list's lock across each stream's write, and exit's _IO_cleanup takes that lock after the
 * library's destructor: a held write of the library's stdio cookie (a managed file's FILE) kept the lock, and
 * the process never ended. The cookie's write is never held now.
 * Here: a child fopens a managed file, writes a line, starts a worker and exits; at the cue upath.fini.library_off
 * (SIGUSR1 on the exiting thread, DAXKIT_TEST_CRASH=raise:10:upath.fini.library_off:1) the worker writes a line
 * and calls fflush(NULL), and the handler waits 300 ms for it. The parent waits up to 10 s for the child to end.
 * Usage: shim_exit_flush DIR. Exit 0: the child ended; 1: it hung (killed). */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static sem_t go;
static FILE *fp;

static void *worker(void *a) {
    (void)a;
    while (sem_wait(&go) != 0) {
    }
    fputs("a line from the worker\n", fp);
    fflush(NULL); /* glibc: the stream list's lock held across each stream's write */
    return NULL;
}

static void on_cue(int s) {
    (void)s;
    sem_post(&go);
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL); /* the worker takes the list's lock and reaches its write */
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shim_exit_flush DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/log", argv[1]);
    signal(SIGUSR1, SIG_IGN); /* the parent's own exit meets the cue too */
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        fp = fopen(path, "w");
        if (!fp) _exit(3);
        fputs("first line\n", fp);
        fflush(fp);
        sem_init(&go, 0, 0);
        struct sigaction sa = {.sa_handler = on_cue};
        sigaction(SIGUSR1, &sa, NULL);
        pthread_t w;
        if (pthread_create(&w, NULL, worker, NULL) != 0) _exit(3);
        exit(0);
    }
    for (int i = 0; i < 100; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("FAIL: the child ended with status 0x%x\n", st);
                return 1;
            }
            printf("ok: the child ended after about %d ms\n", i * 100);
            return 0;
        }
        usleep(100000);
    }
    printf("FAIL: the child %d still runs 10 s after its exit began: hung at exit (a held write inside fflush(NULL))\n",
           (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return 1;
}

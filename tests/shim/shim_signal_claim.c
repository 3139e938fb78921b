/* A thread's first guarded IO interrupted by a signal handler doing IO (review 9, finding 1): the first
 * read claims the thread's reader record, which allocated with calloc; a SIGALRM handler's pread of the
 * file inside that calloc entered calloc again -- heap corruption and abort (single-threaded), or a hang on
 * the arena lock (with a second thread) -- in about 1 of 5 processes. Each run is a fresh process (the
 * claim is once per thread): this program spawns itself RUNS times, single- and multi-threaded; each child
 * opens the file, arms a 20 us interval timer whose handler preads 16 bytes of it, and preads it 1,000
 * times. Every child must exit 0 within 10 s. Usage: shim_signal_claim DIR [RUNS] */
#include <pthread.h>
#include <spawn.h>
#include <sys/time.h>
#include <time.h>

#include "shim_test.h"

extern char **environ;

static volatile int cur = -1;
static volatile long handler_reads;
static void on_alarm(int sig) {
    (void)sig;
    int saved = errno, fd = cur;
    char b[16];
    if (fd >= 0 && pread(fd, b, sizeof b, 0) == (ssize_t)sizeof b) handler_reads++;
    errno = saved;
}
static void *idle(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

static int child(const char *path, bool threaded) {
    pthread_t t;
    if (threaded && pthread_create(&t, NULL, idle, NULL) != 0) return 2;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 2;
    cur = fd;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 20}, {0, 20}}, none = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    char b[100];
    for (int i = 0; i < 1000; i++)
        if (pread(fd, b, sizeof b, 0) != (ssize_t)sizeof b || b[0] != 's') return 3;
    setitimer(ITIMER_REAL, &none, NULL);
    return 0;
}

/* Runs one child to its end (killed after 10 s): 0 clean exit, 1 died or hung. */
static int run_child(const char *self, const char *dir, const char *path, bool threaded) {
    char *argv[] = {(char *)self, (char *)dir, threaded ? "child-mt" : "child", (char *)path, NULL};
    pid_t pid;
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) st_fail_at(__FILE__, __LINE__, "posix_spawn");
    int status = 0;
    for (int waited_ms = 0;; waited_ms++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (waited_ms == 10000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            printf("a child hung (killed after 10 s)\n");
            return 1;
        }
        usleep(1000);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFSIGNALED(status)) printf("a child died of signal %d\n", WTERMSIG(status));
    else printf("a child exited %d\n", WEXITSTATUS(status));
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 3 && !strncmp(argv[2], "child", 5)) return child(argv[3], !strcmp(argv[2], "child-mt"));
    const char *dir = st_dir(argc, argv);
    st_require_library();
    int runs = argc > 2 ? atoi(argv[2]) : 100;
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "claim");
    int w = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    char b[8192];
    memset(b, 's', sizeof b);
    st_write_all(w, b, sizeof b);
    OK(close(w));
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0, "readlink /proc/self/exe");
    self[n] = 0;
    int bad[2] = {0, 0};
    for (int mt = 0; mt < 2; mt++)
        for (int i = 0; i < runs; i++) bad[mt] += run_child(self, dir, path, mt);
    printf("%d of %d single-threaded and %d of %d multi-threaded children died or hung (kernel: 0)\n", bad[0], runs,
           bad[1], runs);
    CHECK(bad[0] == 0 && bad[1] == 0, "a signal handler's read during a thread's first read broke the process");
    printf("ok: every child survived its handler's reads during its first read\n");
    return 0;
}

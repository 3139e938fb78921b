/* The program's signal handlers never run on a library thread (session 14): the staging pool's thread
 * blocked the host's signals only once it ran, so a process-directed signal sent while it started could be
 * delivered there -- the program's handler running on our thread. Now every library thread is created with
 * every signal blocked (common/thread.h: dk_thread_start).
 *   raise: DAXKIT_TEST_CRASH=raise:10:stage.thread.start:1 sends SIGUSR1 to the staging thread at its first
 *          instruction (before the old code's pthread_sigmask): the handler must not run there, and the
 *          signal must stay pending on that thread (which proves the crash point fired) -- deterministic.
 *   flood: ROUNDS children each start the staging thread (their first append, DAXKIT_STAGE_HEAP_BYTES=0)
 *          from a thread that takes SIGUSR1 while another thread of theirs floods the process with it
 *          (kill); the main thread and the flooder block it, so only the appender -- or a library thread
 *          in its start-up -- can run the handler. Every handler run must be on the appender.
 * argv[1]: managed directory; argv[2]: raise | flood. */
#include <dirent.h>
#include <pthread.h>

#include "shim_test.h"

enum { ROUNDS = 60, REC = 4096 };

static volatile pid_t app_tid[3];   /* threads of the program (the rest of /proc/self/task: the library's) */
static volatile pid_t foreign_tid;  /* a thread not of the program that ran the handler */
static volatile long handled;
static volatile int stop;
static char path[PATH_MAX];

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

static void on_usr1(int sig) {
    (void)sig;
    pid_t t = tid();
    if (t != app_tid[0] && t != app_tid[1] && t != app_tid[2]) foreign_tid = t;
    handled++;
}

static bool is_app(pid_t t) { return t == app_tid[0] || t == app_tid[1] || t == app_tid[2]; }

/* The first thread of this process that is not the program's (0: none), and its status line "key". */
static pid_t library_thread(const char *key, unsigned long long *val) {
    DIR *d = opendir("/proc/self/task");
    CHECK(d, "opendir /proc/self/task: %s", strerror(errno));
    pid_t found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        pid_t t = (pid_t)atoi(de->d_name);
        if (t <= 0 || is_app(t)) continue;
        found = t;
        char p[64], line[256];
        snprintf(p, sizeof p, "/proc/self/task/%d/status", (int)t);
        FILE *f = fopen(p, "r");
        *val = 0;
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, key, strlen(key)) == 0) *val = strtoull(line + strlen(key), NULL, 16);
        if (f) fclose(f);
    }
    closedir(d);
    return found;
}

static void append_one(const char *p) {
    int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    static char rec[REC];
    memset(rec, 'a', sizeof rec);
    st_write_all(fd, rec, sizeof rec);
    CHECK(close(fd) == 0, "close: %s", strerror(errno));
}

static void run_raise(void) {
    app_tid[0] = tid();
    append_one(path); /* the staging thread starts; the crash point sends it SIGUSR1 at its first instruction */
    unsigned long long pend = 0, blk = 0;
    pid_t lt = 0;
    for (int ms = 0; ms < 5000 && !foreign_tid; ms++) {
        lt = library_thread("SigPnd:", &pend);
        if (lt && (pend & (1ull << (SIGUSR1 - 1)))) break;
        usleep(1000);
    }
    CHECK(!foreign_tid, "the program's SIGUSR1 handler ran on library thread %d", (int)foreign_tid);
    CHECK(lt, "no library thread started (DAXKIT_STAGE_HEAP_BYTES=0: the append should take a pool slot)");
    CHECK(pend & (1ull << (SIGUSR1 - 1)), "SIGUSR1 is not pending on library thread %d (SigPnd %llx): did the "
          "crash point stage.thread.start fire (DAXKIT_TEST_CRASH)?", (int)lt, pend);
    library_thread("SigBlk:", &blk);
    CHECK((blk & (1ull << (SIGUSR1 - 1))) && (blk & (1ull << (SIGTERM - 1))), "library thread %d blocks %llx", (int)lt, blk);
    NOTE("SIGUSR1 pending on library thread %d, blocked (SigBlk %llx), handler runs %ld", (int)lt, blk, handled);
}

static void *flooder(void *arg) {
    (void)arg;
    app_tid[1] = tid();
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) kill(getpid(), SIGUSR1);
    return NULL;
}

static void *appender(void *arg) {
    const char *p = arg;
    app_tid[2] = tid();
    sigset_t u;
    sigemptyset(&u);
    sigaddset(&u, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &u, NULL);
    while (!handled) usleep(100); /* the flood is on */
    append_one(p); /* the staging thread starts from here, with this thread's mask */
    usleep(2000);
    return NULL;
}

/* One child: 0 pass, 1 a handler on a library thread, 2 no library thread. */
static int flood_round(unsigned round) {
    app_tid[0] = tid();
    sigset_t u;
    sigemptyset(&u);
    sigaddset(&u, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &u, NULL); /* main and the flooder (inherits it) never take SIGUSR1 */
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s.%u", path, round);
    pthread_t f, a;
    CHECK(pthread_create(&f, NULL, flooder, NULL) == 0, "pthread_create");
    CHECK(pthread_create(&a, NULL, appender, p) == 0, "pthread_create");
    pthread_join(a, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(f, NULL);
    unsigned long long v;
    if (foreign_tid) return 1;
    return library_thread("SigBlk:", &v) ? 0 : 2;
}

static void run_flood(void) {
    unsigned bad = 0, none = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        pid_t c = fork();
        CHECK(c >= 0, "fork: %s", strerror(errno));
        if (c == 0) _exit(flood_round(r));
        int st;
        CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st), "round %u: child status 0x%x", r, st);
        bad += WEXITSTATUS(st) == 1;
        none += WEXITSTATUS(st) == 2;
        CHECK(WEXITSTATUS(st) <= 2, "round %u: child exit %d", r, WEXITSTATUS(st));
    }
    CHECK(none == 0, "%u of %u rounds started no library thread", none, ROUNDS);
    CHECK(bad == 0, "%u of %u rounds ran the program's handler on a library thread", bad, ROUNDS);
    NOTE("%u rounds: the handler ran on the appender only", ROUNDS);
}

int main(int argc, char **argv) {
    if (argc < 3) SKIP("usage: shim_thread_signals DIR raise|flood");
    st_path(path, sizeof path, argv[1], "ts");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    if (strcmp(argv[2], "raise") == 0) run_raise();
    else if (strcmp(argv[2], "flood") == 0) run_flood();
    else SKIP("unknown case %s", argv[2]);
    return 0;
}

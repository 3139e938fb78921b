/* Description: glibc's own open inside the library's strerror takes no number of the program's (session 24).
 * glibc translates strerror's message when the program set a locale whose messages it has (setlocale(LC_ALL,
 * "") under LC_ALL=C.UTF-8 with LANGUAGE=fr): the first translated message loads libc.mo -- opened at the lowest
 * free number (__open_nocancel: no preload sees it), mapped and closed. The library's messages call strerror
 * in the program's threads (here: a posix-mode append whose staging file the medium cannot back -- a 2 MiB
 * tmpfs -- says so once: stage.c stg_create); a thread between its close(n) and its open then had
 * its calls through n reach the catalog. The library's strerror is a window of its own opens now (common/log.h:
 * dk_strerror), which the program's calls on a number it does not serve wait for. Run by strerror_window.sh
 * under strace, which holds glibc's open of libc.mo for 400 ms after the kernel gave it its number:
 *   - the main thread makes a file d (its lowest free number n) and closes it; a second thread opens a log
 *     O_APPEND: the library's message at the open's adoption, glibc's open at n;
 *     (n, or the next number once the log's own open took n);
 *   - the main thread waits (raw readlinkat of /proc/self/fd/k, k from n on) until a number names the catalog,
 *     then calls fstat on it -- which must not see the catalog: EBADF, as the kernel alone would answer.
 * Skips (77) when n never names the catalog (no French libc.mo, no C.UTF-8, or glibc translated before).
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip. */
#include <locale.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>

#include "shim_test.h"

static const char catalog[] = "/usr/share/locale/fr/LC_MESSAGES/libc.mo";
static char log_path[PATH_MAX];
static sem_t go;
static volatile int append_done;

static void *appender(void *arg) {
    (void)arg;
    sem_wait(&go);
    int fd = OK(open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644)); /* the library's message comes here */
    char rec[100];
    memset(rec, 'a', sizeof rec);
    CHECK(write(fd, rec, sizeof rec) == (ssize_t)sizeof rec, "append");
    OK(close(fd)); /* (or here: the close's publish) */
    __atomic_store_n(&append_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: shim_strerror_window MANAGED_DIR");
    st_watchdog(60);
    if (!setlocale(LC_ALL, "")) SKIP("setlocale(LC_ALL, \"\") failed: no translated messages");
    char d_path[PATH_MAX], target[PATH_MAX];
    st_path(d_path, sizeof d_path, argv[1], "d");
    st_path(log_path, sizeof log_path, argv[1], "log");
    int n = OK(open(d_path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    struct stat cs;
    OK(stat(catalog, &cs));
    sem_init(&go, 0, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, appender, NULL) == 0, "pthread_create");
    OK(close(n));
    sem_post(&go);
    bool seen = false;
    int k = n;
    for (int i = 0; i < 20000 && !seen; i++) { /* 20 s at most; strace holds the number 400 ms */
        for (k = n; k < n + 8 && !seen; k++) {
            st_fd_target(k, target, sizeof target);
            seen = !strcmp(target, catalog);
        }
        if (!seen && __atomic_load_n(&append_done, __ATOMIC_ACQUIRE)) break;
        if (!seen) usleep(1000);
    }
    k--;
    if (!seen) {
        pthread_join(t, NULL);
        SKIP("no number from %d on named %s during the library's message (no French libc.mo, or translated "
             "before)", n, catalog);
    }
    struct stat st;
    int r = fstat(k, &st);
    pthread_join(t, NULL);
    CHECK(r != 0 || st.st_dev != cs.st_dev || st.st_ino != cs.st_ino,
          "fstat(%d), a number the program does not hold, while glibc's strerror held it: %s (size %ld) -- the "
          "program reached glibc's file", k, catalog, (long)st.st_size);
    printf("ok: fstat(%d) while glibc's strerror held the number: %s\n", k, r ? "EBADF" : "a file of the program's");
    return 0;
}

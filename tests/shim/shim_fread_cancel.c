/* fread cancelled inside its read gives the stream's lock back, as glibc's fread does (session 22). With a
 * cookie stream open (a managed FILE), the library's fread holds the stream's lock across glibc's
 * fread_unlocked (review 21, finding 03); a cancellation acted upon in the read below it must release that
 * lock, or the next call on the stream waits for ever (a recursive lock owned by a thread that is gone).
 * The thread reads a pipe that stays empty, so the cancellation is acted upon in that read every run:
 * nothing before it in the thread is a cancellation point. The test then reads the stream from the main
 * thread (the watchdog fires on a hang: FAIL). The managed stream is read and written too, so the cookie
 * path itself answers. argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip. */
#include "shim_test.h"

#include <pthread.h>

static FILE *piped;
static volatile int started;

static void *reader(void *arg) {
    (void)arg;
    char b[16];
    started = 1;
    size_t got = fread(b, 1, sizeof b, piped); /* blocks in read(2): cancelled there */
    FAIL("fread returned %zu instead of being cancelled", got);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_watchdog(30);
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "cookie.txt");
    FILE *m = fopen(p, "w+"); /* a cookie stream: the library's fread now takes the stream's lock itself */
    CHECK(m != NULL, "fopen %s: %s", p, strerror(errno));
    CHECK(fputs("managed\n", m) >= 0 && fflush(m) == 0, "fputs/fflush: %s", strerror(errno));
    int pfd[2];
    OK(pipe(pfd));
    piped = fdopen(pfd[0], "r");
    CHECK(piped != NULL, "fdopen: %s", strerror(errno));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, reader, NULL) == 0, "pthread_create");
    while (!started) sched_yield();
    CHECK(pthread_cancel(t) == 0, "pthread_cancel");
    void *res = NULL;
    CHECK(pthread_join(t, &res) == 0 && res == PTHREAD_CANCELED, "the reader was not cancelled (%p)", res);
    static const char msg[] = "0123456789abcdef";
    st_write_all(pfd[1], msg, 16);
    char b[16];
    CHECK(fread(b, 1, sizeof b, piped) == 16 && memcmp(b, msg, 16) == 0,
          "fread after the cancelled one: %s", strerror(errno)); /* a hang here: the lock was kept */
    CHECK(ftrylockfile(piped) == 0, "the stream's lock is still held after the cancelled fread");
    funlockfile(piped);
    char line[16] = {0};
    rewind(m);
    CHECK(fread(line, 1, 8, m) == 8 && memcmp(line, "managed\n", 8) == 0, "the managed stream reads \"%s\"", line);
    CHECK(fclose(m) == 0 && fclose(piped) == 0, "fclose: %s", strerror(errno));
    close(pfd[1]);
    NOTE("a fread cancelled in its read left the stream's lock free; the next fread read the pipe");
    return 0;
}

/* pwritev2's per-call flags belong to the call (review 9, finding 22): RWF_APPEND was applied by setting
 * O_APPEND on the descriptor's shared state for the length of the write, so another thread's pwrite at
 * offset 0 through the same descriptor in that window was appended instead (one run: 31 MB of 'B' past
 * offset 100). A thread makes 20,000 pwritev2(RWF_APPEND) of 100 'A's while the main thread pwrites 100
 * 'B's at offset 0 until it ends: the file must be 100 + 20,000 x 100 bytes (the 'B's first) with no 'B'
 * past offset 100. Also one pwritev2(RWF_DSYNC) must not leave O_DSYNC on the descriptor (F_GETFL).
 * Usage: shim_rwf_flags DIR */
#include <pthread.h>
#include <sys/uio.h>

#include "shim_test.h"

#define APPENDS 20000
static int fd;
static volatile int done;

static void *appender(void *arg) {
    (void)arg;
    char a[100];
    memset(a, 'A', sizeof a);
    struct iovec v = {a, sizeof a};
    for (int i = 0; i < APPENDS; i++)
        if (pwritev2(fd, &v, 1, -1, RWF_APPEND) != (ssize_t)sizeof a) st_fail_at(__FILE__, __LINE__, "pwritev2: %s", strerror(errno));
    done = 1;
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "rwf");
    fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    char b[100];
    memset(b, 'B', sizeof b);
    st_pwrite_all(fd, b, sizeof b, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, appender, NULL) == 0, "pthread_create");
    long overwrites = 0;
    while (!done) {
        CHECK(pwrite(fd, b, sizeof b, 0) == (ssize_t)sizeof b, "pwrite");
        overwrites++;
    }
    pthread_join(t, NULL);
    struct stat st;
    OK(fstat(fd, &st));
    uint64_t want = sizeof b + (uint64_t)APPENDS * 100;
    long misplaced = 0;
    static char all[sizeof b + APPENDS * 100 + 4096];
    ssize_t got = pread(fd, all, sizeof all, 0);
    for (ssize_t i = sizeof b; i < got; i++) misplaced += all[i] == 'B';
    printf("%ld overwrites at 0 during %d RWF_APPEND writes: size %lld (want %llu), %ld 'B' bytes past offset 100\n",
           overwrites, APPENDS, (long long)st.st_size, (unsigned long long)want, misplaced);
    CHECK((uint64_t)st.st_size == want && got == (ssize_t)want && misplaced == 0,
          "a pwrite at offset 0 was appended while another thread's pwritev2 had RWF_APPEND");
    char one = 'x';
    struct iovec v = {&one, 1};
    CHECK(pwritev2(fd, &v, 1, 0, RWF_DSYNC) == 1, "pwritev2 RWF_DSYNC");
    CHECK(!(OK(fcntl(fd, F_GETFL)) & O_DSYNC), "RWF_DSYNC stayed on the descriptor");
    OK(close(fd));
    printf("ok: per-call flags stayed with their call\n");
    return 0;
}

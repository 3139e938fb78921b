/* Description: review 15, finding 9 (the reviewer's reproducer, kept as a test). argv[1]: managed directory
 * (run.sh), argv[2]: rounds. Exit 0 pass, 1 fail (a write that reached the file was reported EBADF and the
 * program's retry wrote it again), 2 set-up error. Fails 2 of 3 runs with c2b525f's library (1 and 3
 * duplicated records), 0 of 4 with shim.h dk_pt_end_wrote's fix.
 */
/* review15 finding 9: sync mode's pass-through write (a managed descriptor the kernel serves: a file past
 * 512 GiB here; likewise O_DIRECT, shared with a fork relative) is followed by the library's fdatasync(fd)
 * (shim.h dk_pt_end_wrote). A pass-through call is named in no call record, so another thread's close of the
 * descriptor does not wait for it: when the close lands between the kernel's write and that fdatasync, the
 * fdatasync fails with EBADF and the program's write returns -1/EBADF -- after its bytes were appended. A
 * program that retries on EBADF (the fd was being reopened) writes the record twice.
 * Two appenders write 64-byte records (retrying the same record on EBADF); main closes and reopens the log.
 * At the end: records in the file vs. records acknowledged. argv: DIR ROUNDS */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#define REC 64
#define BASE (600ull << 30) /* past UP_MAP_MAX_BYTES (512 GiB): the file is the kernel's */
static char logp[4096];
static volatile int log_fd, stop;
static long acked[2], ebadf_retries[2];
static void *appender(void *arg) {
    int w = (int)(intptr_t)arg;
    char rec[REC];
    for (long seq = 0; !stop;) {
        memset(rec, 'a' + w, REC);
        snprintf(rec, REC, "w%d s%010ld ", w, seq);
        rec[REC - 1] = '\n';
        ssize_t n = write(log_fd, rec, REC);
        if (n < 0 && errno == EBADF) { ebadf_retries[w]++; continue; } /* closed meanwhile: again */
        if (n != REC) { fprintf(stderr, "write: %zd errno %d\n", n, errno); continue; }
        acked[w] = ++seq;
    }
    return NULL;
}
int main(int argc, char **argv) {
    snprintf(logp, sizeof logp, "%s/log", argv[1]);
    int rounds = atoi(argv[2]);
    int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)BASE) != 0) { perror("create"); return 2; }
    close(fd);
    log_fd = open(logp, O_WRONLY | O_APPEND);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, appender, (void *)(intptr_t)i);
    for (int i = 0; i < rounds; i++) {
        close(log_fd);
        log_fd = open(logp, O_WRONLY | O_APPEND);
        usleep(20);
    }
    stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    close(log_fd);
    int rfd = (int)syscall(SYS_openat, AT_FDCWD, logp, O_RDONLY);
    off_t end = lseek(rfd, 0, SEEK_END);
    long in_file = (long)((unsigned long long)end - BASE) / REC, all = acked[0] + acked[1];
    /* duplicates: scan the records */
    long dups = 0, next[2] = {0, 0};
    char *buf = malloc((size_t)(end - (off_t)BASE));
    if (buf && syscall(SYS_pread64, rfd, buf, (size_t)(end - (off_t)BASE), (off_t)BASE) == end - (off_t)BASE)
        for (long k = 0; k < in_file; k++) {
            int w = buf[k * REC + 1] - '0';
            long seq = atol(buf + k * REC + 4);
            if (w < 0 || w > 1) continue;
            if (seq < next[w]) dups++;
            else next[w] = seq + 1;
        }
    printf("%d rounds: %ld acknowledged, %ld records in the file, %ld duplicated; EBADF retries %ld\n", rounds, all,
           in_file, dups, ebadf_retries[0] + ebadf_retries[1]);
    if (dups) { printf("BUG: %ld acknowledged-as-failed (EBADF) writes were in the file and were written again\n", dups); return 1; }
    printf("OK\n");
    return 0;
}

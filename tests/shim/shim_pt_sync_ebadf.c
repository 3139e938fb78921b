/* Description: a sync/strict pass-through write whose descriptor another thread closes (or dup2s over) while
 * the write is between the kernel's write and the library's fdatasync (review 15, finding 9; a file past
 * 512 GiB is the kernel's: its writes pass through, as O_DIRECT ones and those shared with a fork relative).
 * argv[1]: managed directory (run.sh); argv[2]: ROUNDS or "window close|dup2|reopen". Exit 0 pass, 1 fail, 2 set-up
 * error, 77 skip.
 *
 * ROUNDS: the reviewer's reproducer, kept. Two appenders write 64-byte records, retrying the same record on
 * EBADF, while the main thread closes and reopens the log; no record may be in the file twice (a write that
 * reached the file reported EBADF, and the retry wrote it again). Failed 2 of 3 runs with c2b525f's library
 * (1 and 3 duplicated records).
 *
 * window: the race on cue, every run. DAXKIT_TEST_CRASH=raise:10:upath.pt_sync.before:1 (test builds) raises
 * SIGUSR1 on the writing thread at its first pass-through fdatasync, after the kernel's write; the handler
 * lets the main thread close the number (dup2 /dev/null over it; reopen: close it and open another managed file,
 * which gets the number) and stays 300 ms. The close must wait for
 * the write and its fdatasync (the write is named in its thread's call record: shim.h dk_pt_begin_change): it
 * returns after the handler did, the fdatasync found the file (pt_synced +1, pt_sync_closed +0), the write
 * returned its count with errno as it was, and the record is in the file once.
 *
 * window HOW posix_fallocate|copy_file_range|sendfile: the same race for the change made by posix_fallocate(fd,
 * BASE, 64) (64 zero bytes) or by an in-kernel copy of a 64-byte record from another managed file into the
 * log at BASE (session 17: these were not named in the call record -- the close returned at once, and a reopen
 * in the window had the new file synced; review 16, finding 8). sendfile is named when its input is managed.
 *
 * window handler_close|rawclose: the closes that do not wait (upath/ptsync.c's one EBADF rule,
 * docs/guarantees.md): the writer's own handler closes the number (its thread is inside the named call: it
 * never waits), or the main thread closes it with the raw close system call (no library close at all). The
 * fdatasync then finds the number closed: pt_sync_closed +1, pt_synced +0 -- the change is not made durable
 * by the library -- and the write still returns its count with errno as it was (never -1/EBADF after its
 * bytes landed); the record is in the file once.
 *
 * window closed_reopen: a write that waited for a close and found the number given to a file again (session 17's
 * strict/sync hole, trace17). Four cues, in order: the writer, about to name its pass-through write
 * (shim.pt_name.before), lets the main thread close the number; the close, with the entry closing
 * (upath.close.closing), lets the writer go on and waits 200 ms, so the writer's call waits for it; the writer,
 * woken with the number closed (upath.call.closed_waiting), lets the main thread open the log again -- it gets
 * the number; the writer's fdatasync (upath.pt_sync.before) lets the main thread close the number again. The
 * write reached the reopened log: it must be named there, so the second close waits for its fdatasync (pt_synced
 * +1, pt_sync_closed +0). Before the fix it was passed through unnamed: the close returned at once and the
 * fdatasync found the number closed -- an acknowledged write neither recorded nor synced.
 *
 * window reopen_pending (lazy adoption, DAXKIT_ADOPT_AFTER_IOS=4): the write family's re-check for a number
 * made pending after its looks (rw.c, e9cc820) found the number closed again by its own look and wrote unnamed.
 * Two cues at shim.pt_name.before: each time the writer is about to name its write, the main thread closes the
 * number and opens the log again (pending: no slot yet). The first makes the write's look find no slot and the
 * re-check adopt the reopened log; the second closes that one under the re-check's look. The write must reach
 * the log named and synced (pt_synced +1); before the fix it went to the kernel unnamed (pt_synced +0).
 *
 * window vacant_pending (lazy adoption): a write through a vacated number (upath/vacant.c) named itself with
 * no slot after an open had given the number to a file as a pending descriptor -- whose close (never adopted:
 * nothing to wait for) then did not wait for the write's fdatasync (session 18, pt_sync_closed +1 in 2 of 12
 * runs of shim_fd_lifetime_synced_sync_lazy_hugetmpfs). The writer (a served call first: its thread has a
 * record, so the close vacates the number) writes after the main thread closed the log; at its naming
 * (upath.vacant.naming) the main thread opens the log again (pending); at its fdatasync (upath.pt_sync.before)
 * the main thread closes it. The write must be the pending descriptor's -- adopted and named -- so the close
 * waits: pt_synced +1, pt_sync_closed +0.
 *
 * window pending_close (lazy adoption): the close of a pending descriptor cleared its pending state before the
 * kernel's close, and a write through the number in between found no slot, no pending state and no vacated
 * number -- an unmanaged descriptor, to the library -- and reached the file named nowhere, never fdatasync'ed
 * (session 18: 2 of 40 runs of the synced loop, traced to that path). At upath.pending_drop.cleared the main
 * thread's handler lets the writer write and stays 200 ms. The write must wait for the close and fail EBADF
 * (the kernel's answer after a close), or be served or synced; it must never return its count unsynced.
 *
 * window first_write: a thread's first call ever is a write through a number the main thread just closed and
 * is opening again (the race design-upath.md listed as left): the close did not vacate the number (no other
 * thread held a call record), so the reopen did not make it wait, and the write reached the new file through
 * the kernel named nowhere. At shim.open.adopting (the reopen, after the kernel's open, before the adoption)
 * the main thread's handler lets the writer write -- a plain log, not the kernel's file -- and stays 200 ms.
 * The write must be served or synced (appends + pt_synced >= 1: strict mode counts its apply too). "window
 * first_write c11": the writer made by C11 thrd_create. "window first_write late" (review 18, #10b): the writer
 * made after the close and before the reopen -- the close found the program without a thread of its own. */
#include <pthread.h>
#include <semaphore.h>
#include <sys/sendfile.h>
#include <threads.h>
#include <time.h>

#include "shim_test.h"

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
/* ---- window: the race on cue ---- */

static sem_t in_window;
static volatile sig_atomic_t handler_done;
static volatile int w_fd;
static ssize_t w_ret;
static int w_errno;

static volatile int h_close_own = 0, h_close_rc = -2; /* handler_close: the handler closes the number itself */

static void on_usr1(int sig) {
    (void)sig;
    int e = errno;
    if (h_close_own) h_close_rc = close(w_fd);
    sem_post(&in_window);
    struct timespec ts = {0, 300 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    handler_done = 1;
    errno = e;
}

enum { W_WRITE, W_FALLOCATE, W_COPY, W_SENDFILE };
static int what, src_fd = -1;

static void record(char *rec) {
    memset(rec, what == W_FALLOCATE ? 0 : 'w', REC);
    if (what != W_FALLOCATE) rec[REC - 1] = '\n';
}

static void *window_writer(void *arg) {
    (void)arg;
    char rec[REC];
    record(rec);
    off_t in = 0, at = (off_t)BASE;
    errno = EINPROGRESS; /* as the program left it: a change that succeeds leaves it so */
    if (what == W_WRITE) w_ret = write(w_fd, rec, REC);
    if (what == W_FALLOCATE) w_ret = posix_fallocate(w_fd, (off_t)BASE, REC) == 0 ? REC : -1;
    if (what == W_COPY) w_ret = copy_file_range(src_fd, &in, w_fd, &at, REC, 0);
    if (what == W_SENDFILE) w_ret = sendfile(w_fd, src_fd, &in, REC); /* at w_fd's offset: BASE */
    w_errno = errno;
    return NULL;
}

/* The log and, for a copy, its source; w_fd opened on the log (O_APPEND for a write: a copy refuses it). */
static void window_open(void) {
    int fd = OK(open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    OK(ftruncate(fd, (off_t)BASE)); /* the file becomes the kernel's: its writes pass through */
    OK(close(fd));
    w_fd = OK(open(logp, what == W_WRITE ? O_WRONLY | O_APPEND : O_WRONLY));
    if (what == W_SENDFILE) CHECK(lseek(w_fd, (off_t)BASE, SEEK_SET) == (off_t)BASE, "lseek: %s", strerror(errno));
    if (what != W_COPY && what != W_SENDFILE) return;
    char srcp[sizeof logp + 8], rec[REC];
    snprintf(srcp, sizeof srcp, "%s.src", logp);
    src_fd = OK(open(srcp, O_RDWR | O_CREAT | O_TRUNC, 0644)); /* managed: a sendfile from it is named */
    record(rec);
    st_write_all(src_fd, rec, REC);
}

/* The log holds its base and exactly one whole record. */
static void window_check_log(void) {
    struct stat st;
    CHECK(syscall(SYS_stat, logp, &st) == 0, "stat the log");
    CHECK((unsigned long long)st.st_size == BASE + REC, "the log holds %lld bytes past its base, not one record",
          (long long)st.st_size - (long long)BASE);
    char got[REC], want[REC];
    record(want);
    int rfd = (int)syscall(SYS_openat, AT_FDCWD, logp, O_RDONLY);
    CHECK(rfd >= 0 && syscall(SYS_pread64, rfd, got, REC, (off_t)BASE) == REC && !memcmp(got, want, REC),
          "the record is not in the log whole");
    syscall(SYS_close, rfd);
}

/* handler_close, rawclose: the close does not wait; the fdatasync finds the number closed. */
static int window_unwaited(bool own, uint64_t synced0, uint64_t closed0) {
    h_close_own = own;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, window_writer, NULL) == 0, "pthread_create");
    while (sem_wait(&in_window) != 0) CHECK(errno == EINTR, "sem_wait: %s", strerror(errno));
    int rc = own ? h_close_rc : (int)syscall(SYS_close, w_fd); /* raw: the library never sees this close */
    CHECK(rc == 0, "%s returned %d: %s", own ? "the handler's close" : "the raw close", rc, strerror(errno));
    pthread_join(t, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, closed = st_counter(DK_C_pt_sync_closed) - closed0;
    printf("window %s: the write returned %zd (errno %d); pt_synced +%llu, pt_sync_closed +%llu\n",
           own ? "handler_close" : "rawclose", w_ret, w_errno, (unsigned long long)synced, (unsigned long long)closed);
    CHECK(handler_done, "the crash point was not reached (DAXKIT_TEST_CRASH, a test build?)");
    CHECK(fcntl(w_fd, F_GETFD) == -1 && errno == EBADF, "the number is still open after the close");
    CHECK(w_ret == REC, "the write returned %zd (errno %d), not %d: its bytes are in the file", w_ret, w_errno, REC);
    CHECK(w_errno == EINPROGRESS, "the write changed errno to %d", w_errno);
    CHECK(synced == 0 && closed == 1, "the fdatasync did not take the closed-number rule (pt_synced +%llu, pt_sync_closed +%llu)",
          (unsigned long long)synced, (unsigned long long)closed);
    window_check_log();
    printf("OK\n");
    return 0;
}

/* ---- the windows' common set-up ---- */

/* Skips unless DAXKIT_TEST_CRASH is exactly `want` (a test build's cues) and, when `lazy`, lazy adoption is on
 * in a mode that has it; then arms the watchdog. */
static void window_needs(const char *want, bool lazy) {
    const char *cue = getenv("DAXKIT_TEST_CRASH"), *after = getenv("DAXKIT_ADOPT_AFTER_IOS"), *mode = getenv("DAXKIT_MODE");
    if (!cue || strcmp(cue, want) != 0) SKIP("needs DAXKIT_TEST_CRASH=%s (a test build)", want);
    if (lazy && (!after || atoi(after) == 0)) SKIP("needs lazy adoption (DAXKIT_ADOPT_AFTER_IOS=4)");
    if (lazy && mode && strcmp(mode, "strict") == 0) SKIP("lazy adoption is posix and sync modes' (upath/pending.c)");
    st_watchdog(30);
}

static void on_signal(int signo, void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    CHECK(sigaction(signo, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
}

/* The log past 512 GiB (the kernel's file: its writes pass through), made without the library so that no
 * change of the library's reaches a cue first. */
static void log_past_base(void) {
    int raw = (int)syscall(SYS_openat, AT_FDCWD, logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(raw >= 0 && syscall(SYS_ftruncate, raw, (off_t)BASE) == 0, "create the log: %s", strerror(errno));
    syscall(SYS_close, raw);
}

/* The log past its base, opened for appends at w_fd -- pending with lazy adoption, adopted at its first use. */
static void pending_log_open(void) {
    log_past_base();
    what = W_WRITE;
    w_fd = OK(open(logp, O_WRONLY | O_APPEND));
}

/* ---- window closed_reopen ---- */

static sem_t cr_go_close, cr_closing, cr_closed, cr_reopened, cr_sync;
static volatile sig_atomic_t cr_phase;

/* The writer's cues, in order: naming, woken with the number closed, its fdatasync. */
static void cr_writer_cue(int sig) {
    (void)sig;
    int e = errno;
    int phase = ++cr_phase;
    if (phase == 1) {
        sem_post(&cr_go_close);
        while (sem_wait(&cr_closing) != 0) {}
    } else if (phase == 2) {
        sem_post(&cr_closed);
        while (sem_wait(&cr_reopened) != 0) {}
    } else if (phase == 3) {
        sem_post(&cr_sync);
        struct timespec ts = {0, 300 * 1000 * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        handler_done = 1;
    }
    errno = e;
}
/* The main thread's close, with the entry closing: the writer goes on and waits for it. */
static void cr_closer_cue(int sig) {
    (void)sig;
    int e = errno;
    sem_post(&cr_closing);
    struct timespec ts = {0, 200 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    errno = e;
}

static void sem_take(sem_t *s) {
    while (sem_wait(s) != 0) CHECK(errno == EINTR, "sem_wait: %s", strerror(errno));
}

static int window_closed_reopen(void) {
    const char *want = "raise:10:shim.pt_name.before:1,raise:12:upath.close.closing:1,"
                       "raise:10:upath.call.closed_waiting:1,raise:10:upath.pt_sync.before:1";
    window_needs(want, false);
    sem_t *sems[] = {&cr_go_close, &cr_closing, &cr_closed, &cr_reopened, &cr_sync};
    for (int i = 0; i < 5; i++) CHECK(sem_init(sems[i], 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR1, cr_writer_cue);
    on_signal(SIGUSR2, cr_closer_cue);
    pending_log_open();
    uint64_t synced0 = st_counter(DK_C_pt_synced), closed0 = st_counter(DK_C_pt_sync_closed);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, window_writer, NULL) == 0, "pthread_create");
    sem_take(&cr_go_close);
    OK(close(w_fd)); /* cr_closer_cue runs inside */
    sem_take(&cr_closed);
    int again = OK(open(logp, O_WRONLY | O_APPEND));
    CHECK(again == w_fd, "the reopen got number %d, not the closed %d", again, (int)w_fd);
    sem_post(&cr_reopened);
    sem_take(&cr_sync);
    /* the writer is in its handler, between the kernel's write into the reopened log and its fdatasync */
    OK(close(again));
    int waited = handler_done;
    pthread_join(t, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, closed = st_counter(DK_C_pt_sync_closed) - closed0;
    printf("window closed_reopen: cues reached %d of 3 on the writer; the second close returned %s the writer's "
           "fdatasync cue; the write returned %zd (errno %d); pt_synced +%llu, pt_sync_closed +%llu\n", (int)cr_phase,
           waited ? "after" : "BEFORE", w_ret, w_errno, (unsigned long long)synced, (unsigned long long)closed);
    CHECK(cr_phase == 3, "the writer reached %d of its 3 cues (a test build?)", (int)cr_phase);
    CHECK(w_ret == REC, "the write returned %zd (errno %d), not %d", w_ret, w_errno, REC);
    CHECK(w_errno == EINPROGRESS, "the write changed errno to %d", w_errno);
    CHECK(waited, "the close returned while the write into the reopened log was before its fdatasync: the write "
          "was not named (passed through unnamed after it waited for the first close)");
    CHECK(synced == 1 && closed == 0, "the write into the reopened log was not synced (pt_synced +%llu, "
          "pt_sync_closed +%llu)", (unsigned long long)synced, (unsigned long long)closed);
    window_check_log();
    printf("OK\n");
    return 0;
}

/* ---- window reopen_pending ---- */

static sem_t rp_go, rp_reopened;

static void rp_writer_cue(int sig) {
    (void)sig;
    int e = errno;
    ++cr_phase;
    sem_post(&rp_go);
    while (sem_wait(&rp_reopened) != 0) {}
    errno = e;
}

static int window_reopen_pending(void) {
    const char *want = "raise:10:shim.pt_name.before:1,raise:10:shim.pt_name.before:2";
    window_needs(want, true);
    CHECK(sem_init(&rp_go, 0, 0) == 0 && sem_init(&rp_reopened, 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR1, rp_writer_cue);
    pending_log_open(); /* pending: adopted at its first use */
    uint64_t synced0 = st_counter(DK_C_pt_synced), closed0 = st_counter(DK_C_pt_sync_closed);
    uint64_t lazy0 = st_counter(DK_C_lazy_adoptions);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, window_writer, NULL) == 0, "pthread_create");
    for (int round = 1; round <= 2; round++) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        while (sem_timedwait(&rp_go, &until) != 0)
            CHECK(errno == EINTR, "round %d: the writer did not reach its cue in 10 s (pt_synced +%llu: not passed "
                  "through?)", round, (unsigned long long)(st_counter(DK_C_pt_synced) - synced0));
        OK(close(w_fd));
        int again = OK(open(logp, O_WRONLY | O_APPEND));
        CHECK(again == w_fd, "round %d: the reopen got number %d, not the closed %d", round, again, (int)w_fd);
        sem_post(&rp_reopened);
    }
    pthread_join(t, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, closed = st_counter(DK_C_pt_sync_closed) - closed0;
    uint64_t adopted = st_counter(DK_C_lazy_adoptions) - lazy0;
    printf("window reopen_pending: cues reached %d of 2; the write returned %zd (errno %d); lazy adoptions +%llu; "
           "pt_synced +%llu, pt_sync_closed +%llu\n", (int)cr_phase, w_ret, w_errno, (unsigned long long)adopted,
           (unsigned long long)synced, (unsigned long long)closed);
    CHECK(cr_phase == 2, "the writer reached %d of its 2 cues (a test build? lazy adoption?)", (int)cr_phase);
    CHECK(w_ret == REC, "the write returned %zd (errno %d), not %d", w_ret, w_errno, REC);
    CHECK(w_errno == EINPROGRESS, "the write changed errno to %d", w_errno);
    CHECK(synced == 1 && closed == 0, "the write into the log opened again was not synced (pt_synced +%llu, "
          "pt_sync_closed +%llu): passed through unnamed", (unsigned long long)synced, (unsigned long long)closed);
    OK(close(w_fd));
    window_check_log();
    printf("OK\n");
    return 0;
}

/* ---- window vacant_pending ---- */

static sem_t vp_go;

static void *vp_writer(void *arg) {
    (void)arg;
    char srcp[sizeof logp + 8], rec[REC];
    snprintf(srcp, sizeof srcp, "%s.own", logp);
    int own = open(srcp, O_RDWR | O_CREAT | O_TRUNC, 0644); /* a served write: this thread claims a record */
    memset(rec, 'o', REC);
    if (own < 0 || write(own, rec, REC) != REC) w_ret = -2;
    sem_post(&cr_go_close);
    while (sem_wait(&vp_go) != 0) {}
    if (w_ret != -2) window_writer(NULL);
    if (own >= 0) close(own);
    return NULL;
}

static int window_vacant_pending(void) {
    const char *want = "raise:10:upath.vacant.naming:1,raise:10:upath.pt_sync.before:1";
    window_needs(want, true);
    CHECK(sem_init(&cr_go_close, 0, 0) == 0 && sem_init(&vp_go, 0, 0) == 0 && sem_init(&rp_go, 0, 0) == 0 &&
          sem_init(&rp_reopened, 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR1, rp_writer_cue); /* each cue: lets the main thread act, waits for it */
    pending_log_open();
    uint64_t synced0 = st_counter(DK_C_pt_synced), closed0 = st_counter(DK_C_pt_sync_closed);
    uint64_t vacant0 = st_counter(DK_C_open_race_writes);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, vp_writer, NULL) == 0, "pthread_create");
    sem_take(&cr_go_close);
    CHECK(w_ret != -2, "the writer's served write failed");
    OK(close(w_fd)); /* vacated: the writer's thread has a record */
    sem_post(&vp_go);
    /* at the writer's naming: the log opened again, pending */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (sem_timedwait(&rp_go, &until) != 0)
        CHECK(errno == EINTR, "the writer did not reach upath.vacant.naming in 10 s (the write took another way)");
    int again = OK(open(logp, O_WRONLY | O_APPEND));
    CHECK(again == w_fd, "the reopen got number %d, not the closed %d", again, (int)w_fd);
    sem_post(&rp_reopened);
    /* at the writer's fdatasync: the log closed again -- must wait for it */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (sem_timedwait(&rp_go, &until) != 0)
        CHECK(errno == EINTR, "the writer did not reach its fdatasync in 10 s (pt_synced +%llu)",
              (unsigned long long)(st_counter(DK_C_pt_synced) - synced0));
    sem_post(&rp_reopened);
    OK(close(again));
    pthread_join(t, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, closed = st_counter(DK_C_pt_sync_closed) - closed0;
    uint64_t vacant = st_counter(DK_C_open_race_writes) - vacant0;
    printf("window vacant_pending: cues reached %d of 2; the write returned %zd (errno %d); through the vacated "
           "number +%llu; pt_synced +%llu, pt_sync_closed +%llu\n", (int)cr_phase, w_ret, w_errno,
           (unsigned long long)vacant, (unsigned long long)synced, (unsigned long long)closed);
    CHECK(w_ret == REC, "the write returned %zd (errno %d), not %d", w_ret, w_errno, REC);
    CHECK(w_errno == EINPROGRESS, "the write changed errno to %d", w_errno);
    CHECK(synced == 1 && closed == 0, "the write into the log opened again was not synced (pt_synced +%llu, "
          "pt_sync_closed +%llu): named with no slot, the pending descriptor's close did not wait",
          (unsigned long long)synced, (unsigned long long)closed);
    window_check_log();
    printf("OK\n");
    return 0;
}

/* ---- window pending_close ---- */

static void pc_closer_cue(int sig) {
    (void)sig;
    int e = errno;
    sem_post(&vp_go);
    struct timespec ts = {0, 200 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    handler_done = 1;
    errno = e;
}

static void *pc_writer(void *arg) {
    (void)arg;
    while (sem_wait(&vp_go) != 0) {}
    window_writer(NULL);
    return NULL;
}

static int window_pending_close(void) {
    const char *want = "raise:12:upath.pending_drop.cleared:1";
    window_needs(want, true);
    CHECK(sem_init(&vp_go, 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR2, pc_closer_cue);
    pending_log_open(); /* pending: never used before its close */
    uint64_t synced0 = st_counter(DK_C_pt_synced), served0 = st_counter(DK_C_appends);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, pc_writer, NULL) == 0, "pthread_create");
    int rc = close(w_fd); /* pc_closer_cue runs inside, the pending state cleared */
    CHECK(rc == 0, "close: %s", strerror(errno));
    pthread_join(t, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, served = st_counter(DK_C_appends) - served0;
    struct stat st;
    CHECK(syscall(SYS_stat, logp, &st) == 0, "stat the log");
    long long past = (long long)st.st_size - (long long)BASE;
    printf("window pending_close: the write returned %zd (errno %d); %lld bytes past the base; served +%llu, "
           "pt_synced +%llu\n", w_ret, w_errno, past, (unsigned long long)served, (unsigned long long)synced);
    CHECK(handler_done, "the crash point was not reached (a test build? lazy adoption?)");
    if (w_ret == -1) {
        CHECK(w_errno == EBADF, "the write failed with errno %d, not EBADF", w_errno);
        CHECK(past == 0, "the write failed but %lld bytes reached the log", past);
    } else {
        CHECK(w_ret == REC, "the write returned %zd", w_ret);
        CHECK(served + synced == 1, "the write returned its count but was neither served nor synced (served +%llu, "
              "pt_synced +%llu): it reached the file named nowhere", (unsigned long long)served,
              (unsigned long long)synced);
    }
    printf("OK\n");
    return 0;
}

/* ---- window first_write ---- */

static int pc_writer_c11(void *arg) {
    pc_writer(arg);
    return 0;
}

/* c11: the writer made by C11 thrd_create (glibc makes it without the exported pthread_create: review 18, #10).
 * late: the writer made after the close, before the reopen -- the number was closed while the program had no
 * thread of its own, so the close did not vacate it (review 18, #10b). */
static int window_first_write(bool c11, bool late) {
    const char *want = "raise:12:shim.open.adopting:2";
    window_needs(want, false);
    CHECK(sem_init(&vp_go, 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR2, pc_closer_cue); /* lets the writer write, stays 200 ms */
    what = W_WRITE;
    w_fd = OK(open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)); /* the first open: cue #1, no-op */
    handler_done = 0;
    uint64_t synced0 = st_counter(DK_C_pt_synced), served0 = st_counter(DK_C_appends);
    pthread_t t;
    thrd_t t11;
    if (late) OK(close(w_fd));
    if (c11) CHECK(thrd_create(&t11, pc_writer_c11, NULL) == thrd_success, "thrd_create");
    else CHECK(pthread_create(&t, NULL, pc_writer, NULL) == 0, "pthread_create"); /* no call of its own yet */
    if (!late) OK(close(w_fd));
    int again = OK(open(logp, O_WRONLY | O_APPEND)); /* pc_closer_cue runs inside, after the kernel's open */
    CHECK(again == w_fd, "the reopen got number %d, not the closed %d", again, (int)w_fd);
    if (c11) thrd_join(t11, NULL);
    else pthread_join(t, NULL);
    OK(close(again));
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, served = st_counter(DK_C_appends) - served0;
    printf("window first_write: the write returned %zd (errno %d); served +%llu, pt_synced +%llu\n", w_ret, w_errno,
           (unsigned long long)served, (unsigned long long)synced);
    CHECK(handler_done, "the crash point was not reached (a test build?)");
    CHECK(w_ret == REC, "the write returned %zd (errno %d), not %d", w_ret, w_errno, REC);
    CHECK(served + synced >= 1, "the write returned its count but was neither served nor synced (served +%llu, "
          "pt_synced +%llu): it reached the reopened file named nowhere", (unsigned long long)served,
          (unsigned long long)synced);
    struct stat st;
    CHECK(syscall(SYS_stat, logp, &st) == 0 && st.st_size == REC, "the log holds %lld bytes, not one record",
          (long long)st.st_size);
    printf("OK\n");
    return 0;
}

/* ---- window adopt_reopen ---- */

static sem_t ar_close, ar_reopened;

/* The writer's adoption bound its slot: the main thread closes the number and opens the log again at it
 * (pending) before the adoption's claim ends. */
static void ar_writer_cue(int sig) {
    (void)sig;
    int e = errno;
    sem_post(&ar_close);
    while (sem_wait(&ar_reopened) != 0) {}
    handler_done = 1;
    errno = e;
}

static int window_adopt_reopen(void) {
    const char *want = "raise:12:upath.pending_adopt.ended:1";
    window_needs(want, true);
    CHECK(sem_init(&ar_close, 0, 0) == 0 && sem_init(&ar_reopened, 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR2, ar_writer_cue);
    pending_log_open(); /* pending: the writer's write adopts it (cue #1) */
    uint64_t synced0 = st_counter(DK_C_pt_synced), served0 = st_counter(DK_C_appends);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, window_writer, NULL) == 0, "pthread_create");
    sem_take(&ar_close);
    OK(close(w_fd));
    int again = OK(open(logp, O_WRONLY | O_APPEND)); /* pending, at the number */
    CHECK(again == w_fd, "the reopen got number %d, not the closed %d", again, (int)w_fd);
    sem_post(&ar_reopened);
    pthread_join(t, NULL);
    char rec[REC];
    record(rec);
    ssize_t n = write(again, rec, REC); /* this thread's, through the reopened number */
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, served = st_counter(DK_C_appends) - served0;
    printf("window adopt_reopen: the writer's write returned %zd (errno %d), the reopened number's %zd; served "
           "+%llu, pt_synced +%llu\n", w_ret, w_errno, n, (unsigned long long)served, (unsigned long long)synced);
    CHECK(handler_done, "the crash point was not reached (a test build? lazy adoption?)");
    CHECK(w_ret == REC && n == REC, "a write failed (the writer's %zd, errno %d; the reopened number's %zd)", w_ret,
          w_errno, n);
    CHECK(served + synced == 2, "%llu of the 2 writes were neither served nor synced (served +%llu, pt_synced +%llu): "
          "the reopened log reached the kernel named nowhere", 2 - (unsigned long long)(served + synced),
          (unsigned long long)served, (unsigned long long)synced);
    OK(close(again));
    struct stat st;
    CHECK(syscall(SYS_stat, logp, &st) == 0 && (unsigned long long)st.st_size == BASE + 2 * REC,
          "the log holds %lld bytes past its base, not two records", (long long)st.st_size - (long long)BASE);
    printf("OK\n");
    return 0;
}

/* ---- window adopt_reclaimed ---- */

static sem_t rc_in, rc_go;
static volatile int a_done;

/* The second adoption (thread C's, of the reopened log) has claimed the number: it waits there. */
static void rc_claimer_cue(int sig) {
    (void)sig;
    int e = errno;
    sem_post(&rc_in);
    while (sem_wait(&rc_go) != 0) {}
    errno = e;
}

static void *rc_writer_a(void *arg) {
    window_writer(arg);
    __atomic_store_n(&a_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static ssize_t c_ret;
static void *rc_writer_c(void *arg) {
    (void)arg;
    char rec[REC];
    record(rec);
    c_ret = write(w_fd, rec, REC);
    return NULL;
}

static int window_adopt_reclaimed(void) {
    const char *want = "raise:12:upath.pending_adopt.ended:1,raise:10:upath.pending_adopt.claimed:2";
    window_needs(want, true);
    CHECK(sem_init(&ar_close, 0, 0) == 0 && sem_init(&ar_reopened, 0, 0) == 0 && sem_init(&rc_in, 0, 0) == 0 &&
          sem_init(&rc_go, 0, 0) == 0, "sem_init: %s", strerror(errno));
    on_signal(SIGUSR2, ar_writer_cue);
    on_signal(SIGUSR1, rc_claimer_cue);
    pending_log_open(); /* pending: A's write adopts it */
    uint64_t synced0 = st_counter(DK_C_pt_synced), served0 = st_counter(DK_C_appends);
    pthread_t a, c;
    CHECK(pthread_create(&a, NULL, rc_writer_a, NULL) == 0, "pthread_create");
    sem_take(&ar_close); /* A's adoption bound its slot, its claim not ended */
    OK(close(w_fd));
    int again = OK(open(logp, O_WRONLY | O_APPEND)); /* pending at the number */
    CHECK(again == w_fd, "the reopen got number %d, not the closed %d", again, (int)w_fd);
    CHECK(pthread_create(&c, NULL, rc_writer_c, NULL) == 0, "pthread_create");
    sem_take(&rc_in); /* C claimed the reopened log */
    sem_post(&ar_reopened); /* A ends its claim -- not C's -- and writes */
    /* A's write either returns at once (its claim end took C's: the number is no one's) or waits for C's
     * adoption; a second is plenty for the first (a pass here under a longer stall cannot hide a failure
     * elsewhere: C's write is checked too). */
    for (int i = 0; i < 100 && !__atomic_load_n(&a_done, __ATOMIC_SEQ_CST); i++) usleep(10 * 1000);
    sem_post(&rc_go);
    pthread_join(a, NULL);
    pthread_join(c, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, served = st_counter(DK_C_appends) - served0;
    printf("window adopt_reclaimed: A's write returned %zd (errno %d), C's %zd; served +%llu, pt_synced +%llu\n",
           w_ret, w_errno, c_ret, (unsigned long long)served, (unsigned long long)synced);
    CHECK(handler_done, "the crash point was not reached (a test build? lazy adoption?)");
    CHECK(w_ret == REC && c_ret == REC, "a write failed (A's %zd, errno %d; C's %zd)", w_ret, w_errno, c_ret);
    CHECK(served + synced == 2, "%llu of the 2 writes were neither served nor synced (served +%llu, pt_synced +%llu): "
          "an adoption's end took another thread's claim, and the log was written named nowhere",
          2 - (unsigned long long)(served + synced), (unsigned long long)served, (unsigned long long)synced);
    OK(close(again));
    struct stat st;
    CHECK(syscall(SYS_stat, logp, &st) == 0 && (unsigned long long)st.st_size == BASE + 2 * REC,
          "the log holds %lld bytes past its base, not two records", (long long)st.st_size - (long long)BASE);
    printf("OK\n");
    return 0;
}

static int window(const char *how, const char *change) {
    if (strcmp(how, "adopt_reopen") == 0) return window_adopt_reopen();
    if (strcmp(how, "adopt_reclaimed") == 0) return window_adopt_reclaimed();
    if (strcmp(how, "first_write") == 0) return window_first_write(strcmp(change, "c11") == 0, strcmp(change, "late") == 0);
    if (strcmp(how, "pending_close") == 0) return window_pending_close();
    if (strcmp(how, "vacant_pending") == 0) return window_vacant_pending();
    if (strcmp(how, "reopen_pending") == 0) return window_reopen_pending();
    if (strcmp(how, "closed_reopen") == 0) return window_closed_reopen();
    const char *whats[] = {"write", "posix_fallocate", "copy_file_range", "sendfile"};
    what = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(change, whats[i]) == 0) what = i;
    CHECK(what >= 0, "window HOW write|posix_fallocate|copy_file_range|sendfile, not %s", change);
    bool dup = strcmp(how, "dup2") == 0, reopen = strcmp(how, "reopen") == 0;
    bool own = strcmp(how, "handler_close") == 0, raw = strcmp(how, "rawclose") == 0;
    CHECK(dup || reopen || own || raw || strcmp(how, "close") == 0, "window close|dup2|reopen|handler_close|rawclose, not %s",
          how);
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:upath.pt_sync.before:1 (a test build)");
    st_watchdog(30);
    CHECK(sem_init(&in_window, 0, 0) == 0, "sem_init: %s", strerror(errno));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
    window_open();
    int null_fd = dup ? OK(open("/dev/null", O_WRONLY)) : -1;
    uint64_t synced0 = st_counter(DK_C_pt_synced), closed0 = st_counter(DK_C_pt_sync_closed);
    if (own || raw) return window_unwaited(own, synced0, closed0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, window_writer, NULL) == 0, "pthread_create");
    while (sem_wait(&in_window) != 0) CHECK(errno == EINTR, "sem_wait: %s", strerror(errno));
    /* the writer is in its handler, between the kernel's write and the library's fdatasync */
    int rc = dup ? dup2(null_fd, w_fd) : close(w_fd);
    int waited = handler_done;
    CHECK(rc >= 0, "%s: %s", how, strerror(errno));
    char otherp[sizeof logp + 8];
    snprintf(otherp, sizeof otherp, "%s.other", logp);
    /* reopen: the number goes to another managed file -- the write's fdatasync must have synced the log first */
    int other = reopen ? OK(open(otherp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) : -1;
    CHECK(!reopen || other == w_fd, "the reopen got number %d, not the closed %d", other, (int)w_fd);
    pthread_join(t, NULL);
    uint64_t synced = st_counter(DK_C_pt_synced) - synced0, closed = st_counter(DK_C_pt_sync_closed) - closed0;
    printf("window %s: the %s returned %s the writer's handler; the write returned %zd (errno %d); pt_synced +%llu, "
           "pt_sync_closed +%llu\n", how, dup ? "dup2" : "close", waited ? "after" : "BEFORE", w_ret, w_errno, (unsigned long long)synced,
           (unsigned long long)closed);
    CHECK(handler_done, "the crash point was not reached (DAXKIT_TEST_CRASH, a test build?)");
    CHECK(waited, "%s returned while the write was between the kernel's write and its fdatasync: it did not wait",
          dup ? "dup2" : "close");
    CHECK(w_ret == REC, "the write returned %zd (errno %d), not %d: its bytes are in the file", w_ret, w_errno, REC);
    CHECK(w_errno == EINPROGRESS, "the write changed errno to %d", w_errno);
    CHECK(synced == 1 && closed == 0, "the fdatasync did not sync the file (pt_synced +%llu, pt_sync_closed +%llu)",
          (unsigned long long)synced, (unsigned long long)closed);
    if (dup) OK(close(w_fd));
    if (reopen) {
        struct stat ost;
        CHECK(fstat(other, &ost) == 0 && ost.st_size == 0, "the file opened at the number holds bytes");
        OK(close(other));
    }
    window_check_log();
    printf("OK\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) SKIP("usage: shim_pt_sync_ebadf DIR ROUNDS | DIR window close|dup2|reopen|handler_close|rawclose|closed_reopen|reopen_pending|vacant_pending|pending_close|first_write|adopt_reopen|adopt_reclaimed [write|posix_fallocate|copy_file_range|sendfile]");
    snprintf(logp, sizeof logp, "%s/log", argv[1]);
    if (strcmp(argv[2], "window") == 0) return window(argc > 3 ? argv[3] : "", argc > 4 ? argv[4] : "write");
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

/* Description: a fork inside a thread's owed-lines window (what a signal handler's fork between a journal copy's
 * hand-out and its write-back does; alog_journal.c, "Owed lines") lets go of the log in the child like any
 * other fork (review 20, finding 3): the child maps nothing of the log after the fork (it would keep the log's
 * file, and with it the parent's flock, for its whole life: no recovery after the parent's crash), and its
 * write-back after the handler returns faults nowhere -- also when another thread grew the journal between
 * the hand-out and the fork (the owed lines then lie in a retired mapping, which the child lets go of too).
 * For each case ("plain", "grow"): copies of 128 B until one hands this thread lines, [a growth], fork; the
 * child counts the log's mappings in /proc/self/maps (must be 0), ends the window (alog_jrnl_owed_end) and
 * exits 0; the parent then ends its own window and checks the file after sync, close and open.
 * Usage: atomic_jowed_fork [DIR] */
#include <sys/wait.h>

#include "atomic_engine_test.h"
#include "common/dk.h"

#define FILE_BYTES (1u << 20)
#define LOG_BYTES (16u << 20)
#define COPY_BYTES 128u

static char model[FILE_BYTES];

static int log_mappings(const char *name) {
    FILE *m = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;
    while (m && fgets(line, sizeof line, m)) n += strstr(line, name) != NULL;
    if (m) fclose(m);
    return n;
}

static void one_case(const char *path, const char *log_name, bool grow) {
    struct alog_file *f = at_engine_open(path, DAXKIT_ATOMIC_JOURNAL, LOG_BYTES);
    if (f->persist_as == DK_MEDIUM_PAGECACHE) at_skip("pagecache medium: nothing is handed out");
    static char buf[COPY_BYTES];
    struct alog_jowed o;
    for (uint32_t i = 0;; i++) {
        AT_CHECK(i < 5000, "no copy handed its thread lines in %u copies", i);
        uint64_t off = (uint64_t)(i % (FILE_BYTES / 4096)) * 4096 + 64;
        for (uint32_t b = 0; b < COPY_BYTES; b++) buf[b] = (char)(i * 17 + b + grow);
        memcpy(model + off, buf, COPY_BYTES);
        alog_jrnl_owed_begin(&o);
        AT_OK(alog_copy(f, off, buf, COPY_BYTES));
        if (o.f) break;
        alog_jrnl_owed_end(&o);
    }
    if (grow) AT_OK(alog_jrnl_grow(f)); /* another thread's growth inside the window: the lines in a retired mapping */
    int before = log_mappings(log_name);
    AT_CHECK(before >= 1 + grow, "%s: the parent maps the log %d time(s) before the fork", grow ? "grow" : "plain",
             before);
    fflush(stdout);
    pid_t c = fork(); /* as a signal handler's fork inside the window */
    AT_CHECK(c >= 0, "fork: %s", strerror(errno));
    if (c == 0) {
        int n = log_mappings(log_name);
        if (n) {
            printf("FAIL: %s: the fork child still maps the log %d time(s)\n", grow ? "grow" : "plain", n);
            _exit(1);
        }
        alog_jrnl_owed_end(&o); /* the handler returns: the window goes on in the child */
        _exit(0);
    }
    int st;
    AT_CHECK(waitpid(c, &st, 0) == c, "waitpid");
    AT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the fork child %s %d", grow ? "grow" : "plain",
             WIFSIGNALED(st) ? "died of signal" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    alog_jrnl_owed_end(&o);
    AT_OK(alog_sync(f));
    AT_OK(alog_close(f));
    f = at_engine_open(path, DAXKIT_ATOMIC_JOURNAL, LOG_BYTES);
    at_check_blocks(f, model, FILE_BYTES / 4096, grow ? "grow: reopened" : "plain: reopened");
    AT_OK(alog_close(f));
    printf("%s: parent mapped the log %d time(s) at the fork, the child 0; the child's write-back ended\n",
           grow ? "grow" : "plain", before);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    setenv("DAXKIT_TEST_ATOMIC_JWINDOW", "0", 1);
    char path[600];
    at_path(path, sizeof path, "fork.bin");
    at_make_model_file(path, FILE_BYTES, 3, model);
    one_case(path, "fork.bin.alog", false);
    one_case(path, "fork.bin.alog", true);
    printf("PASS\n");
    return 0;
}

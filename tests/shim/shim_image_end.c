/* Calls that end or replace the process image which glibc implements without any call this library sees
 * (review 11, finding 5; closefrom, finding 7, is shim_errno's):
 *
 *   quick_exit  a child appends 100 bytes through O_APPEND and ends with quick_exit(0) after an
 *               at_quick_exit handler of its own that appends 100 more: the file holds 200 bytes (posix
 *               mode lost them all: glibc's quick_exit ends in its internal _exit, with no destructor).
 *   execveat    a child appends 100 bytes and execveat()s /bin/true: the file holds 100 bytes after the
 *               new image ends (execveat was not interposed: the old image's appends were never published).
 *
 * The file is checked with raw system calls, without the library. argv: DIR CASE. */
#include "shim_test.h"

static char path[PATH_MAX];
static int qe_fd = -1;

static void qe_handler(void) {
    char b[100];
    memset(b, 'h', sizeof b);
    if (write(qe_fd, b, sizeof b) != (ssize_t)sizeof b) _exit(20);
}

static void child_appends_then(const char *how) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) _exit(10);
    char b[100];
    memset(b, 'c', sizeof b);
    if (write(fd, b, sizeof b) != (ssize_t)sizeof b) _exit(11);
    if (!strcmp(how, "quick_exit")) {
        qe_fd = fd;
        if (at_quick_exit(qe_handler) != 0) _exit(12);
        quick_exit(0);
    }
    char *argv[] = {"true", NULL}, *envp[] = {NULL};
    execveat(AT_FDCWD, "/bin/true", argv, envp, 0);
    _exit(13);
}

static void image_end(const char *how, long long want) {
    pid_t pid = fork();
    if (pid < 0) FAIL("fork: %s", strerror(errno));
    if (pid == 0) child_appends_then(how);
    int status;
    if (waitpid(pid, &status, 0) != pid) FAIL("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("%s child: %s %d", how, WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    long long size = st_ksize(path);
    if (size != want) FAIL("%s: the file holds %lld bytes after the child ended, want %lld", how, size, want);
}

int main(int argc, char **argv) {
    st_require_library();
    const char *dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "";
    st_path(path, sizeof path, dir, "image_end.bin");
    if (!strcmp(which, "quick_exit")) image_end(which, 200);
    else if (!strcmp(which, "execveat")) image_end(which, 100);
    else FAIL("unknown case '%s' (quick_exit, execveat)", which);
    printf("ok: %s\n", which);
    return 0;
}

/* Process calls: fork, vfork, exec family, spawn, system, popen, _exit.
 * Each is a publish point; descriptors inherited by another program image are handed to the kernel. */
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim/shim.h"

/* The program makes a thread: from now on a close vacates its number (upath/fdtab.c: up_fd_vacate) -- the new
 * thread's first call may be a write through it -- and the numbers closed before are vacated now (upath.h).
 * The library's own threads never write through the program's descriptors and start through the real call
 * (common/thread.c). */
DK_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    up_program_threads_begin();
    return DK_REAL(pthread_create)(t, attr, fn, arg);
}
/* C11 threads: glibc's thrd_create makes the thread without the exported pthread_create (review 18, #10). */
DK_EXPORT int thrd_create(thrd_t *t, thrd_start_t fn, void *arg) {
    up_program_threads_begin();
    return DK_REAL(thrd_create)(t, fn, arg);
}

DK_EXPORT pid_t fork(void) {
    bool nested = up_fork_prepare();
    pid_t p = DK_REAL(fork)();
    int e = errno;
    if (p == 0) {
        dk_ifd_after_fork_child(); /* another thread's window never closes in the child */
        up_fork_child(nested);
    } else {
        up_fork_parent(p < 0, nested);
    }
    errno = e;
    return p;
}

/* vfork (review 11, finding 14: it was served as fork -- the child's stores never reached the parent, which
 * was not suspended, and a large process paid, or failed with ENOMEM, a full fork). The real vfork system
 * call, so that the child shares the parent's memory until it execs or exits, with nothing of the library
 * done in the child: it runs on the calling thread's stack and thread-local storage in the parent's memory,
 * where every lock, counter and table is the parent's. So the parent does before the call what a spawn needs
 * (up_exec_prepare(true), as for posix_spawn: appends published, offsets handed to the kernel, inherited
 * descriptors served by the kernel from now on), then marks the thread (up_vfork_child): while the child
 * lives every interposed call -- its dup2, close, open, execve, _exit -- passes straight to libc. The parent
 * clears the mark when the call returns in it (the child's exec or exit has happened by then).
 * A function that returns twice cannot be written in C (the child's return pops the frame the parent
 * returns through), so the entry is assembly, as glibc's vfork: the return address is kept in a register
 * across the system call (x86-64; elsewhere vfork is served as fork, as before). */
__attribute__((visibility("hidden"), used)) void dk_vfork_before(void) {
    if (!up_enabled) return;
    up_exec_prepare(true);
    up_vfork_child = true;
}
/* In the parent, with the system call's result (a pid, or -errno). */
__attribute__((visibility("hidden"), used)) pid_t dk_vfork_after(long r) {
    up_vfork_child = false;
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return (pid_t)r;
}
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        "vfork:\n"
        "  sub $8, %rsp\n"            /* the call below needs a 16-byte aligned stack */
        "  call dk_vfork_before\n"
        "  add $8, %rsp\n"
        "  pop %rdi\n"                /* the return address: in a register, which each process keeps */
        "  mov $58, %eax\n"           /* SYS_vfork */
        "  syscall\n"
        "  push %rdi\n"
        "  test %rax, %rax\n"
        "  jz 1f\n"
        "  mov %rax, %rdi\n"
        "  jmp dk_vfork_after\n"      /* the parent: clears the mark, sets errno */
        "1: ret\n"                    /* the child: returns 0 with the mark set */
        ".size vfork, .-vfork\n");
#else
DK_EXPORT pid_t vfork(void) { return fork(); } /* the child gets a private copy to work on */
#endif

static int exec_done(int r) {
    int e = errno;
    up_exec_failed();
    errno = e;
    return r;
}

DK_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    up_exec_prepare(false);
    return exec_done(DK_REAL(execve)(path, argv, envp));
}
DK_EXPORT int execv(const char *path, char *const argv[]) {
    up_exec_prepare(false);
    return exec_done(DK_REAL(execv)(path, argv));
}
DK_EXPORT int execvp(const char *file, char *const argv[]) {
    up_exec_prepare(false);
    return exec_done(DK_REAL(execvp)(file, argv));
}
DK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    up_exec_prepare(false);
    return exec_done(DK_REAL(execvpe)(file, argv, envp));
}
/* execveat (glibc 2.34+) replaces the image as execve does: the old image's appends are published first
 * (review 11, finding 5's addendum: they were never published). */
DK_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    up_exec_prepare(false);
    return exec_done(DK_REAL(execveat)(dirfd, path, argv, envp, flags));
}
DK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    up_exec_prepare(false);
    return exec_done(DK_REAL(fexecve)(fd, argv, envp));
}

/* execl family: collect the variadic arguments into an argv on the stack (bounded like ARG_MAX). */
#define EXECL_ARGS_MAX 4096
#define COLLECT_ARGS(arg0, ap, argv, n)                                   \
    do {                                                                  \
        argv[0] = (char *)(arg0);                                         \
        n = 1;                                                            \
        while (argv[n - 1] && n < EXECL_ARGS_MAX) argv[n++] = va_arg(ap, char *); \
        if (argv[n - 1]) {                                                \
            va_end(ap);                                                   \
            errno = E2BIG;                                                \
            return -1;                                                    \
        }                                                                 \
    } while (0)

DK_EXPORT int execl(const char *path, const char *arg0, ...) {
    char *argv[EXECL_ARGS_MAX];
    int n;
    va_list ap;
    va_start(ap, arg0);
    COLLECT_ARGS(arg0, ap, argv, n);
    va_end(ap);
    return execv(path, argv);
}
DK_EXPORT int execlp(const char *file, const char *arg0, ...) {
    char *argv[EXECL_ARGS_MAX];
    int n;
    va_list ap;
    va_start(ap, arg0);
    COLLECT_ARGS(arg0, ap, argv, n);
    va_end(ap);
    return execvp(file, argv);
}
DK_EXPORT int execle(const char *path, const char *arg0, ...) {
    char *argv[EXECL_ARGS_MAX];
    int n;
    va_list ap;
    va_start(ap, arg0);
    COLLECT_ARGS(arg0, ap, argv, n);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

DK_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
    up_exec_prepare(true);
    return DK_REAL(posix_spawn)(pid, path, fa, at, argv, envp);
}
DK_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
    up_exec_prepare(true);
    return DK_REAL(posix_spawnp)(pid, file, fa, at, argv, envp);
}
DK_EXPORT int system(const char *cmd) {
    up_exec_prepare(true);
    return DK_REAL(system)(cmd);
}
DK_EXPORT FILE *popen(const char *cmd, const char *mode) {
    up_exec_prepare(true);
    return DK_REAL(popen)(cmd, mode);
}

DK_EXPORT void _exit(int status) {
    up_fini();
    DK_REAL(_exit)(status);
    __builtin_unreachable();
}
DK_EXPORT void _Exit(int status) {
    up_fini();
    DK_REAL(_Exit)(status);
    __builtin_unreachable();
}

/* A library preloaded after libdaxkit.so by symnext.sh: it redefines fsync and getpid (straight to the kernel),
 * so the library's RTLD_NEXT lookup must find these before libc's (tests/shim/shim_symnext.c). */
#include <sys/syscall.h>
#include <unistd.h>

int fsync(int fd) { return (int)syscall(SYS_fsync, fd); }
pid_t getpid(void) { return (pid_t)syscall(SYS_getpid); }

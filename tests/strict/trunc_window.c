/* Description: a test-only interposer preloaded *after* libdaxkit.so (LD_PRELOAD="libdaxkit.so
 * libdk_trunc_window.so"): the library's own call of the kernel's truncate(2) (DK_REAL(truncate), looked up after
 * the library) lands here, and a hook the test program installs (dk_trunc_window_hook, found with
 * dlsym(RTLD_DEFAULT)) runs first -- inside truncate by name's window, after everything the library does before
 * the kernel's call and before the kernel cuts the file (tests/strict/trunc_name.c). Without a hook: the kernel's
 * call. The same for an open with O_TRUNC (open, open64, openat, openat64: the library's kernel call of such an
 * open). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/types.h>

void (*dk_trunc_window_hook)(const char *path);

typedef int (*truncate_fn)(const char *, off_t);

static int call(const char *name, const char *path, off_t len) {
    truncate_fn real = (truncate_fn)dlsym(RTLD_NEXT, name);
    void (*hook)(const char *) = __atomic_load_n(&dk_trunc_window_hook, __ATOMIC_ACQUIRE);
    if (hook) hook(path);
    return real(path, len);
}

int truncate(const char *path, off_t len) { return call("truncate", path, len); }
int truncate64(const char *path, off_t len) { return call("truncate64", path, len); }

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

static void opening(const char *path, int flags) {
    void (*hook)(const char *) = __atomic_load_n(&dk_trunc_window_hook, __ATOMIC_ACQUIRE);
    if (hook && (flags & O_TRUNC)) hook(path);
}

#define MODE_ARG(flags)                                           \
    mode_t mode = 0;                                              \
    if ((flags) & (O_CREAT | __O_TMPFILE)) {                      \
        va_list ap;                                               \
        va_start(ap, flags);                                      \
        mode = va_arg(ap, mode_t);                                \
        va_end(ap);                                               \
    }

int open(const char *path, int flags, ...) {
    MODE_ARG(flags);
    opening(path, flags);
    return ((open_fn)dlsym(RTLD_NEXT, "open"))(path, flags, mode);
}
int open64(const char *path, int flags, ...) {
    MODE_ARG(flags);
    opening(path, flags);
    return ((open_fn)dlsym(RTLD_NEXT, "open64"))(path, flags, mode);
}
int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags);
    opening(path, flags);
    return ((openat_fn)dlsym(RTLD_NEXT, "openat"))(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags);
    opening(path, flags);
    return ((openat_fn)dlsym(RTLD_NEXT, "openat64"))(dirfd, path, flags, mode);
}

/* Calls where the kernel touches managed file data itself: the program mapping a file, and in-kernel
 * copies. Each publishes our appends first (the program's mapping and the kernel must see every byte),
 * and hands the descriptor offset to the kernel and back when the call uses it. */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "shim/shim.h"
#include "upath/atomic_mmap.h"

static void *mmap_common(void *addr, size_t len, int prot, int fl, int fd, off_t off, bool is64) {
    void *amap;
    if (up_enabled && fd >= 0 && !(fl & MAP_ANONYMOUS)) up_resolve(fd); /* the program maps it: ours to know */
    if (up_enabled && fd >= 0 && !(fl & MAP_ANONYMOUS) && up_fd_slot(fd)) {
        DK_ERRNO_SAVE;
        up_program_maps(fd); /* its pages stay the medium's; strict mode: waiting writes applied, every later one at once */
        DK_ERRNO_RESTORE;
    }
    if (up_enabled && fd >= 0 && up_fd_slot(fd) && up_atomic_mmap(addr, len, prot, fl, fd, off, &amap)) return amap;
    if (up_enabled && fd >= 0 && !(fl & MAP_ANONYMOUS) && up_fd_slot(fd)) {
        DK_ERRNO_SAVE;
        up_hand_to_kernel(fd); /* mapping by the program is a publish point */
        DK_ERRNO_RESTORE;
    }
    return is64 ? DK_REAL(mmap64)(addr, len, prot, fl, fd, off) : DK_REAL(mmap)(addr, len, prot, fl, fd, off);
}
DK_EXPORT void *mmap(void *addr, size_t len, int prot, int fl, int fd, off_t off) {
    return mmap_common(addr, len, prot, fl, fd, off, false);
}
DK_EXPORT void *mmap64(void *addr, size_t len, int prot, int fl, int fd, off_t off) {
    return mmap_common(addr, len, prot, fl, fd, off, true);
}
DK_EXPORT int munmap(void *addr, size_t len) {
    int rc;
    if (up_atomic_munmap(addr, len, &rc)) return rc; /* DAXKIT_ATOMIC_MMAP */
    return DK_REAL(munmap)(addr, len);
}
DK_EXPORT int msync(void *addr, size_t len, int fl) {
    int rc;
    if (up_atomic_msync(addr, len, fl, &rc)) return rc;
    return DK_REAL(msync)(addr, len, fl);
}
DK_EXPORT int mprotect(void *addr, size_t len, int prot) {
    int rc;
    if (up_atomic_mprotect(addr, len, prot, &rc)) return rc; /* DAXKIT_ATOMIC_MMAP */
    return DK_REAL(mprotect)(addr, len, prot);
}
DK_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int fl, ...) {
    void *to = NULL, *out;
    if (fl & MREMAP_FIXED) { /* the new address: only with MREMAP_FIXED */
        va_list ap;
        va_start(ap, fl);
        to = va_arg(ap, void *);
        va_end(ap);
    }
    if (up_atomic_mremap(old, old_len, new_len, fl, &out)) return out; /* DAXKIT_ATOMIC_MMAP */
    return DK_REAL(mremap)(old, old_len, new_len, fl, to);
}

/* An in-kernel copy's state from copy_begin to copy_done: whether its input is managed, and how the change
 * of its output began (shim.h: struct dk_pt). */
struct copy {
    bool min;
    struct dk_pt out;
};

/* Before an in-kernel copy: publish both ends; move offsets the call will use into the kernel. A managed
 * output is named in the call record (shim.h: dk_pt_name) from here until after the copy's fdatasync when the
 * call cannot block for ever (`bounded`: copy_file_range, whose ends are regular files; a sendfile from a
 * managed file), so a close, dup2 or reopen of the number meanwhile waits and the fdatasync syncs the file the
 * copy changed (review 16, finding 8). A sendfile from anything else and a splice (its input is a pipe) stay
 * unnamed (DK_PT_UNNAMED): their input may block for ever, and a close of the output would wait for it (as a
 * blocked pipe write held up an open: review 15, finding 6); ptsync.c's rule answers a close meanwhile. */
static void copy_begin(int in, const off_t *in_off, int out, const off_t *out_off, bool bounded, struct copy *c) {
    if (up_enabled) {
        up_resolve(in);
        up_resolve(out);
    }
    c->min = up_enabled && up_fd_slot(in);
    bool mout = up_enabled && up_fd_slot(out);
    c->out = (struct dk_pt){mout ? DK_PT_UNNAMED : DK_PT_KERNEL, NULL};
    if (!c->min && !mout) return;
    DK_ERRNO_SAVE;
    if (c->min) {
        up_hand_to_kernel(in);
        if (!in_off) up_offset_to_kernel(in);
        dk_count(DK_C_passthrough, 1);
    }
    if (mout) {
        up_hand_to_kernel(out);
        if (!out_off) up_offset_to_kernel(out);
        dk_count(DK_C_passthrough, 1);
    }
    DK_ERRNO_RESTORE;
    if (mout && (bounded || c->min)) {
        dk_pt_name(out, &c->out);
    }
}

/* After the kernel's copy (r its result): offsets back, our view of the output follows the kernel's change;
 * in sync and strict modes the bytes it wrote into a managed file are durable when the call returns, as a
 * write's are (review 11, finding 9: they were gone after a power loss) -- -1 with fdatasync's errno when
 * they cannot be made so, as for a passed-through write; the output's name left. */
static ssize_t copy_done(int in, const off_t *in_off, int out, const off_t *out_off, struct copy *c, ssize_t r) {
    if (!c->min && c->out.how == DK_PT_KERNEL) return r;
    DK_ERRNO_SAVE;
    if (c->min && !in_off) up_offset_from_kernel(in);
    if (c->out.how != DK_PT_KERNEL) {
        if (!out_off) up_offset_from_kernel(out);
        if (r > 0) up_kernel_changed_fd(out);
    }
    DK_ERRNO_RESTORE;
    return dk_pt_finish(&c->out, out, r > 0, r);
}

/* The kernel's copy `call` (an assignment to r) between copy_begin and copy_done. */
#define COPY(in, in_off, out, out_off, bounded, call)          \
    do {                                                       \
        struct copy c_;                                        \
        copy_begin(in, in_off, out, out_off, bounded, &c_);    \
        /* the library off at exit: a managed output's change  \
         * waits, or is synced, as a write's (rw.c SERVE_IF) */ \
        bool x_ = c_.out.how == DK_PT_KERNEL && up_exit_hold(out); \
        DK_PT_CALL(&c_.out, call);                             \
        r = copy_done(in, in_off, out, out_off, &c_, r);       \
        if (x_) r = up_exit_synced(out, r, r > 0); /* (the exit's own) */ \
    } while (0)

DK_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    ssize_t r;
    COPY(in, off, out, NULL, false, r = DK_REAL(sendfile)(out, in, off, n));
    return r;
}
DK_EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n) {
    ssize_t r;
    COPY(in, off, out, NULL, false, r = DK_REAL(sendfile64)(out, in, off, n));
    return r;
}
DK_EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n, unsigned int fl) {
    ssize_t r;
    COPY(in, in_off, out, out_off, true, r = DK_REAL(copy_file_range)(in, in_off, out, out_off, n, fl));
    return r;
}
DK_EXPORT ssize_t splice(int in, off_t *in_off, int out, off_t *out_off, size_t n, unsigned int fl) {
    ssize_t r;
    COPY(in, in_off, out, out_off, false, r = DK_REAL(splice)(in, in_off, out, out_off, n, fl));
    return r;
}

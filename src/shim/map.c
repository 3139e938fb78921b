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
        up_strict_program_maps(fd); /* strict mode: waiting writes applied, and every later one at once */
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

/* Before an in-kernel copy: publish both ends; move offsets the call will use into the kernel. Not named in
 * the call record (shim.h: DK_PT_UNNAMED): the hand-offs look the slots up by number, and a sendfile's or a
 * splice's input may be a pipe or socket that blocks for ever -- a close of out would wait for it (as a
 * blocked pipe write held up an open: review 15, finding 6). ptsync.c's rule answers a close meanwhile. */
static void copy_begin(int in, const off_t *in_off, int out, const off_t *out_off, bool *min, bool *mout) {
    if (up_enabled) {
        up_resolve(in);
        up_resolve(out);
    }
    *min = up_enabled && up_fd_slot(in);
    *mout = up_enabled && up_fd_slot(out);
    if (!*min && !*mout) return;
    DK_ERRNO_SAVE;
    if (*min) {
        up_hand_to_kernel(in);
        if (!in_off) up_offset_to_kernel(in);
        dk_count(DK_C_passthrough, 1);
    }
    if (*mout) {
        up_hand_to_kernel(out);
        if (!out_off) up_offset_to_kernel(out);
        dk_count(DK_C_passthrough, 1);
    }
    DK_ERRNO_RESTORE;
}

static void copy_end(int in, const off_t *in_off, int out, const off_t *out_off, bool min, bool mout, ssize_t r) {
    if (!min && !mout) return;
    DK_ERRNO_SAVE;
    if (min && !in_off) up_offset_from_kernel(in);
    if (mout) {
        if (!out_off) up_offset_from_kernel(out);
        if (r > 0) up_kernel_changed_fd(out);
    }
    DK_ERRNO_RESTORE;
}

/* Sync and strict modes: the bytes a kernel copy wrote into a managed file are durable when the call returns,
 * as a write's are (review 11, finding 9: copy_file_range, sendfile and splice into a managed file were gone
 * after a power loss). -1 when they cannot be made durable (errno from fdatasync), as a passed-through write. */
static ssize_t copy_durable(int out, bool mout, ssize_t r) {
    return dk_pt_finish(&(struct dk_pt){mout ? DK_PT_UNNAMED : DK_PT_KERNEL, NULL}, out, r > 0, r);
}

DK_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    bool a, b;
    copy_begin(in, off, out, NULL, &a, &b);
    ssize_t r = DK_REAL(sendfile)(out, in, off, n);
    copy_end(in, off, out, NULL, a, b, r);
    return copy_durable(out, b, r);
}
DK_EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n) {
    bool a, b;
    copy_begin(in, off, out, NULL, &a, &b);
    ssize_t r = DK_REAL(sendfile64)(out, in, off, n);
    copy_end(in, off, out, NULL, a, b, r);
    return copy_durable(out, b, r);
}
DK_EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n, unsigned int fl) {
    bool a, b;
    copy_begin(in, in_off, out, out_off, &a, &b);
    ssize_t r = DK_REAL(copy_file_range)(in, in_off, out, out_off, n, fl);
    copy_end(in, in_off, out, out_off, a, b, r);
    return copy_durable(out, b, r);
}
DK_EXPORT ssize_t splice(int in, off_t *in_off, int out, off_t *out_off, size_t n, unsigned int fl) {
    bool a, b;
    copy_begin(in, in_off, out, out_off, &a, &b);
    ssize_t r = DK_REAL(splice)(in, in_off, out, out_off, n, fl);
    copy_end(in, in_off, out, out_off, a, b, r);
    return copy_durable(out, b, r);
}

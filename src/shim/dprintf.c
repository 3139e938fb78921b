/* dprintf and vdprintf (and their _FORTIFY_SOURCE forms) on a managed descriptor: glibc formats into a
 * FILE built on the descriptor and writes it with its internal write, which no preload sees -- at the
 * kernel's offset and end, while daxkit keeps the descriptor's offset and appends (review 9, finding 18:
 * lines lost or overwritten in every mode). Here the text is formatted into a buffer (on the stack, a
 * malloc'd one when longer) and written with the interposed write: one write, as glibc's single flush of
 * short output; longer output is written until done, and a failed write returns -1 as glibc's does.
 * Unmanaged descriptors go to libc. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim/shim.h"

int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap);

static bool managed(int fd) { return up_enabled && (up_fd_slot(fd) || up_fd_pending_entry(fd)); }

/* flag < 0: plain vsnprintf; else the fortified one with that flag (it checks %n and the like). */
static int format(char *buf, size_t cap, int flag, const char *fmt, va_list ap) {
    return flag < 0 ? vsnprintf(buf, cap, fmt, ap) : __vsnprintf_chk(buf, cap, flag, cap, fmt, ap);
}

static int format_and_write(int fd, int flag, const char *fmt, va_list ap) {
    char stack[1024];
    char *buf = stack;
    va_list again;
    va_copy(again, ap);
    int n = format(stack, sizeof stack, flag, fmt, ap);
    if (n >= (int)sizeof stack) {
        buf = malloc((size_t)n + 1);
        n = buf ? format(buf, (size_t)n + 1, flag, fmt, again) : -1; /* malloc set errno */
    }
    va_end(again);
    int rc = n;
    for (int done = 0; rc >= 0 && done < n;) {
        ssize_t w = write(fd, buf + done, (size_t)(n - done));
        if (w <= 0) rc = -1; /* errno from write; 0 cannot happen for a regular file with n > 0 */
        else done += (int)w;
    }
    if (buf != stack) free(buf);
    return rc;
}

DK_EXPORT int vdprintf(int fd, const char *fmt, va_list ap) {
    if (!managed(fd)) return DK_REAL(vdprintf)(fd, fmt, ap);
    return format_and_write(fd, -1, fmt, ap);
}

DK_EXPORT int dprintf(int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = managed(fd) ? format_and_write(fd, -1, fmt, ap) : DK_REAL(vdprintf)(fd, fmt, ap);
    va_end(ap);
    return r;
}

DK_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap) {
    if (!managed(fd)) return DK_REAL(__vdprintf_chk)(fd, flag, fmt, ap);
    return format_and_write(fd, flag, fmt, ap);
}

DK_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = managed(fd) ? format_and_write(fd, flag, fmt, ap) : DK_REAL(__vdprintf_chk)(fd, flag, fmt, ap);
    va_end(ap);
    return r;
}

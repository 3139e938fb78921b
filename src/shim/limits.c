/* Resource limits the data path honours: before the program sets a finite RLIMIT_FSIZE (setrlimit, prlimit
 * on itself) everything staged is published, and after it the write path reads the limit again
 * (upath/fsize.c). */
#include <sys/resource.h>
#include <unistd.h>

_Static_assert(sizeof(struct rlimit) == sizeof(struct rlimit64), "rlimit64 is rlimit on this ABI");

#include "common/userptr.h"
#include "shim/shim.h"
#include "upath/fsize.h"

static int after_limit_change(int r, int res) {
    if (r == 0 && res == RLIMIT_FSIZE) {
        DK_ERRNO_SAVE;
        up_fsize_refresh();
        DK_ERRNO_RESTORE;
    }
    return r;
}

/* Before a file-size limit takes effect: what is staged or extended is published while the kernel still
 * accepts it (a publish past a new limit would be refused, and the appends lost). A limit the kernel cannot
 * read is not read here (its EFAULT, not a SIGSEGV: common/userptr.h), nor while the library is off. */
static void before_limit_change(int res, const struct rlimit *nl) {
    if (res == RLIMIT_FSIZE && up_enabled && nl && dk_user_readable(nl, sizeof *nl) && nl->rlim_cur != RLIM_INFINITY) {
        DK_ERRNO_SAVE;
        up_publish_all();
        DK_ERRNO_RESTORE;
    }
}

DK_EXPORT int setrlimit(__rlimit_resource_t res, const struct rlimit *rl) {
    before_limit_change((int)res, rl);
    return after_limit_change(DK_REAL(setrlimit)(res, rl), (int)res);
}
/* 64-bit hosts: struct rlimit64 is struct rlimit. */
DK_EXPORT int setrlimit64(__rlimit_resource_t res, const struct rlimit64 *rl) {
    return setrlimit(res, (const struct rlimit *)rl);
}

DK_EXPORT int prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *nl, struct rlimit *ol) {
    bool self = pid == 0 || pid == DK_REAL(getpid)();
    if (self) before_limit_change((int)res, nl);
    int r = DK_REAL(prlimit)(pid, res, nl, ol);
    return nl && self ? after_limit_change(r, (int)res) : r;
}
DK_EXPORT int prlimit64(pid_t pid, __rlimit_resource_t res, const struct rlimit64 *nl, struct rlimit64 *ol) {
    return prlimit(pid, res, (const struct rlimit *)nl, (struct rlimit *)ol);
}

#include "shim/libc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dk.h"
#include "common/log.h"
#include "shim/symnext.h"

struct dk_libc dk_libc_table;
int dk_libc_ready;
static struct dk_libc real_table; /* what dlsym found; the public table may hold fault wrappers */

/* Symbols that exist only as compat versions in current glibc: ask for the version explicitly. */
static void *resolve_dlsym(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p && name[0] == '_' && name[1] == '_' && strstr(name, "stat"))
        p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
    return p;
}

#ifdef DK_PRELOAD
/* The preload's table comes from the objects' hash tables (symnext.h: dlsym's answer, ~1/6 of its cost);
 * a name it declines goes to dlsym. */
static void *resolve(const char *name) {
    void *p = dk_symnext(name);
    return p ? p : resolve_dlsym(name);
}
#else
#define resolve resolve_dlsym /* tools and unit tests: not on a process start's path */
#endif

const struct dk_libc *dk_libc(void) {
    if (__atomic_load_n(&dk_libc_ready, __ATOMIC_ACQUIRE)) return &dk_libc_table;
#ifdef DK_PRELOAD
    dk_symnext_init();
#endif
    struct dk_libc t;
#define F(ret, name, params, args, failval) t.name = (ret(*) params)resolve(#name);
#define V(ret, name, params) t.name = (ret(*) params)resolve(#name);
#include "shim/libc.def"
#undef F
#undef V
    real_table = t;
    dk_libc_table = t; /* racing first callers write identical values */
    __atomic_store_n(&dk_libc_ready, 1, __ATOMIC_RELEASE);
    return &dk_libc_table;
}

/* ---- fault injection: one counter per fixed-argument function ---- */

enum {
#define F(ret, name, params, args, failval) FAULT_##name,
#define V(ret, name, params)
#include "shim/libc.def"
#undef F
#undef V
    FAULT_COUNT
};

struct fault {
    unsigned long remaining; /* calls until the failing one; 0 = disarmed */
    int err;
    int sticky;
    int fired;
};
static struct fault faults[FAULT_COUNT];

/* True when this call must fail; stores the errno to use in *e. */
static int fault_hit(int idx, int *e) {
    struct fault *f = &faults[idx];
    if (__atomic_load_n(&f->fired, __ATOMIC_RELAXED) && f->sticky) {
        *e = f->err;
        return 1;
    }
    if (__atomic_load_n(&f->remaining, __ATOMIC_RELAXED) == 0) return 0;
    if (__atomic_sub_fetch(&f->remaining, 1, __ATOMIC_RELAXED) != 0) return 0;
    __atomic_store_n(&f->fired, 1, __ATOMIC_RELAXED);
    *e = f->err;
    return 1;
}

#define F(ret, name, params, args, failval)                              \
    static ret fault_##name params {                                     \
        int e;                                                           \
        if (fault_hit(FAULT_##name, &e)) {                               \
            errno = e;                                                   \
            return failval;                                              \
        }                                                                \
        return real_table.name args;                                     \
    }
#define V(ret, name, params)
#include "shim/libc.def"
#undef F
#undef V

/* The short-count variant: half the bytes (at least one), the real call's own result otherwise. */
static ssize_t short_pwrite(int fd, const void *buf, size_t n, off_t off) {
    int e;
    if (n > 1 && fault_hit(FAULT_pwrite, &e)) n /= 2;
    return real_table.pwrite(fd, buf, n, off);
}

static int arm(int idx, unsigned long nth, int err, int sticky) {
    struct fault *f = &faults[idx];
    f->err = err;
    f->sticky = sticky;
    f->fired = 0;
    __atomic_store_n(&f->remaining, nth, __ATOMIC_RELAXED);
    return 0;
}

int dk_libc_fail_nth(const char *name, unsigned long nth, int err, int sticky) {
    dk_libc();
    if (nth == 0) return -1;
    if (err == DK_LIBC_FAULT_SHORT) {
        if (!strcmp(name, "pwrite")) {
            arm(FAULT_pwrite, nth, 0, sticky);
            __atomic_store_n(&dk_libc_table.pwrite, short_pwrite, __ATOMIC_RELEASE);
            return 0;
        }
        return -1;
    }
#define F(ret, fn, params, args, failval)                                   \
    if (strcmp(name, #fn) == 0) {                                           \
        struct fault *f = &faults[FAULT_##fn];                              \
        f->err = err;                                                       \
        f->sticky = sticky;                                                 \
        f->fired = 0;                                                       \
        __atomic_store_n(&f->remaining, nth, __ATOMIC_RELAXED);             \
        __atomic_store_n(&dk_libc_table.fn, fault_##fn, __ATOMIC_RELEASE);  \
        return 0;                                                           \
    }
#define V(ret, name, params)
#include "shim/libc.def"
#undef F
#undef V
    return -1;
}

void dk_libc_fail_reset(void) {
    dk_libc();
    memset(faults, 0, sizeof faults);
    dk_libc_table = real_table;
}

static int errno_by_name(const char *s) {
    static const struct { const char *name; int value; } names[] = {
        {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EINTR", EINTR}, {"EAGAIN", EAGAIN}, {"ENOMEM", ENOMEM},
        {"EDQUOT", EDQUOT}, {"EFBIG", EFBIG}, {"EBADF", EBADF}, {"EINVAL", EINVAL}, {"EPERM", EPERM},
        {"EACCES", EACCES}, {"ENOENT", ENOENT}, {"EMFILE", EMFILE}, {"EOPNOTSUPP", EOPNOTSUPP},
        {"EXDEV", EXDEV}, {"EROFS", EROFS},
    };
    for (size_t i = 0; i < DK_ARRAY_LEN(names); i++)
        if (!strcmp(names[i].name, s)) return names[i].value;
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v > 0 && v < 4096) ? (int)v : -1;
}

int dk_libc_fail_parse(const char *spec) {
    char buf[128];
    if (strlen(spec) >= sizeof buf) return -1;
    strcpy(buf, spec);
    char *save, *name = strtok_r(buf, ":", &save), *nth = strtok_r(NULL, ":", &save);
    char *err = strtok_r(NULL, ":", &save), *sticky = strtok_r(NULL, ":", &save);
    if (!name || !nth || !err) return -1;
    char *end;
    unsigned long n = strtoul(nth, &end, 10);
    int e = strcmp(err, "SHORT") ? errno_by_name(err) : DK_LIBC_FAULT_SHORT;
    if (*end || n == 0 || (e < 0 && e != DK_LIBC_FAULT_SHORT)) return -1;
    return dk_libc_fail_nth(name, n, e, sticky && !strcmp(sticky, "sticky"));
}

#if defined(DK_PRELOAD) && defined(DAXKIT_TEST_BUILD)
/* Test hook (tests/shim/shim_symnext.c): what the library's own lookup answers for name (NULL: declined) and
 * what dlsym(RTLD_NEXT) answers from inside the library -- the caller dlsym sees must be this object. */
DK_EXPORT void daxkit_test_symnext(const char *name, void **mine, void **dlsyms) {
    *mine = dk_symnext(name);
    *dlsyms = dlsym(RTLD_NEXT, name);
}

/* Test hook: how many slots of the pass-through table differ from dlsym's answer (resolve_dlsym), and how
 * many the library's lookup declined; each difference is printed. */
DK_EXPORT int daxkit_test_libc_table_check(int *declined) {
    dk_libc();
    int bad = 0;
    *declined = 0;
#define CHECK_SLOT(name)                                                                         \
    do {                                                                                         \
        void *want = resolve_dlsym(#name);                                                       \
        if (!dk_symnext(#name)) ++*declined;                                                     \
        if ((void *)real_table.name != want) {                                                   \
            dk_log("libc table: %s = %p, dlsym %p", #name, (void *)real_table.name, want);          \
            bad++;                                                                               \
        }                                                                                        \
    } while (0);
#define F(ret, name, params, args, failval) CHECK_SLOT(name)
#define V(ret, name, params) CHECK_SLOT(name)
#include "shim/libc.def"
#undef F
#undef V
#undef CHECK_SLOT
    return bad;
}
#endif

/* Crash points: see crashpoint.h. Only the test build compiles anything here. */
#include "common/crashpoint.h"

#ifdef DAXKIT_TEST_BUILD

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum crash_mode { CRASH_OFF, CRASH_KILL, CRASH_COUNT, CRASH_HOOK };

struct site_count {
    const char *site; /* set once (CAS from NULL); literal strings, compared by content */
    unsigned long occurrences;
};

int dk_crashpoint_active;
static enum crash_mode mode;
/* SITE:N or raise:SIGNO:SITE:N; several, separated by commas (a test that needs a second cue: the first
 * handler's interrupted call reaches the second site later). */
#define KILL_SPECS_MAX 4
struct kill_spec {
    char site[DK_CRASH_SITE_BYTES_MAX + 1];
    unsigned long occurrence, seen;
    int signo; /* SIGKILL, or raise:SIGNO -- the signal raised on the thread instead */
};
static struct kill_spec kills[KILL_SPECS_MAX];
static unsigned kill_specs;
static char count_path[PATH_MAX];
static struct site_count counts[DK_CRASH_SITES_MAX];
static unsigned long count_overflow;
static int atexit_registered;
static void (*site_hook)(const char *site);

/* The kernel's write, never the library's: stderr (or the counts file) may be a managed file, and a crash
 * point inside a strict write holds the checkpoint lock that a managed write's publish would wait for
 * (sqlite3 with 2> in its own directory hung there). */
static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = syscall(SYS_write, fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w, n -= (size_t)w;
    }
}

static void crash_now(const char *site, unsigned long n) {
    char msg[DK_CRASH_SITE_BYTES_MAX + 48];
    int len = snprintf(msg, sizeof msg, "crashpoint: %s#%lu\n", site, n);
    if (len > 0) write_all(2, msg, (size_t)len < sizeof msg ? (size_t)len : sizeof msg - 1);
    kill(getpid(), SIGKILL);
    for (;;) pause(); /* SIGKILL cannot be blocked: not reached */
}

static void count_hit(const char *site) {
    for (unsigned i = 0; i < DK_CRASH_SITES_MAX; i++) {
        const char *s = __atomic_load_n(&counts[i].site, __ATOMIC_ACQUIRE);
        if (s == NULL) {
            const char *expected = NULL;
            if (__atomic_compare_exchange_n(&counts[i].site, &expected, site, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                s = site;
            else
                s = expected;
        }
        if (s == site || strcmp(s, site) == 0) {
            __atomic_add_fetch(&counts[i].occurrences, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_add_fetch(&count_overflow, 1, __ATOMIC_RELAXED);
}

void dk_crashpoint_hit(const char *site) {
    int saved_errno = errno;
    if (mode == CRASH_KILL) {
        for (unsigned i = 0; i < kill_specs; i++) {
            struct kill_spec *k = &kills[i];
            if (strcmp(site, k->site) != 0) continue;
            unsigned long n = __atomic_add_fetch(&k->seen, 1, __ATOMIC_ACQ_REL);
            if (n == k->occurrence && k->signo == SIGKILL) crash_now(site, n);
            if (n == k->occurrence) raise(k->signo); /* its handler runs here, inside the site's section */
        }
    } else if (mode == CRASH_COUNT) {
        count_hit(site);
    } else if (mode == CRASH_HOOK) {
        site_hook(site);
    }
    errno = saved_errno;
}

int dk_crashpoint_write_counts(void) {
    if (mode != CRASH_COUNT) return 0;
    /* One buffer, one O_APPEND write: lines of concurrent writers never interleave. */
    static char buf[DK_CRASH_SITES_MAX * (DK_CRASH_SITE_BYTES_MAX + 24) + 64];
    size_t len = 0;
    for (unsigned i = 0; i < DK_CRASH_SITES_MAX; i++) {
        const char *s = __atomic_load_n(&counts[i].site, __ATOMIC_ACQUIRE);
        if (!s) break;
        unsigned long n = __atomic_load_n(&counts[i].occurrences, __ATOMIC_RELAXED);
        int w = snprintf(buf + len, sizeof buf - len, "%s %lu\n", s, n);
        if (w > 0 && (size_t)w < sizeof buf - len) len += (size_t)w;
    }
    if (count_overflow) {
        int w = snprintf(buf + len, sizeof buf - len, "crashpoint.overflow %lu\n", count_overflow);
        if (w > 0 && (size_t)w < sizeof buf - len) len += (size_t)w;
    }
    if (len == 0) return 0;
    int fd = open(count_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    write_all(fd, buf, len);
    close(fd);
    return 0;
}

static void write_counts_at_exit(void) {
    int saved_errno = errno;
    dk_crashpoint_write_counts();
    errno = saved_errno;
}

/* One SITE:N or raise:SIGNO:SITE:N of len bytes into *k. 0 or -EINVAL. */
static int parse_kill(const char *spec, size_t len, struct kill_spec *k) {
    char one[DK_CRASH_SITE_BYTES_MAX + 40];
    if (len >= sizeof one) return -EINVAL;
    memcpy(one, spec, len);
    one[len] = 0;
    const char *p = one;
    k->signo = SIGKILL;
    if (strncmp(p, "raise:", 6) == 0) {
        char *end;
        unsigned long sig = strtoul(p + 6, &end, 10);
        if (*end != ':' || sig == 0 || sig >= 65) return -EINVAL;
        k->signo = (int)sig;
        p = end + 1;
    }
    const char *colon = strrchr(p, ':');
    if (!colon || colon == p || (size_t)(colon - p) > DK_CRASH_SITE_BYTES_MAX) return -EINVAL;
    char *end;
    unsigned long n = strtoul(colon + 1, &end, 10);
    if (*end || n == 0) return -EINVAL;
    memcpy(k->site, p, (size_t)(colon - p));
    k->site[colon - p] = 0;
    k->occurrence = n;
    k->seen = 0;
    return 0;
}

int dk_crashpoint_configure(const char *spec) {
    __atomic_store_n(&dk_crashpoint_active, 0, __ATOMIC_RELAXED);
    mode = CRASH_OFF;
    if (spec == NULL || *spec == 0) return 0;
    if (strncmp(spec, "count:", 6) == 0) {
        if (strlen(spec + 6) == 0 || strlen(spec + 6) >= sizeof count_path) return -EINVAL;
        strcpy(count_path, spec + 6);
        memset(counts, 0, sizeof counts);
        count_overflow = 0;
        mode = CRASH_COUNT;
        if (!atexit_registered) atexit_registered = atexit(write_counts_at_exit) == 0;
    } else {
        kill_specs = 0;
        for (const char *p = spec; p;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (kill_specs == KILL_SPECS_MAX || parse_kill(p, len, &kills[kill_specs]) != 0) return -EINVAL;
            kill_specs++;
            p = comma ? comma + 1 : NULL;
        }
        mode = CRASH_KILL;
    }
    __atomic_store_n(&dk_crashpoint_active, 1, __ATOMIC_RELEASE);
    return 0;
}

void dk_crashpoint_set_hook(void (*hook)(const char *site)) {
    __atomic_store_n(&dk_crashpoint_active, 0, __ATOMIC_RELAXED);
    mode = CRASH_OFF;
    site_hook = hook;
    if (!hook) return;
    mode = CRASH_HOOK;
    __atomic_store_n(&dk_crashpoint_active, 1, __ATOMIC_RELEASE);
}

void dk_crashpoint_start(int begin) {
    static int armed; /* DAXKIT_TEST_CRASH_START configured the mode: the end turns it off */
    if (!begin) {
        if (armed && mode == CRASH_COUNT) dk_crashpoint_write_counts(); /* the start-up's sites, now: off below */
        if (armed) dk_crashpoint_configure(NULL);
        armed = 0;
        return;
    }
    const char *spec = getenv("DAXKIT_TEST_CRASH_START");
    if (!spec || !*spec) return;
    if (dk_crashpoint_configure(spec) == 0) {
        armed = 1;
        return;
    }
    static const char msg[] = "daxkit: DAXKIT_TEST_CRASH_START must be SITE:N (N >= 1), raise:SIGNO:SITE:N or count:/path; ignored\n";
    write_all(2, msg, sizeof msg - 1);
}

/* Test-only variable, read once at load with the real getenv; a bad value is reported, never fatal. */
__attribute__((constructor)) static void crashpoint_init(void) {
    const char *spec = getenv("DAXKIT_TEST_CRASH");
    if (spec && *spec && dk_crashpoint_configure(spec) != 0) {
        static const char msg[] =
            "daxkit: DAXKIT_TEST_CRASH must be SITE:N (N >= 1), raise:SIGNO:SITE:N or count:/path; ignored\n";
        write_all(2, msg, sizeof msg - 1);
    }
}

#endif

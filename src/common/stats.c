#include "common/stats.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/dk.h"
#include "shim/libc.h"

__thread struct dk_stats_slot *dk_stats_tls __attribute__((tls_model("initial-exec")));
__thread int dk_stats_tls_shared __attribute__((tls_model("initial-exec")));

static struct dk_stats_file private_stats; /* before init, or when stats are disabled */
static struct dk_stats_file *stats = &private_stats;
static char stats_path[64];
static pid_t stats_pid;

struct dk_stats_slot *dk_stats_claim_slot(void) {
    struct dk_stats_file *f = __atomic_load_n(&stats, __ATOMIC_ACQUIRE);
    uint32_t idx = __atomic_fetch_add(&f->slots_used, 1, __ATOMIC_RELAXED);
    if (idx >= DK_STATS_SLOTS - 1) {
        idx = DK_STATS_SLOTS - 1;
        dk_stats_tls_shared = 1;
    }
    dk_stats_tls = &f->slot[idx];
    return dk_stats_tls;
}

static struct dk_stats_file *map_stats_file(pid_t pid) {
    const struct dk_libc *c = dk_libc();
    c->mkdirat(AT_FDCWD, DK_STATS_DIR, 01777);
    snprintf(stats_path, sizeof stats_path, DK_STATS_DIR "/stats.%d", (int)pid);
    int fd = c->open(stats_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return NULL;
    void *p = MAP_FAILED;
    if (c->ftruncate(fd, sizeof(struct dk_stats_file)) == 0)
        p = c->mmap(NULL, sizeof(struct dk_stats_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    c->close(fd);
    if (p == MAP_FAILED) {
        c->unlink(stats_path);
        return NULL;
    }
    return p;
}

void dk_stats_open(int enabled, const char *mode, const char *dirs, const char *note) {
    DK_ERRNO_SAVE;
    pid_t pid = dk_libc()->getpid();
    struct dk_stats_file *f = enabled ? map_stats_file(pid) : NULL;
    if (!f) {
        f = &private_stats;
        stats_path[0] = 0;
    }
    /* A mapped file was just truncated and sized: it reads as zeros already, and writing them would
     * allocate all of its pages (9 page faults, ~50 us of CPU per process here) where the counters touch a
     * few. The private copy may hold a parent's counters (fork). */
    if (f == &private_stats) memset(f, 0, sizeof *f);
    f->counters = DK_C_COUNT;
    f->slots = DK_STATS_SLOTS;
    f->pid = pid;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->start_ns_realtime = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    snprintf(f->mode, sizeof f->mode, "%s", mode);
    snprintf(f->dirs, sizeof f->dirs, "%s", dirs);
    snprintf(f->note, sizeof f->note, "%s", note);
    __atomic_store_n(&f->magic, DK_STATS_MAGIC, __ATOMIC_RELEASE);
    stats_pid = pid;
    __atomic_store_n(&stats, f, __ATOMIC_RELEASE);
    dk_stats_tls = NULL; /* the calling thread re-claims in the new file; other threads died in fork */
    dk_stats_tls_shared = 0;
    DK_ERRNO_RESTORE;
}

void dk_stats_remove_stale(void) {
    DK_ERRNO_SAVE;
    char path[64];
    snprintf(path, sizeof path, DK_STATS_DIR "/stats.%d", (int)dk_libc()->getpid());
    dk_libc()->unlink(path);
    DK_ERRNO_RESTORE;
}

void dk_stats_close(void) {
    DK_ERRNO_SAVE;
    if (stats_path[0] && stats_pid == dk_libc()->getpid()) dk_libc()->unlink(stats_path);
    stats_path[0] = 0;
    DK_ERRNO_RESTORE;
}

static const char *names[] = {
#define C(name, doc) #name,
#include "common/stats.def"
#undef C
};
static const char *docs[] = {
#define C(name, doc) doc,
#include "common/stats.def"
#undef C
};

const char *dk_stats_name(int idx) { return idx >= 0 && idx < DK_C_COUNT ? names[idx] : "?"; }
const char *dk_stats_doc(int idx) { return idx >= 0 && idx < DK_C_COUNT ? docs[idx] : "?"; }

void dk_stats_sum(const struct dk_stats_file *f, uint64_t *out) {
    memset(out, 0, sizeof(uint64_t) * DK_C_COUNT);
    uint32_t n = DK_MIN(f->counters, (uint32_t)DK_C_COUNT);
    for (uint32_t s = 0; s < DK_STATS_SLOTS; s++)
        for (uint32_t i = 0; i < n; i++) out[i] += __atomic_load_n(&f->slot[s].v[i], __ATOMIC_RELAXED);
}

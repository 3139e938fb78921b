/* Descriptor-level glue of the user-space path: adoption of managed descriptors, close and dup,
 * offset-only calls (lseek), durability calls (fsync), size changes (ftruncate, fallocate). */
#include <dirent.h>
#include <immintrin.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/config.h"
#include "common/cpu.h"
#include "common/crashpoint.h"
#include "common/log.h"
#include "common/mapflags.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "common/userptr.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "upath/atomic_route.h"
#include "upath/calls.h"
#include "upath/fsize.h"
#include "upath/guard.h"
#include "upath/io.h"
#include "upath/policy.h"
#include "upath/foreign.h"
#include "upath/recover_scope.h"
#include "upath/upath.h"

bool up_enabled_flag;
__thread bool up_vfork_child __attribute__((tls_model("initial-exec")));
bool up_refuse_flag; /* DAXKIT_STRICT_CONFIG with a bad option: managed opens fail */

void up_slot_drop_local(struct up_slot *s);

/* ---- serving decision ---- */

/* The kernel moved the offset while the slot was shared: take it back before serving. Also a fork child's
 * first served call through a descriptor of its parent's (every inherited one is stale), as its first call
 * through one still shared (up_serving): `daxkit stats` lists the child from then on (review 16, findings 6
 * and 7). */
static void resync(int fd, struct up_fd *e, struct up_slot *s) {
    dk_stats_publish();
    DK_ERRNO_SAVE;
    off_t k = DK_REAL(lseek)(fd, 0, SEEK_CUR);
    if (k >= 0) __atomic_store_n(&s->offset, (uint64_t)k, __ATOMIC_RELEASE);
    up_refresh_if_idle(s->file, fd);
    e->stale = 0;
    DK_ERRNO_RESTORE;
}

/* A lock's re-read put off (session 26): a SQLite WAL grows by two pwrites at its end and an fdatasync per
 * transaction, each after lock calls on its -shm -- the re-read cost one fstat a transaction that the kernel's
 * path does not make. A call that neither reads nor stores through the mapping and takes no end from the
 * library's size needs no kernel size: a positional write at the file's end (staged, placed at its offset as
 * the kernel's pwrite would be: the publish writes it there) of a file with nothing unpublished -- where the
 * re-read would have made its fstat -- and, after such writes, further ones at the end and the fsync that
 * publishes them. The re-read stays owed (f->refresh_owed, refresh_gen behind) until any other served call,
 * which makes it with what is staged (up_refresh_owed: growth taken, a shrink seen before a mapped access).
 * Posix mode, stage strategy, no O_APPEND descriptor or appends (their place is the kernel's end), nothing
 * spilled or rolling back, not the file's first bytes (small_pages.c seeds an empty file). Since session 27
 * also a positional write inside the end that ends at or below the file's probe page while that page's entry is
 * present (probe_covers: no cut reached it -- the WAL's frames after SQLite restarts it). `how`: the positional
 * write's offset, or UP_SERVE_SYNC; `n`: the write's length. */
static bool probe_covers(struct up_file *f, uint64_t end);
static bool put_off(const struct up_slot *s, struct up_file *f, int64_t how, uint64_t n) {
    bool owed = __atomic_load_n(&f->refresh_owed, __ATOMIC_ACQUIRE);
    if ((how == UP_SERVE_SYNC && !owed) || how == UP_SERVE_WRITE) return false; /* (most fsyncs: one load) */
    if (dk_cfg.mode != DK_MODE_POSIX || __atomic_load_n(&f->strategy, __ATOMIC_RELAXED) != UP_STAGE ||
        __atomic_load_n(&f->atomic, __ATOMIC_RELAXED) || __atomic_load_n(&f->kernel_only, __ATOMIC_ACQUIRE) ||
        (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & O_APPEND) ||
        __atomic_load_n(&f->staged_o_append, __ATOMIC_RELAXED) || __atomic_load_n(&f->spilled, __ATOMIC_ACQUIRE) ||
        up_publish_rolling_back(f))
        return false;
    if (how == UP_SERVE_SYNC) return true;
    uint64_t pub = __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE), size = up_file_size(f);
    if (pub == 0 || pub != __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE)) return false; /* (size >= pub) */
    /* The first: the file idle (the re-read would have been an fstat) */
    if (!owed && size != pub) return false;
    /* At the end (staged at its offset), or inside it below a probe page no cut reached */
    if ((uint64_t)how != size && !((uint64_t)how + n <= pub && probe_covers(f, (uint64_t)how + n))) return false;
    if (!owed) {
        __atomic_store_n(&f->owed_from, pub, __ATOMIC_RELAXED);
        __atomic_store_n(&f->refresh_owed, true, __ATOMIC_RELEASE);
    }
    return true;
}

/* ---- the probe page (session 27; docs/design-upath.md, "The probe page") ----
 * A truncate or hole punch removes every process's page-table entries of the file's pages at and past the cut
 * before it returns, and a fault past the end is a SIGBUS, never a new entry: an entry present now for the
 * file's page at P means the kernel size is past P now. A transactional load (RTM) tells whether it is present
 * without a fault -- an absent entry aborts the transaction. */

/* RTM usable (CPUID leaf 7, EBX bit 11; cleared where the kernel turned TSX off): 1, 0, or -1 not asked yet. */
static int rtm_usable = -1;

static __attribute__((noinline, cold)) int rtm_ask(void) {
    int ok = dk_cpu_has(DK_CPU_RTM); /* (glibc's "active" leaves out RTM_ALWAYS_ABORT) */
    __atomic_store_n(&rtm_usable, ok, __ATOMIC_RELAXED);
    return ok;
}

/* Whether the probe page's entry is present in its own mapping, and that mapping still the probe of offset p: one
 * transaction reads f->probe_page (a store to it -- the touch replacing the mapping clears it first -- aborts the
 * transaction) and loads through f->probe_addr (an absent entry, an unmapped or NULL address, any other fault, an
 * interrupt, valgrind: an abort, never a signal). */
static __attribute__((target("rtm"), noinline)) bool probe_present(struct up_file *f, uint64_t p) {
    if (_xbegin() != _XBEGIN_STARTED) return false;
    if (__atomic_load_n(&f->probe_page, __ATOMIC_RELAXED) != p) _xabort(1);
    (void)*(const volatile char *)__atomic_load_n(&f->probe_addr, __ATOMIC_RELAXED);
    _xend();
    return true;
}

/* A write ending at `end` lies below the file's probe page, whose entry is present: no cut since it was touched
 * reached below it. */
static bool probe_covers(struct up_file *f, uint64_t end) {
    uint64_t p = __atomic_load_n(&f->probe_page, __ATOMIC_ACQUIRE);
    if (!p || end > p) return false;
    int rtm = __atomic_load_n(&rtm_usable, __ATOMIC_RELAXED);
    if (DK_UNLIKELY(rtm < 0)) rtm = rtm_ask();
    if (!rtm) return false;
    bool present = probe_present(f, p);
    if (!present) dk_count(DK_C_probe_page_aborts, 1);
    return present;
}

/* The probe page at p: its own 4 KiB mapping (a new VMA of the data mapping's page, by mremap with old size 0 --
 * no descriptor), made or moved when p changes, its entry made present (the transactional load, else
 * MADV_POPULATE_READ, which fails instead of a SIGBUS when another process cut the file meanwhile). Why not the
 * data mapping's page: on huge tmpfs a cut inside a 2 MiB folio whose split fails (another process holds a
 * reference) removes the entries past the cut, but the next fault *below* the cut in that folio -- a read or write
 * of this program's, before its next lock -- maps the whole folio again in the data mapping, P included, with the
 * size at or below P: a write put off on it was lost (session 28, shim_probe_folio). A 4 KiB VMA never gets a 2 MiB
 * entry, and no data access faults it in: after a cut its entry stays absent until the next touch. false: no probe
 * page (the mapping could not be made, or the page is gone). */
static bool probe_map(struct up_file *f, const char *src, uint64_t p) {
    if (!f->probe_addr || f->probe_addr_off != p) {
        long na = f->probe_addr
                      ? syscall(SYS_mremap, src, 0, DK_PAGE_BYTES, MREMAP_MAYMOVE | MREMAP_FIXED, f->probe_addr)
                      : syscall(SYS_mremap, src, 0, DK_PAGE_BYTES, MREMAP_MAYMOVE);
        if (na == -1) {
            if (f->probe_addr) DK_REAL(munmap)(f->probe_addr, DK_PAGE_BYTES);
            __atomic_store_n(&f->probe_addr, NULL, __ATOMIC_RELAXED);
            return false;
        }
        __atomic_store_n(&f->probe_addr, (char *)na, __ATOMIC_RELAXED);
        f->probe_addr_off = p;
    }
    if (probe_present(f, 0)) return true; /* (probe_page is 0 here) */
    return DK_REAL(madvise)(f->probe_addr, DK_PAGE_BYTES, MADV_POPULATE_READ) == 0;
}

/* After a lock's re-read for a pwrite inside the end (a store through the mapping anyway: no new access for a
 * program that only appends): the page below the end of an idle file, with storage (no hole filled) and mapped,
 * becomes its probe page, touched in its own mapping (probe_map). Without RTM none is kept; another thread making
 * one meanwhile: this one leaves it to it. */
static __attribute__((noinline)) void probe_page_touch(struct up_file *f) {
    if (__atomic_load_n(&rtm_usable, __ATOMIC_RELAXED) == 0) return;
    if (__atomic_exchange_n(&f->probe_busy, 1, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&f->probe_page, 0, __ATOMIC_RELEASE); /* first: no probe trusts the mapping being changed */
    enum up_guard_entry g = up_guard_read_enter(f);
    uint64_t k = __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE);
    uint64_t p = k > DK_PAGE_BYTES ? dk_round_down(k - 1, DK_PAGE_BYTES) : 0;
    bool ok = p && up_file_size(f) == k && __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) == k &&
              p < __atomic_load_n(&f->backed_end, __ATOMIC_ACQUIRE) &&
              p < __atomic_load_n(&f->map.mapped_bytes, __ATOMIC_ACQUIRE);
    const char *src = ok ? up_map_addr(&f->map, p) : NULL;
    if (src && probe_map(f, src, p)) __atomic_store_n(&f->probe_page, p, __ATOMIC_RELEASE);
    up_guard_read_exit(f, g);
    __atomic_store_n(&f->probe_busy, 0, __ATOMIC_RELEASE);
}

/* A positional read's re-read put off (session 28; docs/design-upath.md, "Reads below the probe page"): the read
 * needs the kernel size K >= off + n and nothing else -- growth leaves the bytes it reads where they are, and a
 * cut below off + n would have removed the entry of the probe page P >= off + n. An idle file (the re-read
 * would be an fstat) that owes no put-off chain's re-read. Nothing is owed after it: refresh_gen stays behind,
 * and the next call looks again -- the program's fstat takes the re-read from its own answer (up_fstat_end). */
static bool read_put_off(struct up_file *f, uint64_t off, uint64_t n) {
    if (__atomic_load_n(&f->refresh_owed, __ATOMIC_ACQUIRE) || __atomic_load_n(&f->kernel_only, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&f->atomic, __ATOMIC_RELAXED) || n == 0)
        return false;
    uint64_t pub = __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE);
    return pub && pub == up_file_size(f) && pub == __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE) && off + n <= pub &&
           probe_covers(f, off + n);
}

/* The end an fsync's O_APPEND publish put off (publish.c put_end_off; f->end): a call that needs no end -- an
 * fsync, a write through the O_APPEND descriptor whose appends that publish wrote (an append, staged, its place
 * the kernel's end at the next publish, its answer a count) -- goes on without it, unless a lock was taken since
 * (the end then, as put_off's rules would have it): the owed generation is up_refresh_gen, `gen`, still. Inline in
 * serving for those two calls, before refresh_for's frame (~40 instructions of each record's write and fsync while
 * owed -- all the time for a log published at its write, publish.c up_write_through_locked; session 29). */
static inline __attribute__((always_inline)) bool end_put_off(const struct up_slot *s, const struct up_file *f, int fd,
                                                              int64_t how, uint64_t gen) {
    if (how != UP_SERVE_SYNC && how != UP_SERVE_WRITE) return false;
    if (__atomic_load_n(&f->end.gen, __ATOMIC_ACQUIRE) != gen) return false; /* (0: not owed) */
    if (how == UP_SERVE_SYNC) return true;
    /* (one descriptor's appends: the kernel leaves one offset -- publish.c put_off_fd) */
    /* (not a pwrite: through an O_APPEND descriptor an append that leaves the offset -- review28b #7) */
    return (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & O_APPEND) &&
           fd == __atomic_load_n(&f->end.appender, __ATOMIC_RELAXED);
}

/* The file's first served call after a lock acquisition (up_refresh_all) re-reads the kernel size -- or puts it
 * off (put_off, read_put_off): refresh_gen then stays behind, and the next call looks again. Returns s (serving's
 * tail call: a WAL transaction's every pwrite and fdatasync come here while the re-read is put off). `n` of a
 * read carries UP_SERVE_READ. So after an fsync put an O_APPEND publish's end off (end_put_off: no read; the
 * re-read below makes it otherwise: publish.c refresh). */
static __attribute__((noinline)) struct up_slot *refresh_for(struct up_slot *s, int fd, uint64_t gen, int64_t how,
                                                             uint64_t n) {
    struct up_file *f = s->file;
    bool rd = n & UP_SERVE_READ;
    n &= ~UP_SERVE_READ;
    if (DK_UNLIKELY(up_end_owed(f))) {
        if (!rd && end_put_off(s, f, fd, how, gen)) return s; /* (serving's look found it not yet owed) */
    } else if (rd) {
        if (how >= 0 && read_put_off(f, (uint64_t)how, n)) {
            dk_count(DK_C_refresh_read_put_off, 1);
            return s;
        }
    } else if (how != UP_SERVE_ANY && put_off(s, f, how, n)) {
        dk_count(DK_C_refresh_put_off, 1);
        return s;
    }
    __atomic_store_n(&f->refresh_gen, gen, __ATOMIC_RELAXED);
    DK_ERRNO_SAVE;
    up_locks_note_refresh(f); /* a further lock while these are held needs no re-read (reclock.c) */
    if (DK_UNLIKELY(__atomic_load_n(&f->refresh_owed, __ATOMIC_ACQUIRE)) &&
        __atomic_exchange_n(&f->refresh_owed, false, __ATOMIC_ACQ_REL))
        up_refresh_owed(f, fd);
    else
        up_refresh_if_idle(f, fd);
    /* (a pwrite or pread inside the end -- itself a mapped access: the next transaction's may be put off) */
    if (how >= 0 && (uint64_t)how + n <= __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE)) probe_page_touch(f);
    DK_ERRNO_RESTORE;
    return s;
}

/* serving() past the look at the slot: the cases that make calls -- a slot the kernel serves, a stale offset,
 * a lock taken since the file's last served call -- and the return of the slot. s: from up_call_enter. `how`:
 * what the call may put off (put_off). */
static __attribute__((noinline)) struct up_slot *serving_rest(struct up_fd *e, int fd, struct up_slot *s,
                                                              int64_t how, uint64_t n) {
    if (!s) return NULL;
    if (DK_UNLIKELY(s->kernel || s->file->kernel_only || __atomic_load_n(&s->procs, __ATOMIC_ACQUIRE) > 1)) {
        if (s->file->kernel_only) up_io_offset_to_kernel(s, fd); /* once per slot */
        e->stale = 1;
        dk_stats_publish(); /* a fork child's first call through a descriptor it shares: listed (resync) */
        up_call_leave();
        return NULL;
    }
    if (DK_UNLIKELY(e->stale)) resync(fd, e, s);
    uint64_t gen = __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE);
    if (DK_UNLIKELY(__atomic_load_n(&s->file->refresh_gen, __ATOMIC_RELAXED) != gen)) refresh_for(s, fd, gen, how, n);
    return s;
}
static __attribute__((noinline)) struct up_slot *serving_slow(struct up_fd *e, int fd, struct up_reader *r,
                                                              int64_t how, uint64_t n) {
    return serving_rest(e, fd, up_call_enter_slow(e, r), how, n);
}
/* The common case calls nothing and saves no register: everything that makes a call is a tail call (five
 * saved registers and their moves, ~12 instructions of every served call before; session 26). */
static inline __attribute__((always_inline)) struct up_slot *serving(struct up_fd *e, int fd, int64_t how, uint64_t n) {
    if (!e) return NULL;
    struct up_reader *r;
    struct up_slot *s = up_call_enter_fast(e, &r); /* the slot, file and number stay until up_served_end (calls.h) */
    if (DK_UNLIKELY(s == UP_CALL_SLOW)) return serving_slow(e, fd, r, how, n);
    if (!s) return NULL;
    if (DK_UNLIKELY(s->kernel || s->file->kernel_only || __atomic_load_n(&s->procs, __ATOMIC_ACQUIRE) > 1 || e->stale))
        return serving_rest(e, fd, s, how, n);
    uint64_t gen = __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE);
    if (DK_UNLIKELY(__atomic_load_n(&s->file->refresh_gen, __ATOMIC_RELAXED) != gen) &&
        !end_put_off(s, s->file, fd, how, gen)) /* (an fsync's or an append's look at an owed end: no frame) */
        return refresh_for(s, fd, gen, how, n); /* (serving_rest's looks were made above) */
    return s;
}
struct up_slot *up_serving(int fd) { return serving(up_fd_entry(fd), fd, UP_SERVE_ANY, 0); }
struct up_slot *up_serving_sync_at(struct up_fd *e, int fd) { return serving(e, fd, UP_SERVE_SYNC, 0); }
struct up_slot *up_serving_write_at(struct up_fd *e, int fd) { return serving(e, fd, UP_SERVE_WRITE, 0); }
struct up_slot *up_serving_pwrite_at(struct up_fd *e, int fd, off_t off, size_t n) {
    return serving(e, fd, off >= 0 ? (int64_t)off : UP_SERVE_ANY, n);
}
struct up_slot *up_serving_pread_at(struct up_fd *e, int fd, off_t off, size_t n) {
    return serving(e, fd, off >= 0 ? (int64_t)off : UP_SERVE_ANY, (n & ~UP_SERVE_READ) | UP_SERVE_READ);
}
/* (the read/write family's entry points look the entry up themselves: shim/rw.c DK_RW) */
struct up_slot *up_serving_at(struct up_fd *e, int fd) { return serving(e, fd, UP_SERVE_ANY, 0); }

/* ---- adoption ---- */

/* auto: extend (FLEX) only where appends in place cost no more than the file system's own bookkeeping --
 * real DAX, for files opened O_APPEND (logs, AOFs, WALs). On tmpfs and page-cache file systems every publish
 * cuts the file back to its logical size, which frees the extension step's pages (tmpfs) or blocks (XFS), so
 * the next append faults them in again: measured 0.93x (huge tmpfs) and 0.09x (XFS) of the kernel's appends
 * with fsync every 10, against 1.0-1.3x for stage (docs/benchmarks.md). */
static enum up_strategy auto_strategy(const struct up_root *r, int oflags) {
    return (oflags & O_APPEND) && r->medium.medium == DK_MEDIUM_DAX ? UP_EXTEND : UP_STAGE;
}

/* A DAXKIT_APPEND without globs names one policy for every file: parsed once per value (~190 instructions
 * per adopted file before: tar xf adopts every file it writes). The configuration's strings are never freed:
 * a new value is a new pointer. */
static const char *whole_spec; /* atomic: the value whole_policy was parsed from */
static int whole_policy;        /* atomic */

static enum up_policy policy_of(int fd) {
    const char *spec = dk_cfg.append;
    if (__atomic_load_n(&whole_spec, __ATOMIC_ACQUIRE) == spec)
        return (enum up_policy)__atomic_load_n(&whole_policy, __ATOMIC_RELAXED);
    char buf[PATH_MAX];
    if (strchr(spec, '=')) return up_policy_for(spec, up_fd_path(fd, buf, sizeof buf) ? buf : NULL);
    enum up_policy p = up_policy_for(spec, NULL);
    __atomic_store_n(&whole_policy, (int)p, __ATOMIC_RELAXED);
    __atomic_store_n(&whole_spec, spec, __ATOMIC_RELEASE);
    return p;
}

static enum up_strategy choose_strategy(const struct up_root *r, int fd, int oflags, bool *by_auto) {
    *by_auto = false;
    switch (policy_of(fd)) {
    case UP_POLICY_EXTEND: return UP_EXTEND;
    case UP_POLICY_AUTO: *by_auto = true; return auto_strategy(r, oflags);
    default: return UP_STAGE;
    }
}

/* The kernel truncated the file at open (O_TRUNC): staged appends are gone with it. Under mu + rw. */
static void forget_contents(struct up_file *f, uint64_t ksize) {
    for (uint32_t i = 0; i < f->staged_count; i++) up_stage_give_back(f->root, &f->staged[i], false);
    f->staged_count = 0;
    up_holes_clamp(f, DK_MIN(f->ksize, ksize)); /* a size grown by the kernel is a hole (holes.c) */
    f->ksize = ksize;
    bool keeps = f->spilled && ksize >= up_file_size(f); /* a reopen of a spilled file: the burst's record stands */
    __atomic_store_n(&f->pub_size, ksize, __ATOMIC_RELEASE);
    up_file_set_size(f, ksize);
    if (!keeps) up_sizerec_clear(f);
}

/* forget_contents under the guard's write side when the size shrinks (fast sections, which reach up to
 * the logical size with the extend strategy, must not run past the new end); a size that stays or grows
 * needs only f->mu, and no membarrier. Under f->mu. */
static bool size_shrinks(const struct up_file *f, uint64_t to) {
    return to < up_file_size(f) || to < __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE);
}

static void forget_contents_guarded(struct up_file *f, uint64_t ksize) {
    bool shrinks = size_shrinks(f, ksize);
    if (shrinks) up_guard_write_lock(f);
    forget_contents(f, ksize);
    if (shrinks) up_guard_write_unlock(f);
}

/* A file seen again: take the kernel's size unless this process has appends not yet published. */
static void file_reopened(struct up_file *f, int fd, const struct stat *st_open, int oflags) {
    up_file_lock(f);
    /* The size now, under the lock: another thread may have published (or truncated) since the open's
     * fstat -- then the size it left, f->ksize, differs from what the open saw, and the kernel is asked
     * again. Equal: nothing of this process moved the size since (every change of ours sets ksize under
     * f->mu), so the open's fstat stands -- one fstat per reopen (rsync reopens each new file). */
    struct stat now;
    const struct stat *st = st_open;
    if ((uint64_t)st_open->st_size != f->ksize && DK_REAL(fstat)(fd, &now) == 0) st = &now;
    uint64_t ns = (uint64_t)st->st_size;
    /* the look an O_APPEND publish put off first: the size taken below would hide where its records went
     * (review28b #7, seed 866856250662: a pending descriptor's adoption at its first call) */
    if (DK_UNLIKELY(up_end_owed(f))) up_settle_end_locked(f, fd, ns);
    if ((oflags & O_TRUNC) || !up_file_size_ours(f)) { /* Linux truncates even O_RDONLY|O_TRUNC */
        forget_contents_guarded(f, ns);
    }
    dk_mu_unlock(&f->mu);
}

/* Mapping waits for the first read or overwrite (up_io_ensure_mapped); only files too large to map
 * are handed to the kernel here. */
static int file_first_map(struct up_file *f, int fd) {
    (void)fd;
    if (f->ksize > UP_MAP_MAX_BYTES) {
        f->kernel_only = true;
        return -EFBIG;
    }
    return 0;
}

/* Names that never open a managed regular file, so that their open needs no fstat to tell: the kernel's
 * character devices by their canonical names (rsync and git open /dev/urandom once for every file they
 * write), and a managed directory itself by the absolute name it was given (SQLite opens the database's
 * directory to fsync it, once per rollback-journal transaction) -- unless O_TMPFILE makes a file in it. */
static bool never_a_file(const char *path, int oflags) {
    static const char *const names[] = {"/dev/urandom", "/dev/random", "/dev/null", "/dev/zero", "/dev/full", "/dev/tty"};
    if (!path || path[0] != '/') return false;
    if (strncmp(path, "/dev/", 5) == 0 && !strchr(path + 5, '/')) /* not /dev/shm/... */
        for (size_t i = 0; i < DK_ARRAY_LEN(names); i++)
            if (strcmp(path, names[i]) == 0) return true;
    if ((oflags & O_TMPFILE) == O_TMPFILE) return false; /* an unnamed file in that directory */
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    for (int i = 0; i < up_roots_count(); i++) {
        const struct up_root *r = up_root_at(i);
        if (r->path_len == n && memcmp(r->path, path, n) == 0) return true;
    }
    return false;
}

static int adopt_in_root(int fd, int oflags, const struct stat *st_in, struct up_root *r, uint64_t offset,
                         bool kernel, uint64_t keyless_epoch);

/* The process has the inode in its table (open, or cached since): it was served before. */
static bool file_cached(const struct stat *st) {
    dk_mu_lock(&up_table_mu);
    bool known = up_file_lookup(st->st_dev, st->st_ino) != NULL;
    up_table_unlock();
    return known;
}

/* An inode this process serves under a managed name, opened by a name outside every managed directory (a
 * hard link made by rsync --link-dest, cp -al or git, a bind mount of the directory elsewhere): served as
 * that file, so that the process reads its own staged appends through the other name and its writes there
 * meet them (review 9, finding 28: kernel-served, a pread through the other name saw 0 of 100 bytes just
 * written). Only a file that is open or has unpublished work (a closed cached entry's inode number may have
 * been reused by an unrelated file); looked up only while some file is (one hash lookup after the open's
 * fstat, on a managed device). Counted. */
static struct up_root *root_of_served_inode(const struct stat *st) {
    if (!__atomic_load_n(&up_active_files, __ATOMIC_ACQUIRE)) return NULL;
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(st->st_dev, st->st_ino);
    struct up_root *r = f && (f->open_refs > 0 || up_file_pinned(f)) ? f->root : NULL;
    up_table_unlock();
    if (r) dk_count(DK_C_served_by_inode, 1);
    return r;
}

int up_adopt_epoch_open(int fd, int oflags, int dirfd, const char *path, uint64_t epoch) {
    if (!up_enabled) return 0;
    if ((oflags & O_DIRECTORY) && path) up_dirfd_note_open(fd, dirfd, path); /* the kernel checked: a directory */
    if ((oflags & O_PATH) || never_a_file(path, oflags)) return 0;
    if (path && epoch && up_pending_open(fd, oflags, dirfd, path, epoch)) return 0; /* looked at when first used */
    DK_ERRNO_SAVE;
    __atomic_add_fetch(&up_adopt_epoch, 1, __ATOMIC_SEQ_CST); /* before the fstat: see pending.c */
    struct stat st;
    bool stated = DK_REAL(fstat)(fd, &st) == 0;
    if (!stated || !S_ISREG(st.st_mode) || !up_dev_is_managed(st.st_dev)) {
        /* A directory opened without O_DIRECTORY (tar cf opens each one so, then fdopendir): its verdict as
         * for an O_DIRECTORY open, from the stat at hand -- the names opened relative to it then need no
         * readlink of it and none of each file (tar cf of /usr/include/linux: 63 readlinks -> 5). */
        if (stated && path && !(oflags & O_DIRECTORY) && S_ISDIR(st.st_mode) && up_dev_is_managed(st.st_dev))
            up_dirfd_note_open(fd, dirfd, path);
        DK_ERRNO_RESTORE;
        return 0;
    }
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) { /* a signal handler in its thread's table change (table_nested.c) */
        dk_count(DK_C_open_nested_refused, 1);
        DK_ERRNO_RESTORE;
        return -EDEADLK;
    }
    struct up_root *r = up_root_for_fd(fd, &st, dirfd, path);
    if (r && !file_cached(&st)) {
        bool looked = up_recover_below(r, fd, dirfd, path); /* a narrower root's dead writer (recover_scope.c) */
        if (DK_UNLIKELY(!looked || up_foreign_covers(fd, &st))) { /* another user's records wait (foreign.c) */
            DK_ERRNO_RESTORE;
            return 0;
        }
    }
    if (!r) r = root_of_served_inode(&st);
    if (!r) {
        DK_ERRNO_RESTORE;
        return 0;
    }
    if (up_refuse_flag) return -EINVAL;
    int rc = adopt_in_root(fd, oflags, &st, r, 0, false, 0);
    if (rc == 0 && path && up_fd_slot(fd)) rc = up_atomic_adopt(up_fd_slot(fd)->file, fd, oflags);
    if (rc) up_close(fd); /* DAXKIT_ATOMIC files opened by this program (inherited ones stay with the kernel) */
    else if (fd <= 2) up_std_fd_to_kernel(fd, false);
    DK_ERRNO_RESTORE;
    return rc;
}

/* A managed file on descriptor 0, 1 or 2 -- opened there (close(1); open(log)), duplicated there
 * (dup2(log, 1)), inherited there -- is the kernel's from now on, every descriptor of it (review 9,
 * findings 17 and 18): glibc's standard streams, perror, psignal and the like write those numbers with
 * libc's internal write, which no preload sees, at the kernel's offset and end. What is staged is
 * published, the kernel's offset is set from the slot (a dup's: offset_from_slot; an adoption's slot starts
 * at the kernel's offset -- an inherited descriptor's may be shared with the parent), and the file becomes
 * kernel_only: its other
 * descriptors pass through too (publishing first, reading the kernel's size after a change, fdatasync'ed
 * in sync and strict modes: shim.h's dk_pt_begin/dk_pt_end_changed), so the unseen writes and the seen ones
 * meet in the kernel, in program order. It stays the kernel's while the process has it cached. */
void up_std_fd_to_kernel(int fd, bool offset_from_slot) {
    if ((unsigned)fd > 2) return;
    struct up_slot *s = up_fd_slot(fd);
    if (!s) return;
    struct up_file *f = s->file;
    DK_ERRNO_SAVE;
    up_hand_to_kernel(fd); /* the atomic route lets it go; published (strict: checkpointed) */
    up_file_lock(f);
    if (!f->atomic) up_publish_locked(f, fd); /* appends another thread staged meanwhile */
    if (offset_from_slot && !__atomic_load_n(&s->kernel, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&s->procs, __ATOMIC_ACQUIRE) <= 1)
        DK_REAL(lseek)(fd, (off_t)__atomic_load_n(&s->offset, __ATOMIC_ACQUIRE), SEEK_SET);
    __atomic_store_n(&s->kernel, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&f->kernel_only, true, __ATOMIC_RELEASE);
    dk_mu_unlock(&f->mu);
    dk_count(DK_C_pt_std_fds, 1);
    DK_ERRNO_RESTORE;
}

int up_adopt(int fd, int oflags, int dirfd, const char *path) {
    return up_adopt_epoch_open(fd, oflags, dirfd, path, 0);
}

int up_adopt_stat(int fd, int oflags, const struct stat *st, uint32_t below, uint32_t walked, uint64_t offset,
                  bool kernel) {
    struct up_root *r = up_root_for_fd_mask(fd, st, below);
    if (r && !file_cached(st)) {
        DK_ERRNO_SAVE;
        bool looked = (walked & (1u << (r - up_root_at(0)))) || up_recover_below(r, fd, AT_FDCWD, NULL); /* else at the open */
        bool foreign = !looked || up_foreign_covers(fd, st); /* another user's records wait (foreign.c) */
        DK_ERRNO_RESTORE;
        if (DK_UNLIKELY(foreign)) return 0;
    }
    if (!r) r = root_of_served_inode(st); /* a pending descriptor of another name of a served inode */
    return r ? adopt_in_root(fd, oflags, st, r, offset, kernel, 0) : 0;
}

/* A file this process created (pending.c: O_CREAT|O_EXCL, nothing read yet), adopted at its first write
 * without an fstat (tar xf, rsync: one per file written, 760 per run): its inode is new, so no entry of
 * the process can be its file -- while nothing was adopted since its open (`epoch`, the descriptor's, is
 * still up_adopt_epoch under the table's lock: another descriptor of it opened by name and adopted first
 * made a second entry of the inode, and the two did not see each other's writes: diff_*_posix_stage, session
 * 17) -- and it was empty at the open. Its root is the first its name showed, whose
 * recovery scope the open walked; its device is taken to be that root's -- checked when the number is
 * read (file.c: up_file_key; a file that is elsewhere goes to the kernel). Not while locks were ever taken
 * (an entry's size must be as recent as the last lock: refresh_gen), nor with atomic mappings or
 * other users' records waiting (both look files up by inode). */
int up_adopt_keyless(int fd, int oflags, uint32_t walked, uint64_t epoch) {
    if (!walked || fd <= 2 || __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE) != 1 || dk_cfg.atomic_mmap[0] ||
        up_foreign_any())
        return -1;
    struct up_root *r = up_root_at(__builtin_ctz(walked));
    struct stat st = {.st_dev = r->dev, .st_mode = S_IFREG};
    return adopt_in_root(fd, oflags, &st, r, 0, false, epoch);
}

/* The managed regular file fd (stat st) of root r joins the tables: a slot at `offset`, served by the
 * kernel when `kernel`; keyless (keyless_epoch: nonzero): st names the device only (up_adopt_keyless), -1
 * when an adoption came since that epoch. -EDEADLK in a signal handler whose thread holds the file's or
 * the root's mutex (nothing done). */
static int adopt_in_root(int fd, int oflags, const struct stat *st_in, struct up_root *r, uint64_t offset,
                         bool kernel, uint64_t keyless_epoch) {
    bool keyless = keyless_epoch != 0;
    struct stat st = *st_in;
    /* A file-size limit the program set itself after start-up: strict mode's log and the atomic journal,
     * made at a first open, may be larger than it, and the kernel would kill the program with SIGXFSZ for
     * growing one (review 7, finding 1b): such opens stay the kernel's while the limit is finite. */
    if (DK_UNLIKELY(up_fsize_limited()) && (dk_cfg.mode == DK_MODE_STRICT || dk_cfg.atomic[0])) {
        dk_count(DK_C_fallbacks, 1);
        dk_log_once("RLIMIT_FSIZE is finite: files opened from now on under %s are served by the kernel", r->path);
        return 0;
    }
    /* A signal handler whose thread holds the root's mutex (its probe) or the file's (a publish, a write):
     * refused, as an open inside the table's lock (table_nested.c; a pending descriptor's: pending.c). */
    if (DK_UNLIKELY(!__atomic_load_n(&r->probed, __ATOMIC_ACQUIRE) && dk_mu_mine(&r->mu))) {
        dk_count(DK_C_mu_mine_skips, 1);
        return -EDEADLK;
    }
    up_root_probe(r);
    /* the first file served: `daxkit stats` lists the process from now on -- not for a descriptor inherited
     * across exec (kernel-served for life: up_serving lists the image at its first call through it; a
     * program that never uses it, /bin/true run by a shell holding `3>>log`, made and removed the file) */
    if (!up_adopting_inherited) dk_stats_publish();
    dk_mu_lock(&up_table_mu);
    DK_CRASH_POINT("upath.adopt.table_locked"); /* tests: a signal handler inside the thread's table lock */
    if (keyless && __atomic_load_n(&up_adopt_epoch, __ATOMIC_SEQ_CST) != keyless_epoch) {
        up_table_unlock();
        return -1;
    }
    struct up_file *old = keyless ? NULL : up_file_lookup(st.st_dev, st.st_ino);
    if (DK_UNLIKELY(old && dk_mu_mine(&old->mu))) {
        dk_count(DK_C_mu_mine_skips, 1);
        up_table_unlock();
        return -EDEADLK;
    }
    /* A closed entry whose inode number may have been reused: of another managed directory on the same file
     * system, or closed without a mapping (nothing kept the inode) while unlinks skipped their victim
     * lookup (up_victim_matters) since it was made -- the file starts afresh, or it would inherit the old
     * file's append strategy (chosen from the old name), kernel_only, I/O counts and dirty flags (review 7,
     * finding 7). A closed mapped entry keeps its inode alive: its number cannot have been reused. */
    if (old && old->open_refs == 0 && !up_file_pinned(old) &&
        (old->root != r ||
         (!old->map.ext_count && old->victims_seen != __atomic_load_n(&up_victims_unseen, __ATOMIC_ACQUIRE))))
        up_file_forget(st.st_dev, st.st_ino);
    bool known = !keyless && up_file_lookup(st.st_dev, st.st_ino) != NULL;
    struct up_file *f = keyless ? up_file_get_keyless(r, fd) : up_file_get(r, &st, NULL);
    struct up_slot *s = NULL;
    if (f) {
        if (known) {
            file_reopened(f, fd, &st, oflags);
            if (f->ksize > UP_MAP_MAX_BYTES) f->kernel_only = true;
        } else {
            f->strategy = choose_strategy(r, fd, oflags, &f->auto_policy);
            up_file_dax_check(f, fd); /* a DAX root's file may not be DAX (review 11, finding 3) */
            if (file_first_map(f, fd) != 0) dk_count(DK_C_pt_mapfail, 1);
        }
        /* its size was just read (not while an fsync's O_APPEND publish owes its look: refresh_gen stays behind, the
         * gate of the calls that must make it -- review28b #7) */
        if (!up_end_owed(f))
            f->refresh_gen = __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE);
        if (!known) f->victims_seen = __atomic_load_n(&up_victims_unseen, __ATOMIC_ACQUIRE);
        if (known) up_locks_note_refresh(f);
        uint32_t flags = (uint32_t)oflags & (O_ACCMODE | O_APPEND | O_SYNC | O_DSYNC | O_DIRECT);
        s = up_slot_new(f, flags, offset);
        if (s && ((oflags & O_DIRECT) || kernel)) s->kernel = 1;
        if (s && up_fd_bind(fd, s) != 0) {
            up_slot_drop_local(s);
            s = NULL;
        }
        if (!s) up_file_put(f);
    }
    up_table_unlock();
    if (s) dk_count(DK_C_opens, 1);
    return 0;
}

/* ---- close and dup ---- */

/* Nothing staged, nothing past the kernel's size: a publish would find so under f->mu (up_publish_locked
 * returns at once). Lock-free: appends another thread makes meanwhile are concurrent with the publish point
 * either way -- and one staged since the close's publish (by another thread's call) is seen here. */
static inline bool nothing_staged(const struct up_file *f) {
    return __atomic_load_n(&f->staged_count, __ATOMIC_ACQUIRE) == 0 &&
           __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) == up_file_size(f) &&
           __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE) == up_file_size(f) && !up_publish_rolling_back(f);
}
static inline bool nothing_to_publish(const struct up_file *f) {
    return nothing_staged(f) && !up_end_owed(f); /* (a publish point makes a put-off look: publish.c) */
}

/* A signal handler's publish point that interrupted this thread's call on f: true (counted) unless f's mutex
 * turns out free (the signal came before the lock or after the unlock) -- else f's state may be half-changed,
 * and the thread would wait for itself forever (review 9, finding 30). Any call of the thread holding f's
 * mutex, or inside glibc's lock or unlock of it (a close's publish), counts: its mark (common/lockmark.h;
 * review 14, finding 6 -- a timed guess on glibc's owner field before); so does an extend append of the
 * thread storing its bytes after the mutex (io.c). */
static bool publish_held_here(struct up_file *f) {
    if (DK_LIKELY(!up_io_mu_held(f))) return false;
    if (!up_append_inflight_mine(f) && dk_mu_trylock(&f->mu) == 0) {
        dk_mu_unlock(&f->mu);
        return false;
    }
    dk_count(DK_C_publish_held_skips, 1);
    return true;
}

/* A publish point of the file; in strict mode also a checkpoint (after f->mu: the lock order is
 * checkpoint > file). `locked`, when given, runs under the same hold of f->mu, after the publish. f->mu is
 * not taken when nothing is to be published and nothing runs under it (session 21: a strict SQLite
 * transaction's three lock releases each took it for nothing). A signal handler's publish point without
 * `locked` (a lock release; fsync or sync_file_range of a descriptor the library does not serve; freopen;
 * lseek SEEK_DATA/SEEK_HOLE; an attribute change's publish; a close's first publish) inside its thread's call
 * on f publishes nothing of f, as the walk of its publish point does not (publish_pinned): it waited for its
 * own thread forever (session 22, shim_handler_lock_held); the thread's next publish point publishes. Checked
 * only where f->mu would be taken: a release with nothing to publish pays nothing (review 22, #03). */
static int publish_file_then_ck(struct up_file *f, int fd, void (*locked)(struct up_file *f), bool checkpoint) {
    bool atomic = f->atomic;
    int rc = atomic ? up_atomic_publish(f) : 0; /* a commit */
    if (atomic && !locked) return rc;
    if (locked || !nothing_to_publish(f)) { /* (an atomic file gets here with `locked` only) */
        if (!locked && DK_UNLIKELY(publish_held_here(f))) return rc; /* a handler inside its thread's call on f */
        up_file_lock(f);
        if (!atomic) rc = up_publish_locked(f, fd);
        if (locked) locked(f);
        dk_mu_unlock(&f->mu);
    }
    if (checkpoint && !atomic && dk_cfg.mode == DK_MODE_STRICT && !up_thread_in_call())
        up_strict_checkpoint(f->root); /* see up_publish_all */
    return rc;
}
static int publish_file_then(struct up_file *f, int fd, void (*locked)(struct up_file *f)) {
    return publish_file_then_ck(f, fd, locked, true);
}

/* (publish_file_then's own first looks, without its frame, for the common case: a lock release of a file with
 * nothing to publish -- SQLite's -shm, three times a transaction) */
static inline int publish_file(struct up_file *f, int fd) {
    if (dk_cfg.mode != DK_MODE_STRICT && !__atomic_load_n(&f->atomic, __ATOMIC_RELAXED) && nothing_to_publish(f)) return 0;
    return publish_file_then(f, fd, NULL);
}

/* Keeps a duplicate so that appends whose publish failed can still reach the file later. */
static void keep_rescue_fd(struct up_file *f, int fd) {
    if (f->rescue_fd >= 0) return;
    int d = DK_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 512);
    if (d < 0) return;
    up_fd_mark_internal(d, true);
    f->rescue_fd = d;
    up_pin_note(f);
}

/* ---- names removed: is the victim worth a stat? ---- */

/* What a cached file holds beyond its size is its mapping (pages of a deleted file on tmpfs stay allocated
 * while mapped). While no *closed* file of this process keeps a mapping, the inode an unlink or rename-over
 * removes need not be looked up: a closed entry of it keeps a size only -- an inode number reused later is
 * reopened with the kernel's size (file_reopened) -- and an open one, mapped or not, is checked at its
 * last close if it is mapped then (last_close_of_mapped). git add: one lstat per object file less (link +
 * unlink of its temporary name); SQLite with a rollback journal: one per transaction (the journal's
 * unlink; the database is open). */
uint64_t up_victims_unseen;

bool up_victim_matters(void) {
    if (__atomic_load_n(&up_closed_mapped, __ATOMIC_ACQUIRE)) return true;
    if (dk_cfg.mode == DK_MODE_STRICT || dk_cfg.atomic[0]) return true; /* their engines keep more than a size */
    __atomic_add_fetch(&up_victims_unseen, 1, __ATOMIC_ACQ_REL);
    dk_count(DK_C_victim_skips, 1);
    return false;
}

/* The last close of a mapped file, after an unlink whose victim was not looked up since the entry was made:
 * if that removed its last name, the entry (and its mapping) goes now, as up_name_removed would have done.
 * Under up_table_mu, before the descriptor is closed. */
static void last_close_of_mapped(struct up_file *f, int fd) {
    if (!f->map.ext_count || f->victims_seen == __atomic_load_n(&up_victims_unseen, __ATOMIC_ACQUIRE)) return;
    struct stat st;
    DK_ERRNO_SAVE;
    if (DK_REAL(fstat)(fd, &st) == 0 && st.st_nlink == 0) f->unlinked = true;
    DK_ERRNO_RESTORE;
}

/* Under f->mu, at a close: the kernel drops the process's POSIX locks on the file at any close of it, so
 * closing the auxiliary descriptor now takes nothing more from the program. */
static void closing_locked(struct up_file *f) {
    up_locks_closed(f);
    up_aux_close(f);
}

/* The close's publish point needs no f->mu: nothing to publish, no kept descriptor to close, no strict
 * checkpoint or DAXKIT_ATOMIC commit -- most closes (tar xf: every file, published by its futimens; ~180
 * instructions a close). A kept descriptor another thread opens meanwhile stays until the file's next close
 * or its entry's end (auxfd.c), as one opened just after this close would. */
static bool close_is_idle(const struct up_file *f) {
    return dk_cfg.mode != DK_MODE_STRICT && !__atomic_load_n(&f->atomic, __ATOMIC_RELAXED) && nothing_to_publish(f) &&
           __atomic_load_n(&f->aux_fd, __ATOMIC_RELAXED) < 0 && __atomic_load_n(&f->atomic_fd, __ATOMIC_RELAXED) < 0;
}

/* The close's publish point (after the drain) and its bookkeeping: 0, or the publish's -errno. A signal
 * handler's close inside its thread's call on f (`held`: a publish under f->mu) does the lock-free part only:
 * the publish is the thread's, and the kept descriptor stays until the next close (session 23: the handler's
 * close of a dup waited here for its own thread forever, after its first publish had been skipped). */
static int close_publish(struct up_file *f, int fd, bool held) {
    bool idle = close_is_idle(f);
    if (idle || DK_UNLIKELY(held)) {
        up_locks_closed(f); /* lock-free (reclock.c) */
        if (idle) dk_count(DK_C_close_idle, 1);
        return 0;
    }
    return publish_file_then(f, fd, closing_locked);
}

int up_close(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    if (!s) return 0;
    struct up_file *f = s->file;
    /* Appends staged in posix mode: published while the descriptor is still bound, so that its slot's offset
     * follows them (publish.c: adopt_append_end). (Sync and strict modes publish inside the write: what a
     * write in flight has staged is published after the drain, below.) */
    int rc = 0;
    if (dk_cfg.mode == DK_MODE_POSIX && !f->atomic && !nothing_to_publish(f)) {
        rc = publish_file(f, fd);
        if (rc) keep_rescue_fd(f, fd);
    }
    /* The entry closes (new calls wait for the kernel's close: calls.h), then the calls inside it drain --
     * not under up_table_mu, which a call may take -- and only then do the slot and the file go. A closer
     * inside a call itself (a signal handler's close; one holding a file's mutex) never waits. */
    struct up_fd *e;
    dk_mu_lock(&up_table_mu);
    struct up_slot *last = up_fd_unbind_closing(fd, &e);
    up_table_unlock();
    DK_CRASH_POINT("upath.close.closing"); /* tests: another thread's call waits for the close here */
    enum up_drain d = up_calls_drain(e, !up_thread_in_call() && up_call_depth == 0);
    /* Then the close's publish point -- what calls of other threads staged meanwhile too: published before
     * the kernel closes the number, or a reopen of the file would find appends staged under an end its
     * first writes -- made through the kernel until the reopen is adopted -- moved (their order lost) --
     * and its bookkeeping, in one hold of f->mu, and strict mode's checkpoint. After the drain: the calls
     * on the descriptor wait for the close now, and take neither f->mu nor the checkpoint lock. Taken
     * before the entry closed, three threads appending through the descriptor kept taking both -- a closer
     * woken for the mutex found it taken again, one scheduling round after another, and waited for their
     * strict writes at the checkpoint, then again for those queued on the descriptor's offset lock at the
     * drain: 2,000 close + open rounds took over 100 s at load 20, 1.5 s with the kernel (review 12,
     * finding 14; shim_fd_lifetime's flood mode). */
    bool held = DK_UNLIKELY(publish_held_here(f)); /* a handler inside its thread's call on f (counted) */
    int rc2 = close_publish(f, fd, held);
    DK_CRASH_POINT("upath.close.locks_forgotten"); /* tests: lock calls between the set's forget and the kernel's close */
    if (!rc) rc = rc2;
    if (rc2) keep_rescue_fd(f, fd);
    /* A call inside: the drain's, or -- at the last close -- the thread's own call under f->mu, which no
     * drain sees (a lock release): the last close's bookkeeping below would wait for that mutex, and the
     * entry must outlive the call (review 23, finding 1: a handler's close of the descriptor its thread was
     * unlocking hung there). */
    if (DK_UNLIKELY(d == UP_DRAIN_BUSY || (held && last))) {
        dk_count(DK_C_close_busy_kept, 1); /* the slot and the file stay for ever: a call is inside */
        dk_mu_lock(&up_table_mu);
        up_file_key(f, NULL); /* keyless: its number read while the descriptor is still open (file.c) */
        dk_mu_unlock(&up_table_mu);
        return rc;
    }
    dk_mu_lock(&up_table_mu);
    if (last && f->open_refs == 1) last_close_of_mapped(f, fd);
    if (last) {
        if (f->open_refs == 1 && f->heap_kept) { /* closed for good: the next burst may never come */
            up_file_lock(f);
            up_stage_kept_free(f);
            dk_mu_unlock(&f->mu);
        }
        if (f->atomic && f->open_refs == 1) {
            up_atomic_detach(f);
            up_file_lock(f);
            up_aux_close(f); /* the engine's descriptor, kept past the detach: the program's close follows */
            dk_mu_unlock(&f->mu);
        }
        up_slot_drop_local(last);
        up_file_put(f);
    }
    up_table_unlock();
    return rc;
}

void up_dup(int oldfd, int newfd) {
    dk_mu_lock(&up_table_mu);
    struct up_slot *s = up_fd_slot(oldfd);
    if (s && s->file->keyless_fd >= 0) up_file_key(s->file, NULL); /* one descriptor each, while keyless */
    if (s && !up_fd_slot(newfd)) up_fd_bind(newfd, s);
    up_table_unlock();
    if (s && newfd <= 2) up_std_fd_to_kernel(newfd, true);
}

/* ---- vectors ---- */

bool up_rwf_served(int flags) { return (flags & ~UP_RWF_KNOWN) == 0; }

/* Total length of an iovec array as the kernel checks it. -errno when invalid. */
static ssize_t iov_total(const struct iovec *iov, int cnt) {
    if (cnt < 0 || cnt > IOV_MAX) return -EINVAL;
    /* an array the kernel cannot read: its EFAULT, not a SIGSEGV here (common/userptr.h) */
    if (DK_UNLIKELY(!dk_user_readable(iov, (size_t)cnt * sizeof *iov))) return -EFAULT;
    size_t total = 0;
    for (int i = 0; i < cnt; i++) {
        if ((ssize_t)iov[i].iov_len < 0) return -EINVAL;
        if (iov[i].iov_len > (size_t)SSIZE_MAX - total) return -EINVAL;
        total += iov[i].iov_len;
    }
    return (ssize_t)total;
}

/* The kernel's order of checks: offset, then access mode and vector count -- in an order that changed
 * (6.1 checks the count first, later kernels the access mode): when both are wrong, the kernel says
 * which errno, by a call that fails without effect. */
static int vec_check(const struct up_slot *s, int fd, const struct iovec *iov, int cnt, off_t off, bool use_off,
                     int acc_bad, ssize_t *total) {
    if (use_off && off < 0) return -EINVAL;
    if ((int)(s->flags & O_ACCMODE) == acc_bad) {
        if (cnt >= 0 && cnt <= IOV_MAX) return -EBADF;
        ssize_t r = acc_bad == O_WRONLY ? DK_REAL(preadv)(fd, iov, cnt, 0) : DK_REAL(pwritev)(fd, iov, cnt, 0);
        return r < 0 ? -errno : -EBADF;
    }
    *total = iov_total(iov, cnt);
    if (*total >= 0 && use_off && up_end_overflows((uint64_t)off, (size_t)*total)) return -EINVAL; /* io.h */
    return *total < 0 ? (int)*total : 0;
}

ssize_t up_readv(struct up_slot *s, int fd, const struct iovec *iov, int cnt, off_t off, int flags, bool use_off) {
    ssize_t total = 0;
    int rc = vec_check(s, fd, iov, cnt, off, use_off, O_WRONLY, &total);
    (void)flags; /* only known flags reach here (up_rwf_served) */
    if (rc) {
        errno = -rc;
        return -1;
    }
    if (cnt == 1) return use_off ? up_pread(s, fd, iov[0].iov_base, iov[0].iov_len, off)
                                 : up_read(s, fd, iov[0].iov_base, iov[0].iov_len);
    size_t n = DK_MIN((size_t)total, DK_MAX_RW_BYTES);
    char stackbuf[8192], *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    ssize_t r = use_off ? up_pread(s, fd, buf, n, off) : up_read(s, fd, buf, n);
    for (ssize_t done = 0, i = 0; r > 0 && done < r; i++) {
        size_t k = DK_MIN(iov[i].iov_len, (size_t)(r - done));
        memcpy(iov[i].iov_base, buf + done, k);
        done += (ssize_t)k;
    }
    if (buf != stackbuf) free(buf);
    return r;
}

ssize_t up_writev(struct up_slot *s, int fd, const struct iovec *iov, int cnt, off_t off, int flags, bool use_off) {
    ssize_t total = 0;
    int rc = vec_check(s, fd, iov, cnt, off, use_off, O_RDONLY, &total);
    if (rc) {
        errno = -rc;
        return -1;
    }
    if (total == 0) return 0;
    size_t n = DK_MIN((size_t)total, DK_MAX_RW_BYTES);
    const char *buf = cnt == 1 ? iov[0].iov_base : NULL;
    char stackbuf[8192], *tmp = NULL;
    if (!buf) {
        tmp = n <= sizeof stackbuf ? stackbuf : malloc(n);
        if (!tmp) {
            errno = ENOMEM;
            return -1;
        }
        for (size_t done = 0, i = 0; done < n; i++) {
            size_t k = DK_MIN(iov[i].iov_len, n - done);
            memcpy(tmp + done, iov[i].iov_base, k);
            done += k;
        }
        buf = tmp;
    }
    ssize_t r;
    bool sync = (flags & (RWF_DSYNC | RWF_SYNC)) != 0;
    bool append = (flags & RWF_APPEND) != 0;
    if (!use_off && !sync && !append) r = up_write(s, fd, buf, n);
    else if (use_off && !sync && !append) r = up_pwrite(s, fd, buf, n, off);
    else { /* sync and/or append for this write only: passed down, never stored into the shared slot */
        uint32_t fl = (sync ? O_DSYNC : 0) | (append ? O_APPEND : 0);
        r = use_off ? up_pwrite_flags(s, fd, buf, n, off, fl) : up_write_flags(s, fd, buf, n, fl);
    }
    if (tmp && tmp != stackbuf) free(tmp);
    return r;
}

/* ---- offsets ---- */

off_t up_lseek(struct up_slot *s, int fd, off_t off, int whence) {
    struct up_file *f = s->file;
    int64_t base;
    switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR:
        /* An O_APPEND descriptor with O_APPEND appends staged here (posix mode): where they went -- the
         * offset the kernel's write leaves -- depends on the kernel's end, which another process may have
         * moved since (one fstat; up_refresh_size publishes them past its growth: review 12, finding 2). */
        if (DK_UNLIKELY(__atomic_load_n(&f->staged_o_append, __ATOMIC_RELAXED)) &&
            (__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) & O_APPEND) && !up_io_mu_held(f)) {
            DK_ERRNO_SAVE;
            up_refresh_size(f, fd);
            DK_ERRNO_RESTORE;
        }
        base = (int64_t)__atomic_load_n(&s->offset, __ATOMIC_ACQUIRE);
        break;
    case SEEK_END:
        /* Another process may have grown the file since this one looked (it published, or wrote through
         * the kernel): the end is the kernel's -- one fstat, as a read at the end pays; the kernel's lseek
         * reads i_size (review 12, finding 1: an append by SEEK_END + write overwrote another process's
         * acknowledged record). With appends staged here, growth found publishes them first (posix mode:
         * up_refresh_size; finding 2's addendum). Not from a signal handler whose thread holds the file's
         * mutex (it would wait for itself): the end this process knows then. */
        if (DK_LIKELY(!up_io_mu_held(f))) {
            DK_ERRNO_SAVE;
            up_refresh_size(f, fd);
            DK_ERRNO_RESTORE;
        }
        base = (int64_t)up_file_size(f);
        break;
    case SEEK_DATA:
    case SEEK_HOLE: {
        up_atomic_detach_fd(fd); /* DAXKIT_ATOMIC: the kernel answers for the exact file */
        /* The kernel knows holes; give it every byte first. */
        int rc = publish_file(f, fd);
        if (rc) {
            errno = -rc;
            return -1;
        }
        off_t r = DK_REAL(lseek)(fd, off, whence);
        if (r >= 0) __atomic_store_n(&s->offset, (uint64_t)r, __ATOMIC_RELEASE);
        return r;
    }
    default: errno = EINVAL; return -1;
    }
    int64_t pos;
    if (__builtin_add_overflow(base, (int64_t)off, &pos) || pos < 0) {
        errno = EINVAL;
        return -1;
    }
    __atomic_store_n(&s->offset, (uint64_t)pos, __ATOMIC_RELEASE);
    if (whence != SEEK_CUR || off != 0) /* the program's own number now (a query keeps the mark) */
        __atomic_store_n(&s->pad[UP_SLOT_APPEND_END], 0, __ATOMIC_RELEASE);
    return (off_t)pos;
}

/* ---- durability and size ---- */

static bool nothing_to_publish(const struct up_file *f);
static bool nothing_staged(const struct up_file *f);

/* A log published at its write (publish.c up_write_through_locked: an O_APPEND log synced per record, redis's AOF
 * with appendfsync always) with nothing staged: its fsync under f->mu would publish nothing (the end it may owe
 * waits: an fsync's publish puts it off, publish_locked's may_put_off), reset no streak (note_sync_streak leaves
 * such a log alone) and end the record's "one append" (appends_unpublished 1 -> 0: a second append before an
 * fsync leaves the state). That last is the one change: a compare-and-swap here. Against a write of another
 * thread under the mutex (concurrent with this fsync either way): one that read 0 and published at its write
 * stores 1 after its bytes are in the file -- swapped to 0, the fsync covered them; one that read 1 is staged and
 * leaves the state (write_through false, its count 2 or, swapped between its read and store, 2 all the same
 * or 1 -- a streak only, never a publish decision). Posix mode, stage strategy (the only ones with the state). */
static bool written_through_synced(struct up_file *f) {
    if (!__atomic_load_n(&f->write_through, __ATOMIC_ACQUIRE) || __atomic_load_n(&f->strategy, __ATOMIC_RELAXED) != UP_STAGE ||
        dk_cfg.mode != DK_MODE_POSIX)
        return false;
    uint32_t one = 1, a = __atomic_load_n(&f->appends_unpublished, __ATOMIC_ACQUIRE);
    return a == 0 || (a == 1 && __atomic_compare_exchange_n(&f->appends_unpublished, &one, 0, false, __ATOMIC_ACQ_REL,
                                                             __ATOMIC_RELAXED));
}

/* An fsync that would change nothing: nothing to publish, on a medium where durability is no call at all
 * (memory: publish.c persist_needs_kernel), nothing spilled (whose record the publish point clears), and no
 * append streak to reset (publish.c note_sync_streak) -- what up_sync_file would find under f->mu. No mutex
 * then: a SQLite WAL transaction in place (after its restart) paid ~300 instructions for the mutex pair and the
 * publish's looks at nothing (session 27); so did each record of a log published at its write (session 29:
 * written_through_synced). Lock-free as a close's look (nothing_to_publish): appends another thread makes
 * meanwhile are concurrent with this fsync either way; not DAX or the page cache, whose fsync must wait for
 * another thread's publish in flight (its metadata mark comes last) and ask the kernel. */
static bool sync_changes_nothing(struct up_file *f) {
    if (up_persist_as(f) != DK_MEDIUM_VOLATILE || !nothing_staged(f) || __atomic_load_n(&f->spilled, __ATOMIC_ACQUIRE))
        return false;
    if (!up_end_owed(f) && __atomic_load_n(&f->appends_unpublished, __ATOMIC_RELAXED) == 0 &&
        __atomic_load_n(&f->sync_streak, __ATOMIC_RELAXED) == 0)
        return true;
    return written_through_synced(f);
}

int up_fsync(struct up_slot *s, int fd, bool datasync) {
    if (s->file->atomic) return up_atomic_fsync(s->file, fd, datasync);
    if (DK_UNLIKELY(__atomic_load_n(&s->file->keyless_fd, __ATOMIC_ACQUIRE) >= 0)) { /* durable where it is */
        dk_mu_lock(&up_table_mu);
        up_file_key(s->file, NULL);
        dk_mu_unlock(&up_table_mu);
        if (__atomic_load_n(&s->file->kernel_only, __ATOMIC_ACQUIRE)) return datasync ? DK_REAL(fdatasync)(fd) : DK_REAL(fsync)(fd);
    }
    dk_count(DK_C_fsyncs, 1);
    bool strict = dk_cfg.mode == DK_MODE_STRICT;
    if (!strict && sync_changes_nothing(s->file)) return 0;
    int rc = strict ? up_strict_fsync(s->file, fd, datasync) : up_sync_file(s->file, fd, datasync);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* A file that outgrows what daxkit maps (UP_MAP_MAX_BYTES) -- by ftruncate, by a write past it, by another
 * process's growth -- becomes the kernel's, as one opened that large is (file_first_map): strict mode
 * checkpoints first (no older record of the file may replay over what the kernel writes from now on,
 * unlogged), what is staged is published, and every call on the file passes through from then on (each
 * descriptor's offset is handed to the kernel at its first such call: up_serving). Idempotent. Counted as a
 * pass-through. 0 or -errno (the file stays ours). */
int up_kernel_takes_over(struct up_file *f, int fd) {
    if (dk_cfg.mode == DK_MODE_STRICT && !__atomic_load_n(&f->kernel_only, __ATOMIC_ACQUIRE) &&
        DK_UNLIKELY(!up_strict_checkpoint(f->root)))
        return -EDEADLK; /* a handler inside its thread's strict call: the file stays ours */
    up_file_lock(f);
    int rc = up_publish_locked(f, fd);
    if (rc == 0) __atomic_store_n(&f->kernel_only, true, __ATOMIC_RELEASE);
    dk_mu_unlock(&f->mu);
    if (rc == 0) dk_count(DK_C_pt_mapfail, 1);
    return rc;
}

/* A size past what daxkit maps: the kernel answers -- a sparse file of any size its file system allows --
 * after the file became the kernel's (up_kernel_takes_over); not logged in strict mode (fallocate's way),
 * and synchronous there and in sync mode. 0 or -1 with errno. */
static int truncate_past_mapping(struct up_file *f, int fd, off_t len) {
    int rc = up_kernel_takes_over(f, fd);
    if (rc) {
        errno = -rc;
        return -1;
    }
    if (DK_REAL(ftruncate)(fd, len) != 0) return -1;
    return dk_cfg.mode == DK_MODE_POSIX ? 0 : DK_REAL(fsync)(fd);
}

int up_ftruncate(struct up_slot *s, int fd, off_t len) {
    struct up_file *f = s->file;
    if (len < 0 || (s->flags & O_ACCMODE) == O_RDONLY) {
        errno = EINVAL;
        return -1;
    }
    if ((uint64_t)len > UP_MAP_MAX_BYTES && !f->atomic) return truncate_past_mapping(f, fd, len);
    bool strict = dk_cfg.mode == DK_MODE_STRICT;
    /* Refusals strict and atomic modes must not log first (recovery would apply what was refused): the
     * file-size limit (the kernel's EFBIG and SIGXFSZ) and, for the atomic engine, the largest size daxkit
     * maps. */
    if (strict || f->atomic) {
        int rc = up_fsize_refuse_growth((uint64_t)len, up_file_size(f));
        if (rc == 0 && (uint64_t)len > UP_MAP_MAX_BYTES) rc = -EFBIG;
        if (rc) {
            errno = -rc;
            return -1;
        }
    }
    if (f->atomic) return up_atomic_ftruncate(f, fd, len);
    /* A signal handler's truncate while its thread holds f's mutex (any mode) or is inside a strict operation
     * (strict): the truncate would wait for that thread (the mutex; the checkpoint lock's write side) --
     * refused before anything is logged, as strict.c's nested writes that cannot complete. So is a strict one
     * while its thread holds the file table's lock: its record takes the checkpoint lock, never taken under that
     * lock (review 26 #3; review 28 #5 -- with the log full it failed ENOSPC, and an exit's shutdown holding the
     * checkpoint lock would have waited for the table's). */
    if (DK_UNLIKELY(up_io_mu_held(f) ||
                    (strict && (up_strict_ck_held() || dk_mu_mine(&f->strict_mu) || dk_mu_mine(&up_table_mu))))) {
        dk_count(DK_C_strict_nested_refused, 1);
        errno = EDEADLK;
        return -1;
    }
    uint64_t seq = 0;
    struct up_strict_pub inflight = {0}; /* the truncate published as in flight (strict.c) */
    bool truncated = false;
    if (strict) {
        /* The file's appends held out until the truncate is done (session 26): an append chooses its offset
         * under strict_mu before it logs, and one that chose the end between this record and the kernel's cut
         * was logged at the old end and applied at the new one -- recovery replayed it behind a hole
         * (strict_trunc_name_*, case fappend: 12,388 bytes where the program saw 110). Lock order: strict_mu,
         * then the checkpoint lock, then f->mu, as an append's. */
        dk_mu_lock(&f->strict_mu);
        int lr = up_strict_log_truncate(f, fd, (uint64_t)len, &seq, &inflight);
        if (lr) {
            up_strict_done(f, &inflight);
            dk_mu_unlock(&f->strict_mu);
            errno = lr == -ENOSPC ? ENOSPC : lr == -EDEADLK ? EDEADLK : EIO; /* (EDEADLK: after the exit's shutdown) */
            return -1;
        }
        DK_CRASH_POINT("strict.truncate.logged");
    }
    up_file_lock(f);
    int rc = 0;
    /* Staged bytes below the new size must reach the file first; those above just go away. */
    if ((uint64_t)len > f->pub_size && f->strategy == UP_STAGE) rc = up_publish_locked(f, fd);
    if (rc == 0) rc = up_map_keep(f, fd, (uint64_t)len);
    if (rc == 0) {
        /* Growing cuts nothing a fast section may be using: only a shrink closes them (a membarrier). */
        bool shrinks = size_shrinks(f, (uint64_t)len);
        if (shrinks) up_guard_write_lock(f);
        if (DK_REAL(ftruncate)(fd, len) != 0) rc = -errno;
        else forget_contents(f, (uint64_t)len), truncated = true;
        if (shrinks) up_guard_write_unlock(f);
        f->meta_dirty = true;
    }
    dk_mu_unlock(&f->mu);
    if (rc == 0 && dk_cfg.mode != DK_MODE_POSIX) rc = up_sync_file(f, fd, true);
    if (strict && !truncated) up_strict_retract(f, seq); /* refused (EPERM, EINTR, ...): never replayed */
    if (strict && truncated) up_strict_truncated(f, seq);
    if (strict) up_strict_done(f, &inflight), dk_mu_unlock(&f->strict_mu);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

int up_fallocate(struct up_slot *s, int fd, int mode, off_t off, off_t len) {
    struct up_file *f = s->file;
    if (f->atomic) return up_atomic_fallocate(f, fd, mode, off, len);
    /* not logged: no older record may replay over it (a handler inside its thread's strict call: EDEADLK) */
    if (dk_cfg.mode == DK_MODE_STRICT && DK_UNLIKELY(!up_strict_checkpoint(f->root))) {
        errno = EDEADLK;
        return -1;
    }
    up_file_lock(f);
    int rc = up_publish_locked(f, fd);
    if (rc == 0 && !(mode & FALLOC_FL_KEEP_SIZE) && off >= 0 && len > 0 &&
        (uint64_t)off + (uint64_t)len <= UP_MAP_MAX_BYTES)
        rc = up_map_keep(f, fd, (uint64_t)off + (uint64_t)len);
    int r = -1;
    if (rc == 0) {
        up_guard_write_lock(f);
        uint64_t ks = f->ksize;
        r = DK_REAL(fallocate)(fd, mode, off, len);
        int e = errno;
        /* Only an allocation that starts inside the file makes no hole (a punch, a collapse, an insert, a
         * zeroed range may; holes.c). */
        if (r == 0 && ((mode & ~FALLOC_FL_KEEP_SIZE) || (uint64_t)off > ks)) up_holes_clamp(f, DK_MIN((uint64_t)off, ks));
        struct stat st;
        if (r == 0 && DK_REAL(fstat)(fd, &st) == 0) forget_contents(f, (uint64_t)st.st_size);
        up_guard_write_unlock(f);
        /* Sync and strict: a size or allocation change is durable when the call returns, as a write's
         * bytes are (review 11, finding 9: a size-growing fallocate was gone after a power loss). */
        if (r == 0 && dk_cfg.mode != DK_MODE_POSIX) {
            int err = up_pt_datasync(fd); /* (EBADF: ptsync.c's one rule) */
            if (err) r = -1, e = err;
        }
        errno = e;
        f->meta_dirty = true;
    }
    dk_mu_unlock(&f->mu);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return r;
}

/* ---- publish points on descriptors ---- */

int up_publish_fd(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    return f ? publish_file(f, fd) : 0;
}

/* Lock-free: a kernel-served descriptor's every call lands here, and a signal handler's call interrupting
 * its own thread's publish would wait for the mutex that thread holds -- with nothing to publish there is
 * nothing to wait for (shim_signal_claim, multi-threaded, with lazy adoption on: another thread's handler
 * adopted the descriptor while the main thread's read was in the kernel, so the slot became
 * kernel-served, and a handler then interrupted the main thread's publish: 5 of 30 children hung). An
 * append another thread is making meanwhile is concurrent with the call either way. */
void up_publish_fd_before_kernel(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (f) up_publish_file_before_kernel(f, fd); /* (NULL: freed by another thread's close meanwhile) */
}

void up_publish_file_before_kernel(struct up_file *f, int fd) {
    bool idle = dk_cfg.mode != DK_MODE_STRICT && !__atomic_load_n(&f->atomic, __ATOMIC_RELAXED) &&
                __atomic_load_n(&f->rescue_fd, __ATOMIC_RELAXED) < 0 && nothing_to_publish(f);
    if (!idle) publish_file(f, fd);
}

void up_program_maps(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (f) __atomic_store_n(&f->program_mapped, true, __ATOMIC_RELAXED);
    up_strict_program_maps(fd);
}

int up_hand_to_kernel(int fd) {
    up_atomic_detach_fd(fd);
    return up_publish_fd(fd);
}

void up_refresh_fd(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    if (s) up_refresh_if_idle(s->file, fd);
}

void up_offset_to_kernel(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    struct up_slot *s = e ? up_entry_slot(e) : NULL;
    /* The kernel's offset is already the truth: shared, or served by the kernel since it last was (stale:
     * the slot's offset is the old one -- review 12, finding 10). */
    if (!s || s->kernel || s->procs > 1 || e->stale) return;
    DK_REAL(lseek)(fd, (off_t)__atomic_load_n(&s->offset, __ATOMIC_ACQUIRE), SEEK_SET);
}

void up_offset_from_kernel(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    struct up_slot *s = e ? up_entry_slot(e) : NULL;
    if (!s || s->kernel || s->procs > 1) return;
    off_t k = DK_REAL(lseek)(fd, 0, SEEK_CUR);
    if (k >= 0) __atomic_store_n(&s->offset, (uint64_t)k, __ATOMIC_RELEASE);
}

void up_kernel_wrote_fd(int fd, uint64_t off, uint64_t end) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (f) up_kernel_wrote_file(f, fd, off, end);
}

void up_kernel_wrote_file(struct up_file *f, int fd, uint64_t off, uint64_t end) {
    struct stat st;
    up_file_lock(f);
    /* The pages of [off, end) the file's DAX mapping had are faulted in afresh (map.c: up_map_kernel_wrote;
     * pass-through calls only, never the served path); all of them when what the kernel changed is not
     * known (end UINT64_MAX). Counted as bytes asked for, DAX or not (what a test can see). */
    dk_count(DK_C_pt_changed_bytes, DK_MIN(end, f->ksize) > off ? DK_MIN(end, f->ksize) - off : 0);
    up_map_kernel_wrote(f, off, end, f->ksize);
    if (!up_file_size_ours(f) && DK_REAL(fstat)(fd, &st) == 0) {
        uint64_t ns = (uint64_t)st.st_size;
        /* Past what daxkit maps: the size is taken unmapped, and the next call that needs the mapping hands
         * the file to the kernel (up_kernel_takes_over). */
        if (ns > UP_MAP_MAX_BYTES || up_map_keep(f, fd, ns) == 0) forget_contents_guarded(f, ns);
    }
    dk_mu_unlock(&f->mu);
}

void up_kernel_changed_fd(int fd) { up_kernel_wrote_fd(fd, 0, UINT64_MAX); }

/* ---- stat and names ---- */

int up_fix_stat(dev_t dev, ino_t ino, off_t *size) {
    if (!up_enabled || !up_dev_is_managed(dev)) return 0;
    /* A signal handler inside its thread's table lock (pending.c: a pending descriptor's fstat): the kernel's
     * size is the truth while no file is active (a pinned file is), else it cannot be told: refused. */
    if (dk_mu_refuse(&up_table_mu)) {
        return __atomic_load_n(&up_active_files, __ATOMIC_SEQ_CST) ? -EDEADLK : 0;
    }
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(dev, ino);
    if (f && up_file_size_ours(f)) {
        /* An fsync's O_APPEND publish put its fstat off (publish.c put_end_off): another process's appends since
         * are in the kernel's size, below what is staged here (no descriptor to settle it through) */
        uint64_t k = __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE), sz = up_file_size(f);
        if (up_end_owed(f) && (uint64_t)*size > k && sz >= k)
            *size += (off_t)(sz - k);
        else
            *size = (off_t)sz;
    }
    up_table_unlock();
    return 0;
}

static void fix_fstat_in(struct up_slot *s, int fd, off_t *size);
void up_fix_fstat(int fd, off_t *size) {
    struct up_fd *e = up_fd_entry(fd); /* also finds files whose name is gone (not in the table) */
    struct up_slot *s = e && up_entry_slot(e) ? up_call_enter(e) : NULL; /* against a close meanwhile */
    if (!s) return;
    fix_fstat_in(s, fd, size);
    up_call_leave();
}

/* The program's fstat as the lock's re-read (session 28; docs/design-upath.md, "Reads below the probe page"):
 * the kernel reads i_size after the program's lock call returned -- what the library's own fstat at the next
 * served call would read, and when it equals this process's idle size (under f->mu, up_fstat_end) nothing another
 * process did before the lock is left to take. The generation and the lock set's word are taken before the
 * kernel's call, inside the call's record (the slot and file stay); taken only where refresh_for would re-read an idle file's size with
 * an fstat: a served descriptor (not the kernel's, not shared, not stale), a file not the kernel's or atomic,
 * owing no put-off chain's re-read, and not from a signal handler inside this thread's hold of the file's mutex or
 * inside a served call of its thread (a read put off in flight: the re-read's guard would wait for that call's). */
int up_fstat_begin(int fd, struct up_fstat_look *k) {
    k->s = NULL, k->gen = 0;
    struct up_fd *e = up_fd_entry(fd); /* also finds files whose name is gone (not in the table) */
    struct up_slot *s = e && up_entry_slot(e) ? up_call_enter(e) : NULL; /* against a close meanwhile */
    if (!s) return 0;
    k->s = s;
    struct up_file *f = s->file;
    uint64_t gen = __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE);
    if (DK_LIKELY(__atomic_load_n(&f->refresh_gen, __ATOMIC_RELAXED) == gen)) return 1; /* nothing pending */
    if (s->kernel || __atomic_load_n(&s->procs, __ATOMIC_ACQUIRE) > 1 || e->stale ||
        __atomic_load_n(&f->kernel_only, __ATOMIC_ACQUIRE) || __atomic_load_n(&f->atomic, __ATOMIC_RELAXED) ||
        __atomic_load_n(&f->refresh_owed, __ATOMIC_ACQUIRE) || up_io_mu_held(f) ||
        up_call_depth != 0) /* (a signal handler inside a served call: the re-read's guard would wait for it) */
        return 1;
    k->word = up_locks_refresh_word(f); /* lapses before the size, as refresh_for's note */
    k->gen = gen;
    return 1;
}

void up_fstat_end(int fd, struct up_fstat_look *k, int r, off_t *size) {
    struct up_slot *s = k->s;
    struct up_file *f = s->file;
    if (k->gen && r == 0) {
        /* Test builds: a cue between the kernel's fstat and the decision (shim_publish fstat_race: a signal
         * handler's ftruncate of the file here) */
        DK_CRASH_POINT("upath.fstat_end");
        /* Decided under f->mu (review28 #1): the answer is the re-read only when it equals this process's idle size
         * now. Another process's growth or cut (the answer differs), a change of this process's own between the
         * kernel's fstat and here (read outside the mutex: taken as another's, a shrink was undone as growth), or a
         * put-off chain's owed re-read leave the generation behind -- the next served call re-reads under the
         * mutex, as before. */
        up_file_lock(f);
        uint64_t cur = up_file_size(f);
        if (cur == f->pub_size && cur == f->ksize && f->staged_count == 0 && (uint64_t)*size == cur &&
            !__atomic_load_n(&f->refresh_owed, __ATOMIC_ACQUIRE)) {
            /* An end an fsync's O_APPEND publish put off (publish.c put_end_off) ends with it: the answer is this
             * process's end, nothing came since. Left owed under a generation no longer behind, no served call made
             * the look, and a settle after another process's later append moved the descriptor by that append
             * (review29b #1: a pwrite through the O_APPEND descriptor, then a read 5 bytes past its offset). */
            if (DK_UNLIKELY(up_end_owed(f))) up_settle_end_locked(f, fd, (uint64_t)*size);
            uint64_t was = __atomic_load_n(&f->refresh_gen, __ATOMIC_RELAXED);
            /* (a re-read another thread made meanwhile at a newer generation stays) */
            while (was < k->gen &&
                   !__atomic_compare_exchange_n(&f->refresh_gen, &was, k->gen, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}
            if (was < k->gen) {
                up_locks_note_refresh_word(f, k->word);
                __atomic_store_n(&f->size_unsure, false, __ATOMIC_RELAXED);
                dk_count(DK_C_refresh_by_fstat, 1);
            }
        }
        dk_mu_unlock(&f->mu);
    }
    if (r == 0) fix_fstat_in(s, fd, size);
    up_call_leave();
}

static void fix_fstat_in(struct up_slot *s, int fd, off_t *size) {
    struct up_file *f = s->file;
    /* The kernel's size past the end this process last saw, with appends staged here: another process's
     * published growth, which this process's view takes before it answers (up_publish_past_growth; review
     * 12, finding 2's addendum -- fstat said this process's stale end plus its appends). No extra call. */
    if (DK_UNLIKELY((uint64_t)*size > __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE)) && f->strategy == UP_STAGE &&
        !up_io_mu_held(f) && up_publish_past_growth(f, fd, (uint64_t)*size))
        *size = (off_t)up_file_size(f); /* (published: the kernel's size now, past its appends) */
    else if (up_file_size_ours(f)) *size = (off_t)up_file_size(f);
}

void up_name_removed(dev_t dev, ino_t ino) {
    /* A signal handler's unlink or rename that interrupted its thread inside the file table's lock (a walk, an
     * open's adoption, a close): waited for its own thread for ever (session 28) -- the entry is forgotten by
     * that thread when it lets go of the lock */
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        up_forget_later(dev, ino);
        return;
    }
    dk_mu_lock(&up_table_mu);
    up_file_forget(dev, ino);
    up_table_unlock();
}

/* ---- whole-process publishing ---- */

struct find_fd_arg {
    struct up_file *f;
    int fd;
};
static void find_fd_cb(int fd, struct up_fd *e, void *arg) {
    struct find_fd_arg *a = arg;
    struct up_slot *s = up_entry_slot(e);
    if (a->fd < 0 && s && s->file == a->f) a->fd = fd;
}

__thread bool up_exit_skipped;

bool up_thread_in_call(void) {
    return up_io_held_file() != NULL || up_strict_ck_held() || up_atomic_held_file() != NULL;
}

/* (_exit, exit, exec, fork: the appends since the last publish point of a file publish_held_here refuses are
 * lost then, as at a crash) */
static void publish_pinned(struct up_file *f) {
    if (DK_UNLIKELY(publish_held_here(f))) {
        up_exit_skipped = true;
        return;
    }
    if (DK_UNLIKELY(f->atomic && f == up_atomic_held_file())) { /* its route's lock: the same, not tried */
        dk_count(DK_C_publish_held_skips, 1);
        up_exit_skipped = true;
        return;
    }
    int rc;
    if (f->atomic) { /* a commit needs no descriptor (and skips itself when nothing changed) */
        rc = up_atomic_publish(f);
    } else {
        struct find_fd_arg a = {f, -1};
        up_fd_foreach(find_fd_cb, &a);
        int fd = a.fd >= 0 ? a.fd : f->rescue_fd;
        if (fd < 0) return;
        /* no checkpoint under up_table_mu (the checkpoint lock is never taken under it: exit's strict shutdown
         * holds that lock for ever, then takes the table's -- review 26, #3); each walk checkpoints after it */
        rc = publish_file_then_ck(f, fd, NULL, false);
    }
    if (rc) dk_log("could not move appends into a file under %s (%s); they are lost when this process ends",
                   f->root->path, dk_strerror(-rc));
    if (rc == 0 && f->rescue_fd >= 0) {
        up_fd_mark_internal(f->rescue_fd, false);
        DK_REAL(close)(f->rescue_fd);
        f->rescue_fd = -1;
    }
}

/* arg: NULL, or a bool set when f stays pinned -- its publish skipped or failed, or another thread appended
 * meanwhile (up_publish_all). */
static void publish_one(struct up_file *f, void *arg) {
    if (!up_file_pinned(f)) return;
    publish_pinned(f);
    if (arg && up_file_pinned(f)) *(bool *)arg = true;
}

/* publish_one for a file whose mu this thread holds already (up_file_lock_all). */
static void publish_held(struct up_file *f, void *arg) {
    (void)arg;
    if (!up_file_pinned(f) || f->lock_all_skipped) return; /* not locked by up_file_lock_all */
    struct find_fd_arg a = {f, -1};
    up_fd_foreach(find_fd_cb, &a);
    int fd = a.fd >= 0 ? a.fd : f->rescue_fd;
    if (fd < 0) return;
    int rc = up_publish_locked(f, fd);
    if (rc) dk_log("could not move appends into a file under %s (%s); they are lost when this process ends",
                   f->root->path, dk_strerror(-rc));
}

void up_publish_all_held(void) {
    DK_ERRNO_SAVE;
    up_file_foreach(publish_held, NULL);
    DK_ERRNO_RESTORE;
}

/* A lock acquisition is where another process's size changes must become visible (lock-disciplined
 * programs publish before they unlock). Rather than fstat every open managed file at every lock -- SQLite
 * in WAL mode locks its -shm file several times per transaction -- the lock moves a generation, and a file
 * is refreshed by its next served call (up_serving): one fstat per file actually used, at most once per
 * lock. */
uint64_t up_refresh_gen = 1;

void up_refresh_all(void) {
    if (!up_enabled) return;
    __atomic_add_fetch(&up_refresh_gen, 1, __ATOMIC_ACQ_REL);
}

uint64_t up_pin_seq = 1;
static uint64_t unpinned_at_seq; /* up_pin_seq when a walk began that left no active file pinned */

/* The pin owner (session 26): which file noted pins since the last walk that left none pinned -- a SQLite WAL
 * transaction pins the WAL alone (its appends) and unpins it at its fdatasync, and the lock release after it
 * walked the open files only to find none pinned (~280 instructions a transaction). One word: the noting file's
 * id << 32 | the low half of the walk's sequence (its base), id 0 none yet, PIN_MANY several. A note updates it
 * before it moves the sequence (internal.h up_pin_note); a walk that found nothing pinned resets it to (0, its
 * sequence) only if no note changed it since before the walk took its sequence (a note in between would be
 * lost otherwise); a publish that unpins f, finding the word (f, the last walk's sequence) after it read the
 * sequence now, resets it to (0, now) and records now as walked (up_pin_unpinned): every note up to now was f's,
 * and f is unpinned. */
#define PIN_MANY UINT32_MAX
static uint64_t pin_owner;
static uint32_t pin_ids;

static uint32_t pin_id_of(struct up_file *f) {
    uint32_t id = __atomic_load_n(&f->pin_id, __ATOMIC_RELAXED);
    if (DK_LIKELY(id)) return id;
    uint32_t n = __atomic_add_fetch(&pin_ids, 1, __ATOMIC_RELAXED);
    if (n >= PIN_MANY - 1) n = PIN_MANY; /* (ids ran out: such a file always counts as several) */
    uint32_t none = 0;
    return __atomic_compare_exchange_n(&f->pin_id, &none, n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED) ? n : none;
}

void up_pin_owner_note(struct up_file *f) {
    uint64_t id = pin_id_of(f), w = __atomic_load_n(&pin_owner, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t wid = w >> 32;
        if (wid == id || wid == PIN_MANY) return;
        uint64_t nw = (wid ? (uint64_t)PIN_MANY : id) << 32 | (uint32_t)w;
        if (__atomic_compare_exchange_n(&pin_owner, &w, nw, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
    }
}

void up_pin_unpinned(struct up_file *f) {
    if (dk_cfg.atomic[0]) return; /* (every walk runs: up_publish_all) */
    uint64_t c = __atomic_load_n(&unpinned_at_seq, __ATOMIC_ACQUIRE);
    uint64_t s = __atomic_load_n(&up_pin_seq, __ATOMIC_ACQUIRE); /* before the word: a note counted here shows */
    if (s == c) return;
    uint64_t id = __atomic_load_n(&f->pin_id, __ATOMIC_RELAXED), w = id << 32 | (uint32_t)c;
    if (!id || id == PIN_MANY ||
        !__atomic_compare_exchange_n(&pin_owner, &w, (uint32_t)s, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&unpinned_at_seq, s, __ATOMIC_RELEASE);
    dk_count(DK_C_publish_walks_recorded, 1);
}

/* up_publish_all; false when it checkpointed nothing because it was refused (a signal handler inside its thread's
 * hold of the file table's lock) or the library is off, true otherwise. */
static bool publish_all(void) {
    if (!up_enabled) return false;
    /* Nothing pinned since such a walk: this one would find nothing either (DAXKIT_ATOMIC's files are always
     * pinned -- their commits are the walk's -- so with it every walk runs). A change made after the load
     * below moves the sequence past it, so it is not recorded as walked. Strict mode skips the walk too but
     * not its checkpoint, below (session 21: SQLite's three lock releases per transaction each walked). */
    bool countable = !dk_cfg.atomic[0];
    uint64_t owner = __atomic_load_n(&pin_owner, __ATOMIC_ACQUIRE); /* before the sequence (pin_owner) */
    uint64_t seq = __atomic_load_n(&up_pin_seq, __ATOMIC_ACQUIRE);
    bool walk = !countable || seq != __atomic_load_n(&unpinned_at_seq, __ATOMIC_ACQUIRE);
    if (!walk) dk_count(DK_C_publish_walk_skips, 1);
    bool strict = dk_cfg.mode == DK_MODE_STRICT;
    if (!walk && !strict) return true;
    /* A signal handler's publish point (an unlock: fcntl F_UNLCK, flock LOCK_UN -- async-signal-safe, and
     * common before _exit) that interrupted its thread inside the file table's lock -- in this same walk, an
     * open's adoption, a close: nothing is walked (no checkpoint either); the thread's next publish point
     * publishes (review 14, finding 12: it waited for its own thread for ever). Counted. */
    if (dk_mu_refuse(&up_table_mu)) {
        return false;
    }
    DK_ERRNO_SAVE;
    if (walk) {
        bool pinned = false;
        dk_mu_lock(&up_table_mu);
        DK_CRASH_POINT("upath.publish_all.table_locked");
        up_file_foreach_active(publish_one, &pinned); /* closed-list files are published (up_file_put) */
        up_table_unlock();
        if (countable && !pinned) {
            __atomic_store_n(&unpinned_at_seq, seq, __ATOMIC_RELEASE);
            __atomic_compare_exchange_n(&pin_owner, &owner, (uint32_t)seq, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        }
    }
    /* (not from a signal handler that interrupted a call of its thread: it may be one the checkpoint waits for) */
    if (strict && !up_thread_in_call()) up_strict_checkpoint_all();
    DK_ERRNO_RESTORE;
    return true;
}

void up_publish_all(void) {
    (void)publish_all();
}

/* publish_all's first look: nothing pinned since the last walk that left none pinned (counted as its skip). */
static inline bool walk_skips(void) {
    if (DK_UNLIKELY(dk_cfg.atomic[0]) ||
        __atomic_load_n(&up_pin_seq, __ATOMIC_ACQUIRE) != __atomic_load_n(&unpinned_at_seq, __ATOMIC_ACQUIRE))
        return false;
    dk_count(DK_C_publish_walk_skips, 1);
    return true;
}

/* A lock release's publish point: fd's file, then every file -- up_publish_fd and up_publish_all in one, with
 * strict mode's one checkpoint of every root after both (session 27: the file's publish checkpointed its root,
 * then the walk's every root, that one again -- ~470 instructions a strict release, ~175 of them the checkpoint's
 * own work). When the walk checkpoints nothing because the library is off, the file's root is checkpointed alone,
 * as its publish did before; when it is refused (a signal handler inside its thread's hold of the file table's
 * lock) that checkpoint is refused too (up_strict_checkpoint: none under the table's lock, review 26 #3 -- it
 * waited there for other threads' strict operations, and for ever for an exit's shutdown; session 28), and the
 * thread's walk checkpoints after it. 0, or the file's publish's -errno. */
int up_publish_release(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    struct up_file *f = s ? __atomic_load_n(&s->file, __ATOMIC_ACQUIRE) : NULL;
    if (dk_cfg.mode != DK_MODE_STRICT) {
        int rc = f ? publish_file(f, fd) : 0;
        if (!walk_skips()) (void)publish_all();
        return rc;
    }
    /* Strict mode, nothing at all to do: nothing to publish of the file, no walk, no log with a record -- what the
     * file's publish, the walk and the checkpoints would each find (a strict SQLite transaction's first two
     * releases: ~230 instructions each for that, session 27) */
    if ((!f || (!__atomic_load_n(&f->atomic, __ATOMIC_RELAXED) && nothing_to_publish(f))) && up_strict_logs_empty() &&
        walk_skips())
        return 0;
    int rc = f ? publish_file_then_ck(f, fd, NULL, false) : 0;
    if (DK_UNLIKELY(!publish_all()) && f && !f->atomic && !up_thread_in_call()) up_strict_checkpoint(f->root);
    return rc;
}

int up_publish_inode(dev_t dev, ino_t ino) {
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(dev, ino);
    if (f) publish_one(f, NULL);
    up_table_unlock();
    if (dk_cfg.mode == DK_MODE_STRICT) up_strict_checkpoint_all(); /* truncate(path) follows, unlogged */
    return 0;
}

/* ---- attribute calls: the file's appends go in before its times, mode or owner are set ---- */

/* Whether the kernel's view of f may still change by a publish: unpublished appends or an extension to
 * cut, or (strict mode) operations the checkpoint has not applied yet. */
static bool publish_pending(const struct up_file *f) {
    return !f->atomic && (up_file_pinned(f) || dk_cfg.mode == DK_MODE_STRICT);
}

void up_publish_before_attr_fd(int fd) {
    struct up_slot *s = up_fd_slot(fd);
    if (!s || !publish_pending(s->file)) return;
    DK_ERRNO_SAVE;
    publish_file(s->file, fd); /* a failure keeps the appends for the next publish point, which reports it */
    DK_ERRNO_RESTORE;
}

static void any_pending_cb(struct up_file *f, void *arg) {
    if (publish_pending(f)) *(bool *)arg = true;
}

/* The walk itself: the caller has checked dk_mu_refuse(&up_table_mu). */
static bool any_pending_walk(void) {
    bool any = false;
    dk_mu_lock(&up_table_mu);
    up_file_foreach_active(any_pending_cb, &any);
    up_table_unlock();
    return any;
}

bool up_publish_any_pending(void) {
    if (dk_mu_refuse(&up_table_mu)) return true; /* a handler inside its thread's table lock: may be (as before) */
    return any_pending_walk();
}

static void publish_before_path(int dirfd, const char *path, int atflags);

void up_publish_before_attr_path(int dirfd, const char *path, int atflags) {
    if (!up_enabled || !path) return;
    /* A signal handler that interrupted its thread inside the file table's lock (a walk, an open's adoption, a
     * close): no publish first -- the call goes on, the file's appends are published by the walk or the next
     * publish point (a publish after a chmod may clear a set-user-ID bit, as an unlock's skipped walk leaves its
     * files for later). It waited for its own thread for ever (session 27). Counted: mu_mine_skips. */
    if (dk_mu_refuse(&up_table_mu)) return;
    if (!any_pending_walk()) return; /* nothing of this process can change the file later: no stat */
    publish_before_path(dirfd, path, atflags);
}

/* (the walk made by the caller, meta.c: a rename's, link's or linkat's name -- the active files were walked twice
 * when one had something pending, session 28's final read) */
void up_publish_before_attr_path_pending(int dirfd, const char *path, int atflags) {
    if (!up_enabled || !path || dk_mu_refuse(&up_table_mu)) return;
    publish_before_path(dirfd, path, atflags);
}

static void publish_before_path(int dirfd, const char *path, int atflags) {
    DK_ERRNO_SAVE;
    struct stat st;
    if (DK_REAL(fstatat)(dirfd, path, &st, atflags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) == 0 &&
        S_ISREG(st.st_mode) && up_dev_is_managed(st.st_dev)) {
        dk_mu_lock(&up_table_mu);
        struct up_file *f = up_file_lookup(st.st_dev, st.st_ino);
        struct up_root *r = f && publish_pending(f) ? f->root : NULL;
        if (r) publish_one(f, NULL);
        up_table_unlock();
        if (r && dk_cfg.mode == DK_MODE_STRICT && !up_thread_in_call()) up_strict_checkpoint(r); /* (publish_pinned) */
    }
    DK_ERRNO_RESTORE;
}

/* A descriptor this process created the file through and has not used yet is adopted at its first write
 * without an fstat (up_adopt_keyless), which takes the file to be as empty as the open left it. A truncate by
 * name may be of that file: the epoch moves first, so that such a descriptor is adopted with an fstat
 * (session 22, diff seed 796754441807: O_EXCL create, truncate to 1 byte by name, an O_APPEND write -- with
 * the extend strategy the byte was stored at offset 0 over the truncate's, the file 1 byte where the
 * kernel's has 2). */
void up_truncating_by_name(void) { __atomic_add_fetch(&up_adopt_epoch, 1, __ATOMIC_SEQ_CST); }

/* trunc26's note (session 27): between the kernel's truncate by name and up_truncated another thread's write of
 * the file still saw the old size and mapping -- an overwrite past the new end stored into the mapping there:
 * SIGBUS on tmpfs and DAX (the page is gone), a write lost on the page cache. ftruncate holds the file's mutex
 * and, when it shrinks, its guard's write side across the kernel's call and takes the new size under them; a
 * truncate by name of a file this process has open now does the same. The file is reached through one of its
 * descriptors, in a call on it (calls.h: a close meanwhile waits), entered before strict's hold (a closer drains
 * the calls before its checkpoint). Not when the thread is inside a call already (a signal handler's truncate:
 * it would wait for its own thread), not for a growth (nothing past the end is in use), not when appends staged
 * below the new size wait for a publish (ftruncate's case): the old order there. */
void up_truncate_inode_enter(dev_t dev, ino_t ino, struct up_trunc_hold *h) {
    *h = (struct up_trunc_hold){0};
    struct up_reader *me = up_reader_self;
    if (!__atomic_load_n(&up_active_files, __ATOMIC_ACQUIRE) || up_thread_in_call() || up_call_depth != 0 ||
        (me && __atomic_load_n(&me->in[UP_ASYM_CALL], __ATOMIC_RELAXED)) || dk_mu_mine(&up_table_mu))
        return;
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(dev, ino);
    struct find_fd_arg a = {f, -1};
    if (f) up_fd_foreach(find_fd_cb, &a);
    up_table_unlock(); /* (keeps errno) */
    struct up_fd *e = a.fd >= 0 ? up_fd_entry(a.fd) : NULL;
    struct up_slot *s = e ? up_call_enter(e) : NULL;
    if (!s) return;
    struct up_file *g = __atomic_load_n(&s->file, __ATOMIC_ACQUIRE);
    if (!g || g->dev != dev || g->ino != ino || g->atomic) { /* (the number reused meanwhile) */
        up_call_leave();
        return;
    }
    h->f = g;
}

void up_truncate_inode_lock(struct up_trunc_hold *h, dev_t dev, ino_t ino, uint64_t len) {
    struct up_file *f = h->f;
    if (!f) return;
    if (f->dev != dev || f->ino != ino) return; /* strict's record names another file (renamed meanwhile) */
    DK_ERRNO_SAVE;
    up_file_lock(f);
    if (!size_shrinks(f, len) || (f->staged_count && len > f->pub_size)) {
        dk_mu_unlock(&f->mu);
    } else {
        up_guard_write_lock(f);
        h->locked = true;
    }
    DK_ERRNO_RESTORE;
    if (!h->locked) return;
    DK_CRASH_POINT("upath.truncate_inode.locked"); /* tests: another thread's write waits from here */
}

void up_truncate_inode_done(struct up_trunc_hold *h, bool truncated, uint64_t len) {
    struct up_file *f = h->f;
    if (!f) return;
    DK_ERRNO_SAVE;
    if (h->locked) {
        if (truncated) forget_contents(f, len), f->meta_dirty = true;
        up_guard_write_unlock(f);
        dk_mu_unlock(&f->mu);
    }
    up_call_leave();
    if (h->cancel_off) dk_cancel_restore(h->cancel_was);
    *h = (struct up_trunc_hold){0};
    DK_ERRNO_RESTORE;
}

/* An open with O_TRUNC has the same window (session 27): the kernel cuts the file at the open, and the adoption
 * that takes the new size comes after -- another thread's overwrite past the new end in between was a SIGBUS (sync,
 * strict) or a write lost (posix: stored past the kernel's end). One stat of the name while a file is active. */
bool up_truncating_open_enter(int dirfd, const char *path, int kflags, struct up_trunc_hold *h) {
    *h = (struct up_trunc_hold){0};
    if (!up_enabled || !path || !(kflags & O_TRUNC) || !__atomic_load_n(&up_active_files, __ATOMIC_ACQUIRE)) return false;
    /* Only a name that leads below a root by its text (the directory verdicts an open uses: no system call
     * for a name outside them -- fopen "w" of /tmp files, a shell's `>`; review 27, #5's LOW). A symlink from
     * outside the roots to a file open here is not held: the window before the adoption stays for it. */
    if (!up_roots_by_name(dirfd, path)) return false;
    DK_ERRNO_SAVE;
    struct stat st;
    bool file = DK_REAL(fstatat)(dirfd, path, &st, (kflags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
                S_ISREG(st.st_mode) && up_dev_is_managed(st.st_dev);
    if (file) up_truncate_inode_enter(st.st_dev, st.st_ino, h);
    DK_ERRNO_RESTORE;
    if (!h->f) return false;
    h->dev = st.st_dev, h->ino = st.st_ino;
    /* The kernel's open is a cancellation point in glibc: unwound there with the file's mutex and guard held and
     * a call entered, the process waited for ever (review 27, #5 HIGH). The caller acted on a pending cancel just
     * before this (shim/open.c); from here to up_truncate_inode_done the open is none -- as strict's hold makes
     * it for the truncate record (one that arrives while the open blocks acts at the next cancellation point). */
    h->cancel_was = dk_cancel_off(), h->cancel_off = true;
    return true;
}

void up_truncating_open_done(struct up_trunc_hold *h, int fd) {
    bool truncated = false;
    if (h->locked && fd >= 0) { /* the file the kernel opened (and cut) is the one held: not renamed meanwhile */
        DK_ERRNO_SAVE;
        struct stat st;
        truncated = DK_REAL(fstat)(fd, &st) == 0 && st.st_dev == h->f->dev && st.st_ino == h->f->ino;
        DK_ERRNO_RESTORE;
    }
    up_truncate_inode_done(h, truncated, 0);
}

int up_truncated(dev_t dev, ino_t ino, off_t len) {
    (void)len;
    dk_mu_lock(&up_table_mu);
    struct up_file *f = up_file_lookup(dev, ino);
    struct find_fd_arg a = {f, -1};
    if (f) up_fd_foreach(find_fd_cb, &a);
    if (f && a.fd < 0) up_file_forget(dev, ino); /* not open: the next open maps it afresh */
    up_table_unlock();
    if (a.fd >= 0) up_kernel_changed_fd(a.fd);
    return a.fd;
}

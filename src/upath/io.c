/* Reads and writes served from mappings. Overwrites of published bytes are stores into the file
 * mapping (non-temporal or store + write-back where the medium persists by flushing); appends go to
 * staging (stage) or in place past a pre-extended size (extend), and become part of the file at a
 * publish point (publish.c). */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/log.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "upath/atomic_mmap.h"
#include "upath/atomic_route.h"
#include "upath/delta.h"
#include "upath/fsize.h"
#include "upath/guard.h"
#include "upath/io.h"
#include "upath/upath.h"

/* ---- the descriptor offset: a tiny lock per slot (shared slots are never served) ---- */

/* The offset lock is held across the whole call (an append's record, publish and fstats in strict mode: tens
 * of microseconds, more when the holder is preempted), so its waiters spin briefly, then yield, then sleep:
 * pure spinners took the CPUs the holder -- and a closer waiting for their calls -- needed (review 12,
 * finding 14: three threads appending through one descriptor while a fourth closed and reopened it 2,000
 * times took over 100 s at load 20, 1.5 s on the kernel). The raw system calls: no cancellation point. */
static __attribute__((noinline, cold)) void pos_lock_wait(struct up_slot *s) {
    for (unsigned spins = 0;; spins++) {
        if (!__atomic_load_n(&s->pad[0], __ATOMIC_RELAXED) && !__atomic_exchange_n(&s->pad[0], 1, __ATOMIC_ACQUIRE))
            return;
        if (spins < 128) __builtin_ia32_pause();
        else if (spins < 192) sched_yield();
        else syscall(SYS_nanosleep, &(struct timespec){0, 20000}, NULL);
    }
}
static inline void pos_lock(struct up_slot *s) {
    if (__builtin_expect(__atomic_exchange_n(&s->pad[0], 1, __ATOMIC_ACQUIRE) != 0, 0)) pos_lock_wait(s);
}
static inline void pos_unlock(struct up_slot *s) { __atomic_store_n(&s->pad[0], 0, __ATOMIC_RELEASE); }

/* pad[1]: the slot's offset was handed to the kernel (its file became kernel_only). A call in flight on the
 * slot holds the offset lock and moves s->offset at its end, so the hand-over waits for it; a call after
 * it passes through (up_serving) and moves the kernel's offset, which no later hand-over may overwrite. */
void up_io_offset_to_kernel(struct up_slot *s, int fd) {
    if (__atomic_load_n(&s->pad[1], __ATOMIC_ACQUIRE) || s->kernel || __atomic_load_n(&s->procs, __ATOMIC_ACQUIRE) > 1)
        return; /* a shared or kernel slot: the kernel's offset is the truth already */
    DK_ERRNO_SAVE;
    pos_lock(s);
    if (!s->pad[1]) DK_REAL(lseek)(fd, (off_t)s->offset, SEEK_SET);
    __atomic_store_n(&s->pad[1], 1, __ATOMIC_RELEASE);
    pos_unlock(s);
    DK_ERRNO_RESTORE;
}

/* The file whose mutex this thread is taking or holding for a read (read_unmapped, read_locked) or a write
 * (overwrite_unmapped, write_locked, write_by_kernel: review 9, finding 25), set from before the lock call
 * to after the unlock: a signal handler's read of the same file then goes to the kernel (read_nested)
 * instead of waiting for a mutex its own thread holds. Not replaced by f->mu's mark (common/lockmark.h:
 * dk_mu_mine): it also spans a sync write's publish (up_io_write) and an extend append's stores after the
 * mutex (write_locked), where the mutex is free but the file is this thread's. */
static __thread const struct up_file *mu_file;

const struct up_file *up_io_held_file(void) { return mu_file; }

/* This thread is taking, holding or letting go of f->mu: in a section of this file (mu_file), or anywhere
 * else -- a close's publish, an unlock's walk (the mutex's mark, common/lockmark.h). A signal handler's call
 * on f must then not wait for it. */
static inline bool mu_mine(const struct up_file *f) { return mu_file == f || dk_mu_mine(&f->mu); }

/* ---- copying ---- */

static inline bool flush_medium(const struct up_file *f) { return up_persist_as(f) == DK_MEDIUM_DAX; }

/* Stores into the file mapping: non-temporal from DAXKIT_NT_MIN_BYTES on every medium -- a cached copy
 * first reads each line it overwrites (4 KiB random overwrites on huge tmpfs: median 2.1x the
 * non-temporal floor) -- with write-back of the rest where the medium persists by flushing. Elsewhere the
 * partial lines at either end are plain stores, not written back: until session 25 they were (dk_copy_nt),
 * up to two write-backs of ~150 ns on every unaligned write of 256 B or more (a 400-byte append under extend
 * with keep, one fdatasync each: 1,053 ns a record with them, 774 without; docs/benchmarks.md, session 25).
 * The fence (or the lock release, or the guard's sfence) orders them for other threads. */
static void store(const struct up_file *f, char *dst, const char *src, size_t n) {
    if (flush_medium(f)) dk_store_persistent(dst, src, n, dk_cfg.nt_min_bytes);
    else if (n >= dk_cfg.nt_min_bytes) dk_copy_nt_unflushed(dst, src, n);
    else memcpy(dst, src, n);
}

void up_io_overwrite(struct up_file *f, uint64_t off, const char *buf, size_t n) {
    while (n) {
        size_t chunk = DK_MIN(n, DK_HUGE_BYTES - (off & (DK_HUGE_BYTES - 1)));
        char *dst = up_map_addr(&f->map, off);
        dk_assert(dst != NULL);
        store(f, dst, buf, chunk);
        off += chunk, buf += chunk, n -= chunk;
    }
}

/* An extend append below this many bytes is stored with ordinary stores where the medium does not persist by
 * flushing: its lines were zeroed moments before -- by the kernel's fault, or by the background prefault half a
 * step ahead (keep) -- and are in the cache, where a non-temporal store must first evict each one (the
 * read-for-ownership it saves an overwrite does not happen here). Session 25 (`dk_bench_append_sync`, extend
 * with keep, huge tmpfs, one fdatasync a record, CPU ns a record, medians of 5-7, load 12-16): 400 B 360-455
 * against 774-1,053 non-temporal; 1 KiB 485 / 963; 4 KiB 1,714 / 2,692; 16 KiB 4,637 / 4,479 (even);
 * 256 KiB 138,780 / 63,355 (a step's prefault is out of the cache by then). */
#define UP_APPEND_CACHED_BYTES (16u << 10)

/* Stores an extend append [off, off+n) into the mapping (up_io_overwrite's caller for appends). */
static void append_store(struct up_file *f, uint64_t off, const char *buf, size_t n) {
    if (n >= UP_APPEND_CACHED_BYTES || flush_medium(f)) {
        up_io_overwrite(f, off, buf, n);
        return;
    }
    while (n) {
        size_t chunk = DK_MIN(n, DK_HUGE_BYTES - (off & (DK_HUGE_BYTES - 1)));
        char *dst = up_map_addr(&f->map, off);
        dk_assert(dst != NULL);
        memcpy(dst, buf, chunk);
        off += chunk, buf += chunk, n -= chunk;
    }
}

void up_io_copy_out(const struct up_file *f, uint64_t off, char *buf, size_t n) {
    while (n) {
        size_t chunk = DK_MIN(n, DK_HUGE_BYTES - (off & (DK_HUGE_BYTES - 1)));
        const char *src = up_map_addr(&f->map, off);
        dk_assert(src != NULL);
        memcpy(buf, src, chunk);
        off += chunk, buf += chunk, n -= chunk;
    }
}

/* Makes [off, off+n) of the file mapping durable as the medium requires (sync mode, O_SYNC). */
void up_io_persist_range(struct up_file *f, uint64_t off, size_t n) {
    switch (up_persist_as(f)) { /* per file: a DAX root's file may not be DAX (review 11, finding 3) */
    case DK_MEDIUM_DAX:
        dk_fence(); /* stores were written back already */
        dk_count(DK_C_persist_flushes, 1);
        return;
    case DK_MEDIUM_VOLATILE: return; /* nothing survives power loss here anyway */
    case DK_MEDIUM_PAGECACHE: dk_count(DK_C_persist_msyncs, 1); break;
    }
    uint64_t end = off + n;
    off = dk_round_down(off, DK_PAGE_BYTES);
    while (off < end) {
        size_t chunk = DK_MIN(end - off, DK_HUGE_BYTES - (off & (DK_HUGE_BYTES - 1)));
        char *p = up_map_addr(&f->map, off);
        if (p) dk_libc()->msync(p, dk_round_up(chunk, DK_PAGE_BYTES), MS_SYNC);
        off += chunk;
    }
}

/* ---- staged appends ---- */

/* The staged slot covering file offset `off` (off >= pub_size), about to be written up to `end`, taking
 * new slots (or growing a heap slot) as needed. */
static struct up_staged *staged_slot_for(struct up_file *f, uint64_t off, uint64_t end, int *err) {
    for (;;) {
        if (f->staged_count) {
            struct up_staged *last = &f->staged[f->staged_count - 1];
            if (off >= last->base + last->cap) up_stage_grow(last, DK_MAX(end, off + 1));
            if (off < last->base + last->cap) {
                /* Slots are contiguous from pub_size: index arithmetic finds most, a scan the rest. */
                for (uint32_t i = 0; i < f->staged_count; i++) {
                    struct up_staged *s = &f->staged[i];
                    if (off >= s->base && off < s->base + s->cap) return s;
                }
                dk_assert(!"staged range has a gap");
                *err = -EIO;
                return NULL;
            }
        }
        if (f->staged_count == f->staged_cap) {
            if (DK_UNLIKELY(up_stage_busy())) { /* a handler's append: the interrupted staging may be in malloc */
                *err = -ENOSPC;
                return NULL;
            }
            uint32_t cap = f->staged_cap ? f->staged_cap * 2 : 4;
            struct up_staged *n = realloc(f->staged, cap * sizeof *n);
            if (!n) {
                *err = -ENOMEM;
                return NULL;
            }
            f->staged = n, f->staged_cap = cap;
        }
        uint64_t base = f->staged_count ? f->staged[f->staged_count - 1].base + f->staged[f->staged_count - 1].cap
                                        : f->pub_size;
        int rc = f->staged_count == 0 && up_stage_take_kept(f, base, &f->staged[0])
                     ? 0
                     : up_stage_take(f->root, base, DK_MAX(end, off + 1), f->staged_count == 0, &f->staged[f->staged_count]);
        if (rc) {
            *err = rc;
            return NULL;
        }
        f->staged_count++;
        up_pin_note(f);
    }
}

/* Staged bytes must be durable themselves only where a relink shares their blocks with the file (a clone,
 * on a flush medium). Where the relink copies them through the kernel (tmpfs, ext4, any file system
 * without reflink), that copy into the file is what fsync makes durable: plain cached stores serve, and
 * the relink then reads them from the cache instead of memory. */
static bool staging_persists(const struct up_file *f) {
    return flush_medium(f) && f->root->clone_min_bytes != UINT64_MAX;
}

/* Stores [off, off+n) into staging; fills a gap after the logical size with zeros. Under f->mu. */
static int staged_write(struct up_file *f, uint64_t off, const char *buf, size_t n) {
    uint64_t size = up_file_size(f);
    dk_assert(off >= f->pub_size);
    while (size < off) { /* zero-fill the gap: a staged slot may hold old bytes */
        int err = 0;
        struct up_staged *s = staged_slot_for(f, size, off + n, &err);
        if (!s) return err;
        uint64_t len = DK_MIN(off, s->base + s->cap) - size;
        if (staging_persists(f)) dk_zero_nt(s->addr + (size - s->base), len);
        else memset(s->addr + (size - s->base), 0, len);
        size += len;
    }
    while (n) {
        int err = 0;
        struct up_staged *s = staged_slot_for(f, off, off + n, &err);
        if (!s) return err;
        size_t len = DK_MIN(n, s->base + s->cap - off);
        if (staging_persists(f)) store(f, s->addr + (off - s->base), buf, len);
        else memcpy(s->addr + (off - s->base), buf, len);
        off += len, buf += len, n -= len;
    }
    return 0;
}

/* Copies staged bytes [off, off+n) out (off >= pub_size). Under f->mu. */
static void staged_read(struct up_file *f, uint64_t off, char *buf, size_t n) {
    while (n) {
        struct up_staged *s = NULL;
        for (uint32_t i = 0; i < f->staged_count && !s; i++)
            if (off >= f->staged[i].base && off < f->staged[i].base + f->staged[i].cap) s = &f->staged[i];
        dk_assert(s != NULL);
        if (!s) {
            memset(buf, 0, n);
            return;
        }
        size_t len = DK_MIN(n, s->base + s->cap - off);
        memcpy(buf, s->addr + (off - s->base), len);
        off += len, buf += len, n -= len;
    }
}

/* ---- extend strategy ---- */

/* Another process grew the kernel file past what we set (a shared file written without locks on it, e.g.
 * a SQLite WAL guarded by locks in the -shm file): its size becomes ours -- what lies below it is that
 * process's data -- so that neither our extension nor our publish shrinks the file under it. The extend
 * strategy's own rule (it reads the size itself, grows the mapping, clears the size record); publish.c's
 * adopt_kernel_growth is the one for a size another call has read. */
static int extend_adopt_growth(struct up_file *f, int fd) {
    struct stat st;
    if (DK_REAL(fstat)(fd, &st) != 0 || (uint64_t)st.st_size <= f->ksize) return 0;
    uint64_t ks = (uint64_t)st.st_size;
    if (ks > UP_MAP_MAX_BYTES) return -EFBIG;
    int rc = up_map_grow(f, fd, ks, 0);
    if (rc) return rc;
    up_holes_clamp(f, f->ksize); /* what that process left may have holes */
    __atomic_store_n(&f->ksize, ks, __ATOMIC_RELEASE);
    if (ks > f->pub_size) __atomic_store_n(&f->pub_size, ks, __ATOMIC_RELEASE);
    if (ks > up_file_size(f)) up_file_set_size(f, ks);
    up_pin_note(f);
    up_sizerec_clear(f);
    return 0;
}

/* DAXKIT_EXTEND_SYNC=keep on a medium whose pages or blocks a background fault can prepare (memory, DAX;
 * not the page cache, where it would dirty zeros for writeback): the appends use a whole step, so the
 * next one is extended half a step early and faulted in by the background thread meanwhile. With cut,
 * each fsync frees the tail, so most of a step is never used: no lookahead. */
static bool prefaults_steps(const struct up_file *f) {
    return up_keeps_on_sync(f) && f->root->medium.medium != DK_MEDIUM_PAGECACHE;
}

/* Steps grow with the file (2 MiB up to DAXKIT_EXTEND_STEP_BYTES): small files stay small. */
static uint64_t step_bytes(const struct up_file *f) {
    return DK_MIN(dk_cfg.extend_step_bytes, DK_MAX((uint64_t)DK_HUGE_BYTES, f->ksize));
}

/* Makes the kernel size at least `end`, in steps, mapped and populated. Under f->mu. */
static int extend_to(struct up_file *f, int fd, uint64_t end) {
    bool ahead = prefaults_steps(f);
    uint64_t need = ahead ? end + step_bytes(f) / 2 : end;
    if (need <= f->ksize) return 0;
    int rc = extend_adopt_growth(f, fd);
    if (rc || need <= f->ksize) return rc;
    uint64_t from = f->ksize;
    up_holes_clamp(f, from); /* past the kernel size only the holes we make now */
    uint64_t target = dk_round_up(DK_MAX(need, f->ksize + step_bytes(f)), DK_HUGE_BYTES);
    if (target > UP_MAP_MAX_BYTES) return -EFBIG;
    rc = up_map_grow(f, fd, target, 0);
    if (rc) return rc;
    rc = up_sizerec_extend(f, fd, target); /* durable before the kernel size moves */
    if (rc) return rc;
    if (DK_REAL(ftruncate)(fd, (off_t)target) != 0) return -errno;
    __atomic_store_n(&f->ksize, target, __ATOMIC_RELEASE);
    up_pin_note(f); /* past the logical size until the next publish cuts it */
    f->meta_dirty = true;
    dk_count(DK_C_extends, 1);
    uint64_t pre = dk_round_up(DK_MAX(from, end), DK_HUGE_BYTES); /* the appender faults its own page */
    if (ahead && pre < target) up_stage_prefault(f, fd, pre, target - pre);
    return 0;
}

/* Allocates the storage under [backed_end, end) before the appender stores there, one 2 MiB piece (or
 * what the kernel size leaves) at a time. A step is made by ftruncate, so it is a hole: a store into a
 * hole the medium cannot fill (a full tmpfs, a memory cgroup's limit, a full DAX or page-cache file
 * system) is a SIGBUS that kills the program, where the kernel path's write returns ENOSPC. fallocate
 * turns it into -ENOSPC, which write_locked's caller answers through the kernel (write_by_kernel).
 * Where the background prefault got there first the call finds the pages and costs one system call
 * per 2 MiB. Under f->mu. 0 or -errno. */
static int back_extension(struct up_file *f, int fd, uint64_t end) {
    up_holes_probe_first(f, fd); /* a hole of the program's below: allocated too (holes.c) */
    if (end <= f->backed_end) return 0;
    uint64_t hi = DK_MIN(dk_round_up(end, DK_HUGE_BYTES), f->ksize);
    if (hi < end) hi = end;
    uint64_t lo = f->backed_end;
    int cancel_was = dk_cancel_off(); /* under f->mu: fallocate is a cancellation point */
    int rc = DK_REAL(fallocate)(fd, 0, (off_t)lo, (off_t)(hi - lo));
    dk_cancel_restore(cancel_was);
    if (rc != 0) {
        if (errno != EOPNOTSUPP) return -errno;
        hi = UINT64_MAX; /* the medium cannot allocate ahead: its faults are the only answer */
    }
    dk_count(DK_C_extend_backs, 1);
    __atomic_store_n(&f->backed_end, hi, __ATOMIC_RELEASE);
    return 0;
}

/* ---- the write path ---- */

/* Bytes at or above this offset are appends for the current strategy. */
static inline uint64_t inplace_limit(const struct up_file *f) {
    return f->strategy == UP_STAGE ? __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) : up_file_size(f);
}

/* append_locked's answer for a write that starts past the logical end: the caller has the kernel write it. */
#define UP_GAP_BY_KERNEL (-EXDEV)

/* Appending part of a write, under f->mu: [off, off+n), where off+n > inplace limit. With `store_after`
 * (extend strategy) only the extension is made ready and *store_after set: the caller stores the bytes
 * and moves the size after it let the mutex go (write_locked). UP_GAP_BY_KERNEL when (stage) the write
 * starts past the logical end: other processes may be filling that gap -- several processes writing
 * disjoint ranges of one growing file, parallel downloaders -- and staged zeros for it would be published
 * over their bytes, a truncate to make the hole could cut their growth (review 11, finding 13: 138-203 of
 * 800 chunks kept in every mode). The kernel's write makes the hole without either; a program appending
 * contiguously never gets here. */
static int append_locked(struct up_file *f, int fd, uint64_t off, const char *buf, size_t n, bool *store_after) {
    uint64_t end = off + n;
    if (f->strategy != UP_EXTEND && off > up_file_size(f)) return UP_GAP_BY_KERNEL;
    f->appends_unpublished++; /* publish.c: a file fsynced after every single append */
    if (f->strategy == UP_EXTEND) {
        int rc = extend_to(f, fd, end);
        if (rc == 0) rc = back_extension(f, fd, end);
        if (rc) return rc;
        if (store_after) {
            *store_after = true;
            return 0;
        }
        append_store(f, off, buf, n);
    } else {
        uint64_t pub = f->pub_size;
        if (off < pub && f->map.mapped_bytes < pub) {
            int rc = up_map_grow(f, fd, pub, 0);
            if (rc) return rc;
        }
        if (off < pub) { /* the head overwrites published bytes */
            int rc = up_holes_back(f, fd, off, pub);
            if (rc) return rc;
            up_io_overwrite(f, off, buf, pub - off);
            buf += pub - off, n -= pub - off, off = pub;
        }
        int rc = staged_write(f, off, buf, n);
        if (rc) return rc;
    }
    if (end > up_file_size(f)) up_file_set_size(f, end);
    return 0;
}

/* Under f->mu: the mapping covers [0, end) (and the kernel size, once the file is mapped at all). */
static int map_locked(struct up_file *f, int fd, uint64_t end) {
    if (f->map.ext_count && end <= f->map.mapped_bytes) {
        up_holes_probe_first(f, fd);
        return 0;
    }
    uint64_t want = DK_MAX(end, f->ksize);
    if (want > UP_MAP_MAX_BYTES) return -EFBIG;
    bool first = !f->map.ext_count;
    int rc = up_map_grow(f, fd, want, 0);
    if (rc) return rc;
    up_holes_probe_first(f, fd); /* on the mapping (mincore), before anything touches it */
    if (first && dk_cfg.populate) up_map_populate(f, 0, DK_MIN(f->ksize, f->backed_end)); /* holes.c */
    return 0;
}

/* ---- files not mapped yet ---- */

/* A file not mapped yet: its first reads and overwrites of published bytes go to the kernel
 * (DAXKIT_MAP_AFTER_IOS), so that a file used briefly -- a SQLite rollback journal rewriting its header,
 * a temporary file -- never pays for a mapping (mmap, populate, munmap: more than the pwrite it saves).
 * posix mode only: sync and strict persist through the mapping. Under f->mu. */
static bool unmapped_take_turn(struct up_file *f, uint64_t end) {
    if (dk_cfg.mode != DK_MODE_POSIX || __atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE)) return false;
    if (end > __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) || end > up_file_size(f)) return false;
    if (f->unmapped_ios >= dk_cfg.map_after_ios) return false;
    f->unmapped_ios++;
    return true;
}

/* The program's write handed to the kernel as one pwrite, as the program would have made it: the
 * kernel's count (short after a partial failure, as the kernel returns it) or -errno. Cancellation off:
 * the caller holds f->mu or a guard section. */
static ssize_t pwrite_as_program(int fd, const char *buf, size_t n, uint64_t off) {
    int cancel_was = dk_cancel_off();
    ssize_t w = DK_REAL(pwrite)(fd, buf, n, (off_t)off);
    if (w < 0) w = -errno;
    else if (w == 0) w = -EIO; /* n > 0: the kernel made no progress and named no error */
    dk_cancel_restore(cancel_was);
    return w;
}

/* An overwrite of published bytes by pwrite while the file is not mapped (the descriptor is no O_APPEND
 * one: the caller's write is not an append). Bytes written (the kernel's count), 0 when the mapped path
 * must do it, or -errno. */
static ssize_t overwrite_unmapped(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off) {
    if (__atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE) || off + n > inplace_limit(f)) return 0; /* cheap reject */
    const struct up_file *outer = mu_file;
    mu_file = f;
    up_file_lock(f);
    ssize_t w = 0;
    if (unmapped_take_turn(f, off + n)) {
        w = pwrite_as_program(fd, buf, n, off);
        f->meta_dirty = true; /* in the kernel's page cache (or written through DAX): its fsync persists it */
        dk_count(DK_C_pt_unmapped, 1);
    }
    dk_mu_unlock(&f->mu);
    mu_file = outer;
    return w;
}


/* A read of published bytes by pread while the file is not mapped. Bytes read, 0 when the mapped path
 * must do it. */
static ssize_t read_unmapped(struct up_file *f, int fd, char *buf, size_t n, uint64_t off) {
    if (__atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE) || off + n > inplace_limit(f)) return 0; /* cheap reject */
    const struct up_file *outer = mu_file;
    mu_file = f;
    up_file_lock(f);
    ssize_t r = 0;
    if (unmapped_take_turn(f, off + n)) {
        int cancel_was = dk_cancel_off(); /* f->mu is held */
        r = DK_REAL(pread)(fd, buf, n, (off_t)off);
        dk_cancel_restore(cancel_was);
        if (r != (ssize_t)n) r = 0; /* shrunk under us, or an error: the mapped path decides */
        else dk_count(DK_C_pt_unmapped, 1);
    }
    dk_mu_unlock(&f->mu);
    mu_file = outer;
    return r;
}

/* A signal handler reading the file whose mutex its interrupted thread holds for a read (the first,
 * unmapped reads; the first mapping): the kernel's pread, which has every published byte (bytes still
 * staged are the documented exception: docs/guarantees.md). Counted as a pass-through. */
static ssize_t read_nested(int fd, char *buf, size_t n, uint64_t off) {
    dk_count(DK_C_pt_unmapped, 1);
    ssize_t r = DK_REAL(pread)(fd, buf, n, (off_t)off);
    return r < 0 ? -errno : r;
}

/* Whether an overwrite through `fd` may go to the page cache by pwrite (see overwrite_by_pwrite). */
static bool pwrite_fits(struct up_file *f, int fd) {
    if (up_persist_as(f) != DK_MEDIUM_PAGECACHE) return false; /* first: every overwrite on any medium asks */
    const struct up_slot *s = up_fd_slot(fd);
    uint32_t fl = s ? __atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) : O_APPEND;
    if ((fl & (O_APPEND | O_SYNC | O_DSYNC)) || (fl & O_ACCMODE) == O_RDONLY) return false;
    /* not mapped yet in posix mode: the unmapped path counts its turns (overwrite_unmapped) */
    return __atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE) || dk_cfg.mode != DK_MODE_POSIX;
}

/* An overwrite of published bytes on a page-cache medium, by pwrite through the program's descriptor
 * (posix mode; strict mode's apply). A store through a shared mapping of the page cache takes a write
 * fault (page_mkwrite) on every page that writeback cleaned, and the fsync must then write-protect each
 * page again: on XFS, 4 KiB random overwrites with fsync every 10 ran at 0.3x the kernel's pwrite (op
 * median 6.5 against 3.2 us, fsync 480 against 108 us). Inside a guard section: no truncate of ours cuts
 * the range in between. `whole`: write until done (strict's apply), else one pwrite whose count -- short
 * after a partial failure -- is the program's answer, as on the kernel path. Bytes written, 0 when the
 * caller must (not page cache, descriptor not fit, range not published), or -errno. */
static ssize_t overwrite_by_pwrite(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool whole) {
    if (!pwrite_fits(f, fd)) return 0;
    enum up_guard_entry fast = up_guard_read_enter(f);
    ssize_t w = 0;
    if (off + n <= __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) && off + n <= __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE)) {
        if (!whole) w = pwrite_as_program(fd, buf, n, off);
        else {
            int rc = dk_pwrite_all(fd, buf, n, off, 0, NULL);
            w = rc ? rc : (ssize_t)n;
        }
    }
    up_guard_read_exit(f, fast);
    if (w > 0) dk_count(DK_C_pagecache_pwrites, 1);
    return w;
}

int up_io_overwrite_by_pwrite(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off) {
    ssize_t w = overwrite_by_pwrite(f, fd, buf, n, off, true);
    return w > 0 ? 1 : (int)w;
}

/* The common case without f->mu: an overwrite of published, mapped bytes. `fence`: false when the
 * caller persists later (strict mode: the record is durable, the checkpoint fences the applied bytes). */
static inline __attribute__((always_inline)) bool overwrite_fast(struct up_file *f, const char *buf, size_t n,
                                                                  uint64_t off, bool fence) {
    /* (the callers' first look: writes reaching past the published end -- appends -- skip the guard section,
     * whose look below is the one that counts) */
    enum up_guard_entry fast = up_guard_read_enter(f);
    bool ok = off + n <= inplace_limit(f) && off + n <= __atomic_load_n(&f->map.mapped_bytes, __ATOMIC_ACQUIRE) &&
              off + n <= __atomic_load_n(&f->backed_end, __ATOMIC_ACQUIRE) &&
              __atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE);
    if (ok) {
        up_io_overwrite(f, off, buf, n);
        if (fence && flush_medium(f)) dk_fence();
    }
    up_guard_read_exit(f, fast);
    return ok;
}

bool up_io_overwrite_mapped(struct up_file *f, const char *buf, size_t n, uint64_t off) {
    return off + n <= inplace_limit(f) && overwrite_fast(f, buf, n, off, false);
}

/* ---- delta records (strict.c) ---- */

/* In a guard section: [off, off+n) is published, mapped and backed, so reads and stores there are safe (the
 * checks of overwrite_fast and read_fast). */
static inline bool delta_in_place(const struct up_file *f, uint64_t off, size_t n) {
    return off + n <= inplace_limit(f) && off + n <= up_file_size(f) &&
           off + n <= __atomic_load_n(&f->map.mapped_bytes, __ATOMIC_ACQUIRE) &&
           off + n <= __atomic_load_n(&f->backed_end, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE);
}

ssize_t up_io_delta_compare(struct up_file *f, const char *buf, size_t n, uint64_t off, unsigned char *out,
                            size_t cap) {
    /* one huge page at most: the mapping is contiguous per 2 MiB chunk (up_io_overwrite's walk) */
    if ((off & (DK_HUGE_BYTES - 1)) + n > DK_HUGE_BYTES) return -1;
    enum up_guard_entry fast = up_guard_read_enter(f);
    ssize_t r = -1;
    if (delta_in_place(f, off, n)) {
        const char *old = up_map_addr(&f->map, off);
        if (old) r = dk_delta_encode(buf, old, n, out, cap);
    }
    up_guard_read_exit(f, fast);
    return r;
}

struct delta_store {
    struct up_file *f;
    uint64_t off;
};

static void delta_store_one(void *ctx, size_t o, const unsigned char *bytes, size_t len) {
    struct delta_store *ds = ctx;
    up_io_overwrite(ds->f, ds->off + o, (const char *)bytes, len);
}

bool up_io_delta_apply(struct up_file *f, uint64_t off, size_t n, const unsigned char *d, size_t len) {
    enum up_guard_entry fast = up_guard_read_enter(f);
    bool ok = delta_in_place(f, off, n);
    if (ok) {
        struct delta_store ds = {f, off};
        ok = dk_delta_walk(d, len, n, delta_store_one, &ds);
    }
    up_guard_read_exit(f, fast);
    if (ok) {
        dk_count(DK_C_writes, 1);
        dk_count(DK_C_write_bytes, n);
    }
    return ok;
}

bool up_io_in_place(const struct up_file *f, uint64_t off, size_t n) {
    return off + n <= inplace_limit(f) && off + n <= up_file_size(f) &&
           off + n <= __atomic_load_n(&f->map.mapped_bytes, __ATOMIC_ACQUIRE) &&
           off + n <= __atomic_load_n(&f->backed_end, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE);
}

/* ---- extend appends stored after the mutex ----
 *
 * A locked read-modify-write right after a 4 KiB non-temporal copy waits until the copy has drained to
 * memory (guard.h): the mutex's release after an append's stores cost an extend-strategy append 35-40 ns
 * of its ~300 (median, huge tmpfs, DAXKIT_PERSIST=flush; overwrites, which take no lock, run at the
 * floor). So a posix-mode extend append that lies wholly past the end makes its extension ready under
 * f->mu, marks the file (append_inflight: this thread, append_inflight_end), lets the mutex go, stores,
 * fences, moves the size and clears the mark with a release store. Every other taker of the mutex
 * (up_file_lock) waits for the mark to clear before it looks at the file -- another append, a publish, a
 * truncate, a locked read -- so what it sees is what it saw before: the bytes and the size, both or
 * neither, and no mapping or extension changes under the stores. Readers without the mutex (read_fast)
 * see the size move after the bytes, as under the mutex. A signal handler on the storing thread does not
 * wait for itself: its appends go past the stored range (write_locked), and its publish points leave the
 * file alone as when it held the mutex (upath.c: publish_one; file.c: lock_one). */

uintptr_t up_append_token(void) { return (uintptr_t)&mu_file; }

void up_append_wait_others(struct up_file *f) {
    uintptr_t self = up_append_token();
    for (unsigned spins = 0;; spins++) {
        uintptr_t t = __atomic_load_n(&f->append_inflight, __ATOMIC_ACQUIRE);
        if (t == 0 || t == self) return;
        if (spins < 256) __builtin_ia32_pause();
        else sched_yield(); /* the storing thread was preempted */
    }
}

/* The kernel writes [off, off+n) as the program's pwrite, nothing staged there (under f->mu); the file's
 * sizes follow what it wrote. Bytes written, or -errno. */
static ssize_t kernel_write_locked(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off,
                                   bool *appended) {
    if (off > f->ksize) up_holes_clamp(f, f->ksize); /* the kernel leaves a hole before off */
    ssize_t w = pwrite_as_program(fd, buf, n, off); /* on an O_APPEND fd this appends: off is the end */
    if (w <= 0) return w;
    uint64_t end = off + (uint64_t)w;
    up_map_kernel_wrote(f, off, end, f->ksize); /* DAX's stale zero pages (map.c) */
    up_guard_write_lock(f);
    if (end > up_file_size(f)) {
        f->ksize = end;
        __atomic_store_n(&f->pub_size, end, __ATOMIC_RELEASE);
        up_file_set_size(f, end);
        *appended = true;
    }
    up_guard_write_unlock(f);
    f->meta_dirty = true;
    return w;
}

/* An append at the logical end that would take the file's appends since its last publish point past
 * DAXKIT_STAGE_SPILL_BYTES, where the publish would copy them through the kernel anyway (no block sharing;
 * not a flush medium, whose power-loss promise is per fsync) and staging saves no system call worth the
 * second copy: it goes to the kernel after what is staged (publish.c: up_spill_locked). posix mode (sync
 * mode publishes every write; strict logs it), stage strategy, never through an O_APPEND descriptor (a log
 * other processes append to: the kernel's end decides where staged O_APPEND appends go). */
static bool spills(const struct up_file *f, uint64_t off, size_t n, bool o_append) {
    uint64_t limit = dk_cfg.stage_spill_bytes;
    return limit && off + n - f->pub_size > limit && !o_append && f->strategy == UP_STAGE &&
           dk_cfg.mode == DK_MODE_POSIX && off == up_file_size(f) && f->root->clone_min_bytes == UINT64_MAX &&
           !flush_medium(f) && !f->atomic;
}

/* Everything else, under f->mu (which excludes rw's writers): appends, writes across the published end,
 * writes into a part not mapped yet. Sets *at and *appended, and *in_place to the bytes stored over
 * published ones (still there when the appending part fails). `store_after`: an extend append wholly past
 * the end may store its bytes after the mutex (above). 0 (all n bytes), the count the kernel wrote when the
 * append spilled (spills), or -errno. */
static int write_locked(struct up_file *f, int fd, const char *buf, size_t n, uint64_t *at, bool append,
                        bool *appended, bool fence, size_t *in_place, bool store_after) {
    const struct up_file *outer = mu_file;
    mu_file = f;
    up_file_lock(f);
    uint64_t off = append ? up_file_size(f) : *at;
    /* One kind of staged append at a time: those of an O_APPEND descriptor go in at the kernel's end at the
     * publish, the others at the offsets they were written at (review 12, finding 8) -- a switch publishes
     * what is staged first (a program appending to one file through both kinds of descriptor); so does a
     * write over staged O_APPEND appends, whose place in the file is not known before (the kernel's write
     * would land on them where the publish puts them). (Strict mode applies an O_APPEND append at the offset
     * its record names: not `append`, the same kind.) */
    int fd_fl = append ? 0 : up_fd_flags(fd);
    bool o_append = append || (fd_fl >= 0 && (fd_fl & O_APPEND));
    bool switches = o_append ? !f->staged_o_append : f->staged_o_append && off + n > f->pub_size;
    if (f->strategy == UP_STAGE && switches && up_file_size(f) != f->pub_size) {
        int prc = up_publish_locked(f, fd);
        if (prc) {
            dk_mu_unlock(&f->mu);
            mu_file = outer;
            return prc;
        }
        if (append) off = up_file_size(f);
    }
    if (o_append) {
        /* (publish.c put_end_off: one descriptor's appends only) */
        f->o_append_fd = !f->staged_o_append || f->o_append_fd == fd ? fd : -2;
        f->appends_o_append = f->staged_o_append = true;
    }
    /* A signal handler whose thread is storing an append into f (above) appends after it. */
    if (DK_UNLIKELY(up_append_inflight_mine(f))) {
        store_after = false;
        if (append) off = DK_MAX(off, f->append_inflight_end);
    }
    bool later = false;
    uint64_t limit = inplace_limit(f);
    up_io_append_size0 = up_file_size(f); /* (a failed strict append is undone to it: publish.c) */
    int rc = off < limit ? map_locked(f, fd, DK_MIN(off + n, limit)) : 0;
    if (rc == 0 && off < limit) rc = up_holes_back(f, fd, off, DK_MIN(off + n, limit)); /* -ENOSPC: the kernel's */
    if (rc == 0) {
        if (off + n <= limit) up_io_overwrite(f, off, buf, n);
        else if (off < limit) {
            up_io_overwrite(f, off, buf, limit - off);
            *in_place = limit - off;
            rc = append_locked(f, fd, limit, buf + (limit - off), n - (limit - off), NULL);
            *appended = true;
        } else if (DK_UNLIKELY(f->write_through) && append && (rc = (int)up_write_through_locked(f, fd, buf, n, off)) != 0) {
            if (rc > 0) *appended = true; /* (rc > 0: its count, as a spill's) */
        } else if (spills(f, off, n, o_append) && (rc = up_spill_locked(f, fd, off + n)) <= 0) {
            ssize_t w = rc ? rc : kernel_write_locked(f, fd, buf, n, off, appended);
            if (rc == 0) dk_count(DK_C_append_spills, 1);
            /* the kernel's count (n <= DK_MAX_RW_BYTES fits): short, as its own write's; none: its answer again */
            rc = w == 0 ? -ENOSPC : (int)w;
        } else {
            rc = append_locked(f, fd, off, buf, n, store_after ? &later : NULL);
            *appended = true;
        }
    }
    if (later && rc == 0) {
        f->append_inflight_end = off + n;
        __atomic_store_n(&f->append_inflight, up_append_token(), __ATOMIC_RELAXED); /* the unlock releases it */
        dk_mu_unlock(&f->mu);
        append_store(f, off, buf, n);
        dk_fence(); /* non-temporal stores: visible before the size and the mark (any medium) */
        if (off + n > up_file_size(f)) up_file_set_size(f, off + n);
        __atomic_store_n(&f->append_inflight, 0, __ATOMIC_RELEASE);
        mu_file = outer;
        *at = off;
        return 0;
    }
    if (rc == 0 && fence && flush_medium(f)) dk_fence();
    dk_mu_unlock(&f->mu);
    mu_file = outer;
    *at = off;
    return rc;
}

/* Fallback when staging or mapping ran out: publish what is staged, then let the kernel write (its own
 * ENOSPC, if any, is the program's answer, and so is a short count). Counted. Bytes written or -errno. */
static ssize_t write_by_kernel(struct up_file *f, int fd, const char *buf, size_t n, uint64_t *at, bool append,
                               bool *appended) {
    dk_count(DK_C_fallbacks, 1);
    const struct up_file *outer = mu_file;
    mu_file = f;
    up_file_lock(f);
    ssize_t w = up_publish_locked(f, fd);
    if (w == 0) {
        uint64_t off = append ? up_file_size(f) : *at;
        w = kernel_write_locked(f, fd, buf, n, off, appended);
        if (w > 0) *at = off;
    }
    dk_mu_unlock(&f->mu);
    mu_file = outer;
    return w;
}

/* posix and sync modes under a finite RLIMIT_FSIZE: every write is the kernel's (after a publish of what
 * is staged), so that its short count, EFBIG and SIGXFSZ are the program's, even for appends racing on an
 * O_APPEND descriptor, and nothing is accepted that could not be published. Also every write to a file
 * mapped read-only. Counted as fallbacks. */
static ssize_t write_through_kernel(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off,
                                    bool append, int sync) {
    bool appended = false;
    ssize_t w = write_by_kernel(f, fd, buf, n, &off, append, &appended);
    int rc = w > 0 && sync ? up_sync_file(f, fd, true) : 0;
    if (w < 0 || rc < 0) {
        errno = w < 0 ? (int)-w : -rc;
        return -1;
    }
    up_io_last_offset = off;
    return w;
}

/* Strict mode's appends: published at once (visible as with sync mode) but not synced -- the record makes
 * the bytes and the size durable, and strict mode's checkpoint fdatasyncs the file before the record goes;
 * so the publish leaves meta_dirty as it found it (fsync has nothing to add for it). 0 or -errno. */
static int publish_logged(struct up_file *f, int fd, uint64_t *moved) {
    up_file_lock(f);
    bool meta = f->meta_dirty;
    int rc = up_publish_locked_moved(f, fd, moved);
    if (rc == 0) f->meta_dirty = meta;
    dk_mu_unlock(&f->mu);
    return rc;
}

/* Writes n bytes at off (or at the end when `append`); the offset written at is left in
 * up_io_last_offset. `sync`: UP_IO_ASYNC, UP_IO_SYNC, or UP_IO_LOGGED (strict mode: the write's record
 * is durable already, so overwritten bytes in place are stored -- written back on a flush medium -- but
 * neither fenced nor msync'ed here, and appends are published but not synced: strict mode's checkpoint
 * makes all of them durable at once). */
/* posix and sync modes: a signal handler's write on a thread that holds f->mu (its write, read or publish of f
 * was interrupted, maybe half way through changing the file: its mapping, its staged appends) -- waiting for
 * the mutex would wait for good. Published bytes in place go to the kernel's pwrite, which the mapping shows
 * (as strict mode's nested writes: strict.c apply_part), fdatasync'ed in sync mode; an append or bytes past
 * the published end fail with EDEADLK before anything is written (counters io_nested_by_kernel,
 * io_nested_refused; found with review 11, finding 20's test). */
static ssize_t write_nested(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append,
                            int sync) {
    if (append || off + n > __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) ||
        off + n > __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE)) {
        dk_count(DK_C_io_nested_refused, 1);
        errno = EDEADLK;
        return -1;
    }
    int cancel_was = dk_cancel_off();
    int rc = dk_pwrite_all(fd, buf, n, off, 0, NULL);
    up_map_kernel_wrote(f, off, off + n, off + n); /* DAX's stale zero pages (map.c); published bytes only */
    if (!rc && sync && DK_REAL(fdatasync)(fd) != 0) rc = -errno;
    dk_cancel_restore(cancel_was);
    if (rc) {
        errno = -rc;
        return -1;
    }
    dk_count(DK_C_io_nested_by_kernel, 1);
    up_io_last_offset = off;
    return (ssize_t)n;
}

static __attribute__((noinline)) ssize_t io_write_full(struct up_file *f, int fd, const char *buf, size_t n,
                                                       uint64_t off, bool append, int sync) {
    dk_count(DK_C_io_write_full, 1); /* (which path served a write: shim_write_paths) */
    if (n == 0) return 0;
    n = DK_MIN(n, DK_MAX_RW_BYTES);
    if (sync != UP_IO_LOGGED && DK_UNLIKELY(mu_mine(f))) return write_nested(f, fd, buf, n, off, append, sync);
    if (DK_UNLIKELY(__atomic_load_n(&f->size_unsure, __ATOMIC_RELAXED)) && (append || off + n > up_file_size(f)))
        up_size_verify_slow(f, fd); /* an exact end is needed: reclock.c */
    bool appended = false, fence = sync != UP_IO_LOGGED, by_kernel = false;
    if (DK_UNLIKELY(up_fsize_limited()) && sync != UP_IO_LOGGED)
        return write_through_kernel(f, fd, buf, n, off, append, sync);
    /* Mapped read-only (no read-write descriptor could be had: auxfd.c): stores would fault. */
    if (DK_UNLIKELY(__atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE) && !f->map.writable))
        return write_through_kernel(f, fd, buf, n, off, append, sync);
    /* A write reaching past the in-place limit (an append by pwrite: SQLite's WAL frames) is write_locked's:
     * each overwrite path below declines it at its first look (~50 instructions a call, session 25). A limit
     * that moves meanwhile (another thread's publish or truncate) is write_locked's to see, under f->mu. */
    bool overwrite = !append && off + n <= inplace_limit(f);
    /* Handed to the kernel as the program's own pwrite, its count is the answer (short counts included). */
    ssize_t w = !overwrite || sync != UP_IO_ASYNC || up_persist_as(f) != DK_MEDIUM_PAGECACHE
                    ? 0
                    : overwrite_by_pwrite(f, fd, buf, n, off, false); /* (its first look: no call elsewhere) */
    if (w == 0 && overwrite && overwrite_fast(f, buf, n, off, fence)) w = (ssize_t)n;
    if (w == 0 && overwrite && sync == UP_IO_ASYNC) w = overwrite_unmapped(f, fd, buf, n, off);
    size_t in_place = 0; /* (write_locked: the head stored in place, the rest appended) */
    if (w == 0) {
        int rc = write_locked(f, fd, buf, n, &off, append, &appended, fence, &in_place,
                              sync == UP_IO_ASYNC && dk_cfg.mode == DK_MODE_POSIX);
        w = rc == 0 ? (ssize_t)n : rc; /* (rc > 0: a spill's count) */
        if (rc == -ENOSPC || rc == -ENOMEM || rc == UP_GAP_BY_KERNEL) {
            if (rc == UP_GAP_BY_KERNEL) dk_count(DK_C_gap_writes, 1);
            w = write_by_kernel(f, fd, buf, n, &off, append, &appended);
            by_kernel = true;
        }
        if (w < 0 && in_place) { /* the head is written: a short count, as the kernel's */
            w = (ssize_t)in_place;
            appended = false;
        }
    }
    if (w < 0) {
        errno = (int)-w;
        return -1;
    }
    n = (size_t)w;
    up_io_last_offset = off;
    if (appended) dk_count2(DK_C_appends, 1, DK_C_append_bytes, n);
    else dk_count2(DK_C_writes, 1, DK_C_write_bytes, n);
    if (sync) {
        /* A kernel's overwrite (a hole filled, holes.c) may have allocated: its fdatasync, not a flush. */
        bool syncs_file = appended || (by_kernel && sync == UP_IO_SYNC);
        const struct up_file *outer = mu_file;
        mu_file = f; /* the publish takes f->mu: a handler's _exit must not wait for it (finding 30) */
        uint64_t moved = 0; /* the kernel appended it past another process's growth */
        int rc = !syncs_file               ? 0
                 : sync == UP_IO_LOGGED ? publish_logged(f, fd, &moved)
                                        : up_sync_file_moved(f, fd, true, &moved);
        mu_file = outer;
        if (DK_UNLIKELY(moved) && appended) up_io_last_offset = off + moved;
        if (!syncs_file && sync != UP_IO_LOGGED) up_io_persist_range(f, off, n);
        /* A publish cut short (a filling medium): a short count for what reached the file, as the kernel's. */
        ssize_t part = rc && appended && sync == UP_IO_SYNC ? up_sync_write_failed(f, fd, off, n, rc) : rc;
        /* Strict: a failed write leaves nothing (its record is taken back: strict.c) -- unless its head went in
         * place or another append followed it (up_logged_write_failed) */
        if (rc && appended && sync == UP_IO_LOGGED && (in_place || !up_logged_write_failed(f, off, n)))
            up_io_left_trace = true;
        if (part < 0) {
            errno = (int)-part;
            return -1;
        }
        if (part > 0) n = (size_t)part;
    }
    return (ssize_t)n;
}

/* posix mode's overwrite of published, mapped bytes on a medium whose overwrites are stores (not the page
 * cache's pwrite) -- io_write_full's first served case, after the same looks (not a handler's write inside its
 * thread's section of f, no size limit, a writable mapping), without its frame (~40 instructions of every such
 * write, session 27). */
ssize_t up_io_write(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append, int sync) {
    if (sync == UP_IO_ASYNC && !append && n - 1 < DK_MAX_RW_BYTES && off + n <= inplace_limit(f) &&
        up_persist_as(f) != DK_MEDIUM_PAGECACHE && DK_LIKELY(!mu_mine(f)) && !up_fsize_limited() &&
        __atomic_load_n(&f->map.writable, __ATOMIC_RELAXED) && overwrite_fast(f, buf, n, off, true)) {
        up_io_last_offset = off;
        dk_count2(DK_C_writes, 1, DK_C_write_bytes, n);
        return (ssize_t)n;
    }
    return io_write_full(f, fd, buf, n, off, append, sync);
}

__thread uint64_t up_io_last_offset;
__thread bool up_io_left_trace;
__thread uint64_t up_io_append_size0;

/* ---- the read path ---- */

/* Copies [off, off+n) when it is all published and mapped; false otherwise (nothing copied). */
static bool read_fast(struct up_file *f, char *buf, size_t n, uint64_t off) {
    enum up_guard_entry fast = up_guard_read_enter(f);
    bool ok = off + n <= inplace_limit(f) && off + n <= up_file_size(f) &&
              off + n <= __atomic_load_n(&f->map.mapped_bytes, __ATOMIC_ACQUIRE) &&
              off + n <= __atomic_load_n(&f->backed_end, __ATOMIC_ACQUIRE) &&
              __atomic_load_n(&f->map.ext_count, __ATOMIC_ACQUIRE);
    if (ok) up_io_copy_out(f, off, buf, n);
    up_guard_read_exit(f, fast);
    return ok;
}

/* A read of published bytes past backed_end (holes.c): the kernel's pread, which allocates nothing. Under
 * f->mu. Bytes (short if the file shrank under us) or -errno. */
static ssize_t read_holes(int fd, char *buf, size_t n, uint64_t off) {
    int cancel_was = dk_cancel_off();
    ssize_t r = DK_REAL(pread)(fd, buf, n, (off_t)off);
    if (r < 0) r = -errno;
    dk_cancel_restore(cancel_was);
    return r;
}

/* Under f->mu (which excludes rw's writers): reads that reach staged bytes or an unmapped part. Returns
 * bytes or -errno. */
static ssize_t read_locked(struct up_file *f, int fd, char *buf, size_t n, uint64_t off) {
    const struct up_file *outer = mu_file;
    mu_file = f;
    up_file_lock(f);
    uint64_t size = up_file_size(f);
    ssize_t r = 0;
    if (off < size) {
        n = DK_MIN(n, size - off);
        uint64_t limit = inplace_limit(f);
        size_t direct = off < limit ? DK_MIN(n, limit - off) : 0;
        int rc = direct ? map_locked(f, fd, off + direct) : 0;
        if (rc) r = rc;
        else if (direct && !up_holes_covered(f, fd, off + direct)) {
            r = read_holes(fd, buf, direct, off); /* published bytes: the kernel has them all */
            if (r == (ssize_t)direct && direct < n) {
                staged_read(f, off + direct, buf + direct, n - direct);
                r = (ssize_t)n;
            }
        } else {
            if (direct) up_io_copy_out(f, off, buf, direct);
            if (direct < n) staged_read(f, off + direct, buf + direct, n - direct);
            r = (ssize_t)n;
        }
    }
    dk_mu_unlock(&f->mu);
    mu_file = outer;
    return r;
}

/* A read the mapping cannot serve because the file outgrew it (another process's growth, a write past
 * UP_MAP_MAX_BYTES through the kernel): the file becomes the kernel's and the kernel reads -- a read never
 * answers EFBIG (review 9, finding 24). Bytes or -errno. */
static ssize_t read_past_mapping(struct up_file *f, int fd, char *buf, size_t n, uint64_t off) {
    int rc = up_kernel_takes_over(f, fd);
    if (rc) return rc;
    return read_holes(fd, buf, n, off); /* the kernel's pread, cancellation off (a slot's offset lock may be held) */
}

ssize_t up_io_read(struct up_file *f, int fd, char *buf, size_t n, uint64_t off) {
    /* Strict mode: staged overwrites of this file wait for the checkpoint to apply them (strict.c); a
     * signal handler that interrupted a strict operation of its thread reads them over the file instead, and
     * one inside its thread's table lock during the exit's shutdown is refused (EDEADLK: review 28, #6). */
    int drained = DK_UNLIKELY(__atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE)) ? up_strict_drain(f) : 0;
    if (DK_UNLIKELY(drained < 0)) {
        errno = -drained;
        return -1;
    }
    bool overlay = drained > 0;
    n = DK_MIN(n, DK_MAX_RW_BYTES);
    /* A read reaching past the end as known while the size is unsure (reclock.c) needs the exact end: a
     * record straddling it must not come back cut (review 7, finding 4). */
    if (DK_UNLIKELY(__atomic_load_n(&f->size_unsure, __ATOMIC_RELAXED)) && n && off + n > up_file_size(f))
        up_size_verify_slow(f, fd);
    uint64_t size = up_file_size(f);
    /* A read reaching the end this process knows: another process may have written past it since (one fstat,
     * as the kernel's read reads i_size): a read stopped there came back short and left the offset where the
     * next write went over the other's bytes (review 12, finding 5). With appends staged here (posix mode)
     * growth found publishes them first (up_refresh_size; finding 2's addendum). */
    if (off + n > size || n == 0) {
        if (n && !mu_mine(f) && up_refresh_size(f, fd)) size = up_file_size(f);
        if (off >= size || n == 0) return 0;
    }
    size_t want = n;
    n = DK_MIN(n, size - off);
    ssize_t r;
    if (read_fast(f, buf, n, off)) r = (ssize_t)n;
    else if (DK_UNLIKELY(mu_mine(f))) r = read_nested(fd, buf, n, off);
    else {
        /* So may a read of appends staged through an O_APPEND descriptor: where they go depends on the
         * kernel's end -- with growth found they are published past it first, and the read sees what the
         * kernel has there (finding 2's addendum: the process read its own record at its stale end). */
        if (DK_UNLIKELY(__atomic_load_n(&f->staged_o_append, __ATOMIC_RELAXED)) &&
            off + n > __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) && up_refresh_size(f, fd)) {
            size = up_file_size(f);
            if (off >= size) return 0;
            n = DK_MIN(want, size - off);
        }
        r = read_unmapped(f, fd, buf, n, off);
        if (r == 0) r = read_locked(f, fd, buf, n, off);
    }
    if (DK_UNLIKELY(r == -EFBIG) && !f->atomic) r = read_past_mapping(f, fd, buf, n, off);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    if (DK_UNLIKELY(overlay)) up_strict_overlay(f, buf, (size_t)r, off);
    dk_count2(DK_C_reads, 1, DK_C_read_bytes, (uint64_t)r);
    return r;
}

/* ---- descriptor-level entry points ---- */

static inline bool readable(const struct up_slot *s) { return (s->flags & O_ACCMODE) != O_WRONLY; }
static inline bool writable(const struct up_slot *s) { return (s->flags & O_ACCMODE) != O_RDONLY; }
/* `fl`: the descriptor's flags with a call's own (pwritev2's RWF_DSYNC, RWF_APPEND) added -- never stored
 * into the slot, which every thread and dup of the descriptor shares (review 9, finding 22). */
static inline bool sync_writes(uint32_t fl) { return dk_cfg.mode != DK_MODE_POSIX || (fl & (O_SYNC | O_DSYNC)); }

/* A write reaching past what daxkit maps (UP_MAP_MAX_BYTES: a sparse VM image written near its end, fio
 * with a large size), or one the mapping refused because the file outgrew it meanwhile: the file becomes
 * the kernel's (up_kernel_takes_over: strict mode checkpoints first and does not log this write) and the
 * kernel writes it, synchronously in sync and strict modes (as every write the kernel serves there:
 * durable, not atomic -- docs/guarantees.md). Before, sync and strict mode took the write and then answered
 * EFBIG to every read and overwrite of the file (review 9, finding 24). Bytes or -1 with errno. */
static ssize_t write_past_mapping(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append,
                                  uint32_t fl) {
    ssize_t w = up_kernel_takes_over(f, fd);
    struct stat st;
    if (w == 0 && append) { /* at the kernel's end (on an O_APPEND descriptor the kernel appends anyway) */
        if (DK_REAL(fstat)(fd, &st) == 0) off = (uint64_t)st.st_size;
        else w = -errno;
    }
    if (w == 0) w = pwrite_as_program(fd, buf, n, off);
    if (w > 0 && sync_writes(fl)) {
        int err = up_pt_datasync(fd); /* (EBADF: ptsync.c's one rule) */
        if (err) w = -err;
    }
    if (w < 0) {
        errno = (int)-w;
        return -1;
    }
    up_io_last_offset = off;
    return w;
}

/* One write of the program: strict mode logs it first (strict.c); the others go straight to the path.
 * Under a finite RLIMIT_FSIZE a strict or atomic write is cut or refused first, as the kernel would
 * (fsize.c); posix and sync writes go to the kernel then (write_through_kernel). write_op's full form, past the
 * crash point. */
static __attribute__((noinline)) ssize_t write_op_full(struct up_slot *s, int fd, const void *buf, size_t n,
                                                       uint64_t off, uint32_t fl) {
    dk_count(DK_C_write_op_full, 1); /* (which path served a write: shim_write_paths) */
    bool append = fl & O_APPEND;
    bool own_path = s->file->atomic || dk_cfg.mode == DK_MODE_STRICT; /* the others hand it to the kernel */
    /* Strict mode decides an append's offset, and whether a write lies in place, before up_io_write would
     * check an end left unsure by a lock taken without a size re-read (reclock.c): check it here. */
    if (DK_UNLIKELY(__atomic_load_n(&s->file->size_unsure, __ATOMIC_RELAXED)) && dk_cfg.mode == DK_MODE_STRICT &&
        (append || off + n > up_file_size(s->file)))
        up_size_verify_slow(s->file, fd);
    if (DK_UNLIKELY(up_fsize_limited()) && own_path) {
        int rc = up_fsize_clamp(append ? up_file_size(s->file) : off, &n);
        if (rc) {
            errno = -rc;
            return -1;
        }
    }
    if (DK_UNLIKELY(s->file->atomic)) /* commits per write, or at fsync (DAXKIT_ATOMIC_COMMIT) */
        return up_atomic_write(s->file, fd, buf, n, off, append,
                               (fl & (O_SYNC | O_DSYNC)) || up_atomic_commit_each_write());
    if (DK_UNLIKELY((append ? up_file_size(s->file) : off) + n > UP_MAP_MAX_BYTES))
        return write_past_mapping(s->file, fd, buf, n, off, append, fl);
    /* DAXKIT_ATOMIC_MMAP: a mapping of this file sees the bytes (appends lie past every mapping of it) */
    struct up_amap_write amw;
    int am = append || !up_atomic_mmap_any() ? 0 : up_atomic_mmap_write_begin(s->file->dev, s->file->ino, &amw);
    if (DK_UNLIKELY(am < 0)) { /* a signal handler's write that would wait for its own thread */
        errno = -am;
        return -1;
    }
    ssize_t r = dk_cfg.mode == DK_MODE_STRICT ? up_strict_write(s->file, fd, buf, n, off, append)
                                              : up_io_write(s->file, fd, buf, n, off, append, sync_writes(fl));
    if (DK_UNLIKELY(am > 0)) up_atomic_mmap_write_end(&amw, off, buf, r);
    /* EFBIG from the path (not the size limit's, which fsize.c and the kernel answer): the mapping refused a
     * file another process grew past UP_MAP_MAX_BYTES. */
    if (DK_UNLIKELY(r < 0 && errno == EFBIG) && !up_fsize_limited())
        return write_past_mapping(s->file, fd, buf, n, off, append, fl);
    return r;
}

/* write_op: posix and sync modes' common case -- no atomic engine, no size limit, no program view of any file
 * (DAXKIT_ATOMIC_MMAP) unless it is an append, a write inside what daxkit maps -- is up_io_write at once, as
 * write_op_full would make it after its looks; the rest is write_op_full's (its frame: the view's bracket on the stack, the
 * atomic and strict calls -- ~50 instructions of every write, session 27). */
static inline __attribute__((always_inline)) ssize_t write_op(struct up_slot *s, int fd, const void *buf, size_t n,
                                                               uint64_t off, uint32_t fl) {
    /* Between two writes of the program, in every mode: a crash here cuts a group of writes (a SQLite
     * commit's pages) between two of them (tests/strict/sqlite_crash.sh). */
    DK_CRASH_POINT("upath.write.begin");
    struct up_file *f = s->file;
    bool append = fl & O_APPEND;
    if (DK_LIKELY(dk_cfg.mode != DK_MODE_STRICT) && (append ? up_file_size(f) : off) + n <= UP_MAP_MAX_BYTES &&
        !__atomic_load_n(&f->atomic, __ATOMIC_RELAXED) && !up_fsize_limited() &&
        (append || !up_atomic_mmap_any())) { /* (appends lie past every view: write_op_full brackets none) */
        ssize_t r = up_io_write(f, fd, buf, n, off, append, sync_writes(fl));
        if (DK_LIKELY(r >= 0) || errno != EFBIG) return r;
        return write_past_mapping(f, fd, buf, n, off, append, fl); /* (write_op_full's EFBIG: no limit here) */
    }
    return write_op_full(s, fd, buf, n, off, fl);
}

ssize_t up_read(struct up_slot *s, int fd, void *buf, size_t n) {
    if (!readable(s)) {
        errno = EBADF;
        return -1;
    }
    pos_lock(s);
    if (DK_UNLIKELY(up_end_overflows(s->offset, n))) {
        pos_unlock(s);
        errno = EINVAL;
        return -1;
    }
    ssize_t r = DK_UNLIKELY(s->file->atomic) ? up_atomic_read(s->file, fd, buf, n, s->offset)
                                             : up_io_read(s->file, fd, buf, n, s->offset);
    if (r > 0) s->offset += (uint64_t)r;
    pos_unlock(s);
    return r;
}

ssize_t up_pread(struct up_slot *s, int fd, void *buf, size_t n, off_t off) {
    if (off < 0) { /* the kernel checks the offset before the descriptor */
        errno = EINVAL;
        return -1;
    }
    if (!readable(s)) {
        errno = EBADF;
        return -1;
    }
    if (DK_UNLIKELY(up_end_overflows((uint64_t)off, n))) {
        errno = EINVAL;
        return -1;
    }
    if (DK_UNLIKELY(s->file->atomic)) return up_atomic_read(s->file, fd, buf, n, (uint64_t)off);
    return up_io_read(s->file, fd, buf, n, (uint64_t)off);
}

ssize_t up_write_flags(struct up_slot *s, int fd, const void *buf, size_t n, uint32_t call_fl) {
    if (!writable(s)) {
        errno = EBADF;
        return -1;
    }
    if (n == 0) return 0;
    pos_lock(s);
    if (DK_UNLIKELY(up_end_overflows(s->offset, n))) {
        pos_unlock(s);
        errno = EINVAL;
        return -1;
    }
    uint32_t fl = __atomic_load_n(&s->flags, __ATOMIC_RELAXED) | call_fl;
    ssize_t r = write_op(s, fd, buf, n, s->offset, fl);
    if (r > 0) {
        s->offset = up_io_last_offset + (uint64_t)r;
        if (fl & O_APPEND) __atomic_store_n(&s->pad[UP_SLOT_APPEND_END], s->offset, __ATOMIC_RELEASE);
    }
    pos_unlock(s);
    return r;
}

ssize_t up_write(struct up_slot *s, int fd, const void *buf, size_t n) { return up_write_flags(s, fd, buf, n, 0); }

ssize_t up_pwrite_flags(struct up_slot *s, int fd, const void *buf, size_t n, off_t off, uint32_t call_fl) {
    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    if (!writable(s)) {
        errno = EBADF;
        return -1;
    }
    if (n == 0) return 0;
    if (DK_UNLIKELY(up_end_overflows((uint64_t)off, n))) {
        errno = EINVAL;
        return -1;
    }
    /* Linux: pwrite on an O_APPEND descriptor appends, whatever the offset. */
    return write_op(s, fd, buf, n, (uint64_t)off, __atomic_load_n(&s->flags, __ATOMIC_RELAXED) | call_fl);
}

ssize_t up_pwrite(struct up_slot *s, int fd, const void *buf, size_t n, off_t off) {
    return up_pwrite_flags(s, fd, buf, n, off, 0);
}

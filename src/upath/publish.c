/* Publish points: appends become part of the file (relink of staged slots, or the size set back to the
 * logical size for extend), then durable as the medium requires. */
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "upath/guard.h"
#include "upath/io.h"
#include "upath/upath.h"

/* A descriptor of the file we may write through: fd itself, or a reopen of it (read-only fd). An
 * O_APPEND descriptor writes at the kernel's end of file, which is where relinking starts. */
/* The descriptor's status flags: a program descriptor's slot mirrors them (access mode from the open,
 * O_APPEND kept by the F_SETFL path), which spares a system call per publish -- one per fsync for an
 * fsync-per-append program such as RocksDB with sync=1; other descriptors ask the kernel. */
/* The descriptor to relink through: the program's own when it can take the relink, else the file's
 * auxiliary one (never a reopen closed after use: that would drop the program's POSIX locks). *may_clone
 * false: through the program's O_APPEND descriptor, by copies at the kernel's end. That is the way for
 * appends made through an O_APPEND descriptor whenever the staged bytes start at the end we last saw:
 * other processes may have appended since (a shared log), and only the kernel knows where the end is now
 * -- a clone or pwrite through another descriptor at our offset overwrote their records (review 11,
 * finding 12: two thirds of three writers' records lost on XFS, in sync mode too; the kernel refuses
 * FICLONERANGE into an O_APPEND descriptor, so on a reflink medium the auxiliary descriptor was taken). */
/* An O_DIRECT descriptor takes only aligned copies (EINVAL otherwise): the publish the program's O_DIRECT
 * call starts (shim.h: dk_pt_begin) failed there and left the appends staged -- its read missed them and
 * the exit's publish copied them over its write (review 11, finding 15); the auxiliary descriptor (opened
 * without O_DIRECT) takes them. */
static int publish_fd(struct up_file *f, int fd, bool *may_clone) {
    int fl = up_fd_flags(fd);
    bool writable = fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && !(fl & O_DIRECT);
    bool at_end = f->ksize == f->pub_size; /* an O_APPEND pwrite lands at the kernel's end */
    /* Appends staged through an O_APPEND descriptor go in at the kernel's end (RWF_APPEND: *may_clone false)
     * whichever descriptor the publish point came from -- an fsync or close of the program's read-only or
     * plain descriptor of the log, exit's first descriptor of the file: through those they were written at
     * the end this process last saw, over the records other processes appended since (review 12, finding 8).
     * Those written through a descriptor without O_APPEND lie where they were written: never copied through
     * an O_APPEND one (its write lands at the kernel's end) while the auxiliary descriptor can take them. */
    bool o_append_staged = f->strategy == UP_STAGE && f->staged_o_append;
    *may_clone = true;
    if (o_append_staged && at_end) {
        *may_clone = false;
        return writable ? fd : up_aux_fd(f, fd, false);
    }
    if (writable && !(fl & O_APPEND)) return fd;
    int a = up_aux_fd(f, fd, false);
    if (a >= 0 || !writable || !at_end) return a;
    *may_clone = false;
    return fd;
}

#ifdef DAXKIT_TEST_BUILD
/* While crash testing a copy stops at its first two page boundaries and at its last one, with a crash point
 * after each piece: the kernel's write stops at a page boundary when a fatal signal is pending, and tests
 * must see a copy cut there. Otherwise the copy is one piece (the kernel's own cap on one write). */
struct copy_cut {
    uint64_t start, end; /* the whole copy */
};

/* dk_pwrite_all's pieces: the bytes of the next pwrite of the copy, now at off, and the crash point between
 * two pieces. */
static uint64_t copy_next_piece(void *ctx, uint64_t off, uint64_t left, int first) {
    const struct copy_cut *c = ctx;
    if (!first) DK_CRASH_POINT("publish.copy.page_boundary");
    uint64_t len = left, start_page = dk_round_down(c->start, DK_PAGE_BYTES) + DK_PAGE_BYTES;
    const uint64_t cuts[] = {start_page, start_page + DK_PAGE_BYTES, dk_round_down(c->end - 1, DK_PAGE_BYTES)};
    for (int i = 0; i < 3; i++)
        if (cuts[i] > off && cuts[i] < c->end) len = DK_MIN(len, cuts[i] - off);
    return len;
}
#endif

/* RWF_APPEND while relinking appends staged through an O_APPEND descriptor (publish_fd: may_clone false),
 * under f->mu. */
static __thread int copy_rwf;
/* RWF_APPEND worked here once: 1 (0 not yet; a kernel before 4.16 never) -- put_off_fd's way needs it */
static int append_at_pos_ok;

/* pwrite until done (dk_pwrite_all: EINTR retried, short writes continued). *landed: the end of what
 * reached the file, also when the copy failed part way (a medium filling: short writes, then ENOSPC).
 * Pieces only while crash testing: a callback per copy cost a program that fsyncs every append ~60
 * instructions per record (callgrind, dk_bench_append_sync 100 B, fdatasync each). */
static int copy_range(int wfd, const char *src, uint64_t off, uint64_t n, uint64_t *landed) {
    const struct dk_pwrite_pieces *cuts = NULL;
#ifdef DAXKIT_TEST_BUILD
    struct copy_cut cut = {off, off + n};
    const struct dk_pwrite_pieces pieces = {copy_next_piece, &cut};
    if (__atomic_load_n(&dk_crashpoint_active, __ATOMIC_RELAXED)) cuts = &pieces;
#endif
    size_t done = 0;
    int rc = dk_pwrite_all_done(wfd, src, n, off, copy_rwf, cuts, &done);
    if (rc == -EOPNOTSUPP && copy_rwf) { /* a kernel before 4.16: the descriptor's own O_APPEND, if any */
        copy_rwf = 0;
        rc = dk_pwrite_all_done(wfd, src, n, off, 0, cuts, &done);
    }
    /* (RWF_APPEND works: Linux 4.16, so does pwritev2's offset -1, 4.6 -- the put-off's way: put_off_fd) */
    if (rc == 0 && (copy_rwf & RWF_APPEND) && !__atomic_load_n(&append_at_pos_ok, __ATOMIC_RELAXED))
        __atomic_store_n(&append_at_pos_ok, 1, __ATOMIC_RELAXED);
    *landed = off + done;
    return rc;
}

static int clone_range(int wfd, const struct up_staged *s, uint64_t off, uint64_t n) {
    struct file_clone_range r = {
        .src_fd = up_stage_fd(s->sf),
        .src_offset = s->sf_off + (off - s->base),
        .src_length = n,
        .dest_offset = off,
    };
    for (;;) {
        if (DK_REAL(ioctl)(wfd, FICLONERANGE, &r) == 0) return 0;
        if (errno != EINTR) return -errno;
    }
}

/* Moves [a, b) of slot s into the file: whole blocks by clone when worth it, the rest by copy.
 * Sets *cloned when any block was shared, and *landed to the end of what is in the file (b on success; on a
 * failure part way, the end of the bytes that got there -- in order from a: [a, *landed)). */
static int relink_slot_moves(struct up_file *f, int wfd, struct up_staged *s, uint64_t a, uint64_t b, bool may_clone,
                             bool *cloned, uint64_t *landed) {
    const char *src = s->addr + (a - s->base);
    uint64_t blk = DK_PAGE_BYTES;
    uint64_t head_end = dk_round_up(a, blk), tail = dk_round_down(b, blk);
    bool clone = may_clone && b - a >= f->root->clone_min_bytes && f->root->medium.block_bytes <= blk && head_end < tail &&
                 !up_staged_on_heap(s);
    *landed = a;
    if (clone) {
        int rc = copy_range(wfd, src, a, head_end - a, landed);
        if (rc) return rc;
        DK_CRASH_POINT("publish.clone.head_copied");
        rc = clone_range(wfd, s, head_end, tail - head_end);
        if (rc == 0) {
            *cloned = true;
            *landed = tail;
            dk_count(DK_C_relink_clones, 1);
            dk_count(DK_C_relink_clone_bytes, tail - head_end);
            rc = copy_range(wfd, src + (tail - a), tail, b - tail, landed);
            if (rc == 0) dk_count(DK_C_relink_copy_bytes, (head_end - a) + (b - tail));
            return rc;
        }
        dk_log_once("FICLONERANGE failed on %s (%s); relinking by copy", f->root->path, dk_strerror(-rc));
        f->root->clone_min_bytes = UINT64_MAX;
        dk_count(DK_C_fallbacks, 1);
        a = head_end; /* the head is in the file already */
        src = s->addr + (a - s->base);
    }
    int rc = copy_range(wfd, src, a, b - a, landed);
    if (rc == 0) {
        dk_count(DK_C_relink_copies, 1);
        dk_count(DK_C_relink_copy_bytes, b - a);
    }
    return rc;
}

/* relink_slot_moves, then the mapping's pages the kernel wrote are faulted in afresh where DAX may have left
 * the zero page over them (map.c: up_map_kernel_wrote; f->ksize is the kernel size before this slot). */
static int relink_slot(struct up_file *f, int wfd, struct up_staged *s, uint64_t a, uint64_t b, bool may_clone,
                       bool *cloned, uint64_t *landed) {
    uint64_t old_size = f->ksize;
    int rc = relink_slot_moves(f, wfd, s, a, b, may_clone, cloned, landed);
    up_map_kernel_wrote(f, a, *landed, old_size);
    return rc;
}

/* [a, end) of the file holds its staged bytes now: published (the slot itself is given back by the caller
 * once all of it is in). */
static void relinked_to(struct up_file *f, uint64_t a, uint64_t end) {
    if (end <= f->pub_size) return;
    if (__atomic_load_n(&f->backed_end, __ATOMIC_RELAXED) >= a) /* written or cloned: storage (holes.c) */
        __atomic_store_n(&f->backed_end, end, __ATOMIC_RELEASE);
    f->ksize = DK_MAX(f->ksize, end);
    __atomic_store_n(&f->pub_size, end, __ATOMIC_RELEASE);
}

/* Relinks staged slots in file order; on failure the unrelinked rest stays staged. A slot whose copy
 * failed part way (a medium filling: the kernel took some pages, then ENOSPC) counts what reached the file
 * as published -- pub_size and ksize move to its end, and a valid published-size record with them -- so
 * that the next attempt continues after it: through an O_APPEND descriptor the kernel appends at its end,
 * and a retry from the old published size appended those bytes a second time (the file was then no prefix
 * of what was written: shim_full_medium_burst_tmpfs, 2 of 30 runs; seen with DAXKIT_VERBOSE and the file's
 * shape -- the stream started again from record 0 where the failed fsync's copy had stopped). */
static int relink_all(struct up_file *f, int wfd, bool may_clone) {
    uint64_t size = up_file_size(f);
    uint32_t done = 0;
    int rc = 0;
    for (; done < f->staged_count; done++) {
        struct up_staged *s = &f->staged[done];
        uint64_t a = DK_MAX(s->base, f->pub_size), b = DK_MIN(s->base + s->cap, size);
        bool cloned = false;
        uint64_t landed = a;
        if (a < b) rc = relink_slot(f, wfd, s, a, b, may_clone, &cloned, &landed);
        if (cloned) __atomic_store_n(&f->reflinked, true, __ATOMIC_RELAXED);
        if (rc) {
            if (landed > f->pub_size) {
                relinked_to(f, a, landed);
                up_sizerec_commit(f, landed); /* a crash keeps them too (recovery cuts back to the record's pub) */
                f->meta_dirty = true;
                dk_count(DK_C_relink_partial, 1);
            }
            break;
        }
        relinked_to(f, a, b);
        up_stage_give_back_to(f, s, cloned);
        if (done + 1 < f->staged_count) DK_CRASH_POINT("publish.relink.slot_done");
    }
    memmove(f->staged, f->staged + done, (f->staged_count - done) * sizeof *f->staged);
    f->staged_count -= done;
    return rc;
}

/* Another process grew the file to the kernel size ns, past the end this process knew (the smaller of its
 * logical and its kernel size): ns becomes the file's size, kernel size and published size -- what lies
 * between is that process's, in the file. `written`: the kernel wrote the growth (an O_APPEND relink put this
 * process's appends after the other's records), so backed_end steps over it when it reached the old end;
 * otherwise the other process may have left holes (a truncate up): backed_end stays below them and the next
 * access past it probes (holes.c). Past what daxkit maps, the size is taken unmapped: the next call that
 * needs the mapping hands the file to the kernel (up_kernel_takes_over), and a read meanwhile never sees an
 * end short of the kernel's. Under f->mu. 0, or -errno when the mapping could not follow (nothing changed). */
static int adopt_kernel_growth(struct up_file *f, int fd, uint64_t ns, bool written) {
    uint64_t from = DK_MIN(up_file_size(f), f->ksize);
    if (ns <= UP_MAP_MAX_BYTES) {
        int rc = up_map_keep(f, fd, ns);
        if (rc) return rc;
    }
    if (!written) up_holes_clamp(f, from);
    else if (__atomic_load_n(&f->backed_end, __ATOMIC_RELAXED) >= from)
        __atomic_store_n(&f->backed_end, ns, __ATOMIC_RELEASE);
    f->ksize = ns;
    __atomic_store_n(&f->pub_size, ns, __ATOMIC_RELEASE);
    up_file_set_size(f, ns);
    return 0;
}

/* extend strategy: sets the kernel size back to the logical size -- unless another process changed the
 * kernel size since we set it and the file is now longer than ours: then its size stands (shrinking it
 * would cut what that process wrote or mapped, e.g. SQLite growing its -shm file) and becomes ours. */
static int extend_publish(struct up_file *f, int wfd, uint64_t *size) {
    struct stat st;
    if (DK_REAL(fstat)(wfd, &st) == 0 && (uint64_t)st.st_size != f->ksize && (uint64_t)st.st_size > *size) {
        int rc = adopt_kernel_growth(f, wfd, (uint64_t)st.st_size, false);
        if (rc) return rc;
        *size = (uint64_t)st.st_size;
        dk_count(DK_C_fallbacks, 1);
        return 0;
    }
    if (f->ksize == *size) return 0; /* filled exactly: nothing to cut */
    return DK_REAL(ftruncate)(wfd, (off_t)*size) != 0 ? -errno : 0;
}

/* After a relink through an O_APPEND descriptor (publish_fd: *may_clone false): the kernel put the bytes at
 * its end, which other processes may have moved since this one looked -- a shared log. The file is then
 * longer than `*size`, this process's appends last in it: the kernel's size becomes ours (the bytes between
 * are theirs, in the file), and the descriptor that appended moves past them, where the kernel's O_APPEND
 * write leaves it (review 12, finding 2: the offset after the write, and reads of the process's own
 * record, were at the end it knew, inside the other process's record). Returns the distance moved, for a
 * write that publishes itself (sync and strict modes: the offset it reports). `pub`: the published size
 * before the relink (the staged bytes were (pub, *size]). One fstat per such publish. */
static uint64_t adopt_append_end_at(struct up_file *f, int fd, uint64_t pub, uint64_t *size, uint64_t ns) {
    if (ns <= *size) return 0;
    if (ns > UP_MAP_MAX_BYTES || adopt_kernel_growth(f, fd, ns, true) != 0) return 0; /* past what daxkit maps: the old view */
    uint64_t moved = ns - *size;
    /* Every O_APPEND descriptor of the file that appended since the last publish, not only this one: each
     * record moved by the same distance. */
    up_slots_follow_appends(f, pub, *size, moved);
    *size = ns;
    dk_count(DK_C_append_end_moves, 1);
    return moved;
}

static uint64_t adopt_append_end(struct up_file *f, int fd, uint64_t pub, uint64_t *size) {
    struct stat st;
    if (DK_REAL(fstat)(fd, &st) != 0) return 0;
    return adopt_append_end_at(f, fd, pub, size, (uint64_t)st.st_size);
}

/* ---- the end put off (session 28) ----
 * adopt_append_end's fstat serves this process's view only: the kernel placed the records at its end, in its
 * order, with the RWF_APPEND write itself, so other processes see what they saw with the fstat made at once. A
 * program that appends through O_APPEND and fsyncs each batch (redis's AOF with appendfsync always) paid it as a
 * second system call per fsync, beside the publish's pwritev2 -- where the kernel's path pays a write and an
 * fdatasync. So an fsync's publish of one descriptor's appends writes them through the file's own descriptor at
 * its offset (pwritev2 offset -1 with RWF_APPEND: the kernel leaves that offset at the end of the records, where
 * the kernel's own O_APPEND write leaves the program's) and puts the look off (put_end_off): the file's
 * refresh_gen goes behind, so that its every served call looks first (upath.c end_put_off) -- that descriptor's
 * further O_APPEND writes (a count their answer; their place the kernel's end at the next publish) and fsyncs go
 * on without it; any other call -- and fstat, every publish point but fsync, a lock taken meanwhile -- makes it
 * first (settle_end): the offset the kernel left (lseek) tells where the last records went, the size (fstat) what
 * came after them, and the appending descriptor moves as adopt_append_end would have moved it at the publish. */

/* Under f->mu: the published size past which O_APPEND descriptors follow another process's growth -- the one
 * before the first publish that put the look off (ending the put-off now), else `pub`. */
static uint64_t end_owed_take(struct up_file *f, uint64_t pub) {
    if (DK_LIKELY(!up_end_owed(f))) return pub;
    __atomic_store_n(&f->end.gen, 0, __ATOMIC_RELEASE);
    dk_count(DK_C_append_end_settles, 1);
    return DK_MIN(f->end.from, pub);
}

/* Under f->mu, before a publish of appends staged through O_APPEND descriptors that began at the published size
 * `pub`: the file's own descriptor to write them through at its offset when the look may wait -- one program
 * descriptor's appends (the one it waits for already, if it does), a publish the kernel's end alone places -- or
 * -1 (the look made after the publish, as before). */
static int put_off_fd(struct up_file *f, int fd, uint64_t pub) {
    int appender = f->o_append_fd;
    if (appender < 0 || pub == 0 || !__atomic_load_n(&append_at_pos_ok, __ATOMIC_RELAXED) ||
        dk_cfg.mode != DK_MODE_POSIX || f->atomic)
        return -1;
    if (up_end_owed(f) && appender != f->end.appender) return -1;
    /* (not a new descriptor where the lowest free number stays the program's: it could not move high -- review28b
     * #6, guarantees.md's lowest-number rule) */
    if (f->aux_fd < 0 && dk_ifd_locks_maybe_held()) return -1;
    int a = up_aux_fd_own(f, fd);
    return a >= 0 && f->aux_fork_gen == up_fork_gen ? a : -1; /* (a fork relative's offset too: not ours alone) */
}

/* Under f->mu, after such a publish through `wfd` left this process's end at `view`. */
static void put_end_off(struct up_file *f, uint64_t pub, uint64_t view, int wfd) {
    bool first = !up_end_owed(f);
    if (first) f->end.from = pub;
    f->end.view = view;
    f->end.fd = wfd;
    f->end.appender = f->o_append_fd;
    uint64_t gen = __atomic_load_n(&up_refresh_gen, __ATOMIC_ACQUIRE);
    __atomic_store_n(&f->end.gen, gen, __ATOMIC_RELEASE); /* (last: the fields above go with it) */
    __atomic_store_n(&f->refresh_gen, gen - 1, __ATOMIC_RELEASE); /* behind (gen only grows) */
    if (first) up_pin_note(f); /* pinned while owed: every publish point's walk makes the look (up_file_pinned) */
    dk_count(DK_C_append_end_put_off, 1);
}

static int publish_locked(struct up_file *f, int fd, uint64_t *moved, bool keep_record, bool may_put_off);

/* Under f->mu, before a publish of appends staged since put-off ones (review28b #7): how far the put-off records
 * went past this process's view (the records' end, from the aux offset the kernel left, minus the view's end) --
 * ONE distance for the descriptors in (*from, *upto], apart from the distance of what is published now (the
 * descriptors past *upto: adopt_append_end's). Ends the put-off. Unknown (the aux descriptor reopened, a fork
 * relative's): the growth before this publish (one fstat), as adopt_append_end took it. */
static uint64_t owed_records_moved(struct up_file *f, int fd, uint64_t *from, uint64_t *upto) {
    *from = f->end.from;
    *upto = f->end.view;
    int errno_was = errno;
    bool own = f->end.fd == f->aux_fd && f->aux_fd >= 0 && f->aux_fork_gen == up_fork_gen && *upto == f->pub_size;
    off_t e = own ? DK_REAL(lseek)(f->end.fd, 0, SEEK_CUR) : -1;
    struct stat st;
    if (e < 0 && DK_REAL(fstat)(fd, &st) == 0) e = st.st_size;
    errno = errno_was;
    (void)end_owed_take(f, f->pub_size);
    return e >= 0 && (uint64_t)e > *upto ? (uint64_t)e - *upto : 0;
}

/* Under f->mu: the look put off, if owed -- with appends staged since, by their publish (publish_locked makes
 * it after their relink); else from where the last put-off publish left its descriptor's offset (the records'
 * end: one lseek) and the kernel's size, *known when the caller read it or one fstat. True when the file's size
 * changed. */
static bool settle_end(struct up_file *f, int fd, const uint64_t *known) {
    if (DK_LIKELY(!up_end_owed(f))) return false;
    uint64_t size = up_file_size(f);
    struct stat st;
    int errno_was = errno;
    bool ok = known || DK_REAL(fstat)(fd, &st) == 0;
    errno = errno_was;
    if (!ok) return false; /* (still owed) */
    uint64_t ns = known ? *known : (uint64_t)st.st_size;
    if (ns == f->ksize) { /* nothing came: the view is the kernel's (what is staged stays: no publish point) */
        (void)end_owed_take(f, f->pub_size);
        return false;
    }
    if (f->staged_count || size != f->pub_size || f->ksize != size) {
        /* growth with appends staged since: they go in first, as publish_past_growth has them */
        (void)publish_locked(f, fd, NULL, false, false); /* (failed: still owed, the next look retries) */
        return up_file_size(f) != size;
    }
    bool own = f->end.fd == f->aux_fd && f->aux_fd >= 0 && f->aux_fork_gen == up_fork_gen;
    off_t e = own ? DK_REAL(lseek)(f->end.fd, 0, SEEK_CUR) : -1;
    errno = errno_was;
    uint64_t from = end_owed_take(f, f->pub_size), view = f->end.view;
    /* The records' end: past the view by what others appended before them (what came after is theirs, in ns).
     * Unknown (the descriptor reopened since, or a fork child's copy of its parent's state: its offset not the
     * records'), the kernel's size stands for it, as adopt_append_end's. */
    uint64_t end = e >= 0 && (uint64_t)e >= view && (uint64_t)e <= ns && view == size ? (uint64_t)e : ns;
    if (ns <= size) return false;
    if (ns > UP_MAP_MAX_BYTES || adopt_kernel_growth(f, fd, ns, true) != 0) return false; /* (as adopt_append_end) */
    if (end > size) up_slots_follow_appends(f, from, size, end - size);
    dk_count(DK_C_append_end_moves, 1);
    return true;
}

void up_settle_end_locked(struct up_file *f, int fd, uint64_t ns) { (void)settle_end(f, fd, &ns); }

/* A relink a crash can cut: more than one kernel call (staging slots; a clone's head and tail) or a
 * pwrite over a page boundary (the kernel's write stops between pages when a fatal signal is pending).
 * Strict mode needs no record: its log replays the appends. */
static bool relink_can_tear(const struct up_file *f, uint64_t size) {
    uint64_t pub = f->pub_size;
    if (size <= pub || dk_cfg.mode == DK_MODE_STRICT) return false;
    if (pub / DK_PAGE_BYTES != (size - 1) / DK_PAGE_BYTES) return true;
    uint32_t slots = 0;
    for (uint32_t i = 0; i < f->staged_count; i++)
        slots += DK_MAX(f->staged[i].base, pub) < DK_MIN(f->staged[i].base + f->staged[i].cap, size);
    return slots > 1;
}

/* A publish through RWF_APPEND that makes a size record while the end is owed (put_end_off): the record must
 * name the kernel's size now, not this process's view of it -- recovery cuts a torn relink back to the record's
 * published size, and a stale one would cut the records another process appended meanwhile. One fstat: the
 * kernel's size, or UINT64_MAX when it is the view's (the put-off ends: nothing moved) or unknown. */
static uint64_t record_from_kernel(struct up_file *f, int wfd) {
    struct stat st;
    if (DK_REAL(fstat)(wfd, &st) != 0) return UINT64_MAX;
    if ((uint64_t)st.st_size == f->ksize) {
        (void)end_owed_take(f, f->pub_size);
        return UINT64_MAX;
    }
    return (uint64_t)st.st_size;
}

/* `keep_record`: a spill's publish -- the size record stays valid (naming the last publish point's size)
 * until the next publish point. `may_put_off`: an fsync's (posix mode) -- the fstat after an O_APPEND relink may
 * wait (put_end_off); any other publish makes a put-off one. */
static int publish_locked(struct up_file *f, int fd, uint64_t *moved, bool keep_record, bool may_put_off) {
    uint64_t size = up_file_size(f), shift = 0, pub_was = f->pub_size;
    if (moved) *moved = 0;
    if (DK_UNLIKELY(up_fork_orphan || f->fork_parents)) return 0; /* the parent's appends: it publishes them (lifecycle.c) */
    bool staged = f->strategy == UP_STAGE && (f->staged_count || size != f->pub_size);
    /* An extension its appends filled exactly (kernel size == logical size) is still unpublished while its
     * size record stands (pub_size behind): published too, or the record pinned the file for good and the
     * kernel's later growth of it (a copy_file_range into it) was cut at its close (diff seed 793996801070). */
    bool extended = f->strategy == UP_EXTEND && (f->ksize != size || f->pub_size != size);
    if (!staged && !extended) {
        /* the publish point after appends spilled (up_spill_locked): the file's now, past a crash too */
        if (DK_UNLIKELY(f->spilled) && !keep_record) up_sizerec_clear(f);
        if (DK_UNLIKELY(up_end_owed(f)) && !may_put_off) (void)settle_end(f, fd, NULL);
        return 0;
    }
    bool may_clone;
    int wfd = publish_fd(f, fd, &may_clone);
    if (wfd < 0) return wfd;
    /* The mapping must cover the new size before pub_size moves (readers trust pub_size). */
    int rc = up_map_keep(f, wfd, size);
    /* Not in a spill's publish: its first 64 KiB are not the file's size, the burst goes on through the kernel
     * (review 23, #02: every new file written past 64 KiB on huge tmpfs paid the seed) */
    enum up_small small = staged && !keep_record ? up_small_pages_plan(f, wfd, size, !may_clone) : UP_SMALL_NO;
    /* An fsync's publish of one O_APPEND descriptor's appends: through the file's own descriptor at its offset,
     * the look after it put off (put_end_off; not the file's first bytes, nor a seed of small pages) */
    int pfd = rc == 0 && may_put_off && staged && !may_clone && small == UP_SMALL_NO ? put_off_fd(f, fd, pub_was) : -1;
    if (pfd >= 0) wfd = pfd;
    /* A relink a crash can cut is rolled back by recovery: the record first, cleared below. A seed of small
     * pages and its copy are two steps. */
    if (rc == 0 && staged && (small == UP_SMALL_SEED || relink_can_tear(f, size))) {
        uint64_t from = UINT64_MAX;
        if (DK_UNLIKELY(up_end_owed(f)) && !may_clone) from = record_from_kernel(f, wfd);
        rc = from == UINT64_MAX ? up_sizerec_publish_begin(f, wfd, size)
                                : up_sizerec_publish_begin_at(f, wfd, from, from + (size - f->pub_size));
    }
    /* Records put off before these: their descriptors' distance first, read before this relink moves the aux
     * offset; applied after it (below) */
    uint64_t owed_from = 0, owed_upto = 0, owed_moved = 0;
    if (rc == 0 && staged && !may_clone && DK_UNLIKELY(up_end_owed(f)))
        owed_moved = owed_records_moved(f, wfd, &owed_from, &owed_upto);
    bool seeded = rc == 0 && small == UP_SMALL_SEED && up_small_pages_seed(f, fd, size);
    copy_rwf = may_clone ? 0 : RWF_APPEND | (pfd >= 0 ? DK_PWRITE_AT_POS : 0);
    if (rc == 0 && staged) rc = relink_all(f, wfd, may_clone);
    copy_rwf = 0;
    if (rc && seeded) up_small_pages_unseed(f, wfd);
    if (rc == 0 && small == UP_SMALL_LEARN) up_small_pages_learn(f, wfd, size);
    if (rc == 0 && pfd >= 0) put_end_off(f, pub_was, size, pfd);
    else if (rc == 0 && ((staged && !may_clone) || DK_UNLIKELY(up_end_owed(f))))
        shift = adopt_append_end(f, wfd, end_owed_take(f, pub_was), &size);
    /* (after: the descriptors just moved went up from past owed_upto, never into (owed_from, owed_upto]) */
    if (owed_moved) up_slots_follow_appends(f, owed_from, owed_upto, owed_moved);
    if (rc == 0 && extended) rc = extend_publish(f, wfd, &size);
    if (rc == 0) {
        f->ksize = size;
        __atomic_store_n(&f->pub_size, size, __ATOMIC_RELEASE);
        DK_CRASH_POINT("publish.before_clear");
        if (!keep_record) up_sizerec_clear(f); /* after the kernel size moved: a crash in between rolls the publish back */
        dk_count(DK_C_publishes, 1);
        f->appends_unpublished = 0;
        f->staged_o_append = false;
        f->o_append_fd = -1;
        if (moved) *moved = shift; /* (a failure leaves it 0) */
        /* A publish point other than fsync cut the extension of a file auto had moved to extend (a lock
         * release, close, fork, exec, mmap): it goes back to staging, so that a program publishing that way
         * pays no truncate per publish (the file is as stage left it: sizes equal, nothing staged). */
        if (extended && f->auto_keep) {
            f->strategy = UP_STAGE;
            f->auto_keep = false;
            f->sync_streak = 0;
        }
        if (!up_file_pinned(f)) up_pin_unpinned(f); /* the next publish point may skip its walk (upath.c) */
    }
    f->meta_dirty = true;
    return rc;
}

int up_publish_locked_moved(struct up_file *f, int fd, uint64_t *moved) {
    return publish_locked(f, fd, moved, false, false);
}

/* DAXKIT_STAGE_SPILL_BYTES (io.c decides when): a burst of appends longer than that goes to the kernel as it
 * is written -- one copy, as the kernel's own write -- instead of a staging copy that the publish's pwrite
 * reads back from memory: tar cf's 5 MiB archive was staged in fresh anonymous memory (zeroed, written,
 * read back) and cost 1.45x the kernel's CPU. From the first spill of a burst to the next publish point the
 * file's published-size record names the size at the last publish point (and the file's path: recovery
 * finds it by name), so recovery after a crash rolls the burst back as it does a publish cut in the middle:
 * appends stay all-or-nothing; other processes may see the burst before the publish point. Publishes what
 * is staged, keeping the record, raised to `end`. Under f->mu. 0: the caller has the kernel write up to
 * `end` from the logical size; 1: not spilled (no record could be made, or something stays staged) -- stage
 * as before; -errno. */
int up_spill_locked(struct up_file *f, int fd, uint64_t end) {
    int rc = up_sizerec_spill(f, fd, end);
    if (rc) return rc;
    if (!f->sizerec_valid) return 1;
    if (!f->spilled) up_pin_note(f); /* the record pins the file: up_publish_all's walk must not be skipped (review 22, #02) */
    __atomic_store_n(&f->spilled, true, __ATOMIC_RELEASE); /* lock-free readers: up_file_size_ours */
    rc = publish_locked(f, fd, NULL, true, false);
    if (rc) return rc;
    uint64_t size = up_file_size(f);
    return f->staged_count || f->pub_size != size || f->ksize != size ? 1 : 0;
}

/* After a kernel fsync: blocks cloned in since the last one are shared no more (their staging slots were
 * punched when given back), yet the file system still treats the file as reflinked -- XFS looks its
 * refcount tree up on every write: 4 KiB random overwrites with fsync every 10 took 5.1-6.2 us against
 * the kernel's 2.5-3.2 us on a file made by relink. An unshare of one block lets it drop that mark when
 * nothing is shared (xfs_reflink_try_clear_inode_flag); its write-back finds nothing dirty right after
 * the fsync. Best effort, through a writable descriptor only. */
void up_drop_reflink_mark(struct up_file *f, int fd) {
    if (!__atomic_load_n(&f->reflinked, __ATOMIC_RELAXED) || !__atomic_exchange_n(&f->reflinked, false, __ATOMIC_ACQ_REL))
        return; /* (the load first: strict mode asks at every fsync) */
    int fl = up_fd_flags(fd);
    if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
        __atomic_store_n(&f->reflinked, true, __ATOMIC_RELAXED);
        return;
    }
    DK_ERRNO_SAVE;
    /* KEEP_SIZE: without it the call would extend a file shorter than the block (diff seed 461582589002). */
    if (DK_REAL(fallocate)(fd, FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE, 0, DK_PAGE_BYTES) == 0)
        dk_count(DK_C_reflink_unshares, 1);
    DK_ERRNO_RESTORE;
}

/* The first half of making the file's published state durable: what needs no system call (the fence of a
 * flush medium). True when the kernel must sync the file too (persist_by_kernel). */
static bool persist_needs_kernel(struct up_file *f, int fd, bool meta) {
    up_file_dax_check(f, fd); /* once per file: a DAX root's file may not be DAX (review 11, finding 3) */
    switch (up_persist_as(f)) {
    case DK_MEDIUM_DAX:
        dk_fence();  /* data stores were written back as they were made */
        return meta; /* sizes and relinked blocks are file-system metadata */
    case DK_MEDIUM_PAGECACHE:
        return true; /* always: fsync makes durable what any process wrote into the page cache, not only this one */
    case DK_MEDIUM_VOLATILE: return false; /* nothing to make durable; survives process crash */
    }
    return true;
}

/* The kernel's fsync/fdatasync of the file: 0, or -errno. */
static int persist_by_kernel(struct up_file *f, int fd, bool datasync) {
    dk_count(DK_C_fsyncs_kernel, 1);
    int r = datasync ? DK_REAL(fdatasync)(fd) : DK_REAL(fsync)(fd);
    if (r != 0) return -errno;
    up_drop_reflink_mark(f, fd);
    return 0;
}

/* Makes the file's published state durable as its medium requires: 0, or -errno (the caller marks its
 * metadata dirty again). */
static int persist_file(struct up_file *f, int fd, bool datasync, bool meta) {
    return persist_needs_kernel(f, fd, meta) ? persist_by_kernel(f, fd, datasync) : 0;
}

/* DAXKIT_EXTEND_SYNC=keep, for an extend-strategy file past its logical size with a valid published-size
 * record: fsync makes the bytes durable -- with the extended kernel size, the first time after a step --
 * then moves the record's published size up, and leaves the extension in place (FLEX: other processes see
 * the zero-filled tail until another publish point). Under f->mu throughout, so that no truncate or
 * publish slips between the data and the record. */
bool up_keeps_on_sync(const struct up_file *f) {
    return dk_cfg.extend_sync == DK_EXTEND_SYNC_KEEP || f->auto_keep;
}

static bool keeps_extension(const struct up_file *f) {
    return f->strategy == UP_EXTEND && up_keeps_on_sync(f) && f->sizerec_valid &&
           f->ksize > up_file_size(f);
}

static int sync_keeping_extension(struct up_file *f, int fd, bool datasync) {
    uint64_t size = up_file_size(f);
    bool meta = f->meta_dirty;
    f->meta_dirty = false;
    int rc = 0;
    if (persist_needs_kernel(f, fd, meta)) { /* (not for nothing: ~45 instructions per record on memory media) */
        int cancel_was = dk_cancel_off(); /* under f->mu: fsync is a cancellation point */
        rc = persist_by_kernel(f, fd, datasync);
        dk_cancel_restore(cancel_was);
    }
    if (rc) {
        f->meta_dirty = meta;
        return rc;
    }
    up_sizerec_commit(f, size);
    if (size > f->pub_size) __atomic_store_n(&f->pub_size, size, __ATOMIC_RELEASE);
    f->appends_unpublished = 0;
    return 0;
}

/* DAXKIT_APPEND=auto: a stage-strategy file whose fsyncs each published exactly one append, AUTO_KEEP_AFTER
 * times in a row -- a write-ahead log synced per record (RocksDB with sync=1) -- moves to extend with keep: the stage strategy pays each such fsync a pwrite of the record
 * (a second copy, and the system call the kernel path pays as its write), extend-keep a store into the
 * mapping and no system call (db_bench fillsync on huge tmpfs: 0.88x the kernel's CPU time against 1.05x,
 * docs/benchmarks.md). posix mode only (sync mode publishes every append anyway), on memory and DAX media
 * (on the page cache fsync reaches the kernel regardless, and a background fault would dirty zeros for
 * write-back). Under f->mu, after a successful publish of `appends` append calls.
 * Not a file appended through an O_APPEND descriptor (redis's AOF): such a log may be shared (an audit
 * log, a journal two programs append to), and another process's O_APPEND write lands at the kernel's end -- past the
 * kept extension, which would then sit as zeros in the middle of the log (review 8, finding 1). A file
 * whose writer tracks its own offset (RocksDB's WAL) is not shared that way without locks, whose
 * release is a publish point.
 * Such an O_APPEND file synced per record as long under stage is counted once instead (o_append_sync_logs)
 * and, with DAXKIT_VERBOSE=1, reported with README's setting for an AOF a server keeps to itself, which the
 * program's user may choose where the library cannot: whether another program appends to it (a 400-byte
 * record synced: stage 1.9x the kernel's CPU, extend with keep 0.42x; docs/benchmarks.md, session 25). True
 * when it was counted now (the caller reports it after the mutex). */
static bool note_sync_streak(struct up_file *f, uint32_t appends) {
    if (f->strategy != UP_STAGE || !dk_cfg.auto_keep_after || dk_cfg.mode != DK_MODE_POSIX || f->atomic ||
        f->root->medium.medium == DK_MEDIUM_PAGECACHE)
        return false;
    bool shared_log = f->appends_o_append;
    if (shared_log ? f->write_through : !f->auto_policy) return false;
    if (appends != 1) {
        f->sync_streak = 0;
        return false;
    }
    if (++f->sync_streak < dk_cfg.auto_keep_after) return false;
    if (shared_log) {
        f->write_through = true; /* (up_write_through_locked; left at a second append before an fsync) */
        if (f->o_append_hinted) return false; /* (counted once) */
        f->o_append_hinted = true;
        dk_count(DK_C_o_append_sync_logs, 1);
        return true;
    }
    f->strategy = UP_EXTEND; /* published: ksize == size == pub_size, nothing staged */
    f->auto_keep = true;
    dk_count(DK_C_auto_keeps, 1);
    return false;
}

/* DAXKIT_VERBOSE=1: names the log note_sync_streak counted, with the setting for its name (once per file). */
static __attribute__((noinline, cold)) void report_sync_log(int fd) {
    if (!dk_cfg.verbose) return;
    DK_ERRNO_SAVE;
    char path[PATH_MAX], glob[PATH_MAX + 2];
    if (!up_fd_path(fd, path, sizeof path)) snprintf(path, sizeof path, "(descriptor %d)", fd);
    const char *base = strrchr(path, '/'), *ext;
    base = base ? base + 1 : path;
    ext = strrchr(base, '.');
    snprintf(glob, sizeof glob, "%s%s", ext && ext != base ? "*" : "", ext && ext != base ? ext : base);
    dk_log("%s: appended through O_APPEND and fsynced after every record (stage: each record a pwritev2 at its write "
           "from now on); if no other program appends to it, DAXKIT_APPEND='stage,%s=extend' DAXKIT_EXTEND_SYNC=keep "
           "stores its records in place and its fsyncs make no system call (README; docs/guarantees.md)", path, glob);
    DK_ERRNO_RESTORE;
}

int up_sync_file_moved(struct up_file *f, int fd, bool datasync, uint64_t *moved) {
    if (moved) *moved = 0;
    up_file_lock(f);
    if (keeps_extension(f)) {
        int rc = sync_keeping_extension(f, fd, datasync);
        dk_mu_unlock(&f->mu);
        return rc;
    }
    uint32_t appends = f->appends_unpublished;
    int rc = publish_locked(f, fd, moved, false, moved == NULL); /* (moved: sync and strict modes' writes) */
    if (rc == 0) f->appends_unpublished = 0; /* (written through: published at the write, counted for the streak) */
    bool hint = rc == 0 && note_sync_streak(f, appends);
    bool meta = f->meta_dirty;
    f->meta_dirty = false;
    dk_mu_unlock(&f->mu);
    if (DK_UNLIKELY(hint)) report_sync_log(fd);
    if (rc) return rc;
    rc = persist_file(f, fd, datasync, meta);
    if (rc) {
        up_file_lock(f);
        f->meta_dirty = true;
        dk_mu_unlock(&f->mu);
    }
    return rc;
}

/* An O_APPEND log synced per record (note_sync_streak: DAXKIT_AUTO_KEEP_AFTER fsyncs in a row, each after one
 * append; redis's AOF with appendfsync always): staging its record only to copy it again at the fsync -- a
 * pwritev2 and the staging copy, where the kernel's path pays a write and an fdatasync -- is replaced by the
 * publish at the write itself: the same RWF_APPEND write at the kernel's end (through the file's own descriptor
 * at its offset, its look put off: put_end_off), with the size record when it crosses a page, as the publish's
 * relink makes it -- a SIGKILL inside the kernel's copy is cut back by recovery. The fsync then finds nothing
 * staged (on a memory medium no system call). Other processes see each record at the kernel's end when the
 * write returns (earlier than at the fsync, as the kernel's path shows it); each record is all or nothing. A
 * second append before an fsync leaves the state (staged, as ever, from then on until the streak is made
 * again): the first of that group was in the file already -- the one group a crash may find half there
 * (docs/guarantees.md). Under f->mu, the append at `off` = the file's end with nothing staged. The count
 * written (short: the medium filled), -errno, or 0: not taken (stage it). */
ssize_t up_write_through_locked(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off) {
    if (f->appends_unpublished || f->staged_count || off != f->pub_size || f->ksize != off || f->spilled ||
        up_publish_rolling_back(f) || dk_cfg.mode != DK_MODE_POSIX || f->strategy != UP_STAGE || f->atomic || !n) {
        f->write_through = false; /* (made again by DAXKIT_AUTO_KEEP_AFTER single-append fsyncs) */
        f->sync_streak = 0;
        return 0;
    }
    int wfd = put_off_fd(f, fd, off);
    if (wfd < 0 || up_map_keep(f, wfd, off + n) != 0) return 0;
    int rc = 0;
    if (off / DK_PAGE_BYTES != (off + n - 1) / DK_PAGE_BYTES) { /* (relink_can_tear's rule) */
        uint64_t from = up_end_owed(f) ? record_from_kernel(f, wfd) : UINT64_MAX;
        rc = from == UINT64_MAX ? up_sizerec_publish_begin(f, wfd, off + n) : up_sizerec_publish_begin_at(f, wfd, from, from + n);
        if (rc) return rc;
    }
    uint64_t landed = off, old_size = f->ksize;
    copy_rwf = RWF_APPEND | DK_PWRITE_AT_POS;
    rc = copy_range(wfd, buf, off, n, &landed);
    copy_rwf = 0;
    if (landed > off) {
        up_map_kernel_wrote(f, off, landed, old_size);
        relinked_to(f, off, landed);
        up_file_set_size(f, landed);
        if (rc) up_sizerec_commit(f, landed); /* (as relink_all's partial copy) */
        DK_CRASH_POINT("publish.write_through.before_clear");
        if (!rc) up_sizerec_clear(f);
        f->meta_dirty = true;
        f->appends_unpublished++; /* (the fsync's streak: one append) */
        put_end_off(f, off, landed, wfd);
        f->staged_o_append = false;
        f->o_append_fd = -1;
        dk_count(DK_C_append_write_through, 1);
        return (ssize_t)(landed - off);
    }
    if (!rc) up_sizerec_clear(f);
    return rc ? rc : -EIO;
}

/* Gives back the staged slots wholly at or past `from` (their bytes left the logical size). Under f->mu. */
static void drop_staged_from(struct up_file *f, uint64_t from) {
    uint32_t keep = 0;
    while (keep < f->staged_count && f->staged[keep].base < from) keep++;
    for (uint32_t i = keep; i < f->staged_count; i++) up_stage_give_back(f->root, &f->staged[i], false);
    f->staged_count = keep;
}

bool up_logged_write_failed(struct up_file *f, uint64_t off, size_t n) {
    up_file_lock(f);
    uint64_t end = off + n, size0 = up_io_append_size0;
    bool undo = f->strategy == UP_STAGE && f->pub_size <= size0 && size0 <= off && up_file_size(f) == end;
    if (undo) {
        up_file_set_size(f, size0); /* stage: fast sections stop at pub_size, below size0 (no guard needed) */
        drop_staged_from(f, size0);
        dk_count(DK_C_strict_write_undone, 1);
    }
    dk_mu_unlock(&f->mu);
    return undo;
}

ssize_t up_sync_write_failed(struct up_file *f, int fd, uint64_t off, size_t n, int err) {
    up_file_lock(f);
    uint64_t pub = f->pub_size, end = off + n;
    if (f->strategy != UP_STAGE || pub >= end) { /* all of it is in the file: the sync itself failed */
        dk_mu_unlock(&f->mu);
        return err;
    }
    /* What did not reach the file leaves the logical size, so no later publish adds it -- unless another
     * thread appended after it meanwhile (its bytes follow these): then it stays staged, and the answer is
     * the error (a write that fails and then appears; rare -- two threads appending in sync mode while the
     * medium fills). */
    if (up_file_size(f) == end) {
        uint64_t keep = DK_MAX(pub, off);
        up_file_set_size(f, keep); /* stage: fast sections stop at pub_size, below keep (no guard needed) */
        drop_staged_from(f, keep);
        dk_count(DK_C_sync_write_cuts, 1);
    }
    bool meta = pub > off && f->meta_dirty;
    if (pub > off) f->meta_dirty = false;
    dk_mu_unlock(&f->mu);
    if (pub <= off) return err;
    int rc = persist_file(f, fd, true, meta); /* the short count is durable, as the write's whole count was to be */
    if (rc) {
        up_file_lock(f);
        f->meta_dirty = true;
        dk_mu_unlock(&f->mu);
        return rc;
    }
    return (ssize_t)(pub - off);
}

/* Appends staged here (stage strategy, posix mode) while the kernel's size `ns`, just read, lies past the end
 * this process last set or saw: another process published growth since. What is staged goes in now, a
 * publish point as the program's fsync would be -- appends made through
 * an O_APPEND descriptor at the kernel's end, where the kernel's writes would have put them after the other's
 * records (adopt_append_end moves the descriptor's offset past them), the others where they were written --
 * and the kernel's size becomes the file's. So fstat, SEEK_END, the offset after an O_APPEND write and reads
 * see the file the kernel has, not the stale end plus this process's appends (review 12, finding 2's posix
 * addendum: fstat said 1 where the kernel had 218,343 bytes, and an ftruncate to it cut another process's
 * 218,342 published bytes; the process read its own record at the stale offset, where the file had the
 * other's). Under f->mu. True when it published: the file's size is the kernel's now (not the `ns` read
 * before -- a write of this process's may have ended past it). */
static bool publish_past_growth(struct up_file *f, int fd, uint64_t ns) {
    bool staged = f->staged_count || up_file_size(f) != f->pub_size;
    if (!staged || ns <= f->ksize || f->strategy != UP_STAGE || dk_cfg.mode != DK_MODE_POSIX || f->atomic ||
        f->kernel_only)
        return false; /* (sync and strict modes publish inside the write: their staged bytes are that write's) */
    if (up_publish_locked(f, fd) != 0) return false; /* left staged: the next publish point retries */
    if (ns > up_file_size(f)) adopt_kernel_growth(f, fd, ns, false); /* appends that ended below it */
    dk_count(DK_C_growth_publishes, 1);
    return true;
}

bool up_publish_past_growth(struct up_file *f, int fd, uint64_t ns) {
    up_file_lock(f);
    bool changed = publish_past_growth(f, fd, ns);
    dk_mu_unlock(&f->mu);
    return changed;
}

/* The kernel's size re-read (one fstat) when nothing is unpublished here -- or, with `staged_too`, when
 * appends are staged (publish_past_growth). */
static bool refresh(struct up_file *f, int fd, bool staged_too, bool cut_too) {
    bool changed = false, have_st = false;
    struct stat st;
    up_file_lock(f);
    __atomic_store_n(&f->size_unsure, false, __ATOMIC_RELAXED);
    /* The end put off (put_end_off): made first -- with nothing staged from the fstat below, which the idle
     * re-read then uses too */
    if (DK_UNLIKELY(up_end_owed(f))) {
        bool staged = f->staged_count || up_file_size(f) != f->pub_size || f->ksize != f->pub_size;
        if (!staged && DK_REAL(fstat)(fd, &st) == 0) {
            uint64_t ns = (uint64_t)st.st_size;
            have_st = true;
            changed = settle_end(f, fd, &ns);
        } else if (staged) {
            changed = settle_end(f, fd, NULL);
        }
    }
    uint64_t size = up_file_size(f);
    bool idle = size == f->pub_size && size == f->ksize && f->staged_count == 0;
    if (!idle && staged_too && f->strategy == UP_STAGE && dk_cfg.mode == DK_MODE_POSIX) {
        dk_count(DK_C_size_rereads, 1);
        if (DK_REAL(fstat)(fd, &st) == 0) {
            if (cut_too && (uint64_t)st.st_size < f->ksize) { /* (up_refresh_owed) */
                bool published = up_publish_locked(f, fd) == 0;
                if (published) up_holes_clamp_guarded(f, (uint64_t)st.st_size); /* (as the idle cut below) */
                changed |= published;
            } else {
                changed |= publish_past_growth(f, fd, (uint64_t)st.st_size);
            }
        }
    }
    if (idle) dk_count(DK_C_size_rereads, 1);
    if (idle && (have_st || DK_REAL(fstat)(fd, &st) == 0) && (uint64_t)st.st_size != size) {
        uint64_t ns = (uint64_t)st.st_size;
        if (ns > size) changed = adopt_kernel_growth(f, fd, ns, false) == 0;
        else { /* another process cut it: fast sections must not read what is gone */
            up_guard_write_lock(f);
            up_holes_clamp(f, ns);
            f->ksize = ns;
            __atomic_store_n(&f->pub_size, ns, __ATOMIC_RELEASE);
            up_file_set_size(f, ns);
            up_guard_write_unlock(f);
            changed = true;
        }
    }
    dk_mu_unlock(&f->mu);
    return changed;
}

bool up_refresh_if_idle(struct up_file *f, int fd) { return refresh(f, fd, false, false); }

/* A lock's re-read owed since appends at the end and fsyncs were served without it (upath.c put_off): they
 * were staged at their offsets and published there, as the kernel's pwrites would have put them, whatever
 * another process did to the size meanwhile. Idle now (published): the re-read as ever. With appends staged:
 * growth past the kernel size this process set is taken as up_refresh_size takes it (publish_past_growth); a
 * kernel size cut below it -- another process's truncate before this process's lock -- is one no mapped
 * access may go past: what is staged goes in where it was written (the kernel's writes would have left the
 * hole between too) and the mapped range stops at the cut (up_holes_clamp: accesses past it are the kernel's
 * until a probe finds storage). Bytes published meanwhile (an fdatasync before any other call) may lie past a
 * hole such a cut left, which the mapped range does not know: one SEEK_HOLE then (up_holes_recheck_below) --
 * a chain of put-off transactions saves an fstat each and pays that once. One fstat, the re-read put off. */
void up_refresh_owed(struct up_file *f, int fd) {
    (void)refresh(f, fd, true, true);
    uint64_t from = __atomic_load_n(&f->owed_from, __ATOMIC_RELAXED);
    if (__atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) <= from) return; /* nothing went in meanwhile */
    up_file_lock(f);
    up_holes_recheck_below(f, fd, from);
    dk_mu_unlock(&f->mu);
}

bool up_refresh_size(struct up_file *f, int fd) { return refresh(f, fd, true, false); }

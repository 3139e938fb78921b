/* userfaultfd write-protect mode of the atomic engine: see uwp.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "atomic/uwp.h"
#include "atomic/uwp_internal.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/uffd_compat.h"
#include "persist/persist.h"
#include "shim/libc.h"

/* userfaultfd(2), else /dev/userfaultfd. Non-blocking: the handler polls it together with its stop eventfd
 * and must never sleep in read(). user_mode_only: allowed without privilege. */
int uwp_uffd_open(bool user_mode_only) {
    int mode = user_mode_only ? UFFD_USER_MODE_ONLY : 0;
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | mode);
    if (fd >= 0) return fd;
    int e = errno;
    int dev = dk_ifd_openat(AT_FDCWD, "/dev/userfaultfd", O_RDWR | O_CLOEXEC, 0);
    if (dev < 0) return -(e == ENOSYS ? ENOSYS : e);
    fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK | mode);
    e = errno;
    DK_REAL(close)(dev);
    return fd >= 0 ? fd : -e;
}

int uwp_protect(struct dk_uwp *u, uint64_t off, uint64_t n, bool wp) {
    struct uffdio_writeprotect w = {.range = {(uintptr_t)uwp_base(u) + off, n},
                                    .mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    return ioctl(u->uffd, UFFDIO_WRITEPROTECT, &w) == 0 ? 0 : -errno;
}

static int uffd_setup(struct dk_uwp *u) {
    /* Faults from the kernel too where permitted, as the shadow's (uwp_shadow.c register_shadow): a read(2)
     * from a pipe, socket or unmanaged file into a protected page is a kernel-mode write fault, which a
     * user-mode-only userfaultfd does not take -- the call failed with EFAULT (review 10, finding 7). */
    u->uffd = uwp_uffd_open(false);
    if (u->uffd < 0) {
        u->uffd = uwp_uffd_open(true);
        if (u->uffd >= 0)
            dk_log_once("DAXKIT_ATOMIC_MMAP: userfaultfd for user-mode faults only (no CAP_SYS_PTRACE, "
                        "vm.unprivileged_userfaultfd=0): a read(2) by the kernel into a page of a mapping not "
                        "stored into since the last msync fails with EFAULT");
    }
    if (u->uffd < 0) return u->uffd;
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM};
    if (ioctl(u->uffd, UFFDIO_API, &api) != 0) return errno == EINVAL ? -EOPNOTSUPP : -errno;
    struct uffdio_register reg = {.range = {(uintptr_t)u->f->data, u->len}, .mode = UFFDIO_REGISTER_MODE_WP};
    if (ioctl(u->uffd, UFFDIO_REGISTER, &reg) != 0) return errno == EINVAL ? -EOPNOTSUPP : -errno;
    return uwp_protect(u, 0, u->len, true);
}

/* One write fault: save the page's old bytes (durably), then let the store proceed. The protection is
 * lifted before f->rw is released: were it lifted after, an msync in between would commit the epoch with
 * the page still protected, and the store would land in the next epoch with no undo entry there (a crash
 * would then keep it, and the page would stay writable, unlogged, from then on). */
static void on_write_fault(struct dk_uwp *u, uint64_t addr) {
    uint64_t off = dk_round_down(addr - (uintptr_t)u->f->data, DK_PAGE_BYTES);
    pthread_rwlock_rdlock(&u->f->rw); /* msync holds it for writing: the page joins the next epoch */
    /* The file's bytes of the page: its last page may end inside it (the rest is the mapping's, not the
     * file's; saving a whole page there failed with -EFBIG: review 10, finding 20). */
#ifdef DAXKIT_TEST_BUILD
    alog_test_unfenced = alog_test_broken == ALOG_BROKEN_UWP_SAVE_UNFENCED; /* the broken order, for the explorer */
#endif
    int rc = alog_save_old(u->f, off, DK_MIN((uint64_t)DK_PAGE_BYTES, u->f->data_len - off));
    if (!rc) rc = alog_durable_log_all(u->f); /* the undo bytes before any store can reach the page */
#ifdef DAXKIT_TEST_BUILD
    alog_test_unfenced = false;
#endif
    DK_CRASH_POINT("atomic.uwp.fault.logged");
    if (rc) __atomic_store_n(&u->error, rc, __ATOMIC_RELEASE); /* never leave the program blocked */
    __atomic_add_fetch(&u->faults, 1, __ATOMIC_RELAXED);
    uwp_protect(u, off, DK_PAGE_BYTES, false); /* also wakes the faulting thread */
    pthread_rwlock_unlock(&u->f->rw);
}

static void *handler_main(void *arg) {
    struct dk_uwp *u = arg;
    struct pollfd p[2] = {{.fd = u->uffd, .events = POLLIN}, {.fd = u->stop_fd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[1].revents) break;
        struct uffd_msg m[16];
        ssize_t got = read(u->uffd, m, sizeof m);
        if (got < 0) continue; /* EAGAIN: another wakeup */
        for (ssize_t i = 0; i < got / (ssize_t)sizeof m[0]; i++) {
            if (m[i].event != UFFD_EVENT_PAGEFAULT) continue;
            if (u->shadow) uwp_shadow_fault(u, m[i].arg.pagefault.address, m[i].arg.pagefault.flags);
            else if (m[i].arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) on_write_fault(u, m[i].arg.pagefault.address);
        }
    }
    return NULL;
}

static void uwp_free(struct dk_uwp *u) {
    if (u->thread_started) {
        uint64_t one = 1;
        if (write(u->stop_fd, &one, sizeof one) != sizeof one) {}
        pthread_join(u->thread, NULL);
    }
    if (u->uffd >= 0) {
        struct uffdio_range r = {(uintptr_t)uwp_base(u), u->len};
        if (r.start) ioctl(u->uffd, UFFDIO_UNREGISTER, &r);
        DK_REAL(close)(u->uffd);
    }
    if (u->stop_fd >= 0) DK_REAL(close)(u->stop_fd);
    if (u->shadow) uwp_shadow_free(u); /* the file never saw the stores made since the last msync */
    pthread_rwlock_destroy(&u->writes);
    pthread_cond_destroy(&u->gate_cv);
    pthread_mutex_destroy(&u->gate_mu);
    memset(u, 0xa5, sizeof *u); /* poison: a stale use faults at once instead of using a freed log */
    free(u);
}

/* Memory whose mappings userfaultfd can write-protect on this kernel (6.x): shmem and hugetlbfs. */
static bool wp_capable_fs(const char *path) {
    struct statfs s;
    return statfs(path, &s) == 0 && (s.f_type == TMPFS_MAGIC || s.f_type == HUGETLBFS_MAGIC);
}

/* Log data room for one page of every page of a file_bytes file, plus a chunk: an epoch can then store into
 * every page (each page is saved once per epoch; a committed page's entry is retired or reclaimed before its
 * block is needed again), so a store never finds the log full (review 10, finding 2). */
static uint64_t log_bytes_for_pages(uint64_t file_bytes, uint64_t per_page_bytes) {
    uint64_t pages = dk_round_up(file_bytes, DK_PAGE_BYTES) / DK_PAGE_BYTES;
    return dk_round_up(pages * per_page_bytes + (2u << 20), 2u << 20);
}

/* The file's own mapping: undo (each page's old bytes saved at its first store of an epoch), sized for every
 * page of the file. */
static void undo_options(struct daxkit_atomic_options *o, uint64_t file_bytes) {
    uint64_t need = log_bytes_for_pages(file_bytes, DK_PAGE_BYTES);
    o->policy = DAXKIT_ATOMIC_UNDO;
    if (o->log_bytes < need) o->log_bytes = need;
}

/* The shadow's engine: the journal (a diff per dirty page at msync), applied by msync itself (no thread),
 * with room for every page of the mapping changing in one msync when the log is new. */
static void shadow_options(struct daxkit_atomic_options *o, uint64_t file_bytes) {
    uint64_t need = log_bytes_for_pages(file_bytes, DK_PAGE_BYTES + sizeof(struct alog_jrec));
    o->policy = DAXKIT_ATOMIC_JOURNAL;
    o->checkpoint_interval_us = 0;
    if (o->log_bytes < need) o->log_bytes = need;
}

/* A fresh u's descriptors and locks (uwp_free undoes them). */
static void uwp_init(struct dk_uwp *u) {
    u->uffd = u->stop_fd = u->shadow_fd = -1;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* an msync must not starve behind a stream of write()s from other threads */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&u->writes, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&u->gate_mu, NULL);
    pthread_cond_init(&u->gate_cv, NULL);
}

static void close_engine(struct alog_file *f) { alog_close(f); }

/* The eventfd, the protection (the shmem shadow's, or userfaultfd's on the file's own mapping) and the handler
 * thread of a u whose engine is open -- the file's or a test's memory. On failure u is freed and the engine
 * closed with close_fn. 0 or -errno. */
static int uwp_start_handler(struct dk_uwp *u, bool shadow, void (*close_fn)(struct alog_file *f)) {
    int rc;
    u->len = dk_round_up(u->f->data_len, DK_PAGE_BYTES);
    u->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (u->stop_fd < 0) rc = -errno;
    else if (shadow) rc = u->len ? uwp_shadow_setup(u) : -EINVAL;
    else rc = u->f->policy != ALOG_UNDO ? -EOPNOTSUPP : uffd_setup(u);
    if (!rc) rc = alog_thread_start(&u->thread, handler_main, u);
    u->thread_started = rc == 0;
    if (rc) {
        struct alog_file *f = u->f;
        uwp_free(u);
        close_fn(f);
    }
    return rc;
}

static int uwp_map(const char *path, const struct daxkit_atomic_options *o, bool shadow, struct dk_uwp **out,
                   void **addr, size_t *len) {
    DK_ERRNO_SAVE;
    struct daxkit_atomic_options opt;
    struct stat st;
    int rc = alog_options_resolve(o, &opt);
    if (!rc && stat(path, &st) != 0) rc = -errno;
    struct dk_uwp *u = rc ? NULL : calloc(1, sizeof *u);
    if (!rc && !u) rc = -ENOMEM;
    if (rc) goto out;
    uwp_init(u);
    shadow = shadow || !wp_capable_fs(path);
    if (shadow) shadow_options(&opt, (uint64_t)st.st_size);
    else undo_options(&opt, (uint64_t)st.st_size);
    if (opt.log_bytes > ALOG_LOG_BYTES_MAX) rc = -EFBIG; /* over 64 GiB of log: the program's mmap fails */
    if (!rc) rc = alog_open(path, &opt, &u->f);
    /* A log that had work when opened (recovered now) kept its size: idle now, it is made anew at ours. */
    if (!rc && u->f->area_bytes < opt.log_bytes && !(rc = alog_close(u->f))) rc = alog_open(path, &opt, &u->f);
    if (!rc && u->f->area_bytes < opt.log_bytes) { /* never an epoch that cannot fit */
        alog_close(u->f);
        rc = -ENOSPC;
    }
    if (rc) {
        free(u);
        goto out;
    }
    rc = uwp_start_handler(u, shadow, close_engine);
    if (rc) goto out;
    *out = u, *addr = uwp_base(u), *len = u->f->data_len;
out:
    DK_ERRNO_RESTORE;
    return rc;
}

int dk_uwp_map(const char *path, const struct daxkit_atomic_options *o, struct dk_uwp **out, void **addr, size_t *len) {
    return uwp_map(path, o, false, out, addr, len);
}

int dk_uwp_map_shadow(const char *path, const struct daxkit_atomic_options *o, struct dk_uwp **out, void **addr,
                      size_t *len) {
    return uwp_map(path, o, true, out, addr, len);
}

bool dk_uwp_shadowed(const struct dk_uwp *u) { return u->shadow; }

#define UWP_PROTECT_EACH_MAX 64u /* more dirty pages than this: one ioctl over the whole mapping */

/* Calls fn on every page range logged in `epoch` (this epoch's: the only pages the program can have stored
 * into). */
static int for_epoch_pages(struct dk_uwp *u, uint64_t epoch, int (*fn)(struct dk_uwp *, uint64_t, uint64_t)) {
    struct alog_file *f = u->f;
    for (uint64_t w = 0; w < (f->entry_count + 63) / 64; w++) {
        for (uint64_t bits = f->live_bits[w]; bits; bits &= bits - 1) {
            const struct alog_ent *e = &f->ents[w * 64 + (uint64_t)__builtin_ctzll(bits)];
            if (e->epoch != epoch) continue;
            int rc = fn(u, e->dest_off + e->ext_start, e->ext_len);
            if (rc) return rc;
        }
    }
    return 0;
}

static int count_page(struct dk_uwp *u, uint64_t off, uint64_t n) { return (void)off, (void)n, ++u->dirty_pages, 0; }
/* Whole pages: a logged range ends inside the file's last page when the file does. */
static int protect_page(struct dk_uwp *u, uint64_t off, uint64_t n) {
    return uwp_protect(u, off, dk_round_up(n, DK_PAGE_BYTES), true);
}
static int flush_page(struct dk_uwp *u, uint64_t off, uint64_t n) { return dk_flush_range(u->f->data + off, n), 0; }

/* Write-protects the pages of this epoch (first: a store racing with msync then faults and waits for the
 * next epoch), then writes them back on dax, where the program's stores never were. */
static int close_epoch_pages(struct dk_uwp *u) {
    uint64_t epoch = u->f->epoch;
    u->dirty_pages = 0;
    for_epoch_pages(u, epoch, count_page);
    int rc = u->dirty_pages > UWP_PROTECT_EACH_MAX ? uwp_protect(u, 0, u->len, true)
                                                   : for_epoch_pages(u, epoch, protect_page);
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_UWP_COMMIT_BEFORE_PAGES) return rc; /* after the commit (dk_uwp_msync) */
#endif
    if (!rc && u->f->persist_as != DK_MEDIUM_PAGECACHE) for_epoch_pages(u, epoch, flush_page);
    return rc;
}

int dk_uwp_msync(struct dk_uwp *u) {
    if (u->f->inherited) return -EBADF; /* a fork's child: the log is the parent's */
    DK_ERRNO_SAVE;
    struct alog_file *f = u->f;
    struct dk_uwp_marks saved;
    uwp_mark_msync(u, &saved); /* a signal handler's write of the file on this thread is refused */
    if (u->shadow) { /* no write() between the file and the shadow */
        pthread_mutex_lock(&u->gate_mu);
        u->msyncs_active++; /* before the lock is asked for: a write that cannot have it waits for the end */
        pthread_mutex_unlock(&u->gate_mu);
        pthread_rwlock_wrlock(&u->writes);
    }
    pthread_rwlock_wrlock(&f->rw);
    int rc = __atomic_load_n(&u->error, __ATOMIC_ACQUIRE);
    if (!rc && u->shadow) {
        rc = uwp_shadow_msync_locked(u);
    } else if (!rc) {
        /* Protect before the commit: a store from another thread from here on faults and waits for the
         * lock, so it lands in the next epoch; the stores already made are all in pages logged this epoch. */
        rc = close_epoch_pages(u);
        DK_CRASH_POINT("atomic.uwp.msync.before_commit");
        if (!rc) rc = alog_sync_locked(f);
#ifdef DAXKIT_TEST_BUILD
        if (!rc && alog_test_broken == ALOG_BROKEN_UWP_COMMIT_BEFORE_PAGES) { /* the broken order, for the explorer */
            for_epoch_pages(u, f->epoch - 1, flush_page);
            dk_fence();
        }
#endif
    }
    pthread_rwlock_unlock(&f->rw);
    if (u->shadow) {
        pthread_rwlock_unlock(&u->writes);
        pthread_mutex_lock(&u->gate_mu);
        u->msyncs_active--, u->msync_ends++;
        pthread_cond_broadcast(&u->gate_cv);
        pthread_mutex_unlock(&u->gate_mu);
    }
    uwp_marks_restore(&saved);
    if (!rc && !u->shadow) alog_ckpt_kick(f);
    DK_ERRNO_RESTORE;
    return rc;
}

int dk_uwp_unmap(struct dk_uwp *u) {
    DK_ERRNO_SAVE;
    struct alog_file *f = u->f;
    /* The rollback stores into the file's mapping, which the program may have made read-only (mprotect): no
     * view of it is left now. */
    if (!u->shadow) DK_REAL(mprotect)(f->data, u->len, PROT_READ | PROT_WRITE);
    uwp_free(u);
    int rc = alog_close(f); /* rolls back the pages of the unfinished epoch */
    DK_ERRNO_RESTORE;
    return rc;
}

void dk_uwp_forget_in_child(struct dk_uwp *u) {
    DK_ERRNO_SAVE;
    if (u->uffd >= 0) DK_REAL(close)(u->uffd);
    if (u->stop_fd >= 0) DK_REAL(close)(u->stop_fd);
    if (u->shadow_fd >= 0) DK_REAL(close)(u->shadow_fd);
    u->uffd = u->stop_fd = u->shadow_fd = -1;
    DK_ERRNO_RESTORE;
}

unsigned long long dk_uwp_faults(const struct dk_uwp *u) { return __atomic_load_n(&u->faults, __ATOMIC_RELAXED); }

#ifdef DAXKIT_TEST_BUILD
int dk_uwp_test_map_memory(char *data, uint64_t data_len, char *log, uint64_t log_len,
                           const struct daxkit_atomic_options *o, bool shadow, struct dk_uwp **out, void **addr) {
    struct dk_uwp *u = calloc(1, sizeof *u);
    if (!u) return -ENOMEM;
    uwp_init(u);
    struct daxkit_atomic_options opt = *o;
    opt.policy = shadow ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_UNDO;
    if (shadow) opt.checkpoint_interval_us = 0;
    int rc = alog_test_open_memory(data, data_len, log, log_len, true, &opt, &u->f);
    if (rc) {
        uwp_free(u);
        return rc;
    }
    rc = uwp_start_handler(u, shadow, alog_test_close_memory);
    if (!rc) *out = u, *addr = uwp_base(u);
    return rc;
}

void dk_uwp_test_unmap_memory(struct dk_uwp *u) {
    struct alog_file *f = u->f;
    uwp_free(u);
    alog_test_close_memory(f);
}
#endif

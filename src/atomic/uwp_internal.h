/* The userfaultfd write-protect mode's state, shared by uwp.c (the file mapping itself is protected: shmem)
 * and uwp_shadow.c (a shmem shadow of the file is protected: page-cache and DAX files). See uwp.h. */
#ifndef DK_ATOMIC_UWP_INTERNAL_H
#define DK_ATOMIC_UWP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "atomic/alog.h"
#include "atomic/uwp.h"

struct dk_uwp {
    struct alog_file *f;
    int uffd, stop_fd;
    uint64_t len;            /* registered length (page multiple) */
    pthread_t thread;
    bool thread_started;
    int error;               /* sticky -errno: a page could not be logged (or filled) */
    unsigned long long faults; /* first stores to a page in an epoch */
    uint64_t dirty_pages;    /* msync scratch */
    /* The shadow: write()s of the program hold it for reading from before they change the file until their
     * bytes are in the shadow (dk_uwp_write_begin/end); msync holds it for writing, before f->rw. */
    pthread_rwlock_t writes;
    /* A write waits for an msync unregistered: glibc grants a lock to a thread blocked in the lock call when
     * its holder leaves, which a signal handler on that thread could not tell from holding it (uwp_write.c).
     * So writes only try u->writes, and wait here for the end of the msync that has it or waits for it. */
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    unsigned msyncs_active;        /* under gate_mu */
    unsigned long long msync_ends; /* under gate_mu */
    /* The shadow (uwp_shadow.c): what the program maps instead of the file. */
    bool shadow;
    int shadow_fd;           /* memfd */
    char *shadow_map;        /* MAP_SHARED mapping of the memfd, registered MISSING | WP */
    uint64_t *dirty;         /* one bit per page: stored into this epoch (set under f->rw read, atomic) */
    uint64_t *filled;        /* one bit per page: present in the shadow (set under f->rw read, atomic) */
    char *fill_buf;          /* one page: the handler thread's missing-page source */
    char *cmp_buf;           /* one page: msync's committed bytes of a dirty page (under f->rw write) */
};

/* The mapping the program stores into. */
static inline char *uwp_base(const struct dk_uwp *u) { return u->shadow ? u->shadow_map : u->f->data; }

/* userfaultfd(2), non-blocking; user_mode_only: only faults from user mode (allowed without privilege). */
int uwp_uffd_open(bool user_mode_only);
/* UFFDIO_WRITEPROTECT of [off, off + n) of the program's mapping (wp false: lift it and wake). */
int uwp_protect(struct dk_uwp *u, uint64_t off, uint64_t n, bool wp);

/* ---- this thread's marks (uwp_write.c) ---- */
/* dk_uwp_msync of u begins on this thread (*saved: the marks before it) / has let go of its locks. */
void uwp_mark_msync(struct dk_uwp *u, struct dk_uwp_marks *saved);
void uwp_marks_restore(const struct dk_uwp_marks *saved);

/* ---- the shadow (uwp_shadow.c) ---- */
/* Creates the shadow of u->f's data (u->len), registers it, sets u->uffd. 0 or -errno. */
int uwp_shadow_setup(struct dk_uwp *u);
/* A fault in the shadow: a missing page is filled from the file's committed state (write-protected
 * unless the fault is a write); a write marks the page dirty and lifts the protection. */
void uwp_shadow_fault(struct dk_uwp *u, uint64_t addr, uint64_t flags);
/* Under f->rw held for writing: protects the dirty pages, journals each one's changed bytes, commits,
 * then stores the committed bytes into the file's mapping (read() sees them). 0 or -errno. */
int uwp_shadow_msync_locked(struct dk_uwp *u);
/* The file's bytes [off, off + n) were changed by write() (or the like): copied into the shadow pages present,
 * so the program's loads see them and the next msync does not take them for stores to revert. The caller
 * holds f->rw for writing (as for uwp_undo_file_written). */
void uwp_shadow_file_written(struct dk_uwp *u, uint64_t off, uint64_t n);
/* The file-mapping mode (uwp_undo.c): a write() put buf's n bytes at off into the file; the undo copies of
 * this epoch's pages get them too, durably. The caller holds f->rw for writing. */
void uwp_undo_file_written(struct dk_uwp *u, uint64_t off, const char *buf, uint64_t n);
/* This thread is inside uwp_undo_file_written's block mutex of u's log (or taking it). */
bool uwp_undo_in_block(const struct dk_uwp *u);
/* Unregisters and drops the shadow (the file never saw the unsynced stores). */
void uwp_shadow_free(struct dk_uwp *u);

#endif

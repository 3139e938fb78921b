/* Failure-atomic msync for programs that store into a mapping (issue 4, part 4), as a standalone component
 * on the atomic engine: the file is mapped MAP_SHARED and write-protected with userfaultfd; the first store
 * to a page in an epoch faults to a handler thread, which saves the page's old bytes in the engine's undo
 * log (durably) and lifts the protection; dk_uwp_msync makes the dirty pages durable, commits the epoch and
 * write-protects again. After a crash, mapping the file (dk_uwp_map or daxkit_atomic_map) rolls back the
 * pages of the unfinished epoch: the file is the state of the last completed dk_uwp_msync.
 *
 * Where userfaultfd cannot write-protect the file's own mapping -- XFS and ext4 files (page cache or DAX) on
 * this kernel (6.x): only anonymous, shmem and hugetlbfs memory -- the program gets a shmem shadow of the
 * file instead (uwp_shadow.c): msync journals each dirty page's changed bytes and applies them to the file
 * before it returns. Then read() of the file sees the state of the last msync, not stores made since.
 * Stores made by other threads while dk_uwp_msync runs belong to the epoch being committed or to the next
 * one, never half. */
#ifndef DK_ATOMIC_UWP_H
#define DK_ATOMIC_UWP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daxkit/atomic.h"

struct dk_uwp;

/* Maps the whole file at `path` for stores by the caller; *addr, *len: the mapping. `o` may be NULL (its
 * policy is ignored: always undo). Returns 0 or -errno: -EOPNOTSUPP no userfaultfd write-protection for
 * this file's memory; -EPERM userfaultfd not permitted (vm.unprivileged_userfaultfd and no privilege). */
int dk_uwp_map(const char *path, const struct daxkit_atomic_options *o, struct dk_uwp **out, void **addr, size_t *len);
/* The same with the shadow (uwp_shadow.c) even where the file's own mapping could be protected (tmpfs):
 * for tests and benchmarks. dk_uwp_map takes the shadow by itself on any other file system. */
int dk_uwp_map_shadow(const char *path, const struct daxkit_atomic_options *o, struct dk_uwp **out, void **addr,
                      size_t *len);
/* true: the program stores into the shadow of the file, not into the file's mapping. */
bool dk_uwp_shadowed(const struct dk_uwp *u);
/* Commits every store made since the previous msync. Returns 0 or -errno (then the previous state stands;
 * -EIO/-ENOSPC also when a page could not be logged earlier: that epoch is not atomic and is refused). */
int dk_uwp_msync(struct dk_uwp *u);
/* What a thread holds of the engines' locks, for a write nested in its own (uwp_write.c). */
struct dk_uwp_marks {
    struct dk_uwp *writes_pending, *writes_held; /* u->writes for reading (the shadow) */
    struct dk_uwp *writes_releasing;             /* inside its own pthread_rwlock_unlock of u->writes (an rwlock:
                                                    not covered by common/lockmark.h, which marks mutexes) */
    struct dk_uwp *writes_trying;                /* inside its own pthread_rwlock_tryrdlock of u->writes, until
                                                    held is marked (glibc may have granted it already) */
    struct dk_uwp *rw_pending, *rw_held;         /* f->rw for writing (a write's copy) */
    struct dk_uwp *msync;                        /* inside dk_uwp_msync of it */
    unsigned locks;                              /* engine locks held or waited for, at most */
};
/* One write's bracket (dk_uwp_write_begin/_end). */
struct dk_uwp_write {
    struct dk_uwp *u;
    struct dk_uwp_marks saved; /* the thread's marks before it */
    unsigned char how;         /* uwp_write.c */
};
/* A write() (or the like) of the program is about to change the file; when it returns 0, always followed by
 * dk_uwp_write_end. With the shadow, an msync waits from here until dk_uwp_write_end: between the file write
 * and the copy into the shadow, an msync would journal the shadow's stale bytes of a dirty page over it
 * (review 10, finding 9). -EDEADLK (nothing taken, the write must not be made): a write nested in its own
 * thread's handling of the file -- a signal handler's -- that could only wait for its own thread (its msync
 * of the file, its copy into the undo copies) or for an msync that waits for it (review 11, finding 20). */
int dk_uwp_write_begin(struct dk_uwp *u, struct dk_uwp_write *w);
/* The write changed [off, off + n) of the file to buf's bytes (n 0: nothing changed). With the shadow, the
 * bytes are copied into the shadow pages present (the mapping sees them, as with the kernel). Without (the
 * program maps the file itself and sees them already) they are carried into the undo copies of the pages
 * saved this epoch, durably, so a rollback of the epoch keeps them (review 10, finding 8). Not part of any
 * msync epoch either way. */
void dk_uwp_write_end(struct dk_uwp_write *w, uint64_t off, const void *buf, uint64_t n);
/* true: this thread holds (or waits for) a lock of some file's engine -- a signal handler's msync must not
 * wait (up_atomic_msync refuses it). */
bool dk_uwp_thread_busy(void);
/* Rolls back unsynced stores, unmaps, frees. */
int dk_uwp_unmap(struct dk_uwp *u);
/* In a fork's child: closes the child's copies of the userfaultfd, the handler's eventfd and the shadow's
 * memfd, and nothing else (the engine's log is let go of by alog_open.c's fork handler; the handler thread
 * is the parent's). `u` is leaked: the child must not use it (dk_uwp_msync: -EBADF). */
void dk_uwp_forget_in_child(struct dk_uwp *u);
/* First stores to a page in an epoch so far (pages logged, or marked dirty in the shadow). */
unsigned long long dk_uwp_faults(const struct dk_uwp *u);

#ifdef DAXKIT_TEST_BUILD
/* Test hook (the crash-state explorer, tests/atomic/uwp_explore.c): the file-mapping mode over caller memory
 * -- `data` (page aligned, shmem or anonymous: userfaultfd write-protects it) is the file, `log` a fresh undo
 * log of log_len bytes (alog_test_open_memory), both persisting as on dax; with `shadow`, the shadow mode
 * instead (`log` a journal; the program stores into a shmem shadow of `data`). *addr: where the program
 * stores. Same errors as dk_uwp_map. */
int dk_uwp_test_map_memory(char *data, uint64_t data_len, char *log, uint64_t log_len,
                           const struct daxkit_atomic_options *o, bool shadow, struct dk_uwp **out, void **addr);
/* Stops the handler and frees u and its log, leaving the memory as it is (no rollback). */
void dk_uwp_test_unmap_memory(struct dk_uwp *u);
#endif

#endif

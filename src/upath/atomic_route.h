/* DAXKIT_ATOMIC: managed files matching its globs are served by the failure-atomic engine (src/atomic/)
 * instead of the plain user-space path. fsync, fdatasync and every publish point (close, lock release,
 * mapping by the program, fork, exec, exit) commit: after a crash the file holds the state -- bytes and size
 * -- of one completed commit. See docs/atomic.md, "Transparent use (DAXKIT_ATOMIC)".
 *
 * The hooks below are called by upath.c / lifecycle.c when f->atomic is set (or, for adoption, always). */
#ifndef DK_UPATH_ATOMIC_ROUTE_H
#define DK_UPATH_ATOMIC_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct up_file;
struct up_slot;

/* true when `path` (absolute) matches one of the DAXKIT_ATOMIC globs. */
bool up_atomic_wanted(const char *path);
/* Before the kernel opens `path` (dirfd-relative) with O_TRUNC: the flags to give it -- without O_TRUNC
 * when the file is routed in this process (the route truncates after the open, up_atomic_adopt). */
int up_atomic_open_flags(int dirfd, const char *path, int flags);
/* After adoption of fd (slot bound, up_table_mu not held): routes the file when it matches. 0, or -EBUSY
 * when another process kept the file longer than DAXKIT_ATOMIC_WAIT_MS (the open must fail). */
int up_atomic_adopt(struct up_file *f, int fd, int oflags);

/* DAXKIT_ATOMIC_COMMIT: true when every write (and ftruncate) of a routed file commits -- `write`, or
 * `auto` in sync and strict mode; false when only fsync, fdatasync and the publish points do (`fsync`, or
 * `auto` in posix mode). O_SYNC/O_DSYNC descriptors commit each write either way (io.c). */
bool up_atomic_commit_each_write(void);

/* The data calls of a routed file (fd: the program's descriptor); they return what the libc call would
 * (value, errno). A route detached meanwhile by another thread sends the call down the plain path. */
ssize_t up_atomic_read(struct up_file *f, int fd, void *buf, size_t n, uint64_t off);
/* Writes at off, or at the end when `append`; the offset written at goes to up_io_last_offset. */
ssize_t up_atomic_write(struct up_file *f, int fd, const void *buf, size_t n, uint64_t off, bool append, bool sync);
int up_atomic_fsync(struct up_file *f, int fd, bool datasync);
int up_atomic_ftruncate(struct up_file *f, int fd, off_t len);
/* Plain allocation is served (a size change); other modes (holes, ranges) detach the route first. */
int up_atomic_fallocate(struct up_file *f, int fd, int mode, off_t off, off_t len);
/* A publish point: commit. 0 or -errno. */
int up_atomic_publish(struct up_file *f);
/* The process's last descriptor of f closes (caller holds up_table_mu): commit, close the engine (the
 * file is cut to its committed size), back to the plain path. */
void up_atomic_detach(struct up_file *f);
/* The kernel is about to read or change the file behind fd (copy_file_range, sendfile, splice, SEEK_DATA,
 * SEEK_HOLE, the program mapping it): commit and detach, so that it sees the exact file. The file stays on
 * the plain path until this process opens it again with no other descriptor open. */
/* The file whose route a write of this thread is in (up_atomic_write), or NULL (review 9, finding 30). */
const struct up_file *up_atomic_held_file(void);
void up_atomic_detach_fd(int fd);
/* Holds off detaches (up_atomic_release lets them go on); before f->mu. */
bool up_atomic_hold(void); /* false: this thread holds it already (a signal handler): nothing to release */
void up_atomic_release(bool held);
/* f->atomic_fd moved to `to` (a program's dup2 onto it, up_aux_vacate): an attached engine uses the new
 * number. Under up_atomic_hold and f->mu. */
void up_atomic_fd_moved(struct up_file *f, int to);
/* Library start-up: recovers the DAXKIT_ATOMIC logs that dead processes left in every root (whether or not
 * this process routes anything), so that every access -- stat, plain reads -- sees the last commit. */
void up_atomic_recover_roots(void);
/* exec, exit: every routed file is committed and detached. */
void up_atomic_detach_all(void);
/* fork (lifecycle.c): under up_table_mu, before the files' locks, detach_mu is taken and every route
 * detached under it; the parent lets it go, the child makes it new. */
void up_atomic_fork_prepare(void);
void up_atomic_fork_parent(void);
void up_atomic_fork_child(void);
/* truncate(path) of a routed file: served by the route. Returns true when handled (*rc: 0 or -1/errno). */
bool up_atomic_truncate_inode(dev_t dev, ino_t ino, off_t len, int *rc);

#endif

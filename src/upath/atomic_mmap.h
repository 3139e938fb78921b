/* DAXKIT_ATOMIC_MMAP: failure-atomic msync for programs that map managed files themselves (atomic_mmap.c).
 * The shim calls these first in mmap/munmap/msync; each returns false when the call is not one of ours. */
#ifndef DK_UPATH_ATOMIC_MMAP_H
#define DK_UPATH_ATOMIC_MMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atomic/uwp.h"

/* true when `path` (absolute) matches one of the DAXKIT_ATOMIC_MMAP globs. */
bool up_atomic_mmap_wanted(const char *path);
/* A writable MAP_SHARED mapping of a matching file: *out is the program's address, or MAP_FAILED with errno set
 * (the file could not be mapped failure-atomically and may hold an unrecovered epoch: EBUSY, ESTALE, EIO...;
 * ENOMEM: past the end of the file's failure-atomic mapping, which a kernel mapping would alias). */
bool up_atomic_mmap(void *hint, size_t len, int prot, int fl, int fd, off_t off, void **out);
bool up_atomic_munmap(void *addr, size_t len, int *rc);
/* mremap of an address inside a file's mapping: shrinking a view in place works (its tail is unmapped);
 * growing or moving one fails with ENOMEM (counted atomic_mmap_refused). *out: the result, errno set. */
bool up_atomic_mremap(void *old, size_t old_len, size_t new_len, int fl, void **out);
/* mprotect of an address range touching a file's mapping: applied to its views (tracking goes on), PROT_NONE
 * refused with EACCES (counted atomic_mmap_refused), pages unmapped from the views ENOMEM. *rc 0 or -1, errno. */
bool up_atomic_mprotect(void *addr, size_t len, int prot, int *rc);
/* MS_SYNC commits (*rc 0, or -1 with errno); MS_ASYNC does nothing. In a signal handler whose thread is inside
 * daxkit's handling of a mapped file: -1 with EDEADLK (counted atomic_mmap_nested_refused). */
bool up_atomic_msync(void *addr, size_t len, int flags, int *rc);
/* One write of the program into a file through a descriptor, bracketed (up_atomic_mmap_write_begin/_end). */
struct up_amap_write {
    void *file;             /* the mapped file (atomic_mmap.c's struct amap_file), pinned */
    struct dk_uwp_write uw; /* the engine's bracket */
};
/* The program is about to write into the file (dev, ino): 1 when the file is mapped (call
 * up_atomic_mmap_write_end after the write; dk_uwp_write_begin), 0 when not (nothing to do; one load when no
 * file is mapped), -EDEADLK when the write must be refused before it is made: a signal handler's write on a
 * thread that is inside daxkit's handling of this mapped file (an msync of it, the copy of a write into its
 * shadow, the table's lock), which the write would wait for (review 11, finding 20; counted
 * atomic_mmap_nested_refused). */
int up_atomic_mmap_write_begin(dev_t dev, ino_t ino, struct up_amap_write *w);
/* Program views of any file (atomic_mmap.c): none -- a write needs no bracket (the look without a call). */
extern unsigned up_amap_live __attribute__((visibility("hidden")));
static inline bool up_atomic_mmap_any(void) { return __atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE) != 0; }
/* The write returned r (its bytes from buf at off): a shadow of the file shows them, the undo copies of the
 * file's own mapping keep them (dk_uwp_write_end). errno is kept. */
void up_atomic_mmap_write_end(struct up_amap_write *w, uint64_t off, const void *buf, ssize_t r);
/* Exit: stores not msync'ed roll back. */
void up_atomic_mmap_release_all(void);

#endif

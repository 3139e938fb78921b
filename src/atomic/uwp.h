/* Failure-atomic msync for programs that store into a mapping (issue 4, part 4), as a standalone component
 * on the atomic engine: the file is mapped MAP_SHARED and write-protected with userfaultfd; the first store
 * to a page in an epoch faults to a handler thread, which saves the page's old bytes in the engine's undo
 * log (durably) and lifts the protection; dk_uwp_msync makes the dirty pages durable, commits the epoch and
 * write-protects again. After a crash, mapping the file (dk_uwp_map or daxkit_atomic_map) rolls back the
 * pages of the unfinished epoch: the file is the state of the last completed dk_uwp_msync.
 *
 * Limits on this kernel (6.x): userfaultfd write-protection works on anonymous, shmem (tmpfs) and
 * hugetlbfs memory only; registering a mapping of an XFS/ext4 (page cache or DAX) file fails, and
 * dk_uwp_map returns -EOPNOTSUPP. docs/atomic.md describes the route for those media. Stores made by other
 * threads while dk_uwp_msync runs belong to the epoch being committed or to the next one, never half. */
#ifndef DK_ATOMIC_UWP_H
#define DK_ATOMIC_UWP_H

#include <stddef.h>

#include "daxkit/atomic.h"

struct dk_uwp;

/* Maps the whole file at `path` for stores by the caller; *addr, *len: the mapping. `o` may be NULL (its
 * policy is ignored: always undo). Returns 0 or -errno: -EOPNOTSUPP no userfaultfd write-protection for
 * this file's memory; -EPERM userfaultfd not permitted (vm.unprivileged_userfaultfd and no privilege). */
int dk_uwp_map(const char *path, const struct daxkit_atomic_options *o, struct dk_uwp **out, void **addr, size_t *len);
/* Commits every store made since the previous msync. Returns 0 or -errno (then the previous state stands;
 * -EIO/-ENOSPC also when a page could not be logged earlier: that epoch is not atomic and is refused). */
int dk_uwp_msync(struct dk_uwp *u);
/* Rolls back unsynced stores, unmaps, frees. */
int dk_uwp_unmap(struct dk_uwp *u);
/* Write faults handled so far (pages logged). */
unsigned long long dk_uwp_faults(const struct dk_uwp *u);

#endif

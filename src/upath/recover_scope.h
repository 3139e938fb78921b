/* Which .daxkit areas a start recovers besides its roots' own (recover_scope.c). */
#ifndef DK_UPATH_RECOVER_SCOPE_H
#define DK_UPATH_RECOVER_SCOPE_H

#include <stdbool.h>

struct up_root;
/* Library start-up: the area of root directory `dir` (another user's that may remove ours: its files are the
 * kernel's; what another user's dead processes left that this one may not replay: the files below are the
 * kernel's -- foreign.c). */
void up_recover_root_area(struct up_root *r);
/* Library start-up, after the roots' own areas: the areas of every ancestor directory of each root on the
 * root's file system (what a start with that ancestor as its root would recover). */
void up_recover_ancestor_areas(void);

/* Before this process first serves the file open on fd (named `path` relative to dirfd, or NULL) below root
 * r: the areas of the directories between r and the file's directory are recovered, each directory once per
 * process. false: not looked at -- a signal handler whose thread is inside that walk (its mutex is the
 * thread's, common/lockmark.h): the kernel serves the file, as one with another user's records waiting. */
bool up_recover_below(const struct up_root *r, int fd, int dirfd, const char *path);
/* A directory was opened by `name` relative to directory descriptor dirfd: when dirfd's areas were looked at
 * (up_dirfd_walked), those of the directories of name are too (once per process, remembered by dirfd's
 * verdict and the name); true when done -- the new descriptor is walked as well (rsync opens each file's
 * directory anew, relative to the transfer's top descriptor, and the file by a plain name in it). */
bool up_recover_dir_chain(int dirfd, const char *name);
/* A directory was opened by the absolute `name`: a root itself (its area was recovered at start-up), or a plain
 * chain of names below one (no empty, "." or ".." part) whose directories' areas are looked at now, by the name
 * (once per process; a symbolic link on the way: false, the kernel's path decides at the first file) -- true
 * when done: the descriptor is walked, and its first file needs no readlink of it (tar -C DIR; session 29). */
bool up_recover_dir_named(const char *name);
/* fork's child: its lock made anew (another thread of the parent may have held it at the fork). */
void up_recover_scope_after_fork_child(void);

#endif

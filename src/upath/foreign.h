/* Directories whose area holds what another user's dead process left, which this process may not replay:
 * the files below them are served by the kernel (foreign.c). */
#ifndef DK_UPATH_FOREIGN_H
#define DK_UPATH_FOREIGN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct up_recover_report;
/* After the area of directory `dir` was recovered (rep): when another user's dead process left files there
 * (rep->foreign_left), dir joins the set (said at its first file served by the kernel). */
void up_foreign_note(const char *dir, const struct up_recover_report *rep);
/* The area of root directory `dir` is another user's (`owner`) who may remove this user's files there
 * (common/area.h dk_area_trusted): dir joins the set. */
void up_foreign_note_untrusted(const char *dir, uint32_t owner);
/* At a file's first adoption (its areas were looked at): true when the file (open on fd, stat st) is below a
 * directory of the set -- the kernel serves it, counted. One load while the set is empty. */
bool up_foreign_covers(int fd, const struct stat *st);
/* Some directory's records wait for another user (up_foreign_covers may answer true). */
bool up_foreign_any(void);
/* fork's child: the set's lock made anew (another thread of the parent may have held it at the fork). */
void up_foreign_after_fork_child(void);

#endif

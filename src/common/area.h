/* The library's hidden area of a directory (<dir>/.daxkit): staging pool, published-size records, strict
 * mode's operation log, the atomic engine's journals. */
#ifndef DK_COMMON_AREA_H
#define DK_COMMON_AREA_H

#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes the area `name` in the directory parent_fd when missing, with a mode that lets every user who may
 * write the directory use it: 0700 where only the owner writes, 01770 (the directory's group) where its
 * group writes, 01777 where others write -- as /tmp: each file in it is 0600 and its owner's, and the sticky
 * bit keeps anyone from removing another user's (review 11, finding 18: the first user's 0700 area made every
 * other user's strict write fail with EIO). An area of ours made 0700 in a shared directory by an earlier
 * version is opened up the same way. 0, or -errno of the mkdir (EEXIST is success). errno is not kept. */
int dk_area_mkdir(int parent_fd, const char *name);

/* Recovery touches the files this user owns only: another user's dead process is recovered by that user's
 * next daxkit process (a log replayed by root would write with root's rights what another user wrote). */
static inline bool dk_area_file_ours(const struct stat *st) { return st->st_uid == geteuid(); }

#endif

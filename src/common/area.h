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
 * version is opened up the same way. 0, -EPERM when the area there is one this user must not keep files in
 * (dk_area_trusted), or -errno of the mkdir (EEXIST is success). errno is not kept. */
int dk_area_mkdir(int parent_fd, const char *name);

/* Whether an existing area (stat a) of the directory (stat parent) keeps this user's files safe: it is
 * ours, root's or the directory's owner's -- the owner of a directory may rename or remove any entry of it,
 * sticky or not, and the directory's owner (and root) can do that to the area itself anyway -- and no one
 * else may remove entries (not writable by group or others, or sticky). Review 12, finding 11: a 1777
 * directory's area made by its first user let that user rename every other user's strict log away. */
bool dk_area_trusted(const struct stat *a, const struct stat *parent);

/* Recovery touches the files this user owns (another user's dead process is recovered by that user's next
 * daxkit process), and a privileged process (dk_area_privileged) every user's. */
static inline bool dk_area_file_ours(const struct stat *st) { return st->st_uid == geteuid(); }

/* Whether this process may recover other users' dead processes: it may open their files (CAP_DAC_OVERRIDE)
 * and remove them from a sticky area (CAP_FOWNER) -- root. Their records are replayed only onto files their
 * user may write (dk_area_user_may_write): the bytes are ones that user's writes had acknowledged. */
bool dk_area_privileged(void);
static inline bool dk_area_may_recover(const struct stat *st) { return dk_area_file_ours(st) || dk_area_privileged(); }

/* Whether the user who made the area file `by` (a dead process's operation log or size records; stat) may
 * write the open file fd (stat st), for a privileged replay of that user's records -- replayed with more
 * rights than the user had, a log the user wrote would be a write anywhere (review 12, finding 12). The
 * file is that user's and owner-writable, or writable by others, or group-writable with the group `by` was
 * made with; a file with an access ACL is refused (its entries are not read here). */
bool dk_area_user_may_write(int fd, const struct stat *st, const struct stat *by);

/* For files of other users in an area this process cannot open: held[i] tells whether some process holds a
 * lock on file (dev[i], ino[i]) -- a live owner holds its log's and its lock file's flock for life --
 * read from /proc/locks, which every user may read (it omits locks of processes in another pid namespace:
 * their files look left behind -- the safe side). false when /proc/locks cannot be read. */
bool dk_area_locked(const dev_t *dev, const ino_t *ino, int n, bool *held);

#endif

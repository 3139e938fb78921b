/* Internal interface between the read/write path (io.c), publishing (publish.c) and the rest. */
#ifndef DK_UPATH_IO_H
#define DK_UPATH_IO_H

#include <fcntl.h>
#include <stdlib.h>

#include "upath/internal.h"

void up_io_overwrite(struct up_file *f, uint64_t off, const char *buf, size_t n);
void up_io_copy_out(const struct up_file *f, uint64_t off, char *buf, size_t n);
void up_io_persist_range(struct up_file *f, uint64_t off, size_t n);
enum { UP_IO_ASYNC = 0, UP_IO_SYNC = 1, UP_IO_LOGGED = 2 }; /* up_io_write's `sync` (see io.c) */
ssize_t up_io_write(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append, int sync);
/* An overwrite of published bytes by pwrite on a page-cache medium: 1 done, 0 not applicable, -errno. */
int up_io_overwrite_by_pwrite(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off);
/* An overwrite of published, mapped bytes stored in place (written back on a flush medium, no fence):
 * false when [off, off+n) is not all of that kind (nothing stored). */
bool up_io_overwrite_mapped(struct up_file *f, const char *buf, size_t n, uint64_t off);
/* Delta records (strict.c, docs/strict.md "Delta records"): the segments in which the overwrite buf of
 * [off, off+n) differs from the file's bytes, read through the mapping in a guard section with the checks of
 * an in-place overwrite (dk_delta_encode: encoded length, 0 nothing differs), or -1: not in place (mapped,
 * published) or more than `cap` bytes of segments. */
ssize_t up_io_delta_compare(struct up_file *f, const char *buf, size_t n, uint64_t off, unsigned char *out, size_t cap);
/* Stores the segments of such a delta of the write [off, off+n) in place (written back on a flush medium, no
 * fence): false when the range is not all in place any more (nothing stored). */
bool up_io_delta_apply(struct up_file *f, uint64_t off, size_t n, const unsigned char *d, size_t len);
/* [off, off+n) is published, within the size and mapped: an overwrite there is a store (racy hint). */
bool up_io_in_place(const struct up_file *f, uint64_t off, size_t n);
ssize_t up_io_read(struct up_file *f, int fd, char *buf, size_t n, uint64_t off);
/* The file whose mutex this thread is taking, holding or has just let go of for a read or a write, or NULL:
 * a signal handler that interrupted such a call must not wait for that mutex (_exit/exit/exec/fork in a
 * handler: review 9, finding 30). */
const struct up_file *up_io_held_file(void);
/* The kernel's rw_verify_area: a read or write whose end, offset + n, passes the largest file offset
 * (INT64_MAX) is refused with EINVAL before anything happens -- also an O_APPEND write, by the descriptor's
 * offset (review 9, finding 23: a write at INT64_MAX succeeded and left the offset at 2^63). off <= INT64_MAX. */
static inline bool up_end_overflows(uint64_t off, size_t n) { return n > (uint64_t)INT64_MAX - off; }
/* Offset the last up_io_write of this thread wrote at (appends choose it). */
extern __thread uint64_t up_io_last_offset;
/* Strict mode (UP_IO_LOGGED): cleared by the caller before up_io_write, set when the write failed (-1) yet left
 * something behind -- its head stored in place, or its append staged where it could not be taken out (another
 * append followed it) -- so that its record must stay (strict.c). */
extern __thread bool up_io_left_trace;
/* The file's logical size when this thread's last write_locked began (under f->mu). */
extern __thread uint64_t up_io_append_size0;
/* Strict mode: an append (UP_IO_LOGGED) whose publish failed (a full medium). When none of it reached the
 * file, it began at or past the end, and no append followed it, the logical size goes back and its staged
 * bytes go: true (nothing is left). Else false, and nothing changes. */
bool up_logged_write_failed(struct up_file *f, uint64_t off, size_t n);
/* A file past UP_MAP_MAX_BYTES becomes the kernel's (upath.c): strict checkpoint, publish, kernel_only.
 * 0/-errno. */
int up_kernel_takes_over(struct up_file *f, int fd);
/* This thread is taking, holding or letting go of f->mu (a signal handler interrupted it there): io.c's
 * sections (mu_file) or any other (its mark: a close's publish). */
static inline bool up_io_mu_held(const struct up_file *f) { return up_io_held_file() == f || dk_mu_mine(&f->mu); }
/* A slot of a kernel_only file: its offset handed to the kernel, once (under the slot's offset lock). */
void up_io_offset_to_kernel(struct up_slot *s, int fd);

/* publish.c */
/* Moves appends into the file: relink staged slots, or set the size (extend). Under f->mu. 0/-errno.
 * *moved (when not NULL, set on success): how far past this process's end the kernel's end was found when
 * appends went in through an O_APPEND descriptor (another process appended meanwhile: this process's appends
 * lie that much further on), else 0. */
int up_publish_locked_moved(struct up_file *f, int fd, uint64_t *moved);
static inline int up_publish_locked(struct up_file *f, int fd) { return up_publish_locked_moved(f, fd, NULL); }
/* Appends past DAXKIT_STAGE_SPILL_BYTES since the last publish point: what is staged is published under a
 * size record kept until the next one, which still rolls them back after a crash. Under f->mu. 0: the
 * caller has the kernel write up to `end`; 1: stage as before; -errno. */
int up_spill_locked(struct up_file *f, int fd, uint64_t end);
/* Publishes and makes the file durable as the medium requires (fsync semantics). 0/-errno. *moved: as
 * up_publish_locked_moved's (NULL: not wanted). */
int up_sync_file_moved(struct up_file *f, int fd, bool datasync, uint64_t *moved);
static inline int up_sync_file(struct up_file *f, int fd, bool datasync) { return up_sync_file_moved(f, fd, datasync, NULL); }
/* A write of [off, off+n) whose publish-and-sync (sync mode, O_SYNC/O_DSYNC) failed with err: the answer the
 * kernel's write would give for what is in the file now -- the count of the write's bytes that reached the
 * file (a relink cut short by a filling medium; made durable here), or err when none did or when all did
 * (the sync itself failed). The bytes that did not reach the file are dropped from the logical size, so a
 * failed write leaves nothing behind that a later publish would add (review 11, finding 8: 61,440 bytes of
 * a write answered -1 ENOSPC were in the file, and a retry would have duplicated them). Without f->mu. */
ssize_t up_sync_write_failed(struct up_file *f, int fd, uint64_t off, size_t n, int err);
/* Blocks were cloned into f since this was last called: lets the file system drop the file's reflink mark
 * when nothing in it is shared any more (best effort; keeps errno). */
void up_drop_reflink_mark(struct up_file *f, int fd);
/* fsync of an extend-strategy file keeps its extension (FLEX): DAXKIT_EXTEND_SYNC=keep, or a file auto moved
 * to extend because it is fsynced after every single append (DAXKIT_AUTO_KEEP_AFTER). */
bool up_keeps_on_sync(const struct up_file *f);
/* At EOF: when this process has nothing unpublished, take the kernel's size (another process may have
 * appended). Returns true when the size changed. */
bool up_refresh_if_idle(struct up_file *f, int fd);
/* The same, and with appends staged (posix mode) a kernel size found past the end this process last saw
 * -- another process's published growth -- publishes them first and takes it (up_publish_past_growth).
 * One fstat. For the calls that show the end or where appends went: SEEK_END, SEEK_CUR of an O_APPEND
 * descriptor with O_APPEND appends staged, reads past the end or into staged O_APPEND appends. */
bool up_refresh_size(struct up_file *f, int fd);
/* The kernel's size ns was read (the program's fstat): past the end this process last saw with appends
 * staged, they are published and ns (or the end past them) becomes the size. True when it published: the
 * size to report is then the file's (up_file_size), not ns. */
bool up_publish_past_growth(struct up_file *f, int fd, uint64_t ns);
/* An append at the end of an O_APPEND log synced per record, published at the write (publish.c): the count
 * written, -errno, or 0 when not taken (stage it). Under f->mu. */
ssize_t up_write_through_locked(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off);
/* The look an fsync's O_APPEND publish put off (publish.c put_end_off), if owed, made from the kernel's size ns
 * just read (a reopen's): this process's O_APPEND descriptor follows where its records went. Under f->mu. */
void up_settle_end_locked(struct up_file *f, int fd, uint64_t ns);

#endif

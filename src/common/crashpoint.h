/* Named crash points for process-crash testing (test builds only).
 *
 *   DK_CRASH_POINT("oplog.append.before_fence");
 *
 * compiles to nothing unless DAXKIT_TEST_BUILD is defined. In a test build it costs one load and one
 * predictable branch while crash testing is off. The test-only variable DAXKIT_TEST_CRASH (read once with
 * getenv when the library loads; the environment is never changed) turns it on:
 *
 *   DAXKIT_TEST_CRASH=SITE:N          the N-th time (1-based, counted over all threads) the process reaches
 *                                     SITE it kills itself with SIGKILL: no cleanup, no atexit, no flush.
 *                                     "crashpoint: SITE#N" is written to stderr just before.
 *   DAXKIT_TEST_CRASH=count:/path     counts every site's occurrences; at exit appends "SITE N" lines to
 *                                     /path (O_APPEND, one write, so forked processes may share a file).
 *   DAXKIT_TEST_CRASH=raise:SIGNO:SITE:N  the N-th time, raises signal SIGNO on that thread instead: the
 *                                     program's handler runs inside the site's section (a handler that
 *                                     interrupts the library holding a lock, on cue).
 *   several of those two, separated by commas (up to 4): each site counted and acted on by itself -- a
 *                                     second cue later in the call the first handler interrupted.
 *
 * tests/crash/drive.sh uses both: one counting run enumerates site x occurrence, then one run per pair.
 * Site names: "<module>.<operation>.<where>", literal strings, at most DK_CRASH_SITE_BYTES_MAX bytes. */
#ifndef DK_COMMON_CRASHPOINT_H
#define DK_COMMON_CRASHPOINT_H

#define DK_CRASH_SITE_BYTES_MAX 96
#define DK_CRASH_SITES_MAX 256 /* distinct sites counted; more are reported as "crashpoint.overflow" */

#ifdef DAXKIT_TEST_BUILD
extern int dk_crashpoint_active; /* nonzero when DAXKIT_TEST_CRASH (or dk_crashpoint_configure) is set */
void dk_crashpoint_hit(const char *site);
#define DK_CRASH_POINT(site)                                                          \
    do {                                                                              \
        if (__builtin_expect(__atomic_load_n(&dk_crashpoint_active, __ATOMIC_RELAXED), 0)) \
            dk_crashpoint_hit(site);                                                  \
    } while (0)
/* Sets the mode from a spec string of the DAXKIT_TEST_CRASH syntax (NULL or "" turns it off) for tests that
 * drive crash points in-process. Returns 0 or -EINVAL. Not thread-safe against concurrent hits. */
int dk_crashpoint_configure(const char *spec);
/* In-process hook mode (replaces any other mode; NULL turns it off): `hook(site)` runs at every crash point
 * reached, on the thread that reached it -- for tests that force an interleaving (e.g. make another thread
 * finish a record while this one is between its stores and its fence). Not thread-safe against concurrent hits. */
void dk_crashpoint_set_hook(void (*hook)(const char *site));
/* Count mode: appends the counts now (also done at exit). Returns 0 or -errno. */
int dk_crashpoint_write_counts(void);
/* Start-up cues. The library's constructor (shim/init.c: up_init) runs before DAXKIT_TEST_CRASH is read (this
 * file's constructor has the default priority), so no site of the start-up can be cued by it. The test-only
 * variable DAXKIT_TEST_CRASH_START (the same syntax) is in force from DK_CRASH_START(1) to DK_CRASH_START(0),
 * around up_init, and only then: DAXKIT_TEST_CRASH's occurrences still count from the end of the start-up
 * (count:/path writes the start-up's counts at its end).
 * (tests/shim/shim_adopt_scan_window.c stops a process inside its scan of inherited descriptors.) */
void dk_crashpoint_start(int begin);
#define DK_CRASH_START(begin) dk_crashpoint_start(begin)
#else
#define DK_CRASH_POINT(site) ((void)0)
#define DK_CRASH_START(begin) ((void)0)
#endif

#endif

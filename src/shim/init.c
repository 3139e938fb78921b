/* Library constructor and destructor, and the public daxkit_* entry points. */
#include <stdlib.h>

#include "shim/shim.h"

/* quick_exit runs the at_quick_exit handlers, then glibc's internal _exit: no destructor, no call this
 * library sees, so the appends made since the last publish point were lost (review 11, finding 5). Our
 * handler is registered before main, so it runs after every handler the program registers (they may
 * still write). */
static void dk_shim_quick_exit(void) { up_fini(); }

__attribute__((constructor(101))) static void dk_shim_init(void) {
    DK_CRASH_START(1); /* test builds: DAXKIT_TEST_CRASH_START's cues, for the start-up only (crashpoint.h) */
    up_init();
    DK_CRASH_START(0);
    at_quick_exit(dk_shim_quick_exit);
}
__attribute__((destructor(101))) static void dk_shim_fini(void) { up_fini(); }

DK_EXPORT const char *daxkit_version(void) { return DAXKIT_VERSION; }

#ifdef DAXKIT_TEST_BUILD
/* Test hook (tests/shim/shim_test.h, st_stats): this process's stats file made now, as at its first managed
 * file -- for a test that reads its own counters before it opens one. 1 when the file exists. */
DK_EXPORT int daxkit_test_stats_now(void) {
    if (up_enabled) dk_stats_publish();
    return dk_stats_mapped();
}
#endif

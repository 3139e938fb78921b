/* The atomic engine's crash states under the explorer (tests/atomic/atomic_explore.c, uwp_explore.c): each
 * state is a memory image -- the file's bytes, then its log -- recovered as a restart would, then compared
 * with what the workload had acknowledged. Header-only, as the tests that use it. */
#ifndef DK_TESTS_EXPLORE_RECOVER_H
#define DK_TESTS_EXPLORE_RECOVER_H

#include <stdio.h>
#include <string.h>

#include "atomic/alog.h"

/* Copies the state's image (data_bytes of file, then log_bytes of log) into scratch and recovers it there.
 * 0: the engine stays open on scratch in *f (the caller reads what it needs, then alog_test_close_memory);
 * 1: recovery failed, said in why, nothing left open -- the checker's "this state is wrong". */
static inline int explore_recover_image(const void *image, size_t bytes, char *scratch, uint64_t data_bytes,
                                        uint64_t log_bytes, const struct daxkit_atomic_options *o, struct alog_file **f,
                                        char *why, size_t why_bytes) {
    memcpy(scratch, image, bytes);
    int rc = alog_test_open_memory(scratch, data_bytes, scratch + data_bytes, log_bytes, false, o, f);
    if (!rc) {
        rc = alog_recover(*f, 1, false);
        if (rc) alog_test_close_memory(*f);
    }
    if (!rc) return 0;
    snprintf(why, why_bytes, "recovery failed: %d", rc);
    return 1;
}

#endif

/* Description: the crash-state explorer's model on a two-line commit protocol (data line, then a flag line
 * that says the data is valid), small enough to count its states by hand:
 *   correct        store data, fence, store flag, fence, mark    -> passes; exactly 5 states (2 + 2 + 1)
 *   no-fence       store data, store flag, fence, mark           -> reported (flag on media without data)
 *   plain-flag     data as above; flag by a plain store + dk_flush_range, mark, no fence -> reported (acked
 *                  flag not on media)
 *   other-thread   data written back by thread 1, fence by thread 2 only, then flag, fence -> reported (a
 *                  fence orders only its own thread's write-backs)
 *   unflushed      the flag is a plain store never written back; the explorer treats a line it was never
 *                  told about as never reaching media -> reported (acked flag not on media)
 * This is also the smallest example of writing a workload and a checker (docs/testing-crash.md).
 * Exit 0 when every expectation holds, 1 otherwise. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explorer.h"
#include "persist/persist.h"

#define DATA_WORD 0x1122334455667788ull
#define FLAG_WORD 0xf1a9f1a9f1a9f1a9ull

static _Alignas(64) unsigned char region[2 * 64]; /* line 0: data, line 1: flag */

static int check(const void *image, size_t bytes, const uint64_t *marks, size_t n, char *why, size_t why_bytes,
                 void *ctx) {
    uint64_t data, flag;
    memcpy(&data, image, 8);
    memcpy(&flag, (const char *)image + 64, 8);
    if (flag == FLAG_WORD && data != DATA_WORD) return snprintf(why, why_bytes, "flag set, data missing");
    if (n > 0 && flag != FLAG_WORD) return snprintf(why, why_bytes, "acknowledged, flag missing");
    return 0;
}

static void store_word(int line, uint64_t v) { dk_store_persistent(region + line * 64, &v, 8, 256); }

static void *flush_data_only(void *unused) {
    uint64_t v = DATA_WORD;
    memcpy(region, &v, 8);
    dk_flush_range(region, 8); /* no fence on this thread */
    return NULL;
}

static void workload(const char *name) {
    if (!strcmp(name, "correct")) {
        store_word(0, DATA_WORD), dk_fence(), store_word(1, FLAG_WORD), dk_fence();
    } else if (!strcmp(name, "no-fence")) {
        store_word(0, DATA_WORD), store_word(1, FLAG_WORD), dk_fence();
    } else if (!strcmp(name, "plain-flag")) {
        store_word(0, DATA_WORD), dk_fence();
        uint64_t v = FLAG_WORD;
        memcpy(region + 64, &v, 8);
        dk_flush_range(region + 64, 8);
    } else if (!strcmp(name, "other-thread")) {
        pthread_t t;
        pthread_create(&t, NULL, flush_data_only, NULL);
        pthread_join(t, NULL);
        dk_fence(); /* this thread's fence: does not complete thread 1's write-back */
        store_word(1, FLAG_WORD), dk_fence();
    } else if (!strcmp(name, "unflushed")) {
        store_word(0, DATA_WORD), dk_fence();
        uint64_t v = FLAG_WORD;
        memcpy(region + 64, &v, 8);
    }
    dk_explorer_mark(1);
}

static int run(const char *name, int expect_failure, uint64_t expect_states) {
    memset(region, 0, sizeof region);
    dk_explorer_begin(region, sizeof region);
    workload(name);
    dk_explorer_end();
    struct dk_explorer_options o = {.seed = 1};
    struct dk_explorer_result r;
    int rc = dk_explorer_run(&o, check, NULL, &r);
    int ok = rc == expect_failure && (!expect_states || r.states == expect_states);
    printf("%-13s %lu crash points, %lu states, %lu failing%s%s -> %s\n", name, (unsigned long)r.crash_points,
           (unsigned long)r.states, (unsigned long)r.failures, rc ? ": " : "", rc ? r.first_failure : "",
           ok ? "as expected" : "FAIL");
    dk_explorer_free();
    return !ok;
}

int main(void) {
    int bad = 0;
    bad |= run("correct", 0, 5);
    bad |= run("no-fence", 1, 0);
    bad |= run("plain-flag", 1, 0);
    bad |= run("other-thread", 1, 0);
    bad |= run("unflushed", 1, 0);
    return bad;
}

/* Description: recovery's invalidation order (a19d796; review 10, finding 13), deterministically. A log
 * holds two committed redo entries of one block: the newest ('B', epoch 2) in slot 0, the one it superseded
 * ('A', epoch 1) in slot 1 -- the order the engine produces when the newest entry gets a lower slot
 * (slot_take's hint, a freed slot), written here directly in the persistent layout (alog_layout.h) so that
 * every run has it. Recovery applies the newest only ('B'), then empties the log; a crash is simulated at
 * each of its invalidation crash points in turn (in-process hook, longjmp out: the memory engine persists
 * every store as on dax), and recovery runs again: the block must hold 'B' every time. With the slot-order
 * invalidation before a19d796, a crash after slot 0's invalidation left only the superseded entry valid and
 * the second recovery put 'A' over 'B'. Usage: atomic_recover_order */
#include <setjmp.h>

#include "atomic/alog.h"
#include "atomic_test.h"
#include "common/crashpoint.h"

#define DATA_BYTES (64u << 10)
#define BLOCK 4096u

static jmp_buf crash_env;
static int hits, crash_at;

static void hook(const char *site) {
    if (strncmp(site, "atomic.recover.before_invalidate", 32) != 0) return;
    if (++hits == crash_at) longjmp(crash_env, 1);
}

static void put_entry(char *log, uint64_t slot, uint64_t epoch, uint64_t dest, uint64_t log_off, char c) {
    struct alog_phdr *h = (struct alog_phdr *)log;
    memset(log + h->data_off + log_off, c, BLOCK);
    struct alog_pent *p = (struct alog_pent *)(log + ALOG_HEADER_BYTES) + slot;
    uint64_t word = ALOG_WORD_VALID | ALOG_WORD_REDO | epoch << ALOG_WORD_EPOCH_SHIFT;
    *p = (struct alog_pent){.dest_off = dest, .log_off = log_off, .shift = 12, .extent = alog_extent(0, BLOCK),
                            .check = alog_pent_check(word, dest, log_off, 12), .word = word};
}

/* The crashed writer's state: file 'O'; block 1 committed twice, newest in the lower slot. */
static void forge(char *data, char *log, uint64_t log_bytes, const struct daxkit_atomic_options *o) {
    memset(data, 'O', DATA_BYTES);
    memset(log, 0, log_bytes);
    struct alog_file *f;
    AT_OK(alog_test_open_memory(data, DATA_BYTES, log, log_bytes, true, o, &f)); /* formats the log */
    alog_test_close_memory(f);
    put_entry(log, 1, 1, BLOCK, 0, 'A');         /* superseded */
    put_entry(log, 0, 2, BLOCK, BLOCK, 'B');     /* the newest, lower slot */
    ((struct alog_phdr *)log)->epoch = 3;        /* both committed */
}

static int recover(char *data, char *log, uint64_t log_bytes, const struct daxkit_atomic_options *o) {
    struct alog_file *f;
    AT_OK(alog_test_open_memory(data, DATA_BYTES, log, log_bytes, false, o, &f));
    int rc = alog_recover(f, 1, false);
    alog_test_close_memory(f);
    return rc;
}

static char block_state(const char *data) {
    for (unsigned i = 1; i < BLOCK; i++)
        if (data[BLOCK + i] != data[BLOCK]) return '?';
    return data[BLOCK];
}

int main(void) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_REDO, 0);
    o.log_bytes = ALOG_CHUNK_BYTES;
    uint64_t log_bytes = alog_test_log_bytes(o.log_bytes);
    char *data = aligned_alloc(4096, DATA_BYTES), *log = aligned_alloc(4096, log_bytes);
    AT_CHECK(data && log, "memory");

    forge(data, log, log_bytes, &o);
    hits = 0, crash_at = 0;
    dk_crashpoint_set_hook(hook);
    AT_OK(recover(data, log, log_bytes, &o));
    int points = hits;
    AT_CHECK(block_state(data) == 'B', "recovery without a crash gives '%c' (want 'B', the newest commit)", block_state(data));
    AT_CHECK(points >= 2, "recovery reached %d invalidation crash points (want 2: crash points compiled out?)", points);

    for (crash_at = 1; crash_at <= points; crash_at++) {
        forge(data, log, log_bytes, &o);
        hits = 0;
        volatile bool crashed = false;
        if (setjmp(crash_env) == 0) {
            recover(data, log, log_bytes, &o);
        } else {
            crashed = true; /* the engine of the interrupted recovery is leaked, as a crash leaves it */
        }
        AT_CHECK(crashed, "no crash at invalidation point %d of %d", crash_at, points);
        int saved = crash_at;
        crash_at = 0;
        AT_OK(recover(data, log, log_bytes, &o)); /* the next start's recovery */
        AT_CHECK(block_state(data) == 'B',
                 "a crash at recovery's invalidation point %d of %d, then recovery: the block holds '%c' (want 'B'): "
                 "the superseded entry outlived the newest one", saved, points, block_state(data));
        crash_at = saved;
        printf("ok: crash at invalidation point %d of %d: recovered 'B'\n", saved, points);
    }
    dk_crashpoint_set_hook(NULL);
    printf("PASS\n");
    return 0;
}

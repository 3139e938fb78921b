/* Description: the logging cost is counted, not estimated: through the persist trace hooks, one one-line
 * append (the common strict-mode operation) stores exactly one 64-byte line (non-temporal) and issues exactly
 * one fence and no other write-back; a record with N data bytes stores 1 + ceil(N/48) lines and still one
 * fence; a reset stores one header line and one fence. Exit 0 pass, 1 fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oplog/oplog.h"
#include "persist/persist.h"

static unsigned long stores, store_bytes, nt_stores, flushes, fences;
static void on_store(const void *p, size_t n, int nt) { stores++, store_bytes += n, nt_stores += nt != 0; }
static void on_flush(const void *p, size_t n) { flushes++; }
static void on_fence(void) { fences++; }
static const struct dk_persist_trace counter = {on_store, on_flush, on_fence};
static unsigned long failures;

static void expect(const char *what, unsigned long ops, unsigned long lines_per_op) {
    int ok = stores == ops * lines_per_op && store_bytes == ops * lines_per_op * 64 && nt_stores == stores &&
             flushes == 0 && fences == ops;
    printf("%-28s %6lu ops: %lu line stores (%lu B, %lu NT), %lu write-backs, %lu fences -> %s\n", what, ops, stores,
           store_bytes, nt_stores, flushes, fences, ok ? "ok" : "FAIL");
    failures += !ok;
    stores = store_bytes = nt_stores = flushes = fences = 0;
}

int main(void) {
    char dir[] = "/dev/shm/dk-oplog-cost.XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    struct dk_oplog *log;
    if (dk_oplog_open(dir, "cost", 1u << 20, &log) != 0) return printf("FAIL: open\n"), 1;
    struct dk_oplog_op op = {.dev = 1, .ino = 2, .length = 4096};
    unsigned char data[300];
    memset(data, 7, sizeof data);
    dk_persist_set_trace(&counter);
    for (int i = 0; i < 1000; i++) dk_oplog_append(log, DK_OPLOG_WRITE_STAGED, &op, NULL, 0, NULL);
    expect("one-line append", 1000, 1);
    for (int i = 0; i < 100; i++) dk_oplog_append(log, DK_OPLOG_WRITE_INLINE, &op, data, 64, NULL);
    expect("64 B inline write", 100, 3);
    for (int i = 0; i < 100; i++) dk_oplog_append(log, DK_OPLOG_WRITE_INLINE, &op, data, 300, NULL);
    expect("300 B inline write", 100, 8);
    dk_oplog_reset(log);
    expect("reset", 1, 1);
    dk_persist_set_trace(NULL);
    dk_oplog_close(log, 1);
    rmdir(dir);
    return failures ? 1 : 0;
}

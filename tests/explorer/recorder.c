/* Recording the persistence trace of one region (see explorer.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "explorer.h"
#include "persist/persist.h"
#include "trace.h"

struct trace explorer_trace;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t region_lo, region_hi;
static unsigned threads_seen;
static __thread unsigned thread_number; /* 1-based; 0: not yet numbered */

static int grow(void **p, size_t *cap, size_t count, size_t elem) {
    if (count < *cap) return 0;
    size_t cap2 = *cap ? *cap * 2 : 4096;
    void *q = realloc(*p, cap2 * elem);
    if (!q) return -ENOMEM;
    *p = q, *cap = cap2;
    return 0;
}

static unsigned my_thread(void) {
    if (thread_number == 0) thread_number = ++threads_seen; /* under mu */
    return (thread_number - 1) % EXPLORER_THREADS_MAX;
}

static void push(uint8_t kind, uint32_t line, uint64_t value) {
    struct trace *t = &explorer_trace;
    if (t->error || grow((void **)&t->events, &t->events_cap, t->events_count, sizeof *t->events)) {
        t->error = -ENOMEM;
        return;
    }
    t->events[t->events_count++] = (struct trace_event){kind, (uint8_t)my_thread(), line, value};
}

/* One event per region line overlapping [p, p+n), with the line's contents now. */
static void push_lines(uint8_t kind, const void *p, size_t n) {
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    if (hi <= region_lo || lo >= region_hi || n == 0) return;
    if (lo < region_lo) lo = region_lo;
    if (hi > region_hi) hi = region_hi;
    struct trace *t = &explorer_trace;
    for (uintptr_t line = (lo - region_lo) / EXPLORER_LINE_BYTES; region_lo + line * EXPLORER_LINE_BYTES < hi;
         line++) {
        if (t->error || grow((void **)&t->contents, &t->contents_cap, t->contents_count, EXPLORER_LINE_BYTES)) {
            t->error = -ENOMEM;
            return;
        }
        memcpy(t->contents + t->contents_count * EXPLORER_LINE_BYTES,
               (const void *)(region_lo + line * EXPLORER_LINE_BYTES), EXPLORER_LINE_BYTES);
        push(kind, (uint32_t)line, t->contents_count++);
    }
}

static void on_store(const void *dst, size_t n, int non_temporal) {
    pthread_mutex_lock(&mu);
    push_lines(non_temporal ? TRACE_STORE_NT : TRACE_STORE, dst, n);
    pthread_mutex_unlock(&mu);
}

static void on_flush(const void *p, size_t n) {
    pthread_mutex_lock(&mu);
    push_lines(TRACE_FLUSH, p, n);
    pthread_mutex_unlock(&mu);
}

static void on_fence(void) {
    pthread_mutex_lock(&mu);
    push(TRACE_FENCE, 0, 0);
    pthread_mutex_unlock(&mu);
}

static const struct dk_persist_trace hooks = {on_store, on_flush, on_fence};

void dk_explorer_free(void) {
    struct trace *t = &explorer_trace;
    free(t->image0), free(t->events), free(t->contents);
    memset(t, 0, sizeof *t);
}

int dk_explorer_begin(void *base, size_t bytes) {
    if (((uintptr_t)base % EXPLORER_LINE_BYTES) || bytes < EXPLORER_LINE_BYTES) return -EINVAL;
    dk_explorer_free();
    struct trace *t = &explorer_trace;
    t->lines = bytes / EXPLORER_LINE_BYTES;
    t->image0 = malloc(t->lines * EXPLORER_LINE_BYTES);
    if (!t->image0) return -ENOMEM;
    memcpy(t->image0, base, t->lines * EXPLORER_LINE_BYTES);
    region_lo = (uintptr_t)base;
    region_hi = region_lo + t->lines * EXPLORER_LINE_BYTES;
    dk_persist_set_trace(&hooks);
    return 0;
}

void dk_explorer_mark(uint64_t value) {
    pthread_mutex_lock(&mu);
    push(TRACE_MARK, 0, value);
    pthread_mutex_unlock(&mu);
}

void dk_explorer_end(void) { dk_persist_set_trace(NULL); }

/* Recording the persistence trace of the explored regions (see explorer.h). Lines are numbered through
 * the regions in the order given: the image is their concatenation. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "explorer.h"
#include "persist/persist.h"
#include "trace.h"

struct trace explorer_trace;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define REGIONS_MAX 8
static struct {
    uintptr_t lo, hi;
    size_t first_line; /* the region's first line in the concatenated image */
} regions[REGIONS_MAX];
static size_t regions_n;
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

/* One event per line of region r overlapping [p, p+n), with the line's contents now. */
static void push_region_lines(size_t r, uint8_t kind, uintptr_t lo, uintptr_t hi) {
    uintptr_t rlo = regions[r].lo, rhi = regions[r].hi;
    if (hi <= rlo || lo >= rhi) return;
    if (lo < rlo) lo = rlo;
    if (hi > rhi) hi = rhi;
    struct trace *t = &explorer_trace;
    for (uintptr_t line = (lo - rlo) / EXPLORER_LINE_BYTES; rlo + line * EXPLORER_LINE_BYTES < hi; line++) {
        if (t->error || grow((void **)&t->contents, &t->contents_cap, t->contents_count, EXPLORER_LINE_BYTES)) {
            t->error = -ENOMEM;
            return;
        }
        memcpy(t->contents + t->contents_count * EXPLORER_LINE_BYTES, (const void *)(rlo + line * EXPLORER_LINE_BYTES),
               EXPLORER_LINE_BYTES);
        push(kind, (uint32_t)(regions[r].first_line + line), t->contents_count++);
    }
}

static void push_lines(uint8_t kind, const void *p, size_t n) {
    if (n == 0) return;
    for (size_t r = 0; r < regions_n; r++) push_region_lines(r, kind, (uintptr_t)p, (uintptr_t)p + n);
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

int dk_explorer_begin_regions(const struct dk_explorer_region *r, size_t n) {
    if (n == 0 || n > REGIONS_MAX) return -EINVAL;
    size_t lines = 0;
    for (size_t i = 0; i < n; i++) {
        if (((uintptr_t)r[i].base % EXPLORER_LINE_BYTES) || r[i].bytes < EXPLORER_LINE_BYTES) return -EINVAL;
        lines += r[i].bytes / EXPLORER_LINE_BYTES;
    }
    dk_explorer_free();
    struct trace *t = &explorer_trace;
    t->lines = lines;
    t->image0 = malloc(t->lines * EXPLORER_LINE_BYTES);
    if (!t->image0) return -ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t rl = r[i].bytes / EXPLORER_LINE_BYTES;
        memcpy(t->image0 + at * EXPLORER_LINE_BYTES, r[i].base, rl * EXPLORER_LINE_BYTES);
        regions[i].lo = (uintptr_t)r[i].base;
        regions[i].hi = regions[i].lo + rl * EXPLORER_LINE_BYTES;
        regions[i].first_line = at;
        at += rl;
    }
    regions_n = n;
    dk_persist_set_trace(&hooks);
    return 0;
}

int dk_explorer_begin(void *base, size_t bytes) {
    const struct dk_explorer_region r = {base, bytes};
    return dk_explorer_begin_regions(&r, 1);
}

void dk_explorer_store(const void *p, size_t n) { on_store(p, n, 0); }

void dk_explorer_mark(uint64_t value) {
    pthread_mutex_lock(&mu);
    push(TRACE_MARK, 0, value);
    pthread_mutex_unlock(&mu);
}

void dk_explorer_end(void) { dk_persist_set_trace(NULL); }

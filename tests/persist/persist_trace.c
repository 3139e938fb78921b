/* Description: the persist trace hooks (what the crash-state explorer records) see every store, flush and
 * fence: for dk_copy_nt, dk_copy_flush, dk_zero_nt and dk_store_persistent the reported stores tile the
 * destination exactly, in order, without overlap; non-temporal stores cover only whole 64-byte lines and
 * every line stored with ordinary stores is covered by a reported write-back -- and dk_copy_nt_unflushed
 * (the data path's copy on media that do not persist by flushing) tiles it the same way, copies the bytes,
 * and writes back nothing (session 25: its ends were written back); the copy functions report no
 * fence and dk_fence reports exactly one; dk_flush_range reports its range; with the hooks removed
 * nothing is reported. Exit 0 pass, 1 fail. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "persist/persist.h"

#define LINE 64u
#define EVENTS_MAX 64u /* a copy reports at most head + body + tail stores and two flushes */
#define SIZE_MAX_TESTED 1100u

enum ev_kind { EV_STORE, EV_FLUSH, EV_FENCE };
struct event {
    enum ev_kind kind;
    uintptr_t p;
    size_t n;
    int nt;
};
static struct event events[EVENTS_MAX];
static unsigned event_count, event_overflow;
static unsigned long failures;

static void record(enum ev_kind k, const void *p, size_t n, int nt) {
    if (event_count == EVENTS_MAX) {
        event_overflow++;
        return;
    }
    events[event_count++] = (struct event){k, (uintptr_t)p, n, nt};
}
static void on_store(const void *p, size_t n, int nt) { record(EV_STORE, p, n, nt); }
static void on_flush(const void *p, size_t n) { record(EV_FLUSH, p, n, 0); }
static void on_fence(void) { record(EV_FENCE, NULL, 0, 0); }
static const struct dk_persist_trace recorder = {on_store, on_flush, on_fence};

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            if (++failures <= 10) {                                                    \
                printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
                printf(__VA_ARGS__);                                                   \
                printf("\n");                                                          \
            }                                                                          \
            return;                                                                    \
        }                                                                              \
    } while (0)

/* Is [p, p+n) inside the union of the flush events' line-rounded ranges? */
static int flushed(uintptr_t p, size_t n) {
    for (uintptr_t line = p & ~(uintptr_t)(LINE - 1); line < p + n; line += LINE) {
        int hit = 0;
        for (unsigned i = 0; i < event_count && !hit; i++) {
            const struct event *e = &events[i];
            uintptr_t lo = e->p & ~(uintptr_t)(LINE - 1);
            hit = e->kind == EV_FLUSH && line >= lo && line < e->p + e->n;
        }
        if (!hit) return 0;
    }
    return 1;
}

/* Checks the events of one store function call on [dst, dst+n). `nt_allowed`: may it use NT stores;
 * `writes_back`: ordinary stores are written back (else: nothing is). */
static void check_stores_wb(const char *fn, uintptr_t dst, size_t n, int nt_allowed, int writes_back) {
    CHECK(event_overflow == 0, "%s n=%zu: too many events", fn, n);
    uintptr_t next = dst;
    unsigned nt_stores = 0;
    for (unsigned i = 0; i < event_count; i++) {
        const struct event *e = &events[i];
        CHECK(e->kind != EV_FENCE, "%s n=%zu dst%%64=%zu: a store function must not fence", fn, n,
              (size_t)(dst % LINE));
        if (e->kind != EV_STORE) continue;
        CHECK(e->p == next, "%s n=%zu dst%%64=%zu: store %u starts at +%zd, expected +%zd", fn, n,
              (size_t)(dst % LINE), i, (ssize_t)(e->p - dst), (ssize_t)(next - dst));
        CHECK(e->n > 0, "%s n=%zu: empty store reported", fn, n);
        if (e->nt) {
            nt_stores++;
            CHECK(nt_allowed, "%s n=%zu: non-temporal store where none is expected", fn, n);
            CHECK(e->p % LINE == 0 && e->n % LINE == 0, "%s n=%zu: NT store not whole lines (+%zd, %zu)", fn, n,
                  (ssize_t)(e->p - dst), e->n);
        } else if (writes_back) {
            CHECK(flushed(e->p, e->n), "%s n=%zu dst%%64=%zu: ordinary store at +%zd (%zu B) not written back",
                  fn, n, (size_t)(dst % LINE), (ssize_t)(e->p - dst), e->n);
        }
        CHECK(writes_back || !flushed(e->p, 1), "%s n=%zu dst%%64=%zu: a line written back", fn, n,
              (size_t)(dst % LINE));
        next = e->p + e->n;
    }
    CHECK(next == dst + n, "%s n=%zu dst%%64=%zu: stores cover %zd bytes", fn, n, (size_t)(dst % LINE),
          (ssize_t)(next - dst));
    /* A destination that contains a whole aligned line is stored non-temporally when NT is used. */
    uintptr_t first_line = (dst + LINE - 1) & ~(uintptr_t)(LINE - 1);
    int has_line = first_line + LINE <= dst + n;
    if (nt_allowed) CHECK(nt_stores == (unsigned)has_line, "%s n=%zu dst%%64=%zu: %u NT stores", fn, n,
                          (size_t)(dst % LINE), nt_stores);
}

static void check_stores(const char *fn, uintptr_t dst, size_t n, int nt_allowed) {
    check_stores_wb(fn, dst, n, nt_allowed, 1);
}

static void reset(void) { event_count = event_overflow = 0; }

static void check_all(char *dst, const char *src, size_t n) {
    uintptr_t d = (uintptr_t)dst;
    reset(), dk_copy_nt(dst, src, n), check_stores("dk_copy_nt", d, n, 1);
    reset(), memset(dst, 0, n), dk_copy_nt_unflushed(dst, src, n);
    check_stores_wb("dk_copy_nt_unflushed", d, n, 1, 0);
    for (unsigned i = 0; i < event_count; i++)
        CHECK(events[i].kind != EV_FLUSH, "dk_copy_nt_unflushed n=%zu dst%%64=%zu: a write-back reported", n,
              (size_t)(d % LINE));
    CHECK(memcmp(dst, src, n) == 0, "dk_copy_nt_unflushed n=%zu dst%%64=%zu: the bytes differ", n, (size_t)(d % LINE));
    reset(), dk_zero_nt(dst, n), check_stores("dk_zero_nt", d, n, 1);
    reset(), dk_copy_flush(dst, src, n), check_stores("dk_copy_flush", d, n, 0);
    reset(), dk_store_persistent(dst, src, n, 256), check_stores("dk_store_persistent(256)", d, n, n >= 256);
    reset(), dk_store_persistent(dst, src, n, 1), check_stores("dk_store_persistent(1)", d, n, n >= 1);
}

static void check_flush_fence(char *buf) {
    reset(), dk_fence();
    CHECK(event_count == 1 && events[0].kind == EV_FENCE, "dk_fence reported %u events", event_count);
    reset(), dk_flush_range(buf + 3, 200);
    CHECK(event_count == 1 && events[0].kind == EV_FLUSH && events[0].p == (uintptr_t)(buf + 3) &&
              events[0].n == 200,
          "dk_flush_range reported %u events", event_count);
    reset(), dk_flush_range(buf, 0);
    CHECK(event_count == 0, "dk_flush_range of 0 bytes reported %u events", event_count);
}

int main(void) {
    dk_persist_init(DK_FLUSH_AUTO);
    char *src = aligned_alloc(LINE, SIZE_MAX_TESTED + 2 * LINE), *dst = aligned_alloc(LINE, SIZE_MAX_TESTED + 2 * LINE);
    if (!src || !dst) return 1;
    memset(src, 0x6b, SIZE_MAX_TESTED + 2 * LINE);
    dk_persist_set_trace(&recorder);
    check_flush_fence(dst);
    unsigned long cases = 0;
    for (size_t n = 0; n <= SIZE_MAX_TESTED; n++)
        for (size_t a = 0; a < LINE; a++, cases++) check_all(dst + a, src + (a * 5) % LINE, n);
    /* A data-path sequence: store, store, fence -- the fence is reported once, after the stores. */
    reset(), dk_store_persistent(dst, src, 300, 256), dk_store_persistent(dst + 300, src, 10, 256), dk_fence();
    if (event_count == 0 || events[event_count - 1].kind != EV_FENCE) {
        printf("FAIL: the fence after two stores was not the last event\n");
        failures++;
    }
    dk_persist_set_trace(NULL);
    reset(), dk_copy_nt(dst, src, 500), dk_fence(), dk_flush_range(dst, 64);
    if (event_count != 0) {
        printf("FAIL: %u events reported with the trace removed\n", event_count);
        failures++;
    }
    printf("%lu store cases checked (%s, %s), %lu failures\n", cases, dk_flush_name(), dk_nt_name(), failures);
    free(src), free(dst);
    return failures ? 1 : 0;
}

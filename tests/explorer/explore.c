/* Replaying a recorded trace and checking every crash state (see explorer.h for the model). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "explorer.h"
#include "trace.h"

#define LINE EXPLORER_LINE_BYTES

struct line_state {
    uint64_t latest;       /* contents index of the newest candidate */
    uint64_t flushed;      /* contents index written back / NT-stored, certain at its thread's fence */
    uint8_t uncertain;     /* media may hold `latest` or the certain image's line */
    uint8_t flush_pending;
    uint8_t flush_thread;
    uint8_t touched;
};

struct explore {
    const struct trace *t;
    const struct dk_explorer_options *o;
    dk_explorer_check_fn check;
    void *ctx;
    struct dk_explorer_result *r;
    unsigned char *img;     /* the certain image: what media holds for sure */
    struct line_state *ls;
    uint32_t *touched, *pending, *unc;
    size_t touched_n, pending_n, unc_n;
    uint64_t *marks;
    size_t marks_n;
    uint8_t *chosen;
    uint8_t *torn_mask;     /* per uncertain line: which 8-byte words of a torn line hold the candidate */
    unsigned char *saved;   /* the certain contents of the lines a state replaced */
    uint64_t rng, point_event;
    int stop;
};

static const unsigned char *contents(const struct explore *x, uint64_t i) { return x->t->contents + i * LINE; }

static uint64_t next_random(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void describe_failure(struct explore *x, const char *why) {
    char subset[256] = "";
    size_t used = 0, shown = 0;
    for (size_t j = 0; j < x->unc_n && used + 16 < sizeof subset; j++)
        if (x->chosen[j] == 1)
            used += (size_t)snprintf(subset + used, sizeof subset - used, "%s%u", shown++ ? "," : "", x->unc[j]);
        else if (x->chosen[j] == 2)
            used += (size_t)snprintf(subset + used, sizeof subset - used, "%s%u(torn, words %02x)", shown++ ? "," : "",
                                     x->unc[j], x->torn_mask[j]);
    snprintf(x->r->first_failure, sizeof x->r->first_failure,
             "%s [crash point %lu before trace event %lu; %zu uncertain lines, on media: {%s}; seed=%lu]", why,
             (unsigned long)x->r->crash_points, (unsigned long)x->point_event, x->unc_n, subset,
             (unsigned long)x->r->seed);
}

/* Materialises the state `chosen` selects (0: certain contents, 1: latest candidate, 2: torn -- the 8-byte
 * words whose bit is set in torn_mask from the candidate, the others certain), checks it, restores. */
static void check_state(struct explore *x) {
    unsigned char *saved = x->saved;
    for (size_t j = 0; j < x->unc_n; j++) {
        if (!x->chosen[j]) continue;
        unsigned char *line = x->img + (size_t)x->unc[j] * LINE;
        const unsigned char *candidate = contents(x, x->ls[x->unc[j]].latest);
        memcpy(saved + j * LINE, line, LINE);
        if (x->chosen[j] == 1) memcpy(line, candidate, LINE);
        else
            for (unsigned w = 0; w < LINE / 8; w++)
                if ((x->torn_mask[j] >> w) & 1) memcpy(line + 8 * w, candidate + 8 * w, 8);
    }
    char why[512] = "";
    int bad = x->check(x->img, x->t->lines * LINE, x->marks, x->marks_n, why, sizeof why, x->ctx);
    for (size_t j = 0; j < x->unc_n; j++)
        if (x->chosen[j]) memcpy(x->img + (size_t)x->unc[j] * LINE, saved + j * LINE, LINE);
    x->r->states++;
    if (bad && x->r->failures++ == 0) describe_failure(x, why[0] ? why : "checker failed");
    if (x->r->failures >= x->o->failures_max || x->r->states >= x->o->states_max) x->stop = 1;
}

static void enumerate_all(struct explore *x) {
    for (uint64_t mask = 0; mask < (1ull << x->unc_n) && !x->stop; mask++) {
        for (size_t j = 0; j < x->unc_n; j++) x->chosen[j] = (mask >> j) & 1;
        check_state(x);
    }
}

/* none, all, each alone, all but each, then random subsets. */
static void enumerate_sampled(struct explore *x) {
    size_t u = x->unc_n;
    x->r->sampled_points++;
    for (int all = 0; all < 2 && !x->stop; all++) memset(x->chosen, all, u), check_state(x);
    size_t singles = x->o->singles_max && u > x->o->singles_max ? x->o->singles_max : u;
    for (int base = 0; base < 2; base++)
        for (size_t i = 0; i < singles && !x->stop; i++) {
            size_t k = singles == u ? i : next_random(&x->rng) % u;
            memset(x->chosen, base, u);
            x->chosen[k] = !base;
            check_state(x);
        }
    for (unsigned s = 0; s < x->o->samples_per_point && !x->stop; s++) {
        for (size_t j = 0; j < u; j++) x->chosen[j] = next_random(&x->rng) & 1;
        check_state(x);
    }
}

/* Power failure in the middle of a line's write-back: x86 promises only 8-byte atomicity. Each uncertain line
 * is old, new, or a random mix of old and new 8-byte words. */
static void enumerate_torn(struct explore *x) {
    for (unsigned s = 0; s < x->o->torn_samples_per_point && !x->stop && x->unc_n > 0; s++) {
        int any_torn = 0;
        for (size_t j = 0; j < x->unc_n; j++) {
            uint64_t r = next_random(&x->rng);
            x->chosen[j] = (uint8_t)(r & 3) == 3 ? 2 : (uint8_t)(r & 1);
            x->torn_mask[j] = (uint8_t)(1 + (r >> 8) % 254); /* some words old, some new */
            any_torn |= x->chosen[j] == 2;
        }
        if (!any_torn) x->chosen[0] = 2;
        x->r->torn_states++;
        check_state(x);
    }
}

static void crash_point(struct explore *x) {
    x->unc_n = 0;
    for (size_t i = 0; i < x->touched_n; i++)
        if (x->ls[x->touched[i]].uncertain) x->unc[x->unc_n++] = x->touched[i];
    if (x->unc_n > x->r->uncertain_lines_max) x->r->uncertain_lines_max = x->unc_n;
    x->r->crash_points++;
    if (x->unc_n <= x->o->exhaustive_lines_max) enumerate_all(x);
    else enumerate_sampled(x);
    enumerate_torn(x);
}

static void touch(struct explore *x, uint32_t line) {
    if (!x->ls[line].touched) x->ls[line].touched = 1, x->touched[x->touched_n++] = line;
}

static void apply_fence(struct explore *x, unsigned thread) {
    size_t keep = 0;
    for (size_t i = 0; i < x->pending_n; i++) {
        struct line_state *s = &x->ls[x->pending[i]];
        if (!s->flush_pending) continue;
        if (s->flush_thread != thread) {
            x->pending[keep++] = x->pending[i];
            continue;
        }
        memcpy(x->img + (size_t)x->pending[i] * LINE, contents(x, s->flushed), LINE);
        s->flush_pending = 0;
        if (memcmp(contents(x, s->latest), contents(x, s->flushed), LINE) == 0) s->uncertain = 0;
    }
    x->pending_n = keep;
}

static void apply(struct explore *x, const struct trace_event *e) {
    struct line_state *s = &x->ls[e->line];
    switch (e->kind) {
    case TRACE_MARK: x->marks[x->marks_n++] = e->value; return;
    case TRACE_FENCE: apply_fence(x, e->thread); return;
    case TRACE_STORE: s->latest = e->value, s->uncertain = 1; break;
    case TRACE_STORE_NT:
    case TRACE_FLUSH:
        s->latest = s->flushed = e->value, s->uncertain = 1;
        s->flush_thread = e->thread;
        if (!s->flush_pending) x->pending[x->pending_n++] = e->line;
        s->flush_pending = 1;
        break;
    }
    touch(x, e->line);
}

/* A crash point is needed before a fence and before a store that replaces an uncertain line's candidate. */
static int point_before(const struct explore *x, const struct trace_event *e) {
    if (e->kind == TRACE_FENCE) return 1;
    if (e->kind == TRACE_MARK) return 0;
    const struct line_state *s = &x->ls[e->line];
    return s->uncertain && memcmp(contents(x, s->latest), contents(x, e->value), LINE) != 0;
}

static void replay(struct explore *x) {
    const struct trace *t = x->t;
    int changed = 1; /* the pre-workload image itself is the first state */
    for (size_t i = 0; i <= t->events_count && !x->stop; i++) {
        const struct trace_event *e = i < t->events_count ? &t->events[i] : NULL;
        if (changed && (!e || point_before(x, e))) {
            x->point_event = i;
            crash_point(x);
            changed = 0;
        }
        if (!e) break;
        apply(x, e);
        changed = 1;
    }
}

int dk_explorer_run(const struct dk_explorer_options *opts, dk_explorer_check_fn check, void *ctx,
                    struct dk_explorer_result *r) {
    const struct trace *t = &explorer_trace;
    memset(r, 0, sizeof *r);
    if (!t->image0) return -EINVAL;
    if (t->error) return t->error;
    struct dk_explorer_options o = *opts;
    if (!o.exhaustive_lines_max) o.exhaustive_lines_max = 10;
    if (o.exhaustive_lines_max > 20) o.exhaustive_lines_max = 20;
    if (!o.samples_per_point) o.samples_per_point = 64;
    if (!o.states_max) o.states_max = 5000000;
    if (!o.failures_max) o.failures_max = 1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    r->seed = o.seed ? o.seed : (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 20;
    r->events = t->events_count;
    for (size_t i = 0; i < t->events_count; i++)
        r->fences += t->events[i].kind == TRACE_FENCE, r->marks += t->events[i].kind == TRACE_MARK;
    struct explore x = {.t = t, .o = &o, .check = check, .ctx = ctx, .r = r, .rng = r->seed};
    x.img = malloc(t->lines * LINE);
    x.ls = calloc(t->lines, sizeof *x.ls);
    x.touched = malloc(t->lines * sizeof *x.touched), x.pending = malloc(t->lines * sizeof *x.pending);
    x.unc = malloc(t->lines * sizeof *x.unc), x.chosen = malloc(t->lines), x.saved = malloc(t->lines * LINE);
    x.torn_mask = malloc(t->lines);
    x.marks = malloc((t->events_count + 1) * sizeof *x.marks);
    int rc = -ENOMEM;
    if (x.img && x.ls && x.touched && x.pending && x.unc && x.chosen && x.saved && x.torn_mask && x.marks) {
        memcpy(x.img, t->image0, t->lines * LINE);
        struct timespec a, b, ca, cb;
        clock_gettime(CLOCK_MONOTONIC, &a), clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
        replay(&x);
        clock_gettime(CLOCK_MONOTONIC, &b), clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
        r->seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
        r->cpu_seconds = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9;
        rc = r->failures ? 1 : 0;
    }
    free(x.img), free(x.ls), free(x.touched), free(x.pending), free(x.unc), free(x.chosen), free(x.saved), free(x.torn_mask), free(x.marks);
    return rc;
}

/* The explorer's recorded trace (internal to tests/explorer). */
#ifndef DK_TESTS_EXPLORER_TRACE_H
#define DK_TESTS_EXPLORER_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define EXPLORER_LINE_BYTES 64u
#define EXPLORER_THREADS_MAX 64u

enum trace_kind { TRACE_STORE, TRACE_STORE_NT, TRACE_FLUSH, TRACE_FENCE, TRACE_MARK };

struct trace_event {
    uint8_t kind;     /* enum trace_kind */
    uint8_t thread;   /* recorder's thread number (fences order only their own thread's write-backs) */
    uint32_t line;    /* STORE*, FLUSH: line index in the region */
    uint64_t value;   /* STORE*, FLUSH: index of the line's contents in `contents`; MARK: the mark */
};

struct trace {
    unsigned char *image0;  /* the region before the workload */
    size_t lines;           /* region lines */
    struct trace_event *events;
    size_t events_count, events_cap;
    unsigned char *contents; /* 64 bytes per recorded line snapshot */
    size_t contents_count, contents_cap;
    int error;               /* -ENOMEM while recording: the trace is unusable */
};

extern struct trace explorer_trace;

#endif

/* Shared inside src/persist only. */
#ifndef DK_PERSIST_INTERNAL_H
#define DK_PERSIST_INTERNAL_H

#include <stddef.h>

/* Reports a store range to the trace recorder, if one is set (test builds' crash-state explorer). */
void persist_trace_store(const void *dst, size_t n, int non_temporal);

#endif

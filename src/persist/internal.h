/* Shared inside src/persist only. */
#ifndef DK_PERSIST_INTERNAL_H
#define DK_PERSIST_INTERNAL_H

#include <stddef.h>

/* Reports a store range to the trace recorder, if one is set (test builds' crash-state explorer). */
void persist_trace_store(const void *dst, size_t n, int non_temporal);
/* Non-zero when non-temporal copies use AVX-512 (the CPU and the OS support it). */
int persist_nt_avx512(void);

#endif

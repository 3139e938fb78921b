/* The benchmarks' clocks: wall time (CLOCK_MONOTONIC) and the process's CPU time (user + system, from
 * getrusage: what `perf stat -e task-clock` counts for one process), both in ns. Header-only: the
 * benchmarks run under LD_PRELOAD and link nothing of the library. */
#ifndef DK_BENCH_CLOCK_H
#define DK_BENCH_CLOCK_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

#endif

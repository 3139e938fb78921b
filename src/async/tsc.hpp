// Time stamp counter: the engine's clock. rdtsc is ~10 ns cheaper than clock_gettime and is invariant
// on every x86-64 this project targets; the rate is calibrated once against CLOCK_MONOTONIC.
#pragma once
#include <cstdint>
#include <x86intrin.h>

namespace dk::async {

inline uint64_t tsc_now() { return __rdtsc(); }

// Ticks per nanosecond, measured once per process (about 20 ms on first call).
double tsc_per_ns();

inline uint64_t ns_to_tsc(double ns) { return static_cast<uint64_t>(ns * tsc_per_ns() + 0.5); }
inline double tsc_to_ns(uint64_t ticks) { return static_cast<double>(ticks) / tsc_per_ns(); }

// Monotonic wall time in seconds (for reports, not for the hot path).
double wall_s();

}  // namespace dk::async

#include "async/tsc.hpp"

#include <cassert>
#include <ctime>

namespace dk::async {

double wall_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

static double calibrate() {
  const double t0 = wall_s();
  const uint64_t c0 = tsc_now();
  while (wall_s() - t0 < 0.02) {
  }
  const double t1 = wall_s();
  const uint64_t c1 = tsc_now();
  const double rate = static_cast<double>(c1 - c0) / ((t1 - t0) * 1e9);
  assert(rate > 0.1);   // slower than 100 MHz: the TSC is not usable as a clock
  assert(rate < 10.0);  // faster than 10 GHz: calibration went wrong
  return rate;
}

double tsc_per_ns() {
  static const double rate = calibrate();
  return rate;
}

}  // namespace dk::async

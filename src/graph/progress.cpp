#include "graph/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "async/tsc.hpp"

namespace dk::graph {

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total == 0 ? 1 : total), enabled_(isatty(2) == 1) {}

Progress::~Progress() { finish(); }

void Progress::update(uint64_t done) {
  if (!enabled_ || finished_) return;
  const double now = async::wall_s();
  if (now - last_draw_s_ < 0.1 && done < total_) return;
  last_draw_s_ = now;
  const int width = 40;
  const int filled = static_cast<int>(width * (done > total_ ? total_ : done) / total_);
  char bar[width + 1];
  for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
  bar[width] = 0;
  std::fprintf(stderr, "\r%-10s [%s] %3d%%", label_.c_str(), bar,
               static_cast<int>(100 * (done > total_ ? total_ : done) / total_));
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  update(total_);
  std::fprintf(stderr, "\n");
  finished_ = true;
}

}  // namespace dk::graph

// A one-line progress bar on stderr, drawn only when stderr is a terminal and redrawn at most 10x/s.
#pragma once
#include <cstdint>
#include <string>

namespace dk::graph {

class Progress {
 public:
  Progress(std::string label, uint64_t total);
  ~Progress();
  void update(uint64_t done);  // thread-compatible, call from one thread
  void finish();

 private:
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  double last_draw_s_ = 0;
};

}  // namespace dk::graph

#pragma once
#include <string>

namespace dk::graph::cli {
int cmd_run(const std::string& kernel, int argc, char** argv);
int cmd_gen(int argc, char** argv);
int cmd_convert(int argc, char** argv);
}  // namespace dk::graph::cli

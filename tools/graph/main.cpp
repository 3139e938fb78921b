// daxkit-graph: graph kernels over the microsecond-latency access engine.
//   daxkit graph bfs|bc|sssp --input FILE [--backend B] [--threads T] [--contexts N] [--source V]
//                            [--trials K] [--verify] ...
//   daxkit graph gen --kind kron|urand --scale S [--degree D] [--weighted] --output FILE.sg|.wsg
//   daxkit graph convert --input FILE --output FILE
#include <cstdio>
#include <cstring>
#include <string>

#include "cmds.hpp"

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "bfs" || cmd == "bc" || cmd == "sssp") return dk::graph::cli::cmd_run(cmd, argc, argv);
  if (cmd == "gen") return dk::graph::cli::cmd_gen(argc, argv);
  if (cmd == "convert") return dk::graph::cli::cmd_convert(argc, argv);
  std::fprintf(stderr,
               "usage: daxkit graph bfs|bc|sssp --input FILE [--backend dram|dram-prefetch|emu|uring|mmap]\n"
               "                    [--threads T] [--contexts N] [--source V] [--trials K] [--verify]\n"
               "       daxkit graph gen --kind kron|urand --scale S [--degree D] [--weighted] --output FILE.sg|.wsg\n"
               "       daxkit graph convert --input FILE.{sg,wsg,el,wel} --output FILE.{sg,wsg,el,wel,pages}\n"
               "(--help after a command lists all its options)\n");
  return cmd.empty() || cmd == "--help" || cmd == "-h" ? (cmd.empty() ? 2 : 0) : 2;
}

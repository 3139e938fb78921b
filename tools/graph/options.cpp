#include "options.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dk::graph::cli {

void print_usage(const char* usage, const OptionSpec* specs, size_t count) {
  std::fprintf(stderr, "usage: %s\n", usage);
  for (size_t i = 0; i < count; i++) {
    std::fprintf(stderr, "  --%-16s %s\n", (std::string(specs[i].name) + (specs[i].takes_value ? " X" : "")).c_str(),
                 specs[i].help);
  }
}

bool Options::parse(int argc, char** argv, int first, const OptionSpec* specs, size_t count, const char* usage) {
  for (int i = first; i < argc; i++) {
    const char* a = argv[i];
    if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) {
      print_usage(usage, specs, count);
      std::exit(0);
    }
    const OptionSpec* spec = nullptr;
    if (std::strncmp(a, "--", 2) == 0) {
      for (size_t k = 0; k < count; k++) {
        if (std::strcmp(a + 2, specs[k].name) == 0) spec = &specs[k];
      }
    }
    if (spec == nullptr) {
      std::fprintf(stderr, "daxkit graph: unknown option '%s'\n", a);
      print_usage(usage, specs, count);
      return false;
    }
    if (spec->takes_value && i + 1 >= argc) {
      std::fprintf(stderr, "daxkit graph: option --%s needs a value\n", spec->name);
      return false;
    }
    values_[spec->name] = spec->takes_value ? argv[++i] : "1";
  }
  return true;
}

std::string Options::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

bool Options::integer(const std::string& name, long long def, long long lo, long long hi, long long& out) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    out = def;
    return true;
  }
  char* end = nullptr;
  out = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != 0 || out < lo || out > hi) {
    std::fprintf(stderr, "daxkit graph: --%s %s: want an integer in [%lld, %lld]\n", name.c_str(), it->second.c_str(),
                 lo, hi);
    return false;
  }
  return true;
}

bool Options::real(const std::string& name, double def, double lo, double hi, double& out) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    out = def;
    return true;
  }
  char* end = nullptr;
  out = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != 0 || out < lo || out > hi) {
    std::fprintf(stderr, "daxkit graph: --%s %s: want a number in [%g, %g]\n", name.c_str(), it->second.c_str(), lo, hi);
    return false;
  }
  return true;
}

}  // namespace dk::graph::cli

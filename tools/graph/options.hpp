// Command-line options of daxkit-graph: one table entry per option (name, whether it takes a value,
// help), parsed into a string map; typed getters check values and name the bad option.
#pragma once
#include <map>
#include <string>

namespace dk::graph::cli {

struct OptionSpec {
  const char* name;  // without the leading "--"
  bool takes_value;
  const char* help;
};

class Options {
 public:
  // Parses argv[first..]; on error prints it with the usage and returns false.
  bool parse(int argc, char** argv, int first, const OptionSpec* specs, size_t count, const char* usage);
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& def) const;
  bool integer(const std::string& name, long long def, long long lo, long long hi, long long& out) const;
  bool real(const std::string& name, double def, double lo, double hi, double& out) const;

 private:
  std::map<std::string, std::string> values_;
};

void print_usage(const char* usage, const OptionSpec* specs, size_t count);

}  // namespace dk::graph::cli

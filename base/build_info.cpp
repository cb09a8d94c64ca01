// See build_info.h.
#include "base/build_info.h"

#include <fstream>

#include "pillars_build_commit.h" // generated at build time by tools/build_commit.cmake

namespace pillars {

const char* build_commit() { return PILLARS_BUILD_COMMIT; }

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

} // namespace pillars

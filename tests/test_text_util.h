// Helpers shared by the tests/test_text_*.cpp suites: where the dataset mirror is, and reading
// its .xz files (with the xz program, so these tests depend on nothing else in the tree).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace pillars::test_text {

// $PILLARS_DATA (the dataset mirror, e.g. /work/shared/datasets), or nullopt when unset.
inline std::optional<std::string> data_dir() {
  const char* d = std::getenv("PILLARS_DATA");
  if (!d || !*d) return std::nullopt;
  return std::string(d);
}

inline bool file_exists(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

// The whole decompressed file.
inline std::string read_xz(const std::string& path) {
  PILLARS_CHECK(file_exists(path), path, ": no such file");
  FILE* p = popen(("xz -dc '" + path + "'").c_str(), "r");
  PILLARS_CHECK(p, path, ": cannot run xz");
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  PILLARS_CHECK(rc == 0, path, ": xz -dc failed (status ", rc, ")");
  return out;
}

// Its lines, without their "\n".
inline std::vector<std::string> read_xz_lines(const std::string& path) {
  std::string all = read_xz(path);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < all.size()) {
    size_t nl = all.find('\n', start);
    if (nl == std::string::npos) nl = all.size();
    lines.push_back(all.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

} // namespace pillars::test_text

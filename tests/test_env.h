// What the tests that touch the outside world share: whether a dataset is in the mirror
// ($PILLARS_DATA), and a scratch directory that cleans up after itself.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "datasets/registry.h"

namespace pillars::testing {

// True when $PILLARS_DATA is set and holds `dataset` (tests that need it skip with a message).
inline bool have_dataset(const std::string& dataset) {
  if (!std::getenv("PILLARS_DATA")) return false;
  try {
    return data::is_present(dataset);
  } catch (...) {
    return false;
  }
}

// A fresh directory under the system's temp dir, removed with everything in it at scope exit.
// own_cache = true also points PILLARS_CACHE inside it, so prepared data is rebuilt, not reused.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& prefix, bool own_cache = false) {
    path = std::filesystem::temp_directory_path() /
           (prefix + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
    std::filesystem::create_directories(path);
    if (own_cache) setenv("PILLARS_CACHE", (path / "cache").c_str(), 1);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

} // namespace pillars::testing

// What the fuzz targets (tests/fuzz/fuzz_*.cpp) share: which errors are expected, how an
// invariant fails, and a scratch file for readers that only take a path.
//
// A reader that refuses bad input with pillars::Error (or its InputError) is doing its job: the
// CLI prints the message and exits with 2. Any other std::exception is let through as well (the
// CLI prints its what() too), unless PILLARS_FUZZ_STRICT=1 is set: then it aborts, so that errors
// whose message is a library's ("stoll", "basic_string::substr") can be hunted down by hand.
// PILLARS_FUZZ_VERBOSE=1 prints every expected error (to see what the seeds reach).
// Everything else is a finding: a crash, a sanitizer report, an exceeded -timeout or -rss_limit_mb,
// or a broken invariant (fuzz_require aborts, and libFuzzer saves the input).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include <unistd.h>

#include "base/error.h"

namespace pillars::fuzz {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string_view(v) == "1";
}
inline bool strict() {
  static const bool on = env_flag("PILLARS_FUZZ_STRICT");
  return on;
}
inline bool verbose() {
  static const bool on = env_flag("PILLARS_FUZZ_VERBOSE");
  return on;
}

// Runs f(); returns true if it finished, false if it threw an expected error.
template <class F>
bool run_expecting_errors(F&& f) {
  try {
    f();
    return true;
  } catch (const pillars::Error& e) {
    if (verbose()) std::fprintf(stderr, "pillars fuzz: expected error: %s\n", e.what());
    return false;
  } catch (const std::exception& e) {
    if (verbose()) std::fprintf(stderr, "pillars fuzz: expected error (not pillars::Error): %s\n", e.what());
    if (strict()) {
      std::fprintf(stderr, "pillars fuzz: an error that is not pillars::Error (PILLARS_FUZZ_STRICT=1): %s\n", e.what());
      std::abort();
    }
    return false;
  }
}

// An invariant of the code under test; a violation is a finding.
inline void fuzz_require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "pillars fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// One file per process under $TMPDIR (or /tmp), rewritten with every input and removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/pillars-fuzz-" + std::to_string(::getpid()) + suffix;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }
  // Replaces the file's contents with `data`.
  const std::string& write(const uint8_t* data, size_t size) const {
    FILE* f = std::fopen(path_.c_str(), "wb");
    fuzz_require(f != nullptr, "cannot create the scratch file");
    fuzz_require(size == 0 || std::fwrite(data, 1, size, f) == size, "cannot write the scratch file");
    fuzz_require(std::fclose(f) == 0, "cannot close the scratch file");
    return path_;
  }

 private:
  std::string path_;
};

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace pillars::fuzz

// What the tests that touch the outside world share: whether a dataset is in the mirror
// ($PILLARS_DATA), and a scratch directory that cleans up after itself.
#pragma once
#include <unistd.h>

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/registry.h"

namespace pillars::testing {

// True in a build instrumented by AddressSanitizer (PILLARS_SANITIZE). Two kinds of tests skip there
// with a message, since instrumented training is several times slower (each took 1-9 minutes of
// CI's 90) and the same code runs under the sanitizers in shorter runs (the first-updates pins,
// resume, keep_best, the GHT phases) and in the unit cases of its ops:
//   - tests of learning, whose point is what a model learns in hundreds of updates;
//   - tests that train twice and compare the losses (a fusion against the unfused graph, bf16
//     saved activations against fp32, a variant of the fine-tuning): an equivalence of arithmetic,
//     checked in the uninstrumented build.
inline bool sanitized_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

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

// A string in single quotes for the shell.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The pillars binary beside this test executable, or "" when it has not been built.
inline std::string pillars_binary() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "pillars";
  return !ec && std::filesystem::exists(p) ? p.string() : "";
}

// A whole file as a string ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The losses of a run's training log lines (run_dir/log.jsonl, lines of "type": "train"), in order.
inline std::vector<double> train_losses(const std::filesystem::path& run_dir) {
  std::vector<double> out;
  std::ifstream log(run_dir / "log.jsonl");
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json l = nlohmann::json::parse(line);
    if (l.value("type", "") == "train") out.push_back(l.at("loss").get<double>());
  }
  return out;
}

// The passes a run's training step ran, in order: the first start record of its log.jsonl.
inline std::vector<std::string> train_passes(const std::filesystem::path& run_dir) {
  std::ifstream log(run_dir / "log.jsonl");
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json l = nlohmann::json::parse(line);
    if (l.value("type", "") == "start") return l.at("passes").get<std::vector<std::string>>();
  }
  return {};
}

// Writes `bytes` to the file `p` (replacing it), making its folder first.
inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// Runs `BINARY ARGS...`: its exit code (−1 if it did not exit normally), stdout and stderr.
struct RunResult {
  int code;
  std::string out, err;
};
inline RunResult run_pillars(const std::string& binary, const std::vector<std::string>& args) {
  ScratchDir tmp("pillars_cli_");
  std::string cmd = shell_quote(binary);
  for (const std::string& a : args) cmd.append(" ").append(shell_quote(a));
  cmd.append(" >")
      .append(shell_quote((tmp.path / "out").string()))
      .append(" 2>")
      .append(shell_quote((tmp.path / "err").string()));
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(tmp.path / "out"), read_file(tmp.path / "err")};
}

// Random sentences of the given lengths (eos = 2 last), ids in [4, vocab).
inline std::vector<std::vector<int32_t>> random_sentences(const std::vector<int>& lengths, int64_t vocab,
                                                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(4, static_cast<int32_t>(vocab) - 1);
  std::vector<std::vector<int32_t>> s;
  for (int n : lengths) {
    s.emplace_back();
    for (int i = 0; i + 1 < n; ++i) s.back().push_back(tok(rng));
    s.back().push_back(2); // eos
  }
  return s;
}

} // namespace pillars::testing

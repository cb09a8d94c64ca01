// A count that grows during long work ("decoded 640/1000 sentences"), shown the way its stream can
// show it. On a terminal the line is rewritten in place with "\r". In a file or a pipe a "\r" would
// only glue every count into one long line, so there a full line is written at most every
// `interval` (never for the last count: finish() writes that line, with the rate).
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pillars {

class ProgressLine {
 public:
  // "<verb> done/total <noun>", e.g. verb "decoded", noun "sentences"; out nullptr: silent.
  ProgressLine(std::FILE* out, std::string verb, std::string noun,
               std::chrono::steady_clock::duration interval = std::chrono::seconds(30));
  void update(int64_t done, int64_t total);
  // The last line: "<verb> total/total <noun> (<total / seconds> <noun>/s)".
  void finish(int64_t total, double seconds);

 private:
  std::FILE* out_;
  std::string verb_, noun_;
  std::chrono::steady_clock::duration interval_;
  bool terminal_;
  std::chrono::steady_clock::time_point last_line_;
};

} // namespace pillars

// Where verified dataset files live, and the stamps that make re-reading them cheap.
//
//   data::cache_root()                  // $PILLARS_CACHE, else $XDG_CACHE_HOME/pillars, else ~/.cache/pillars
//   data::cache_path("ptb", "ptb.train.txt")      // <root>/ptb/ptb.train.txt
//   data::mirror_root()                 // $PILLARS_DATA, or "" when unset
//
//   if (!data::stamp_matches(path, sha)) { ... hash it ...; data::write_stamp(path, sha); }
//
// The stamp "<file>.sha256-ok" records the sha256 the file was verified against together with its
// size and modification time (nanoseconds). A later read trusts the file without rehashing only
// while all three still match, so editing, truncating or replacing the file invalidates it.
// Environment variables are read on every call (tests point PILLARS_CACHE at a temporary folder).
#pragma once
#include <cstdint>
#include <string>

#include "datasets/sha256.h"

namespace pillars::data {

std::string cache_root();
std::string cache_path(const std::string& dataset, const std::string& relpath);
std::string mirror_root();
bool downloads_disabled(); // PILLARS_OFFLINE=1 (tests set it: they must never reach the network)

bool stamp_matches(const std::string& path, const std::string& sha256);
void write_stamp(const std::string& path, const std::string& sha256);

// Size, '\n' count and sha256 of a file, in one pass.
struct FileFacts {
  uint64_t bytes = 0;
  uint64_t lines = 0; // '\n' bytes
  std::string sha256;
  bool unterminated = false; // the last line has no '\n' (it still counts as a line when read)
  uint64_t records() const { return lines + (unterminated ? 1 : 0); }
};
FileFacts file_facts(const std::string& path);

// Accumulates FileFacts over streamed bytes (decompression, download, copy).
class FactsCounter {
 public:
  void update(const char* data, size_t n);
  FileFacts finish(); // once

 private:
  Sha256 sha_;
  FileFacts facts_;
};

std::string human_bytes(uint64_t bytes); // "2.1 MB"

} // namespace pillars::data

// SHA-1 (FIPS 180-4), used for one thing: git blob ids. Published dataset files are often known
// only by the git blob id under which a repository committed them (e.g. the canonical IWSLT'14
// train files in iwslt14-de-en's PROVENANCE), and `pillars data import` recognizes such files.
//
//   data::sha1_hex("abc")            // "a9993e364706816aba3e25717850c26c9cd0d89d"
//   data::git_blob_id(path)          // = `git hash-object path`: sha1("blob <size>\0" + bytes)
//
// Not for integrity: that is SHA-256's job (datasets/sha256.h).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pillars::data {

class Sha1 {
 public:
  Sha1();
  void update(const void* data, size_t bytes);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  std::string hex(); // finishes

 private:
  void compress(const uint8_t block[64]);
  std::array<uint32_t, 5> state_;
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

std::string sha1_hex(std::string_view bytes);
std::string git_blob_id(const std::string& path); // throws InputError naming an unreadable file

} // namespace pillars::data

// SHA-256 (FIPS 180-4), streaming: the checksum every dataset file is verified with.
//
//   data::Sha256 h;
//   h.update(buffer, n);            // any number of times, any chunk sizes
//   std::string hex = h.hex();      // 64 lowercase hex digits; finishes the hash
//
//   data::sha256_hex("abc")         // one-shot, for bytes in memory
//   data::sha256_file(path)         // streams a file (throws pillars::InputError naming it)
//
// A plain portable implementation (about 170 MB/s on one core of the development machine; xz
// decoding, at about 60 MB/s, costs more): the registry caches
// a verified-stamp per file (datasets/cache.h), so large files are hashed once, not per read.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pillars::data {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  std::array<uint8_t, 32> digest(); // finishes; the object is then spent (call reset() to reuse)
  std::string hex();                // digest() as lowercase hex
  void reset();

 private:
  void compress(const uint8_t block[64]);

  std::array<uint32_t, 8> state_;
  uint8_t buffer_[64];
  size_t buffered_ = 0; // bytes waiting in buffer_
  uint64_t total_ = 0;  // message length in bytes so far
};

std::string sha256_hex(std::string_view bytes);
std::string sha256_file(const std::string& path);

// Lowercase hex of any byte string (shared by the hash classes).
std::string to_hex(const uint8_t* bytes, size_t n);

} // namespace pillars::data

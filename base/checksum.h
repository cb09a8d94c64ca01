// A 64-bit checksum of a byte stream: what a checkpoint stores of its tensor data, so that a
// flipped bit is found when the file is loaded (engine/io/safetensors.h).
//
//   Checksum64 c;  c.add(bytes, n);  c.add(more, m);  c.hex()  → "mix64:0123456789abcdef"
//
// The stream is read as little-endian u64 words (the last one zero-padded), h ← (h ⊕ w) · P for
// each word with P = 0x9E3779B97F4A7C15 (odd: the step is a bijection of h, so changing any one
// word always changes the result), then h ← splitmix64_mix(h ⊕ length). Chunks may split words
// anywhere: the result depends on the bytes only. About one multiply per 8 bytes, so it runs at
// memory speed over a checkpoint. Not cryptographic: it finds corruption, not tampering.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace pillars {

class Checksum64 {
 public:
  void add(const void* data, size_t bytes);
  uint64_t value() const;
  std::string hex() const; // "mix64:" and 16 lower-case hex digits

 private:
  uint64_t h_ = 0;
  uint64_t length_ = 0;
  unsigned char carry_[8] = {}; // bytes of a word not yet complete
  size_t carried_ = 0;
};

} // namespace pillars

// Checksum64; see checksum.h.
#include "base/checksum.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/splitmix64.h"

namespace pillars {

namespace {

constexpr uint64_t kPrime = 0x9E3779B97F4A7C15ull;

uint64_t load_le(const unsigned char* p) {
  uint64_t w = 0;
  for (int i = 7; i >= 0; --i) w = (w << 8) | p[i];
  return w;
}

} // namespace

void Checksum64::add(const void* data, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  length_ += bytes;
  if (carried_ > 0) { // finish the word the last chunk began
    const size_t take = std::min(bytes, sizeof carry_ - carried_);
    std::memcpy(carry_ + carried_, p, take);
    carried_ += take, p += take, bytes -= take;
    if (carried_ < sizeof carry_) return;
    h_ = (h_ ^ load_le(carry_)) * kPrime, carried_ = 0;
  }
  for (; bytes >= 8; p += 8, bytes -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8); // little-endian hosts (x86-64, AArch64): the bytes as they are
    h_ = (h_ ^ w) * kPrime;
  }
  std::memcpy(carry_, p, bytes); // fewer than 8 left
  carried_ = bytes;
}

uint64_t Checksum64::value() const {
  uint64_t h = h_;
  if (carried_ > 0) {
    unsigned char last[8] = {};
    std::memcpy(last, carry_, carried_);
    h = (h ^ load_le(last)) * kPrime;
  }
  return splitmix64_mix(h ^ length_);
}

std::string Checksum64::hex() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "mix64:%016llx", static_cast<unsigned long long>(value()));
  return buf;
}

} // namespace pillars

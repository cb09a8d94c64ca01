// SHA-1 as in FIPS 180-4 §6.1, and git blob ids; see sha1.h.
#include "datasets/sha1.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include "datasets/sha256.h" // to_hex
#include "base/error.h"

namespace pillars::data {

namespace {
inline uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
} // namespace

Sha1::Sha1() : state_{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0} {}

void Sha1::compress(const uint8_t block[64]) {
  uint32_t w[80];
  for (int t = 0; t < 16; ++t)
    w[t] = uint32_t(block[4 * t]) << 24 | uint32_t(block[4 * t + 1]) << 16 | uint32_t(block[4 * t + 2]) << 8 |
           uint32_t(block[4 * t + 3]);
  for (int t = 16; t < 80; ++t) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4];
  for (int t = 0; t < 80; ++t) {
    uint32_t f, k;
    if (t < 20)
      f = (b & c) | (~b & d), k = 0x5a827999;
    else if (t < 40)
      f = b ^ c ^ d, k = 0x6ed9eba1;
    else if (t < 60)
      f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
    else
      f = b ^ c ^ d, k = 0xca62c1d6;
    const uint32_t temp = rotl(a, 5) + f + e + k + w[t];
    e = d, d = c, c = rotl(b, 30), b = a, a = temp;
  }
  state_[0] += a, state_[1] += b, state_[2] += c, state_[3] += d, state_[4] += e;
}

void Sha1::update(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_ += bytes;
  if (buffered_ > 0) {
    const size_t take = std::min(bytes, 64 - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take, p += take, bytes -= take;
    if (buffered_ < 64) return;
    compress(buffer_);
    buffered_ = 0;
  }
  for (; bytes >= 64; p += 64, bytes -= 64) compress(p);
  std::memcpy(buffer_, p, bytes);
  buffered_ = bytes;
}

std::string Sha1::hex() {
  const uint64_t bits = total_ * 8; // padding as for SHA-256 (§5.1.1)
  const uint8_t one = 0x80, zero = 0;
  update(&one, 1);
  while (buffered_ != 56) update(&zero, 1);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(length, 8);
  uint8_t out[20];
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(state_[i] >> (24 - 8 * j));
  return to_hex(out, sizeof out);
}

std::string sha1_hex(std::string_view bytes) {
  Sha1 h;
  h.update(bytes);
  return h.hex();
}

std::string git_blob_id(const std::string& path) {
  struct stat st {};
  std::ifstream in(path, std::ios::binary);
  if (!in || ::stat(path.c_str(), &st) != 0) throw InputError(str_cat(path, ": cannot open"));
  Sha1 h;
  const std::string header = str_cat("blob ", static_cast<uint64_t>(st.st_size));
  h.update(header.data(), header.size() + 1); // with its terminating NUL, as git hashes it
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return h.hex();
}

} // namespace pillars::data

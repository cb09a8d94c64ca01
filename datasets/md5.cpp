// MD5 as in RFC 1321 (section 3). See md5.h for why the project has it.
#include "datasets/md5.h"

#include <cstring>
#include <vector>

#include "datasets/sha256.h" // to_hex

namespace pillars::data {

namespace {

// Per-round shift amounts (RFC 1321 §3.4).
constexpr int kShift[64] = {7,  12, 17, 22, 7,  12, 17, 22, 7,  12, 17, 22, 7,  12, 17, 22, 5,  9,  14, 20, 5,  9,
                            14, 20, 5,  9,  14, 20, 5,  9,  14, 20, 4,  11, 16, 23, 4,  11, 16, 23, 4,  11, 16, 23,
                            4,  11, 16, 23, 6,  10, 15, 21, 6,  10, 15, 21, 6,  10, 15, 21, 6,  10, 15, 21};

// T[i] = floor(2^32 * |sin(i + 1)|), the RFC's table (§3.4).
constexpr uint32_t kSine[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

inline uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

} // namespace

std::array<uint8_t, 16> md5(std::string_view bytes) {
  // Pad (§3.1-3.2): 0x80, zeros to 56 mod 64, then the bit length little-endian.
  std::vector<uint8_t> msg(bytes.begin(), bytes.end());
  const uint64_t bits = static_cast<uint64_t>(bytes.size()) * 8;
  msg.push_back(0x80);
  while (msg.size() % 64 != 56) msg.push_back(0);
  for (int i = 0; i < 8; ++i) msg.push_back(static_cast<uint8_t>(bits >> (8 * i)));

  uint32_t s[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  for (size_t off = 0; off < msg.size(); off += 64) {
    uint32_t m[16];
    for (int i = 0; i < 16; ++i)
      m[i] = uint32_t(msg[off + 4 * i]) | uint32_t(msg[off + 4 * i + 1]) << 8 | uint32_t(msg[off + 4 * i + 2]) << 16 |
             uint32_t(msg[off + 4 * i + 3]) << 24;
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
    for (int i = 0; i < 64; ++i) {
      uint32_t f;
      int g;
      if (i < 16)
        f = (b & c) | (~b & d), g = i;
      else if (i < 32)
        f = (d & b) | (~d & c), g = (5 * i + 1) % 16;
      else if (i < 48)
        f = b ^ c ^ d, g = (3 * i + 5) % 16;
      else
        f = c ^ (b | ~d), g = (7 * i) % 16;
      const uint32_t next = b + rotl(a + f + kSine[i] + m[g], kShift[i]);
      a = d, d = c, c = b, b = next;
    }
    s[0] += a, s[1] += b, s[2] += c, s[3] += d;
  }
  std::array<uint8_t, 16> out{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(s[i] >> (8 * j));
  return out;
}

std::string md5_hex(std::string_view bytes) {
  const std::array<uint8_t, 16> d = md5(bytes);
  return to_hex(d.data(), d.size());
}

unsigned md5_mod(std::string_view bytes, unsigned modulus) {
  const std::array<uint8_t, 16> d = md5(bytes);
  uint64_t r = 0; // Horner's rule over the big-endian digits keeps r < modulus
  for (uint8_t byte : d) r = (r * 256 + byte) % modulus;
  return static_cast<unsigned>(r);
}

} // namespace pillars::data

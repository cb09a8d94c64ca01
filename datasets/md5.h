// MD5 (RFC 1321), one-shot. Not for integrity (SHA-256 does that, datasets/sha256.h): the
// debian-synopsis split rule assigns a source package to a split by the MD5 of its name, a rule
// anyone can recompute with `md5sum` or Python's hashlib.
//
//   data::md5_hex("abc")           // "900150983cd24fb0d6963f7d28e17f72"
//   data::md5_mod("abc", 100)      // the 128-bit digest read as a big-endian integer, mod 100
//                                  // (= int(hashlib.md5(b"abc").hexdigest(), 16) % 100)
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pillars::data {

std::array<uint8_t, 16> md5(std::string_view bytes);
std::string md5_hex(std::string_view bytes);
unsigned md5_mod(std::string_view bytes, unsigned modulus);

} // namespace pillars::data

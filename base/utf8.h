// Is it text? The check for text that comes from users — translate's and generate's stdin, the
// files `pillars data import` copies — before it reaches the tokenizer, which assumes UTF-8.
//
//   if (const size_t at = invalid_utf8_at(line); at != std::string::npos) refuse(...);
//
// Well-formed UTF-8 as RFC 3629 defines it: no overlong forms (0xC0 0xAF for '/'), no UTF-16
// surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no sequence cut short. A NUL byte is valid
// UTF-8 but never part of text: callers that read text refuse it separately (find('\0')).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace pillars {

// The offset of the first byte of `s` that does not begin (or continue) a well-formed UTF-8
// sequence, or std::string::npos if `s` is all well-formed.
inline size_t invalid_utf8_at(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF; // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c == 0xE0)
      len = 3, lo = 0xA0; // no overlong 3-byte forms
    else if (c >= 0xE1 && c <= 0xEC)
      len = 3;
    else if (c == 0xED)
      len = 3, hi = 0x9F; // no surrogates
    else if (c >= 0xEE && c <= 0xEF)
      len = 3;
    else if (c == 0xF0)
      len = 4, lo = 0x90; // no overlong 4-byte forms
    else if (c >= 0xF1 && c <= 0xF3)
      len = 4;
    else if (c == 0xF4)
      len = 4, hi = 0x8F; // nothing above U+10FFFF
    else
      return i;                // 0x80..0xC1, 0xF5..0xFF never start a character
    if (i + len > n) return i; // cut short
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string::npos;
}

// "ff" for the byte 0xFF: how a message shows a byte that is not text.
inline std::string hex_byte(char c) {
  constexpr const char* kDigits = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  return {kDigits[u >> 4], kDigits[u & 15]};
}

} // namespace pillars

// UTF-8 coding and Perl's character classes (see unicode.h).
#include "text/unicode.h"

#include <algorithm>

namespace pillars::text {

namespace {

constexpr char32_t kRawByteBase = 0xDC00; // an undecodable byte b becomes U+DC00 + b

bool in_ranges(const detail::CodeRange* r, size_t n, char32_t c) {
  // upper_bound on lo, then check the range before it.
  const detail::CodeRange* end = r + n;
  const detail::CodeRange* it =
      std::upper_bound(r, end, c, [](char32_t v, const detail::CodeRange& x) { return v < x.lo; });
  return it != r && c <= (it - 1)->hi;
}

} // namespace

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char b = p[i];
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    int len = (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
    char32_t c = 0;
    bool ok = len > 0 && i + len <= n;
    if (ok) {
      c = b & (0x7F >> len);
      for (int k = 1; k < len; ++k) {
        unsigned char t = p[i + k];
        if ((t & 0xC0) != 0x80) {
          ok = false;
          break;
        }
        c = (c << 6) | (t & 0x3F);
      }
    }
    // Reject overlong forms, surrogates and values past U+10FFFF: they are not well-formed UTF-8.
    if (ok &&
        ((len == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (len == 4 && (c < 0x10000 || c > 0x10FFFF))))
      ok = false;
    if (ok) {
      out.push_back(c);
      i += len;
    } else {
      out.push_back(kRawByteBase + b);
      ++i;
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c >= kRawByteBase + 0x80 && c <= kRawByteBase + 0xFF) {
    out.push_back(static_cast<char>(c - kRawByteBase)); // a byte that was not UTF-8: give it back
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

// ASCII is answered without a table search: it is nearly all of the text we see.
bool is_alnum(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
  return in_ranges(detail::k_alnum, detail::k_alnum_size, c);
}
bool is_alpha(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return in_ranges(detail::k_alpha, detail::k_alpha_size, c);
}
bool is_number(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(detail::k_number, detail::k_number_size, c);
}
bool is_lower(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  return in_ranges(detail::k_lower, detail::k_lower_size, c);
}
bool is_currency(char32_t c) { return in_ranges(detail::k_currency, detail::k_currency_size, c); }
bool is_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return in_ranges(detail::k_space, detail::k_space_size, c);
}

std::u32string perl_lc(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const detail::LowerMap* begin = detail::k_lower_map;
  const detail::LowerMap* end = begin + detail::k_lower_map_size;
  for (char32_t c : s) {
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    auto it = std::lower_bound(begin, end, c, [](const detail::LowerMap& m, char32_t v) { return m.from < v; });
    if (it != end && it->from == c) {
      out.push_back(it->to0);
      if (it->to1) out.push_back(it->to1);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string perl_lc_utf8(std::string_view s) { return utf8_encode(perl_lc(utf8_decode(s))); }

} // namespace pillars::text

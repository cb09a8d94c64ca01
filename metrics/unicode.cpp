// Python-str semantics for UTF-8 strings: see unicode.h.
#include "metrics/unicode.h"

#include <algorithm>

#include "metrics/unicode_tables.h"

namespace pillars::metrics {

char32_t utf8_next(std::string_view s, std::size_t& pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  int len = 0;
  char32_t c = 0;
  if (b0 < 0x80) {
    ++pos;
    return b0;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, c = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, c = b0 & 0x07;
  }
  if (len == 0 || pos + len > s.size()) {
    ++pos;
    return b0; // not a UTF-8 lead byte (or truncated): the byte stands for itself
  }
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[pos + k]);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return b0;
    }
    c = (c << 6) | (b & 0x3F);
  }
  // Reject overlong forms and surrogates the way a strict decoder does.
  if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) {
    ++pos;
    return b0;
  }
  pos += len;
  return c;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) out += utf8_next(s, pos);
  return out;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  // Always valid UTF-8: an invalid input byte that utf8_next passed through as 0x80..0xFF comes
  // back as that Latin-1 code point, so only valid input round-trips byte for byte.
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

bool is_space(char32_t c) {
  return std::binary_search(std::begin(detail::kSpaces), std::end(detail::kSpaces), static_cast<std::uint32_t>(c));
}

void append_lower(std::u32string& out, char32_t c) {
  if (c < 0x80) {
    out += (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return;
  }
  if (c == 0x130) { // LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i" + COMBINING DOT ABOVE
    out += U'i';
    out += char32_t{0x307};
    return;
  }
  // The run containing c, if any: the last run whose first <= c.
  const auto* runs = detail::kLowerRuns;
  const auto n = std::size(detail::kLowerRuns);
  const auto* it = std::upper_bound(runs, runs + n, static_cast<std::uint32_t>(c),
                                    [](std::uint32_t v, const detail::LowerRun& r) { return v < r.first; });
  if (it != runs) {
    const auto& r = *(it - 1);
    if (c <= r.last && (r.stride == 0 ? c == r.first : (c - r.first) % r.stride == 0)) {
      out += static_cast<char32_t>(static_cast<std::int64_t>(c) + r.delta);
      return;
    }
  }
  out += c;
}

namespace {

// Code units at or above this stand for undecodable input bytes (value - kRawByte); they are
// neither cased nor case-ignorable and are written back as the original byte.
constexpr char32_t kRawByte = 0x110000;

int sigma_class(char32_t c) {
  if (c >= kRawByte) return 0;
  const auto* runs = detail::kSigmaRuns;
  const auto* it = std::upper_bound(runs, runs + std::size(detail::kSigmaRuns), static_cast<std::uint32_t>(c),
                                    [](std::uint32_t v, const detail::SigmaRun& r) { return v < r.first; });
  return (it - 1)->cls;
}

// CPython's handle_capital_sigma: U+03A3 lowers to final sigma U+03C2 when, skipping
// case-ignorable characters, a cased character precedes it and no cased character follows.
char32_t lower_capital_sigma(std::u32string_view s, std::size_t i) {
  std::size_t j = i;
  int cls = 0;
  while (j > 0) {
    cls = sigma_class(s[--j]);
    if (cls != 1) break;
  }
  bool final_sigma = cls == 2;
  if (final_sigma) {
    for (std::size_t k = i + 1; k < s.size(); ++k) {
      const int c = sigma_class(s[k]);
      if (c == 1) continue;
      final_sigma = c != 2;
      break;
    }
  }
  return final_sigma ? 0x3C2 : 0x3C3;
}

void lower_into(std::u32string& out, std::u32string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0x3A3)
      out += lower_capital_sigma(s, i);
    else if (s[i] >= kRawByte)
      out += s[i];
    else
      append_lower(out, s[i]);
  }
}

} // namespace

std::u32string to_lower(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  lower_into(out, s);
  return out;
}

std::string to_lower(std::string_view s) {
  // Fast path: pure ASCII needs no decoding.
  if (std::all_of(s.begin(), s.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; })) {
    std::string out(s);
    for (char& ch : out)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
    return out;
  }
  // Decode (undecodable bytes become kRawByte + byte), lower with context, re-encode.
  std::u32string cps;
  cps.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) {
    const std::size_t start = pos;
    const char32_t c = utf8_next(s, pos);
    cps += (pos - start == 1 && c >= 0x80) ? kRawByte + c : c;
  }
  std::u32string lowered;
  lowered.reserve(cps.size());
  lower_into(lowered, cps);
  std::string out;
  out.reserve(s.size());
  for (char32_t c : lowered) {
    if (c >= kRawByte)
      out += static_cast<char>(c - kRawByte);
    else
      utf8_append(out, c);
  }
  return out;
}

std::vector<std::string> split_whitespace(std::string_view s) {
  std::vector<std::string> out;
  std::size_t pos = 0, tok_start = 0;
  bool in_token = false;
  while (pos < s.size()) {
    const std::size_t start = pos;
    const char32_t c = utf8_next(s, pos);
    const bool space = (pos - start == 1 && c >= 0x80) ? false : is_space(c);
    if (space) {
      if (in_token) out.emplace_back(s.substr(tok_start, start - tok_start));
      in_token = false;
    } else if (!in_token) {
      in_token = true;
      tok_start = start;
    }
  }
  if (in_token) out.emplace_back(s.substr(tok_start));
  return out;
}

std::string_view rstrip(std::string_view s) {
  // Scan forward remembering where the last non-space code point ended (UTF-8 cannot be decoded
  // backwards safely when it may contain invalid bytes).
  std::size_t pos = 0, keep = 0;
  while (pos < s.size()) {
    const std::size_t start = pos;
    const char32_t c = utf8_next(s, pos);
    const bool space = (pos - start == 1 && c >= 0x80) ? false : is_space(c);
    if (!space) keep = pos;
  }
  return s.substr(0, keep);
}

} // namespace pillars::metrics

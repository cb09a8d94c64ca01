// The little Unicode the metrics need to behave like the Python reference implementations
// (sacreBLEU, rouge-score, NLTK), which all work on Python `str`:
//
//   * utf8_decode / utf8_append: UTF-8 <-> code points. A byte that does not start a valid UTF-8
//     sequence decodes to itself as one "code point" (so Latin-1-ish garbage still round-trips
//     unchanged and never matches whitespace); valid input behaves exactly like Python's str.
//   * is_space(c): Python's str.isspace() (what str.split(), str.strip() and re's \s use).
//   * to_lower(text): Python's str.lower(): the one-to-one mappings, the one one-to-many mapping
//     (U+0130 -> "i" U+0307) and the context rule for capital sigma (final sigma U+03C2 at the end
//     of a word). Tables: metrics/unicode_tables.h, generated from CPython itself by
//     tests/golden/metrics/make_unicode_tables.py (Python 3.11, Unicode 14.0).
//   * split_whitespace(text): Python's str.split() with no arguments.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pillars::metrics {

// Decodes the code point starting at text[pos] and advances pos past it.
char32_t utf8_next(std::string_view text, std::size_t& pos);
void utf8_append(std::string& out, char32_t c);
std::u32string utf8_decode(std::string_view text);
std::string utf8_encode(std::u32string_view text);

bool is_space(char32_t c);
// Appends the lowercase of the single code point c (one or two code points) to out; without
// context, so capital sigma always becomes U+03C3 (use to_lower for text).
void append_lower(std::u32string& out, char32_t c);
std::string to_lower(std::string_view text);
std::u32string to_lower(std::u32string_view text);

// str.split(): maximal runs of non-whitespace, in order.
std::vector<std::string> split_whitespace(std::string_view text);
// str.rstrip(): text without its trailing whitespace.
std::string_view rstrip(std::string_view text);

} // namespace pillars::metrics

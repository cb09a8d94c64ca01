// UTF-8 and the few Unicode facts that the text pipeline needs.
//
//   std::u32string cps = text::utf8_decode(line);      // never fails, see below
//   if (text::is_alpha(cps[0])) ...                   // Perl's \p{IsAlpha}
//   std::string back = text::utf8_encode(cps);         // == line, byte for byte
//
// Decoding is lossless: a byte that is not part of a well-formed UTF-8 sequence becomes the code
// point 0xDC00 + byte (a lone low surrogate, which well-formed UTF-8 never holds) and encodes back
// to that same byte. So a file with stray Latin-1 bytes goes through the tokenizer unchanged
// instead of throwing or turning into U+FFFD.
//
// The character classes are Perl's, generated from Perl itself into unicode_tables.cpp by
// tests/golden/text/make_unicode_tables.pl, because the Moses scripts we reproduce are Perl
// regular expressions: \p{IsAlnum} (Alphabetic or decimal digit), \p{IsAlpha} (Alphabetic),
// \p{IsN} (General_Category N), \p{IsLower} (Lowercase), \p{IsSc} (currency symbols), \s.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pillars::text {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t c);

bool is_alnum(char32_t c);    // \p{IsAlnum}
bool is_alpha(char32_t c);    // \p{IsAlpha}
bool is_number(char32_t c);   // \p{IsN}
bool is_lower(char32_t c);    // \p{IsLower}
bool is_currency(char32_t c); // \p{IsSc}
bool is_space(char32_t c);    // Perl's \s on a character string (includes U+00A0, U+3000, ...)

// Perl's lc() on a character string: full lowercase mapping, so U+0130 becomes "i\u0307".
std::u32string perl_lc(std::u32string_view s);
std::string perl_lc_utf8(std::string_view s);

namespace detail {
struct CodeRange {
  char32_t lo, hi;
};
struct LowerMap {
  char32_t from, to0, to1; // to1 == 0: a single code point
};
extern const CodeRange k_alnum[], k_alpha[], k_number[], k_lower[], k_currency[], k_space[];
extern const size_t k_alnum_size, k_alpha_size, k_number_size, k_lower_size, k_currency_size, k_space_size;
extern const LowerMap k_lower_map[];
extern const size_t k_lower_map_size;
} // namespace detail

} // namespace pillars::text

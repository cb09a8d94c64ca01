// detokenizer.perl (Moses, 2017; its detokenize(), without -u and -penn); see moses.h.
//
// The script walks the space-separated words and decides, for each, whether the space before it
// stays: opening brackets and currency attach to the next word, closing punctuation to the
// previous one, English contractions ('s) to the previous word, and straight quotes alternate
// between opening (attach right) and closing (attach left), counted per quote character.
#include <map>
#include <string>
#include <vector>

#include "text/moses.h"
#include "text/moses_rules.h"
#include "text/unicode.h"

namespace pillars::text {

using namespace moses_detail;
using U = std::u32string;

namespace {

// charIsCJK() of the script: the blocks it lists.
bool is_cjk(char32_t c) {
  return (c >= 0x1100 && c <= 0x11FF) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xA840 && c <= 0xA87F) ||
         (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
         (c >= 0xFF65 && c <= 0xFFDC) || (c >= 0x20000 && c <= 0x2FFFF);
}

// /^[chars or class]+$/
template <class P>
bool all_of_nonempty(const U& w, P&& in_class) {
  if (w.empty()) return false;
  for (char32_t c : w)
    if (!in_class(c)) return false;
  return true;
}

bool in(char32_t c, std::u32string_view set) { return set.find(c) != std::u32string_view::npos; }

U deescape(U t) {
  static const std::pair<U, U> kRules[] = {
      {U"&bar;", U"|"},   // factor separator (legacy)
      {U"&#124;", U"|"},  // factor separator
      {U"&lt;", U"<"},    // xml
      {U"&gt;", U">"},    // xml
      {U"&bra;", U"["},   // syntax non-terminal (legacy)
      {U"&ket;", U"]"},   // syntax non-terminal (legacy)
      {U"&quot;", U"\""}, // xml
      {U"&apos;", U"'"},  // xml
      {U"&#91;", U"["},   // syntax non-terminal
      {U"&#93;", U"]"},   // syntax non-terminal
      {U"&amp;", U"&"},   // escape escape (last, so "&amp;lt;" becomes "&lt;")
  };
  for (const auto& [from, to] : kRules) t = replace_all(t, from, to);
  return t;
}

U detokenize(const U& line, const std::string& lang) {
  U text = U(U" ") + line + U(U" ");
  text = replace_all(text, U(U" @-@ "), U(U"-")); // s/ \@\-\@ /-/g;
  text = deescape(text);

  // my @words = split(/ /,$text): leading empty field kept, trailing ones dropped.
  std::vector<U> words;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ' ') {
      words.emplace_back(text, start, i - start);
      start = i + 1;
    }
  }
  while (!words.empty() && words.back().empty()) words.pop_back();

  U out;
  std::map<U, int> quote_count = {{U"'", 0}, {U"\"", 0}};
  U prepend = U" ";
  const size_t n = words.size();
  for (size_t i = 0; i < n; ++i) {
    const U& w = words[i];
    if (!w.empty() && is_cjk(w.front())) {
      if (i > 0 && !words[i - 1].empty() && is_cjk(words[i - 1].back())) {
        out += w; // a second consecutive CJK word: no space
      } else {
        out += prepend + w;
      }
      prepend = U" ";
    } else if (all_of_nonempty(w, [](char32_t c) { return is_currency(c) || in(c, U"([{¿¡"); })) {
      // perform right shift on currency and other random punctuation items
      out += prepend + w;
      prepend = U"";
    } else if (all_of_nonempty(w, [](char32_t c) { return in(c, U",.?!:;\\%}])"); })) {
      // these punctuations are prefixed with a non-breakable space in french
      if (lang == "fr" && w.size() == 1 && in(w[0], U"?!:;\\%")) out += U" ";
      // perform left shift on punctuation items
      out += w;
      prepend = U" ";
    } else if (lang == "en" && i > 0 && w.size() >= 2 && w[0] == '\'' && is_alpha(w[1]) && !words[i - 1].empty() &&
               is_alnum(words[i - 1].back())) {
      // left-shift the contraction for English
      out += w;
      prepend = U" ";
    } else if ((lang == "fr" || lang == "it") && i + 2 <= n && w.size() >= 2 && w.back() == '\'' &&
               is_alpha(w[w.size() - 2]) && !words[i + 1].empty() && is_alpha(words[i + 1][0])) {
      // right-shift the contraction for French and Italian
      out += prepend + w;
      prepend = U"";
    } else if (all_of_nonempty(w, [](char32_t c) { return in(c, U"'\"„“`"); })) {
      // combine punctuation smartly
      U normalized = w;
      if (all_of_nonempty(w, [](char32_t c) { return in(c, U"„“”"); })) normalized = U"\"";
      int& count = quote_count[normalized]; // created as 0 when new
      if (count % 2 == 0) {
        if (lang == "en" && w == U"'" && i > 0 && !words[i - 1].empty() && words[i - 1].back() == 's') {
          // single quote for possessives ending in s... "The Jones' house": left shift
          out += w;
          prepend = U" ";
        } else {
          // right shift
          out += prepend + w;
          prepend = U"";
          ++count;
        }
      } else {
        // left shift
        out += w;
        prepend = U" ";
        ++count;
      }
    } else {
      out += prepend + w;
      prepend = U" ";
    }
  }
  // clean up spaces at head and tail of each line as well as any double-spacing
  return strip_one_space(squeeze_spaces(out));
}

bool blank_or_tag(const U& u) {
  // /^<.+>$/ || /^\s*$/
  if (u.size() >= 3 && u.front() == '<' && u.back() == '>') return true;
  for (char32_t c : u)
    if (!is_space(c)) return false;
  return true;
}

} // namespace

std::string moses_detokenize(const std::string& line, const std::string& lang) {
  std::string s = line;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  U u = utf8_decode(s);
  if (blank_or_tag(u)) return s; // the script prints such lines as they are
  return utf8_encode(detokenize(u, lang));
}

} // namespace pillars::text

// Internal to the Moses ports (moses_*.cpp): Perl's s///g written as C++ scans.
//
// Each Perl rule s/PATTERN/REPLACEMENT/g becomes a matcher called at every position, left to
// right: it either appends the replacement to `out` and returns how many characters the match
// consumed, or returns 0 (no match here: the character is copied and the scan moves on). That is
// exactly how Perl walks a /g substitution, including which of two overlapping matches wins, so
// each port below is a transcription of the script's rule, not a re-derivation of its intent.
// Works on std::string (normalize-punctuation.perl runs on bytes) and std::u32string (the
// tokenizer and detokenizer run on characters).
#pragma once
#include <cstddef>
#include <string>

namespace pillars::text::moses_detail {

template <class S, class M>
S subst(const S& s, M&& match) {
  S out;
  out.reserve(s.size() + s.size() / 4 + 8);
  size_t i = 0;
  while (i < s.size()) {
    size_t k = match(s, i, out);
    if (k) {
      i += k;
    } else {
      out.push_back(s[i]);
      ++i;
    }
  }
  return out;
}

template <class S>
bool starts_at(const S& s, size_t i, const S& what) {
  return i + what.size() <= s.size() && s.compare(i, what.size(), what) == 0;
}

// s/\Qfrom\E/to/g
template <class S>
S replace_all(const S& s, const S& from, const S& to) {
  if (s.find(from) == S::npos) return s;
  return subst(s, [&](const S& t, size_t i, S& out) -> size_t {
    if (!starts_at(t, i, from)) return 0;
    out += to;
    return from.size();
  });
}

// s/ +/ /g
template <class S>
S squeeze_spaces(const S& s) {
  S out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == ' ' && i > 0 && s[i - 1] == ' ')) out.push_back(s[i]);
  return out;
}

// s/^ //; s/ $//
template <class S>
S strip_one_space(S s) {
  if (!s.empty() && s.front() == ' ') s.erase(0, 1);
  if (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

} // namespace pillars::text::moses_detail

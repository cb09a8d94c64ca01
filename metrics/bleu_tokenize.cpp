// sacreBLEU's line preprocessing: lowercase, rstrip and the "13a" / "char" / "none" tokenizers.
//
// 13a is mteval-v13a.pl's NormalizeText as sacreBLEU 2.x runs it (tokenizer_13a.py +
// tokenizer_re.py), applied in this order:
//   1. drop "<skipped>", join "-\n" line breaks, turn "\n" into " "; if the line has '&', unescape
//      &quot; &amp; &lt; &gt; (one str.replace each, in that order: "&amp;lt;" becomes "<" but
//      "&amp;quot;" stays "&quot;");
//   2. pad with one space on each side;
//   3. put spaces around every character of  { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
//      (i.e. ASCII punctuation except ' , - .);
//   4. ([^0-9])([.,]) -> "\1 \2 "   period/comma not preceded by a digit;
//   5. ([.,])([^0-9]) -> " \1 \2"   period/comma not followed by a digit;
//   6. ([0-9])(-)     -> "\1 \2 "   dash after a digit;
//   7. collapse whitespace (Python str.split()) and join with single spaces.
// Steps 4-6 are regex substitutions: Python's re.sub scans left to right and resumes after each
// match, so a character consumed by one match cannot start the next one ("a.,b" -> "a . ,b" after
// step 4). We scan the same way. Working on UTF-8 bytes instead of code points gives the same
// result: the patterns' literal characters are ASCII, and [^0-9] matching the last byte of a
// multi-byte character (step 4) or its first byte (step 5) consumes exactly the bytes Python's
// match would have consumed or leaves continuation bytes that can start no match.
#include "metrics/bleu.h"

#include "metrics/unicode.h"

namespace pillars::metrics {
namespace {

// Python str.replace: every non-overlapping occurrence, left to right.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_period_comma(char c) { return c == '.' || c == ','; }

// Step 3's character class [\{-\~\[-\` -\&\(-\+\:-\@\/].
bool is_13a_punct(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) ||
         (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

std::string join_words(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const std::string& w : split_whitespace(s)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

} // namespace

std::string tokenize_13a(std::string_view line) {
  std::string s = replace_all(line, "<skipped>", "");
  s = replace_all(s, "-\n", "");
  s = replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    s = replace_all(s, "&quot;", "\"");
    s = replace_all(s, "&amp;", "&");
    s = replace_all(s, "&lt;", "<");
    s = replace_all(s, "&gt;", ">");
  }

  std::string a; // steps 2 and 3
  a.reserve(s.size() * 2 + 2);
  a += ' ';
  for (char c : s) {
    if (is_13a_punct(c)) {
      a += ' ';
      a += c;
      a += ' ';
    } else {
      a += c;
    }
  }
  a += ' ';

  std::string b; // step 4: ([^0-9])([.,]) -> "\1 \2 "
  b.reserve(a.size() * 2);
  for (std::size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && !is_digit(a[i]) && is_period_comma(a[i + 1])) {
      b += a[i];
      b += ' ';
      b += a[i + 1];
      b += ' ';
      i += 2;
    } else {
      b += a[i++];
    }
  }

  std::string c; // step 5: ([.,])([^0-9]) -> " \1 \2"
  c.reserve(b.size() * 2);
  for (std::size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && is_period_comma(b[i]) && !is_digit(b[i + 1])) {
      c += ' ';
      c += b[i];
      c += ' ';
      c += b[i + 1];
      i += 2;
    } else {
      c += b[i++];
    }
  }

  std::string d; // step 6: ([0-9])(-) -> "\1 \2 "
  d.reserve(c.size() * 2);
  for (std::size_t i = 0; i < c.size();) {
    if (i + 1 < c.size() && is_digit(c[i]) && c[i + 1] == '-') {
      d += c[i];
      d += ' ';
      d += '-';
      d += ' ';
      i += 2;
    } else {
      d += c[i++];
    }
  }
  return join_words(d); // step 7
}

std::string tokenize_char(std::string_view line) {
  // sacreBLEU: " ".join(line) — every code point becomes a token (whitespace ones vanish later
  // when the line is split).
  std::string out;
  out.reserve(line.size() * 2);
  for (std::size_t pos = 0; pos < line.size();) {
    const std::size_t start = pos;
    utf8_next(line, pos);
    if (start > 0) out += ' ';
    out.append(line.substr(start, pos - start));
  }
  return out;
}

std::string bleu_preprocess(std::string_view line, const BleuOptions& opts) {
  std::string lowered;
  if (opts.lowercase) {
    lowered = to_lower(line);
    line = lowered;
  }
  line = rstrip(line);
  switch (opts.tokenize) {
    case BleuTokenizer::k13a:
      return tokenize_13a(line);
    case BleuTokenizer::kChar:
      return tokenize_char(line);
    case BleuTokenizer::kNone:
      break;
  }
  return std::string(line);
}

} // namespace pillars::metrics

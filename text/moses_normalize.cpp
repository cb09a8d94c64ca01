// normalize-punctuation.perl (Moses, December 2017); see moses.h.
//
// The script reads its input as bytes (it sets no UTF-8 layer), so its rules are applied here to
// the UTF-8 bytes: "„" is the three-byte sequence, \d is [0-9], \s is ASCII whitespace and
// [a-z] with /i is ASCII letters. The line keeps its "\n" while the rules run, as in the script's
// while(<STDIN>) loop; that matters for the German rule s/(\.+)\"(\s*[^<])/\"$1$2/g, which then
// also moves a period that ends the line.
//
// The "pseudo-space" rules (and the French-quote and digit-grouping rules) match a no-break
// space U+00A0 where the script's source shows a blank: the script's own file has the U+00A0
// bytes there (sacremoses, its Python port, spells them \u00A0). Their replacements use plain
// spaces.
#include <cstring>
#include <string>

#include "text/moses.h"
#include "text/moses_rules.h"

namespace pillars::text {

using namespace moses_detail;
using S = std::string;

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }
bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool byte_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

const S kNbsp = "\xC2\xA0";

S rep(const S& s, const S& from, const S& to) { return replace_all(s, from, to); }

// s/([a-z])Q([a-z])/$1\'$2/gi for a (multi-byte) quote character Q.
S quote_between_letters(const S& s, const S& q) {
  return subst(s, [&](const S& t, size_t i, S& out) -> size_t {
    size_t j = i + 1 + q.size();
    if (j >= t.size() || !ascii_letter(t[i]) || !starts_at(t, i + 1, q) || !ascii_letter(t[j])) return 0;
    out += t[i];
    out += '\'';
    out += t[j];
    return j + 1 - i;
  });
}

// s/(\d) (\d)/$1<sep>$2/g with a no-break space between the digits.
S group_digits(const S& s, char sep) {
  return subst(s, [&](const S& t, size_t i, S& out) -> size_t {
    if (i + 3 >= t.size() || !digit(t[i]) || !starts_at(t, i + 1, kNbsp) || !digit(t[i + 3])) return 0;
    out += t[i];
    out += sep;
    out += t[i + 3];
    return 4;
  });
}

// s/(\.+)\"(\s*[^<])/\"$1$2/g  (German/Spanish/French: the period goes after the quote)
S period_after_quote(const S& s) {
  return subst(s, [](const S& t, size_t i, S& out) -> size_t {
    if (t[i] != '.') return 0;
    size_t q = i;
    while (q < t.size() && t[q] == '.') ++q;
    if (q >= t.size() || t[q] != '"') return 0;
    // \s* is greedy; [^<] then needs one more character, or takes back the last whitespace one.
    size_t w = q + 1;
    while (w < t.size() && byte_space(t[w])) ++w;
    size_t end;
    if (w < t.size() && t[w] != '<')
      end = w + 1;
    else if (w > q + 1)
      end = w;
    else
      return 0;
    out += '"';
    out.append(t, i, q - i);
    out.append(t, q + 1, end - q - 1);
    return end - i;
  });
}

} // namespace

S moses_normalize_punctuation(const S& line, const S& lang, bool penn) {
  S s = line;
  if (s.empty() || s.back() != '\n') s += '\n'; // the script sees the line with its newline
  std::erase(s, '\r');                          // s/\r//g;
  // remove extra spaces
  s = squeeze_spaces(rep(rep(s, "(", " ("), ")", ") ")); // s/\(/ \(/g; s/\)/\) /g; s/ +/ /g;
  // s/\) ([\.\!\:\?\;\,])/\)$1/g;
  s = subst(s, [](const S& t, size_t i, S& out) -> size_t {
    if (i + 2 >= t.size() || t[i] != ')' || t[i + 1] != ' ' || !std::strchr(".!:?;,", t[i + 2]) || t[i + 2] == 0)
      return 0;
    out += ')';
    out += t[i + 2];
    return 3;
  });
  s = rep(s, "( ", "("); // s/\( /\(/g;
  s = rep(s, " )", ")"); // s/ \)/\)/g;
  // s/(\d) \%/$1\%/g;
  s = subst(s, [](const S& t, size_t i, S& out) -> size_t {
    if (i + 2 >= t.size() || !digit(t[i]) || t[i + 1] != ' ' || t[i + 2] != '%') return 0;
    out += t[i];
    out += '%';
    return 3;
  });
  s = rep(s, " :", ":"); // s/ :/:/g;
  s = rep(s, " ;", ";"); // s/ ;/;/g;

  // normalize unicode punctuation
  if (!penn) {
    s = rep(s, "`", "'");     // s/\`/\'/g;
    s = rep(s, "''", " \" "); // s/\'\'/ \" /g;
  }
  s = rep(s, "„", "\"");
  s = rep(s, "“", "\"");
  s = rep(s, "”", "\"");
  s = rep(s, "–", "-");
  s = squeeze_spaces(rep(s, "—", " - ")); // s/—/ - /g; s/ +/ /g;
  s = rep(s, "´", "'");
  s = quote_between_letters(s, "‘"); // s/([a-z])‘([a-z])/$1\'$2/gi;
  s = quote_between_letters(s, "’"); // s/([a-z])’([a-z])/$1\'$2/gi;
  s = rep(s, "‘", "\"");
  s = rep(s, "‚", "\"");
  s = rep(s, "’", "\"");
  s = rep(s, "''", "\"");
  s = rep(s, "´´", "\"");
  s = rep(s, "…", "...");
  // French quotes
  s = rep(s, kNbsp + "«" + kNbsp, " \"");
  s = rep(s, "«" + kNbsp, "\"");
  s = rep(s, "«", "\"");
  s = rep(s, kNbsp + "»" + kNbsp, "\" ");
  s = rep(s, kNbsp + "»", "\"");
  s = rep(s, "»", "\"");
  // handle pseudo-spaces
  s = rep(s, kNbsp + "%", "%");
  s = rep(s, "nº" + kNbsp, "nº ");
  s = rep(s, kNbsp + ":", ":");
  s = rep(s, kNbsp + "ºC", " ºC");
  s = rep(s, kNbsp + "cm", " cm");
  s = rep(s, kNbsp + "?", "?");
  s = rep(s, kNbsp + "!", "!");
  s = rep(s, kNbsp + ";", ";");
  s = squeeze_spaces(rep(s, "," + kNbsp, ", ")); // s/, /, /g; s/ +/ /g;

  if (lang == "en") {
    // English "quotation," followed by comma, style: s/\"([,\.]+)/$1\"/g;
    s = subst(s, [](const S& t, size_t i, S& out) -> size_t {
      if (t[i] != '"') return 0;
      size_t j = i + 1;
      while (j < t.size() && (t[j] == ',' || t[j] == '.')) ++j;
      if (j == i + 1) return 0;
      out.append(t, i + 1, j - i - 1);
      out += '"';
      return j - i;
    });
  } else if (lang == "cs" || lang == "cz") {
    // Czech is confused
  } else {
    // German/Spanish/French "quotation", followed by comma, style
    s = rep(s, ",\"", "\",");  // s/,\"/\",/g;
    s = period_after_quote(s); // "don't fix period at end of sentence" (see the header)
  }

  if (lang == "de" || lang == "es" || lang == "cz" || lang == "cs" || lang == "fr")
    s = group_digits(s, ','); // s/(\d) (\d)/$1,$2/g;
  else
    s = group_digits(s, '.'); // s/(\d) (\d)/$1.$2/g;

  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

} // namespace pillars::text

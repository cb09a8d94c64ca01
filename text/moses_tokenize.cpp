// tokenizer.perl (Moses, December 2017) and lowercase.perl; see moses.h. Each block below is
// one rule of the script, quoted in its comment, in the script's order.
#include <string>
#include <vector>

#include "text/moses.h"
#include "text/moses_rules.h"
#include "text/unicode.h"

namespace pillars::text {

using namespace moses_detail;
using U = std::u32string;

namespace {

bool only_spaces(const U& s) {
  for (char32_t c : s)
    if (!is_space(c)) return false;
  return true;
}

bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }

// The apostrophe rules, which differ by language.
U split_apostrophes(const U& text, const std::string& lang) {
  auto A = [](char32_t c) { return is_alpha(c); };
  // "$1<mid>$2" where the characters around the apostrophe satisfy cond($1, $2); 3 consumed.
  auto apostrophe_rule = [](auto cond, const U& mid) {
    return [cond, mid](const U& s, size_t i, U& out) -> size_t {
      if (i + 2 >= s.size() || s[i + 1] != '\'' || !cond(s[i], s[i + 2])) return 0;
      out += s[i];
      out += mid;
      out += s[i + 2];
      return 3;
    };
  };
  U t = text;
  if (lang == "en") {
    // split contractions right
    // s/([^\p{IsAlpha}])[']([^\p{IsAlpha}])/$1 ' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return !A(a) && !A(b); }, U(U" ' ")));
    // s/([^\p{IsAlpha}\p{IsN}])[']([\p{IsAlpha}])/$1 ' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return !A(a) && !is_number(a) && A(b); }, U(U" ' ")));
    // s/([\p{IsAlpha}])[']([^\p{IsAlpha}])/$1 ' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return A(a) && !A(b); }, U(U" ' ")));
    // s/([\p{IsAlpha}])[']([\p{IsAlpha}])/$1 '$2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return A(a) && A(b); }, U(U" '")));
    // special case for "1990's": s/([\p{IsN}])[']([s])/$1 '$2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return is_number(a) && b == 's'; }, U(U" '")));
  } else if (lang == "fr" || lang == "it" || lang == "ga") {
    // split contractions left
    // s/([^\p{IsAlpha}])[']([^\p{IsAlpha}])/$1 ' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return !A(a) && !A(b); }, U(U" ' ")));
    // s/([^\p{IsAlpha}])[']([\p{IsAlpha}])/$1 ' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return !A(a) && A(b); }, U(U" ' ")));
    // s/([\p{IsAlpha}])[']([^\p{IsAlpha}])/$1 ' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return A(a) && !A(b); }, U(U" ' ")));
    // s/([\p{IsAlpha}])[']([\p{IsAlpha}])/$1' $2/g;
    t = subst(t, apostrophe_rule([&](char32_t a, char32_t b) { return A(a) && A(b); }, U(U"' ")));
  } else {
    // s/\'/ \' /g;
    t = replace_all(t, U(U"'"), U(U" ' "));
  }
  return t;
}

// The "word token method": a word "X." keeps its period when X contains a period and a letter,
// when X is a nonbreaking prefix, or when the next word starts in lower case (and, for
// NUMERIC_ONLY prefixes, when the next word starts with a digit); otherwise "X ." .
U split_periods(const U& text, const std::string& lang) {
  // my @words = split(/\s/,$text): one field per whitespace character; leading empty fields
  // stay, trailing ones are dropped (Perl's split).
  std::vector<U> words;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || is_space(text[i])) {
      words.emplace_back(text, start, i - start);
      start = i + 1;
    }
  }
  while (!words.empty() && words.back().empty()) words.pop_back();

  U out;
  out.reserve(text.size() + 8);
  const size_t n = words.size();
  for (size_t i = 0; i < n; ++i) {
    U word = words[i];
    // if ( $word =~ /^(\S+)\.$/)
    if (word.size() >= 2 && word.back() == '.') {
      U pre = word.substr(0, word.size() - 1);
      bool has_dot = false, has_alpha = false;
      for (char32_t c : pre) {
        has_dot |= c == '.';
        has_alpha |= is_alpha(c);
      }
      int prefix = moses_nonbreaking_prefix(lang, pre);
      bool next_lower = i + 1 < n && !words[i + 1].empty() && is_lower(words[i + 1][0]);
      bool next_digit = i + 1 < n && !words[i + 1].empty() && is_ascii_digit(words[i + 1][0]);
      if ((has_dot && has_alpha) || prefix == 1 || next_lower) {
        // no change
      } else if (prefix == 2 && next_digit) {
        // no change
      } else {
        word = pre + U" .";
      }
    }
    out += word;
    out += ' ';
  }
  return out;
}

U escape_xml(const U& t) {
  U out;
  out.reserve(t.size() + 16);
  for (char32_t c : t) {
    switch (c) {
      case '&':
        out += U"&amp;";
        break; // escape escape
      case '|':
        out += U"&#124;";
        break; // factor separator
      case '<':
        out += U"&lt;";
        break; // xml
      case '>':
        out += U"&gt;";
        break; // xml
      case '\'':
        out += U"&apos;";
        break; // xml
      case '"':
        out += U"&quot;";
        break; // xml
      case '[':
        out += U"&#91;";
        break; // syntax non-terminal
      case ']':
        out += U"&#93;";
        break; // syntax non-terminal
      default:
        out += c;
    }
  }
  return out;
}

U tokenize(const U& line, const MosesOptions& o) {
  // $text = " $text "; remove ASCII junk: s/\s+/ /g; s/[\000-\037]//g;
  U t;
  t.reserve(line.size() + 16);
  bool in_space = false;
  for (char32_t c : U(U" ") + line + U(U" ")) {
    if (is_space(c)) {
      if (!in_space) t += ' ';
      in_space = true;
    } else {
      t += c;
      in_space = false;
    }
  }
  std::erase_if(t, [](char32_t c) { return c < 32; });
  // (after the protected patterns, of which we have none) s/ +/ /g; s/^ //g; s/ $//g;
  t = strip_one_space(squeeze_spaces(t));

  // separate out all "other" special characters: s/([^\p{IsAlnum}\s\.\'\`\,\-])/ $1 /g;
  t = subst(t, [](const U& s, size_t i, U& out) -> size_t {
    char32_t c = s[i];
    if (is_alnum(c) || is_space(c) || c == '.' || c == '\'' || c == '`' || c == ',' || c == '-') return 0;
    out += ' ';
    out += c;
    out += ' ';
    return 1;
  });

  // aggressive hyphen splitting: s/([\p{IsAlnum}])\-(?=[\p{IsAlnum}])/$1 \@-\@ /g;
  if (o.aggressive_hyphen) {
    t = subst(t, [](const U& s, size_t i, U& out) -> size_t {
      if (i + 2 >= s.size() || !is_alnum(s[i]) || s[i + 1] != '-' || !is_alnum(s[i + 2])) return 0;
      out += s[i];
      out += U" @-@ ";
      return 2; // the lookahead character is not consumed
    });
  }

  // multi-dots stay together: s/\.([\.]+)/ DOTMULTI$1/g;
  t = subst(t, [](const U& s, size_t i, U& out) -> size_t {
    if (s[i] != '.' || i + 1 >= s.size() || s[i + 1] != '.') return 0;
    size_t j = i + 1;
    while (j < s.size() && s[j] == '.') ++j;
    out += U" DOTMULTI";
    out.append(s, i + 1, j - i - 1);
    return j - i;
  });
  // while($text =~ /DOTMULTI\./) { s/DOTMULTI\.([^\.])/DOTDOTMULTI $1/g; s/DOTMULTI\./DOTDOTMULTI/g; }
  const U kDotMultiDot = U"DOTMULTI.";
  while (t.find(kDotMultiDot) != U::npos) {
    t = subst(t, [&](const U& s, size_t i, U& out) -> size_t {
      if (!starts_at(s, i, kDotMultiDot) || i + 9 >= s.size() || s[i + 9] == '.') return 0;
      out += U"DOTDOTMULTI ";
      out += s[i + 9];
      return 10;
    });
    t = replace_all(t, kDotMultiDot, U(U"DOTDOTMULTI"));
  }

  // separate out "," except if within numbers (5,300), in two steps:
  // s/([^\p{IsN}])[,]/$1 , /g;
  t = subst(t, [](const U& s, size_t i, U& out) -> size_t {
    if (i + 1 >= s.size() || s[i + 1] != ',' || is_number(s[i])) return 0;
    out += s[i];
    out += U" , ";
    return 2;
  });
  // s/[,]([^\p{IsN}])/ , $1/g;
  t = subst(t, [](const U& s, size_t i, U& out) -> size_t {
    if (s[i] != ',' || i + 1 >= s.size() || is_number(s[i + 1])) return 0;
    out += U" , ";
    out += s[i + 1];
    return 2;
  });
  // separate "," after a number if it's the end of a sentence: s/([\p{IsN}])[,]$/$1 ,/g;
  if (t.size() >= 2 && t.back() == ',' && is_number(t[t.size() - 2])) t.insert(t.size() - 1, 1, ' ');

  t = split_apostrophes(t, o.lang);
  t = split_periods(t, o.lang);

  // clean up extraneous spaces: s/ +/ /g; s/^ //g; s/ $//g;
  t = strip_one_space(squeeze_spaces(t));

  // .' at end of sentence is missed: s/\.\' ?$/ . ' /;
  if (t.size() >= 2 && t[t.size() - 2] == '.' && t.back() == '\'') {
    t.resize(t.size() - 2);
    t += U" . ' ";
  }

  // restore multi-dots: while (/DOTDOTMULTI/) { s/DOTDOTMULTI/DOTMULTI./g } s/DOTMULTI/./g;
  const U kDotDotMulti = U"DOTDOTMULTI";
  while (t.find(kDotDotMulti) != U::npos) t = replace_all(t, kDotDotMulti, U(U"DOTMULTI."));
  t = replace_all(t, U(U"DOTMULTI"), U(U"."));

  if (o.escape) t = escape_xml(t);
  return t;
}

std::string chomp(const std::string& line) {
  if (!line.empty() && line.back() == '\n') return line.substr(0, line.size() - 1);
  return line;
}

} // namespace

std::string moses_lowercase(const std::string& line) { return perl_lc_utf8(line); }

std::string moses_tokenize(const std::string& line, const MosesOptions& options) {
  std::string s = chomp(line);
  if (options.lowercase) s = moses_lowercase(s);
  if (options.normalize_punctuation) s = moses_normalize_punctuation(s, options.lang);
  U u = utf8_decode(s);
  if (only_spaces(u)) return s; // tokenizer.perl prints blank lines untouched
  return utf8_encode(tokenize(u, options));
}

} // namespace pillars::text

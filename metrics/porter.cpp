// Porter (1980), "An algorithm for suffix stripping", with the deviations NLTK's default mode
// (NLTK_EXTENSIONS) makes. Written from the paper's rules; each NLTK departure is marked "NLTK:".
//
// Vocabulary of the paper: a letter is a consonant (c) unless it is a, e, i, o, u, or a y that
// follows a consonant; runs of c / v are C / V; every word is [C](VC)^m[V] and m is its "measure".
// Conditions used by the rules:  *v* the stem contains a vowel;  *d it ends in a double consonant;
// *o it ends consonant-vowel-consonant with the last not w, x or y.
// A rule list is tried in order and only the FIRST rule whose suffix matches is considered: if its
// condition fails the word is left alone (later rules in that list are not tried).
#include "metrics/porter.h"

#include <array>
#include <unordered_map>

#include "metrics/unicode.h"

namespace pillars::metrics {
namespace {

using Word = std::u32string;

bool is_vowel_letter(char32_t c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

bool is_consonant(const Word& w, std::size_t i) {
  if (is_vowel_letter(w[i])) return false;
  if (w[i] == 'y') return i == 0 ? true : !is_consonant(w, i - 1);
  return true;
}

// m: the number of vowel->consonant transitions, i.e. of VC pairs in [C](VC)^m[V].
int measure(const Word& stem) {
  int m = 0;
  for (std::size_t i = 1; i < stem.size(); ++i)
    if (!is_consonant(stem, i - 1) && is_consonant(stem, i)) ++m;
  return m;
}

bool contains_vowel(const Word& stem) {
  for (std::size_t i = 0; i < stem.size(); ++i)
    if (!is_consonant(stem, i)) return true;
  return false;
}

bool ends_double_consonant(const Word& w) {
  const std::size_t n = w.size();
  return n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1);
}

bool ends_cvc(const Word& w) {
  const std::size_t n = w.size();
  if (n >= 3 && is_consonant(w, n - 3) && !is_consonant(w, n - 2) && is_consonant(w, n - 1) && w[n - 1] != 'w' &&
      w[n - 1] != 'x' && w[n - 1] != 'y')
    return true;
  // NLTK: a two-letter word vowel-consonant also counts as *o.
  return n == 2 && !is_consonant(w, 0) && is_consonant(w, 1);
}

bool ends_with(const Word& w, std::u32string_view suffix) {
  return w.size() >= suffix.size() && std::u32string_view(w).substr(w.size() - suffix.size()) == suffix;
}

Word drop(const Word& w, std::size_t n) { return w.substr(0, w.size() - n); }

enum class Cond { kNone, kM0, kM1 }; // no condition, m > 0, m > 1 (all on the stem)
struct Rule {
  std::u32string_view suffix, replacement;
  Cond cond;
};

bool holds(Cond c, const Word& stem) {
  switch (c) {
    case Cond::kNone:
      return true;
    case Cond::kM0:
      return measure(stem) > 0;
    case Cond::kM1:
      return measure(stem) > 1;
  }
  return false;
}

// First matching suffix decides: replace if its condition holds, else leave the word.
template <std::size_t N>
Word apply_rules(const Word& w, const std::array<Rule, N>& rules) {
  for (const Rule& r : rules) {
    if (!ends_with(w, r.suffix)) continue;
    Word stem = drop(w, r.suffix.size());
    if (!holds(r.cond, stem)) return w;
    stem += r.replacement;
    return stem;
  }
  return w;
}

// Step 1a: plurals. SSES->SS, IES->I, SS->SS, S->.
Word step1a(const Word& w) {
  if (w.size() == 4 && ends_with(w, U"ies")) return drop(w, 3) + U"ie"; // NLTK: dies -> die
  static constexpr std::array<Rule, 4> rules{{{U"sses", U"ss", Cond::kNone},
                                              {U"ies", U"i", Cond::kNone},
                                              {U"ss", U"ss", Cond::kNone},
                                              {U"s", U"", Cond::kNone}}};
  return apply_rules(w, rules);
}

// Step 1b: (m>0) EED->EE; (*v*) ED->; (*v*) ING->; then tidy the stem so that later steps see
// -ATE/-BLE/-IZE, undouble a final double consonant, or restore an E after a short cvc stem.
Word step1b(const Word& w) {
  if (ends_with(w, U"ied")) return drop(w, 3) + (w.size() == 4 ? U"ie" : U"i"); // NLTK: died, spied
  if (ends_with(w, U"eed")) {
    Word stem = drop(w, 3);
    return measure(stem) > 0 ? stem + U"ee" : w;
  }
  Word stem;
  bool removed = false;
  for (std::u32string_view suffix : {std::u32string_view(U"ed"), std::u32string_view(U"ing")}) {
    if (ends_with(w, suffix)) {
      stem = drop(w, suffix.size());
      if (contains_vowel(stem)) {
        removed = true;
        break;
      }
    }
  }
  if (!removed) return w;
  if (ends_with(stem, U"at")) return stem + U"e";
  if (ends_with(stem, U"bl")) return stem + U"e";
  if (ends_with(stem, U"iz")) return stem + U"e";
  if (ends_double_consonant(stem)) {
    const char32_t last = stem.back();
    // (*d and not (*L or *S or *Z)) -> single letter; otherwise keep the stem as it is (and do
    // not try the E rule below: the *d rule matched).
    return (last == 'l' || last == 's' || last == 'z') ? stem : drop(stem, 1);
  }
  if (measure(stem) == 1 && ends_cvc(stem)) return stem + U"e";
  return stem;
}

// Step 1c: Y->I. NLTK: only after a consonant that is not the first letter (happy->happi,
// enjoy->enjoy, but also fly->fli), instead of the paper's (*v*).
Word step1c(const Word& w) {
  if (!ends_with(w, U"y")) return w;
  Word stem = drop(w, 1);
  if (stem.size() > 1 && is_consonant(stem, stem.size() - 1)) return stem + U"i";
  return w;
}

// Step 2: double suffixes to single ones, all under (m>0).
Word step2(const Word& w) {
  // NLTK: ALLI->AL is tried first and, if it fires, step 2 runs again on the result.
  if (ends_with(w, U"alli") && measure(drop(w, 4)) > 0) return step2(drop(w, 4) + U"al");
  static constexpr std::array<Rule, 21> rules{{
      {U"ational", U"ate", Cond::kM0},
      {U"tional", U"tion", Cond::kM0},
      {U"enci", U"ence", Cond::kM0},
      {U"anci", U"ance", Cond::kM0},
      {U"izer", U"ize", Cond::kM0},
      {U"bli", U"ble", Cond::kM0}, // Porter's later correction of the paper's ABLI->ABLE
      {U"alli", U"al", Cond::kM0},
      {U"entli", U"ent", Cond::kM0},
      {U"eli", U"e", Cond::kM0},
      {U"ousli", U"ous", Cond::kM0},
      {U"ization", U"ize", Cond::kM0},
      {U"ation", U"ate", Cond::kM0},
      {U"ator", U"ate", Cond::kM0},
      {U"alism", U"al", Cond::kM0},
      {U"iveness", U"ive", Cond::kM0},
      {U"fulness", U"ful", Cond::kM0},
      {U"ousness", U"ous", Cond::kM0},
      {U"aliti", U"al", Cond::kM0},
      {U"iviti", U"ive", Cond::kM0},
      {U"biliti", U"ble", Cond::kM0},
      {U"fulli", U"ful", Cond::kM0}, // NLTK
  }};
  // NLTK's LOGI->LOG rule comes last and measures the stem *with* its l (geo-logi, theo-logi).
  for (const Rule& r : rules)
    if (ends_with(w, r.suffix)) return apply_rules(w, rules);
  if (ends_with(w, U"logi")) return measure(drop(w, 3)) > 0 ? drop(w, 1) : w;
  return w;
}

// Step 3: -ICATE, -ATIVE, -ALIZE, -ICITI, -ICAL, -FUL, -NESS under (m>0).
Word step3(const Word& w) {
  static constexpr std::array<Rule, 7> rules{{{U"icate", U"ic", Cond::kM0},
                                              {U"ative", U"", Cond::kM0},
                                              {U"alize", U"al", Cond::kM0},
                                              {U"iciti", U"ic", Cond::kM0},
                                              {U"ical", U"ic", Cond::kM0},
                                              {U"ful", U"", Cond::kM0},
                                              {U"ness", U"", Cond::kM0}}};
  return apply_rules(w, rules);
}

// Step 4: strip a final suffix when what is left has m > 1; -ION only after s or t.
Word step4(const Word& w) {
  static constexpr std::array<Rule, 11> before_ion{{
      {U"al", U"", Cond::kM1},
      {U"ance", U"", Cond::kM1},
      {U"ence", U"", Cond::kM1},
      {U"er", U"", Cond::kM1},
      {U"ic", U"", Cond::kM1},
      {U"able", U"", Cond::kM1},
      {U"ible", U"", Cond::kM1},
      {U"ant", U"", Cond::kM1},
      {U"ement", U"", Cond::kM1},
      {U"ment", U"", Cond::kM1},
      {U"ent", U"", Cond::kM1},
  }};
  static constexpr std::array<Rule, 7> after_ion{{
      {U"ou", U"", Cond::kM1},
      {U"ism", U"", Cond::kM1},
      {U"ate", U"", Cond::kM1},
      {U"iti", U"", Cond::kM1},
      {U"ous", U"", Cond::kM1},
      {U"ive", U"", Cond::kM1},
      {U"ize", U"", Cond::kM1},
  }};
  for (const Rule& r : before_ion)
    if (ends_with(w, r.suffix)) return apply_rules(w, before_ion);
  if (ends_with(w, U"ion")) {
    Word stem = drop(w, 3);
    return (measure(stem) > 1 && (stem.back() == 's' || stem.back() == 't')) ? stem : w;
  }
  return apply_rules(w, after_ion);
}

// Step 5a: (m>1) E->;  (m=1 and not *o) E->.  Both conditions are tried (see NLTK's note).
Word step5a(const Word& w) {
  if (!ends_with(w, U"e")) return w;
  Word stem = drop(w, 1);
  const int m = measure(stem);
  if (m > 1 || (m == 1 && !ends_cvc(stem))) return stem;
  return w;
}

// Step 5b: (m>1 and *d and *L) -> single letter; the measure is taken on the word minus one l.
Word step5b(const Word& w) {
  if (ends_with(w, U"ll") && measure(drop(w, 1)) > 1) return drop(w, 1);
  return w;
}

} // namespace

std::string porter_stem(std::string_view word_utf8) {
  const Word word = utf8_decode(word_utf8);
  const Word lower = to_lower(std::u32string_view(word));
  // NLTK: a short table of irregular forms, looked up with the word as given (not lowercased).
  static const std::unordered_map<Word, Word> irregular{
      {U"sky", U"sky"},        {U"skies", U"sky"},       {U"dying", U"die"},        {U"lying", U"lie"},
      {U"tying", U"tie"},      {U"news", U"news"},       {U"innings", U"inning"},   {U"inning", U"inning"},
      {U"outings", U"outing"}, {U"outing", U"outing"},   {U"cannings", U"canning"}, {U"canning", U"canning"},
      {U"howe", U"howe"},      {U"proceed", U"proceed"}, {U"exceed", U"exceed"},    {U"succeed", U"succeed"},
  };
  if (auto it = irregular.find(word); it != irregular.end()) return utf8_encode(it->second);
  // NLTK: words of one or two letters (counted before lowercasing) are only lowercased.
  if (word.size() <= 2) return utf8_encode(lower);
  Word w = step1a(lower);
  w = step1b(w);
  w = step1c(w);
  w = step2(w);
  w = step3(w);
  w = step4(w);
  w = step5a(w);
  w = step5b(w);
  return utf8_encode(w);
}

} // namespace pillars::metrics

// Moses-style tokenization: ports of the Moses scripts lowercase.perl, normalize-punctuation.perl,
// tokenizer.perl and detokenizer.perl, rule for rule, for English and German.
//
//   text::MosesOptions o;                      // lang "en", no escaping, nothing else
//   o.lang = "de";
//   std::string tok = text::moses_tokenize("Zwei Männer stehen am Herd.", o);
//   // "Zwei Männer stehen am Herd ."
//   std::string raw = text::moses_detokenize(tok, "de");   // back to the sentence
//
//   // The Multi30k "lc.norm.tok" files: lowercase.perl | normalize-punctuation.perl -l L |
//   // tokenizer.perl -l L (which escapes by default):
//   o.lowercase = o.normalize_punctuation = o.escape = true;
//
// Which Moses: the scripts as of commit 3a0631a (December 2017), the snapshot the Multi30k
// repository used to make its tokenized files; tests/test_text_moses.cpp reproduces those files
// line for line (all 67,092 lines but 5 of test_2018_flickr, a split that script did not make;
// see the test). In that version the tokenizer strips the line before splitting off special
// characters and has no "split the last word's period regardless of prefixes" rule (both changed
// later in Moses), and normalize-punctuation maps ` to ' and '' to " (its non-Penn default).
//
// Semantics kept from the scripts, on purpose:
//  - Input is one line (a trailing "\n" is removed). A line that is empty or all whitespace is
//    returned as it is, as tokenizer.perl prints such lines untouched.
//  - Tokens are separated by one space, except where tokenizer.perl itself leaves two: its rule
//    for a sentence ending in .' writes " . ' " (two spaces before, one after), and so do we.
//  - normalize-punctuation.perl runs on bytes with the line's "\n" still attached, so its "don't
//    fix period at end of sentence" rule does move a period past a final quote; so do we.
//  - Nonbreaking prefixes are the Moses files nonbreaking_prefix.en / .de, compiled in
//    (moses_prefixes.cpp); any other language falls back to English, as the script does.
//  - Apostrophes: "en" splits contractions to the right (it 's), "fr"/"it"/"ga" to the left
//    (l' homme), every other language puts spaces around every apostrophe.
//  - With escape, & | < > ' " [ ] become &amp; &#124; &lt; &gt; &apos; &quot; &#91; &#93;.
// Not ported: tokenizer.perl's -penn and -protected modes, -x, the Finnish/Swedish/Catalan
// special cases, detokenizer.perl's Czech and Finnish rules and its -u and -penn options.
#pragma once
#include <string>

namespace pillars::text {

struct MosesOptions {
  std::string lang = "en";
  bool aggressive_hyphen = false;     // tokenizer.perl -a: "a-b" -> "a @-@ b"
  bool escape = false;                // tokenizer.perl without -no-escape
  bool normalize_punctuation = false; // run normalize-punctuation.perl -l lang first
  bool lowercase = false;             // run lowercase.perl first (before normalizing)
};

// One line in, the tokens separated by spaces out (see above for the exact rules).
std::string moses_tokenize(const std::string& line, const MosesOptions& options);

// detokenizer.perl -l lang on one line: undoes the escapes and joins punctuation and quotes.
std::string moses_detokenize(const std::string& line, const std::string& lang);

// The individual scripts, for callers that want one step only.
std::string moses_lowercase(const std::string& line); // lowercase.perl (Perl's lc)
std::string moses_normalize_punctuation(const std::string& line, const std::string& lang, bool penn = false);

// The nonbreaking-prefix table tokenizer.perl loads for `lang`: 0 = not a prefix, 1 = a prefix,
// 2 = a prefix only before a number (#NUMERIC_ONLY#). Exposed for tests.
int moses_nonbreaking_prefix(const std::string& lang, const std::u32string& word);

} // namespace pillars::text

// Fuzz target: the Moses tokenizer (text/moses.h) and the UTF-8 decoding under it (text/unicode.h).
//
// Feeds: byte 0 chooses the options (bits 0-2 the language: en de fr it ga cs fi xx; bit 3
// aggressive hyphens, bit 4 escaping, bit 5 normalize-punctuation, bit 6 lowercase), the rest is
// the line: moses_tokenize(), then moses_detokenize() of its output.
// Expects: no errors at all (the tokenizer takes any bytes); an exception is a finding too.
// Asserts: decoding is lossless (utf8_encode(utf8_decode(x)) == x); well-formed UTF-8 in gives
// well-formed UTF-8 out, from both the tokenizer and the detokenizer; and with every option off,
// tokenizing only adds or removes spaces and control characters (the DOTMULTI placeholders of
// tokenizer.perl aside: a line that spells them out is skipped).
#include "tests/fuzz/fuzz_common.h"
#include "text/moses.h"
#include "text/unicode.h"

using namespace pillars;

namespace {

// No byte that utf8_decode had to keep as a lone surrogate (0xDC00 + byte).
bool well_formed(const std::string& s) {
  for (char32_t c : text::utf8_decode(s))
    if (c >= 0xDC80 && c <= 0xDCFF) return false;
  return true;
}

std::u32string without_spaces_and_controls(const std::string& s) {
  std::u32string out;
  for (char32_t c : text::utf8_decode(s))
    if (!text::is_space(c) && c >= 0x20) out += c;
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kLangs[] = {"en", "de", "fr", "it", "ga", "cs", "fi", "xx"};
  text::MosesOptions o;
  o.lang = kLangs[data[0] & 7];
  o.aggressive_hyphen = data[0] & 8;
  o.escape = data[0] & 16;
  o.normalize_punctuation = data[0] & 32;
  o.lowercase = data[0] & 64;
  const std::string line(fuzz::as_text(data + 1, size - 1));

  fuzz::fuzz_require(text::utf8_encode(text::utf8_decode(line)) == line, "utf8_encode(utf8_decode(x)) != x");
  std::string tokens, detokenized;
  try {
    tokens = text::moses_tokenize(line, o);
    detokenized = text::moses_detokenize(tokens, o.lang);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pillars fuzz: the Moses tokenizer threw: %s\n", e.what());
    std::abort();
  }
  if (well_formed(line)) {
    fuzz::fuzz_require(well_formed(tokens), "well-formed UTF-8 in, malformed out of moses_tokenize");
    fuzz::fuzz_require(well_formed(detokenized), "well-formed UTF-8 in, malformed out of moses_detokenize");
  }
  if (!o.aggressive_hyphen && !o.escape && !o.normalize_punctuation && !o.lowercase &&
      line.find("DOT") == std::string::npos)
    fuzz::fuzz_require(without_spaces_and_controls(tokens) == without_spaces_and_controls(line),
                       "tokenizing changed more than spaces and control characters");
  return 0;
}

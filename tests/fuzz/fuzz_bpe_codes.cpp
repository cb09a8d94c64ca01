// Fuzz target: the BPE-codes reader (text/bpe.h), subword-nmt's codes format.
//
// Feeds: the input as a codes file to parse_bpe_codes() (what read_bpe_codes() runs on a file's
// bytes), then builds a BpeApplier from the codes and applies it to words made of their units.
// Expects: InputError for a bad version line or a line that is not two units.
// Asserts, when it parses: every unit is non-empty and holds no space or newline;
// format_bpe_codes() parses back to the same version and merges; and applying the codes to a word
// (without '@', '<' or whitespace) only cuts it: removing the separators gives the word back.
#include "tests/fuzz/fuzz_common.h"
#include "text/bpe.h"

using namespace pillars;

namespace {

bool plain_word(const std::string& w) {
  if (w.empty()) return false;
  for (char c : w)
    if (c == '@' || c == '<' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return false;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  text::BpeCodes codes;
  if (!fuzz::run_expecting_errors([&] { codes = text::parse_bpe_codes(fuzz::as_text(data, size), "fuzz.codes"); }))
    return 0;

  for (const auto& [a, b] : codes.merges)
    for (const std::string* u : {&a, &b})
      fuzz::fuzz_require(!u->empty() && u->find_first_of(" \n") == std::string::npos,
                         "a unit is empty or holds a space or newline");

  text::BpeCodes again;
  try {
    again = text::parse_bpe_codes(text::format_bpe_codes(codes), "format_bpe_codes()");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pillars fuzz: format_bpe_codes() of parsed codes does not parse: %s\n", e.what());
    std::abort();
  }
  fuzz::fuzz_require(again.version_major == codes.version_major && again.version_minor == codes.version_minor &&
                         again.merges == codes.merges,
                     "format_bpe_codes() + parse changes the codes");

  // Words the codes can merge: each merge's pair glued (the end-of-word mark dropped), and all of
  // the first few merges' units in a row.
  text::BpeApplier bpe(codes);
  std::vector<std::string> words;
  std::string run;
  for (size_t i = 0; i < codes.merges.size() && i < 16; ++i) {
    std::string w = codes.merges[i].first + codes.merges[i].second;
    if (w.size() >= 4 && w.compare(w.size() - 4, 4, "</w>") == 0) w.resize(w.size() - 4);
    run += w;
    words.push_back(std::move(w));
  }
  words.push_back(run);
  for (const std::string& w : words) {
    if (!plain_word(w)) continue;
    const std::string segmented = bpe.apply_line(w);
    fuzz::fuzz_require(text::remove_bpe(segmented) == w,
                       "removing BPE from an applied word does not give the word back");
  }
  return 0;
}

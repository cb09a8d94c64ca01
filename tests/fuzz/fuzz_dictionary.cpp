// Fuzz target: the dictionary reader (text/dictionary.h), fairseq's dict.txt format.
//
// Feeds: the input as a dict.txt to Dictionary::parse() (what Dictionary::load() runs on a file's
// bytes).
// Expects: InputError for a malformed line or a repeated word without #fairseq:overwrite.
// Asserts, when it parses: the four special symbols keep ids 0-3; every symbol's index names the
// same word; a word without whitespace encodes to its own id and decodes back; and when no word
// was overwritten, to_text() parses back to the same symbols and counts.
#include "tests/fuzz/fuzz_common.h"
#include "text/dictionary.h"

using namespace pillars;
using text::Dictionary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Dictionary d;
  if (!fuzz::run_expecting_errors([&] { d = Dictionary::parse(fuzz::as_text(data, size), "fuzz.dict.txt"); })) return 0;

  fuzz::fuzz_require(d.size() >= size_t(d.nspecial()), "the special symbols are missing");
  fuzz::fuzz_require(d.symbol(d.bos()) == "<s>" && d.symbol(d.pad()) == "<pad>" && d.symbol(d.eos()) == "</s>" &&
                         d.symbol(d.unk()) == "<unk>",
                     "the special symbols moved");
  bool overwritten = false;
  for (int32_t id = 0; id < int32_t(d.size()); ++id) {
    const std::string& word = d.symbol(id);
    const int32_t at = d.index(word);
    fuzz::fuzz_require(d.contains(word) && at >= 0 && at < int32_t(d.size()) && d.symbol(at) == word,
                       "a symbol's index names another word");
    overwritten |= at != id;
    if (id < d.nspecial() || id >= d.nspecial() + 16) continue; // a few words suffice, and keep big inputs fast
    if (text::split_whitespace(word) != std::vector<std::string>{word}) continue;
    fuzz::fuzz_require(d.encode_line(word) == std::vector<int32_t>{at, d.eos()}, "a word does not encode to its id");
    fuzz::fuzz_require(d.decode({at}) == word, "a word's id does not decode to it");
  }
  if (overwritten) return 0; // to_text() then lists a word twice without the flag, as fairseq's save() does

  Dictionary again;
  try {
    again = Dictionary::parse(d.to_text(), "to_text()");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pillars fuzz: to_text() of a parsed dictionary does not parse: %s\n", e.what());
    std::abort();
  }
  fuzz::fuzz_require(again.size() == d.size(), "to_text() + parse changes the size");
  for (int32_t id = 0; id < int32_t(d.size()); ++id)
    fuzz::fuzz_require(again.symbol(id) == d.symbol(id) && again.count(id) == d.count(id),
                       "to_text() + parse changes a word or count");
  return 0;
}

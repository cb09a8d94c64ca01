// A vocabulary as fairseq's Dictionary (fairseq/data/dictionary.py) builds, saves and uses it,
// so that our dict.txt files and token ids are interchangeable with fairseq's.
//
//   text::Dictionary d;                               // <s>=0 <pad>=1 </s>=2 <unk>=3
//   for (auto& line : train_bpe_lines) d.add_line(line);   // counts words (and one </s> a line)
//   d.finalize();                                     // threshold, nwords, padding_factor 8
//   d.save("dict.de.txt");                            // "word count" per line, specials omitted
//   std::vector<int32_t> ids = d.encode_line("es ist diese pyrami@@ de .");  // ..., 2 (</s>)
//   std::string back = d.decode(ids);                 // "es ist diese pyrami@@ de ."
//
// finalize() as fairseq's: the special symbols keep ids 0-3; the other words are ordered by
// count, descending, and words of equal count by the word itself, ascending (fairseq sorts the
// (word, count) pairs by word before Counter.most_common's stable sort by count; words compare
// by code point, which is UTF-8 byte order); at most nwords symbols in all (specials included),
// and the list stops at the first word with count < threshold; then "madeupword0000", ... (count
// 0) are added until the size is a multiple of padding_factor.
// load() reads dict.txt as fairseq's add_from_file: one "word count" per line, split at the last
// space, a trailing "#fairseq:overwrite" flag allowed; a word twice without that flag is an error.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/special_tokens.h"

namespace pillars::text {

class Dictionary {
 public:
  Dictionary(); // with the four special symbols

  // Adds `n` to the count of `word`, appending it if new; returns its id.
  int32_t add_symbol(const std::string& word, int64_t n = 1);
  // Counts the words of one line (split on whitespace) and one end-of-sentence, as
  // fairseq-preprocess does when it builds a dictionary from a training file.
  void add_line(std::string_view line);
  void finalize(int64_t threshold = -1, int64_t nwords = -1, int padding_factor = 8);

  int32_t index(const std::string& word) const; // unk() when absent
  const std::string& symbol(int32_t id) const;  // the unk word when out of range
  int64_t count(int32_t id) const;
  size_t size() const { return symbols_.size(); }
  bool contains(const std::string& word) const { return indices_.count(word) != 0; }

  // fairseq's special symbols open every dictionary, in this order (their ids: base/special_tokens.h).
  static constexpr int32_t kBos = tokens::kBos, kPad = tokens::kPad, kEos = tokens::kEos, kUnk = tokens::kUnk,
                           kSpecial = tokens::kSpecial;
  int32_t bos() const { return kBos; }
  int32_t pad() const { return kPad; }
  int32_t eos() const { return kEos; }
  int32_t unk() const { return kUnk; }
  int32_t nspecial() const { return kSpecial; }

  // fairseq's encode_line(line, add_if_not_exist=False): whitespace-split words to ids, unknown
  // words to unk(), then eos() if asked.
  std::vector<int32_t> encode_line(std::string_view line, bool append_eos = true) const;
  // fairseq's string(): the words joined by spaces; <s> and </s> are left out, and so is <pad>
  // (which fairseq would print as "<pad>"; callers strip padding before decoding anyway).
  std::string decode(const std::vector<int32_t>& ids) const;

  std::string to_text() const;              // the dict.txt contents
  void save(const std::string& path) const; // atomic replace
  static Dictionary parse(std::string_view text, const std::string& name = "<dict>");
  static Dictionary load(const std::string& path); // errors: pillars::InputError naming the file

 private:
  std::vector<std::string> symbols_;
  std::vector<int64_t> counts_;
  std::unordered_map<std::string, int32_t> indices_;
};

// Python's str.split(): splits on Unicode whitespace (str.isspace), no empty words.
std::vector<std::string> split_whitespace(std::string_view line);

} // namespace pillars::text

// Byte-pair encoding, compatible with subword-nmt (learn_bpe.py / apply_bpe.py, codes "version
// 0.2"): the codes files are interchangeable, and applying gives the same segmentation.
//
//   text::WordCounts counts;                       // joint over source and target
//   for (auto& line : src_lines) text::count_words(line, counts);
//   for (auto& line : tgt_lines) text::count_words(line, counts);
//   text::BpeCodes codes = text::learn_bpe(counts, {.num_merges = 10000});
//   text::write_bpe_codes("code", codes);           // "#version: 0.2" + one "a b" per line
//
//   text::BpeApplier bpe(text::read_bpe_codes("code"));
//   std::string s = bpe.apply_line("es ist diese pyramide .");   // "es ist diese pyrami@@ de ."
//   text::remove_bpe(s) == "es ist diese pyramide .";
//
// Learning follows subword-nmt: words are split on single spaces, each word becomes its
// characters (Unicode code points) with "</w>" glued to the last one; each step merges the most
// frequent adjacent pair, ties broken by the larger pair (Python's max over (freq, (a, b)), i.e.
// comparing a, then b, by code point = by UTF-8 bytes); every occurrence in a word is merged left
// to right; learning stops after num_merges or when the best pair is seen fewer than
// min_frequency times. subword-nmt recounts lazily with a pruned statistics table, which only
// affects its speed; here the pair counts are kept exactly and incrementally (an index from pair
// to the words that hold it, a max-heap with lazy deletion), so 10k merges take about a second.
//
// Applying follows apply_bpe.py: per word, repeatedly merge the adjacent pair of lowest rank (all
// its non-overlapping occurrences, left to right) until no pair is in the codes; drop "</w>";
// join the units with "@@ ". Results are cached per word. Words of one character are never
// split. Glossary words (literal strings, not regular expressions as in subword-nmt) are never
// split, and are cut out of longer words as separate units.
// Not ported: --vocabulary/--vocabulary-threshold (reverting merges that produce rare units),
// BPE dropout, byte-level codes, codes "version 0.1" learning (reading 0.1 codes is supported).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pillars::text {

struct BpeCodes {
  int version_major = 0, version_minor = 2;                // "#version: 0.2"; files without a header are 0.1
  std::vector<std::pair<std::string, std::string>> merges; // in rank order
};

// Reads/writes the subword-nmt codes format. Errors (a missing file, a line that is not two
// units) throw pillars::InputError naming the file and line.
BpeCodes read_bpe_codes(const std::string& path);
BpeCodes parse_bpe_codes(std::string_view text, const std::string& name = "<codes>");
std::string format_bpe_codes(const BpeCodes& codes);
void write_bpe_codes(const std::string& path, const BpeCodes& codes); // atomic replace

// Word counts as learn_bpe.py's get_vocabulary() makes them: each line stripped of "\r\n " at
// both ends and split on single spaces, empty words skipped.
using WordCounts = std::unordered_map<std::string, int64_t>;
void count_words(std::string_view line, WordCounts& counts);

struct LearnBpeOptions {
  int num_merges = 10000;
  int64_t min_frequency = 2;
};
// `frequencies`, when given, receives each merge's pair frequency (what learn_bpe.py -v prints).
BpeCodes learn_bpe(const WordCounts& counts, const LearnBpeOptions& options = {},
                   std::vector<int64_t>* frequencies = nullptr);

struct BpeApplyOptions {
  std::string separator = "@@";
  std::vector<std::string> glossary; // words never split (literal strings)
  int merges = -1;                   // use only the first N merges; -1 = all
};

// Applies codes to text. Keeps a per-word cache, so one applier must not be shared between
// threads without a lock.
class BpeApplier {
 public:
  explicit BpeApplier(const BpeCodes& codes, BpeApplyOptions options = {});

  // apply_bpe.py's process_line: leading and trailing whitespace ("\r\n ") kept as it is, the
  // words between segmented, units joined by spaces, separator after every non-final unit.
  std::string apply_line(std::string_view line);
  // The units of one word, the separator already appended to all but the last.
  std::vector<std::string> apply_word(const std::string& word);

 private:
  const std::vector<std::string>& encode(const std::string& word); // cached; without separators
  std::vector<std::string> isolate_glossaries(const std::string& word) const;

  BpeApplyOptions options_;
  bool version_01_ = false;
  // Symbols of the codes interned as ints; rank of a pair (a << 32 | b), and its merged symbol.
  std::unordered_map<std::string, int32_t> symbol_id_;
  std::vector<std::string> symbols_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> rank_and_merged_;
  std::unordered_map<std::string, std::vector<std::string>> cache_;
};

// Undoes BPE: deletes every "@@ " and a final "@@" (sed -r 's/(@@ )|(@@ ?$)//g').
std::string remove_bpe(std::string_view line, std::string_view separator = "@@");

} // namespace pillars::text

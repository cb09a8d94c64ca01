// Tokenized BLEU as fairseq reports it: `fairseq-generate` with its default `--scoring bleu`
// (fairseq/scoring/bleu.py `Scorer` over the C++ counter fairseq/clib/libbleu/libbleu.cpp), the
// "BLEU4 = 27.42, 59.0/33.1/20.9/13.7 (BP=1.000, ratio=1.004, syslen=..., reflen=...)" line.
//
//   pillars::metrics::FairseqBleu bleu;             // pad=1, eos=2, unk=3 like fairseq's Dictionary
//   for (...) bleu.add(ref_ids, hyp_ids);           // token ids, e.g. the model's target/hypothesis
//   // or, for text: bleu.add_tokens(ref_line, hyp_line)   (whitespace tokens, as generate.py does
//   //   with --remove-bpe / a tokenizer: it re-encodes both lines with the target dictionary)
//   std::cout << bleu.result_string() << "\n";      // double s = bleu.score();
//
// The computation (differs from sacreBLEU's): one reference per sentence; a sentence is first
// trimmed — leading pads dropped, trailing eos/pads dropped but never its first token (so an empty
// line, encoded as just </s>, still counts one token); reference tokens equal to unk never match.
// Matches are clipped per sentence. precision p_n = matches_n / hyp_ngrams_n (0 when there are no
// n-grams); BLEU = 100 * BP * exp(mean over n of log p_n) with log 0 = -inf, i.e. no smoothing: one
// empty order gives 0. BP = min(1, exp(1 - reflen/syslen)).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/dictionary.h"

namespace pillars::metrics {

class FairseqBleu {
 public:
  explicit FairseqBleu(int pad = text::Dictionary::kPad, int eos = text::Dictionary::kEos,
                       int unk = text::Dictionary::kUnk);

  // One sentence pair, as token ids (negative ids are rejected, as fairseq asserts).
  void add(std::span<const std::int32_t> ref, std::span<const std::int32_t> hyp);
  // One sentence pair as text: split on whitespace, mapped to ids with a dictionary that knows
  // "<s>"=0, "<pad>", "</s>", "<unk>" at the scorer's pad/eos/unk ids and gives every other word a
  // fresh id, then "</s>" appended (fairseq's Dictionary.encode_line(add_if_not_exist=True)).
  void add_tokens(std::string_view ref, std::string_view hyp);
  void reset();

  double score(int order = 4) const;
  std::array<double, 4> precision() const; // fractions, not percent
  double brevity() const;
  std::string result_string(int order = 4) const;

  std::size_t reflen() const { return reflen_; }
  std::size_t predlen() const { return predlen_; }
  const std::array<std::size_t, 4>& matches() const { return match_; }
  const std::array<std::size_t, 4>& counts() const { return count_; }

 private:
  std::int32_t word_id(const std::string& w);
  int pad_, eos_, unk_;
  std::size_t reflen_ = 0, predlen_ = 0;
  std::array<std::size_t, 4> match_{}, count_{};
  std::unordered_map<std::string, std::int32_t> dict_;
};

// Convenience: corpus of text lines (one reference each), fairseq's score.
double fairseq_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);

} // namespace pillars::metrics

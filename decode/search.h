// Beam search and greedy search over a StepDecoder, as fairseq's SequenceGenerator does it.
//
//   StepDecoder decoder(cfg, params, device);
//   SearchOptions o;  o.beam = 5;  o.lenpen = 1.0;  o.max_len_a = 1.2;  o.max_len_b = 10;
//   std::vector<std::vector<Hypothesis>> out = beam_search(decoder, sources, o);
//   out[i][0].tokens   // the best translation of sentence i (ids, eos last)
//
// The search, per sentence, with beam size k and cumulative log-probabilities s:
//   step 0 feeds eos (the decoder's start symbol) to one row; later steps feed each live row's
//   last token. From the k live rows' next-token log-probabilities (pad and bos banned, eos banned
//   before min_len, only eos allowed at max_len), the 2k best extensions (s + log p) are ranked.
//   An extension by eos among the first k is finished: its score is s / (length)^lenpen, length
//   counting the eos, and it joins the sentence's finished list. The first k extensions that are
//   not eos become the next live rows. A sentence is done once it has k finished hypotheses (or
//   reached max_len). The result is every finished hypothesis, best score first.
// max_len = ⌊max_len_a · source length + max_len_b⌋ target tokens, per sentence (source length
// counting its eos), capped by max_len_cap. beam = 1 is greedy search.
//
// Where the work happens. Each step is one run of the decoder-step graph on the decoder's device:
// the model, the sums s + log p, the 2k best of k × V per sentence (the beam_candidates op) and the
// reordering of the caches by the chosen beams (cache_gather) all run there; only the 2k
// candidates of each sentence come back to the host, which keeps the hypotheses' token lists.
// COMPACTION: once a sentence is done, its rows leave the batch (the next step gathers only the
// live rows), so a batch costs what its live sentences cost, not what its longest one costs.
// Rows never interact, so the hypotheses are the same with and without it, bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "decode/step_decoder.h"
#include "text/dictionary.h"

namespace pillars::decode {

// The widest beam accepted: each step ranks 2 · beam candidates per sentence, and every row holds
// its caches; a wider beam is a typo, refused before anything is allocated.
inline constexpr int64_t kMaxBeam = 1024;

struct SearchOptions {
  int64_t beam = 5;
  float lenpen = 1.0f;    // 0: plain sum of log-probabilities; 1: per-token average
  float max_len_a = 1.2f; // max_len = a · src_len + b
  int64_t max_len_b = 10;
  int64_t max_len_cap = 256; // absolute limit on target tokens (positions)
  int64_t min_len = 1;       // eos is banned before this many tokens have been produced
  int64_t bos = text::Dictionary::kBos, pad = text::Dictionary::kPad, eos = text::Dictionary::kEos;
  bool compact = true; // drop finished sentences from the batch (false: keep them to the end)
};

struct Hypothesis {
  std::vector<int32_t> tokens;          // generated ids, eos last
  float score = 0;                      // sum of log-probabilities / length^lenpen
  std::vector<float> positional_scores; // log p of each token
};

// sources[i]: token ids of sentence i, eos last. Returns, per sentence, its finished hypotheses
// (at most beam of them, at least one), best first.
std::vector<std::vector<Hypothesis>> beam_search(StepDecoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& options);

} // namespace pillars::decode

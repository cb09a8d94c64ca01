// Beam search; see search.h for the algorithm.
#include "decode/search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace pillars::decode {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Row {                     // one live hypothesis (a decoder row)
  std::vector<int32_t> tokens;   // generated so far (no leading eos)
  std::vector<float> positional; // log p of each
  float score = kNegInf;         // cumulative log-probability; −inf = no hypothesis here
};

} // namespace

std::vector<std::vector<Hypothesis>> beam_search(StepDecoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& o) {
  PILLARS_CHECK(o.beam >= 1 && o.beam <= kMaxBeam, "beam_search: beam must be in [1, ", kMaxBeam, "], got ", o.beam);
  const int64_t B = static_cast<int64_t>(sources.size()), k = o.beam, V = decoder.config().vocab, n = 2 * k;
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(B));
  if (B == 0) return finished;

  std::vector<int64_t> max_len(static_cast<size_t>(B));
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const double len =
        std::floor(o.max_len_a * static_cast<double>(sources[b].size()) + static_cast<double>(o.max_len_b));
    max_len[b] = std::clamp<int64_t>(static_cast<int64_t>(len), 1, o.max_len_cap);
    longest = std::max(longest, max_len[b]);
  }
  decoder.start(sources, k, longest + 1); // steps 0 … max_len (the last one forces eos)

  // The batch: batch[j] is the sentence in position j; its rows are j·k … j·k + k − 1.
  std::vector<int64_t> batch(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) batch[b] = b;
  std::vector<Row> rows(static_cast<size_t>(B * k));
  for (int64_t b = 0; b < B; ++b) rows[b * k].score = 0.0f; // step 0 extends one row per sentence
  std::vector<bool> done(static_cast<size_t>(B), false);

  StepDecoder::Step step;
  step.rows_per_sentence = k, step.candidates = n;
  step.pad = static_cast<int32_t>(o.pad), step.bos = static_cast<int32_t>(o.bos),
  step.eos = static_cast<int32_t>(o.eos);
  step.row_origin.resize(rows.size());
  step.sentence_origin.resize(static_cast<size_t>(B));
  for (size_t r = 0; r < rows.size(); ++r) step.row_origin[r] = static_cast<int32_t>(r);
  for (int64_t b = 0; b < B; ++b) step.sentence_origin[b] = static_cast<int32_t>(b);
  std::vector<float> cand_scores;
  std::vector<int32_t> cand_index;

  for (int64_t t = 0; t <= longest; ++t) {
    const size_t N = rows.size();
    step.tokens.resize(N);
    step.positions.assign(N, static_cast<int32_t>(t));
    step.row_scores.resize(N);
    step.eos_rule.resize(N);
    for (size_t r = 0; r < N; ++r) {
      const int64_t b = batch[r / static_cast<size_t>(k)];
      step.tokens[r] = rows[r].tokens.empty() ? static_cast<int32_t>(o.eos) : rows[r].tokens.back();
      step.row_scores[r] = done[b] ? kNegInf : rows[r].score;
      step.eos_rule[r] = t >= max_len[b] ? 2 : t < o.min_len ? 0 : 1;
    }
    decoder.step(step);
    decoder.candidates(cand_scores, cand_index);

    // The next batch: with compaction, only the sentences still going.
    std::vector<Row> next;
    std::vector<int64_t> next_batch;
    std::vector<int32_t> row_origin, sentence_origin;
    for (size_t j = 0; j < batch.size(); ++j) {
      const int64_t b = batch[j];
      int64_t live = 0;
      std::vector<Row> chosen(static_cast<size_t>(k));
      std::vector<int32_t> origin(static_cast<size_t>(k));
      for (int64_t r = 0; r < k; ++r) origin[r] = static_cast<int32_t>(j * k + r);
      if (!done[b]) {
        for (int64_t i = 0; i < n; ++i) {
          const int32_t at = cand_index[j * n + i];
          if (at < 0) break; // no more eligible extensions
          const float score = cand_scores[j * n + i];
          const int32_t from_row = at / static_cast<int32_t>(V), token = at % static_cast<int32_t>(V);
          const Row& from = rows[j * k + from_row];
          if (token == o.eos) {
            // Only eos among the k best finishes a hypothesis (as in fairseq).
            if (i < k && static_cast<int64_t>(finished[b].size()) < k) {
              Hypothesis h;
              h.tokens = from.tokens;
              h.tokens.push_back(token);
              h.positional_scores = from.positional;
              h.positional_scores.push_back(score - from.score);
              h.score = score / std::pow(static_cast<float>(h.tokens.size()), o.lenpen);
              finished[b].push_back(std::move(h));
            }
            continue;
          }
          if (live == k) continue;
          Row& to = chosen[live];
          to.tokens = from.tokens;
          to.tokens.push_back(token);
          to.positional = from.positional;
          to.positional.push_back(score - from.score);
          to.score = score;
          origin[live] = static_cast<int32_t>(j * k + from_row);
          ++live;
        }
        if (static_cast<int64_t>(finished[b].size()) >= k || live == 0 || t >= max_len[b]) done[b] = true;
      }
      if (done[b] && o.compact) continue; // leaves the batch
      next_batch.push_back(b);
      sentence_origin.push_back(static_cast<int32_t>(j));
      for (int64_t r = 0; r < k; ++r) {
        next.push_back(std::move(chosen[r]));
        row_origin.push_back(origin[r]);
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    rows = std::move(next);
    batch = std::move(next_batch);
    step.row_origin = std::move(row_origin);
    step.sentence_origin = std::move(sentence_origin);
  }

  for (auto& hyps : finished) {
    PILLARS_CHECK(!hyps.empty(), "beam_search: a sentence finished without a hypothesis");
    std::stable_sort(hyps.begin(), hyps.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  }
  return finished;
}

} // namespace pillars::decode

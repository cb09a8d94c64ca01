// Beam search; see search.h for the algorithm.
#include "decode/search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace pillars::decode {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Row {                       // one live hypothesis (a decoder row)
  std::vector<int32_t> tokens;     // generated so far (no leading eos)
  std::vector<float> positional;   // log p of each
  float score = kNegInf;           // cumulative log-probability; −inf = no hypothesis here
};

struct Candidate {
  float score;  // cumulative log-probability after the extension
  int32_t row;  // the row it extends (index within the sentence)
  int32_t token;
  // Best first; ties go to the lower row, then the lower token id (deterministic).
  bool operator<(const Candidate& o) const {
    if (score != o.score) return score > o.score;
    if (row != o.row) return row < o.row;
    return token < o.token;
  }
};

} // namespace

std::vector<std::vector<Hypothesis>> beam_search(const IncrementalDecoder& decoder,
                                                 const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& o) {
  PILLARS_CHECK(o.beam >= 1, "beam_search: beam must be >= 1, got ", o.beam);
  const int64_t B = static_cast<int64_t>(sources.size()), k = o.beam, N = B * k, V = decoder.config().vocab;
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(B));
  if (B == 0) return finished;

  std::vector<int64_t> max_len(static_cast<size_t>(B));
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const double len = std::floor(o.max_len_a * static_cast<double>(sources[b].size()) + static_cast<double>(o.max_len_b));
    max_len[b] = std::clamp<int64_t>(static_cast<int64_t>(len), 1, o.max_len_cap);
    longest = std::max(longest, max_len[b]);
  }

  const EncoderOutput enc = decoder.encode(sources);
  DecoderState st = decoder.start(enc, k, longest + 1); // steps 0 … max_len (the last one forces eos)
  std::vector<Row> rows(static_cast<size_t>(N));
  for (int64_t b = 0; b < B; ++b) rows[b * k].score = 0.0f; // step 0 extends one row per sentence
  std::vector<bool> done(static_cast<size_t>(B), false);
  std::vector<int32_t> input(static_cast<size_t>(N), static_cast<int32_t>(o.eos)), origin(static_cast<size_t>(N));
  std::vector<float> logprobs(static_cast<size_t>(N * V));
  std::vector<Candidate> cands;

  for (int64_t step = 0; step <= longest; ++step) {
    decoder.step(st, input.data(), logprobs.data());
    std::vector<Row> next(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) origin[n] = static_cast<int32_t>(n);
    for (int64_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      // The 2k best extensions over the sentence's k rows × V tokens.
      cands.clear();
      for (int64_t r = 0; r < k; ++r) {
        const Row& row = rows[b * k + r];
        if (row.score == kNegInf) continue;
        float* lp = logprobs.data() + (b * k + r) * V;
        lp[o.pad] = kNegInf;
        if (o.bos != o.eos) lp[o.bos] = kNegInf;
        if (step < o.min_len) lp[o.eos] = kNegInf;
        if (step >= max_len[b]) // only eos may follow the longest allowed hypothesis
          for (int64_t v = 0; v < V; ++v) if (v != o.eos) lp[v] = kNegInf;
        for (int64_t v = 0; v < V; ++v) // (a NaN fails the test too: it never becomes a candidate)
          if (lp[v] > kNegInf) cands.push_back({row.score + lp[v], static_cast<int32_t>(r), static_cast<int32_t>(v)});
      }
      const size_t keep = std::min<size_t>(cands.size(), static_cast<size_t>(2 * k));
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(keep), cands.end());
      int64_t live = 0;
      for (size_t i = 0; i < keep; ++i) {
        const Candidate& c = cands[i];
        const Row& from = rows[b * k + c.row];
        if (c.token == o.eos) {
          // Only eos among the k best finishes a hypothesis (as in fairseq).
          if (i < static_cast<size_t>(k) && static_cast<int64_t>(finished[b].size()) < k) {
            Hypothesis h;
            h.tokens = from.tokens;
            h.tokens.push_back(c.token);
            h.positional_scores = from.positional;
            h.positional_scores.push_back(c.score - from.score);
            h.score = c.score / std::pow(static_cast<float>(h.tokens.size()), o.lenpen);
            finished[b].push_back(std::move(h));
          }
          continue;
        }
        if (live == k) continue;
        Row& to = next[b * k + live];
        to.tokens = from.tokens;
        to.tokens.push_back(c.token);
        to.positional = from.positional;
        to.positional.push_back(c.score - from.score);
        to.score = c.score;
        origin[b * k + live] = static_cast<int32_t>(b * k + c.row);
        ++live;
      }
      if (static_cast<int64_t>(finished[b].size()) >= k || live == 0 || step >= max_len[b]) done[b] = true;
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    rows.swap(next);
    decoder.reorder(st, origin);
    for (int64_t n = 0; n < N; ++n)
      input[n] = rows[n].tokens.empty() ? static_cast<int32_t>(o.eos) : rows[n].tokens.back();
  }

  for (auto& hyps : finished) {
    PILLARS_CHECK(!hyps.empty(), "beam_search: a sentence finished without a hypothesis");
    std::stable_sort(hyps.begin(), hyps.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  }
  return finished;
}

} // namespace pillars::decode

// Sampling and generation; see sample.h.
#include "decode/sample.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "base/splitmix64.h"

namespace pillars::decode {

int32_t pick_token(const float* lp, int64_t V, const SamplingOptions& o, double u) {
  PILLARS_CHECK(o.temperature > 0.0f && o.top_p > 0.0f && o.top_p <= 1.0f && o.top_k >= 0,
                "sampling: temperature must be > 0, top_p in (0, 1], top_k >= 0");
  std::vector<int32_t> ids;
  for (int32_t v = 0; v < V; ++v)
    if (v != o.pad && v != o.bos && !std::isnan(lp[v])) ids.push_back(v);
  PILLARS_CHECK(!ids.empty(), "sampling: no token may be generated (all are banned or NaN)");
  // Most likely first; equal log-probabilities in id order.
  auto more_likely = [&](int32_t a, int32_t b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); };
  const size_t keep = o.greedy ? 1 : o.top_k > 0 ? std::min(ids.size(), static_cast<size_t>(o.top_k)) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), more_likely);
  ids.resize(keep);
  if (ids.size() == 1) return ids[0];
  // p_i ∝ exp((lp_i − lp_max) / T), in double.
  std::vector<double> p(ids.size());
  const double top = lp[ids[0]];
  for (size_t i = 0; i < ids.size(); ++i) p[i] = std::exp((static_cast<double>(lp[ids[i]]) - top) / o.temperature);
  double total = std::accumulate(p.begin(), p.end(), 0.0);
  if (o.top_p < 1.0f) { // nucleus: the shortest prefix reaching top_p of the mass
    double mass = 0;
    size_t n = 0;
    while (n < p.size() && mass < o.top_p * total) mass += p[n++];
    p.resize(std::max<size_t>(n, 1));
    total = std::accumulate(p.begin(), p.end(), 0.0);
  }
  double target = u * total;
  for (size_t i = 0; i < p.size(); ++i) {
    if (target < p[i]) return ids[i];
    target -= p[i];
  }
  return ids[p.size() - 1]; // rounding left u·total at the very end
}

std::vector<int32_t> generate(StepDecoder& decoder, const std::vector<int32_t>& context, int64_t max_tokens,
                              const SamplingOptions& o, const std::function<void(int32_t)>& on_token) {
  PILLARS_CHECK(!context.empty(), "generate: the context is empty");
  PILLARS_CHECK(max_tokens >= 1, "generate: max_tokens must be >= 1, got ", max_tokens);
  const int64_t V = decoder.config().vocab, P = static_cast<int64_t>(context.size());
  decoder.start(1, P + max_tokens);
  SplitMix64 rng(o.seed);
  StepDecoder::Step s;
  s.row_origin = {0};
  std::vector<int32_t> out;
  int32_t next = context[0];
  for (int64_t t = 0; t < P + max_tokens - 1; ++t) {
    s.tokens = {t < P ? context[static_cast<size_t>(t)] : next};
    s.positions = {static_cast<int32_t>(t)};
    decoder.step(s);
    if (t + 1 < P) continue; // still reading the prompt
    const Tensor lp = decoder.log_probs();
    next = pick_token(lp.data<float>(), V, o, rng.uniform());
    out.push_back(next);
    if (on_token) on_token(next);
    if (next == o.eos || static_cast<int64_t>(out.size()) == max_tokens) break;
  }
  return out;
}

} // namespace pillars::decode

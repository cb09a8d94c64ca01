// Decoding kernels (see decoding.h). Arguments are checked before any thread starts, so an error
// is thrown from the calling thread (an exception must not leave an OpenMP region).
#include "kernels/cpu/decoding.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "base/parallel.h"
#include "kernels/cpu/cast.h"

namespace pillars::cpu {

void cache_write(const CacheWriteArgs& a, const float* x, const int32_t* positions, float* cache) {
  const int64_t R = a.R, T = a.T, W = a.W;
  for (int64_t r = 0; r < R; ++r)
    PILLARS_CHECK(positions[r] >= 0 && positions[r] < T, "cache_write: row ", r, " writes position ", positions[r],
                  ", outside the cache's ", T, " slots");
  for (int64_t r = 0; r < R; ++r) {
    float* slot = cache + (r * T + positions[r]) * W;
    std::memcpy(slot, x + r * W, static_cast<size_t>(W) * sizeof(float));
    if (a.bf16) round_to_bf16(slot, W);
  }
}

void cache_gather(const CacheGatherArgs& a, const float* src, const int32_t* origin, const int32_t* filled, float* dst,
                  float* scratch) {
  const int64_t R_in = a.R_in, R_out = a.R_out, T = a.T, W = a.W;
  PILLARS_CHECK(R_out <= R_in, "cache_gather: ", R_out, " rows out of ", R_in);
  for (int64_t r = 0; r < R_out; ++r) {
    PILLARS_CHECK(origin[r] >= 0 && origin[r] < R_in, "cache_gather: row ", r, " continues row ", origin[r],
                  ", outside [0, ", R_in, ")");
    PILLARS_CHECK(!filled || (filled[r] >= 0 && filled[r] <= T), "cache_gather: row ", r, " has ",
                  filled ? filled[r] : 0, " filled slots of ", T);
  }
  const int64_t row = T * W;
  auto count = [&](int64_t r) { return static_cast<size_t>(filled ? filled[r] * W : row); };
  const bool in_place = src == dst;
  int64_t moved = 0;
  for (int64_t r = 0; r < R_out; ++r) moved += in_place && origin[r] == r ? 0 : static_cast<int64_t>(count(r));
  if (!in_place) {
#pragma omp parallel for schedule(static) if (moved >= kParallelGrain)
    for (int64_t r = 0; r < R_out; ++r) std::memcpy(dst + r * row, src + origin[r] * row, count(r) * sizeof(float));
    return;
  }
  // In place, in two passes, so that a row read as an origin is read before anything is written over it.
#pragma omp parallel for schedule(static) if (moved >= kParallelGrain)
  for (int64_t r = 0; r < R_out; ++r)
    if (origin[r] != r) std::memcpy(scratch + r * row, src + origin[r] * row, count(r) * sizeof(float));
#pragma omp parallel for schedule(static) if (moved >= kParallelGrain)
  for (int64_t r = 0; r < R_out; ++r)
    if (origin[r] != r) std::memcpy(dst + r * row, scratch + r * row, count(r) * sizeof(float));
}

void beam_candidates(const BeamCandidatesArgs& a, const float* logprobs, const float* row_scores,
                     const int32_t* eos_rule, float* scores, int32_t* index) {
  const int64_t S = a.S, k = a.k, V = a.V, n = a.n;
  const BeamTokens tok = a.tokens;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  PILLARS_CHECK(tok.pad >= 0 && tok.pad < V && tok.bos >= 0 && tok.bos < V && tok.eos >= 0 && tok.eos < V,
                "beam_candidates: special token ids outside the vocabulary of ", V);
#pragma omp parallel for schedule(static) if (S * k * V >= kParallelGrain)
  for (int64_t s = 0; s < S; ++s) {
    float* best = scores + s * n; // kept sorted: best first, equal scores in the order they came
    int32_t* at = index + s * n;
    int64_t count = 0;
    auto offer = [&](float score, int64_t flat) {
      if (!(score > kNegInf)) return; // −inf and NaN are never candidates
      if (count == n && !(score > best[n - 1])) return;
      int64_t i = count < n ? count++ : n - 1;
      for (; i > 0 && best[i - 1] < score; --i) best[i] = best[i - 1], at[i] = at[i - 1];
      best[i] = score, at[i] = static_cast<int32_t>(flat);
    };
    for (int64_t r = 0; r < k; ++r) {
      const int64_t row = s * k + r;
      const float base = row_scores[row];
      if (!(base > kNegInf)) continue;
      const float* lp = logprobs + row * V;
      const int32_t rule = eos_rule[row];
      if (rule == 2) { // only eos may follow
        offer(base + lp[tok.eos], r * V + tok.eos);
        continue;
      }
      for (int64_t v = 0; v < V; ++v) {
        if (v == tok.pad || (v == tok.bos && tok.bos != tok.eos) || (v == tok.eos && rule == 0)) continue;
        offer(base + lp[v], r * V + v);
      }
    }
    for (int64_t i = count; i < n; ++i) best[i] = kNegInf, at[i] = -1;
  }
}

} // namespace pillars::cpu

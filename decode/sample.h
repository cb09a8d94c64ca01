// Text generation with a decoder-only model: the prompt fed through the decoder-step graph one
// token at a time (filling the caches), then one sampled token per step.
//
//   StepDecoder dec(cfg, params, device);
//   SamplingOptions o;  o.temperature = 0.8f;  o.top_k = 40;  o.top_p = 0.95f;  o.seed = 1;
//   std::vector<int32_t> out = generate(dec, context, /*max_tokens=*/100, o,
//                                       [](int32_t id) { /* print it as it comes */ });
//
// The next token is drawn from p(v) ∝ exp(log p(v) / temperature) over the allowed tokens (bos and
// pad never), restricted first to the top_k most likely (0: no limit), then to the smallest set of
// most likely tokens whose probability reaches top_p (1: no limit), renormalized. Ties in
// likelihood go to the lower id. `greedy` takes the most likely token (so does top_k = 1). One
// SplitMix64 stream (base/splitmix64.h) seeded with `seed` draws a uniform number per token: the
// same seed gives the same text.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "base/special_tokens.h"
#include "decode/step_decoder.h"

namespace pillars::decode {

struct SamplingOptions {
  bool greedy = false;
  float temperature = 1.0f; // > 0
  int64_t top_k = 0;        // 0: all tokens
  float top_p = 1.0f;       // in (0, 1]
  uint64_t seed = 1;
  int32_t eos = tokens::kEos, pad = tokens::kPad, bos = tokens::kBos;
};

// Picks the next token from log-probabilities (V) with a uniform number u in [0, 1).
int32_t pick_token(const float* log_probs, int64_t V, const SamplingOptions& options, double u);

// Continues `context` (ids, at least one; a line of the training stream starts after an eos, so
// callers start with eos) by at most max_tokens tokens, stopping after eos. on_token sees each
// generated id as soon as it is chosen. Returns the generated ids (eos included when reached).
std::vector<int32_t> generate(StepDecoder& decoder, const std::vector<int32_t>& context, int64_t max_tokens,
                              const SamplingOptions& options, const std::function<void(int32_t)>& on_token = {});

} // namespace pillars::decode

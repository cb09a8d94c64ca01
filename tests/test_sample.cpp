// Sampling (decode/sample.h): the choice rule against hand-computed thresholds, and generation
// with a language model: reproducible under a seed, top-k = 1 equal to greedy.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "decode/sample.h"
#include "models/transformer.h"

using namespace pillars;
using namespace pillars::decode;

namespace {

// Log-probabilities over 6 tokens: bos, pad (never chosen), then p = 0.1, 0.4, 0.3, 0.2.
std::vector<float> six() {
  return {std::log(0.5f), std::log(0.5f), std::log(0.1f), std::log(0.4f), std::log(0.3f), std::log(0.2f)};
}

} // namespace

TEST_CASE("sample: u walks the cumulative probabilities of the allowed tokens, most likely first") {
  const std::vector<float> lp = six();
  SamplingOptions o; // allowed 2..5, sorted 3 (0.4), 4 (0.3), 5 (0.2), 2 (0.1): thresholds .4 .7 .9 1
  CHECK(pick_token(lp.data(), 6, o, 0.00) == 3);
  CHECK(pick_token(lp.data(), 6, o, 0.39) == 3);
  CHECK(pick_token(lp.data(), 6, o, 0.41) == 4);
  CHECK(pick_token(lp.data(), 6, o, 0.69) == 4);
  CHECK(pick_token(lp.data(), 6, o, 0.71) == 5);
  CHECK(pick_token(lp.data(), 6, o, 0.95) == 2);
  o.top_k = 2; // 3 (0.4/0.7), 4 (0.3/0.7)
  CHECK(pick_token(lp.data(), 6, o, 0.56) == 3);
  CHECK(pick_token(lp.data(), 6, o, 0.58) == 4);
  CHECK(pick_token(lp.data(), 6, o, 0.999) == 4);
  o.top_k = 0, o.top_p = 0.75f;                   // the shortest prefix with mass >= 0.75: 3, 4, 5 (0.9)
  CHECK(pick_token(lp.data(), 6, o, 0.43) == 3);  // 0.43 · 0.9 = 0.387 < 0.4
  CHECK(pick_token(lp.data(), 6, o, 0.50) == 4);  // 0.45: in [0.4, 0.7)
  CHECK(pick_token(lp.data(), 6, o, 0.999) == 5); // 0.899: token 2 is outside the nucleus
}

TEST_CASE("sample: temperature sharpens or flattens, greedy and top-k 1 take the most likely token") {
  const std::vector<float> lp = six();
  SamplingOptions o;
  o.temperature = 0.5f; // p ∝ p², 3: .16, 4: .09, 5: .04, 2: .01 → thresholds .533 .833 .967
  CHECK(pick_token(lp.data(), 6, o, 0.52) == 3);
  CHECK(pick_token(lp.data(), 6, o, 0.55) == 4);
  CHECK(pick_token(lp.data(), 6, o, 0.95) == 5);
  o.temperature = 1.0f, o.greedy = true;
  for (double u : {0.0, 0.5, 0.999}) CHECK(pick_token(lp.data(), 6, o, u) == 3);
  o.greedy = false, o.top_k = 1;
  for (double u : {0.0, 0.5, 0.999}) CHECK(pick_token(lp.data(), 6, o, u) == 3);
}

TEST_CASE("sample: generation is reproducible under a seed, and top-k 1 is greedy") {
  TransformerConfig cfg = transformer_config("lm-small");
  cfg.vocab = 40, cfg.d_model = 16, cfg.heads = 2, cfg.ffn = 32, cfg.dec_layers = 2;
  ParamStore params;
  init_transformer_params(cfg, params, 8);
  StepDecoder dec(cfg, params);
  const std::vector<int32_t> context = {2, 7, 8, 9};
  auto run = [&](SamplingOptions o) {
    o.eos = -1; // never stop early: compare all 30 tokens
    std::vector<int32_t> streamed;
    const std::vector<int32_t> out = generate(dec, context, 30, o, [&](int32_t id) { streamed.push_back(id); });
    CHECK(streamed == out);
    return out;
  };
  SamplingOptions o;
  o.seed = 5;
  const auto a = run(o), b = run(o);
  CHECK(a.size() == 30);
  CHECK(a == b);
  o.seed = 6;
  CHECK(run(o) != a); // 30 draws from an untrained model's near-uniform distribution
  SamplingOptions greedy, top1;
  greedy.greedy = true;
  top1.top_k = 1, top1.seed = 77;
  CHECK(run(greedy) == run(top1));
}

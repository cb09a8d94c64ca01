// See bench_ght.h.
#include "tools/bench/bench_ght.h"

#include <omp.h>

#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "decode/step_decoder.h"
#include "decode/search.h"
#include "ght/settings.h"
#include "train/pass_list.h"
#include "ght/prune.h"
#include "models/transformer.h"
#include "tools/bench/measure.h"
#include "steps/steps.h"

namespace pillars::bench {

namespace {

// B sentence pairs with lengths spread over [T/2, T] (so padding is excluded for real), ids ≥ 4.
steps::Seq2SeqBatch random_batch(int64_t B, int64_t T, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(vocab - 1));
  std::uniform_int_distribution<int64_t> length(T / 2, T);
  steps::Seq2SeqBatch b;
  b.B = B, b.Ts = T, b.Tt = T;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t ls = length(rng), lt = length(rng);
    b.src_lengths.push_back(static_cast<int32_t>(ls));
    for (int64_t t = 0; t < T; ++t) {
      b.src_tokens.push_back(t < ls ? (t == ls - 1 ? 2 : token(rng)) : 1);
      b.prev_output_tokens.push_back(t < lt ? (t == 0 ? 2 : token(rng)) : 1);
      b.target.push_back(t < lt ? (t == lt - 1 ? 2 : token(rng)) : 1);
    }
    b.target_tokens += lt;
  }
  return b;
}

double step_seconds(const TransformerConfig& cfg, const steps::Seq2SeqBatch& batch, int repeats,
                    const ght::HeadsSettings& heads = {}) {
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  train::StepContext c;
  c.label_smoothing = 0.1f, c.heads = heads;
  steps::Seq2SeqSteps steps(cfg, params, train::step_recipes(c));
  uint64_t seed = 1;
  return median_seconds(repeats, [&] { steps.train(batch, seed++); });
}

} // namespace

int bench_gct(int threads, int repeats) {
  omp_set_num_threads(threads);
  const TransformerConfig cfg = transformer_config("bench");
  const steps::Seq2SeqBatch batch = random_batch(160, 32, cfg.vocab, 7);
  std::printf(
      "GCT training step: encoder-decoder 3+3, d 256, 8 heads (9 modules), %lld sentence pairs of <= 32 tokens "
      "(%lld target tokens), C = 2, %d threads\n",
      static_cast<long long>(batch.B), static_cast<long long>(batch.target_tokens), threads);
  const double vanilla = step_seconds(cfg, batch, repeats);
  std::printf("  vanilla           %.3f s/step  %8.1f target tokens/s\n", vanilla,
              static_cast<double>(batch.target_tokens) / vanilla);
  for (ght::FeatureMap fm : {ght::FeatureMap::V, ght::FeatureMap::O, ght::FeatureMap::A}) {
    ght::HeadsSettings gct{
        .regularizer = ght::Regularizer::gct, .feature_map = fm, .groups = 2, .alpha = 0.7, .beta = 0.5};
    const double gct_s = step_seconds(cfg, batch, repeats, gct);
    std::printf("  GCT, feature map %s %.3f s/step  %8.1f target tokens/s  = %.3fx the vanilla step%s\n", enum_name(fm),
                gct_s, static_cast<double>(batch.target_tokens) / gct_s, gct_s / vanilla,
                fm == ght::FeatureMap::A ? " (A is materialized: (B, H, Tq, Tk) probabilities)" : " (target <= 1.10x)");
  }
  return 0;
}

int bench_pruned_decode(int threads, int repeats) {
  omp_set_num_threads(threads);
  TransformerConfig cfg = transformer_config("base");
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  ght::HeadSelection keep;
  for (const std::string& module : attention_modules(cfg)) keep[module] = {0, 5};
  ght::PrunedModel ps = ght::prune_heads(cfg, params, keep);

  // 48 source sentences of 20-30 tokens; every hypothesis is forced to 28 tokens (min_len =
  // max_len), so both models do exactly the same number of steps on random weights.
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(cfg.vocab - 1));
  std::uniform_int_distribution<int> length(20, 30);
  std::vector<std::vector<int32_t>> sources(48);
  for (auto& s : sources) {
    s.resize(static_cast<size_t>(length(rng)));
    for (auto& t : s) t = token(rng);
    s.back() = 2;
  }
  decode::SearchOptions o;
  o.beam = 5, o.max_len_a = 0, o.max_len_b = 28, o.min_len = 28;
  std::printf(
      "beam-5 decoding: base (6+6, d 512, 8 heads, vocab %lld) vs GHT-PS (2 of 8 heads in all 18 modules), "
      "%zu sentences, 28 target tokens each, %d threads\n",
      static_cast<long long>(cfg.vocab), sources.size(), threads);
  auto sentences_per_second = [&](const TransformerConfig& c, const ParamStore& p) {
    decode::StepDecoder decoder(c, p);
    const double s = median_seconds(repeats, [&] { decode::beam_search(decoder, sources, o); });
    return static_cast<double>(sources.size()) / s;
  };
  const double full = sentences_per_second(cfg, params);
  std::printf("  unpruned  %7.2f sentences/s  (%lld parameters without embeddings)\n", full,
              static_cast<long long>(count_parameters(params, false)));
  const double pruned = sentences_per_second(ps.cfg, ps.params);
  std::printf("  GHT-PS    %7.2f sentences/s  (%lld parameters without embeddings)\n", pruned,
              static_cast<long long>(count_parameters(ps.params, false)));
  std::printf("  GHT-PS decodes %.2fx faster (target >= 1.15x; the paper measured 1.10x on a GPU)\n", pruned / full);
  return 0;
}

} // namespace pillars::bench

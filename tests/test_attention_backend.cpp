// train.attention_backend: the three ways an attention module can compute (models/transformer.h
// AttentionBackend) give one function. `naive` is the composed reference graph, written apart from
// the fused kernel, so agreement here checks the fused op inside a whole model, dropout included
// (both draw one Philox number per probability at the same offsets). `cudnn` needs a GPU: on the
// CPU it must fail loudly, never fall back silently.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/passes/autodiff.h"
#include "ght/feature_maps.h"
#include "models/transformer.h"
#include "train/experiment.h"
#include "train/device_scope.h"
#include "train/trainer.h"

using namespace pillars;

namespace {

// The tiny transformer with attention dropout on, so the dropout of the probabilities is compared
// too (the named config has none).
TransformerConfig tiny_config() {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.attention_dropout = 0.2f;
  return cfg;
}

// One batch: 3 sentences, source lengths 6, 4, 6 (right-padded with pad = 1), targets of 5, 3, 5.
void bind_batch(Executor& ex, const Seq2SeqGraph& m) {
  ex.bind(m.src_tokens, Tensor::from_i32({3, 6}, {4, 5, 6, 7, 8, 9, 10, 11, 12, 2, 1, 1, 13, 14, 15, 16, 17, 2}));
  ex.bind(m.src_lengths, Tensor::from_i32({3}, {6, 4, 6}));
  ex.bind(m.prev_output_tokens, Tensor::from_i32({3, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 1, 1, 2, 10, 11, 12, 13}));
  ex.bind(m.target, Tensor::from_i32({15}, {4, 5, 6, 7, 2, 8, 9, 2, 1, 1, 10, 11, 12, 13, 2}));
  if (m.tgt_lengths != kNoValue) ex.bind(m.tgt_lengths, Tensor::from_i32({3}, {5, 3, 5}));
}

struct StepResult {
  float loss = 0;
  std::vector<Tensor> grads;   // one per parameter, in graph.params() order
  std::vector<Tensor> a_grams; // GHT's Gram matrix of feature map A per module (when asked)
  std::vector<AttentionSite> sites;
};

// Forward + backward of the tiny model with the given backend and run seed.
StepResult run_step(AttentionBackend backend, uint64_t seed, bool with_a_grams = false) {
  const TransformerConfig cfg = tiny_config();
  ParamStore params;
  init_transformer_params(cfg, params, 11);
  GraphOptions o;
  o.label_smoothing = 0.1f;
  o.dropout_seed = 3;
  o.attention_backend = backend;
  if (with_a_grams) ght::request_feature_map(o, ght::FeatureMap::A);
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, 3, 6, 5, o);
  std::vector<ValueId> grams;
  if (with_a_grams)
    for (const AttentionSite& s : m.attention) grams.push_back(ght::feature_gram(m.graph, s, ght::FeatureMap::A));
  const std::vector<ValueId> grads = autodiff(m.graph, m.loss, m.graph.params());
  m.graph.mark_output(m.loss);
  for (ValueId g : grams) m.graph.mark_output(g);
  Executor ex(m.graph);
  ex.bind_params(params);
  bind_batch(ex, m);
  ex.set_seed(seed);
  ex.run();
  StepResult r;
  r.loss = ex.value(m.loss).data<float>()[0];
  for (ValueId g : grads) r.grads.push_back(ex.value(g).clone());
  for (ValueId g : grams) r.a_grams.push_back(ex.value(g).clone());
  r.sites = m.attention;
  return r;
}

// max |a − b| / (1 + max |b|) over two tensors of one shape.
double relative_error(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b.data<float>()[i])));
  }
  return diff / (1.0 + scale);
}

} // namespace

TEST_CASE("attention backends: naive and pillars give the same loss and gradients, attention dropout included") {
  for (uint64_t seed : {1u, 2u}) {
    const StepResult fused = run_step(AttentionBackend::pillars, seed);
    const StepResult naive = run_step(AttentionBackend::naive, seed);
    // Both compute in float32 and differ only in the order of sums (online softmax against a
    // materialized one): a few ulps of the values involved, far below any dropout mismatch,
    // which would change the loss in its second digit.
    CHECK(std::abs(fused.loss - naive.loss) <= 1e-5f * std::abs(naive.loss));
    REQUIRE(fused.grads.size() == naive.grads.size());
    double worst = 0;
    for (size_t i = 0; i < fused.grads.size(); ++i)
      worst = std::max(worst, relative_error(fused.grads[i], naive.grads[i]));
    MESSAGE("seed ", seed, ": loss ", naive.loss, ", largest relative gradient difference ", worst);
    CHECK(worst <= 1e-5);
  }
  // The dropout masks do follow the run seed (so the comparison above was not of two no-ops).
  CHECK(run_step(AttentionBackend::naive, 1).loss != run_step(AttentionBackend::naive, 2).loss);
}

TEST_CASE("attention backends: the naive graph feeds GHT the same sites and feature map A") {
  const StepResult fused = run_step(AttentionBackend::pillars, 5, /*with_a_grams=*/true);
  const StepResult naive = run_step(AttentionBackend::naive, 5, /*with_a_grams=*/true);
  REQUIRE(naive.sites.size() == fused.sites.size());
  REQUIRE(naive.sites.size() == 6); // tiny: 2 encoder self, 2 decoder self, 2 decoder cross
  for (size_t i = 0; i < naive.sites.size(); ++i) {
    const AttentionSite &n = naive.sites[i], &f = fused.sites[i];
    CAPTURE(n.module);
    CHECK(n.module == f.module);
    CHECK(n.causal == f.causal);
    CHECK(n.causal == (n.module.find("decoder") == 0 && n.module.find("self_attn") != std::string::npos));
    CHECK(n.probs != kNoValue);
    CHECK(n.node == -1); // no fused node to point at
    CHECK(f.node >= 0);
    CHECK(relative_error(naive.a_grams[i], fused.a_grams[i]) <= 1e-5);
  }
}

TEST_CASE("attention backends: cudnn nodes refuse the CPU, and the experiment says so before training") {
  ParamStore params;
  const TransformerConfig cfg = tiny_config();
  init_transformer_params(cfg, params, 11);
  GraphOptions o;
  o.attention_backend = AttentionBackend::cudnn;
  o.train = false;
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, 3, 6, 5, o);
  m.graph.mark_output(m.loss);
  Executor ex(m.graph);
  ex.bind_params(params);
  bind_batch(ex, m);
  CHECK_THROWS_WITH_AS(ex.run(), doctest::Contains("runs on the GPU only"), Error);

  nlohmann::json j = {{"task", "translation"},
                      {"data", {{"dataset", "multi30k-de-en"}, {"source", "de"}, {"target", "en"}}},
                      {"model", {{"config", "tiny"}}},
                      {"train", {{"attention_backend", "cudnn"}}}};
  const Experiment e = parse_experiment(j, "cudnn_on_cpu.json");
  CHECK(e.train.attention_backend == AttentionBackend::cudnn);
  CHECK_THROWS_WITH_AS(train::check_device_settings(e), doctest::Contains("train.attention_backend"), InputError);

  j["train"]["attention_backend"] = "flash";
  CHECK_THROWS_WITH_AS(parse_experiment(j, "bad_backend.json"), doctest::Contains("train.attention_backend"),
                       InputError);
  CHECK(parse_enum<AttentionBackend>("naive", "train.attention_backend") == AttentionBackend::naive);
  CHECK_THROWS_AS(parse_enum<AttentionBackend>("flash", "train.attention_backend"), InputError);
}

// The prune pass of V2S (ght/prune.h): the pruned model is the unpruned one with the removed heads'
// outputs multiplied by zero, the paper's parameter accounting holds, and a pruned checkpoint
// reloads and evaluates.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "ght/prune.h"
#include "steps/head_gates.h"
#include "tests/grad_check.h"
#include "train/checkpoint.h"

using namespace pillars;
using pillars::testing::max_relative_difference;
namespace fs = std::filesystem;

namespace {

TransformerConfig four_head_config() {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.d_model = 32, cfg.heads = 4, cfg.ffn = 48, cfg.vocab = 40;
  return cfg;
}

struct Batch {
  int64_t B = 3, Ts = 7, Tt = 6;
  std::vector<int32_t> src, src_len, prev, target;
};

Batch random_batch(int64_t vocab, uint32_t seed) {
  Batch b;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(4, static_cast<int32_t>(vocab) - 1);
  b.src_len = {7, 5, 3};
  const std::vector<int32_t> tgt_len = {6, 4, 2};
  for (int64_t i = 0; i < b.B; ++i) {
    for (int64_t t = 0; t < b.Ts; ++t) b.src.push_back(t < b.src_len[i] ? tok(rng) : 1);
    for (int64_t t = 0; t < b.Tt; ++t) {
      b.prev.push_back(t < tgt_len[i] ? (t == 0 ? 2 : tok(rng)) : 1);
      b.target.push_back(t < tgt_len[i] ? tok(rng) : 1);
    }
  }
  return b;
}

// Gates of fixed values: module → (H) values (modules not listed stay ungated).
class ConstantGates : public train::GraphExtension {
 public:
  explicit ConstantGates(const std::map<std::string, std::vector<float>>& gates) : gates_(gates) {}
  bool gates_heads() const override { return true; }
  ValueId head_gate(Graph& g, const AttentionSite& site, size_t, bool) override {
    const auto it = gates_.find(site.module);
    if (it == gates_.end()) return kNoValue;
    Tensor t = Tensor::zeros({site.heads});
    std::copy(it->second.begin(), it->second.end(), t.data<float>());
    return g.constant(t);
  }

 private:
  const std::map<std::string, std::vector<float>>& gates_;
};

// Logits (B·Tt, V) of the model in evaluation mode; `gates` (module → (H) values) multiply the heads
// (through the head_gates pass).
std::vector<float> logits(const TransformerConfig& cfg, ParamStore& params, const Batch& b,
                          const std::map<std::string, std::vector<float>>& gates = {}) {
  Seq2SeqOptions o;
  o.train = false;
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, b.B, b.Ts, b.Tt, o);
  m.graph.mark_output(m.logits);
  train::StepGraph s = train::StepGraph::of(std::move(m), /*train=*/false, Device::cpu);
  ConstantGates gating(gates);
  train::gate_heads(s, {&gating});
  Executor ex(s.graph);
  ex.bind_params(params);
  ex.bind("src_tokens", Tensor::from_i32({b.B, b.Ts}, b.src));
  ex.bind("src_lengths", Tensor::from_i32({b.B}, b.src_len));
  ex.bind("prev_output_tokens", Tensor::from_i32({b.B, b.Tt}, b.prev));
  ex.bind("target", Tensor::from_i32({b.B * b.Tt}, b.target));
  ex.run();
  const Tensor& l = ex.value(s.logits);
  return std::vector<float>(l.data<float>(), l.data<float>() + l.numel());
}


} // namespace

TEST_CASE("ght prune: the pruned model equals the unpruned model with the removed heads masked") {
  const TransformerConfig cfg = four_head_config();
  ParamStore params;
  init_transformer_params(cfg, params, 7);
  const Batch b = random_batch(cfg.vocab, 3);

  // Different heads in different modules, one module left whole.
  ght::HeadSelection keep = {{"encoder.layers.0.self_attn", {1, 3}},
                             {"encoder.layers.1.self_attn", {0}},
                             {"decoder.layers.0.self_attn", {0, 2, 3}},
                             {"decoder.layers.0.encoder_attn", {2}},
                             {"decoder.layers.1.encoder_attn", {0, 1}}};
  std::map<std::string, std::vector<float>> mask;
  for (const auto& [module, heads] : keep) {
    std::vector<float> m(4, 0.0f);
    for (int h : heads) m[static_cast<size_t>(h)] = 1.0f;
    mask[module] = m;
  }
  ght::PrunedModel ps = ght::prune_heads(cfg, params, keep);
  CHECK(ps.cfg.heads_of("encoder.layers.1.self_attn") == 1);
  CHECK(ps.cfg.heads_of("decoder.layers.1.self_attn") == 4);
  CHECK(ps.params.get("decoder.layers.0.encoder_attn.k_proj.weight").shape() == Shape{8, 32});
  CHECK(ps.params.get("decoder.layers.0.self_attn.out_proj.weight").shape() == Shape{32, 24});

  const std::vector<float> masked = logits(cfg, params, b, mask);
  const std::vector<float> pruned = logits(ps.cfg, ps.params, b);
  const std::vector<float> whole = logits(cfg, params, b);
  CHECK(max_relative_difference(pruned, masked) <= 1e-5);
  // ... and masking changes the function (so the comparison above is not vacuous).
  CHECK(max_relative_difference(whole, masked) > 1e-2);

  // Pruning twice composes: keeping head 1 of the kept {1, 3} is keeping original head 3.
  ght::PrunedModel twice = ght::prune_heads(ps.cfg, ps.params, {{"encoder.layers.0.self_attn", {1}}});
  mask["encoder.layers.0.self_attn"] = {0, 0, 0, 1};
  CHECK(max_relative_difference(logits(twice.cfg, twice.params, b), logits(cfg, params, b, mask)) <= 1e-5);
}

TEST_CASE("ght prune: base pruned to 2 of 8 heads in all 18 modules has the paper's 29.9M parameters") {
  TransformerConfig cfg = transformer_config("base");
  cfg.vocab = 8; // embeddings are not counted
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  ght::HeadSelection keep;
  for (const std::string& module : attention_modules(cfg)) keep[module] = {3, 6};
  REQUIRE(keep.size() == 18);
  const ght::PrunedModel ps = ght::prune_heads(cfg, params, keep);
  const ght::PruneSummary s = ght::summarize_pruning(cfg, params, ps, keep);
  // Weight matrices only, as the paper counts (44.0M → 29.9M, −32.1 %) ...
  const int64_t before = count_parameters(params, false, true), after = count_parameters(ps.params, false, true);
  CHECK(before == 44'040'192);
  CHECK(after == 29'884'416);
  CHECK(std::round(1000.0 * (1.0 - static_cast<double>(after) / static_cast<double>(before))) == 321.0);
  // ... and with biases and layer norms: 18 modules lose 6 heads × 64 rows of bias in q, k, v.
  CHECK(s.params_before_no_embeddings == 44'138'496);
  CHECK(s.params_after_no_embeddings == 29'884'416 + (44'138'496 - 44'040'192) - 18 * 3 * 6 * 64);
  CHECK(s.modules.size() == 18);
  // The kept heads' weights are the original rows.
  const Tensor& q = params.get("decoder.layers.5.encoder_attn.q_proj.weight");
  const Tensor& q2 = ps.params.get("decoder.layers.5.encoder_attn.q_proj.weight");
  CHECK(q2.shape() == Shape{128, 512});
  CHECK(q2.data<float>()[0] == q.data<float>()[3 * 64 * 512]);
  CHECK(q2.data<float>()[64 * 512 + 5] == q.data<float>()[6 * 64 * 512 + 5]);
}

TEST_CASE("ght prune: bad selections are refused with the module named") {
  const TransformerConfig cfg = four_head_config();
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  CHECK_THROWS_WITH_AS(ght::prune_heads(cfg, params, {{"encoder.layers.9.self_attn", {0}}}),
                       doctest::Contains("no attention module \"encoder.layers.9.self_attn\""), InputError);
  CHECK_THROWS_WITH_AS(ght::prune_heads(cfg, params, {{"encoder.layers.0.self_attn", {}}}),
                       doctest::Contains("keep no head"), InputError);
  CHECK_THROWS_WITH_AS(ght::prune_heads(cfg, params, {{"encoder.layers.0.self_attn", {2, 1}}}),
                       doctest::Contains("ascending"), InputError);
  CHECK_THROWS_WITH_AS(ght::prune_heads(cfg, params, {{"encoder.layers.0.self_attn", {4}}}),
                       doctest::Contains("[0, 4)"), InputError);
}

TEST_CASE("ght prune: a pruned checkpoint reloads and evaluates to the same outputs") {
  const TransformerConfig cfg = four_head_config();
  ParamStore params;
  init_transformer_params(cfg, params, 5);
  ght::HeadSelection keep;
  for (const std::string& module : attention_modules(cfg)) keep[module] = {0, 2};
  ght::PrunedModel ps = ght::prune_heads(cfg, params, keep);

  const fs::path dir = fs::temp_directory_path() / ("pillars_prune_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "checkpoint_pruned.safetensors").string();
  train::save_checkpoint(path, ps.cfg, ps.params, nullptr, {});
  train::LoadedCheckpoint loaded = train::load_checkpoint(path);
  CHECK(loaded.config.module_heads == ps.cfg.module_heads);
  CHECK(fs::file_size(path) < static_cast<uintmax_t>(params.numel()) * 4); // physically smaller
  const Batch b = random_batch(cfg.vocab, 11);
  const std::vector<float> a = logits(ps.cfg, ps.params, b), c = logits(loaded.config, loaded.params, b);
  CHECK(a == c);
  fs::remove_all(dir);
}

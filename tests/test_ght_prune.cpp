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
#include "engine/optim/adam.h"
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
steps::HeadGate constant_gates(const std::map<std::string, std::vector<float>>& gates) {
  return [&gates](steps::StepGraph& s, const AttentionSite& site, size_t) -> ValueId {
    const auto it = gates.find(site.module);
    if (it == gates.end()) return kNoValue;
    Tensor t = Tensor::zeros({site.heads});
    std::copy(it->second.begin(), it->second.end(), t.data<float>());
    return s.graph.constant(t);
  };
}

// Logits (B·Tt, V) of the model in evaluation mode; `gates` (module → (H) values) multiply the heads
// (through the head_gates pass).
std::vector<float> logits(const TransformerConfig& cfg, ParamStore& params, const Batch& b,
                          const std::map<std::string, std::vector<float>>& gates = {}) {
  GraphOptions o;
  o.train = false;
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, b.B, b.Ts, b.Tt, o);
  m.graph.mark_output(m.logits);
  steps::StepGraph s = steps::StepGraph::of(std::move(m), /*train=*/false, Device::cpu);
  steps::gate_heads(s, {constant_gates(gates)});
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

// A store of random values with the names and shapes of `like` (a gradient, say).
ParamStore random_like(const ParamStore& like, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ParamStore out;
  for (const std::string& name : like.names()) {
    Tensor& t = out.add(name, like.get(name).shape());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  }
  return out;
}

// One optimizer step of `params` with the gradients `grads` (same names).
void step(optim::Optimizer& optimizer, ParamStore& params, const ParamStore& grads, float lr) {
  std::vector<optim::ParamSlot> slots;
  for (const std::string& name : params.names()) slots.push_back({name, params.get(name), grads.get(name)});
  optimizer.step(slots, lr);
}

// The entry `name` of an optimizer state (fails the test when it is absent).
const Tensor& entry(const optim::NamedTensors& state, const std::string& name) {
  for (const auto& [n, t] : state)
    if (n == name) return t;
  FAIL("no optimizer state entry ", name);
  throw std::logic_error("unreachable");
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
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

TEST_CASE(
    "ght prune: the optimizer state is sliced like the parameters, and Adam goes on for the kept heads as on the full "
    "model") {
  const TransformerConfig cfg = four_head_config();
  ParamStore full;
  init_transformer_params(cfg, full, 3);
  full.add("head_gate.encoder.layers.0.self_attn", {4}); // a method's own parameter, which pruning drops
  // AMSGrad: all three of Adam's buffers (m, v, max v).
  optim::Adam adam(optim::AdamOptions{0.9, 0.98, 1e-8, 1e-4, false, /*amsgrad=*/true});
  for (uint32_t k = 0; k < 3; ++k) step(adam, full, random_like(full, 10 + k), 1e-3f);
  const optim::NamedTensors state = adam.state();

  const ght::HeadSelection keep = {{"encoder.layers.0.self_attn", {1, 3}},
                                   {"decoder.layers.0.self_attn", {0, 2, 3}},
                                   {"decoder.layers.1.encoder_attn", {2}}};
  const ght::PrunedModel ps = ght::prune_heads(cfg, full, keep);
  const optim::NamedTensors sliced = ght::prune_optimizer_state(cfg, state, keep);

  // Every buffer is its parameter's slice: pruning a "model" whose weights are that buffer gives it.
  for (const char* buffer : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
    ParamStore as_params;
    for (const init::ParamSpec& spec : transformer_parameters(cfg))
      as_params.add(spec.name, spec.shape).copy_from(entry(state, spec.name + "." + buffer));
    const ght::PrunedModel expected = ght::prune_heads(cfg, as_params, keep);
    for (const std::string& name : ps.params.names()) {
      CAPTURE(name);
      CAPTURE(buffer);
      CHECK(same_bits(entry(sliced, name + "." + buffer), expected.params.get(name)));
    }
  }
  // Spelled out for one module: head 2 of decoder.layers.1.encoder_attn (Dh = 8) is rows 16..23 of
  // W^K's moments and columns 16..23 of W^out's.
  const Tensor& m_k = entry(state, "decoder.layers.1.encoder_attn.k_proj.weight.exp_avg");
  const Tensor& m_k2 = entry(sliced, "decoder.layers.1.encoder_attn.k_proj.weight.exp_avg");
  REQUIRE(m_k2.shape() == Shape{8, 32});
  CHECK(std::equal(m_k2.data<float>(), m_k2.data<float>() + 8 * 32, m_k.data<float>() + 16 * 32));
  const Tensor& v_out = entry(state, "decoder.layers.1.encoder_attn.out_proj.weight.exp_avg_sq");
  const Tensor& v_out2 = entry(sliced, "decoder.layers.1.encoder_attn.out_proj.weight.exp_avg_sq");
  REQUIRE(v_out2.shape() == Shape{32, 8});
  for (int64_t r = 0; r < 32; ++r)
    CHECK(std::equal(v_out2.data<float>() + r * 8, v_out2.data<float>() + (r + 1) * 8,
                     v_out.data<float>() + r * 32 + 16));
  // The step counts stay (Adam's bias correction reads them); the dropped parameter's state is gone.
  CHECK(entry(sliced, "step").data<int64_t>()[0] == 3);
  CHECK(entry(sliced, "decoder.layers.1.encoder_attn.q_proj.weight.step").data<int64_t>()[0] == 3);
  for (const auto& [name, t] : sliced) CHECK_MESSAGE(name.rfind("head_gate.", 0) != 0, name);
  CHECK(sliced.size() == 1 + ps.params.size() * 4); // "step", then per parameter its step and 3 buffers

  // An optimizer loaded with the sliced state takes the step the full one takes, restricted to the
  // kept heads, bit for bit (Adam is elementwise; the removed heads' gradients just drop out).
  ParamStore grads = random_like(full, 99);
  optim::Adam continued(adam.options());
  continued.load_state(sliced);
  ght::PrunedModel pruned = ght::prune_heads(cfg, full, keep);
  ParamStore pruned_grads = ght::prune_heads(cfg, grads, keep).params;
  step(continued, pruned.params, pruned_grads, 5e-4f);
  step(adam, full, grads, 5e-4f);
  const ght::PrunedModel expected = ght::prune_heads(cfg, full, keep);
  for (const std::string& name : expected.params.names()) {
    CAPTURE(name);
    CHECK(same_bits(pruned.params.get(name), expected.params.get(name)));
  }

  // A state of another model is refused, naming the entry.
  TransformerConfig other = cfg;
  other.d_model = 64;
  CHECK_THROWS_WITH_AS(ght::prune_optimizer_state(other, state, keep), doctest::Contains("optimizer state '"),
                       InputError);
}

// The linear_cross_entropy op (engine/ops/linear_cross_entropy.h, kernels/cpu/linear_cross_entropy.h)
// and the fuse_linear_cross_entropy pass (engine/passes/fuse_linear_cross_entropy.h):
//   - the op against a float64 implementation of the textbook definition (logits h Wᵀ, softmax,
//     smoothed targets, mean over the rows not ignored), for blocks of 1 row, of a size that does
//     not divide N, and of all rows; with an upstream gradient G ≠ 1 through autodiff;
//   - its gradients against central finite differences (tests/grad_check.h);
//   - the op against the unfused matmul + cross_entropy it replaces;
//   - the pass on the tiny transformer (encoder-decoder and decoder-only) through the step's pass
//     list: the logits are gone, the loss and every parameter gradient are unchanged, the arena is
//     smaller; it leaves the head alone when the logits are an output, and never runs on an
//     evaluation step;
//   - 20 updates of GCT training on Multi30k with and without it;
//   - the op and the fused tiny step on the GPU against the CPU (skipped without a GPU).
//
// Bound for "unchanged": the fused sweep runs the same row arithmetic as cross_entropy and its
// backward, and the same three products; what differs is that dW is summed block by block
// (C rows at a time, added to what the previous blocks left) instead of in one product over all
// rows, and that dh and dW are G·(∂L/∂·) instead of products of G/n_valid-scaled rows. Both are
// rounding of a different summation order: we require 1e-5 of the tensor's largest magnitude.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/op.h"
#include "engine/ops.h"
#include "engine/ops/cast.h"
#include "engine/ops/linear_cross_entropy.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/flops.h"
#include "engine/passes/fuse_linear_cross_entropy.h"
#include "runtime/cuda_device.h"
#include "models/transformer.h"
#include "train/pass_list.h"
#include "steps/steps.h"
#include "tests/grad_check.h"
#include "tests/test_env.h"
#include "tests/test_small_run.h"
#include "tests/tiny_step.h"
#include "train/memory_estimate.h"
#include "train/session.h"
#include "train/setup.h"

using namespace pillars;
using pillars::testing::check_gradients;
using pillars::testing::count_op;
using pillars::testing::GradCheckOptions;
using pillars::testing::max_relative_difference;
using pillars::testing::random_tensor;
using pillars::testing::tiny_step;

namespace {

constexpr double kSameBound = 1e-5; // relative to the tensor's largest magnitude (see the top comment)
constexpr int32_t kIgnore = -100;
const steps::PassSettings kFused{.fuse_cross_entropy = true};

// The textbook definition in double: x = h Wᵀ, loss_n = −Σ_v q_v log softmax(x_n)_v over the rows
// whose target is not ignored, L their mean; dx = (softmax − q)/n_valid, dh = dx W, dW = dxᵀ h.
struct Reference {
  double loss = 0;
  std::vector<double> dh, dW;
};

Reference reference(const Tensor& h, const Tensor& W, const std::vector<int32_t>& t, double eps) {
  const int64_t N = h.dim(0), d = h.dim(1), V = W.dim(0);
  const float *hp = h.data<float>(), *wp = W.data<float>();
  int64_t valid = 0;
  for (int32_t target : t) valid += target != kIgnore;
  Reference r{0.0, std::vector<double>(static_cast<size_t>(N * d), 0.0),
              std::vector<double>(static_cast<size_t>(V * d), 0.0)};
  for (int64_t n = 0; n < N; ++n) {
    if (t[n] == kIgnore) continue;
    std::vector<double> x(static_cast<size_t>(V));
    double m = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      for (int64_t k = 0; k < d; ++k) x[v] += static_cast<double>(hp[n * d + k]) * wp[v * d + k];
      m = std::max(m, x[v]);
    }
    double s = 0;
    for (double xv : x) s += std::exp(xv - m);
    const double lse = m + std::log(s);
    for (int64_t v = 0; v < V; ++v) {
      const double q = (1 - eps) * (v == t[n]) + eps / static_cast<double>(V);
      r.loss -= q * (x[v] - lse) / static_cast<double>(valid);
      const double dx = (std::exp(x[v] - lse) - q) / static_cast<double>(valid);
      for (int64_t k = 0; k < d; ++k) {
        r.dh[n * d + k] += dx * wp[v * d + k];
        r.dW[v * d + k] += dx * hp[n * d + k];
      }
    }
  }
  return r;
}

double relative_to_max(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return diff / std::max(scale, 1e-300);
}

struct OpRun {
  float loss;
  std::vector<float> dh, dW; // the gradients of G·L (autodiff through the op's vjp)
};

// G·L through autodiff, the fused op or (fused = false) matmul + cross_entropy.
OpRun run_op(const Tensor& h, const Tensor& W, const Tensor& t, float eps, bool fused, int64_t block_rows, float G,
             Device device = Device::cpu) {
  Graph g;
  const ValueId hv = g.input("h", h.shape()), wv = g.input("W", W.shape()), tv = g.input("t", t.shape(), DType::i32);
  const ValueId loss = fused ? ops::linear_cross_entropy(g, hv, wv, tv, eps, kIgnore, block_rows).loss
                             : ops::cross_entropy(g, ops::matmul(g, hv, wv, false, true), tv, eps, kIgnore);
  g.mark_output(loss);
  const ValueId objective = ops::scale(g, loss, G);
  const std::vector<ValueId> grads = autodiff(g, objective, {hv, wv});
  Executor ex(g, device);
  ex.bind("h", h.to(device)), ex.bind("W", W.to(device)), ex.bind("t", t.to(device));
  ex.run();
  return {ex.fetch(loss).to_vector()[0], ex.fetch(grads[0]).to_vector(), ex.fetch(grads[1]).to_vector()};
}

std::vector<int32_t> targets_with_ignored(int64_t N, int64_t V) {
  std::vector<int32_t> t(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) t[n] = n % 5 == 3 ? kIgnore : static_cast<int32_t>((n * 17 + 3) % V);
  return t;
}

} // namespace

TEST_CASE("linear_cross_entropy: loss and the gradients of G·L match a float64 reference, for any block size") {
  const int64_t N = 13, d = 7, V = 11;
  const Tensor h = random_tensor({N, d}, 3, -1.5f, 1.5f), W = random_tensor({V, d}, 4, -1.5f, 1.5f);
  const std::vector<int32_t> t = targets_with_ignored(N, V);
  for (const float eps : {0.0f, 0.1f})
    for (const int64_t block_rows : {int64_t{1}, int64_t{4}, N, int64_t{100}}) {
      CAPTURE(eps);
      CAPTURE(block_rows);
      const float G = 2.5f;
      const Reference ref = reference(h, W, t, eps);
      const OpRun got = run_op(h, W, Tensor::from_i32({N}, t), eps, true, block_rows, G);
      CHECK(got.loss == doctest::Approx(ref.loss).epsilon(1e-6));
      std::vector<double> dh = ref.dh, dW = ref.dW;
      for (double& x : dh) x *= G;
      for (double& x : dW) x *= G;
      CHECK(relative_to_max(got.dh, dh) < 1e-6);
      CHECK(relative_to_max(got.dW, dW) < 1e-6);
    }
}

TEST_CASE(
    "linear_cross_entropy: no valid row gives loss 0 and zero gradients, and a bad target is an error naming the row") {
  const Tensor h = random_tensor({3, 4}, 5), W = random_tensor({6, 4}, 6);
  const OpRun none = run_op(h, W, Tensor::from_i32({3}, {kIgnore, kIgnore, kIgnore}), 0.1f, true, 2, 1.0f);
  CHECK(none.loss == 0.0f);
  for (float x : none.dh) CHECK(x == 0.0f);
  for (float x : none.dW) CHECK(x == 0.0f);
  CHECK_THROWS_WITH_AS(run_op(h, W, Tensor::from_i32({3}, {1, 6, 2}), 0.0f, true, 2, 1.0f),
                       doctest::Contains("target 6 of row 1 is outside the classes [0, 6)"), Error);
  Graph g;
  const ValueId hv = g.input("h", {3, 4}), wv = g.input("W", {6, 5}), tv = g.input("t", {3}, DType::i32);
  CHECK_THROWS_WITH_AS(ops::linear_cross_entropy(g, hv, wv, tv, 0.0f, kIgnore, 2), doctest::Contains("do not match"),
                       Error);
  const ValueId w2 = g.input("W2", {6, 4});
  CHECK_THROWS_WITH_AS(ops::linear_cross_entropy(g, hv, w2, tv, 0.0f, kIgnore, 0), doctest::Contains("block_rows"),
                       Error);
}

TEST_CASE("linear_cross_entropy: gradients equal finite differences") {
  const Tensor t = Tensor::from_i32({5}, {3, kIgnore, 0, 6, 3});
  for (const int64_t block_rows : {int64_t{2}, int64_t{5}})
    check_gradients(
        [block_rows](Graph& g, const std::vector<ValueId>& in) {
          return ops::linear_cross_entropy(g, in[0], in[1], in[2], 0.1f, kIgnore, block_rows).loss;
        },
        {{5, 4}, {7, 4}, {5}}, GradCheckOptions{.lo = -1.5f, .hi = 1.5f, .fixed = {{2, t}}});
}

TEST_CASE("linear_cross_entropy: equals matmul + cross_entropy, with the same FLOPs in the products") {
  const int64_t N = 300, d = 48, V = 1000;
  const Tensor h = random_tensor({N, d}, 7), W = random_tensor({V, d}, 8);
  const Tensor t = Tensor::from_i32({N}, targets_with_ignored(N, V));
  const OpRun unfused = run_op(h, W, t, 0.1f, false, 0, 1.0f);
  for (const int64_t block_rows : {int64_t{64}, N}) {
    CAPTURE(block_rows);
    const OpRun fused = run_op(h, W, t, 0.1f, true, block_rows, 1.0f);
    CHECK(fused.loss == doctest::Approx(unfused.loss).epsilon(kSameBound));
    CHECK(max_relative_difference(fused.dh, unfused.dh) <= kSameBound);
    CHECK(max_relative_difference(fused.dW, unfused.dW) <= kSameBound);
    MESSAGE("blocks of ", block_rows, " rows: loss ", fused.loss, " vs ", unfused.loss, ", dh ",
            max_relative_difference(fused.dh, unfused.dh), ", dW ", max_relative_difference(fused.dW, unfused.dW));
  }
  Graph g;
  const ValueId hv = g.input("h", {N, d}), wv = g.input("W", {V, d}), tv = g.input("t", {N}, DType::i32);
  ops::linear_cross_entropy(g, hv, wv, tv, 0.1f, kIgnore, 64);
  CHECK(count_flops(g).matmul == doctest::Approx(3.0 * 2.0 * N * V * d));
}

namespace {

// across_devices: `fused` ran on the GPU, `plain` on the CPU.
void compare_steps(const testing::TinyStep& fused, const testing::TinyStep& plain, double bound,
                   bool across_devices = false) {
  CHECK(fused.loss == doctest::Approx(plain.loss).epsilon(bound));
  REQUIRE(fused.grads.size() == plain.grads.size());
  double worst = 0;
  for (const auto& [name, g] : plain.grads) {
    CAPTURE(name);
    // On one device the key biases' rounding noise is the same on both sides; across devices it
    // need not be (the H200 saw relative differences of 1.3–2.0), so there only its size is checked.
    if (across_devices && testing::gradient_is_zero_in_exact_arithmetic(name)) {
      for (const std::vector<float>* run : {&g, &fused.grads.at(name)})
        for (float e : *run) CHECK(std::fabs(e) < 1e-4f);
      continue;
    }
    const double d = max_relative_difference(fused.grads.at(name), g);
    worst = std::max(worst, d);
    CHECK(d <= bound);
  }
  MESSAGE("loss ", plain.loss, " vs ", fused.loss, "; largest relative gradient difference over ", plain.grads.size(),
          " parameters", across_devices ? " (the key biases aside)" : "", ": ", worst, "; arena ",
          plain.s.memory.arena_bytes, " → ", fused.s.memory.arena_bytes, " bytes");
}

} // namespace

TEST_CASE(
    "fuse_linear_cross_entropy: the tiny transformer's step — logits gone, loss and gradients unchanged, less memory") {
  for (const bool decoder_only : {false, true}) {
    CAPTURE(decoder_only);
    TransformerConfig cfg = transformer_config("tiny");
    cfg.vocab = 500; // a vocabulary large enough that the logits dominate, as they do in a real model
    if (decoder_only) cfg.decoder_only = true, cfg.enc_layers = 0;
    ParamStore store;
    init_transformer_params(cfg, store, 7);
    // Blocks of 48 rows: the step's 160 rows take 4 blocks, the last one short.
    const steps::PassSettings blocked{.fuse_cross_entropy = true, .cross_entropy_block_bytes = 48 * 500 * 4};
    const testing::TinyStep plain = tiny_step(cfg, store, {.pad_every = 9}),
                            fused = tiny_step(cfg, store, {.passes = blocked, .pad_every = 9}),
                            one_block = tiny_step(cfg, store, {.passes = kFused, .pad_every = 9});
    REQUIRE(count_op(fused.s.graph, "linear_cross_entropy") == 1);
    for (const Node& n : fused.s.graph.nodes())
      if (std::string(n.op->name) == "linear_cross_entropy")
        CHECK(params_of<ops::LinearCrossEntropyParams>(n).block_rows == 48);
    CHECK(count_op(fused.s.graph, "cross_entropy") == 0);
    CHECK(count_op(fused.s.graph, "cross_entropy_backward") == 0);
    CHECK(count_op(fused.s.graph, "matmul") ==
          count_op(plain.s.graph, "matmul") - 3); // the head's product and its two gradients
    CHECK(fused.s.logits == kNoValue);
    for (const Node& n : fused.s.graph.nodes())
      for (ValueId v : n.outputs) CHECK(fused.s.graph.shape(v) != Shape{8 * 20, cfg.vocab}); // no (N, V) value at all
    CHECK(count_flops(fused.s.graph).matmul == doctest::Approx(count_flops(plain.s.graph).matmul));
    compare_steps(fused, plain, kSameBound);
    compare_steps(one_block, plain, kSameBound);
    // Memory: the arena and the largest scratch together (the block of logits is scratch).
    const auto bytes = [](const testing::TinyStep& t) { return t.s.memory.arena_bytes + t.s.memory.workspace_bytes; };
    MESSAGE("arena + scratch: unfused ", bytes(plain), ", blocks of 48 rows ", bytes(fused), ", one block ",
            bytes(one_block));
    CHECK(bytes(fused) < bytes(plain));
    // Training steps only: an evaluation step's pass list has no fusion.
    bool listed = false;
    for (const steps::Pass& p : train::step_passes(train::StepContext{.train = false, .passes = kFused}))
      listed = listed || p.name == "fuse_linear_cross_entropy";
    CHECK(!listed);
  }
}

TEST_CASE("fuse_linear_cross_entropy: fuses only a plain head whose logits and lse nothing else reads") {
  // h (6, 8), W (20, 8), t (6): logits = matmul(h, W) trans_b, then cross_entropy, and a variant.
  const auto fused_count = [](const std::function<void(Graph&, ValueId h, ValueId W, ValueId t)>& build) {
    Graph g;
    const ValueId h = g.input("h", {6, 8}), W = g.param("W", {20, 8}), t = g.input("t", {6}, DType::i32);
    build(g, h, W, t);
    return fuse_linear_cross_entropy(g).fused;
  };
  CHECK(fused_count([](Graph& g, ValueId h, ValueId W, ValueId t) {
          g.mark_output(ops::cross_entropy(g, ops::matmul(g, h, W, false, true), t, 0.1f, 1));
        }) == 1);
  CHECK(fused_count([](Graph& g, ValueId h, ValueId W, ValueId t) { // the logits read again
          const ValueId x = ops::matmul(g, h, W, false, true);
          g.mark_output(ops::add(g, ops::cross_entropy(g, x, t), ops::sum_all(g, x)));
        }) == 0);
  CHECK(fused_count([](Graph& g, ValueId h, ValueId W, ValueId t) { // the lse read
          const ValueId loss = ops::cross_entropy(g, ops::matmul(g, h, W, false, true), t);
          g.mark_output(ops::add(g, loss, ops::sum_all(g, g.producer(loss).outputs[1])));
        }) == 0);
  CHECK(fused_count([](Graph& g, ValueId h, ValueId W, ValueId t) { // a scaled product (as a vjp emits them)
          g.mark_output(ops::cross_entropy(
              g, g.add1(ops::kMatmul, {h, W}, ops::MatmulParams{.trans_b = true, .alpha = 0.5f}), t));
        }) == 0);
  CHECK(fused_count([](Graph& g, ValueId, ValueId, ValueId t) { // d = 0: the op refuses an empty hidden size
          const ValueId h0 = g.input("h0", {6, 0}), W0 = g.param("W0", {20, 0});
          g.mark_output(ops::cross_entropy(g, ops::matmul(g, h0, W0, false, true), t));
        }) == 0);
  CHECK(fused_count([](Graph& g, ValueId, ValueId W, ValueId t) { // op(A) = Aᵀ
          const ValueId hT = g.input("hT", {8, 6});
          g.mark_output(ops::cross_entropy(g, ops::matmul(g, hT, W, true, true), t));
        }) == 0);
}

TEST_CASE("fuse_linear_cross_entropy with GCT and bf16 saved activations: the fused node's gradients stay f32") {
  // GCT's nodes come after the head in the forward and their backward before the head's, so the
  // fused node's outputs wait long enough to look like activations worth storing; they are
  // gradients, and OpDef::makes_gradients keeps them f32. (Checked: without that flag dh° is cast
  // here; dW°, with V = 1000 below N = 2048, would pass for a statistic anyway.)
  nlohmann::json j = {{"task", "translation"},
                      {"data", {{"dataset", "multi30k-de-en"}, {"source", "de"}, {"target", "en"}}},
                      {"model", {{"config", "small"}}},
                      {"heads", {{"regularizer", "gct"}, {"feature_map", "V"}, {"groups", 2}}}};
  const Experiment e = parse_experiment(j, "gct.json");
  const TransformerConfig cfg = train::model_config(e, 1000);
  ParamStore params;
  train::StepContext c = train::step_context(e);
  c.train = true, c.seed = 1;
  c.passes.fuse_cross_entropy = c.passes.bf16_saved_activations = true;
  train::add_method_parameters(c, cfg, params);
  steps::StepGraph s =
      steps::StepGraph::of(build_seq2seq_training_graph(cfg, 64, 32, 32, train::step_options(c)), true, Device::cpu);
  steps::run_passes(train::step_passes(c), s);
  const Graph& g = s.graph;
  std::vector<ValueId> made;
  int casts = 0;
  for (const Node& n : g.nodes())
    if (n.op == &ops::kLinearCrossEntropy) made = {n.outputs[1], n.outputs[2]};
  REQUIRE(made.size() == 2);
  for (const Node& n : g.nodes()) {
    if (n.op != &ops::kCast) continue;
    ++casts;
    for (ValueId v : made) CHECK(n.inputs[0] != v);
  }
  CHECK(casts > 0); // the pass did store activations
}

TEST_CASE("fuse_linear_cross_entropy: leaves the head alone when the logits are a graph output") {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore store;
  init_transformer_params(cfg, store, 7);
  const testing::TinyStep kept = tiny_step(cfg, store, {.passes = kFused, .mark_logits = true});
  CHECK(count_op(kept.s.graph, "linear_cross_entropy") == 0);
  CHECK(count_op(kept.s.graph, "cross_entropy") == 1);
  CHECK(kept.s.logits != kNoValue);
  // Applied directly: nothing matches.
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, 2, 5, 4, GraphOptions{});
  m.graph.mark_output(m.logits);
  CHECK(fuse_linear_cross_entropy(m.graph).fused == 0);
}

TEST_CASE("fuse_linear_cross_entropy: GCT training on Multi30k gives the unfused run's losses") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: two trainings compared (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_linear_ce_", /*own_cache=*/true);
  const auto losses = [&](bool fuse) {
    nlohmann::json j = testing::small_multi30k_json(3);
    j["train"] = {{"max_updates", 20},
                  {"valid_bleu", false},
                  {"log_every", 1},
                  {"keep_best", 1},
                  {"fuse_linear_cross_entropy", fuse}};
    j["heads"] = {{"regularizer", "gct"}, {"feature_map", "V"}, {"groups", 2}};
    const std::string name = fuse ? "fused" : "plain";
    train::SessionOptions so;
    so.run_dir = (tmp.path / name).string(), so.quiet = true, so.evaluate = false;
    train::run_experiment(parse_experiment(j, "linear_ce_" + name + ".json"), so);
    return testing::train_losses(tmp.path / name);
  };
  const std::vector<double> plain = losses(false), fused = losses(true);
  REQUIRE(plain.size() == 20);
  REQUIRE(fused.size() == 20);
  // The trainer scheduled the fusion for the fused run only (the log's start record lists the
  // passes); that it rewrites this model's head is the tiny-step tests' part.
  const auto has_fusion = [&](const std::string& name) {
    const std::vector<std::string> passes = testing::train_passes(tmp.path / name);
    CHECK(std::find(passes.begin(), passes.end(), "gct") != passes.end());
    return std::find(passes.begin(), passes.end(), "fuse_linear_cross_entropy") != passes.end();
  };
  CHECK(has_fusion("fused"));
  CHECK_FALSE(has_fusion("plain"));
  double worst = 0;
  for (size_t i = 0; i < plain.size(); ++i) worst = std::max(worst, std::fabs(fused[i] - plain[i]) / plain[i]);
  MESSAGE("GCT, 20 updates: last loss unfused ", plain.back(), ", fused ", fused.back(),
          "; largest relative difference ", worst);
  CHECK(worst < 1e-5); // measured: 0 (one block holds a batch here); 1.3e-7 with blocks of 8 MiB
}

TEST_CASE("cuda: linear_cross_entropy and the fused tiny step follow the CPU") {
  if (pillars::testing::no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  // V = 1000: warp teams, 16-byte loads; V = 1999: block teams, scalar loads (V % 4 ≠ 0).
  for (const int64_t V : {int64_t{1000}, int64_t{1999}}) {
    const int64_t N = 300, d = 48;
    const Tensor h = random_tensor({N, d}, 7), W = random_tensor({V, d}, 8);
    const Tensor t = Tensor::from_i32({N}, targets_with_ignored(N, V));
    for (const int64_t block_rows : {int64_t{64}, N}) {
      CAPTURE(V);
      CAPTURE(block_rows);
      const OpRun cpu = run_op(h, W, t, 0.1f, true, block_rows, 2.0f),
                  gpu = run_op(h, W, t, 0.1f, true, block_rows, 2.0f, Device::cuda);
      CHECK(gpu.loss == doctest::Approx(cpu.loss).epsilon(kSameBound));
      CHECK(max_relative_difference(gpu.dh, cpu.dh) <= kSameBound);
      CHECK(max_relative_difference(gpu.dW, cpu.dW) <= kSameBound);
    }
  }
  // No valid row: loss 0 and zero gradients.
  const OpRun none = run_op(random_tensor({3, 4}, 5), random_tensor({6, 4}, 6),
                            Tensor::from_i32({3}, {kIgnore, kIgnore, kIgnore}), 0.1f, true, 2, 1.0f, Device::cuda);
  CHECK(none.loss == 0.0f);
  for (float x : none.dh) CHECK(x == 0.0f);
  for (float x : none.dW) CHECK(x == 0.0f);
  // The tiny step in blocks of 48 rows, captured as a CUDA graph and replayed.
  TransformerConfig cfg = transformer_config("tiny");
  cfg.vocab = 500;
  ParamStore store;
  init_transformer_params(cfg, store, 7);
  const steps::PassSettings blocked{.fuse_cross_entropy = true, .cross_entropy_block_bytes = 48 * 500 * 4};
  const testing::TinyStep gpu =
      tiny_step(cfg, store, {.passes = blocked, .device = Device::cuda, .pad_every = 9, .runs = 3});
  compare_steps(gpu, tiny_step(cfg, store, {.passes = blocked, .pad_every = 9}), kSameBound, /*across_devices=*/true);
}

TEST_CASE("memory estimate: with the head fused, a training step counts a block of logits instead of their gradient") {
  nlohmann::json j = {
      {"task", "translation"},
      {"data", {{"dataset", "multi30k-de-en"}, {"source", "de"}, {"target", "en"}, {"max_tokens", 4096}}},
      {"model", {{"config", "small"}}}};
  const Experiment plain = parse_experiment(j, "plain.json");
  j["train"] = {{"fuse_linear_cross_entropy", true}};
  const Experiment fused = parse_experiment(j, "fused.json");
  const TransformerConfig cfg = train::model_config(plain, 10000);
  const double saved = train::estimate_memory(plain, cfg).step_bytes - train::estimate_memory(fused, cfg).step_bytes;
  // One float per token and class, less the fused head's scratch (a block of 32 MiB of logits).
  CHECK(saved == doctest::Approx(4.0 * 4096 * 10000 - static_cast<double>(kLinearCrossEntropyBlockBytes)));
}

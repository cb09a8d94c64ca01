// Activations saved for the backward in bf16 (train.saved_activations = bf16):
//   - the cast op: round to nearest, ties to even, on bit patterns chosen to hit every case
//     (ties both ways, carries into the exponent, overflow to infinity, NaN, signed zero, tiny
//     numbers), and bit for bit the scalar f32_to_bf16 of engine/tensor.h on a million random
//     patterns (the OpenMP and vector paths); widening is exact;
//   - the two graph edits the pass is made of (Graph::redirect_input, Graph::reorder) refuse what
//     would break the graph;
//   - the pass on y = relu(x Wᵀ), L = Σ y²: the loss is bit for bit the fp32 graph's, and dW is
//     the float64 value of 2·(bf16(y) ⊙ [bf16(y) > 0])ᵀ x — the fp32 formula with y rounded;
//   - layer norm of an activation: the pass's loss and gradients are bit for bit those of the
//     fp32 graph with the activation explicitly rounded before the layer norm — the statistics
//     (mean, rstd) describe the very values the backward reads;
//   - the tiny transformer through the step's pass list: loss and gradients within bf16 rounding of
//     fp32 (and changed: the casts do act); the nodes that make statistics read rounded copies, the
//     logits and attention's outputs stay f32; the arena shrinks;
//   - a backward node reading a stored value in both slots reads the one rounded copy in both;
//   - GCT training on Multi30k (the method's passes record value numbers before this pass runs),
//     on the feature maps V and A (the attention probabilities): 20 updates follow the fp32 run's
//     losses within bf16 rounding.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/op.h"
#include "engine/ops.h"
#include "engine/ops/cast.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/saved_activations.h"
#include "kernels/cpu/cast.h"
#include "runtime/cuda_device.h"
#include "models/transformer.h"
#include "train/pass_list.h"
#include "tests/grad_check.h"
#include "tests/test_env.h"
#include "tests/test_small_run.h"
#include "tests/tiny_step.h"
#include "train/session.h"

using namespace pillars;
using pillars::testing::max_relative_difference;
using pillars::testing::random_tensor;

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

uint16_t narrow_one(uint32_t bits) {
  const float x = from_bits(bits);
  uint16_t y = 0;
  cpu::f32_to_bf16({.n = 1}, &x, &y);
  return y;
}

// ‖a − b‖₂ / ‖b‖₂
double norm_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

int count_casts(const Graph& g, DType to) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == &ops::kCast && g.dtype(node.outputs[0]) == to;
  return n;
}

// One training step of the tiny transformer (tests/tiny_step.h), with or without saved_activations.
testing::TinyStep step_of(const TransformerConfig& cfg, const ParamStore& store, bool bf16, Device device) {
  return testing::tiny_step(cfg, store, {.passes = {.bf16_saved_activations = bf16}, .device = device});
}

} // namespace

TEST_CASE("cast: f32 → bf16 rounds to nearest with ties to even, keeps NaN and infinities, and bf16 → f32 is exact") {
  struct Case {
    uint32_t in;
    uint16_t out;
    const char* what;
  };
  const Case cases[] = {
      {0x3F800000u, 0x3F80u, "1 is exact"},
      {0x3F808000u, 0x3F80u, "a tie rounds down to the even 0x3F80"},
      {0x3F818000u, 0x3F82u, "a tie rounds up to the even 0x3F82"},
      {0x3F808001u, 0x3F81u, "just above a tie rounds up"},
      {0x3F807FFFu, 0x3F80u, "just below a tie rounds down"},
      {0x3FFFFFFFu, 0x4000u, "the carry runs into the exponent: 1.99999988 → 2"},
      {0x7F7FFFFFu, 0x7F80u, "the largest float rounds to +infinity"},
      {0x7F800000u, 0x7F80u, "+infinity"},
      {0xFF800000u, 0xFF80u, "-infinity"},
      {0x80000000u, 0x8000u, "-0 keeps its sign"},
      {0x00000001u, 0x0000u, "the smallest subnormal rounds to 0"},
      {0xC0490FDBu, 0xC049u, "-π"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CHECK(narrow_one(c.in) == c.out);
    CHECK(f32_to_bf16(from_bits(c.in)) == c.out); // the scalar conversion agrees
  }
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
    const uint16_t y = narrow_one(nan);
    CHECK(std::isnan(bf16_to_f32(y)));
  }

  // Random patterns (every exponent, both signs), more than one OpenMP grain, against the scalar.
  const int64_t n = 1 << 20;
  std::vector<float> x(static_cast<size_t>(n));
  std::mt19937 rng(11);
  for (float& v : x) v = from_bits(static_cast<uint32_t>(rng()));
  std::vector<uint16_t> y(x.size());
  cpu::f32_to_bf16({.n = n}, x.data(), y.data());
  std::vector<float> back(x.size());
  cpu::bf16_to_f32({.n = n}, y.data(), back.data());
  int64_t mismatched = 0, inexact = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mismatched += y[i] != f32_to_bf16(x[i]);
    inexact += bits_of(back[i]) != static_cast<uint32_t>(y[i]) << 16;
  }
  CHECK(mismatched == 0);
  CHECK(inexact == 0);

  // The op, through the executor: f32 → bf16 → f32 is the scalar round trip.
  Graph g;
  const ValueId in = g.input("x", {3, 5});
  const ValueId narrow = ops::cast(g, in, DType::bf16);
  const ValueId wide = ops::cast(g, narrow, DType::f32);
  CHECK(g.dtype(narrow) == DType::bf16);
  g.mark_output(wide);
  Executor ex(g);
  const Tensor t = random_tensor({3, 5}, 5, -100.0f, 100.0f);
  ex.bind("x", t);
  ex.run();
  const std::vector<float> got = ex.value(wide).to_vector();
  for (int64_t i = 0; i < t.numel(); ++i)
    CHECK(got[static_cast<size_t>(i)] == bf16_to_f32(f32_to_bf16(t.data<float>()[i])));
  CHECK_THROWS_WITH_AS(ops::cast(g, g.input("ids", {2}, DType::i32), DType::bf16),
                       doctest::Contains("cast: converts between f32 and bf16, not i32"), Error);
}

TEST_CASE("graph edits: redirect_input and reorder keep the graph well formed") {
  Graph g;
  const ValueId x = g.input("x", {4});
  const ValueId a = ops::relu(g, x);        // node 1
  const ValueId b = ops::scale(g, x, 2.0f); // node 2
  const ValueId c = ops::add(g, a, b);      // node 3
  const ValueId d = ops::sum_all(g, c);     // node 4 (scalar)
  // The same shape and dtype, made earlier: allowed.
  g.redirect_input(3, 0, b);
  CHECK(g.node(3).inputs[0] == b);
  CHECK_THROWS_WITH_AS(g.redirect_input(3, 0, d), doctest::Contains("cannot read f32[]"), Error);
  const ValueId late = ops::relu(g, x); // node 5, after the add
  CHECK_THROWS_WITH_AS(g.redirect_input(3, 1, late), doctest::Contains("made later by node 5"), Error);
  CHECK_THROWS_WITH_AS(g.redirect_input(3, 2, b), doctest::Contains("has no input 2"), Error);

  // Moving node 5 before the add: values keep their numbers, producers follow the nodes.
  const std::vector<int> moved = g.reorder({0, 1, 2, 5, 3, 4});
  CHECK(moved == std::vector<int>{0, 1, 2, 4, 5, 3});
  CHECK(g.value(late).producer == 3);
  CHECK(g.value(c).producer == 4);
  CHECK(g.producer(d).op == g.node(5).op);
  g.redirect_input(4, 1, late); // now made before the add
  CHECK_THROWS_WITH_AS(g.reorder({0, 1, 2, 3, 5, 4}), doctest::Contains("before the producer of its input"), Error);
  CHECK_THROWS_WITH_AS(g.reorder({0, 1, 2, 3, 3, 4}), doctest::Contains("not a permutation"), Error);
  CHECK_THROWS_WITH_AS(g.reorder({0, 1}), doctest::Contains("reorder of 6 nodes given 2"), Error);
}

TEST_CASE(
    "saved_activations: y = relu(x Wᵀ), L = Σ y² — the loss is unchanged and dW is the float64 formula on bf16(y)") {
  const int64_t rows = 64, in = 32, out = 24; // y has 1,536 elements: above the pass's 1,024
  Graph g;
  const ValueId x = g.input("x", {rows, in});
  const ValueId w = g.param("w", {out, in});
  const ValueId y = ops::relu(g, ops::matmul(g, x, w, false, true));
  const ValueId loss = ops::sum_all(g, ops::mul(g, y, y));
  g.mark_output(loss);
  const int first_backward = static_cast<int>(g.nodes().size());
  const ValueId dw = autodiff(g, loss, {w})[0];
  const Graph plain = g;

  const SavedActivations r = store_saved_activations_bf16(g, first_backward);
  CHECK(r.stored == 1); // y only: x is an input, W a parameter, x Wᵀ is read by nobody in the backward
  CHECK(r.widened >= 2);
  CHECK(r.f32_bytes == static_cast<size_t>(rows * out) * 4);
  CHECK(count_casts(g, DType::bf16) == 1);
  CHECK(count_casts(g, DType::f32) == r.widened);
  // The widenings are all in the backward, each in the run of casts right before the node that
  // reads it.
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    if (n.op != &ops::kCast || g.dtype(n.outputs[0]) != DType::f32) continue;
    CHECK(i >= r.first_backward_node);
    int next = i + 1;
    while (g.node(next).op == &ops::kCast && g.dtype(g.node(next).outputs[0]) == DType::f32) ++next;
    const std::vector<ValueId>& in = g.node(next).inputs;
    CHECK(std::find(in.begin(), in.end(), n.outputs[0]) != in.end());
  }
  // No backward node reads y itself any more.
  for (size_t i = static_cast<size_t>(r.first_backward_node); i < g.nodes().size(); ++i)
    for (ValueId v : g.nodes()[i].inputs) CHECK(v != y);
  // A second application finds nothing more to store.
  Graph again = g;
  CHECK(store_saved_activations_bf16(again, r.first_backward_node).stored == 0);

  const Tensor tx = random_tensor({rows, in}, 3), tw = random_tensor({out, in}, 4, -0.5f, 0.5f);
  ParamStore store;
  store.add("w", {out, in}).copy_from(tw);
  const auto run = [&](const Graph& graph) {
    Executor ex(graph);
    ex.bind("x", tx);
    ex.bind_params(store);
    ex.run();
    return std::make_pair(ex.value(loss).to_vector()[0], ex.value(dw).to_vector());
  };
  const auto [loss16, dw16] = run(g);
  const auto [loss32, dw32] = run(plain);
  CHECK(loss16 == loss32); // the forward is untouched

  // float64: y from the fp32 product (as the executor computed it), rounded to bf16; dL/dy = 2·y16.
  Graph fwd;
  const ValueId fx = fwd.input("x", {rows, in});
  const ValueId fy = ops::relu(fwd, ops::matmul(fwd, fx, fwd.param("w", {out, in}), false, true));
  fwd.mark_output(fy);
  Executor fe(fwd);
  fe.bind("x", tx);
  fe.bind_params(store);
  fe.run();
  const std::vector<float> yv = fe.value(fy).to_vector();
  std::vector<double> expect(static_cast<size_t>(out * in), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t o = 0; o < out; ++o) {
      const double y16 = bf16_to_f32(f32_to_bf16(yv[static_cast<size_t>(i * out + o)]));
      const double dh = y16 > 0 ? 2.0 * y16 : 0.0;
      for (int64_t k = 0; k < in; ++k) expect[static_cast<size_t>(o * in + k)] += dh * tx.data<float>()[i * in + k];
    }
  double worst = 0, scale = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    worst = std::max(worst, std::fabs(dw16[i] - expect[i]));
    scale = std::max(scale, std::fabs(expect[i]));
  }
  CHECK(worst <= 1e-5 * scale); // fp32 sums of 64 terms
  // And it is not the fp32 gradient: y's rounding shows (up to 2⁻⁹ relative per element).
  const double from_fp32 = max_relative_difference(dw16, dw32);
  MESSAGE("dW: float64 reference within ", worst / scale, "; the fp32 graph's dW differs by ", from_fp32);
  CHECK(from_fp32 > 1e-6);
  CHECK(from_fp32 < 4e-3);
}

TEST_CASE("saved_activations: a backward node that reads a stored value in two slots reads the rounded copy in both") {
  // A hand-made step: forward y = relu(x Wᵀ) and f = exp(x) (which runs while y waits), backward
  // z = y ∘ y, one node reading y twice. The pass is told where the backward starts.
  const int64_t rows = 64, in = 32, out = 24;
  Graph g;
  const ValueId x = g.input("x", {rows, in});
  const ValueId y = ops::relu(g, ops::matmul(g, x, g.param("w", {out, in}), false, true));
  const ValueId f = ops::exp(g, x);
  const int first_backward = static_cast<int>(g.nodes().size());
  const ValueId z = ops::mul(g, y, y);
  g.mark_output(z);
  g.mark_output(f);
  const SavedActivations r = store_saved_activations_bf16(g, first_backward, 1);
  CHECK(r.stored == 1);
  CHECK(r.widened == 1); // one copy for the node, read in both slots
  const Node& product = g.producer(z);
  CHECK(product.inputs[0] == product.inputs[1]);
  CHECK(product.inputs[0] != y);

  ParamStore store;
  store.add("w", {out, in}).copy_from(random_tensor({out, in}, 4));
  const Tensor tx = random_tensor({rows, in}, 3);
  Executor ex(g);
  ex.bind("x", tx);
  ex.bind_params(store);
  ex.run();
  Graph fwd;
  const ValueId fy =
      ops::relu(fwd, ops::matmul(fwd, fwd.input("x", {rows, in}), fwd.param("w", {out, in}), false, true));
  fwd.mark_output(fy);
  Executor fe(fwd);
  fe.bind("x", tx);
  fe.bind_params(store);
  fe.run();
  const std::vector<float> yv = fe.value(fy).to_vector(), zv = ex.value(z).to_vector();
  for (size_t i = 0; i < yv.size(); ++i) {
    const float y16 = bf16_to_f32(f32_to_bf16(yv[i]));
    CHECK(zv[i] == y16 * y16);
  }
}

TEST_CASE("saved_activations: layer norm of an activation is the fp32 graph with that activation rounded first") {
  // h = x Wᵀ (an activation: 64 × 48 = 3,072 elements), y = layer_norm(h), L = Σ y ∘ R. The pass
  // stores h; the layer norm reads it rounded in the forward and in the backward. The reference
  // graph rounds h in f32 arithmetic that autodiff sees through: hr = h + δ with the input
  // δ = bf16(h) − h (exact: h and bf16(h) are within a factor 2 of each other, so the difference
  // and the sum are exact), whose gradient reaches h unchanged, as the pass treats its casts.
  const int64_t rows = 64, d = 48;
  ParamStore store;
  store.add("w", {d, d}).copy_from(random_tensor({d, d}, 4, -0.3f, 0.3f));
  store.add("gamma", {d}).copy_from(random_tensor({d}, 5, 0.5f, 1.5f));
  store.add("beta", {d}).copy_from(random_tensor({d}, 6));
  const Tensor x = random_tensor({rows, d}, 3), weights = random_tensor({rows, d}, 9);
  struct Built {
    Graph g;
    ValueId h = kNoValue, loss = kNoValue;
    std::vector<ValueId> grads;
    int first_backward = 0;
  };
  const auto build = [&](Built& b, bool reference) {
    b.h = ops::matmul(b.g, b.g.input("x", {rows, d}), b.g.param("w", {d, d}), false, true);
    const ValueId hr = reference ? ops::add(b.g, b.h, b.g.input("delta", {rows, d})) : b.h;
    const ValueId y = ops::layer_norm(b.g, hr, b.g.param("gamma", {d}), b.g.param("beta", {d}));
    b.loss = ops::sum_all(b.g, ops::mul(b.g, y, b.g.constant(weights)));
    b.g.mark_output(b.loss);
    if (reference) b.g.mark_output(b.h);
    b.first_backward = static_cast<int>(b.g.nodes().size());
    b.grads = autodiff(b.g, b.loss, b.g.params());
  };
  Built pass, reference;
  build(pass, false);
  build(reference, true);
  const SavedActivations r = store_saved_activations_bf16(pass.g, pass.first_backward, 1);
  CHECK(r.stored == 1);             // h
  CHECK(r.rounded_in_forward == 1); // for the layer norm's forward
  CHECK(r.widened == 1);            // for its backward

  const auto run = [&](const Built& b, const Tensor& delta) {
    Executor ex(b.g);
    ex.bind("x", x);
    if (delta.defined()) ex.bind("delta", delta);
    ex.bind_params(store);
    ex.run();
    std::vector<std::vector<float>> out{ex.value(b.loss).to_vector()};
    for (ValueId v : b.grads) out.push_back(ex.value(v).to_vector());
    if (delta.defined()) out.push_back(ex.value(b.h).to_vector());
    return out;
  };
  const std::vector<float> h = run(reference, Tensor::zeros({rows, d})).back();
  Tensor delta = Tensor::empty({rows, d});
  for (size_t i = 0; i < h.size(); ++i) delta.data<float>()[i] = bf16_to_f32(f32_to_bf16(h[i])) - h[i];
  const auto a = run(pass, Tensor()), b = run(reference, delta);
  REQUIRE(a.size() == 4);
  for (size_t k = 0; k < a.size(); ++k) {
    CAPTURE(k); // the loss, then dW, dgamma, dbeta
    CHECK(a[k] == b[k]);
  }
}

TEST_CASE(
    "saved_activations: the tiny transformer's step — loss and gradients within bf16 rounding, statistics made from "
    "what the backward reads, a smaller arena") {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore store;
  init_transformer_params(cfg, store, 7);
  const auto step = [&](bool bf16) { return step_of(cfg, store, bf16, Device::cpu); };
  const testing::TinyStep plain = step(false), halved = step(true);
  CHECK(std::fabs(halved.loss - plain.loss) <= 1e-4 * plain.loss); // layer norms and attention read bf16 inputs
  CHECK(halved.loss != plain.loss);
  CHECK(count_casts(plain.s.graph, DType::bf16) == 0);
  const Graph& g = halved.s.graph;
  const int stored = count_casts(g, DType::bf16);
  CHECK(stored > 10 * (cfg.enc_layers + cfg.dec_layers));
  // Stored: the values some cast narrows. The nodes that make statistics (layer norm, attention)
  // never read a stored value itself, only its rounded copy; the logits do not wait (the loss
  // reads them last, its gradient first) and attention's outputs go into the backward beside the
  // log-sum-exp of the scores: both stay f32.
  std::vector<bool> is_stored(static_cast<size_t>(g.num_values()), false);
  for (const Node& n : g.nodes())
    if (n.op == &ops::kCast && g.dtype(n.outputs[0]) == DType::bf16) is_stored[static_cast<size_t>(n.inputs[0])] = true;
  int rounded_readers = 0;
  for (int i = 0; i < halved.s.first_backward_node; ++i) {
    const Node& n = g.node(i);
    const std::string op = n.op->name;
    if (op != "layer_norm" && op != "attention") continue;
    for (ValueId v : n.inputs) {
      CHECK(!is_stored[static_cast<size_t>(v)]);
      rounded_readers += g.producer(v).op == &ops::kCast;
    }
  }
  CHECK(rounded_readers >= 3 * (cfg.enc_layers + cfg.dec_layers)); // Q, K, V of every self-attention at least
  CHECK(!is_stored[static_cast<size_t>(halved.s.logits)]);
  for (const AttentionSite& site : halved.s.attention) CHECK(!is_stored[static_cast<size_t>(site.out)]);
  REQUIRE(halved.grads.size() == plain.grads.size());
  double worst = 0;
  int changed = 0;
  std::vector<float> all_halved, all_plain; // every gradient but the key biases', end to end
  for (const auto& [name, grad] : plain.grads) {
    CAPTURE(name);
    // Both runs hold rounding noise there (below 1e-4).
    if (testing::gradient_is_zero_in_exact_arithmetic(name)) {
      for (const std::vector<float>* run : {&grad, &halved.grads.at(name)})
        for (float e : *run) CHECK(std::fabs(e) < 1e-4f);
      continue;
    }
    const double d = norm_relative_difference(halved.grads.at(name), grad);
    worst = std::max(worst, d);
    changed += d > 0;
    // 8-bit mantissas on the activations the layer norms, the attention and the backward read;
    // a rounded input can also flip a ReLU near 0. Measured: up to 4.4 % per tensor, 1.3 % overall.
    CHECK(d < 6e-2);
    all_halved.insert(all_halved.end(), halved.grads.at(name).begin(), halved.grads.at(name).end());
    all_plain.insert(all_plain.end(), grad.begin(), grad.end());
  }
  const double overall = norm_relative_difference(all_halved, all_plain);
  CHECK(overall < 2e-2);
  CHECK(changed > static_cast<int>(plain.grads.size()) / 2);
  const double arena_ratio = static_cast<double>(halved.s.memory.arena_bytes) / plain.s.memory.arena_bytes;
  MESSAGE(stored, " activations kept in bf16; arena ", plain.s.memory.arena_bytes, " → ", halved.s.memory.arena_bytes,
          " bytes (", arena_ratio, "×); loss ", plain.loss, " → ", halved.loss, "; ‖Δ grad‖/‖grad‖ largest ", worst,
          ", over all ", overall);
  CHECK(arena_ratio < 0.8);
  // The attention sites still point at attention nodes (the pass moved them).
  for (const AttentionSite& site : halved.s.attention) CHECK(std::string(g.node(site.node).op->name) == "attention");
}

TEST_CASE("saved_activations: GCT training on Multi30k follows the fp32 run's losses within bf16 rounding") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: two trainings compared (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_saved_activations_", /*own_cache=*/true);
  const auto losses = [&](const std::string& storage, const std::string& feature_map) {
    nlohmann::json j = testing::small_multi30k_json(3);
    j["train"] = {
        {"max_updates", 20}, {"valid_bleu", false}, {"log_every", 1}, {"keep_best", 1}, {"saved_activations", storage}};
    j["heads"] = {{"regularizer", "gct"}, {"feature_map", feature_map}, {"groups", 2}};
    const std::string name = storage + "_" + feature_map;
    train::SessionOptions so;
    so.run_dir = (tmp.path / name).string(), so.quiet = true, so.evaluate = false;
    train::run_experiment(parse_experiment(j, "saved_activations_" + name + ".json"), so);
    return testing::train_losses(tmp.path / name);
  };
  // V: the values; A: the attention probabilities, a large second output of attention, stored too.
  for (const std::string& feature_map : {std::string("V"), std::string("A")}) {
    CAPTURE(feature_map);
    const std::vector<double> fp32 = losses("fp32", feature_map), bf16 = losses("bf16", feature_map);
    REQUIRE(fp32.size() == 20);
    REQUIRE(bf16.size() == 20);
    double worst = 0;
    for (size_t i = 0; i < fp32.size(); ++i) worst = std::max(worst, std::fabs(bf16[i] - fp32[i]) / fp32[i]);
    MESSAGE("GCT on ", feature_map, ", 20 updates: last loss fp32 ", fp32.back(), ", bf16 saved activations ",
            bf16.back(), "; largest relative difference ", worst);
    CHECK(worst < 1e-3);
    CHECK(bf16 != fp32);
  }
}

TEST_CASE("cuda: the tiny transformer's step with bf16 saved activations follows the CPU's") {
  if (pillars::testing::no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore store;
  init_transformer_params(cfg, store, 7);
  const testing::TinyStep cpu = step_of(cfg, store, true, Device::cpu), gpu = step_of(cfg, store, true, Device::cuda);
  CHECK(gpu.loss == doctest::Approx(cpu.loss).epsilon(1e-5));
  for (const auto& [name, g] : cpu.grads) {
    if (testing::gradient_is_zero_in_exact_arithmetic(name)) continue; // noise on both sides (above)
    CAPTURE(name);
    // fp32 mode differs from the CPU by summation order (1e-5); a value near a bf16 rounding
    // boundary may then round the other way, a 2^-8 change in one saved element.
    CHECK(max_relative_difference(gpu.grads.at(name), g) < 1e-2);
  }
}

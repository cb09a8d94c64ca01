// The graph core: construction, autodiff, plan_memory, executor, printer.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/plan_memory.h"
#include "engine/passes/print.h"

using namespace pillars;

namespace {

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t = Tensor::empty(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// loss(x, w, b) = Σ relu(x·Wᵀ + b)² / 2 — a small MLP layer written with the ops.
struct Mlp {
  Graph g;
  ValueId x, w, b, loss;
  Mlp() {
    x = g.input("x", {5, 4});
    w = g.param("w", {3, 4});
    b = g.param("b", {3});
    const ValueId h = ops::relu(g, ops::linear(g, x, w, b));
    loss = ops::scale(g, ops::sum_all(g, ops::mul(g, h, h)), 0.5f);
    g.mark_output(loss);
  }
};

double run_loss(Mlp& m, const Tensor& x, ParamStore& ps) {
  Executor ex(m.g);
  ex.bind("x", x);
  ex.bind_params(ps);
  ex.run();
  return ex.value(m.loss).data<float>()[0];
}

} // namespace

TEST_CASE("graph: shape rules reject bad inputs with a message naming the op") {
  Graph g;
  const ValueId a = g.input("a", {2, 3});
  const ValueId b = g.input("b", {4, 5});
  CHECK_THROWS_WITH_AS(ops::matmul(g, a, b), doctest::Contains("matmul"), Error);
  CHECK_THROWS_WITH_AS(ops::add(g, a, b), doctest::Contains("do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(ops::reshape(g, a, {4, 2}), doctest::Contains("reshape"), Error);
}

TEST_CASE("graph: a parameter used twice is one value (tied weights)") {
  Graph g;
  CHECK(g.param("emb", {10, 4}) == g.param("emb", {10, 4}));
  CHECK_THROWS_AS(g.param("emb", {10, 5}), Error);
}

TEST_CASE("autodiff: MLP gradients equal central finite differences") {
  Mlp m;
  const auto grads = autodiff(m.g, m.loss, {m.w, m.b});
  REQUIRE(grads[0] != kNoValue);
  ParamStore ps;
  ps.add("w", {3, 4}).copy_from(random_tensor({3, 4}, 1));
  ps.add("b", {3}).copy_from(random_tensor({3}, 2));
  const Tensor x = random_tensor({5, 4}, 3);
  Executor ex(m.g);
  ex.bind("x", x);
  ex.bind_params(ps);
  ex.run();
  for (int which = 0; which < 2; ++which) {
    Tensor& p = ps.get(which == 0 ? "w" : "b");
    const std::vector<float> analytic = ex.value(grads[static_cast<size_t>(which)]).to_vector();
    for (int64_t i = 0; i < p.numel(); ++i) {
      // f32 forward, h = 1e-3: truncation O(h²) ≈ 1e-6, rounding ≈ 1e-7·|L|/h ≈ 1e-4·|L|.
      const float h = 1e-3f, saved = p.data<float>()[i];
      p.data<float>()[i] = saved + h;
      const double lp = run_loss(m, x, ps);
      p.data<float>()[i] = saved - h;
      const double lm = run_loss(m, x, ps);
      p.data<float>()[i] = saved;
      CHECK(analytic[static_cast<size_t>(i)] == doctest::Approx((lp - lm) / (2 * h)).epsilon(2e-3).scale(1.0));
    }
  }
}

TEST_CASE("autodiff: gradients of a value used twice are summed, unused parameters get none") {
  Graph g;
  const ValueId x = g.param("x", {3});
  const ValueId unused = g.param("unused", {2});
  const ValueId loss = ops::sum_all(g, ops::mul(g, x, x)); // d/dx Σ x² = 2x
  const auto grads = autodiff(g, loss, {x, unused});
  CHECK(grads[1] == kNoValue);
  ParamStore ps;
  ps.add("x", {3}).copy_from(Tensor::from({3}, {1.0f, -2.0f, 0.5f}));
  ps.add("unused", {2});
  Executor ex(g);
  ex.bind_params(ps);
  ex.run();
  CHECK(ex.value(grads[0]).to_vector() == std::vector<float>{2.0f, -4.0f, 1.0f});
}

TEST_CASE("autodiff: the loss must be a scalar") {
  Graph g;
  const ValueId x = g.param("x", {3});
  CHECK_THROWS_WITH_AS(autodiff(g, ops::exp(g, x), {x}), doctest::Contains("scalar"), Error);
}

TEST_CASE("plan_memory: live values never share bytes, and dead ones are reused") {
  // A chain long enough that reuse must happen: y_{k+1} = tanh(y_k) + y_k.
  Graph g;
  ValueId y = g.input("x", {64, 64});
  for (int k = 0; k < 12; ++k) y = ops::add(g, ops::tanh(g, y), y);
  const ValueId loss = ops::sum_all(g, y);
  g.mark_output(loss);
  autodiff(g, loss, {g.find_input("x")});
  const MemoryPlan plan = plan_memory(g);
  CHECK(plan.arena_bytes < plan.naive_bytes / 4);

  // Live ranges: [producer, last reader] (graph outputs: to the end) of every arena root.
  const int nn = static_cast<int>(g.nodes().size());
  const size_t nv = static_cast<size_t>(g.num_values());
  std::vector<int> first(nv, -1), last(nv, -1);
  auto root = [&](ValueId v) { return static_cast<size_t>(plan.alias_of[static_cast<size_t>(v)]); };
  for (int i = 0; i < nn; ++i) {
    for (ValueId v : g.node(i).outputs) {
      if (first[root(v)] < 0) first[root(v)] = i;
      last[root(v)] = std::max(last[root(v)], i);
    }
    for (ValueId v : g.node(i).inputs) last[root(v)] = std::max(last[root(v)], i);
  }
  for (ValueId v : g.outputs()) last[root(v)] = nn;
  int checked = 0;
  for (ValueId a = 0; a < g.num_values(); ++a)
    for (ValueId b = a + 1; b < g.num_values(); ++b) {
      if (plan.offset[a] < 0 || plan.offset[b] < 0 || plan.alias_of[a] != a || plan.alias_of[b] != b) continue;
      const bool live_together = first[a] <= last[b] && first[b] <= last[a];
      const bool handed_over = plan.took_over[b] == a || plan.took_over[a] == b; // in place: a dies as b is written
      if (!live_together || handed_over) continue;
      const int64_t ea = plan.offset[a] + numel(g.shape(a)) * 4, eb = plan.offset[b] + numel(g.shape(b)) * 4;
      CHECK((ea <= plan.offset[b] || eb <= plan.offset[a]));
      ++checked;
    }
  CHECK(checked > 10);
  int in_place = 0;
  for (ValueId v = 0; v < g.num_values(); ++v) in_place += plan.took_over[v] >= 0;
  CHECK(in_place > 0); // the chain's adds and tanh gradients reuse their dying inputs
}

TEST_CASE("plan_memory: in-place ops are exact even when both inputs are the dying buffer") {
  // t = tanh(x) dies at mul(t, t), which is written over it; u = u + u likewise; then exp in place.
  Graph g;
  const ValueId x = g.input("x", {1000});
  const ValueId t = ops::tanh(g, x);
  const ValueId sq = ops::mul(g, t, t);
  const ValueId doubled = ops::add(g, sq, sq);
  const ValueId y = ops::exp(g, doubled);
  g.mark_output(y);
  const MemoryPlan plan = plan_memory(g);
  CHECK(plan.took_over[static_cast<size_t>(sq)] == t);
  CHECK(plan.took_over[static_cast<size_t>(doubled)] == sq);
  CHECK(plan.took_over[static_cast<size_t>(y)] == doubled);
  Tensor xs = Tensor::empty({1000});
  for (int i = 0; i < 1000; ++i) xs.data<float>()[i] = -2.0f + 0.004f * static_cast<float>(i);
  Executor ex(g);
  ex.bind("x", xs);
  ex.run();
  for (int i = 0; i < 1000; ++i) {
    const double th = std::tanh(static_cast<double>(xs.data<float>()[i]));
    CHECK(ex.value(y).data<float>()[i] == doctest::Approx(std::exp(2 * th * th)).epsilon(1e-6));
  }
}

TEST_CASE("executor: reports unbound inputs and wrong shapes by name") {
  Graph g;
  const ValueId x = g.input("tokens", {2, 3});
  g.mark_output(ops::exp(g, x));
  Executor ex(g);
  CHECK_THROWS_WITH_AS(ex.run(), doctest::Contains("tokens"), Error);
  CHECK_THROWS_WITH_AS(ex.bind("tokens", Tensor::zeros({3, 2})), doctest::Contains("tokens"), Error);
  CHECK_THROWS_WITH_AS(ex.bind("nope", Tensor::zeros({2, 3})), doctest::Contains("nope"), Error);
}

TEST_CASE("executor: a second run with new inputs gives new results (no stale state)") {
  Graph g;
  const ValueId x = g.input("x", {4});
  const ValueId y = ops::scale(g, ops::exp(g, x), 2.0f);
  g.mark_output(y);
  Executor ex(g);
  ex.bind("x", Tensor::from({4}, {0, 1, 2, 3}));
  ex.run();
  CHECK(ex.value(y).data<float>()[1] == doctest::Approx(2 * std::exp(1.0)));
  ex.bind("x", Tensor::from({4}, {1, 1, 1, 1}));
  ex.run();
  CHECK(ex.value(y).data<float>()[0] == doctest::Approx(2 * std::exp(1.0)));
}

TEST_CASE("print: shows the backward nodes autodiff appends") {
  Mlp m;
  const int forward = static_cast<int>(m.g.nodes().size());
  autodiff(m.g, m.loss, {m.w});
  const std::string before = graph_to_string(m.g, 0), after = graph_to_string(m.g, forward);
  CHECK(before.find("matmul(") != std::string::npos);
  CHECK(before.find("name=w") != std::string::npos);
  CHECK(after.find("relu_backward") != std::string::npos);
  CHECK(after.find("[output") != std::string::npos);
}

TEST_CASE("params: an op's parameters are one typed struct, read back with params_of") {
  Graph g;
  const ValueId x = g.input("x", {2, 3});
  const ValueId y = ops::layer_norm(g, x, kNoValue, kNoValue, 1e-3f);
  const Node& n = g.producer(y);
  const ops::LayerNormParams& p = params_of<ops::LayerNormParams>(n);
  CHECK(p.eps == 1e-3f);
  CHECK_FALSE(p.has_gamma);
  CHECK_FALSE(p.has_beta);
  // Another op's struct is refused, naming the op and both structs.
  CHECK_THROWS_WITH_AS(params_of<ops::MatmulParams>(n), doctest::Contains("layer_norm"), Error);
  CHECK_THROWS_WITH_AS(params_of<ops::MatmulParams>(n), doctest::Contains("MatmulParams"), Error);
  CHECK_THROWS_WITH_AS(params_of<ops::MatmulParams>(n), doctest::Contains("LayerNormParams"), Error);
  // An op without parameters carries none, and asking for some says so.
  const Node& e = g.producer(ops::exp(g, x));
  CHECK(e.params == nullptr);
  CHECK_THROWS_WITH_AS(params_of<ops::ScaleParams>(e), doctest::Contains("none"), Error);
  // The printer shows each op's parameters by name, as the op prints them.
  ops::matmul(g, x, x, false, true);
  const std::string text = graph_to_string(g);
  CHECK(text.find("input() name=x") != std::string::npos);
  CHECK(text.find("layer_norm(%0) eps=0.001\n") != std::string::npos);
  CHECK(text.find("= exp(%0)\n") != std::string::npos);
  CHECK(text.find("matmul(%0, %0) trans_b\n") != std::string::npos);
}

// The attention op (engine/ops/attention.h): the fused op against attention_reference (composed of
// permute/matmul/masked_fill/softmax/dropout ops) — outputs, probabilities and every gradient
// through autodiff — and the fused op's gradients against finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "tests/grad_check.h"

using namespace pillars;
using pillars::testing::check_gradients;
using pillars::testing::GradCheckOptions;
using pillars::testing::random_tensor;

namespace {

struct Case {
  int64_t B, Tq, Tk, H, D;
  bool causal = false;
  std::vector<int32_t> lengths{}; // empty: no key_lengths
  float dropout = 0.0f;
  bool emit_probs = false;
  std::string name() const {
    return pillars::str_cat("B", B, " Tq", Tq, " Tk", Tk, " H", H, " D", D, causal ? " causal" : "",
                            lengths.empty() ? "" : " lengths", dropout > 0 ? " dropout" : "",
                            emit_probs ? " probs" : "");
  }
};

// One graph computing loss = Σ o ∘ R (+ Σ A ∘ R_A when the probabilities are requested) with the
// fused op or the reference, and its gradients wrt q, k, v.
struct Run {
  std::vector<float> out, probs, dq, dk, dv;
};

Run run(const Case& c, bool fused) {
  Graph g;
  const ValueId q = g.input("q", {c.B, c.Tq, c.H, c.D}), k = g.input("k", {c.B, c.Tk, c.H, c.D}),
                v = g.input("v", {c.B, c.Tk, c.H, c.D});
  ops::AttentionOptions opt;
  opt.causal = c.causal;
  opt.dropout = c.dropout;
  opt.seed = 42, opt.rng_offset = 8;
  opt.emit_probs = c.emit_probs;
  if (!c.lengths.empty()) opt.key_lengths = g.input("len", {c.B}, DType::i32);
  ValueId out, probs = kNoValue;
  if (fused) {
    const ops::AttentionResult r = ops::attention(g, q, k, v, opt);
    out = r.out, probs = r.probs;
  } else {
    out = ops::attention_reference(g, q, k, v, opt, c.emit_probs ? &probs : nullptr);
  }
  ValueId loss = ops::sum_all(g, ops::mul(g, out, g.constant(random_tensor(g.shape(out), 5))));
  if (probs != kNoValue)
    loss = ops::add(g, loss, ops::sum_all(g, ops::mul(g, probs, g.constant(random_tensor(g.shape(probs), 6)))));
  const std::vector<ValueId> grads = autodiff(g, loss, {q, k, v});
  g.mark_output(out);
  if (probs != kNoValue) g.mark_output(probs);
  Executor ex(g);
  ex.bind("q", random_tensor({c.B, c.Tq, c.H, c.D}, 1, -2.0f, 2.0f));
  ex.bind("k", random_tensor({c.B, c.Tk, c.H, c.D}, 2, -2.0f, 2.0f));
  ex.bind("v", random_tensor({c.B, c.Tk, c.H, c.D}, 3));
  if (!c.lengths.empty()) ex.bind("len", Tensor::from_i32({c.B}, c.lengths));
  ex.run();
  Run r;
  r.out = ex.value(out).to_vector();
  if (probs != kNoValue) r.probs = ex.value(probs).to_vector();
  r.dq = ex.value(grads[0]).to_vector(), r.dk = ex.value(grads[1]).to_vector(), r.dv = ex.value(grads[2]).to_vector();
  return r;
}

void check_close(const char* what, const std::vector<float>& got, const std::vector<float>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK_FALSE(std::isnan(got[i]));
    if (std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i]))) continue;
    FAIL_CHECK(what, " element ", i, ": fused ", got[i], ", reference ", want[i]);
    return;
  }
}

} // namespace

TEST_CASE("op: attention fused equals attention_reference: outputs, probabilities and gradients") {
  const std::vector<Case> cases = {
      {2, 5, 5, 3, 4},
      {2, 7, 7, 2, 8, true},
      {2, 3, 5, 2, 4, false, {5, 2}},
      {2, 3, 6, 3, 5, true, {6, 4}},     // causal with Tq < Tk: bottom-right aligned
      {1, 6, 3, 2, 3, true},             // Tq > Tk: the first rows see nothing (o = 0)
      {3, 4, 9, 2, 7, false, {0, 9, 1}}, // a batch with no keys at all
      {2, 9, 9, 2, 16, true, {9, 5}, 0.2f},
      {2, 5, 7, 3, 4, false, {7, 3}, 0.0f, true},
      {2, 6, 6, 2, 5, true, {6, 4}, 0.3f, true},
      {1, 1, 1, 1, 1},
      {2, 33, 65, 2, 64, true, {65, 40}, 0.1f}, // several kernel tiles, odd lengths
  };
  for (const Case& c : cases) {
    CAPTURE(c.name());
    const Run fused = run(c, true), ref = run(c, false);
    check_close("out", fused.out, ref.out, 1e-5);
    check_close("probs", fused.probs, ref.probs, 1e-5);
    check_close("dq", fused.dq, ref.dq, 1e-4);
    check_close("dk", fused.dk, ref.dk, 1e-4);
    check_close("dv", fused.dv, ref.dv, 1e-4);
  }
}

TEST_CASE("op: attention gradients equal finite differences (fused op, including the probs output)") {
  const auto build = [](bool causal, bool lengths, float dropout, bool probs_only) {
    return [=](Graph& g, const std::vector<ValueId>& in) {
      ops::AttentionOptions opt;
      opt.causal = causal;
      opt.dropout = dropout;
      opt.seed = 3, opt.rng_offset = 0;
      opt.emit_probs = probs_only;
      if (lengths) opt.key_lengths = in[3];
      const ops::AttentionResult r = ops::attention(g, in[0], in[1], in[2], opt);
      return probs_only ? r.probs : r.out;
    };
  };
  const std::vector<Shape> shapes{{2, 3, 2, 3}, {2, 4, 2, 3}, {2, 4, 2, 3}, {}};
  const GradCheckOptions opt{.fixed = {{3, Tensor::from_i32({2}, {4, 2})}}};
  check_gradients(build(false, false, 0.0f, false), shapes, opt);
  check_gradients(build(true, true, 0.0f, false), shapes, opt);
  check_gradients(build(true, true, 0.25f, false), shapes, opt); // a fixed mask: still smooth
  check_gradients(build(false, true, 0.0f, true), shapes, opt);  // the probs path alone
}

TEST_CASE("op: attention rejects mismatched shapes and bad key_lengths") {
  Graph g;
  const ValueId q = g.input("q", {2, 3, 2, 4}), k = g.input("k", {2, 5, 2, 4}), v = g.input("v", {2, 5, 2, 3});
  CHECK_THROWS_WITH_AS(ops::attention(g, q, k, v), doctest::Contains("attention"), Error);
  ops::AttentionOptions opt;
  opt.key_lengths = g.input("len", {3}, DType::i32);
  CHECK_THROWS_WITH_AS(ops::attention(g, q, k, k, opt), doctest::Contains("key_lengths"), Error);
}

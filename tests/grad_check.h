// A reusable gradient checker for ops: analytic gradients (autodiff + the executor) against central
// finite differences.
//
//   check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::softmax(g, in[0], 1); },
//                   {{3, 5, 7}});
//
// What it does, for a builder f(in_0, ..., in_k) → out:
//   1. Inputs: f32 leaves of the given shapes filled with seeded uniform values in [lo, hi];
//      inputs listed in `fixed` (integer ids, targets, lengths, or chosen f32 values) use the tensor
//      given instead, and are never differentiated.
//   2. Loss L = Σ out ∘ R for a fixed random R (built with ops: mul + sum_all), so every output
//      element gets an independent weight; autodiff gives dL/d in_i for every differentiable input.
//   3. For each element x of each differentiable input: n = (L(x + h) − L(x − h)) / (2h), from the
//      f32 outputs out± of a forward-only graph, on the host in double as
//      L+ − L− = Σ_k (out+[k] − out−[k]) · R[k] over the outputs that changed (out+[k] ≠ out−[k]);
//      an output that x does not affect is bit-identical in both and contributes exactly 0.
//
// Choice of h and of the tolerance (f32, eps = 2^-23 ≈ 1.2e-7):
//   - Truncation: the central difference has error h²/6 · L''' (relative O(h²)). With h = 1e-2
//     (scaled by max(1, |x|)) that is ~1e-5 relative for the smooth O(1) functions tested here, and
//     up to ~6e-4 where the curvature is high (log or sqrt near 0.2, cosines of 3-element vectors).
//   - Rounding: each output is f32 with a relative error of a few ulps (k·eps), so out+[k] − out−[k]
//     is off by ≲ k·eps·(|out+[k]| + |out−[k]|), and only the changed outputs bring any error into
//     L+ − L−: it is ≲ k·eps·S_e, S_e = Σ_{k changed} (|out+[k]·R[k]| + |out−[k]·R[k]|), and the
//     quotient ≲ k·eps·S_e / (2h). That is the `noise` term, per element. Taking k = 64 covers op
//     chains (softmax → matmul → permute ...) with margin (the op tests use ≲ 10). Per element, so
//     an element that moves a few of many outputs (an elementwise op; one row and column of a Gram
//     matrix) is bounded by those few: a bound from Σ |out ∘ R| over all outputs was as large as a
//     1-2 % error in such gradients, which then passed.
//     (A smaller h would shrink truncation but blow this up: h = 1e-2 balances the two for f32.)
//   - Pass when |analytic − n| ≤ rtol · max(|n|, 0.01 · max_j |n_j|) + noise, rtol = 5e-3: ~8× the
//     largest truncation error in the op tests, and low enough that a gradient off by 1 % fails
//     wherever the noise is below 0.5 % of it (an elementwise op's is ≲ 0.1 %).
//     The floor 0.01·max|n| compares components 100× smaller than the input's largest gradient
//     on that absolute scale (their relative error is dominated by truncation and noise).
//   The perturbed value is rounded to f32, so the actual step (x+ − x−) is used in the quotient.
// Non-smooth ops (relu at 0, max with ties, a cosine at the eps clamp) need inputs away from the
// kinks (a kink within h of x makes n wrong): choose [lo, hi] or `fixed` values accordingly.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/ops.h"
#include "engine/passes/autodiff.h"

namespace pillars::testing {

using GraphBuilder = std::function<ValueId(Graph&, const std::vector<ValueId>&)>;

struct GradCheckOptions {
  uint32_t seed = 1;
  float lo = -1.0f, hi = 1.0f;   // range of the random f32 inputs
  double h = 1e-2;               // step, scaled by max(1, |x|)
  double rtol = 5e-3;            // see the comment above
  double noise_ulps = 64;        // k in the rounding-noise bound
  std::map<int, Tensor> fixed{}; // input index → the tensor to use (never differentiated)
  std::vector<int> no_grad{};    // further f32 inputs not to differentiate
  int64_t max_elements = 0;      // > 0: check at most this many (evenly spaced) elements per input
};

// max_i |a_i − b_i| / max_i |b_i|: how far `a` is from the reference `b`, relative to b's
// largest element (not per element: a small element's noise is measured against the tensor's scale).
inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  return t;
}

// A graph built by `build` on input leaves "in0", "in1", ... with the given tensors' shapes/dtypes.
struct BuiltGraph {
  Graph g;
  std::vector<ValueId> leaves;
  ValueId out = kNoValue;
  BuiltGraph(const GraphBuilder& build, const std::vector<Tensor>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i)
      leaves.push_back(g.input("in" + std::to_string(i), inputs[i].shape(), inputs[i].dtype()));
    out = build(g, leaves);
    g.mark_output(out);
  }
};

inline void bind_all(Executor& ex, const BuiltGraph& b, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) ex.bind(b.leaves[i], inputs[i]);
}

// The autodiff gradients of L = Σ build(inputs) ∘ R with respect to the inputs listed in `wrt`
// (zeros where L does not depend on one).
inline std::vector<std::vector<float>> gradients_of(const GraphBuilder& build, const std::vector<Tensor>& inputs,
                                                    const Tensor& R, const std::vector<int>& wrt) {
  BuiltGraph b(build, inputs);
  const ValueId loss = ops::sum_all(b.g, ops::mul(b.g, b.out, b.g.constant(R)));
  std::vector<ValueId> leaves;
  for (int i : wrt) leaves.push_back(b.leaves[static_cast<size_t>(i)]);
  const std::vector<ValueId> d = autodiff(b.g, loss, leaves);
  Executor ex(b.g);
  bind_all(ex, b, inputs);
  ex.run();
  std::vector<std::vector<float>> out;
  for (size_t k = 0; k < wrt.size(); ++k)
    out.push_back(d[k] == kNoValue
                      ? std::vector<float>(static_cast<size_t>(inputs[static_cast<size_t>(wrt[k])].numel()), 0.0f)
                      : ex.value(d[k]).to_vector());
  return out;
}

// Runs `build` once on the given inputs and returns the output's values.
inline std::vector<float> evaluate(const GraphBuilder& build, const std::vector<Tensor>& inputs) {
  BuiltGraph b(build, inputs);
  Executor ex(b.g);
  bind_all(ex, b, inputs);
  ex.run();
  return ex.value(b.out).to_vector();
}

inline void check_gradients(const GraphBuilder& build, const std::vector<Shape>& shapes,
                            const GradCheckOptions& opt = {}) {
  // 1. Inputs, and which of them to differentiate.
  std::vector<Tensor> inputs;
  std::vector<bool> differentiate;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto fixed = opt.fixed.find(static_cast<int>(i));
    const bool is_fixed = fixed != opt.fixed.end();
    inputs.push_back(is_fixed ? fixed->second
                              : random_tensor(shapes[i], opt.seed + 7919u * static_cast<uint32_t>(i), opt.lo, opt.hi));
    const bool excluded = std::find(opt.no_grad.begin(), opt.no_grad.end(), static_cast<int>(i)) != opt.no_grad.end();
    differentiate.push_back(!is_fixed && !excluded && inputs.back().dtype() == DType::f32);
  }

  // 2. Analytic gradients of L = Σ out ∘ R.
  BuiltGraph with_grads(build, inputs);
  Graph& g = with_grads.g;
  const Tensor R = random_tensor(g.shape(with_grads.out), opt.seed + 104729u);
  const ValueId loss = ops::sum_all(g, ops::mul(g, with_grads.out, g.constant(R)));
  std::vector<ValueId> wrt;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (differentiate[i]) wrt.push_back(with_grads.leaves[i]);
  const std::vector<ValueId> grads = autodiff(g, loss, wrt);
  Executor ex(g);
  bind_all(ex, with_grads, inputs);
  ex.run();

  // 3. Finite differences on a forward-only graph: L+ − L− in double from the f32 outputs that
  //    changed, and the rounding noise of exactly those outputs.
  BuiltGraph forward(build, inputs);
  Executor fx(forward.g);
  const std::vector<float> r = R.to_vector();
  const auto eval_out = [&] {
    bind_all(fx, forward, inputs);
    fx.run();
    return fx.value(forward.out).to_vector();
  };

  size_t next_grad = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiate[i]) continue;
    const ValueId gv = grads[next_grad++];
    Tensor& x = inputs[i];
    const int64_t n = x.numel();
    const std::vector<float> analytic =
        gv == kNoValue ? std::vector<float>(static_cast<size_t>(n), 0.0f) : ex.value(gv).to_vector();
    const int64_t stride = opt.max_elements > 0 ? std::max<int64_t>(1, n / opt.max_elements) : 1;
    std::vector<int64_t> checked;
    std::vector<double> numeric, noise;
    double largest = 0.0;
    for (int64_t e = 0; e < n; e += stride) {
      float* p = x.data<float>() + e;
      const float x0 = *p;
      const double h = opt.h * std::max(1.0, std::fabs(static_cast<double>(x0)));
      const float xp = static_cast<float>(x0 + h), xm = static_cast<float>(x0 - h);
      *p = xp;
      const std::vector<float> outp = eval_out();
      *p = xm;
      const std::vector<float> outm = eval_out();
      *p = x0;
      const double step = static_cast<double>(xp) - static_cast<double>(xm);
      double dL = 0.0, S = 0.0; // L+ − L−, and S_e
      for (size_t k = 0; k < r.size(); ++k) {
        if (outp[k] == outm[k]) continue; // bit-identical: contributes exactly 0 (a NaN never is)
        const double op = outp[k], om = outm[k];
        dL += (op - om) * r[k];
        S += std::fabs(op * r[k]) + std::fabs(om * r[k]);
      }
      checked.push_back(e);
      numeric.push_back(dL / step);
      noise.push_back(opt.noise_ulps * 1.1920929e-7 * S / step);
      largest = std::max(largest, std::fabs(numeric.back()));
    }
    int failures = 0;
    for (size_t c = 0; c < checked.size(); ++c) {
      const double a = analytic[static_cast<size_t>(checked[c])], num = numeric[c];
      const double tol = opt.rtol * std::max(std::fabs(num), 0.01 * largest) + noise[c];
      if (std::fabs(a - num) <= tol) continue;
      if (++failures <= 5)
        MESSAGE("input ", i, " element ", checked[c], ": analytic ", a, " vs numeric ", num, " (tolerance ", tol, ")");
    }
    INFO("input ", i, " of shape ", shape_str(x.shape()), ": ", failures, " of ", checked.size(), " elements off");
    CHECK(failures == 0);
  }
}

} // namespace pillars::testing

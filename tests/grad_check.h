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
//   3. For each element x of each differentiable input: n = (L(x + h) − L(x − h)) / (2h), with L
//      evaluated on the host, in double, from the f32 outputs of a forward-only graph.
//
// Choice of h and of the tolerance (f32, eps = 2^-23 ≈ 1.2e-7):
//   - Truncation: the central difference has error h²/6 · L''' (relative O(h²)). With h = 1e-2
//     (scaled by max(1, |x|)) that is ~1e-5 relative for the smooth O(1) functions tested here.
//   - Rounding: each output is f32 with a relative error of a few ulps (k·eps), so L± carry an
//     absolute error ≲ k·eps·S, S = Σ |out ∘ R|, and the quotient ≲ k·eps·S / h. Taking k = 64
//     covers op chains (softmax → matmul → permute ...) with margin; this is the `noise` term.
//     (A smaller h would shrink truncation but blow this up: h = 1e-2 balances the two for f32.)
//   - Pass when |analytic − n| ≤ rtol · max(|n|, 0.01 · max_j |n_j|) + noise, rtol = 2e-2.
//     The floor 0.01·max|n| compares components 100× smaller than the input's largest gradient
//     on that absolute scale (their relative error is dominated by the noise above).
//   The perturbed value is rounded to f32, so the actual step (x+ − x−) is used in the quotient.
// Non-smooth ops (relu at 0, max with ties, a cosine at the eps clamp) need inputs away from the
// kinks: choose [lo, hi] or `fixed` values accordingly.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
inline double gc_stat_rtol = 0, gc_stat_ulps = 0, gc_stat_rel = 0;

using GraphBuilder = std::function<ValueId(Graph&, const std::vector<ValueId>&)>;

struct GradCheckOptions {
  uint32_t seed = 1;
  float lo = -1.0f, hi = 1.0f;      // range of the random f32 inputs
  double h = 1e-2;                  // step, scaled by max(1, |x|)
  double rtol = 5e-3;               // see the comment above
  double noise_ulps = 64;           // k in the rounding-noise bound
  std::map<int, Tensor> fixed{};    // input index → the tensor to use (never differentiated)
  std::vector<int> no_grad{};       // further f32 inputs not to differentiate
  int64_t max_elements = 0;         // > 0: check at most this many (evenly spaced) elements per input
};

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
    inputs.push_back(is_fixed ? fixed->second : random_tensor(shapes[i], opt.seed + 7919u * static_cast<uint32_t>(i), opt.lo, opt.hi));
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
  struct Difference {
    double numeric, noise;
  };
  // The central difference of L at element e of input x with step h_rel · max(1, |x_e|).
  const auto central = [&](Tensor& x, int64_t e, double h_rel) {
    float* p = x.data<float>() + e;
    const float x0 = *p;
    const double h = h_rel * std::max(1.0, std::fabs(static_cast<double>(x0)));
    const float xp = static_cast<float>(x0 + h), xm = static_cast<float>(x0 - h);
    std::vector<float> out[2];
    for (int side = 0; side < 2; ++side) {
      *p = side == 0 ? xp : xm;
      bind_all(fx, forward, inputs);
      fx.run();
      out[side] = fx.value(forward.out).to_vector();
    }
    *p = x0;
    double dL = 0.0, S = 0.0; // L+ − L−, and S_e = Σ over the changed outputs of |out+ R| + |out− R|
    for (size_t k = 0; k < r.size(); ++k) {
      if (out[0][k] == out[1][k]) continue; // bit-identical: contributes exactly 0 (a NaN never is)
      const double op = out[0][k], om = out[1][k];
      dL += (op - om) * r[k];
      S += std::fabs(op * r[k]) + std::fabs(om * r[k]);
    }
    const double step = static_cast<double>(xp) - static_cast<double>(xm);
    return Difference{dL / step, opt.noise_ulps * 1.1920929e-7 * S / step};
  };

  size_t next_grad = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiate[i]) continue;
    const ValueId gv = grads[next_grad++];
    Tensor& x = inputs[i];
    const int64_t n = x.numel();
    const std::vector<float> analytic = gv == kNoValue ? std::vector<float>(static_cast<size_t>(n), 0.0f) : ex.value(gv).to_vector();
    const int64_t stride = opt.max_elements > 0 ? std::max<int64_t>(1, n / opt.max_elements) : 1;
    std::vector<int64_t> checked;
    std::vector<Difference> diffs;
    double largest = 0.0;
    for (int64_t e = 0; e < n; e += stride) {
      checked.push_back(e);
      diffs.push_back(central(x, e, opt.h));
      largest = std::max(largest, std::fabs(diffs.back().numeric));
    }
    const auto tol = [&](const Difference& d) { return opt.rtol * std::max(std::fabs(d.numeric), 0.01 * largest) + d.noise; };
    int failures = 0;
    for (size_t c = 0; c < checked.size(); ++c) {
      const double a = analytic[static_cast<size_t>(checked[c])];
      Difference d = diffs[c];
      if (std::getenv("GC_STATS")) {
        const double num = d.numeric, scale = std::max(std::fabs(num), 0.01 * largest);
        gc_stat_rtol = std::max(gc_stat_rtol, std::max(0.0, std::fabs(a - num) - d.noise) / scale);
        gc_stat_ulps = std::max(gc_stat_ulps, d.noise > 0 ? std::fabs(a - num) / (d.noise / opt.noise_ulps) : (a == num ? 0.0 : 1e30));
        gc_stat_rel = std::max(gc_stat_rel, std::fabs(a - num) / scale);
      }
      bool ok = std::fabs(a - d.numeric) <= tol(d);
      // A kink inside the step (see the comment above): halve it while the central differences
      // themselves disagree, which no function smooth on [x − h, x + h] does.
      for (double h_rel = opt.h / 2; !ok && h_rel >= opt.h / 8; h_rel /= 2) {
        const Difference smaller = central(x, checked[c], h_rel);
        if (std::fabs(smaller.numeric - d.numeric) <= tol(smaller) + tol(d)) break; // consistent: no kink
        ok = std::fabs(a - smaller.numeric) <= tol(smaller);
        if (std::getenv("GC_STATS")) printf("GCKINK element %lld h_rel %g: %g -> %g (analytic %g) ok=%d\n", (long long)checked[c], h_rel, d.numeric, smaller.numeric, a, (int)ok);
        d = smaller;
      }
      if (ok) continue;
      if (++failures <= 5)
        MESSAGE("input ", i, " element ", checked[c], ": analytic ", a, " vs numeric ", diffs[c].numeric, " (tolerance ", tol(diffs[c]), ")");
    }
    if (std::getenv("GC_STATS")) {
      printf("GCSTAT input %zu shape %s: needed_rtol %.3g  max_ulps %.3g  max_rel %.3g\n", i, shape_str(x.shape()).c_str(), gc_stat_rtol, gc_stat_ulps, gc_stat_rel);
      gc_stat_rtol = gc_stat_ulps = gc_stat_rel = 0;
    }
    INFO("input ", i, " of shape ", shape_str(x.shape()), ": ", failures, " of ", checked.size(), " elements off");
    CHECK(failures == 0);
  }
}

} // namespace pillars::testing

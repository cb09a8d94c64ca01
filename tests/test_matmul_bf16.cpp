// The matmul op at the CPU's bf16 matmul precision (kernels/cpu/gemm_precision.h): its output and
// its gradients against float64 products of the operands rounded to bf16, in the layouts training
// uses — a linear layer x Wᵀ and its backward (dC W, dCᵀ x), W not transposed, a transposed batched
// operand times a shared weight, and the per-head products of attention composed from ops.
//
// With â = bf16(a) and b̂ = bf16(b), gemm_bf16 forms each product â b̂ exactly in fp32 and sums the
// n products of an element in fp32; each addition errs by at most 2⁻²⁴ of the partial sum, so
//     |got − Σ â b̂| ≤ (n + 2) · 2⁻²⁴ · Σ |â b̂|        (the tolerance per element).
// The backward's products are matmul nodes too: dĀ = dC · op(B)ᵀ and dB̄ = op(A)ᵀ · dC (summed over
// the batch when B is shared) on bf16(dC) and the bf16 operands. dC is the fixed random R of
// L = Σ C ∘ R, exactly (1 · R). Each case also checks that the result is NOT within the tolerance
// of the unrounded fp32 operands' product everywhere, so a silent fp32 path would fail.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/executor.h"
#include "engine/ops.h"
#include "engine/passes/autodiff.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_precision.h"
#include "tests/grad_check.h"

using namespace pillars;
using pillars::testing::random_tensor;

namespace {

// Sets the CPU's matmul precision for a scope; fp32 again at its end, however it ends.
struct MatmulPrecisionScope {
  explicit MatmulPrecisionScope(Precision p) { cpu::set_matmul_precision(p); }
  ~MatmulPrecisionScope() { cpu::set_matmul_precision(Precision::fp32); }
};

double bf16_round(float x) { return bf16_to_f32(f32_to_bf16(x)); }

// Element (m, k) of op(X) for batch item i: X stored (..., rows, cols) with op = transpose or not.
struct OpView {
  const float* x;
  int64_t rows, cols; // op(X)'s, (rows, cols)
  bool trans;
  int64_t matrix; // elements per batch item; 0 when shared
  int64_t index(int64_t i, int64_t r, int64_t c) const { return i * matrix + (trans ? c * rows + r : r * cols + c); }
  float at(int64_t i, int64_t r, int64_t c) const { return x[index(i, r, c)]; }
};

// Accumulates Σ p_k for one element in double (a product of two bf16 values is exact there; the
// sums err by ~2⁻⁵³, far below the tolerance), with Σ |p_k| and the count for the tolerance.
struct Sum {
  double value = 0, magnitude = 0;
  int64_t terms = 0;
  void add(double p) { value += p, magnitude += std::fabs(p), ++terms; }
  double tolerance() const { return static_cast<double>(terms + 2) * std::ldexp(magnitude, -24); }
};

// Compares got with the references; returns whether some element is beyond the tolerance of the
// product of the unrounded operands (`plain`).
bool check_against(const char* what, const std::vector<float>& got, const std::vector<Sum>& rounded,
                   const std::vector<Sum>& plain) {
  CAPTURE(what);
  REQUIRE(got.size() == rounded.size());
  bool differs_from_fp32 = false;
  int64_t bad = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    const double err = std::fabs(static_cast<double>(got[e]) - rounded[e].value);
    if (err > rounded[e].tolerance()) {
      if (bad++ < 5) {
        CAPTURE(e);
        CHECK(err <= rounded[e].tolerance());
      }
    }
    if (std::fabs(static_cast<double>(got[e]) - plain[e].value) > rounded[e].tolerance()) differs_from_fp32 = true;
  }
  CHECK(bad == 0);
  return differs_from_fp32;
}

struct Case {
  Shape a, b;
  bool ta, tb;
};

void check_case(const Case& c) {
  CAPTURE(shape_str(c.a));
  CAPTURE(shape_str(c.b));
  CAPTURE(c.ta);
  CAPTURE(c.tb);
  const size_t ra = c.a.size(), rb = c.b.size();
  const int64_t M = c.ta ? c.a[ra - 1] : c.a[ra - 2], K = c.ta ? c.a[ra - 2] : c.a[ra - 1];
  const int64_t N = c.tb ? c.b[rb - 2] : c.b[rb - 1];
  const bool shared = rb == 2;
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i) batch *= c.a[i];

  const Tensor A = random_tensor(c.a, 11), B = random_tensor(c.b, 12);
  Shape sc(c.a.begin(), c.a.end() - 2);
  sc.push_back(M), sc.push_back(N);
  const Tensor R = random_tensor(sc, 13); // dC

  // The op in bf16: C, and dA, dB of L = Σ C ∘ R.
  MatmulPrecisionScope bf16(Precision::bf16);
  Graph g;
  const ValueId a = g.input("a", c.a), b = g.input("b", c.b);
  const ValueId y = ops::matmul(g, a, b, c.ta, c.tb);
  g.mark_output(y);
  const ValueId loss = ops::sum_all(g, ops::mul(g, y, g.constant(R)));
  const std::vector<ValueId> d = autodiff(g, loss, {a, b});
  Executor ex(g);
  ex.bind(a, A), ex.bind(b, B);
  ex.run();

  // References on the rounded values (r) and on the plain fp32 ones (p).
  const OpView opA{A.data<float>(), M, K, c.ta, M * K}, opB{B.data<float>(), K, N, c.tb, shared ? 0 : K * N};
  const OpView dC{R.data<float>(), M, N, false, M * N};
  std::vector<Sum> y_r(static_cast<size_t>(batch * M * N)), y_p(y_r.size());
  std::vector<Sum> da_r(static_cast<size_t>(A.numel())), da_p(da_r.size());
  std::vector<Sum> db_r(static_cast<size_t>(B.numel())), db_p(db_r.size());
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          const float av = opA.at(i, m, k), bv = opB.at(i, k, n), cv = dC.at(i, m, n);
          const size_t yi = static_cast<size_t>((i * M + m) * N + n);
          y_r[yi].add(bf16_round(av) * bf16_round(bv)), y_p[yi].add(double(av) * bv);
          const size_t ai = static_cast<size_t>(opA.index(i, m, k)), bi = static_cast<size_t>(opB.index(i, k, n));
          da_r[ai].add(bf16_round(cv) * bf16_round(bv)), da_p[ai].add(double(cv) * bv); // dĀ = dC op(B)ᵀ
          db_r[bi].add(bf16_round(av) * bf16_round(cv)), db_p[bi].add(double(av) * cv); // dB̄ = op(A)ᵀ dC
        }
  CHECK(check_against("C", ex.value(y).to_vector(), y_r, y_p));
  CHECK(check_against("dA", ex.value(d[0]).to_vector(), da_r, da_p));
  CHECK(check_against("dB", ex.value(d[1]).to_vector(), db_r, db_p));
}

} // namespace

TEST_CASE("matmul in bf16 on the CPU: output and gradients vs float64 on the bf16-rounded operands") {
  MESSAGE("gemm_bf16 path: ", std::string(cpu::gemm_bf16_path()));
  const Case cases[] = {
      {{3, 13, 70}, {33, 70}, false, true},        // linear: x (B, T, in) · W (out, in)ᵀ; dx = dC W, dW = dCᵀ x
      {{2, 5, 40}, {40, 7}, false, false},         // x · W with W (in, out)
      {{2, 40, 5}, {40, 7}, true, false},          // a transposed batched operand times a shared weight
      {{40, 17}, {40, 9}, true, false},            // the weight gradient's layout, 2-D: Xᵀ · dC
      {{2, 3, 5, 40}, {2, 3, 7, 40}, false, true}, // attention from ops: Q Kᵀ per (batch, head)
      {{2, 3, 5, 7}, {2, 3, 7, 40}, false, false}, // and P V
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("matmul in bf16 on the CPU: linear_act is still exactly linear then the activation") {
  const Tensor x = random_tensor({2, 9, 48}, 21), w = random_tensor({20, 48}, 22), bias = random_tensor({20}, 23);
  const auto run = [&](bool fused) {
    Graph g;
    const ValueId xi = g.input("x", x.shape()), wi = g.input("w", w.shape()), bi = g.input("b", bias.shape());
    const ValueId y =
        fused ? ops::linear_act(g, xi, wi, bi, ops::Activation::relu).y : ops::relu(g, ops::linear(g, xi, wi, bi));
    g.mark_output(y);
    Executor ex(g);
    ex.bind(xi, x), ex.bind(wi, w), ex.bind(bi, bias);
    ex.run();
    return ex.value(y).to_vector();
  };
  const std::vector<float> fp32 = run(true);
  MatmulPrecisionScope bf16(Precision::bf16);
  const std::vector<float> fused = run(true), unfused = run(false);
  CHECK(fused == unfused);
  CHECK(fused != fp32); // the product did round its operands
}
